// The CPU blurs and the references they are held to, on every build: the
// references against the oracle of test_support.hpp (which shares no code
// with kernels/), the CPU blurs against the references (Gaussian within +-1
// with at most 1% of samples differing and no bias, box exact), every sample
// of every channel, odd sizes, pitch != width. The CUDA kernels' tests are in
// test_kernels_cuda.cpp (CUDA backend builds).
#include <gtest/gtest.h>

#define SBTEST_NO_FFMPEG  // the kernel tests link no FFmpeg
#include "test_support.hpp"
#include "kernel_test_support.hpp"

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "streamblur/kernels/cpu_blur.hpp"
#include "streamblur/kernels/params.hpp"
#include "streamblur/kernels/reference.hpp"

using namespace streamblur;
using namespace sbtest::kernels;


// The seeds behind every random image here: a base seed and a test name give
// the same sequence again (that is what STREAMBLUR_TEST_SEED replays), and
// another name or base another one.
TEST(TestSeeds, ABaseAndATestNameReplayTheSameSeeds) {
  auto draw = [](unsigned base, const std::string& test) {
    sbtest::TestSeeds s(base);
    s.start(test);
    std::vector<unsigned> v;
    for (int i = 0; i < 4; ++i) v.push_back(s.next());
    return v;
  };
  const std::vector<unsigned> a = draw(1234, "CpuBlur/CpuGauss.MatchesReference/640x360_c1_u8_sigma2p5");
  EXPECT_EQ(draw(1234, "CpuBlur/CpuGauss.MatchesReference/640x360_c1_u8_sigma2p5"), a);
  EXPECT_NE(draw(1234, "CpuBlur/CpuGauss.MatchesReference/640x360_c1_u8_sigma7"), a);
  EXPECT_NE(draw(1235, "CpuBlur/CpuGauss.MatchesReference/640x360_c1_u8_sigma2p5"), a);
  EXPECT_EQ(std::set<unsigned>(a.begin(), a.end()).size(), a.size()) << "the draws of one test differ";
  // Starting a test again starts its sequence again.
  sbtest::TestSeeds s(1234);
  s.start("A.b");
  const unsigned first = s.next();
  s.next();
  EXPECT_EQ(s.draws(), 2);
  s.start("A.b");
  EXPECT_EQ(s.draws(), 0);
  EXPECT_EQ(s.next(), first);
}

TEST(TestSeeds, TheEnvironmentValueIsAWholeNumber) {
  unsigned v = 7;
  EXPECT_EQ(sbtest::TestSeeds::parse(nullptr, v), "");
  EXPECT_EQ(sbtest::TestSeeds::parse("", v), "");
  EXPECT_EQ(v, 7u);
  EXPECT_EQ(sbtest::TestSeeds::parse("4294967295", v), "");
  EXPECT_EQ(v, 4294967295u);
  EXPECT_EQ(sbtest::TestSeeds::parse("0", v), "");
  EXPECT_EQ(v, 0u);
  for (const char* bad : {"-1", "12x", "x", "4294967296", "99999999999999999999999"})
    EXPECT_EQ(sbtest::TestSeeds::parse(bad, v),
              std::string("STREAMBLUR_TEST_SEED must be a whole number from 0 to 4294967295, got '") + bad + "'");
}

TEST(Params, GaussianWeightsAreNormalisedSymmetricAndSized) {
  for (double sigma : kSigmas) {
    const auto w = gaussian_weights(sigma);
    ASSERT_EQ(w.size(), 2 * static_cast<size_t>(std::max(1.0, std::ceil(3 * sigma))) + 1);
    double sum = 0;
    for (size_t i = 0; i < w.size(); ++i) {
      sum += w[i];
      EXPECT_DOUBLE_EQ(w[i], w[w.size() - 1 - i]);
    }
    EXPECT_NEAR(sum, 1.0, 1e-12);
  }
  EXPECT_EQ(gaussian_weights(2.0, 3).size(), 7u);
}

TEST(Params, OutOfRangeIsRejected) {
  EXPECT_THROW(gaussian_radius(0.05), std::invalid_argument);
  EXPECT_THROW(gaussian_radius(100.5), std::invalid_argument);
  EXPECT_THROW(gaussian_radius(2.0, kMaxGaussRadius + 1), std::invalid_argument);
  EXPECT_THROW(check_box_radius(-1), std::invalid_argument);
  EXPECT_THROW(cpu::BoxBlur(kMaxBoxRadius + 1), std::invalid_argument);
}

