// One span of a segmented run (pipeline/detail/span_run.hpp): the spans of a
// plan, each run through its own pipeline, give the whole run's frames in
// order, numbered globally (regions=FILE keyed by frame index sees the same
// index on either side of a span border), and a span's output file holds
// its video stream alone with the input's timestamps.
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <limits>
#include <optional>
#include <string>
#include <thread>
#include <vector>

extern "C" {
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/mathematics.h>
}

#include "streamblur/io/keyframe_index.hpp"
#include "streamblur/pipeline/detail/segment_tasks.hpp"
#include "streamblur/pipeline/detail/span_run.hpp"
#include "streamblur/pipeline/pipeline.hpp"
#include "streamblur/testing/psnr.hpp"
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

// The case's clip, made here; where the library's FFmpeg has no such encoder
// (the GPU machine's has no libx265), the one tests/make_gpu_media.py
// prepared in $STREAMBLUR_TEST_MEDIA_DIR under the same name, without audio.
std::string write_clip(const sbtest::TempDir& dir, const std::string& name, const std::string& codec,
                       const std::string& options, bool audio = false) {
  if (!avcodec_find_encoder_by_name(codec.c_str())) {
    const char* media = std::getenv("STREAMBLUR_TEST_MEDIA_DIR");
    const std::string prepared = media ? std::string(media) + "/" + name : "";
    if (prepared.empty() || !std::filesystem::exists(prepared) || audio)
      ADD_FAILURE() << "no " << codec << " encoder here and no prepared " << name << " in $STREAMBLUR_TEST_MEDIA_DIR";
    return prepared;
  }
  io::SyntheticClipSpec spec;
  spec.codec = codec;
  const bool x264 = codec == "libx264", x265 = codec == "libx265";
  spec.width = x264 ? 98 : x265 ? 160 : 97;  // HEVC: NVDEC decodes from 144x144
  spec.height = x264 ? 64 : x265 ? 144 : 63;
  spec.frames = 50;
  if (x264) spec.preset = "ultrafast";
  spec.noise = true;
  spec.video_options = options;
  spec.audio = audio;
  spec.audio_codec = name.ends_with(".ts") ? "mp2" : "pcm_s16le";  // MPEG-TS holds no PCM as audio
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
// A keyframe every 10 frames (ffv1 in mkv), B-frames across GOPs (mpeg4 in
// MPEG-TS), open GOPs whose leading pictures refer back (x264 in mp4, and
// HEVC CRA pictures with RASL ones after them in mkv). The mkv and ts clips
// have an audio track (has_audio).
const SpanCase kSpanCases[] = {
    {"g10.mkv", "ffv1", "g=10"},
    {"bframes.ts", "mpeg4", "g=12:bf=2"},
    {"open.mp4", "libx264",
     "x264-params=keyint=12\\:min-keyint=12\\:scenecut=0\\:bframes=3\\:b-adapt=0\\:open-gop=1"},
    {"cra.mkv", "libx265",
     "x265-params=keyint=12\\:min-keyint=12\\:scenecut=0\\:bframes=3\\:open-gop=1\\:log-level=error"},
};
bool has_audio(const SpanCase& c) { return c.codec == std::string("ffv1") || c.codec == std::string("mpeg4"); }

TEST(SpanRun, SpansRunOnTheirOwnGiveTheWholeRunsFramesNumberedGlobally) {
  sbtest::TempDir dir;
  const std::string chain = "boxblur=radius=2:regions=" + write_regions(dir) + ",gblur=sigma=1.5";
  for (const SpanCase& c : kSpanCases) {
    SCOPED_TRACE(c.name);
    const std::string path = write_clip(dir, c.name, c.codec, c.options);
    Sunk whole, joined;
    run_pipeline(cpu_run(path, chain, whole));
    ASSERT_EQ(whole.index.size(), 50u);
    const io::VideoPacketIndex index = io::scan_video_packets(path);
    if (c.codec != std::string("ffv1"))  // the clips are what they say: GOPs that lead into the one before
      EXPECT_TRUE(std::any_of(index.keyframes.begin(), index.keyframes.end(),
                              [](const io::Keyframe& k) { return k.has_leading; }));
    const io::SpanPlanning plan = io::plan_spans(index, 3);
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



// ---- The segmented run (PipelineOptions::segments)

namespace segments {

// Every packet of the output's streams other than the video: data and pts.
std::vector<std::pair<int64_t, std::string>> audio_packets(const std::string& path) {
  std::vector<std::pair<int64_t, std::string>> out;
  AVFormatContext* fmt = nullptr;
  if (avformat_open_input(&fmt, path.c_str(), nullptr, nullptr) < 0) return out;
  avformat_find_stream_info(fmt, nullptr);
  AVPacket* p = av_packet_alloc();
  while (av_read_frame(fmt, p) >= 0) {
    if (fmt->streams[p->stream_index]->codecpar->codec_type != AVMEDIA_TYPE_VIDEO)
      out.emplace_back(p->pts, std::string(reinterpret_cast<const char*>(p->data), static_cast<std::size_t>(p->size)));
    av_packet_unref(p);
  }
  av_packet_free(&p);
  avformat_close_input(&fmt);
  return out;
}

PipelineOptions transcode(const std::string& in, const std::string& out, int segments, std::vector<std::string>* notes) {
  PipelineOptions o;
  o.input = in;
  o.output = out;
  o.filters = "gblur=sigma=1.5,boxblur=radius=2";
  o.backend = BackendChoice::Cpu;
  o.encoder.codec = "ffv1";
  o.segments = segments;
  o.note = [notes](const std::string& s) {
    if (notes) notes->push_back(s);
  };
  return o;
}

std::size_t files_in(const std::string& dir) {
  std::size_t n = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(dir)) ++n;
  return n;
}

// Bit-identical frames, the same pts and the same audio packets as the
// sequential run, from mkv, mp4 and MPEG-TS inputs (ffv1 out, so every
// decoded frame can be compared).
void expect_lossless_segments_match(Backend backend) {
  sbtest::TempDir dir;
  for (const SpanCase& c : kSpanCases) {
    SCOPED_TRACE(c.name);
    const std::string in = write_clip(dir, c.name, c.codec, c.options, /*audio=*/has_audio(c));
    const std::string one = dir.file(std::string("one-") + c.name + ".mkv");
    const std::string three = dir.file(std::string("three-") + c.name + ".mkv");
    PipelineOptions o1 = transcode(in, one, 1, nullptr);
    std::vector<std::string> notes;
    PipelineOptions o3 = transcode(in, three, 3, &notes);
    o1.backend = o3.backend = backend == Backend::Cuda ? BackendChoice::Cuda : BackendChoice::Cpu;
    run_pipeline(o1);
    const RunStats st = run_pipeline(o3);
    EXPECT_EQ(st.segments, 3);
    EXPECT_EQ(st.frames, 50);
    for (const std::string& n : notes) EXPECT_FALSE(contains(n, "segments:")) << n;  // no fallback
    const sbtest::ReadFrames a = sbtest::read_frames(one), b = sbtest::read_frames(three);
    EXPECT_EQ(a.pts.size(), 50u);
    EXPECT_EQ(b.pts, a.pts);
    ASSERT_EQ(b.bytes.size(), a.bytes.size());
    for (std::size_t i = 0; i < a.bytes.size(); ++i) EXPECT_TRUE(b.bytes[i] == a.bytes[i]) << "frame " << i;
    EXPECT_EQ(audio_packets(three), audio_packets(one));
  }
}

TEST(SegmentedRun, LosslessOutputIsTheSequentialRunsFrameForFrame) { expect_lossless_segments_match(Backend::Cpu); }

// The same on the CUDA backend (NVDEC for the mpeg4 and x264 inputs).
TEST(SegmentedRun, CudaLosslessOutputIsTheSequentialRunsFrameForFrame) {
  SBTEST_SKIP_WITHOUT_GPU();
  expect_lossless_segments_match(Backend::Cuda);
}

// libx264 spans (each its own IDR) joined into an mp4: the sequential run's
// frame count and pts; decode times never go back across a border.
TEST(SegmentedRun, X264SpansJoinWithTheSequentialTimestamps) {
  sbtest::TempDir dir;
  const std::string in = write_clip(dir, "in.mkv", "libx264", "x264-params=keyint=10\\:min-keyint=10\\:scenecut=0",
                                    /*audio=*/true);
  PipelineOptions one = transcode(in, dir.file("one.mp4"), 1, nullptr), four = transcode(in, dir.file("four.mp4"), 4, nullptr);
  for (PipelineOptions* o : {&one, &four}) {
    o->encoder.codec = "libx264";
    o->encoder.preset = "ultrafast";
    o->encoder.options["bf"] = "2";
  }
  run_pipeline(one);
  EXPECT_EQ(run_pipeline(four).segments, 4);
  const sbtest::ReadFrames a = sbtest::read_frames(one.output), b = sbtest::read_frames(four.output);
  EXPECT_EQ(a.pts.size(), 50u);
  EXPECT_EQ(b.pts, a.pts);
  EXPECT_EQ(audio_packets(four.output).size(), audio_packets(one.output).size());
}

// libx264 spans, each from its own IDR, against the lossless filtered frames:
// the segmented output's average PSNR is within 0.2 dB of the plain run's,
// and no frame is more than 1 dB below the plain run's same frame.
TEST(SegmentedRun, X264SegmentsKeepThePlainRunsQuality) {
  sbtest::TempDir dir;
  const std::string in = write_clip(dir, "in.mkv", "libx264", "x264-params=keyint=10\\:min-keyint=10\\:scenecut=0");
  PipelineOptions one = transcode(in, dir.file("one.mp4"), 1, nullptr), five = transcode(in, dir.file("five.mp4"), 5, nullptr);
  for (PipelineOptions* o : {&one, &five}) {
    o->encoder.codec = "libx264";
    o->encoder.preset = "ultrafast";
  }
  run_pipeline(one);
  ASSERT_EQ(run_pipeline(five).segments, 5);
  io::PsnrMeter meter({one.output, five.output});
  Sunk unused;
  PipelineOptions ref = cpu_run(in, one.filters, unused);
  ref.frame_sink = [&](const FrameView& v) { meter.add(io::host_planes(v)); };
  run_pipeline(ref);
  meter.finish();
  const io::SpanQuality q = io::span_quality(meter, 0, 1);
  EXPECT_GT(q.plain_db, 20);  // the meter compares the right frames: a shifted one scores far lower
  EXPECT_GE(q.segmented_db, q.plain_db - 0.2);
  EXPECT_LE(q.worst_drop_db, 1.0) << "frame " << q.worst_frame;
}

// Into a frame sink: the plain run's frames, in order, numbered and timed as
// it numbers them, trimmed or not, with the spans run at once.
TEST(SegmentedRun, FrameSinkGetsThePlainRunsFramesInOrder) {
  sbtest::TempDir dir;
  for (const SpanCase& c : kSpanCases) {
    const std::string in = write_clip(dir, c.name, c.codec, c.options);
    for (const bool trimmed : {false, true}) {
      SCOPED_TRACE(std::string(c.name) + (trimmed ? ", trimmed" : ""));
      Sunk plain, segmented;
      PipelineOptions o1 = cpu_run(in, "gblur=sigma=1.5", plain), o3 = cpu_run(in, "gblur=sigma=1.5", segmented);
      o3.segments = 3;
      if (trimmed)
        for (PipelineOptions* o : {&o1, &o3}) {
          o->start_seconds = 0.3;
          o->max_frames = 30;
        }
      const RunStats s1 = run_pipeline(o1), s3 = run_pipeline(o3);
      EXPECT_GE(s3.segments, 2);
      EXPECT_EQ(s3.frames, s1.frames);
      EXPECT_EQ(segmented.index, plain.index);
      EXPECT_EQ(segmented.pts, plain.pts);
      ASSERT_EQ(segmented.bytes.size(), plain.bytes.size());
      for (std::size_t i = 0; i < plain.bytes.size(); ++i)
        EXPECT_TRUE(segmented.bytes[i] == plain.bytes[i]) << "frame " << i;
    }
  }
}

// More spans than workers (a long clip): each worker takes its next span in
// turn and the frames still come in order; a sink that throws ends the run
// with its error, and the caller's stop ends it early without one.
TEST(SegmentedRun, FrameSinkSpansTakeTurnsAndStop) {
  sbtest::TempDir dir;
  io::SyntheticClipSpec spec;
  spec.width = 32;
  spec.height = 24;
  spec.frames = 1300;  // more than 600 frames a span for each of 2 workers: 3 spans
  spec.video_options = "g=10";
  const std::string in = dir.file("long.mkv");
  io::write_synthetic_clip(in, spec);
  Sunk plain, segmented;
  run_pipeline(cpu_run(in, "boxblur=radius=1", plain));
  PipelineOptions o = cpu_run(in, "boxblur=radius=1", segmented);
  o.segments = 2;
  const RunStats st = run_pipeline(o);
  EXPECT_GE(st.segments, 3);
  EXPECT_EQ(segmented.index, plain.index);
  EXPECT_TRUE(segmented.bytes == plain.bytes);

  PipelineOptions failing = o;
  int seen = 0;
  failing.frame_sink = [&seen](const FrameView&) {
    if (++seen == 700) throw std::runtime_error("the sink gave up");
  };
  EXPECT_EQ(error_of([&] { run_pipeline(failing); }), "the sink gave up");
  EXPECT_EQ(seen, 700);

  std::atomic<bool> stop{false};
  PipelineOptions stopped = o;
  seen = 0;
  stopped.stop = &stop;
  stopped.frame_sink = [&](const FrameView& v) {
    EXPECT_EQ(v.index, seen++);
    if (seen == 650) stop = true;
  };
  const RunStats early = run_pipeline(stopped);
  EXPECT_TRUE(early.stopped_early);
  EXPECT_GE(early.frames, 650);
  EXPECT_LT(early.frames, 1300);
}

// Progress counts the frames of every span, never goes back, and ends once
// with the whole run's frames.
TEST(SegmentedRun, ProgressAddsUpTheSpans) {
  sbtest::TempDir dir;
  const std::string in = write_clip(dir, "in.mkv", "ffv1", "g=10");
  PipelineOptions o = transcode(in, dir.file("out.mkv"), 3, nullptr);
  std::vector<Progress> seen;
  std::mutex m;
  o.progress = [&](const Progress& p) {
    std::lock_guard<std::mutex> lock(m);
    seen.push_back(p);
  };
  run_pipeline(o);
  ASSERT_FALSE(seen.empty());
  for (std::size_t i = 1; i < seen.size(); ++i) EXPECT_GE(seen[i].frames, seen[i - 1].frames);
  EXPECT_TRUE(seen.back().final);
  EXPECT_EQ(seen.back().frames, 50);
  EXPECT_EQ(std::count_if(seen.begin(), seen.end(), [](const Progress& p) { return p.final; }), 1);
}

// A clip of one GOP cannot be cut: one segment, with a note, and the same output.
TEST(SegmentedRun, OneGopFallsBackToOneSegmentWithANote) {
  sbtest::TempDir dir;
  const std::string in = write_clip(dir, "gop.mkv", "ffv1", "g=1000");
  std::vector<std::string> notes;
  const RunStats st = run_pipeline(transcode(in, dir.file("out.mkv"), 4, &notes));
  EXPECT_EQ(st.segments, 1);
  EXPECT_EQ(st.frames, 50);
  ASSERT_FALSE(notes.empty());
  EXPECT_TRUE(contains(notes.front(), "segments: one segment")) << notes.front();
}

// segments = auto: spans of 240 frames or more, on the CPU backend at most
// half the cores (and 8), said in a note; the output is the plain run's.
TEST(SegmentedRun, AutoCutsAsManySpansAsPayAndSaysWhy) {
  sbtest::TempDir dir;
  const std::string short_clip = write_clip(dir, "short.mkv", "ffv1", "g=10");
  std::vector<std::string> notes;
  RunStats st = run_pipeline(transcode(short_clip, dir.file("short-out.mkv"), kSegmentsAuto, &notes));
  EXPECT_EQ(st.segments, 1);
  ASSERT_FALSE(notes.empty());
  EXPECT_EQ(notes.front(), "segments: one segment (auto: spans of 240 frames or more in 50)");

  io::SyntheticClipSpec spec;
  spec.codec = "ffv1";
  spec.width = 33;
  spec.height = 17;
  spec.frames = 720;
  spec.noise = true;
  spec.video_options = "g=10";
  const std::string long_clip = dir.file("long.mkv");
  io::write_synthetic_clip(long_clip, spec);
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const int want = std::clamp(std::min(720 / 240, cores / 2), 1, 8);
  notes.clear();
  st = run_pipeline(transcode(long_clip, dir.file("auto.mkv"), kSegmentsAuto, &notes));
  EXPECT_EQ(st.segments, want);
  EXPECT_EQ(st.frames, 720);
  ASSERT_FALSE(notes.empty());
  const std::string said = want == 1 ? "segments: one segment (auto: half of the " + std::to_string(cores) + " cores"
                                     : "segments: auto: " + std::to_string(want) + " spans at once (";
  EXPECT_TRUE(notes.front().starts_with(said)) << notes.front() << " (wanted " << said << ")";
  run_pipeline(transcode(long_clip, dir.file("one.mkv"), 1, nullptr));
  const sbtest::ReadFrames a = sbtest::read_frames(dir.file("one.mkv"));
  for (const char* out : {"auto.mkv", "dealt.mkv"}) {
    SCOPED_TRACE(out);
    if (out == std::string("dealt.mkv")) {
      // With workers decoding on the CPU, 3 spans a worker (120 frames or
      // more each), dealt out as workers free up.
      PipelineOptions o = transcode(long_clip, dir.file(out), 2, nullptr);
      o.segments_cpu_decoders = 1;
      EXPECT_EQ(run_pipeline(o).segments, 6);
    }
    const sbtest::ReadFrames b = sbtest::read_frames(dir.file(out));
    EXPECT_EQ(b.pts, a.pts);
    EXPECT_EQ(b.bytes.size(), 720u);
    EXPECT_TRUE(b.bytes == a.bytes);
  }
}

// On the CUDA backend, spans decoded by NVDEC and on the CPU side by side:
// more spans than workers, each taken by the next worker free, and still the
// sequential run's frames (NVDEC takes the mpeg4 and x264 clips).
TEST(SegmentedRun, CudaMixedDecodersGiveTheSequentialFrames) {
  SBTEST_SKIP_WITHOUT_GPU();
  sbtest::TempDir dir;
  for (const SpanCase& c : kSpanCases) {
    SCOPED_TRACE(c.name);
    const std::string in = write_clip(dir, c.name, c.codec, c.options);
    PipelineOptions one = transcode(in, dir.file(std::string("one-") + c.name + ".mkv"), 1, nullptr);
    std::vector<std::string> notes;
    PipelineOptions mixed = transcode(in, dir.file(std::string("mixed-") + c.name + ".mkv"), 2, &notes);
    one.backend = mixed.backend = BackendChoice::Cuda;
    mixed.segments_cpu_decoders = 1;
    run_pipeline(one);
    const RunStats st = run_pipeline(mixed);
    for (const std::string& n : notes) EXPECT_FALSE(contains(n, "segments:")) << n;  // no fallback
    EXPECT_EQ(st.segments, 2);  // 50 frames: spans of 120 or more would be too long, so one each
    if (c.codec != std::string("ffv1")) EXPECT_EQ(st.decoder, "mixed");
    const sbtest::ReadFrames a = sbtest::read_frames(one.output), b = sbtest::read_frames(mixed.output);
    EXPECT_EQ(b.pts, a.pts);
    ASSERT_EQ(b.bytes.size(), a.bytes.size());
    for (std::size_t i = 0; i < a.bytes.size(); ++i) EXPECT_TRUE(b.bytes[i] == a.bytes[i]) << "frame " << i;
  }
}

// A FIFO (or a pipe, a device, a stream) is read only once: one segment,
// with a note, and the plain run's output.
TEST(SegmentedRun, AnInputReadOnlyOnceRunsAsOneSegment) {
  sbtest::TempDir dir;
  const std::string clip = write_clip(dir, "in.mkv", "ffv1", "g=10"), fifo = dir.file("live.mkv");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0) << std::strerror(errno);
  std::thread feeder([&] {
    std::ifstream in(clip, std::ios::binary);
    std::ofstream(fifo, std::ios::binary) << in.rdbuf();
  });
  std::vector<std::string> notes;
  const RunStats st = run_pipeline(transcode(fifo, dir.file("out.mkv"), 3, &notes));
  feeder.join();
  EXPECT_EQ(st.segments, 1);
  EXPECT_EQ(st.frames, 50);
  ASSERT_FALSE(notes.empty());
  EXPECT_TRUE(contains(notes.front(), "segments: one segment (the input is a FIFO or a device, read only once)")) << notes.front();
  EXPECT_EQ(sbtest::read_frames(dir.file("out.mkv")).pts.size(), 50u);
}

// A span that fails fails the run with its error, and nothing is left.
TEST(SegmentedRun, AFailingSpanFailsTheRunAndLeavesNothing) {
  sbtest::TempDir dir;
  const std::string in = write_clip(dir, "in.mkv", "ffv1", "g=10");
  PipelineOptions o = transcode(in, dir.file("out.mkv"), 3, nullptr);
  o.encoder.options["no_such_option"] = "1";
  const std::string e = error_of([&] { run_pipeline(o); });
  EXPECT_TRUE(contains(e, "no_such_option")) << e;
  EXPECT_EQ(files_in(dir.path()), 1u);  // the input alone
}

// Trimmed (-ss, -t, --frames) and with regions files keyed by frame and by
// pts: the segmented run's output is the trimmed sequential run's, frame for
// frame, pts for pts and audio packet for audio packet, the boxes where the
// whole run's frame indices and times put them.
struct TrimCase {
  const char* name;
  std::optional<double> start, duration;
  std::optional<int64_t> frames;
};
const TrimCase kTrimCases[] = {
    {"start 0.4", 0.4, {}, {}},
    {"start 0.25, duration 1", 0.25, 1.0, {}},
    {"23 frames", {}, {}, 23},
    {"start 0.35, 30 frames", 0.35, {}, 30},
};

std::string write_pts_regions(const sbtest::TempDir& dir) {
  const std::string path = dir.file("pts.jsonl");
  std::ofstream(path) << "{\"pts\": 0.2, \"boxes\": [[50, 4, 24, 18, \"a\"]]}\n"
                      << "{\"pts\": 1.1, \"boxes\": [[8, 30, 30, 24, \"a\"]]}\n";
  return path;
}

TEST(SegmentedRun, TrimmedWithRegionsIsTheSequentialTrimmedRun) {
  sbtest::TempDir dir;
  const std::string chain = "boxblur=radius=2:regions=" + write_regions(dir) +
                            ",gblur=sigma=2:regions=" + write_pts_regions(dir);
  for (const SpanCase& c : kSpanCases) {
    const bool audio = has_audio(c);
    const std::string in = write_clip(dir, c.name, c.codec, c.options, audio);
    for (const TrimCase& t : kTrimCases) {
      SCOPED_TRACE(std::string(c.name) + ", " + t.name);
      const std::string one = dir.file("one.mkv"), three = dir.file("three.mkv");
      std::filesystem::remove(one);
      std::filesystem::remove(three);
      PipelineOptions o1 = transcode(in, one, 1, nullptr), o3 = transcode(in, three, 3, nullptr);
      for (PipelineOptions* o : {&o1, &o3}) {
        o->filters = chain;
        o->start_seconds = t.start;
        o->duration_seconds = t.duration;
        o->max_frames = t.frames;
        o->strict_regions = true;  // the whole run's checks pass: the boxes touch frames
      }
      const RunStats s1 = run_pipeline(o1), s3 = run_pipeline(o3);
      EXPECT_GE(s3.segments, 2);
      EXPECT_EQ(s3.frames, s1.frames);
      const sbtest::ReadFrames a = sbtest::read_frames(one), b = sbtest::read_frames(three);
      EXPECT_EQ(static_cast<int64_t>(a.pts.size()), s1.frames);
      EXPECT_EQ(b.pts, a.pts);
      ASSERT_EQ(b.bytes.size(), a.bytes.size());
      for (std::size_t i = 0; i < a.bytes.size(); ++i) EXPECT_TRUE(b.bytes[i] == a.bytes[i]) << "frame " << i;
      const auto audio1 = audio_packets(one);
      EXPECT_EQ(audio_packets(three), audio1);
      if (audio) EXPECT_FALSE(audio1.empty());
    }
  }
}

// The regions checks cover the whole run, not each span: boxes on the last
// span's frames alone are used (no span reports them unused), a file that
// cannot match the trimmed run is reported once, as the plain run reports
// it, and so is one whose boxes touched none of the whole run's frames.
TEST(SegmentedRun, RegionsChecksCoverEverySpanTogether) {
  sbtest::TempDir dir;
  const std::string in = write_clip(dir, "in.mkv", "ffv1", "g=10");
  const std::string late = dir.file("late.jsonl");
  std::ofstream(late) << "{\"frame\": 45, \"boxes\": [[10, 10, 20, 20]]}\n";
  PipelineOptions o = transcode(in, dir.file("out.mkv"), 3, nullptr);
  o.filters = "gblur=sigma=3:regions=" + late;
  o.strict_regions = true;
  EXPECT_EQ(run_pipeline(o).segments, 3);
  for (const int segments : {1, 3}) {
    SCOPED_TRACE(segments);
    std::vector<std::string> notes;
    PipelineOptions t = transcode(in, dir.file("t" + std::to_string(segments) + ".mkv"), segments, &notes);
    t.filters = o.filters;
    t.max_frames = 30;  // frame 45 is past the end
    run_pipeline(t);
    const auto said = std::count_if(notes.begin(), notes.end(), [&](const std::string& n) {
      return contains(n, "warning: regions file") && contains(n, "does not fit this video");
    });
    EXPECT_EQ(said, 1);
    t.strict_regions = true;
    t.overwrite = true;
    const std::string e = error_of([&] { run_pipeline(t); });
    EXPECT_TRUE(contains(e, "does not fit this video") && contains(e, "no output written")) << e;
  }
  // A box on a pts between two frames touches none of them: the run says so
  // once, counting every span's frames.
  const std::string between = dir.file("between.jsonl");
  std::ofstream(between) << "{\"pts\": 0.51, \"boxes\": [[10, 10, 20, 20]]}\n";
  for (const int segments : {1, 3}) {
    SCOPED_TRACE(segments);
    std::vector<std::string> notes;
    PipelineOptions u = transcode(in, dir.file("u" + std::to_string(segments) + ".mkv"), segments, &notes);
    u.filters = "gblur=sigma=3:regions=" + between;
    EXPECT_EQ(run_pipeline(u).segments, segments);
    const auto said = std::count_if(notes.begin(), notes.end(), [&](const std::string& n) {
      return contains(n, "warning: regions file") && contains(n, "no box touched any of the 50 frames");
    });
    EXPECT_EQ(said, 1);
  }
}

TEST(SegmentedRun, WhatSegmentsDoNotGoWithIsRefusedFirst) {
  sbtest::TempDir dir;
  const std::string in = write_clip(dir, "in.mkv", "ffv1", "g=10");
  PipelineOptions o = transcode(in, dir.file("out.mkv"), 3, nullptr);
  o.realtime = true;
  EXPECT_TRUE(contains(error_of([&] { run_pipeline(o); }), "segments do not go with reading at the native frame rate"));
  o.realtime = false;
  o.segments = -1;
  EXPECT_TRUE(contains(error_of([&] { run_pipeline(o); }), "segments must be between 1 and 64 (or auto), got -1"));
  o.segments = 3;
  o.segments_cpu_decoders = 1;
  o.hwdec = HwDecode::Nvdec;
  EXPECT_TRUE(contains(error_of([&] { run_pipeline(o); }), "segments decoded on the CPU (segments_cpu_decoders) do "
                                                           "not go with NVDEC decoding required"));
  o.hwdec = HwDecode::Auto;
  o.segments_cpu_decoders = 0;
  o.segments = 3;
  o.max_frames = 0;
  EXPECT_TRUE(contains(error_of([&] { run_pipeline(o); }), "the frame limit must be at least 1"));
  o.max_frames.reset();
  PipelineOptions sink = o;
  sink.output.clear();
  sink.frame_sink = [](const FrameView&) {};
  sink.sink_memory = SinkMemory::Device;
  sink.backend = BackendChoice::Cuda;
  EXPECT_TRUE(contains(error_of([&] { run_pipeline(sink); }), "segments do not go with a frame sink in device memory"));
  EXPECT_FALSE(std::filesystem::exists(o.output));
}

// The steps streamblur.ray runs in separate processes: the plan, each span
// into a named spool, the join. Trimmed, with audio: the trimmed
// segmented run's frames, pts and audio packets, and the spools can be
// removed once joined.
TEST(SegmentTasks, StepsInTurnGiveTheSegmentedRunsOutput) {
  sbtest::TempDir dir;
  const std::string in = write_clip(dir, "in.mkv", "ffv1", "g=10", /*audio=*/true);
  PipelineOptions one = transcode(in, dir.file("one.mkv"), 1, nullptr);
  one.start_seconds = 0.2;
  one.max_frames = 40;
  run_pipeline(one);
  PipelineOptions o = one;
  o.output = dir.file("steps.mkv");
  o.segments = 3;
  const detail::SegmentPlan plan = detail::plan_segments(o);
  ASSERT_EQ(plan.spans.size(), 3u) << plan.one_because;
  std::vector<std::string> spools, encoded;
  std::vector<int64_t> frames;
  for (std::size_t k = 0; k < plan.spans.size(); ++k) {
    spools.push_back(dir.file("span" + std::to_string(k)));
    const detail::SpooledSpan s = detail::run_span_into(o, plan, k, spools.back());
    frames.push_back(s.stats.frames);
    encoded.push_back(s.encoded);
  }
  EXPECT_EQ(frames[0] + frames[1] + frames[2], 40);
  const RunStats st = detail::join_spooled(o, plan, spools, frames, encoded);
  EXPECT_EQ(st.frames, 40);
  EXPECT_EQ(st.segments, 3);
  const sbtest::ReadFrames a = sbtest::read_frames(one.output), b = sbtest::read_frames(o.output);
  EXPECT_EQ(a.pts.size(), 40u);
  EXPECT_EQ(b.pts, a.pts);
  EXPECT_TRUE(b.bytes == a.bytes);
  EXPECT_EQ(audio_packets(o.output), audio_packets(one.output));
  EXPECT_FALSE(audio_packets(o.output).empty());

  // Nothing is replaced without overwrite, a spool is never written over,
  // and a span that fails leaves no spool.
  EXPECT_TRUE(contains(error_of([&] { detail::join_spooled(o, plan, spools, frames, encoded); }), "exists"));
  EXPECT_TRUE(contains(error_of([&] { detail::run_span_into(o, plan, 0, spools[0]); }), "cannot make the span file"));
  PipelineOptions bad = o;
  bad.input = dir.file("missing.mkv");
  const std::string lost = dir.file("lost-span");
  EXPECT_FALSE(error_of([&] { detail::run_span_into(bad, plan, 1, lost); }).empty());
  EXPECT_FALSE(std::filesystem::exists(lost));
}

// A join whose spans do not add up fails and writes nothing; a regions file
// and a missing output are refused before anything runs.
TEST(SegmentTasks, WhatCannotBeJoinedOrSplitIsRefused) {
  sbtest::TempDir dir;
  const std::string in = write_clip(dir, "in.mkv", "ffv1", "g=10");
  PipelineOptions o = transcode(in, dir.file("out.mkv"), 2, nullptr);
  const detail::SegmentPlan plan = detail::plan_segments(o);
  ASSERT_EQ(plan.spans.size(), 2u);
  std::vector<std::string> spools{dir.file("s0"), dir.file("s1")}, encoded;
  std::vector<int64_t> frames;
  for (std::size_t k = 0; k < 2; ++k) {
    const detail::SpooledSpan s = detail::run_span_into(o, plan, k, spools[k]);
    frames.push_back(s.stats.frames);
    encoded.push_back(s.encoded);
  }
  std::vector<int64_t> short_by_one = frames;
  --short_by_one[1];
  EXPECT_TRUE(contains(error_of([&] { detail::join_spooled(o, plan, spools, short_by_one, encoded); }),
                       "the spans cannot be joined: span 2 gave"));
  EXPECT_TRUE(contains(error_of([&] { detail::join_spooled(o, plan, spools, frames, {encoded[0], "junk"}); }),
                       "encoder parameters"));
  EXPECT_FALSE(std::filesystem::exists(o.output));
  EXPECT_EQ(files_in(dir.path().string()), 3u);  // the input and the two spools

  PipelineOptions regions = o;
  regions.filters = "gblur=sigma=2:regions=" + write_regions(dir);
  EXPECT_TRUE(contains(error_of([&] { detail::plan_segments(regions); }), "do not go with a regions file"));
  PipelineOptions no_output = o;
  no_output.output.clear();
  EXPECT_TRUE(contains(error_of([&] { detail::plan_segments(no_output); }), "need an output file"));
  o.segments = 1;
  EXPECT_EQ(detail::plan_segments(o).one_because, "one segment was asked for");
}

}  // namespace segments
}  // namespace
