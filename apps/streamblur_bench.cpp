// streamblur-bench: throughput measurements, always as ratios against a
// reference measured in the same run.
//   streamblur-bench kernels [--json FILE] [--quick]
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <fstream>
#include <iostream>

#include "bench_kernels.hpp"
#include "streamblur/io/synthetic_clip.hpp"

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
  auto* make_clip = app.add_subcommand("make-clip", "write a deterministic sample clip (moving content, film grain, AAC audio)");
  std::string clip_path, clip_size = "1280x720", clip_codec = "libx264";
  int clip_frames = 120;
  bool clip_no_audio = false;
  make_clip->add_option("path", clip_path, "output file (.mp4, .mkv, ...)")->required();
  make_clip->add_option("--size", clip_size, "WIDTHxHEIGHT");
  make_clip->add_option("--frames", clip_frames, "frame count (30 fps)")->check(CLI::Range(1, 100000));
  make_clip->add_option("--codec", clip_codec, "video encoder");
  make_clip->add_flag("--no-audio", clip_no_audio, "leave out the audio track");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  try {
    if (*make_clip) {
      streamblur::io::SyntheticClipSpec spec;
      if (std::sscanf(clip_size.c_str(), "%dx%d", &spec.width, &spec.height) != 2 || spec.width < 2 || spec.height < 2)
        throw std::invalid_argument("--size needs WIDTHxHEIGHT, got '" + clip_size + "'");
      spec.frames = clip_frames;
      spec.codec = clip_codec;
      if (clip_codec == "libx264") spec.preset = "ultrafast";
      spec.noise = true;
      spec.audio = !clip_no_audio;
      spec.title = "streamblur sample";
      streamblur::io::write_synthetic_clip(clip_path, spec);
      std::printf("wrote %s (%dx%d, %d frames%s)\n", clip_path.c_str(), spec.width, spec.height, spec.frames,
                  spec.audio ? ", AAC audio" : "");
    }
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
