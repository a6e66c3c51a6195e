// Tests of run_batch (many files, several pipelines at once, every GPU) and of
// the `streamblur batch` subcommand (the real binary, STREAMBLUR_CLI_PATH).
// Everything runs on the CPU backend except the BatchCuda cases, which skip
// without a device. Clips are made at test time in temporary folders.
#include <gtest/gtest.h>

#include "test_support.hpp"
#include <nlohmann/json.hpp>

extern "C" {
#include <libavutil/imgutils.h>
#include <libavutil/log.h>
}

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "streamblur/io/reader.hpp"
#include "streamblur/pipeline/batch.hpp"
#include "streamblur/pipeline/pipeline.hpp"
#include "streamblur/testing/synthetic_clip.hpp"

extern char** environ;

namespace fs = std::filesystem;
using namespace streamblur;
using namespace sbtest;
using io::SyntheticClipSpec;
using Clock = std::chrono::steady_clock;

namespace {

const bool quiet_ffmpeg_log = [] {
  av_log_set_level(AV_LOG_QUIET);
  return true;
}();

SyntheticClipSpec clip(int w, int h, int frames, unsigned seed = 1) {
  SyntheticClipSpec s;
  s.width = w;
  s.height = h;
  s.frames = frames;
  s.seed = seed;
  return s;  // ffv1 in mkv: lossless, so decoded outputs can be compared exactly
}

void write_text_file(const std::string& path) {
  std::ofstream o(path);
  for (int i = 0; i < 200; ++i) o << "This is a text file, not a video. Line " << i << ".\n";
}

// Every decoded frame of `path`, its visible planes packed one after another.
// Options every library test shares: CPU backend, ffv1, notes kept quiet.
BatchOptions cpu_batch(const std::vector<BatchJob>& jobs, const std::string& filters = "gblur=sigma=2") {
  BatchOptions b;
  b.jobs = jobs;
  b.base.filters = filters;
  b.base.backend = BackendChoice::Cpu;
  b.base.encoder.codec = "ffv1";
  b.note = [](const BatchJob&, const std::string&) {};
  return b;
}

// A folder "in" with clips and a folder "out" for the outputs.
class BatchFolders : public ::testing::Test {
 protected:
  void SetUp() override {
    fs::create_directories(in_dir());
    fs::create_directories(out_dir());
  }
  fs::path in_dir() const { return dir.path() / "in"; }
  fs::path out_dir() const { return dir.path() / "out"; }
  std::string in(const std::string& name) const { return (in_dir() / name).string(); }
  std::string out(const std::string& name) const { return (out_dir() / name).string(); }
  std::vector<std::string> out_listing() const {
    std::vector<std::string> v;
    for (const auto& e : fs::directory_iterator(out_dir())) v.push_back(e.path().filename().string());
    std::sort(v.begin(), v.end());
    return v;
  }
  TempDir dir{"streamblur_batch_test"};
};

// ---------------------------------------------------------------------------
// parse_device_list
// ---------------------------------------------------------------------------

TEST(BatchDeviceList, Parses) {
  EXPECT_EQ(parse_device_list("all"), std::vector<int>{});
  EXPECT_EQ(parse_device_list(" all "), std::vector<int>{});
  EXPECT_EQ(parse_device_list("0"), std::vector<int>{0});
  EXPECT_EQ(parse_device_list("0,1"), (std::vector<int>{0, 1}));
  EXPECT_EQ(parse_device_list("1, 2"), (std::vector<int>{1, 2}));
  EXPECT_EQ(parse_device_list("3,0,7"), (std::vector<int>{3, 0, 7}));  // order kept: worker i takes devices[i % n]
}

TEST(BatchDeviceList, RefusesBadLists) {
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"", "empty"},   {"  ", "empty"}, {"x", "'x'"},   {"-1", "'-1'"}, {"0,,1", "empty entry"},
      {"1.5", "'1.5'"}, {"+1", "'+1'"}, {"0,0", "twice"}, {"0,", "empty entry"}, {"all,0", "'all'"},
      {"99999999999", "'99999999999'"}};
  for (const auto& [text, part] : bad) {
    SCOPED_TRACE("'" + text + "'");
    EXPECT_THROW(parse_device_list(text), std::invalid_argument);
    EXPECT_ONE_LINE_CONTAINS(error_of([&] { parse_device_list(text); }), part.c_str());
  }
}

// ---------------------------------------------------------------------------
// Validation: refused before anything runs
// ---------------------------------------------------------------------------

