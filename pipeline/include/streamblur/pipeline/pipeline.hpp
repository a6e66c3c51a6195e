#pragma once
// The streaming pipeline: a oneTBB flow graph
//   source (serial decode: CPU or NVDEC) -> [slot join] -> stage-in -> filter chain
//     -> gpu wait -> finish -> sequencer -> sink (serial: encoder, null, or the caller's code)
// where the frame slots (pinned host planes, device planes, a non-blocking
// stream, events) are the tokens that bound the frames in flight. Memory is
// `inflight` slots plus the one decoded frame the source node holds (and, with
// NVDEC, a decoder surface pool sized for them). pipeline/src/pipeline.cpp
// holds the stages; NVDEC frames enter in `stage_in`, sinks take them in `sink`.
#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>

#include "streamblur/io/writer.hpp"
#include "streamblur/pipeline/filter.hpp"

namespace streamblur {

// The backend a run asks for; resolve_backend() turns it into a Backend.
enum class BackendChoice { Auto, Cpu, Cuda };

// Auto picks CUDA when a device is present. Throws when CUDA is asked for and
// there is no device, or this build has no CUDA backend. `why` receives a
// sentence saying what was chosen. The pipeline, batch runs and the Python
// module all choose by this rule.
Backend resolve_backend(BackendChoice choice, std::string* why = nullptr);
// The same for `devices` CUDA devices, counted already.
Backend resolve_backend(BackendChoice choice, int devices, std::string* why);

// The CUDA devices usable here: 0 without a GPU, without a driver, or in a
// build without the CUDA backend. Throws for a driver error other than those
// (kernels' cuda::device_count has the rule).
int cuda_device_count();

// What PipelineOptions::progress receives.
struct Progress {
  int64_t frames = 0;          // encoded (or sunk) so far
  int64_t total_estimate = 0;  // 0 when unknown
  double elapsed_s = 0;
  double fps = 0;
  double media_time_s = 0;     // timestamp of the last frame
  double duration_s = 0;       // 0 when unknown
  bool final = false;
};

// How frames are decoded. Auto: NVDEC (FFmpeg's CUDA hwaccel, frames stay in
// device memory) when the CUDA backend runs, the codec and format are ones
// NVDEC takes and the decoder can be created; otherwise the CPU, with a note
// saying why. Nvdec: the same, but no usable device is an error. None: CPU.
enum class HwDecode { Auto, Nvdec, None };

// Where a frame sink wants its planes: in device memory (the CUDA backend's
// slot planes, no download) or in host memory (pinned slot planes on CUDA,
// the decoded frame on the CPU backend).
enum class SinkMemory { Device, Host };

// One filtered frame handed to PipelineOptions::frame_sink, in presentation
// order, from one thread at a time.
// Ownership: the planes belong to the pipeline and are valid only until the
// callback returns; the slot is then reused for a later frame. To keep a frame,
// copy it during the callback. For device planes, work the callback enqueues on
// `stream` is ordered before the slot's reuse (the next frame in the slot is
// queued on the same stream), so an asynchronous copy on `stream` is safe; work
// on any other stream must be finished before returning.
struct FrameView {
  int64_t index = 0;                // 0, 1, 2, ... in output order
  int64_t pts = 0;                  // in time_base (AV_NOPTS_VALUE when unknown)
  double pts_seconds = 0;           // NaN when unknown
  int time_base_num = 0, time_base_den = 1;
  FrameLayout layout;               // the processing format (sizes, channels, sample size per plane)
  std::array<AnyPlane, 4> planes{}; // layout.num_planes of them
  bool on_device = false;           // device memory of `device` (else host memory)
  int device = 0;
  DeviceStream stream = nullptr;    // the slot's stream (device planes; the frame's work on it is complete)
};

// Time one pipeline stage spent working and waiting.
struct StageStats {
  double busy_s = 0;     // time spent working in the stage (GPU stages: measured with CUDA events)
  double blocked_s = 0;  // time its output waited for the next stage to take it
};

// What run_pipeline returns: counts, times per stage, formats, devices.
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
  std::string decoder = "cpu";       // "cpu" or "nvdec"
  int device = -1;                   // CUDA device used (-1: none)
  // Device memory of this pipeline: slots and filter scratch (exact) plus the
  // NVDEC decoder's surfaces (estimated from its pool, see io/hw_decode.hpp).
  std::size_t gpu_memory_bytes = 0;
  // Where the wall time went outside the stages: set-up before the first frame
  // is read (input, decoder, CUDA context, slots), until the first frame reaches
  // the sink (encoder opening included), and flushing the encoder at the end.
  double setup_s = 0, first_frame_s = 0, finish_s = 0;
  // A segmented run (PipelineOptions::segments): the spans it ran (1 for
  // a plain run), the keyframe scan before them and the join after them;
  // the counts and stage times above are the spans' added up.
  int segments = 1;
  double scan_s = 0, join_s = 0;
};

