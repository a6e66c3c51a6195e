// streamblur: blur a video (or a still image) with a chain of filters on the
// GPU, keeping audio, timestamps and metadata.
//   streamblur in.mp4 out.mp4 --vf "gblur=sigma=2,boxblur=radius=3"
//   streamblur batch a.mp4 b.mp4 ... --out-dir blurred --vf gblur=sigma=2
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <mutex>
#include <optional>
#include <regex>
#include <set>

extern "C" {
#include <libavutil/log.h>
}

#include "streamblur/io/log.hpp"
#include "streamblur/io/reader.hpp"
#include "streamblur/pipeline/batch.hpp"
#include "streamblur/pipeline/filter_reference.hpp"
#include "streamblur/pipeline/pipeline.hpp"
#include "streamblur/pipeline/output_file.hpp"
#include "streamblur/pipeline/detail/temp_outputs.hpp"

namespace {

// An error line as the user sees it: the library's own message (FFmpeg's,
// CUDA's) stays, our source file and line go, unless -v asks for them
// (" (reader.cpp:122)", " at /path/blur.cu:338").
std::string shown_error(const std::string& what, bool verbose) {
  if (verbose) return what;
  static const std::regex where(R"( \([A-Za-z0-9_]+\.(cpp|cu|hpp|h):[0-9]+\)| at [^ ]+\.(cpp|cu|hpp|h):[0-9]+)");
  return std::regex_replace(what, where, "");
}

namespace fs = std::filesystem;

// The library says an output exists without overwriting; the CLI names the flag.
constexpr const char* kUseY = " (use -y to overwrite)";
const char* exists_hint(const std::exception& e) {
  return dynamic_cast<const streamblur::OutputExistsError*>(&e) ? kUseY : "";
}

std::atomic<bool> g_stop{false};

std::atomic<int> g_signals{0};
std::atomic<int> g_first_signal{SIGINT};

// The exit status of a run a signal stopped: 128 + the signal (130 for Ctrl-C).
int interrupted_status() { return 128 + g_first_signal.load(); }

// SIGINT, SIGTERM, SIGHUP: the first stops reading and lets the run finish
// what is in flight (a playable output); a second ends the program at once,
// removing the hidden temporary outputs first (only async-signal-safe calls).
extern "C" void on_stop_signal(int sig) {
  if (g_signals.fetch_add(1) == 0) g_first_signal.store(sig);
  g_stop.store(true);
  if (g_signals.load() > 1) {
    streamblur::remove_temp_outputs_in_signal_handler();
    ::_exit(128 + sig);
  }
}

void install_stop_handlers() {
  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) sigaction(sig, &sa, nullptr);
}

std::string clock_text(double s) {
  if (!(s >= 0) || s > 1e7) return "--:--";
  const long t = static_cast<long>(s + 0.5);
  char buf[32];
  std::snprintf(buf, sizeof buf, "%ld:%02ld:%02ld", t / 3600, (t / 60) % 60, t % 60);
  return buf;
}

nlohmann::json stage_json(const streamblur::StageStats& s) { return {{"busy_s", s.busy_s}, {"blocked_s", s.blocked_s}}; }

// Options the single-file command and `batch` share (bound to both, so either
// place on the command line works).
struct CommonOptions {
  std::string vf, codec, preset, backend = "auto", hwdec = "auto";
  std::optional<std::string> start, duration, frames;  // -ss, -t, --frames as typed (parsed in fill_pipeline_options)
  std::vector<std::string> encoder_opts;
  int crf = -1, inflight = 4, threads = 0;
  bool overwrite = false, quiet = false, verbose = false, realtime = false;
};

