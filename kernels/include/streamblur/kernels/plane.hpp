#pragma once
// A pitch-linear image plane: the one data type every kernel takes. A pixel is
// `channels` interleaved samples (1 for planar Y/U/V, 2 for NV12's UV plane,
// 3 or 4 for interleaved images); each channel is blurred on its own.
#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace streamblur {

// A view (not an owner) of width x height pixels `pitch` bytes apart.
template <class T>
struct Plane {
  T* data = nullptr;
  int width = 0;            // pixels
  int height = 0;           // rows
  std::ptrdiff_t pitch = 0; // bytes between rows (>= width * channels * sizeof(T))
  int channels = 1;

  Plane() = default;
  Plane(T* d, int w, int h, std::ptrdiff_t p, int c = 1) : data(d), width(w), height(h), pitch(p), channels(c) {}
  // Plane<T> converts to Plane<const T>.
  template <class U, class = std::enable_if_t<std::is_same_v<const U, T> && !std::is_same_v<U, T>>>
  Plane(const Plane<U>& o) : data(o.data), width(o.width), height(o.height), pitch(o.pitch), channels(o.channels) {}

  int samples_per_row() const { return width * channels; }
  using Byte = std::conditional_t<std::is_const_v<T>, const unsigned char, unsigned char>;
  T* row(int y) const { return reinterpret_cast<T*>(reinterpret_cast<Byte*>(data) + static_cast<std::ptrdiff_t>(y) * pitch); }
};

// Largest sample value of the type (the clamp bound after rounding).
template <class T>
constexpr double sample_max() { return static_cast<double>(static_cast<T>(~T{0})); }

}  // namespace streamblur
