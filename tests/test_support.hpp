#pragma once
// Helpers shared by the test programs.
//  - Part 1 (plain C++, every test program, the kernel tests too): the blur
//    comparison with its bias limits, an oracle blur that shares no code with
//    the product, and the GPU-skip rule (STREAMBLUR_REQUIRE_GPU).
//  - Part 2 (FFmpeg; left out when SBTEST_NO_FFMPEG is defined): temporary
//    folders, file bytes, error messages, a small audio-only file (no video
//    stream) made at test time, FFmpeg's log kept to errors, and a video
//    decoder opened with FFmpeg alone.
#include <gtest/gtest.h>

#include "streamblur/config.hpp"  // STREAMBLUR_HAVE_CUDA

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace sbtest {

// ---------------------------------------------------------------------------
// Comparing a blur with its expected result.
//
// Within +-1 is not enough on its own: a rounding bug (floor(v) for
// floor(v + 0.5), truncating low bits) moves about half the samples by -1 and
// still passes it. So every comparison also bounds the share of samples that
// differ at all and the mean signed difference (got - want): an unbiased
// implementation that differs from the double-precision oracle only by float
// accumulation stays far below both limits.
// ---------------------------------------------------------------------------

struct Tolerance {
  int max_abs = 0;          // largest |got - want| allowed
  double max_share = 0;     // largest share of samples with got != want
  double max_mean = 0;      // largest |mean(got - want)|
};
inline constexpr Tolerance kExact{0, 0.0, 0.0};
inline constexpr Tolerance kRounding{1, 0.01, 0.01};  // float vs double: +-1, rarely, no bias
// Tolerance for a comparison the tests call "within `tol`": 0 is exact, 1 is
// kRounding; a larger value keeps the same share and bias limits.
inline Tolerance tolerance_of(int tol) { return tol == 0 ? kExact : Tolerance{tol, 0.01, 0.01}; }

// Differences between two sets of samples, accumulated one sample at a time.
class SampleDiffs {
 public:
  void add(int64_t got, int64_t want, int x, int y, int channel = 0) {
    const int64_t d = got - want;
    ++samples_;
    signed_sum_ += d;
    if (d != 0) ++differing_;
    const int64_t a = d < 0 ? -d : d;
    if (a > worst_) {
      worst_ = a;
      wx_ = x; wy_ = y; wc_ = channel; wgot_ = got; wwant_ = want;
    }
    if (a > limit_seen_) ++over_;  // counted against the limit passed to check()
  }
  static constexpr int64_t kMinSamples = 1000;
  int64_t samples() const { return samples_; }
  int64_t differing() const { return differing_; }
  int64_t worst() const { return worst_; }
  double share() const { return samples_ ? double(differing_) / double(samples_) : 0.0; }
  double mean() const { return samples_ ? double(signed_sum_) / double(samples_) : 0.0; }
  // Samples off by more than `max_abs` are counted from the first add() on.
  explicit SampleDiffs(int max_abs = 0) : limit_seen_(max_abs) {}

  ::testing::AssertionResult check(Tolerance t) const {
    std::ostringstream m;
    bool ok = true;
    if (worst_ > t.max_abs) {
      ok = false;
      m << "max |diff| " << worst_ << " > " << t.max_abs << " (worst at x=" << wx_ << " ch=" << wc_ << " y=" << wy_
        << ": got " << wgot_ << ", want " << wwant_ << "; " << over_ << " samples over the limit); ";
    }
    // The share and mean are measured over at least kMinSamples: a tiny plane
    // (3x5 under sigma 20 is nearly constant) can legitimately have one or two
    // float-vs-double rounding differences, all of one sign.
    const double n = double(samples_ > kMinSamples ? samples_ : kMinSamples);
    if (double(differing_) > t.max_share * n) {
      ok = false;
      m << differing_ << " of " << samples_ << " samples differ (" << 100.0 * share() << "%, limit "
        << 100.0 * t.max_share << "%); ";
    }
    if (std::fabs(double(signed_sum_)) > t.max_mean * n) {
      ok = false;
      m << "mean signed difference got-want " << mean() << " (limit +-" << t.max_mean << "); ";
    }
    if (ok)
      return ::testing::AssertionSuccess() << differing_ << " of " << samples_ << " differ, mean " << mean();
    return ::testing::AssertionFailure() << m.str();
  }

 private:
  int64_t samples_ = 0, differing_ = 0, over_ = 0, signed_sum_ = 0, worst_ = 0, limit_seen_ = 0;
  int wx_ = 0, wy_ = 0, wc_ = 0;
  int64_t wgot_ = 0, wwant_ = 0;
};

// Adds every sample of two pitch-linear planes (pitches in bytes) to `d`.
template <class T>
void add_plane_diffs(SampleDiffs& d, const T* got, std::ptrdiff_t got_pitch, const T* want, std::ptrdiff_t want_pitch,
                     int width, int height, int channels = 1) {
  for (int y = 0; y < height; ++y) {
    const T* g = reinterpret_cast<const T*>(reinterpret_cast<const unsigned char*>(got) + y * got_pitch);
    const T* w = reinterpret_cast<const T*>(reinterpret_cast<const unsigned char*>(want) + y * want_pitch);
    for (int s = 0; s < width * channels; ++s) d.add(g[s], w[s], s / channels, y, s % channels);
  }
}

template <class T>
::testing::AssertionResult planes_close(const T* got, std::ptrdiff_t got_pitch, const T* want,
                                        std::ptrdiff_t want_pitch, int width, int height, int channels, Tolerance t) {
  SampleDiffs d(t.max_abs);
  add_plane_diffs(d, got, got_pitch, want, want_pitch, width, height, channels);
  return d.check(t);
}

// ---------------------------------------------------------------------------
// Oracle blurs written here from the definitions, sharing no code with
// kernels/ (not params.cpp's weights, not reference.cpp): if the product's
// Gaussian has the wrong shape everywhere at once, these still disagree.
// ---------------------------------------------------------------------------
namespace oracle {

// Documented rule (kernels/include/streamblur/kernels/params.hpp):
// radius >= 0 is used as given, -1 means ceil(3 sigma), at least 1.
inline int gaussian_radius(double sigma, int radius) {
  if (radius >= 0) return radius;
  int r = static_cast<int>(std::ceil(3.0 * sigma));
  return r < 1 ? 1 : r;
}

// w(i) = exp(-i^2 / (2 sigma^2)), i in [-r, r], divided by their sum.
inline std::vector<double> gaussian_weights(double sigma, int radius) {
  const int r = gaussian_radius(sigma, radius);
  std::vector<double> w;
  double sum = 0;
  for (int i = -r; i <= r; ++i) {
    const double x = static_cast<double>(i) / sigma;
    w.push_back(std::exp(-0.5 * x * x));
    sum += w.back();
  }
  for (double& v : w) v /= sum;
  return w;
}

inline int clamp_to(int i, int n) { return i < 0 ? 0 : (i >= n ? n - 1 : i); }

// Separable weighted sum with clamped edges, kept in double until one final
// rounding to nearest (ties up) and clamping to [0, max]. `weights_x` /
// `weights_y` have odd sizes; the box blur passes all-ones and divides once.
template <class T>
void separable(const T* src, std::ptrdiff_t src_pitch, T* dst, std::ptrdiff_t dst_pitch, int w, int h, int c,
               const std::vector<double>& wx, const std::vector<double>& wy, double divisor) {
  const int rx = static_cast<int>(wx.size() / 2), ry = static_cast<int>(wy.size() / 2);
  auto at = [&](int x, int y, int ch) -> double {
    return reinterpret_cast<const T*>(reinterpret_cast<const unsigned char*>(src) + y * src_pitch)[x * c + ch];
  };
  std::vector<double> rows(static_cast<size_t>(w) * h * c);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x)
      for (int ch = 0; ch < c; ++ch) {
        double acc = 0;
        for (int k = -rx; k <= rx; ++k) acc += wx[k + rx] * at(clamp_to(x + k, w), y, ch);
        rows[(static_cast<size_t>(y) * w + x) * c + ch] = acc;
      }
  const double top = static_cast<double>(static_cast<T>(~T{0}));
  for (int y = 0; y < h; ++y) {
    T* out = reinterpret_cast<T*>(reinterpret_cast<unsigned char*>(dst) + y * dst_pitch);
    for (int s = 0; s < w * c; ++s) {
      double acc = 0;
      for (int k = -ry; k <= ry; ++k) acc += wy[k + ry] * rows[static_cast<size_t>(clamp_to(y + k, h)) * w * c + s];
      const double v = std::floor(acc / divisor + 0.5);
      out[s] = static_cast<T>(v < 0 ? 0 : (v > top ? top : v));
    }
  }
}

// Gaussian blur (sigma_x, sigma_y, radius_x, radius_y as gblur takes them).
template <class T>
void gaussian_blur(const T* src, std::ptrdiff_t src_pitch, T* dst, std::ptrdiff_t dst_pitch, int w, int h, int c,
                   double sigma_x, double sigma_y, int radius_x = -1, int radius_y = -1) {
  separable(src, src_pitch, dst, dst_pitch, w, h, c, gaussian_weights(sigma_x, radius_x),
            gaussian_weights(sigma_y, radius_y), 1.0);
}

// Box blur: the mean of the (2 rx + 1) x (2 ry + 1) window, rounded to nearest.
// The window has an odd number of samples, so the mean is never exactly k + 0.5.
template <class T>
void box_blur(const T* src, std::ptrdiff_t src_pitch, T* dst, std::ptrdiff_t dst_pitch, int w, int h, int c, int rx,
              int ry) {
  separable(src, src_pitch, dst, dst_pitch, w, h, c, std::vector<double>(2 * rx + 1, 1.0),
            std::vector<double>(2 * ry + 1, 1.0), double(2 * rx + 1) * (2 * ry + 1));
}

// The same box blur in exact integer arithmetic, in time linear in the
// plane (prefix sums over each row, then each column, extended by the clamped
// edge samples): for windows of thousands of samples, where the separable
// sums above take minutes. Checked against them (Reference tests).
// The window sums of a line of n values (at(i), i in [0, n)) with the ends
// clamped: out(i) = at(clamp(i - r)) + ... + at(clamp(i + r)), from one
// prefix sum over the line extended by r values each side.
template <class At, class Out>
void clamped_window_sums(int n, int r, At at, Out out) {
  std::vector<unsigned long long> prefix(static_cast<std::size_t>(n) + 2 * r + 1);
  for (int i = 0; i < n + 2 * r; ++i) prefix[i + 1] = prefix[i] + at(clamp_to(i - r, n));
  for (int i = 0; i < n; ++i) out(i, prefix[i + 2 * r + 1] - prefix[i]);
}

// The same box blur in exact integer arithmetic, in time linear in the
// plane (window sums along each row, then down each column): for windows of
// thousands of samples, where the separable sums above take minutes.
// Checked against them (Reference tests).
template <class T>
void box_blur_exact(const T* src, std::ptrdiff_t src_pitch, T* dst, std::ptrdiff_t dst_pitch, int w, int h, int c,
                    int rx, int ry) {
  const std::size_t samples = static_cast<std::size_t>(w) * c;
  std::vector<unsigned long long> rows(samples * h);
  for (int y = 0; y < h; ++y) {
    const T* in = reinterpret_cast<const T*>(reinterpret_cast<const unsigned char*>(src) + y * src_pitch);
    for (int ch = 0; ch < c; ++ch)
      clamped_window_sums(
          w, rx, [&](int x) -> unsigned long long { return in[x * c + ch]; },
          [&](int x, unsigned long long sum) { rows[y * samples + x * c + ch] = sum; });
  }
  const unsigned long long n = static_cast<unsigned long long>(2 * rx + 1) * (2 * ry + 1);
  for (std::size_t s = 0; s < samples; ++s)
    clamped_window_sums(
        h, ry, [&](int y) { return rows[y * samples + s]; },
        [&](int y, unsigned long long sum) {
          // To nearest: n is odd, so sum / n is never k + 1/2.
          reinterpret_cast<T*>(reinterpret_cast<unsigned char*>(dst) + y * dst_pitch)[s] =
              static_cast<T>((2 * sum + n) / (2 * n));
        });
}

}  // namespace oracle

