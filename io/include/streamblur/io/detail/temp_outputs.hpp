#pragma once
// The hidden temporary outputs being written right now, kept where a signal
// handler can reach them: a program that must end at once (a second Ctrl-C,
// a second SIGTERM) removes them with only async-signal-safe calls, so no
// partial output is ever left behind. OutputFile registers its files here and
// the CLI's signal handler removes them. A detail header: in the source tree
// only, never installed (cmake/install.cmake), not part of the API.
#include <string>

namespace streamblur::io {

// Registers `path`; returns its slot, or -1 when the table is full or the path
// too long (the file is then only removed by the normal error path). A
// `directory` (the hidden folder an image sequence is written into) is
// removed with the files directly inside it.
int register_temp_output(const std::string& path, bool directory = false) noexcept;
// The file was renamed or removed: forget it.
void unregister_temp_output(int slot) noexcept;
// Async-signal-safe: unlink()s every registered file (and empties and
// removes every registered folder). For a signal handler that is about to call _exit().
void remove_temp_outputs_in_signal_handler() noexcept;

}  // namespace streamblur::io
