#pragma once
// Running the streamblur binary from a test: posix_spawn with stdout and
// stderr captured to files, a time limit, and the exit status or signal.
// Used by test_cli.cpp and test_invalid_args.cpp.
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "test_support.hpp"

extern char** environ;

namespace sbtest {

// STREAMBLUR_CLI overrides the build-tree path (programs moved to another machine).
inline const char* const kCli =
    std::getenv("STREAMBLUR_CLI") && *std::getenv("STREAMBLUR_CLI") ? std::getenv("STREAMBLUR_CLI") : STREAMBLUR_CLI_PATH;

inline std::vector<std::string> lines_of(const std::string& s) {
  std::vector<std::string> v;
  std::istringstream in(s);
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) v.push_back(line);
  return v;
}

// ---------------------------------------------------------------------------
// Running the binary
// ---------------------------------------------------------------------------

struct CliResult {
  bool timed_out = false;
  bool exited = false;  // false: ended by a signal
  int exit_code = -1;
  int signal = 0;
  std::string out, err;
  std::string describe() const {
    std::ostringstream s;
    s << (timed_out ? "TIMED OUT; " : "") << (exited ? "exit " + std::to_string(exit_code) : "signal " + std::to_string(signal))
      << "\n--- stdout:\n" << out << "--- stderr:\n" << err << "---";
    return s.str();
  }
};

class CliProcess {
 public:
  // Starts the CLI with `args`; stdout/stderr go to files in `capture_dir`,
  // stdin comes from `stdin_path`.
  CliProcess(const std::vector<std::string>& args, const std::filesystem::path& capture_dir,
             const std::string& stdin_path = "/dev/null") {
    static std::atomic<int> n{0};
    const int id = n++;
    out_path_ = (capture_dir / ("stdout_" + std::to_string(id) + ".txt")).string();
    err_path_ = (capture_dir / ("stderr_" + std::to_string(id) + ".txt")).string();
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, stdin_path.c_str(), O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&fa, STDOUT_FILENO, out_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_addopen(&fa, STDERR_FILENO, err_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    std::vector<std::string> all{kCli};
    all.insert(all.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (auto& a : all) argv.push_back(a.data());
    argv.push_back(nullptr);
    const int rc = posix_spawn(&pid_, kCli, &fa, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&fa);
    if (rc != 0) throw std::runtime_error(std::string("cannot start ") + kCli + ": " + std::strerror(rc));
  }
  ~CliProcess() {
    if (pid_ > 0 && !done_) {
      ::kill(pid_, SIGKILL);
      int st = 0;
      ::waitpid(pid_, &st, 0);
    }
    std::error_code ec;
    std::filesystem::remove(out_path_, ec);
    std::filesystem::remove(err_path_, ec);
  }
  pid_t pid() const { return pid_; }
  // True when the process has ended (reaped; result() then reports it).
  bool poll() {
    if (done_) return true;
    const pid_t r = ::waitpid(pid_, &status_, WNOHANG);
    if (r == pid_) done_ = true;
    return done_;
  }
  CliResult wait(std::chrono::seconds timeout = std::chrono::seconds(60)) {
    CliResult res;
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (!poll()) {
      if (std::chrono::steady_clock::now() > deadline) {
        ::kill(pid_, SIGKILL);
        ::waitpid(pid_, &status_, 0);
        done_ = true;
        res.timed_out = true;
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    res.exited = WIFEXITED(status_);
    res.exit_code = res.exited ? WEXITSTATUS(status_) : -1;
    res.signal = WIFSIGNALED(status_) ? WTERMSIG(status_) : 0;
    res.out = bytes_of(out_path_);
    res.err = bytes_of(err_path_);
    return res;
  }

 private:
  pid_t pid_ = -1;
  int status_ = 0;
  bool done_ = false;
  std::string out_path_, err_path_;
};

// Captures go to their own folder so they never show in a test's listing.
inline const std::filesystem::path& capture_dir() {
  static const std::filesystem::path dir = [] {
    std::filesystem::path d = std::filesystem::temp_directory_path() / ("streamblur_cli_capture_" + std::to_string(::getpid()));
    std::filesystem::create_directories(d);
    return d;
  }();
  return dir;
}

struct CaptureCleanup {
  ~CaptureCleanup() {
    std::error_code ec;
    std::filesystem::remove_all(capture_dir(), ec);
  }
};
inline CaptureCleanup capture_cleanup;

inline CliResult run_cli(const std::vector<std::string>& args) { return CliProcess(args, capture_dir()).wait(); }
// The same with standard input read from `stdin_path`.
inline CliResult run_cli_stdin(const std::vector<std::string>& args, const std::string& stdin_path) {
  return CliProcess(args, capture_dir(), stdin_path).wait();
}

}  // namespace sbtest