TEST(Reference, TinySigmaIsIdentity) {
  auto src = random_image<uint8_t>(31, 7, 1, fresh_seed(), 255);
  HostImage<uint8_t> dst(31, 7, 1);
  reference::gaussian_blur<uint8_t>(src.cplane(), dst.plane(), 0.1);
  EXPECT_TRUE(close_to(dst, src, 0));
}

// A box window holds (2r+1)(2q+1) samples, an odd count, so its mean is never
// exactly k + 0.5: there is no tie to round. What can go wrong is rounding
// down (floor) or up (ceil) instead of to nearest, which these values catch:
// 3/9 -> 0 (ceil gives 1) and 6/9 -> 1 (floor gives 0). Ties are tested where
// they exist: RoundToHighBits (16-bit -> 10 bits in the high bits).
TEST(Reference, BoxOfConstantIsConstantAndRoundsToNearest) {
  HostImage<uint8_t> src(9, 4, 1), dst(9, 4, 1);
  src.fill(200);
  reference::box_blur<uint8_t>(src.cplane(), dst.plane(), 3);
  for (int y = 0; y < 4; ++y)
    for (int x = 0; x < 9; ++x) EXPECT_EQ(dst.cplane().row(y)[x], 200);
  // 1x2 image [0, 1], r = 1 with clamped borders: windows of 9 hold 3 or 6 ones -> 0.33 -> 0, 0.67 -> 1.
  HostImage<uint8_t> a(2, 1, 1, 0), b(2, 1, 1, 0);
  a.buf = {0, 1};
  reference::box_blur<uint8_t>(a.cplane(), b.plane(), 1);
  EXPECT_EQ(b.buf[0], 0);
  EXPECT_EQ(b.buf[1], 1);
  // [0, 3], r = 1: windows hold 0,0,3 and 0,3,3 in each of 3 clamped rows -> 9/9 = 1 and 18/9 = 2.
  a.buf = {0, 3};
  reference::box_blur<uint8_t>(a.cplane(), b.plane(), 1);
  EXPECT_EQ(b.buf[0], 1);
  EXPECT_EQ(b.buf[1], 2);
  HostImage<uint8_t> c(3, 1, 1, 0), d(3, 1, 1, 0);
  c.buf = {0, 0, 1};  // x=1: 3/9 -> 0; x=2: 6/9 -> 1
  reference::box_blur<uint8_t>(c.cplane(), d.plane(), 1);
  EXPECT_EQ(d.buf[1], 0);
  EXPECT_EQ(d.buf[2], 1);
}

// Hand-checked weights: sigma = 1, radius 1: exp(-1/2) = 0.6065307, sum
// 1 + 2 * 0.6065307 = 2.2130613, so 0.6065307 / 2.2130613 = 0.2740686 and
// 1 / 2.2130613 = 0.4518628. (Dividing by sigma^2 instead of 2 sigma^2 would
// give 0.2119416, 0.5761169.) sigma = 0.5, default radius ceil(1.5) = 2:
// exp(-2) = 0.1353353, exp(-8) = 0.0003354626, sum 1.2713415, so 0.0002638650,
// 0.1064510, 0.7865703.
TEST(Params, GaussianWeightsMatchHandCheckedValues) {
  const std::vector<double> w1 = gaussian_weights(1.0, 1);
  ASSERT_EQ(w1.size(), 3u);
  EXPECT_NEAR(w1[0], 0.2740686, 1e-6);
  EXPECT_NEAR(w1[1], 0.4518628, 1e-6);
  EXPECT_NEAR(w1[2], 0.2740686, 1e-6);
  const std::vector<double> w2 = gaussian_weights(0.5);
  ASSERT_EQ(w2.size(), 5u);
  EXPECT_NEAR(w2[0], 0.0002638650, 1e-8);
  EXPECT_NEAR(w2[1], 0.1064510, 1e-6);
  EXPECT_NEAR(w2[2], 0.7865703, 1e-6);
  // The test's own oracle agrees with the same hand values.
  const std::vector<double> o1 = sbtest::oracle::gaussian_weights(1.0, 1);
  EXPECT_NEAR(o1[0], 0.2740686, 1e-6);
  EXPECT_NEAR(o1[1], 0.4518628, 1e-6);
  // Radius rule: -1 -> ceil(3 sigma), at least 1.
  EXPECT_EQ(gaussian_radius(0.1), 1);
  EXPECT_EQ(gaussian_radius(0.5), 2);
  EXPECT_EQ(gaussian_radius(2.5), 8);
  EXPECT_EQ(gaussian_radius(7.0), 21);
  EXPECT_EQ(gaussian_radius(2.0, 0), 0);
}

