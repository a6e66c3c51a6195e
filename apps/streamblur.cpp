// streamblur: blur a video (or a still image) with a chain of filters on the
// GPU, keeping audio, timestamps and metadata.
//   streamblur in.mp4 out.mp4 --vf "gblur=sigma=2,boxblur=radius=3"
//   streamblur -i in.mp4 -vf gblur=sigma=2 -c:v libx264 out.mp4
//   streamblur batch a.mp4 b.mp4 ... --out-dir blurred --vf gblur=sigma=2
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>

extern "C" {
#include <libavutil/log.h>
}

#include "cli_batch.hpp"
#include "cli_options.hpp"
#include "cli_report.hpp"
#include "streamblur/io/log.hpp"
#include "streamblur/pipeline/filter_reference.hpp"
#include "streamblur/io/output_file.hpp"
#include "streamblur/pipeline/pipeline.hpp"
#include "streamblur/pipeline/stats_json.hpp"

namespace {

namespace fs = std::filesystem;
using namespace streamblur;
using namespace streamblur::cli;

// The single-file command's own options.
struct SingleCommand {
  std::vector<std::string> files;  // [input] output
  std::string input_flag;          // -i IN
  std::string stats_json, help_filter;
  int device = 0;
  bool list_filters = false;
};

void add_single_options(CLI::App& app, SingleCommand& s, CommonOptions& common) {
  app.add_option("files", s.files, "INPUT OUTPUT: the input (anything FFmpeg opens) and the output file, whose "
                                   "extension sets the container; with -i IN, only OUTPUT")
      ->expected(0, 2);
  app.add_option("-i", s.input_flag, "the input, as ffmpeg's -i")->type_name("IN");
  add_common_options(app, common);
  // A range, not CLI::NonNegativeNumber, whose error prints its bound as a 309-digit number.
  app.add_option("--device", s.device, "CUDA device to run on (default 0)")->check(CLI::Range(0, 1023));
  app.add_option("--stats-json", s.stats_json, "write frame count, wall time, fps and per-stage times to FILE");
  app.add_flag("--list-filters", s.list_filters, "list the filters");
  app.add_option("--help-filter", s.help_filter,
                 "describe a filter and its options (all: every filter); with --format markdown, as Markdown "
                 "(docs/filters.md is --help-filter all --format markdown)");
}

// --list-filters and --help-filter (whose --format is text or markdown, not
// a container); true when one of them ran.
bool print_filter_help(const SingleCommand& s, const std::string& format) {
  if (s.list_filters) {
    std::cout << "Filters (chain them with ',', options as name=value separated by ':'):\n" << filter_list();
    return true;
  }
  if (s.help_filter.empty()) return false;
  if (format != "" && format != "text" && format != "markdown")
    throw std::invalid_argument("--format with --help-filter is text or markdown, got '" + format + "'");
  if (format == "markdown") std::cout << filter_reference_markdown(s.help_filter);
  else if (s.help_filter == "all") std::cout << filter_reference_text();
  else std::cout << filter_help(s.help_filter);
  return true;
}

// The progress line on a terminal and the -progress lines.
std::function<void(const Progress&)> progress_callback(bool line, ProgressWriter* writer) {
  if (!line && !writer) return {};
  return [line, writer](const Progress& p) {
    if (writer) writer->write(p.frames, p.fps, p.media_time_s, p.elapsed_s, p.final);
    if (!line) return;
    const std::string total = p.total_estimate > 0 ? "/" + std::to_string(p.total_estimate) : "";
    const double speed = p.elapsed_s > 0 ? p.media_time_s / p.elapsed_s : 0;
    const double eta = p.total_estimate > 0 && p.fps > 0 ? (p.total_estimate - p.frames) / p.fps : -1;
    std::fprintf(stderr, "\rframe %lld%s  %.1f fps  speed %.2fx  elapsed %s  eta %s   ", static_cast<long long>(p.frames),
                 total.c_str(), p.fps, speed, clock_text(p.elapsed_s).c_str(),
                 p.final ? "0:00:00" : clock_text(eta).c_str());
    if (p.final) std::fprintf(stderr, "\n");
    std::fflush(stderr);
  };
}

// Input and output from the positionals and -i; an error text, or nothing.
std::optional<std::string> take_files(const SingleCommand& s, PipelineOptions& opt) {
  const std::size_t want = s.input_flag.empty() ? 2 : 1;
  if (s.files.size() != want)
    return s.input_flag.empty() ? "an input and an output are required (see --help)"
                                : "-i names the input: give one output after it (see --help)";
  opt.input = s.input_flag.empty() ? s.files[0] : s.input_flag;
  opt.output = s.files.back();
  return std::nullopt;
}

void report_run(const RunStats& st, const CommonOptions& c) {
  if (c.level >= LogLevel::Warning && st.decode_warnings > 0)
    std::cerr << "warning: the input had " << st.decode_warnings << " damaged part(s); wrote what could be decoded\n";
  if (c.quiet) return;
  if (st.stopped_early) std::cerr << "stopped early (interrupted); the output holds the frames done so far\n";
  std::cerr << "done: " << st.frames << " frames in " << st.wall_s << " s (" << st.fps << " fps), backend "
            << st.backend << ", bounded by " << st.bounding_stage;
  if (st.segments > 1) std::cerr << ", " << st.segments << " segments";
  std::cerr << "\n";
}

// The side outputs: checked with the video against the input, and opened
// before any work (a stats file's temporary, a progress file).
struct SideOutputs {
  std::optional<io::OutputFile> stats;
  std::unique_ptr<ProgressWriter> progress;
};

void open_side_outputs(const SingleCommand& s, const CommonOptions& c, const PipelineOptions& opt, SideOutputs& side) {
  const io::OutputRules rules{c.overwrite, {opt.input}, opt.note};
  std::vector<io::NamedOutput> outputs = {{opt.output, "output"}};
  if (!s.stats_json.empty()) outputs.push_back({s.stats_json, "stats file"});
  const bool progress_to_stdout = ProgressWriter::is_stdout(c.progress_url);
  if (!c.progress_url.empty() && !progress_to_stdout && c.progress_url != "pipe:2")
    outputs.push_back({c.progress_url.rfind("file:", 0) == 0 ? c.progress_url.substr(5) : c.progress_url,
                       "progress file"});
  if (progress_to_stdout && opt.output == "-")
    throw std::invalid_argument("the video and the progress cannot both go to standard output");
  io::check_outputs(outputs, rules);
  if (!s.stats_json.empty()) side.stats.emplace(s.stats_json, "stats file", rules);
  if (!c.progress_url.empty()) side.progress = std::make_unique<ProgressWriter>(c.progress_url, c.overwrite,
                                                                                 std::vector<std::string>{opt.input});
}

// Writes --stats-json; a failure removes the video (the stats are part of the result).
int write_stats(const PipelineOptions& opt, const RunStats& st, io::OutputFile& file, bool verbose) {
  nlohmann::ordered_json j = {{"input", opt.input}, {"output", opt.output}};
  const nlohmann::ordered_json stats = nlohmann::ordered_json::parse(run_stats_json(st));
  for (const auto& [key, value] : stats.items()) j[key] = value;
  try {
    file.write(j.dump(2) + "\n");
    file.commit();
  } catch (const std::exception& e) {
    std::error_code ec;
    if (fs::is_regular_file(opt.output, ec)) fs::remove(opt.output, ec);
    std::cerr << "streamblur: error: " << shown_error(e, verbose) << "; the output was removed\n";
    return 1;
  }
  return 0;
}

int run_single(const SingleCommand& s, const CommonOptions& c) {
  PipelineOptions opt;
  if (auto err = take_files(s, opt); err || (err = fill_pipeline_options(c, opt))) {
    std::cerr << "streamblur: error: " << *err << "\n";
    return 2;
  }
  if (opt.encoder.codec.empty()) opt.encoder.codec = default_encoder_for(opt.output, opt.encoder.format_name);
  opt.device = s.device;
  opt.stop = &g_stop;
  const bool quiet = c.quiet;
  opt.note = [quiet](const std::string& line) {
    if (!quiet) std::cerr << line << "\n";
  };
  SideOutputs side;
  open_side_outputs(s, c, opt, side);
  opt.progress = progress_callback(!quiet && !c.no_stats && ::isatty(STDERR_FILENO), side.progress.get());
  install_stop_handlers();
  const RunStats st = run_pipeline(opt);
  report_run(st, c);
  if (side.stats && write_stats(opt, st, *side.stats, c.verbose) != 0) return 1;
  if (side.progress) side.progress->keep();
  return st.stopped_early ? interrupted_status() : 0;
}

int parse_arguments(CLI::App& app, int argc, char** argv) {
  try {
    std::vector<std::string> args = ffmpeg_style_arguments(argc, argv);
    std::vector<char*> arg_pointers;
    for (std::string& a : args) arg_pointers.push_back(a.data());
    app.parse(static_cast<int>(arg_pointers.size()), arg_pointers.data());
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e) == 0 ? -1 : 2;
    std::cerr << "streamblur: error: " << e.what() << " (see --help)\n";
    return 2;
  }
  return 0;
}

