#pragma once
// One span of a segmented run (issue: one file over every engine): the
// frames of one keyframe-aligned part of the input (io::plan_spans), run
// through a pipeline of their own and numbered as the whole run numbers
// them. A detail header: in the source tree only, never installed, not part
// of the API; the segmented run is built on it.
#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "streamblur/io/writer.hpp"
#include "streamblur/pipeline/pipeline.hpp"

namespace streamblur::detail {

struct SpanRun {
  // The frames whose pts lies in [from_pts, until_pts), in the video
  // stream's own time base (io::ReadSpan's window); unset: from the start,
  // to the end.
  std::optional<int64_t> from_pts, until_pts;
  // The whole run's index of the span's first frame: what regions=FILE keys
  // by frame and FrameView::index count from.
  int64_t first_index = 0;
  // Taken off every timestamp the span's reader hands out, AV_TIME_BASE
  // units: a trimmed run's start, which shifts the whole output (io::ReadSpan).
  int64_t pts_shift = 0;
  // The chain, parsed once for every span, when not null: its region filters
  // then count what they saw of a regions file over the whole run
  // (RegionSpec::usage); otherwise the span parses PipelineOptions::filters.
  const std::vector<FilterInstanceSpec>* chain = nullptr;
  // When set, the encoded video packets go here instead of into the output
  // file, which is then not written at all (its name still picks the
  // container, and so how the encoder runs): the segmented run spools them
  // for the join. Timestamps in the encoder's time base (`encoded`).
  std::function<void(const AVPacket&)> video_packets;
  // Where the encoder's parameters are put at the end of a run with an
  // output (the join's video stream), when not null.
  io::EncodedVideo* encoded = nullptr;
};

// run_pipeline for one span. The output, when there is one, holds the
// encoded video stream alone (the segmented run copies the other streams
// once, over the whole input), with the input's timestamps less pts_shift. The
// options' start_seconds, duration_seconds and max_frames must be unset (the
// span plan has them); a regions file is checked against the whole video by
// the segmented run, not here.
RunStats run_span(const PipelineOptions& options, const SpanRun& span);

}  // namespace streamblur::detail