void add_common_options(CLI::App& app, CommonOptions& c) {
  app.add_option("--vf", c.vf, "filter chain, e.g. \"gblur=sigma=2,boxblur=radius=3\" (see --list-filters)");
  app.add_option("-c,--codec", c.codec, "video encoder by FFmpeg name (default: libx264; the image encoder for image outputs)");
  app.add_option("--crf", c.crf, "constant rate factor for encoders that have one (libx264 default here: 18)")
      ->check(CLI::Range(0, 63));
  app.add_option("--preset", c.preset, "encoder preset, e.g. ultrafast ... veryslow for libx264");
  app.add_option("--encoder-opt", c.encoder_opts, "encoder option key=value (repeatable)");
  app.add_option("--backend", c.backend, "auto (CUDA when a device is present), cuda or cpu")
      ->check(CLI::IsMember({"auto", "cuda", "cpu"}));
  app.add_option("--hwdec", c.hwdec,
                 "decoder: auto (NVDEC when the CUDA backend runs and it takes the codec), nvdec (required) or none (CPU)")
      ->check(CLI::IsMember({"auto", "nvdec", "none"}));
  app.add_option("--inflight", c.inflight, "frames in flight (slots of pinned + device memory)")->check(CLI::Range(1, 64));
  app.add_option("--threads", c.threads, "decoder threads (0 = automatic)")->check(CLI::Range(0, 256));
  // Trimming with ffmpeg's names; "-ss" is rewritten to "--ss" before parsing
  // (ffmpeg_style_arguments), as CLI11 takes one letter after a single dash.
  app.add_option_function<std::string>(
         "--ss", [&c](const std::string& v) { c.start = v; },
         "start at TIME (also -ss, as ffmpeg's input -ss): seek to the keyframe before it, decode, drop the frames "
         "before it; the output's timestamps start near 0. TIME: seconds (12.5) or [HH:]MM:SS[.m] (1:02.5)")
      ->type_name("TIME");
  app.add_option_function<std::string>(
         "-t", [&c](const std::string& v) { c.duration = v; },
         "take TIME of the input from the start (ffmpeg's -t): frames and copied packets before start + TIME")
      ->type_name("TIME");
  app.add_option_function<std::string>(
         "--frames", [&c](const std::string& v) { c.frames = v; },
         "stop after N video frames (ffmpeg's -frames:v); copied streams end where frame N+1 would begin")
      ->type_name("N");
  app.add_flag("-y,--overwrite", c.overwrite, "overwrite outputs that exist");
  app.add_flag("--re", c.realtime,
               "read the input at its native frame rate, as ffmpeg -re does for live streaming (a 10 s clip takes 10 s)");
  app.add_flag("-q,--quiet", c.quiet, "no progress line and no notes");
  app.add_flag("-v,--verbose", c.verbose, "let FFmpeg print its own log");
}

