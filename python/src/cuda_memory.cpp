// cuda_memory.hpp with the CUDA backend: devices, pointer kinds, managed and
// device allocations for Python, and CUDA's errors as Python's.
#include "cuda_memory.hpp"

#include <cuda_runtime_api.h>

#include <exception>
#include <stdexcept>
#include <string>

#include "errors.hpp"
#include "streamblur/kernels/cuda_check.hpp"

namespace streamblur::python {

int device_count() { return cuda::device_count(); }

bool have_cuda() { return cuda::device_count() > 0; }

int current_device() {
  int d = 0;
  CUDA_CHECK(cudaGetDevice(&d));
  return d;
}

void require_cuda(const std::string& asked) {
  if (!have_cuda()) throw std::runtime_error(asked + " but no CUDA device is usable here");
}

void find_managed_memory(Image& im) {
  if (!have_cuda()) return;
  cudaPointerAttributes attr{};
  if (cudaPointerGetAttributes(&attr, im.data) == cudaSuccess && attr.type == cudaMemoryTypeManaged) {
    im.memory = Memory::Managed;
    im.device = attr.device;
  } else {
    cudaGetLastError();  // clear a sticky "invalid value" from old runtimes
  }
}

void check_cuda_array(const Image& im, const char* what) {
  if (im.memory != Memory::Device) return;  // managed memory: any device, and the host, can reach it
  require_cuda(std::string(what) + " is a CUDA array");
  const int cur = current_device();
  if (im.device != cur)
    throw std::invalid_argument(std::string(what == std::string("image") ? "array" : "out= array") +
                                " is on CUDA device " + std::to_string(im.device) +
                                " but streamblur runs on device " + std::to_string(cur) +
                                " (the current device); make device " + std::to_string(im.device) +
                                " current first (cupy.cuda.Device(n).use(), torch.cuda.set_device(n))");
}

void wait_for_device() { CUDA_CHECK(cudaDeviceSynchronize()); }

nb::ndarray<nb::numpy, uint8_t> managed_bytes(size_t bytes) {
  if (bytes == 0 || bytes > kMaxManagedBytes)
    throw std::invalid_argument("managed_empty: " + std::to_string(bytes) +
                                " bytes asked for; managed arrays must hold 1 byte to 1 GiB");
  if (!have_cuda()) throw std::runtime_error("managed_empty: no CUDA device is usable here");
  void* p = nullptr;
  CUDA_CHECK(cudaMallocManaged(&p, bytes, cudaMemAttachGlobal));
  nb::capsule owner(p, [](void* q) noexcept { cudaFree(q); });
  // The host may touch managed memory only while no kernel runs (without concurrent access).
  CUDA_CHECK(cudaDeviceSynchronize());
  const size_t shape[1] = {bytes};
  return nb::ndarray<nb::numpy, uint8_t>(p, 1, shape, owner);
}

nb::ndarray<nb::array_api, nb::device::cuda> cuda_empty(std::vector<size_t> shape, int bytes) {
  if (!have_cuda()) throw std::runtime_error("no CUDA device is usable here");
  if (shape.size() < 2 || shape.size() > 3 || (bytes != 1 && bytes != 2))
    throw std::invalid_argument("cuda_empty: bad shape or sample size");
  size_t n = bytes;
  for (size_t s : shape) n *= s;
  void* p = nullptr;
  CUDA_CHECK(cudaMalloc(&p, n ? n : 1));
  nb::capsule owner(p, [](void* q) noexcept { cudaFree(q); });
  return nb::ndarray<nb::array_api, nb::device::cuda>(p, shape.size(), shape.data(), owner, nullptr,
                                                      bytes == 1 ? nb::dtype<uint8_t>() : nb::dtype<uint16_t>(),
                                                      nb::device::cuda::value, current_device());
}

bool is_managed_pointer(uintptr_t p) {
  if (!have_cuda() || p == 0) return false;
  cudaPointerAttributes attr{};
  if (cudaPointerGetAttributes(&attr, reinterpret_cast<const void*>(p)) != cudaSuccess) {
    cudaGetLastError();
    return false;
  }
  return attr.type == cudaMemoryTypeManaged;
}

void register_cuda_error_translator() {
  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const cuda::CudaError& e) {
      set_located_error(e.what(), e.location());
    }
  });
}

}  // namespace streamblur::python
