#pragma once
// What the kernel tests on either backend share: plane sizes, host images
// with padding, the parameterised blur case and its name, random images and
// the comparison against a reference (test_kernels.cpp: the CPU blurs and
// the references; test_kernels_cuda.cpp: the CUDA kernels).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "streamblur/kernels/plane.hpp"
#include "test_support.hpp"

namespace sbtest::kernels {

using namespace streamblur;

struct Size { int w, h; };
inline const Size kSizes[] = {{1, 1}, {3, 5}, {17, 9}, {640, 360}, {1921, 1081}};
inline const double kSigmas[] = {0.1, 0.5, 1, 2.5, 7, 20, 60};
inline const int kBoxRadii[] = {0, 1, 5, 40};

// A host image with pitch != width (padding filled with a guard value).
template <class T>
struct HostImage {
  int w, h, c;
  std::ptrdiff_t pitch;
  std::vector<T> buf;
  HostImage(int w_, int h_, int c_, int pad = 7) : w(w_), h(h_), c(c_), pitch((w_ * c_ + pad) * sizeof(T)), buf(h_ * (w_ * c_ + pad)) {}
  Plane<T> plane() { return Plane<T>(buf.data(), w, h, pitch, c); }
  Plane<const T> cplane() const { return Plane<const T>(buf.data(), w, h, pitch, c); }
  void fill(T v) { std::fill(buf.begin(), buf.end(), v); }
};

using sbtest::fresh_seed;  // replayable: STREAMBLUR_TEST_SEED (test_support.hpp)

// One blur case of the parameterised suites: plane size, channels, bytes per
// sample and the blur's size (sigma 0: a box of `radius`). Each is its own
// test, named after its parameters, so a failure names its case and
// --gtest_filter reruns it alone.
struct BlurCase {
  Size s;
  int channels = 1;
  int bytes = 1;
  double sigma = 0;
  int radius = -1;
};

// How ctest and gtest show a case: "640x360 c1 u8 sigma=2.5 radius=-1".
inline void PrintTo(const BlurCase& c, std::ostream* os) {
  *os << c.s.w << "x" << c.s.h << " c" << c.channels << " u" << 8 * c.bytes;
  if (c.sigma > 0) *os << " sigma=" << c.sigma;
  *os << " radius=" << c.radius;
}

inline std::string case_name(const testing::TestParamInfo<BlurCase>& info) {
  const BlurCase& c = info.param;
  std::ostringstream n;
  n << c.s.w << "x" << c.s.h << "_c" << c.channels << "_u" << 8 * c.bytes;
  if (c.sigma > 0) {
    n << "_sigma" << c.sigma;
    if (c.radius >= 0) n << "_r" << c.radius;
  } else {
    n << "_r" << c.radius;
  }
  std::string name = n.str();
  std::replace(name.begin(), name.end(), '.', 'p');  // 2.5 -> 2p5: test names are letters, digits and '_'
  return name;
}

template <class T>
HostImage<T> random_image(int w, int h, int c, unsigned seed, unsigned max_value) {
  HostImage<T> img(w, h, c);
  std::mt19937 rng(seed);
  std::uniform_int_distribution<unsigned> d(0, max_value);
  for (auto& v : img.buf) v = static_cast<T>(d(rng));
  return img;
}

// Every sample of `got` against `want`: exact for tol 0; for tol 1, within +-1
// with at most 1% of samples differing and |mean(got - want)| <= 0.01.
template <class T>
::testing::AssertionResult close_to(const HostImage<T>& got, const HostImage<T>& want, int tol) {
  return sbtest::planes_close<T>(got.buf.data(), got.pitch, want.buf.data(), want.pitch, want.w, want.h, want.c,
                                 sbtest::tolerance_of(tol));
}

template <class T>
constexpr unsigned full_range() { return static_cast<T>(~T{0}); }

// STREAMBLUR_TEST_MAX_PIXELS limits the plane sizes of the GPU suite, for runs
// under compute-sanitizer (which slows kernels by orders of magnitude).
inline bool size_enabled(Size s) {
  const char* env = std::getenv("STREAMBLUR_TEST_MAX_PIXELS");
  return !env || static_cast<long long>(s.w) * s.h <= std::atoll(env);
}

// The oracles of test_support.hpp on host images.
template <class T>
inline HostImage<T> oracle_gauss(const HostImage<T>& src, double sx, double sy, int rx, int ry) {
  HostImage<T> out(src.w, src.h, src.c);
  sbtest::oracle::gaussian_blur<T>(src.buf.data(), src.pitch, out.buf.data(), out.pitch, src.w, src.h, src.c, sx, sy, rx, ry);
  return out;
}

template <class T>
inline HostImage<T> oracle_box(const HostImage<T>& src, int rx, int ry) {
  HostImage<T> out(src.w, src.h, src.c);
  sbtest::oracle::box_blur<T>(src.buf.data(), src.pitch, out.buf.data(), out.pitch, src.w, src.h, src.c, rx, ry);
  return out;
}

template <class T>
inline HostImage<T> oracle_box_exact(const HostImage<T>& src, int rx, int ry) {
  HostImage<T> out(src.w, src.h, src.c);
  sbtest::oracle::box_blur_exact<T>(src.buf.data(), src.pitch, out.buf.data(), out.pitch, src.w, src.h, src.c, rx, ry);
  return out;
}

// P010's rounding, written here from its definition: v to the nearest
// multiple of 2^shift, ties up, never above the largest multiple.
inline uint16_t rounded_high_bits(uint32_t v, int shift) {
  const uint32_t step = 1u << shift, top = 65536 - step;
  const uint32_t down = v / step * step, rest = v - down;
  const uint32_t r = rest * 2 >= step ? down + step : down;  // ties (rest * 2 == step) go up
  return static_cast<uint16_t>(r > top ? top : r);
}

inline std::vector<uint16_t> every_16bit_value() {
  std::vector<uint16_t> v(65536);
  for (uint32_t i = 0; i < 65536; ++i) v[i] = static_cast<uint16_t>(i);
  return v;
}

}  // namespace sbtest::kernels
