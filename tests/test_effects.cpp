// unsharp and pixelate: the plain references, the CPU and the CUDA versions
// against oracles written here from the definitions (no code shared with the
// product: weights from exp(-i^2 / (2 sigma^2)), cell means summed here), and
// the filters through the whole pipeline on every plane of an odd-sized clip.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdint>
#include <cstdlib>
#include <random>
#include <vector>

#include "streamblur/config.hpp"
#include "streamblur/kernels/effects.hpp"
#include "streamblur/pipeline/filter.hpp"
#include "streamblur/pipeline/pipeline.hpp"
#include "streamblur/testing/synthetic_clip.hpp"
#include "sink_support.hpp"
#include "test_support.hpp"
#if STREAMBLUR_HAVE_CUDA
#include "cuda_support.hpp"
#include "streamblur/kernels/cuda_check.hpp"
#endif

using namespace streamblur;
using namespace sbtest;

namespace {

// A W x H image of C channels: smooth ramps, hard edges and noise.
template <class T>
std::vector<T> image(int W, int H, int C, unsigned seed) {
  std::mt19937 rng(seed);
  const double top = static_cast<double>(static_cast<T>(~T{0}));
  std::uniform_real_distribution<double> noise(-0.08, 0.08);
  std::vector<T> v(static_cast<size_t>(W) * H * C);
  for (int y = 0; y < H; ++y)
    for (int x = 0; x < W; ++x)
      for (int c = 0; c < C; ++c) {
        double f = 0.5 + 0.3 * std::sin(0.3 * x + 0.2 * y + c) + noise(rng);
        if ((x / 7 + y / 5) % 2) f = 0.9 * f + 0.1;
        if (x == W / 3) f = 1.0;  // a hard line
        v[(static_cast<size_t>(y) * W + x) * C + c] = static_cast<T>(std::clamp(f, 0.0, 1.0) * top);
      }
  return v;
}

// ---- oracles, from the definitions

template <class T>
std::vector<T> oracle_unsharp(const std::vector<T>& src, int W, int H, int C, double sx, double sy, double amount,
                              double threshold) {
  const std::vector<double> wx = oracle::gaussian_weights(sx, -1), wy = oracle::gaussian_weights(sy, -1);
  const int rx = int(wx.size() / 2), ry = int(wy.size() / 2);
  const double top = static_cast<double>(static_cast<T>(~T{0}));
  std::vector<T> out(src.size());
  for (int y = 0; y < H; ++y)
    for (int x = 0; x < W; ++x)
      for (int c = 0; c < C; ++c) {
        double b = 0;
        for (int j = -ry; j <= ry; ++j)
          for (int i = -rx; i <= rx; ++i)
            b += wy[j + ry] * wx[i + rx] *
                 src[(static_cast<size_t>(std::clamp(y + j, 0, H - 1)) * W + std::clamp(x + i, 0, W - 1)) * C + c];
        const size_t k = (static_cast<size_t>(y) * W + x) * C + c;
        const double s = src[k], d = s - b;
        out[k] = std::abs(d) < threshold ? src[k] : static_cast<T>(std::clamp(std::floor(s + amount * d + 0.5), 0.0, top));
      }
  return out;
}

template <class T>
std::vector<T> oracle_pixelate(const std::vector<T>& src, int W, int H, int C, int bx, int by) {
  std::vector<T> out(src.size());
  for (int y0 = 0; y0 < H; y0 += by)
    for (int x0 = 0; x0 < W; x0 += bx)
      for (int c = 0; c < C; ++c) {
        uint64_t sum = 0, n = 0;
        for (int y = y0; y < std::min(H, y0 + by); ++y)
          for (int x = x0; x < std::min(W, x0 + bx); ++x, ++n) sum += src[(static_cast<size_t>(y) * W + x) * C + c];
        const T mean = static_cast<T>((sum + n / 2) / n);  // exact, half up
        for (int y = y0; y < std::min(H, y0 + by); ++y)
          for (int x = x0; x < std::min(W, x0 + bx); ++x) out[(static_cast<size_t>(y) * W + x) * C + c] = mean;
      }
  return out;
}

// Within 1, on at most 1% of the samples, without bias (test_support.hpp).
template <class T>
void expect_close_unbiased(const std::vector<T>& got, const std::vector<T>& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  SampleDiffs d(kRounding.max_abs);
  for (size_t i = 0; i < got.size(); ++i) d.add(got[i], want[i], static_cast<int>(i), 0);
  EXPECT_TRUE(d.check(kRounding)) << what;
}

struct Case {
  int W, H, C;
};
const Case kCases[] = {{1, 1, 1}, {2, 3, 1}, {37, 23, 1}, {61, 17, 3}, {33, 41, 4}, {128, 9, 2}};

template <class T>
Plane<T> plane_of(std::vector<T>& v, int W, int H, int C) {
  return Plane<T>(v.data(), W, H, static_cast<std::ptrdiff_t>(W) * C * sizeof(T), C);
}

UnsharpParams unsharp_params(double sigma, double amount, double threshold) {
  UnsharpParams p;
  p.sigma_x = p.sigma_y = sigma;
  p.amount = amount;
  p.threshold = threshold;
  return p;
}

template <class T>
std::vector<T> cpu_unsharp(std::vector<T> v, const Case& c, const UnsharpParams& p) {
  cpu::Unsharp op(p);
  std::vector<float> tmp(v.size());
  Plane<T> pl = plane_of(v, c.W, c.H, c.C);
  op.horizontal_rows<T>(Plane<const T>(pl), tmp, 0, c.H);
  op.combine_rows<T>(tmp, pl, 0, c.H);
  return v;
}

#if STREAMBLUR_HAVE_CUDA
// The device round trip: upload into a pitched buffer, run, download.
template <class T, class Fn>
std::vector<T> on_device(const std::vector<T>& v, const Case& c, Fn&& fn) {
  const size_t row = static_cast<size_t>(c.W) * c.C * sizeof(T);
  void* d = nullptr;
  size_t pitch = 0;
  CUDA_CHECK(cudaMallocPitch(&d, &pitch, row, c.H));
  sbtest::upload_2d(d, pitch, v.data(), row, row, c.H);
  cudaStream_t s = nullptr;
  CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  fn(Plane<T>(static_cast<T*>(d), c.W, c.H, static_cast<std::ptrdiff_t>(pitch), c.C), s);
  CUDA_CHECK(cudaStreamSynchronize(s));
  std::vector<T> out(v.size());
  CUDA_CHECK(cudaMemcpy2D(out.data(), row, d, pitch, row, c.H, cudaMemcpyDeviceToHost));
  cudaStreamDestroy(s);
  cudaFree(d);
  return out;
}

template <class T>
std::vector<T> cuda_unsharp(const std::vector<T>& src, const Case& c, const UnsharpParams& p) {
  cuda::Unsharp op(p);
  return on_device(src, c, [&](Plane<T> pl, cudaStream_t s) { op.apply<T>(pl, s); });
}

template <class T>
std::vector<T> cuda_pixelate(const std::vector<T>& src, const Case& c, int bx, int by) {
  return on_device(src, c, [&](Plane<T> pl, cudaStream_t s) { cuda::pixelate<T>(pl, bx, by, s); });
}
#endif  // STREAMBLUR_HAVE_CUDA

template <class T>
void check_unsharp_everywhere(bool gpu) {
  for (const Case& c : kCases)
    for (const auto& [sigma, amount, threshold] : {std::tuple{1.0, 1.5, 0.0}, std::tuple{2.3, -0.6, 0.0},
                                                   std::tuple{0.7, 3.0, 0.0}, std::tuple{1.5, 1.0, 6.0}}) {
      const std::vector<T> src = image<T>(c.W, c.H, c.C, 7);
      const double t = threshold * (sizeof(T) == 2 ? 257.0 : 1.0);
      const UnsharpParams p = unsharp_params(sigma, amount, t);
      const std::vector<T> want = oracle_unsharp(src, c.W, c.H, c.C, sigma, sigma, amount, t);
      const std::string what = std::to_string(c.W) + "x" + std::to_string(c.H) + "x" + std::to_string(c.C) +
                               " sigma " + std::to_string(sigma) + " amount " + std::to_string(amount) +
                               " threshold " + std::to_string(t);
      if (!gpu) {
        std::vector<T> ref(src.size());
        std::vector<T> in = src;
        reference::unsharp<T>(Plane<const T>(plane_of(in, c.W, c.H, c.C)), plane_of(ref, c.W, c.H, c.C), p);
        expect_close_unbiased(ref, want, "reference " + what);
        expect_close_unbiased(cpu_unsharp(src, c, p), want, "cpu " + what);
      } else {
#if STREAMBLUR_HAVE_CUDA  // (the Cuda tests skip before they get here in other builds)
        expect_close_unbiased(cuda_unsharp(src, c, p), want, "cuda " + what);
#endif
      }
    }
}

template <class T>
void check_pixelate_everywhere(bool gpu) {
  for (const Case& c : kCases)
    for (const auto& [bx, by] : {std::pair{1, 1}, std::pair{4, 4}, std::pair{5, 3}, std::pair{16, 16}, std::pair{64, 2}}) {
      const std::vector<T> src = image<T>(c.W, c.H, c.C, 11);
      const std::vector<T> want = oracle_pixelate(src, c.W, c.H, c.C, bx, by);
      const std::string what = std::to_string(c.W) + "x" + std::to_string(c.H) + "x" + std::to_string(c.C) +
                               " block " + std::to_string(bx) + "x" + std::to_string(by);
      std::vector<T> got;
      if (!gpu) {
        std::vector<T> in = src, ref(src.size());
        reference::pixelate<T>(Plane<const T>(plane_of(in, c.W, c.H, c.C)), plane_of(ref, c.W, c.H, c.C), bx, by);
        EXPECT_EQ(ref, want) << "reference " << what;
        got = src;
        Plane<T> pl = plane_of(got, c.W, c.H, c.C);
        // Two ranges of cell rows, as a parallel caller would split them.
        const int rows = cpu::cell_rows(c.H, by);
        cpu::pixelate_cell_rows<T>(pl, bx, by, 0, rows / 2);
        cpu::pixelate_cell_rows<T>(pl, bx, by, rows / 2, rows);
      } else {
#if STREAMBLUR_HAVE_CUDA
        got = cuda_pixelate(src, c, bx, by);
#endif
      }
      EXPECT_EQ(got, want) << (gpu ? "cuda " : "cpu ") << what;  // exact: integer means
    }
}

}  // namespace

