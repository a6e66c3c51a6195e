// DeviceFrames (frame_memory.hpp) with the CUDA backend: frame memory from a
// per-device pool, and the copies of frames on or for the device. CUDA
// builds only.
#include <cuda_runtime_api.h>

#include <cstdint>
#include <mutex>
#include <optional>
#include <utility>
#include <vector>

#include "frame_memory.hpp"
#include "streamblur/kernels/cuda_check.hpp"
#include "streamblur/kernels/cuda_raii.hpp"

namespace streamblur::python {
namespace {

// A per-device pool for the memory of frames handed to Python: allocation is
// stream-ordered on the pipeline slot's stream, the free stream-ordered on the
// legacy default stream (where CuPy and PyTorch work unless told otherwise),
// so a frame dropped while work on it is queued there is not reused under that
// work. Its release threshold is unlimited, so the per-frame synchronisation
// does not hand the memory back to the driver between frames; trimmed when an
// iterator closes. nullptr where the device has no memory pools (then plain
// cudaMalloc / cudaFree). Pools live as long as the process.
cudaMemPool_t frame_memory_pool(int device) {
  static std::mutex mutex;
  static std::vector<std::pair<int, cudaMemPool_t>> pools;
  std::lock_guard<std::mutex> lock(mutex);
  for (const auto& [d, pool] : pools)
    if (d == device) return pool;
  int supported = 0;
  CUDA_CHECK(cudaDeviceGetAttribute(&supported, cudaDevAttrMemoryPoolsSupported, device));
  cudaMemPool_t pool = nullptr;
  if (supported) {
    cudaMemPoolProps props{};
    props.allocType = cudaMemAllocationTypePinned;
    props.location.type = cudaMemLocationTypeDevice;
    props.location.id = device;
    CUDA_CHECK(cudaMemPoolCreate(&pool, &props));
    uint64_t threshold = UINT64_MAX;
    CUDA_CHECK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &threshold));
  }
  pools.emplace_back(device, pool);
  return pool;
}

// A frame's block in device memory of `device` (the current device), ready
// for work on `stream`.
class DeviceFrameBlock final : public FrameBlock {
 public:
  DeviceFrameBlock(size_t bytes, int device, cudaStream_t stream)
      : FrameBlock(nullptr, device), pool_(frame_memory_pool(device)) {
    if (pool_) CUDA_CHECK(cudaMallocFromPoolAsync(&data_, bytes, pool_, stream));
    else CUDA_CHECK(cudaMalloc(&data_, bytes));
  }
  ~DeviceFrameBlock() override {
    if (!data_) return;
    // Errors are ignored: this may run at interpreter exit, after the CUDA runtime has gone.
    int current = -1;
    if (cudaGetDevice(&current) == cudaSuccess && current != device_) cudaSetDevice(device_);
    if (pool_) cudaFreeAsync(data_, cudaStreamLegacy);
    else cudaFree(data_);
    if (current >= 0 && current != device_) cudaSetDevice(current);
    cudaGetLastError();
  }

 private:
  cudaMemPool_t pool_ = nullptr;
};

}  // namespace

struct DeviceFrames::State {
  int device = 0;
  bool to_device = false;
  std::optional<cuda::CudaStream> upload_stream;  // made on `device` on first use
  cudaMemPool_t used_pool = nullptr;               // written by the sink, read after the join

  cudaStream_t upload() {
    if (!upload_stream) upload_stream.emplace();  // on `device`, made current by the caller
    return upload_stream->get();
  }
};

DeviceFrames::DeviceFrames(int device, bool to_device) : state_(std::make_unique<State>()) {
  state_->device = device;
  state_->to_device = to_device;
}

DeviceFrames::~DeviceFrames() = default;

std::unique_ptr<FrameBlock> DeviceFrames::copy(const FrameView& v, const std::array<size_t, 4>& offset,
                                               size_t bytes) {
  State& s = *state_;
  // Device planes are copied on the slot's stream (ordered after the frame's
  // work, and before the slot's reuse); host planes going to the device on a
  // stream of our own. Either way the copy is complete before the frame is
  // handed over, so Python can use it on any stream.
  CUDA_CHECK(cudaSetDevice(v.on_device ? v.device : s.device));
  const cudaStream_t stream = v.on_device ? v.stream : s.upload();
  std::unique_ptr<FrameBlock> block;
  if (s.to_device) {
    block = std::make_unique<DeviceFrameBlock>(bytes, s.device, stream);
    s.used_pool = frame_memory_pool(s.device);
  } else {
    block = host_frame_block(bytes);
  }
  const FrameLayout& l = v.layout;
  for (int p = 0; p < l.num_planes; ++p) {
    const size_t row = plane_row_bytes(l, p);
    CUDA_CHECK(cudaMemcpy2DAsync(block->data() + offset[p], row, v.planes[p].data,
                                 static_cast<size_t>(v.planes[p].pitch), row, l.planes[p].height, cudaMemcpyDefault,
                                 stream));
  }
  CUDA_CHECK(cudaStreamSynchronize(stream));
  return block;
}

void DeviceFrames::release() {
  State& s = *state_;
  if (s.used_pool) cudaMemPoolTrimTo(s.used_pool, 0);  // memory of frames Python still holds stays
  s.upload_stream.reset();
  if (s.to_device) cudaGetLastError();
}

}  // namespace streamblur::python