int ffmpeg_log_level(LogLevel level) {
  switch (level) {
    case LogLevel::Debug: return AV_LOG_DEBUG;
    case LogLevel::Verbose: return AV_LOG_INFO;
    default: return AV_LOG_QUIET;  // FFmpeg's own lines (libx264's statistics) only when asked for
  }
}

}  // namespace

int main(int argc, char** argv) {
  // A reader that went away (stderr piped into `head`, the video into a closed
  // pipe) must not kill a run: writes then fail with EPIPE, as in ffmpeg.
  std::signal(SIGPIPE, SIG_IGN);
  CLI::App app{"streamblur: blur video on the GPU with a chain of filters, keeping audio, timestamps and metadata"};
  app.set_version_flag("--version", "streamblur 0.1.0");
  app.footer("Many files at once: streamblur batch INPUT... --out-dir DIR [options] (see streamblur batch --help). "
             "FFmpeg's spellings work too: -i IN, -vf, -c:v, -frames:v, -loglevel, -progress, -n, -y.");
  CommonOptions common;
  SingleCommand single;
  BatchCommand batch;
  add_single_options(app, single, common);
  CLI::App* batch_app = add_batch_command(app, batch, common);
  if (const int rc = parse_arguments(app, argc, argv); rc != 0) return rc < 0 ? 0 : rc;
  if (auto err = resolve_log_level(common)) {
    std::cerr << "streamblur: error: " << *err << "\n";
    return 2;
  }
  io::install_log_capture(ffmpeg_log_level(common.level));
  try {
    if (batch_app->parsed()) return run_batch_command(common, batch);
    if (print_filter_help(single, common.format)) return 0;
    return run_single(single, common);
  } catch (const std::exception& e) {
    if (common.level == LogLevel::Quiet) return g_stop.load() ? interrupted_status() : 1;
    if (!common.quiet && !common.no_stats && ::isatty(STDERR_FILENO)) std::cerr << "\n";  // end a progress line first
    std::cerr << "streamblur: error: " << shown_error(e, common.verbose) << "\n";
    return g_stop.load() ? interrupted_status() : 1;  // interrupted before the first frame was done
  }
}
