// One span of a segmented run (pipeline/detail/span_run.hpp): the spans of a
// plan, each run through its own pipeline, give the whole run's frames in
// order, numbered globally (regions=FILE keyed by frame index sees the same
// index on either side of a span border), and a span's output file holds
// its video stream alone with the input's timestamps.
#include <gtest/gtest.h>

#include <fstream>
#include <limits>
#include <string>
#include <vector>

extern "C" {
#include <libavformat/avformat.h>
#include <libavutil/mathematics.h>
}

#include "streamblur/io/keyframe_index.hpp"
#include "streamblur/pipeline/detail/span_run.hpp"
#include "streamblur/pipeline/pipeline.hpp"
#include "streamblur/testing/synthetic_clip.hpp"
#include "test_support.hpp"

namespace {
using namespace streamblur;
using sbtest::contains;
using sbtest::error_of;

// What a frame sink saw: index, pts and every plane's bytes, frame by frame.
struct Sunk {
  std::vector<int64_t> index, pts;
  std::vector<std::string> bytes;
};

PipelineOptions cpu_run(const std::string& input, const std::string& filters, Sunk& sunk) {
  PipelineOptions o;
  o.input = input;
  o.filters = filters;
  o.backend = BackendChoice::Cpu;
  o.note = [](const std::string&) {};
  o.frame_sink = [&sunk](const FrameView& v) {
    sunk.index.push_back(v.index);
    sunk.pts.push_back(v.pts);
    std::string b;
    for (int p = 0; p < v.layout.num_planes; ++p) {
      const AnyPlane& pl = v.planes[p];
      const std::size_t row = static_cast<std::size_t>(pl.width) * pl.channels * pl.bytes_per_sample;
      for (int y = 0; y < pl.height; ++y) b.append(static_cast<const char*>(pl.data) + y * pl.pitch, row);
    }
    sunk.bytes.push_back(std::move(b));
  };
  return o;
}

detail::SpanRun span_run(const io::SpanPlan& s) {
  detail::SpanRun r;
  if (s.start_pts != std::numeric_limits<int64_t>::min()) r.from_pts = s.start_pts;
  if (s.end_pts != std::numeric_limits<int64_t>::max()) r.until_pts = s.end_pts;
  r.first_index = s.first_frame;
  return r;
}

std::string write_clip(const sbtest::TempDir& dir, const std::string& name, const std::string& codec,
                       const std::string& options, bool audio = false) {
  io::SyntheticClipSpec spec;
  spec.codec = codec;
  const bool x264 = codec == "libx264";
  spec.width = x264 ? 98 : 97;
  spec.height = x264 ? 64 : 63;
  spec.frames = 50;
  if (x264) spec.preset = "ultrafast";
  spec.noise = true;
  spec.video_options = options;
  spec.audio = audio;
  spec.audio_codec = "pcm_s16le";
  const std::string path = dir.file(name);
  io::write_synthetic_clip(path, spec);
  return path;
}

// A box keyed at frames 5 and 40: it moves in between, so every frame of
// the clip is blurred in its own place, and a span numbering its frames
// from 0 would blur them elsewhere.
std::string write_regions(const sbtest::TempDir& dir) {
  const std::string path = dir.file("boxes.jsonl");
  std::ofstream(path) << "{\"frame\": 5, \"boxes\": [[2, 3, 20, 16]]}\n"
                      << "{\"frame\": 40, \"boxes\": [[60, 40, 30, 20]]}\n";
  return path;
}

struct SpanCase {
  const char* name;
  const char* codec;
  const char* options;
};

TEST(SpanRun, SpansRunOnTheirOwnGiveTheWholeRunsFramesNumberedGlobally) {
  sbtest::TempDir dir;
  const std::string chain = "boxblur=radius=2:regions=" + write_regions(dir) + ",gblur=sigma=1.5";
  const SpanCase cases[] = {
      {"g10.mkv", "ffv1", "g=10"},
      {"bframes.ts", "mpeg4", "g=12:bf=2"},
      {"open.mp4", "libx264",
       "x264-params=keyint=12\\:min-keyint=12\\:scenecut=0\\:bframes=3\\:b-adapt=0\\:open-gop=1"},
  };
  for (const SpanCase& c : cases) {
    SCOPED_TRACE(c.name);
    const std::string path = write_clip(dir, c.name, c.codec, c.options);
    Sunk whole, joined;
    run_pipeline(cpu_run(path, chain, whole));
    ASSERT_EQ(whole.index.size(), 50u);
    const io::SpanPlanning plan = io::plan_spans(io::scan_video_packets(path), 3);
    ASSERT_EQ(plan.spans.size(), 3u) << plan.note;
    for (const io::SpanPlan& s : plan.spans) {
      const std::size_t before = joined.index.size();
      const RunStats st = detail::run_span(cpu_run(path, chain, joined), span_run(s));
      EXPECT_EQ(st.frames, s.frames) << "span at " << s.start_pts;
      EXPECT_EQ(static_cast<int64_t>(joined.index.size() - before), s.frames);
    }
    EXPECT_EQ(joined.index, whole.index);
    EXPECT_EQ(joined.pts, whole.pts);
    ASSERT_EQ(joined.bytes.size(), whole.bytes.size());
    for (std::size_t i = 0; i < whole.bytes.size(); ++i) EXPECT_TRUE(joined.bytes[i] == whole.bytes[i]) << "frame " << i;
  }
}

// A span's output: the encoded video alone (the audio is the segmented
// run's to copy once), its frames the span's, at the input's pts.
TEST(SpanRun, ASpansOutputHoldsItsVideoAloneAtTheInputsTimestamps) {
  sbtest::TempDir dir;
  const std::string path = write_clip(dir, "av.mkv", "ffv1", "g=10", /*audio=*/true);
  const io::SpanPlanning plan = io::plan_spans(io::scan_video_packets(path), 3);
  ASSERT_EQ(plan.spans.size(), 3u) << plan.note;
  const io::SpanPlan& middle = plan.spans[1];
  Sunk unused;
  PipelineOptions o = cpu_run(path, "gblur=sigma=1", unused);
  o.frame_sink = nullptr;
  o.output = dir.file("span1.mkv");
  o.encoder.codec = "ffv1";
  detail::run_span(o, span_run(middle));

  // Its packets, not its frames: what the join reads.
  const io::VideoPacketIndex in = io::scan_video_packets(path), got = io::scan_video_packets(o.output);
  ASSERT_EQ(static_cast<int64_t>(got.frame_pts.size()), middle.frames);
  std::vector<int64_t> want;
  for (const int64_t p : in.frame_pts)
    if (p >= middle.start_pts && p < middle.end_pts) want.push_back(p);
  std::vector<int64_t> back;  // the span's pts in the input's time base
  for (const int64_t p : got.frame_pts) back.push_back(av_rescale_q(p, got.time_base, in.time_base));
  EXPECT_EQ(back, want);
  AVFormatContext* fmt = nullptr;
  ASSERT_EQ(avformat_open_input(&fmt, o.output.c_str(), nullptr, nullptr), 0);
  EXPECT_EQ(fmt->nb_streams, 1u);
  EXPECT_EQ(fmt->streams[0]->codecpar->codec_type, AVMEDIA_TYPE_VIDEO);
  avformat_close_input(&fmt);
}

TEST(SpanRun, TrimmingIsThePlansNotTheSpans) {
  sbtest::TempDir dir;
  const std::string path = write_clip(dir, "g10.mkv", "ffv1", "g=10");
  Sunk unused;
  PipelineOptions o = cpu_run(path, "", unused);
  o.start_seconds = 0.5;
  const std::string e = error_of([&] { detail::run_span(o, {}); });
  EXPECT_TRUE(contains(e, "takes its frames from the span plan")) << e;
}

TEST(SpanRun, ASpanPastTheEndSaysWhichPtsItAskedFor) {
  sbtest::TempDir dir;
  const std::string path = write_clip(dir, "g10.mkv", "ffv1", "g=10");
  Sunk unused;
  detail::SpanRun past;
  past.from_pts = 1'000'000;
  const std::string e = error_of([&] { detail::run_span(cpu_run(path, "", unused), past); });
  EXPECT_TRUE(contains(e, "no video frames") && contains(e, "pts from 1000000")) << e;
}

}  // namespace
