// The CPU filters on one 8-bit plane, timed as the CLI runs them: a configured
// FilterChain applied in place, row bands in parallel on oneTBB, SIMD inner
// loops. Each figure is the median over `samples` passes, beside a parallel
// copy of the same bytes on the same threads.
#include "bench_cpu_kernels.hpp"

#include <tbb/blocked_range.h>
#include <tbb/global_control.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <memory>
#include <random>

#include "streamblur/pipeline/filter.hpp"
#include "streamblur/pipeline/frame_layout.hpp"

extern "C" {
#include <libavutil/pixfmt.h>
}

namespace streamblur::bench {
namespace {

using Clock = std::chrono::steady_clock;

template <class Fn>
double median_ms(int samples, Fn&& fn) {
  fn();  // warm-up: scratch allocated, pages touched
  std::vector<double> t;
  for (int i = 0; i < samples; ++i) {
    const auto a = Clock::now();
    fn();
    t.push_back(std::chrono::duration<double, std::milli>(Clock::now() - a).count());
  }
  std::nth_element(t.begin(), t.begin() + t.size() / 2, t.end());
  return t[t.size() / 2];
}

}  // namespace

std::vector<CpuKernelResult> run_cpu_kernel_bench(const CpuKernelBenchOptions& o) {
  std::unique_ptr<tbb::global_control> limit;
  if (o.threads > 0)
    limit = std::make_unique<tbb::global_control>(tbb::global_control::max_allowed_parallelism, o.threads);
  const int W = o.width, H = o.height;
  std::vector<uint8_t> src(static_cast<size_t>(W) * H), work(src.size()), copy(src.size());
  std::mt19937 rng(7);
  for (auto& v : src) v = static_cast<uint8_t>(rng());
  const FrameLayout layout = *native_layout(AV_PIX_FMT_GRAY8, W, H);
  std::array<AnyPlane, 4> planes{};
  planes[0] = AnyPlane{work.data(), W, H, W, 1, 1};

  const double copy_ms = median_ms(o.samples, [&] {
    tbb::parallel_for(tbb::blocked_range<int>(0, H, 16), [&](const tbb::blocked_range<int>& r) {
      std::memcpy(copy.data() + static_cast<size_t>(r.begin()) * W, src.data() + static_cast<size_t>(r.begin()) * W,
                  static_cast<size_t>(r.size()) * W);
    });
  });
  std::vector<CpuKernelResult> out;
  for (const std::string& spec : o.specs) {
    FilterChain chain(parse_filter_chain(spec));
    chain.configure(layout, Backend::Cpu);
    std::memcpy(work.data(), src.data(), src.size());
    CpuKernelResult r;
    r.width = W;
    r.height = H;
    r.spec = spec;
    r.copy_ms = copy_ms;
    r.ours_ms = median_ms(o.samples, [&] { chain.apply(planes, 1, nullptr); });
    out.push_back(r);
  }
  return out;
}

}  // namespace streamblur::bench