TEST_F(BatchFolders, RefusesBadOptionsBeforeAnythingRuns) {
  io::write_synthetic_clip(in("a.mkv"), clip(32, 24, 3));
  io::write_synthetic_clip(in("b.mkv"), clip(32, 24, 3));
  const BatchJob a{in("a.mkv"), out("a.mkv")}, b{in("b.mkv"), out("b.mkv")};
  bool progress_called = false;
  auto expect_refused = [&](BatchOptions o, std::vector<const char*> parts) {
    o.progress = [&](const BatchProgress&) { progress_called = true; };
    std::string msg;
    try {
      run_batch(o);
    } catch (const std::invalid_argument& e) {
      msg = e.what();
    } catch (const std::exception& e) {
      ADD_FAILURE() << "not std::invalid_argument: " << e.what();
    }
    EXPECT_FALSE(msg.empty()) << "accepted";
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
    for (const char* p : parts) EXPECT_TRUE(contains(msg, p)) << "'" << p << "' not in: " << msg;
    EXPECT_TRUE(out_listing().empty()) << "something was written";
    EXPECT_FALSE(progress_called) << "it started";
  };
  {
    SCOPED_TRACE("no jobs");
    expect_refused(cpu_batch({}), {"no input"});
  }
  {
    SCOPED_TRACE("jobs per device 0");
    BatchOptions o = cpu_batch({a, b});
    o.jobs_per_device = 0;
    expect_refused(o, {"at least 1"});
  }
  {
    SCOPED_TRACE("same output twice");
    expect_refused(cpu_batch({a, {b.input, a.output}}), {"same output", "a.mkv"});
  }
  {
    SCOPED_TRACE("same output, spelt differently");
    expect_refused(cpu_batch({a, {b.input, (out_dir() / "." / "sub" / ".." / "a.mkv").string()}}), {"same output"});
  }
  {
    SCOPED_TRACE("output is its own input");
    expect_refused(cpu_batch({a, {b.input, b.input}}), {"b.mkv", "input"});
  }
  {
    SCOPED_TRACE("output is another job's input");
    expect_refused(cpu_batch({a, {b.input, a.input}}), {"a.mkv", "input"});
  }
  {
    SCOPED_TRACE("empty input or output");
    expect_refused(cpu_batch({a, {"", out("x.mkv")}}), {"no input"});
    expect_refused(cpu_batch({a, {b.input, ""}}), {"b.mkv", "no output"});
  }
  const int count = cuda_device_count();
  {
    SCOPED_TRACE("devices that do not exist");
    BatchOptions o = cpu_batch({a, b});
    o.base.backend = BackendChoice::Cuda;
    o.devices = {0, count + 3, count + 5};
    const std::string missing = std::to_string(count + 3) + "," + std::to_string(count + 5);
    expect_refused(o, {"devices", missing.c_str(), "do not exist"});
    // Auto with an explicit list wants those GPUs: refused too, even without any.
    o.base.backend = BackendChoice::Auto;
    o.devices = {count + 1};
    expect_refused(o, {std::to_string(count + 1).c_str(), "does not exist"});
    o.devices = {-1};
    expect_refused(o, {"-1", "does not exist"});
  }
  if (count == 0) {
    SCOPED_TRACE("cuda without a device");
    BatchOptions o = cpu_batch({a, b});
    o.base.backend = BackendChoice::Cuda;
    expect_refused(o, {STREAMBLUR_HAVE_CUDA ? "cuda" : "batch", kNoDeviceWords});
  }
  if (count > 0) {
    SCOPED_TRACE("a device listed twice");
    BatchOptions o = cpu_batch({a, b});
    o.base.backend = BackendChoice::Cuda;
    o.devices = {0, 0};
    expect_refused(o, {"device 0", "twice"});
  }
}

// The CPU backend ignores the device list (it names GPUs, and none are used).
TEST_F(BatchFolders, CpuBackendIgnoresDevices) {
  io::write_synthetic_clip(in("a.mkv"), clip(32, 24, 3));
  BatchOptions o = cpu_batch({{in("a.mkv"), out("a.mkv")}});
  o.devices = {5};
  const std::vector<BatchResult> r = run_batch(o);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_TRUE(r[0].ok) << r[0].error;
  EXPECT_EQ(r[0].device, -1);
}

// ---------------------------------------------------------------------------
// Running
// ---------------------------------------------------------------------------

