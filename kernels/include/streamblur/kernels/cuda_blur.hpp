#pragma once
// CUDA blurs of one pitch-linear plane, as OpenCV cudafilters' filters: set up
// once (weights on the device), then apply(src, dst, stream) per plane. Nothing
// inside synchronises the host; the stream is always the caller's. src and dst
// may be the same plane. Both passes keep their intermediate on the device in a
// scratch plane the object owns; reserve() sizes it up front (apply() grows it
// with cudaMalloc if needed, which synchronises, so the pipeline reserves).
// An object may be used from one stream at a time (the scratch is its own).
#include <cuda_runtime_api.h>

#include <cstdint>
#include <vector>

#include "streamblur/kernels/cuda_raii.hpp"
#include "streamblur/kernels/plane.hpp"

namespace streamblur::cuda {

namespace detail {
// Which kernels apply() runs: Auto (the default) picks them; the tests and the
// benchmark may force others. Its values are defined, with what each path
// does, in streamblur/kernels/detail/blur_path.hpp (source tree only, not
// installed), with set_path() and path_taken().
enum class BlurPath : int;
struct PathAccess;
}  // namespace detail

// Separable Gaussian of one plane on the device (weights uploaded once).
class GaussianBlur {
 public:
  GaussianBlur(double sigma, int radius = -1) : GaussianBlur(sigma, sigma, radius, radius) {}
  GaussianBlur(double sigma_x, double sigma_y, int radius_x, int radius_y);
  int radius_x() const noexcept { return radius_x_; }
  int radius_y() const noexcept { return radius_y_; }
  // Sizes the scratch for planes up to width x height x channels (may synchronise).
  void reserve(int width, int height, int channels);
  // For 16-bit samples that hold their value above `shift` zero low bits
  // (P010: 6): apply() blurs the values (v >> shift) and writes its results
  // shifted back up, low bits zero, bit for bit as shifting the plane down,
  // blurring it and shifting it up would, without those two passes where the
  // kernels take the shift (the register and wide Gaussians; the other
  // kernels shift around the blur). 0..15; an 8-bit apply() with a shift throws.
  void set_sample_shift(int shift);
  // Blurs src into dst (may be the same plane), enqueued on `stream`.
  template <class T> void apply(Plane<const T> src, Plane<T> dst, cudaStream_t stream);
  // Device memory held (weights and scratch).
  std::size_t device_bytes() const noexcept { return weights_.size() + scratch_.size(); }

 private:
  int radius_x_, radius_y_;
  friend struct detail::PathAccess;
  detail::BlurPath path_{};  // Auto; forced by the tests and the benchmark
  int shift_ = 0;
  std::vector<float> host_weights_;  // 2rx+1 horizontal then 2ry+1 vertical floats
  DeviceBuffer weights_;   // the same, on the device
  DeviceBuffer scratch_;   // float intermediate
};

// Separable box (mean) blur of one plane on the device, exact integer sums.
class BoxBlur {
 public:
  explicit BoxBlur(int radius) : BoxBlur(radius, radius) {}
  BoxBlur(int radius_x, int radius_y);
  int radius_x() const noexcept { return radius_x_; }
  int radius_y() const noexcept { return radius_y_; }
  // As GaussianBlur's: reserve and apply (src and dst may be the same plane).
  void reserve(int width, int height, int channels);
  void set_sample_shift(int shift);  // as GaussianBlur's (the box kernels shift around the blur)
  template <class T> void apply(Plane<const T> src, Plane<T> dst, cudaStream_t stream);
  std::size_t device_bytes() const noexcept { return scratch_.size(); }

 private:
  int radius_x_, radius_y_;
  friend struct detail::PathAccess;
  detail::BlurPath path_{};  // Auto; forced by the tests and the benchmark
  int shift_ = 0;
  DeviceBuffer scratch_;   // uint32 horizontal sums, or an in-place output and the running path's band sums
};

// Rounds every sample to the nearest multiple of 1 << shift (clamped to the
// largest such 16-bit value), for formats whose value sits in the high bits (P010).
void round_to_high_bits(Plane<uint16_t> plane, int shift, cudaStream_t stream);

// Shifts every sample right by `shift` bits (shift > 0) or left by -shift, in
// place (see cpu::shift_samples for why).
void shift_samples(Plane<uint16_t> plane, int shift, cudaStream_t stream);

// Device-to-device 2-D copy of a plane (identity filters, and the benchmark's floor).
template <class T> void copy_plane(Plane<const T> src, Plane<T> dst, cudaStream_t stream);

}  // namespace streamblur::cuda
