#pragma once
// Layout conversions on the device for frames that arrive in device memory
// (NVDEC surfaces: NV12, P010/P016 with the value in the high bits) and must
// become the planar processing format (yuv420p, yuv420p10le, ...) the rest of
// the chain uses. Enqueued on the caller's stream; nothing synchronises.
#include <cuda_runtime_api.h>

#include <cstdint>

#include "streamblur/kernels/plane.hpp"

namespace streamblur::cuda {

// dst = src >> shift, sample by sample (a plain 2-D copy when shift == 0).
// src and dst have the same size and channels and must not overlap.
template <class T>
void shift_copy(Plane<const T> src, Plane<T> dst, int shift, cudaStream_t stream);

// Splits a two-channel interleaved plane (NV12's or P010's UV) into two
// one-channel planes, shifting each sample right by `shift`.
template <class T>
void split_channels(Plane<const T> interleaved, Plane<T> first, Plane<T> second, int shift, cudaStream_t stream);

}  // namespace streamblur::cuda

namespace streamblur::reference {

// Plain CPU twins of the conversions above, for the tests.
template <class T>
void shift_copy(Plane<const T> src, Plane<T> dst, int shift);
template <class T>
void split_channels(Plane<const T> interleaved, Plane<T> first, Plane<T> second, int shift);

}  // namespace streamblur::reference
