#pragma once
// Device helpers the blur kernels share (blur.cu, blur_tiled.cu): row y of a
// pitch-linear plane, and a float result rounded half up and clamped to T.
#include <cstddef>

namespace streamblur::cuda::detail {

template <class T>
__device__ __forceinline__ const T* row_ptr(const T* base, std::ptrdiff_t pitch, int y) {
  return reinterpret_cast<const T*>(reinterpret_cast<const unsigned char*>(base) + y * pitch);
}
template <class T>
__device__ __forceinline__ T* row_ptr(T* base, std::ptrdiff_t pitch, int y) {
  return reinterpret_cast<T*>(reinterpret_cast<unsigned char*>(base) + y * pitch);
}

template <class T>
__device__ __forceinline__ T round_clamp(float v) {
  constexpr float kMax = static_cast<float>(static_cast<T>(~T(0)));
  return static_cast<T>(fminf(fmaxf(floorf(v + 0.5f), 0.0f), kMax));
}

}  // namespace streamblur::cuda::detail
