#pragma once
// What the module asks of CUDA about devices and memory, declared for every
// build without the CUDA headers: cuda_memory.cpp implements it with the
// CUDA backend; no_cuda.cpp, in a build without the CUDA toolkit, says that
// there is no device and refuses CUDA arrays and allocations in the
// library's words.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/vector.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "arrays.hpp"

namespace streamblur::python {

// Usable CUDA devices: 0 without a driver or a device, and without the CUDA
// backend. Other driver failures throw (cuda::device_count()).
int device_count();
bool have_cuda();  // device_count() > 0
// The current CUDA device of the calling thread.
int current_device();

// Throws std::runtime_error "<asked> but no CUDA device is usable here"
// unless a CUDA device is usable; asked says what needed one ("backend='cuda'
// was asked for"). A build without the CUDA backend adds that reason.
void require_cuda(const std::string& asked);

// For memory the array reports as host memory: whether it is CUDA managed
// memory (numpy arrays of managed_empty() report "cpu"); sets im.memory and
// im.device if so.
void find_managed_memory(Image& im);

// For an array in CUDA memory (im.memory Device or Managed): that it can be
// used here, on the current device. `what` names it as describe() does.
void check_cuda_array(const Image& im, const char* what);

// Waits for all the current device's work: the host may touch managed memory
// only while no kernel runs (without concurrent managed access).
void wait_for_device();

inline constexpr size_t kMaxManagedBytes = size_t(1) << 30;

// A 1-D uint8 numpy array of `bytes` bytes in CUDA managed memory; freed with
// cudaFree when the last numpy view of it goes away.
nb::ndarray<nb::numpy, uint8_t> managed_bytes(size_t bytes);

// A packed HxW[xC] uint8/uint16 array in device memory of the current device,
// for CUDA inputs of frameworks other than CuPy and PyTorch (consumers take it
// through DLPack).
nb::ndarray<nb::array_api, nb::device::cuda> cuda_empty(std::vector<size_t> shape, int bytes);

// Whether p points into CUDA managed memory (false without a device).
bool is_managed_pointer(uintptr_t p);

// CUDA's errors (cuda::CudaError) as RuntimeError with a `location`
// attribute, as io's AVError (errors.hpp).
void register_cuda_error_translator();

}  // namespace streamblur::python
