// The CUDA kernels against the plain references, when a device is present
// (skipped otherwise; failed instead with STREAMBLUR_REQUIRE_GPU=1): every
// forced path and Auto's choice, Gaussian within +-1 with at most 1% of
// samples differing and no bias (sbtest::kRounding), box exact, every sample
// of every channel, odd sizes, pitch != width; the NVDEC layout conversions;
// CUDA error reporting. CUDA backend builds only (tests/CMakeLists.txt).
#include <gtest/gtest.h>

#define SBTEST_NO_FFMPEG  // the kernel tests link no FFmpeg
#include "test_support.hpp"
#include "kernel_test_support.hpp"
#include "cuda_support.hpp"
#include "early_producer.hpp"

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "streamblur/kernels/cpu_blur.hpp"
#include "streamblur/kernels/cuda_blur.hpp"
#include "streamblur/kernels/cuda_check.hpp"
#include "streamblur/kernels/cuda_convert.hpp"
#include "streamblur/kernels/detail/blur_path.hpp"
#include "streamblur/kernels/params.hpp"
#include "streamblur/kernels/reference.hpp"

using namespace streamblur;
using namespace sbtest::kernels;

TEST(CudaBlur, RoundToHighBitsRoundsToNearestTiesUp) {
  SBTEST_SKIP_WITHOUT_GPU();
  for (int shift : {1, 6, 8}) {
    SCOPED_TRACE(shift);
    HostImage<uint16_t> img(256, 256, 1);
    for (int y = 0; y < 256; ++y)
      for (int x = 0; x < 256; ++x) img.plane().row(y)[x] = static_cast<uint16_t>(y * 256 + x);
    HostImage<uint16_t> want(256, 256, 1);
    for (int y = 0; y < 256; ++y)
      for (int x = 0; x < 256; ++x) want.plane().row(y)[x] = rounded_high_bits(y * 256 + x, shift);
    cuda::CudaStream st;
    cuda::DeviceBuffer buf(static_cast<size_t>(img.pitch) * 256);
    sbtest::upload(buf.get(), img.buf.data(), buf.size());
    cuda::round_to_high_bits(Plane<uint16_t>(buf.as<uint16_t>(), 256, 256, img.pitch), shift, st.get());
    st.synchronize();
    CUDA_CHECK(cudaMemcpy(img.buf.data(), buf.get(), buf.size(), cudaMemcpyDeviceToHost));
    EXPECT_TRUE(close_to(img, want, 0));
  }
}

// device_count(): "no device" and "no driver" are no GPU (0); any other error
// of cudaGetDeviceCount is reported with CUDA's own text, never hidden as 0.
TEST(CudaCheck, DeviceCountHidesOnlyNoDeviceAndNoDriver) {
  EXPECT_EQ(cuda::device_count_from(cudaSuccess, 3), 3);
  EXPECT_EQ(cuda::device_count_from(cudaErrorNoDevice, 0), 0);
  EXPECT_EQ(cuda::device_count_from(cudaErrorInsufficientDriver, 0), 0);
  for (cudaError_t rc : {cudaErrorInitializationError, cudaErrorSystemDriverMismatch, cudaErrorDevicesUnavailable,
                         cudaErrorUnknown}) {
    SCOPED_TRACE(cudaGetErrorName(rc));
    try {
      cuda::device_count_from(rc, 0);
      ADD_FAILURE() << "no exception for " << cudaGetErrorName(rc);
    } catch (const cuda::CudaError& e) {
      EXPECT_EQ(e.code(), rc);
      EXPECT_NE(std::string(e.what()).find(cudaGetErrorString(rc)), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("cudaGetDeviceCount"), std::string::npos) << e.what();
    }
  }
  // Here (no GPU, or a working one) the real call must not throw.
  EXPECT_NO_THROW(cuda::device_count());
}


// ---------------------------------------------------------------- CUDA

namespace {

// A device plane with pitch != width.
template <class T>
struct DeviceImage {
  int w, h, c;
  std::ptrdiff_t pitch;
  cuda::DeviceBuffer buf;
  // aligned: rows of whole 256 bytes, as cudaMallocPitch gives (the kernels'
  // widest vector loads); else a pitch that is rarely a multiple of 16 bytes.
  DeviceImage(int w_, int h_, int c_, bool aligned = false)
      : w(w_), h(h_), c(c_),
        pitch(aligned ? (w_ * c_ * sizeof(T) + 255) / 256 * 256 : ((w_ * c_ + 5) * sizeof(T) + 3) / 4 * 4 + 12),
        buf(static_cast<size_t>(pitch) * h_) {}
  Plane<T> plane() { return Plane<T>(buf.as<T>(), w, h, pitch, c); }
  void upload(const HostImage<T>& img) {
    sbtest::upload_2d(buf.get(), pitch, img.buf.data(), img.pitch, w * c * sizeof(T), h);
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

const cuda::BlurPath kPaths[] = {cuda::BlurPath::Auto,    cuda::BlurPath::TwoPass, cuda::BlurPath::Register,
                                 cuda::BlurPath::Box3,    cuda::BlurPath::Running, cuda::BlurPath::Wide,
                                 cuda::BlurPath::Tensor};
std::string path_label(cuda::BlurPath p) { return std::string("path ") + cuda::path_name(p); }

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
    EXPECT_TRUE(close_to(d_dst.download(), want, tol)) << "poison " << poison;
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
    SCOPED_TRACE(path_label(path));
    cuda::set_path(blur, path);
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
    SCOPED_TRACE(path_label(path));
    cuda::set_path(blur, path);
    gpu_case<T>(src, want, 0, [&](Plane<const T> a, Plane<T> b, cudaStream_t st) { blur.apply<T>(a, b, st); });
  }
}

#define REQUIRE_GPU() SBTEST_SKIP_WITHOUT_GPU()

}  // namespace

// Every size and sigma (radius) at both sample sizes, then interleaved
// channels, explicit radii and halos beyond shared memory.
std::vector<BlurCase> gpu_gauss_cases() {
  std::vector<BlurCase> v;
  for (int bytes : {1, 2})
    for (Size s : kSizes)
      for (double sigma : kSigmas) v.push_back({s, 1, bytes, sigma, -1});
  for (int c : {2, 3, 4}) {
    v.push_back({{641, 37}, c, 1, 2.5, -1});
    v.push_back({{17, 9}, c, 2, 7, -1});
  }
  v.push_back({{99, 51}, 1, 1, 3.0, 2});
  v.push_back({{99, 51}, 1, 1, 3.0, 0});
  v.push_back({{300, 40}, 4, 1, 100.0, 1024});  // halo beyond shared memory: global path
  return v;
}

std::vector<BlurCase> gpu_box_cases() {
  std::vector<BlurCase> v;
  for (Size s : kSizes)
    for (int r : kBoxRadii)
      for (int bytes : {1, 2}) v.push_back({s, 1, bytes, 0, r});
  v.push_back({{37, 19}, 2, 1, 0, 5});
  v.push_back({{37, 19}, 3, 2, 0, 40});
  v.push_back({{200, 90}, 1, 2, 0, 300});  // 64-bit column sums, global path
  v.push_back({{5000, 4}, 4, 1, 0, 4000});  // huge halo
  return v;
}

class CudaGauss : public testing::TestWithParam<BlurCase> {};
class CudaBox : public testing::TestWithParam<BlurCase> {};

TEST_P(CudaGauss, MatchesReference) {
  REQUIRE_GPU();
  const BlurCase& c = GetParam();
  if (!size_enabled(c.s)) GTEST_SKIP() << "larger than STREAMBLUR_TEST_MAX_PIXELS";
  if (c.bytes == 1) gpu_gauss_case<uint8_t>(c.s, c.channels, c.sigma, c.radius);
  else gpu_gauss_case<uint16_t>(c.s, c.channels, c.sigma, c.radius);
}

TEST_P(CudaBox, MatchesReferenceExactly) {
  REQUIRE_GPU();
  const BlurCase& c = GetParam();
  if (!size_enabled(c.s)) GTEST_SKIP() << "larger than STREAMBLUR_TEST_MAX_PIXELS";
  if (c.bytes == 1) gpu_box_case<uint8_t>(c.s, c.channels, c.radius);
  else gpu_box_case<uint16_t>(c.s, c.channels, c.radius);
}

