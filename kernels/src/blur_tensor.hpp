#pragma once
// Gaussian blurs of one-channel 8-bit planes on the tensor cores (see
// blur_tensor.cu). Internal to streamblur_kernels: cuda::GaussianBlur calls it
// for BlurPath::Tensor and, under Auto, where it is fastest.
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "blur_taps.hpp"
#include "streamblur/kernels/plane.hpp"

namespace streamblur::cuda::tensor {

// The largest radius in either direction.
inline constexpr int kMaxRadius = 32;

// Whether a Gaussian of radii rx, ry (pixels) on a plane of `sample_bytes`
// samples and `channels` interleaved channels runs here: 8-bit samples, one
// or two channels, rx and ry up to kMaxRadius, the tile in the current
// device's shared memory.
bool fits(int rx, int ry, std::size_t sample_bytes, int channels);

// How many 16 x 16 blocks of taps a warp's band of outputs meets in the
// wider of its two passes (1 to 5; pairs' channels are filtered apart, so
// the same as one channel's): what the kernel's cost follows.
int tap_blocks(int rx, int ry);

// Launch on `stream`, planes of the same size; src != dst (tiles read their
// neighbours' rows). taps: host weights. Throws std::invalid_argument where
// fits() fails, CudaError on a launch failure.
void gauss(Plane<const uint8_t> src, Plane<uint8_t> dst, const BlurTaps& taps, cudaStream_t stream);

}  // namespace streamblur::cuda::tensor
