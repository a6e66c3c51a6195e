#pragma once
// How a frame's pixels travel between the decoder and the sink, the part of
// the flow graph (pipeline.cpp) that depends on the backend: on the CPU
// (cpu_route.cpp: the decoded frame is filtered where it is) or through the
// slot's device planes (cuda_route.cpp: staged in, filtered and downloaded on
// the slot's stream). The graph calls the same stages for both.
#include <tbb/flow_graph.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <vector>

extern "C" {
#include <libavutil/frame.h>
#include <libavutil/pixfmt.h>
}

#include "streamblur/io/av_ptr.hpp"
#include "streamblur/io/convert.hpp"
#include "streamblur/pipeline/filter.hpp"
#include "streamblur/pipeline/frame_layout.hpp"
#include "streamblur/pipeline/pipeline.hpp"

namespace streamblur::detail {

using Clock = std::chrono::steady_clock;
inline double seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

// What a route keeps per slot (device buffers, stream, events).
struct RouteSlot {
  virtual ~RouteSlot() = default;
};

// One frame in flight and everything it owns. The slots are the graph's tokens.
struct FrameSlot {
  int64_t seq = -1;
  io::AVFramePtr frame;                      // decoded frame, then the output frame
  io::AVFramePtr surface;                    // NVDEC surface, held until the GPU has read it
  std::vector<io::AVPacketPtr> passthrough;  // other streams' packets demuxed before it
  FilterChain chain;
  std::unique_ptr<io::FrameConverter> back;  // processing format -> input format
  std::unique_ptr<RouteSlot> route;          // the route's own part
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

// What a route needs of the run, set before the slots are made.
struct RouteSetup {
  FrameLayout layout;               // the processing format's planes
  AVPixelFormat proc_fmt = AV_PIX_FMT_NONE;
  int width = 0, height = 0;
  bool filters = false;             // the chain is not empty
  bool sink_on_device = false;      // a frame sink takes device planes (no download)
  bool output_frames = false;       // output frames are made (encoder or null sink), not a frame sink
  int device = -1;                  // CUDA device (-1: none)
  DeviceStream decode_stream = nullptr;  // the stream NVDEC copies surfaces on (nullptr: no NVDEC)
  Timers* timers = nullptr;
};

// Plane pointers of an AVFrame as AnyPlanes.
std::array<AnyPlane, 4> frame_planes(const AVFrame& f, const FrameLayout& l);

using GpuWait = tbb::flow::async_node<FrameSlot*, FrameSlot*>;

// The backend's stages of the flow graph:
//   stage_in (+ filters) -> wait -> finish -> (in order) -> sink (view)
class FrameRoute {
 public:
  virtual ~FrameRoute() = default;
  // Sets up a slot (its chain already configured); returns the device memory it holds.
  virtual std::size_t prepare(FrameSlot& s) = 0;
  // The decoded frame into the slot, and the chain on it (queued or done).
  virtual void stage_in(FrameSlot& s, Decoded& d, const FrameContext& frame) = 0;
  // Hands the slot on through `gw` once its work is done, without holding a
  // worker thread.
  virtual void wait(FrameSlot& s, GpuWait::gateway_type& gw) = 0;
  // After the work: the output frame's pixels (for the encoder).
  virtual void finish(FrameSlot& s) = 0;
  // The slot's planes for a frame sink.
  virtual void view(FrameSlot& s, FrameView& v) = 0;
  // After a failed run: waits for every slot's queued work, so nothing
  // outlives the graph.
  virtual void drain(std::vector<std::unique_ptr<FrameSlot>>& slots) noexcept = 0;
  // Whether the frames go through device memory (the GPU is one stage).
  virtual bool on_device() const = 0;
};

std::unique_ptr<FrameRoute> make_cpu_route(const RouteSetup& setup);
// The CUDA route (cuda_route.cpp; CUDA backend builds only).
std::unique_ptr<FrameRoute> make_cuda_route(const RouteSetup& setup);

}  // namespace streamblur::detail
