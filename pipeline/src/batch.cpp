// run_batch: many files through run_pipeline at once. Plain std::threads each
// run one pipeline at a time (run_pipeline builds its own TBB flow graph and
// waits on it; the graphs share TBB's workers), pulling jobs from a shared
// counter. A monitor thread reports aggregate progress and relays the caller's
// stop flag to the running pipelines.
#include "streamblur/pipeline/batch.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <functional>
#include <iostream>
#include <map>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>

#include "streamblur/config.hpp"
#include "streamblur/io/reader.hpp"
#include "streamblur/io/output_file.hpp"

namespace streamblur {
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return "";
  const auto e = s.find_last_not_of(" \t");
  return s.substr(b, e - b + 1);
}

// Error messages are one line; a multi-line what() is joined.
std::string one_line(std::string s) {
  for (char& c : s)
    if (c == '\n' || c == '\r') c = ' ';
  while (!s.empty() && s.back() == ' ') s.pop_back();
  return s.empty() ? "unknown error" : s;
}

std::string join_ints(const std::vector<int>& v) {
  std::string s;
  for (int x : v) s += (s.empty() ? "" : ",") + std::to_string(x);
  return s;
}

double seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

// What the monitor needs to know about one file.
struct FileState {
  enum class Phase { Waiting, Running, Done } phase = Phase::Waiting;
  int64_t frames = 0;          // latest Progress.frames (final count when done)
  int64_t estimate = 0;        // Progress.total_estimate; 0 when unknown
};

}  // namespace

