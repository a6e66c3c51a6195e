// streamblur-bench: throughput measurements, always as ratios against a
// reference measured in the same run.
//   streamblur-bench kernels [--json FILE] [--quick] [--filter gblur|boxblur|all] [--sigmas S,S,...] [--box-radii R,R,...] [--channels 1-4]
//   streamblur-bench pipeline [--json FILE] [--frames N] [--no-nvdec] ...
//   streamblur-bench scale [--streams 1,2,4,8] [--devices all] [--frames N] [--json FILE] ...
//   streamblur-bench make-clip out.mp4 [--size WxH --frames N --no-audio]
// Each subcommand is a section below: its arguments, the function that adds
// its options, and the function that runs it; main only dispatches.
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <fstream>
#include <functional>
#include <iostream>
#include <sstream>
#include <stdexcept>

extern "C" {
#include <libavutil/log.h>
}

#include "bench_cpu_kernels.hpp"
#include "bench_kernels.hpp"
#include "bench_pipeline.hpp"
#include "bench_scale.hpp"
#include "bench_table.hpp"
#include "streamblur/io/log.hpp"
#include "streamblur/testing/synthetic_clip.hpp"
#include "streamblur/kernels/cpu_blur.hpp"
#include "streamblur/config.hpp"
#include "streamblur/kernels/params.hpp"
#include "streamblur/pipeline/stats_json.hpp"
#include "streamblur/pipeline/batch.hpp"

