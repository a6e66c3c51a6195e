#include "bench_scale.hpp"

#include "streamblur/config.hpp"
#if STREAMBLUR_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <latch>
#include <map>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>

#include "bench_pipeline.hpp"
#include "bench_table.hpp"
#include "streamblur/io/reader.hpp"

namespace streamblur::bench {
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

std::string join_ints(const std::vector<int>& v) {
  std::string s;
  for (int x : v) {
    if (!s.empty()) s += ',';
    s += std::to_string(x);
  }
  return s.empty() ? "-" : s;
}

// Samples the used memory (total - free, cudaMemGetInfo) of some devices while
// a group runs, from its own thread; the growth over the baseline taken at
// construction is the group's footprint, whatever allocated it (the pipelines'
// slots, filter scratch, NVDEC surfaces, the decoder's own state).
class DeviceMemorySampler {
 public:
  explicit DeviceMemorySampler(std::vector<int> devices) : devices_(std::move(devices)) {
    if (devices_.empty()) return;
    baseline_ = used();
    peak_ = baseline_;
    thread_ = std::thread([this] {
      while (!stop_.load()) {
        update();
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
    });
  }
  ~DeviceMemorySampler() { finish(); }
  DeviceMemorySampler(const DeviceMemorySampler&) = delete;
  DeviceMemorySampler& operator=(const DeviceMemorySampler&) = delete;

  // Stops sampling; the summed peak growth over all devices, in bytes.
  double finish() {
    if (thread_.joinable()) {
      stop_ = true;
      thread_.join();
    }
    double growth = 0;
    for (size_t i = 0; i < peak_.size(); ++i) growth += peak_[i] > baseline_[i] ? double(peak_[i] - baseline_[i]) : 0.0;
    return growth;
  }

 private:
  std::vector<size_t> used() const {
    std::vector<size_t> u(devices_.size(), 0);
    for (size_t i = 0; i < devices_.size(); ++i) {
#if STREAMBLUR_HAVE_CUDA
      size_t free = 0, total = 0;
      if (cudaSetDevice(devices_[i]) == cudaSuccess && cudaMemGetInfo(&free, &total) == cudaSuccess) u[i] = total - free;
#endif
    }
    return u;
  }
  void update() {
    const auto u = used();
    for (size_t i = 0; i < u.size(); ++i) peak_[i] = std::max(peak_[i], u[i]);
  }

  std::vector<int> devices_;
  std::vector<size_t> baseline_, peak_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

struct Setup {
  const ScaleBenchOptions* opt = nullptr;
  std::string clip;
  Backend backend = Backend::Cpu;

  void say(const std::string& line) const {
    if (opt->progress) opt->progress(line);
  }
};

PipelineOptions stream_options(const Setup& s, const std::string& job, bool nvdec, int device, const std::string& output) {
  PipelineOptions p;
  p.input = s.clip;
  p.output = job == "chain-transcode" ? output : "";
  p.filters = s.opt->chain;
  p.backend = s.backend == Backend::Cuda ? BackendChoice::Cuda : BackendChoice::Cpu;
  p.hwdec = nvdec ? HwDecode::Nvdec : HwDecode::None;
  p.device = device;
  p.decoder_threads = s.opt->decoder_threads;
  p.encoder.codec = s.opt->codec;
  p.encoder.preset = s.opt->preset;
  p.overwrite = true;
  return p;
}

// The n pipelines of a group, stream i on the (i % devices)-th device; sets
// the row's devices (CUDA backend) and lists the files the transcodes write.
std::vector<PipelineOptions> plan_group(const Setup& s, const std::string& job, const std::string& decode, int n,
                                        const std::vector<int>& devices, ScaleRow& row, std::vector<std::string>& outputs) {
  std::vector<PipelineOptions> plans;
  std::set<int> used_devices;
  for (int i = 0; i < n; ++i) {
    const int device = devices.empty() ? 0 : devices[i % devices.size()];
    // mixed: the first half NVDEC, so that both halves spread over the devices alike
    const bool nvdec = decode == "nvdec" || (decode == "mixed" && i < (n + 1) / 2);
    const std::string out = (fs::path(s.opt->work_dir) / ("scale-out-" + std::to_string(i) + ".mp4")).string();
    plans.push_back(stream_options(s, job, nvdec, device, out));
    if (!plans.back().output.empty()) outputs.push_back(out);
    if (s.backend == Backend::Cuda) used_devices.insert(device);
  }
  row.devices.assign(used_devices.begin(), used_devices.end());
  return plans;
}

// What the streams of a group left: stats or an error each, the notes of all.
struct GroupRun {
  std::vector<RunStats> stats;
  std::vector<std::string> errors;
  std::mutex notes_mutex;
  std::set<std::string> notes;
  double memory_growth = 0;  // bytes, all devices together
};

// Each plan on its own thread, released together; the row's wall time runs
// from their release to the last one's end.
void run_together(std::vector<PipelineOptions>& plans, ScaleRow& row, GroupRun& run) {
  const int n = static_cast<int>(plans.size());
  run.stats.resize(n);
  run.errors.resize(n);
  for (auto& p : plans)
    p.note = [&run](const std::string& text) {
      std::lock_guard<std::mutex> lock(run.notes_mutex);
      run.notes.insert(text);
    };
  DeviceMemorySampler sampler(row.devices);
  std::latch ready(n + 1);
  std::vector<std::thread> threads;
  threads.reserve(n);
  for (int i = 0; i < n; ++i)
    threads.emplace_back([&, i] {
      ready.arrive_and_wait();
      try {
        run.stats[i] = run_pipeline(plans[i]);
      } catch (const std::exception& e) {
        run.errors[i] = e.what();
      }
    });
  ready.arrive_and_wait();
  const auto t0 = Clock::now();
  for (auto& t : threads) t.join();
  row.wall_s = seconds_since(t0);
  run.memory_growth = sampler.finish();
}

// The row's figures from its streams, and its note: failed streams, and
// NVDEC streams that decoded on the CPU.
void summarize_group(const std::vector<PipelineOptions>& plans, const GroupRun& run, ScaleRow& row) {
  const int n = row.streams;
  int failed = 0;
  std::string first_error;
  double memory = 0;
  int nvdec_asked = 0;
  for (int i = 0; i < n; ++i) {
    if (plans[i].hwdec == HwDecode::Nvdec) ++nvdec_asked;
    if (!run.errors[i].empty()) {
      if (failed++ == 0) first_error = "stream " + std::to_string(i) + ": " + run.errors[i];
      continue;
    }
    row.frames += run.stats[i].frames;
    memory += double(run.stats[i].gpu_memory_bytes);
    if (run.stats[i].decoder == "nvdec") ++row.nvdec_streams;
  }
  row.fps = row.wall_s > 0 ? row.frames / row.wall_s : 0;
  row.per_stream_fps = row.fps / n;
  row.gpu_memory_per_stream = memory / n;
  row.gpu_memory_growth_per_stream = run.memory_growth / n;
  std::vector<std::string> why;
  if (failed) {
    row.failed = true;
    why.push_back(std::to_string(failed) + " of " + std::to_string(n) + " streams failed (" + first_error + ")");
  }
  if (row.nvdec_streams < nvdec_asked - failed)
    why.push_back(std::to_string(nvdec_asked - failed - row.nvdec_streams) + " of " + std::to_string(nvdec_asked) +
                  " NVDEC streams decoded on the CPU");
  for (const auto& w : why) row.note += (row.note.empty() ? "" : "; ") + w;
}

void report_group(const ScaleBenchOptions& opt, const ScaleRow& row, const std::set<std::string>& notes) {
  if (!opt.progress) return;
  char line[200];
  std::snprintf(line, sizeof line, "  %.1f frames/s aggregate (%.1f per stream), %.2f s%s%s", row.fps,
                row.per_stream_fps, row.wall_s, row.note.empty() ? "" : ": ", row.note.c_str());
  opt.progress(line);
  for (const auto& t : notes)
    if (t.rfind("backend:", 0) != 0) opt.progress("  note: " + t);  // the backend line is in the header
}

// N pipelines, each on its own thread, released together (run_together).
ScaleRow run_group(const Setup& s, const std::string& job, const std::string& decode, int n,
                   const std::vector<int>& devices) {
  ScaleRow row;
  row.job = job;
  row.decode = decode;
  row.streams = n;
  std::vector<std::string> outputs;
  std::vector<PipelineOptions> plans = plan_group(s, job, decode, n, devices, row, outputs);
  GroupRun run;
  run_together(plans, row, run);
  std::error_code ec;
  for (const auto& o : outputs) fs::remove(o, ec);
  summarize_group(plans, run, row);
  report_group(*s.opt, row, run.notes);
  return row;
}

// An ffmpeg group's figures: timed by the longest rtime of the processes that
// ran (else the group's wall time); failures and CPU fallbacks in the note.
void summarize_ffmpeg_group(const std::vector<double>& rtime, const std::vector<std::string>& errors,
                            const std::vector<std::string>& logs, int64_t frames_per_stream, double wall, ScaleRow& row) {
  const int n = row.streams;
  int failed = 0, fell_back = 0;
  std::string first_error;
  double longest = 0;
  for (int i = 0; i < n; ++i) {
    if (!errors[i].empty()) {
      if (failed++ == 0) first_error = errors[i];
      continue;
    }
    longest = std::max(longest, rtime[i]);
    row.frames += frames_per_stream;
    if (ffmpeg_hwaccel_fell_back(logs[i]))
      ++fell_back;
    else
      ++row.nvdec_streams;
  }
  row.wall_s = longest > 0 ? longest : wall;
  row.fps = row.wall_s > 0 ? row.frames / row.wall_s : 0;
  row.per_stream_fps = row.fps / n;
  if (failed) {
    row.failed = true;
    row.note = std::to_string(failed) + " of " + std::to_string(n) + " processes failed (" + first_error + ")";
  }
  if (fell_back)
    row.note += (row.note.empty() ? "" : "; ") + std::to_string(fell_back) + " of " + std::to_string(n) +
                " decoded on the CPU (-hwaccel cuda not set up)";
}

// N ffmpeg processes at once, decode only with -hwaccel cuda; the frames are
// downloaded to host memory (what plain `-hwaccel cuda` does), or with
// keep_on_gpu stay in device memory (-hwaccel_output_format cuda: NVDEC alone).
// Their own processing times (-benchmark rtime) leave out process start-up, as
// our rows leave it out; the group's time is the longest of them.
ScaleRow run_ffmpeg_group(const Setup& s, const std::string& ffmpeg, int n, const std::vector<int>& devices,
                          int64_t frames_per_stream, bool keep_on_gpu) {
  const ScaleBenchOptions& opt = *s.opt;
  ScaleRow row;
  row.job = keep_on_gpu ? "decode-null-gpu" : "decode-null";
  row.decode = "nvdec";
  row.tool = "ffmpeg";
  row.streams = n;
  std::set<int> used_devices;
  std::vector<double> rtime(n, 0);
  std::vector<std::string> errors(n), logs(n);
  std::latch ready(n + 1);
  std::vector<std::thread> threads;
  for (int i = 0; i < n; ++i) {
    const int device = devices.empty() ? 0 : devices[i % devices.size()];
    used_devices.insert(device);
    const std::string args = "-hwaccel cuda -hwaccel_device " + std::to_string(device) +
                             (keep_on_gpu ? " -hwaccel_output_format cuda" : "") + " -i '" + s.clip + "' -an -f null -";
    const std::string log = (fs::path(opt.work_dir) / ("scale-ffmpeg-" + std::to_string(i) + ".log")).string();
    threads.emplace_back([&, i, args, log] {
      ready.arrive_and_wait();
      try {
        rtime[i] = run_ffmpeg(ffmpeg, args, log, &logs[i]);
      } catch (const std::exception& e) {
        errors[i] = e.what();
      }
      std::error_code ec;
      fs::remove(log, ec);
    });
  }
  row.devices.assign(used_devices.begin(), used_devices.end());
  DeviceMemorySampler sampler(row.devices);
  ready.arrive_and_wait();
  const auto t0 = Clock::now();
  for (auto& t : threads) t.join();
  const double wall = seconds_since(t0);
  row.gpu_memory_growth_per_stream = sampler.finish() / n;
  summarize_ffmpeg_group(rtime, errors, logs, frames_per_stream, wall, row);
  if (opt.progress) {
    char line[200];
    std::snprintf(line, sizeof line, "  %.1f frames/s aggregate (%.1f per process), longest rtime %.2f s, wall %.2f s",
                  row.fps, row.per_stream_fps, row.wall_s, wall);
    opt.progress(line + (row.note.empty() ? std::string() : ": " + row.note));
  }
  return row;
}

// The group sizes to run: the asked ones and 1 (the reference of every row),
// sorted, each once. Throws on an unknown job or decode mode first.
std::vector<int> checked_stream_counts(const ScaleBenchOptions& opt) {
  for (const auto& j : opt.jobs)
    if (j != "chain-null" && j != "chain-transcode")
      throw std::invalid_argument("unknown scale job '" + j + "' (chain-null, chain-transcode)");
  for (const auto& d : opt.decoders)
    if (d != "cpu" && d != "nvdec" && d != "mixed")
      throw std::invalid_argument("unknown decode mode '" + d + "' (cpu, nvdec, mixed)");
  std::vector<int> streams = opt.streams;
  for (int n : streams)
    if (n < 1 || n > 256) throw std::invalid_argument("stream counts must be 1..256, got " + std::to_string(n));
  streams.push_back(1);  // the reference of every row
  std::sort(streams.begin(), streams.end());
  streams.erase(std::unique(streams.begin(), streams.end()), streams.end());
  return streams;
}

// CUDA backend: the devices asked for (every device when none), each checked.
void choose_devices(const ScaleBenchOptions& opt, Backend backend, ScaleReport& report) {
  if (backend != Backend::Cuda) return;
  const int count = cuda_device_count();
  report.devices = opt.devices;
  if (report.devices.empty())
    for (int d = 0; d < count; ++d) report.devices.push_back(d);
  for (int d : report.devices)
    if (d < 0 || d >= count)
      throw std::invalid_argument("device " + std::to_string(d) + " does not exist (" + std::to_string(count) +
                                  " CUDA device" + (count == 1 ? "" : "s") + ")");
}

// The user's clip, else the sample clip of opt.size and opt.frames (made once, kept).
std::string scale_clip(const ScaleBenchOptions& opt) {
  if (!opt.clip.empty()) return opt.clip;
  PipelineBenchOptions clip_opt;
  clip_opt.work_dir = opt.work_dir;
  clip_opt.sample_frames = opt.frames;
  clip_opt.sample_sizes = {opt.size};
  clip_opt.progress = opt.progress;
  return prepare_clips(clip_opt).front().path;
}

// One warm-up run on `device`, cut short after its first progress report; with
// nvdec also the probe: a failure or a CPU decode marks NVDEC unavailable.
void warm_up_device(const Setup& s, int device, bool nvdec, ScaleReport& report) {
  s.say(std::string("warm-up") + (s.backend == Backend::Cuda ? " on device " + std::to_string(device) : "") +
        (nvdec ? " (NVDEC)" : "") + " ...");
  std::atomic<bool> stop{false};
  PipelineOptions p = stream_options(s, "chain-null", nvdec, device, "");
  p.stop = &stop;
  p.progress = [&stop](const Progress&) { stop = true; };
  std::string notes;
  p.note = [&notes](const std::string& n) { notes += (notes.empty() ? "" : "; ") + n; };
  try {
    const RunStats st = run_pipeline(p);
    if (nvdec && st.decoder != "nvdec") {
      report.nvdec_available = false;
      report.nvdec_reason = "device " + std::to_string(device) + " decoded on the CPU" + (notes.empty() ? "" : ": " + notes);
    }
  } catch (const std::exception& e) {
    if (!nvdec) throw;
    report.nvdec_available = false;
    report.nvdec_reason = std::string("device ") + std::to_string(device) + ": " + e.what();
  }
}

// Warm-up on every device (CUDA context, kernel modules, the NVDEC library,
// the clip in the page cache); the NVDEC one is also the probe.
void warm_up(const Setup& s, ScaleReport& report) {
  const ScaleBenchOptions& opt = *s.opt;
  report.nvdec_available = opt.nvdec && s.backend == Backend::Cuda;
  if (!opt.nvdec)
    report.nvdec_reason = "--no-nvdec";
  else if (s.backend != Backend::Cuda)
    report.nvdec_reason = cuda_device_count() > 0 ? "CPU backend chosen" : "no CUDA device";
  const std::vector<int> warm_devices = s.backend == Backend::Cuda ? report.devices : std::vector<int>{0};
  for (int device : warm_devices)
    for (bool nvdec : {false, true}) {
      if (nvdec && !report.nvdec_available) continue;
      warm_up_device(s, device, nvdec, report);
    }
  if (!report.nvdec_reason.empty()) s.say("NVDEC rows skipped: " + report.nvdec_reason);
}

// A row per job, decode mode and stream count (a skipped row per job and
// decode mode that needs NVDEC where it is unavailable).
void run_streamblur_rows(const Setup& s, const std::vector<int>& streams, ScaleReport& report) {
  for (const auto& job : s.opt->jobs)
    for (const auto& decode : s.opt->decoders) {
      if (decode != "cpu" && !report.nvdec_available) {
        ScaleRow row;
        row.job = job;
        row.decode = decode;
        row.skipped = true;
        row.note = "skipped: NVDEC unavailable (" + report.nvdec_reason + ")";
        report.rows.push_back(row);
        continue;
      }
      for (int n : streams) {
        if (decode == "mixed" && n < 2) continue;  // half and half needs two
        s.say(job + ", " + decode + " decode, " + std::to_string(n) + " stream" + (n == 1 ? "" : "s") + " ...");
        report.rows.push_back(run_group(s, job, decode, n, report.devices));
        if (report.rows.back().failed) report.any_failed = true;
      }
    }
  for (const auto& r : report.rows)
    if (!r.skipped && !r.failed && r.frames > 0 && r.streams > 0) {
      report.frames_per_stream = r.frames / r.streams;
      break;
    }
}

// ffmpeg -hwaccel cuda decode-only groups of each stream count, frames
// downloaded and kept on the GPU; a skipped row without the CUDA backend.
void run_ffmpeg_rows(const Setup& s, const std::vector<int>& streams, ScaleReport& report) {
  const ScaleBenchOptions& opt = *s.opt;
  const std::string ffmpeg = !opt.ffmpeg ? "" : !opt.ffmpeg_program.empty() ? opt.ffmpeg_program : find_ffmpeg();
  report.ffmpeg = ffmpeg;
  if (ffmpeg.empty()) return;
  if (s.backend != Backend::Cuda) {
    ScaleRow row;
    row.job = "decode-null";
    row.decode = "nvdec";
    row.tool = "ffmpeg";
    row.skipped = true;
    row.note = "skipped: no CUDA device for -hwaccel cuda";
    report.rows.push_back(row);
    return;
  }
  for (bool keep_on_gpu : {false, true})
    for (int n : streams) {
      s.say(std::string("ffmpeg -hwaccel cuda") + (keep_on_gpu ? " -hwaccel_output_format cuda" : "") +
            " decode-only, " + std::to_string(n) + " process" + (n == 1 ? "" : "es") + " at once ...");
      // a failing ffmpeg is noted in its row, not an error of ours
      report.rows.push_back(run_ffmpeg_group(s, ffmpeg, n, report.devices, report.frames_per_stream, keep_on_gpu));
    }
}

double one_stream_fps(const ScaleReport& report, const std::string& tool, const std::string& job,
                      const std::string& decode) {
  for (const auto& r : report.rows)
    if (r.tool == tool && r.job == job && r.decode == decode && r.streams == 1 && !r.skipped && !r.failed) return r.fps;
  return 0.0;
}

// A row against 1 stream of the same row; mixed against the mean of the
// 1-stream CPU and NVDEC rows (what one stream of the mix would do).
void set_ratio(const ScaleReport& report, ScaleRow& r) {
  if (r.skipped) return;
  double ref = one_stream_fps(report, r.tool, r.job, r.decode);
  if (r.decode == "mixed") {
    const double c = one_stream_fps(report, r.tool, r.job, "cpu"), v = one_stream_fps(report, r.tool, r.job, "nvdec");
    ref = c > 0 && v > 0 ? (c + v) / 2 : std::max(c, v);
  }
  r.reference_fps = ref;
  r.ratio_1stream = ref > 0 ? r.fps / ref : 0;
}

// The same chain-null group on the first device alone and over all of them.
void compare_one_and_all_devices(const Setup& s, ScaleReport& report) {
  const std::string decode = report.nvdec_available ? "nvdec" : "cpu";
  const int n = s.opt->compare_streams;
  s.say("1 GPU against " + std::to_string(report.devices.size()) + ": chain-null, " + decode + " decode, " +
        std::to_string(n) + " streams on device " + std::to_string(report.devices.front()) + " ...");
  report.one_device = run_group(s, "chain-null", decode, n, {report.devices.front()});
  s.say("  ... and on devices " + join_ints(report.devices) + " ...");
  report.all_devices = run_group(s, "chain-null", decode, n, report.devices);
  set_ratio(report, report.one_device);
  set_ratio(report, report.all_devices);
  report.compared = true;
  if (report.one_device.failed || report.all_devices.failed) report.any_failed = true;
  if (report.one_device.fps > 0) report.compare_ratio = report.all_devices.fps / report.one_device.fps;
}

}  // namespace

ScaleReport run_scale_bench(const ScaleBenchOptions& opt) {
  const std::vector<int> streams = checked_stream_counts(opt);
  ScaleReport report;
  Setup s;
  s.opt = &opt;
  std::string why_backend;
  s.backend = resolve_backend(opt.backend, &why_backend);
  report.backend = backend_name(s.backend);
  s.say(why_backend);
  choose_devices(opt, s.backend, report);
  fs::create_directories(opt.work_dir);
  s.clip = scale_clip(opt);
  report.clip = s.clip;
  {
    io::MediaReader reader(s.clip);
    report.frames_per_stream = reader.video().frame_count_estimate;
  }
  warm_up(s, report);
  run_streamblur_rows(s, streams, report);
  run_ffmpeg_rows(s, streams, report);
  for (auto& r : report.rows) set_ratio(report, r);
  if (report.devices.size() > 1 && s.backend == Backend::Cuda) compare_one_and_all_devices(s, report);
  return report;
}

namespace {

ReportTable scale_report_table() {
  return ReportTable({{"job", 16, true},    {"decode", 6, true}, {"tool", 10, true}, {"streams", 7},
                      {"devices", 8},       {"frames", 9},       {"wall_s", 8},      {"agg_fps", 9},
                      {"per_stream", 10},   {"x_1stream", 9},    {"nvdec", 5},       {"MiB/str", 10},
                      {"grow/str", 10},     {"note", 0, true, "  "}});
}

void print_row(const ReportTable& table, const ScaleRow& r) {
  const double mib = 1024.0 * 1024.0;
  if (r.skipped) {
    table.print_row({r.job, r.decode, r.tool, "-", "-", "-", "-", "-", "-", "-", "-", "-", "-", r.note});
    return;
  }
  const std::string ratio = r.ratio_1stream > 0 ? format("%.2f", r.ratio_1stream) : "-";
  const std::string mem =
      r.tool == "streamblur" && !r.devices.empty() ? format("%.0f", r.gpu_memory_per_stream / mib) : "-";
  const std::string growth = !r.devices.empty() ? format("%.0f", r.gpu_memory_growth_per_stream / mib) : "-";
  table.print_row({r.job, r.decode, r.tool, format("%d", r.streams), join_ints(r.devices),
                   format("%lld", static_cast<long long>(r.frames)), format("%.2f", r.wall_s), format("%.1f", r.fps),
                   format("%.1f", r.per_stream_fps), ratio, format("%d", r.nvdec_streams), mem, growth, r.note});
}

// The target lines: P7 (4+ streams of chain-null) and the 2-GPU ratio.
void print_scale_targets(const ScaleReport& rep) {
  const ScaleRow* best = nullptr;
  for (const auto& r : rep.rows)
    if (r.tool == "streamblur" && r.job == "chain-null" && r.streams >= 4 && !r.skipped && !r.failed &&
        (!best || r.fps > best->fps))
      best = &r;
  std::printf("\nP7 decode -> chain -> null sink, 4+ concurrent streams (target >= 2000 fps aggregate at 1080p): ");
  if (best)
    std::printf("best %.1f fps (%s decode, %d streams, devices %s): %s\n", best->fps, best->decode.c_str(), best->streams,
                join_ints(best->devices).c_str(), best->fps >= 2000 ? "met" : "not met");
  else
    std::printf("not measured (no chain-null row with 4 or more streams)\n");
  if (rep.compared)
    std::printf("2 GPUs: %d-stream chain-null (%s decode): %.1f fps on device %d, %.1f fps on devices %s: ratio %.2f "
                "(target >= 1.8): %s\n",
                rep.one_device.streams, rep.one_device.decode.c_str(), rep.one_device.fps,
                rep.one_device.devices.empty() ? 0 : rep.one_device.devices.front(), rep.all_devices.fps,
                join_ints(rep.all_devices.devices).c_str(), rep.compare_ratio, rep.compare_ratio >= 1.8 ? "met" : "not met");
  else
    std::printf("2 GPUs: not compared (%s)\n", rep.backend != "cuda" ? "CPU backend" : "one device chosen");
  std::fflush(stdout);
}

}  // namespace

void print_scale_report(const ScaleReport& rep) {
  std::printf("\nScale benchmark: N pipelines at once (each its own run_pipeline on its own thread, released together); "
              "agg_fps = all streams' frames / wall time of the group; x_1stream = agg_fps / 1 stream of the same row "
              "(mixed: mean of 1 cpu and 1 nvdec stream); nvdec = streams that decoded with NVDEC; MiB/str = "
              "RunStats::gpu_memory_bytes per stream; grow/str = peak growth of used device memory (cudaMemGetInfo) "
              "per stream; ffmpeg rows: N processes of `ffmpeg -hwaccel cuda -i clip -an -f null -`, timed by the longest "
              "-benchmark rtime (decode-null: frames downloaded to the host; decode-null-gpu: "
              "-hwaccel_output_format cuda, frames stay on the GPU)\n");
  std::printf("clip %s, %lld frames per stream, backend %s, devices %s, NVDEC %s\n", rep.clip.c_str(),
              static_cast<long long>(rep.frames_per_stream), rep.backend.c_str(), join_ints(rep.devices).c_str(),
              rep.nvdec_available ? "yes" : ("unavailable (" + rep.nvdec_reason + ")").c_str());
  const ReportTable table = scale_report_table();
  table.print_header();
  for (const auto& r : rep.rows) print_row(table, r);
  if (rep.compared) {
    std::printf("1 GPU against all:\n");
    print_row(table, rep.one_device);
    print_row(table, rep.all_devices);
  }
  print_scale_targets(rep);
}

nlohmann::json scale_json(const ScaleReport& rep) {
  auto row = [](const ScaleRow& r) {
    return nlohmann::json{{"job", r.job},
                          {"decode", r.decode},
                          {"tool", r.tool},
                          {"streams", r.streams},
                          {"devices", r.devices},
                          {"nvdec_streams", r.nvdec_streams},
                          {"frames", r.frames},
                          {"wall_s", r.wall_s},
                          {"fps", r.fps},
                          {"per_stream_fps", r.per_stream_fps},
                          {"ratio_1stream", r.ratio_1stream},
                          {"reference_fps", r.reference_fps},
                          {"gpu_memory_per_stream_bytes", r.gpu_memory_per_stream},
                          {"gpu_memory_growth_per_stream_bytes", r.gpu_memory_growth_per_stream},
                          {"skipped", r.skipped},
                          {"failed", r.failed},
                          {"note", r.note}};
  };
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& r : rep.rows) rows.push_back(row(r));
  nlohmann::json j = {{"clip", rep.clip},
                      {"frames_per_stream", rep.frames_per_stream},
                      {"backend", rep.backend},
                      {"devices", rep.devices},
                      {"nvdec_available", rep.nvdec_available},
                      {"nvdec_reason", rep.nvdec_reason},
                      {"ffmpeg", rep.ffmpeg},
                      {"rows", rows}};
  double best = 0;
  for (const auto& r : rep.rows)
    if (r.tool == "streamblur" && r.job == "chain-null" && r.streams >= 4 && !r.skipped && !r.failed)
      best = std::max(best, r.fps);
  j["targets"] = {{"p7_best_chain_null_fps_4plus_streams", best}, {"p7_target_fps", 2000}};
  if (rep.compared) {
    j["compare"] = {{"one_device", row(rep.one_device)}, {"all_devices", row(rep.all_devices)},
                    {"ratio", rep.compare_ratio}, {"target_ratio", 1.8}};
  }
  return j;
}

}  // namespace streamblur::bench
