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
#include "streamblur/testing/synthetic_clip.hpp"

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

namespace {

// An ffmpeg job beside ours: its arguments, and the CPU row of ffmpeg's it is
// measured against.
struct FfmpegJob {
  const char* job;
  const char* decoder;
  std::string args;
  const char* ref;
};

// One run of run_pipeline_bench, a clip at a time: every streamblur row of
// the clip, its NVDEC rows, then ffmpeg's and the comparisons with them.
class PipelineBench {
 public:
  PipelineBench(const PipelineBenchOptions& opt, std::vector<std::string>* notes);
  void run_clip(const ClipSpec& clip);
  // Removes the output and the ffmpeg log; every row.
  std::vector<JobResult> finish();

 private:
  struct References {
    size_t decode, transcode;  // the clip's CPU-decode rows
  };
  void say(const std::string& line) const {
    if (opt_.progress) opt_.progress(line);
  }
  void note(const std::string& line) const {
    if (notes_) notes_->push_back(line);
  }
  // results_[row] against results_[reference]'s fps, named `name`.
  void set_ratio(size_t row, size_t reference, const char* name) {
    results_[row].ratio = results_[row].fps / results_[reference].fps;
    results_[row].reference = name;
  }
  size_t run_job(const ClipSpec& clip, const std::string& job, const std::string& filters, bool encode, Backend backend,
                 HwDecode hwdec, int segments = 1);
  // With --segments N: `row`'s job again in N segments, against it.
  void run_segmented_twin(const ClipSpec& clip, size_t row, const std::string& filters, bool encode, Backend backend,
                          HwDecode hwdec);
  // The twin's output and the plain run's (plain_path_) against the filtered frames.
  void measure_quality(const ClipSpec& clip, size_t twin, const std::string& filters, Backend backend, HwDecode hwdec);
  References run_cpu_rows(const ClipSpec& clip);
  void run_nvdec_rows(const ClipSpec& clip, const References& refs);
  std::vector<FfmpegJob> ffmpeg_jobs(const ClipSpec& clip) const;
  void run_ffmpeg_job(const ClipSpec& clip, const FfmpegJob& j, std::map<std::string, double>& cpu_fps);
  void compare_with_ffmpeg(size_t clip_first, std::map<std::string, double>& cpu_fps);

