#pragma once
// Many files at once: several pipelines per GPU, spread over the chosen GPUs
// (or run side by side on the CPU backend). One failing file never stops the
// others; each output is as atomic as a single run's.
#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "streamblur/pipeline/pipeline.hpp"

namespace streamblur {

// One file of a batch: its input and its output path.
struct BatchJob {
  std::string input;
  std::string output;
};

// Aggregate progress over the whole batch.
struct BatchProgress {
  int files_total = 0;
  int files_done = 0;      // finished, with or without success
  int files_failed = 0;
  int running = 0;
  int64_t frames = 0;      // over all files, finished and running
  double elapsed_s = 0;
  double fps = 0;          // aggregate: frames / elapsed
  double eta_s = -1;       // -1 when unknown (or stopping); from the frame estimates of the
                           // started files when all are known, else files left x mean time per file
  bool final = false;
};

// How one job of a batch went.
struct BatchResult {
  BatchJob job;
  bool ok = false;
  bool skipped = false;    // never started (then !ok): the batch was stopped, or kept_existing
  bool kept_existing = false;  // skipped because its output exists (BatchOptions::skip_existing)
  std::string error;       // one line, when !ok (run_pipeline's message, which usually names the file)
  bool output_exists = false;  // it failed because its output exists and overwriting was not asked for
  int device = -1;         // CUDA device it ran on (-1: CPU backend or not started)
  RunStats stats;          // when ok; for a failure only wall_s (the time until it failed)
};

// What run_batch runs and how (see run_batch).
struct BatchOptions {
  std::vector<BatchJob> jobs;
  // Everything but input, output, device, progress, stop and frame_sink is
  // taken from here for every job (filters, backend, hwdec, encoder, inflight...).
  // An empty encoder.codec means default_encoder_for(each output).
  PipelineOptions base;
  int jobs_per_device = 2;      // pipelines at once per GPU (or in all, on the CPU backend)
  std::vector<int> devices;     // CUDA devices to use; empty: every device
  // About 4 times a second from a monitor thread, and once at the end (final,
  // from the calling thread); never two calls at once. If it throws, the batch
  // stops as with `stop` and run_batch rethrows the exception at the end.
  std::function<void(const BatchProgress&)> progress;
  // When set: no new file starts, and the running pipelines stop as a single
  // run does (they finish the frames in flight and write a playable output).
  const std::atomic<bool>* stop = nullptr;
  // Notes of each pipeline with the job they came from, one call at a time.
  // Default: base.note with "INPUT: " in front, or a line on stderr.
  std::function<void(const BatchJob&, const std::string&)> note;
  // A job whose output exists (a regular file) is not run but kept, and its
  // result is skipped with kept_existing, so that a re-run resumes where an
  // earlier one stopped. Progress counts only the jobs that run.
  bool skip_existing = false;
};

// Parses "all" (empty result: every device) or "0,1,3" (spaces allowed); throws
// std::invalid_argument naming the bad part (empty, not a number, negative, twice).
std::vector<int> parse_device_list(const std::string& text);

// Runs every job; returns one result per job, in the order of `jobs`. Workers:
// jobs_per_device per chosen GPU (worker i on devices[i % n]) on CUDA,
// jobs_per_device in all on the CPU backend, never more than there are jobs.
// Throws std::invalid_argument for bad options before anything runs (no jobs,
// jobs_per_device < 1, two jobs with one output, an output that is an input,
// a device that does not exist, CUDA without a device), never for a failing
// file (see BatchResult), and otherwise only what `progress` threw.
std::vector<BatchResult> run_batch(const BatchOptions& options);

}  // namespace streamblur
