#pragma once
// The streaming pipeline: a oneTBB flow graph
//   decode (serial) -> [slot join] -> upload -> filter chain -> download -> sequencer -> encode+mux (serial)
// where the frame slots (pinned host planes, device planes, a non-blocking
// stream, events) are the tokens that bound the frames in flight.
#include <atomic>
#include <cstdint>
#include <functional>
#include <string>

#include "streamblur/io/writer.hpp"
#include "streamblur/pipeline/filter.hpp"

namespace streamblur {

enum class BackendChoice { Auto, Cpu, Cuda };

// Auto picks CUDA when a device is present. Throws when CUDA is asked for and
// there is no device. `why` receives a sentence saying what was chosen.
Backend resolve_backend(BackendChoice choice, std::string* why = nullptr);

struct Progress {
  int64_t frames = 0;          // encoded (or sunk) so far
  int64_t total_estimate = 0;  // 0 when unknown
  double elapsed_s = 0;
  double fps = 0;
  double media_time_s = 0;     // timestamp of the last frame
  double duration_s = 0;       // 0 when unknown
  bool final = false;
};

struct StageStats {
  double busy_s = 0;     // time spent working in the stage (GPU stages: measured with CUDA events)
  double blocked_s = 0;  // time its output waited for the next stage to take it
};

struct RunStats {
  std::string backend;
  std::string filters;
  int64_t frames = 0;
  double wall_s = 0;
  double fps = 0;
  StageStats decode, upload, filter, download, encode;
  std::string bounding_stage;  // the stage with the most busy time per unit of parallelism
  int decode_warnings = 0;
  bool stopped_early = false;  // the stop flag ended reading before the end of the input
  std::string input_format, processing_format;
};

struct PipelineOptions {
  std::string input;
  std::string output;           // empty: frames go to a null sink (no encoding)
  std::string filters;          // "gblur=sigma=2,boxblur=radius=3"; empty: no filter
  BackendChoice backend = BackendChoice::Auto;
  int inflight = 4;             // frame slots; bounds memory whatever the clip's length
  io::EncoderOptions encoder;
  int decoder_threads = 0;
  bool overwrite = false;       // replace an existing output
  std::function<void(const Progress&)> progress;  // from the encode stage, about 4 times a second and once at the end
  const std::atomic<bool>* stop = nullptr;        // when set: stop reading, finish what is in flight, finalise
  std::function<void(const std::string&)> note;   // notes for the user; default: a line on stderr
};

// The encoder used when none is named: the container's own for image outputs
// (png, ...), libx264 otherwise.
std::string default_encoder_for(const std::string& output_path);

// Runs the whole job. The output is written to a temporary file beside it and
// renamed on success, so a failure leaves no partial output; the input is only
// read. Throws one clear error (std::runtime_error and subclasses) on failure.
RunStats run_pipeline(const PipelineOptions& options);

}  // namespace streamblur
