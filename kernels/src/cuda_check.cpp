#include "streamblur/kernels/cuda_check.hpp"

#include <sstream>

namespace streamblur::cuda {

void throw_cuda_error(cudaError_t code, const char* call, const char* file, int line) {
  std::ostringstream m;
  m << "CUDA error: " << call << " failed: " << cudaGetErrorString(code) << " (" << cudaGetErrorName(code)
    << ") at " << file << ":" << line;
  throw CudaError(m.str(), code);
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
