// Region blending on the device (definitions in regions.hpp): one thread per
// sample evaluates the boxes at its pixel (the mask is never stored) and
// blends the filtered sample with the one saved before filtering. Built with
// --fmad=false so region_box_alpha rounds exactly as the CPU does.
#include <cuda_runtime.h>

#include <cstdint>

#include "streamblur/kernels/cuda_check.hpp"
#include "streamblur/kernels/regions.hpp"

namespace streamblur::cuda {
namespace {

constexpr int kSharedBoxes = 64;  // boxes staged in shared memory per block; more are read from global memory

template <class T>
__global__ void region_blend_kernel(const T* in, std::ptrdiff_t in_pitch, T* plane, std::ptrdiff_t pitch, int width,
                                    int height, int channels, const RegionBox* boxes, int count, RegionMask mask) {
  __shared__ RegionBox shared_boxes[kSharedBoxes];
  const int staged = count < kSharedBoxes ? count : kSharedBoxes;
  const int t = threadIdx.y * blockDim.x + threadIdx.x;
  for (int i = t; i < staged; i += blockDim.x * blockDim.y) shared_boxes[i] = boxes[i];
  __syncthreads();
  const int s = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
  if (s >= width * channels || y >= height) return;
  const int x = s / channels;
  const float px = region_centre(mask.x0 + x, mask.log2_w), py = region_centre(mask.y0 + y, mask.log2_h);
  float alpha = 0.0f;
  for (int i = 0; i < count && alpha < 1.0f; ++i) {
    const RegionBox b = i < kSharedBoxes ? shared_boxes[i] : boxes[i];
    alpha = fmaxf(alpha, region_box_alpha(px, py, b, mask.feather, mask.ellipse));
  }
  const T before = reinterpret_cast<const T*>(reinterpret_cast<const unsigned char*>(in) + y * in_pitch)[s];
  T* row = reinterpret_cast<T*>(reinterpret_cast<unsigned char*>(plane) + y * pitch);
  row[s] = region_mix<T>(before, row[s], alpha);
}

}  // namespace

template <class T>
void region_blend(Plane<const T> in, Plane<T> plane, const RegionBox* device_boxes, int count, const RegionMask& mask,
                  cudaStream_t stream) {
  if (plane.width <= 0 || plane.height <= 0) return;
  const int S = plane.samples_per_row();
  const dim3 block(64, 4);
  region_blend_kernel<T><<<dim3((S + 63) / 64, (plane.height + 3) / 4), block, 0, stream>>>(
      in.data, in.pitch, plane.data, plane.pitch, plane.width, plane.height, plane.channels, device_boxes,
      count < 0 ? 0 : count, mask);
  STREAMBLUR_CHECK_LAUNCH("region_blend_kernel", stream);
}

template void region_blend<uint8_t>(Plane<const uint8_t>, Plane<uint8_t>, const RegionBox*, int, const RegionMask&,
                                     cudaStream_t);
template void region_blend<uint16_t>(Plane<const uint16_t>, Plane<uint16_t>, const RegionBox*, int,
                                     const RegionMask&, cudaStream_t);

}  // namespace streamblur::cuda