// ---------------------------------------------------------------------------
// Random test data with replayable seeds. A test takes its seeds from
// fresh_seed(): the n-th seed a test draws is a hash of the run's base seed,
// the test's full name and n, so a test's data do not depend on which tests
// ran before it, and rerunning one test alone (--gtest_filter) draws the same
// data. The base seed is random per run, or STREAMBLUR_TEST_SEED. A failed
// test that drew seeds prints the line that replays it:
//   [   SEED   ] Suite.Test/case drew random data: rerun with STREAMBLUR_TEST_SEED=1234 --gtest_filter=Suite.Test/case
// ---------------------------------------------------------------------------
class TestSeeds {
 public:
  explicit TestSeeds(unsigned base) : base_(base) {}
  // The run's seeds: STREAMBLUR_TEST_SEED, else random. A value that is not a
  // number ends the program (exit 2) rather than run with another seed.
  static TestSeeds& instance() {
    static TestSeeds seeds = [] {
      const char* env = std::getenv("STREAMBLUR_TEST_SEED");
      unsigned base = 0;
      const std::string bad = parse(env, base);
      if (!bad.empty()) {
        std::fprintf(stderr, "%s\n", bad.c_str());
        std::exit(2);
      }
      return TestSeeds(env && *env ? base : std::random_device{}());
    }();
    return seeds;
  }
  // "" for a valid STREAMBLUR_TEST_SEED (or none), else why it is not valid.
  static std::string parse(const char* text, unsigned& out) {
    if (!text || !*text) return "";
    char* end = nullptr;
    errno = 0;
    const unsigned long long v = std::strtoull(text, &end, 10);
    if (*text == '-' || end == text || *end != '\0' || errno == ERANGE || v > 0xffffffffull)
      return std::string("STREAMBLUR_TEST_SEED must be a whole number from 0 to 4294967295, got '") + text + "'";
    out = static_cast<unsigned>(v);
    return "";
  }
  unsigned base() const { return base_; }
  // Called as each test starts (by the listener below).
  void start(const std::string& full_test_name) {
    name_hash_ = 1469598103934665603ull;  // FNV-1a
    for (unsigned char c : full_test_name) name_hash_ = (name_hash_ ^ c) * 1099511628211ull;
    draws_ = 0;
  }
  int draws() const { return draws_; }
  unsigned next() {
    ++draws_;
    return static_cast<unsigned>(mix(mix(base_) ^ mix(name_hash_ + static_cast<uint64_t>(draws_))));
  }