std::vector<int> parse_device_list(const std::string& text) {
  const std::string all = trim(text);
  if (all == "all") return {};
  if (all.empty()) throw std::invalid_argument("device list is empty (give 'all' or numbers like 0,1)");
  std::vector<int> devices;
  std::size_t start = 0;
  for (;;) {
    const std::size_t comma = all.find(',', start);
    const std::string item = trim(all.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (item.empty()) throw std::invalid_argument("device list '" + text + "' has an empty entry");
    // Digits only: "-1", "+1", "1.5" and "0x1" are all refused.
    if (item.find_first_not_of("0123456789") != std::string::npos || item.size() > 6)
      throw std::invalid_argument("device list '" + text + "': '" + item + "' is not a device number");
    const int d = std::stoi(item);
    if (std::find(devices.begin(), devices.end(), d) != devices.end())
      throw std::invalid_argument("device list '" + text + "' names device " + item + " twice");
    devices.push_back(d);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return devices;
}

namespace {

// Everything that can be known before a file is touched.
void check_jobs(const BatchOptions& options) {
  const std::vector<BatchJob>& jobs = options.jobs;
  if (jobs.empty()) throw std::invalid_argument("batch: no input files");
  io::check_span(io::ReadSpan{.start_seconds = options.base.start_seconds,
                              .duration_seconds = options.base.duration_seconds,
                              .max_frames = options.base.max_frames});
  if (options.jobs_per_device < 1)
    throw std::invalid_argument("batch: jobs per device must be at least 1 (got " +
                                std::to_string(options.jobs_per_device) + ")");
  std::map<std::string, std::string> outputs;  // path_identity -> output as given
  std::map<std::string, std::string> inputs;
  for (const BatchJob& j : jobs) {
    if (j.input.empty()) throw std::invalid_argument("batch: a job has no input");
    if (j.output.empty()) throw std::invalid_argument("batch: input '" + j.input + "' has no output");
    if (std::string id = io::path_identity(j.input, true); !id.empty()) inputs.emplace(id, j.input);
  }
  for (const BatchJob& j : jobs) {
    const std::string id = io::path_identity(j.output);
    if (auto [it, fresh] = outputs.emplace(id, j.output); !fresh && !id.empty())
      throw std::invalid_argument("batch: two inputs would be written to the same output '" + j.output + "'");
    // Writing over any input (its own or another job's) would destroy it while it may still be read.
    if (auto it = inputs.find(id); it != inputs.end())
      throw std::invalid_argument("batch: output '" + j.output + "' is the input '" + it->second +
                                  "'; choose another output folder");
  }
}

// The GPUs the batch runs on; empty for the CPU backend. Auto with an
// explicit device list means "these GPUs", so a missing one is an error even
// where Auto would fall back to the CPU.
std::vector<int> choose_devices(const BatchOptions& options, bool& cpu) {
  const int device_count = cuda_device_count();
  cpu = options.base.backend == BackendChoice::Cpu ||
        (options.base.backend == BackendChoice::Auto && device_count == 0 && options.devices.empty());
  if (cpu) return {};
  std::vector<int> missing;
  std::set<int> seen;
  for (int d : options.devices) {
    if (d < 0 || d >= device_count) missing.push_back(d);
    if (!seen.insert(d).second) throw std::invalid_argument("batch: device " + std::to_string(d) + " is listed twice");
  }
  if (!missing.empty())
    throw std::invalid_argument("batch: CUDA device" + std::string(missing.size() > 1 ? "s " : " ") +
                                join_ints(missing) + (missing.size() > 1 ? " do" : " does") + " not exist (" +
                                std::to_string(device_count) + " device" + (device_count == 1 ? "" : "s") + " here)");
  if (device_count == 0)
    throw std::invalid_argument(std::string("batch: ") +
                                (STREAMBLUR_HAVE_CUDA ? "backend cuda: no CUDA device is available" : kNoCudaBackend));
  std::vector<int> devices = options.devices;
  if (devices.empty())
    for (int d = 0; d < device_count; ++d) devices.push_back(d);
  return devices;
}

// One batch: worker threads pulling jobs, and the monitor.
class BatchRun {
 public:
  explicit BatchRun(const BatchOptions& options);
  std::vector<BatchResult> run();

 private:
  BatchProgress snapshot(bool final);
  void run_file(std::size_t i, int device);
  void work(std::size_t worker_index);
  void monitor();
  bool caller_stop() const { return options_.stop && options_.stop->load(); }

  const BatchOptions& options_;
  const std::vector<BatchJob>& jobs_;
  const std::size_t n_;
  bool cpu_ = false;
  std::vector<int> devices_;
  std::vector<BatchResult> results_;
  std::function<void(const BatchJob&, const std::string&)> note_;
  // `mutex_` guards `files_`, the note callback and the end flag.
  std::mutex mutex_;
  std::condition_variable cv_;
  std::vector<FileState> files_;
  bool workers_done_ = false;
  std::atomic<std::size_t> next_job_{0};
  // The pipelines' stop flag: set from the caller's flag (relayed by the
  // monitor) or when the progress callback throws.
  std::atomic<bool> stop_all_{false};
  std::exception_ptr progress_error_;
  const Clock::time_point t_start_ = Clock::now();
};

BatchRun::BatchRun(const BatchOptions& options)
    : options_(options), jobs_(options.jobs), n_(options.jobs.size()), results_(n_), files_(n_) {
  devices_ = choose_devices(options, cpu_);
  for (std::size_t i = 0; i < n_; ++i) results_[i].job = jobs_[i];
  note_ = options.note;
  if (!note_) {
    note_ = [&options](const BatchJob& job, const std::string& text) {
      if (options.base.note)
        options.base.note(job.input + ": " + text);
      else
        std::cerr << job.input << ": " << text << "\n";
    };
  }
}

BatchProgress BatchRun::snapshot(bool final) {
  BatchProgress p;
  p.files_total = static_cast<int>(n_);
  p.elapsed_s = seconds(Clock::now() - t_start_);
  p.final = final;
  int64_t remaining_known = 0;  // frames left in running files
  int64_t started_size = 0;     // sizes of started files (done: real count; running: estimate)
  int started = 0;
  bool sizes_known = true;
  {
    std::lock_guard lock(mutex_);
    for (std::size_t i = 0; i < n_; ++i) {
      const FileState& f = files_[i];
      p.frames += f.frames;
      if (f.phase == FileState::Phase::Done) {
        ++p.files_done;
        if (!results_[i].ok) ++p.files_failed;
        ++started;
        started_size += f.frames;
      } else if (f.phase == FileState::Phase::Running) {
        ++p.running;
        ++started;
        if (f.estimate > 0) {
          remaining_known += std::max<int64_t>(0, f.estimate - f.frames);
          started_size += std::max(f.estimate, f.frames);
        } else {
          sizes_known = false;
        }
      }
    }
  }
  p.fps = p.elapsed_s > 0 ? p.frames / p.elapsed_s : 0;
  const int waiting = p.files_total - started;
  if (final || stop_all_.load()) {
    p.eta_s = final ? 0 : -1;
  } else if (sizes_known && started > 0 && p.fps > 0) {
    // Frames left: the running files' estimates plus, for files not started
    // yet (not opened, so their length is unknown), the mean size of the
    // started ones.
    const double mean_size = static_cast<double>(started_size) / started;
    p.eta_s = (remaining_known + waiting * mean_size) / p.fps;
  } else if (p.files_done > 0) {
    // Files left times the mean time per file so far (with the parallelism).
    p.eta_s = p.elapsed_s / p.files_done * (p.files_total - p.files_done);
  }
  return p;
}

void BatchRun::run_file(std::size_t i, int device) {
  BatchResult& r = results_[i];
  r.device = device;
  {
    std::lock_guard lock(mutex_);
    files_[i].phase = FileState::Phase::Running;
  }
  PipelineOptions opt = options_.base;
  opt.input = jobs_[i].input;
  opt.output = jobs_[i].output;
  if (device >= 0) opt.device = device;
  // No encoder named: each output gets its own default (png for a .png, libx264 for a video).
  if (opt.encoder.codec.empty()) opt.encoder.codec = default_encoder_for(opt.output, opt.encoder.format_name);
  opt.frame_sink = nullptr;
  opt.stop = &stop_all_;
  opt.progress = [this, i](const Progress& p) {
    std::lock_guard lock(mutex_);
    files_[i].frames = p.frames;
    files_[i].estimate = p.total_estimate;
  };
  opt.note = [this, i](const std::string& text) {
    std::lock_guard lock(mutex_);  // one note at a time, whichever pipeline sends it
    note_(jobs_[i], text);
  };
  const auto t0 = Clock::now();
  try {
    r.stats = run_pipeline(opt);
    r.ok = true;
  } catch (const io::OutputExistsError& e) {
    r.error = one_line(e.what());
    r.output_exists = true;
  } catch (const std::exception& e) {
    r.error = one_line(e.what());
  } catch (...) {
    r.error = "unknown error";
  }
  if (!r.ok) r.stats.wall_s = seconds(Clock::now() - t0);  // time until it failed
  std::lock_guard lock(mutex_);
  files_[i].phase = FileState::Phase::Done;
  files_[i].frames = r.ok ? r.stats.frames : 0;  // a failed file's frames were not written
}

void BatchRun::work(std::size_t worker_index) {
  const int device = cpu_ ? -1 : devices_[worker_index % devices_.size()];
  for (;;) {
    if (stop_all_.load() || caller_stop()) return;
    const std::size_t i = next_job_.fetch_add(1);
    if (i >= n_) return;
    run_file(i, device);
  }
}

// Relays the caller's stop flag quickly (every 50 ms) and reports progress
// every 250 ms, always from this one thread.
void BatchRun::monitor() {
  auto last_report = Clock::now();
  std::unique_lock lock(mutex_);
  while (!workers_done_) {
    cv_.wait_for(lock, std::chrono::milliseconds(50));
    if (caller_stop()) stop_all_.store(true);
    if (workers_done_ || !options_.progress || progress_error_) continue;
    if (Clock::now() - last_report < std::chrono::milliseconds(250)) continue;
    last_report = Clock::now();
    lock.unlock();
    try {
      options_.progress(snapshot(false));
    } catch (...) {
      progress_error_ = std::current_exception();  // only this thread writes it
      stop_all_.store(true);
    }
    lock.lock();
  }
}

std::vector<BatchResult> BatchRun::run() {
  const std::size_t per_device = static_cast<std::size_t>(options_.jobs_per_device);
  const std::size_t workers = std::min(n_, cpu_ ? per_device : per_device * devices_.size());
  std::thread monitor_thread([this] { monitor(); });
  std::vector<std::thread> pool;
  pool.reserve(workers);
  for (std::size_t w = 0; w < workers; ++w) pool.emplace_back([this, w] { work(w); });
  for (std::thread& t : pool) t.join();
  {
    std::lock_guard lock(mutex_);
    workers_done_ = true;
  }
  cv_.notify_all();
  monitor_thread.join();
  for (std::size_t i = 0; i < n_; ++i) {
    if (files_[i].phase == FileState::Phase::Waiting) {
      results_[i].skipped = true;
      results_[i].error = "not started: the batch was stopped";
    }
  }
  if (progress_error_) std::rethrow_exception(progress_error_);
  if (options_.progress) options_.progress(snapshot(true));
  return std::move(results_);
}

}  // namespace

namespace {
// A regular file (or a link to one) at the output path: what skip_existing keeps.
bool output_exists(const std::string& path) {
  std::error_code ec;
  return fs::is_regular_file(path, ec);
}
}  // namespace

std::vector<BatchResult> run_batch(const BatchOptions& options) {
  check_jobs(options);
  if (!options.skip_existing) return BatchRun(options).run();
  std::vector<BatchResult> results(options.jobs.size());
  BatchOptions rest = options;
  rest.jobs.clear();
  std::vector<std::size_t> ran;  // rest.jobs[k] is options.jobs[ran[k]]
  for (std::size_t i = 0; i < options.jobs.size(); ++i) {
    results[i].job = options.jobs[i];
    if (output_exists(options.jobs[i].output)) {
      results[i].skipped = results[i].kept_existing = true;
    } else {
      rest.jobs.push_back(options.jobs[i]);
      ran.push_back(i);
    }
  }
  if (rest.jobs.empty()) {
    if (options.progress) options.progress(BatchProgress{.eta_s = 0, .final = true});
    return results;
  }
  std::vector<BatchResult> done = BatchRun(rest).run();
  for (std::size_t k = 0; k < done.size(); ++k) results[ran[k]] = std::move(done[k]);
  return results;
}

}  // namespace streamblur
