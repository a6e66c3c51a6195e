#pragma once
// Gaussians of any radius in two register-blocked passes (see blur_wide.cu).
// Internal to streamblur_kernels: cuda::GaussianBlur calls them for
// BlurPath::Wide and, under Auto, for the radii where they are fastest.
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "blur_taps.hpp"
#include "streamblur/kernels/plane.hpp"

namespace streamblur::cuda::wide {

// Planes of one sample per pixel and interleaved pairs (UV).
inline constexpr int kMaxChannels = 2;

bool fits(int channels, int rx, int ry);

// The plane between the passes: 16-bit fixed point for 8-bit sources,
// floats for 16-bit ones; its row pitch in bytes, and the scratch it needs.
std::size_t plane_pitch(int samples, std::size_t sample_bytes);
std::size_t scratch_bytes(int samples, int height, std::size_t sample_bytes);

// Launch on `stream`, planes of the same size. taps: the weights in device
// memory. scratch: scratch_bytes(width * channels, height, sizeof(T)) bytes
// of device memory, 16-byte aligned. src may equal dst (the second pass reads
// only the scratch plane). shift: for 16-bit samples holding their value in
// the high bits (P010: 6), 0 otherwise (see detail::to_high_bits). Throws
// std::invalid_argument where fits() is false or the shift is out of range,
// CudaError on a launch failure.
template <class T>
void gauss(Plane<const T> src, Plane<T> dst, const BlurTaps& taps, int shift, void* scratch, cudaStream_t stream);

}  // namespace streamblur::cuda::wide
