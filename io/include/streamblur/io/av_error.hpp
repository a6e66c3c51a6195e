#pragma once
// FFmpeg errors as exceptions: AVError, and AV_CHECK for calls that return a
// negative AVERROR code on failure.
#include <stdexcept>
#include <string>
#include <utility>

namespace streamblur::io {

// Error from FFmpeg: what failed and FFmpeg's own message; location() is
// where in streamblur's source it was raised ("reader.cpp:226"; may be empty),
// for a verbose report.
class AVError : public std::runtime_error {
 public:
  AVError(const std::string& what, int code, std::string location = {})
      : std::runtime_error(what), code_(code), location_(std::move(location)) {}
  int code() const noexcept { return code_; }
  const std::string& location() const noexcept { return location_; }
 private:
  int code_;
  std::string location_;
};

// FFmpeg's message for an AVERROR code (av_strerror).
std::string av_error_string(int code);

// Throws AVError("<context>: <call text> failed: <ffmpeg message>"), located at file:line.
[[noreturn]] void throw_av_error(int code, const char* call, const char* file, int line, const std::string& context);

}  // namespace streamblur::io

// AV_CHECK(call) / AV_CHECK_CTX(call, context): throw AVError on a negative return.
#define AV_CHECK_CTX(call, context)                                                 \
  do {                                                                             \
    const int sb_av_rc_ = (call);                                                  \
    if (sb_av_rc_ < 0)                                                             \
      ::streamblur::io::throw_av_error(sb_av_rc_, #call, __FILE__, __LINE__, (context)); \
  } while (0)
#define AV_CHECK(call) AV_CHECK_CTX(call, std::string())
