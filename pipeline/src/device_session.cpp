// The backend a run resolves to, the devices here, and the CUDA start-up of
// a run (device_session.hpp). Without the CUDA backend there are no devices.
#include "device_session.hpp"

#include <stdexcept>

#include "streamblur/config.hpp"
#include "streamblur/pipeline/pipeline.hpp"
#if STREAMBLUR_HAVE_CUDA
#include <cuda_runtime_api.h>

#include "streamblur/io/hw_decode.hpp"
#include "streamblur/kernels/cuda_check.hpp"
#include "streamblur/kernels/cuda_raii.hpp"
#endif

namespace streamblur {

int cuda_device_count() {
#if STREAMBLUR_HAVE_CUDA
  return cuda::device_count();
#else
  return 0;
#endif
}

Backend resolve_backend(BackendChoice choice, int devices, std::string* why) {
  std::string reason;
  Backend b = Backend::Cpu;
  switch (choice) {
    case BackendChoice::Cpu: reason = "backend: cpu (asked for)"; break;
    case BackendChoice::Cuda:
      if (!STREAMBLUR_HAVE_CUDA) throw std::runtime_error(kNoCudaBackend);
      if (devices == 0) throw std::runtime_error("backend cuda: no CUDA device is available");
      b = Backend::Cuda;
      reason = "backend: cuda (asked for)";
      break;
    case BackendChoice::Auto:
      b = devices > 0 ? Backend::Cuda : Backend::Cpu;
      reason = devices > 0            ? "backend: cuda (auto: CUDA device found)"
               : STREAMBLUR_HAVE_CUDA ? "backend: cpu (auto: no CUDA device)"
                                      : "backend: cpu (auto: built without the CUDA backend)";
      break;
  }
  if (why) *why = reason;
  return b;
}

Backend resolve_backend(BackendChoice choice, std::string* why) {
  return resolve_backend(choice, choice == BackendChoice::Cpu ? 0 : cuda_device_count(), why);
}

namespace detail {

std::size_t free_device_memory(int device) {
#if STREAMBLUR_HAVE_CUDA
  std::size_t free = 0, total = 0;
  int current = 0;
  if (cudaGetDevice(&current) != cudaSuccess || cudaSetDevice(device) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  const bool ok = cudaMemGetInfo(&free, &total) == cudaSuccess;
  cudaSetDevice(current);
  cudaGetLastError();
  return ok ? free : 0;
#else
  (void)device;
  return 0;
#endif
}

#if STREAMBLUR_HAVE_CUDA
namespace {

// The runtime's primary context of `device`, and the driver handle FFmpeg's
// NVDEC needs to share it.
DeviceStartup start_cuda(int device) {
  DeviceStartup r;
  r.devices = cuda::device_count();
  if (r.devices == 0) return r;
  if (device < 0 || device >= r.devices) {
    r.error = "CUDA device " + std::to_string(device) + " does not exist (" + std::to_string(r.devices) +
              " device(s) here)";
    return r;
  }
  cudaError_t rc = cudaSetDevice(device);
  if (rc == cudaSuccess) rc = cudaFree(nullptr);  // creates the primary context now
  if (rc != cudaSuccess) {
    r.error = std::string("cannot use CUDA device ") + std::to_string(device) + ": " + cudaGetErrorString(rc);
    cudaGetLastError();
    return r;
  }
  // The driver's cuCtxGetCurrent through the runtime, so nothing links libcuda
  // (machines without a driver must still start the program).
  using GetCurrent = int (*)(void**);
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult found{};
  if (cudaGetDriverEntryPointByVersion("cuCtxGetCurrent", &fn, 12000, cudaEnableDefault, &found) == cudaSuccess &&
      found == cudaDriverEntryPointSuccess && fn) {
    void* ctx = nullptr;
    if (reinterpret_cast<GetCurrent>(fn)(&ctx) == 0) r.context = ctx;
  }
  cudaGetLastError();
  return r;
}

}  // namespace

void DeviceSession::start(int device) { startup_ = std::async(std::launch::async, start_cuda, device).share(); }

io::AVBufferRefPtr DeviceSession::make_nvdec_context(int device) {
  CUDA_CHECK(cudaSetDevice(device));
  decode_stream_ = std::make_shared<cuda::CudaStream>();
  return io::make_cuda_device_context(startup().context, decode_stream_->get());
}

DeviceStream DeviceSession::decode_stream() const { return decode_stream_ ? decode_stream_->get() : nullptr; }

#else  // no CUDA backend: nothing to start

void DeviceSession::start(int) {
  std::promise<DeviceStartup> none;
  none.set_value(DeviceStartup{});
  startup_ = none.get_future().share();
}

io::AVBufferRefPtr DeviceSession::make_nvdec_context(int) { throw std::runtime_error(kNoCudaBackend); }

DeviceStream DeviceSession::decode_stream() const { return nullptr; }

#endif

}  // namespace detail
}  // namespace streamblur
