// Blur kernels against the plain references: the CPU backend everywhere, the
// CUDA kernels when a device is present (skipped otherwise). Gaussian within
// +-1, box exact, every sample of every channel, odd sizes, pitch != width.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "streamblur/kernels/cpu_blur.hpp"
#include "streamblur/kernels/cuda_blur.hpp"
#include "streamblur/kernels/cuda_check.hpp"
#include "streamblur/kernels/cuda_convert.hpp"
#include "streamblur/kernels/params.hpp"
#include "streamblur/kernels/reference.hpp"

using namespace streamblur;

namespace {

struct Size { int w, h; };
const Size kSizes[] = {{1, 1}, {3, 5}, {17, 9}, {640, 360}, {1921, 1081}};
const double kSigmas[] = {0.1, 0.5, 1, 2.5, 7, 20, 60};
const int kBoxRadii[] = {0, 1, 5, 40};

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

unsigned fresh_seed() { return std::random_device{}(); }

template <class T>
HostImage<T> random_image(int w, int h, int c, unsigned seed, unsigned max_value) {
  HostImage<T> img(w, h, c);
  std::mt19937 rng(seed);
  std::uniform_int_distribution<unsigned> d(0, max_value);
  for (auto& v : img.buf) v = static_cast<T>(d(rng));
  return img;
}

// Number of samples differing by more than `tol`; reports the first one.
template <class T>
int count_mismatches(const HostImage<T>& got, const HostImage<T>& want, int tol) {
  int bad = 0;
  for (int y = 0; y < want.h; ++y)
    for (int s = 0; s < want.w * want.c; ++s) {
      const int g = got.cplane().row(y)[s], e = want.cplane().row(y)[s];
      if (std::abs(g - e) > tol) {
        if (bad == 0) ADD_FAILURE() << "first mismatch at x=" << s / want.c << " ch=" << s % want.c << " y=" << y << ": got " << g << ", want " << e;
        ++bad;
      }
    }
  return bad;
}

template <class T>
constexpr unsigned full_range() { return static_cast<T>(~T{0}); }

bool have_gpu() { return cuda::device_count() > 0; }

// STREAMBLUR_TEST_MAX_PIXELS limits the plane sizes of the GPU suite, for runs
// under compute-sanitizer (which slows kernels by orders of magnitude).
bool size_enabled(Size s) {
  const char* env = std::getenv("STREAMBLUR_TEST_MAX_PIXELS");
  return !env || static_cast<long long>(s.w) * s.h <= std::atoll(env);
}

}  // namespace

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
  EXPECT_EQ(count_mismatches(dst, src, 0), 0);
}

TEST(Reference, BoxOfConstantIsConstantAndRoundsHalfUp) {
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
  EXPECT_EQ(count_mismatches(got, want, 1), 0);
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
  EXPECT_EQ(count_mismatches(got, want, 0), 0);
}

TEST(CpuBlur, GaussianMatchesReference8Bit) {
  for (Size s : kSizes)
    for (double sigma : kSigmas) {
      if (s.w > 1000 && sigma > 7) continue;  // the reference is slow there; the GPU suite covers it
      cpu_gauss_case<uint8_t>(s, 1, sigma);
    }
  cpu_gauss_case<uint8_t>({33, 21}, 2, 2.5);
  cpu_gauss_case<uint8_t>({33, 21}, 3, 1.0, 4);
}

TEST(CpuBlur, AnisotropicMatchesReference) {  // 4:2:2 chroma: half the horizontal size
  const unsigned seed = fresh_seed();
  SCOPED_TRACE(seed);
  auto src = random_image<uint8_t>(61, 43, 1, seed, 255);
  HostImage<uint8_t> want(61, 43, 1), got(61, 43, 1);
  reference::gaussian_blur<uint8_t>(src.cplane(), want.plane(), 1.0, 2.0, -1, -1);
  std::vector<float> tmp;
  cpu::GaussianBlur(1.0, 2.0, -1, -1).apply<uint8_t>(src.cplane(), got.plane(), tmp);
  EXPECT_EQ(count_mismatches(got, want, 1), 0);
  reference::box_blur<uint8_t>(src.cplane(), want.plane(), 1, 3);
  std::vector<uint32_t> tmp2;
  cpu::BoxBlur(1, 3).apply<uint8_t>(src.cplane(), got.plane(), tmp2);
  EXPECT_EQ(count_mismatches(got, want, 0), 0);
  // and the anisotropic reference really differs from the isotropic one
  HostImage<uint8_t> iso(61, 43, 1);
  reference::box_blur<uint8_t>(src.cplane(), iso.plane(), 3);
  int differ = 0;
  for (size_t i = 0; i < iso.buf.size(); ++i) differ += iso.buf[i] != want.buf[i];
  EXPECT_GT(differ, 0);
}

