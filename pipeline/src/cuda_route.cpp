// The CUDA route (frame_route.hpp): each slot has pinned host planes, device
// planes, a non-blocking stream and events. A frame reaches the device planes
// from an NVDEC surface (converted on the slot's stream) or from pinned
// memory; the chain and the download are queued on the same stream, and a
// host callback on it hands the slot on, so copies of one frame overlap the
// kernels of another and no worker thread waits for the GPU.
#include <cuda_runtime_api.h>

#include <optional>
#include <stdexcept>

extern "C" {
#include <libavutil/imgutils.h>
}

#include "frame_route.hpp"
#include "streamblur/io/av_error.hpp"
#include "streamblur/io/hw_decode.hpp"
#include "streamblur/kernels/cuda_check.hpp"
#include "streamblur/kernels/cuda_convert.hpp"
#include "streamblur/kernels/cuda_raii.hpp"

namespace streamblur::detail {
namespace {

std::size_t row_bytes(const FrameLayout& l, int i) {
  return static_cast<std::size_t>(l.planes[i].width) * l.planes[i].channels * l.bytes_per_sample;
}

struct CudaSlot final : RouteSlot {
  cuda::PinnedBuffer host;    // staging for CPU-decoded frames (also after an NVDEC fallback), and the download
  cuda::DeviceBuffer device;
  std::optional<cuda::CudaStream> stream;
  std::optional<cuda::CudaEvent> ev_decoded, ev_start, ev_uploaded, ev_filtered, ev_downloaded;
  std::array<std::size_t, 4> offset{};  // of each plane in host/device buffers
  std::array<std::size_t, 4> pitch{};
  std::size_t bytes = 0;
  uint8_t* plane(bool on_device, int p) const {
    return (on_device ? device.as<uint8_t>() : host.as<uint8_t>()) + offset[p];
  }
};

CudaSlot& cuda_slot(FrameSlot& s) { return static_cast<CudaSlot&>(*s.route); }

class CudaRoute final : public FrameRoute {
 public:
  explicit CudaRoute(const RouteSetup& setup);
  std::size_t prepare(FrameSlot& s) override;
  void stage_in(FrameSlot& s, Decoded& d, const FrameContext& frame) override;
  void wait(FrameSlot& s, GpuWait::gateway_type& gw) override;
  void finish(FrameSlot& s) override;
  void view(FrameSlot& s, FrameView& v) override;
  void drain(std::vector<std::unique_ptr<FrameSlot>>& slots) noexcept override {
    for (auto& s : slots)
      if (s->route && cuda_slot(*s).stream) cudaStreamSynchronize(cuda_slot(*s).stream->get());
  }
  bool on_device() const override { return true; }

 private:
  void set_device() const { CUDA_CHECK(cudaSetDevice(setup_.device)); }
  void stage_in_surface(CudaSlot& c, const AVFrame& surface);
  std::array<AnyPlane, 4> planes(const CudaSlot& c, bool on_device) const;

