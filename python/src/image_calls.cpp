// run_filter, check_chain and the references. The CPU backend runs here; the
// CUDA backend's work is in cuda_filter.cpp, reached through cuda_calls.hpp
// (which a build without CUDA answers with the library's error).
#include "image_calls.hpp"

#include <stdexcept>

#include "cuda_calls.hpp"
#include "cuda_memory.hpp"
#include "streamblur/kernels/params.hpp"
#include "streamblur/kernels/reference.hpp"
#include "streamblur/pipeline/filter.hpp"

namespace streamblur::python {
namespace {

Backend pick_backend(const std::string& backend, const Image& src, const Image& dst) {
  const bool device_memory = src.memory == Memory::Device || dst.memory == Memory::Device;
  if (backend == "cpu") {
    if (device_memory)
      throw std::invalid_argument("backend='cpu' cannot read or write CUDA device memory; use backend='auto' or 'cuda'");
    return Backend::Cpu;
  }
  if (backend == "cuda") {
    require_cuda("backend='cuda' was asked for");
    return Backend::Cuda;
  }
  if (backend == "auto") return have_cuda() ? Backend::Cuda : Backend::Cpu;
  throw std::invalid_argument("backend must be 'auto', 'cpu' or 'cuda', got '" + backend + "'");
}

template <class F>
void with_host_pair(InArray src_arr, OutArray dst_arr, F&& f) {
  const Image src = describe(src_arr, "image");
  const Image dst = describe(InArray(dst_arr), "out=");
  check_same_shape(src, dst);
  if (src.memory == Memory::Device || dst.memory == Memory::Device)
    throw std::invalid_argument("the reference implementations take host arrays only");
  if (src.data == dst.data) throw std::invalid_argument("the reference implementations do not run in place");
  if (src.memory == Memory::Managed || dst.memory == Memory::Managed) wait_for_device();
  nb::gil_scoped_release no_gil;
  if (src.bytes == 1) f(src.typed<const uint8_t>(), dst.typed<uint8_t>());
  else f(src.typed<const uint16_t>(), dst.typed<uint16_t>());
}

}  // namespace

nb::object run_filter(InArray src_arr, std::optional<OutArray> dst_arr, const std::string& spec,
                      const std::string& backend_name, uintptr_t stream_handle, nb::callable new_output) {
  release_some_queued_calls();
  const Image src = describe(src_arr, "image");
  if (!dst_arr) dst_arr = nb::cast<OutArray>(new_output(memory_name(src.memory)));
  const Image dst = describe(InArray(*dst_arr), "out=");
  check_same_shape(src, dst);
  const Backend backend = pick_backend(backend_name, src, dst);
  const FrameLayout layout = one_plane_layout(src);
  if (backend == Backend::Cuda) {
    run_filter_cuda(src_arr, *dst_arr, src, dst, layout, spec, stream_handle);
    return nb::cast(*dst_arr);
  }
  const bool managed = src.memory == Memory::Managed || dst.memory == Memory::Managed;
  FilterChain chain(parse_filter_chain(spec));
  {
    nb::gil_scoped_release no_gil;
    if (managed) wait_for_device();  // no GPU work may be writing it
    chain.configure(layout, Backend::Cpu);
    copy_rows_host(src, dst);
    chain.apply({dst.plane()}, 1, nullptr);
  }
  return nb::cast(*dst_arr);
}

std::string check_chain(const std::string& spec) {
  FilterChain chain(parse_filter_chain(spec));
  if (chain.empty()) throw std::invalid_argument("the filter chain '" + spec + "' is empty");
  return chain.describe();
}

void reference_gaussian(InArray src, OutArray dst, double sigma, int radius) {
  gaussian_radius(sigma, radius);  // range checks before releasing the GIL
  with_host_pair(src, dst, [&](auto s, auto d) { reference::gaussian_blur(s, d, sigma, radius); });
}

void reference_box(InArray src, OutArray dst, int radius) {
  check_box_radius(radius);
  with_host_pair(src, dst, [&](auto s, auto d) { reference::box_blur(s, d, radius); });
}

}  // namespace streamblur::python
