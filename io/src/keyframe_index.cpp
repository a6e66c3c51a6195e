#include "streamblur/io/keyframe_index.hpp"

extern "C" {
#include <libavformat/avformat.h>
}

#include <algorithm>
#include <cmath>

#include "streamblur/io/av_error.hpp"
#include "streamblur/io/av_ptr.hpp"
#include "open_input.hpp"

namespace streamblur::io {

namespace {

// Adds one packet of the video stream to the index.
void add_packet(VideoPacketIndex& index, const AVPacket& p) {
  const int64_t t = p.pts != AV_NOPTS_VALUE ? p.pts : p.dts;
  if (t == AV_NOPTS_VALUE) {
    if (index.unusable.empty()) index.unusable = "a video packet has no timestamp";
    return;
  }
  if (p.flags & AV_PKT_FLAG_KEY) {
    index.keyframes.push_back({t, 0, false});
  } else if (index.keyframes.empty()) {
    if (index.unusable.empty()) index.unusable = "the video does not begin with a keyframe";
  } else if (t < index.keyframes.back().pts) {
    index.keyframes.back().has_leading = true;
  }
  // The decoder drops the frames of discarded packets (an edit list's lead-in).
  if (!(p.flags & AV_PKT_FLAG_DISCARD)) index.frame_pts.push_back(t);
}

void finish_index(VideoPacketIndex& index) {
  std::sort(index.frame_pts.begin(), index.frame_pts.end());
  if (std::adjacent_find(index.frame_pts.begin(), index.frame_pts.end()) != index.frame_pts.end() &&
      index.unusable.empty())
    index.unusable = "two video frames have the same timestamp";
  for (Keyframe& k : index.keyframes)
    k.first_frame = std::lower_bound(index.frame_pts.begin(), index.frame_pts.end(), k.pts) - index.frame_pts.begin();
}

// The positions in `kept` (display order) where spans may begin: keyframes
// that are kept frames, other than the first kept frame.
std::vector<std::size_t> cut_candidates(const VideoPacketIndex& index, const std::vector<int64_t>& kept) {
  std::vector<std::size_t> at;
  for (const Keyframe& k : index.keyframes) {
    auto it = std::lower_bound(kept.begin(), kept.end(), k.pts);
    if (it == kept.end() || *it != k.pts || it == kept.begin()) continue;
    at.push_back(static_cast<std::size_t>(it - kept.begin()));
  }
  std::sort(at.begin(), at.end());
  at.erase(std::unique(at.begin(), at.end()), at.end());
  return at;
}

// Up to wanted-1 cut positions, each the candidate nearest an even split.
std::vector<std::size_t> choose_cuts(const std::vector<std::size_t>& candidates, std::size_t frames, int wanted) {
  std::vector<std::size_t> cuts;
  std::size_t from = 0;  // candidates before this index are used or behind the last cut
  for (int j = 1; j < wanted && from < candidates.size(); ++j) {
    const double target = static_cast<double>(frames) * j / wanted;
    std::size_t best = from;
    for (std::size_t c = from; c < candidates.size(); ++c) {
      if (std::abs(candidates[c] - target) < std::abs(candidates[best] - target)) best = c;
      if (candidates[c] > target) break;
    }
    // Leave a candidate for every later cut that could still use one.
    cuts.push_back(candidates[best]);
    from = best + 1;
  }
  return cuts;
}

}  // namespace

VideoPacketIndex scan_video_packets(const std::string& path, int stream) {
  AVInputFormatContextPtr fmt = open_input_format(path);
  const int video = stream >= 0 ? stream : av_find_best_stream(fmt.get(), AVMEDIA_TYPE_VIDEO, -1, -1, nullptr, 0);
  if (video < 0) throw AVError("no video stream in '" + path + "' (" + av_error_string(video) + ")", video);
  if (video >= static_cast<int>(fmt->nb_streams) || fmt->streams[video]->codecpar->codec_type != AVMEDIA_TYPE_VIDEO)
    throw AVError("stream " + std::to_string(video) + " of '" + path + "' is not a video stream", AVERROR_STREAM_NOT_FOUND);
  VideoPacketIndex index;
  index.time_base = fmt->streams[video]->time_base;
  AVPacketPtr packet(av_packet_alloc());
  if (!packet) throw std::bad_alloc();
  for (int rc; (rc = av_read_frame(fmt.get(), packet.get())) != AVERROR_EOF; av_packet_unref(packet.get())) {
    if (rc < 0) {
      if (index.unusable.empty()) index.unusable = "the video's packets cannot all be read (" + av_error_string(rc) + ")";
      break;
    }
    if (packet->stream_index == video) add_packet(index, *packet);
  }
  finish_index(index);
  return index;
}

SpanPlanning plan_spans(const VideoPacketIndex& index, int wanted, int64_t keep_from_pts, int64_t keep_until_pts,
                        std::optional<int64_t> max_frames) {
  std::vector<int64_t> kept;
  for (int64_t t : index.frame_pts)
    if (t >= keep_from_pts && t < keep_until_pts) kept.push_back(t);
  int64_t until = keep_until_pts;
  if (max_frames && static_cast<int64_t>(kept.size()) > *max_frames) {
    until = kept[static_cast<std::size_t>(*max_frames)];
    kept.resize(static_cast<std::size_t>(*max_frames));
  }
  SpanPlanning out;
  std::vector<std::size_t> cuts;
  if (wanted > 1 && !index.unusable.empty()) {
    out.note = "one span instead of " + std::to_string(wanted) + ": " + index.unusable;
  } else if (wanted > 1) {
    cuts = choose_cuts(cut_candidates(index, kept), kept.size(), wanted);
    if (static_cast<int>(cuts.size()) + 1 < wanted)
      out.note = std::to_string(cuts.size() + 1) + " span" + (cuts.empty() ? "" : "s") + " instead of " +
                 std::to_string(wanted) + ": the part read has " + std::to_string(kept.size()) + " frames and " +
                 std::to_string(cuts.size()) + " keyframe" + (cuts.size() == 1 ? "" : "s") + " to begin a span at";
  }
  cuts.insert(cuts.begin(), 0);
  for (std::size_t i = 0; i < cuts.size(); ++i) {
    const bool last = i + 1 == cuts.size();
    const std::size_t end = last ? kept.size() : cuts[i + 1];
    SpanPlan s;
    s.start_pts = i == 0 ? keep_from_pts : kept[cuts[i]];
    s.end_pts = last ? until : kept[end];
    s.first_frame = static_cast<int64_t>(cuts[i]);
    s.frames = static_cast<int64_t>(end - cuts[i]);
    out.spans.push_back(s);
  }
  return out;
}

}  // namespace streamblur::io