namespace {

namespace bench = streamblur::bench;
using bench::format;
using bench::ReportTable;

// ---------------------------------------------------------------- shared

// "WIDTHxHEIGHT" with both sides at least min_side (sscanf's reading: what
// follows the height is ignored).
bool scan_size(const std::string& text, int min_side, int* width, int* height) {
  return std::sscanf(text.c_str(), "%dx%d", width, height) == 2 && *width >= min_side && *height >= min_side;
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

void write_json(const std::string& path, const nlohmann::json& j) { std::ofstream(path) << j.dump(2) << "\n"; }

// The progress lines of the long subcommands go to stderr, each as it comes.
void print_progress(const std::string& line) {
  std::fprintf(stderr, "%s\n", line.c_str());
  std::fflush(stderr);
}

// ---------------------------------------------------------------- kernels

struct KernelsArgs {
  std::string json_path;
  bool quick = false;
  std::string filter = "all";
  int channels = 1;
  std::vector<int> box_radii;
  std::vector<double> sigmas;
  std::vector<int> bits;
  std::vector<std::string> sizes;
  std::string backend = "cuda";
  bench::CpuKernelBenchOptions cpu;
  std::string cpu_size = "3840x2160";
};

CLI::App* add_kernels_command(CLI::App& app, KernelsArgs& a) {
  auto* kernels = app.add_subcommand("kernels", "GPU time per 8-bit plane against a device copy of the same bytes and NPP "
                                                "(--backend cpu: the CPU filters against a parallel copy)");
  kernels->add_option("--json", a.json_path, "write every figure to FILE");
  kernels->add_flag("--quick", a.quick, "one small size and fewer samples (a smoke test)");
  kernels->add_option("--filter", a.filter, "cuda: the rows of one filter only: gblur, boxblur or all (default)")
      ->check(CLI::IsMember({"all", "gblur", "boxblur"}));
  kernels->add_option("--channels", a.channels,
                      "cuda: interleaved samples per pixel, 1 to 4 (2: UV pairs; 3, 4: RGB, RGBA), the plane's "
                      "width in samples")
      ->check(CLI::Range(1, 4));
  kernels->add_option("--box-radii", a.box_radii, "cuda: box radii to time, comma-separated (default 1,3,8,15,30,60,120,1000,4096)")
      ->delimiter(',')
      ->check(CLI::Range(0, streamblur::kMaxBoxRadius));
  kernels->add_option("--sigmas", a.sigmas, "cuda: Gaussian sigmas to time, comma-separated (default 1,2,5,10,20,40)")
      ->delimiter(',')
      ->check(CLI::Range(streamblur::kMinSigma, streamblur::kMaxSigma));
  kernels->add_option("--bits", a.bits, "cuda: sample sizes to time, comma-separated (default 8,16)")
      ->delimiter(',')
      ->check(CLI::IsMember({8, 16}));
  kernels->add_option("--sizes", a.sizes,
                      "cuda: plane sizes in samples, WIDTHxHEIGHT, comma-separated (default 1920x1080,3840x2160)")
      ->delimiter(',');
  kernels->add_option("--backend", a.backend, "cuda (default) or cpu")->check(CLI::IsMember({"cuda", "cpu"}));
  kernels->add_option("--threads", a.cpu.threads, "cpu: worker threads (0: every core)")->check(CLI::Range(0, 1024));
  kernels->add_option("--size", a.cpu_size, "cpu: plane size WIDTHxHEIGHT (default 3840x2160)");
  return kernels;
}

ReportTable kernel_report_table(bool npp) {
  std::vector<bench::TableColumn> columns = {
      {"size", 10, true},    {"bits", 4},      {"filter", 14, true}, {"param", 6},    {"taps", 5},
      {"auto_path", 9, true}, {"ours_us", 10},  {"2pass_us", 9},      {"reg_us", 9},   {"box3_us", 9},
      {"run_us", 9},         {"wide_us", 9},   {"tensor_us", 9},     {"copy_us", 10},
      {"x_copy", 8},         {"fastest", 9, true}};
  if (npp) columns.insert(columns.end(), {{"npp_us", 10}, {"npp/ours", 9}, {"maxdiff", 8}});
  return ReportTable(std::move(columns));
}

void print_kernel_row(const ReportTable& table, const bench::KernelResult& r) {
  const std::string size = r.channels == 1 ? format("%dx%d", r.width, r.height)
                                           : format("%dx%dx%d", r.width, r.height, r.channels);
  // fastest: the quickest forced path, starred where Auto's took over 5% longer.
  const bench::FastestPath best = bench::fastest_path(r);
  const std::string fastest = best.path.empty() ? "-" : best.path + (bench::auto_missed_fastest(r) ? "*" : "");
  std::vector<std::string> cells = {
      size,                          format("%d", r.bits),           r.filter,
      format("%g", r.param),         format("%d", r.taps),           r.path,
      format("%.1f", r.ours_us),     format("%.1f", r.two_pass_us),
      format("%.1f", r.register_us), format("%.1f", r.box3_us),   format("%.1f", r.running_us),
      format("%.1f", r.wide_us),     format("%.1f", r.tensor_us),    format("%.1f", r.copy_us),
      format("%.2f", r.ours_us / r.copy_us), fastest};
  if (r.npp_us >= 0)
    cells.insert(cells.end(), {format("%.1f", r.npp_us), format("%.2f", r.npp_us / r.ours_us), format("%d", r.npp_max_diff)});
  table.print_row(cells);
  std::fflush(stdout);
}

nlohmann::json kernel_json(const std::vector<bench::KernelResult>& results) {
  nlohmann::json j = nlohmann::json::array();
  for (const auto& r : results) {
    const bench::FastestPath best = bench::fastest_path(r);
    j.push_back({{"width", r.width}, {"height", r.height}, {"channels", r.channels}, {"bits", r.bits}, {"filter", r.filter}, {"param", r.param},
                 {"taps", r.taps}, {"path", r.path}, {"ours_us", r.ours_us},
                 {"two_pass_us", r.two_pass_us}, {"register_us", r.register_us}, {"box3_us", r.box3_us},
                 {"running_us", r.running_us}, {"wide_us", r.wide_us}, {"tensor_us", r.tensor_us}, {"copy_us", r.copy_us},
                 {"ratio_to_copy", r.ours_us / r.copy_us}, {"fastest_path", best.path}, {"fastest_us", best.us},
                 {"auto_missed_fastest", bench::auto_missed_fastest(r)},
                 {"npp_us", r.npp_us}, {"npp_max_diff", r.npp_max_diff}});
  }
  return j;
}

// The default rows, or with `quick` one small size and fewer samples.
bench::KernelBenchOptions kernel_options(bool quick) {
  bench::KernelBenchOptions opt;
  if (quick) {
    opt.sizes = {{640, 360}};
    opt.sigmas = {1, 2, 10};
    opt.box_radii = {1, 15, 120};
    opt.samples = 3;
  }
  return opt;
}

// Prints the kernel table row by row as the rows are measured.
std::vector<bench::KernelResult> kernel_table(bench::KernelBenchOptions opt) {
#if !STREAMBLUR_HAVE_CUDA
  (void)opt;
  throw std::runtime_error(std::string("kernel benchmark: ") + streamblur::kNoCudaBackend +
                           " (--backend cpu times the CPU blurs)");
#else
  const bool npp = bench::npp_available();
  std::printf("Kernel benchmark: median GPU time per plane, rotating over 16 buffers; x_copy = ours / device copy; a forced path "
              "that falls back to another shows 0; fastest = the quickest forced path, * where Auto's took over 5%% longer%s\n",
              npp ? "; npp/ours > 1 means streamblur is faster; maxdiff = largest |NPP - ours|" : " (NPP not built in)");
  const ReportTable table = kernel_report_table(npp);
  table.print_header();
  opt.progress = [table](const bench::KernelResult& r) { print_kernel_row(table, r); };
  return bench::run_kernel_bench(opt);
#endif
}

std::vector<std::pair<int, int>> parse_kernel_sizes(const KernelsArgs& a) {
  std::vector<std::pair<int, int>> sizes;
  for (const std::string& z : a.sizes) {
    int w = 0, h = 0;
    char rest = 0;
    if (std::sscanf(z.c_str(), "%dx%d%c", &w, &h, &rest) != 2 || w < 1 || h < 1 || w % a.channels != 0)
      throw std::invalid_argument("--sizes: expected WIDTHxHEIGHT (the width a multiple of --channels), got '" + z +
                                  "'");
    sizes.emplace_back(w, h);
  }
  return sizes;
}

int run_cuda_kernels(const KernelsArgs& a) {
  const std::vector<std::pair<int, int>> sizes = parse_kernel_sizes(a);
  bench::KernelBenchOptions opt = kernel_options(a.quick);
  if (!a.box_radii.empty()) opt.box_radii = a.box_radii;
  if (!a.sigmas.empty()) opt.sigmas = a.sigmas;
  if (!a.bits.empty()) opt.bits = a.bits;
  if (!sizes.empty()) opt.sizes = sizes;
  opt.channels = a.channels;
  if (a.filter == "boxblur") opt.sigmas.clear();
  if (a.filter == "gblur") opt.box_radii.clear();
  const auto results = kernel_table(opt);
  if (!a.json_path.empty()) write_json(a.json_path, nlohmann::json{{"kernels", kernel_json(results)}});
  return 0;
}

int run_cpu_kernels(const KernelsArgs& a) {
  bench::CpuKernelBenchOptions opt = a.cpu;
  if (!scan_size(a.cpu_size, 1, &opt.width, &opt.height))
    throw std::invalid_argument("--size: expected WIDTHxHEIGHT, got '" + a.cpu_size + "'");
  if (a.quick) {
    opt.width = 640;
    opt.height = 360;
    opt.samples = 3;
  }
  const auto rs = bench::run_cpu_kernel_bench(opt);
  std::printf("CPU filters, one %dx%d 8-bit plane in place, %s threads, SIMD %s; median of %d passes\n", opt.width,
              opt.height, opt.threads ? std::to_string(opt.threads).c_str() : "all", streamblur::cpu::simd_target(),
              opt.samples);
  const ReportTable table({{"filter", 20, true}, {"ms", 10}, {"copy_ms", 10}, {"x_copy", 9}});
  table.print_header();
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& r : rs) {
    table.print_row({r.spec, format("%.3f", r.ours_ms), format("%.3f", r.copy_ms), format("%.2f", r.ours_ms / r.copy_ms)});
    rows.push_back({{"filter", r.spec}, {"width", r.width}, {"height", r.height}, {"ms", r.ours_ms}, {"copy_ms", r.copy_ms}});
  }
  if (!a.json_path.empty())
    write_json(a.json_path,
               nlohmann::json{{"cpu_kernels", rows}, {"threads", opt.threads}, {"simd", streamblur::cpu::simd_target()}});
  return 0;
}

int run_kernels(const KernelsArgs& a) { return a.backend == "cpu" ? run_cpu_kernels(a) : run_cuda_kernels(a); }

// ---------------------------------------------------------------- make-clip

struct MakeClipArgs {
  std::string path, size = "1280x720", codec = "libx264";
  int frames = 120;
  bool no_audio = false;
};

CLI::App* add_make_clip_command(CLI::App& app, MakeClipArgs& a) {
  auto* make_clip = app.add_subcommand("make-clip", "write a deterministic sample clip (moving content, film grain, AAC audio)");
  make_clip->add_option("path", a.path, "output file (.mp4, .mkv, ...)")->required();
  make_clip->add_option("--size", a.size, "WIDTHxHEIGHT");
  make_clip->add_option("--frames", a.frames, "frame count (30 fps)")->check(CLI::Range(1, 100000));
  make_clip->add_option("--codec", a.codec, "video encoder");
  make_clip->add_flag("--no-audio", a.no_audio, "leave out the audio track");
  return make_clip;
}

int run_make_clip(const MakeClipArgs& a) {
  streamblur::io::SyntheticClipSpec spec;
  if (!scan_size(a.size, 2, &spec.width, &spec.height))
    throw std::invalid_argument("--size needs WIDTHxHEIGHT, got '" + a.size + "'");
  spec.frames = a.frames;
  spec.codec = a.codec;
  if (a.codec == "libx264") spec.preset = "ultrafast";
  spec.noise = true;
  spec.audio = !a.no_audio;
  spec.title = "streamblur sample";
  streamblur::io::write_synthetic_clip(a.path, spec);
  std::printf("wrote %s (%dx%d, %d frames%s)\n", a.path.c_str(), spec.width, spec.height, spec.frames,
              spec.audio ? ", AAC audio" : "");
  return 0;
}

// ---------------------------------------------------------------- pipeline

struct PipelineArgs {
  bench::PipelineBenchOptions opt;
  bool tiny = false, no_cpu = false, no_ffmpeg = false, with_kernels = true;
  bool no_nvdec = false, no_ffmpeg_filters = false;
  std::string json_path;
};

CLI::App* add_pipeline_command(CLI::App& app, PipelineArgs& a) {
  auto* pipeline = app.add_subcommand("pipeline", "whole jobs on sample clips (or --clips DIR): decode only, transcode, "
                                      "gblur transcode, a chain to a null sink, on each backend, FFmpeg side by side");
  pipeline->add_option("--clips", a.opt.clips_dir, "use every file in DIR instead of the generated samples");
  pipeline->add_option("--work-dir", a.opt.work_dir, "where samples are made and kept (default bench-clips)");
  pipeline->add_option("--frames", a.opt.sample_frames, "frames per sample clip (default 300)")->check(CLI::Range(1, 100000));
  pipeline->add_option("--codec", a.opt.codec, "encoder (default libx264)");
  pipeline->add_option("--segments", a.opt.segments,
                       "also run the filtered jobs in N segments, each beside its plain row (default 1: not)")
      ->check(CLI::Range(1, 64));
  pipeline->add_option("--segment-cpu-decoders", a.opt.segment_cpu_decoders,
                       "of the N segments at once, how many decode on the CPU, the others with NVDEC (rows -segNcK)")
      ->check(CLI::Range(0, 64));
  pipeline->add_option("--preset", a.opt.preset, "encoder preset (default ultrafast)");
  pipeline->add_flag("--tiny", a.tiny, "tiny clips and few frames: checks that everything runs (CI)");
  pipeline->add_flag("--no-cpu", a.no_cpu, "skip the CPU backend when CUDA is present");
  pipeline->add_flag("--no-ffmpeg", a.no_ffmpeg, "do not run an ffmpeg program side by side");
  pipeline->add_flag("--no-nvdec", a.no_nvdec, "skip the NVDEC rows (run when a CUDA device is present)");
  pipeline->add_flag("--no-ffmpeg-filters", a.no_ffmpeg_filters,
                     "run only ffmpeg's decode and unfiltered transcode (its filtered jobs take longest)");
  pipeline->add_option("--ffmpeg", a.opt.ffmpeg_program, "the ffmpeg program to run side by side (default: the PATH's)");
  pipeline->add_flag("!--no-kernels", a.with_kernels, "skip the kernel table");
  pipeline->add_option("--json", a.json_path, "write every figure to FILE");
  return pipeline;
}

ReportTable pipeline_report_table() {
  return ReportTable({{"clip", 14, true},  {"job", 20, true}, {"tool", 10, true}, {"backend", 7, true},
                      {"dec", 5, true},    {"frames", 6},     {"fps", 9},         {"wall_s", 8},
                      {"ratio", 16},       {"vs_ffm", 7},     {"vs_ffm_tc", 9},   {"decode", 7, false, " | "},
                      {"blk", 6},          {"upload", 7},     {"filter", 6},      {"down", 6},
                      {"encode", 7},       {"blk", 6},        {"bound by", 0, true, " | "}});
}

void print_pipeline_table(const std::vector<bench::JobResult>& rs) {
  std::printf("\nPipeline benchmark (busy seconds per stage; GPU stages timed with CUDA events; blk = time the decoded frames "
              "waited for a free slot / the finished frames waited for the encoder; dec = decoder; ratio = fps / the "
              "CPU-decode reference row named; vs_ffm = fps / ffmpeg's same job; vs_ffm_tc = gblur transcode fps / "
              "ffmpeg's own no-filter CPU transcode)\n");
  const ReportTable table = pipeline_report_table();
  table.print_header();
  for (const auto& r : rs) {
    std::vector<std::string> cells = {r.clip, r.job, r.tool, r.backend.empty() ? "-" : r.backend, r.decoder,
                                      format("%lld", static_cast<long long>(r.frames)), format("%.1f", r.fps),
                                      format("%.2f", r.wall_s), format("%.3f/%s", r.ratio, r.reference.c_str()),
                                      r.vs_ffmpeg > 0 ? format("%.2f", r.vs_ffmpeg) : "-",
                                      r.vs_ffmpeg_transcode > 0 ? format("%.2f", r.vs_ffmpeg_transcode) : "-"};
    if (r.tool != "streamblur") {
      table.print_row(cells, " |" + (r.note.empty() ? "" : " " + r.note));
      continue;
    }
    const auto& s = r.stats;
    cells.insert(cells.end(), {format("%.2f", s.decode.busy_s), format("%.2f", s.decode.blocked_s),
                               format("%.3f", s.upload.busy_s), format("%.3f", s.filter.busy_s),
                               format("%.3f", s.download.busy_s), format("%.2f", s.encode.busy_s),
                               format("%.2f", s.download.blocked_s), s.bounding_stage});
    table.print_row(cells);
  }
}

// The lines to read first, printed last: the NVDEC rows against their
// references and the target P6 (NVDEC gblur transcode >= 1.1x ffmpeg's own
// no-filter CPU transcode).
void print_pipeline_summary(const std::vector<bench::JobResult>& rs, const std::vector<std::string>& notes) {
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
  for (const auto& r : rs)
    if (r.quality)
      std::printf("  %-14s %-5s %-21s PSNR %.3f dB, plain %.3f dB; worst frame %lld, %.3f dB below the plain one\n",
                  r.clip.c_str(), r.decoder == "nvdec" ? "NVDEC" : "CPU", r.job.c_str(), r.quality->segmented_db,
                  r.quality->plain_db, static_cast<long long>(r.quality->worst_frame), r.quality->worst_drop_db);
  for (const auto& n : notes) std::printf("  %s\n", n.c_str());
  std::fflush(stdout);
}

// A job's row: its own figures, then (streamblur jobs) the run's statistics
// as streamblur writes them everywhere (stats_json.hpp).
nlohmann::json job_json(const bench::JobResult& r) {
  nlohmann::json j = {{"clip", r.clip}, {"job", r.job}, {"tool", r.tool}, {"backend", r.backend},
                      {"frames", r.frames}, {"wall_s", r.wall_s}, {"fps", r.fps}, {"ratio", r.ratio},
                      {"reference", r.reference}, {"decoder", r.decoder}, {"vs_ffmpeg", r.vs_ffmpeg},
                      {"vs_ffmpeg_transcode", r.vs_ffmpeg_transcode}, {"note", r.note}};
  if (r.quality) {
    j["psnr_db"] = r.quality->segmented_db;
    j["plain_psnr_db"] = r.quality->plain_db;
    j["worst_frame"] = r.quality->worst_frame;
    j["worst_drop_db"] = r.quality->worst_drop_db;
  }
  if (r.tool == "streamblur") {
    const nlohmann::json stats = nlohmann::json::parse(streamblur::run_stats_json(r.stats));
    for (const auto& [key, value] : stats.items())
      if (!j.contains(key)) j[key] = value;
  }
  return j;
}

// The options the flags stand for, then --tiny's clips and the progress lines.
void finish_pipeline_options(PipelineArgs& a) {
  a.opt.cpu = !a.no_cpu;
  a.opt.ffmpeg = !a.no_ffmpeg;
  a.opt.nvdec = !a.no_nvdec;
  a.opt.ffmpeg_filters = !a.no_ffmpeg_filters;
  if (a.tiny) {
    a.opt.sample_sizes = {{160, 90}, {322, 182}};
    a.opt.sample_frames = 12;
    if (a.opt.work_dir == "bench-clips") a.opt.work_dir = "bench-clips-tiny";
  }
  a.opt.progress = print_progress;
}

// The ffmpeg program the bench will run side by side ("" for none), said on stderr.
std::string announce_ffmpeg(const bench::PipelineBenchOptions& opt) {
  const std::string ffmpeg = !opt.ffmpeg                    ? ""
                             : !opt.ffmpeg_program.empty() ? opt.ffmpeg_program
                                                           : bench::find_ffmpeg();
  std::fprintf(stderr, "ffmpeg side by side: %s\n",
               ffmpeg.empty() ? (opt.ffmpeg ? "no (no ffmpeg on the PATH)" : "no (--no-ffmpeg)") : ffmpeg.c_str());
  return ffmpeg;
}

int run_pipeline(PipelineArgs& a) {
  finish_pipeline_options(a);
  const std::string ffmpeg = announce_ffmpeg(a.opt);
  std::vector<std::string> notes;
  const auto rs = bench::run_pipeline_bench(a.opt, &notes);
  print_pipeline_table(rs);
  std::vector<bench::KernelResult> kr;
  const bool gpu = streamblur::cuda_device_count() > 0;
  if (a.with_kernels && gpu) {
    std::printf("\n");
    kr = kernel_table(kernel_options(a.tiny));
  } else if (a.with_kernels) {
    std::printf("\nKernel table: skipped (%s)\n", STREAMBLUR_HAVE_CUDA ? "no CUDA device" : "built without CUDA");
  }
  if (!a.json_path.empty()) {
    nlohmann::json jobs = nlohmann::json::array();
    for (const auto& r : rs) jobs.push_back(job_json(r));
    write_json(a.json_path, {{"jobs", jobs}, {"codec", a.opt.codec}, {"preset", a.opt.preset}, {"gpu", gpu},
                             {"ffmpeg", ffmpeg}, {"kernels", kernel_json(kr)}, {"notes", notes}});
  }
  print_pipeline_summary(rs, notes);
  return 0;
}

// ---------------------------------------------------------------- scale

struct ScaleArgs {
  bench::ScaleBenchOptions opt;
  std::string streams = "1,2,4,8", devices = "all", size = "1920x1080", backend = "auto";
  std::string jobs = "chain-null,chain-transcode", decode = "cpu,nvdec,mixed";
  bool no_ffmpeg = false, no_nvdec = false;
  std::string json_path;
};

CLI::App* add_scale_command(CLI::App& app, ScaleArgs& a) {
  auto* scale = app.add_subcommand("scale", "aggregate frames/s of N pipelines at once (decode -> chain -> null sink, "
                                   "-> x264 files) with CPU decode, NVDEC and both mixed, over the chosen GPUs; "
                                   "ffmpeg -hwaccel cuda decode-only processes side by side");
  scale->add_option("--streams", a.streams, "stream counts, comma-separated (1 is always run: every row's reference)");
  scale->add_option("--devices", a.devices, "CUDA devices to spread the streams over (stream i on the i%n-th): 'all' or 0,1");
  scale->add_option("--frames", a.opt.frames, "frames of the sample clip (default 1200)")->check(CLI::Range(1, 100000));
  scale->add_option("--size", a.size, "size of the sample clip (default 1920x1080)");
  scale->add_option("--clip", a.opt.clip, "use this clip instead of the sample");
  scale->add_option("--work-dir", a.opt.work_dir, "where samples are made and kept, outputs written (default bench-clips)");
  scale->add_option("--backend", a.backend, "auto, cuda or cpu (auto: CUDA when a device is present)");
  scale->add_option("--jobs", a.jobs, "chain-null, chain-transcode (comma-separated)");
  scale->add_option("--decode", a.decode, "cpu, nvdec, mixed (comma-separated)");
  scale->add_option("--chain", a.opt.chain, "the filter chain (default gblur=sigma=2,boxblur=radius=3)");
  scale->add_option("--codec", a.opt.codec, "encoder of chain-transcode (default libx264)");
  scale->add_option("--preset", a.opt.preset, "encoder preset (default ultrafast)");
  scale->add_option("--threads", a.opt.decoder_threads, "decoder threads per stream (0: default; NVDEC 4)")->check(CLI::Range(0, 64));
  scale->add_option("--compare-streams", a.opt.compare_streams, "streams of the 1-GPU / all-GPUs comparison (default 8)")
      ->check(CLI::Range(1, 256));
  scale->add_flag("--no-ffmpeg", a.no_ffmpeg, "do not run ffmpeg -hwaccel cuda processes side by side");
  scale->add_flag("--no-nvdec", a.no_nvdec, "skip the NVDEC and mixed rows");
  scale->add_option("--ffmpeg", a.opt.ffmpeg_program, "the ffmpeg program to run (default: the PATH's)");
  scale->add_option("--json", a.json_path, "write every figure to FILE");
  return scale;
}

streamblur::BackendChoice parse_backend_choice(const std::string& text) {
  if (text == "auto") return streamblur::BackendChoice::Auto;
  if (text == "cuda") return streamblur::BackendChoice::Cuda;
  if (text == "cpu") return streamblur::BackendChoice::Cpu;
  throw std::invalid_argument("--backend must be auto, cuda or cpu, got '" + text + "'");
}

// The options the text arguments and flags stand for, checked in the order given.
void finish_scale_options(ScaleArgs& a) {
  a.opt.streams = parse_int_list(a.streams, "--streams");
  a.opt.devices = streamblur::parse_device_list(a.devices);
  if (!scan_size(a.size, 2, &a.opt.size.first, &a.opt.size.second))
    throw std::invalid_argument("--size needs WIDTHxHEIGHT, got '" + a.size + "'");
  a.opt.backend = parse_backend_choice(a.backend);
  a.opt.jobs = split_list(a.jobs);
  a.opt.decoders = split_list(a.decode);
  a.opt.ffmpeg = !a.no_ffmpeg;
  a.opt.nvdec = !a.no_nvdec;
  a.opt.progress = print_progress;
}

int run_scale(ScaleArgs& a) {
  finish_scale_options(a);
  const auto report = bench::run_scale_bench(a.opt);
  if (!a.json_path.empty()) write_json(a.json_path, nlohmann::json{{"scale", bench::scale_json(report)}});
  bench::print_scale_report(report);
  if (report.any_failed) {
    std::cerr << "streamblur-bench: error: some scale runs failed (see the note column)\n";
    return 1;
  }
  return 0;
}

// ---------------------------------------------------------------- main

struct Subcommand {
  CLI::App* command;
  std::function<int()> run;
};

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"streamblur-bench: throughput of the blur kernels and the pipeline, as ratios against references"};
  app.require_subcommand(1);
  KernelsArgs kernels;
  MakeClipArgs make_clip;
  PipelineArgs pipeline;
  ScaleArgs scale;
  // In the order --help lists them.
  const Subcommand subcommands[] = {
      {add_kernels_command(app, kernels), [&] { return run_kernels(kernels); }},
      {add_make_clip_command(app, make_clip), [&] { return run_make_clip(make_clip); }},
      {add_pipeline_command(app, pipeline), [&] { return run_pipeline(pipeline); }},
      {add_scale_command(app, scale), [&] { return run_scale(scale); }},
  };
  streamblur::io::install_log_capture(AV_LOG_QUIET);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  try {
    for (const Subcommand& s : subcommands)
      if (*s.command) return s.run();
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "streamblur-bench: error: " << e.what() << "\n";
    return 1;
  }
}
