// Every file streamblur writes keeps the same promises (output_file.hpp): the
// input is never touched, no existing file is replaced without overwriting,
// special files are written through, a failed or killed run leaves nothing.
// First the rules one at a time (OutputFile, check_outputs), then the real
// binary (STREAMBLUR_CLI_PATH) on each case of issue 41 that lost data.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli_support.hpp"
#include "streamblur/io/reader.hpp"
#include "streamblur/pipeline/detail/test_hooks.hpp"
#include "streamblur/io/output_file.hpp"
#include "streamblur/pipeline/pipeline.hpp"
#include "streamblur/testing/synthetic_clip.hpp"
#include "test_support.hpp"

namespace fs = std::filesystem;
using namespace streamblur;
using namespace sbtest;

namespace {


void write_text(const std::string& path, const std::string& text) { std::ofstream(path, std::ios::binary) << text; }

bool is_link(const std::string& p) { return fs::is_symlink(fs::symlink_status(p)); }

// A process id that is certainly not running: a child that has exited and been reaped.
pid_t dead_pid() {
  const pid_t pid = ::fork();
  if (pid == 0) ::_exit(0);
  int st = 0;
  ::waitpid(pid, &st, 0);
  return pid;
}

// Sets an environment variable for the scope (the CLI children inherit it).
struct ScopedEnv {
  std::string name;
  ScopedEnv(const char* n, const char* v) : name(n) { ::setenv(n, v, 1); }
  ~ScopedEnv() { ::unsetenv(name.c_str()); }
};

// Reads a FIFO to its end on a thread. It holds a write end of its own until
// finish(), so the reader never blocks in open() and still sees the end when
// the program under test never opened the FIFO (or replaced it).
class FifoReader {
 public:
  explicit FifoReader(const std::string& path)
      : read_fd_(::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC)),
        keep_open_(::open(path.c_str(), O_WRONLY | O_CLOEXEC)) {
    ::fcntl(read_fd_, F_SETFL, 0);  // blocking reads from here on
    got_ = std::async(std::launch::async, [fd = read_fd_] {
      std::string all;
      char buf[65536];
      for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) != 0;)
        if (n > 0) all.append(buf, static_cast<std::size_t>(n));
        else if (errno != EINTR) break;
      return all;
    });
  }
  ~FifoReader() { ::close(read_fd_); }
  std::string finish() {
    ::close(keep_open_);
    return got_.get();
  }

 private:
  int read_fd_, keep_open_;
  std::future<std::string> got_;
};

// ---------------------------------------------------------------------------
// The rules, on the library's OutputFile
// ---------------------------------------------------------------------------

class OutputFileRules : public ::testing::TestWithParam<bool> {  // named temporaries?
 protected:
  void SetUp() override {
    if (GetParam()) env_.emplace("STREAMBLUR_NAMED_TEMPORARIES", "1");
  }
  TempDir dir;
  std::optional<ScopedEnv> env_;
};

TEST_P(OutputFileRules, AppearsOnlyWhenCommitted) {
  const std::string path = dir.file("stats.json");
  {
    io::OutputFile f(path, "stats file", {});
    EXPECT_EQ(f.kind(), io::OutputKind::File);
    f.write("{}\n");
    EXPECT_FALSE(fs::exists(path));
    // Unnamed: nothing at all in the folder; named: one hidden file.
    EXPECT_EQ(dir.listing().size(), GetParam() ? 1u : 0u);
    f.commit();
  }
  EXPECT_EQ(bytes_of(path), "{}\n");
  EXPECT_EQ(dir.listing(), std::vector<std::string>{"stats.json"});
}

TEST_P(OutputFileRules, NotCommittedLeavesNothing) {
  {
    io::OutputFile f(dir.file("out.json"), "stats file", {});
    f.write("partial");
  }
  EXPECT_TRUE(dir.listing().empty());
}

TEST_P(OutputFileRules, ExistingFileNeedsOverwrite) {
  const std::string path = dir.file("out.json");
  write_text(path, "precious");
  EXPECT_THROW(io::OutputFile(path, "stats file", {}), io::OutputExistsError);
  EXPECT_EQ(bytes_of(path), "precious");
  {
    io::OutputFile f(path, "stats file", {true, {}, {}});
    f.write("new");
    EXPECT_EQ(bytes_of(path), "precious");  // until the commit
    f.commit();
  }
  EXPECT_EQ(bytes_of(path), "new");
  EXPECT_EQ(dir.listing(), std::vector<std::string>{"out.json"});
}

