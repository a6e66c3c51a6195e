#pragma once
// The segmented run behind PipelineOptions::segments (segments.cpp).
// Internal to streamblur_pipeline.
#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "streamblur/io/keyframe_index.hpp"
#include "streamblur/pipeline/detail/span_run.hpp"
#include "streamblur/pipeline/pipeline.hpp"

namespace streamblur::detail {

inline constexpr int kMaxSegments = 64;

// PipelineOptions::note, or stderr.
std::function<void(const std::string&)> note_of(const PipelineOptions& options);
// `note` for lines not said before (the spans say the same things), from any thread.
std::function<void(const std::string&)> said_once(std::function<void(const std::string&)> note);

// A span's own options: one segment, the trim left to the plan, stopped by
// `halt`, no progress of its own.
PipelineOptions span_options(const PipelineOptions& options, std::atomic<bool>* halt);
// What run_span takes for span `s` of a plan: its window, its first frame's
// index, the trim's shift and the chain every span shares.
SpanRun span_run_of(const io::SpanPlan& s, int64_t shift, const std::vector<FilterInstanceSpec>& chain);

// run_pipeline for options.segments spans (1: the plain run). Throws
// std::invalid_argument for what segments do not go with yet.
RunStats run_segmented(const PipelineOptions& options);

}  // namespace streamblur::detail
