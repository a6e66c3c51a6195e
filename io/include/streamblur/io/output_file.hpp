#pragma once
// Every file streamblur writes (a video, an image sequence, a stats file, a
// batch summary) is written through OutputFile, which holds the rules in one
// place:
// - an input is never written, and no two outputs of one run are one file,
//   however either is spelled (links, "..", relative paths);
// - an existing file is replaced only when overwriting was asked for; without
//   it, a file that appears at the path during the run is not replaced either
//   (the final link or rename refuses to replace);
// - special files are written straight through and never replaced: "-"
//   (standard output), FIFOs, character and block devices, and the
//   /proc/self/fd links behind /dev/stdout and /dev/fd/N;
// - a symbolic link is followed: its target is written, the link stays;
// - a regular file is written to an unnamed temporary (O_TMPFILE) in its
//   folder and linked into place by commit(), so a failed, interrupted or
//   killed run leaves nothing. Where the filesystem has no unnamed files, the
//   temporary is a hidden ".NAME.streamblur-PID-N.EXT" beside the target; a
//   second Ctrl-C removes it (detail/temp_outputs.hpp), and after a kill -9 the next
//   run writing into that folder removes it once process PID has gone, with a
//   note. An image sequence is written into such a hidden folder.
#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

namespace streamblur::io {

// The output exists, or appeared during the run, and overwriting was not asked for.
class OutputExistsError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// What kind of thing an OutputFile writes.
enum class OutputKind {
  File,      // a regular file, new or replaced: a temporary until commit()
  Sequence,  // an image sequence (out%03d.png): a hidden folder until commit()
  Stream,    // "-", a FIFO, a device, a /proc/self/fd link: written through
};

// How one run's outputs may be written.
struct OutputRules {
  bool overwrite = false;           // an existing regular file (or block device) may be replaced
  std::vector<std::string> inputs;  // paths that are read by the run and must never be written
  // Receives a line for each stale temporary removed; default: stderr.
  std::function<void(const std::string&)> note;
};

// An output of one run and what it is, for messages ("output", "stats file").
struct NamedOutput {
  std::string path;
  std::string what;
};

// What a path names, for telling whether two paths are one file however they
// are spelled: "i:DEV:INODE" when it exists, else "p:" and its absolute path
// with the links of its existing part followed. "-" is standard output (or
// standard input, for an input). A character device (/dev/null) gets "": it
// is never "the same" as another path, as writing it twice destroys nothing.
std::string path_identity(const std::string& path, bool input = false);
bool same_file(const std::string& a, const std::string& b, bool a_is_input = false);

// Checks every output of one run before anything is written: none is an
// input, no two are one file, none exists unless rules.overwrite. Throws
// OutputExistsError, or std::runtime_error naming the path and what it is.
void check_outputs(const std::vector<NamedOutput>& outputs, const OutputRules& rules);

// One output being written: checked at once, put in place by commit() (rules above).
class OutputFile {
 public:
  // Checks `path` as check_outputs does, removes stale temporaries of dead
  // runs in its folder, and creates the temporary (or opens nothing yet, for a
  // stream), so an unwritable path fails here, before any work. Throws as
  // check_outputs, or std::runtime_error "cannot write WHAT 'PATH': why".
  OutputFile(const std::string& path, const std::string& what, const OutputRules& rules);
  ~OutputFile();  // removes the temporary unless commit() succeeded
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;

  OutputKind kind() const noexcept { return kind_; }
  const std::string& path() const noexcept { return path_; }
  // Where FFmpeg writes the content (avio_open): "pipe:1", "file:..." (the
  // temporary, or the special file); for a sequence, the pattern in its folder.
  const std::string& url() const noexcept { return url_; }

  // Writes `text` as the whole content (side outputs written by streamblur
  // itself). Throws std::runtime_error naming the path on failure.
  void write(const std::string& text);
  // Puts the finished output in place: links or renames the temporary (never
  // replacing a file unless overwriting was asked for: OutputExistsError),
  // moves a sequence's `frames` frames out of its folder (the last first), or
  // does nothing for a stream.
  void commit(int64_t frames = 0);

 private:
  void open_temporary();
  void commit_file();
  void commit_sequence(int64_t frames);
  void discard() noexcept;

  std::string path_, what_, url_;
  std::string target_;   // the file written at the end: path_ with its links followed
  std::string temp_;     // named temporary file or sequence folder ("" when unnamed)
  OutputKind kind_ = OutputKind::File;
  bool overwrite_ = false;
  bool committed_ = false;
  int fd_ = -1;          // the temporary's descriptor (File)
  int slot_ = -1;        // detail/temp_outputs.hpp registry slot of temp_
};

}  // namespace streamblur::io