// Issue 41 case 6: a file made at the path during the run is not replaced.
TEST_P(OutputFileRules, FileCreatedDuringTheRunIsNotReplaced) {
  const std::string path = dir.file("out.json");
  io::OutputFile f(path, "stats file", {});
  f.write("ours");
  write_text(path, "theirs");
  EXPECT_THROW(f.commit(), io::OutputExistsError);
  EXPECT_EQ(bytes_of(path), "theirs");
  EXPECT_EQ(dir.listing(), std::vector<std::string>{"out.json"});
}

TEST_P(OutputFileRules, InputIsNeverWrittenHoweverSpelled) {
  const std::string in = dir.file("in.mp4");
  write_text(in, "video");
  fs::create_symlink(in, dir.file("alias.mp4"));
  fs::create_directory(dir.path() / "sub");
  for (const std::string& spelled : {in, (dir.path() / "sub" / ".." / "in.mp4").string(), dir.file("alias.mp4")}) {
    SCOPED_TRACE(spelled);
    const std::string err = error_of([&] { io::OutputFile(spelled, "stats file", {true, {in}, {}}); });
    EXPECT_TRUE(contains(err, "is the input")) << err;
  }
  EXPECT_EQ(bytes_of(in), "video");
  EXPECT_TRUE(is_link(dir.file("alias.mp4")));
}

// Issue 41 case 5: a symbolic link is followed, its target written, the link kept.
TEST_P(OutputFileRules, SymlinkIsWrittenThrough) {
  fs::create_directory(dir.path() / "real");
  const std::string target = (dir.path() / "real" / "t.json").string(), link = dir.file("link.json");
  fs::create_symlink("real/t.json", link);  // relative, and dangling at first
  for (const char* text : {"first", "second"}) {
    io::OutputFile f(link, "stats file", {std::string(text) == "second", {}, {}});
    f.write(text);
    f.commit();
    EXPECT_TRUE(is_link(link));
    EXPECT_EQ(bytes_of(target), text);
  }
  EXPECT_EQ(dir.listing(), (std::vector<std::string>{"link.json", "real"}));
}

// Stale temporaries of a killed run are removed by the next run in that
// folder, with a note; a live process's are left alone.
TEST_P(OutputFileRules, StaleTemporariesOfDeadRunsAreRemoved) {
  const std::string stale = "." + std::string("out.mp4.streamblur-") + std::to_string(dead_pid()) + "-0.mp4";
  const std::string live = ".out.mp4.streamblur-" + std::to_string(::getppid()) + "-0.mp4";
  const std::string stale_folder = ".o_03d.streamblur-" + std::to_string(dead_pid()) + "-3";
  write_text(dir.file(stale), "left by kill -9");
  write_text(dir.file(live), "another run, still going");
  fs::create_directory(dir.path() / stale_folder);
  write_text((dir.path() / stale_folder / "o001.png").string(), "x");
  std::vector<std::string> notes;
  io::OutputFile f(dir.file("other.json"), "stats file", {false, {}, [&](const std::string& s) { notes.push_back(s); }});
  ASSERT_EQ(notes.size(), 2u);
  for (const std::string& n : notes) EXPECT_TRUE(contains(n, "removed") && contains(n, "earlier run")) << n;
  EXPECT_FALSE(fs::exists(dir.file(stale)));
  EXPECT_FALSE(fs::exists(dir.path() / stale_folder));
  EXPECT_EQ(bytes_of(dir.file(live)), "another run, still going");
}

INSTANTIATE_TEST_SUITE_P(Temporaries, OutputFileRules, ::testing::Values(false, true),
                         [](const auto& info) { return info.param ? "Named" : "Unnamed"; });

TEST(OutputFileSpecial, FifoIsStreamedInto) {
  TempDir dir;
  const std::string fifo = dir.file("f.json");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0644), 0);
  FifoReader got(fifo);
  {
    io::OutputFile f(fifo, "stats file", {});  // no overwriting needed: nothing is replaced
    EXPECT_EQ(f.kind(), io::OutputKind::Stream);
    f.write("through the pipe");
    f.commit();
  }
  EXPECT_EQ(got.finish(), "through the pipe");
  EXPECT_TRUE(fs::is_fifo(fifo));
}