INSTANTIATE_TEST_SUITE_P(CudaBlur, CudaGauss, testing::ValuesIn(gpu_gauss_cases()), case_name);
INSTANTIATE_TEST_SUITE_P(CudaBlur, CudaBox, testing::ValuesIn(gpu_box_cases()), case_name);

// Auto's box kernels, from the measured table (kernels/src/blur.cu; the
// choice reads the device's shared-memory limits, hence a GPU).
TEST(CudaBlur, AutoBoxKernelsFromTheMeasuredTable) {
  REQUIRE_GPU();
  using P = cuda::BlurPath;
  EXPECT_EQ(cuda::path_taken(cuda::BoxBlur(1), 1920, 1080, 1, 1), P::Box3);  // the 3x3 box kernel, at every size
  EXPECT_EQ(cuda::path_taken(cuda::BoxBlur(1), 1920, 1080, 1, 2), P::Box3);
  EXPECT_EQ(cuda::path_taken(cuda::BoxBlur(1), 64, 64, 1, 1), P::Box3);
  EXPECT_EQ(cuda::path_taken(cuda::BoxBlur(3), 1920, 1080, 1, 2), P::Register);
  EXPECT_EQ(cuda::path_taken(cuda::BoxBlur(1), 3840, 2160, 1, 2), P::Box3);
  EXPECT_EQ(cuda::path_taken(cuda::BoxBlur(3), 3840, 2160, 1, 1), P::Register);
  EXPECT_EQ(cuda::path_taken(cuda::BoxBlur(8), 1920, 1080, 1, 1), P::Register);
  EXPECT_EQ(cuda::path_taken(cuda::BoxBlur(60), 1920, 1080, 1, 1), P::Running);
  EXPECT_EQ(cuda::path_taken(cuda::BoxBlur(10), 1920, 1080, 1, 1), P::Register);
  EXPECT_EQ(cuda::path_taken(cuda::BoxBlur(11), 1920, 1080, 1, 1), P::Running);
  EXPECT_EQ(cuda::path_taken(cuda::BoxBlur(15), 1920, 1080, 1, 1), P::Running);
  EXPECT_EQ(cuda::path_taken(cuda::BoxBlur(24), 3840, 2160, 1, 1), P::Running);
  EXPECT_EQ(cuda::path_taken(cuda::BoxBlur(8), 3840, 2160, 1, 1), P::Register);
  EXPECT_EQ(cuda::path_taken(cuda::BoxBlur(9), 3840, 2160, 1, 1), P::Running);
  EXPECT_EQ(cuda::path_taken(cuda::BoxBlur(6), 3840, 2160, 1, 2), P::Register);
  EXPECT_EQ(cuda::path_taken(cuda::BoxBlur(7), 3840, 2160, 1, 2), P::Running);
  EXPECT_EQ(cuda::path_taken(cuda::BoxBlur(4096), 3840, 2160, 1, 2), P::Running);
  EXPECT_EQ(cuda::path_taken(cuda::BoxBlur(1), 960, 540, 2, 1), P::Running);
  EXPECT_EQ(cuda::path_taken(cuda::BoxBlur(2), 960, 540, 2, 1), P::Running);
  EXPECT_EQ(cuda::path_taken(cuda::BoxBlur(60), 960, 540, 2, 1), P::Running);
  EXPECT_EQ(cuda::path_taken(cuda::BoxBlur(16), 1920, 2160, 2, 2), P::Running);
  EXPECT_EQ(cuda::path_taken(cuda::BoxBlur(1), 1920, 2160, 2, 1), P::Running);
  EXPECT_EQ(cuda::path_taken(cuda::BoxBlur(1), 960, 1080, 2, 1), P::Running);
  EXPECT_EQ(cuda::path_taken(cuda::BoxBlur(2), 960, 1080, 2, 1), P::Running);
  EXPECT_EQ(cuda::path_taken(cuda::BoxBlur(60), 9000, 100, 1, 1), P::TwoPass);  // wider than the running kernels take
  EXPECT_EQ(cuda::path_taken(cuda::BoxBlur(60), 640, 360, 3, 1), P::TwoPass);
}

// The 3x3 box kernel's blocks step down by the grid (at most 65535 blocks of
// 8 rows) on taller planes: the rows past the first stride are filtered too.
TEST(CudaBlur, Box3PlaneTallerThanOneGrid) {
  REQUIRE_GPU();
  const Size s{7, 65535 * 8 + 37};
  if (!size_enabled(s)) GTEST_SKIP() << "larger than STREAMBLUR_TEST_MAX_PIXELS";
  const unsigned seed = fresh_seed();
  SCOPED_TRACE(testing::Message() << "seed=" << seed);
  const auto src = random_image<uint8_t>(s.w, s.h, 1, seed, 255);
  HostImage<uint8_t> want(s.w, s.h, 1);
  reference::box_blur<uint8_t>(src.cplane(), want.plane(), 1);
  cuda::BoxBlur blur(1);
  EXPECT_EQ(cuda::path_taken(blur, s.w, s.h, 1, 1), cuda::BlurPath::Box3);
  gpu_case<uint8_t>(src, want, 0, [&](Plane<const uint8_t> a, Plane<uint8_t> b, cudaStream_t st) { blur.apply<uint8_t>(a, b, st); });
}

