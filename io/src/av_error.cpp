#include "streamblur/io/av_error.hpp"

extern "C" {
#include <libavutil/error.h>
}

#include <cstring>

namespace streamblur::io {

std::string av_error_string(int code) {
  char buf[AV_ERROR_MAX_STRING_SIZE] = {};
  if (av_strerror(code, buf, sizeof buf) < 0) return "error " + std::to_string(code);
  return buf;
}

namespace {
// Messages are one line: the stringised call text of a macro argument that
// spanned lines holds no newline, but be safe with anything that comes in.
std::string one_line(std::string s) {
  for (char& c : s)
    if (c == '\n' || c == '\r') c = ' ';
  return s;
}
}  // namespace

void throw_av_error(int code, const char* call, const char* file, int line, const std::string& context) {
  const char* base = std::strrchr(file, '/');
  base = base ? base + 1 : file;
  std::string msg;
  if (!context.empty()) msg = context + ": ";
  msg += std::string(call) + " failed: " + av_error_string(code);
  throw AVError(one_line(std::move(msg)), code, std::string(base) + ":" + std::to_string(line));
}

}  // namespace streamblur::io
