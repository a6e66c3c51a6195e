#pragma once
// streamblur-bench kernels --backend cpu: the CPU filters (the same FilterChain
// the CLI's CPU backend runs: SIMD rows over oneTBB bands) on a host plane.
#include <string>
#include <vector>

namespace streamblur::bench {

struct CpuKernelResult {
  int width = 0, height = 0;
  std::string spec;       // the filter chain, e.g. "gblur=sigma=2"
  double ours_ms = 0;     // median time of one in-place pass over the plane
  double copy_ms = 0;     // a parallel copy of the same bytes, same threads (the floor's order)
};

struct CpuKernelBenchOptions {
  int width = 3840, height = 2160;
  int threads = 0;  // 0: oneTBB's default (every core)
  int samples = 15;
  std::vector<std::string> specs{"gblur=sigma=2",      "gblur=sigma=10",     "boxblur=radius=1",
                                 "boxblur=radius=3",   "boxblur=radius=8",   "boxblur=radius=15",
                                 "boxblur=radius=60"};
};

std::vector<CpuKernelResult> run_cpu_kernel_bench(const CpuKernelBenchOptions& options);

}  // namespace streamblur::bench
