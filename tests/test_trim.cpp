// Trimming (PipelineOptions start_seconds / duration_seconds / max_frames, the
// CLI's -ss / -t / --frames): which frames come out, their pixels and times,
// and the copied audio cut to the same span. Clips are made at test time;
// outputs are read back with FFmpeg's API directly (not with io::MediaReader,
// whose span code is under test), and compared with an untrimmed run of the
// same pipeline, frame for frame, and with the input's own audio packets.
#include <gtest/gtest.h>

#include "test_support.hpp"

extern "C" {
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/imgutils.h>
#include <libavutil/log.h>
}

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "streamblur/pipeline/batch.hpp"
#include "streamblur/pipeline/pipeline.hpp"
#include "streamblur/testing/synthetic_clip.hpp"

namespace streamblur {
inline void PrintTo(Backend b, std::ostream* os) { *os << backend_name(b); }
}  // namespace streamblur

using namespace streamblur;
using namespace sbtest;

namespace {


// ---------------------------------------------------------------------------
// Reading a file back with FFmpeg alone
// ---------------------------------------------------------------------------

struct AudioPacket {
  double pts = 0, duration = 0;  // seconds
  std::string bytes;
};

struct Probed {
  double start_time = 0;                  // the container's start time (s)
  std::vector<double> video;              // decoded frames' times (best effort), presentation order
  std::vector<std::string> pixels;        // each frame's planes, packed
  std::vector<AudioPacket> audio;         // the first audio stream's packets, demux order
  std::vector<std::pair<double, double>> chapters;
};


Probed probe(const std::string& path) {
  Probed r;
  VideoDecoder vd = open_video_decoder(path);
  const AVFormatContext* fc = vd.fc.get();
  if (fc->start_time != AV_NOPTS_VALUE) r.start_time = fc->start_time / double(AV_TIME_BASE);
  for (unsigned i = 0; i < fc->nb_chapters; ++i) {
    const AVChapter* c = fc->chapters[i];
    r.chapters.emplace_back(c->start * av_q2d(c->time_base), c->end * av_q2d(c->time_base));
  }
  const int a = av_find_best_stream(vd.fc.get(), AVMEDIA_TYPE_AUDIO, -1, -1, nullptr, 0);
  const AVRational vtb = fc->streams[vd.stream]->time_base;
  auto on_frame = [&](const AVFrame& f) {
    r.video.push_back(f.best_effort_timestamp * av_q2d(vtb));
    const auto fmt = static_cast<AVPixelFormat>(f.format);
    std::string px(static_cast<size_t>(av_image_get_buffer_size(fmt, f.width, f.height, 1)), '\0');
    AV_CHECK(av_image_copy_to_buffer(reinterpret_cast<uint8_t*>(px.data()), static_cast<int>(px.size()), f.data,
                                     f.linesize, fmt, f.width, f.height, 1));
    r.pixels.push_back(std::move(px));
  };
  auto on_other = [&](const AVPacket& pkt) {
    if (pkt.stream_index != a || pkt.size <= 0) return;
    const AVRational atb = fc->streams[a]->time_base;
    r.audio.push_back({pkt.pts * av_q2d(atb), pkt.duration * av_q2d(atb),
                       std::string(reinterpret_cast<const char*>(pkt.data), static_cast<size_t>(pkt.size))});
  };
  decode_video(vd, on_frame, on_other);
  return r;
}

// ---------------------------------------------------------------------------
// Clips and runs
// ---------------------------------------------------------------------------

constexpr int kFps = 25;
constexpr int kFrames = 100;  // 4 s

// mp4: libx264 (one keyframe) + AAC; mkv: mpeg4 (a keyframe every 12 frames,
// so seeks land before the start) + PCM; ts: mpeg4 + AAC in MPEG-TS, whose
// demuxer seeks to any packet and whose start time is not 0; late_audio: the
// mkv with its audio stored half a second after the video of the same time,
// so the span's last audio packets are read after its video has ended.
struct Container {
  std::string name, ext, video_codec, audio_codec;
  bool late_audio = false;
};
void PrintTo(const Container& c, std::ostream* os) { *os << c.name; }
const Container kContainers[] = {{"mp4", "mp4", "libx264", "aac"},
                                 {"mkv", "mkv", "mpeg4", "pcm_s16le"},
                                 {"ts", "ts", "mpeg4", "aac"},
                                 {"late_audio", "mkv", "mpeg4", "pcm_s16le", true}};

// Copies `in` to `out` (Matroska) packet for packet, each audio packet stored
// after the video packets up to `lag` seconds past it.
void remux_with_late_audio(const std::string& in, const std::string& out, double lag) {
  AVFormatContext* raw = nullptr;
  AV_CHECK(avformat_open_input(&raw, in.c_str(), nullptr, nullptr));
  io::AVInputFormatContextPtr ic(raw);
  AV_CHECK(avformat_find_stream_info(ic.get(), nullptr));
  AVFormatContext* oc = nullptr;
  AV_CHECK(avformat_alloc_output_context2(&oc, nullptr, "matroska", out.c_str()));
  struct OutputFreer {
    void operator()(AVFormatContext* f) const noexcept {
      if (f->pb) avio_closep(&f->pb);
      avformat_free_context(f);
    }
  };
  std::unique_ptr<AVFormatContext, OutputFreer> owner(oc);
  for (unsigned i = 0; i < ic->nb_streams; ++i) {
    AVStream* st = avformat_new_stream(oc, nullptr);
    AV_CHECK(avcodec_parameters_copy(st->codecpar, ic->streams[i]->codecpar));
    st->codecpar->codec_tag = 0;
    st->time_base = ic->streams[i]->time_base;
  }
  std::vector<std::pair<double, io::AVPacketPtr>> packets;  // (storage key, packet)
  for (io::AVPacketPtr p = io::make_packet(); av_read_frame(ic.get(), p.get()) >= 0; p = io::make_packet()) {
    const AVStream* st = ic->streams[p->stream_index];
    const double t = p->dts * av_q2d(st->time_base);
    packets.emplace_back(st->codecpar->codec_type == AVMEDIA_TYPE_AUDIO ? t + lag : t, std::move(p));
  }
  std::stable_sort(packets.begin(), packets.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  AV_CHECK(avio_open(&oc->pb, out.c_str(), AVIO_FLAG_WRITE));
  AV_CHECK(avformat_write_header(oc, nullptr));
  for (auto& [key, p] : packets) {
    av_packet_rescale_ts(p.get(), ic->streams[p->stream_index]->time_base, oc->streams[p->stream_index]->time_base);
    p->pos = -1;
    AV_CHECK(av_write_frame(oc, p.get()));  // not interleaved: stored in this order
  }
  AV_CHECK(av_write_trailer(oc));
}

std::string make_clip(const TempDir& dir, const Container& c, int chapters = 0) {
  io::SyntheticClipSpec s;
  s.width = 64;
  s.height = 48;
  s.frames = kFrames;
  s.fps = kFps;
  s.codec = c.video_codec;
  if (c.video_codec == "libx264") s.preset = "ultrafast";
  s.audio = true;
  s.audio_codec = c.audio_codec;
  s.chapters = chapters;
  const std::string path = dir.file("in." + c.ext);
  if (!c.late_audio) {
    io::write_synthetic_clip(path, s);
    return path;
  }
  const std::string interleaved = dir.file("interleaved." + c.ext);
  io::write_synthetic_clip(interleaved, s);
  remux_with_late_audio(interleaved, path, 0.5);
  std::filesystem::remove(interleaved);
  return path;
}

// Lossless outputs, so trimmed frames must equal the untrimmed run's: ffv1,
// or libx264 at crf 0 for mp4 (its edit lists and AAC priming stay in play).
PipelineOptions options(const std::string& in, const std::string& out, Backend backend) {
  PipelineOptions o;
  o.input = in;
  o.output = out;
  o.filters = "boxblur=1";  // work for the CUDA backend (frames go through the device)
  o.backend = backend == Backend::Cuda ? BackendChoice::Cuda : BackendChoice::Cpu;
  o.encoder.codec = "ffv1";
  if (out.ends_with(".mp4")) {
    o.encoder.codec = "libx264";
    o.encoder.crf = 0;
    o.encoder.preset = "ultrafast";
  }
  o.note = [](const std::string&) {};
  return o;
}

// mp4 stays mp4; the others go to Matroska.
std::string output_name(const Container& c, const std::string& stem) {
  return stem + (c.ext == "mp4" ? ".mp4" : ".mkv");
}

struct SpanCase {
  std::string name;
  std::optional<double> start, duration;
  std::optional<int64_t> frames;
};

class TrimSpan : public ::testing::TestWithParam<std::tuple<Backend, Container>> {
 protected:
  void SetUp() override {
    if (std::get<0>(GetParam()) == Backend::Cuda) SBTEST_SKIP_WITHOUT_GPU();
  }
};

// For each span: the frames are exactly the untrimmed run's frames whose time
// lies in [start, end) (the first N with max_frames), pixel for pixel; their
// times are shifted back by the start (kept without one); the audio packets
// are exactly the input's whose pts lies in the span, same bytes, shifted
// alike, so the audio covers the video span to within one audio frame.
TEST_P(TrimSpan, FramesPixelsTimesAndAudioMatchTheSpan) {
  const auto [backend, container] = GetParam();
  TempDir dir;
  const std::string in = make_clip(dir, container);
  const Probed src = probe(in);
  ASSERT_EQ(src.video.size(), size_t(kFrames));
  ASSERT_FALSE(src.audio.empty());
  const std::string full_path = dir.file(output_name(container, "full"));
  run_pipeline(options(in, full_path, backend));
  const Probed full = probe(full_path);
  ASSERT_EQ(full.video.size(), size_t(kFrames));
  const double origin = src.start_time;  // -ss counts from here, as ffmpeg's does
  const double frame_s = 1.0 / kFps;
  const double tick = 0.0015;            // timestamps: 1 ms (Matroska) plus rounding

  const SpanCase cases[] = {
      {"ss 1 t 2", 1.0, 2.0, std::nullopt},
      {"ss 1.5 (between frames) frames 7", 1.5, std::nullopt, 7},
      {"ss 2.2 t 1 frames 40 (t ends first)", 2.2, 1.0, 40},
      {"ss 0.5 t 3 frames 10 (frames end first)", 0.5, 3.0, 10},
      {"t 0.9 only", std::nullopt, 0.9, std::nullopt},
      {"frames 5 only", std::nullopt, std::nullopt, 5},
      {"ss 3.9 (last frames, to the end)", 3.9, std::nullopt, std::nullopt},
  };
  for (const SpanCase& c : cases) {
    SCOPED_TRACE(c.name);
    const std::string out = dir.file(output_name(container, "out"));
    PipelineOptions o = options(in, out, backend);
    o.start_seconds = c.start;
    o.duration_seconds = c.duration;
    o.max_frames = c.frames;
    o.overwrite = true;
    RunStats st;
    ASSERT_NO_THROW(st = run_pipeline(o));

    // Expected, from the input's own clock. Without a start nothing is cut
    // at the front (AAC's priming packet, before 0 in mp4, stays).
    const double start = origin + c.start.value_or(0);
    const double lower = c.start ? start : -INFINITY;
    double end = c.duration ? start + *c.duration : INFINITY;
    std::vector<size_t> want;
    for (size_t i = 0; i < src.video.size(); ++i)
      if (src.video[i] >= lower - 1e-9 && src.video[i] < end - 1e-9) want.push_back(i);
    if (c.frames && want.size() > size_t(*c.frames)) {
      end = src.video[want[size_t(*c.frames)]];  // where frame N+1 would begin
      want.resize(size_t(*c.frames));
    }
    // Without a start, times are kept as an untrimmed run keeps them (which
    // may move them all when a packet lies before 0, as mp4's AAC priming does).
    const double shift = c.start ? start : src.video.front() - full.video.front();

    const Probed got = probe(out);
    ASSERT_FALSE(want.empty());
    ASSERT_EQ(got.video.size(), want.size());
    EXPECT_EQ(st.frames, static_cast<int64_t>(want.size()));
    for (size_t k = 0; k < want.size(); ++k) {
      EXPECT_NEAR(got.video[k], src.video[want[k]] - shift, tick) << "frame " << k;
      EXPECT_TRUE(got.pixels[k] == full.pixels[want[k]]) << "frame " << k << " is not input frame " << want[k];
    }

    std::vector<const AudioPacket*> kept;
    for (const AudioPacket& p : src.audio)
      if (p.pts >= lower - 1e-9 && p.pts < end - 1e-9) kept.push_back(&p);
    ASSERT_FALSE(kept.empty());
    ASSERT_EQ(got.audio.size(), kept.size());
    for (size_t k = 0; k < kept.size(); ++k) {
      // The same bytes (Matroska drops the ADTS header of MPEG-TS's AAC).
      EXPECT_TRUE(!got.audio[k].bytes.empty() && kept[k]->bytes.ends_with(got.audio[k].bytes))
          << "audio packet " << k << " is not the input's";
      EXPECT_NEAR(got.audio[k].pts, kept[k]->pts - shift, tick) << "audio packet " << k;
    }
    // Where the span cuts, audio and video both begin within one frame of its
    // start and end within one frame of its end.
    const double audio_frame = kept.front()->duration;
    ASSERT_GT(audio_frame, 0);
    if (c.start) {
      EXPECT_GE(got.audio.front().pts, -tick);
      EXPECT_LT(got.audio.front().pts, audio_frame);
      EXPECT_GE(got.video.front(), -tick);
      EXPECT_LT(got.video.front(), frame_s);
    }
    if (std::isfinite(end)) {
      const double span_end = end - shift;
      EXPECT_LT(got.audio.back().pts, span_end);
      EXPECT_GE(got.audio.back().pts + audio_frame, span_end - tick);
      EXPECT_LT(got.video.back(), span_end);
      EXPECT_GE(got.video.back() + frame_s, span_end - tick);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, TrimSpan,
                         ::testing::Combine(::testing::Values(Backend::Cpu, Backend::Cuda),
                                            ::testing::ValuesIn(kContainers)),
                         [](const auto& info) {
                           return std::string(backend_name(std::get<0>(info.param))) + "_" + std::get<1>(info.param).name;
                         });

// ---------------------------------------------------------------------------
// Chapters move with the span; batch takes the same options
// ---------------------------------------------------------------------------

TEST(TrimChapters, ShiftedClippedAndThoseOutsideLeftOut) {
  TempDir dir;
  const std::string in = make_clip(dir, kContainers[1], 4);  // mkv, chapters [0,1) [1,2) [2,3) [3,4)
  const std::string out = dir.file("out.mkv");
  PipelineOptions o = options(in, out, Backend::Cpu);
  o.start_seconds = 1.5;
  o.duration_seconds = 1.0;  // [1.5, 2.5): the second chapter's end, the third's start
  run_pipeline(o);
  const Probed got = probe(out);
  ASSERT_EQ(got.chapters.size(), 2u);
  EXPECT_NEAR(got.chapters[0].first, 0.0, 1e-3);
  EXPECT_NEAR(got.chapters[0].second, 0.5, 1e-3);
  EXPECT_NEAR(got.chapters[1].first, 0.5, 1e-3);
  EXPECT_NEAR(got.chapters[1].second, 1.0, 1e-3);
}

TEST(TrimBatch, EveryFileIsTrimmedAndBadValuesFailBeforeAnyFile) {
  TempDir dir;
  BatchOptions b;
  b.base = options("", "", Backend::Cpu);
  b.base.start_seconds = 1.0;
  b.base.max_frames = 3;
  for (const Container& c : {kContainers[0], kContainers[1]}) {
    const std::string in = make_clip(dir, c);
    b.jobs.push_back({in, dir.file("out_" + c.name + ".mkv")});
  }
  b.jobs_per_device = 2;
  const std::vector<BatchResult> results = run_batch(b);
  for (const BatchResult& r : results) {
    ASSERT_TRUE(r.ok) << r.error;
    const Probed got = probe(r.job.output);
    EXPECT_EQ(got.video.size(), 3u) << r.job.output;
    EXPECT_NEAR(got.video.front(), 0.0, 0.0015) << r.job.output;
  }
  b.base.max_frames = 0;
  for (auto& j : b.jobs) j.output += ".again.mkv";
  EXPECT_ONE_LINE_CONTAINS(error_of([&] { run_batch(b); }), "frame limit", "at least 1");
  for (const auto& j : b.jobs) EXPECT_FALSE(std::filesystem::exists(j.output));
}

// ---------------------------------------------------------------------------
// Errors: one clear line, nothing written
// ---------------------------------------------------------------------------

TEST(TrimErrors, AnEmptySpanIsAnErrorAndWritesNothing) {
  TempDir dir;
  const std::string in = make_clip(dir, kContainers[1]);
  const std::vector<std::string> before = dir.listing();
  const std::string out = dir.file("out.mkv");
  PipelineOptions o = options(in, out, Backend::Cpu);
  o.start_seconds = 4.5;  // past the end (4 s)
  EXPECT_ONE_LINE_CONTAINS(error_of([&] { run_pipeline(o); }), "no video frames in the requested span", "start 4.5 s",
                           "past its end", "in.mkv");
  EXPECT_EQ(dir.listing(), before);
  o.start_seconds = 1.01;  // between frames 1.00 and 1.04
  o.duration_seconds = 0.02;
  EXPECT_ONE_LINE_CONTAINS(error_of([&] { run_pipeline(o); }), "no video frames in the requested span",
                           "duration 0.02 s");
  EXPECT_EQ(dir.listing(), before);
}

TEST(TrimErrors, BadValuesAreInvalidArgumentsBeforeAnythingIsOpened) {
  TempDir dir;
  const std::string out = dir.file("out.mkv");
  auto attempt = [&](std::optional<double> start, std::optional<double> duration, std::optional<int64_t> frames) {
    PipelineOptions o = options(dir.file("missing.mkv"), out, Backend::Cpu);  // never opened
    o.start_seconds = start;
    o.duration_seconds = duration;
    o.max_frames = frames;
    try {
      run_pipeline(o);
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    } catch (const std::exception& e) {
      return std::string("not invalid_argument: ") + e.what();
    }
    return std::string();
  };
  EXPECT_ONE_LINE_CONTAINS(attempt(-1.0, std::nullopt, std::nullopt), "start time", "-1");
  EXPECT_ONE_LINE_CONTAINS(attempt(NAN, std::nullopt, std::nullopt), "start time");
  EXPECT_ONE_LINE_CONTAINS(attempt(std::nullopt, 0.0, std::nullopt), "duration", "more than 0");
  EXPECT_ONE_LINE_CONTAINS(attempt(std::nullopt, -2.0, std::nullopt), "duration");
  EXPECT_ONE_LINE_CONTAINS(attempt(std::nullopt, std::nullopt, 0), "frame limit", "at least 1");
  EXPECT_ONE_LINE_CONTAINS(attempt(std::nullopt, std::nullopt, -5), "frame limit");
  EXPECT_TRUE(dir.listing().empty());
}

TEST(TrimParseTime, FfmpegTimeSyntax) {
  EXPECT_DOUBLE_EQ(parse_time("12.5"), 12.5);
  EXPECT_DOUBLE_EQ(parse_time("90"), 90);
  EXPECT_DOUBLE_EQ(parse_time("1:30"), 90);
  EXPECT_DOUBLE_EQ(parse_time("01:02:03.5"), 3723.5);
  EXPECT_DOUBLE_EQ(parse_time("1500ms"), 1.5);
  EXPECT_DOUBLE_EQ(parse_time("0"), 0);
  for (const char* bad : {"", "abc", "1e3", "1:60", "12.5x", "inf"})
    EXPECT_ONE_LINE_CONTAINS(error_of([&] { parse_time(bad); }), "invalid time");
  EXPECT_ONE_LINE_CONTAINS(error_of([&] { parse_time("-1"); }), "invalid time '-1'", "negative");
  EXPECT_THROW(parse_time("-0:30"), std::invalid_argument);
}

}  // namespace