  const PipelineBenchOptions& opt_;
  std::vector<std::string>* notes_;
  std::vector<Backend> backends_;
  bool nvdec_ = false;
  std::string ffmpeg_, out_path_, plain_path_, log_path_;
  std::vector<JobResult> results_;
  int64_t clip_frames_ = 0;  // the frames of the clip's last streamblur run
};

PipelineBench::PipelineBench(const PipelineBenchOptions& opt, std::vector<std::string>* notes)
    : opt_(opt), notes_(notes) {
  const bool gpu = cuda_device_count() > 0;
  if (opt.cuda && gpu) backends_.push_back(Backend::Cuda);
  if (opt.cpu || backends_.empty()) backends_.push_back(Backend::Cpu);
  nvdec_ = opt.nvdec && opt.cuda && gpu;
  if (!nvdec_)
    note(std::string("NVDEC rows: skipped (") +
         (!opt.nvdec ? "--no-nvdec" : !opt.cuda ? "CUDA backend not run" : "no CUDA device") + ")");
  ffmpeg_ = !opt.ffmpeg ? "" : !opt.ffmpeg_program.empty() ? opt.ffmpeg_program : find_ffmpeg();
  fs::create_directories(opt.work_dir);
  out_path_ = (fs::path(opt.work_dir) / "bench-output.mp4").string();
  plain_path_ = (fs::path(opt.work_dir) / "bench-plain-output.mp4").string();
  log_path_ = (fs::path(opt.work_dir) / "ffmpeg.log").string();
}

size_t PipelineBench::run_job(const ClipSpec& clip, const std::string& job, const std::string& filters, bool encode,
                              Backend backend, HwDecode hwdec, int segments) {
  const bool hw = hwdec == HwDecode::Nvdec;
  say(clip.name + ": " + job + (filters.empty() && !hw ? "" : " (" + std::string(backend_name(backend)) + ")") +
      (hw ? " NVDEC" : "") + (segments > 1 ? ", " + std::to_string(segments) + " segments" : "") + " ...");
  PipelineOptions p;
  p.input = clip.path;
  p.output = encode ? out_path_ : "";
  p.filters = filters;
  p.backend = backend == Backend::Cuda ? BackendChoice::Cuda : BackendChoice::Cpu;
  p.hwdec = hwdec;
  p.encoder.codec = opt_.codec;
  p.encoder.preset = opt_.preset;
  p.overwrite = true;
  p.segments = segments;
  if (segments > 1 && opt_.segment_cpu_decoders > 0) {
    p.segments_cpu_decoders = opt_.segment_cpu_decoders;
    if (p.hwdec == HwDecode::Nvdec) p.hwdec = HwDecode::Auto;  // NVDEC for the others
  }
  std::string run_notes;
  p.note = [&run_notes](const std::string& n) { run_notes += (run_notes.empty() ? "" : "; ") + n; };
  JobResult r;
  r.clip = clip.name;
  r.job = segments > 1 ? job + "-seg" + std::to_string(segments) : job;
  if (segments > 1 && p.segments_cpu_decoders > 0) r.job += "c" + std::to_string(p.segments_cpu_decoders);
  r.tool = "streamblur";
  r.backend = filters.empty() && !hw ? "" : backend_name(backend);
  r.stats = run_pipeline(p);
  r.decoder = r.stats.decoder;
  r.note = run_notes;
  r.frames = r.stats.frames;
  r.wall_s = r.stats.wall_s;
  r.fps = r.stats.fps;
  clip_frames_ = r.frames;
  results_.push_back(r);
  char line[200];
  std::snprintf(line, sizeof line, "  %.1f frames/s, %.2f s, decoder %s, bound by %s", r.fps, r.wall_s,
                r.decoder.c_str(), r.stats.bounding_stage.c_str());
  say(line);
  return results_.size() - 1;
}

void PipelineBench::run_segmented_twin(const ClipSpec& clip, size_t row, const std::string& filters, bool encode,
                                       Backend backend, HwDecode hwdec) {
  if (opt_.segments <= 1) return;
  const std::string job = results_[row].job;
  if (encode) fs::rename(out_path_, plain_path_);  // the plain run's output, kept for the quality
  const size_t twin = run_job(clip, job, filters, encode, backend, hwdec, opt_.segments);
  set_ratio(twin, row, "segments 1");
  if (encode) measure_quality(clip, twin, filters, backend, hwdec);
}

void PipelineBench::measure_quality(const ClipSpec& clip, size_t twin, const std::string& filters, Backend backend,
                                    HwDecode hwdec) {
  say(clip.name + ": PSNR of " + results_[twin].job + " and of its plain row against the filtered frames ...");
  io::PsnrMeter meter({plain_path_, out_path_});
  PipelineOptions p;
  p.input = clip.path;
  p.filters = filters;
  p.backend = backend == Backend::Cuda ? BackendChoice::Cuda : BackendChoice::Cpu;
  p.hwdec = hwdec;
  p.sink_memory = SinkMemory::Host;
  p.note = [](const std::string&) {};
  p.frame_sink = [&meter](const FrameView& v) { meter.add(io::host_planes(v)); };
  run_pipeline(p);
  meter.finish();
  const io::SpanQuality q = io::span_quality(meter, 0, 1);
  results_[twin].quality = q;
  char line[200];
  std::snprintf(line, sizeof line, "  %.3f dB segmented, %.3f dB plain; worst frame %lld, %.3f dB below the plain one",
                q.segmented_db, q.plain_db, static_cast<long long>(q.worst_frame), q.worst_drop_db);
  say(line);
}

// The CPU-decode rows are the references: NVDEC is kept out of them even where Auto would pick it.
PipelineBench::References PipelineBench::run_cpu_rows(const ClipSpec& clip) {
  const size_t decode = run_job(clip, "decode", "", false, Backend::Cpu, HwDecode::None);
  const size_t transcode = run_job(clip, "transcode", "", true, Backend::Cpu, HwDecode::None);
  for (Backend b : backends_) {
    const size_t g = run_job(clip, "gblur-transcode", opt_.gblur, true, b, HwDecode::None);
    set_ratio(g, transcode, "transcode");
    const size_t c = run_job(clip, "chain-null", opt_.chain, false, b, HwDecode::None);
    set_ratio(c, decode, "decode");
    run_segmented_twin(clip, g, opt_.gblur, true, b, HwDecode::None);
    run_segmented_twin(clip, c, opt_.chain, false, b, HwDecode::None);
  }
  set_ratio(transcode, decode, "decode");
  results_[decode].ratio = 1;
  results_[decode].reference = "decode";
  return {decode, transcode};
}

void PipelineBench::run_nvdec_rows(const ClipSpec& clip, const References& refs) {
  // The first NVDEC row is also the probe: an error, or a run that decoded on
  // the CPU after all, skips this clip's NVDEC rows instead of failing.
  std::string why;
  size_t d = 0;
  try {
    d = run_job(clip, "decode", "", false, Backend::Cuda, HwDecode::Nvdec);
    if (results_[d].decoder != "nvdec") {
      why = "the run decoded on the CPU" + (results_[d].note.empty() ? "" : ": " + results_[d].note);
      results_.pop_back();
    }
  } catch (const std::exception& e) {
    why = e.what();
  }
  if (!why.empty()) {
    say("  NVDEC unavailable: " + why);
    note(clip.name + ": NVDEC rows skipped (" + why + ")");
    return;
  }
  set_ratio(d, refs.decode, "decode");
  try {
    const size_t g = run_job(clip, "gblur-transcode", opt_.gblur, true, Backend::Cuda, HwDecode::Nvdec);
    set_ratio(g, refs.transcode, "transcode");
    const size_t c = run_job(clip, "chain-null", opt_.chain, false, Backend::Cuda, HwDecode::Nvdec);
    set_ratio(c, refs.decode, "decode");
    run_segmented_twin(clip, g, opt_.gblur, true, Backend::Cuda, HwDecode::Nvdec);
    run_segmented_twin(clip, c, opt_.chain, false, Backend::Cuda, HwDecode::Nvdec);
  } catch (const std::exception& e) {
    say(std::string("  NVDEC run failed: ") + e.what());
    note(clip.name + ": NVDEC run failed (" + e.what() + ")");
  }
}

std::vector<FfmpegJob> PipelineBench::ffmpeg_jobs(const ClipSpec& clip) const {
  const std::string in = "-i '" + clip.path + "' -an ";  // -an: builds without audio encoders work too
  const std::string enc = "-c:v " + opt_.codec + (opt_.preset.empty() ? "" : " -preset " + opt_.preset) + " '" + out_path_ + "'";
  const std::string hw = "-hwaccel cuda ";  // decoded surfaces are downloaded for the CPU encoder
  // The same work as opt_'s defaults: gblur's sigma is in each plane's pixels in both;
  // boxblur=radius=3 on 4:2:0 is FFmpeg's boxblur=3:1:2:1 (luma radius 3, chroma
  // radius 2, one pass each).
  std::vector<FfmpegJob> jobs = {
      {"decode", "cpu", in + "-f null -", "decode"},
      {"transcode", "cpu", in + enc, "decode"},
      {"gblur-transcode", "cpu", in + "-vf gblur=sigma=2 " + enc, "transcode"},
      {"chain-null", "cpu", in + "-vf gblur=sigma=2,boxblur=3:1:2:1 -f null -", "decode"},
  };
  if (!opt_.ffmpeg_filters) jobs.resize(2);  // the filtered ones take longest (4K chain: about 10 frames/s)
  if (nvdec_) {
    // decode-only keeps the frames on the GPU (-hwaccel_output_format cuda): NVDEC alone, as our NVDEC decode row
    jobs.push_back({"decode", "nvdec", hw + "-hwaccel_output_format cuda " + in + "-f null -", "decode"});
    jobs.push_back({"transcode", "nvdec", hw + in + enc, "transcode"});
  }
  return jobs;
}

// One ffmpeg row; a -hwaccel cuda job that fails is skipped with a note.
void PipelineBench::run_ffmpeg_job(const ClipSpec& clip, const FfmpegJob& j, std::map<std::string, double>& cpu_fps) {
  const bool hwjob = std::string(j.decoder) == "nvdec";
  say(clip.name + ": ffmpeg " + j.job + (hwjob ? " -hwaccel cuda" : "") + " ...");
  JobResult r;
  r.clip = clip.name;
  r.job = j.job;
  r.tool = "ffmpeg";
  r.decoder = j.decoder;
  r.frames = clip_frames_;
  std::string log;
  try {
    r.wall_s = run_ffmpeg(ffmpeg_, j.args, log_path_, &log);
  } catch (const std::exception& e) {
    if (!hwjob) throw;
    say(std::string("  skipped: ") + e.what());
    note(clip.name + ": ffmpeg -hwaccel cuda " + j.job + " skipped (" + e.what() + ")");
    return;
  }
  if (hwjob && ffmpeg_hwaccel_fell_back(log)) {
    r.decoder = "cpu";
    r.note = "ffmpeg could not set up -hwaccel cuda and decoded on the CPU";
    note(clip.name + ": ffmpeg " + j.job + ": " + r.note);
  }
  r.fps = clip_frames_ / r.wall_s;
  if (!hwjob) cpu_fps[j.job] = r.fps;
  r.reference = j.ref;
  r.ratio = cpu_fps.count(j.ref) ? r.fps / cpu_fps[j.ref] : 0;
  results_.push_back(r);
  char line[120];
  std::snprintf(line, sizeof line, "  %.1f frames/s, %.2f s", r.fps, r.wall_s);
  say(line);
}

// Each of our rows against ffmpeg doing the same job (with the same decoder
// where ffmpeg ran it, else ffmpeg's CPU decode); gblur transcodes also
// against ffmpeg's own unfiltered CPU transcode (target P6).
void PipelineBench::compare_with_ffmpeg(size_t clip_first, std::map<std::string, double>& cpu_fps) {
  for (size_t i = clip_first; i < results_.size(); ++i) {
    JobResult& r = results_[i];
    if (r.tool != "streamblur") continue;
    double same = 0, cpu = 0;
    for (size_t k = clip_first; k < results_.size(); ++k) {
      const JobResult& f = results_[k];
      if (f.tool != "ffmpeg" || f.fps <= 0 || !f.note.empty()) continue;
      if (f.job == r.job && f.decoder == r.decoder) same = f.fps;
      if (f.job == r.job && f.decoder == "cpu") cpu = f.fps;
    }
    const double ref = same > 0 ? same : cpu;
    if (ref > 0) r.vs_ffmpeg = r.fps / ref;
    if (r.job == "gblur-transcode" && cpu_fps.count("transcode")) r.vs_ffmpeg_transcode = r.fps / cpu_fps["transcode"];
  }
}

void PipelineBench::run_clip(const ClipSpec& clip) {
  const size_t clip_first = results_.size();
  clip_frames_ = 0;
  const References refs = run_cpu_rows(clip);
  if (nvdec_) run_nvdec_rows(clip, refs);
  if (ffmpeg_.empty()) return;
  std::map<std::string, double> cpu_fps;
  for (const FfmpegJob& j : ffmpeg_jobs(clip)) run_ffmpeg_job(clip, j, cpu_fps);
  compare_with_ffmpeg(clip_first, cpu_fps);
}

std::vector<JobResult> PipelineBench::finish() {
  std::error_code ec;
  fs::remove(out_path_, ec);
  fs::remove(plain_path_, ec);
  fs::remove(log_path_, ec);
  return std::move(results_);
}

}  // namespace

std::vector<JobResult> run_pipeline_bench(const PipelineBenchOptions& opt, std::vector<std::string>* notes) {
  const std::vector<ClipSpec> clips = prepare_clips(opt);
  PipelineBench bench(opt, notes);
  for (const ClipSpec& clip : clips) bench.run_clip(clip);
  return bench.finish();
}

}  // namespace streamblur::bench
