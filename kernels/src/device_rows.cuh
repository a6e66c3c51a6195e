#pragma once
// Helpers the blur kernels share (blur.cu, blur_tiled.cu, blur_running.cu):
// row y of a pitch-linear plane, a float result rounded half up and clamped
// to T, exact rounded box quotients, and the shared-memory opt-in.
#include <cuda_runtime_api.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "streamblur/kernels/cuda_check.hpp"

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

// Samples that hold their value in the high bits (P010: 10 bits over a
// shift of 6): the kernels that take a `shift` read v >> shift, compute as on
// any plane and write their rounded result << shift, bit for bit what
// shifting the plane down, blurring it and shifting it back up gives.
// 8-bit samples never have a shift (the call sites pass 0).
template <class T>
__device__ __forceinline__ T to_high_bits(T v, int shift) {
  if constexpr (sizeof(T) == 1) return v;
  else return static_cast<T>(v << shift);
}
template <class T>
inline void check_shift(int shift) {
  if (shift < 0 || shift > 15 || (sizeof(T) == 1 && shift != 0))
    throw std::invalid_argument("blur: sample shift " + std::to_string(shift) +
                                " out of range (0..15, and 0 for 8-bit samples)");
}

// round(sum / count), half up, exact for sum < 2^32: a float quotient is
// within one of the truth for the sums a blur produces, then corrected.
__device__ __forceinline__ uint32_t divide_round(uint32_t sum, uint32_t count, float inv_count) {
  const uint32_t n = sum + (count >> 1);
  uint32_t q = __float2uint_rz(__uint2float_rz(n) * inv_count);
  const long long rem = static_cast<long long>(n) - static_cast<long long>(q) * count;
  if (rem < 0) --q;
  else if (rem >= count) ++q;
  return q;
}

// Dynamic shared memory a block may opt in to on the current device, and the
// opt-in itself, once per kernel and device (function attributes are per device).
inline int device_index() {
  int dev = 0;
  CUDA_CHECK(cudaGetDevice(&dev));
  return dev;
}

// A device attribute of the current device, queried once per device.
template <cudaDeviceAttr kAttr>
inline int device_attribute() {
  static std::atomic<int> cached[64] = {};
  const int dev = device_index();
  int v = cached[dev & 63].load(std::memory_order_relaxed);
  if (v == 0) {
    CUDA_CHECK(cudaDeviceGetAttribute(&v, kAttr, dev));
    cached[dev & 63].store(v, std::memory_order_relaxed);
  }
  return v;
}

inline std::size_t shared_limit() {
  return static_cast<std::size_t>(device_attribute<cudaDevAttrMaxSharedMemoryPerBlockOptin>());
}

// The current device's multiprocessors.
inline int multiprocessors() { return device_attribute<cudaDevAttrMultiProcessorCount>(); }

// static_bytes: the kernel's own static shared memory, which the opt-in
// limit includes.
template <class Kernel>
inline void opt_in_shared(Kernel kernel, std::atomic<unsigned long long>& done, std::size_t static_bytes = 0) {
  const unsigned long long bit = 1ull << (device_index() & 63);
  if (done.load(std::memory_order_relaxed) & bit) return;
  CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                  static_cast<int>(shared_limit() - static_bytes)));
  done.fetch_or(bit, std::memory_order_relaxed);
}

}  // namespace streamblur::cuda::detail
