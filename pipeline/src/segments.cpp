// PipelineOptions::segments: the input cut at keyframes into spans
// (io::plan_spans), every span run at once through a pipeline of its own
// (detail::run_span), the encoders' packets spooled and joined into the
// output with the input's other streams (io::join_spans).
#include "segments.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <exception>
#include <filesystem>
#include <future>
#include <limits>
#include <iostream>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <stdexcept>
#include <thread>
#include <vector>

extern "C" {
#include <libavformat/avformat.h>
#include <libavutil/imgutils.h>
}

#include "streamblur/io/keyframe_index.hpp"
#include "streamblur/io/output_file.hpp"
#include "streamblur/io/reader.hpp"
#include "streamblur/io/span_join.hpp"
#include "streamblur/pipeline/detail/span_run.hpp"
#include "streamblur/pipeline/regions.hpp"
#include "device_session.hpp"
#include "region_checks.hpp"
#include "segment_frames.hpp"

namespace streamblur::detail {
namespace {
using Clock = std::chrono::steady_clock;
double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }
}  // namespace

void check_segment_options(const PipelineOptions& o) {
  if ((o.segments < 1 && o.segments != kSegmentsAuto) || o.segments > kMaxSegments)
    throw std::invalid_argument("segments must be between 1 and " + std::to_string(kMaxSegments) +
                                " (or auto), got " + std::to_string(o.segments));
  if (o.segments_cpu_decoders < 0 || o.segments_cpu_decoders > kMaxSegments)
    throw std::invalid_argument("segments_cpu_decoders must be between 0 and " + std::to_string(kMaxSegments) +
                                ", got " + std::to_string(o.segments_cpu_decoders));
  if (o.segments_cpu_decoders > 0 && o.hwdec == HwDecode::Nvdec)
    throw std::invalid_argument("segments decoded on the CPU (segments_cpu_decoders) do not go with NVDEC "
                                "decoding required (HwDecode::Nvdec)");
  auto refuse = [](const std::string& what) {
    throw std::invalid_argument("segments do not go with " + what + " yet; run it as one segment");
  };
  if (o.frame_sink && o.sink_memory == SinkMemory::Device && o.backend == BackendChoice::Cuda)
    refuse("a frame sink in device memory (SinkMemory::Host hands the frames over in host memory)");
  if (o.realtime) refuse("reading at the native frame rate");
  if (!o.input_options.empty()) refuse("input options");
  io::check_span(io::ReadSpan{.start_seconds = o.start_seconds, .duration_seconds = o.duration_seconds,
                              .max_frames = o.max_frames});
}

std::string read_once(const std::string& input) {
  if (input == "-" || input.rfind("pipe:", 0) == 0) return "the input is a pipe, read only once";
  if (input.find("://") != std::string::npos && input.rfind("file:", 0) != 0)
    return "the input is a network stream, read only once";
  std::error_code ec;
  const std::filesystem::file_status st = std::filesystem::status(input, ec);
  if (!ec && std::filesystem::exists(st) && !std::filesystem::is_regular_file(st))
    return "the input is a FIFO or a device, read only once";
  return "";
}

namespace {

// The part of the input a trimmed run keeps, cut as the plain run's reader
// cuts it (io::ReadSpan): the video frames by their pts on the microsecond
// clock, the other streams' window, and the shift of every timestamp.
struct Trim {
  int64_t keep_from = std::numeric_limits<int64_t>::min(), keep_until = std::numeric_limits<int64_t>::max();
  io::CopyWindow copy;
};

// `source` is a reader of the input opened with the options' start and duration.
Trim trim_of(const PipelineOptions& o, const io::MediaReader& source, const io::VideoPacketIndex& index) {
  Trim t;
  if (!o.start_seconds && !o.duration_seconds) return t;
  t.copy.shift = source.timestamp_shift();
  if (o.start_seconds) t.copy.start = t.copy.shift;
  if (source.span_end() != AV_NOPTS_VALUE) t.copy.end = source.span_end() + t.copy.shift;
  const auto us = [&](int64_t pts) { return av_rescale_q(pts, index.time_base, AV_TIME_BASE_Q); };
  for (const int64_t pts : index.frame_pts) {  // sorted
    if (t.copy.start != AV_NOPTS_VALUE && us(pts) < t.copy.start) continue;
    if (t.keep_from == std::numeric_limits<int64_t>::min()) t.keep_from = pts;
    if (t.copy.end != AV_NOPTS_VALUE && us(pts) >= t.copy.end) {
      t.keep_until = pts;
      break;
    }
  }
  return t;
}

// With a frame count, the kept part ends where the first frame past it begins.
void end_at_frame_limit(Trim& t, const io::SpanPlanning& plan, AVRational time_base) {
  const int64_t end_pts = plan.spans.back().end_pts;
  if (end_pts == std::numeric_limits<int64_t>::max() || end_pts == t.keep_until) return;
  const int64_t end = av_rescale_q(end_pts, time_base, AV_TIME_BASE_Q);
  t.copy.end = t.copy.end == AV_NOPTS_VALUE ? end : std::min(t.copy.end, end);
}

}  // namespace

