#pragma once
// The CUDA side of one run before its frames flow: the device's context,
// started on a thread of its own while the input opens (creating it costs
// 0.2-0.3 s), and the NVDEC decoder's device context on it. In a build
// without the CUDA backend nothing starts and there are no devices.
#include <cstddef>
#include <future>
#include <memory>
#include <string>

#include "streamblur/io/av_ptr.hpp"
#include "streamblur/pipeline/device_stream.hpp"

namespace streamblur::cuda {
class CudaStream;
}

namespace streamblur::detail {

// What starting CUDA on a device found.
struct DeviceStartup {
  int devices = 0;
  void* context = nullptr;  // CUcontext; nullptr when it could not be read (NVDEC then unavailable)
  std::string error;        // set when the device cannot be used
};

// Free memory of CUDA device `device` now (cudaMemGetInfo), 0 when it cannot be read.
std::size_t free_device_memory(int device);

class DeviceSession {
 public:
  // Starts the runtime's primary context of `device` in the background.
  void start(int device);
  bool started() const { return startup_.valid(); }
  // What start() found (waits for it); started() first.
  const DeviceStartup& startup() const { return startup_.get(); }
  // A CUDA device context for FFmpeg's NVDEC sharing the started context,
  // with a stream of its own for its surface copies; throws
  // std::runtime_error when it cannot be made.
  io::AVBufferRefPtr make_nvdec_context(int device);
  // That stream (nullptr before make_nvdec_context).
  DeviceStream decode_stream() const;

 private:
  std::shared_future<DeviceStartup> startup_;
  std::shared_ptr<cuda::CudaStream> decode_stream_;
};

}  // namespace streamblur::detail