  RouteSetup setup_;
  // Output frames' pixels: reused buffers, so no frame pays for a fresh
  // allocation; a buffer returns when the encoder lets go of its frame.
  io::AVBufferPoolPtr out_pool_;
};

CudaRoute::CudaRoute(const RouteSetup& setup) : setup_(setup) {
  set_device();
  if (!setup_.output_frames) return;
  const int bytes = av_image_get_buffer_size(setup_.proc_fmt, setup_.width, setup_.height, 64);
  if (bytes <= 0) throw std::runtime_error("cannot size output frames of " + pixel_format_name(setup_.proc_fmt));
  out_pool_.reset(av_buffer_pool_init(static_cast<size_t>(bytes) + 64, nullptr));
  if (!out_pool_) throw std::bad_alloc();
}

std::size_t CudaRoute::prepare(FrameSlot& s) {
  auto c = std::make_unique<CudaSlot>();
  const FrameLayout& l = setup_.layout;
  for (int p = 0; p < l.num_planes; ++p) {
    c->offset[p] = c->bytes;
    c->pitch[p] = (row_bytes(l, p) + 255) / 256 * 256;
    c->bytes += c->pitch[p] * l.planes[p].height;
  }
  c->host = cuda::PinnedBuffer(c->bytes);
  c->device = cuda::DeviceBuffer(c->bytes);
  c->stream.emplace();
  c->ev_decoded.emplace(cudaEventDisableTiming);
  c->ev_start.emplace(cudaEventDefault);
  c->ev_uploaded.emplace(cudaEventDefault);
  c->ev_filtered.emplace(cudaEventDefault);
  c->ev_downloaded.emplace(cudaEventDefault);
  const std::size_t bytes = c->bytes;
  s.route = std::move(c);
  return bytes;
}

std::array<AnyPlane, 4> CudaRoute::planes(const CudaSlot& c, bool on_device) const {
  const FrameLayout& l = setup_.layout;
  std::array<AnyPlane, 4> out{};
  for (int p = 0; p < l.num_planes; ++p)
    out[p] = AnyPlane{c.plane(on_device, p), l.planes[p].width, l.planes[p].height,
                      static_cast<std::ptrdiff_t>(c.pitch[p]), l.planes[p].channels, l.bytes_per_sample};
  return out;
}

// NVDEC frames enter here: the surface (NV12, P010 or YUV444P in device
// memory) becomes the processing format in the slot's device planes on the
// slot's stream, after the decoder's copy into it (ev_decoded). No host copy.
void CudaRoute::stage_in_surface(CudaSlot& c, const AVFrame& f) {
  const cudaStream_t st = c.stream->get();
  c.ev_decoded->record(setup_.decode_stream);
  CUDA_CHECK(cudaStreamWaitEvent(st, c.ev_decoded->get(), 0));
  const AVPixelFormat sw = io::hw_frame_sw_format(f);
  auto dev = [&](int p) { return c.plane(true, p); };
  auto pitch = [&](int p) { return static_cast<std::ptrdiff_t>(c.pitch[p]); };
  const FrameLayout& l = setup_.layout;
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
  throw std::runtime_error("NVDEC gave " + pixel_format_name(sw) + " surfaces for " +
                           pixel_format_name(setup_.proc_fmt) +
                           " video; this combination is not supported (decode on the CPU instead)");
}

// The frame's planes reach the slot's device buffer (from an NVDEC surface,
// or uploaded from pinned memory); the chain and the download are queued on
// the slot's stream.
void CudaRoute::stage_in(FrameSlot& s, Decoded& d, const FrameContext& frame) {
  set_device();
  CudaSlot& c = cuda_slot(s);
  const AVFrame& f = *d.frame;
  const FrameLayout& l = setup_.layout;
  const cudaStream_t st = c.stream->get();
  io::AVFramePtr out = io::make_frame();
  AV_CHECK(av_frame_copy_props(out.get(), &f));
  out->format = setup_.proc_fmt;
  out->width = f.width;
  out->height = f.height;
  c.ev_start->record(st);
  if (f.format == AV_PIX_FMT_CUDA) {
    stage_in_surface(c, f);
    s.surface = std::move(d.frame);  // back to the decoder's pool once the GPU has read it
  } else {
    // Stage into pinned memory (the decoded frame goes back to the decoder now).
    for (int p = 0; p < l.num_planes; ++p)
      av_image_copy_plane(c.plane(false, p), static_cast<int>(c.pitch[p]), f.data[p], f.linesize[p],
                          static_cast<int>(row_bytes(l, p)), l.planes[p].height);
    d.frame.reset();
    CUDA_CHECK(cudaMemcpyAsync(c.device.get(), c.host.get(), c.bytes, cudaMemcpyHostToDevice, st));
  }
  s.frame = std::move(out);
  c.ev_uploaded->record(st);
  if (setup_.filters) s.chain.apply(planes(c, true), l.num_planes, st, frame);
  c.ev_filtered->record(st);
  if (!setup_.sink_on_device)
    CUDA_CHECK(cudaMemcpyAsync(c.host.get(), c.device.get(), c.bytes, cudaMemcpyDeviceToHost, st));
  c.ev_downloaded->record(st);
}

// A host callback on the slot's stream hands the slot on.
void CudaRoute::wait(FrameSlot& s, GpuWait::gateway_type& gw) {
  struct CallbackData {
    GpuWait::gateway_type* gateway;
    FrameSlot* slot;
  };
  set_device();
  gw.reserve_wait();
  auto cb = std::make_unique<CallbackData>(CallbackData{&gw, &s});
  const cudaError_t rc = cudaLaunchHostFunc(
      cuda_slot(s).stream->get(),
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

// The stages' GPU times, and the output frame's pixels from the download.
void CudaRoute::finish(FrameSlot& s) {
  set_device();
  CudaSlot& c = cuda_slot(s);
  Timers& t = *setup_.timers;
  float ms = 0;
  CUDA_CHECK(cudaEventElapsedTime(&ms, c.ev_start->get(), c.ev_uploaded->get()));
  t.upload_busy.add(ms / 1e3);
  CUDA_CHECK(cudaEventElapsedTime(&ms, c.ev_uploaded->get(), c.ev_filtered->get()));
  t.filter_busy.add(ms / 1e3);
  CUDA_CHECK(cudaEventElapsedTime(&ms, c.ev_filtered->get(), c.ev_downloaded->get()));
  t.download_busy.add(ms / 1e3);
  if (!setup_.output_frames) return;
  AVFrame* out = s.frame.get();
  out->buf[0] = av_buffer_pool_get(out_pool_.get());
  if (!out->buf[0]) throw std::bad_alloc();
  AV_CHECK_CTX(av_image_fill_arrays(out->data, out->linesize, out->buf[0]->data, setup_.proc_fmt, out->width,
                                    out->height, 64),
               "cannot lay out an output frame");
  const FrameLayout& l = setup_.layout;
  for (int p = 0; p < l.num_planes; ++p)
    av_image_copy_plane(out->data[p], out->linesize[p], c.plane(false, p), static_cast<int>(c.pitch[p]),
                        static_cast<int>(row_bytes(l, p)), l.planes[p].height);
}

void CudaRoute::view(FrameSlot& s, FrameView& v) {
  set_device();
  CudaSlot& c = cuda_slot(s);
  v.planes = planes(c, setup_.sink_on_device);
  v.on_device = setup_.sink_on_device;
  v.stream = c.stream->get();
}

}  // namespace

std::unique_ptr<FrameRoute> make_cuda_route(const RouteSetup& setup) { return std::make_unique<CudaRoute>(setup); }

}  // namespace streamblur::detail