// The register path has one kernel per radius bucket (1, 2, 3, 4, 6, 8, 12,
// 16, 24, 32) and pads smaller radii with zero weights: every bucket, at its
// edges, on a plane of several tiles whose width is no multiple of 128.
TEST(CudaBlur, RegisterPathEveryRadiusBucket) {
  REQUIRE_GPU();
  for (int r : {1, 2, 3, 4, 5, 6, 7, 8, 9, 12, 13, 16, 17, 24, 25, 31, 32}) {
    gpu_gauss_case<uint8_t>({261, 70}, 1, std::max(0.5, r / 3.0), r);
    if (r % 4 == 0 || r == 1 || r == 25) gpu_gauss_case<uint16_t>({133, 67}, 1, r / 2.0, r);
  }
  for (int r : {1, 2, 3, 4, 7, 8, 16, 17, 32}) {
    gpu_box_case<uint8_t>({261, 70}, 1, r);
    gpu_box_case<uint16_t>({133, 67}, 1, r);
  }
  // Which kernels Auto takes is part of the contract the benchmark reports.
  using P = cuda::BlurPath;
  EXPECT_EQ(cuda::path_taken(cuda::GaussianBlur(2.0), 3840, 2160, 1, 1), P::Tensor);
  EXPECT_EQ(cuda::path_taken(cuda::GaussianBlur(1.5), 3840, 2160, 1, 1), P::Tensor);    // r = 5
  EXPECT_EQ(cuda::path_taken(cuda::GaussianBlur(1.0), 3840, 2160, 1, 1), P::Register);  // r = 3
  EXPECT_EQ(cuda::path_taken(cuda::GaussianBlur(2.0), 1920, 1080, 1, 1), P::Register);
  EXPECT_EQ(cuda::path_taken(cuda::GaussianBlur(4.0), 1920, 1080, 1, 1), P::Register);  // r = 12
  EXPECT_EQ(cuda::path_taken(cuda::GaussianBlur(5.0), 1920, 1080, 1, 1), P::Tensor);    // r = 15
  EXPECT_EQ(cuda::path_taken(cuda::GaussianBlur(2.0), 3840, 2160, 1, 2), P::Register);  // 16-bit
  EXPECT_EQ(cuda::path_taken(cuda::GaussianBlur(10.0), 1920, 1080, 1, 2), P::Register);
  EXPECT_EQ(cuda::path_taken(cuda::GaussianBlur(0.5), 640, 360, 3, 1), P::TwoPass);  // RGB
  EXPECT_EQ(cuda::path_taken(cuda::BoxBlur(1), 640, 360, 4, 1), P::TwoPass);          // RGBA
  EXPECT_EQ(cuda::path_taken(cuda::GaussianBlur(2.0), 640, 360, 3, 1), P::TwoPass);
  EXPECT_EQ(cuda::path_taken(cuda::GaussianBlur(20.0), 3840, 2160, 1, 1), P::Wide);
  EXPECT_EQ(cuda::path_taken(cuda::GaussianBlur(7.0), 3840, 2160, 1, 1), P::Tensor);
  EXPECT_EQ(cuda::path_taken(cuda::GaussianBlur(10.0), 3840, 2160, 1, 1), P::Tensor);  // r = 30
  EXPECT_EQ(cuda::path_taken(cuda::GaussianBlur(11.0), 3840, 2160, 1, 1), P::Wide);    // r = 33: beyond it
  EXPECT_EQ(cuda::path_taken(cuda::GaussianBlur(7.0), 3840, 2160, 1, 2), P::Register);
  EXPECT_EQ(cuda::path_taken(cuda::GaussianBlur(10.0), 3840, 2160, 1, 2), P::Wide);
  EXPECT_EQ(cuda::path_taken(cuda::GaussianBlur(5.0), 3840, 2160, 1, 1), P::Tensor);
  EXPECT_EQ(cuda::path_taken(cuda::GaussianBlur(10.0), 1920, 1080, 1, 1), P::Tensor);
  EXPECT_EQ(cuda::path_taken(cuda::GaussianBlur(11.0), 1920, 1080, 1, 1), P::Wide);
  EXPECT_EQ(cuda::path_taken(cuda::GaussianBlur(9.0), 3840, 2160, 1, 2), P::Wide);      // r = 27: above it
  EXPECT_EQ(cuda::path_taken(cuda::GaussianBlur(100.0), 1920, 1080, 1, 2), P::Wide);
  EXPECT_EQ(cuda::path_taken(cuda::GaussianBlur(2.0), 960, 540, 2, 1), P::Wide);
  EXPECT_EQ(cuda::path_taken(cuda::GaussianBlur(0.5), 960, 540, 2, 1), P::Wide);
  EXPECT_EQ(cuda::path_taken(cuda::GaussianBlur(0.1), 1920, 2160, 2, 2), P::Wide);
  EXPECT_EQ(cuda::path_taken(cuda::GaussianBlur(1.0), 1920, 2160, 2, 1), P::Tensor);  // 8-bit pairs, r = 3
  EXPECT_EQ(cuda::path_taken(cuda::GaussianBlur(3.0), 1920, 2160, 2, 1), P::Tensor);  // r = 9: 3 blocks of taps
  EXPECT_EQ(cuda::path_taken(cuda::GaussianBlur(5.0), 1920, 2160, 2, 1), P::Tensor);  // r = 15: 3
  EXPECT_EQ(cuda::path_taken(cuda::GaussianBlur(7.0), 1920, 2160, 2, 1), P::Tensor);  // r = 21: 4
  EXPECT_EQ(cuda::path_taken(cuda::GaussianBlur(10.0), 1920, 2160, 2, 1), P::Wide);   // r = 30: 5
  // The band's edge: 4 blocks of taps up to rx = 24 and ry = 24.
  EXPECT_EQ(cuda::path_taken(cuda::GaussianBlur(2.0, 2.0, 24, 24), 1920, 2160, 2, 1), P::Tensor);
  EXPECT_EQ(cuda::path_taken(cuda::GaussianBlur(2.0, 2.0, 12, 25), 1920, 2160, 2, 1), P::Wide);
  EXPECT_EQ(cuda::path_taken(cuda::GaussianBlur(2.0, 2.0, 25, 8), 1920, 2160, 2, 1), P::Wide);
  EXPECT_EQ(cuda::path_taken(cuda::GaussianBlur(2.0), 960, 1080, 2, 1), P::Tensor);   // 2 M samples
  EXPECT_EQ(cuda::path_taken(cuda::GaussianBlur(3.0), 960, 540, 2, 1), P::Tensor);    // 1 M samples, 3 blocks
  EXPECT_EQ(cuda::path_taken(cuda::GaussianBlur(7.0), 960, 540, 2, 1), P::Tensor);
  EXPECT_EQ(cuda::path_taken(cuda::GaussianBlur(10.0), 960, 540, 2, 1), P::Wide);
  EXPECT_EQ(cuda::path_taken(cuda::GaussianBlur(20.0), 640, 360, 4, 1), P::TwoPass);
  // A forced path that cannot run falls back: box3 -> register -> two
  // passes.
  cuda::GaussianBlur wide(5.0);
  cuda::set_path(wide, P::Box3);
  EXPECT_EQ(cuda::path_taken(wide, 640, 360, 1, 1), P::Register);
  cuda::set_path(wide, P::Register);
  EXPECT_EQ(cuda::path_taken(wide, 640, 360, 2, 1), P::TwoPass);
  cuda::GaussianBlur huge(60.0);
  cuda::set_path(huge, P::Register);
  EXPECT_EQ(cuda::path_taken(huge, 640, 360, 1, 1), P::TwoPass);
  cuda::set_path(wide, P::Running);  // box only
  EXPECT_EQ(cuda::path_taken(wide, 640, 360, 1, 1), P::Register);
  cuda::set_path(huge, P::Wide);
  EXPECT_EQ(cuda::path_taken(huge, 640, 360, 2, 2), P::Wide);
  EXPECT_EQ(cuda::path_taken(huge, 640, 360, 3, 1), P::TwoPass);  // wide -> two passes
  cuda::BoxBlur packed(5);
  cuda::set_path(packed, P::Wide);  // Gaussian only
  EXPECT_EQ(cuda::path_taken(packed, 640, 360, 1, 1), P::TwoPass);
  cuda::set_path(packed, P::Running);
  EXPECT_EQ(cuda::path_taken(packed, 640, 360, 4, 1), P::TwoPass);  // running -> register -> two passes
  EXPECT_EQ(cuda::path_taken(packed, 640, 360, 2, 1), P::Running);
}

// `blur` forced onto `path` (and taking it, where `taken`), within `tol` of
// `want` out of place (gpu_case), in place (through the scratch plane), and
// with 256-byte pitches (rows as cudaMallocPitch gives them, so the kernels'
// vector loads run on every row).
template <class T, class Blur>
void check_forced_path(Blur& blur, cuda::BlurPath path, bool taken, const HostImage<T>& src, const HostImage<T>& want,
                       int tol) {
  cuda::set_path(blur, path);
  if (taken) EXPECT_EQ(cuda::path_taken(blur, src.w, src.h, src.c, sizeof(T)), path);
  gpu_case<T>(src, want, tol, [&](Plane<const T> a, Plane<T> b, cudaStream_t st) { blur.template apply<T>(a, b, st); });
  cuda::CudaStream stream;
  DeviceImage<T> d(src.w, src.h, src.c);
  d.upload(src);
  blur.template apply<T>(Plane<const T>(d.plane()), d.plane(), stream.get());
  stream.synchronize();
  EXPECT_TRUE(close_to(d.download(), want, tol)) << "in place";
  DeviceImage<T> a(src.w, src.h, src.c, true), b(src.w, src.h, src.c, true);
  a.upload(src);
  blur.template apply<T>(Plane<const T>(a.plane()), b.plane(), stream.get());
  stream.synchronize();
  EXPECT_TRUE(close_to(b.download(), want, tol)) << "256-byte pitches";
}

