#include "bench_pipeline.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
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

using Clock = std::chrono::steady_clock;

double run_ffmpeg(const std::string& ffmpeg, const std::string& args, const std::string& log_path, std::string* log_text) {
  const std::string cmd = "'" + ffmpeg + "' -hide_banner -nostdin -nostats -benchmark -loglevel info -y " + args +
                          " 2> '" + log_path + "'";
  const auto t0 = Clock::now();
  const int rc = std::system(cmd.c_str());
  const double wall = std::chrono::duration<double>(Clock::now() - t0).count();
  std::ifstream log(log_path);
  std::string line, text;
  double rtime = 0;
  while (std::getline(log, line)) {
    const auto at = line.find("rtime=");
    if (at != std::string::npos) rtime = std::atof(line.c_str() + at + 6);
    text += line + "\n";
  }
  if (log_text) *log_text = text;
  if (rc != 0) {
    // The last line of its log usually says why.
    std::string last;
    for (std::stringstream ss(text); std::getline(ss, line);)
      if (!line.empty()) last = line;
    throw std::runtime_error("ffmpeg failed (exit " + std::to_string(WEXITSTATUS(rc)) + "): " + cmd +
                             (last.empty() ? "" : " (" + last + ")"));
  }
  return rtime > 0 ? rtime : wall;
}

bool ffmpeg_hwaccel_fell_back(const std::string& log) {
  return log.find("Failed setup for format") != std::string::npos ||
         log.find("hwaccel initialisation returned error") != std::string::npos;
}

