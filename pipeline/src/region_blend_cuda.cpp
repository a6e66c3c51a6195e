// The CUDA half of a region filter (region_blend_cuda.hpp).
#include "region_blend_cuda.hpp"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstring>

#include "streamblur/kernels/cuda_check.hpp"

namespace streamblur::detail {
namespace {
template <class T>
Plane<T> typed(const AnyPlane& p) {
  return Plane<T>(static_cast<T*>(p.data), p.width, p.height, p.pitch, p.channels);
}
}  // namespace

void RegionBlendCuda::configure(const FrameLayout& layout, const Filter& inner, std::size_t max_boxes) {
  for (int p = 0; p < layout.num_planes; ++p) {
    saved_[p] = cuda::DeviceBuffer();
    if (!inner.touches(p)) continue;
    const PlaneLayout& pl = layout.planes[p];
    saved_[p] = cuda::DeviceBuffer(static_cast<std::size_t>(pl.width) * pl.channels * layout.bytes_per_sample * pl.height);
  }
  reserve_boxes(std::max<std::size_t>(1, max_boxes));
}

void RegionBlendCuda::apply(Filter& inner, int p, const AnyPlane& sub, std::size_t row,
                            const std::vector<RegionBox>& boxes, const RegionMask& mask, DeviceStream stream) {
  upload_boxes(boxes, stream);
  if (saved_[p].size() < row * sub.height) saved_[p] = cuda::DeviceBuffer(row * sub.height);
  AnyPlane saved = sub;
  saved.pitch = static_cast<std::ptrdiff_t>(row);
  saved.data = saved_[p].get();
  CUDA_CHECK(cudaMemcpy2DAsync(saved.data, row, sub.data, static_cast<std::size_t>(sub.pitch), row,
                               static_cast<std::size_t>(sub.height), cudaMemcpyDeviceToDevice, stream));
  inner.apply(p, sub, stream);
  const auto* dev_boxes = boxes_device_.as<const RegionBox>();
  const int n = static_cast<int>(boxes.size());
  if (sub.bytes_per_sample == 1)
    cuda::region_blend<uint8_t>(typed<const uint8_t>(saved), typed<uint8_t>(sub), dev_boxes, n, mask, stream);
  else
    cuda::region_blend<uint16_t>(typed<const uint16_t>(saved), typed<uint16_t>(sub), dev_boxes, n, mask, stream);
  blend_done_->record(stream);
}

std::size_t RegionBlendCuda::device_bytes() const {
  std::size_t n = boxes_device_.size();
  for (const auto& b : saved_) n += b.size();
  return n;
}

void RegionBlendCuda::reserve_boxes(std::size_t n) {
  if (boxes_device_.size() >= n * sizeof(RegionBox) && boxes_host_.size() >= n * sizeof(RegionBox)) return;
  if (upload_done_ && upload_pending_) upload_done_->synchronize();  // the old buffers may still be read
  if (blend_done_) blend_done_->synchronize();
  boxes_device_ = cuda::DeviceBuffer(n * sizeof(RegionBox));
  boxes_host_ = cuda::PinnedBuffer(n * sizeof(RegionBox));
  if (!upload_done_) upload_done_.emplace();
  if (!blend_done_) blend_done_.emplace();
  upload_pending_ = false;
}

// The frame's boxes into the device array: one small copy from pinned
// memory, once per frame, on the first plane's stream. It waits (on the
// device) for the last blend that read the array, and the host waits for
// the previous copy to have read the pinned buffer before refilling it
// (both long done when the chain is used for one frame at a time).
void RegionBlendCuda::upload_boxes(const std::vector<RegionBox>& boxes, DeviceStream stream) {
  if (uploaded_) return;
  uploaded_ = true;
  if (boxes.empty()) return;
  reserve_boxes(boxes.size());
  if (upload_pending_) upload_done_->synchronize();
  const std::size_t bytes = boxes.size() * sizeof(RegionBox);
  std::memcpy(boxes_host_.get(), boxes.data(), bytes);
  CUDA_CHECK(cudaStreamWaitEvent(stream, blend_done_->get(), 0));
  CUDA_CHECK(cudaMemcpyAsync(boxes_device_.get(), boxes_host_.get(), bytes, cudaMemcpyHostToDevice, stream));
  upload_done_->record(stream);
  upload_pending_ = true;
}

}  // namespace streamblur::detail
