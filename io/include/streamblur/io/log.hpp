#pragma once
// FFmpeg's log, routed through streamblur: the programs stay quiet unless
// asked, and errors can quote what FFmpeg logged (libx264's reasons, say,
// which reach the caller only as "Generic error in an external library").
#include <string>

namespace streamblur::io {

// Installs a process-wide av_log callback: lines at or below `print_level`
// (an AV_LOG_* level; AV_LOG_QUIET prints nothing) go to stderr, and the last
// error-level line is kept for take_last_log_error().
void install_log_capture(int print_level);

// The last error-level line FFmpeg logged since the previous call (then
// cleared); empty when none, or when install_log_capture() was not called.
std::string take_last_log_error();

}  // namespace streamblur::io
