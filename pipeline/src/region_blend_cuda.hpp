#pragma once
// The CUDA half of a region filter (regions.cpp): the crops saved before the
// inner filter runs, the frame's boxes in device memory, and the blend back
// by the mask. CUDA backend builds only.
#include <array>
#include <cstddef>
#include <optional>
#include <vector>

#include "streamblur/kernels/cuda_raii.hpp"
#include "streamblur/kernels/regions.hpp"
#include "streamblur/pipeline/filter.hpp"

namespace streamblur::detail {

class RegionBlendCuda {
 public:
  // Saved-crop buffers for the planes `inner` touches (whole planes, so no
  // frame allocates) and a boxes array for `max_boxes`.
  void configure(const FrameLayout& layout, const Filter& inner, std::size_t max_boxes);
  void begin_frame() { uploaded_ = false; }
  // Saves `sub` (a crop of plane p, rows of `row` bytes), runs inner on it,
  // then blends the saved crop back where the mask of `boxes` is below 1.
  void apply(Filter& inner, int p, const AnyPlane& sub, std::size_t row, const std::vector<RegionBox>& boxes,
             const RegionMask& mask, DeviceStream stream);
  std::size_t device_bytes() const;

 private:
  void reserve_boxes(std::size_t n);
  void upload_boxes(const std::vector<RegionBox>& boxes, DeviceStream stream);

  std::array<cuda::DeviceBuffer, 4> saved_;  // the crop before filtering, per plane
  cuda::DeviceBuffer boxes_device_;          // the frame's boxes, and their pinned staging
  cuda::PinnedBuffer boxes_host_;
  std::optional<cuda::CudaEvent> upload_done_, blend_done_;
  bool upload_pending_ = false;
  bool uploaded_ = false;
};

}  // namespace streamblur::detail