// Three good clips and one text file: three outputs equal to single runs, one
// failure naming the file, no output or temporary file for it, and progress
// that ends with every file counted.
TEST_F(BatchFolders, ThreeGoodOneBad) {
  const std::vector<std::pair<std::string, SyntheticClipSpec>> good = {
      {"one.mkv", clip(48, 32, 7, 1)}, {"two.mkv", clip(65, 49, 5, 2)}, {"three.mkv", clip(40, 30, 9, 3)}};
  for (const auto& [name, spec] : good) io::write_synthetic_clip(in(name), spec);
  write_text_file(in("bad.mkv"));

  std::vector<BatchJob> jobs;
  for (const std::string name : {"one.mkv", "bad.mkv", "two.mkv", "three.mkv"}) jobs.push_back({in(name), out(name)});
  BatchOptions o = cpu_batch(jobs);
  o.jobs_per_device = 3;
  std::vector<BatchProgress> seen;
  std::atomic<int> in_callback{0};
  bool overlapped = false;
  o.progress = [&](const BatchProgress& p) {
    if (in_callback.fetch_add(1) != 0) overlapped = true;
    seen.push_back(p);
    in_callback.fetch_sub(1);
  };
  const std::vector<BatchResult> r = run_batch(o);

  ASSERT_EQ(r.size(), 4u);
  int64_t total_frames = 0;
  for (std::size_t i = 0; i < r.size(); ++i) {
    SCOPED_TRACE(r[i].job.input);
    EXPECT_EQ(r[i].job.input, jobs[i].input) << "results are in the order of the jobs";
    EXPECT_EQ(r[i].job.output, jobs[i].output);
    EXPECT_EQ(r[i].device, -1);
    EXPECT_FALSE(r[i].skipped);
    if (i == 1) continue;
    EXPECT_TRUE(r[i].ok) << r[i].error;
    EXPECT_TRUE(r[i].error.empty());
    EXPECT_EQ(r[i].stats.backend, "cpu");
    EXPECT_FALSE(r[i].stats.stopped_early);
    total_frames += r[i].stats.frames;
  }
  EXPECT_EQ(r[0].stats.frames, 7);
  EXPECT_EQ(r[2].stats.frames, 5);
  EXPECT_EQ(r[3].stats.frames, 9);
  EXPECT_FALSE(r[1].ok);
  EXPECT_ONE_LINE_CONTAINS(r[1].error, "bad.mkv");

  EXPECT_EQ(out_listing(), (std::vector<std::string>{"one.mkv", "three.mkv", "two.mkv"}))
      << "no output for the bad file, no temporary files";

  // Each output equals a single run_pipeline run of the same input.
  TempDir single;
  for (const auto& [name, spec] : good) {
    SCOPED_TRACE(name);
    PipelineOptions p = o.base;
    p.input = in(name);
    p.output = single.file(name);
    p.note = [](const std::string&) {};
    ASSERT_NO_THROW(run_pipeline(p));
    const std::vector<std::string> batch_frames = frame_bytes(out(name));
    EXPECT_EQ(static_cast<int>(batch_frames.size()), spec.frames);
    EXPECT_TRUE(batch_frames == frame_bytes(single.file(name))) << "batch output differs from a single run";
    EXPECT_FALSE(batch_frames == frame_bytes(in(name))) << "the filter did nothing: the comparison proves little";
  }

  ASSERT_FALSE(seen.empty());
  EXPECT_FALSE(overlapped) << "progress was called from two threads at once";
  const BatchProgress& last = seen.back();
  EXPECT_TRUE(last.final);
  for (std::size_t i = 0; i + 1 < seen.size(); ++i) EXPECT_FALSE(seen[i].final) << "final before the end";
  EXPECT_EQ(last.files_total, 4);
  EXPECT_EQ(last.files_done, 4);
  EXPECT_EQ(last.files_failed, 1);
  EXPECT_EQ(last.running, 0);
  EXPECT_EQ(last.frames, total_frames);
  EXPECT_EQ(last.eta_s, 0);
  EXPECT_GT(last.elapsed_s, 0);
  EXPECT_NEAR(last.fps, last.frames / last.elapsed_s, 1e-6 * last.fps + 1e-9);
}

// Notes come with their job, one at a time; the default encoder is chosen per
// output when none is named (png for an image, libx264 for a video).
TEST_F(BatchFolders, NotesPerJobAndDefaultEncoderPerOutput) {
  SyntheticClipSpec image = clip(32, 24, 1);
  image.codec = "png";
  image.pix_fmt = AV_PIX_FMT_RGB24;
  io::write_synthetic_clip(in("still.png"), image);
  io::write_synthetic_clip(in("video.mkv"), clip(32, 24, 4));
  BatchOptions o = cpu_batch({{in("still.png"), out("still.png")}, {in("video.mkv"), out("video.mkv")}});
  o.base.encoder.codec.clear();
  std::mutex m;
  std::set<std::string> noted_inputs;
  std::atomic<int> in_callback{0};
  bool overlapped = false;
  o.note = [&](const BatchJob& job, const std::string& text) {
    if (in_callback.fetch_add(1) != 0) overlapped = true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));  // widen the window for an overlap
    {
      std::lock_guard lock(m);
      if (contains(text, "backend")) noted_inputs.insert(job.input);
    }
    in_callback.fetch_sub(1);
  };
  const std::vector<BatchResult> r = run_batch(o);
  ASSERT_EQ(r.size(), 2u);
  EXPECT_TRUE(r[0].ok) << r[0].error;
  EXPECT_TRUE(r[1].ok) << r[1].error;
  EXPECT_EQ(frame_bytes(out("still.png")).size(), 1u);
  EXPECT_EQ(frame_bytes(out("video.mkv")).size(), 4u);
  EXPECT_EQ(io::MediaReader(out("video.mkv")).video().codec_name, "h264");
  EXPECT_EQ(noted_inputs, (std::set<std::string>{in("still.png"), in("video.mkv")}));
  EXPECT_FALSE(overlapped) << "two notes at once";
}

// Stop set before the start: nothing runs, every file says why.
TEST_F(BatchFolders, StopBeforeStartRunsNothing) {
  io::write_synthetic_clip(in("a.mkv"), clip(32, 24, 3));
  io::write_synthetic_clip(in("b.mkv"), clip(32, 24, 3));
  std::atomic<bool> stop{true};
  BatchOptions o = cpu_batch({{in("a.mkv"), out("a.mkv")}, {in("b.mkv"), out("b.mkv")}});
  o.stop = &stop;
  BatchProgress last;
  o.progress = [&](const BatchProgress& p) { last = p; };
  const std::vector<BatchResult> r = run_batch(o);
  ASSERT_EQ(r.size(), 2u);
  for (const BatchResult& x : r) {
    EXPECT_FALSE(x.ok);
    EXPECT_TRUE(x.skipped);
    EXPECT_ONE_LINE_CONTAINS(x.error, "stopped");
  }
  EXPECT_TRUE(last.final);
  EXPECT_EQ(last.files_done, 0);
  EXPECT_TRUE(out_listing().empty());
}