std::vector<JobResult> run_pipeline_bench(const PipelineBenchOptions& opt, std::vector<std::string>* notes) {
  const std::vector<ClipSpec> clips = prepare_clips(opt);
  const bool gpu = cuda::device_count() > 0;
  std::vector<Backend> backends;
  if (opt.cuda && gpu) backends.push_back(Backend::Cuda);
  if (opt.cpu || backends.empty()) backends.push_back(Backend::Cpu);
  const bool nvdec = opt.nvdec && opt.cuda && gpu;
  if (notes && !nvdec)
    notes->push_back(std::string("NVDEC rows: skipped (") +
                     (!opt.nvdec ? "--no-nvdec" : !opt.cuda ? "CUDA backend not run" : "no CUDA device") + ")");
  const std::string ffmpeg = !opt.ffmpeg ? "" : !opt.ffmpeg_program.empty() ? opt.ffmpeg_program : find_ffmpeg();
  fs::create_directories(opt.work_dir);
  const std::string out_path = (fs::path(opt.work_dir) / "bench-output.mp4").string();
  const std::string log_path = (fs::path(opt.work_dir) / "ffmpeg.log").string();
  auto say = [&](const std::string& line) {
    if (opt.progress) opt.progress(line);
  };

  std::vector<JobResult> results;
  for (const ClipSpec& clip : clips) {
    const size_t clip_first = results.size();
    int64_t clip_frames = 0;
    auto run = [&](const std::string& job, const std::string& filters, bool encode, Backend backend, HwDecode hwdec) {
      const bool hw = hwdec == HwDecode::Nvdec;
      say(clip.name + ": " + job + (filters.empty() && !hw ? "" : " (" + std::string(backend_name(backend)) + ")") +
          (hw ? " NVDEC" : "") + " ...");
      PipelineOptions p;
      p.input = clip.path;
      p.output = encode ? out_path : "";
      p.filters = filters;
      p.backend = backend == Backend::Cuda ? BackendChoice::Cuda : BackendChoice::Cpu;
      p.hwdec = hwdec;
      p.encoder.codec = opt.codec;
      p.encoder.preset = opt.preset;
      p.overwrite = true;
      std::string run_notes;
      p.note = [&run_notes](const std::string& n) { run_notes += (run_notes.empty() ? "" : "; ") + n; };
      JobResult r;
      r.clip = clip.name;
      r.job = job;
      r.tool = "streamblur";
      r.backend = filters.empty() && !hw ? "" : backend_name(backend);
      r.stats = run_pipeline(p);
      r.decoder = r.stats.decoder;
      r.note = run_notes;
      r.frames = r.stats.frames;
      r.wall_s = r.stats.wall_s;
      r.fps = r.stats.fps;
      clip_frames = r.frames;
      results.push_back(r);
      char line[200];
      std::snprintf(line, sizeof line, "  %.1f frames/s, %.2f s, decoder %s, bound by %s", r.fps, r.wall_s,
                    r.decoder.c_str(), r.stats.bounding_stage.c_str());
      say(line);
      return results.size() - 1;
    };
    // The CPU-decode rows are the references: NVDEC is kept out of them even where Auto would pick it.
    const size_t decode = run("decode", "", false, Backend::Cpu, HwDecode::None);
    const size_t transcode = run("transcode", "", true, Backend::Cpu, HwDecode::None);
    for (Backend b : backends) {
      const size_t g = run("gblur-transcode", opt.gblur, true, b, HwDecode::None);
      results[g].ratio = results[g].fps / results[transcode].fps;
      results[g].reference = "transcode";
      const size_t c = run("chain-null", opt.chain, false, b, HwDecode::None);
      results[c].ratio = results[c].fps / results[decode].fps;
      results[c].reference = "decode";
    }
    results[transcode].ratio = results[transcode].fps / results[decode].fps;
    results[transcode].reference = "decode";
    results[decode].ratio = 1;
    results[decode].reference = "decode";

    if (nvdec) {
      // The first NVDEC row is also the probe: an error, or a run that decoded on
      // the CPU after all, skips this clip's NVDEC rows instead of failing.
      std::string why;
      size_t d = 0;
      try {
        d = run("decode", "", false, Backend::Cuda, HwDecode::Nvdec);
        if (results[d].decoder != "nvdec") {
          why = "the run decoded on the CPU" + (results[d].note.empty() ? "" : ": " + results[d].note);
          results.pop_back();
        }
      } catch (const std::exception& e) {
        why = e.what();
      }
      if (!why.empty()) {
        say("  NVDEC unavailable: " + why);
        if (notes) notes->push_back(clip.name + ": NVDEC rows skipped (" + why + ")");
      } else {
        results[d].ratio = results[d].fps / results[decode].fps;
        results[d].reference = "decode";
        try {
          const size_t g = run("gblur-transcode", opt.gblur, true, Backend::Cuda, HwDecode::Nvdec);
          results[g].ratio = results[g].fps / results[transcode].fps;
          results[g].reference = "transcode";
          const size_t c = run("chain-null", opt.chain, false, Backend::Cuda, HwDecode::Nvdec);
          results[c].ratio = results[c].fps / results[decode].fps;
          results[c].reference = "decode";
        } catch (const std::exception& e) {
          say(std::string("  NVDEC run failed: ") + e.what());
          if (notes) notes->push_back(clip.name + ": NVDEC run failed (" + e.what() + ")");
        }
      }
    }

    if (!ffmpeg.empty()) {
      const std::string in = "-i '" + clip.path + "' -an ";  // -an: builds without audio encoders work too
      const std::string enc = "-c:v " + opt.codec + (opt.preset.empty() ? "" : " -preset " + opt.preset) + " '" + out_path + "'";
      const std::string hw = "-hwaccel cuda ";  // decoded surfaces are downloaded for the CPU encoder
      // FFmpeg's gblur/boxblur take sigma / radius like ours; its chain is the same work.
      struct FfmpegJob { const char* job; const char* decoder; std::string args; const char* ref; };
      std::vector<FfmpegJob> jobs = {
          {"decode", "cpu", in + "-f null -", "decode"},
          {"transcode", "cpu", in + enc, "decode"},
          {"gblur-transcode", "cpu", in + "-vf gblur=sigma=2 " + enc, "transcode"},
          {"chain-null", "cpu", in + "-vf gblur=sigma=2,boxblur=3 -f null -", "decode"},
      };
      if (!opt.ffmpeg_filters) jobs.resize(2);  // the filtered ones take longest (4K chain: about 10 frames/s)
      if (nvdec) {
        // decode-only keeps the frames on the GPU (-hwaccel_output_format cuda): NVDEC alone, as our NVDEC decode row
        jobs.push_back({"decode", "nvdec", hw + "-hwaccel_output_format cuda " + in + "-f null -", "decode"});
        jobs.push_back({"transcode", "nvdec", hw + in + enc, "transcode"});
      }
      std::map<std::string, double> cpu_fps;
      for (const auto& j : jobs) {
        const bool hwjob = std::string(j.decoder) == "nvdec";
        say(clip.name + ": ffmpeg " + j.job + (hwjob ? " -hwaccel cuda" : "") + " ...");
        JobResult r;
        r.clip = clip.name;
        r.job = j.job;
        r.tool = "ffmpeg";
        r.decoder = j.decoder;
        r.frames = clip_frames;
        std::string log;
        try {
          r.wall_s = run_ffmpeg(ffmpeg, j.args, log_path, &log);
        } catch (const std::exception& e) {
          if (!hwjob) throw;
          say(std::string("  skipped: ") + e.what());
          if (notes) notes->push_back(clip.name + ": ffmpeg -hwaccel cuda " + j.job + " skipped (" + e.what() + ")");
          continue;
        }
        if (hwjob && ffmpeg_hwaccel_fell_back(log)) {
          r.decoder = "cpu";
          r.note = "ffmpeg could not set up -hwaccel cuda and decoded on the CPU";
          if (notes) notes->push_back(clip.name + ": ffmpeg " + j.job + ": " + r.note);
        }
        r.fps = clip_frames / r.wall_s;
        if (!hwjob) cpu_fps[j.job] = r.fps;
        r.reference = j.ref;
        r.ratio = cpu_fps.count(j.ref) ? r.fps / cpu_fps[j.ref] : 0;
        results.push_back(r);
        char line[120];
        std::snprintf(line, sizeof line, "  %.1f frames/s, %.2f s", r.fps, r.wall_s);
        say(line);
      }
      // Each of our rows against ffmpeg doing the same job (with the same decoder
      // where ffmpeg ran it, else ffmpeg's CPU decode); gblur transcodes also
      // against ffmpeg's own unfiltered CPU transcode (target P6).
      for (size_t i = clip_first; i < results.size(); ++i) {
        JobResult& r = results[i];
        if (r.tool != "streamblur") continue;
        double same = 0, cpu = 0;
        for (size_t k = clip_first; k < results.size(); ++k) {
          const JobResult& f = results[k];
          if (f.tool != "ffmpeg" || f.fps <= 0 || !f.note.empty()) continue;
          if (f.job == r.job && f.decoder == r.decoder) same = f.fps;
          if (f.job == r.job && f.decoder == "cpu") cpu = f.fps;
        }
        const double ref = same > 0 ? same : cpu;
        if (ref > 0) r.vs_ffmpeg = r.fps / ref;
        if (r.job == "gblur-transcode" && cpu_fps.count("transcode")) r.vs_ffmpeg_transcode = r.fps / cpu_fps["transcode"];
      }
    }
  }
  std::error_code ec;
  fs::remove(out_path, ec);
  fs::remove(log_path, ec);
  return results;
}

}  // namespace streamblur::bench