TEST(CpuBlur, GaussianMatchesReference16Bit) {
  for (Size s : kSizes)
    for (double sigma : kSigmas) {
      if (s.w > 600 && sigma > 2.5) continue;
      cpu_gauss_case<uint16_t>(s, 1, sigma);
    }
  cpu_gauss_case<uint16_t>({40, 23}, 2, 7);
}

TEST(CpuBlur, BoxMatchesReferenceExactly) {
  for (Size s : kSizes)
    for (int r : kBoxRadii) {
      if (s.w > 1000 && r > 5) continue;
      cpu_box_case<uint8_t>(s, 1, r);
      if (s.w < 1000) cpu_box_case<uint16_t>(s, 1, r);
    }
  cpu_box_case<uint8_t>({37, 19}, 2, 5);
  cpu_box_case<uint16_t>({37, 19}, 4, 40);
  cpu_box_case<uint16_t>({300, 3}, 1, 300);  // radius far beyond the image, 64-bit column sums
}

// ---------------------------------------------------------------- CUDA

namespace {

// A device plane with pitch != width.
template <class T>
struct DeviceImage {
  int w, h, c;
  std::ptrdiff_t pitch;
  cuda::DeviceBuffer buf;
  DeviceImage(int w_, int h_, int c_) : w(w_), h(h_), c(c_), pitch(((w_ * c_ + 5) * sizeof(T) + 3) / 4 * 4 + 12),
                                         buf(static_cast<size_t>(pitch) * h_) {}
  Plane<T> plane() { return Plane<T>(buf.as<T>(), w, h, pitch, c); }
  void upload(const HostImage<T>& img) {
    CUDA_CHECK(cudaMemcpy2D(buf.get(), pitch, img.buf.data(), img.pitch, w * c * sizeof(T), h, cudaMemcpyHostToDevice));
  }
  // cudaMemset runs on the legacy default stream, which does not order itself
  // with the test's non-blocking stream: wait for it.
  void poison(int byte) {
    CUDA_CHECK(cudaMemset(buf.get(), byte, buf.size()));
    CUDA_CHECK(cudaDeviceSynchronize());
  }
  HostImage<T> download() const {
    HostImage<T> img(w, h, c);
    CUDA_CHECK(cudaMemcpy2D(img.buf.data(), img.pitch, buf.get(), pitch, w * c * sizeof(T), h, cudaMemcpyDeviceToHost));
    return img;
  }
  // Bytes past each row's last sample must stay as poisoned.
  bool padding_untouched(int byte) const {
    std::vector<unsigned char> raw(buf.size());
    CUDA_CHECK(cudaMemcpy(raw.data(), buf.get(), raw.size(), cudaMemcpyDeviceToHost));
    for (int y = 0; y < h; ++y)
      for (std::ptrdiff_t b = w * c * sizeof(T); b < pitch; ++b)
        if (raw[y * pitch + b] != byte) return false;
    return true;
  }
};

const cuda::BlurPath kPaths[] = {cuda::BlurPath::Auto, cuda::BlurPath::Fused, cuda::BlurPath::TwoPass};
const char* path_name(cuda::BlurPath p) {
  return p == cuda::BlurPath::Auto ? "path auto" : p == cuda::BlurPath::Fused ? "path fused" : "path two-pass";
}

// Runs `apply(src, dst, stream)` twice with two poisons: every sample must be
// written (a stale poison cannot match the reference both times) and the row
// padding never touched.
template <class T, class Apply>
void gpu_case(const HostImage<T>& src, const HostImage<T>& want, int tol, Apply apply) {
  cuda::CudaStream stream;
  DeviceImage<T> d_src(src.w, src.h, src.c), d_dst(src.w, src.h, src.c);
  d_src.upload(src);
  for (int poison : {0x5A, 0xA5}) {
    d_dst.poison(poison);
    apply(Plane<const T>(d_src.plane()), d_dst.plane(), stream.get());
    stream.synchronize();
    EXPECT_EQ(count_mismatches(d_dst.download(), want, tol), 0) << "poison " << poison;
    EXPECT_TRUE(d_dst.padding_untouched(poison)) << "wrote into the row padding";
  }
}

template <class T>
void gpu_gauss_case(Size s, int channels, double sigma, int radius = -1) {
  const unsigned seed = fresh_seed();
  SCOPED_TRACE(testing::Message() << "GPU " << s.w << "x" << s.h << "x" << channels << " sigma=" << sigma << " radius=" << radius
                                  << " bytes=" << sizeof(T) << " seed=" << seed);
  auto src = random_image<T>(s.w, s.h, channels, seed, full_range<T>());
  HostImage<T> want(s.w, s.h, channels);
  reference::gaussian_blur<T>(src.cplane(), want.plane(), sigma, radius);
  cuda::GaussianBlur blur(sigma, radius);
  for (cuda::BlurPath path : kPaths) {  // every kernel, not only the one Auto picks here
    SCOPED_TRACE(path_name(path));
    blur.set_path(path);
    gpu_case<T>(src, want, 1, [&](Plane<const T> a, Plane<T> b, cudaStream_t st) { blur.apply<T>(a, b, st); });
  }
}

template <class T>
void gpu_box_case(Size s, int channels, int r) {
  const unsigned seed = fresh_seed();
  SCOPED_TRACE(testing::Message() << "GPU " << s.w << "x" << s.h << "x" << channels << " r=" << r << " bytes=" << sizeof(T) << " seed=" << seed);
  auto src = random_image<T>(s.w, s.h, channels, seed, full_range<T>());
  HostImage<T> want(s.w, s.h, channels);
  reference::box_blur<T>(src.cplane(), want.plane(), r);
  cuda::BoxBlur blur(r);
  for (cuda::BlurPath path : kPaths) {
    SCOPED_TRACE(path_name(path));
    blur.set_path(path);
    gpu_case<T>(src, want, 0, [&](Plane<const T> a, Plane<T> b, cudaStream_t st) { blur.apply<T>(a, b, st); });
  }
}

#define REQUIRE_GPU() \
  if (!have_gpu()) GTEST_SKIP() << "no CUDA device"

}  // namespace

