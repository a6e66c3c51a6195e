#pragma once
// For the tests only: run_pipeline with hooks called inside its flow graph,
// where a test needs to act during a run. A detail header: in the source tree
// only, never installed (cmake/install.cmake), not part of the API.
#include <cstdint>
#include <functional>

#include "streamblur/pipeline/pipeline.hpp"

namespace streamblur::detail {

// What run_pipeline_with_hooks calls; an empty hook is not called.
struct PipelineTestHooks {
  // Called with the frame's decode index (0, 1, 2, ...) at the end of the
  // parallel finish stage (unlimited concurrency), before frames are put back
  // in order, so a test can delay some frames and make them complete out of
  // order. Called from several threads at once.
  std::function<void(int64_t frame_index)> on_finish;
};

// run_pipeline(options), calling `hooks` during the run.
RunStats run_pipeline_with_hooks(const PipelineOptions& options, const PipelineTestHooks& hooks);

}  // namespace streamblur::detail
