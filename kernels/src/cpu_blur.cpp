// Separable CPU blurs. Each row is first copied into a buffer padded with the
// clamped edge pixels, so the inner loops have no branches and vectorise.
#include "streamblur/kernels/cpu_blur.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "streamblur/kernels/params.hpp"

namespace streamblur::cpu {
namespace {

// row[-r*C .. (W+r)*C) with edge pixels repeated; returns a pointer to sample 0.
template <class T, class U>
const U* padded_row(const T* src, int W, int C, int r, std::vector<U>& buf) {
  buf.resize(static_cast<size_t>(W + 2 * r) * C);
  U* p = buf.data();
  for (int i = 0; i < r; ++i)
    for (int c = 0; c < C; ++c) *p++ = static_cast<U>(src[c]);
  for (int s = 0; s < W * C; ++s) *p++ = static_cast<U>(src[s]);
  for (int i = 0; i < r; ++i)
    for (int c = 0; c < C; ++c) *p++ = static_cast<U>(src[(W - 1) * C + c]);
  return buf.data() + static_cast<size_t>(r) * C;
}

template <class T>
T round_clamp(float v) {
  return static_cast<T>(std::clamp(std::floor(v + 0.5f), 0.0f, static_cast<float>(sample_max<T>())));
}

}  // namespace

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
      weights_x_(gaussian_weights_f(sigma_x, radius_x)), weights_y_(gaussian_weights_f(sigma_y, radius_y)) {}

template <class T>
void GaussianBlur::horizontal_rows(Plane<const T> src, Plane<float> tmp, int y0, int y1) const {
  const int W = src.width, C = src.channels, r = radius_x_;
  std::vector<float> buf;
  for (int y = y0; y < y1; ++y) {
    const float* in = padded_row(src.row(y), W, C, r, buf);
    float* out = tmp.row(y);
    std::fill(out, out + W * C, 0.0f);
    for (int k = -r; k <= r; ++k) {
      const float w = weights_x_[k + r];
      const float* p = in + k * C;
      for (int s = 0; s < W * C; ++s) out[s] += w * p[s];
    }
  }
}

template <class T>
void GaussianBlur::vertical_rows(Plane<const float> tmp, Plane<T> dst, int y0, int y1) const {
  const int S = dst.samples_per_row(), H = dst.height, r = radius_y_;
  std::vector<float> acc(S);
  for (int y = y0; y < y1; ++y) {
    std::fill(acc.begin(), acc.end(), 0.0f);
    for (int k = -r; k <= r; ++k) {
      const float w = weights_y_[k + r];
      const float* in = tmp.row(std::clamp(y + k, 0, H - 1));
      for (int s = 0; s < S; ++s) acc[s] += w * in[s];
    }
    T* out = dst.row(y);
    for (int s = 0; s < S; ++s) out[s] = round_clamp<T>(acc[s]);
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
  const int W = src.width, C = src.channels, r = radius_x_;
  std::vector<uint32_t> buf;
  for (int y = y0; y < y1; ++y) {
    const uint32_t* in = padded_row(src.row(y), W, C, r, buf);
    uint32_t* out = tmp.row(y);
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

template <class T>
void BoxBlur::vertical_rows(Plane<const uint32_t> tmp, Plane<T> dst, int y0, int y1) const {
  const int S = dst.samples_per_row(), H = dst.height, r = radius_y_;
  const uint64_t n = static_cast<uint64_t>(2 * radius_x_ + 1) * (2 * r + 1);
  std::vector<uint64_t> sum(S, 0);  // running column sums
  for (int k = -r; k <= r; ++k) {
    const uint32_t* in = tmp.row(std::clamp(y0 + k, 0, H - 1));
    for (int s = 0; s < S; ++s) sum[s] += in[s];
  }
  for (int y = y0; y < y1; ++y) {
    T* out = dst.row(y);
    for (int s = 0; s < S; ++s) out[s] = static_cast<T>((sum[s] + n / 2) / n);
    if (y + 1 == y1) break;
    const uint32_t* add = tmp.row(std::min(y + r + 1, H - 1));
    const uint32_t* sub = tmp.row(std::max(y - r, 0));
    for (int s = 0; s < S; ++s) sum[s] += static_cast<uint64_t>(add[s]) - sub[s];
  }
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
  template void BoxBlur::apply<T>(Plane<const T>, Plane<T>, std::vector<uint32_t>&) const;
SB_INSTANTIATE(uint8_t)
SB_INSTANTIATE(uint16_t)
#undef SB_INSTANTIATE

}  // namespace streamblur::cpu
