#pragma once
// Box blurs whose cost does not grow with the radius (see blur_running.cu).
// Internal to streamblur_kernels: cuda::BoxBlur calls them for
// BlurPath::Running and, under Auto, for the radii where they are fastest.
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "blur_taps.hpp"
#include "streamblur/kernels/plane.hpp"

namespace streamblur::cuda::running {

// The widest row the band kernel takes, in samples (its shared memory holds
// the row's prefix, 8 samples per thread of at most 1024), and the channel
// counts it takes (planes of one sample per pixel, and interleaved UV pairs).
inline constexpr int kMaxSamples = 8192;
inline constexpr int kMaxChannels = 2;

// Whether a width x channels plane of `sample_bytes` samples with box radii
// rx, ry fits the path on the current device.
bool fits(int width, int channels, std::size_t sample_bytes, int rx, int ry);

// Device scratch the path needs for a plane (column sums at band edges).
std::size_t scratch_bytes(int width, int channels, int height);

// Launch on `stream`, planes of the same size; src != dst. taps: the radii
// (no weights). `scratch`: scratch_bytes(width, channels, height) bytes of
// device memory, 4-byte aligned. Throws std::invalid_argument where fits() is
// false, CudaError on a launch failure.
template <class T>
void box(Plane<const T> src, Plane<T> dst, const BlurTaps& taps, void* scratch, cudaStream_t stream);

}  // namespace streamblur::cuda::running
