#pragma once
// Register-blocked fused blurs of one-channel planes and the 3x3 box (see
// blur_tiled.cu). Internal to streamblur_kernels: cuda::GaussianBlur and
// cuda::BoxBlur call them for BlurPath::Register and BlurPath::Box3.
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "blur_taps.hpp"
#include "streamblur/kernels/plane.hpp"

namespace streamblur::cuda::tiled {

// The largest radius either kernel takes: the Gaussian's largest
// compile-time bucket; for the box, beyond it the first window of each thread
// costs more than the two-pass kernels.
inline constexpr int kMaxRadius = 32;

// Whether the Gaussian (radii rx, ry) or the box fits the register path on
// the current device (radius and the device's shared memory per block).
bool gauss_fits(int rx, int ry, std::size_t sample_bytes);
bool box_fits(int rx, int ry, std::size_t sample_bytes);

// Launch on `stream`, one-channel planes of the same size; src != dst
// (tiles read their neighbours' rows). gauss: host weights in `taps`, and a
// sample shift for 16-bit samples holding their value in the high bits
// (P010: 6; see detail::to_high_bits), 0 otherwise. Throw
// std::invalid_argument where the *_fits check fails, the planes have more
// than one channel or the shift is out of range, CudaError on a launch failure.
template <class T>
void gauss(Plane<const T> src, Plane<T> dst, const BlurTaps& taps, int shift, cudaStream_t stream);
template <class T>
void box(Plane<const T> src, Plane<T> dst, const BlurTaps& taps, cudaStream_t stream);
// The 3x3 box (BlurPath::Box3).
template <class T>
void box3_blur(Plane<const T> src, Plane<T> dst, cudaStream_t stream);

}  // namespace streamblur::cuda::tiled
