#pragma once
// A segmented run into a frame sink (PipelineOptions::segments with
// frame_sink): the spans run `workers` at a time and the sink gets every
// frame in order. Internal to streamblur_pipeline (segments.cpp).
#include <cstdint>
#include <vector>

#include "streamblur/io/keyframe_index.hpp"
#include "streamblur/pipeline/pipeline.hpp"
#include "segments.hpp"

namespace streamblur::detail {

// Host memory the frames of the spans that run ahead may hold, about.
inline constexpr int64_t kHeldFramesBytes = int64_t{2} << 30;

// How many spans to cut `frames` frames of `frame_bytes` each into for
// `workers` at once: at least `workers`, each short enough that the spans
// being held stay within kHeldFramesBytes (60 to 600 frames a span).
int ordered_span_count(int64_t frames, int64_t frame_bytes, int workers);

// What run_spans_in_order did: each span's statistics, the frames handed to
// the sink, and whether the caller's stop flag ended it early.
struct InOrderRun {
  std::vector<RunStats> spans;
  int64_t frames = 0;
  bool stopped = false;
};

// Runs the plan's spans through `chain`, worker w (of workers.count, each
// decoding as workers.decoder says) taking spans w, w + workers, ...; a span starts once the one `workers` before it has been
// handed over, and its frames are copied to host memory until their turn.
// options.frame_sink gets every frame in order, on the calling thread. The
// first failure (a span's, or the sink's) stops the others and is rethrown.
// options.stop ends it early (the others stop; no error).
InOrderRun run_spans_in_order(const PipelineOptions& options, const io::SpanPlanning& plan,
                              const std::vector<FilterInstanceSpec>& chain, int64_t shift,
                              const SpanWorkers& workers);

}  // namespace streamblur::detail
