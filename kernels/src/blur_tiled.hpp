#pragma once
// Register-blocked fused blurs of one-channel planes (see blur_tiled.cu).
// Internal to streamblur_kernels: cuda::GaussianBlur and cuda::BoxBlur call
// them for BlurPath::Register and, under Auto, where they are fastest.
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace streamblur::cuda::tiled {

// The largest radius either kernel takes: the Gaussian's largest
// compile-time bucket; for the box, beyond it the first window of each thread
// costs more than the two-pass kernels.
inline constexpr int kMaxRadius = 32;

// The sliding-window kernels (registers and warp shuffles, no shared memory):
// Gaussians up to radius 6, boxes of radius 1..4 with rx == ry.
inline constexpr int kMaxSlidingGauss = 6;
inline constexpr int kMaxSlidingBox = 4;
bool sliding_fits(bool box, int rx, int ry);

// Whether the Gaussian (radii rx, ry) or the box fits the register path on
// the current device (radius and the device's shared memory per block).
bool gauss_fits(int rx, int ry, std::size_t sample_bytes);
bool box_fits(int rx, int ry, std::size_t sample_bytes);

// Launch on `stream`; src != dst (tiles read their neighbours' rows). wx, wy:
// host weights, 2rx+1 and 2ry+1 floats. gauss takes a sample shift for
// 16-bit samples holding their value in the high bits (P010: 6; see
// detail::to_high_bits), 0 otherwise. Throw std::invalid_argument where the
// *_fits check fails or the shift is out of range, CudaError on a launch failure.
template <class T>
void gauss(const T* src, std::ptrdiff_t src_pitch, T* dst, std::ptrdiff_t dst_pitch, int width, int height,
           const float* wx, int rx, const float* wy, int ry, int shift, cudaStream_t stream);
// wx == nullptr selects the box.
template <class T>
void sliding(const T* src, std::ptrdiff_t src_pitch, T* dst, std::ptrdiff_t dst_pitch, int width, int height,
             const float* wx, int rx, const float* wy, int ry, cudaStream_t stream);
template <class T>
void box(const T* src, std::ptrdiff_t src_pitch, T* dst, std::ptrdiff_t dst_pitch, int width, int height, int rx,
         int ry, cudaStream_t stream);

}  // namespace streamblur::cuda::tiled
