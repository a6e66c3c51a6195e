#include "streamblur/pipeline/pipeline.hpp"

#include <tbb/flow_graph.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <stdexcept>
#include <thread>
#include <future>
#include <unistd.h>
#include <vector>

extern "C" {
#include <libavformat/avformat.h>
#include <libavutil/imgutils.h>
#include <libavutil/parseutils.h>
}

#include "streamblur/io/av_error.hpp"
#include "streamblur/io/convert.hpp"
#include "streamblur/io/hw_decode.hpp"
#include "streamblur/io/reader.hpp"
#include "streamblur/io/stream_metadata.hpp"
#include "device_session.hpp"
#include "frame_route.hpp"
#include "segments.hpp"
#include "streamblur/config.hpp"
#include "streamblur/io/output_file.hpp"
#include "streamblur/pipeline/detail/span_run.hpp"
#include "streamblur/pipeline/detail/test_hooks.hpp"
#include "streamblur/pipeline/regions.hpp"
#include "region_checks.hpp"

namespace streamblur {
namespace fs = std::filesystem;
using detail::Clock;
using detail::seconds;
using detail::FrameSlot;
using detail::Decoded;
using detail::DecodedPtr;
using detail::GpuWait;

HwDecode parse_hwdec(const std::string& text) {
  if (text == "auto") return HwDecode::Auto;
  if (text == "nvdec" || text == "cuda") return HwDecode::Nvdec;
  if (text == "none" || text == "cpu") return HwDecode::None;
  throw std::invalid_argument("hwdec must be 'auto', 'nvdec' or 'none', got '" + text + "'");
}

double parse_time(const std::string& text) {
  int64_t us = 0;
  const std::string shape = " (use seconds such as 12.5, or [HH:]MM:SS[.m] such as 1:02.5)";
  if (text.empty() || av_parse_time(&us, text.c_str(), 1) < 0)
    throw std::invalid_argument("invalid time '" + text + "'" + shape);
  if (us < 0) throw std::invalid_argument("invalid time '" + text + "': it must not be negative");
  return static_cast<double>(us) / AV_TIME_BASE;
}

std::string default_encoder_for(const std::string& output_path, const std::string& format_name) {
  return io::default_video_encoder(output_path, format_name);
}

namespace {

// The input's video stream alone (a span's output: the segmented run copies
// the other streams, the metadata and the chapters once).
io::InputStreams video_only(io::InputStreams in) {
  in.streams = {in.streams.at(static_cast<std::size_t>(in.video_index))};
  in.video_index = 0;
  in.metadata = nullptr;
  in.chapters.clear();
  return in;
}

// Notes are printed once each.
class Notes {
 public:
  explicit Notes(std::function<void(const std::string&)> f) : f_(std::move(f)) {}
  void operator()(const std::string& s) const { f_(s); }
  void once(const std::string& s) {
    std::lock_guard<std::mutex> lock(m_);
    if (said_.insert(s).second) f_(s);
  }
 private:
  std::function<void(const std::string&)> f_;
  std::mutex m_;
  std::set<std::string> said_;
};

// The pipeline: set-up, then one function per stage of the flow graph
//   decode -> stage_in (+ filters) -> gpu_wait -> finish -> (in order) -> sink
// Sources: CPU decode (frames staged through pinned memory) or NVDEC (device
// surfaces converted in place on the slot's stream, see stage_in). Sinks: the
// encoder, the caller's frame_sink, or nothing (see sink).
class Pipeline {
 public:
  Pipeline(const PipelineOptions& opt, const detail::PipelineTestHooks& hooks, const detail::SpanRun* span_run = nullptr)
      : opt_(opt), hooks_(hooks), span_run_(span_run),
        note_(opt.note ? opt.note : [](const std::string& s) { std::cerr << s << "\n"; }) {}
  RunStats run();