TEST(Unsharp, HandCheckedValues) {
  // sigma 1, radius 3: weights 1, e^-0.5, e^-2, e^-4.5 (normalised by 2.50594).
  // A 7-wide row with 100 in the middle blurs to 39.906 there; 100 + 1 * (100 - 39.906) = 160.09 -> 160.
  // Its neighbour: 0 - 1 * 24.204 -> clamped to 0.
  std::vector<uint8_t> src(7, 0), dst(7, 0);
  src[3] = 100;
  reference::unsharp<uint8_t>(Plane<const uint8_t>(src.data(), 7, 1, 7), Plane<uint8_t>(dst.data(), 7, 1, 7),
                              unsharp_params(1.0, 1.0, 0));
  EXPECT_EQ(dst[3], 160);
  EXPECT_EQ(dst[2], 0);
  const std::vector<uint8_t> cpu = cpu_unsharp(src, Case{7, 1, 1}, unsharp_params(1.0, 1.0, 0));
  EXPECT_EQ(cpu[3], 160);
  // amount 0 is the identity, threshold above every difference too.
  const std::vector<uint8_t> img = image<uint8_t>(19, 13, 1, 3);
  EXPECT_EQ(cpu_unsharp(img, Case{19, 13, 1}, unsharp_params(2.0, 0.0, 0)), img);
  EXPECT_EQ(cpu_unsharp(img, Case{19, 13, 1}, unsharp_params(2.0, 5.0, 255)), img);
}