// The running sums: radii from 0 to 4096 in either direction, windows far
// larger than the plane, rows that take each of the band kernel's block sizes
// (up to 2048, 4096 and 8192 samples), one and two channels, 8 and 16 bits,
// 32- and 64-bit row sums, planes of 1 to 2500 rows (bands, steps of rows
// and 32-row segments cut at every place; the tall ones have bands whose
// length is not a whole number of steps), in place and not, 256-byte
// pitches. Exact against the reference.
TEST(CudaBlur, RunningBoxAnyRadius) {
  REQUIRE_GPU();
  struct Case { Size s; int channels; int bytes; int rx, ry; };
  const Case cases[] = {
      {{1, 1}, 1, 1, 0, 1},        {{1, 1}, 2, 2, 4096, 4096}, {{7, 3}, 1, 1, 3, 0},
      {{300, 5}, 1, 2, 100, 3},    {{257, 200}, 1, 1, 7, 63},  {{257, 200}, 1, 1, 64, 65},
      {{131, 129}, 2, 1, 9, 130},  {{61, 71}, 2, 2, 200, 1},   {{2049, 67}, 1, 1, 17, 33},
      {{2049, 19}, 2, 1, 5, 21},   {{4100, 9}, 1, 2, 40, 2},   {{8192, 3}, 1, 1, 2, 5},
      {{90, 150}, 1, 2, 300, 300},  // 64-bit row sums
      // 64-bit row sums with windows inside the row (the 4-output prefix
      // loads, at even and odd offsets), 16 bit and 8 bit.
      {{700, 40}, 1, 2, 131, 130}, {{600, 20}, 2, 2, 129, 140}, {{4300, 6}, 1, 1, 2100, 2100},
      // Windows just as wide as the row (rx = width - 1: the whole-row
      // variant) and one sample narrower (the prefixes).
      {{200, 30}, 1, 1, 199, 5},   {{200, 30}, 1, 1, 198, 5},  {{120, 20}, 2, 2, 119, 2},
      {{120, 20}, 2, 2, 118, 2},   {{4097, 5}, 1, 2, 4096, 9}, {{4098, 5}, 1, 2, 4096, 9},
      // 8-bit windows whose sums need 64 bits, narrower than the row: the
      // 32-bit prefixes wrap (up to 3 times a row), one and two channels.
      {{8192, 3}, 1, 1, 4096, 4096}, {{4000, 3}, 2, 1, 2500, 4096},
      {{5000, 4}, 1, 1, 2200, 3000}, {{5003, 4}, 1, 1, 2200, 3000},
      // ... rows whose last thread has one group of four outputs where the
      // others have two (a sample count of 8 k + 4).
      {{4100, 3}, 1, 1, 2052, 2052}, {{2502, 3}, 2, 1, 2100, 4096},
      // ... bands of several rows (each thread's first quotient of a row
      // steps from the row above), with and without wrapping prefixes.
      {{4100, 1100}, 1, 1, 2052, 2052}, {{2502, 1500}, 2, 1, 2100, 4096}, {{8192, 600}, 1, 1, 4096, 4096},
      // 8-bit windows over the whole row whose sums need 64 bits (quotients
      // by steps, as the wrapping ones'): one and two channels, rows of
      // whole and partial groups of four.
      {{3001, 7}, 1, 1, 3000, 4096}, {{4096, 4}, 1, 1, 4095, 4095}, {{2500, 9}, 2, 1, 4096, 2100},
      {{2501, 6}, 2, 1, 2500, 4000},
      {{33, 40}, 1, 1, 4096, 7},   {{40, 33}, 2, 1, 0, 4096},
      {{64, 2500}, 1, 1, 9, 700},  {{37, 2300}, 2, 2, 3, 40},  {{1001, 1061}, 1, 2, 150, 31},
      // The 4-output groups' prefix loads at each offset modulo 4 (a warp's
      // lanes share words by shuffles where the offset is not a multiple of
      // 4; the first and last lane read theirs): rx = 21-24 on one channel,
      // rows of 256, 512 and 1024 threads, a row's second group of warps
      // partly past its end (1500 samples), pairs at odd and even rx.
      {{1500, 37}, 1, 1, 21, 6},   {{1500, 37}, 1, 1, 22, 6},  {{1500, 37}, 1, 1, 23, 6},
      {{1500, 37}, 1, 1, 24, 6},   {{3844, 20}, 1, 2, 29, 3},  {{3844, 20}, 1, 2, 30, 3},
      {{6000, 9}, 1, 1, 13, 14},   {{6000, 9}, 1, 1, 15, 2},   {{1000, 25}, 2, 1, 30, 2},
      {{1000, 25}, 2, 1, 31, 2},   {{1500, 37}, 1, 1, 1, 1},   {{1500, 37}, 1, 1, 2, 1},
  };
  for (const Case& c : cases) {
    const unsigned seed = fresh_seed();
    SCOPED_TRACE(testing::Message() << c.s.w << "x" << c.s.h << "x" << c.channels << " bytes=" << c.bytes
                                    << " rx=" << c.rx << " ry=" << c.ry << " seed=" << seed);
    auto run = [&](auto zero) {
      using T = decltype(zero);
      auto src = random_image<T>(c.s.w, c.s.h, c.channels, seed, full_range<T>());
      const HostImage<T> want = oracle_box_exact(src, c.rx, c.ry);  // (the reference's sums take minutes here)
      cuda::BoxBlur blur(c.rx, c.ry);
      check_forced_path<T>(blur, cuda::BlurPath::Running, c.rx + c.ry > 0, src, want, 0);
    };
    if (c.bytes == 1) run(uint8_t{});
    else run(uint16_t{});
  }
}

// The 64-bit window sums at their largest: a constant plane's box is that
// constant, for the largest and smallest nonzero samples, at the largest
// windows (the quotient's estimate from the sum's two halves, then its
// one-step correction, at the top of their range; 8-bit prefixes that wrap
// most often). Also in the racecheck run.
TEST(CudaBlur, RunningBoxWideSumsOfConstantPlanes) {
  REQUIRE_GPU();
  auto run = [](auto zero, Size s, int channels, int r) {
    using T = decltype(zero);
    for (unsigned v : {unsigned{full_range<T>()}, full_range<T>() - 1u, 1u, 0u}) {
      SCOPED_TRACE(testing::Message() << s.w << "x" << s.h << "x" << channels << " bytes=" << sizeof(T) << " r=" << r
                                      << " value=" << v);
      HostImage<T> src(s.w, s.h, channels);
      src.fill(static_cast<T>(v));
      cuda::BoxBlur blur(r);
      check_forced_path<T>(blur, cuda::BlurPath::Running, true, src, src, 0);
    }
  };
  run(uint8_t{}, {4300, 5}, 1, 4096);
  run(uint8_t{}, {4300, 5}, 1, 2100);
  run(uint8_t{}, {8192, 3}, 1, 4096);  // the 32-bit prefixes wrap 3 times a row
  run(uint8_t{}, {4000, 3}, 2, 3998);
  run(uint16_t{}, {700, 9}, 1, 4096);
  run(uint16_t{}, {700, 9}, 2, 200);
}

// The running box's kernels start early (programmatic dependent launch) and
// box_bands loads rows of the source before its wait: a producer of the
// source that lets the next kernel start at once and writes only 300 us later
// must still be waited for. The source holds zeros until the producer's copy;
// exact against the reference of what it copies, on three calls.
TEST(CudaBlur, RunningBoxWaitsForAnEarlySignallingProducer) {
  REQUIRE_GPU();
  const unsigned seed = fresh_seed();
  SCOPED_TRACE(testing::Message() << "seed=" << seed);
  const int w = 1000, h = 300, r = 40;
  const auto src = random_image<uint8_t>(w, h, 1, seed, full_range<uint8_t>());
  HostImage<uint8_t> want(w, h, 1);
  reference::box_blur<uint8_t>(src.cplane(), want.plane(), r, r);
  cuda::BoxBlur blur(r);
  cuda::set_path(blur, cuda::BlurPath::Running);
  ASSERT_EQ(cuda::path_taken(blur, w, h, 1, 1), cuda::BlurPath::Running);
  DeviceImage<uint8_t> staged(w, h, 1, true), plane(w, h, 1, true), out(w, h, 1, true);
  staged.poison(0);  // the producer copies whole pitched rows: their padding too (compute-sanitizer initcheck)
  staged.upload(src);
  cuda::CudaStream stream;
  for (int call = 0; call < 3; ++call) {
    SCOPED_TRACE(testing::Message() << "call " << call);
    plane.poison(0);
    sbtest::early_signalling_copy(staged.buf.get(), plane.buf.get(), plane.buf.size(), 300000, stream.get());
    blur.apply<uint8_t>(Plane<const uint8_t>(plane.plane()), out.plane(), stream.get());
    stream.synchronize();
    EXPECT_TRUE(close_to(out.download(), want, 0));
  }
}

