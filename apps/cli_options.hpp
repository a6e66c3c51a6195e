#pragma once
// The CLI's options: the ones the single-file command and `batch` share, the
// rewriting of FFmpeg's spellings before CLI11 parses them, and the mapping
// of the options onto PipelineOptions.
#include <CLI/CLI.hpp>

#include <optional>
#include <string>
#include <vector>

#include "streamblur/pipeline/pipeline.hpp"

namespace streamblur::cli {

// How much the CLI prints, with FFmpeg's level names (-loglevel). Info is the
// default: notes and the progress line. -q is Error.
enum class LogLevel { Quiet, Error, Warning, Info, Verbose, Debug };

// Options the single-file command and `batch` share (bound to both, so either
// place on the command line works).
struct CommonOptions {
  std::string vf, codec, preset, backend = "auto", hwdec = "auto", format, loglevel, progress_url;
  std::optional<std::string> start, duration, frames;  // -ss, -t, -frames:v as typed
  std::vector<std::string> encoder_opts, input_opts, output_opts;
  int crf = -1, inflight = 4, threads = 0, segments = 1;
  bool overwrite = false, never_overwrite = false, quiet = false, verbose = false, realtime = false;
  bool strict_regions = false, no_stats = false;
  LogLevel level = LogLevel::Info;  // from loglevel, -q and -v (resolve_log_level)
};

void add_common_options(CLI::App& app, CommonOptions& c);

// Sets c.level from -loglevel, -q and -v. Returns an error text for a usage
// mistake (exit 2), or nothing.
std::optional<std::string> resolve_log_level(CommonOptions& c);

// Fills everything the common options decide. Returns an error text for a
// usage mistake (exit 2), or nothing.
std::optional<std::string> fill_pipeline_options(const CommonOptions& c, PipelineOptions& opt);

// FFmpeg's single-dash spellings as CLI11 reads them: "-vf" would be "-v -f",
// "-crf" "-c rf". Every argument that is one of FFmpeg's names (-vf,
// -filter:v, -c:v, -codec:v, -vcodec, -frames:v, -vframes, -loglevel, -v
// LEVEL, -progress, -hwaccel, -crf, -preset, -threads, -ss, -re, ...) becomes
// the long option it stands for; "-hide_banner", "-nostdin" and "-stats" are
// dropped (streamblur prints no banner and never reads standard input for
// questions). Nothing after "--" is touched.
std::vector<std::string> ffmpeg_style_arguments(int argc, char** argv);

}  // namespace streamblur::cli