std::function<void(const std::string&)> note_of(const PipelineOptions& o) {
  if (o.note) return o.note;
  return [](const std::string& s) { std::cerr << s << "\n"; };
}

std::function<void(const std::string&)> said_once(std::function<void(const std::string&)> note) {
  auto said = std::make_shared<std::pair<std::mutex, std::set<std::string>>>();
  return [said, note = std::move(note)](const std::string& line) {
    std::lock_guard<std::mutex> lock(said->first);
    if (said->second.insert(line).second) note(line);
  };
}

namespace {

// auto's choice (span_workers): the smallest of the bounds that apply.
SpanWorkers auto_workers(const PipelineOptions& o, int64_t frames, int64_t frame_bytes, std::string* why) {
  const Backend backend = resolve_backend(o.backend);
  struct Bound {
    int64_t n;
    std::string what;
  };
  std::vector<Bound> bounds{{frames / kAutoMinSpanFrames, "spans of " + std::to_string(kAutoMinSpanFrames) +
                                                              " frames or more in " + std::to_string(frames)}};
  if (backend == Backend::Cuda && o.hwdec != HwDecode::None) {
    bounds.push_back({kAutoCudaSpans, "one NVDEC session each"});
    const std::size_t free = free_device_memory(o.device);
    const int64_t per_span = std::max<int64_t>(frame_bytes, 1) * kSpanDeviceFrames;
    if (free > 0)
      bounds.push_back({static_cast<int64_t>(free / 2) / per_span,
                        "about " + std::to_string(per_span >> 20) + " MiB of device memory each, within half of the " +
                            std::to_string(free >> 20) + " MiB free"});
  } else {
    const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    bounds.push_back({std::min(kAutoCpuSpans, std::max(1, cores / 2)),
                      "half of the " + std::to_string(cores) + " cores, at most " + std::to_string(kAutoCpuSpans)});
  }
  const Bound& b = *std::min_element(bounds.begin(), bounds.end(),
                                     [](const Bound& x, const Bound& y) { return x.n < y.n; });
  const int n = static_cast<int>(std::clamp<int64_t>(b.n, 1, kMaxSegments));
  *why = n == 1 ? "auto: " + b.what : "auto: " + std::to_string(n) + " spans at once (" + b.what + ")";
  return {n, backend == Backend::Cuda ? std::min(o.segments_cpu_decoders, n) : 0};
}

}  // namespace

SpanWorkers span_workers(const PipelineOptions& o, int64_t frames, int64_t frame_bytes, std::string* why) {
  if (o.segments == kSegmentsAuto) return auto_workers(o, frames, frame_bytes, why);
  return {o.segments, std::min(o.segments_cpu_decoders, o.segments)};
}

namespace {

// The spans' runs, a worker for each of the spans at once. A span that fails stops the others; the
// first failure is rethrown. The caller's stop flag stops them all.
class SpanRuns {
 public:
  // Every span filters through `chain` and has its timestamps moved back by `shift` (a trim's start).
  SpanRuns(const PipelineOptions& opt, const io::SpanPlanning& plan, const std::vector<FilterInstanceSpec>& chain,
           int64_t shift, const SpanWorkers& workers, bool spool, const std::string& folder)
      : opt_(opt), plan_(plan), chain_(chain), shift_(shift), workers_(workers), n_(plan.spans.size()), stats_(n_),
        encoded_(n_), done_(n_) {
    for (const io::SpanPlan& s : plan.spans) total_ += s.frames;
    if (spool)
      for (std::size_t k = 0; k < n_; ++k) spools_.push_back(std::make_unique<io::PacketSpool>(folder));
  }

