#include "cli_batch.hpp"

#include <nlohmann/json.hpp>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <iostream>
#include <map>
#include <mutex>
#include <optional>
#include <set>

#include "cli_report.hpp"
#include "streamblur/pipeline/batch.hpp"
#include "streamblur/io/output_file.hpp"
#include "streamblur/pipeline/stats_json.hpp"

namespace streamblur::cli {
namespace fs = std::filesystem;

CLI::App* add_batch_command(CLI::App& app, BatchCommand& cmd, CommonOptions& common) {
  CLI::App* b = app.add_subcommand(
      "batch", "blur many files at once: several pipelines per GPU on every chosen GPU (or side by side on the CPU); "
               "each INPUT goes to DIR/<its file name>");
  b->add_option("inputs", cmd.inputs, "input files, or folders whose video and image files are taken (by extension)")
      ->required();
  b->add_option("--out-dir", cmd.out_dir, "folder for the outputs (made when missing)")->required();
  b->add_option("-j,--jobs", cmd.jobs, "files at once per GPU (in all on the CPU backend; default 2)")
      ->check(CLI::Range(1, 64));
  b->add_option("--devices", cmd.devices, "CUDA devices: all (default) or a list like 0,1");
  b->add_option("--summary-json", cmd.summary_json, "where the per-file summary goes (default DIR/streamblur-batch.json)");
  b->add_flag("--skip-existing", cmd.skip_existing,
              "keep outputs that exist and run only the other files, so that a re-run resumes; a summary that exists "
              "is kept too, and this run's goes to the next free streamblur-batch-N.json");
  add_common_options(*b, common);
  b->footer(
      "Exit status: 0 when every file succeeded (or was kept), 1 when any failed, 2 for a usage error (nothing is "
      "run), 130 when interrupted. A summary (per file: ok, error, device, frames, fps, backend, decoder, ...) goes to "
      "DIR/streamblur-batch.json.");
  return b;
}

namespace {

int usage_error(const std::string& msg) {
  std::cerr << "streamblur: error: " << msg << "\n";
  return 2;
}

// The extensions a folder's files are taken by: video containers, elementary
// streams and still images.
bool has_media_extension(const fs::path& p) {
  static const std::set<std::string> exts = {
      ".mp4", ".m4v", ".mov", ".mkv", ".webm", ".avi", ".ts",   ".m2ts", ".mts", ".mpg",  ".mpeg", ".flv",
      ".wmv", ".asf", ".nut", ".ogv", ".3gp",  ".3g2", ".mxf",  ".y4m",  ".dv",  ".ivf",  ".h264", ".264",
      ".hevc", ".h265", ".gif", ".png", ".jpg", ".jpeg", ".bmp", ".tif", ".tiff", ".webp"};
  std::string e = p.extension().string();
  std::transform(e.begin(), e.end(), e.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return exts.count(e) > 0;
}

// Folders become their media files (sorted, not hidden, not recursive).
std::vector<std::string> expand_inputs(const std::vector<std::string>& args, std::string& error) {
  std::vector<std::string> out;
  for (const std::string& a : args) {
    std::error_code ec;
    if (!fs::is_directory(a, ec)) {
      out.push_back(a);
      continue;
    }
    std::vector<std::string> found;
    for (const fs::directory_entry& e : fs::directory_iterator(a, ec)) {
      const std::string name = e.path().filename().string();
      if (name.empty() || name[0] == '.' || !e.is_regular_file(ec) || !has_media_extension(e.path())) continue;
      found.push_back(e.path().string());
    }
    if (ec) {
      error = "cannot list folder '" + a + "': " + ec.message();
      return {};
    }
    if (found.empty()) {
      error = "folder '" + a + "' holds no video or image files";
      return {};
    }
    std::sort(found.begin(), found.end());
    out.insert(out.end(), found.begin(), found.end());
  }
  return out;
}

// Outputs: DIR/<input's file name>. Everything that can be refused is refused
// here, before the folder is made or any file is opened.
std::optional<std::string> plan_jobs(const std::vector<std::string>& inputs, const fs::path& out_dir, BatchOptions& b) {
  std::map<std::string, std::string> by_name;  // output file name -> input
  for (const std::string& in : inputs) {
    const fs::path name = fs::path(in).filename();
    if (name.empty() || name == "." || name == "..") return "input '" + in + "' is not a file name";
    if (auto [it, fresh] = by_name.emplace(name.string(), in); !fresh)
      return "inputs '" + it->second + "' and '" + in + "' have the same file name; both would be written to '" +
             (out_dir / name).string() + "'";
    const fs::path out = out_dir / name;
    if (io::same_file(in, out.string(), true))
      return "output '" + out.string() + "' would be the input '" + in + "'; choose another --out-dir";
    b.jobs.push_back({in, out.string()});
  }
  return std::nullopt;
}

// The summary's path: as asked, or DIR/streamblur-batch.json; with
// --skip-existing, the first of streamblur-batch-2.json, -3, ... that is free
// when the default one exists.
std::string summary_path(const BatchCommand& cmd, const fs::path& out_dir) {
  if (!cmd.summary_json.empty()) return cmd.summary_json;
  fs::path p = out_dir / "streamblur-batch.json";
  std::error_code ec;
  for (int n = 2; cmd.skip_existing && fs::exists(p, ec); ++n) p = out_dir / ("streamblur-batch-" + std::to_string(n) + ".json");
  return p.string();
}

// Checks the outputs and the summary against the inputs and each other before
// any work (whether they exist is for each file's run and the summary's
// OutputFile to say).
std::optional<std::string> check_batch_outputs(const BatchOptions& b, const std::string& summary) {
  std::vector<io::NamedOutput> outputs;
  std::vector<std::string> inputs;
  for (const BatchJob& j : b.jobs) {
    outputs.push_back({j.output, "output"});
    inputs.push_back(j.input);
  }
  outputs.push_back({summary, "summary"});
  try {
    io::check_outputs(outputs, {true, inputs, {}});
  } catch (const std::runtime_error& e) {
    return std::string(e.what());
  }
  return std::nullopt;
}

// Notes (each distinct one once: most say the same for every file) and the
// aggregate progress line, which share stderr.
struct BatchConsole {
  std::mutex mutex;
  bool progress_shown = false;
  std::set<std::string> notes_seen;
  std::unique_ptr<ProgressWriter> progress_file;
};

void attach_console(const CommonOptions& common, BatchConsole& con, BatchOptions& b) {
  const bool quiet = common.quiet;
  b.note = [&con, quiet](const BatchJob&, const std::string& text) {
    if (quiet) return;
    std::lock_guard lock(con.mutex);
    if (!con.notes_seen.insert(text).second) return;
    if (con.progress_shown) std::cerr << "\r\033[K";  // the progress line is redrawn on the next tick
    std::cerr << text << "\n";
  };
  const bool line = !quiet && !common.no_stats && ::isatty(STDERR_FILENO);
  if (!line && !con.progress_file) return;
  b.progress = [&con, line](const BatchProgress& p) {
    std::lock_guard lock(con.mutex);
    if (con.progress_file) con.progress_file->write(p.frames, p.fps, 0, p.elapsed_s, p.final);
    if (!line) return;
    std::fprintf(stderr, "\rfiles %d/%d  failed %d  running %d  frames %lld  %.1f fps  elapsed %s  eta %s   ",
                 p.files_done, p.files_total, p.files_failed, p.running, static_cast<long long>(p.frames), p.fps,
                 clock_text(p.elapsed_s).c_str(), clock_text(p.eta_s).c_str());
    if (p.final) std::fprintf(stderr, "\n");
    con.progress_shown = !p.final;
    std::fflush(stderr);
  };
}

struct Tally {
  int ok = 0, failed = 0, interrupted = 0, kept = 0;
  int64_t frames = 0;
};

Tally tally(const std::vector<BatchResult>& results, bool verbose) {
  Tally t;
  for (const BatchResult& r : results) {
    if (r.ok) {
      ++t.ok;
      t.frames += r.stats.frames;
    } else if (r.kept_existing) {
      ++t.kept;
    } else if (r.skipped) {
      ++t.interrupted;
    } else {
      ++t.failed;
      std::cerr << "streamblur: error: " << r.job.input << ": " << shown_error(r.error, r.output_exists, verbose)
                << "\n";
    }
  }
  return t;
}

void print_done(const Tally& t, std::size_t files, double wall_s) {
  std::string line = "done: " + std::to_string(t.ok) + " of " + std::to_string(files) + " files ok";
  if (t.kept) line += ", " + std::to_string(t.kept) + " kept (output exists)";
  if (t.failed) line += ", " + std::to_string(t.failed) + " failed";
  if (t.interrupted) line += ", " + std::to_string(t.interrupted) + " not started (interrupted)";
  char tail[128];
  std::snprintf(tail, sizeof tail, "; %lld frames in %.2f s (%.1f fps)", static_cast<long long>(t.frames), wall_s,
                wall_s > 0 ? t.frames / wall_s : 0.0);
  std::cerr << line << tail << "\n";
}

std::string summary_text(const std::vector<BatchResult>& results, const Tally& t, bool interrupted, double wall_s) {
  nlohmann::ordered_json j = {{"files", results.size()},     {"ok", t.ok},     {"failed", t.failed},
                              {"skipped", t.interrupted + t.kept}, {"kept", t.kept}, {"interrupted", interrupted},
                              {"wall_s", wall_s},             {"frames", t.frames},
                              {"fps", wall_s > 0 ? t.frames / wall_s : 0.0},
                              {"results", nlohmann::ordered_json::array()}};
  for (const BatchResult& r : results) j["results"].push_back(nlohmann::ordered_json::parse(batch_result_json(r)));
  return j.dump(2) + "\n";
}

// Plans the jobs and checks every output; returns a usage error, or nothing.
std::optional<std::string> prepare(const CommonOptions& common, const BatchCommand& cmd, BatchOptions& b,
                                   std::string& summary) {
  if (cmd.skip_existing && common.overwrite) return "--skip-existing and -y contradict each other: choose one";
  std::string error;
  const std::vector<std::string> inputs = expand_inputs(cmd.inputs, error);
  if (!error.empty()) return error;
  const fs::path out_dir(cmd.out_dir);
  if (auto err = plan_jobs(inputs, out_dir, b)) return err;
  try {
    b.devices = parse_device_list(cmd.devices);
  } catch (const std::invalid_argument& e) {
    return std::string("--devices: ") + e.what();
  }
  if (auto err = fill_pipeline_options(common, b.base)) return err;
  b.jobs_per_device = cmd.jobs;
  b.skip_existing = cmd.skip_existing;
  summary = summary_path(cmd, out_dir);
  return check_batch_outputs(b, summary);
}

}  // namespace

int run_batch_command(const CommonOptions& common, const BatchCommand& cmd) {
  BatchOptions b;
  std::string summary_path;
  if (auto err = prepare(common, cmd, b, summary_path)) return usage_error(*err);
  std::error_code ec;
  fs::create_directories(cmd.out_dir, ec);
  if (ec || !fs::is_directory(cmd.out_dir)) {
    std::cerr << "streamblur: error: cannot create output folder '" << cmd.out_dir
              << "': " << (ec ? ec.message() : "a file of that name exists") << "\n";
    return 1;
  }
  std::vector<std::string> inputs;
  for (const BatchJob& j : b.jobs) inputs.push_back(j.input);
  std::optional<io::OutputFile> summary;
  BatchConsole console;
  try {
    summary.emplace(summary_path, "summary", io::OutputRules{common.overwrite, inputs, {}});
    if (!common.progress_url.empty())
      console.progress_file = std::make_unique<ProgressWriter>(common.progress_url, common.overwrite, inputs);
  } catch (const std::exception& e) {
    std::cerr << "streamblur: error: " << shown_error(e, common.verbose) << "\n";
    return 1;
  }
  attach_console(common, console, b);
  b.stop = &g_stop;
  install_stop_handlers();

  const auto t0 = std::chrono::steady_clock::now();
  std::vector<BatchResult> results;
  try {
    results = run_batch(b);
  } catch (const std::invalid_argument& e) {
    return usage_error(e.what());
  }
  const double wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const Tally t = tally(results, common.verbose);
  const bool interrupted = g_stop.load();
  if (!common.quiet) print_done(t, results.size(), wall_s);
  try {
    summary->write(summary_text(results, t, interrupted, wall_s));
    summary->commit();
    if (console.progress_file) console.progress_file->keep();
  } catch (const std::exception& e) {
    std::cerr << "streamblur: error: " << shown_error(e, common.verbose) << "\n";
    return interrupted ? interrupted_status() : 1;
  }
  if (interrupted) return interrupted_status();
  return t.failed > 0 ? 1 : 0;
}

}  // namespace streamblur::cli