TEST(CudaBlur, GaussianMatchesReference8Bit) {
  REQUIRE_GPU();
  for (Size s : kSizes)
    if (size_enabled(s))
      for (double sigma : kSigmas) gpu_gauss_case<uint8_t>(s, 1, sigma);
}

TEST(CudaBlur, GaussianMatchesReference16Bit) {
  REQUIRE_GPU();
  for (Size s : kSizes)
    if (size_enabled(s))
      for (double sigma : kSigmas) gpu_gauss_case<uint16_t>(s, 1, sigma);
}

TEST(CudaBlur, GaussianInterleavedChannelsAndExplicitRadius) {
  REQUIRE_GPU();
  for (int c : {2, 3, 4}) {
    gpu_gauss_case<uint8_t>({641, 37}, c, 2.5);
    gpu_gauss_case<uint16_t>({17, 9}, c, 7);
  }
  gpu_gauss_case<uint8_t>({99, 51}, 1, 3.0, 2);
  gpu_gauss_case<uint8_t>({99, 51}, 1, 3.0, 0);
  gpu_gauss_case<uint8_t>({300, 40}, 4, 100.0, 1024);  // halo beyond shared memory: global path
}

TEST(CudaBlur, BoxMatchesReferenceExactly) {
  REQUIRE_GPU();
  for (Size s : kSizes)
    for (int r : kBoxRadii) {
      if (!size_enabled(s)) continue;
      gpu_box_case<uint8_t>(s, 1, r);
      gpu_box_case<uint16_t>(s, 1, r);
    }
  gpu_box_case<uint8_t>({37, 19}, 2, 5);
  gpu_box_case<uint16_t>({37, 19}, 3, 40);
  gpu_box_case<uint16_t>({200, 90}, 1, 300);   // 64-bit column sums, global path
  gpu_box_case<uint8_t>({5000, 4}, 4, 4000);   // huge halo
}