TEST(Params, GaussianWeightsMatchTheOracle) {
  for (double sigma : kSigmas)
    for (int radius : {-1, 0, 1, 3, 40}) {
      SCOPED_TRACE(testing::Message() << "sigma=" << sigma << " radius=" << radius);
      const std::vector<double> w = gaussian_weights(sigma, radius), o = sbtest::oracle::gaussian_weights(sigma, radius);
      ASSERT_EQ(w.size(), o.size());
      for (size_t i = 0; i < w.size(); ++i) EXPECT_NEAR(w[i], o[i], 1e-12) << "i=" << i;
      const std::vector<float> f = gaussian_weights_f(sigma, radius);
      ASSERT_EQ(f.size(), o.size());
      for (size_t i = 0; i < f.size(); ++i) EXPECT_NEAR(f[i], o[i], 1e-7) << "float i=" << i;
    }
}

// The two box oracles agree: the integer one (linear time, for the running
// kernels' largest windows) against the separable sums in double, at windows
// wider and taller than the plane, 8 and 16 bit, one to three channels, and
// at sums past 2^32 (16 bit, windows of 200 x 300).
TEST(Reference, ExactBoxOracleMatchesTheSeparableOne) {
  const unsigned seed = fresh_seed();
  SCOPED_TRACE(seed);
  struct Case { int w, h, c, rx, ry; };
  for (const Case k : {Case{1, 1, 1, 0, 0}, Case{1, 1, 2, 5, 9}, Case{17, 13, 1, 2, 3}, Case{40, 9, 3, 50, 1},
                       Case{9, 40, 2, 0, 77}, Case{63, 31, 1, 62, 30}, Case{120, 150, 1, 200, 300}}) {
    SCOPED_TRACE(testing::Message() << k.w << "x" << k.h << "x" << k.c << " rx=" << k.rx << " ry=" << k.ry);
    auto s8 = random_image<uint8_t>(k.w, k.h, k.c, seed, 255);
    EXPECT_TRUE(close_to(oracle_box_exact(s8, k.rx, k.ry), oracle_box(s8, k.rx, k.ry), 0));
    auto s16 = random_image<uint16_t>(k.w, k.h, k.c, seed + 1, 65535);
    EXPECT_TRUE(close_to(oracle_box_exact(s16, k.rx, k.ry), oracle_box(s16, k.rx, k.ry), 0));
  }
}

// The references (which every CPU and CUDA test compares with) against the
// test's own oracle: a wrong shape or rounding shared by params.cpp, the
// reference and the kernels is caught here.
TEST(Reference, MatchesTheIndependentOracle) {
  const unsigned seed = fresh_seed();
  SCOPED_TRACE(seed);
  for (double sigma : {0.5, 1.0, 2.5, 7.0}) {
    SCOPED_TRACE(sigma);
    auto s8 = random_image<uint8_t>(83, 61, 1, seed, 255);
    HostImage<uint8_t> r8(83, 61, 1);
    reference::gaussian_blur<uint8_t>(s8.cplane(), r8.plane(), sigma);
    EXPECT_TRUE(close_to(r8, oracle_gauss(s8, sigma, sigma, -1, -1), 1));
    auto s16 = random_image<uint16_t>(47, 29, 2, seed + 1, 65535);
    HostImage<uint16_t> r16(47, 29, 2);
    reference::gaussian_blur<uint16_t>(s16.cplane(), r16.plane(), sigma);
    EXPECT_TRUE(close_to(r16, oracle_gauss(s16, sigma, sigma, -1, -1), 1));
  }
  auto src = random_image<uint8_t>(61, 43, 3, seed + 2, 255);
  HostImage<uint8_t> r(61, 43, 3);
  reference::gaussian_blur<uint8_t>(src.cplane(), r.plane(), 1.0, 2.0, 4, 1);
  EXPECT_TRUE(close_to(r, oracle_gauss(src, 1.0, 2.0, 4, 1), 1));
  for (int rx : {0, 1, 3})
    for (int ry : {0, 2, 5}) {
      SCOPED_TRACE(testing::Message() << "box " << rx << "x" << ry);
      reference::box_blur<uint8_t>(src.cplane(), r.plane(), rx, ry);
      EXPECT_TRUE(close_to(r, oracle_box(src, rx, ry), 0));
    }
  // A smooth image, where a rounding bias is not hidden by noise.
  HostImage<uint8_t> ramp(200, 20, 1), rr(200, 20, 1);
  for (int y = 0; y < 20; ++y)
    for (int x = 0; x < 200; ++x) ramp.plane().row(y)[x] = static_cast<uint8_t>((x * 7 + y * 3) % 256);
  reference::gaussian_blur<uint8_t>(ramp.cplane(), rr.plane(), 1.3);
  EXPECT_TRUE(close_to(rr, oracle_gauss(ramp, 1.3, 1.3, -1, -1), 1));
}

