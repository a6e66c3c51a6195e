#include "cli_report.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <stdexcept>

#include "streamblur/io/av_error.hpp"
#include "streamblur/config.hpp"
#if STREAMBLUR_HAVE_CUDA
#include "streamblur/kernels/cuda_check.hpp"
#endif
#include "streamblur/io/detail/temp_outputs.hpp"
#include "streamblur/io/output_file.hpp"

namespace streamblur::cli {

namespace {
// The library says an output exists without overwriting; the CLI names the flag.
constexpr const char* kUseY = " (use -y to overwrite)";

std::string location_of(const std::exception& e) {
  if (const auto* av = dynamic_cast<const io::AVError*>(&e)) return av->location();
#if STREAMBLUR_HAVE_CUDA
  if (const auto* cu = dynamic_cast<const cuda::CudaError*>(&e)) return cu->location();
#endif
  return "";
}
}  // namespace

std::string shown_error(const std::exception& e, bool verbose) {
  std::string line = shown_error(e.what(), dynamic_cast<const io::OutputExistsError*>(&e) != nullptr, false);
  if (verbose) {
    if (const std::string where = location_of(e); !where.empty()) line += " (at " + where + ")";
  }
  return line;
}

std::string shown_error(const std::string& what, bool output_exists, bool /*verbose*/) {
  return what + (output_exists ? kUseY : "");
}

std::atomic<bool> g_stop{false};

namespace {
std::atomic<int> g_signals{0};
std::atomic<int> g_first_signal{SIGINT};

extern "C" void on_stop_signal(int sig) {
  if (g_signals.fetch_add(1) == 0) g_first_signal.store(sig);
  g_stop.store(true);
  if (g_signals.load() > 1) {
    io::remove_temp_outputs_in_signal_handler();
    ::_exit(128 + sig);
  }
}
}  // namespace

void install_stop_handlers() {
  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) sigaction(sig, &sa, nullptr);
}

int interrupted_status() { return 128 + g_first_signal.load(); }

std::string clock_text(double s) {
  if (!(s >= 0) || s > 1e7) return "--:--";
  const long t = static_cast<long>(s + 0.5);
  char buf[32];
  std::snprintf(buf, sizeof buf, "%ld:%02ld:%02ld", t / 3600, (t / 60) % 60, t % 60);
  return buf;
}

namespace {

// A new regular file (or, with overwrite, a replaced one) for writing as the
// run goes; a FIFO or a device is written through.
std::FILE* open_progress_file(const std::string& path, bool overwrite, bool& owned) {
  struct stat st {};
  const bool exists = ::stat(path.c_str(), &st) == 0;
  if (exists && S_ISDIR(st.st_mode)) throw std::runtime_error("cannot write progress file '" + path + "': it is a folder");
  owned = !exists || S_ISREG(st.st_mode);
  if (exists && S_ISREG(st.st_mode) && !overwrite)
    throw io::OutputExistsError("progress file '" + path + "' exists");
  int flags = O_WRONLY | O_CLOEXEC;
  if (owned) flags |= O_CREAT | (exists ? O_TRUNC : O_EXCL);
  const int fd = ::open(path.c_str(), flags, 0644);
  if (fd < 0) throw std::runtime_error("cannot write progress file '" + path + "': " + std::strerror(errno));
  std::FILE* f = ::fdopen(fd, "w");
  if (!f) {
    ::close(fd);
    throw std::runtime_error("cannot write progress file '" + path + "': " + std::strerror(errno));
  }
  return f;
}

std::string out_time_text(int64_t us) {
  char buf[64];
  const int64_t s = us / 1000000;
  std::snprintf(buf, sizeof buf, "%02lld:%02lld:%02lld.%06lld", static_cast<long long>(s / 3600),
                static_cast<long long>(s / 60 % 60), static_cast<long long>(s % 60), static_cast<long long>(us % 1000000));
  return buf;
}

}  // namespace

ProgressWriter::ProgressWriter(const std::string& url, bool overwrite, const std::vector<std::string>& inputs) {
  if (is_stdout(url)) {
    file_ = stdout;
    return;
  }
  if (url == "pipe:2") {
    file_ = stderr;
    return;
  }
  path_ = url.rfind("file:", 0) == 0 ? url.substr(5) : url;
  io::check_outputs({{path_, "progress file"}}, {true, inputs, {}});
  file_ = open_progress_file(path_, overwrite, owned_);
}

ProgressWriter::~ProgressWriter() {
  if (!owned_ || !file_) return;
  std::fclose(file_);
  if (!keep_) ::unlink(path_.c_str());
}

void ProgressWriter::write(int64_t frames, double fps, double media_time_s, double elapsed_s, bool final) {
  const int64_t us = media_time_s > 0 ? static_cast<int64_t>(media_time_s * 1e6 + 0.5) : 0;
  std::fprintf(file_, "frame=%lld\nfps=%.2f\n", static_cast<long long>(frames), fps);
  // ffmpeg writes out_time_ms in microseconds too; readers rely on it.
  std::fprintf(file_, "out_time_us=%lld\nout_time_ms=%lld\nout_time=%s\n", static_cast<long long>(us),
               static_cast<long long>(us), out_time_text(us).c_str());
  std::fprintf(file_, "dup_frames=0\ndrop_frames=0\n");
  if (elapsed_s > 0 && media_time_s > 0) std::fprintf(file_, "speed=%.3gx\n", media_time_s / elapsed_s);
  else std::fprintf(file_, "speed=N/A\n");
  std::fprintf(file_, "progress=%s\n", final ? "end" : "continue");
  std::fflush(file_);
}

}  // namespace streamblur::cli