TEST(OutputFileSpecial, DevicesAndDescriptorLinksAreWrittenThrough) {
  for (const char* p : {"/dev/null", "/dev/stdout", "/dev/fd/1", "-"}) {
    SCOPED_TRACE(p);
    io::OutputFile f(p, "stats file", {});
    EXPECT_EQ(f.kind(), io::OutputKind::Stream);
  }
  io::OutputFile null("/dev/null", "stats file", {});
  null.write("gone");
  null.commit();
  EXPECT_TRUE(fs::is_character_file("/dev/null"));
  EXPECT_TRUE(is_link("/dev/stdout"));
}

TEST(OutputFileSpecial, FoldersAndMissingFoldersAreRefused) {
  TempDir dir;
  EXPECT_TRUE(contains(error_of([&] { io::OutputFile(dir.path().string(), "stats file", {}); }), "is a folder"));
  EXPECT_TRUE(contains(error_of([&] { io::OutputFile(dir.file("no/such/x.json"), "stats file", {}); }), "does not exist"));
  EXPECT_TRUE(dir.listing().empty());
}

TEST(CheckOutputs, TwoOutputsThatAreOneFile) {
  TempDir dir;
  const std::string a = dir.file("a.json");
  const std::string err = error_of([&] {
    io::check_outputs({{a, "output"}, {(dir.path() / "." / "a.json").string(), "stats file"}}, {});
  });
  EXPECT_TRUE(contains(err, "are one file")) << err;
  // /dev/null twice destroys nothing.
  EXPECT_NO_THROW(io::check_outputs({{"/dev/null", "output"}, {"/dev/null", "stats file"}}, {}));
}

// ---------------------------------------------------------------------------
// The library's pipeline: a file made at the output during the run
// ---------------------------------------------------------------------------

TEST(PipelineOutput, FileCreatedDuringTheRunIsNotReplaced) {
  TempDir dir;
  const std::string in = dir.file("in.mkv"), out = dir.file("out.mkv");
  io::SyntheticClipSpec spec;
  spec.frames = 6;
  io::write_synthetic_clip(in, spec);
  PipelineOptions o;
  o.input = in;
  o.output = out;
  o.backend = BackendChoice::Cpu;
  o.encoder.codec = "ffv1";
  o.note = [](const std::string&) {};
  detail::PipelineTestHooks hooks;
  hooks.on_finish = [&](int64_t i) {
    if (i == 2) write_text(out, "someone else's");
  };
  EXPECT_THROW(detail::run_pipeline_with_hooks(o, hooks), io::OutputExistsError);
  EXPECT_EQ(bytes_of(out), "someone else's");
  EXPECT_EQ(dir.listing(), (std::vector<std::string>{"in.mkv", "out.mkv"}));
}

// ---------------------------------------------------------------------------
// The binary, case by case (issue 41, cases 1-8 and 16)
// ---------------------------------------------------------------------------

class CliOutputs : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!*kCli) GTEST_SKIP() << "the CLI is not built";
    io::SyntheticClipSpec spec;
    spec.frames = 8;
    spec.width = 65;
    spec.height = 49;
    io::write_synthetic_clip(in, spec);
    in_bytes = bytes_of(in);
  }
  // A run of `frames` frames at 30 fps read in real time (--re), long enough to act during it.
  std::string slow_input(int frames) {
    const std::string p = dir.file("slow.mkv");
    io::SyntheticClipSpec spec;
    spec.frames = frames;
    io::write_synthetic_clip(p, spec);
    return p;
  }
  void expect_input_intact() { EXPECT_EQ(bytes_of(in), in_bytes); }
  TempDir dir;
  std::string in = dir.file("in.mkv");
  std::string in_bytes;
};

int frames_in(const std::string& path) {
  io::MediaReader r(path);
  int n = 0;
  for (io::DecodedFrame f; r.read(f);) ++n;
  return n;
}

// Case 1: the stats file is the input, with or without -y.
TEST_F(CliOutputs, StatsFileIsTheInput) {
  for (bool y : {false, true}) {
    std::vector<std::string> args{in, dir.file("out.mkv"), "-c", "ffv1", "--stats-json", in, "-q"};
    if (y) args.push_back("-y");
    const CliResult r = run_cli(args);
    EXPECT_EQ(r.exit_code, 1) << r.describe();
    EXPECT_TRUE(contains(r.err, "is the input")) << r.describe();
    expect_input_intact();
    EXPECT_EQ(dir.listing(), std::vector<std::string>{"in.mkv"});
  }
}