// 16-bit samples holding P010's 10 bits in the high bits: after a blur they
// are rounded to a multiple of 2^shift, to nearest, ties (low bits exactly
// 2^(shift-1)) up, and never above the largest multiple. Every 16-bit value.
TEST(CpuBlur, RoundToHighBitsRoundsToNearestTiesUp) {
  EXPECT_EQ(rounded_high_bits(31, 6), 0);
  EXPECT_EQ(rounded_high_bits(32, 6), 64);   // the tie
  EXPECT_EQ(rounded_high_bits(95, 6), 64);
  EXPECT_EQ(rounded_high_bits(96, 6), 128);  // the tie
  EXPECT_EQ(rounded_high_bits(65535, 6), 65472);
  for (int shift : {1, 6, 8}) {
    SCOPED_TRACE(shift);
    std::vector<uint16_t> got = every_16bit_value();
    cpu::round_to_high_bits(Plane<uint16_t>(got.data(), 256, 256, 512), shift);
    sbtest::SampleDiffs d;
    for (uint32_t i = 0; i < 65536; ++i) d.add(got[i], rounded_high_bits(i, shift), static_cast<int>(i % 256), static_cast<int>(i / 256));
    EXPECT_TRUE(d.check(sbtest::kExact));
  }
}

TEST(GpuSkip, RequireGpuEnvironmentIsRead) {
  const char* old = std::getenv("STREAMBLUR_REQUIRE_GPU");
  const std::string saved = old ? old : "";
  ::setenv("STREAMBLUR_REQUIRE_GPU", "1", 1);
  EXPECT_TRUE(sbtest::gpu_required());
  ::setenv("STREAMBLUR_REQUIRE_GPU", "0", 1);
  EXPECT_FALSE(sbtest::gpu_required());
  ::unsetenv("STREAMBLUR_REQUIRE_GPU");
  EXPECT_FALSE(sbtest::gpu_required());
  if (old) ::setenv("STREAMBLUR_REQUIRE_GPU", saved.c_str(), 1);
}

// ---------------------------------------------------------------- CPU backend

template <class T>
void cpu_gauss_case(Size s, int channels, double sigma, int radius = -1) {
  const unsigned seed = fresh_seed();
  SCOPED_TRACE(testing::Message() << s.w << "x" << s.h << "x" << channels << " sigma=" << sigma << " radius=" << radius
                                  << " bytes=" << sizeof(T) << " seed=" << seed);
  auto src = random_image<T>(s.w, s.h, channels, seed, full_range<T>());
  HostImage<T> want(s.w, s.h, channels), got(s.w, s.h, channels);
  reference::gaussian_blur<T>(src.cplane(), want.plane(), sigma, radius);
  got.fill(0x5A);
  std::vector<float> tmp;
  cpu::GaussianBlur(sigma, radius).apply<T>(src.cplane(), got.plane(), tmp);
  EXPECT_TRUE(close_to(got, want, 1));
}