// Fills everything the common options decide. Returns an error text for a
// usage mistake (exit 2), or nothing.
std::optional<std::string> fill_pipeline_options(const CommonOptions& c, streamblur::PipelineOptions& opt) {
  opt.filters = c.vf;
  opt.backend = c.backend == "cuda"  ? streamblur::BackendChoice::Cuda
                : c.backend == "cpu" ? streamblur::BackendChoice::Cpu
                                     : streamblur::BackendChoice::Auto;
  opt.hwdec = streamblur::parse_hwdec(c.hwdec);
  opt.inflight = c.inflight;
  opt.decoder_threads = c.threads;
  opt.overwrite = c.overwrite;
  opt.realtime = c.realtime;
  try {
    if (c.start) opt.start_seconds = streamblur::parse_time(*c.start);
  } catch (const std::invalid_argument& e) {
    return std::string("-ss: ") + e.what();
  }
  try {
    if (c.duration) opt.duration_seconds = streamblur::parse_time(*c.duration);
  } catch (const std::invalid_argument& e) {
    return std::string("-t: ") + e.what();
  }
  if (opt.duration_seconds && *opt.duration_seconds <= 0)
    return "-t: the duration must be more than 0 seconds, got '" + *c.duration + "'";
  // The span's range (a usage error, before anything is opened).
  for (const auto& [flag, span] : {std::pair{"-ss: ", streamblur::io::ReadSpan{opt.start_seconds, {}, {}}},
                                   std::pair{"-t: ", streamblur::io::ReadSpan{{}, opt.duration_seconds, {}}}}) {
    try {
      streamblur::io::check_span(span);
    } catch (const std::invalid_argument& e) {
      return flag + std::string(e.what());
    }
  }
  if (c.frames) {
    const std::string& f = *c.frames;
    long long n = 0;
    const auto [end, ec] = std::from_chars(f.data(), f.data() + f.size(), n);
    if (f.empty() || ec != std::errc() || end != f.data() + f.size())
      return "--frames: '" + f + "' is not a whole number of frames";
    if (n < 1) return "--frames must be at least 1, got " + f;
    opt.max_frames = n;
  }
  opt.encoder.codec = c.codec;
  opt.encoder.crf = c.crf;
  opt.encoder.preset = c.preset;
  for (const std::string& kv : c.encoder_opts) {
    const auto eq = kv.find('=');
    if (eq == std::string::npos || eq == 0) return "--encoder-opt needs key=value, got '" + kv + "'";
    opt.encoder.options[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  return std::nullopt;
}

// ---------------------------------------------------------------------------
// streamblur batch
// ---------------------------------------------------------------------------

struct BatchCommand {
  std::vector<std::string> inputs;
  std::string out_dir, devices = "all", summary_json;
  int jobs = 2;
};

nlohmann::ordered_json result_json(const streamblur::BatchResult& r) {
  const streamblur::RunStats& st = r.stats;
  nlohmann::ordered_json j = {{"input", r.job.input}, {"output", r.job.output}, {"ok", r.ok}};
  if (!r.ok) j["error"] = r.error;
  if (r.skipped) j["skipped"] = true;
  j["device"] = r.device;
  j["frames"] = r.ok ? st.frames : 0;
  j["wall_s"] = st.wall_s;
  j["fps"] = r.ok ? st.fps : 0.0;
  // What a failed run never got to decide is null rather than a default.
  const auto text_or_null = [&](const std::string& s) {
    return r.ok ? nlohmann::ordered_json(s) : nlohmann::ordered_json(nullptr);
  };
  j["backend"] = text_or_null(st.backend);
  j["decoder"] = text_or_null(st.decoder);
  j["filters"] = text_or_null(st.filters);
  j["gpu_memory_bytes"] = r.ok ? st.gpu_memory_bytes : 0;
  j["bounding_stage"] = text_or_null(st.bounding_stage);
  if (r.ok) j["stopped_early"] = st.stopped_early;
  return j;
}

int run_batch_command(const CommonOptions& common, const BatchCommand& cmd) {
  const auto usage_error = [](const std::string& msg) {
    std::cerr << "streamblur: error: " << msg << "\n";
    return 2;
  };
  const bool quiet = common.quiet;

  // Outputs: DIR/<input's file name>. Everything that can be refused is
  // refused here, before the folder is made or any file is opened.
  const fs::path out_dir(cmd.out_dir);
  streamblur::BatchOptions b;
  std::map<std::string, std::string> by_name;  // output file name -> input
  for (const std::string& in : cmd.inputs) {
    const fs::path name = fs::path(in).filename();
    if (name.empty() || name == "." || name == "..") return usage_error("input '" + in + "' is not a file name");
    if (auto [it, fresh] = by_name.emplace(name.string(), in); !fresh)
      return usage_error("inputs '" + it->second + "' and '" + in + "' have the same file name; both would be written to '" +
                         (out_dir / name).string() + "'");
    const fs::path out = out_dir / name;
    if (streamblur::same_file(in, out.string(), true))
      return usage_error("output '" + out.string() + "' would be the input '" + in + "'; choose another --out-dir");
    b.jobs.push_back({in, out.string()});
  }
  try {
    b.devices = streamblur::parse_device_list(cmd.devices);
  } catch (const std::invalid_argument& e) {
    return usage_error(std::string("--devices: ") + e.what());
  }
  if (auto err = fill_pipeline_options(common, b.base)) return usage_error(*err);
  b.jobs_per_device = cmd.jobs;

  // The summary is an output too: not an input, not one of the videos, not
  // replaced without -y, and writable before any work starts.
  const std::string summary_path =
      cmd.summary_json.empty() ? (out_dir / "streamblur-batch.json").string() : cmd.summary_json;
  std::vector<streamblur::NamedOutput> outputs;
  std::vector<std::string> inputs;
  for (const streamblur::BatchJob& j : b.jobs) {
    outputs.push_back({j.output, "output"});
    inputs.push_back(j.input);
  }
  outputs.push_back({summary_path, "summary"});
  try {
    streamblur::check_outputs(outputs, {true, inputs, {}});
  } catch (const std::runtime_error& e) {
    return usage_error(e.what());
  }

  std::error_code ec;
  fs::create_directories(out_dir, ec);
  if (ec || !fs::is_directory(out_dir)) {
    std::cerr << "streamblur: error: cannot create output folder '" << cmd.out_dir << "': "
              << (ec ? ec.message() : "a file of that name exists") << "\n";
    return 1;
  }
  std::optional<streamblur::OutputFile> summary;
  try {
    summary.emplace(summary_path, "summary", streamblur::OutputRules{common.overwrite, inputs, {}});
  } catch (const std::exception& e) {
    std::cerr << "streamblur: error: " << e.what() << exists_hint(e) << "\n";
    return 1;
  }

  // stderr is shared by the progress line (monitor thread) and notes (pipeline threads).
  std::mutex err_mutex;
  const bool show_progress = !quiet && ::isatty(STDERR_FILENO);
  bool progress_shown = false;
  std::set<std::string> notes_seen;
  // Most notes (the backend chosen, a format conversion) say the same for every
  // file of a batch: each distinct one is printed once.
  b.note = [&](const streamblur::BatchJob&, const std::string& text) {
    if (quiet) return;
    std::lock_guard lock(err_mutex);
    if (!notes_seen.insert(text).second) return;
    if (progress_shown) std::cerr << "\r\033[K";  // the progress line is redrawn on the next tick
    std::cerr << text << "\n";
  };
  if (show_progress) {
    b.progress = [&](const streamblur::BatchProgress& p) {
      std::lock_guard lock(err_mutex);
      std::fprintf(stderr, "\rfiles %d/%d  failed %d  running %d  frames %lld  %.1f fps  elapsed %s  eta %s   ", p.files_done,
                   p.files_total, p.files_failed, p.running, static_cast<long long>(p.frames), p.fps,
                   clock_text(p.elapsed_s).c_str(), clock_text(p.eta_s).c_str());
      if (p.final) std::fprintf(stderr, "\n");
      progress_shown = !p.final;
      std::fflush(stderr);
    };
  }
  b.stop = &g_stop;
  install_stop_handlers();

  const auto t0 = std::chrono::steady_clock::now();
  std::vector<streamblur::BatchResult> results;
  try {
    results = streamblur::run_batch(b);
  } catch (const std::invalid_argument& e) {
    return usage_error(e.what());
  }
  const double wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  int ok = 0, failed = 0, skipped = 0;
  int64_t frames = 0;
  for (const auto& r : results) {
    if (r.ok) {
      ++ok;
      frames += r.stats.frames;
    } else if (r.skipped) {
      ++skipped;
    } else {
      ++failed;
      std::cerr << "streamblur: error: " << r.job.input << ": " << shown_error(r.error, common.verbose)
                << (r.output_exists ? kUseY : "") << "\n";
    }
  }
  const bool interrupted = g_stop.load();
  const double fps = wall_s > 0 ? frames / wall_s : 0;
  if (!quiet) {
    std::string line = "done: " + std::to_string(ok) + " of " + std::to_string(results.size()) + " files ok";
    if (failed) line += ", " + std::to_string(failed) + " failed";
    if (skipped) line += ", " + std::to_string(skipped) + " not started (interrupted)";
    char tail[128];
    std::snprintf(tail, sizeof tail, "; %lld frames in %.2f s (%.1f fps)", static_cast<long long>(frames), wall_s, fps);
    std::cerr << line << tail << "\n";
  }

  nlohmann::ordered_json j = {{"files", results.size()}, {"ok", ok},         {"failed", failed}, {"skipped", skipped},
                              {"interrupted", interrupted}, {"wall_s", wall_s}, {"frames", frames}, {"fps", fps},
                              {"results", nlohmann::ordered_json::array()}};
  for (const auto& r : results) j["results"].push_back(result_json(r));
  try {
    summary->write(j.dump(2) + "\n");
    summary->commit();
  } catch (const std::exception& e) {
    std::cerr << "streamblur: error: " << e.what() << exists_hint(e) << "\n";
    return interrupted ? interrupted_status() : 1;
  }
  if (interrupted) return interrupted_status();
  return failed > 0 ? 1 : 0;
}

// ffmpeg spells the start "-ss", which CLI11 would read as "-s -s": those
// arguments (exactly "-ss", or "-ss=TIME") become "--ss" before parsing;
// nothing after a "--" is touched.
std::vector<std::string> ffmpeg_style_arguments(int argc, char** argv) {
  std::vector<std::string> args(argv, argv + argc);
  for (std::size_t i = 1; i < args.size(); ++i) {
    if (args[i] == "--") break;
    if (args[i] == "-ss" || args[i].rfind("-ss=", 0) == 0) args[i].insert(0, "-");
  }
  return args;
}

}  // namespace

int main(int argc, char** argv) {
  // A reader that went away (stderr piped into `head`, the video into a closed
  // pipe) must not kill a run: writes then fail with EPIPE, as in ffmpeg.
  std::signal(SIGPIPE, SIG_IGN);
  CLI::App app{"streamblur: blur video on the GPU with a chain of filters, keeping audio, timestamps and metadata"};
  app.set_version_flag("--version", "streamblur 0.1.0");
  app.footer("Many files at once: streamblur batch INPUT... --out-dir DIR [options] (see streamblur batch --help)");
  CommonOptions common;
  std::string input, output, stats_json, help_filter, help_format = "text";
  int device = 0;
  bool list_filters = false;
  app.add_option("input", input, "input video or image (anything FFmpeg opens)");
  app.add_option("output", output, "output file; the container comes from its extension");
  add_common_options(app, common);
  // A range, not CLI::NonNegativeNumber, whose error prints its bound as a 309-digit number.
  app.add_option("--device", device, "CUDA device to run on (default 0)")->check(CLI::Range(0, 1023));
  app.add_option("--stats-json", stats_json, "write frame count, wall time, fps and per-stage times to FILE");
  app.add_flag("--list-filters", list_filters, "list the filters");
  CLI::Option* help_filter_option =
      app.add_option("--help-filter", help_filter, "describe a filter and its options (all: every filter)");
  app.add_option("--format", help_format, "how --help-filter prints: text, or markdown (docs/filters.md is "
                 "--help-filter all --format markdown)")
      ->check(CLI::IsMember({"text", "markdown"}))
      ->needs(help_filter_option);

  BatchCommand batch;
  CLI::App* batch_app = app.add_subcommand(
      "batch", "blur many files at once: several pipelines per GPU on every chosen GPU (or side by side on the CPU); "
               "each INPUT goes to DIR/<its file name>");
  batch_app->add_option("inputs", batch.inputs, "input files")->required();
  batch_app->add_option("--out-dir", batch.out_dir, "folder for the outputs (made when missing)")->required();
  batch_app->add_option("-j,--jobs", batch.jobs, "files at once per GPU (in all on the CPU backend; default 2)")
      ->check(CLI::Range(1, 64));
  batch_app->add_option("--devices", batch.devices, "CUDA devices: all (default) or a list like 0,1");
  batch_app->add_option("--summary-json", batch.summary_json,
                        "where the per-file summary goes (default DIR/streamblur-batch.json)");
  add_common_options(*batch_app, common);
  batch_app->footer(
      "Exit status: 0 when every file succeeded, 1 when any failed, 2 for a usage error (nothing is run), 130 when "
      "interrupted. A summary (per file: ok, error, device, frames, fps, backend, decoder, ...) goes to "
      "DIR/streamblur-batch.json.");

  try {
    std::vector<std::string> args = ffmpeg_style_arguments(argc, argv);
    std::vector<char*> arg_pointers;
    for (std::string& a : args) arg_pointers.push_back(a.data());
    app.parse(static_cast<int>(arg_pointers.size()), arg_pointers.data());
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);
    std::cerr << "streamblur: error: " << e.what() << " (see --help)\n";
    return 2;
  }

  streamblur::io::install_log_capture(common.verbose ? AV_LOG_INFO : AV_LOG_QUIET);
  const bool quiet = common.quiet;
  try {
    if (batch_app->parsed()) return run_batch_command(common, batch);
    if (list_filters) {
      std::cout << "Filters (chain them with ',', options as name=value separated by ':'):\n" << streamblur::filter_list();
      return 0;
    }
    if (!help_filter.empty()) {
      if (help_format == "markdown") std::cout << streamblur::filter_reference_markdown(help_filter);
      else if (help_filter == "all") std::cout << streamblur::filter_reference_text();
      else std::cout << streamblur::filter_help(help_filter);
      return 0;
    }
    if (input.empty() || output.empty()) {
      std::cerr << "streamblur: error: an input and an output are required (see --help)\n";
      return 2;
    }

    streamblur::PipelineOptions opt;
    opt.input = input;
    opt.output = output;
    if (auto err = fill_pipeline_options(common, opt)) {
      std::cerr << "streamblur: error: " << *err << "\n";
      return 2;
    }
    if (opt.encoder.codec.empty()) opt.encoder.codec = streamblur::default_encoder_for(output);
    opt.device = device;
    opt.stop = &g_stop;
    opt.note = [quiet](const std::string& s) {
      if (!quiet) std::cerr << s << "\n";
    };
    const bool show_progress = !quiet && ::isatty(STDERR_FILENO);
    if (show_progress) {
      opt.progress = [](const streamblur::Progress& p) {
        std::string total = p.total_estimate > 0 ? "/" + std::to_string(p.total_estimate) : "";
        const double speed = p.elapsed_s > 0 ? p.media_time_s / p.elapsed_s : 0;
        const double eta = p.total_estimate > 0 && p.fps > 0 ? (p.total_estimate - p.frames) / p.fps : -1;
        std::fprintf(stderr, "\rframe %lld%s  %.1f fps  speed %.2fx  elapsed %s  eta %s   ", static_cast<long long>(p.frames),
                     total.c_str(), p.fps, speed, clock_text(p.elapsed_s).c_str(), p.final ? "0:00:00" : clock_text(eta).c_str());
        if (p.final) std::fprintf(stderr, "\n");
        std::fflush(stderr);
      };
    }
    install_stop_handlers();

    // The stats file is an output too: checked against the input and the
    // video, and its temporary made before any work.
    std::optional<streamblur::OutputFile> stats_file;
    if (!stats_json.empty()) {
      const streamblur::OutputRules rules{common.overwrite, {input}, opt.note};
      streamblur::check_outputs({{output, "output"}, {stats_json, "stats file"}}, rules);
      stats_file.emplace(stats_json, "stats file", rules);
    }

    const streamblur::RunStats st = streamblur::run_pipeline(opt);
    if (st.decode_warnings > 0 && !quiet)
      std::cerr << "warning: the input had " << st.decode_warnings << " damaged part(s); wrote what could be decoded\n";
    if (st.stopped_early && !quiet) std::cerr << "stopped early (interrupted); the output holds the frames done so far\n";
    if (!quiet)
      std::cerr << "done: " << st.frames << " frames in " << st.wall_s << " s (" << st.fps << " fps), backend " << st.backend
                << ", bounded by " << st.bounding_stage << "\n";

    if (!stats_json.empty()) {
      nlohmann::json j = {{"input", input},
                          {"output", output},
                          {"backend", st.backend},
                          {"decoder", st.decoder},
                          {"device", st.device},
                          {"gpu_memory_bytes", st.gpu_memory_bytes},
                          {"setup_s", st.setup_s},
                          {"first_frame_s", st.first_frame_s},
                          {"finish_s", st.finish_s},
                          {"filters", st.filters},
                          {"frames", st.frames},
                          {"wall_s", st.wall_s},
                          {"fps", st.fps},
                          {"input_pix_fmt", st.input_format},
                          {"processing_pix_fmt", st.processing_format},
                          {"decode_warnings", st.decode_warnings},
                          {"stopped_early", st.stopped_early},
                          {"bounding_stage", st.bounding_stage},
                          {"stages",
                           {{"decode", stage_json(st.decode)},
                            {"upload", stage_json(st.upload)},
                            {"filter", stage_json(st.filter)},
                            {"download", stage_json(st.download)},
                            {"encode", stage_json(st.encode)}}}};
      try {
        stats_file->write(j.dump(2) + "\n");
        stats_file->commit();
      } catch (const std::exception& e) {
        // The stats are part of the result: without them the run failed, and
        // a failed run leaves nothing behind.
        std::error_code ec;
        if (fs::is_regular_file(output, ec)) fs::remove(output, ec);
        std::cerr << "streamblur: error: " << e.what() << exists_hint(e) << "; the output was removed\n";
        return 1;
      }
    }
    return st.stopped_early ? interrupted_status() : 0;
  } catch (const std::exception& e) {
    if (!quiet && ::isatty(STDERR_FILENO)) std::cerr << "\n";  // end a progress line first
    std::cerr << "streamblur: error: " << shown_error(e.what(), common.verbose) << exists_hint(e) << "\n";
    return g_stop.load() ? interrupted_status() : 1;  // interrupted before the first frame was done
  }
}
