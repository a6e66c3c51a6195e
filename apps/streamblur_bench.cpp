// streamblur-bench: throughput measurements, always as ratios against a
// reference measured in the same run.
//   streamblur-bench kernels [--json FILE] [--quick]
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <fstream>
#include <iostream>

extern "C" {
#include <libavutil/log.h>
}

#include "bench_kernels.hpp"
#include "streamblur/io/log.hpp"
#include "bench_pipeline.hpp"
#include "streamblur/kernels/cuda_check.hpp"
#include "streamblur/io/synthetic_clip.hpp"

namespace {

void print_kernel_header(bool npp) {
  std::printf("%-10s %-8s %6s %5s %10s %9s %9s %10s %8s", "size", "filter", "param", "taps", "ours_us", "fused_us",
              "2pass_us", "copy_us", "x_copy");
  if (npp) std::printf(" %10s %9s %8s", "npp_us", "npp/ours", "maxdiff");
  std::printf("\n");
}

void print_kernel_row(const streamblur::bench::KernelResult& r) {
  char size[32];
  std::snprintf(size, sizeof size, "%dx%d", r.width, r.height);
  std::printf("%-10s %-8s %6g %5d %10.1f %9.1f %9.1f %10.1f %8.2f", size, r.filter.c_str(), r.param, r.taps, r.ours_us,
              r.fused_us, r.two_pass_us, r.copy_us, r.ours_us / r.copy_us);
  if (r.npp_us >= 0) std::printf(" %10.1f %9.2f %8d", r.npp_us, r.npp_us / r.ours_us, r.npp_max_diff);
  std::printf("\n");
  std::fflush(stdout);
}

nlohmann::json kernel_json(const std::vector<streamblur::bench::KernelResult>& results) {
  nlohmann::json j = nlohmann::json::array();
  for (const auto& r : results)
    j.push_back({{"width", r.width}, {"height", r.height}, {"filter", r.filter}, {"param", r.param}, {"taps", r.taps},
                 {"ours_us", r.ours_us}, {"fused_us", r.fused_us}, {"two_pass_us", r.two_pass_us}, {"copy_us", r.copy_us}, {"ratio_to_copy", r.ours_us / r.copy_us},
                 {"npp_us", r.npp_us}, {"npp_max_diff", r.npp_max_diff}});
  return j;
}

std::vector<streamblur::bench::KernelResult> kernel_table(bool quick) {
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
  return streamblur::bench::run_kernel_bench(opt);
}

nlohmann::json stage(const streamblur::StageStats& s) { return {{"busy_s", s.busy_s}, {"blocked_s", s.blocked_s}}; }

void print_pipeline_table(const std::vector<streamblur::bench::JobResult>& rs) {
  std::printf("\nPipeline benchmark (busy seconds per stage; GPU stages timed with CUDA events; blk = time the decoded frames "
              "waited for a free slot / the finished frames waited for the encoder)\n");
  std::printf("%-14s %-16s %-10s %-7s %6s %9s %8s %16s %8s | %7s %6s %7s %6s %6s %7s %6s | %s\n", "clip", "job", "tool",
              "backend", "frames", "fps", "wall_s", "ratio", "vs_ffm", "decode", "blk", "upload", "filter", "down", "encode",
              "blk", "bound by");
  for (const auto& r : rs) {
    char ratio[40];
    std::snprintf(ratio, sizeof ratio, "%.3f/%s", r.ratio, r.reference.c_str());
    double vs = 0;
    if (r.tool == "streamblur")
      for (const auto& f : rs)
        if (f.tool == "ffmpeg" && f.clip == r.clip && f.job == r.job && f.fps > 0) vs = r.fps / f.fps;
    char vs_text[16] = "-";
    if (vs > 0) std::snprintf(vs_text, sizeof vs_text, "%.2f", vs);
    std::printf("%-14s %-16s %-10s %-7s %6lld %9.1f %8.2f %16s %8s", r.clip.c_str(), r.job.c_str(), r.tool.c_str(),
                r.backend.empty() ? "-" : r.backend.c_str(), static_cast<long long>(r.frames), r.fps, r.wall_s, ratio, vs_text);
    if (r.tool == "streamblur") {
      const auto& s = r.stats;
      std::printf(" | %7.2f %6.2f %7.3f %6.3f %6.3f %7.2f %6.2f | %s\n", s.decode.busy_s, s.decode.blocked_s, s.upload.busy_s,
                  s.filter.busy_s, s.download.busy_s, s.encode.busy_s, s.download.blocked_s, s.bounding_stage.c_str());
    } else {
      std::printf(" |\n");
    }
  }
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
  auto* pipeline = app.add_subcommand("pipeline", "whole jobs on sample clips (or --clips DIR): decode only, transcode, "
                                      "gblur transcode, a chain to a null sink, on each backend, FFmpeg side by side");
  streamblur::bench::PipelineBenchOptions popt;
  bool tiny = false, no_cpu = false, no_ffmpeg = false, with_kernels = true;
  pipeline->add_option("--clips", popt.clips_dir, "use every file in DIR instead of the generated samples");
  pipeline->add_option("--work-dir", popt.work_dir, "where samples are made and kept (default bench-clips)");
  pipeline->add_option("--frames", popt.sample_frames, "frames per sample clip (default 300)")->check(CLI::Range(1, 100000));
  pipeline->add_option("--codec", popt.codec, "encoder (default libx264)");
  pipeline->add_option("--preset", popt.preset, "encoder preset (default ultrafast)");
  pipeline->add_flag("--tiny", tiny, "tiny clips and few frames: checks that everything runs (CI)");
  pipeline->add_flag("--no-cpu", no_cpu, "skip the CPU backend when CUDA is present");
  pipeline->add_flag("--no-ffmpeg", no_ffmpeg, "do not run an ffmpeg program side by side");
  pipeline->add_flag("!--no-kernels", with_kernels, "skip the kernel table");
  pipeline->add_option("--json", json_path, "write every figure to FILE");
  streamblur::io::install_log_capture(AV_LOG_QUIET);
  try {
    app.parse(argc, argv);
    popt.cpu = !no_cpu;
    popt.ffmpeg = !no_ffmpeg;
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
      const auto results = kernel_table(quick);
      if (!json_path.empty()) std::ofstream(json_path) << nlohmann::json{{"kernels", kernel_json(results)}}.dump(2) << "\n";
    }
    if (*pipeline) {
      if (tiny) {
        popt.sample_sizes = {{160, 90}, {322, 182}};
        popt.sample_frames = 12;
        if (popt.work_dir == "bench-clips") popt.work_dir = "bench-clips-tiny";
      }
      popt.progress = [](const std::string& line) {
        std::fprintf(stderr, "%s\n", line.c_str());
        std::fflush(stderr);
      };
      const std::string ffmpeg = popt.ffmpeg ? streamblur::bench::find_ffmpeg() : "";
      std::fprintf(stderr, "ffmpeg side by side: %s\n", ffmpeg.empty() ? "no (no ffmpeg on the PATH)" : ffmpeg.c_str());
      const auto rs = streamblur::bench::run_pipeline_bench(popt);
      print_pipeline_table(rs);
      std::vector<streamblur::bench::KernelResult> kr;
      const bool gpu = streamblur::cuda::device_count() > 0;
      if (with_kernels && gpu) {
        std::printf("\n");
        kr = kernel_table(tiny);
      } else if (with_kernels) {
        std::printf("\nKernel table: skipped (no CUDA device)\n");
      }
      if (!json_path.empty()) {
        nlohmann::json jobs = nlohmann::json::array();
        for (const auto& r : rs) {
          nlohmann::json j = {{"clip", r.clip}, {"job", r.job}, {"tool", r.tool}, {"backend", r.backend},
                              {"frames", r.frames}, {"wall_s", r.wall_s}, {"fps", r.fps}, {"ratio", r.ratio},
                              {"reference", r.reference}};
          if (r.tool == "streamblur")
            j["stages"] = {{"decode", stage(r.stats.decode)}, {"upload", stage(r.stats.upload)},
                           {"filter", stage(r.stats.filter)}, {"download", stage(r.stats.download)},
                           {"encode", stage(r.stats.encode)}},
            j["bounding_stage"] = r.stats.bounding_stage, j["filters"] = r.stats.filters;
          jobs.push_back(j);
        }
        nlohmann::json out = {{"jobs", jobs}, {"codec", popt.codec}, {"preset", popt.preset}, {"gpu", gpu},
                              {"ffmpeg", ffmpeg}, {"kernels", kernel_json(kr)}};
        std::ofstream(json_path) << out.dump(2) << "\n";
      }
    }
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "streamblur-bench: error: " << e.what() << "\n";
    return 1;
  }
}
