#pragma once
// Separable CPU blur, split into row ranges so a caller can run the ranges in
// parallel (the pipeline's CPU backend does so with TBB). Each pass reads whole
// rows: first horizontal_rows() over every row into the intermediate, then
// vertical_rows() over every row from it. Results are within +-1 of the
// reference for the Gaussian and exact for the box.
#include <cstdint>
#include <vector>

#include "streamblur/kernels/plane.hpp"

namespace streamblur::cpu {

// Rounds every sample to the nearest multiple of 1 << shift (clamped to the
// largest such 16-bit value), for formats whose value sits in the high bits (P010).
void round_to_high_bits(Plane<uint16_t> plane, int shift);

// The inner loops are SIMD (Google Highway), compiled for every instruction
// set Highway targets here and chosen at run time. simd_target() names the
// one in use ("AVX2", "AVX3", "SSE4", "NEON", ...); simd_targets() lists those
// this build contains and this machine runs; force_simd_target(t) restricts
// the choice to t (tests and benchmarks; 0 restores the best). Not thread-safe
// against blurs running at the same time.
const char* simd_target();
std::vector<int64_t> simd_targets();
void force_simd_target(int64_t target);
// Shifts every sample right by `shift` bits (shift > 0: high-bit values such
// as P010's down to plain values) or left by -shift (back up). Exact both ways
// when the low bits are zero, as P010's are; lets a filter round once, at the
// format's own precision (rounding to 16 bits and then to a multiple of 64
// rounds twice and biases the result up).
void shift_samples(Plane<uint16_t> plane, int shift);

// Separable Gaussian on the CPU: weights built once, then rows per pass.
class GaussianBlur {
 public:
  GaussianBlur(double sigma, int radius = -1) : GaussianBlur(sigma, sigma, radius, radius) {}
  GaussianBlur(double sigma_x, double sigma_y, int radius_x, int radius_y);
  int radius_x() const noexcept { return radius_x_; }
  int radius_y() const noexcept { return radius_y_; }
  // Pass 1 over rows [y0, y1) of src into tmp; pass 2 over rows [y0, y1) of dst from tmp.
  template <class T> void horizontal_rows(Plane<const T> src, Plane<float> tmp, int y0, int y1) const;
  template <class T> void vertical_rows(Plane<const float> tmp, Plane<T> dst, int y0, int y1) const;
  // Whole plane, serially; tmp grows as needed.
  template <class T> void apply(Plane<const T> src, Plane<T> dst, std::vector<float>& tmp) const;

 private:
  int radius_x_, radius_y_;
  std::vector<float> weights_x_, weights_y_;  // the centre weight, then distances 1..r
};

// Separable box (mean) blur on the CPU, exact integer sums.
class BoxBlur {
 public:
  explicit BoxBlur(int radius) : BoxBlur(radius, radius) {}
  BoxBlur(int radius_x, int radius_y);
  int radius_x() const noexcept { return radius_x_; }
  int radius_y() const noexcept { return radius_y_; }
  // Pass 1 over rows [y0, y1) of src into tmp (window sums); pass 2 over rows [y0, y1) of dst.
  template <class T> void horizontal_rows(Plane<const T> src, Plane<uint32_t> tmp, int y0, int y1) const;
  template <class T> void vertical_rows(Plane<const uint32_t> tmp, Plane<T> dst, int y0, int y1) const;
  // The vertical pass over samples [s0, s1) of every row (a column strip):
  // strips split the work without each part re-summing 2r+1 rows to start.
  template <class T> void vertical_columns(Plane<const uint32_t> tmp, Plane<T> dst, int s0, int s1) const;
  // Whole plane, serially; tmp grows as needed.
  template <class T> void apply(Plane<const T> src, Plane<T> dst, std::vector<uint32_t>& tmp) const;

 private:
  template <class T>
  void vertical_block(Plane<const uint32_t> tmp, Plane<T> dst, int y0, int y1, int s0, int s1) const;
  int radius_x_, radius_y_;
};

}  // namespace streamblur::cpu
