#pragma once
// The segmented run behind PipelineOptions::segments (segments.cpp).
// Internal to streamblur_pipeline.
#include "streamblur/pipeline/pipeline.hpp"

namespace streamblur::detail {

inline constexpr int kMaxSegments = 64;

// run_pipeline for options.segments spans (1: the plain run). Throws
// std::invalid_argument for what segments do not go with yet.
RunStats run_segmented(const PipelineOptions& options);

}  // namespace streamblur::detail
