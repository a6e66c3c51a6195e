#pragma once
// The image calls: one filter chain over one array (run_filter), on the CPU
// or CUDA backend, and the host-only reference blurs the tests compare with.
#include <cstdint>
#include <optional>
#include <string>

#include "arrays.hpp"

namespace streamblur::python {

// Runs `spec` from src into dst (dst may be src: in place). Without dst, the
// output is new_output(where src's memory lives: "host", "cuda" or
// "managed"), an array of src's shape and dtype. backend_name: "auto", "cpu"
// or "cuda"; stream_handle: the cudaStream_t of CUDA work (0: the legacy
// default stream). Returns dst.
nb::object run_filter(InArray src_arr, std::optional<OutArray> dst_arr, const std::string& spec,
                      const std::string& backend_name, uintptr_t stream_handle, nb::callable new_output);

// Parses a filter chain; returns its description (ValueError where it is bad or empty).
std::string check_chain(const std::string& spec);

// The reference implementations (host arrays only, never in place).
void reference_gaussian(InArray src, OutArray dst, double sigma, int radius);
void reference_box(InArray src, OutArray dst, int radius);

}  // namespace streamblur::python
