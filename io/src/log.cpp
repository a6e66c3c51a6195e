#include "streamblur/io/log.hpp"

extern "C" {
#include <libavutil/log.h>
}

#include <algorithm>
#include <cstdio>
#include <mutex>

namespace streamblur::io {
namespace {

std::mutex g_mutex;
std::string g_last_error;
int g_print_level = AV_LOG_QUIET;

void log_callback(void* avcl, int level, const char* fmt, va_list args) {
  if (level > std::max(g_print_level, AV_LOG_ERROR)) return;
  char line[1024];
  int print_prefix = 1;
  av_log_format_line2(avcl, level, fmt, args, line, sizeof line, &print_prefix);
  std::string text(line);
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
  std::lock_guard<std::mutex> lock(g_mutex);
  if (level <= AV_LOG_ERROR && !text.empty()) g_last_error = text;
  if (level <= g_print_level) std::fprintf(stderr, "%s\n", text.c_str());
}

}  // namespace

void install_log_capture(int print_level) {
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    g_print_level = print_level;
  }
  av_log_set_level(std::max(print_level, AV_LOG_ERROR));
  av_log_set_callback(log_callback);
}

std::string take_last_log_error() {
  std::lock_guard<std::mutex> lock(g_mutex);
  std::string s;
  s.swap(g_last_error);
  return s;
}

}  // namespace streamblur::io
