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
#include "streamblur/kernels/cuda_check.hpp"
#include "streamblur/kernels/cuda_convert.hpp"
#include "streamblur/kernels/cuda_raii.hpp"
#include "streamblur/pipeline/detail/test_hooks.hpp"
#include "streamblur/io/output_file.hpp"
#include "streamblur/pipeline/regions.hpp"

namespace streamblur {
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

Backend resolve_backend(BackendChoice choice, std::string* why) {
  const int devices = cuda::device_count();
  std::string reason;
  Backend b = Backend::Cpu;
  switch (choice) {
    case BackendChoice::Cpu: reason = "backend: cpu (asked for)"; break;
    case BackendChoice::Cuda:
      if (devices == 0) throw std::runtime_error("backend cuda: no CUDA device is available");
      b = Backend::Cuda;
      reason = "backend: cuda (asked for)";
      break;
    case BackendChoice::Auto:
      b = devices > 0 ? Backend::Cuda : Backend::Cpu;
      reason = devices > 0 ? "backend: cuda (auto: CUDA device found)" : "backend: cpu (auto: no CUDA device)";
      break;
  }
  if (why) *why = reason;
  return b;
}

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

double seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

// One frame in flight and everything it owns. The slots are the graph's tokens.
struct FrameSlot {
  int64_t seq = -1;
  io::AVFramePtr frame;                      // decoded frame, then the output frame
  io::AVFramePtr surface;                    // NVDEC surface, held until the GPU has read it
  std::vector<io::AVPacketPtr> passthrough;  // other streams' packets demuxed before it
  // CUDA backend
  cuda::PinnedBuffer host;
  cuda::DeviceBuffer device;
  std::optional<cuda::CudaStream> stream;
  std::optional<cuda::CudaEvent> ev_decoded, ev_start, ev_uploaded, ev_filtered, ev_downloaded;
  bool downloaded = false;                   // host holds the filtered planes
  std::array<std::size_t, 4> offset{};       // of each plane in host/device buffers
  std::array<std::size_t, 4> pitch{};
  std::size_t bytes = 0;
  FilterChain chain;
  std::unique_ptr<io::FrameConverter> back;  // processing format -> input format
  Clock::time_point ready_at;                // output frame complete, waiting for the sink
};

// What the decode node hands on.
struct Decoded {
  int64_t seq;
  io::AVFramePtr frame;                      // software frame in the processing format, or an NVDEC surface
  std::vector<io::AVPacketPtr> passthrough;
  Clock::time_point at;
};
using DecodedPtr = std::shared_ptr<Decoded>;

struct AtomicSeconds {
  std::atomic<double> v{0};
  void add(double s) {
    double cur = v.load();
    while (!v.compare_exchange_weak(cur, cur + s)) {}
  }
};

struct Timers {
  AtomicSeconds decode_busy, decode_blocked, upload_busy, filter_busy, download_busy, post_blocked, encode_busy;
};

// Plane pointers of an AVFrame as AnyPlanes.
std::array<AnyPlane, 4> frame_planes(const AVFrame& f, const FrameLayout& l) {
  std::array<AnyPlane, 4> p{};
  for (int i = 0; i < l.num_planes; ++i)
    p[i] = AnyPlane{f.data[i], l.planes[i].width, l.planes[i].height, f.linesize[i], l.planes[i].channels,
                    l.bytes_per_sample};
  return p;
}

std::size_t row_bytes(const FrameLayout& l, int i) {
  return static_cast<std::size_t>(l.planes[i].width) * l.planes[i].channels * l.bytes_per_sample;
}

// The CUDA context, made on a background thread while the input opens
// (creating it costs 0.2-0.3 s): the runtime's primary context of `device`,
// and the driver handle FFmpeg's NVDEC needs to share it.
struct CudaStartup {
  int devices = 0;
  void* context = nullptr;  // CUcontext; nullptr when it could not be read (NVDEC then unavailable)
  std::string error;        // set when the device cannot be used
};

CudaStartup start_cuda(int device) {
  CudaStartup r;
  r.devices = cuda::device_count();
  if (r.devices == 0) return r;
  if (device < 0 || device >= r.devices) {
    r.error = "CUDA device " + std::to_string(device) + " does not exist (" + std::to_string(r.devices) +
              " device(s) here)";
    return r;
  }
  cudaError_t rc = cudaSetDevice(device);
  if (rc == cudaSuccess) rc = cudaFree(nullptr);  // creates the primary context now
  if (rc != cudaSuccess) {
    r.error = std::string("cannot use CUDA device ") + std::to_string(device) + ": " + cudaGetErrorString(rc);
    cudaGetLastError();
    return r;
  }
  // The driver's cuCtxGetCurrent through the runtime, so nothing links libcuda
  // (machines without a driver must still start the program).
  using GetCurrent = int (*)(void**);
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult found{};
  if (cudaGetDriverEntryPointByVersion("cuCtxGetCurrent", &fn, 12000, cudaEnableDefault, &found) == cudaSuccess &&
      found == cudaDriverEntryPointSuccess && fn) {
    void* ctx = nullptr;
    if (reinterpret_cast<GetCurrent>(fn)(&ctx) == 0) r.context = ctx;
  }
  cudaGetLastError();
  return r;
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
  Pipeline(const PipelineOptions& opt, const detail::PipelineTestHooks& hooks)
      : opt_(opt), hooks_(hooks), note_(opt.note ? opt.note : [](const std::string& s) { std::cerr << s << "\n"; }) {}
  RunStats run();

 private:
  using GpuWait = tbb::flow::async_node<FrameSlot*, FrameSlot*>;

  // set-up
  bool cuda_may_be_needed() const;
  io::AVBufferRefPtr nvdec_device(const AVCodecParameters& par, const AVCodec& decoder);
  void open_input();
  void estimate_total();
  std::runtime_error empty_span_error() const;
  void choose_backend();
  void make_slots();
  void prepare_output();
  // Regions files that cannot match the video: before the first frame, and
  // what the run saw at its end (PipelineOptions::strict_regions).
  RegionVideo region_video() const;
  void check_regions_fit();
  void check_regions_used();
  void regions_problem(const std::string& why);
  void set_device() const {
    if (device_ >= 0) CUDA_CHECK(cudaSetDevice(device_));
  }

  // stages
  DecodedPtr decode(tbb::flow_control& fc);
  double pace(int64_t pts);
  FrameContext frame_context(const FrameSlot& s) const;
  FrameSlot* stage_in(const DecodedPtr& d, FrameSlot* s);
  void stage_in_surface(FrameSlot* s, const AVFrame& surface);
  void filter_on_cpu(FrameSlot* s, io::AVFramePtr frame);
  void gpu_wait(FrameSlot* s, GpuWait::gateway_type& gw);
  FrameSlot* finish(FrameSlot* s);
  FrameSlot* sink(FrameSlot* s);

  void emit_progress(bool final);
  RunStats collect_stats();

  const PipelineOptions& opt_;
  const detail::PipelineTestHooks& hooks_;
  Notes note_;
  std::vector<FilterInstanceSpec> chain_spec_;
  std::set<const RegionSpec*> regions_reported_;  // said already: not again at the end
  bool null_sink_ = false;        // no output file
  std::shared_future<CudaStartup> cuda_startup_;
  std::optional<cuda::CudaStream> decode_stream_;  // the stream FFmpeg's NVDEC copies surfaces on
  std::unique_ptr<io::MediaReader> reader_;
  const io::VideoInfo* vinfo_ = nullptr;
  Backend backend_ = Backend::Cpu;
  int device_ = -1;               // CUDA device of this pipeline (-1: none)
  bool use_gpu_ = false;          // frames go through device memory
  bool sink_on_device_ = false;   // frame_sink takes device planes (no download)
  AVPixelFormat proc_fmt_ = AV_PIX_FMT_NONE;
  FrameLayout layout_;
  std::unique_ptr<io::FrameConverter> to_proc_;
  // Output frames' pixels (CUDA path): reused buffers, so no frame pays for a
  // fresh allocation; a buffer returns when the encoder lets go of its frame.
  io::AVBufferPoolPtr out_pool_;
  int out_pool_bytes_ = 0;
  std::vector<std::unique_ptr<FrameSlot>> slots_;
  std::optional<io::OutputFile> out_;  // the output's temporary until it is committed (output_file.hpp)
  io::EncoderOptions enc_;
  std::unique_ptr<io::MediaWriter> writer_;
  RunStats stats_;
  Timers timers_;
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
  const CudaStartup& cs = cuda_startup_.get();
  if (!cs.error.empty()) {
    if (required || opt_.backend == BackendChoice::Cuda) throw std::runtime_error(cs.error);
    return refuse(cs.error);
  }
  if (cs.devices == 0) return refuse("no CUDA device is available");
  // Auto only decodes on the GPU when the frames go on to GPU work.
  if (!required && chain_spec_.empty() && !(opt_.frame_sink && opt_.sink_memory == SinkMemory::Device)) return nullptr;
  if (const std::string why = io::nvdec_unsupported_reason(par, decoder); !why.empty()) return refuse(why);
  if (!cs.context) return refuse("the CUDA driver's context could not be read");
  try {
    CUDA_CHECK(cudaSetDevice(opt_.device));
    decode_stream_.emplace();
    return io::make_cuda_device_context(cs.context, decode_stream_->get());
  } catch (const std::exception& e) {
    return refuse(std::string("cannot create the NVDEC decoder: ") + e.what());
  }
}

void Pipeline::open_input() {
  io::ReaderOptions ropt;
  ropt.decoder_threads = opt_.decoder_threads;
  ropt.warn = [this](const std::string& line) { note_(line); };
  ropt.span = span_;
  if (opt_.hwdec == HwDecode::Nvdec && opt_.backend == BackendChoice::Cpu)
    throw std::invalid_argument("NVDEC decoding needs the CUDA backend (its frames stay in device memory)");
  // NVDEC only where CUDA is started at all (the cpu backend, or nothing to
  // do on the GPU, decodes on the CPU without a note).
  if (opt_.hwdec != HwDecode::None && cuda_startup_.valid()) {
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
  if (!cuda_startup_.valid()) {
    backend_ = Backend::Cpu;
    why = opt_.backend == BackendChoice::Cpu ? "backend: cpu (asked for)" : "backend: cpu (auto: no GPU work to do)";
  } else {
    const CudaStartup& cs = cuda_startup_.get();
    if (cs.devices == 0) {
      if (opt_.backend == BackendChoice::Cuda) throw std::runtime_error("backend cuda: no CUDA device is available");
      if (opt_.hwdec == HwDecode::Nvdec) throw std::runtime_error("NVDEC decoding was asked for, but no CUDA device is available");
      backend_ = Backend::Cpu;
      why = "backend: cpu (auto: no CUDA device)";
    } else {
      if (!cs.error.empty()) throw std::runtime_error(cs.error);
      backend_ = Backend::Cuda;
      device_ = opt_.device;
      why = opt_.backend == BackendChoice::Cuda ? "backend: cuda (asked for)" : "backend: cuda (auto: CUDA device found)";
      if (device_ != 0) why += ", device " + std::to_string(device_);
    }
  }
  note_(why);
  stats_.backend = backend_name(backend_);
  stats_.device = device_;
  if (vinfo_->hw_decode) note_("decode: nvdec (frames stay in device memory)");
  use_gpu_ = backend_ == Backend::Cuda &&
             (!chain_spec_.empty() || vinfo_->hw_decode || (opt_.frame_sink && opt_.sink_memory == SinkMemory::Device));
  sink_on_device_ = use_gpu_ && opt_.frame_sink && opt_.sink_memory == SinkMemory::Device;
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
  if (use_gpu_) set_device();
  std::size_t device_bytes = 0;
  for (int i = 0; i < opt_.inflight; ++i) {
    auto s = std::make_unique<FrameSlot>();
    s->chain = FilterChain(chain_spec_);
    s->chain.configure(layout_, backend_);
    if (use_gpu_) {
      for (int p = 0; p < layout_.num_planes; ++p) {
        s->offset[p] = s->bytes;
        s->pitch[p] = (row_bytes(layout_, p) + 255) / 256 * 256;
        s->bytes += s->pitch[p] * layout_.planes[p].height;
      }
      s->host = cuda::PinnedBuffer(s->bytes);  // staging for CPU-decoded frames (also after an NVDEC fallback)
      s->device = cuda::DeviceBuffer(s->bytes);
      s->stream.emplace();
      s->ev_decoded.emplace(cudaEventDisableTiming);
      s->ev_start.emplace(cudaEventDefault);
      s->ev_uploaded.emplace(cudaEventDefault);
      s->ev_filtered.emplace(cudaEventDefault);
      s->ev_downloaded.emplace(cudaEventDefault);
      device_bytes += s->bytes + s->chain.device_bytes();
    }
    if (convert_back)
      s->back = std::make_unique<io::FrameConverter>(vinfo_->width, vinfo_->height, proc_fmt_, vinfo_->pix_fmt);
    slots_.push_back(std::move(s));
  }
  stats_.gpu_memory_bytes = device_bytes;
  if (use_gpu_ && !opt_.frame_sink) {
    out_pool_bytes_ = av_image_get_buffer_size(proc_fmt_, vinfo_->width, vinfo_->height, 64);
    if (out_pool_bytes_ <= 0) throw std::runtime_error("cannot size output frames of " + stats_.processing_format);
    out_pool_.reset(av_buffer_pool_init(static_cast<size_t>(out_pool_bytes_) + 64, nullptr));
    if (!out_pool_) throw std::bad_alloc();
  }
  if (!chain_spec_.empty()) stats_.filters = slots_.front()->chain.describe();
}

// What the regions checks know of the run's frames before the first one:
// the picture, the frame count (estimated), and the frames' pts range on the
// clock the filters see (shifted back by the span's start).
RegionVideo Pipeline::region_video() const {
  RegionVideo v;
  v.width = vinfo_->width;
  v.height = vinfo_->height;
  v.frames = total_estimate_;
  v.frame_rate = av_q2d(vinfo_->frame_rate);
  const AVFormatContext* fmt = reader_->format_context();
  const AVStream* st = fmt->streams[reader_->video_stream_index()];
  double t0 = st->start_time != AV_NOPTS_VALUE ? st->start_time * av_q2d(st->time_base)
              : fmt->start_time != AV_NOPTS_VALUE ? static_cast<double>(fmt->start_time) / AV_TIME_BASE
                                                  : 0.0;
  t0 -= static_cast<double>(reader_->timestamp_shift()) / AV_TIME_BASE;
  v.input_start_s = t0;
  if (vinfo_->duration_seconds > 0) v.input_end_s = t0 + vinfo_->duration_seconds;
  v.start_s = span_.start_seconds ? std::max(t0, 0.0) : t0;  // frames before the start are dropped
  if (v.frames > 0 && v.frame_rate > 0) v.end_s = v.start_s + static_cast<double>(v.frames) / v.frame_rate;
  else v.end_s = v.input_end_s;
  if (reader_->span_end() != AV_NOPTS_VALUE)
    v.end_s = std::min(v.end_s, static_cast<double>(reader_->span_end()) / AV_TIME_BASE);
  return v;
}

// A regions file that cannot match: a warning, or with strict_regions the run's error.
void Pipeline::regions_problem(const std::string& why) {
  if (!opt_.strict_regions) {
    note_("warning: " + why);
    return;
  }
  throw std::invalid_argument(why + (null_sink_ || opt_.frame_sink ? "" : "; no output written"));
}

void Pipeline::check_regions_fit() {
  const RegionVideo video = region_video();
  for (const FilterInstanceSpec& f : chain_spec_)
    if (const RegionSpec* r = regions_of(f))
      if (const std::string why = regions_never_match(*r, video); !why.empty()) {
        regions_reported_.insert(r);
        regions_problem(why);
      }
}

void Pipeline::check_regions_used() {
  for (const FilterInstanceSpec& f : chain_spec_)
    if (const RegionSpec* r = regions_of(f); r && !regions_reported_.count(r))
      if (const std::string why = regions_unused(*r); !why.empty()) regions_problem(why);
}

// The output's container, from its name unless the encoder options name it.
void Pipeline::prepare_output() {
  enc_ = opt_.encoder;
  enc_.display_name = opt_.output;  // messages name the output, not its temporary file
  if (!enc_.note) enc_.note = [this](const std::string& s) { note_(s); };
  if (null_sink_ || !enc_.format_name.empty()) return;
  const AVOutputFormat* of = av_guess_format(nullptr, opt_.output.c_str(), nullptr);
  if (!of) throw std::runtime_error("cannot tell the container of output '" + opt_.output + "' from its extension");
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
FrameContext Pipeline::frame_context(const FrameSlot& s) const {
  FrameContext c;
  c.index = s.seq;
  if (s.frame && s.frame->pts != AV_NOPTS_VALUE) c.pts_seconds = s.frame->pts * av_q2d(vinfo_->time_base);
  return c;
}

void Pipeline::filter_on_cpu(FrameSlot* s, io::AVFramePtr frame) {
  const auto t0 = Clock::now();
  s->frame = std::move(frame);
  if (!chain_spec_.empty()) {
    AV_CHECK_CTX(av_frame_make_writable(s->frame.get()), "cannot make a decoded frame writable");
    s->chain.apply(frame_planes(*s->frame, layout_), layout_.num_planes, nullptr, frame_context(*s));
  }
  timers_.filter_busy.add(seconds(Clock::now() - t0));
}

// NVDEC frames enter here: the surface (NV12, P010 or YUV444P in device
// memory) becomes the processing format in the slot's device planes on the
// slot's stream, after the decoder's copy into it (ev_decoded). No host copy.
void Pipeline::stage_in_surface(FrameSlot* s, const AVFrame& f) {
  const cudaStream_t st = s->stream->get();
  s->ev_decoded->record(decode_stream_->get());
  CUDA_CHECK(cudaStreamWaitEvent(st, s->ev_decoded->get(), 0));
  const AVPixelFormat sw = io::hw_frame_sw_format(f);
  auto dev = [&](int p) { return s->device.as<uint8_t>() + s->offset[p]; };
  auto pitch = [&](int p) { return static_cast<std::ptrdiff_t>(s->pitch[p]); };
  const FrameLayout& l = layout_;
  const int w = l.planes[0].width, h = l.planes[0].height;
  if ((sw == AV_PIX_FMT_NV12 || sw == AV_PIX_FMT_P010LE) && l.planes[1].log2_chroma_w == 1 && l.planes[1].log2_chroma_h == 1) {
    const int cw = l.planes[1].width, ch = l.planes[1].height;
    auto run = [&](auto sample, int shift) {
      using T = decltype(sample);
      cuda::shift_copy<T>(Plane<const T>(reinterpret_cast<const T*>(f.data[0]), w, h, f.linesize[0]),
                          Plane<T>(reinterpret_cast<T*>(dev(0)), w, h, pitch(0)), shift, st);
      Plane<const T> uv(reinterpret_cast<const T*>(f.data[1]), cw, ch, f.linesize[1], 2);
      if (l.num_planes == 2)  // nv12 / p010 themselves
        cuda::shift_copy<T>(uv, Plane<T>(reinterpret_cast<T*>(dev(1)), cw, ch, pitch(1), 2), shift, st);
      else
        cuda::split_channels<T>(uv, Plane<T>(reinterpret_cast<T*>(dev(1)), cw, ch, pitch(1)),
                                Plane<T>(reinterpret_cast<T*>(dev(2)), cw, ch, pitch(2)), shift, st);
    };
    if (sw == AV_PIX_FMT_NV12 && l.bytes_per_sample == 1) return run(uint8_t{}, 0);
    // P010 holds the 10 bits high; yuv420p10le holds them low.
    if (sw == AV_PIX_FMT_P010LE && l.bytes_per_sample == 2) return run(uint16_t{}, l.sample_shift == 6 ? 0 : 6);
  }
  if (sw == AV_PIX_FMT_YUV444P && l.num_planes == 3 && l.bytes_per_sample == 1 && l.planes[1].width == w) {
    for (int p = 0; p < 3; ++p)
      cuda::shift_copy<uint8_t>(Plane<const uint8_t>(f.data[p], w, h, f.linesize[p]), Plane<uint8_t>(dev(p), w, h, pitch(p)),
                                0, st);
    return;
  }
  throw std::runtime_error("NVDEC gave " + pixel_format_name(sw) + " surfaces for " + pixel_format_name(proc_fmt_) +
                           " video; this combination is not supported (decode on the CPU instead)");
}

// Stage-in + filters: the frame's planes reach the slot's device buffer
// (from an NVDEC surface, or uploaded from pinned memory), the chain and the
// download are queued on the slot's stream. On the CPU backend the filters run here.
FrameSlot* Pipeline::stage_in(const DecodedPtr& d, FrameSlot* s) {
  timers_.decode_blocked.add(seconds(Clock::now() - d->at));
  s->seq = d->seq;
  s->passthrough = std::move(d->passthrough);
  s->downloaded = false;
  if (!use_gpu_) {
    filter_on_cpu(s, std::move(d->frame));
    return s;
  }
  set_device();
  const AVFrame& f = *d->frame;
  const bool surface = f.format == AV_PIX_FMT_CUDA;
  const cudaStream_t st = s->stream->get();
  io::AVFramePtr out = io::make_frame();
  AV_CHECK(av_frame_copy_props(out.get(), &f));
  out->format = proc_fmt_;
  out->width = f.width;
  out->height = f.height;
  s->ev_start->record(st);
  if (surface) {
    stage_in_surface(s, f);
    s->surface = std::move(d->frame);  // back to the decoder's pool once the GPU has read it
  } else {
    // Stage into pinned memory (the decoded frame goes back to the decoder now).
    auto* host = s->host.as<uint8_t>();
    for (int p = 0; p < layout_.num_planes; ++p)
      av_image_copy_plane(host + s->offset[p], static_cast<int>(s->pitch[p]), f.data[p], f.linesize[p],
                          static_cast<int>(row_bytes(layout_, p)), layout_.planes[p].height);
    d->frame.reset();
    CUDA_CHECK(cudaMemcpyAsync(s->device.get(), s->host.get(), s->bytes, cudaMemcpyHostToDevice, st));
  }
  s->frame = std::move(out);
  s->ev_uploaded->record(st);
  std::array<AnyPlane, 4> dev{};
  for (int p = 0; p < layout_.num_planes; ++p)
    dev[p] = AnyPlane{s->device.as<uint8_t>() + s->offset[p], layout_.planes[p].width, layout_.planes[p].height,
                      static_cast<std::ptrdiff_t>(s->pitch[p]), layout_.planes[p].channels, layout_.bytes_per_sample};
  if (!chain_spec_.empty()) s->chain.apply(dev, layout_.num_planes, st, frame_context(*s));
  s->ev_filtered->record(st);
  if (!sink_on_device_) {
    CUDA_CHECK(cudaMemcpyAsync(s->host.get(), s->device.get(), s->bytes, cudaMemcpyDeviceToHost, st));
    s->downloaded = true;
  }
  s->ev_downloaded->record(st);
  return s;
}

// Waits for the slot's GPU work without holding a TBB worker: a host
// callback on the stream hands the slot on.
void Pipeline::gpu_wait(FrameSlot* s, GpuWait::gateway_type& gw) {
  if (!use_gpu_) {
    gw.try_put(s);
    return;
  }
  struct CallbackData {
    GpuWait::gateway_type* gateway;
    FrameSlot* slot;
  };
  set_device();
  gw.reserve_wait();
  auto cb = std::make_unique<CallbackData>(CallbackData{&gw, s});
  const cudaError_t rc = cudaLaunchHostFunc(
      s->stream->get(),
      [](void* p) {
        std::unique_ptr<CallbackData> data(static_cast<CallbackData*>(p));
        data->gateway->try_put(data->slot);
        data->gateway->release_wait();
      },
      cb.get());
  if (rc != cudaSuccess) {
    gw.release_wait();
    CUDA_CHECK(rc);
  }
  cb.release();  // the callback owns it now
}

// After the GPU: the output frame gets its pixels (and the input's pixel
// format back); a frame sink reads the slot's planes directly instead.
FrameSlot* Pipeline::finish(FrameSlot* s) {
  s->surface.reset();
  if (use_gpu_) {
    set_device();
    float ms = 0;
    CUDA_CHECK(cudaEventElapsedTime(&ms, s->ev_start->get(), s->ev_uploaded->get()));
    timers_.upload_busy.add(ms / 1e3);
    CUDA_CHECK(cudaEventElapsedTime(&ms, s->ev_uploaded->get(), s->ev_filtered->get()));
    timers_.filter_busy.add(ms / 1e3);
    CUDA_CHECK(cudaEventElapsedTime(&ms, s->ev_filtered->get(), s->ev_downloaded->get()));
    timers_.download_busy.add(ms / 1e3);
    if (!opt_.frame_sink) {
      AVFrame* out = s->frame.get();
      out->buf[0] = av_buffer_pool_get(out_pool_.get());
      if (!out->buf[0]) throw std::bad_alloc();
      AV_CHECK_CTX(av_image_fill_arrays(out->data, out->linesize, out->buf[0]->data, proc_fmt_, out->width,
                                        out->height, 64),
                   "cannot lay out an output frame");
      const auto* host = s->host.as<uint8_t>();
      for (int p = 0; p < layout_.num_planes; ++p)
        av_image_copy_plane(out->data[p], out->linesize[p], host + s->offset[p], static_cast<int>(s->pitch[p]),
                            static_cast<int>(row_bytes(layout_, p)), layout_.planes[p].height);
    }
  }
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
    v.index = frames_out_;
    v.pts = f.pts;
    v.time_base_num = vinfo_->time_base.num;
    v.time_base_den = vinfo_->time_base.den;
    v.pts_seconds = f.pts == AV_NOPTS_VALUE ? std::nan("") : f.pts * av_q2d(vinfo_->time_base);
    v.layout = layout_;
    v.device = device_;
    if (use_gpu_) {
      set_device();
      uint8_t* base = sink_on_device_ ? s->device.as<uint8_t>() : s->host.as<uint8_t>();
      for (int p = 0; p < layout_.num_planes; ++p)
        v.planes[p] = AnyPlane{base + s->offset[p], layout_.planes[p].width, layout_.planes[p].height,
                               static_cast<std::ptrdiff_t>(s->pitch[p]), layout_.planes[p].channels,
                               layout_.bytes_per_sample};
      v.on_device = sink_on_device_;
      v.stream = s->stream->get();
    } else {
      v.planes = frame_planes(f, layout_);
    }
    opt_.frame_sink(v);
  } else if (!null_sink_) {
    if (!writer_) writer_ = std::make_unique<io::MediaWriter>(out_->url(), *reader_, f, enc_);
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
  span_ = io::ReadSpan{opt_.start_seconds, opt_.duration_seconds, opt_.max_frames};
  io::check_span(span_);
  chain_spec_ = parse_filter_chain(opt_.filters);
  null_sink_ = opt_.output.empty();
  // The output's temporary exists before any work, so an unwritable path
  // fails at once; it is removed on every way out but success.
  if (!null_sink_) out_.emplace(opt_.output, "output", io::OutputRules{opt_.overwrite, {opt_.input}, [this](const std::string& s) { note_(s); }});
  // The CUDA context starts on its own thread while the input and decoder open.
  if (cuda_may_be_needed()) cuda_startup_ = std::async(std::launch::async, start_cuda, opt_.device).share();
  open_input();
  estimate_total();
  choose_backend();
  stats_.decoder = vinfo_->hw_decode ? "nvdec" : "cpu";
  make_slots();
  check_regions_fit();
  prepare_output();
  tbb::flow::graph g;
  using namespace tbb::flow;
  input_node<DecodedPtr> decode_node(g, [this](tbb::flow_control& fc) { return decode(fc); });
  buffer_node<FrameSlot*> free_slots(g);
  join_node<std::tuple<DecodedPtr, FrameSlot*>, reserving> take_slot(g);
  function_node<std::tuple<DecodedPtr, FrameSlot*>, FrameSlot*> stage_in_node(
      g, unlimited, [this](const std::tuple<DecodedPtr, FrameSlot*>& in) { return stage_in(std::get<0>(in), std::get<1>(in)); });
  GpuWait gpu_wait_node(g, unlimited, [this](FrameSlot* s, GpuWait::gateway_type& gw) { gpu_wait(s, gw); });
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
    for (auto& s : slots_)
      if (s->stream) cudaStreamSynchronize(s->stream->get());  // no callback may outlive the graph
    throw;
  }

  if (frames_out_ == 0) {
    // Stopped (Ctrl-C) before the first frame: say so rather than blame the input.
    if (opt_.stop && opt_.stop->load()) throw std::runtime_error("stopped before any frame was done; no output written");
    if (span_.start_seconds || span_.duration_seconds) throw empty_span_error();
    throw std::runtime_error("no video frames could be decoded from '" + opt_.input + "'");
  }
  check_regions_used();  // strict: fails before the output is committed
  const auto t_finish = Clock::now();
  if (!null_sink_ && !opt_.frame_sink) {
    for (auto& pkt : reader_->take_remaining_passthrough()) writer_->write_passthrough(*pkt);
    writer_->finish();
    writer_.reset();
    out_->commit(frames_out_);
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

RunStats run_pipeline(const PipelineOptions& options) { return detail::run_pipeline_with_hooks(options, {}); }

RunStats detail::run_pipeline_with_hooks(const PipelineOptions& options, const PipelineTestHooks& hooks) {
  Pipeline p(options, hooks);
  return p.run();
}

}  // namespace streamblur
