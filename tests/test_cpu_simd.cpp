// The CPU blurs' SIMD paths on every instruction set this build contains and
// this machine runs (Highway's targets: SSE4, AVX2, AVX-512, ... each forced
// in turn), against the plain scalar references: the Gaussian within +-1 with
// at most 1% of samples off and no bias, the box exactly. Widths around the
// vector lengths, 1-4 interleaved channels, pitch != width, 8 and 16 bits,
// anisotropic radii, and box windows on both sides of the 31-bit sum limit.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "streamblur/kernels/cpu_blur.hpp"
#include "streamblur/kernels/reference.hpp"

#define SBTEST_NO_FFMPEG  // kernels only
#include "test_support.hpp"

using namespace streamblur;
using namespace sbtest;

namespace {

template <class T>
struct Img {
  int w, h, c;
  std::ptrdiff_t pitch;  // bytes, wider than the row
  std::vector<unsigned char> bytes;
  Img(int w_, int h_, int c_, int pad) : w(w_), h(h_), c(c_) {
    pitch = static_cast<std::ptrdiff_t>((w * c + pad) * sizeof(T));
    bytes.assign(static_cast<size_t>(pitch) * h, 0xAB);  // padding bytes must survive
  }
  Plane<T> plane() { return Plane<T>(reinterpret_cast<T*>(bytes.data()), w, h, pitch, c); }
};

template <class T>
Img<T> random_img(int w, int h, int c, unsigned seed) {
  Img<T> im(w, h, c, 5);
  std::mt19937 rng(seed);
  std::uniform_int_distribution<unsigned> any(0, static_cast<unsigned>(static_cast<T>(~T{0})));
  Plane<T> p = im.plane();
  for (int y = 0; y < h; ++y)
    for (int s = 0; s < w * c; ++s) p.row(y)[s] = static_cast<T>((y / 3 + s / 5) % 4 == 0 ? any(rng) : (s * 37 + y * 11) % 256);
  return im;
}

template <class T>
void compare(Img<T>& got, Img<T>& want, SampleDiffs& st) {
  for (int y = 0; y < got.h; ++y) {
    for (int s = 0; s < got.w * got.c; ++s) st.add(got.plane().row(y)[s], want.plane().row(y)[s], s / got.c, y, s % got.c);
    // The bytes between the row's end and the pitch are never written.
    const auto* tail = reinterpret_cast<const unsigned char*>(got.plane().row(y) + got.w * got.c);
    for (auto* b = tail; b < reinterpret_cast<const unsigned char*>(got.plane().row(y)) + got.pitch; ++b)
      ASSERT_EQ(*b, 0xAB) << "a write past the row, line " << y;
  }
}

// Runs `body` once per SIMD target, forced; restores the best afterwards.
template <class Fn>
void for_each_target(Fn&& body) {
  const std::vector<int64_t> targets = cpu::simd_targets();
  ASSERT_FALSE(targets.empty());
  std::set<std::string> names;
  for (int64_t t : targets) {
    cpu::force_simd_target(t);
    const std::string name = cpu::simd_target();
    names.insert(name);
    SCOPED_TRACE("SIMD target " + name);
    body();
  }
  cpu::force_simd_target(0);
  // Forcing took effect: each target ran under its own name.
  EXPECT_EQ(names.size(), targets.size());
  std::string all;
  for (const auto& n : names) all += n + " ";
  std::printf("SIMD targets exercised: %s(best here: %s)\n", all.c_str(), cpu::simd_target());
}

template <class T>
void gauss_case(int w, int h, int c, double sx, double sy, SampleDiffs& st) {
  Img<T> src = random_img<T>(w, h, c, static_cast<unsigned>(w * 131 + h * 7 + c));
  Img<T> want(w, h, c, 5), got(w, h, c, 5);
  reference::gaussian_blur<T>(Plane<const T>(src.plane()), want.plane(), sx, sy, -1, -1);
  std::vector<float> tmp;
  cpu::GaussianBlur(sx, sy, -1, -1).apply<T>(Plane<const T>(src.plane()), got.plane(), tmp);
  compare(got, want, st);
}

template <class T>
void box_case(int w, int h, int c, int rx, int ry) {
  Img<T> src = random_img<T>(w, h, c, static_cast<unsigned>(w * 17 + rx));
  Img<T> want(w, h, c, 5), got(w, h, c, 5);
  reference::box_blur<T>(Plane<const T>(src.plane()), want.plane(), rx, ry);
  std::vector<uint32_t> tmp;
  cpu::BoxBlur(rx, ry).apply<T>(Plane<const T>(src.plane()), got.plane(), tmp);
  SampleDiffs st;
  compare(got, want, st);
  EXPECT_TRUE(st.check(kExact)) << w << "x" << h << "x" << c << " box " << rx << "," << ry;
}

void expect_unbiased(const SampleDiffs& st, const std::string& what) { EXPECT_TRUE(st.check(kRounding)) << what; }

}  // namespace

TEST(CpuSimd, GaussianOnEveryTarget) {
  for_each_target([] {
    for (int c : {1, 2, 3, 4}) {
      SampleDiffs s8(1), s16(1);
      for (int w : {1, 3, 7, 8, 15, 16, 17, 31, 33, 64, 67, 130})
        for (double sigma : {0.6, 1.5, 4.0}) {
          gauss_case<uint8_t>(w, 9, c, sigma, sigma, s8);
          gauss_case<uint16_t>(w, 7, c, sigma, sigma * 0.5, s16);
        }
      expect_unbiased(s8, "8-bit, channels " + std::to_string(c));
      expect_unbiased(s16, "16-bit, channels " + std::to_string(c));
    }
  });
}

TEST(CpuSimd, BoxOnEveryTargetIsExact) {
  for_each_target([] {
    for (int c : {1, 3, 4})
      for (int w : {1, 7, 16, 17, 33, 130}) {
        box_case<uint8_t>(w, 11, c, 1, 1);
        box_case<uint8_t>(w, 11, c, 3, 0);
        box_case<uint8_t>(w, 11, c, 0, 4);
        box_case<uint16_t>(w, 11, c, 2, 5);
      }
    // The vertical pass by column strips (as the pipeline runs it) equals the reference too.
    for (int strip : {1, 5, 64}) {
      Img<uint8_t> src = random_img<uint8_t>(67, 29, 3, 5), want(67, 29, 3, 5), got(67, 29, 3, 5);
      reference::box_blur<uint8_t>(Plane<const uint8_t>(src.plane()), want.plane(), 4, 6);
      const cpu::BoxBlur box(4, 6);
      std::vector<uint32_t> tmp(static_cast<size_t>(67) * 3 * 29);
      Plane<uint32_t> t(tmp.data(), 67, 29, 67 * 3 * sizeof(uint32_t), 3);
      box.horizontal_rows<uint8_t>(Plane<const uint8_t>(src.plane()), t, 0, 29);
      for (int s0 = 0; s0 < 67 * 3; s0 += strip)
        box.vertical_columns<uint8_t>(Plane<const uint32_t>(t), got.plane(), s0, std::min(67 * 3, s0 + strip));
      SampleDiffs st;
      compare(got, want, st);
      EXPECT_TRUE(st.check(kExact)) << "strips of " << strip;
    }
    // Windows whose sums pass 2^31 take the 64-bit path: 16-bit samples, 401 x 401.
    box_case<uint16_t>(37, 23, 1, 200, 200);
    box_case<uint8_t>(37, 23, 2, 2000, 3);
  });
}
