#include "streamblur/kernels/cuda_check.hpp"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>

namespace streamblur::cuda {

void throw_cuda_error(cudaError_t code, const char* call, const char* file, int line) {
  cudaGetLastError();  // reported now: no later check may see it again (sticky errors stay, as they must)
  std::ostringstream m;
  m << "CUDA error: " << call << " failed: " << cudaGetErrorString(code) << " (" << cudaGetErrorName(code) << ")";
  const char* base = std::strrchr(file, '/');
  throw CudaError(m.str(), code, std::string(base ? base + 1 : file) + ":" + std::to_string(line));
}

void check_teardown(cudaError_t code, const char* call) noexcept {
  if (code == cudaSuccess || code == cudaErrorCudartUnloading) return;  // the latter: process exit
  cudaGetLastError();
  static std::atomic<bool> said{false};
  if (!said.exchange(true))
    std::fprintf(stderr, "streamblur: CUDA error during cleanup: %s failed: %s (%s)\n", call, cudaGetErrorString(code),
                 cudaGetErrorName(code));
}

bool debug_sync_enabled() noexcept {
#ifdef STREAMBLUR_CUDA_DEBUG_SYNC
  return true;
#else
  static const bool on = [] {
    const char* v = std::getenv("STREAMBLUR_CUDA_SYNC");
    return v != nullptr && *v != '\0' && std::strcmp(v, "0") != 0;
  }();
  return on;
#endif
}

void check_launch(const char* kernel, cudaStream_t stream, const char* file, int line) {
  cudaError_t rc = cudaGetLastError();
  if (rc != cudaSuccess) throw_cuda_error(rc, (std::string("launch of ") + kernel).c_str(), file, line);
  if (!debug_sync_enabled()) return;
  rc = cudaStreamSynchronize(stream);
  if (rc != cudaSuccess)
    throw_cuda_error(rc, (std::string(kernel) + " (STREAMBLUR_CUDA_SYNC: waited for it)").c_str(), file, line);
}

int device_count_from(cudaError_t rc, int count) {
  if (rc == cudaSuccess) return count;
  if (rc == cudaErrorNoDevice || rc == cudaErrorInsufficientDriver) return 0;
  throw_cuda_error(rc, "cudaGetDeviceCount", __FILE__, __LINE__);
}

int device_count() {
  int n = 0;
  const cudaError_t rc = cudaGetDeviceCount(&n);
  if (rc != cudaSuccess) cudaGetLastError();  // clear the error state before deciding, so no later check sees it
  return device_count_from(rc, n);
}

}  // namespace streamblur::cuda
