// streamblur-bench: throughput measurements, always as ratios against a
// reference measured in the same run.
//   streamblur-bench kernels [--json FILE] [--quick]
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <fstream>
#include <iostream>

#include "bench_kernels.hpp"

namespace {

void print_kernel_header(bool npp) {
  std::printf("%-10s %-8s %6s %5s %10s %10s %8s", "size", "filter", "param", "taps", "ours_us", "copy_us", "x_copy");
  if (npp) std::printf(" %10s %9s %8s", "npp_us", "npp/ours", "maxdiff");
  std::printf("\n");
}

void print_kernel_row(const streamblur::bench::KernelResult& r) {
  char size[32];
  std::snprintf(size, sizeof size, "%dx%d", r.width, r.height);
  std::printf("%-10s %-8s %6g %5d %10.1f %10.1f %8.2f", size, r.filter.c_str(), r.param, r.taps, r.ours_us, r.copy_us,
              r.ours_us / r.copy_us);
  if (r.npp_us >= 0) std::printf(" %10.1f %9.2f %8d", r.npp_us, r.npp_us / r.ours_us, r.npp_max_diff);
  std::printf("\n");
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"streamblur-bench: throughput of the blur kernels and the pipeline, as ratios against references"};
  app.require_subcommand(1);
  std::string json_path;
  bool quick = false;
  auto* kernels = app.add_subcommand("kernels", "GPU time per 8-bit plane against a device copy of the same bytes and NPP");
  kernels->add_option("--json", json_path, "write every figure to FILE");
  kernels->add_flag("--quick", quick, "one small size and fewer samples (a smoke test)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  try {
    if (*kernels) {
      streamblur::bench::KernelBenchOptions opt;
      if (quick) {
        opt.sizes = {{640, 360}};
        opt.samples = 3;
      }
      const bool npp = streamblur::bench::npp_available();
      std::printf("Kernel benchmark: median GPU time per plane (8-bit), rotating over 16 buffers; x_copy = ours / device copy%s\n",
                  npp ? "; npp/ours > 1 means streamblur is faster; maxdiff = largest |NPP - ours|" : " (NPP not built in)");
      print_kernel_header(npp);
      opt.progress = print_kernel_row;
      const auto results = streamblur::bench::run_kernel_bench(opt);
      if (!json_path.empty()) {
        nlohmann::json j = nlohmann::json::array();
        for (const auto& r : results)
          j.push_back({{"width", r.width}, {"height", r.height}, {"filter", r.filter}, {"param", r.param}, {"taps", r.taps},
                       {"ours_us", r.ours_us}, {"copy_us", r.copy_us}, {"ratio_to_copy", r.ours_us / r.copy_us},
                       {"npp_us", r.npp_us}, {"npp_max_diff", r.npp_max_diff}});
        std::ofstream(json_path) << nlohmann::json{{"kernels", j}}.dump(2) << "\n";
      }
    }
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "streamblur-bench: error: " << e.what() << "\n";
    return 1;
  }
}
