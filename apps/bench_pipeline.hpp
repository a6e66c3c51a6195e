#pragma once
// streamblur-bench pipeline: throughput of whole jobs on sample clips, each
// against decode-only and the unfiltered transcode of the same clip, with
// FFmpeg's own filters side by side when an `ffmpeg` program is on the PATH.
// With a CUDA device it adds NVDEC rows (decode-only, gblur transcode, chain to
// a null sink), each against the CPU-decode references of the same clip.
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "streamblur/pipeline/pipeline.hpp"
#include "streamblur/testing/psnr.hpp"

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
  bool nvdec = true;            // NVDEC rows when a device is present
  bool ffmpeg = true;           // FFmpeg side by side when found on the PATH
  bool ffmpeg_filters = true;   // also ffmpeg's gblur transcode and chain (else only its decode and transcode)
  std::string ffmpeg_program;   // the ffmpeg to run; empty: look on the PATH
  std::string gblur = "gblur=sigma=2";
  std::string chain = "gblur=sigma=2,boxblur=radius=3";
  int segments = 1;             // > 1: the filtered jobs again in this many segments, against their plain rows
  int segment_cpu_decoders = 0; // of those segments' workers, how many decode on the CPU (CUDA backend)
  std::function<void(const std::string&)> progress;  // a line per step
};

struct JobResult {
  std::string clip;
  std::string job;      // decode, transcode, gblur-transcode, chain-null
  std::string tool;     // streamblur or ffmpeg
  std::string backend;  // cuda, cpu, or "" for ffmpeg / CPU-decoded jobs without filters
  std::string decoder = "cpu";  // cpu or nvdec (ffmpeg: nvdec for -hwaccel cuda)
  int64_t frames = 0;
  double wall_s = 0;
  double fps = 0;
  RunStats stats;       // streamblur jobs only
  double ratio = 0;     // against the job's reference (see reference); references are CPU-decode streamblur rows
                        // (ffmpeg rows: ffmpeg's own CPU rows)
  std::string reference;
  double vs_ffmpeg = 0;            // fps / ffmpeg's fps for the same job (same decoder when ffmpeg has it, else
                                   // ffmpeg's CPU decode); 0 when ffmpeg did not run
  double vs_ffmpeg_transcode = 0;  // gblur-transcode rows: fps / ffmpeg's own no-filter CPU transcode (target P6)
  // A segmented transcode row: its output and the plain row's against the
  // filtered frames (the chain's own, uncompressed), frame by frame.
  std::optional<io::SpanQuality> quality;
  std::string note;
};

// Makes (or reuses) the sample clips and returns them.
std::vector<ClipSpec> prepare_clips(const PipelineBenchOptions& options);
// `notes` (optional) receives lines for the end of the report (rows skipped and why).
std::vector<JobResult> run_pipeline_bench(const PipelineBenchOptions& options, std::vector<std::string>* notes = nullptr);
// The ffmpeg program when on the PATH, else "".
std::string find_ffmpeg();

// Runs `ffmpeg -hide_banner -nostdin -nostats -benchmark -y ARGS` with its log in
// log_path; returns the seconds of its own processing (the "rtime" of
// -benchmark, which leaves out the program's start-up and opening the input),
// else the wall time. Throws on failure. `log` (optional) receives the log text.
double run_ffmpeg(const std::string& ffmpeg, const std::string& args, const std::string& log_path,
                  std::string* log = nullptr);
// True when an ffmpeg log says its -hwaccel could not be set up (it then decodes on the CPU).
bool ffmpeg_hwaccel_fell_back(const std::string& log);

}  // namespace streamblur::bench
