#include "streamblur/pipeline/pipeline.hpp"

#include <tbb/flow_graph.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <thread>
#include <unistd.h>
#include <vector>

extern "C" {
#include <libavformat/avformat.h>
#include <libavutil/imgutils.h>
}

#include "streamblur/io/av_error.hpp"
#include "streamblur/io/convert.hpp"
#include "streamblur/io/reader.hpp"
#include "streamblur/kernels/cuda_check.hpp"
#include "streamblur/kernels/cuda_raii.hpp"

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

std::string default_encoder_for(const std::string& output_path) {
  const AVOutputFormat* of = av_guess_format(nullptr, output_path.c_str(), nullptr);
  if (of && (of->flags & AVFMT_NOTIMESTAMPS) == 0 && std::strcmp(of->name, "image2") != 0) return "libx264";
  if (of) {
    const AVCodecID id = av_guess_codec(of, nullptr, output_path.c_str(), nullptr, AVMEDIA_TYPE_VIDEO);
    if (const AVCodec* c = avcodec_find_encoder(id)) return c->name;
  }
  return "libx264";
}

namespace {

double seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

// One frame in flight and everything it owns. The slots are the graph's tokens.
struct FrameSlot {
  int64_t seq = -1;
  io::AVFramePtr frame;                      // decoded frame, then the output frame
  std::vector<io::AVPacketPtr> passthrough;  // other streams' packets demuxed before it
  // CUDA backend
  cuda::PinnedBuffer host;
  cuda::DeviceBuffer device;
  std::optional<cuda::CudaStream> stream;
  std::optional<cuda::CudaEvent> ev_start, ev_uploaded, ev_filtered, ev_downloaded;
  std::array<std::size_t, 4> offset{};       // of each plane in host/device buffers
  std::array<std::size_t, 4> pitch{};
  std::size_t bytes = 0;
  FilterChain chain;
  std::unique_ptr<io::FrameConverter> back;  // processing format -> input format
  Clock::time_point ready_at;                // output frame complete, waiting for the encoder
};

// What the decode node hands on.
struct Decoded {
  int64_t seq;
  io::AVFramePtr frame;
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

std::string temp_path_for(const fs::path& out) {
  fs::path dir = out.parent_path();
  if (dir.empty()) dir = ".";
  return (dir / ("." + out.filename().string() + ".streamblur-" + std::to_string(::getpid()) + out.extension().string()))
      .string();
}

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

}  // namespace

RunStats run_pipeline(const PipelineOptions& opt) {
  auto note = opt.note ? opt.note : [](const std::string& s) { std::cerr << s << "\n"; };
  if (opt.inflight < 1 || opt.inflight > 64) throw std::invalid_argument("inflight must be between 1 and 64");

  // Filters first: a bad --vf fails before any file is touched.
  const std::vector<FilterInstanceSpec> chain_spec = parse_filter_chain(opt.filters);

  const bool sink = opt.output.empty();
  if (!sink) {
    std::error_code ec;
    if (fs::exists(opt.input, ec) && fs::exists(opt.output, ec) && fs::equivalent(opt.input, opt.output, ec))
      throw std::runtime_error("output '" + opt.output + "' is the input file; choose another output");
    if (fs::exists(opt.output, ec) && !opt.overwrite)
      throw std::runtime_error("output '" + opt.output + "' already exists (use -y to overwrite)");
  }

  io::ReaderOptions ropt;
  ropt.decoder_threads = opt.decoder_threads;
  io::MediaReader reader(opt.input, ropt);
  const io::VideoInfo& vinfo = reader.video();

  std::string why;
  const Backend backend = resolve_backend(opt.backend, &why);
  note(why);

  RunStats stats;
  stats.backend = backend_name(backend);
  stats.input_format = pixel_format_name(vinfo.pix_fmt);

  // Processing format: native, or the nearest native one (swscale in and back).
  const AVPixelFormat proc_fmt = nearest_native_format(vinfo.pix_fmt);
  stats.processing_format = pixel_format_name(proc_fmt);
  std::unique_ptr<io::FrameConverter> to_proc;
  if (proc_fmt != vinfo.pix_fmt) {
    note("note: pixel format " + stats.input_format + " is converted to " + stats.processing_format +
         " for filtering and back");
    to_proc = std::make_unique<io::FrameConverter>(vinfo.width, vinfo.height, vinfo.pix_fmt, proc_fmt);
  }
  const FrameLayout layout = *native_layout(proc_fmt, vinfo.width, vinfo.height);

  // Frame slots.
  const bool use_gpu = backend == Backend::Cuda && !chain_spec.empty();
  std::vector<std::unique_ptr<FrameSlot>> slots;
  for (int i = 0; i < opt.inflight; ++i) {
    auto s = std::make_unique<FrameSlot>();
    s->chain = FilterChain(chain_spec);
    s->chain.configure(layout, backend);
    if (use_gpu) {
      for (int p = 0; p < layout.num_planes; ++p) {
        s->offset[p] = s->bytes;
        s->pitch[p] = (row_bytes(layout, p) + 255) / 256 * 256;
        s->bytes += s->pitch[p] * layout.planes[p].height;
      }
      s->host = cuda::PinnedBuffer(s->bytes);
      s->device = cuda::DeviceBuffer(s->bytes);
      s->stream.emplace();
      s->ev_start.emplace(cudaEventDefault);
      s->ev_uploaded.emplace(cudaEventDefault);
      s->ev_filtered.emplace(cudaEventDefault);
      s->ev_downloaded.emplace(cudaEventDefault);
    }
    if (to_proc) s->back = std::make_unique<io::FrameConverter>(vinfo.width, vinfo.height, proc_fmt, vinfo.pix_fmt);
    slots.push_back(std::move(s));
  }
  if (!chain_spec.empty()) stats.filters = slots.front()->chain.describe();

  // Output: a temporary file beside the real one, renamed at the end.
  std::string tmp_path;
  io::EncoderOptions enc = opt.encoder;
  enc.display_name = opt.output;  // messages name the output, not its temporary file
  if (!enc.note) enc.note = note;
  if (!sink) {
    if (enc.format_name.empty()) {
      const AVOutputFormat* of = av_guess_format(nullptr, opt.output.c_str(), nullptr);
      if (!of) throw std::runtime_error("cannot tell the container of output '" + opt.output + "' from its extension");
      enc.format_name = of->name;
    }
    tmp_path = temp_path_for(opt.output);
    FILE* probe = std::fopen(tmp_path.c_str(), "wb");
    if (!probe) throw std::runtime_error("cannot write output '" + opt.output + "': " + std::strerror(errno));
    std::fclose(probe);
  }
  struct TempGuard {
    std::string path;
    ~TempGuard() { if (!path.empty()) { std::error_code ec; fs::remove(path, ec); } }
  } temp_guard{tmp_path};

  Timers timers;
  std::unique_ptr<io::MediaWriter> writer;
  int64_t frames_out = 0;
  int64_t seq_counter = 0;
  const auto t_start = Clock::now();
  auto last_progress = t_start;
  double last_media_time = 0;
  auto emit_progress = [&](bool final) {
    if (!opt.progress) return;
    Progress p;
    p.frames = frames_out;
    p.total_estimate = vinfo.frame_count_estimate;
    p.elapsed_s = seconds(Clock::now() - t_start);
    p.fps = p.elapsed_s > 0 ? frames_out / p.elapsed_s : 0;
    p.media_time_s = last_media_time;
    p.duration_s = vinfo.duration_seconds;
    p.final = final;
    opt.progress(p);
  };

  tbb::flow::graph g;
  using namespace tbb::flow;

  // decode (serial): the input node reads ahead by one frame at most.
  input_node<DecodedPtr> decode(g, [&](tbb::flow_control& fc) -> DecodedPtr {
    if (opt.stop && opt.stop->load()) reader.request_stop();
    const auto t0 = Clock::now();
    io::DecodedFrame df;
    if (!reader.read(df)) {
      fc.stop();
      return nullptr;
    }
    auto d = std::make_shared<Decoded>();
    d->seq = seq_counter++;
    if (df.frame->width != vinfo.width || df.frame->height != vinfo.height ||
        df.frame->format != static_cast<int>(vinfo.pix_fmt))
      throw std::runtime_error("the video changes size or pixel format mid-stream (" + std::to_string(df.frame->width) +
                               "x" + std::to_string(df.frame->height) + "); this is not supported");
    if (to_proc) {
      io::AVFramePtr conv = io::make_frame();
      to_proc->convert(*df.frame, *conv);
      d->frame = std::move(conv);
    } else {
      d->frame = std::move(df.frame);
    }
    d->passthrough = std::move(df.passthrough);
    d->at = Clock::now();
    timers.decode_busy.add(seconds(d->at - t0));
    return d;
  });

  buffer_node<FrameSlot*> free_slots(g);
  join_node<std::tuple<DecodedPtr, FrameSlot*>, reserving> take_slot(g);

  // upload + filter + download enqueued on the slot's stream (CUDA), or the
  // CPU filters run in place on the frame.
  function_node<std::tuple<DecodedPtr, FrameSlot*>, FrameSlot*> process(
      g, unlimited, [&](const std::tuple<DecodedPtr, FrameSlot*>& in) -> FrameSlot* {
        const DecodedPtr& d = std::get<0>(in);
        FrameSlot* s = std::get<1>(in);
        timers.decode_blocked.add(seconds(Clock::now() - d->at));
        s->seq = d->seq;
        s->passthrough = std::move(d->passthrough);
        if (chain_spec.empty()) {
          s->frame = std::move(d->frame);
          return s;
        }
        if (!use_gpu) {
          const auto t0 = Clock::now();
          s->frame = std::move(d->frame);
          AV_CHECK_CTX(av_frame_make_writable(s->frame.get()), "cannot make a decoded frame writable");
          s->chain.apply(frame_planes(*s->frame, layout), layout.num_planes, nullptr);
          timers.filter_busy.add(seconds(Clock::now() - t0));
          return s;
        }
        // Stage into pinned memory (the decoded frame goes back to the decoder now).
        const AVFrame& f = *d->frame;
        auto* host = s->host.as<uint8_t>();
        for (int p = 0; p < layout.num_planes; ++p)
          av_image_copy_plane(host + s->offset[p], static_cast<int>(s->pitch[p]), f.data[p], f.linesize[p],
                              static_cast<int>(row_bytes(layout, p)), layout.planes[p].height);
        io::AVFramePtr out = io::make_frame();
        AV_CHECK(av_frame_copy_props(out.get(), &f));
        out->format = f.format;
        out->width = f.width;
        out->height = f.height;
        d->frame.reset();
        s->frame = std::move(out);

        const cudaStream_t st = s->stream->get();
        s->ev_start->record(st);
        CUDA_CHECK(cudaMemcpyAsync(s->device.get(), s->host.get(), s->bytes, cudaMemcpyHostToDevice, st));
        s->ev_uploaded->record(st);
        std::array<AnyPlane, 4> dev{};
        for (int p = 0; p < layout.num_planes; ++p)
          dev[p] = AnyPlane{s->device.as<uint8_t>() + s->offset[p], layout.planes[p].width, layout.planes[p].height,
                            static_cast<std::ptrdiff_t>(s->pitch[p]), layout.planes[p].channels, layout.bytes_per_sample};
        s->chain.apply(dev, layout.num_planes, st);
        s->ev_filtered->record(st);
        CUDA_CHECK(cudaMemcpyAsync(s->host.get(), s->device.get(), s->bytes, cudaMemcpyDeviceToHost, st));
        s->ev_downloaded->record(st);
        return s;
      });

  // Waits for the slot's GPU work without holding a TBB worker: a host
  // callback on the stream hands the slot on.
  using GpuWait = async_node<FrameSlot*, FrameSlot*>;
  struct CallbackData {
    GpuWait::gateway_type* gateway;
    FrameSlot* slot;
  };
  GpuWait gpu_wait(g, unlimited, [&](FrameSlot* s, GpuWait::gateway_type& gw) {
    if (!use_gpu) {
      gw.try_put(s);
      return;
    }
    gw.reserve_wait();
    auto* cb = new CallbackData{&gw, s};
    const cudaError_t rc = cudaLaunchHostFunc(
        s->stream->get(),
        [](void* p) {
          std::unique_ptr<CallbackData> data(static_cast<CallbackData*>(p));
          data->gateway->try_put(data->slot);
          data->gateway->release_wait();
        },
        cb);
    if (rc != cudaSuccess) {
      delete cb;
      gw.release_wait();
      CUDA_CHECK(rc);
    }
  });

  // After the GPU: the output frame gets its pixels (and the input's pixel format back).
  function_node<FrameSlot*, FrameSlot*> finish_frame(g, unlimited, [&](FrameSlot* s) -> FrameSlot* {
    if (use_gpu) {
      float ms = 0;
      CUDA_CHECK(cudaEventElapsedTime(&ms, s->ev_start->get(), s->ev_uploaded->get()));
      timers.upload_busy.add(ms / 1e3);
      CUDA_CHECK(cudaEventElapsedTime(&ms, s->ev_uploaded->get(), s->ev_filtered->get()));
      timers.filter_busy.add(ms / 1e3);
      CUDA_CHECK(cudaEventElapsedTime(&ms, s->ev_filtered->get(), s->ev_downloaded->get()));
      timers.download_busy.add(ms / 1e3);
      AVFrame* out = s->frame.get();
      AV_CHECK_CTX(av_frame_get_buffer(out, 0), "cannot allocate an output frame");
      const auto* host = s->host.as<uint8_t>();
      for (int p = 0; p < layout.num_planes; ++p)
        av_image_copy_plane(out->data[p], out->linesize[p], host + s->offset[p], static_cast<int>(s->pitch[p]),
                            static_cast<int>(row_bytes(layout, p)), layout.planes[p].height);
    }
    if (s->back) {
      io::AVFramePtr orig = io::make_frame();
      s->back->convert(*s->frame, *orig);
      s->frame = std::move(orig);
    }
    s->ready_at = Clock::now();
    return s;
  });

  sequencer_node<FrameSlot*> in_order(g, [](FrameSlot* const& s) -> size_t { return static_cast<size_t>(s->seq); });

  // encode + mux (serial, in order); returns the slot to the pool.
  function_node<FrameSlot*, FrameSlot*> encode(g, serial, [&](FrameSlot* s) -> FrameSlot* {
    const auto t0 = Clock::now();
    timers.post_blocked.add(seconds(t0 - s->ready_at));
    if (!sink) {
      if (!writer) writer = std::make_unique<io::MediaWriter>(tmp_path, reader, *s->frame, enc);
      for (auto& pkt : s->passthrough) writer->write_passthrough(*pkt);
      writer->write_video(*s->frame);
    }
    if (s->frame->pts != AV_NOPTS_VALUE) last_media_time = s->frame->pts * av_q2d(vinfo.time_base);
    s->passthrough.clear();
    s->frame.reset();
    ++frames_out;
    const auto t1 = Clock::now();
    timers.encode_busy.add(seconds(t1 - t0));
    if (seconds(t1 - last_progress) >= 0.25) {
      last_progress = t1;
      emit_progress(false);
    }
    return s;
  });

  make_edge(decode, input_port<0>(take_slot));
  make_edge(free_slots, input_port<1>(take_slot));
  make_edge(take_slot, process);
  make_edge(process, gpu_wait);
  make_edge(gpu_wait, finish_frame);
  make_edge(finish_frame, in_order);
  make_edge(in_order, encode);
  make_edge(encode, free_slots);

  for (auto& s : slots) free_slots.try_put(s.get());
  decode.activate();
  try {
    g.wait_for_all();
  } catch (...) {
    for (auto& s : slots)
      if (s->stream) cudaStreamSynchronize(s->stream->get());  // no callback may outlive the graph
    throw;
  }

  if (frames_out == 0) {
    // Stopped (Ctrl-C) before the first frame: say so rather than blame the input.
    if (opt.stop && opt.stop->load()) throw std::runtime_error("stopped before any frame was done; no output written");
    throw std::runtime_error("no video frames could be decoded from '" + opt.input + "'");
  }
  if (!sink) {
    for (auto& pkt : reader.take_remaining_passthrough()) writer->write_passthrough(*pkt);
    writer->finish();
    writer.reset();
    std::error_code ec;
    fs::rename(tmp_path, opt.output, ec);
    if (ec) throw std::runtime_error("cannot move the finished output to '" + opt.output + "': " + ec.message());
    temp_guard.path.clear();
  }

  stats.frames = frames_out;
  stats.wall_s = seconds(Clock::now() - t_start);
  stats.fps = stats.wall_s > 0 ? frames_out / stats.wall_s : 0;
  stats.decode = {timers.decode_busy.v.load(), timers.decode_blocked.v.load()};
  stats.upload = {timers.upload_busy.v.load(), 0};
  stats.filter = {timers.filter_busy.v.load(), 0};
  stats.download = {timers.download_busy.v.load(), timers.post_blocked.v.load()};
  stats.encode = {timers.encode_busy.v.load(), 0};
  stats.decode_warnings = reader.warnings();
  stats.stopped_early = opt.stop && opt.stop->load();
  // The GPU runs upload, filter and download of different frames at once, but
  // they share one device: their sum is its busy time. CPU filters run on all cores.
  struct Candidate { const char* name; double load; };
  const double cpu_filter_load = use_gpu ? 0 : stats.filter.busy_s / std::max(1u, std::thread::hardware_concurrency());
  const Candidate c[] = {{"decode", stats.decode.busy_s},
                         {"gpu (upload+filter+download)", use_gpu ? stats.upload.busy_s + stats.filter.busy_s + stats.download.busy_s : 0},
                         {"filter (cpu)", cpu_filter_load},
                         {"encode", stats.encode.busy_s}};
  const Candidate* best = &c[0];
  for (const Candidate& x : c)
    if (x.load > best->load) best = &x;
  stats.bounding_stage = best->name;
  emit_progress(true);
  return stats;
}

}  // namespace streamblur
