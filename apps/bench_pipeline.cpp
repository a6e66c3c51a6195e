#include "bench_pipeline.hpp"

#include <sys/wait.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>

#include "streamblur/io/reader.hpp"
#include "streamblur/io/synthetic_clip.hpp"
#include "streamblur/kernels/cuda_check.hpp"

namespace streamblur::bench {
namespace fs = std::filesystem;

std::string find_ffmpeg() {
  const char* path = std::getenv("PATH");
  if (!path) return "";
  std::stringstream ss(path);
  std::string dir;
  while (std::getline(ss, dir, ':')) {
    const fs::path p = fs::path(dir) / "ffmpeg";
    std::error_code ec;
    if (fs::is_regular_file(p, ec) && access(p.c_str(), X_OK) == 0) return p.string();
  }
  return "";
}

std::vector<ClipSpec> prepare_clips(const PipelineBenchOptions& opt) {
  std::vector<ClipSpec> clips;
  if (!opt.clips_dir.empty()) {
    std::vector<fs::path> files;
    for (const auto& e : fs::directory_iterator(opt.clips_dir))
      if (e.is_regular_file()) files.push_back(e.path());
    std::sort(files.begin(), files.end());
    for (const auto& f : files) clips.push_back({f.filename().string(), f.string()});
    if (clips.empty()) throw std::runtime_error("no files in clip folder '" + opt.clips_dir + "'");
    return clips;
  }
  fs::create_directories(opt.work_dir);
  bool audio = true;  // an AAC track on the first sample only
  for (auto [w, h] : opt.sample_sizes) {
    const std::string name = std::to_string(h) + "p";
    const std::string path =
        (fs::path(opt.work_dir) / ("sample-" + std::to_string(w) + "x" + std::to_string(h) + "-" +
                                    std::to_string(opt.sample_frames) + (audio ? "-aac" : "") + ".mp4"))
            .string();
    if (!fs::exists(path)) {
      if (opt.progress) opt.progress("making sample clip " + path);
      io::SyntheticClipSpec spec;
      spec.width = w;
      spec.height = h;
      spec.frames = opt.sample_frames;
      spec.fps = 30;
      spec.codec = "libx264";
      spec.preset = "veryfast";  // CABAC and B-frames: decodes like real footage, unlike ultrafast
      spec.crf = 23;
      spec.noise = true;
      spec.audio = audio;
      spec.seed = 2026;
      const std::string tmp = path + ".part.mp4";
      io::write_synthetic_clip(tmp, spec);
      fs::rename(tmp, path);
    }
    clips.push_back({name, path});
    audio = false;
  }
  return clips;
}

namespace {

using Clock = std::chrono::steady_clock;

// Runs ffmpeg with the arguments; returns the seconds of its own processing
// (the "rtime" of -benchmark, which leaves out the program's start-up, as the
// pipeline's own timing does), else the wall time. Throws on failure.
double run_ffmpeg(const std::string& ffmpeg, const std::string& args, const std::string& log_path) {
  const std::string cmd = "'" + ffmpeg + "' -hide_banner -nostdin -nostats -benchmark -loglevel info -y " + args +
                          " 2> '" + log_path + "'";
  const auto t0 = Clock::now();
  const int rc = std::system(cmd.c_str());
  const double wall = std::chrono::duration<double>(Clock::now() - t0).count();
  if (rc != 0) throw std::runtime_error("ffmpeg failed (exit " + std::to_string(WEXITSTATUS(rc)) + "): " + cmd);
  std::ifstream log(log_path);
  std::string line;
  double rtime = 0;
  while (std::getline(log, line)) {
    const auto at = line.find("rtime=");
    if (at != std::string::npos) rtime = std::atof(line.c_str() + at + 6);
  }
  return rtime > 0 ? rtime : wall;
}

}  // namespace

std::vector<JobResult> run_pipeline_bench(const PipelineBenchOptions& opt) {
  const std::vector<ClipSpec> clips = prepare_clips(opt);
  std::vector<Backend> backends;
  if (opt.cuda && cuda::device_count() > 0) backends.push_back(Backend::Cuda);
  if (opt.cpu || backends.empty()) backends.push_back(Backend::Cpu);
  const std::string ffmpeg = opt.ffmpeg ? find_ffmpeg() : "";
  fs::create_directories(opt.work_dir);
  const std::string out_path = (fs::path(opt.work_dir) / "bench-output.mp4").string();

  std::vector<JobResult> results;
  for (const ClipSpec& clip : clips) {
    int64_t clip_frames = 0;
    auto run = [&](const std::string& job, const std::string& filters, bool encode, Backend backend) {
      if (opt.progress) opt.progress(clip.name + ": " + job + (filters.empty() ? "" : " (" + std::string(backend_name(backend)) + ")") + " ...");
      PipelineOptions p;
      p.input = clip.path;
      p.output = encode ? out_path : "";
      p.filters = filters;
      p.backend = backend == Backend::Cuda ? BackendChoice::Cuda : BackendChoice::Cpu;
      p.encoder.codec = opt.codec;
      p.encoder.preset = opt.preset;
      p.overwrite = true;
      p.note = [](const std::string&) {};
      JobResult r;
      r.clip = clip.name;
      r.job = job;
      r.tool = "streamblur";
      r.backend = filters.empty() ? "" : backend_name(backend);
      r.stats = run_pipeline(p);
      r.frames = r.stats.frames;
      r.wall_s = r.stats.wall_s;
      r.fps = r.stats.fps;
      clip_frames = r.frames;
      results.push_back(r);
      if (opt.progress) {
        char line[160];
        std::snprintf(line, sizeof line, "  %.1f frames/s, %.2f s, bound by %s", r.fps, r.wall_s, r.stats.bounding_stage.c_str());
        opt.progress(line);
      }
      return results.size() - 1;
    };
    const size_t decode = run("decode", "", false, Backend::Cpu);
    const size_t transcode = run("transcode", "", true, Backend::Cpu);
    for (Backend b : backends) {
      const size_t g = run("gblur-transcode", opt.gblur, true, b);
      results[g].ratio = results[g].fps / results[transcode].fps;
      results[g].reference = "transcode";
      const size_t c = run("chain-null", opt.chain, false, b);
      results[c].ratio = results[c].fps / results[decode].fps;
      results[c].reference = "decode";
    }
    results[transcode].ratio = results[transcode].fps / results[decode].fps;
    results[transcode].reference = "decode";
    results[decode].ratio = 1;
    results[decode].reference = "decode";

    if (!ffmpeg.empty()) {
      const std::string in = "-i '" + clip.path + "' ";
      const std::string enc = "-c:v " + opt.codec + (opt.preset.empty() ? "" : " -preset " + opt.preset) + " -c:a copy '" + out_path + "'";
      // FFmpeg's gblur/boxblur take sigma / radius like ours; its chain is the same work.
      const struct { const char* job; std::string args; const char* ref; } jobs[] = {
          {"decode", in + "-f null -", "decode"},
          {"transcode", in + enc, "decode"},
          {"gblur-transcode", in + "-vf gblur=sigma=2 " + enc, "transcode"},
          {"chain-null", in + "-vf gblur=sigma=2,boxblur=3 -f null -", "decode"},
      };
      std::map<std::string, double> fps;
      for (const auto& j : jobs) {
        if (opt.progress) opt.progress(clip.name + ": ffmpeg " + j.job + " ...");
        JobResult r;
        r.clip = clip.name;
        r.job = j.job;
        r.tool = "ffmpeg";
        r.frames = clip_frames;
        r.wall_s = run_ffmpeg(ffmpeg, j.args, (fs::path(opt.work_dir) / "ffmpeg.log").string());
        r.fps = clip_frames / r.wall_s;
        fps[j.job] = r.fps;
        r.reference = j.ref;
        r.ratio = r.fps / fps[j.ref];
        results.push_back(r);
      }
    }
  }
  std::error_code ec;
  fs::remove(out_path, ec);
  fs::remove(fs::path(opt.work_dir) / "ffmpeg.log", ec);
  return results;
}

}  // namespace streamblur::bench
