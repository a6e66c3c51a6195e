#pragma once
// streamblur-bench scale: aggregate throughput of N pipelines at once (each its
// own run_pipeline on its own thread, all started together), with CPU decode,
// NVDEC and a half-and-half mix, spread over the chosen GPUs; FFmpeg's
// `-hwaccel cuda` decode-only processes side by side; a 1-GPU against all-GPUs
// line when more than one device is chosen.
#include <nlohmann/json.hpp>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "streamblur/pipeline/pipeline.hpp"

namespace streamblur::bench {

struct ScaleBenchOptions {
  std::vector<int> streams{1, 2, 4, 8};     // group sizes (1 is always run: the reference of every row)
  std::vector<int> devices;                 // CUDA devices; empty: every device
  int frames = 1200;                        // frames of the sample clip
  std::pair<int, int> size{1920, 1080};     // size of the sample clip
  std::string clip;                         // the user's clip instead of the sample
  std::string work_dir = "bench-clips";     // samples (kept) and transcode outputs (removed)
  BackendChoice backend = BackendChoice::Auto;
  std::string chain = "gblur=sigma=2,boxblur=radius=3";
  std::string codec = "libx264";
  std::string preset = "ultrafast";
  std::vector<std::string> jobs{"chain-null", "chain-transcode"};
  std::vector<std::string> decoders{"cpu", "nvdec", "mixed"};
  bool nvdec = true;                        // false: NVDEC and mixed rows are skipped
  bool ffmpeg = true;                       // ffmpeg -hwaccel cuda decode-only processes when found
  std::string ffmpeg_program;               // empty: look on the PATH
  int compare_streams = 8;                  // streams of the 1-GPU / all-GPUs comparison
  int decoder_threads = 0;        // decoder threads of every stream (0: the library default)
  std::function<void(const std::string&)> progress;  // a line per step
};

struct ScaleRow {
  std::string job;                // chain-null, chain-transcode, decode-null (ffmpeg)
  std::string decode;             // cpu, nvdec, mixed
  std::string tool = "streamblur";  // or ffmpeg
  int streams = 0;
  std::vector<int> devices;       // devices the streams were spread over (empty: CPU backend)
  int nvdec_streams = 0;          // streams whose run reported NVDEC decoding
  int64_t frames = 0;             // all streams together
  double wall_s = 0;              // the whole group, first start to last finish
  double fps = 0;                 // aggregate: frames / wall_s
  double per_stream_fps = 0;      // fps / streams
  double ratio_1stream = 0;       // fps / the 1-stream fps of the same row
  double reference_fps = 0;       // that 1-stream fps (mixed: mean of the 1-stream cpu and nvdec rows)
  double gpu_memory_per_stream = 0;         // mean RunStats::gpu_memory_bytes
  double gpu_memory_growth_per_stream = 0;  // peak growth of used device memory (cudaMemGetInfo) / streams
  bool skipped = false;
  bool failed = false;
  std::string note;
};

struct ScaleReport {
  std::string clip;
  int64_t frames_per_stream = 0;
  std::string backend;              // cuda or cpu
  std::vector<int> devices;
  bool nvdec_available = false;
  std::string nvdec_reason;         // why not, when not
  std::string ffmpeg;               // the program used; empty: none
  std::vector<ScaleRow> rows;
  bool compared = false;            // the 1-GPU / all-GPUs comparison ran
  ScaleRow one_device, all_devices;
  double compare_ratio = 0;         // all_devices.fps / one_device.fps
  bool any_failed = false;
};

ScaleReport run_scale_bench(const ScaleBenchOptions& options);
// The table, then the target lines (P7; the 2-GPU ratio).
void print_scale_report(const ScaleReport& report);
nlohmann::json scale_json(const ScaleReport& report);

}  // namespace streamblur::bench
