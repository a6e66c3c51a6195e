// The keyframe index and the span plan behind PipelineOptions::segments:
// io::scan_video_packets against a decode of the same clip with FFmpeg's API,
// open-GOP leading pictures, and io::plan_spans on hand-made indices (balance,
// cover, trimming, the fallbacks to fewer spans).
#include <gtest/gtest.h>

#include "test_support.hpp"

extern "C" {
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/log.h>
}

#include <algorithm>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "streamblur/io/av_error.hpp"
#include "streamblur/io/keyframe_index.hpp"
#include "streamblur/testing/synthetic_clip.hpp"

using namespace streamblur;
using namespace sbtest;

namespace {



// What a full decode with FFmpeg's API gives: every frame's pts, in output
// order, and the pts of the frames flagged key.
struct Decoded {
  std::vector<int64_t> pts, key_pts;
};

Decoded decode_all(const std::string& path) {
  VideoDecoder vd = open_video_decoder(path);
  Decoded d;
  decode_video(
      vd,
      [&](const AVFrame& f) {
        d.pts.push_back(f.best_effort_timestamp);
        if (f.key_frame) d.key_pts.push_back(f.best_effort_timestamp);
      },
      [](const AVPacket&) {});
  return d;
}

std::vector<int64_t> keyframe_pts(const io::VideoPacketIndex& index) {
  std::vector<int64_t> v;
  for (const io::Keyframe& k : index.keyframes) v.push_back(k.pts);
  std::sort(v.begin(), v.end());
  return v;
}

// An index of `frames` frames, pts 0, 100, 200, ..., a keyframe every `gop`.
io::VideoPacketIndex regular_index(int frames, int gop) {
  io::VideoPacketIndex index;
  index.time_base = {1, 3000};
  for (int i = 0; i < frames; ++i) {
    index.frame_pts.push_back(100 * i);
    if (i % gop == 0) index.keyframes.push_back({100 * i, i, false});
  }
  return index;
}

// The spans cover the kept frames in order, without gaps or overlaps, and
// every span after the first begins at a keyframe.
void expect_cover(const io::VideoPacketIndex& index, const io::SpanPlanning& plan, int64_t kept_frames) {
  ASSERT_FALSE(plan.spans.empty());
  int64_t next = 0;
  for (std::size_t i = 0; i < plan.spans.size(); ++i) {
    const io::SpanPlan& s = plan.spans[i];
    EXPECT_EQ(s.first_frame, next) << "span " << i;
    EXPECT_GT(s.frames, 0) << "span " << i;
    next += s.frames;
    if (i > 0) {
      EXPECT_EQ(s.start_pts, plan.spans[i - 1].end_pts) << "span " << i;
      const auto keys = keyframe_pts(index);
      EXPECT_TRUE(std::binary_search(keys.begin(), keys.end(), s.start_pts)) << "span " << i << " at " << s.start_pts;
    }
  }
  EXPECT_EQ(next, kept_frames);
}

TEST(SegmentPlan, BalancedSpansAtKeyframes) {
  const io::VideoPacketIndex index = regular_index(100, 10);
  const io::SpanPlanning plan = io::plan_spans(index, 4);
  EXPECT_TRUE(plan.note.empty()) << plan.note;
  ASSERT_EQ(plan.spans.size(), 4u);
  expect_cover(index, plan, 100);
  // 100 frames in 4: the cuts nearest 25, 50 and 75 among multiples of 10.
  EXPECT_EQ(plan.spans[1].first_frame, 20);
  EXPECT_EQ(plan.spans[2].first_frame, 50);
  EXPECT_EQ(plan.spans[3].first_frame, 70);
  EXPECT_EQ(plan.spans.back().end_pts, std::numeric_limits<int64_t>::max());
}

TEST(SegmentPlan, OneSpanAskedIsTheWholeInput) {
  const io::SpanPlanning plan = io::plan_spans(regular_index(30, 10), 1);
  ASSERT_EQ(plan.spans.size(), 1u);
  EXPECT_EQ(plan.spans[0].frames, 30);
  EXPECT_EQ(plan.spans[0].start_pts, std::numeric_limits<int64_t>::min());
  EXPECT_TRUE(plan.note.empty());
}

TEST(SegmentPlan, FewerKeyframesThanSpansGivesFewerSpansWithANote) {
  const io::VideoPacketIndex index = regular_index(30, 10);  // keyframes at 0, 10, 20
  const io::SpanPlanning plan = io::plan_spans(index, 8);
  ASSERT_EQ(plan.spans.size(), 3u);
  expect_cover(index, plan, 30);
  EXPECT_TRUE(contains(plan.note, "3 spans instead of 8")) << plan.note;
  const io::SpanPlanning single = io::plan_spans(regular_index(30, 1000), 4);
  ASSERT_EQ(single.spans.size(), 1u);
  EXPECT_TRUE(contains(single.note, "1 span instead of 4")) << single.note;
  EXPECT_TRUE(contains(single.note, "0 keyframes")) << single.note;
}

TEST(SegmentPlan, AnUnusableIndexGivesOneSpanWithItsReason) {
  io::VideoPacketIndex index = regular_index(40, 10);
  index.unusable = "a video packet has no timestamp";
  const io::SpanPlanning plan = io::plan_spans(index, 4);
  ASSERT_EQ(plan.spans.size(), 1u);
  EXPECT_EQ(plan.spans[0].frames, 40);
  EXPECT_TRUE(contains(plan.note, "a video packet has no timestamp")) << plan.note;
}

TEST(SegmentPlan, TrimmingKeepsOnlyThePartAndCountsFromItsStart) {
  const io::VideoPacketIndex index = regular_index(100, 10);
  // Frames 15 .. 84 (pts 1500 .. 8400), then the first 50 of them: 15 .. 64.
  const io::SpanPlanning plan = io::plan_spans(index, 3, 1500, 8500, 50);
  ASSERT_EQ(plan.spans.size(), 3u);
  expect_cover(index, plan, 50);
  EXPECT_EQ(plan.spans[0].start_pts, 1500);  // where the kept part begins, not a keyframe
  EXPECT_EQ(plan.spans[1].start_pts, 3000);  // frame 30: the keyframe nearest a third of 50 (15 + 16.7)
  EXPECT_EQ(plan.spans[1].first_frame, 15);
  EXPECT_EQ(plan.spans.back().end_pts, 6500);  // the first frame not kept
}

class ScannedClip : public ::testing::Test {
 protected:
  TempDir dir{"sb_segplan"};
};

TEST_F(ScannedClip, Ffv1IndexMatchesADecode) {
  const std::string path = dir.file("g10.mkv");
  io::SyntheticClipSpec spec;
  spec.frames = 45;
  spec.video_options = "g=10";
  io::write_synthetic_clip(path, spec);
  const io::VideoPacketIndex index = io::scan_video_packets(path);
  const Decoded ref = decode_all(path);
  EXPECT_TRUE(index.unusable.empty()) << index.unusable;
  EXPECT_EQ(index.frame_pts, ref.pts);
  EXPECT_EQ(keyframe_pts(index), ref.key_pts);
  EXPECT_EQ(index.keyframes.size(), 5u);
  for (const io::Keyframe& k : index.keyframes) EXPECT_FALSE(k.has_leading) << k.pts;
  const io::SpanPlanning plan = io::plan_spans(index, 3);
  ASSERT_EQ(plan.spans.size(), 3u);
  expect_cover(index, plan, 45);
}

// x264 with B-frames: closed GOPs have no leading pictures; with open-gop the
// B-frames after a keyframe in decode order show before it.
TEST_F(ScannedClip, X264LeadingPicturesOnlyWithOpenGop) {
  for (bool open : {false, true}) {
    const std::string path = dir.file(open ? "open.mp4" : "closed.mp4");
    io::SyntheticClipSpec spec;
    spec.width = 96;
    spec.height = 64;
    spec.frames = 60;
    spec.codec = "libx264";
    spec.preset = "ultrafast";
    spec.noise = true;
    spec.video_options = std::string("x264-params=keyint=12\\:min-keyint=12\\:scenecut=0\\:bframes=3\\:b-adapt=0") +
                         (open ? "\\:open-gop=1" : "");
    io::write_synthetic_clip(path, spec);
    const io::VideoPacketIndex index = io::scan_video_packets(path);
    const Decoded ref = decode_all(path);
    EXPECT_TRUE(index.unusable.empty()) << index.unusable;
    EXPECT_EQ(index.frame_pts, ref.pts) << path;
    ASSERT_GE(index.keyframes.size(), 4u) << path;
    int leading = 0;
    for (std::size_t i = 1; i < index.keyframes.size(); ++i) leading += index.keyframes[i].has_leading;
    if (open)
      EXPECT_GT(leading, 0) << path;
    else
      EXPECT_EQ(leading, 0) << path;
  }
}

// The stream the reader decodes, by its index; an index that is not a video
// stream is an error naming it.
TEST_F(ScannedClip, TheStreamAskedForIsTheOneScanned) {
  const std::string path = dir.file("av.mkv");
  io::SyntheticClipSpec spec;
  spec.frames = 20;
  spec.video_options = "g=5";
  spec.audio = true;
  io::write_synthetic_clip(path, spec);
  const io::VideoPacketIndex best = io::scan_video_packets(path), first = io::scan_video_packets(path, 0);
  EXPECT_EQ(first.frame_pts, best.frame_pts);
  EXPECT_EQ(first.frame_pts.size(), 20u);
  for (const int bad : {1, 7}) {
    try {
      io::scan_video_packets(path, bad);
      ADD_FAILURE() << "no error for stream " << bad;
    } catch (const std::exception& e) {
      EXPECT_TRUE(std::string(e.what()).find("stream " + std::to_string(bad) + " of '" + path +
                                             "' is not a video stream") != std::string::npos)
          << e.what();
    }
  }
}

TEST_F(ScannedClip, NoVideoOrNoFileIsAnErrorNamingThePath) {
  const std::string audio = dir.file("audio.mkv");
  write_audio_only_mkv(audio);
  try {
    io::scan_video_packets(audio);
    ADD_FAILURE() << "no error";
  } catch (const std::exception& e) {
    EXPECT_TRUE(contains(e.what(), "audio.mkv")) << e.what();
  }
  EXPECT_THROW(io::scan_video_packets(dir.file("missing.mp4")), std::exception);
}

// The scan opens its input as MediaReader does: the same inputs refused in
// the same words (an empty file, a text file, a missing one).
TEST_F(ScannedClip, RefusesInputsInTheReadersWords) {
  const std::string empty = dir.file("empty.mp4"), text = dir.file("notes.txt");
  std::ofstream(empty, std::ios::binary).flush();
  {
    std::ofstream o(text);
    for (int i = 0; i < 200; ++i) o << "This is a text file, not a video. Line " << i << ".\n";
  }
  for (const std::string& p : {empty, text, dir.file("missing.mkv")}) {
    const std::string scan = error_of([&] { io::scan_video_packets(p); });
    const std::string read = error_of([&] { io::MediaReader r(p); });
    EXPECT_FALSE(scan.empty()) << p << ": no error";
    EXPECT_EQ(scan, read) << p;
  }
  EXPECT_TRUE(contains(error_of([&] { io::scan_video_packets(empty); }), "(the file is empty)"));
  // "a text file, not video" where FFmpeg has the tty demuxer, else FFmpeg's invalid data.
  EXPECT_TRUE(contains(error_of([&] { io::scan_video_packets(text); }), "cannot open input '" + text + "'"));
}

}  // namespace