// Everything one run_pipeline call does: input, output, filters, backend, hooks.
struct PipelineOptions {
  std::string input;
  std::string output;           // empty: frames go to a null sink (no encoding)
  std::string filters;          // "gblur=sigma=2,boxblur=radius=3"; empty: no filter
  BackendChoice backend = BackendChoice::Auto;
  int inflight = 4;             // frame slots; bounds memory whatever the clip's length
  io::EncoderOptions encoder;
  int decoder_threads = 0;
  // Options of the input's demuxer and protocol (io::ReaderOptions::format_options).
  std::map<std::string, std::string> input_options;
  bool overwrite = false;       // replace an existing output
  std::function<void(const Progress&)> progress;  // from the encode stage, about 4 times a second and once at the end
  const std::atomic<bool>* stop = nullptr;        // when set: stop reading, finish what is in flight, finalise
  std::function<void(const std::string&)> note;   // notes for the user; default: a line on stderr
  HwDecode hwdec = HwDecode::Auto;
  // Read the input at its native frame rate (ffmpeg's -re, as for live
  // streaming): each frame is decoded no earlier than its timestamp's
  // distance from the first frame's after the first frame was read, so a
  // 300-frame 30 fps clip takes at least 10 s. The stop flag ends a wait at once.
  bool realtime = false;
  int device = 0;                // CUDA device index for everything this pipeline does on the GPU
  // When set, filtered frames go to this callback (output must be empty); an
  // exception it throws stops the run and is rethrown by run_pipeline.
  std::function<void(const FrameView&)> frame_sink;
  SinkMemory sink_memory = SinkMemory::Device;  // where frame_sink's planes live on the CUDA backend
  // Trimming, as ffmpeg's input-side -ss and -t and its -frames:v (README
  // "Trimming"; io::ReadSpan has the exact rule). start_seconds counts from the
  // input's start time: the reader seeks to the keyframe at or before it,
  // decodes forward and drops the video frames before it; when it is set,
  // every output timestamp (video, copied streams, chapters, FrameView::pts)
  // is shifted back by it, so the output begins near 0. duration_seconds ends
  // the span at start + duration; max_frames stops after that many frames. The
  // copied streams keep the packets whose pts lies in the same span. A span
  // with no video frame in it is an error ("no video frames in the requested
  // span ..."), and nothing is written. Bad values (start < 0, duration <= 0,
  // max_frames < 1) throw std::invalid_argument before anything is opened.
  std::optional<double> start_seconds;
  std::optional<double> duration_seconds;
  std::optional<int64_t> max_frames;
  // A regions file that can never match this video (no boxes, frame keys past
  // the last frame, pts keys that look like milliseconds or frame numbers,
  // every box outside the picture) is reported through `note` as a warning
  // with the numbers; strict_regions makes it an error instead.
  bool strict_regions = false;
  // Cut the input at keyframes into this many spans (1 to 64), run them at
  // once, each through its own decoder, filters and encoder with these
  // settings, and join the encoded spans into the output with the input's
  // other streams copied once. Fewer spans, with a note, where the input has
  // too few keyframes; one, with a note, where the spans' frame counts or
  // encoder headers do not agree with the plan. Trimming cuts the plan (the
  // output is the trimmed plain run's); regions files see the whole run's
  // frame indices and pts, and are checked over all the spans. A frame sink
  // gets every frame in order: the input is cut into short spans (60 to 600
  // frames), `segments` of them run at a time, each worker taking the next in
  // turn, and the frames of the spans ahead wait in host memory (about 2 GiB
  // in all); the sink's frames must be in host memory (SinkMemory::Host, or
  // the CPU backend), and a stop ends it early as it does a plain run. Not
  // yet with realtime reading (std::invalid_argument). A stop (Ctrl-C) of a
  // run with an output fails it and writes no output. kSegmentsAuto (0):
  // as many as pay, in a note: spans of 240 frames or more, on the CUDA
  // backend up to 8 at once (one NVDEC session each) within half the
  // device's free memory, on the CPU backend up to half the cores (at most 8).
  int segments = 1;
  // On the CUDA backend, how many of the spans at once decode on the CPU
  // (HwDecode::None); the others decode as `hwdec` says. With any, the input
  // is cut into up to 3 spans per worker (120 frames or more each), each
  // taken by the next worker free, so that the faster decoders take more.
  int segments_cpu_decoders = 0;
};

// PipelineOptions::segments chosen by the run (CLI: --segments auto).
inline constexpr int kSegmentsAuto = 0;

// Parses "auto", "nvdec" (also "cuda"), "none" (also "cpu"); throws
// std::invalid_argument naming the value otherwise.
HwDecode parse_hwdec(const std::string& text);

// Parses a time as ffmpeg does (av_parse_time, a duration): seconds with an
// optional fraction and unit ("12", "12.5", "1500ms", "250us"), or
// [HH:]MM:SS[.m...] ("1:30", "01:02:03.5"). Negative times are refused.
// Returns seconds; throws std::invalid_argument naming the text otherwise.
double parse_time(const std::string& text);

// The encoder used when none is named: the container's own, as ffmpeg picks
// it (io::default_video_encoder: libx264 for mp4 and mkv, libvpx-vp9 for webm,
// png for a .png, ...).
std::string default_encoder_for(const std::string& output_path, const std::string& format_name = {});

// Runs the whole job. The output is written to a temporary file beside it and
// renamed on success, so a failure leaves no partial output; the input is only
// read. Throws one clear error (std::runtime_error and subclasses) on failure.
RunStats run_pipeline(const PipelineOptions& options);

}  // namespace streamblur
