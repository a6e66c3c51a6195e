#pragma once
// CUDA errors as exceptions carrying the call, CUDA's own message and the source location.
#include <cuda_runtime_api.h>

#include <stdexcept>
#include <string>
#include <utility>

namespace streamblur::cuda {

// A failed CUDA call: the message says what failed and CUDA's own words;
// code() is CUDA's error, location() where in the source it was raised
// ("blur.cu:338"), for a verbose report.
class CudaError : public std::runtime_error {
 public:
  CudaError(const std::string& what, cudaError_t code, std::string location = {})
      : std::runtime_error(what), code_(code), location_(std::move(location)) {}
  cudaError_t code() const noexcept { return code_; }
  const std::string& location() const noexcept { return location_; }
 private:
  cudaError_t code_;
  std::string location_;
};

// Throws CudaError. It first clears the runtime's last error (as CV-CUDA's
// error check does), so a failure that was caught and handled (an allocation
// that did not fit, say) is not reported again by the next, unrelated check.
[[noreturn]] void throw_cuda_error(cudaError_t code, const char* call, const char* file, int line);

// For teardown paths that must not throw (destructors): a failure is cleared
// from the runtime's last error and written once per process to stderr.
void check_teardown(cudaError_t code, const char* call) noexcept;

// Number of CUDA devices usable here. 0 means "no GPU": no device
// (cudaErrorNoDevice) or no usable driver (cudaErrorInsufficientDriver). Any
// other failure of cudaGetDeviceCount (a broken driver install, a device in a
// bad state, ...) is not hidden as "no GPU": it throws CudaError with CUDA's
// own message, so callers that fall back to the CPU without a device still
// report real driver errors.
int device_count();

// The rule device_count() applies to cudaGetDeviceCount's result `rc` and
// `count` (separate so that it can be tested without a GPU).
int device_count_from(cudaError_t rc, int count);

// After a kernel launch: throws CudaError naming the kernel and the launch
// site when the launch failed (bad configuration, too much shared memory, ...).
// In debug-sync mode it also waits for `stream` and reports a failure of the
// kernel's execution at the same site, instead of at some later, unrelated
// call. Debug-sync mode is on when built with -DSTREAMBLUR_CUDA_DEBUG_SYNC=ON
// or when the environment sets STREAMBLUR_CUDA_SYNC=1 (read once).
void check_launch(const char* kernel, cudaStream_t stream, const char* file, int line);

// Whether launches synchronise (see check_launch).
bool debug_sync_enabled() noexcept;

}  // namespace streamblur::cuda

// Use right after `kernel<<<...>>>(...)`: STREAMBLUR_CHECK_LAUNCH("name", stream);
#define STREAMBLUR_CHECK_LAUNCH(kernel, stream) ::streamblur::cuda::check_launch((kernel), (stream), __FILE__, __LINE__)

// Runs a CUDA runtime call and throws CudaError (call text, CUDA's message, file:line) when it fails.
#define CUDA_CHECK(call)                                                       \
  do {                                                                         \
    const cudaError_t sb_cuda_rc_ = (call);                                    \
    if (sb_cuda_rc_ != cudaSuccess)                                            \
      ::streamblur::cuda::throw_cuda_error(sb_cuda_rc_, #call, __FILE__, __LINE__); \
  } while (0)
