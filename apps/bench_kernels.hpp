#pragma once
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace streamblur::bench {

struct KernelBenchOptions {
  std::vector<std::pair<int, int>> sizes{{1920, 1080}, {3840, 2160}};
  std::vector<double> sigmas{1, 2, 5, 10, 20, 40};
  std::vector<int> box_radii{1, 3, 8, 15, 30, 60, 120, 1000, 4096};
  std::vector<int> bits{8, 16};  // sample sizes: 8- and 16-bit planes
  int channels = 1;  // 2: interleaved pairs (UV) of width / 2 pixels
  int samples = 15;  // timed rotations per figure; the median is reported
  // One-channel runs with Gaussians: also a whole yuv420p frame per size and
  // sample size (filter "gblur420": Y, U and V at sigma 2, one plane after
  // another with Auto's kernels, against a copy of the three planes;
  // "gblur420-chain" and "gblur420-graph": the same through a FilterChain,
  // launched directly and as one CUDA graph; "gblur-nv12-*" / "gblur-p010-*":
  // the semi-planar frame of the same sample size through the chain).
  bool frame_rows = true;
  std::function<void(const struct KernelResult&)> progress;
};

struct KernelResult {
  int width = 0, height = 0;  // pixels
  int channels = 1;
  std::string filter;   // gblur, boxblur, or gblur420[-chain|-graph] (a whole yuv420p frame)
  double param = 0;     // sigma or radius
  int taps = 0;         // 2r+1
  int bits = 8;         // bits per sample
  std::string path;     // the kernels Auto ran (cuda::path_name)
  double ours_us = 0;   // median GPU time of one plane (the kernels Auto picks)
  double two_pass_us = 0;  // the same, forcing two passes
  double register_us = 0;  // the same, forcing the register-blocked kernels (where they run)
  double box3_us = 0;   // the same, forcing the 3x3 box kernel (where it runs)
  double running_us = 0;   // the same, forcing the running-sum box kernels (where they run)
  double wide_us = 0;      // the same, forcing the wide Gaussian passes (where they run)
  double tensor_us = 0;    // the same, forcing the tensor-core Gaussian (where it runs)
  double copy_us = 0;   // device-to-device copy of the same bytes
  double npp_us = -1;   // NPP on the same buffers; -1 when NPP is not built in
  int npp_max_diff = -1;
};

// The quickest of the paths a row timed by forcing them (0: not timed, or
// fell back to another), and its time: what Auto would have taken by this
// run's own measurements. An empty path where the row timed none (the
// whole-frame rows). Ties go to the path named first.
struct FastestPath {
  std::string path;  // cuda::path_name's spelling
  double us = 0;
};
inline FastestPath fastest_path(const KernelResult& r) {
  const std::pair<const char*, double> timed[] = {{"two-pass", r.two_pass_us}, {"register", r.register_us},
                                                  {"box3", r.box3_us},         {"running", r.running_us},
                                                  {"wide", r.wide_us},         {"tensor", r.tensor_us}};
  FastestPath best;
  for (const auto& [name, us] : timed)
    if (us > 0 && (best.path.empty() || us < best.us)) best = {name, us};
  return best;
}
// Auto's kernels took more than 5% longer than the fastest forced path: the
// row's mark that Auto's thresholds disagree with this run.
inline bool auto_missed_fastest(const KernelResult& r) {
  const FastestPath best = fastest_path(r);
  return !best.path.empty() && best.path != r.path && r.ours_us > 1.05 * best.us;
}

bool npp_available();
std::vector<KernelResult> run_kernel_bench(const KernelBenchOptions& options);

}  // namespace streamblur::bench