template <class T>
void cpu_box_case(Size s, int channels, int r) {
  const unsigned seed = fresh_seed();
  SCOPED_TRACE(testing::Message() << s.w << "x" << s.h << "x" << channels << " r=" << r << " bytes=" << sizeof(T) << " seed=" << seed);
  auto src = random_image<T>(s.w, s.h, channels, seed, full_range<T>());
  HostImage<T> want(s.w, s.h, channels), got(s.w, s.h, channels);
  reference::box_blur<T>(src.cplane(), want.plane(), r);
  got.fill(0x5A);
  std::vector<uint32_t> tmp;
  cpu::BoxBlur(r).apply<T>(src.cplane(), got.plane(), tmp);
  EXPECT_TRUE(close_to(got, want, 0));
}

// The slow reference bounds the sizes: the largest planes skip the largest
// sigmas and radii on the CPU (the GPU suite covers them).
std::vector<BlurCase> cpu_gauss_cases() {
  std::vector<BlurCase> v;
  for (Size s : kSizes)
    for (double sigma : kSigmas) {
      if (!(s.w > 1000 && sigma > 7)) v.push_back({s, 1, 1, sigma, -1});
      if (!(s.w > 600 && sigma > 2.5)) v.push_back({s, 1, 2, sigma, -1});
    }
  v.push_back({{33, 21}, 2, 1, 2.5, -1});
  v.push_back({{33, 21}, 3, 1, 1.0, 4});
  v.push_back({{40, 23}, 2, 2, 7, -1});
  return v;
}

std::vector<BlurCase> cpu_box_cases() {
  std::vector<BlurCase> v;
  for (Size s : kSizes)
    for (int r : kBoxRadii) {
      if (s.w > 1000 && r > 5) continue;
      v.push_back({s, 1, 1, 0, r});
      if (s.w < 1000) v.push_back({s, 1, 2, 0, r});
    }
  v.push_back({{37, 19}, 2, 1, 0, 5});
  v.push_back({{37, 19}, 4, 2, 0, 40});
  v.push_back({{300, 3}, 1, 2, 0, 300});  // radius far beyond the image, 64-bit column sums
  return v;
}

class CpuGauss : public testing::TestWithParam<BlurCase> {};
class CpuBox : public testing::TestWithParam<BlurCase> {};

TEST_P(CpuGauss, MatchesReference) {
  const BlurCase& c = GetParam();
  if (c.bytes == 1) cpu_gauss_case<uint8_t>(c.s, c.channels, c.sigma, c.radius);
  else cpu_gauss_case<uint16_t>(c.s, c.channels, c.sigma, c.radius);
}

TEST_P(CpuBox, MatchesReferenceExactly) {
  const BlurCase& c = GetParam();
  if (c.bytes == 1) cpu_box_case<uint8_t>(c.s, c.channels, c.radius);
  else cpu_box_case<uint16_t>(c.s, c.channels, c.radius);
}

INSTANTIATE_TEST_SUITE_P(CpuBlur, CpuGauss, testing::ValuesIn(cpu_gauss_cases()), case_name);
INSTANTIATE_TEST_SUITE_P(CpuBlur, CpuBox, testing::ValuesIn(cpu_box_cases()), case_name);

TEST(CpuBlur, AnisotropicMatchesReference) {  // 4:2:2 chroma: half the horizontal size
  const unsigned seed = fresh_seed();
  SCOPED_TRACE(seed);
  auto src = random_image<uint8_t>(61, 43, 1, seed, 255);
  HostImage<uint8_t> want(61, 43, 1), got(61, 43, 1);
  reference::gaussian_blur<uint8_t>(src.cplane(), want.plane(), 1.0, 2.0, -1, -1);
  std::vector<float> tmp;
  cpu::GaussianBlur(1.0, 2.0, -1, -1).apply<uint8_t>(src.cplane(), got.plane(), tmp);
  EXPECT_TRUE(close_to(got, want, 1));
  reference::box_blur<uint8_t>(src.cplane(), want.plane(), 1, 3);
  std::vector<uint32_t> tmp2;
  cpu::BoxBlur(1, 3).apply<uint8_t>(src.cplane(), got.plane(), tmp2);
  EXPECT_TRUE(close_to(got, want, 0));
  // and the anisotropic reference really differs from the isotropic one
  HostImage<uint8_t> iso(61, 43, 1);
  reference::box_blur<uint8_t>(src.cplane(), iso.plane(), 3);
  int differ = 0;
  for (size_t i = 0; i < iso.buf.size(); ++i) differ += iso.buf[i] != want.buf[i];
  EXPECT_GT(differ, 0);
}