  // Each worker takes the next span not yet taken until none is left.
  void run() {
    std::vector<std::future<void>> runs;
    for (int w = 0; w < std::min<int>(workers_.count, static_cast<int>(n_)); ++w)
      runs.push_back(std::async(std::launch::async, [this, w] {
        for (std::size_t k = next_++; k < n_ && !halt_; k = next_++) run_one(k, w);
      }));
    for (std::future<void>& f : runs) {
      while (f.wait_for(std::chrono::milliseconds(10)) != std::future_status::ready)
        if (opt_.stop && opt_.stop->load()) halt_ = true;
      f.get();  // run_one keeps its exception
    }
    if (first_error_) std::rethrow_exception(first_error_);
    if (opt_.stop && opt_.stop->load()) throw std::runtime_error("stopped; a segmented run writes no partial output");
  }

  const std::vector<RunStats>& stats() const { return stats_; }
  const std::vector<io::EncodedVideo>& encoded() const { return encoded_; }
  std::vector<io::PacketSpool*> spools() const {
    std::vector<io::PacketSpool*> s;
    for (const auto& p : spools_) s.push_back(p.get());
    return s;
  }

 private:
  void run_one(std::size_t k, int worker) {
    PipelineOptions o = span_options(opt_, &halt_);
    o.hwdec = workers_.decoder(opt_, worker);
    if (opt_.progress) o.progress = [this, k](const Progress& p) { report(k, p); };
    o.note = notes_;
    SpanRun r = span_run_of(plan_.spans[k], shift_, chain_);
    if (!spools_.empty()) {
      io::PacketSpool* spool = spools_[k].get();
      r.video_packets = [spool](const AVPacket& p) { spool->append(p); };
      r.encoded = &encoded_[k];
    }
    try {
      stats_[k] = run_span(o, r);
    } catch (...) {
      std::lock_guard<std::mutex> lock(m_);
      if (!first_error_ && !halt_) first_error_ = std::current_exception();
      halt_ = true;
    }
  }

  // The whole run's progress from span k's: frames done in all spans.
  void report(std::size_t k, const Progress& p) {
    std::lock_guard<std::mutex> lock(m_);
    done_[k] = p.frames;
    Progress q;
    for (const int64_t d : done_) q.frames += d;
    q.total_estimate = total_;
    q.elapsed_s = since(t0_);
    q.fps = q.elapsed_s > 0 ? q.frames / q.elapsed_s : 0;
    q.duration_s = p.duration_s;
    if (total_ > 0) q.media_time_s = p.duration_s * static_cast<double>(q.frames) / static_cast<double>(total_);
    opt_.progress(q);
  }



  const PipelineOptions& opt_;
  const std::function<void(const std::string&)> notes_ = said_once(note_of(opt_));  // each span says the same
  const io::SpanPlanning& plan_;
  const std::vector<FilterInstanceSpec>& chain_;
  int64_t shift_;
  SpanWorkers workers_;
  std::size_t n_;
  std::atomic<std::size_t> next_{0};  // the next span a worker takes
  std::vector<RunStats> stats_;
  std::vector<io::EncodedVideo> encoded_;
  std::vector<std::unique_ptr<io::PacketSpool>> spools_;
  std::vector<int64_t> done_;  // frames done per span (progress)
  int64_t total_ = 0;
  Clock::time_point t0_ = Clock::now();
  std::atomic<bool> halt_{false};
  std::mutex m_;
  std::exception_ptr first_error_;
};

// Why the spans' outputs cannot be joined as they are (empty: they can).
}  // namespace

std::string unjoinable(const std::vector<int64_t>& planned, const std::vector<int64_t>& frames,
                       const std::vector<io::EncodedVideo>& e) {
  for (std::size_t k = 0; k < planned.size(); ++k)
    if (frames[k] != planned[k])
      return "span " + std::to_string(k + 1) + " gave " + std::to_string(frames[k]) +
             " frames where the keyframe index counts " + std::to_string(planned[k]);
  for (std::size_t k = 1; k < e.size(); ++k) {
    const AVCodecParameters &a = *e[0].par, &b = *e[k].par;
    if (a.extradata_size != b.extradata_size ||
        (a.extradata_size > 0 &&
         std::memcmp(a.extradata, b.extradata, static_cast<std::size_t>(a.extradata_size)) != 0))
      return "the encoder's headers (extradata) of span " + std::to_string(k + 1) + " differ from span 1's";
  }
  return "";
}

