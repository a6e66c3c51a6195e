#pragma once
// CUDA errors as exceptions carrying the call, file:line and CUDA's own message.
#include <cuda_runtime_api.h>

#include <stdexcept>
#include <string>

namespace streamblur::cuda {

class CudaError : public std::runtime_error {
 public:
  CudaError(const std::string& what, cudaError_t code) : std::runtime_error(what), code_(code) {}
  cudaError_t code() const noexcept { return code_; }
 private:
  cudaError_t code_;
};

[[noreturn]] void throw_cuda_error(cudaError_t code, const char* call, const char* file, int line);

// Number of CUDA devices usable here; 0 when there is no driver or no device
// (never throws).
int device_count() noexcept;

}  // namespace streamblur::cuda

#define CUDA_CHECK(call)                                                       \
  do {                                                                         \
    const cudaError_t sb_cuda_rc_ = (call);                                    \
    if (sb_cuda_rc_ != cudaSuccess)                                            \
      ::streamblur::cuda::throw_cuda_error(sb_cuda_rc_, #call, __FILE__, __LINE__); \
  } while (0)