TEST(CudaBlur, AnisotropicMatchesReference) {
  REQUIRE_GPU();
  const unsigned seed = fresh_seed();
  SCOPED_TRACE(seed);
  for (int channels : {2, 1}) {
    auto src = random_image<uint16_t>(161, 93, channels, seed + channels, 1023);
    HostImage<uint16_t> want(161, 93, channels);
    reference::gaussian_blur<uint16_t>(src.cplane(), want.plane(), 1.0, 2.0, -1, -1);
    HostImage<uint16_t> want_box(161, 93, channels);
    reference::box_blur<uint16_t>(src.cplane(), want_box.plane(), 4, 1);
    cuda::GaussianBlur g(1.0, 2.0, -1, -1);
    cuda::BoxBlur bx(4, 1);
    for (cuda::BlurPath path : kPaths) {
      SCOPED_TRACE(testing::Message() << path_name(path) << " channels=" << channels);
      g.set_path(path);
      bx.set_path(path);
      gpu_case<uint16_t>(src, want, 1, [&](Plane<const uint16_t> a, Plane<uint16_t> b, cudaStream_t st) { g.apply<uint16_t>(a, b, st); });
      gpu_case<uint16_t>(src, want_box, 0, [&](Plane<const uint16_t> a, Plane<uint16_t> b, cudaStream_t st) { bx.apply<uint16_t>(a, b, st); });
    }
  }
}

// In place runs the fused kernel through the scratch plane (small radii) or
// the two passes (large radii); both must equal the reference.
TEST(CudaBlur, InPlaceMatchesReference) {
  REQUIRE_GPU();
  cuda::CudaStream stream;
  for (double sigma : {2.0, 7.0}) {
    SCOPED_TRACE(sigma);
    auto src = random_image<uint8_t>(257, 130, 2, fresh_seed(), 255);
    HostImage<uint8_t> want(257, 130, 2);
    reference::gaussian_blur<uint8_t>(src.cplane(), want.plane(), sigma);
    DeviceImage<uint8_t> d(257, 130, 2);
    d.upload(src);
    cuda::GaussianBlur blur(sigma);
    for (cuda::BlurPath path : kPaths) {
      SCOPED_TRACE(path_name(path));
      d.upload(src);
      blur.set_path(path);
      blur.apply<uint8_t>(d.plane(), d.plane(), stream.get());
      stream.synchronize();
      EXPECT_EQ(count_mismatches(d.download(), want, 1), 0);
    }
  }
  for (int r : {1, 40}) {
    SCOPED_TRACE(r);
    auto src = random_image<uint16_t>(199, 77, 1, fresh_seed(), 65535);
    HostImage<uint16_t> want(199, 77, 1);
    reference::box_blur<uint16_t>(src.cplane(), want.plane(), r);
    DeviceImage<uint16_t> d(199, 77, 1);
    d.upload(src);
    cuda::BoxBlur blur(r);
    for (cuda::BlurPath path : kPaths) {
      SCOPED_TRACE(path_name(path));
      d.upload(src);
      blur.set_path(path);
      blur.apply<uint16_t>(d.plane(), d.plane(), stream.get());
      stream.synchronize();
      EXPECT_EQ(count_mismatches(d.download(), want, 0), 0);
    }
  }
}

TEST(CudaBlur, MismatchedPlanesThrow) {
  REQUIRE_GPU();
  DeviceImage<uint8_t> a(10, 10, 1), b(11, 10, 1);
  cuda::BoxBlur blur(1);
  EXPECT_THROW(blur.apply<uint8_t>(a.plane(), b.plane(), nullptr), std::invalid_argument);
}

