#include "streamblur/kernels/cuda_check.hpp"

#include <sstream>

namespace streamblur::cuda {

void throw_cuda_error(cudaError_t code, const char* call, const char* file, int line) {
  std::ostringstream m;
  m << "CUDA error: " << call << " failed: " << cudaGetErrorString(code) << " (" << cudaGetErrorName(code)
    << ") at " << file << ":" << line;
  throw CudaError(m.str(), code);
}

int device_count() noexcept {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();  // clear the sticky "no device"/"no driver" state
    return 0;
  }
  return n;
}

}  // namespace streamblur::cuda
