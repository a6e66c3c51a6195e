#pragma once
// What the CLI tells the user and its supervisors: error lines, the stop
// signals and exit status, the progress line on a terminal, and ffmpeg's
// -progress key=value lines.
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <memory>
#include <string>
#include <vector>

namespace streamblur::cli {

// An error as the user sees it: the library's message, then what to do where
// the CLI has a flag for it ("use -y to overwrite"), and with -v the place in
// streamblur's source that raised it.
std::string shown_error(const std::exception& e, bool verbose);
// The same for a message kept as text (a batch file's error).
std::string shown_error(const std::string& what, bool output_exists, bool verbose);

// The stop flag the signal handlers set (SIGINT, SIGTERM, SIGHUP: the first
// stops reading and lets the run finish what is in flight; a second ends the
// program at once, removing the hidden temporary outputs first).
extern std::atomic<bool> g_stop;
void install_stop_handlers();
// The exit status of a run a signal stopped: 128 + the signal (130 for Ctrl-C).
int interrupted_status();

// "H:MM:SS", or "--:--" when unknown.
std::string clock_text(double seconds);

// ffmpeg's -progress: blocks of key=value lines ending in progress=continue,
// and a last one ending in progress=end. The URL is a file (an output as any
// other: never an input, never replaced without -y, written as the run goes
// and removed when the run fails), "-" or "pipe:1" (standard output), or
// "pipe:2" (standard error).
class ProgressWriter {
 public:
  // Opens the URL (throws std::runtime_error naming it when it cannot).
  ProgressWriter(const std::string& url, bool overwrite, const std::vector<std::string>& inputs);
  ~ProgressWriter();  // removes a file it created unless keep() was called
  ProgressWriter(const ProgressWriter&) = delete;
  ProgressWriter& operator=(const ProgressWriter&) = delete;

  // One block: frames done, frames/s, the last frame's media time, the speed
  // against the wall clock, and whether it is the last.
  void write(int64_t frames, double fps, double media_time_s, double elapsed_s, bool final);
  void keep() noexcept { keep_ = true; }
  // Whether the URL is standard output (which then cannot be the video too).
  static bool is_stdout(const std::string& url) { return url == "-" || url == "pipe:1" || url == "pipe:"; }

 private:
  std::FILE* file_ = nullptr;
  bool owned_ = false;  // a file this run created (closed, and removed unless kept)
  bool keep_ = false;
  std::string path_;
};

}  // namespace streamblur::cli