// Stop while the first of four files runs (one worker): that file finishes
// its frames in flight and writes a playable output; later files never start.
// The first file is long enough that it cannot reach its end in the moment
// between the progress call that sets the flag and the pipeline seeing it.
TEST_F(BatchFolders, StopWhileRunning) {
  const int total = 1500;
  std::vector<BatchJob> jobs;
  for (const std::string name : {"a.mkv", "b.mkv", "c.mkv", "d.mkv"}) {
    io::write_synthetic_clip(in(name), clip(160, 120, name == "a.mkv" ? total : 10));
    jobs.push_back({in(name), out(name)});
  }
  std::atomic<bool> stop{false};
  BatchOptions o = cpu_batch(jobs, "gblur=sigma=12");
  o.base.inflight = 2;
  o.jobs_per_device = 1;
  o.stop = &stop;
  int done_at_stop = -1;
  o.progress = [&](const BatchProgress& p) {
    if (!p.final && !stop.load() && p.frames > 0) {
      done_at_stop = p.files_done;
      stop.store(true);
    }
  };
  const std::vector<BatchResult> r = run_batch(o);
  if (done_at_stop != 0) GTEST_SKIP() << "the first file ran faster than the progress ticks";
  for (int i = 1; i < 4; ++i) {
    EXPECT_TRUE(r[i].skipped) << r[i].job.input;
    EXPECT_FALSE(fs::exists(r[i].job.output)) << r[i].job.input;
  }
  const BatchResult& stopped = r[0];
  if (stopped.ok) {
    EXPECT_TRUE(stopped.stats.stopped_early);
    EXPECT_LT(stopped.stats.frames, total);
    EXPECT_EQ(static_cast<int64_t>(frame_bytes(stopped.job.output).size()), stopped.stats.frames);
  } else {
    EXPECT_ONE_LINE_CONTAINS(stopped.error, "stopped");
  }
  for (const std::string& f : out_listing()) EXPECT_FALSE(contains(f, ".streamblur-")) << "temporary file left: " << f;
}

// An exception from the progress callback stops the batch and comes out of run_batch.
TEST_F(BatchFolders, ProgressExceptionIsRethrown) {
  io::write_synthetic_clip(in("a.mkv"), clip(32, 24, 3));
  BatchOptions o = cpu_batch({{in("a.mkv"), out("a.mkv")}});
  o.progress = [](const BatchProgress&) { throw std::runtime_error("progress sink failed"); };
  EXPECT_ONE_LINE_CONTAINS(error_of([&] { run_batch(o); }), "progress sink failed");
  for (const std::string& f : out_listing()) EXPECT_FALSE(contains(f, ".streamblur-")) << "temporary file left: " << f;
}

// More jobs than workers: every job runs exactly once.
TEST_F(BatchFolders, ManyJobsFewWorkers) {
  std::vector<BatchJob> jobs;
  for (int i = 0; i < 7; ++i) {
    const std::string name = "c" + std::to_string(i) + ".mkv";
    io::write_synthetic_clip(in(name), clip(16, 16, 2 + i, i + 1));
    jobs.push_back({in(name), out(name)});
  }
  BatchOptions o = cpu_batch(jobs, "boxblur=1");
  o.jobs_per_device = 2;
  const std::vector<BatchResult> r = run_batch(o);
  ASSERT_EQ(r.size(), 7u);
  for (int i = 0; i < 7; ++i) {
    EXPECT_TRUE(r[i].ok) << r[i].error;
    EXPECT_EQ(r[i].stats.frames, 2 + i);
    EXPECT_EQ(static_cast<int>(frame_bytes(r[i].job.output).size()), 2 + i);
  }
}

// ---------------------------------------------------------------------------
// CUDA: every device, several pipelines per device
// ---------------------------------------------------------------------------

TEST_F(BatchFolders, CudaOnEveryDevice) {
  SBTEST_SKIP_WITHOUT_GPU();
  const int count = cuda_device_count();
  std::vector<BatchJob> jobs;
  const int n = std::max(8, 4 * count);
  for (int i = 0; i < n; ++i) {
    // Half H.264 (NVDEC takes it: several decode sessions per GPU at once), half ffv1 (decoded on the CPU).
    SyntheticClipSpec spec = clip(128, 96, 30, i + 1);
    if (i % 2 == 0) spec.codec = "libx264";
    const std::string name = "g" + std::to_string(i) + ".mkv";
    io::write_synthetic_clip(in(name), spec);
    jobs.push_back({in(name), out(name)});
  }
  BatchOptions o = cpu_batch(jobs, "gblur=sigma=2,boxblur=radius=1");
  o.base.backend = BackendChoice::Cuda;
  o.devices = parse_device_list("all");
  o.jobs_per_device = 2;
  const std::vector<BatchResult> r = run_batch(o);
  ASSERT_EQ(static_cast<int>(r.size()), n);
  std::set<int> used;
  std::string decoders;
  for (const BatchResult& x : r) {
    SCOPED_TRACE(x.job.input);
    EXPECT_TRUE(x.ok) << x.error;
    EXPECT_EQ(x.stats.backend, "cuda");
    EXPECT_GE(x.device, 0);
    EXPECT_LT(x.device, count);
    EXPECT_EQ(x.stats.device, x.device) << "the pipeline ran on another device than the one it was given";
    EXPECT_EQ(static_cast<int>(frame_bytes(x.job.output).size()), 30);
    used.insert(x.device);
    decoders += x.stats.decoder + " ";
  }
  RecordProperty("decoders", decoders);  // nvdec for the H.264 clips where NVDEC is usable
  if (count >= 2) EXPECT_GE(used.size(), 2u) << "only one GPU was used";

  // A chosen subset: only those devices.
  if (count >= 2) {
    for (const BatchJob& j : jobs) fs::remove(j.output);
    o.devices = {count - 1};
    for (const BatchResult& x : run_batch(o)) {
      EXPECT_TRUE(x.ok) << x.error;
      EXPECT_EQ(x.device, count - 1);
    }
  }
}