namespace {

// The frames of one planned span, read on their own (ReadSpan's pts window).
ReadFrames read_span(const std::string& path, const io::SpanPlan& span) {
  io::ReaderOptions options;
  if (span.start_pts != std::numeric_limits<int64_t>::min()) options.span.from_pts = span.start_pts;
  if (span.end_pts != std::numeric_limits<int64_t>::max()) options.span.until_pts = span.end_pts;
  return read_frames(path, options);
}

struct SpanClip {
  const char* name;
  const char* codec;
  const char* options;
};

// Each span read on its own gives the frames the plan counted, and the spans
// one after another are the whole read: the same pts, unshifted, and the
// same pixels, also where a span starts at an open-GOP keyframe (its leading
// pictures belong to the span before) or after B-frames.
TEST_F(ScannedClip, SpansReadOnTheirOwnJoinToTheWholeRead) {
  const SpanClip clips[] = {
      {"g10.mkv", "ffv1", "g=10"},
      {"bframes.ts", "mpeg4", "g=12:bf=2"},
      {"open.mp4", "libx264",
       "x264-params=keyint=12\\:min-keyint=12\\:scenecut=0\\:bframes=3\\:b-adapt=0\\:open-gop=1"},
  };
  for (const SpanClip& c : clips) {
    SCOPED_TRACE(c.name);
    const std::string path = dir.file(c.name);
    io::SyntheticClipSpec spec;
    spec.codec = c.codec;
    const bool x264 = spec.codec == "libx264";  // 4:2:0 in x264 takes even sizes only
    spec.width = x264 ? 98 : 97;  // odd sizes: chroma planes round up
    spec.height = x264 ? 64 : 63;
    spec.frames = 50;
    if (x264) spec.preset = "ultrafast";
    spec.noise = true;
    spec.video_options = c.options;
    io::write_synthetic_clip(path, spec);
    const ReadFrames whole = read_frames(path);
    const io::SpanPlanning plan = io::plan_spans(io::scan_video_packets(path), 3);
    ASSERT_EQ(plan.spans.size(), 3u) << plan.note;
    ReadFrames joined;
    for (const io::SpanPlan& span : plan.spans) {
      const ReadFrames part = read_span(path, span);
      EXPECT_EQ(static_cast<int64_t>(part.pts.size()), span.frames) << "span at " << span.start_pts;
      joined.pts.insert(joined.pts.end(), part.pts.begin(), part.pts.end());
      joined.bytes.insert(joined.bytes.end(), part.bytes.begin(), part.bytes.end());
    }
    EXPECT_EQ(whole.pts.size(), 50u);
    EXPECT_EQ(joined.pts, whole.pts);
    ASSERT_EQ(joined.bytes.size(), whole.bytes.size());
    for (std::size_t i = 0; i < whole.bytes.size(); ++i) EXPECT_TRUE(joined.bytes[i] == whole.bytes[i]) << "frame " << i;
  }
}

TEST(SegmentPlan, APtsWindowIsCheckedLikeTheRestOfTheSpan) {
  io::ReadSpan s;
  s.from_pts = 100;
  s.until_pts = 100;
  EXPECT_THROW(io::check_span(s), std::invalid_argument);
  s.until_pts = 101;
  EXPECT_NO_THROW(io::check_span(s));
  s.start_seconds = 1.0;
  try {
    io::check_span(s);
    ADD_FAILURE() << "no error";
  } catch (const std::invalid_argument& e) {
    EXPECT_TRUE(contains(e.what(), "does not go with a start time")) << e.what();
  }
}

}  // namespace