TEST(Unsharp, CpuAndReferenceMatchTheDefinition8Bit) { check_unsharp_everywhere<uint8_t>(false); }
TEST(Unsharp, CpuAndReferenceMatchTheDefinition16Bit) { check_unsharp_everywhere<uint16_t>(false); }
TEST(Unsharp, CudaMatchesTheDefinition8Bit) {
  SBTEST_SKIP_WITHOUT_GPU();
  check_unsharp_everywhere<uint8_t>(true);
}
TEST(Unsharp, CudaMatchesTheDefinition16Bit) {
  SBTEST_SKIP_WITHOUT_GPU();
  check_unsharp_everywhere<uint16_t>(true);
}
TEST(Unsharp, RefusesOutOfRangeParameters) {
  EXPECT_THROW(check_unsharp(unsharp_params(1.0, 11.0, 0)), std::invalid_argument);
  EXPECT_THROW(check_unsharp(unsharp_params(0.0, 1.0, 0)), std::invalid_argument);
  EXPECT_THROW(check_unsharp(unsharp_params(1.0, 1.0, -1)), std::invalid_argument);
}

TEST(Pixelate, HandCheckedValues) {
  // A 3x2 row pair in cells of 2x2: the left cell (1, 2, 3, 5) -> 11/4 = 2.75 -> 3; the partial right cell
  // (7, 8) -> 7.5 -> 8 (a tie, rounded up).
  std::vector<uint8_t> v = {1, 2, 7, 3, 5, 8};
  cpu::pixelate_cell_rows<uint8_t>(Plane<uint8_t>(v.data(), 3, 2, 3), 2, 2, 0, 1);
  EXPECT_EQ(v, (std::vector<uint8_t>{3, 3, 8, 3, 3, 8}));
}
TEST(Pixelate, CpuAndReferenceAreExact8Bit) { check_pixelate_everywhere<uint8_t>(false); }
TEST(Pixelate, CpuAndReferenceAreExact16Bit) { check_pixelate_everywhere<uint16_t>(false); }
TEST(Pixelate, CudaIsExact8Bit) {
  SBTEST_SKIP_WITHOUT_GPU();
  check_pixelate_everywhere<uint8_t>(true);
}
TEST(Pixelate, CudaIsExact16Bit) {
  SBTEST_SKIP_WITHOUT_GPU();
  check_pixelate_everywhere<uint16_t>(true);
}

