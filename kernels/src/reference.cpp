// Reference blurs. Separable on purpose only because a 2-D Gaussian (and box)
// is exactly the product of two 1-D ones: the horizontal sums are kept in
// double / exact integers with no rounding in between, so the result equals
// the direct 2-D sum up to double rounding.
#include "streamblur/kernels/reference.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include "streamblur/kernels/params.hpp"

namespace streamblur::reference {
namespace {

int clamp_index(int i, int n) { return std::clamp(i, 0, n - 1); }

}  // namespace

template <class T>
void gaussian_blur(Plane<const T> src, Plane<T> dst, double sigma, int radius) {
  gaussian_blur(src, dst, sigma, sigma, radius, radius);
}

template <class T>
void gaussian_blur(Plane<const T> src, Plane<T> dst, double sigma_x, double sigma_y, int radius_x, int radius_y) {
  const std::vector<double> w = gaussian_weights(sigma_x, radius_x);
  const std::vector<double> v = gaussian_weights(sigma_y, radius_y);
  const int r = static_cast<int>(w.size() / 2), q = static_cast<int>(v.size() / 2);
  const int W = src.width, H = src.height, C = src.channels;
  std::vector<double> rows(static_cast<size_t>(W) * C * H);
  for (int y = 0; y < H; ++y)
    for (int x = 0; x < W; ++x)
      for (int c = 0; c < C; ++c) {
        double acc = 0.0;
        for (int k = -r; k <= r; ++k) acc += w[k + r] * src.row(y)[clamp_index(x + k, W) * C + c];
        rows[(static_cast<size_t>(y) * W + x) * C + c] = acc;
      }
  for (int y = 0; y < H; ++y)
    for (int s = 0; s < W * C; ++s) {
      double acc = 0.0;
      for (int k = -q; k <= q; ++k) acc += v[k + q] * rows[static_cast<size_t>(clamp_index(y + k, H)) * W * C + s];
      dst.row(y)[s] = static_cast<T>(std::clamp(std::floor(acc + 0.5), 0.0, sample_max<T>()));
    }
}

template <class T>
void box_blur(Plane<const T> src, Plane<T> dst, int r) {
  box_blur(src, dst, r, r);
}

template <class T>
void box_blur(Plane<const T> src, Plane<T> dst, int r, int q) {
  check_box_radius(r);
  check_box_radius(q);
  const int W = src.width, H = src.height, C = src.channels;
  const uint64_t n = static_cast<uint64_t>(2 * r + 1) * (2 * q + 1);
  std::vector<uint64_t> rows(static_cast<size_t>(W) * C * H);
  for (int y = 0; y < H; ++y)
    for (int x = 0; x < W; ++x)
      for (int c = 0; c < C; ++c) {
        uint64_t acc = 0;
        for (int k = -r; k <= r; ++k) acc += src.row(y)[clamp_index(x + k, W) * C + c];
        rows[(static_cast<size_t>(y) * W + x) * C + c] = acc;
      }
  for (int y = 0; y < H; ++y)
    for (int s = 0; s < W * C; ++s) {
      uint64_t acc = 0;
      for (int k = -q; k <= q; ++k) acc += rows[static_cast<size_t>(clamp_index(y + k, H)) * W * C + s];
      dst.row(y)[s] = static_cast<T>((acc + n / 2) / n);  // rounded half up
    }
}

template void gaussian_blur<uint8_t>(Plane<const uint8_t>, Plane<uint8_t>, double, int);
template void gaussian_blur<uint16_t>(Plane<const uint16_t>, Plane<uint16_t>, double, int);
template void box_blur<uint8_t>(Plane<const uint8_t>, Plane<uint8_t>, int);
template void box_blur<uint16_t>(Plane<const uint16_t>, Plane<uint16_t>, int);
template void gaussian_blur<uint8_t>(Plane<const uint8_t>, Plane<uint8_t>, double, double, int, int);
template void gaussian_blur<uint16_t>(Plane<const uint16_t>, Plane<uint16_t>, double, double, int, int);
template void box_blur<uint8_t>(Plane<const uint8_t>, Plane<uint8_t>, int, int);
template void box_blur<uint16_t>(Plane<const uint16_t>, Plane<uint16_t>, int, int);

}  // namespace streamblur::reference
