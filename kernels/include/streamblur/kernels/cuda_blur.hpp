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

// Which kernels run. Auto picks by channels and radius (from measurements on
// an H200); the others force one, for tests and the benchmark. Register: the
// register-blocked fused kernels for one-channel planes (radius <= 32).
// Sliding: sliding windows in registers with warp shuffles, no shared memory,
// for one-channel planes (Gaussian radius <= 6, box radius 1..4, rx == ry).
// Running: box only; running sums whose cost does not grow with the radius,
// for planes of one or two interleaved channels up to 8192 samples wide. A
// forced path falls back (running and sliding to register, register to
// fused, fused to two passes) where it cannot run: a Gaussian (running),
// interleaved channels, a radius or tile too large for the kernel or the
// device's shared memory.
// Wide: Gaussian only; two register-blocked passes through a float plane
// whose cost is their FMAs, for any radius, on planes of one or two
// interleaved channels; it falls back to two passes (a box, 3-4 channels).
// Tensor: Gaussian only, on 8-bit planes of one channel or of interleaved
// pairs (each channel filtered apart), up to radius 32 either way; both
// passes as fp16 matrix products on the tensor cores (fp16 taps summing to 1,
// fp32 sums, the intermediate split into two fp16 parts); it falls
// back to the register path (16-bit samples, a box) and on from there.
enum class BlurPath { Auto, Fused, TwoPass, Register, Sliding, Running, Wide, Tensor };

// "auto", "fused", "two-pass", "register", "sliding", "running", "wide", "tensor".
const char* path_name(BlurPath path) noexcept;

// Separable Gaussian of one plane on the device (weights uploaded once).
class GaussianBlur {
 public:
  GaussianBlur(double sigma, int radius = -1) : GaussianBlur(sigma, sigma, radius, radius) {}
  GaussianBlur(double sigma_x, double sigma_y, int radius_x, int radius_y);
  int radius_x() const noexcept { return radius_x_; }
  int radius_y() const noexcept { return radius_y_; }
  // Sizes the scratch for planes up to width x height x channels (may synchronise).
  void reserve(int width, int height, int channels);
  // Forces a kernel path (tests, benchmark); Auto by default.
  void set_path(BlurPath path) noexcept { path_ = path; }
  // For 16-bit samples that hold their value above `shift` zero low bits
  // (P010: 6): apply() blurs the values (v >> shift) and writes its results
  // shifted back up, low bits zero, bit for bit as shifting the plane down,
  // blurring it and shifting it up would, without those two passes where the
  // kernels take the shift (the register and wide Gaussians; the other
  // kernels shift around the blur). 0..15; an 8-bit apply() with a shift throws.
  void set_sample_shift(int shift);
  // The kernels apply() runs for a width x height plane of `channels` samples
  // of `sample_bytes` on the current device, after the fall-backs (never Auto).
  BlurPath path_taken(int width, int height, int channels, std::size_t sample_bytes) const;
  // Blurs src into dst (may be the same plane), enqueued on `stream`.
  template <class T> void apply(Plane<const T> src, Plane<T> dst, cudaStream_t stream);
  // Device memory held (weights and scratch).
  std::size_t device_bytes() const noexcept { return weights_.size() + scratch_.size(); }

 private:
  int radius_x_, radius_y_;
  BlurPath path_ = BlurPath::Auto;
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
  // As GaussianBlur's: reserve, set_path and apply (src and dst may be the same plane).
  void reserve(int width, int height, int channels);
  void set_path(BlurPath path) noexcept { path_ = path; }
  void set_sample_shift(int shift);  // as GaussianBlur's (the box kernels shift around the blur)
  BlurPath path_taken(int width, int height, int channels, std::size_t sample_bytes) const;  // as GaussianBlur's
  template <class T> void apply(Plane<const T> src, Plane<T> dst, cudaStream_t stream);
  std::size_t device_bytes() const noexcept { return scratch_.size(); }

 private:
  int radius_x_, radius_y_;
  BlurPath path_ = BlurPath::Auto;
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