RunStats combined(const std::vector<RunStats>& spans) {
  RunStats st = spans.front();
  st.frames = 0;
  st.decode_warnings = 0;
  st.gpu_memory_bytes = 0;
  st.decode = st.upload = st.filter = st.download = st.encode = {};
  auto add = [](StageStats& a, const StageStats& b) {
    a.busy_s += b.busy_s;
    a.blocked_s += b.blocked_s;
  };
  for (const RunStats& s : spans) {
    st.frames += s.frames;
    st.decode_warnings += s.decode_warnings;
    st.gpu_memory_bytes += s.gpu_memory_bytes;
    add(st.decode, s.decode);
    add(st.upload, s.upload);
    add(st.filter, s.filter);
    add(st.download, s.download);
    add(st.encode, s.encode);
    if (s.decoder != st.decoder) st.decoder = "mixed";
  }
  st.segments = static_cast<int>(spans.size());
  return st;
}

io::EncoderOptions join_options(const PipelineOptions& o, const std::function<void(const std::string&)>& note) {
  io::EncoderOptions e = o.encoder;
  e.display_name = o.output;
  e.note = note;
  if (e.format_name.empty()) {
    const AVOutputFormat* of = io::guess_output_format(o.output);
    if (!of) throw std::runtime_error("cannot tell the container of output '" + o.output + "' from its extension");
    e.format_name = of->name;
  }
  return e;
}

namespace {

// The run as one segment, after `why` (a note).
RunStats one_segment(PipelineOptions o, const std::string& why) {
  note_of(o)("segments: one segment (" + why + ")");
  o.segments = 1;
  return run_pipeline(o);
}

// Frames the trimmed run keeps, and the bytes of one of them.
struct Kept {
  int64_t frames = 0, frame_bytes = 0;
};
Kept kept_of(const PipelineOptions& o, const io::MediaReader& source, const io::VideoPacketIndex& index,
             const Trim& t) {
  const io::VideoInfo& v = source.video();
  const int bytes = av_image_get_buffer_size(v.pix_fmt, v.width, v.height, 1);
  return {io::plan_spans(index, 1, t.keep_from, t.keep_until, o.max_frames).spans.front().frames,
          bytes > 0 ? bytes : int64_t{v.width} * v.height * 3};
}

// The spans to cut the input into: one per worker; with a frame sink (the
// frames held until their turn) short ones, that many at a time; with
// workers that decode on the CPU, a few per worker, so that the faster
// workers take more of them.
int wanted_spans(const PipelineOptions& o, const SpanWorkers& w, const Kept& kept) {
  if (o.frame_sink) return ordered_span_count(kept.frames, kept.frame_bytes, w.count);
  if (w.cpu == 0) return w.count;
  return static_cast<int>(std::clamp<int64_t>(kept.frames / kMixedMinSpanFrames, w.count, w.count * kMixedSpansPerWorker));
}

}  // namespace

SegmentCut cut_segments(const PipelineOptions& o, const io::MediaReader& source, const io::VideoPacketIndex& index) {
  Trim trim = trim_of(o, source, index);
  const Kept kept = kept_of(o, source, index, trim);
  SegmentCut c;
  std::string why_workers;
  c.workers = span_workers(o, kept.frames, kept.frame_bytes, &why_workers);
  if (c.workers.count < 2) {
    c.one_because = why_workers;
    return c;
  }
  c.plan = io::plan_spans(index, wanted_spans(o, c.workers, kept), trim.keep_from, trim.keep_until, o.max_frames);
  end_at_frame_limit(trim, c.plan, index.time_base);
  c.copy = trim.copy;
  if (c.plan.spans.size() < 2) {
    c.one_because = c.plan.note.empty() ? "the plan has one span" : c.plan.note;
    return c;
  }
  for (const std::string& n : {why_workers, c.plan.note})
    if (!n.empty()) c.notes.push_back("segments: " + n);
  return c;
}

std::vector<int64_t> SegmentCut::span_frames() const {
  std::vector<int64_t> f;
  for (const io::SpanPlan& s : plan.spans) f.push_back(s.frames);
  return f;
}

