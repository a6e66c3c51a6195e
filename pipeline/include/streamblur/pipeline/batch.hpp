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

struct BatchJob {
  std::string input;
  std::string output;
};

struct BatchProgress {
  int files_total = 0;
  int files_done = 0;      // finished, with or without success
  int files_failed = 0;
  int running = 0;
  int64_t frames = 0;      // over all files, finished and running
  double elapsed_s = 0;
  double fps = 0;          // aggregate: frames / elapsed
  double eta_s = -1;       // -1 when unknown
  bool final = false;
};

struct BatchResult {
  BatchJob job;
  bool ok = false;
  std::string error;       // one line, when !ok
  int device = -1;         // CUDA device it ran on (-1: CPU)
  RunStats stats;          // when ok
};

struct BatchOptions {
  std::vector<BatchJob> jobs;
  // Everything but input, output, device, progress, stop and frame_sink is
  // taken from here for every job (filters, backend, hwdec, encoder, inflight...).
  PipelineOptions base;
  int jobs_per_device = 2;      // pipelines at once per GPU (or in all, on the CPU backend)
  std::vector<int> devices;     // CUDA devices to use; empty: every device
  std::function<void(const BatchProgress&)> progress;  // about 4 times a second and once at the end
  const std::atomic<bool>* stop = nullptr;             // stops starting files and stops the running ones
};

// Parses "all" (empty result: every device) or "0,1,3"; throws
// std::invalid_argument naming the bad part.
std::vector<int> parse_device_list(const std::string& text);

// Runs every job; returns one result per job, in the order of `jobs`. Throws
// only for bad options (std::invalid_argument), never for a failing file.
std::vector<BatchResult> run_batch(const BatchOptions& options);

}  // namespace streamblur
