#pragma once
// The image calls' CUDA side, declared for every build without the CUDA
// headers: cuda_filter.cpp (run_filter's CUDA path, its chain cache, the
// arrays held for work still queued) and cupy_path.cpp (the CuPy fast path)
// implement it with the CUDA backend; no_cuda.cpp in a build without the
// CUDA toolkit, where the fast path always declines and nothing is held.
#include <nanobind/nanobind.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "arrays.hpp"

namespace streamblur::python {

// The CUDA path of run_filter: the chain `spec` from src into dst (checked
// by describe() and check_same_shape(); dst may be src), configured for
// `layout` on the current device, queued on the cudaStream_t `stream_handle`
// (0: the legacy default stream). GIL held on entry, released while it runs.
// With device output it returns with the work still queued and holds the
// arrays until that work has completed (release_queued_calls).
void run_filter_cuda(const InArray& src_arr, const OutArray& dst_arr, const Image& src, const Image& dst,
                     const FrameLayout& layout, const std::string& spec, uintptr_t stream_handle);

// Drops the arrays of every queued call whose work has completed; with
// wait=true waits for all first (module exit). Returns how many are still held.
std::size_t release_queued_calls(bool wait);
// The scan of release_queued_calls(false), once enough calls are held; every
// image call starts with it.
void release_some_queued_calls();

// What the chain cache did since import (the tests of "repeated calls
// allocate nothing"): chains_configured, staging_allocations,
// graph_launches, fast_calls.
nb::dict cuda_cache_stats();

// The fast path of run_filter for two CuPy arrays: true when it ran `spec`
// from src into dst; false when the call is not one it takes (nothing done:
// the package runs the general path, which reports the errors).
// stream: None for CuPy's current stream, an int handle, or an object with
// an int .ptr (a CuPy Stream); anything else declines.
bool run_cupy(nb::handle src_obj, nb::handle dst_obj, nb::handle spec, nb::handle stream);
// Gives the fast path CuPy's array type, its current-stream function and
// numpy's uint8/uint16 dtype objects (once; later calls do nothing).
void register_cupy(nb::handle ndarray, nb::handle get_current_stream, nb::handle u8, nb::handle u16);

}  // namespace streamblur::python
