#pragma once
// `streamblur batch`: many files at once, each INPUT to DIR/<its file name>.
#include <CLI/CLI.hpp>

#include <string>
#include <vector>

#include "cli_options.hpp"

namespace streamblur::cli {

struct BatchCommand {
  std::vector<std::string> inputs;  // files, or folders whose media files are taken
  std::string out_dir, devices = "all", summary_json;
  int jobs = 2;
  bool skip_existing = false;
};

// Adds the subcommand to `app`, with the common options bound to `common`.
CLI::App* add_batch_command(CLI::App& app, BatchCommand& cmd, CommonOptions& common);

// Runs it; returns the exit status (0 all good, 1 a file failed, 2 a usage
// error before anything ran, 128 + signal when interrupted).
int run_batch_command(const CommonOptions& common, const BatchCommand& cmd);

}  // namespace streamblur::cli
