#pragma once
// The segmented run behind PipelineOptions::segments (segments.cpp).
// Internal to streamblur_pipeline.
#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "streamblur/io/keyframe_index.hpp"
#include "streamblur/io/reader.hpp"
#include "streamblur/io/span_join.hpp"
#include "streamblur/pipeline/detail/span_run.hpp"
#include "streamblur/pipeline/pipeline.hpp"

namespace streamblur::detail {

inline constexpr int kMaxSegments = 64;

// segments = auto: spans of at least this many frames (shorter ones cost
// more in start-up than they give), on the CUDA backend at most
// kAutoCudaSpans at once (one NVDEC session each: 8 filled the decoder
// engines of an H100 and H200, 16 ran slower; docs/performance.md), within
// half the device's free memory at kSpanDeviceFrames frames' worth each (a
// 1080p NVDEC span held about 215 MiB, 70 of its frames); on the CPU backend
// at most half the cores and kAutoCpuSpans.
inline constexpr int64_t kAutoMinSpanFrames = 240;
inline constexpr int kAutoCudaSpans = 8;
inline constexpr int kAutoCpuSpans = 8;
inline constexpr int64_t kSpanDeviceFrames = 80;
// With workers that decode on the CPU: up to this many spans per worker, of
// at least this many frames, dealt out as workers free up.
inline constexpr int kMixedSpansPerWorker = 3;
inline constexpr int64_t kMixedMinSpanFrames = 120;

// How a segmented run's spans run: `count` at a time, the last `cpu` of
// those workers decoding on the CPU, the others as the options ask.
struct SpanWorkers {
  int count = 1;
  int cpu = 0;
  HwDecode decoder(const PipelineOptions& o, int worker) const {
    return worker >= count - cpu ? HwDecode::None : o.hwdec;
  }
};

// The workers for a run of `frames` frames of `frame_bytes` bytes each:
// options.segments and options.segments_cpu_decoders, or what auto chooses
// (then *why says what and why, for a note).
SpanWorkers span_workers(const PipelineOptions& options, int64_t frames, int64_t frame_bytes, std::string* why);

// PipelineOptions::note, or stderr.
std::function<void(const std::string&)> note_of(const PipelineOptions& options);
// `note` for lines not said before (the spans say the same things), from any thread.
std::function<void(const std::string&)> said_once(std::function<void(const std::string&)> note);

// What segments do not go with yet: one line each (std::invalid_argument),
// before anything is opened.
void check_segment_options(const PipelineOptions& options);

// Why the input cannot be opened once per span, "" when it can: a pipe, a
// FIFO or a device is read once, and so is a network stream.
std::string read_once(const std::string& input);

// What a segmented run is cut into, from a reader of its input opened with
// the run's trim and the video's packet index: the workers, the spans, the
// other streams' window (copy.shift: the trim's start, taken off every
// timestamp) and the notes to say; or, where it cannot be cut, why it runs
// as one segment.
struct SegmentCut {
  io::SpanPlanning plan;
  SpanWorkers workers;
  io::CopyWindow copy;
  std::vector<std::string> notes;
  std::string one_because;  // not empty: run it as one segment
  std::vector<int64_t> span_frames() const;
};
SegmentCut cut_segments(const PipelineOptions& options, const io::MediaReader& source,
                        const io::VideoPacketIndex& index);

// Why spans cannot be joined as they are (empty: they can): a span gave
// other than the plan's frame count, or its encoder's headers differ from
// the first span's.
std::string unjoinable(const std::vector<int64_t>& planned, const std::vector<int64_t>& frames,
                       const std::vector<io::EncodedVideo>& encoded);
// The spans' statistics as one run's: counts and stage times added up.
RunStats combined(const std::vector<RunStats>& spans);
// The output's encoder options as each span's pipeline has them, for the join.
io::EncoderOptions join_options(const PipelineOptions& options, const std::function<void(const std::string&)>& note);

// A span's own options: one segment, the trim left to the plan, stopped by
// `halt`, no progress of its own.
PipelineOptions span_options(const PipelineOptions& options, std::atomic<bool>* halt);
// What run_span takes for span `s` of a plan: its window, its first frame's
// index, the trim's shift and the chain every span shares.
SpanRun span_run_of(const io::SpanPlan& s, int64_t shift, const std::vector<FilterInstanceSpec>& chain);

// run_pipeline for options.segments spans (1: the plain run). Throws
// std::invalid_argument for what segments do not go with yet.
RunStats run_segmented(const PipelineOptions& options);

}  // namespace streamblur::detail