 private:
  // set-up
  bool cuda_may_be_needed() const;
  io::AVBufferRefPtr nvdec_device(const AVCodecParameters& par, const AVCodec& decoder);
  io::ReadSpan read_span() const;
  void open_input();
  void estimate_total();
  std::runtime_error empty_span_error() const;
  void choose_backend();
  void make_route();
  void make_slots();
  void prepare_output();

  // stages
  DecodedPtr decode(tbb::flow_control& fc);
  double pace(int64_t pts);
  FrameContext frame_context(int64_t seq, const AVFrame& f) const;
  FrameSlot* stage_in(const DecodedPtr& d, FrameSlot* s);
  FrameSlot* finish(FrameSlot* s);
  FrameSlot* sink(FrameSlot* s);

  void emit_progress(bool final);
  RunStats collect_stats();

  const PipelineOptions& opt_;
  const detail::PipelineTestHooks& hooks_;
  const detail::SpanRun* span_run_;  // one span of a segmented run, or null (the whole input)
  int64_t first_index() const { return span_run_ ? span_run_->first_index : 0; }
  bool spooled() const { return span_run_ && span_run_->video_packets; }  // no output file
  Notes note_;
  std::vector<FilterInstanceSpec> chain_spec_;
  // Regions files that cannot match the video: before the first frame, and
  // what the run saw at its end (PipelineOptions::strict_regions).
  std::optional<detail::RegionChecks> region_checks_;
  bool null_sink_ = false;        // no output file
  detail::DeviceSession session_;  // CUDA start-up and NVDEC's device context
  std::unique_ptr<io::MediaReader> reader_;
  const io::VideoInfo* vinfo_ = nullptr;
  Backend backend_ = Backend::Cpu;
  int device_ = -1;               // CUDA device of this pipeline (-1: none)
  bool use_gpu_ = false;          // frames go through device memory (the CUDA route)
  AVPixelFormat proc_fmt_ = AV_PIX_FMT_NONE;
  FrameLayout layout_;
  std::unique_ptr<io::FrameConverter> to_proc_;
  std::unique_ptr<detail::FrameRoute> route_;  // the backend's stages (frame_route.hpp)
  std::vector<std::unique_ptr<FrameSlot>> slots_;
  std::optional<io::OutputFile> out_;  // the output's temporary until it is committed (output_file.hpp)
  io::EncoderOptions enc_;
  std::unique_ptr<io::MediaWriter> writer_;
  RunStats stats_;
  detail::Timers timers_;
  std::atomic<int64_t> hw_frames_{0}, sw_frames_{0};
  std::atomic<std::size_t> surface_pool_bytes_{0};
  int64_t frames_out_ = 0;
  int64_t seq_counter_ = 0;
  io::ReadSpan span_;             // start_seconds, duration_seconds, max_frames
  int64_t total_estimate_ = 0;    // frames the run will write (0: unknown)
  // PipelineOptions::realtime: the first frame's pts and when it was read.
  int64_t re_first_pts_ = AV_NOPTS_VALUE;
  Clock::time_point re_origin_;
  double last_media_time_ = 0;
  Clock::time_point t_start_, last_progress_;
};

// CUDA is started only when some work may run there: filters, NVDEC asked
// for, device planes for the caller, or the cuda backend asked for by name.
bool Pipeline::cuda_may_be_needed() const {
  switch (opt_.backend) {
    case BackendChoice::Cpu: return false;
    case BackendChoice::Cuda: return true;
    case BackendChoice::Auto:
      return !chain_spec_.empty() || opt_.hwdec == HwDecode::Nvdec ||
             (opt_.frame_sink && opt_.sink_memory == SinkMemory::Device);
  }
  return false;
}

// Called by the reader once the video stream is known (the CUDA context has
// been starting meanwhile): a CUDA device context for NVDEC, or nullptr.
io::AVBufferRefPtr Pipeline::nvdec_device(const AVCodecParameters& par, const AVCodec& decoder) {
  const bool required = opt_.hwdec == HwDecode::Nvdec;
  auto refuse = [&](const std::string& why) -> io::AVBufferRefPtr {
    if (required) throw std::runtime_error("NVDEC decoding was asked for, but " + why);
    note_("decode: cpu (" + why + ")");
    return nullptr;
  };
  const detail::DeviceStartup& cs = session_.startup();
  if (!cs.error.empty()) {
    if (required || opt_.backend == BackendChoice::Cuda) throw std::runtime_error(cs.error);
    return refuse(cs.error);
  }
  if (cs.devices == 0) return refuse(STREAMBLUR_HAVE_CUDA ? "no CUDA device is available" : kNoCudaBackend);
  // Auto only decodes on the GPU when the frames go on to GPU work.
  if (!required && chain_spec_.empty() && !(opt_.frame_sink && opt_.sink_memory == SinkMemory::Device)) return nullptr;
  if (const std::string why = io::nvdec_unsupported_reason(par, decoder); !why.empty()) return refuse(why);
  if (!cs.context) return refuse("the CUDA driver's context could not be read");
  try {
    return session_.make_nvdec_context(opt_.device);
  } catch (const std::exception& e) {
    return refuse(std::string("cannot create the NVDEC decoder: ") + e.what());
  }
}

// What the reader reads: the options' trim, or the span's pts window.
io::ReadSpan Pipeline::read_span() const {
  if (!span_run_)
    return io::ReadSpan{
        .start_seconds = opt_.start_seconds, .duration_seconds = opt_.duration_seconds, .max_frames = opt_.max_frames};
  if (opt_.start_seconds || opt_.duration_seconds || opt_.max_frames)
    throw std::invalid_argument("a span of a segmented run takes its frames from the span plan, not from a start "
                                "time, duration or frame count");
  io::ReadSpan span;
  span.from_pts = span_run_->from_pts;
  span.until_pts = span_run_->until_pts;
  span.pts_shift = span_run_->pts_shift;
  return span;
}

void Pipeline::open_input() {
  io::ReaderOptions ropt;
  ropt.decoder_threads = opt_.decoder_threads;
  ropt.format_options = opt_.input_options;
  ropt.warn = [this](const std::string& line) { note_(line); };
  ropt.span = span_;
  // NVDEC only where CUDA is started at all (the cpu backend, or nothing to
  // do on the GPU, decodes on the CPU without a note).
  if (STREAMBLUR_HAVE_CUDA && opt_.hwdec != HwDecode::None && session_.started()) {
    ropt.hw_device = [this](const AVCodecParameters& par, const AVCodec& dec) { return nvdec_device(par, dec); };
    // Surfaces held at once: one per slot, one in the decode node, one being decoded into.
    ropt.extra_hw_frames = opt_.inflight + 2;
  }
  reader_ = std::make_unique<io::MediaReader>(opt_.input, ropt);
  vinfo_ = &reader_->video();
  if (!vinfo_->hw_note.empty()) {
    if (opt_.hwdec == HwDecode::Nvdec) throw std::runtime_error("NVDEC decoding was asked for, but " + vinfo_->hw_note);
    note_("decode: cpu (" + vinfo_->hw_note + ")");
  }
}

// The frames this run will write, for progress: the input's estimate, cut
// to the span.
void Pipeline::estimate_total() {
  total_estimate_ = vinfo_->frame_count_estimate;
  if (!span_.active() || total_estimate_ <= 0) return;
  const double rate = av_q2d(vinfo_->frame_rate);
  double seconds = vinfo_->duration_seconds;
  if (span_.start_seconds) seconds -= *span_.start_seconds;
  if (span_.duration_seconds) seconds = std::min(seconds, *span_.duration_seconds);
  if (rate > 0 && vinfo_->duration_seconds > 0)
    total_estimate_ = std::clamp<int64_t>(static_cast<int64_t>(std::ceil(seconds * rate - 1e-6)), 0, total_estimate_);
  if (span_.max_frames) total_estimate_ = std::min(total_estimate_, *span_.max_frames);
}

// A span that holds no video frame: what was asked for, and how long the video is.
std::runtime_error Pipeline::empty_span_error() const {
  auto secs = [](double s) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%g s", s);
    return std::string(buf);
  };
  std::string asked;
  if (span_.start_seconds) asked = "start " + secs(*span_.start_seconds);
  if (span_.duration_seconds)
    asked += (asked.empty() ? "" : ", ") + std::string("duration ") + secs(*span_.duration_seconds);
  if (span_.from_pts) asked = "pts from " + std::to_string(*span_.from_pts);
  if (span_.until_pts) asked += (asked.empty() ? "" : " ") + std::string("until ") + std::to_string(*span_.until_pts);
  std::string why;
  if (vinfo_->duration_seconds > 0) {
    char buf[96];
    std::snprintf(buf, sizeof buf, "; the input lasts %.3f s", vinfo_->duration_seconds);
    why = buf;
    if (span_.start_seconds && *span_.start_seconds >= vinfo_->duration_seconds) why += ", the start is past its end";
  }
  return std::runtime_error("no video frames in the requested span (" + asked + ") of '" + opt_.input + "'" + why +
                            "; no output written");
}

void Pipeline::choose_backend() {
  std::string why;
  if (!session_.started()) {
    backend_ = Backend::Cpu;
    why = opt_.backend == BackendChoice::Cpu ? "backend: cpu (asked for)"
          : STREAMBLUR_HAVE_CUDA             ? "backend: cpu (auto: no GPU work to do)"
                                             : "backend: cpu (auto: built without the CUDA backend)";
  } else {
    const detail::DeviceStartup& cs = session_.startup();
    backend_ = resolve_backend(opt_.backend, cs.devices, &why);  // cuda asked for without a device: the error
    if (cs.devices == 0 && opt_.hwdec == HwDecode::Nvdec)
      throw std::runtime_error("NVDEC decoding was asked for, but no CUDA device is available");
    if (backend_ == Backend::Cuda) {
      if (!cs.error.empty()) throw std::runtime_error(cs.error);
      device_ = opt_.device;
      if (device_ != 0) why += ", device " + std::to_string(device_);
    }
  }
  note_(why);
  stats_.backend = backend_name(backend_);
  stats_.device = device_;
  if (vinfo_->hw_decode) note_("decode: nvdec (frames stay in device memory)");
  use_gpu_ = backend_ == Backend::Cuda &&
             (!chain_spec_.empty() || vinfo_->hw_decode || (opt_.frame_sink && opt_.sink_memory == SinkMemory::Device));
}

// The backend's route (frame_route.hpp): the CUDA one where frames go
// through device memory, else the CPU one.
void Pipeline::make_route() {
  detail::RouteSetup r;
  r.layout = layout_;
  r.proc_fmt = proc_fmt_;
  r.width = vinfo_->width;
  r.height = vinfo_->height;
  r.filters = !chain_spec_.empty();
  r.sink_on_device = use_gpu_ && opt_.frame_sink && opt_.sink_memory == SinkMemory::Device;
  r.output_frames = !opt_.frame_sink;
  r.device = device_;
  r.decode_stream = session_.decode_stream();
  r.timers = &timers_;
#if STREAMBLUR_HAVE_CUDA
  if (use_gpu_) {
    route_ = detail::make_cuda_route(r);
    return;
  }
#endif
  route_ = detail::make_cpu_route(r);
}

void Pipeline::make_slots() {
  stats_.input_format = pixel_format_name(vinfo_->pix_fmt);
  // Processing format: native, or the nearest native one (swscale in and back).
  proc_fmt_ = nearest_native_format(vinfo_->pix_fmt);
  stats_.processing_format = pixel_format_name(proc_fmt_);
  bool convert_back = false;
  if (proc_fmt_ != vinfo_->pix_fmt) {
    convert_back = !opt_.frame_sink && io::can_convert_to(vinfo_->pix_fmt);
    note_("note: pixel format " + stats_.input_format + " is converted to " + stats_.processing_format +
          (convert_back ? " for filtering and back"
                        : opt_.frame_sink ? " for filtering"
                                          : " for filtering; it cannot be converted back, so the output keeps " +
                                                stats_.processing_format + " (or the encoder's nearest format)"));
    to_proc_ = std::make_unique<io::FrameConverter>(vinfo_->width, vinfo_->height, vinfo_->pix_fmt, proc_fmt_);
  }
  layout_ = *native_layout(proc_fmt_, vinfo_->width, vinfo_->height);
  make_route();
  std::size_t device_bytes = 0;
  for (int i = 0; i < opt_.inflight; ++i) {
    auto s = std::make_unique<FrameSlot>();
    s->chain = FilterChain(chain_spec_);
    s->chain.configure(layout_, backend_);
    device_bytes += route_->prepare(*s);
    if (route_->on_device()) device_bytes += s->chain.device_bytes();
    if (convert_back)
      s->back = std::make_unique<io::FrameConverter>(vinfo_->width, vinfo_->height, proc_fmt_, vinfo_->pix_fmt);
    slots_.push_back(std::move(s));
  }
  stats_.gpu_memory_bytes = device_bytes;
  if (!chain_spec_.empty()) stats_.filters = slots_.front()->chain.describe();
}

// The output's container, from its name unless the encoder options name it.
void Pipeline::prepare_output() {
  enc_ = opt_.encoder;
  enc_.display_name = opt_.output;  // messages name the output, not its temporary file
  if (!enc_.note) enc_.note = [this](const std::string& s) { note_(s); };
  if (spooled()) enc_.video_packets = span_run_->video_packets;
  if (null_sink_ || !enc_.format_name.empty()) return;
  const AVOutputFormat* of = io::guess_output_format(opt_.output);
  if (!of)
    throw std::runtime_error("cannot tell the container of output '" + opt_.output +
                             "' from its extension or its protocol; name the container (a format such as mpegts)");
  enc_.format_name = of->name;
}

// ---- stages

// Source (serial): the next decoded frame; the input node reads ahead by one frame at most.
DecodedPtr Pipeline::decode(tbb::flow_control& fc) {
  if (opt_.stop && opt_.stop->load()) reader_->request_stop();
  const auto t0 = Clock::now();
  io::DecodedFrame df;
  if (!reader_->read(df)) {
    fc.stop();
    return nullptr;
  }
  auto d = std::make_shared<Decoded>();
  d->seq = seq_counter_++;
  const AVFrame& f = *df.frame;
  const bool surface = f.format == AV_PIX_FMT_CUDA;
  if (f.width != vinfo_->width || f.height != vinfo_->height || (!surface && f.format != static_cast<int>(vinfo_->pix_fmt)))
    throw std::runtime_error("the video changes size or pixel format mid-stream (" + std::to_string(f.width) + "x" +
                             std::to_string(f.height) + "); this is not supported");
  if (surface) {
    ++hw_frames_;
    if (surface_pool_bytes_.load() == 0) surface_pool_bytes_ = reader_->hw_surface_bytes();
    d->frame = std::move(df.frame);
  } else {
    if (vinfo_->hw_decode && sw_frames_++ == 0)
      note_.once("decode: cpu (FFmpeg's NVDEC hwaccel refused this stream; its frames are decoded on the CPU)");
    if (to_proc_) {
      io::AVFramePtr conv = io::make_frame();
      to_proc_->convert(*df.frame, *conv);
      d->frame = std::move(conv);
    } else {
      d->frame = std::move(df.frame);
    }
  }
  d->passthrough = std::move(df.passthrough);
  const double paced = opt_.realtime ? pace(f.pts) : 0;
  d->at = Clock::now();
  timers_.decode_busy.add(seconds(d->at - t0) - paced);  // waiting for the clock is not work
  return d;
}

// PipelineOptions::realtime (ffmpeg's -re): holds a frame until the wall
// clock since the first frame reaches its timestamp, so the input is read at
// its native rate. The stop flag ends the wait at once. Returns the seconds waited.
double Pipeline::pace(int64_t pts) {
  if (pts == AV_NOPTS_VALUE) return 0;
  const auto now = Clock::now();
  if (re_first_pts_ == AV_NOPTS_VALUE) {
    re_first_pts_ = pts;
    re_origin_ = now;
    return 0;
  }
  const auto due = re_origin_ + std::chrono::duration_cast<Clock::duration>(
                                    std::chrono::duration<double>((pts - re_first_pts_) * av_q2d(vinfo_->time_base)));
  while (Clock::now() < due && !(opt_.stop && opt_.stop->load()))
    std::this_thread::sleep_for(std::min<Clock::duration>(due - Clock::now(), std::chrono::milliseconds(10)));
  return seconds(Clock::now() - now);
}

// What time-dependent filters (regions=FILE) see of the slot's frame: its
// index in output order and its pts in seconds.
FrameContext Pipeline::frame_context(int64_t seq, const AVFrame& f) const {
  FrameContext c;
  c.index = first_index() + seq;
  if (f.pts != AV_NOPTS_VALUE) c.pts_seconds = f.pts * av_q2d(vinfo_->time_base);
  return c;
}

// Stage-in + filters, by the route: on the CUDA route the frame's planes
// reach the slot's device buffer and the chain and the download are queued
// on the slot's stream; on the CPU route the filters run here.
FrameSlot* Pipeline::stage_in(const DecodedPtr& d, FrameSlot* s) {
  timers_.decode_blocked.add(seconds(Clock::now() - d->at));
  s->seq = d->seq;
  s->passthrough = std::move(d->passthrough);
  route_->stage_in(*s, *d, frame_context(s->seq, *d->frame));
  return s;
}

// After the route's work: the output frame gets its pixels (and the input's
// pixel format back); a frame sink reads the slot's planes directly instead.
FrameSlot* Pipeline::finish(FrameSlot* s) {
  s->surface.reset();
  route_->finish(*s);
  if (s->back) {
    io::AVFramePtr orig = io::make_frame();
    s->back->convert(*s->frame, *orig);
    s->frame = std::move(orig);
  }
  if (hooks_.on_finish) hooks_.on_finish(s->seq);
  s->ready_at = Clock::now();
  return s;
}

// Sink (serial, in order): the encoder, the caller's code, or nothing.
// Returns the slot to the pool.
FrameSlot* Pipeline::sink(FrameSlot* s) {
  const auto t0 = Clock::now();
  timers_.post_blocked.add(seconds(t0 - s->ready_at));
  const AVFrame& f = *s->frame;
  if (opt_.frame_sink) {
    FrameView v;
    v.index = first_index() + frames_out_;
    v.pts = f.pts;
    v.time_base_num = vinfo_->time_base.num;
    v.time_base_den = vinfo_->time_base.den;
    v.pts_seconds = f.pts == AV_NOPTS_VALUE ? std::nan("") : f.pts * av_q2d(vinfo_->time_base);
    v.layout = layout_;
    v.device = device_;
    route_->view(*s, v);
    opt_.frame_sink(v);
  } else if (!null_sink_) {
    if (!writer_)
      writer_ = std::make_unique<io::MediaWriter>(spooled() ? opt_.output : out_->url(),
                                                  span_run_ ? video_only(reader_->streams()) : reader_->streams(), f, enc_);
    if (!span_run_)
      for (auto& pkt : s->passthrough) writer_->write_passthrough(*pkt);
    writer_->write_video(f);
  }
  if (f.pts != AV_NOPTS_VALUE) last_media_time_ = f.pts * av_q2d(vinfo_->time_base);
  if (frames_out_ == 0) stats_.first_frame_s = seconds(Clock::now() - t_start_);
  s->passthrough.clear();
  s->frame.reset();
  ++frames_out_;
  const auto t1 = Clock::now();
  timers_.encode_busy.add(seconds(t1 - t0));
  if (seconds(t1 - last_progress_) >= 0.25) {
    last_progress_ = t1;
    emit_progress(false);
  }
  return s;
}

void Pipeline::emit_progress(bool final) {
  if (!opt_.progress) return;
  Progress p;
  p.frames = frames_out_;
  p.total_estimate = total_estimate_;
  p.elapsed_s = seconds(Clock::now() - t_start_);
  p.fps = p.elapsed_s > 0 ? frames_out_ / p.elapsed_s : 0;
  p.media_time_s = last_media_time_;
  p.duration_s = vinfo_->duration_seconds;
  p.final = final;
  opt_.progress(p);
}

RunStats Pipeline::run() {
  if (opt_.inflight < 1 || opt_.inflight > 64) throw std::invalid_argument("inflight must be between 1 and 64");
  if (opt_.frame_sink && !opt_.output.empty())
    throw std::invalid_argument("a frame sink and an output file cannot be used together");
  t_start_ = last_progress_ = Clock::now();

  // Filters and span first: a bad --vf or time fails before any file is touched.
  span_ = read_span();
  io::check_span(span_);
  chain_spec_ = span_run_ && span_run_->chain ? *span_run_->chain : parse_filter_chain(opt_.filters);
  if (opt_.hwdec == HwDecode::Nvdec && opt_.backend == BackendChoice::Cpu)
    throw std::invalid_argument("NVDEC decoding needs the CUDA backend (its frames stay in device memory)");
  if (!STREAMBLUR_HAVE_CUDA && opt_.hwdec == HwDecode::Nvdec)
    throw std::runtime_error(std::string("NVDEC decoding was asked for, but ") + kNoCudaBackend);
  if (!STREAMBLUR_HAVE_CUDA && opt_.backend == BackendChoice::Cuda) throw std::runtime_error(kNoCudaBackend);
  null_sink_ = opt_.output.empty();
  // The output's temporary exists before any work, so an unwritable path
  // fails at once; it is removed on every way out but success.
  if (!null_sink_ && !spooled()) out_.emplace(opt_.output, "output", io::OutputRules{opt_.overwrite, {opt_.input}, [this](const std::string& s) { note_(s); }});
  // The CUDA context starts on its own thread while the input and decoder open.
  if (cuda_may_be_needed()) session_.start(opt_.device);
  open_input();
  estimate_total();
  choose_backend();
  stats_.decoder = vinfo_->hw_decode ? "nvdec" : "cpu";
  make_slots();
  if (!span_run_) {
    region_checks_.emplace(chain_spec_, opt_.strict_regions, !null_sink_ && !opt_.frame_sink,
                           [this](const std::string& s) { note_(s); });
    region_checks_->fit(detail::region_video(*reader_, span_.start_seconds.has_value(), total_estimate_));
  }
  prepare_output();
  tbb::flow::graph g;
  using namespace tbb::flow;
  input_node<DecodedPtr> decode_node(g, [this](tbb::flow_control& fc) { return decode(fc); });
  buffer_node<FrameSlot*> free_slots(g);
  join_node<std::tuple<DecodedPtr, FrameSlot*>, reserving> take_slot(g);
  function_node<std::tuple<DecodedPtr, FrameSlot*>, FrameSlot*> stage_in_node(
      g, unlimited, [this](const std::tuple<DecodedPtr, FrameSlot*>& in) { return stage_in(std::get<0>(in), std::get<1>(in)); });
  GpuWait gpu_wait_node(g, unlimited, [this](FrameSlot* s, GpuWait::gateway_type& gw) { route_->wait(*s, gw); });
  function_node<FrameSlot*, FrameSlot*> finish_node(g, unlimited, [this](FrameSlot* s) { return finish(s); });
  sequencer_node<FrameSlot*> in_order(g, [](FrameSlot* const& s) -> size_t { return static_cast<size_t>(s->seq); });
  function_node<FrameSlot*, FrameSlot*> sink_node(g, serial, [this](FrameSlot* s) { return sink(s); });

  make_edge(decode_node, input_port<0>(take_slot));
  make_edge(free_slots, input_port<1>(take_slot));
  make_edge(take_slot, stage_in_node);
  make_edge(stage_in_node, gpu_wait_node);
  make_edge(gpu_wait_node, finish_node);
  make_edge(finish_node, in_order);
  make_edge(in_order, sink_node);
  make_edge(sink_node, free_slots);

  for (auto& s : slots_) free_slots.try_put(s.get());
  stats_.setup_s = seconds(Clock::now() - t_start_);
  decode_node.activate();
  try {
    g.wait_for_all();
  } catch (...) {
    if (route_) route_->drain(slots_);  // no callback may outlive the graph
    throw;
  }

  if (frames_out_ == 0) {
    // Stopped (Ctrl-C) before the first frame: say so rather than blame the input.
    if (opt_.stop && opt_.stop->load()) throw std::runtime_error("stopped before any frame was done; no output written");
    if (span_.start_seconds || span_.duration_seconds || span_run_) throw empty_span_error();
    throw std::runtime_error("no video frames could be decoded from '" + opt_.input + "'");
  }
  if (region_checks_) region_checks_->used();  // strict: fails before the output is committed
  const auto t_finish = Clock::now();
  if (!null_sink_ && !opt_.frame_sink) {
    if (!span_run_)
      for (auto& pkt : reader_->take_remaining_passthrough()) writer_->write_passthrough(*pkt);
    writer_->finish();
    if (span_run_ && span_run_->encoded) *span_run_->encoded = writer_->encoded_video();
    writer_.reset();
    if (out_) out_->commit(frames_out_);
  }
  stats_.finish_s = seconds(Clock::now() - t_finish);
  RunStats st = collect_stats();
  emit_progress(true);
  return st;
}

RunStats Pipeline::collect_stats() {
  RunStats& stats = stats_;
  stats.frames = frames_out_;
  stats.wall_s = seconds(Clock::now() - t_start_);
  stats.fps = stats.wall_s > 0 ? frames_out_ / stats.wall_s : 0;
  stats.decoder = hw_frames_.load() > 0 ? "nvdec" : "cpu";
  stats.gpu_memory_bytes += surface_pool_bytes_.load();
  stats.decode = {timers_.decode_busy.v.load(), timers_.decode_blocked.v.load()};
  stats.upload = {timers_.upload_busy.v.load(), 0};
  stats.filter = {timers_.filter_busy.v.load(), 0};
  stats.download = {timers_.download_busy.v.load(), timers_.post_blocked.v.load()};
  stats.encode = {timers_.encode_busy.v.load(), 0};
  stats.decode_warnings = reader_->warnings();
  stats.stopped_early = opt_.stop && opt_.stop->load();
  // The GPU runs upload, filter and download of different frames at once, but
  // they share one device: their sum is its busy time. CPU filters run on all cores.
  struct Candidate { const char* name; double load; };
  const double cpu_filter_load = use_gpu_ ? 0 : stats.filter.busy_s / std::max(1u, std::thread::hardware_concurrency());
  const Candidate c[] = {{"decode", stats.decode.busy_s},
                         {"gpu (upload+filter+download)", use_gpu_ ? stats.upload.busy_s + stats.filter.busy_s + stats.download.busy_s : 0},
                         {"filter (cpu)", cpu_filter_load},
                         {opt_.frame_sink ? "sink" : "encode", stats.encode.busy_s}};
  const Candidate* best = &c[0];
  for (const Candidate& x : c)
    if (x.load > best->load) best = &x;
  stats.bounding_stage = best->name;
  return stats;
}

}  // namespace

RunStats run_pipeline(const PipelineOptions& options) {
  if (options.segments != 1) return detail::run_segmented(options);
  return detail::run_pipeline_with_hooks(options, {});
}

RunStats detail::run_pipeline_with_hooks(const PipelineOptions& options, const PipelineTestHooks& hooks) {
  Pipeline p(options, hooks);
  return p.run();
}

RunStats detail::run_span(const PipelineOptions& options, const SpanRun& span) {
  const PipelineTestHooks no_hooks;
  Pipeline p(options, no_hooks, &span);
  return p.run();
}

}  // namespace streamblur
