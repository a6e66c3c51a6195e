// streamblur-bench: throughput measurements, always as ratios against a
// reference measured in the same run.
//   streamblur-bench kernels [--json FILE] [--quick] [--filter gblur|boxblur|all] [--sigmas S,S,...] [--box-radii R,R,...] [--channels 1|2]
//   streamblur-bench pipeline [--json FILE] [--frames N] [--no-nvdec] ...
//   streamblur-bench scale [--streams 1,2,4,8] [--devices all] [--frames N] [--json FILE] ...
//   streamblur-bench make-clip out.mp4 [--size WxH --frames N --no-audio]
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>
#include <stdexcept>

extern "C" {
#include <libavutil/log.h>
}

#include "bench_cpu_kernels.hpp"
#include "bench_kernels.hpp"
#include "streamblur/io/log.hpp"
#include "bench_pipeline.hpp"
#include "bench_scale.hpp"
#include "streamblur/kernels/cpu_blur.hpp"
#include "streamblur/kernels/cuda_check.hpp"
#include "streamblur/kernels/params.hpp"
#include "streamblur/pipeline/batch.hpp"
#include "streamblur/io/synthetic_clip.hpp"

namespace {

void print_kernel_header(bool npp) {
  std::printf("%-10s %4s %-14s %6s %5s %-9s %10s %9s %9s %9s %9s %9s %9s %9s %10s %8s %-9s", "size", "bits", "filter", "param",
              "taps", "auto_path", "ours_us", "fused_us", "2pass_us", "reg_us", "slide_us", "run_us", "wide_us", "tensor_us",
              "copy_us", "x_copy", "fastest");
  if (npp) std::printf(" %10s %9s %8s", "npp_us", "npp/ours", "maxdiff");
  std::printf("\n");
}

void print_kernel_row(const streamblur::bench::KernelResult& r) {
  char size[32];
  if (r.channels == 1) std::snprintf(size, sizeof size, "%dx%d", r.width, r.height);
  else std::snprintf(size, sizeof size, "%dx%dx%d", r.width, r.height, r.channels);
  // fastest: the quickest forced path, starred where Auto's took over 5% longer.
  const streamblur::bench::FastestPath best = streamblur::bench::fastest_path(r);
  const std::string fastest = best.path.empty() ? "-" : best.path + (streamblur::bench::auto_missed_fastest(r) ? "*" : "");
  std::printf("%-10s %4d %-14s %6g %5d %-9s %10.1f %9.1f %9.1f %9.1f %9.1f %9.1f %9.1f %9.1f %10.1f %8.2f %-9s", size,
              r.bits, r.filter.c_str(), r.param, r.taps, r.path.c_str(), r.ours_us, r.fused_us, r.two_pass_us,
              r.register_us, r.sliding_us, r.running_us, r.wide_us, r.tensor_us, r.copy_us, r.ours_us / r.copy_us,
              fastest.c_str());
  if (r.npp_us >= 0) std::printf(" %10.1f %9.2f %8d", r.npp_us, r.npp_us / r.ours_us, r.npp_max_diff);
  std::printf("\n");
  std::fflush(stdout);
}

nlohmann::json kernel_json(const std::vector<streamblur::bench::KernelResult>& results) {
  nlohmann::json j = nlohmann::json::array();
  for (const auto& r : results) {
    const streamblur::bench::FastestPath best = streamblur::bench::fastest_path(r);
    j.push_back({{"width", r.width}, {"height", r.height}, {"channels", r.channels}, {"bits", r.bits}, {"filter", r.filter}, {"param", r.param},
                 {"taps", r.taps}, {"path", r.path}, {"ours_us", r.ours_us}, {"fused_us", r.fused_us},
                 {"two_pass_us", r.two_pass_us}, {"register_us", r.register_us}, {"sliding_us", r.sliding_us},
                 {"running_us", r.running_us}, {"wide_us", r.wide_us}, {"tensor_us", r.tensor_us}, {"copy_us", r.copy_us},
                 {"ratio_to_copy", r.ours_us / r.copy_us}, {"fastest_path", best.path}, {"fastest_us", best.us},
                 {"auto_missed_fastest", streamblur::bench::auto_missed_fastest(r)},
                 {"npp_us", r.npp_us}, {"npp_max_diff", r.npp_max_diff}});
  }
  return j;
}

std::vector<streamblur::bench::KernelResult> kernel_table(bool quick, const std::string& only = "all",
                                                          const std::vector<int>& box_radii = {}, int channels = 1,
                                                          const std::vector<double>& sigmas = {},
                                                          const std::vector<int>& bits = {},
                                                          const std::vector<std::pair<int, int>>& sizes = {}) {
  streamblur::bench::KernelBenchOptions opt;
  if (quick) {
    opt.sizes = {{640, 360}};
    opt.sigmas = {1, 2, 10};
    opt.box_radii = {1, 15, 120};
    opt.samples = 3;
  }
  if (!box_radii.empty()) opt.box_radii = box_radii;
  if (!sigmas.empty()) opt.sigmas = sigmas;
  if (!bits.empty()) opt.bits = bits;
  if (!sizes.empty()) opt.sizes = sizes;
  opt.channels = channels;
  if (only == "boxblur") opt.sigmas.clear();
  if (only == "gblur") opt.box_radii.clear();
  const bool npp = streamblur::bench::npp_available();
  std::printf("Kernel benchmark: median GPU time per plane, rotating over 16 buffers; x_copy = ours / device copy; a forced path "
              "that falls back to another shows 0; fastest = the quickest forced path, * where Auto's took over 5%% longer%s\n",
              npp ? "; npp/ours > 1 means streamblur is faster; maxdiff = largest |NPP - ours|" : " (NPP not built in)");
  print_kernel_header(npp);
  opt.progress = print_kernel_row;
  return streamblur::bench::run_kernel_bench(opt);
}

nlohmann::json stage(const streamblur::StageStats& s) { return {{"busy_s", s.busy_s}, {"blocked_s", s.blocked_s}}; }

void print_pipeline_table(const std::vector<streamblur::bench::JobResult>& rs) {
  std::printf("\nPipeline benchmark (busy seconds per stage; GPU stages timed with CUDA events; blk = time the decoded frames "
              "waited for a free slot / the finished frames waited for the encoder; dec = decoder; ratio = fps / the "
              "CPU-decode reference row named; vs_ffm = fps / ffmpeg's same job; vs_ffm_tc = gblur transcode fps / "
              "ffmpeg's own no-filter CPU transcode)\n");
  std::printf("%-14s %-16s %-10s %-7s %-5s %6s %9s %8s %16s %7s %9s | %7s %6s %7s %6s %6s %7s %6s | %s\n", "clip", "job",
              "tool", "backend", "dec", "frames", "fps", "wall_s", "ratio", "vs_ffm", "vs_ffm_tc", "decode", "blk", "upload",
              "filter", "down", "encode", "blk", "bound by");
  for (const auto& r : rs) {
    char ratio[40];
    std::snprintf(ratio, sizeof ratio, "%.3f/%s", r.ratio, r.reference.c_str());
    char vs[16] = "-", vs_tc[16] = "-";
    if (r.vs_ffmpeg > 0) std::snprintf(vs, sizeof vs, "%.2f", r.vs_ffmpeg);
    if (r.vs_ffmpeg_transcode > 0) std::snprintf(vs_tc, sizeof vs_tc, "%.2f", r.vs_ffmpeg_transcode);
    std::printf("%-14s %-16s %-10s %-7s %-5s %6lld %9.1f %8.2f %16s %7s %9s", r.clip.c_str(), r.job.c_str(),
                r.tool.c_str(), r.backend.empty() ? "-" : r.backend.c_str(), r.decoder.c_str(),
                static_cast<long long>(r.frames), r.fps, r.wall_s, ratio, vs, vs_tc);
    if (r.tool == "streamblur") {
      const auto& s = r.stats;
      std::printf(" | %7.2f %6.2f %7.3f %6.3f %6.3f %7.2f %6.2f | %s\n", s.decode.busy_s, s.decode.blocked_s, s.upload.busy_s,
                  s.filter.busy_s, s.download.busy_s, s.encode.busy_s, s.download.blocked_s, s.bounding_stage.c_str());
    } else {
      std::printf(" |%s%s\n", r.note.empty() ? "" : " ", r.note.c_str());
    }
  }
}

// The lines to read first, printed last: the NVDEC rows against their
// references and the target P6 (NVDEC gblur transcode >= 1.1x ffmpeg's own
// no-filter CPU transcode).
void print_pipeline_summary(const std::vector<streamblur::bench::JobResult>& rs, const std::vector<std::string>& notes) {
  std::printf("\nSummary (ratios against the CPU-decode rows of the same clip, measured in this run)\n");
  bool any = false;
  for (const auto& r : rs) {
    if (r.tool != "streamblur" || r.decoder != "nvdec") continue;
    any = true;
    std::printf("  %-14s NVDEC %-16s %9.1f fps  x%.2f %s (cpu decode)", r.clip.c_str(), r.job.c_str(), r.fps, r.ratio,
                r.reference.c_str());
    if (r.job == "gblur-transcode") {
      if (r.vs_ffmpeg_transcode > 0)
        std::printf("  x%.2f ffmpeg's no-filter CPU transcode (P6 target >= 1.1: %s)", r.vs_ffmpeg_transcode,
                    r.vs_ffmpeg_transcode >= 1.1 ? "met" : "not met");
      else
        std::printf("  (P6: no ffmpeg to compare with)");
    }
    std::printf("\n");
  }
  for (const auto& r : rs)
    if (r.tool == "ffmpeg" && r.decoder == "nvdec")
      std::printf("  %-14s ffmpeg -hwaccel cuda %-9s %9.1f fps  x%.2f ffmpeg's CPU %s%s\n", r.clip.c_str(), r.job.c_str(),
                  r.fps, r.ratio, r.reference.c_str(),
                  r.job == "decode" ? " (-hwaccel_output_format cuda: frames stay on the GPU)" : "");
  if (!any) std::printf("  no NVDEC rows\n");
  for (const auto& n : notes) std::printf("  %s\n", n.c_str());
  std::fflush(stdout);
}

std::vector<int> parse_int_list(const std::string& text, const char* what) {
  std::vector<int> v;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    size_t used = 0;
    int x = 0;
    try {
      x = std::stoi(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != item.size()) throw std::invalid_argument(std::string(what) + ": '" + item + "' is not a number");
    v.push_back(x);
  }
  if (v.empty()) throw std::invalid_argument(std::string(what) + " is empty");
  return v;
}

std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> v;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ','))
    if (!item.empty()) v.push_back(item);
  return v;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"streamblur-bench: throughput of the blur kernels and the pipeline, as ratios against references"};
  app.require_subcommand(1);
  std::string json_path;
  bool quick = false;
  auto* kernels = app.add_subcommand("kernels", "GPU time per 8-bit plane against a device copy of the same bytes and NPP "
                                                "(--backend cpu: the CPU filters against a parallel copy)");
  kernels->add_option("--json", json_path, "write every figure to FILE");
  kernels->add_flag("--quick", quick, "one small size and fewer samples (a smoke test)");
  std::string kernel_filter = "all";
  kernels->add_option("--filter", kernel_filter, "cuda: the rows of one filter only: gblur, boxblur or all (default)")
      ->check(CLI::IsMember({"all", "gblur", "boxblur"}));
  int kernel_channels = 1;
  kernels->add_option("--channels", kernel_channels, "cuda: samples per pixel, 1 or 2 (interleaved UV pairs, half as many pixels per row)")
      ->check(CLI::IsMember({1, 2}));
  std::vector<int> kernel_box_radii;
  kernels->add_option("--box-radii", kernel_box_radii, "cuda: box radii to time, comma-separated (default 1,3,8,15,30,60,120,1000,4096)")
      ->delimiter(',')
      ->check(CLI::Range(0, streamblur::kMaxBoxRadius));
  std::vector<double> kernel_sigmas;
  kernels->add_option("--sigmas", kernel_sigmas, "cuda: Gaussian sigmas to time, comma-separated (default 1,2,5,10,20,40)")
      ->delimiter(',')
      ->check(CLI::Range(streamblur::kMinSigma, streamblur::kMaxSigma));
  std::vector<int> kernel_bits;
  kernels->add_option("--bits", kernel_bits, "cuda: sample sizes to time, comma-separated (default 8,16)")
      ->delimiter(',')
      ->check(CLI::IsMember({8, 16}));
  std::vector<std::string> kernel_sizes;
  kernels->add_option("--sizes", kernel_sizes,
                      "cuda: plane sizes in samples, WIDTHxHEIGHT, comma-separated (default 1920x1080,3840x2160)")
      ->delimiter(',');
  std::string kernel_backend = "cuda";
  streamblur::bench::CpuKernelBenchOptions cpu_kopt;
  std::string cpu_size = "3840x2160";
  kernels->add_option("--backend", kernel_backend, "cuda (default) or cpu")->check(CLI::IsMember({"cuda", "cpu"}));
  kernels->add_option("--threads", cpu_kopt.threads, "cpu: worker threads (0: every core)")->check(CLI::Range(0, 1024));
  kernels->add_option("--size", cpu_size, "cpu: plane size WIDTHxHEIGHT (default 3840x2160)");
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
  bool no_nvdec = false;
  pipeline->add_flag("--no-nvdec", no_nvdec, "skip the NVDEC rows (run when a CUDA device is present)");
  bool no_ffmpeg_filters = false;
  pipeline->add_flag("--no-ffmpeg-filters", no_ffmpeg_filters,
                     "run only ffmpeg's decode and unfiltered transcode (its filtered jobs take longest)");
  pipeline->add_option("--ffmpeg", popt.ffmpeg_program, "the ffmpeg program to run side by side (default: the PATH's)");
  pipeline->add_flag("!--no-kernels", with_kernels, "skip the kernel table");
  pipeline->add_option("--json", json_path, "write every figure to FILE");

  auto* scale = app.add_subcommand("scale", "aggregate frames/s of N pipelines at once (decode -> chain -> null sink, "
                                   "-> x264 files) with CPU decode, NVDEC and both mixed, over the chosen GPUs; "
                                   "ffmpeg -hwaccel cuda decode-only processes side by side");
  streamblur::bench::ScaleBenchOptions sopt;
  std::string scale_streams = "1,2,4,8", scale_devices = "all", scale_size = "1920x1080", scale_backend = "auto";
  std::string scale_jobs = "chain-null,chain-transcode", scale_decode = "cpu,nvdec,mixed";
  bool scale_no_ffmpeg = false, scale_no_nvdec = false;
  scale->add_option("--streams", scale_streams, "stream counts, comma-separated (1 is always run: every row's reference)");
  scale->add_option("--devices", scale_devices, "CUDA devices to spread the streams over (stream i on the i%n-th): 'all' or 0,1");
  scale->add_option("--frames", sopt.frames, "frames of the sample clip (default 1200)")->check(CLI::Range(1, 100000));
  scale->add_option("--size", scale_size, "size of the sample clip (default 1920x1080)");
  scale->add_option("--clip", sopt.clip, "use this clip instead of the sample");
  scale->add_option("--work-dir", sopt.work_dir, "where samples are made and kept, outputs written (default bench-clips)");
  scale->add_option("--backend", scale_backend, "auto, cuda or cpu (auto: CUDA when a device is present)");
  scale->add_option("--jobs", scale_jobs, "chain-null, chain-transcode (comma-separated)");
  scale->add_option("--decode", scale_decode, "cpu, nvdec, mixed (comma-separated)");
  scale->add_option("--chain", sopt.chain, "the filter chain (default gblur=sigma=2,boxblur=radius=3)");
  scale->add_option("--codec", sopt.codec, "encoder of chain-transcode (default libx264)");
  scale->add_option("--preset", sopt.preset, "encoder preset (default ultrafast)");
  scale->add_option("--threads", sopt.decoder_threads, "decoder threads per stream (0: default; NVDEC 4)")->check(CLI::Range(0, 64));
  scale->add_option("--compare-streams", sopt.compare_streams, "streams of the 1-GPU / all-GPUs comparison (default 8)")
      ->check(CLI::Range(1, 256));
  scale->add_flag("--no-ffmpeg", scale_no_ffmpeg, "do not run ffmpeg -hwaccel cuda processes side by side");
  scale->add_flag("--no-nvdec", scale_no_nvdec, "skip the NVDEC and mixed rows");
  scale->add_option("--ffmpeg", sopt.ffmpeg_program, "the ffmpeg program to run (default: the PATH's)");
  scale->add_option("--json", json_path, "write every figure to FILE");
  streamblur::io::install_log_capture(AV_LOG_QUIET);
  try {
    app.parse(argc, argv);
    popt.cpu = !no_cpu;
    popt.ffmpeg = !no_ffmpeg;
    popt.nvdec = !no_nvdec;
    popt.ffmpeg_filters = !no_ffmpeg_filters;
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
    if (*kernels && kernel_backend == "cpu") {
      if (std::sscanf(cpu_size.c_str(), "%dx%d", &cpu_kopt.width, &cpu_kopt.height) != 2 || cpu_kopt.width < 1 ||
          cpu_kopt.height < 1)
        throw std::invalid_argument("--size: expected WIDTHxHEIGHT, got '" + cpu_size + "'");
      if (quick) {
        cpu_kopt.width = 640;
        cpu_kopt.height = 360;
        cpu_kopt.samples = 3;
      }
      const auto rs = streamblur::bench::run_cpu_kernel_bench(cpu_kopt);
      std::printf("CPU filters, one %dx%d 8-bit plane in place, %s threads, SIMD %s; median of %d passes\n",
                  cpu_kopt.width, cpu_kopt.height,
                  cpu_kopt.threads ? std::to_string(cpu_kopt.threads).c_str() : "all", streamblur::cpu::simd_target(),
                  cpu_kopt.samples);
      std::printf("%-20s %10s %10s %9s\n", "filter", "ms", "copy_ms", "x_copy");
      nlohmann::json rows = nlohmann::json::array();
      for (const auto& r : rs) {
        std::printf("%-20s %10.3f %10.3f %9.2f\n", r.spec.c_str(), r.ours_ms, r.copy_ms, r.ours_ms / r.copy_ms);
        rows.push_back({{"filter", r.spec}, {"width", r.width}, {"height", r.height}, {"ms", r.ours_ms},
                        {"copy_ms", r.copy_ms}});
      }
      if (!json_path.empty())
        std::ofstream(json_path) << nlohmann::json{{"cpu_kernels", rows}, {"threads", cpu_kopt.threads},
                                                   {"simd", streamblur::cpu::simd_target()}}
                                        .dump(2)
                                 << "\n";
    } else if (*kernels) {
      std::vector<std::pair<int, int>> sizes;
      for (const std::string& z : kernel_sizes) {
        int w = 0, h = 0;
        char rest = 0;
        if (std::sscanf(z.c_str(), "%dx%d%c", &w, &h, &rest) != 2 || w < 1 || h < 1 || w % kernel_channels != 0)
          throw std::invalid_argument("--sizes: expected WIDTHxHEIGHT (the width a multiple of --channels), got '" + z +
                                      "'");
        sizes.emplace_back(w, h);
      }
      const auto results =
          kernel_table(quick, kernel_filter, kernel_box_radii, kernel_channels, kernel_sigmas, kernel_bits, sizes);
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
      const std::string ffmpeg = !popt.ffmpeg                    ? ""
                                 : !popt.ffmpeg_program.empty() ? popt.ffmpeg_program
                                                                : streamblur::bench::find_ffmpeg();
      std::fprintf(stderr, "ffmpeg side by side: %s\n",
                   ffmpeg.empty() ? (popt.ffmpeg ? "no (no ffmpeg on the PATH)" : "no (--no-ffmpeg)") : ffmpeg.c_str());
      std::vector<std::string> notes;
      const auto rs = streamblur::bench::run_pipeline_bench(popt, &notes);
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
                              {"reference", r.reference}, {"decoder", r.decoder}, {"vs_ffmpeg", r.vs_ffmpeg},
                              {"vs_ffmpeg_transcode", r.vs_ffmpeg_transcode}, {"note", r.note}};
          if (r.tool == "streamblur")
            j["stages"] = {{"decode", stage(r.stats.decode)}, {"upload", stage(r.stats.upload)},
                           {"filter", stage(r.stats.filter)}, {"download", stage(r.stats.download)},
                           {"encode", stage(r.stats.encode)}},
            j["bounding_stage"] = r.stats.bounding_stage, j["filters"] = r.stats.filters,
            j["device"] = r.stats.device, j["gpu_memory_bytes"] = r.stats.gpu_memory_bytes;
          jobs.push_back(j);
        }
        nlohmann::json out = {{"jobs", jobs}, {"codec", popt.codec}, {"preset", popt.preset}, {"gpu", gpu},
                              {"ffmpeg", ffmpeg}, {"kernels", kernel_json(kr)}, {"notes", notes}};
        std::ofstream(json_path) << out.dump(2) << "\n";
      }
      print_pipeline_summary(rs, notes);
    }
    if (*scale) {
      sopt.streams = parse_int_list(scale_streams, "--streams");
      sopt.devices = streamblur::parse_device_list(scale_devices);
      if (std::sscanf(scale_size.c_str(), "%dx%d", &sopt.size.first, &sopt.size.second) != 2 || sopt.size.first < 2 ||
          sopt.size.second < 2)
        throw std::invalid_argument("--size needs WIDTHxHEIGHT, got '" + scale_size + "'");
      if (scale_backend == "auto")
        sopt.backend = streamblur::BackendChoice::Auto;
      else if (scale_backend == "cuda")
        sopt.backend = streamblur::BackendChoice::Cuda;
      else if (scale_backend == "cpu")
        sopt.backend = streamblur::BackendChoice::Cpu;
      else
        throw std::invalid_argument("--backend must be auto, cuda or cpu, got '" + scale_backend + "'");
      sopt.jobs = split_list(scale_jobs);
      sopt.decoders = split_list(scale_decode);
      sopt.ffmpeg = !scale_no_ffmpeg;
      sopt.nvdec = !scale_no_nvdec;
      sopt.progress = [](const std::string& line) {
        std::fprintf(stderr, "%s\n", line.c_str());
        std::fflush(stderr);
      };
      const auto report = streamblur::bench::run_scale_bench(sopt);
      if (!json_path.empty()) std::ofstream(json_path) << nlohmann::json{{"scale", streamblur::bench::scale_json(report)}}.dump(2) << "\n";
      streamblur::bench::print_scale_report(report);
      if (report.any_failed) {
        std::cerr << "streamblur-bench: error: some scale runs failed (see the note column)\n";
        return 1;
      }
    }
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "streamblur-bench: error: " << e.what() << "\n";
    return 1;
  }
}
