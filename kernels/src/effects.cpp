// Unsharp masking and pixelation: parameter checks, the plain references and
// the CPU versions (see effects.hpp for the definitions).
#include <algorithm>
#include <cmath>
#include <sstream>
#include <stdexcept>

#include "streamblur/kernels/effects.hpp"
#include "streamblur/kernels/params.hpp"

namespace streamblur {

inline constexpr double kMinAmount = -2.0, kMaxAmount = 10.0;
inline constexpr int kMaxPixelateBlock = 4096;

void check_unsharp(const UnsharpParams& p) {
  gaussian_radius(p.sigma_x, p.radius_x);  // throws for a sigma or radius out of range
  gaussian_radius(p.sigma_y, p.radius_y);
  if (!(p.amount >= kMinAmount && p.amount <= kMaxAmount)) {
    std::ostringstream m;
    m << "unsharp: amount " << p.amount << " is out of range [" << kMinAmount << ", " << kMaxAmount << "]";
    throw std::invalid_argument(m.str());
  }
  if (!(p.threshold >= 0)) throw std::invalid_argument("unsharp: threshold must be 0 or more");
}

void check_pixelate(int block_x, int block_y) {
  for (int b : {block_x, block_y})
    if (b < 1 || b > kMaxPixelateBlock)
      throw std::invalid_argument("pixelate: block " + std::to_string(b) + " is out of range [1, " +
                                  std::to_string(kMaxPixelateBlock) + "]");
}

namespace {

template <class T>
T round_clamp(double v) {
  return static_cast<T>(std::clamp(std::floor(v + 0.5), 0.0, sample_max<T>()));
}

// The sharpened sample from the source and its blur (both units of T).
template <class T, class F>
T sharpen(F src, F blurred, F amount, F threshold) {
  const F d = src - blurred;
  if (std::abs(d) < threshold) return static_cast<T>(src);
  return static_cast<T>(std::clamp(std::floor(src + amount * d + F(0.5)), F(0), static_cast<F>(sample_max<T>())));
}

}  // namespace

namespace reference {

// Direct 2-D sums in double: no separable pass, no rounding before the end.
template <class T>
void unsharp(Plane<const T> src, Plane<T> dst, const UnsharpParams& p) {
  const std::vector<double> wx = gaussian_weights(p.sigma_x, p.radius_x), wy = gaussian_weights(p.sigma_y, p.radius_y);
  const int rx = static_cast<int>(wx.size() / 2), ry = static_cast<int>(wy.size() / 2);
  const int W = src.width, H = src.height, C = src.channels;
  std::vector<T> out(static_cast<size_t>(W) * C * H);
  for (int y = 0; y < H; ++y)
    for (int x = 0; x < W; ++x)
      for (int c = 0; c < C; ++c) {
        double acc = 0;
        for (int j = -ry; j <= ry; ++j)
          for (int i = -rx; i <= rx; ++i)
            acc += wy[j + ry] * wx[i + rx] * src.row(std::clamp(y + j, 0, H - 1))[std::clamp(x + i, 0, W - 1) * C + c];
        const double s = src.row(y)[x * C + c];
        out[(static_cast<size_t>(y) * W + x) * C + c] = sharpen<T, double>(s, acc, p.amount, p.threshold);
      }
  for (int y = 0; y < H; ++y) std::copy_n(out.data() + static_cast<size_t>(y) * W * C, W * C, dst.row(y));
}

template <class T>
void pixelate(Plane<const T> src, Plane<T> dst, int block_x, int block_y) {
  const int W = src.width, H = src.height, C = src.channels;
  std::vector<T> out(static_cast<size_t>(W) * C * H);
  for (int y = 0; y < H; ++y)
    for (int x = 0; x < W; ++x)
      for (int c = 0; c < C; ++c) {
        const int x0 = x / block_x * block_x, y0 = y / block_y * block_y;
        const int x1 = std::min(W, x0 + block_x), y1 = std::min(H, y0 + block_y);
        uint64_t sum = 0;
        for (int v = y0; v < y1; ++v)
          for (int u = x0; u < x1; ++u) sum += src.row(v)[u * C + c];
        const uint64_t n = static_cast<uint64_t>(x1 - x0) * (y1 - y0);
        out[(static_cast<size_t>(y) * W + x) * C + c] = static_cast<T>((sum + n / 2) / n);
      }
  for (int y = 0; y < H; ++y) std::copy_n(out.data() + static_cast<size_t>(y) * W * C, W * C, dst.row(y));
}

template void unsharp<uint8_t>(Plane<const uint8_t>, Plane<uint8_t>, const UnsharpParams&);
template void unsharp<uint16_t>(Plane<const uint16_t>, Plane<uint16_t>, const UnsharpParams&);
template void pixelate<uint8_t>(Plane<const uint8_t>, Plane<uint8_t>, int, int);
template void pixelate<uint16_t>(Plane<const uint16_t>, Plane<uint16_t>, int, int);

}  // namespace reference

namespace cpu {

Unsharp::Unsharp(const UnsharpParams& p)
    : p_(p), wx_(gaussian_weights_f(p.sigma_x, p.radius_x)), wy_(gaussian_weights_f(p.sigma_y, p.radius_y)) {
  check_unsharp(p);
}

template <class T>
void Unsharp::horizontal_rows(Plane<const T> src, std::vector<float>& tmp, int y0, int y1) const {
  const int W = src.width, C = src.channels, r = static_cast<int>(wx_.size() / 2), S = W * C;
  for (int y = y0; y < y1; ++y) {
    const T* in = src.row(y);
    float* out = tmp.data() + static_cast<size_t>(y) * S;
    for (int x = 0; x < W; ++x)
      for (int c = 0; c < C; ++c) {
        float acc = 0;
        for (int k = -r; k <= r; ++k) acc += wx_[k + r] * static_cast<float>(in[std::clamp(x + k, 0, W - 1) * C + c]);
        out[x * C + c] = acc;
      }
  }
}

template <class T>
void Unsharp::combine_rows(const std::vector<float>& tmp, Plane<T> plane, int y0, int y1) const {
  const int H = plane.height, S = plane.samples_per_row(), r = static_cast<int>(wy_.size() / 2);
  std::vector<float> acc(S);
  for (int y = y0; y < y1; ++y) {
    std::fill(acc.begin(), acc.end(), 0.0f);
    for (int k = -r; k <= r; ++k) {
      const float* in = tmp.data() + static_cast<size_t>(std::clamp(y + k, 0, H - 1)) * S;
      const float w = wy_[k + r];
      for (int s = 0; s < S; ++s) acc[s] += w * in[s];
    }
    T* row = plane.row(y);
    const float amount = static_cast<float>(p_.amount), threshold = static_cast<float>(p_.threshold);
    for (int s = 0; s < S; ++s) row[s] = sharpen<T, float>(static_cast<float>(row[s]), acc[s], amount, threshold);
  }
}

template <class T>
void pixelate_cell_rows(Plane<T> plane, int block_x, int block_y, int cy0, int cy1) {
  const int W = plane.width, H = plane.height, C = plane.channels;
  std::vector<uint64_t> sum(static_cast<size_t>((W + block_x - 1) / block_x) * C);
  for (int cy = cy0; cy < cy1; ++cy) {
    const int y0 = cy * block_y, y1 = std::min(H, y0 + block_y);
    std::fill(sum.begin(), sum.end(), 0);
    for (int y = y0; y < y1; ++y) {
      const T* row = plane.row(y);
      for (int x = 0; x < W; ++x)
        for (int c = 0; c < C; ++c) sum[(x / block_x) * C + c] += row[x * C + c];
    }
    for (size_t cell = 0; cell < sum.size() / C; ++cell) {
      const int x0 = static_cast<int>(cell) * block_x, x1 = std::min(W, x0 + block_x);
      const uint64_t n = static_cast<uint64_t>(x1 - x0) * (y1 - y0);
      for (int c = 0; c < C; ++c) sum[cell * C + c] = (sum[cell * C + c] + n / 2) / n;
    }
    for (int y = y0; y < y1; ++y) {
      T* row = plane.row(y);
      for (int x = 0; x < W; ++x)
        for (int c = 0; c < C; ++c) row[x * C + c] = static_cast<T>(sum[(x / block_x) * C + c]);
    }
  }
}

template void Unsharp::horizontal_rows<uint8_t>(Plane<const uint8_t>, std::vector<float>&, int, int) const;
template void Unsharp::horizontal_rows<uint16_t>(Plane<const uint16_t>, std::vector<float>&, int, int) const;
template void Unsharp::combine_rows<uint8_t>(const std::vector<float>&, Plane<uint8_t>, int, int) const;
template void Unsharp::combine_rows<uint16_t>(const std::vector<float>&, Plane<uint16_t>, int, int) const;
template void pixelate_cell_rows<uint8_t>(Plane<uint8_t>, int, int, int, int);
template void pixelate_cell_rows<uint16_t>(Plane<uint16_t>, int, int, int, int);

}  // namespace cpu
}  // namespace streamblur