// Case 2: an existing stats file is kept without -y, replaced with it.
TEST_F(CliOutputs, ExistingStatsFileNeedsY) {
  const std::string stats = dir.file("stats.json"), out = dir.file("out.mkv");
  write_text(stats, "precious");
  CliResult r = run_cli({in, out, "-c", "ffv1", "--stats-json", stats, "-q"});
  EXPECT_EQ(r.exit_code, 1) << r.describe();
  EXPECT_TRUE(contains(r.err, "already exists") && contains(r.err, "-y")) << r.describe();
  EXPECT_EQ(bytes_of(stats), "precious");
  EXPECT_FALSE(fs::exists(out));
  r = run_cli({in, out, "-c", "ffv1", "--stats-json", stats, "-q", "-y"});
  EXPECT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_EQ(nlohmann::json::parse(bytes_of(stats)).at("frames"), 8);
}

// Case 3: the stats file is the output.
TEST_F(CliOutputs, StatsFileIsTheOutput) {
  const std::string out = dir.file("out.mkv");
  for (const std::string& stats : {out, (dir.path() / "." / "out.mkv").string()}) {
    const CliResult r = run_cli({in, out, "-c", "ffv1", "--stats-json", stats, "-q", "-y"});
    EXPECT_EQ(r.exit_code, 1) << r.describe();
    EXPECT_TRUE(contains(r.err, "one file")) << r.describe();
    EXPECT_EQ(dir.listing(), std::vector<std::string>{"in.mkv"});
  }
}

// Case 4: the batch summary is an output like the others.
TEST_F(CliOutputs, BatchSummaryIsChecked) {
  const std::string out_dir = dir.file("blurred");
  CliResult r = run_cli({"batch", in, "--out-dir", out_dir, "-c", "ffv1", "--summary-json", in, "-q", "-y"});
  EXPECT_EQ(r.exit_code, 2) << r.describe();
  EXPECT_TRUE(contains(r.err, "is the input")) << r.describe();
  expect_input_intact();
  EXPECT_FALSE(fs::exists(out_dir));

  r = run_cli({"batch", in, "--out-dir", out_dir, "-c", "ffv1", "-q"});
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  const std::string summary = (fs::path(out_dir) / "streamblur-batch.json").string();
  const std::string first = bytes_of(summary);
  fs::remove(fs::path(out_dir) / "in.mkv");
  r = run_cli({"batch", in, "--out-dir", out_dir, "-c", "ffv1", "-q"});  // a second run, no -y
  EXPECT_EQ(r.exit_code, 1) << r.describe();
  EXPECT_TRUE(contains(r.err, "already exists")) << r.describe();
  EXPECT_EQ(bytes_of(summary), first);
  EXPECT_FALSE(fs::exists(fs::path(out_dir) / "in.mkv"));  // refused before any work

  // An unwritable summary fails before the work, not after it.
  r = run_cli({"batch", in, "--out-dir", out_dir, "-c", "ffv1", "-q", "-y", "--summary-json", dir.file("no/such.json")});
  EXPECT_EQ(r.exit_code, 1) << r.describe();
  EXPECT_TRUE(contains(r.err, "does not exist")) << r.describe();
  EXPECT_FALSE(fs::exists(fs::path(out_dir) / "in.mkv"));
}

// Case 5: special files are written through, never replaced.
TEST_F(CliOutputs, FifoOutputIsStreamedInto) {
  const std::string fifo = dir.file("pipe.mkv"), copy = dir.file("copy.mkv");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0644), 0);
  FifoReader got(fifo);
  const CliResult r = run_cli({in, fifo, "-c", "ffv1", "-q"});
  EXPECT_EQ(r.exit_code, 0) << r.describe();
  write_text(copy, got.finish());
  EXPECT_TRUE(fs::is_fifo(fifo));
  EXPECT_EQ(frames_in(copy), 8);
}

TEST_F(CliOutputs, SymlinkOutputWritesItsTarget) {
  fs::create_directory(dir.path() / "real");
  const std::string link = dir.file("link.mkv"), target = (dir.path() / "real" / "t.mkv").string();
  fs::create_symlink(target, link);
  CliResult r = run_cli({in, link, "-c", "ffv1", "-q"});
  EXPECT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_TRUE(is_link(link));
  EXPECT_EQ(frames_in(target), 8);
  r = run_cli({in, link, "-c", "ffv1", "-q"});  // the target exists now
  EXPECT_EQ(r.exit_code, 1) << r.describe();
  EXPECT_TRUE(contains(r.err, "already exists")) << r.describe();
}