// The wide passes: radii from 0 to the largest a Gaussian takes (1024) in
// either direction, windows far beyond the plane, row lengths around the
// 16-sample groups and 512-sample warps, one and two channels, 8 and 16 bits,
// plane starts that are not 16-byte aligned (single loads) and 256-byte
// pitches (vector loads on every row), in place and not.
// Within 1 of the float64 reference, with close_to's limits on how many
// samples differ and on their mean.
TEST(CudaBlur, WideGaussAnyRadius) {
  REQUIRE_GPU();
  struct Case { Size s; int channels; int bytes; double sx, sy; int rx, ry; };
  const Case cases[] = {
      {{1, 1}, 1, 1, 3.0, 3.0, 9, 9},         {{1, 1}, 2, 2, 100.0, 100.0, 1024, 1024},
      {{15, 3}, 1, 1, 2.0, 1.0, -1, 0},      {{16, 17}, 2, 1, 0.4, 5.0, -1, -1},
      {{17, 40}, 1, 2, 20.0, 20.0, -1, -1},  {{511, 33}, 1, 1, 7.0, 0.6, -1, -1},
      {{513, 35}, 2, 1, 4.0, 9.0, -1, -1},   {{1030, 70}, 1, 1, 60.0, 2.0, -1, -1},
      {{300, 257}, 1, 2, 1.0, 45.0, -1, -1}, {{133, 90}, 2, 2, 100.0, 30.0, 300, 1024},
  };
  for (const Case& c : cases) {
    const unsigned seed = fresh_seed();
    SCOPED_TRACE(testing::Message() << c.s.w << "x" << c.s.h << "x" << c.channels << " bytes=" << c.bytes << " sigma="
                                    << c.sx << "," << c.sy << " r=" << c.rx << "," << c.ry << " seed=" << seed);
    auto run = [&](auto zero) {
      using T = decltype(zero);
      auto src = random_image<T>(c.s.w, c.s.h, c.channels, seed, full_range<T>());
      HostImage<T> want(c.s.w, c.s.h, c.channels);
      reference::gaussian_blur<T>(src.cplane(), want.plane(), c.sx, c.sy, c.rx, c.ry);
      cuda::GaussianBlur blur(c.sx, c.sy, c.rx, c.ry);
      check_forced_path<T>(blur, cuda::BlurPath::Wide, true, src, want, 1);
    };
    if (c.bytes == 1) run(uint8_t{});
    else run(uint16_t{});
  }
}

// The tensor-core Gaussian (8-bit, one channel or pairs): every radius 0 to 32 in
// either direction (1 to 5 blocks of taps per band, the staged columns' offset
// A - rx at 0..3), rx != ry, sizes around the 128 x 64 tiles and below one,
// plane starts and pitches with no alignment (single loads and byte stores)
// and 256-byte pitches, in place and not. Within 1 of the float64 reference,
// with close_to's limits on how many samples differ and on their mean; a
// smooth plane (no noise to hide a bias) at every radius too.
TEST(CudaBlur, TensorGaussEveryRadius) {
  REQUIRE_GPU();
  struct Case { Size s; double sx, sy; int rx, ry; };
  std::vector<Case> cases = {
      {{1, 1}, 2.0, 2.0, -1, -1},     {{3, 70}, 1.0, 3.0, -1, -1},    {{129, 65}, 0.5, 0.5, -1, -1},
      {{127, 63}, 4.0, 0.7, -1, -1},  {{300, 200}, 9.0, 2.0, 32, 6},  {{261, 129}, 1.5, 10.0, 4, 32},
      {{517, 131}, 3.0, 3.0, 0, 9},   {{200, 90}, 2.0, 2.0, 7, 0},
  };
  auto at = [](HostImage<uint8_t>& img, int x, int y) -> uint8_t& { return img.buf[y * img.pitch + x]; };
  for (int r = 0; r <= 32; ++r) cases.push_back({{261 + r, 70 + r}, std::max(0.5, r / 3.0), std::max(0.5, r / 3.0), r, r});
  for (const Case& c : cases) {
    for (bool smooth : {false, true}) {
      const unsigned seed = fresh_seed();
      SCOPED_TRACE(testing::Message() << c.s.w << "x" << c.s.h << " sigma=" << c.sx << "," << c.sy << " r=" << c.rx
                                      << "," << c.ry << (smooth ? " smooth" : "") << " seed=" << seed);
      HostImage<uint8_t> src = random_image<uint8_t>(c.s.w, c.s.h, 1, seed, full_range<uint8_t>());
      if (smooth)
        for (int y = 0; y < c.s.h; ++y)
          for (int x = 0; x < c.s.w; ++x)
            at(src, x, y) = static_cast<uint8_t>(std::lround(127.5 + 127.5 * std::sin(0.013 * x * (1 + seed % 5)) *
                                                                        std::cos(0.021 * y)));
      HostImage<uint8_t> want(c.s.w, c.s.h, 1);
      reference::gaussian_blur<uint8_t>(src.cplane(), want.plane(), c.sx, c.sy, c.rx, c.ry);
      cuda::GaussianBlur blur(c.sx, c.sy, c.rx, c.ry);
      check_forced_path<uint8_t>(blur, cuda::BlurPath::Tensor, true, src, want, 1);
      if (c.s.w > 1) {  // a plane start and pitch with no alignment: single loads, byte stores
        DeviceImage<uint8_t> a(c.s.w + 3, c.s.h, 1), b(c.s.w + 5, c.s.h, 1);
        HostImage<uint8_t> wide(c.s.w + 3, c.s.h, 1);
        for (int y = 0; y < c.s.h; ++y)
          for (int x = 0; x < c.s.w; ++x) at(wide, x + 1, y) = at(src, x, y);
        a.upload(wide);
        b.poison(0x5A);
        cuda::CudaStream stream;
        const Plane<uint8_t> pa = a.plane(), pb = b.plane();
        blur.apply<uint8_t>(Plane<const uint8_t>(pa.data + 1, c.s.w, c.s.h, pa.pitch, 1),
                            Plane<uint8_t>(pb.data + 3, c.s.w, c.s.h, pb.pitch, 1), stream.get());
        stream.synchronize();
        HostImage<uint8_t> got = b.download();
        HostImage<uint8_t> inner(c.s.w, c.s.h, 1);
        for (int y = 0; y < c.s.h; ++y) {
          for (int x = 0; x < c.s.w; ++x) at(inner, x, y) = at(got, x + 3, y);
          for (int x : {0, 1, 2}) EXPECT_EQ(at(got, x, y), 0x5A) << "wrote before the plane at row " << y;
          for (int x = c.s.w + 3; x < c.s.w + 5; ++x) EXPECT_EQ(at(got, x, y), 0x5A) << "wrote past the plane at row " << y;
        }
        EXPECT_TRUE(close_to(inner, want, 1)) << "unaligned planes";
      }
    }
  }
}