 private:
  static uint64_t mix(uint64_t x) {  // splitmix64's finaliser
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
  }
  unsigned base_ = 0;
  uint64_t name_hash_ = 0;
  int draws_ = 0;
};

// The next seed of the running test (see TestSeeds).
inline unsigned fresh_seed() { return TestSeeds::instance().next(); }

inline std::string full_test_name(const ::testing::TestInfo& t) {
  return std::string(t.test_suite_name()) + "." + t.name();
}

// Resets the draws at each test's start; after a failed test that drew seeds,
// prints how to replay it.
class SeedListener : public ::testing::EmptyTestEventListener {
  void OnTestStart(const ::testing::TestInfo& t) override { TestSeeds::instance().start(full_test_name(t)); }
  void OnTestEnd(const ::testing::TestInfo& t) override {
    const TestSeeds& s = TestSeeds::instance();
    if (t.result()->Failed() && s.draws() > 0)
      std::printf("[   SEED   ] %s drew random data: rerun with STREAMBLUR_TEST_SEED=%u --gtest_filter=%s\n",
                  full_test_name(t).c_str(), s.base(), full_test_name(t).c_str());
  }
};
inline const bool seed_listener_installed = [] {
  ::testing::UnitTest::GetInstance()->listeners().Append(new SeedListener);  // gtest owns it
  return true;
}();

