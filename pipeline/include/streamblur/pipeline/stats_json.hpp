#pragma once
// The one JSON form of a run's statistics, used by the CLI (--stats-json and
// the batch summary), the benchmark and Python. The keys are listed in
// docs/cli.md ("Statistics").
#include <string>

#include "streamblur/pipeline/batch.hpp"
#include "streamblur/pipeline/pipeline.hpp"

namespace streamblur {

// RunStats as one JSON object: backend, decoder, device, filters, frames,
// wall_s, fps, setup_s, first_frame_s, finish_s, input_format,
// processing_format, decode_warnings, stopped_early, bounding_stage,
// gpu_memory_bytes and stages (decode, upload, filter, download, encode:
// busy_s and blocked_s each). `indent` < 0: one line.
std::string run_stats_json(const RunStats& stats, int indent = -1);

// One file of a batch: input, output, ok, error (when it failed), skipped and
// why (when it never ran: "interrupted" or "output exists"), device, then the
// keys of run_stats_json. For a file that did not succeed, the texts a run
// decides (backend, decoder, filters, formats, bounding_stage) are null and
// the counts 0; wall_s is the time until it failed.
std::string batch_result_json(const BatchResult& result, int indent = -1);

}  // namespace streamblur
