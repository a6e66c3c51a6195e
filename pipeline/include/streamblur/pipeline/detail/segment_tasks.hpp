#pragma once
// A segmented run (PipelineOptions::segments) in steps that can run in
// different processes, for streamblur.ray: the plan on the driver, each span
// on any worker that sees the same files, the join on the driver. A detail
// header: in the source tree only, never installed, not part of the API.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "streamblur/io/span_join.hpp"
#include "streamblur/pipeline/pipeline.hpp"

namespace streamblur::detail {

// One span of a plan: its frames by pts in the video stream's time base
// ([from_pts, until_pts), unset: open), the whole run's index of its first
// frame, and how many frames the plan counts in it.
struct PlannedSpan {
  std::optional<int64_t> from_pts, until_pts;
  int64_t first_index = 0, frames = 0;
};

struct SegmentPlan {
  std::vector<PlannedSpan> spans;  // empty: run it as one segment, because of `one_because`
  io::CopyWindow copy;             // the other streams' window; copy.shift is taken off every timestamp
  std::vector<std::string> notes;  // what the plan chose, for the user
  std::string one_because;
};

// The plan of options.segments spans (or auto's) of options.input, as the
// segmented run makes it. Throws std::invalid_argument for what the steps do
// not go with: no output, a frame sink, a regions file (its checks need every
// span in one process), and what segments do not go with.
SegmentPlan plan_segments(const PipelineOptions& options);

// Span `span` of `plan`, its encoded video into `spool` (a new file; removed
// again if the span fails). Returns the span's statistics and its encoder's
// parameters (io::encoded_video_bytes).
struct SpooledSpan {
  RunStats stats;
  std::string encoded;
};
SpooledSpan run_span_into(const PipelineOptions& options, const SegmentPlan& plan, std::size_t span,
                          const std::string& spool);

// Joins the spans' spools, in the plan's order, into options.output with the
// input's other streams, under the output's rules (overwrite, the hidden
// temporary file, nothing left on failure). `frames` and `encoded`: what
// each span's run_span_into returned. A span whose frame count is not the
// plan's, or whose encoder headers differ, fails the join. The statistics
// are the join's: frames, segments and join_s.
RunStats join_spooled(const PipelineOptions& options, const SegmentPlan& plan, const std::vector<std::string>& spools,
                      const std::vector<int64_t>& frames, const std::vector<std::string>& encoded);

}  // namespace streamblur::detail