TEST_F(CliOutputs, DevicesStayDevices) {
  // A link to the descriptor, as /dev/stdout is (the test's own, so a
  // regression replaces it, not the system's).
  const std::string stdout_link = dir.file("stdout");
  fs::create_symlink("/proc/self/fd/1", stdout_link);
  const CliResult r = run_cli({in, dir.file("out.mkv"), "-c", "ffv1", "-q", "-y", "--stats-json", stdout_link});
  EXPECT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_TRUE(is_link(stdout_link));
  ASSERT_FALSE(r.out.empty()) << r.describe();
  EXPECT_EQ(nlohmann::json::parse(r.out).at("frames"), 8);
  const CliResult s = run_cli({in, dir.file("out2.mkv"), "-c", "ffv1", "-q", "-y", "--stats-json", "/dev/null"});
  EXPECT_EQ(s.exit_code, 0) << s.describe();
  EXPECT_TRUE(fs::is_character_file("/dev/null"));
}

// Case 6: a file created at the output during the run is not replaced.
TEST_F(CliOutputs, OutputCreatedDuringTheRunIsKept) {
  const std::string slow = slow_input(45), out = dir.file("out.mkv");
  CliProcess p({slow, out, "-c", "ffv1", "--re", "-q"}, capture_dir());
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  write_text(out, "someone else's");
  const CliResult r = p.wait();
  EXPECT_EQ(r.exit_code, 1) << r.describe();
  EXPECT_TRUE(contains(r.err, "not replaced")) << r.describe();
  EXPECT_EQ(bytes_of(out), "someone else's");
  EXPECT_EQ(dir.listing(), (std::vector<std::string>{"in.mkv", "out.mkv", "slow.mkv"}));
}

// Case 7: kill -9 leaves nothing (unnamed temporary); where named ones are
// used, the next run in the folder removes what a killed run left, and says so.
TEST_F(CliOutputs, KilledRunLeavesNothing) {
  const std::string slow = slow_input(90);
  for (bool named : {false, true}) {
    SCOPED_TRACE(named ? "named temporaries" : "unnamed temporaries");
    std::optional<ScopedEnv> env;
    if (named) env.emplace("STREAMBLUR_NAMED_TEMPORARIES", "1");
    {
      CliProcess p({slow, dir.file("out.mkv"), "-c", "ffv1", "--re", "-q"}, capture_dir());
      std::this_thread::sleep_for(std::chrono::milliseconds(700));
      ::kill(p.pid(), SIGKILL);
      p.wait();
    }
    const std::size_t left = dir.listing().size() - 2;  // beside in.mkv and slow.mkv
    EXPECT_EQ(left, named ? 1u : 0u);
    const CliResult r = run_cli({in, dir.file("next.mkv"), "-c", "ffv1"});
    EXPECT_EQ(r.exit_code, 0) << r.describe();
    EXPECT_EQ(contains(r.err, "removed"), named) << r.describe();
    EXPECT_EQ(dir.listing(), (std::vector<std::string>{"in.mkv", "next.mkv", "slow.mkv"}));
    fs::remove(dir.file("next.mkv"));
  }
}

// Case 8: stderr is a pipe whose reader has gone; the finished run exits 0.
TEST_F(CliOutputs, ClosedStderrDoesNotKillTheRun) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  ::close(fds[0]);
  const std::string out = dir.file("out.mkv");
  std::vector<std::string> all{kCli, in, out, "-c", "ffv1"};
  std::vector<char*> argv;
  for (auto& a : all) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, fds[1], STDERR_FILENO);
  pid_t pid = -1;
  ASSERT_EQ(posix_spawn(&pid, kCli, &fa, nullptr, argv.data(), environ), 0);
  posix_spawn_file_actions_destroy(&fa);
  ::close(fds[1]);
  int st = 0;
  ::waitpid(pid, &st, 0);
  ASSERT_TRUE(WIFEXITED(st)) << "ended by signal " << WTERMSIG(st);
  EXPECT_EQ(WEXITSTATUS(st), 0);
  EXPECT_EQ(frames_in(out), 8);
}

// Case 16: times beyond the range say the range, and are usage errors.
TEST_F(CliOutputs, HugeTimesAreUsageErrors) {
  for (const char* flag : {"-ss", "-t"}) {
    const CliResult r = run_cli({in, dir.file("out.mkv"), flag, "9223372036854"});
    EXPECT_EQ(r.exit_code, 2) << r.describe();
    EXPECT_TRUE(contains(r.err, flag) && contains(r.err, "at most")) << r.describe();
    EXPECT_FALSE(contains(r.err, "must be 0 or more")) << r.describe();
    EXPECT_EQ(dir.listing(), std::vector<std::string>{"in.mkv"});
  }
}

}  // namespace
