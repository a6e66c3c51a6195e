// The CPU route (frame_route.hpp): the decoded frame is filtered where it
// is, by the CPU filters, in the stage-in node; nothing waits.
#include <utility>

#include "frame_route.hpp"
#include "streamblur/io/av_error.hpp"

namespace streamblur::detail {

std::array<AnyPlane, 4> frame_planes(const AVFrame& f, const FrameLayout& l) {
  std::array<AnyPlane, 4> p{};
  for (int i = 0; i < l.num_planes; ++i)
    p[i] = AnyPlane{f.data[i], l.planes[i].width, l.planes[i].height, f.linesize[i], l.planes[i].channels,
                    l.bytes_per_sample};
  return p;
}

namespace {

class CpuRoute final : public FrameRoute {
 public:
  explicit CpuRoute(const RouteSetup& setup) : setup_(setup) {}
  std::size_t prepare(FrameSlot&) override { return 0; }
  void stage_in(FrameSlot& s, Decoded& d, const FrameContext& frame) override {
    const auto t0 = Clock::now();
    s.frame = std::move(d.frame);
    if (setup_.filters) {
      AV_CHECK_CTX(av_frame_make_writable(s.frame.get()), "cannot make a decoded frame writable");
      s.chain.apply(frame_planes(*s.frame, setup_.layout), setup_.layout.num_planes, nullptr, frame);
    }
    setup_.timers->filter_busy.add(seconds(Clock::now() - t0));
  }
  void wait(FrameSlot& s, GpuWait::gateway_type& gw) override { gw.try_put(&s); }
  void finish(FrameSlot&) override {}
  void view(FrameSlot& s, FrameView& v) override { v.planes = frame_planes(*s.frame, setup_.layout); }
  void drain(std::vector<std::unique_ptr<FrameSlot>>&) noexcept override {}
  bool on_device() const override { return false; }

 private:
  RouteSetup setup_;
};

}  // namespace

std::unique_ptr<FrameRoute> make_cpu_route(const RouteSetup& setup) { return std::make_unique<CpuRoute>(setup); }

}  // namespace streamblur::detail