namespace {

RunStats finished(const PipelineOptions& opt, RunStats st, double scan_s, double join_s, double wall_s);

// A segmented run into a frame sink, every frame in order (segment_frames.hpp).
RunStats into_sink(const PipelineOptions& opt, const io::SpanPlanning& plan,
                   const std::vector<FilterInstanceSpec>& chain, int64_t shift, const SpanWorkers& workers,
                   RegionChecks& regions, double scan_s, Clock::time_point t0) {
  const InOrderRun r = run_spans_in_order(opt, plan, chain, shift, workers);
  RunStats st = combined(r.spans);
  st.frames = r.frames;
  st.stopped_early = r.stopped;
  if (!r.stopped) {
    for (std::size_t k = 0; k < plan.spans.size(); ++k)
      if (r.spans[k].frames != plan.spans[k].frames)
        throw std::runtime_error("span " + std::to_string(k + 1) + " gave " + std::to_string(r.spans[k].frames) +
                                 " frames where the keyframe index counts " + std::to_string(plan.spans[k].frames) +
                                 "; the frames handed over are not the whole video's");
    regions.used();
  }
  return finished(opt, st, scan_s, 0, since(t0));
}

// The whole run's statistics, and the final progress call.
RunStats finished(const PipelineOptions& opt, RunStats st, double scan_s, double join_s, double wall_s) {
  st.scan_s = scan_s;
  st.join_s = join_s;
  st.wall_s = wall_s;
  st.fps = st.wall_s > 0 ? st.frames / st.wall_s : 0;
  if (opt.progress) {
    Progress p;
    p.frames = p.total_estimate = st.frames;
    p.elapsed_s = st.wall_s;
    p.fps = st.fps;
    p.final = true;
    opt.progress(p);
  }
  return st;
}

}  // namespace

PipelineOptions span_options(const PipelineOptions& options, std::atomic<bool>* halt) {
  PipelineOptions o = options;
  o.segments = 1;
  o.start_seconds = o.duration_seconds = std::nullopt;  // the plan has the trim
  o.max_frames = std::nullopt;
  o.stop = halt;
  o.progress = nullptr;
  return o;
}

SpanRun span_run_of(const io::SpanPlan& s, int64_t shift, const std::vector<FilterInstanceSpec>& chain) {
  SpanRun r;
  if (s.start_pts != std::numeric_limits<int64_t>::min()) r.from_pts = s.start_pts;
  if (s.end_pts != std::numeric_limits<int64_t>::max()) r.until_pts = s.end_pts;
  r.first_index = s.first_frame;
  r.pts_shift = shift;
  r.chain = &chain;
  return r;
}

RunStats run_segmented(const PipelineOptions& opt) {
  check_segment_options(opt);
  if (opt.segments == 1) return run_pipeline(opt);
  if (const std::string why = read_once(opt.input); !why.empty()) return one_segment(opt, why);
  const auto t0 = Clock::now();
  const auto note = note_of(opt);
  const std::vector<FilterInstanceSpec> chain = parse_filter_chain(opt.filters);  // a bad chain fails first
  std::optional<io::OutputFile> out;
  if (!opt.output.empty()) out.emplace(opt.output, "output", io::OutputRules{opt.overwrite, {opt.input}, note});
  io::ReaderOptions ro;
  ro.warn = note;
  ro.span = io::ReadSpan{.start_seconds = opt.start_seconds, .duration_seconds = opt.duration_seconds};
  const io::MediaReader source(opt.input, ro);
  const io::VideoPacketIndex index = io::scan_video_packets(opt.input, source.video_stream_index());
  const SegmentCut cut = cut_segments(opt, source, index);
  const double scan_s = since(t0);
  if (!cut.one_because.empty()) {
    out.reset();
    return one_segment(opt, cut.one_because);
  }
  for (const std::string& n : cut.notes) note(n);
  const io::SpanPlanning& plan = cut.plan;
  const SpanWorkers& workers = cut.workers;
  RegionChecks regions(chain, opt.strict_regions, out.has_value(), note);
  int64_t frames = 0;
  for (const io::SpanPlan& s : plan.spans) frames += s.frames;
  regions.fit(region_video(source, opt.start_seconds.has_value(), frames));
  if (opt.frame_sink) return into_sink(opt, plan, chain, cut.copy.shift, workers, regions, since(t0), t0);
  const std::string folder = out ? std::filesystem::absolute(opt.output).parent_path().string() : "";
  SpanRuns runs(opt, plan, chain, cut.copy.shift, workers, out.has_value(), folder);
  runs.run();
  std::vector<int64_t> span_frames;
  for (const RunStats& st : runs.stats()) span_frames.push_back(st.frames);
  if (const std::string why = out ? unjoinable(cut.span_frames(), span_frames, runs.encoded()) : ""; !why.empty()) {
    out.reset();
    return one_segment(opt, why);
  }
  regions.used();  // strict: fails before the output is committed
  const auto t_join = Clock::now();
  if (out) {
    io::join_spans(opt.input, source.streams(), runs.encoded().front(), runs.spools(), out->url(),
                   join_options(opt, note), cut.copy);
    out->commit(frames);
  }
  return finished(opt, combined(runs.stats()), scan_s, since(t_join), since(t0));
}

}  // namespace streamblur::detail