// ---------------------------------------------------------------------------
// GPU tests: they skip without a CUDA device, unless STREAMBLUR_REQUIRE_GPU=1
// (the GPU machine sets it), where a missing device fails them instead, so a
// GPU run cannot go green by skipping. Every CUDA skip goes through
// SBTEST_SKIP_WITHOUT_GPU.
// ---------------------------------------------------------------------------
inline bool gpu_required() {
  const char* e = std::getenv("STREAMBLUR_REQUIRE_GPU");
  return e && *e && std::string(e) != "0";
}

}  // namespace sbtest

// Skips (or, with STREAMBLUR_REQUIRE_GPU=1, fails) the current test when there
// is no CUDA device, or when this build has no CUDA backend (STREAMBLUR_HAVE_CUDA
// 0). A driver error other than "no device" makes device_count() throw,
// which fails the test.
#if STREAMBLUR_HAVE_CUDA
#if __has_include("streamblur/kernels/cuda_check.hpp")  // (test programs that link no kernels use no GPU skip)
#include "streamblur/kernels/cuda_check.hpp"
#endif
#define SBTEST_CUDA_DEVICES() ::streamblur::cuda::device_count()
#define SBTEST_NO_GPU_REASON "no CUDA device here; runs on the GPU machine"
#else
#define SBTEST_CUDA_DEVICES() 0
#define SBTEST_NO_GPU_REASON "this build has no CUDA backend"
#endif
// What the library says where CUDA cannot be used: no device here, or (a
// build without the CUDA backend) no backend at all.
inline constexpr const char* kNoDeviceWords = STREAMBLUR_HAVE_CUDA ? "no CUDA device" : "built without the CUDA backend";
#define SBTEST_SKIP_WITHOUT_GPU()                                                                   \
  do {                                                                                              \
    if (SBTEST_CUDA_DEVICES() == 0) {                                                               \
      if (::sbtest::gpu_required()) GTEST_FAIL() << "STREAMBLUR_REQUIRE_GPU is set but " SBTEST_NO_GPU_REASON; \
      GTEST_SKIP() << SBTEST_NO_GPU_REASON " (STREAMBLUR_REQUIRE_GPU=1 makes this a failure)";     \
    }                                                                                               \
  } while (0)