// ---- through the pipeline: every plane of an odd-sized 4:2:0 clip, both backends

namespace {

class EffectsPipeline : public ::testing::TestWithParam<BackendChoice> {
 protected:
  void SetUp() override {
    if (GetParam() == BackendChoice::Cuda) SBTEST_SKIP_WITHOUT_GPU();
    io::SyntheticClipSpec spec;
    spec.width = 45;
    spec.height = 31;
    spec.frames = 3;
    spec.noise = true;
    in_ = dir_.file("in.mkv");
    io::write_synthetic_clip(in_, spec);
    src_ = run_to_sink(in_, "", BackendChoice::Cpu);
    ASSERT_EQ(src_.planes.size(), 3u);
    ASSERT_EQ(src_.width(1), 23);  // chroma of an odd width: ceil(45 / 2)
  }
  TempDir dir_;
  std::string in_;
  SinkFrames src_;
};

}  // namespace

TEST_P(EffectsPipeline, UnsharpOnEveryPlane) {
  const SinkFrames out = run_to_sink(in_, "unsharp=sigma=1.6:amount=1.2", GetParam());
  ASSERT_EQ(out.planes.size(), src_.planes.size());
  for (size_t k = 0; k < out.planes.size(); ++k)
    for (int p = 0; p < 3; ++p) {
      const double sigma = p == 0 ? 1.6 : 0.8;  // chroma_scale=1: halved on 4:2:0 chroma
      expect_close_unbiased(out.planes[k][p],
                            oracle_unsharp(src_.planes[k][p], src_.width(p), src_.height(p), 1, sigma, sigma, 1.2, 0),
                            "frame " + std::to_string(k) + " plane " + std::to_string(p));
    }
}

TEST_P(EffectsPipeline, PixelateOnEveryPlaneAndChainedAfterABlur) {
  const SinkFrames out = run_to_sink(in_, "pixelate=block=6:block_y=4", GetParam());
  ASSERT_EQ(out.planes.size(), src_.planes.size());
  for (size_t k = 0; k < out.planes.size(); ++k)
    for (int p = 0; p < 3; ++p) {
      const int bx = p == 0 ? 6 : 3, by = p == 0 ? 4 : 2;
      EXPECT_EQ(out.planes[k][p], oracle_pixelate(src_.planes[k][p], src_.width(p), src_.height(p), 1, bx, by))
          << "frame " << k << " plane " << p;
    }
  // In a chain: the mosaic of the sharpened picture.
  const SinkFrames sharp = run_to_sink(in_, "unsharp=sigma=1:amount=2", GetParam());
  const SinkFrames both = run_to_sink(in_, "unsharp=sigma=1:amount=2,pixelate=block=8", GetParam());
  for (int p = 0; p < 3; ++p)
    EXPECT_EQ(both.planes[0][p],
              oracle_pixelate(sharp.planes[0][p], sharp.width(p), sharp.height(p), 1, p ? 4 : 8, p ? 4 : 8))
        << "plane " << p;
}

TEST(EffectsOptions, ParseAndDescribe) {
  FilterChain chain(parse_filter_chain("unsharp=sigma=2:amount=-0.5:threshold=3,pixelate=12:block_y=6"));
  EXPECT_TRUE(contains(chain.describe(), "unsharp(sigma=2")) << chain.describe();
  EXPECT_TRUE(contains(chain.describe(), "pixelate(block=12,block_y=6")) << chain.describe();
  EXPECT_ONE_LINE_CONTAINS(error_of([] { parse_filter_chain("unsharp=amount=11"); }), "amount");
  EXPECT_ONE_LINE_CONTAINS(error_of([] { parse_filter_chain("pixelate=block=0"); }), "block");
}

INSTANTIATE_TEST_SUITE_P(Backends, EffectsPipeline, ::testing::Values(BackendChoice::Cpu, BackendChoice::Cuda),
                         [](const auto& info) { return info.param == BackendChoice::Cpu ? "cpu" : "cuda"; });