// Interleaved pairs (NV12's UV plane) on the tensor-core Gaussian: each
// channel filtered apart, the edges clamped to the edge pixel's sample of the
// same channel; radii up to 32 pixels either way. Then planes of more tiles
// than the GPU runs at once.
TEST(CudaBlur, TensorGaussPairsAndLargePlanes) {
  REQUIRE_GPU();
  struct Case { Size s; double sx, sy; int rx, ry; };
  const Case pairs[] = {
      {{1, 1}, 2.0, 2.0, -1, -1},     {{3, 70}, 1.0, 3.0, -1, -1},    {{65, 65}, 0.5, 0.5, -1, -1},
      {{129, 40}, 2.0, 2.0, -1, -1},  {{261, 70}, 5.0, 5.0, 15, 15},  {{130, 129}, 16 / 3.0, 10.0, 16, 32},
      {{200, 90}, 3.0, 1.0, 9, 0},    {{77, 33}, 1.5, 6.0, 5, 18},    {{300, 140}, 10.0, 10.0, 30, 30},
      {{33, 17}, 32 / 3.0, 2.0, 32, 6},
  };
  for (const Case& c : pairs) {
    const unsigned seed = fresh_seed();
    SCOPED_TRACE(testing::Message() << c.s.w << "x" << c.s.h << "x2 sigma=" << c.sx << "," << c.sy << " r=" << c.rx
                                    << "," << c.ry << " seed=" << seed);
    const HostImage<uint8_t> src = random_image<uint8_t>(c.s.w, c.s.h, 2, seed, full_range<uint8_t>());
    HostImage<uint8_t> want(c.s.w, c.s.h, 2);
    reference::gaussian_blur<uint8_t>(src.cplane(), want.plane(), c.sx, c.sy, c.rx, c.ry);
    cuda::GaussianBlur blur(c.sx, c.sy, c.rx, c.ry);
    check_forced_path<uint8_t>(blur, cuda::BlurPath::Tensor, true, src, want, 1);
  }
  // Planes of more tiles than the GPU runs at once (396 blocks at sigma 2
  // on an H200, 264 at sigma 5): blocks that load their next tile while
  // computing one. One channel: 512 tiles; pairs (tiles of 64 pixels): 544,
  // 17 across, so that a block's next tile lies in another column of tiles.
  // Pairs at 2 x 2 blocks of taps load the last partial round of their
  // groups (the last staged rows) after the vertical pass; at r = 8 the band
  // reaches those rows.
  const int tall = 2048;
  struct Big { int channels; double sigma; int r; };
  for (const Big& c : {Big{1, 2.0, -1}, Big{1, 5.0, -1}, Big{2, 8 / 3.0, 8}, Big{2, 5.0, -1}}) {
    const int w = c.channels == 1 ? 2048 : 1030;
    const unsigned seed = fresh_seed();
    SCOPED_TRACE(testing::Message() << w << "x" << tall << "x" << c.channels << " sigma=" << c.sigma << " r=" << c.r
                                    << " seed=" << seed);
    const HostImage<uint8_t> src = random_image<uint8_t>(w, tall, c.channels, seed, full_range<uint8_t>());
    HostImage<uint8_t> want(w, tall, c.channels);
    reference::gaussian_blur<uint8_t>(src.cplane(), want.plane(), c.sigma, c.sigma, c.r, c.r);
    cuda::GaussianBlur blur(c.sigma, c.sigma, c.r, c.r);
    check_forced_path<uint8_t>(blur, cuda::BlurPath::Tensor, true, src, want, 1);
  }
}

// Where the tensor-core Gaussian cannot run, it falls back to another path.
TEST(CudaBlur, TensorGaussFallsBack) {
  REQUIRE_GPU();
  cuda::GaussianBlur small(2.0), large(11.0);
  cuda::set_path(small, cuda::BlurPath::Tensor);
  cuda::set_path(large, cuda::BlurPath::Tensor);
  EXPECT_EQ(cuda::path_taken(small, 640, 360, 1, 1), cuda::BlurPath::Tensor);
  EXPECT_EQ(cuda::path_taken(small, 640, 360, 1, 2), cuda::BlurPath::Register);
  EXPECT_EQ(cuda::path_taken(small, 640, 360, 2, 1), cuda::BlurPath::Tensor);
  EXPECT_EQ(cuda::path_taken(small, 640, 360, 3, 1), cuda::BlurPath::TwoPass);
  EXPECT_EQ(cuda::path_taken(large, 640, 360, 1, 1), cuda::BlurPath::TwoPass);  // r = 33: nor the register path
  cuda::GaussianBlur pair_limit(32 / 3.0, 32 / 3.0, 32, 32), pair_over(11.0, 11.0, 33, 33);
  cuda::set_path(pair_limit, cuda::BlurPath::Tensor);
  cuda::set_path(pair_over, cuda::BlurPath::Tensor);
  EXPECT_EQ(cuda::path_taken(pair_limit, 640, 360, 2, 1), cuda::BlurPath::Tensor);  // the channels apart: 32 pixels
  EXPECT_NE(cuda::path_taken(pair_over, 640, 360, 2, 1), cuda::BlurPath::Tensor);
  cuda::BoxBlur box(3);
  cuda::set_path(box, cuda::BlurPath::Tensor);
  EXPECT_EQ(cuda::path_taken(box, 640, 360, 1, 1), cuda::BlurPath::Register);
}

// The tensor kernel counts the 16-wide blocks of taps across (from rx
// rounded up to 4, plus rx, plus 16; pairs' channels are staged apart, so
// in pixels too) and down (16 + 2 ry) apart, and has a launch for every pair
// of counts with the one across 0 to 2 above the one down (any other pair
// runs both at the larger). Radii at both ends of every such pair, one
// channel and pairs, on planes of a few tiles with widths and heights off
// the tile's.
TEST(CudaBlur, TensorGaussEveryStepCount) {
  REQUIRE_GPU();
  struct Case { int channels, rx, ry; };
  // {rx, ry}: the largest and smallest radii of each pair of counts (across,
  // down) = (1,1) (2,1) (2,2) (3,1) (3,2) (3,3) (4,2) (4,3) (4,4) (5,3)
  // (5,4) (5,5); then a pair (2,5) the kernel runs as (5,5).
  const int radii[][2] = {
      {0, 0},   {8, 0},   {1, 0},  {8, 8},   {1, 1},   {16, 0},  {9, 0},   {16, 8},  {9, 1},   {16, 16}, {9, 9},  {24, 8},
      {17, 1},  {24, 16}, {17, 9}, {24, 24}, {17, 17}, {32, 16}, {25, 9},  {32, 24}, {25, 17}, {32, 32}, {25, 25}, {3, 30},
  };
  std::vector<Case> cases;
  for (int channels : {1, 2})
    for (const auto& r : radii) cases.push_back({channels, r[0], r[1]});
  for (const Case& c : cases) {
    const unsigned seed = fresh_seed();
    // Odd sizes, a few 128 x 64 tiles (in samples: pairs' rows hold twice as many).
    const int w = (c.channels == 1 ? 301 : 151) + c.rx, h = 141 + c.ry;
    const double sx = std::max(0.5, c.rx / 3.0), sy = std::max(0.5, c.ry / 3.0);
    SCOPED_TRACE(testing::Message() << w << "x" << h << "x" << c.channels << " r=" << c.rx << "," << c.ry
                                    << " seed=" << seed);
    const HostImage<uint8_t> src = random_image<uint8_t>(w, h, c.channels, seed, full_range<uint8_t>());
    HostImage<uint8_t> want(w, h, c.channels);
    reference::gaussian_blur<uint8_t>(src.cplane(), want.plane(), sx, sy, c.rx, c.ry);
    cuda::GaussianBlur blur(sx, sy, c.rx, c.ry);
    check_forced_path<uint8_t>(blur, cuda::BlurPath::Tensor, true, src, want, 1);
  }
}

// The 3x3 box (the box3 path): widths around the 8-sample lanes and
// 256-sample warps, heights around the 8-row strips, 8 and 16 bits.
TEST(CudaBlur, Box3x3AtEveryEdge) {
  REQUIRE_GPU();
  for (Size s : {Size{1, 1}, Size{7, 2}, Size{8, 9}, Size{255, 17}, Size{257, 31}, Size{512, 33}, Size{777, 40}})
    for (int bytes : {1, 2}) {
      SCOPED_TRACE(testing::Message() << s.w << "x" << s.h << " bytes=" << bytes);
      if (bytes == 1) gpu_box_case<uint8_t>(s, 1, 1);
      else gpu_box_case<uint16_t>(s, 1, 1);
    }
}

