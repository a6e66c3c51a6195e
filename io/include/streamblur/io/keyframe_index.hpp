#pragma once
// The video stream's packets without decoding them: every frame's pts and
// where the keyframes are, so one input can be cut into spans that begin at
// keyframes and decoded span by span (PipelineOptions::segments).
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

extern "C" {
#include <libavutil/rational.h>
}

namespace streamblur::io {

// A keyframe of the video stream, in decode order.
struct Keyframe {
  int64_t pts = 0;
  int64_t first_frame = 0;  // frames whose pts is below this one's (its display-order index)
  // Packets after it in decode order show before it (open-GOP leading
  // pictures, HEVC RASL/RADL): they belong to the span before, which decodes
  // through them, and a decode that starts here drops them.
  bool has_leading = false;
};

// What scan_video_packets found: the frames in display order and the keyframes.
struct VideoPacketIndex {
  AVRational time_base{0, 1};
  std::vector<int64_t> frame_pts;   // every video packet's pts, sorted (display order)
  std::vector<Keyframe> keyframes;  // in decode order; keyframes[0] is the first packet when it is one
  // Why the index cannot be used to cut the input (a packet with neither pts
  // nor dts, the same pts twice, the first packet not a keyframe); empty when it can.
  std::string unusable;
};

// Reads every packet of `path`'s video stream `stream` (no decoding); -1:
// its best video stream, as av_find_best_stream picks it (a MediaReader may
// pick another where that one has no decoder: pass its video_stream_index()).
// Throws AVError naming the path when it cannot be opened or has no such stream.
VideoPacketIndex scan_video_packets(const std::string& path, int stream = -1);

// One part of the input: the frames whose pts lies in [start_pts, end_pts).
// The decode starts at the keyframe at or before start_pts.
struct SpanPlan {
  int64_t start_pts = 0;
  int64_t end_pts = std::numeric_limits<int64_t>::max();  // max: to the end of the input
  int64_t first_frame = 0;  // global display-order index of its first frame, counted from the
                            // first frame that is kept (after trimming)
  int64_t frames = 0;
};

// What plan_spans decided, and why it made fewer spans than asked.
struct SpanPlanning {
  std::vector<SpanPlan> spans;  // at least one, covering the kept frames in order
  std::string note;             // empty when `wanted` spans were made
};

// Cuts the frames in [keep_from_pts, keep_until_pts) (the trimmed part; the
// first `max_frames` of it when set) into at most `wanted` spans of about the
// same number of frames, each beginning at a keyframe other than the first,
// which begins where the kept part does. Fewer spans, with a note, when the
// index is unusable, the part has too few keyframes, or it is too short.
SpanPlanning plan_spans(const VideoPacketIndex& index, int wanted,
                        int64_t keep_from_pts = std::numeric_limits<int64_t>::min(),
                        int64_t keep_until_pts = std::numeric_limits<int64_t>::max(),
                        std::optional<int64_t> max_frames = std::nullopt);

}  // namespace streamblur::io
