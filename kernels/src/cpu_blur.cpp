// Separable CPU blurs. Each row is first copied into a buffer padded with the
// clamped edge pixels, so the inner loops have no branches; the inner loops
// are SIMD (cpu_simd.cpp, Google Highway, dispatched at run time).
#include "streamblur/kernels/cpu_blur.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "cpu_simd.hpp"
#include "streamblur/kernels/params.hpp"

namespace streamblur::cpu {
namespace {

// Repeats the first and last pixel r times beside a row of S samples (C per
// pixel) that sits at `mid` in a buffer with r*C samples of room each side.
template <class U>
void pad_edges(U* mid, int S, int C, int r) {
  for (int i = 1; i <= r; ++i)
    for (int c = 0; c < C; ++c) {
      mid[-i * C + c] = mid[c];
      mid[S - C + i * C + c] = mid[S - C + c];
    }
}

// Up to this box radius the horizontal sums are direct SIMD additions.
constexpr int kDirectBoxRadius = 6;

// The centre weight, then the weights at distance 1..r (a Gaussian is symmetric).
std::vector<float> half_weights(const std::vector<float>& w) {
  const size_t r = w.size() / 2;
  return std::vector<float>(w.begin() + static_cast<std::ptrdiff_t>(r), w.end());
}

}  // namespace

const char* simd_target() { return simd::target_name(); }
std::vector<int64_t> simd_targets() { return simd::targets(); }
void force_simd_target(int64_t target) { simd::force_target(target); }

void round_to_high_bits(Plane<uint16_t> plane, int shift) {
  const uint32_t half = (1u << shift) >> 1, top = 0xFFFFu & ~((1u << shift) - 1);
  for (int y = 0; y < plane.height; ++y) {
    uint16_t* row = plane.row(y);
    for (int s = 0; s < plane.samples_per_row(); ++s)
      row[s] = static_cast<uint16_t>(std::min<uint32_t>((row[s] + half) & ~((1u << shift) - 1), top));
  }
}

void shift_samples(Plane<uint16_t> plane, int shift) {
  if (shift < -15 || shift > 15) throw std::invalid_argument("shift_samples: shift must be -15..15");
  for (int y = 0; y < plane.height; ++y) {
    uint16_t* row = plane.row(y);
    for (int s = 0; s < plane.samples_per_row(); ++s)
      row[s] = static_cast<uint16_t>(shift >= 0 ? row[s] >> shift : row[s] << -shift);
  }
}

GaussianBlur::GaussianBlur(double sigma_x, double sigma_y, int radius_x, int radius_y)
    : radius_x_(gaussian_radius(sigma_x, radius_x)), radius_y_(gaussian_radius(sigma_y, radius_y)),
      weights_x_(half_weights(gaussian_weights_f(sigma_x, radius_x))),
      weights_y_(half_weights(gaussian_weights_f(sigma_y, radius_y))) {}

template <class T>
void GaussianBlur::horizontal_rows(Plane<const T> src, Plane<float> tmp, int y0, int y1) const {
  const int W = src.width, C = src.channels, r = radius_x_, S = W * C;
  std::vector<float> buf(static_cast<size_t>(W + 2 * r) * C);
  float* mid = buf.data() + static_cast<size_t>(r) * C;
  for (int y = y0; y < y1; ++y) {
    simd::to_float(src.row(y), mid, S);
    pad_edges(mid, S, C, r);  // clamped borders
    simd::gauss_row(mid, tmp.row(y), S, C, weights_x_.data(), r);
  }
}

template <class T>
void GaussianBlur::vertical_rows(Plane<const float> tmp, Plane<T> dst, int y0, int y1) const {
  const int S = dst.samples_per_row(), H = dst.height, r = radius_y_;
  std::vector<const float*> rows(2 * r + 1);
  for (int y = y0; y < y1; ++y) {
    for (int k = -r; k <= r; ++k) rows[k + r] = tmp.row(std::clamp(y + k, 0, H - 1));
    simd::gauss_columns(rows.data(), dst.row(y), S, weights_y_.data(), r);
  }
}

template <class T>
void GaussianBlur::apply(Plane<const T> src, Plane<T> dst, std::vector<float>& tmp) const {
  const int S = src.samples_per_row();
  tmp.resize(static_cast<size_t>(S) * src.height);
  Plane<float> t(tmp.data(), src.width, src.height, static_cast<std::ptrdiff_t>(S) * sizeof(float), src.channels);
  horizontal_rows(src, t, 0, src.height);
  vertical_rows(Plane<const float>(t), dst, 0, src.height);
}

BoxBlur::BoxBlur(int radius_x, int radius_y) : radius_x_(radius_x), radius_y_(radius_y) {
  check_box_radius(radius_x);
  check_box_radius(radius_y);
}

template <class T>
void BoxBlur::horizontal_rows(Plane<const T> src, Plane<uint32_t> tmp, int y0, int y1) const {
  const int W = src.width, C = src.channels, r = radius_x_, S = W * C;
  std::vector<uint32_t> buf(static_cast<size_t>(W + 2 * r) * C);
  uint32_t* in = buf.data() + static_cast<size_t>(r) * C;
  for (int y = y0; y < y1; ++y) {
    simd::to_u32(src.row(y), in, S);
    pad_edges(in, S, C, r);  // clamped borders
    uint32_t* out = tmp.row(y);
    // Small windows: 2r+1 vector additions per vector of output. Larger ones:
    // a running sum per channel, flat in r.
    if (r <= kDirectBoxRadius) {
      simd::box_row_direct(in, out, S, C, r);
      continue;
    }
    for (int c = 0; c < C; ++c) {  // running sum along the row, per channel
      uint32_t sum = 0;
      for (int k = -r; k <= r; ++k) sum += in[k * C + c];
      for (int x = 0; x < W; ++x) {
        out[x * C + c] = sum;
        if (x + 1 < W) sum += in[(x + r + 1) * C + c] - in[(x - r) * C + c];
      }
    }
  }
}

// Rows [y0, y1) over samples [s0, s1) of each row: running column sums
// started from the 2r+1 rows around y0, then slid one row at a time.
template <class T>
void BoxBlur::vertical_block(Plane<const uint32_t> tmp, Plane<T> dst, int y0, int y1, int s0, int s1) const {
  const int L = s1 - s0, H = dst.height, r = radius_y_;
  if (L <= 0 || y0 >= y1) return;
  const uint64_t n = static_cast<uint64_t>(2 * radius_x_ + 1) * (2 * r + 1);
  if (static_cast<uint64_t>(sample_max<T>()) * n + n / 2 < (uint64_t{1} << 31)) {
    // The common case: window sums fit 31 bits, so SIMD uint32 running sums
    // and an exact division by a float reciprocal with one correction step.
    std::vector<uint32_t> sum(L, 0);
    for (int k = -r; k <= r; ++k) {
      const uint32_t* in = tmp.row(std::clamp(y0 + k, 0, H - 1)) + s0;
      for (int s = 0; s < L; ++s) sum[s] += in[s];
    }
    for (int y = y0; y < y1; ++y) {
      simd::divide_columns(sum.data(), dst.row(y) + s0, L, static_cast<uint32_t>(n));
      if (y + 1 == y1) break;
      simd::slide_columns(sum.data(), tmp.row(std::min(y + r + 1, H - 1)) + s0, tmp.row(std::max(y - r, 0)) + s0, L);
    }
    return;
  }
  std::vector<uint64_t> sum(L, 0);  // windows too big for 31 bits
  for (int k = -r; k <= r; ++k) {
    const uint32_t* in = tmp.row(std::clamp(y0 + k, 0, H - 1)) + s0;
    for (int s = 0; s < L; ++s) sum[s] += in[s];
  }
  for (int y = y0; y < y1; ++y) {
    T* out = dst.row(y) + s0;
    for (int s = 0; s < L; ++s) out[s] = static_cast<T>((sum[s] + n / 2) / n);
    if (y + 1 == y1) break;
    const uint32_t* add = tmp.row(std::min(y + r + 1, H - 1)) + s0;
    const uint32_t* sub = tmp.row(std::max(y - r, 0)) + s0;
    for (int s = 0; s < L; ++s) sum[s] += static_cast<uint64_t>(add[s]) - sub[s];
  }
}

template <class T>
void BoxBlur::vertical_rows(Plane<const uint32_t> tmp, Plane<T> dst, int y0, int y1) const {
  vertical_block(tmp, dst, y0, y1, 0, dst.samples_per_row());
}

template <class T>
void BoxBlur::vertical_columns(Plane<const uint32_t> tmp, Plane<T> dst, int s0, int s1) const {
  vertical_block(tmp, dst, 0, dst.height, s0, s1);
}

template <class T>
void BoxBlur::apply(Plane<const T> src, Plane<T> dst, std::vector<uint32_t>& tmp) const {
  const int S = src.samples_per_row();
  tmp.resize(static_cast<size_t>(S) * src.height);
  Plane<uint32_t> t(tmp.data(), src.width, src.height, static_cast<std::ptrdiff_t>(S) * sizeof(uint32_t), src.channels);
  horizontal_rows(src, t, 0, src.height);
  vertical_rows(Plane<const uint32_t>(t), dst, 0, src.height);
}

#define SB_INSTANTIATE(T)                                                                          \
  template void GaussianBlur::horizontal_rows<T>(Plane<const T>, Plane<float>, int, int) const;    \
  template void GaussianBlur::vertical_rows<T>(Plane<const float>, Plane<T>, int, int) const;      \
  template void GaussianBlur::apply<T>(Plane<const T>, Plane<T>, std::vector<float>&) const;       \
  template void BoxBlur::horizontal_rows<T>(Plane<const T>, Plane<uint32_t>, int, int) const;      \
  template void BoxBlur::vertical_rows<T>(Plane<const uint32_t>, Plane<T>, int, int) const;        \
  template void BoxBlur::vertical_columns<T>(Plane<const uint32_t>, Plane<T>, int, int) const;     \
  template void BoxBlur::apply<T>(Plane<const T>, Plane<T>, std::vector<uint32_t>&) const;
SB_INSTANTIATE(uint8_t)
SB_INSTANTIATE(uint16_t)
#undef SB_INSTANTIATE

}  // namespace streamblur::cpu
