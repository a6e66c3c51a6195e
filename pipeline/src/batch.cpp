// run_batch: many files through run_pipeline at once. Plain std::threads each
// run one pipeline at a time (run_pipeline builds its own TBB flow graph and
// waits on it; the graphs share TBB's workers), pulling jobs from a shared
// counter. A monitor thread reports aggregate progress and relays the caller's
// stop flag to the running pipelines.
#include "streamblur/pipeline/batch.hpp"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <iostream>
#include <map>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>

#include "streamblur/io/reader.hpp"
#include "streamblur/kernels/cuda_check.hpp"
#include "streamblur/pipeline/output_file.hpp"

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

std::vector<BatchResult> run_batch(const BatchOptions& options) {
  // ---- Validation: everything that can be known before a file is touched.
  const std::vector<BatchJob>& jobs = options.jobs;
  if (jobs.empty()) throw std::invalid_argument("batch: no input files");
  io::check_span(io::ReadSpan{options.base.start_seconds, options.base.duration_seconds, options.base.max_frames});
  if (options.jobs_per_device < 1)
    throw std::invalid_argument("batch: jobs per device must be at least 1 (got " +
                                std::to_string(options.jobs_per_device) + ")");
  {
    std::map<std::string, std::string> outputs;  // path_identity -> output as given
    std::map<std::string, std::string> inputs;
    for (const BatchJob& j : jobs) {
      if (j.input.empty()) throw std::invalid_argument("batch: a job has no input");
      if (j.output.empty()) throw std::invalid_argument("batch: input '" + j.input + "' has no output");
      if (std::string id = path_identity(j.input, true); !id.empty()) inputs.emplace(id, j.input);
    }
    for (const BatchJob& j : jobs) {
      const std::string id = path_identity(j.output);
      if (auto [it, fresh] = outputs.emplace(id, j.output); !fresh && !id.empty())
        throw std::invalid_argument("batch: two inputs would be written to the same output '" + j.output + "'");
      // Writing over any input (its own or another job's) would destroy it while it may still be read.
      if (auto it = inputs.find(id); it != inputs.end())
        throw std::invalid_argument("batch: output '" + j.output + "' is the input '" + it->second +
                                    "'; choose another output folder");
    }
  }

  // Backend and devices. Auto with an explicit device list means "these GPUs",
  // so a missing one is an error even where Auto would fall back to the CPU.
  const int device_count = cuda::device_count();
  const bool cpu = options.base.backend == BackendChoice::Cpu ||
                   (options.base.backend == BackendChoice::Auto && device_count == 0 && options.devices.empty());
  std::vector<int> devices;
  if (!cpu) {
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
    if (device_count == 0) throw std::invalid_argument("batch: backend cuda: no CUDA device is available");
    devices = options.devices;
    if (devices.empty())
      for (int d = 0; d < device_count; ++d) devices.push_back(d);
  }

  const std::size_t n = jobs.size();
  const std::size_t per_device = static_cast<std::size_t>(options.jobs_per_device);
  const std::size_t workers = std::min(n, cpu ? per_device : per_device * devices.size());

  std::vector<BatchResult> results(n);
  for (std::size_t i = 0; i < n; ++i) results[i].job = jobs[i];

  // ---- Shared state. `mutex` guards `files`, the note callback and the end flag.
  std::mutex mutex;
  std::condition_variable cv;
  std::vector<FileState> files(n);
  bool workers_done = false;
  std::atomic<std::size_t> next_job{0};
  // The pipelines' stop flag: set from the caller's flag (relayed by the
  // monitor) or when the progress callback throws.
  std::atomic<bool> stop_all{false};
  std::exception_ptr progress_error;
  const auto t_start = Clock::now();

  auto caller_stop = [&] { return options.stop && options.stop->load(); };

  std::function<void(const BatchJob&, const std::string&)> note = options.note;
  if (!note) {
    note = [&options](const BatchJob& job, const std::string& text) {
      if (options.base.note)
        options.base.note(job.input + ": " + text);
      else
        std::cerr << job.input << ": " << text << "\n";
    };
  }

  auto snapshot = [&](bool final) {
    BatchProgress p;
    p.files_total = static_cast<int>(n);
    p.elapsed_s = seconds(Clock::now() - t_start);
    p.final = final;
    int64_t remaining_known = 0;  // frames left in running files
    int64_t started_size = 0;     // sizes of started files (done: real count; running: estimate)
    int started = 0;
    bool sizes_known = true;
    {
      std::lock_guard lock(mutex);
      for (std::size_t i = 0; i < n; ++i) {
        const FileState& f = files[i];
        p.frames += f.frames;
        if (f.phase == FileState::Phase::Done) {
          ++p.files_done;
          if (!results[i].ok) ++p.files_failed;
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
    if (final || stop_all.load()) {
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
  };

  auto worker = [&](std::size_t worker_index) {
    const int device = cpu ? -1 : devices[worker_index % devices.size()];
    for (;;) {
      if (stop_all.load() || caller_stop()) return;
      const std::size_t i = next_job.fetch_add(1);
      if (i >= n) return;
      BatchResult& r = results[i];
      r.device = device;
      {
        std::lock_guard lock(mutex);
        files[i].phase = FileState::Phase::Running;
      }
      PipelineOptions opt = options.base;
      opt.input = jobs[i].input;
      opt.output = jobs[i].output;
      if (device >= 0) opt.device = device;
      // No encoder named: each output gets its own default (png for a .png, libx264 for a video).
      if (opt.encoder.codec.empty()) opt.encoder.codec = default_encoder_for(opt.output);
      opt.frame_sink = nullptr;
      opt.stop = &stop_all;
      opt.progress = [&, i](const Progress& p) {
        std::lock_guard lock(mutex);
        files[i].frames = p.frames;
        files[i].estimate = p.total_estimate;
      };
      opt.note = [&, i](const std::string& text) {
        std::lock_guard lock(mutex);  // one note at a time, whichever pipeline sends it
        note(jobs[i], text);
      };
      const auto t0 = Clock::now();
      try {
        r.stats = run_pipeline(opt);
        r.ok = true;
      } catch (const OutputExistsError& e) {
        r.error = one_line(e.what());
        r.output_exists = true;
      } catch (const std::exception& e) {
        r.error = one_line(e.what());
      } catch (...) {
        r.error = "unknown error";
      }
      if (!r.ok) r.stats.wall_s = seconds(Clock::now() - t0);  // time until it failed
      std::lock_guard lock(mutex);
      files[i].phase = FileState::Phase::Done;
      files[i].frames = r.ok ? r.stats.frames : 0;  // a failed file's frames were not written
    }
  };

  // The monitor: relays the caller's stop flag quickly (every 50 ms) and
  // reports progress every 250 ms, always from this one thread.
  std::thread monitor([&] {
    auto last_report = Clock::now();
    std::unique_lock lock(mutex);
    while (!workers_done) {
      cv.wait_for(lock, std::chrono::milliseconds(50));
      if (caller_stop()) stop_all.store(true);
      if (workers_done || !options.progress || progress_error) continue;
      if (Clock::now() - last_report < std::chrono::milliseconds(250)) continue;
      last_report = Clock::now();
      lock.unlock();
      try {
        options.progress(snapshot(false));
      } catch (...) {
        progress_error = std::current_exception();  // only this thread writes it
        stop_all.store(true);
      }
      lock.lock();
    }
  });

  std::vector<std::thread> pool;
  pool.reserve(workers);
  for (std::size_t w = 0; w < workers; ++w) pool.emplace_back(worker, w);
  for (std::thread& t : pool) t.join();
  {
    std::lock_guard lock(mutex);
    workers_done = true;
  }
  cv.notify_all();
  monitor.join();

  for (std::size_t i = 0; i < n; ++i) {
    if (files[i].phase == FileState::Phase::Waiting) {
      results[i].skipped = true;
      results[i].error = "not started: the batch was stopped";
    }
  }
  if (progress_error) std::rethrow_exception(progress_error);
  if (options.progress) options.progress(snapshot(true));
  return results;
}

}  // namespace streamblur
