#include "streamblur/io/output_file.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <climits>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <map>
#include <regex>

#include "streamblur/io/stream_metadata.hpp"
#include "streamblur/io/writer.hpp"
#include "streamblur/io/detail/temp_outputs.hpp"

namespace streamblur::io {
namespace fs = std::filesystem;

namespace {

std::string in_quotes(const std::string& s) { return "'" + s + "'"; }

std::runtime_error cannot_write(const std::string& what, const std::string& path, const std::string& why) {
  return std::runtime_error("cannot write " + what + " " + in_quotes(path) + ": " + why);
}

bool starts_with(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

std::string folder_of(const std::string& path) {
  const fs::path dir = fs::path(path).parent_path();
  return dir.empty() ? std::string(".") : dir.string();
}

bool is_sequence(const std::string& path) { return io::is_sequence_pattern(fs::path(path).filename().string()); }

std::string read_link(const std::string& path) {
  std::string buf(4096, '\0');
  const ssize_t n = ::readlink(path.c_str(), buf.data(), buf.size());
  if (n < 0) return {};
  buf.resize(static_cast<std::size_t>(n));
  return buf;
}

// The folder of `path` with its links followed ("" when it cannot be read).
std::string real_folder(const std::string& path) {
  char buf[PATH_MAX];
  return ::realpath(folder_of(path).c_str(), buf) ? std::string(buf) + "/" : std::string();
}

// What a path turns out to be once its links are followed.
struct Resolved {
  OutputKind kind = OutputKind::File;
  std::string target;     // the file written (links followed); the path itself for streams
  bool replaces = false;  // writing it destroys data there: an existing regular file, a block device
};

std::string first_frame_of(const std::string& pattern) {
  const fs::path p(pattern);
  return (p.parent_path() / io::sequence_file_name(p.filename().string(), 1)).string();
}

Resolved resolve_sequence(const std::string& path) {
  struct stat st {};
  return {OutputKind::Sequence, path, ::lstat(first_frame_of(path).c_str(), &st) == 0};
}

// Follows `path`'s symbolic links to the file that would be written. A link
// into /proc (/dev/stdout, /dev/fd/N) names an open descriptor: written through.
Resolved resolve(const std::string& path, const std::string& what) {
  if (path == "-" || is_network_url(path)) return {OutputKind::Stream, path, false};
  if (is_sequence(path)) return resolve_sequence(path);
  std::string p = path;
  for (int hops = 0;; ++hops) {
    struct stat st {};
    if (starts_with(p, "/proc/") || starts_with(real_folder(p), "/proc/")) {
      if (::stat(p.c_str(), &st) != 0) throw cannot_write(what, path, std::strerror(errno));
      return {OutputKind::Stream, path, false};
    }
    if (::lstat(p.c_str(), &st) != 0) {
      if (errno == ENOENT) return {OutputKind::File, p, false};
      throw cannot_write(what, path, std::strerror(errno));
    }
    if (S_ISLNK(st.st_mode)) {
      if (hops >= 40) throw cannot_write(what, path, "too many levels of symbolic links");
      std::string link = read_link(p);
      if (link.empty()) throw cannot_write(what, path, "cannot read the symbolic link " + in_quotes(p));
      p = link[0] == '/' ? link : (fs::path(p).parent_path() / link).string();
      continue;
    }
    if (S_ISREG(st.st_mode)) return {OutputKind::File, p, true};
    if (S_ISFIFO(st.st_mode) || S_ISCHR(st.st_mode)) return {OutputKind::Stream, path, false};
    if (S_ISBLK(st.st_mode)) return {OutputKind::Stream, path, true};
    if (S_ISDIR(st.st_mode)) throw cannot_write(what, path, "it is a folder");
    throw cannot_write(what, path, "it is a socket or another special file that cannot be written");
  }
}

bool env_flag(const char* name) {
  const char* v = std::getenv(name);
  return v && *v && std::strcmp(v, "0") != 0;
}

void default_note(const std::string& s) { std::cerr << s << "\n"; }

// Temporaries of runs that were killed: ".NAME.streamblur-PID[-N][.EXT]" whose
// process PID has gone. Another run's live temporaries are left alone.
void remove_stale_temporaries(const std::string& dir, const std::function<void(const std::string&)>& note) {
  static const std::regex name_re(R"(^\..*\.streamblur-([0-9]{1,9})(-[0-9]+)?(\.[A-Za-z0-9_]*)?$)");
  DIR* d = ::opendir(dir.c_str());
  if (!d) return;
  std::vector<std::pair<std::string, long>> stale;
  while (const dirent* e = ::readdir(d)) {
    std::cmatch m;
    if (!std::regex_match(e->d_name, m, name_re)) continue;
    const long pid = std::strtol(m[1].first, nullptr, 10);
    if (pid <= 0 || pid == ::getpid()) continue;
    if (::kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH) continue;  // alive (or not ours to ask)
    stale.emplace_back(e->d_name, pid);
  }
  ::closedir(d);
  for (const auto& [name, pid] : stale) {
    const fs::path p = fs::path(dir) / name;
    std::error_code ec;
    fs::remove_all(p, ec);
    if (!ec)
      (note ? note : default_note)("note: removed " + in_quotes(p.string()) + ", a temporary output left by an earlier run (process " +
                                   std::to_string(pid) + ") that did not finish");
  }
}

// ".NAME.streamblur-PID-N.EXT" beside `target`, unique within the process.
std::string named_temporary(const std::string& target, bool folder) {
  static std::atomic<int> counter{0};
  const fs::path t(target);
  std::string name = folder ? t.stem().string() : t.filename().string();
  for (char& c : name)
    if (c == '%') c = '_';  // a sequence's folder must not look like a pattern
  const std::string ext = folder ? std::string() : t.extension().string();
  return (fs::path(folder_of(target)) /
          ("." + name + ".streamblur-" + std::to_string(::getpid()) + "-" + std::to_string(counter++) + ext))
      .string();
}

// Renames without replacing: false with errno EEXIST when `to` exists.
bool rename_noreplace(const std::string& from, const std::string& to) {
  if (::renameat2(AT_FDCWD, from.c_str(), AT_FDCWD, to.c_str(), RENAME_NOREPLACE) == 0) return true;
  if (errno != EINVAL && errno != ENOSYS && errno != ENOTSUP) return false;
  // A filesystem without RENAME_NOREPLACE: link (which never replaces), then unlink.
  if (::link(from.c_str(), to.c_str()) != 0) return false;
  ::unlink(from.c_str());
  return true;
}

std::string fd_path(int fd) { return "/proc/self/fd/" + std::to_string(fd); }

}  // namespace

std::string path_identity(const std::string& path, bool input) {
  if (is_network_url(path)) return "u:" + path;
  struct stat st {};
  const bool found = path == "-" ? ::fstat(input ? STDIN_FILENO : STDOUT_FILENO, &st) == 0 : ::stat(path.c_str(), &st) == 0;
  if (found) {
    if (S_ISCHR(st.st_mode)) return {};
    return "i:" + std::to_string(st.st_dev) + ":" + std::to_string(st.st_ino);
  }
  std::error_code ec;
  fs::path abs = fs::absolute(path, ec);
  if (ec) abs = path;
  const fs::path canon = fs::weakly_canonical(abs, ec);
  return "p:" + (ec ? abs.lexically_normal() : canon).string();
}

bool same_file(const std::string& a, const std::string& b, bool a_is_input) {
  const std::string x = path_identity(a, a_is_input);
  return !x.empty() && x == path_identity(b);
}

void check_outputs(const std::vector<NamedOutput>& outputs, const OutputRules& rules) {
  std::map<std::string, const std::string*> inputs;  // identity -> input as given
  for (const std::string& in : rules.inputs)
    if (std::string id = path_identity(in, true); !id.empty()) inputs.emplace(id, &in);
  std::map<std::string, const NamedOutput*> seen;
  for (const NamedOutput& out : outputs) {
    if (out.path.empty()) throw std::runtime_error("the " + out.what + " path is empty");
    const std::string id = path_identity(out.path);
    if (auto it = inputs.find(id); it != inputs.end())
      throw std::runtime_error(out.what + " " + in_quotes(out.path) + " is the input file" +
                               (*it->second == out.path ? std::string() : " " + in_quotes(*it->second)) +
                               "; choose another " + out.what);
    if (id.empty()) continue;
    if (auto [it, fresh] = seen.emplace(id, &out); !fresh)
      throw std::runtime_error("the " + it->second->what + " " + in_quotes(it->second->path) + " and the " + out.what + " " +
                               in_quotes(out.path) + " are one file; choose different paths");
    const Resolved r = resolve(out.path, out.what);
    if (r.replaces && !rules.overwrite)
      throw OutputExistsError(out.what + " " + in_quotes(out.path) + " already exists" +
                              (r.kind == OutputKind::Sequence ? " (" + in_quotes(first_frame_of(out.path)) + ")" : "") +
                              "; overwriting was not asked for");
  }
}

OutputFile::OutputFile(const std::string& path, const std::string& what, const OutputRules& rules)
    : path_(path), what_(what), overwrite_(rules.overwrite) {
  check_outputs({{path, what}}, rules);
  const Resolved r = resolve(path, what);
  kind_ = r.kind;
  target_ = r.target;
  if (kind_ == OutputKind::Stream) {
    if (is_network_url(path)) {
      url_ = path;  // FFmpeg's protocol opens it when the writer starts
      return;
    }
    if (path != "-" && ::access(path.c_str(), W_OK) != 0) throw cannot_write(what_, path_, std::strerror(errno));
    url_ = path == "-" ? "pipe:1" : "file:" + path;
    return;
  }
  remove_stale_temporaries(folder_of(target_), rules.note);
  if (kind_ == OutputKind::Sequence) {
    temp_ = named_temporary(target_, true);
    if (::mkdir(temp_.c_str(), 0777) != 0) {
      const std::string why = std::strerror(errno);
      temp_.clear();
      throw cannot_write(what_, path_, "cannot create a folder in " + in_quotes(folder_of(target_)) + ": " + why);
    }
    slot_ = register_temp_output(temp_, true);
    url_ = (fs::path(temp_) / fs::path(path).filename()).string();
    return;
  }
  open_temporary();
}

void OutputFile::open_temporary() {
  const std::string dir = folder_of(target_);
  const auto fail = [&](int err) {
    if (err == ENOENT) return cannot_write(what_, path_, "the folder " + in_quotes(dir) + " does not exist");
    return cannot_write(what_, path_, std::strerror(err));
  };
  if (!env_flag("STREAMBLUR_NAMED_TEMPORARIES")) {
    fd_ = ::open(dir.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0666);
    if (fd_ >= 0 && ::access(fd_path(fd_).c_str(), W_OK) == 0) {
      url_ = "file:" + fd_path(fd_);
      return;
    }
    const int err = errno;
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
    // No unnamed files here (EOPNOTSUPP, EISDIR on old kernels) or no /proc:
    // a named temporary instead. Anything else is the folder's own fault.
    if (err == ENOENT || err == EACCES || err == EROFS || err == ENOSPC || err == EDQUOT || err == ENOTDIR) throw fail(err);
  }
  temp_ = named_temporary(target_, false);
  fd_ = ::open(temp_.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  if (fd_ < 0) {
    const int err = errno;
    temp_.clear();
    throw fail(err);
  }
  slot_ = register_temp_output(temp_);
  url_ = "file:" + temp_;
}

OutputFile::~OutputFile() { discard(); }

void OutputFile::discard() noexcept {
  if (fd_ >= 0) ::close(fd_);  // an unnamed temporary vanishes here
  fd_ = -1;
  if (!temp_.empty()) {  // a file's is cleared once it has its name; a sequence's folder is empty then
    std::error_code ec;
    if (kind_ == OutputKind::Sequence) fs::remove_all(temp_, ec);
    else ::unlink(temp_.c_str());
    temp_.clear();
  }
  unregister_temp_output(slot_);
  slot_ = -1;
}

void OutputFile::write(const std::string& text) {
  if (kind_ == OutputKind::Sequence) throw std::logic_error("OutputFile::write on an image sequence");
  int fd = fd_;
  if (is_network_url(path_)) throw cannot_write(what_, path_, "text is written to files and pipes, not to network URLs");
  if (kind_ == OutputKind::Stream) {
    fd = path_ == "-" ? ::dup(STDOUT_FILENO) : ::open(path_.c_str(), O_WRONLY | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) throw cannot_write(what_, path_, std::strerror(errno));
  }
  int err = 0;
  for (std::size_t done = 0; done < text.size() && !err;) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) err = n < 0 ? errno : EIO;
    else done += static_cast<std::size_t>(n);
  }
  if (kind_ == OutputKind::Stream && ::close(fd) != 0 && !err) err = errno;
  if (err) throw cannot_write(what_, path_, std::strerror(err));
}

void OutputFile::commit(int64_t frames) {
  if (committed_) return;
  try {
    if (kind_ == OutputKind::File) commit_file();
    if (kind_ == OutputKind::Sequence) commit_sequence(frames);
  } catch (...) {
    discard();  // a commit that failed is a failed run: nothing is left
    throw;
  }
  committed_ = true;
  discard();
}

void OutputFile::commit_file() {
  const auto exists_now = [&] {
    return OutputExistsError(what_ + " " + in_quotes(path_) +
                             " was created by something else while this run wrote it; it was not replaced, as "
                             "overwriting was not asked for");
  };
  if (!temp_.empty()) {
    if (overwrite_ ? ::rename(temp_.c_str(), target_.c_str()) == 0 : rename_noreplace(temp_, target_)) {
      temp_.clear();
      return;
    }
    if (errno == EEXIST) throw exists_now();
    throw cannot_write(what_, path_, std::string("cannot move the finished file into place: ") + std::strerror(errno));
  }
  // An unnamed temporary gets its name by linkat, which never replaces: with
  // overwriting, it is linked under a hidden name and renamed over the target.
  const std::string link_name = overwrite_ ? named_temporary(target_, false) : target_;
  int rc = ::linkat(fd_, "", AT_FDCWD, link_name.c_str(), AT_EMPTY_PATH);  // needs CAP_DAC_READ_SEARCH
  if (rc != 0 && errno != EEXIST) rc = ::linkat(AT_FDCWD, fd_path(fd_).c_str(), AT_FDCWD, link_name.c_str(), AT_SYMLINK_FOLLOW);
  if (rc != 0) {
    if (errno == EEXIST && !overwrite_) throw exists_now();
    throw cannot_write(what_, path_, std::string("cannot give the finished file its name: ") + std::strerror(errno));
  }
  if (overwrite_ && ::rename(link_name.c_str(), target_.c_str()) != 0) {
    const std::string why = std::strerror(errno);
    ::unlink(link_name.c_str());
    throw cannot_write(what_, path_, "cannot move the finished file into place: " + why);
  }
}

// The last frame first and frame 1 last: a run cut short while moving leaves
// no sequence that starts at 1. A frame that cannot be moved (one appeared at
// its name, without overwriting) takes back the frames already moved.
void OutputFile::commit_sequence(int64_t frames) {
  const fs::path out(path_);
  const std::string pattern = out.filename().string();
  std::vector<fs::path> moved;
  for (int64_t n = frames; n >= 1; --n) {
    const std::string name = io::sequence_file_name(pattern, static_cast<int>(n));
    const fs::path from = fs::path(temp_) / name, to = out.parent_path() / name;
    if (overwrite_ ? ::rename(from.c_str(), to.c_str()) == 0 : rename_noreplace(from, to)) {
      moved.push_back(to);
      continue;
    }
    const int err = errno;
    if (!overwrite_)
      for (const fs::path& p : moved) ::unlink(p.c_str());
    if (err == EEXIST)
      throw OutputExistsError(what_ + " " + in_quotes(path_) + ": frame " + in_quotes(to.string()) +
                              " was created by something else while this run wrote it; nothing was replaced, as "
                              "overwriting was not asked for");
    throw cannot_write(what_, path_, "cannot move frame " + std::to_string(n) + " to " + in_quotes(to.string()) + ": " +
                                         std::strerror(err));
  }
}

}  // namespace streamblur::io