// ---- layout conversions for NVDEC surfaces (NV12 / P010 -> planar)

namespace {

template <class T>
void convert_case(Size s, int shift) {
  SCOPED_TRACE("size " + std::to_string(s.w) + "x" + std::to_string(s.h) + ", " + std::to_string(sizeof(T) * 8) +
               "-bit, shift " + std::to_string(shift));
  const auto luma = random_image<T>(s.w, s.h, 1, fresh_seed(), full_range<T>());
  const auto uv = random_image<T>(s.w, s.h, 2, fresh_seed(), full_range<T>());
  // Expected values written out here, not taken from the reference twins.
  HostImage<T> want_y(s.w, s.h, 1), want_u(s.w, s.h, 1), want_v(s.w, s.h, 1);
  for (int y = 0; y < s.h; ++y)
    for (int x = 0; x < s.w; ++x) {
      want_y.plane().row(y)[x] = static_cast<T>(luma.cplane().row(y)[x] >> shift);
      want_u.plane().row(y)[x] = static_cast<T>(uv.cplane().row(y)[2 * x] >> shift);
      want_v.plane().row(y)[x] = static_cast<T>(uv.cplane().row(y)[2 * x + 1] >> shift);
    }
  DeviceImage<T> d_luma(s.w, s.h, 1), d_uv(s.w, s.h, 2), d_y(s.w, s.h, 1), d_u(s.w, s.h, 1), d_v(s.w, s.h, 1);
  for (DeviceImage<T>* d : {&d_y, &d_u, &d_v}) d->poison(0xA5);
  d_luma.upload(luma);
  d_uv.upload(uv);
  cuda::CudaStream st;
  cuda::shift_copy<T>(d_luma.plane(), d_y.plane(), shift, st.get());
  cuda::split_channels<T>(d_uv.plane(), d_u.plane(), d_v.plane(), shift, st.get());
  st.synchronize();
  EXPECT_EQ(count_mismatches(d_y.download(), want_y, 0), 0);
  EXPECT_EQ(count_mismatches(d_u.download(), want_u, 0), 0);
  EXPECT_EQ(count_mismatches(d_v.download(), want_v, 0), 0);
  for (DeviceImage<T>* d : {&d_y, &d_u, &d_v}) EXPECT_TRUE(d->padding_untouched(0xA5));
  // The CPU twins agree with the same expectation.
  HostImage<T> ref_y(s.w, s.h, 1), ref_u(s.w, s.h, 1), ref_v(s.w, s.h, 1);
  reference::shift_copy<T>(luma.cplane(), ref_y.plane(), shift);
  reference::split_channels<T>(uv.cplane(), ref_u.plane(), ref_v.plane(), shift);
  EXPECT_EQ(count_mismatches(ref_y, want_y, 0), 0);
  EXPECT_EQ(count_mismatches(ref_u, want_u, 0), 0);
  EXPECT_EQ(count_mismatches(ref_v, want_v, 0), 0);
}

}  // namespace

TEST(CudaConvert, Nv12AndP010SplitIntoPlanarPlanes) {
  REQUIRE_GPU();
  for (Size s : kSizes) {
    if (!size_enabled(s)) continue;
    convert_case<uint8_t>(s, 0);
    convert_case<uint16_t>(s, 6);  // P010 -> yuv420p10le
    convert_case<uint16_t>(s, 0);  // P010 kept as P010
  }
}

TEST(CudaConvert, BadArgumentsThrowBeforeAnyLaunch) {
  REQUIRE_GPU();
  DeviceImage<uint8_t> a(8, 4, 2), b(8, 4, 1), c(7, 4, 1);
  EXPECT_THROW(cuda::split_channels<uint8_t>(a.plane(), b.plane(), c.plane(), 0, nullptr), std::invalid_argument);
  EXPECT_THROW(cuda::shift_copy<uint8_t>(b.plane(), c.plane(), 0, nullptr), std::invalid_argument);
  EXPECT_THROW(cuda::shift_copy<uint8_t>(b.plane(), b.plane(), 8, nullptr), std::invalid_argument);
}