#ifndef SBTEST_NO_FFMPEG

extern "C" {
#include <libavformat/avformat.h>
#include <libavutil/imgutils.h>
}

#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <random>

#include "streamblur/io/av_error.hpp"
#include "streamblur/io/av_ptr.hpp"
#include "streamblur/io/reader.hpp"

namespace sbtest {

// A fresh folder per test, removed at the end.
class TempDir {
 public:
  explicit TempDir(const std::string& prefix = "streamblur_test") {
    static std::atomic<int> counter{0};
    std::random_device rd;
    path_ = std::filesystem::temp_directory_path() /
            (prefix + "_" + std::to_string(::getpid()) + "_" + std::to_string(counter++) + "_" + std::to_string(rd()));
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  std::string file(const std::string& name) const { return (path_ / name).string(); }
  const std::filesystem::path& path() const { return path_; }
  // Names of the files in the folder, sorted.
  std::vector<std::string> listing() const {
    std::vector<std::string> v;
    for (const auto& e : std::filesystem::directory_iterator(path_)) v.push_back(e.path().filename().string());
    std::sort(v.begin(), v.end());
    return v;
  }

 private:
  std::filesystem::path path_;
};

inline std::string bytes_of(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

inline bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// The exception message of `fn`, or "" when nothing was thrown.
template <class Fn>
std::string error_of(Fn&& fn) {
  try {
    fn();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

// An mkv with one pcm_s16le audio stream and no video, written packet by packet.
inline void write_audio_only_mkv(const std::string& path) {
  AVFormatContext* raw = nullptr;
  AV_CHECK(avformat_alloc_output_context2(&raw, nullptr, nullptr, path.c_str()));
  const streamblur::io::AVOutputFormatContextPtr owner(raw);
  AVFormatContext* oc = owner.get();
  AVStream* st = avformat_new_stream(oc, nullptr);
  st->codecpar->codec_type = AVMEDIA_TYPE_AUDIO;
  st->codecpar->codec_id = AV_CODEC_ID_PCM_S16LE;
  st->codecpar->sample_rate = 48000;
  av_channel_layout_default(&st->codecpar->ch_layout, 2);
  st->codecpar->format = AV_SAMPLE_FMT_S16;
  st->codecpar->bits_per_coded_sample = 16;
  st->codecpar->block_align = 4;
  st->time_base = AVRational{1, 48000};
  AV_CHECK(avio_open(&oc->pb, path.c_str(), AVIO_FLAG_WRITE));
  AV_CHECK(avformat_write_header(oc, nullptr));
  streamblur::io::AVPacketPtr pkt = streamblur::io::make_packet();
  for (int i = 0; i < 10; ++i) {
    AV_CHECK(av_new_packet(pkt.get(), 1024 * 4));
    std::memset(pkt->data, i, pkt->size);
    pkt->pts = pkt->dts = av_rescale_q(i * 1024, AVRational{1, 48000}, st->time_base);
    pkt->duration = av_rescale_q(1024, AVRational{1, 48000}, st->time_base);
    pkt->stream_index = 0;
    AV_CHECK(av_interleaved_write_frame(oc, pkt.get()));
  }
  AV_CHECK(av_write_trailer(oc));
  AV_CHECK(avio_closep(&oc->pb));
}

// Reads every frame and every passthrough packet (in demux order) of `reader`.
inline void read_everything(streamblur::io::MediaReader& reader, std::vector<streamblur::io::AVFramePtr>& frames,
                            std::vector<streamblur::io::AVPacketPtr>& packets) {
  streamblur::io::DecodedFrame f;
  while (reader.read(f)) {
    frames.push_back(std::move(f.frame));
    for (auto& p : f.passthrough) packets.push_back(std::move(p));
  }
  for (auto& p : reader.take_remaining_passthrough()) packets.push_back(std::move(p));
}

// The frames MediaReader decodes from `path` (with `options`: a span, ...):
// each one's pts and its planes packed into one string.
struct ReadFrames {
  std::vector<int64_t> pts;
  std::vector<std::string> bytes;
};

// A decoded frame's planes packed into one string.
inline std::string frame_bytes_of(const AVFrame& fr) {
  const auto fmt = static_cast<AVPixelFormat>(fr.format);
  const int size = av_image_get_buffer_size(fmt, fr.width, fr.height, 1);
  std::string buf(static_cast<std::size_t>(size), '\0');
  av_image_copy_to_buffer(reinterpret_cast<uint8_t*>(buf.data()), size, fr.data, fr.linesize, fmt, fr.width,
                          fr.height, 1);
  return buf;
}

inline ReadFrames read_frames(const std::string& path, const streamblur::io::ReaderOptions& options = {}) {
  streamblur::io::MediaReader r(path, options);
  ReadFrames v;
  streamblur::io::DecodedFrame f;
  while (r.read(f)) {
    v.pts.push_back(f.frame->pts);
    v.bytes.push_back(frame_bytes_of(*f.frame));
  }
  return v;
}

// Every decoded frame of `path`, its planes packed into one string each (for
// comparing two outputs frame for frame).
inline std::vector<std::string> frame_bytes(const std::string& path) { return read_frames(path).bytes; }

// FFmpeg's own chatter below errors (encoder statistics) is kept out of test
// output. An inline variable: initialised once per program, before any
// namespace-scope variable the including file defines after it (so a test
// file may lower the level further with its own initialiser).
inline const bool quiet_ffmpeg_log = [] {
  av_log_set_level(AV_LOG_ERROR);
  return true;
}();

// A file opened with FFmpeg alone, its best video stream, and an open decoder
// for that stream: a reference that shares nothing with MediaReader.
struct VideoDecoder {
  streamblur::io::AVInputFormatContextPtr fc;
  int stream = -1;
  streamblur::io::AVCodecContextPtr dec;
};

inline VideoDecoder open_video_decoder(const std::string& path) {
  VideoDecoder d;
  AVFormatContext* raw = nullptr;
  AV_CHECK(avformat_open_input(&raw, path.c_str(), nullptr, nullptr));
  d.fc.reset(raw);
  AV_CHECK(avformat_find_stream_info(d.fc.get(), nullptr));
  const AVCodec* codec = nullptr;
  d.stream = av_find_best_stream(d.fc.get(), AVMEDIA_TYPE_VIDEO, -1, -1, &codec, 0);
  AV_CHECK(d.stream);
  d.dec.reset(avcodec_alloc_context3(codec));
  AV_CHECK(avcodec_parameters_to_context(d.dec.get(), d.fc->streams[d.stream]->codecpar));
  d.dec->pkt_timebase = d.fc->streams[d.stream]->time_base;
  AV_CHECK(avcodec_open2(d.dec.get(), codec, nullptr));
  return d;
}

// Demuxes the whole file: each video packet goes through the decoder and every
// frame it gives to on_frame (then unreferenced); every other packet goes to
// on_other. The decoder is flushed at the end.
template <class OnFrame, class OnOther>
void decode_video(VideoDecoder& d, OnFrame&& on_frame, OnOther&& on_other) {
  streamblur::io::AVFramePtr frame = streamblur::io::make_frame();
  streamblur::io::AVPacketPtr pkt = streamblur::io::make_packet();
  auto drain = [&] {
    while (avcodec_receive_frame(d.dec.get(), frame.get()) == 0) {
      on_frame(*frame);
      av_frame_unref(frame.get());
    }
  };
  while (av_read_frame(d.fc.get(), pkt.get()) >= 0) {
    if (pkt->stream_index == d.stream) {
      AV_CHECK(avcodec_send_packet(d.dec.get(), pkt.get()));
      drain();
    } else {
      on_other(*pkt);
    }
    av_packet_unref(pkt.get());
  }
  AV_CHECK(avcodec_send_packet(d.dec.get(), nullptr));
  drain();
}

}  // namespace sbtest

#endif  // SBTEST_NO_FFMPEG

// The message is not empty, is one line, and holds every part.
#define EXPECT_ONE_LINE_CONTAINS(msg, ...)                                                   \
  do {                                                                                      \
    const std::string m_ = (msg);                                                           \
    EXPECT_FALSE(m_.empty()) << "nothing was thrown";                                       \
    EXPECT_EQ(m_.find('\n'), std::string::npos) << m_;                                      \
    for (const char* part : {__VA_ARGS__})                                                  \
      EXPECT_NE(m_.find(part), std::string::npos) << "'" << part << "' not in: " << m_;     \
  } while (0)