// ---------------------------------------------------------------------------
// The CLI: streamblur batch
// ---------------------------------------------------------------------------

const char* cli_path() {
  const char* env = std::getenv("STREAMBLUR_CLI");
  return env && *env ? env : STREAMBLUR_CLI_PATH;
}

#define SKIP_WITHOUT_CLI() \
  if (!*cli_path()) GTEST_SKIP() << "the CLI was not built"

struct CliResult {
  bool timed_out = false, exited = false;
  int exit_code = -1;
  std::string out, err;
  std::string describe() const {
    return (timed_out ? "TIMED OUT; " : "") + std::string("exit ") + std::to_string(exit_code) + "\n--- stdout:\n" + out +
           "--- stderr:\n" + err + "---";
  }
};

// The CLI as a child process; stdout and stderr go to files in `capture`.
class Cli {
 public:
  Cli(const std::vector<std::string>& args, const TempDir& capture) {
    static std::atomic<int> n{0};
    const int id = n++;
    out_ = capture.file("stdout_" + std::to_string(id));
    err_ = capture.file("stderr_" + std::to_string(id));
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&fa, STDOUT_FILENO, out_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_addopen(&fa, STDERR_FILENO, err_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    std::vector<std::string> all{cli_path()};
    all.insert(all.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (auto& a : all) argv.push_back(a.data());
    argv.push_back(nullptr);
    const int rc = posix_spawn(&pid_, cli_path(), &fa, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&fa);
    if (rc != 0) throw std::runtime_error(std::string("cannot start ") + cli_path());
  }
  ~Cli() {
    if (!done_) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, &status_, 0);
    }
  }
  pid_t pid() const { return pid_; }
  CliResult wait(std::chrono::seconds timeout = std::chrono::seconds(120)) {
    CliResult res;
    const auto deadline = Clock::now() + timeout;
    while (::waitpid(pid_, &status_, WNOHANG) != pid_) {
      if (Clock::now() > deadline) {
        ::kill(pid_, SIGKILL);
        ::waitpid(pid_, &status_, 0);
        res.timed_out = true;
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    done_ = true;
    res.exited = WIFEXITED(status_);
    res.exit_code = res.exited ? WEXITSTATUS(status_) : -1;
    res.out = bytes_of(out_);
    res.err = bytes_of(err_);
    return res;
  }

 private:
  pid_t pid_ = -1;
  int status_ = 0;
  bool done_ = false;
  std::string out_, err_;
};

std::vector<std::string> error_lines(const std::string& err) {
  std::vector<std::string> v;
  std::istringstream s(err);
  for (std::string line; std::getline(s, line);)
    if (contains(line, "error")) v.push_back(line);
  return v;
}

nlohmann::json read_json(const std::string& path) {
  std::ifstream f(path);
  return nlohmann::json::parse(f);
}

class CliBatch : public BatchFolders {
 protected:
  CliResult run(const std::vector<std::string>& args) { return Cli(args, capture).wait(); }
  TempDir capture{"streamblur_batch_capture"};
};

TEST_F(CliBatch, HelpMentionsBatch) {
  SKIP_WITHOUT_CLI();
  CliResult r = run({"--help"});
  EXPECT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_TRUE(contains(r.out, "batch")) << r.out;
  for (const char* opt : {"--hwdec", "--device"}) EXPECT_TRUE(contains(r.out, opt)) << opt << " missing:\n" << r.out;
  r = run({"batch", "--help"});
  EXPECT_EQ(r.exit_code, 0) << r.describe();
  for (const char* opt : {"--out-dir", "--jobs", "--devices", "--summary-json", "--vf", "--codec", "--backend", "--hwdec", "-y"})
    EXPECT_TRUE(contains(r.out, opt)) << opt << " missing:\n" << r.out;
}

// One bad file among good ones: the good ones are written, one error line
// names the bad one, exit 1, and the summary says all of it.
TEST_F(CliBatch, OneBadFileExitsOneWithSummary) {
  SKIP_WITHOUT_CLI();
  io::write_synthetic_clip(in("a.mkv"), clip(48, 32, 4, 1));
  io::write_synthetic_clip(in("b.mkv"), clip(48, 32, 6, 2));
  io::write_synthetic_clip(in("c.mkv"), clip(48, 32, 3, 3));
  write_text_file(in("notes.mkv"));
  const CliResult r = run({"batch", in("a.mkv"), in("notes.mkv"), in("b.mkv"), in("c.mkv"), "--out-dir",
                           out_dir().string(), "--vf", "gblur=sigma=2", "-c", "ffv1", "--backend", "cpu", "--jobs", "2"});
  ASSERT_FALSE(r.timed_out) << r.describe();
  EXPECT_EQ(r.exit_code, 1) << r.describe();
  const std::vector<std::string> errors = error_lines(r.err);
  ASSERT_EQ(errors.size(), 1u) << r.describe();
  EXPECT_EQ(errors[0].rfind("streamblur: error: " + in("notes.mkv") + ": ", 0), 0u) << errors[0];
  EXPECT_TRUE(contains(r.err, "done: 3 of 4 files ok, 1 failed")) << r.describe();
  EXPECT_TRUE(r.out.empty()) << r.describe();
  EXPECT_EQ(out_listing(), (std::vector<std::string>{"a.mkv", "b.mkv", "c.mkv", "streamblur-batch.json"}));

  const nlohmann::json j = read_json(out("streamblur-batch.json"));
  EXPECT_EQ(j["files"], 4);
  EXPECT_EQ(j["ok"], 3);
  EXPECT_EQ(j["failed"], 1);
  EXPECT_EQ(j["frames"], 13);
  EXPECT_GT(j["wall_s"].get<double>(), 0);
  EXPECT_GT(j["fps"].get<double>(), 0);
  const nlohmann::json& res = j["results"];
  ASSERT_EQ(res.size(), 4u);
  const std::vector<std::pair<std::string, int>> expect = {{"a.mkv", 4}, {"notes.mkv", 0}, {"b.mkv", 6}, {"c.mkv", 3}};
  for (std::size_t i = 0; i < 4; ++i) {
    SCOPED_TRACE(expect[i].first);
    const nlohmann::json& x = res[i];
    EXPECT_EQ(x["input"], in(expect[i].first));
    EXPECT_EQ(x["output"], out(expect[i].first));
    EXPECT_EQ(x["frames"], expect[i].second);
    EXPECT_EQ(x["device"], -1);
    for (const char* key : {"wall_s", "fps", "backend", "decoder", "filters", "gpu_memory_bytes", "bounding_stage"})
      EXPECT_TRUE(x.contains(key)) << key;
    if (expect[i].first == "notes.mkv") {
      EXPECT_EQ(x["ok"], false);
      EXPECT_TRUE(contains(x["error"].get<std::string>(), "notes.mkv")) << x.dump();
    } else {
      EXPECT_EQ(x["ok"], true);
      EXPECT_FALSE(x.contains("error"));
      EXPECT_EQ(x["backend"], "cpu");
      EXPECT_EQ(x["decoder"], "cpu");
      EXPECT_TRUE(contains(x["filters"].get<std::string>(), "gblur")) << x.dump();
      EXPECT_EQ(static_cast<int>(frame_bytes(out(expect[i].first)).size()), expect[i].second);
    }
  }
}

// All good: exit 0; the output folder is made; the summary goes where asked.
TEST_F(CliBatch, AllGoodExitsZero) {
  SKIP_WITHOUT_CLI();
  io::write_synthetic_clip(in("a.mkv"), clip(32, 24, 3, 1));
  io::write_synthetic_clip(in("b.mkv"), clip(32, 24, 5, 2));
  const std::string dest = (dir.path() / "new" / "folder").string();
  const std::string summary = dir.file("summary.json");
  const CliResult r = run({"batch", in("a.mkv"), in("b.mkv"), "--out-dir", dest, "--vf", "boxblur=1", "-c", "ffv1",
                           "--backend", "cpu", "--hwdec", "none", "--summary-json", summary, "-q"});
  EXPECT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_TRUE(r.err.empty()) << "-q prints nothing when all is well: " << r.describe();
  EXPECT_EQ(frame_bytes(dest + "/a.mkv").size(), 3u);
  EXPECT_EQ(frame_bytes(dest + "/b.mkv").size(), 5u);
  EXPECT_FALSE(fs::exists(dest + "/streamblur-batch.json"));
  const nlohmann::json j = read_json(summary);
  EXPECT_EQ(j["files"], 2);
  EXPECT_EQ(j["ok"], 2);
  EXPECT_EQ(j["failed"], 0);
  EXPECT_EQ(j["frames"], 8);

  // Again without -y: the summary exists, so nothing runs and it is kept.
  const std::string before = bytes_of(dest + "/a.mkv"), summary_before = bytes_of(summary);
  const CliResult again = run({"batch", in("a.mkv"), in("b.mkv"), "--out-dir", dest, "-c", "ffv1", "--backend", "cpu",
                               "--summary-json", summary, "-q"});
  EXPECT_EQ(again.exit_code, 1) << again.describe();
  EXPECT_EQ(error_lines(again.err).size(), 1u) << again.describe();
  EXPECT_TRUE(contains(again.err, "summary") && contains(again.err, "-y")) << again.describe();
  EXPECT_EQ(bytes_of(summary), summary_before);
  EXPECT_EQ(bytes_of(dest + "/a.mkv"), before);
  // A new summary, but the outputs exist: each file fails (and is kept).
  const CliResult outputs_exist = run({"batch", in("a.mkv"), in("b.mkv"), "--out-dir", dest, "-c", "ffv1", "--backend",
                                       "cpu", "--summary-json", summary + ".2", "-q"});
  EXPECT_EQ(outputs_exist.exit_code, 1) << outputs_exist.describe();
  EXPECT_EQ(error_lines(outputs_exist.err).size(), 2u) << outputs_exist.describe();
  EXPECT_TRUE(contains(outputs_exist.err, "-y")) << outputs_exist.describe();
  EXPECT_EQ(bytes_of(dest + "/a.mkv"), before);
  // With -y they are replaced.
  EXPECT_EQ(run({"batch", in("a.mkv"), in("b.mkv"), "--out-dir", dest, "-c", "ffv1", "--backend", "cpu", "-y", "-q",
                 "--summary-json", summary})
                .exit_code,
            0);
}

// Usage mistakes: exit 2, one clear line, nothing made.
TEST_F(CliBatch, UsageErrors) {
  SKIP_WITHOUT_CLI();
  fs::create_directories(in_dir() / "x");
  io::write_synthetic_clip(in("a.mkv"), clip(32, 24, 3));
  io::write_synthetic_clip(in("x/a.mkv"), clip(32, 24, 3));
  const std::string dest = dir.file("dest");
  const std::vector<std::pair<std::vector<std::string>, std::vector<std::string>>> cases = {
      {{"batch", in("a.mkv"), in("x/a.mkv"), "--out-dir", dest}, {"same file name", "a.mkv"}},
      {{"batch", in("a.mkv"), in("a.mkv"), "--out-dir", dest}, {"same file name"}},
      {{"batch", in("a.mkv"), "--out-dir", in_dir().string(), "-y"}, {"input", "--out-dir"}},
      {{"batch", in("a.mkv"), "--out-dir", dest, "--devices", "x"}, {"--devices", "'x'"}},
      {{"batch", in("a.mkv"), "--out-dir", dest, "--devices", "-1"}, {"--devices"}},
      {{"batch", in("a.mkv"), "--out-dir", dest, "--jobs", "0"}, {"jobs"}},
      {{"batch", in("a.mkv"), "--out-dir", dest, "--hwdec", "opencl"}, {"hwdec"}},
      {{"batch", in("a.mkv"), "--out-dir", dest, "--encoder-opt", "novalue"}, {"novalue"}},
      {{"batch", in("a.mkv")}, {"out-dir"}},
      {{"batch", "--out-dir", dest}, {"inputs"}},
  };
  for (const auto& [args, parts] : cases) {
    std::string joined;
    for (const auto& a : args) joined += a + " ";
    SCOPED_TRACE(joined);
    const CliResult r = run(args);
    ASSERT_FALSE(r.timed_out) << r.describe();
    EXPECT_EQ(r.exit_code, 2) << r.describe();
    const std::vector<std::string> errors = error_lines(r.err);
    ASSERT_EQ(errors.size(), 1u) << r.describe();
    EXPECT_EQ(errors[0].rfind("streamblur: error: ", 0), 0u) << errors[0];
    for (const std::string& p : parts) EXPECT_TRUE(contains(errors[0], p)) << "'" << p << "' not in: " << errors[0];
    EXPECT_FALSE(fs::exists(dest)) << "the output folder was made";
  }
  EXPECT_EQ(dir.listing(), (std::vector<std::string>{"in", "out"}));
}

// Ctrl-C: no new file starts, the running one is finalised, exit 130.
TEST_F(CliBatch, InterruptExits130) {
  SKIP_WITHOUT_CLI();
  std::vector<std::string> args{"batch"};
  for (const std::string name : {"a.mkv", "b.mkv", "c.mkv"}) {
    io::write_synthetic_clip(in(name), clip(160, 120, 400));
    args.push_back(in(name));
  }
  const std::string dest = out_dir().string();
  for (const std::string a : {"--out-dir", dest.c_str(), "--vf", "gblur=sigma=12", "-c", "ffv1", "--backend", "cpu",
                              "--jobs", "1", "--inflight", "2"})
    args.push_back(a);
  // Named temporaries, so the test can see the first output start.
  ::setenv("STREAMBLUR_NAMED_TEMPORARIES", "1", 1);
  Cli cli(args, capture);
  ::unsetenv("STREAMBLUR_NAMED_TEMPORARIES");
  // Wait until the first output has started (its temporary file holds data).
  bool started = false;
  for (int i = 0; i < 4000 && !started; ++i) {
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(out_dir(), ec))
      if (contains(e.path().filename().string(), ".streamblur-") && fs::file_size(e.path(), ec) > 0) started = true;
    if (!started) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ASSERT_TRUE(started) << "no output was started: " << cli.wait().describe();
  ::kill(cli.pid(), SIGINT);
  const CliResult r = cli.wait();
  ASSERT_FALSE(r.timed_out) << r.describe();
  EXPECT_EQ(r.exit_code, 130) << r.describe();
  const nlohmann::json j = read_json(out("streamblur-batch.json"));
  EXPECT_EQ(j["interrupted"], true);
  EXPECT_GE(j["skipped"].get<int>(), 1) << j.dump(2);
  EXPECT_FALSE(fs::exists(out("c.mkv")));
  for (const std::string& f : out_listing()) EXPECT_FALSE(contains(f, ".streamblur-")) << "temporary file left: " << f;
}

// The single-file command is unchanged, and its stats name decoder and device.
TEST_F(CliBatch, SingleFileModeStillWorks) {
  SKIP_WITHOUT_CLI();
  io::write_synthetic_clip(in("a.mkv"), clip(32, 24, 3));
  const std::string stats = dir.file("stats.json");
  const CliResult r = run({in("a.mkv"), out("a.mkv"), "--vf", "gblur=sigma=2", "-c", "ffv1", "--backend", "cpu",
                           "--hwdec", "none", "--device", "0", "--stats-json", stats});
  EXPECT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_EQ(frame_bytes(out("a.mkv")).size(), 3u);
  const nlohmann::json j = read_json(stats);
  EXPECT_EQ(j["decoder"], "cpu");
  EXPECT_TRUE(j.contains("device"));
  EXPECT_TRUE(j.contains("gpu_memory_bytes"));
  EXPECT_EQ(j["frames"], 3);
  const CliResult bad = run({in("a.mkv"), out("b.mkv"), "--hwdec", "opencl"});
  EXPECT_EQ(bad.exit_code, 2) << bad.describe();
  EXPECT_EQ(error_lines(bad.err).size(), 1u) << bad.describe();
}

// A folder stands for its video and image files: sorted, hidden files,
// subfolders and other files left out.
TEST_F(CliBatch, FolderInputTakesItsMediaFiles) {
  SKIP_WITHOUT_CLI();
  io::write_synthetic_clip(in("b.mkv"), clip(32, 24, 3, 1));
  io::write_synthetic_clip(in("A.MKV"), clip(32, 24, 2, 2));
  io::write_synthetic_clip(in(".hidden.mkv"), clip(32, 24, 2, 3));
  write_text_file(in("notes.txt"));
  write_text_file(in("faces.jsonl"));
  fs::create_directories(in_dir() / "sub.mkv");
  const std::string summary = dir.file("summary.json");
  const CliResult r = run({"batch", in_dir().string(), "--out-dir", out_dir().string(), "-c", "ffv1", "--backend",
                           "cpu", "--vf", "boxblur=1", "--summary-json", summary, "-q"});
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_EQ(out_listing(), (std::vector<std::string>{"A.MKV", "b.mkv"}));
  const nlohmann::json j = read_json(summary);
  ASSERT_EQ(j["results"].size(), 2u);
  EXPECT_EQ(j["results"][0]["input"], in("A.MKV"));
  EXPECT_EQ(j["results"][1]["input"], in("b.mkv"));
  // A folder without media files is a usage error, before anything runs.
  fs::create_directories(dir.path() / "empty");
  const CliResult none = run({"batch", (dir.path() / "empty").string(), "--out-dir", dir.file("o2")});
  EXPECT_EQ(none.exit_code, 2) << none.describe();
  EXPECT_TRUE(contains(none.err, "no video or image files")) << none.describe();
  EXPECT_FALSE(fs::exists(dir.file("o2")));
}

// --skip-existing resumes: outputs that exist are kept byte for byte and not
// run, the others run, exit 0; the earlier summary is kept and this run's goes
// to streamblur-batch-2.json.
TEST_F(CliBatch, SkipExistingResumes) {
  SKIP_WITHOUT_CLI();
  for (const char* name : {"a.mkv", "b.mkv", "c.mkv"}) io::write_synthetic_clip(in(name), clip(32, 24, 3, 1));
  const std::vector<std::string> common = {"--out-dir", out_dir().string(), "-c", "ffv1", "--backend", "cpu",
                                           "--vf", "boxblur=1", "-q"};
  std::vector<std::string> first = {"batch", in("a.mkv")};
  first.insert(first.end(), common.begin(), common.end());
  ASSERT_EQ(run(first).exit_code, 0);
  const std::string a_before = bytes_of(out("a.mkv")), summary_before = bytes_of(out("streamblur-batch.json"));
  std::vector<std::string> again = {"batch", in_dir().string(), "--skip-existing"};
  again.insert(again.end(), common.begin(), common.end());
  const CliResult r = run(again);
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_EQ(bytes_of(out("a.mkv")), a_before);
  EXPECT_EQ(bytes_of(out("streamblur-batch.json")), summary_before);
  EXPECT_EQ(frame_bytes(out("b.mkv")).size(), 3u);
  EXPECT_EQ(frame_bytes(out("c.mkv")).size(), 3u);
  const nlohmann::json j = read_json(out("streamblur-batch-2.json"));
  EXPECT_EQ(j["ok"], 2);
  EXPECT_EQ(j["kept"], 1);
  EXPECT_EQ(j["failed"], 0);
  EXPECT_EQ(j["results"][0]["skipped"], "output exists");
  EXPECT_FALSE(j["results"][1].contains("skipped"));
  // With -y as well it is a usage error.
  again.push_back("-y");
  const CliResult both = run(again);
  EXPECT_EQ(both.exit_code, 2) << both.describe();
  EXPECT_TRUE(contains(both.err, "--skip-existing and -y")) << both.describe();
}

}  // namespace
