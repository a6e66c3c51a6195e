#pragma once
// streamblur-bench pipeline: throughput of whole jobs on sample clips, each
// against decode-only and the unfiltered transcode of the same clip, with
// FFmpeg's own filters side by side when an `ffmpeg` program is on the PATH.
#include <functional>
#include <string>
#include <vector>

#include "streamblur/pipeline/pipeline.hpp"

namespace streamblur::bench {

struct ClipSpec {
  std::string name;  // "1080p", "2160p" or the user's file name
  std::string path;
};

struct PipelineBenchOptions {
  std::string clips_dir;        // the user's clips (every file in it); empty: make samples
  std::string work_dir = "bench-clips";  // where samples are made (kept for the next run) and outputs go
  int sample_frames = 300;
  std::vector<std::pair<int, int>> sample_sizes{{1920, 1080}, {3840, 2160}};
  std::string codec = "libx264";
  std::string preset = "ultrafast";
  bool cpu = true;              // also run the CPU backend
  bool cuda = true;             // run the CUDA backend when a device is present
  bool ffmpeg = true;           // FFmpeg side by side when found on the PATH
  std::string gblur = "gblur=sigma=2";
  std::string chain = "gblur=sigma=2,boxblur=radius=3";
  std::function<void(const std::string&)> progress;  // a line per step
};

struct JobResult {
  std::string clip;
  std::string job;      // decode, transcode, gblur-transcode, chain-null
  std::string tool;     // streamblur or ffmpeg
  std::string backend;  // cuda, cpu, or "" for ffmpeg / jobs without filters
  int64_t frames = 0;
  double wall_s = 0;
  double fps = 0;
  RunStats stats;       // streamblur jobs only
  double ratio = 0;     // against the job's reference (see reference)
  std::string reference;
};

// Makes (or reuses) the sample clips and returns them.
std::vector<ClipSpec> prepare_clips(const PipelineBenchOptions& options);
std::vector<JobResult> run_pipeline_bench(const PipelineBenchOptions& options);
// The ffmpeg program when on the PATH, else "".
std::string find_ffmpeg();

}  // namespace streamblur::bench