// A small set for compute-sanitizer racecheck, which is too slow for the
// suites above: planes of 2 x 2 tiles or more, every path, the shared-memory
// kernels' radius buckets at both ends.
TEST(CudaBlur, RacecheckSet) {
  REQUIRE_GPU();
  for (int r : {1, 3, 6, 12, 32}) gpu_gauss_case<uint8_t>({260, 70}, 1, std::max(0.5, r / 3.0), r);
  for (int r : {1, 4, 8, 32, 70}) gpu_box_case<uint8_t>({260, 70}, 1, r);  // 70: running sums
  gpu_box_case<uint16_t>({131, 70}, 2, 9);
  // The running sums' 64-bit row sums and their 1024-thread blocks (rows
  // over 4096 samples); windows wider than the row (the band kernel's
  // whole-row variant: 64-bit, then 32-bit sums of one and two channels).
  gpu_box_case<uint16_t>({131, 40}, 1, 200);
  gpu_box_case<uint8_t>({100, 40}, 1, 120);
  gpu_box_case<uint8_t>({64, 30}, 2, 70);
  gpu_box_case<uint8_t>({4100, 6}, 1, 40);
  gpu_gauss_case<uint16_t>({131, 40}, 2, 1.0);
  gpu_gauss_case<uint8_t>({600, 70}, 1, 15.0);  // wide (and every other path)
  // 8-bit pairs (the tensor kernel's two-channel tiles, 2 and 3 blocks of
  // taps each way) and a 16-bit plane with P010's shift (the register and
  // wide kernels' masked conversions).
  gpu_gauss_case<uint8_t>({131, 70}, 2, 1.0);
  gpu_gauss_case<uint8_t>({131, 70}, 2, 2.0);
  gpu_gauss_case<uint8_t>({131, 70}, 2, 3.0);
  for (cuda::BlurPath path : {cuda::BlurPath::Register, cuda::BlurPath::Wide}) {
    SCOPED_TRACE(path_label(path));
    auto src = random_image<uint16_t>(260, 70, 1, fresh_seed(), 65535);
    HostImage<uint16_t> values(260, 70, 1);
    for (std::size_t i = 0; i < src.buf.size(); ++i) values.buf[i] = static_cast<uint16_t>(src.buf[i] >> 6);
    cuda::GaussianBlur blur(2.0);
    cuda::set_path(blur, path);
    // The same blur without the shift on the values, shifted up: bit for bit
    // what the shifted blur must give (SampleShiftEveryPath).
    cuda::CudaStream stream;
    DeviceImage<uint16_t> d_values(260, 70, 1), d_plain(260, 70, 1);
    d_values.upload(values);
    blur.apply<uint16_t>(Plane<const uint16_t>(d_values.plane()), d_plain.plane(), stream.get());
    stream.synchronize();
    HostImage<uint16_t> want = d_plain.download();
    for (uint16_t& v : want.buf) v = static_cast<uint16_t>(v << 6);
    blur.set_sample_shift(6);
    gpu_case<uint16_t>(src, want, 0, [&](Plane<const uint16_t> a, Plane<uint16_t> b, cudaStream_t st) {
      blur.apply<uint16_t>(a, b, st);
    });
  }
}

// Plane starts and pitches that are not multiples of 4 samples take the
// kernels' scalar loads and stores.
TEST(CudaBlur, UnalignedPlanesMatchReference) {
  REQUIRE_GPU();
  const int w = 300, h = 41;
  const unsigned seed = fresh_seed();
  SCOPED_TRACE(seed);
  auto src = random_image<uint8_t>(w, h, 1, seed, 255);
  HostImage<uint8_t> want_g(w, h, 1), want_b(w, h, 1), want_b1(w, h, 1);
  reference::gaussian_blur<uint8_t>(src.cplane(), want_g.plane(), 2.0, -1);
  reference::box_blur<uint8_t>(src.cplane(), want_b.plane(), 3);
  reference::box_blur<uint8_t>(src.cplane(), want_b1.plane(), 1);  // the 3x3 kernel's single loads
  const std::ptrdiff_t pitch = 333;
  cuda::DeviceBuffer a(pitch * h + 1), b(pitch * h + 1);
  sbtest::upload_2d(a.as<uint8_t>() + 1, pitch, src.buf.data(), src.pitch, w, h);
  const Plane<const uint8_t> in(a.as<uint8_t>() + 1, w, h, pitch);
  const Plane<uint8_t> out(b.as<uint8_t>() + 1, w, h, pitch);
  cuda::GaussianBlur g(2.0);
  cuda::BoxBlur box(3), box1(1);
  for (cuda::BlurPath path : kPaths) {
    SCOPED_TRACE(path_label(path));
    HostImage<uint8_t> got(w, h, 1);
    cuda::set_path(g, path);
    g.apply<uint8_t>(in, out, nullptr);
    CUDA_CHECK(cudaMemcpy2D(got.buf.data(), got.pitch, out.data, pitch, w, h, cudaMemcpyDeviceToHost));
    EXPECT_TRUE(close_to(got, want_g, 1));
    cuda::set_path(box, path);
    box.apply<uint8_t>(in, out, nullptr);
    CUDA_CHECK(cudaMemcpy2D(got.buf.data(), got.pitch, out.data, pitch, w, h, cudaMemcpyDeviceToHost));
    EXPECT_TRUE(close_to(got, want_b, 0));
    cuda::set_path(box1, path);
    box1.apply<uint8_t>(in, out, nullptr);
    CUDA_CHECK(cudaMemcpy2D(got.buf.data(), got.pitch, out.data, pitch, w, h, cudaMemcpyDeviceToHost));
    EXPECT_TRUE(close_to(got, want_b1, 0));
  }
}

// One 8K plane (7681 x 4321: no dimension a multiple of a tile).
TEST(CudaBlur, LargePlaneMatchesReference) {
  REQUIRE_GPU();
  if (!size_enabled({7681, 4321})) GTEST_SKIP() << "above STREAMBLUR_TEST_MAX_PIXELS";
  gpu_gauss_case<uint8_t>({7681, 4321}, 1, 2.0);
  gpu_box_case<uint8_t>({7681, 4321}, 1, 3);
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
      SCOPED_TRACE(testing::Message() << path_label(path) << " channels=" << channels);
      cuda::set_path(g, path);
      cuda::set_path(bx, path);
      gpu_case<uint16_t>(src, want, 1, [&](Plane<const uint16_t> a, Plane<uint16_t> b, cudaStream_t st) { g.apply<uint16_t>(a, b, st); });
      gpu_case<uint16_t>(src, want_box, 0, [&](Plane<const uint16_t> a, Plane<uint16_t> b, cudaStream_t st) { bx.apply<uint16_t>(a, b, st); });
    }
  }
}

// Samples with their value in the high bits (P010: 10 bits over 6 low ones),
// through set_sample_shift(6), on every forced path (the register and wide
// kernels take the shift; the others shift around the blur), Gaussians and
// boxes, one channel and pairs, radius 0, odd sizes, out of place (two
// poisons, row padding untouched) and in place. The input's low bits are
// random, as hostile data may have them: the blur must ignore them. Each
// result must be, bit for bit, the same blur without the shift run on the
// values (v >> 6) and shifted back up; and its values must be within 1 of the
// float64 reference on the values (boxes: exact), low bits zero.
TEST(CudaBlur, SampleShiftEveryPath) {
  REQUIRE_GPU();
  constexpr int kShift = 6;
  struct Case { Size s; int channels; double sigma; int rx, ry; };  // sigma 0: a box
  const Case cases[] = {
      {{1, 1}, 1, 2.0, -1, -1},   {{67, 45}, 1, 2.0, -1, -1},  {{131, 70}, 2, 1.0, -1, -1},
      {{200, 130}, 1, 7.0, -1, -1}, {{90, 61}, 2, 20.0, -1, -1}, {{33, 20}, 1, 3.0, 0, 0},
      {{150, 40}, 1, 1.5, 4, 0},  {{1, 1}, 1, 0, 1, 1},        {{67, 45}, 1, 0, 1, 1},
      {{129, 66}, 1, 0, 3, 3},    {{203, 77}, 1, 0, 8, 8},     {{101, 90}, 1, 0, 40, 40},
      {{77, 50}, 2, 0, 5, 5},     {{40, 30}, 1, 0, 0, 0},
  };
  for (const Case& c : cases) {
    const unsigned seed = fresh_seed();
    SCOPED_TRACE(testing::Message() << c.s.w << "x" << c.s.h << "x" << c.channels << " sigma=" << c.sigma
                                    << " r=" << c.rx << "," << c.ry << " seed=" << seed);
    const bool box = c.sigma == 0;
    const auto src = random_image<uint16_t>(c.s.w, c.s.h, c.channels, seed, 65535);
    HostImage<uint16_t> values(c.s.w, c.s.h, c.channels), want(c.s.w, c.s.h, c.channels);
    for (std::size_t i = 0; i < src.buf.size(); ++i) values.buf[i] = static_cast<uint16_t>(src.buf[i] >> kShift);
    if (box) reference::box_blur<uint16_t>(values.cplane(), want.plane(), c.rx, c.ry);
    else reference::gaussian_blur<uint16_t>(values.cplane(), want.plane(), c.sigma, c.sigma, c.rx, c.ry);
    auto run = [&](auto& blur) {
      for (cuda::BlurPath path : kPaths) {
        SCOPED_TRACE(path_label(path));
        cuda::set_path(blur, path);
        // The same blur without the shift, on the values, shifted back up.
        cuda::CudaStream stream;
        DeviceImage<uint16_t> d_values(c.s.w, c.s.h, c.channels), d_plain(c.s.w, c.s.h, c.channels);
        d_values.upload(values);
        blur.set_sample_shift(0);
        blur.template apply<uint16_t>(Plane<const uint16_t>(d_values.plane()), d_plain.plane(), stream.get());
        stream.synchronize();
        HostImage<uint16_t> plain_up = d_plain.download();
        for (uint16_t& v : plain_up.buf) v = static_cast<uint16_t>(v << kShift);
        blur.set_sample_shift(kShift);
        gpu_case<uint16_t>(src, plain_up, 0, [&](Plane<const uint16_t> a, Plane<uint16_t> b, cudaStream_t st) {
          blur.template apply<uint16_t>(a, b, st);
        });
        DeviceImage<uint16_t> d(c.s.w, c.s.h, c.channels);
        d.upload(src);
        blur.template apply<uint16_t>(Plane<const uint16_t>(d.plane()), d.plane(), stream.get());
        stream.synchronize();
        HostImage<uint16_t> got = d.download();
        EXPECT_TRUE(close_to(got, plain_up, 0)) << "in place";
        int low_bits = 0;
        for (int y = 0; y < c.s.h; ++y)
          for (int x = 0; x < c.s.w * c.channels; ++x) {
            uint16_t& v = got.buf[y * got.pitch / 2 + x];
            low_bits += (v & ((1 << kShift) - 1)) != 0;
            v = static_cast<uint16_t>(v >> kShift);
          }
        EXPECT_EQ(low_bits, 0);
        EXPECT_TRUE(close_to(got, want, box ? 0 : 1)) << "the values against the reference";
      }
    };
    if (box) {
      cuda::BoxBlur blur(c.rx, c.ry);
      run(blur);
    } else {
      cuda::GaussianBlur blur(c.sigma, c.sigma, c.rx, c.ry);
      run(blur);
    }
  }
  // An 8-bit plane cannot have a shift; nor is one above 15 a shift.
  cuda::GaussianBlur blur(2.0);
  EXPECT_THROW(blur.set_sample_shift(16), std::invalid_argument);
  EXPECT_THROW(blur.set_sample_shift(-1), std::invalid_argument);
  blur.set_sample_shift(6);
  DeviceImage<uint8_t> d8(8, 8, 1);
  cuda::CudaStream stream;
  EXPECT_THROW(blur.apply<uint8_t>(Plane<const uint8_t>(d8.plane()), d8.plane(), stream.get()), std::invalid_argument);
}

// In place runs the tiled kernels through the scratch plane or the two
// passes through theirs; both must equal the reference.
// `blur` forced onto every path in turn, applied in place to a device copy of
// src, against want.
template <class T, class Blur>
void expect_in_place_on_every_path(Blur& blur, const HostImage<T>& src, const HostImage<T>& want, int tol,
                                   cuda::CudaStream& stream) {
  DeviceImage<T> d(src.w, src.h, src.c);
  for (cuda::BlurPath path : kPaths) {
    SCOPED_TRACE(path_label(path));
    d.upload(src);
    cuda::set_path(blur, path);
    blur.template apply<T>(d.plane(), d.plane(), stream.get());
    stream.synchronize();
    EXPECT_TRUE(close_to(d.download(), want, tol));
  }
}

TEST(CudaBlur, InPlaceMatchesReference) {
  REQUIRE_GPU();
  cuda::CudaStream stream;
  for (double sigma : {2.0, 7.0}) {
    SCOPED_TRACE(sigma);
    auto src = random_image<uint8_t>(257, 130, 2, fresh_seed(), 255);
    HostImage<uint8_t> want(257, 130, 2);
    reference::gaussian_blur<uint8_t>(src.cplane(), want.plane(), sigma);
    cuda::GaussianBlur blur(sigma);
    expect_in_place_on_every_path(blur, src, want, 1, stream);
  }
  for (int r : {1, 40}) {
    SCOPED_TRACE(r);
    auto src = random_image<uint16_t>(199, 77, 1, fresh_seed(), 65535);
    HostImage<uint16_t> want(199, 77, 1);
    reference::box_blur<uint16_t>(src.cplane(), want.plane(), r);
    cuda::BoxBlur blur(r);
    expect_in_place_on_every_path(blur, src, want, 0, stream);
  }
}

TEST(CudaBlur, ACaughtFailureIsNotReportedAgainByTheNextKernel) {
  REQUIRE_GPU();
  // An allocation that cannot fit fails and is handled by the caller (a long
  // Python session would carry on). The next blur must not report it again as
  // a failure of its own launch.
  bool threw = false;
  try {
    cuda::DeviceBuffer huge(std::size_t{1} << 52);  // 4 PiB
  } catch (const cuda::CudaError& e) {
    threw = true;
    EXPECT_EQ(e.code(), cudaErrorMemoryAllocation) << e.what();
  }
  ASSERT_TRUE(threw) << "a 4 PiB allocation succeeded";
  EXPECT_NO_THROW(gpu_gauss_case<uint8_t>({64, 33}, 1, 2.0));
  EXPECT_NO_THROW(gpu_box_case<uint8_t>({64, 33}, 1, 3));
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
}

TEST(CudaBlur, ALaunchFailureNamesTheKernelAndItsSite) {
  REQUIRE_GPU();
  // A failed call leaves an error that the launch check must report under the
  // kernel's name and the launch site's file:line, then clear.
  void* p = nullptr;
  ASSERT_NE(cudaMalloc(&p, std::size_t{1} << 52), cudaSuccess);  // sets the runtime's last error
  bool threw = false;
  try {
    STREAMBLUR_CHECK_LAUNCH("probe_kernel", nullptr);
  } catch (const cuda::CudaError& e) {
    threw = true;
    const std::string what = e.what();
    EXPECT_NE(what.find("launch of probe_kernel"), std::string::npos) << what;
    EXPECT_EQ(what.find("test_kernels.cpp:"), std::string::npos) << what;  // the message is the user's
    EXPECT_EQ(e.location().rfind("test_kernels_cuda.cpp:", 0), 0u) << e.location();
    EXPECT_NE(what.find("out of memory"), std::string::npos) << what;
  }
  EXPECT_TRUE(threw);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
  EXPECT_NO_THROW(STREAMBLUR_CHECK_LAUNCH("probe_kernel", nullptr));
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
  EXPECT_TRUE(close_to(d_y.download(), want_y, 0));
  EXPECT_TRUE(close_to(d_u.download(), want_u, 0));
  EXPECT_TRUE(close_to(d_v.download(), want_v, 0));
  for (DeviceImage<T>* d : {&d_y, &d_u, &d_v}) EXPECT_TRUE(d->padding_untouched(0xA5));
  // The CPU twins agree with the same expectation.
  HostImage<T> ref_y(s.w, s.h, 1), ref_u(s.w, s.h, 1), ref_v(s.w, s.h, 1);
  reference::shift_copy<T>(luma.cplane(), ref_y.plane(), shift);
  reference::split_channels<T>(uv.cplane(), ref_u.plane(), ref_v.plane(), shift);
  EXPECT_TRUE(close_to(ref_y, want_y, 0));
  EXPECT_TRUE(close_to(ref_u, want_u, 0));
  EXPECT_TRUE(close_to(ref_v, want_v, 0));
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
