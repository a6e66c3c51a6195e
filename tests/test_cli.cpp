// Tests of the streamblur command line: the real binary (STREAMBLUR_CLI_PATH)
// run with posix_spawn, stdout and stderr captured to files. Every bad input
// must give one clear error line and a non-zero exit, never a crash or hang,
// and leave nothing behind. Media are made at test time in a temporary folder.
#include <gtest/gtest.h>

#include "test_support.hpp"
#include "cli_support.hpp"
#include <nlohmann/json.hpp>

extern "C" {
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/channel_layout.h>
#include <libavutil/imgutils.h>
#include <libavutil/log.h>
#include <libavutil/pixdesc.h>
}

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <functional>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>
#include <pty.h>
#include <sys/stat.h>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <spawn.h>
#include <sstream>
#include <regex>
#include <set>
#include <string>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <vector>

#include "streamblur/io/av_error.hpp"
#include "streamblur/io/reader.hpp"
#include "streamblur/io/writer.hpp"
#include "streamblur/testing/synthetic_clip.hpp"


namespace fs = std::filesystem;
using namespace streamblur::io;
using namespace sbtest;
using Clock = std::chrono::steady_clock;

namespace {


// A failure as the issue wants it: no hang, no crash, a non-zero exit and one
// clear line on stderr (the only line with -q) naming `parts`.
void expect_clean_failure(const CliResult& r, const std::vector<std::string>& parts, bool quiet) {
  ASSERT_FALSE(r.timed_out) << "hung: " << r.describe();
  ASSERT_TRUE(r.exited) << "crashed: " << r.describe();
  EXPECT_NE(r.exit_code, 0) << r.describe();
  EXPECT_NE(r.exit_code, 130) << r.describe();
  const std::vector<std::string> lines = lines_of(r.err);
  std::vector<std::string> errors;
  for (const std::string& l : lines)
    if (contains(l, "error")) errors.push_back(l);
  ASSERT_EQ(errors.size(), 1u) << "want exactly one error line: " << r.describe();
  const std::string& e = errors.front();
  EXPECT_EQ(e.rfind("streamblur: error: ", 0), 0u) << e;
  EXPECT_GT(e.size(), std::strlen("streamblur: error: ") + 10) << "say what failed: " << e;
  for (const std::string& p : parts) EXPECT_TRUE(contains(e, p)) << "'" << p << "' not in: " << e;
  // Our source file and line are for -v only; the library's message stays.
  EXPECT_FALSE(std::regex_search(e, std::regex(R"(\.(cpp|cu|hpp):[0-9]+)"))) << "a source location in: " << e;
  for (const char* bad : {"terminate", "Aborted", "Segmentation", "what():", "core dumped"})
    EXPECT_FALSE(contains(r.err, bad)) << r.describe();
  if (quiet) EXPECT_EQ(lines.size(), 1u) << "with -q the error is the only line: " << r.describe();
  EXPECT_TRUE(r.out.empty()) << r.describe();
}

// Runs `args` plainly and with -q; both must fail cleanly and leave `dir`
// (and `untouched`, byte for byte) as they were.
void expect_bad_input(const TempDir& dir, const std::vector<std::string>& args, const std::vector<std::string>& parts,
                      const std::vector<std::string>& untouched = {}) {
  const std::vector<std::string> before = dir.listing();
  std::vector<std::string> bytes;
  for (const auto& f : untouched) bytes.push_back(bytes_of(f));
  for (const bool quiet : {false, true}) {
    std::vector<std::string> a = args;
    if (quiet) a.push_back("-q");
    SCOPED_TRACE(std::string(quiet ? "with -q" : "without -q"));
    expect_clean_failure(run_cli(a), parts, quiet);
    EXPECT_EQ(dir.listing(), before) << "the failed run left files behind";
    for (size_t i = 0; i < untouched.size(); ++i) EXPECT_EQ(bytes_of(untouched[i]), bytes[i]) << untouched[i] << " changed";
  }
}

SyntheticClipSpec small_clip(int frames = 6) {
  SyntheticClipSpec s;
  s.width = 65;
  s.height = 49;
  s.frames = frames;
  return s;
}

size_t frames_in(const std::string& path) {
  MediaReader r(path);
  DecodedFrame f;
  size_t n = 0;
  while (r.read(f)) ++n;
  return n;
}


// A folder with one small ffv1 + pcm clip, in.mkv.
class CliWithInput : public ::testing::Test {
 protected:
  void SetUp() override {
    in = dir.file("in.mkv");
    SyntheticClipSpec spec = small_clip();
    spec.width = 66;  // even: libx264 (the default encoder) takes no odd 4:2:0 sizes
    spec.height = 50;
    spec.audio = true;
    spec.audio_codec = "pcm_s16le";
    write_synthetic_clip(in, spec);
  }
  TempDir dir;
  std::string in;
};

// ---------------------------------------------------------------------------
// Information
// ---------------------------------------------------------------------------

TEST(CliInfo, Help) {
  const CliResult r = run_cli({"--help"});
  ASSERT_TRUE(r.exited) << r.describe();
  EXPECT_EQ(r.exit_code, 0) << r.describe();
  for (const char* opt : {"--vf", "--codec", "--backend", "--list-filters", "--help-filter", "--stats-json", "-y"})
    EXPECT_TRUE(contains(r.out, opt)) << opt << " missing in:\n" << r.out;
}

TEST(CliInfo, ListFilters) {
  const CliResult r = run_cli({"--list-filters"});
  EXPECT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_TRUE(contains(r.out, "gblur")) << r.out;
  EXPECT_TRUE(contains(r.out, "boxblur")) << r.out;
  EXPECT_TRUE(r.err.empty()) << r.describe();
}

TEST(CliInfo, HelpFilter) {
  CliResult r = run_cli({"--help-filter", "gblur"});
  EXPECT_EQ(r.exit_code, 0) << r.describe();
  for (const char* name : {"sigma", "radius", "sigmaV", "planes", "chroma_scale"})
    EXPECT_TRUE(contains(r.out, name)) << name << " missing in:\n" << r.out;
  r = run_cli({"--help-filter", "boxblur"});
  EXPECT_EQ(r.exit_code, 0) << r.describe();
  for (const char* name : {"radius", "planes", "chroma_scale"}) EXPECT_TRUE(contains(r.out, name)) << r.out;
  r = run_cli({"--help-filter", "nosuch"});
  expect_clean_failure(r, {"nosuch"}, true);
}

TEST(CliInfo, Version) {
  const CliResult r = run_cli({"--version"});
  EXPECT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_TRUE(contains(r.out, "streamblur")) << r.describe();
}

TEST(CliInfo, NoArgumentsOrOneArgument) {
  expect_clean_failure(run_cli({}), {"input"}, true);
  expect_clean_failure(run_cli({"in.mkv"}), {"output"}, true);
}

TEST(CliInfo, UnknownFlag) { expect_clean_failure(run_cli({"--no-such-flag"}), {"no-such-flag"}, true); }

// ---------------------------------------------------------------------------
// Bad inputs
// ---------------------------------------------------------------------------

TEST(CliBadInput, MissingFile) {
  TempDir dir;
  const std::string in = dir.file("missing.mkv");
  expect_bad_input(dir, {in, dir.file("out.mkv")}, {"missing.mkv"});
}

TEST(CliBadInput, EmptyFile) {
  TempDir dir;
  const std::string in = dir.file("empty.mp4");
  std::ofstream(in).close();
  expect_bad_input(dir, {in, dir.file("out.mkv")}, {"empty.mp4", "empty"}, {in});
}

TEST(CliBadInput, TextFile) {
  TempDir dir;
  const std::string in = dir.file("notes.mp4");
  {
    std::ofstream o(in);
    for (int i = 0; i < 200; ++i) o << "This is a text file, not a video. Line " << i << ".\n";
  }
  expect_bad_input(dir, {in, dir.file("out.mkv")}, {"notes.mp4"}, {in});
}

TEST(CliBadInput, AudioOnlyFile) {
  TempDir dir;
  const std::string in = dir.file("audio.mkv");
  write_audio_only_mkv(in);
  expect_bad_input(dir, {in, dir.file("out.mkv")}, {"audio.mkv", "no video stream"}, {in});
}

TEST(CliBadInput, SourceLocationOnlyWithVerbose) {
  TempDir dir;
  const std::string missing = dir.file("missing.mp4");
  const CliResult plain = run_cli({missing, dir.file("out.mkv")});
  const CliResult verbose = run_cli({missing, dir.file("out.mkv"), "-v"});
  EXPECT_TRUE(contains(plain.err, "No such file or directory")) << plain.describe();  // FFmpeg's own words
  EXPECT_FALSE(contains(plain.err, ".cpp:")) << plain.describe();
  EXPECT_TRUE(contains(verbose.err, "No such file or directory")) << verbose.describe();
  EXPECT_TRUE(std::regex_search(verbose.err, std::regex(R"(\(at reader\.cpp:[0-9]+\))"))) << verbose.describe();
}

TEST(CliBadInput, OddSizeWithTheDefaultEncoderSaysWhatToDo) {
  // libx264 (the default for .mp4) cannot code 4:2:0 at 65x49: streamblur does
  // not crop or change the format on its own; the error says what to do, and
  // the advice works.
  TempDir dir;
  const std::string in = dir.file("odd.mkv");
  write_synthetic_clip(in, small_clip());  // 65x49 yuv420p
  expect_bad_input(dir, {in, dir.file("out.mp4")}, {"libx264", "odd size", "65x49", "e.g. ffv1 (lossless)"}, {in});
  const CliResult r = run_cli({in, dir.file("out.mkv"), "--codec", "ffv1", "-q"});
  EXPECT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_EQ(frames_in(dir.file("out.mkv")), 6u);
}

TEST(CliBadInput, Directory) {
  TempDir dir;
  fs::create_directories(dir.path() / "adir");
  expect_bad_input(dir, {dir.file("adir"), dir.file("out.mkv")}, {"adir"});
}

TEST_F(CliWithInput, UnknownFilter) {
  expect_bad_input(dir, {in, dir.file("out.mkv"), "--vf", "sharpen=3"}, {"unknown filter 'sharpen'"}, {in});
}

TEST_F(CliWithInput, UnknownFilterOption) {
  expect_bad_input(dir, {in, dir.file("out.mkv"), "--vf", "gblur=size=3"}, {"unknown option 'size'"}, {in});
}

TEST_F(CliWithInput, ValueOutOfRange) {
  expect_bad_input(dir, {in, dir.file("out.mkv"), "--vf", "gblur=sigma=500"}, {"sigma", "out of range"}, {in});
  expect_bad_input(dir, {in, dir.file("out.mkv"), "--vf", "boxblur=radius=-2"}, {"radius", "out of range"}, {in});
}

TEST_F(CliWithInput, ValueNotANumber) {
  expect_bad_input(dir, {in, dir.file("out.mkv"), "--vf", "gblur=sigma=big"}, {"sigma", "big"}, {in});
}

TEST_F(CliWithInput, EmptyFilterInChain) {
  expect_bad_input(dir, {in, dir.file("out.mkv"), "--vf", "gblur,,boxblur"}, {"empty filter"}, {in});
}

TEST_F(CliWithInput, BadCliOptionValues) {
  expect_bad_input(dir, {in, dir.file("out.mkv"), "--crf", "99"}, {"crf"}, {in});
  expect_bad_input(dir, {in, dir.file("out.mkv"), "--backend", "opencl"}, {"backend"}, {in});
  expect_bad_input(dir, {in, dir.file("out.mkv"), "--inflight", "0"}, {"inflight"}, {in});
  expect_bad_input(dir, {in, dir.file("out.mkv"), "--encoder-opt", "novalue"}, {"novalue"}, {in});
}

TEST_F(CliWithInput, UnwritableOutputPath) {
  expect_bad_input(dir, {in, "/nonexistent/dir/out.mkv"}, {"/nonexistent/dir/out.mkv"}, {in});
}

TEST_F(CliWithInput, UnknownOutputExtension) {
  expect_bad_input(dir, {in, dir.file("out.nosuchext")}, {"out.nosuchext"}, {in});
}

TEST_F(CliWithInput, UnknownEncoder) {
  expect_bad_input(dir, {in, dir.file("out.mkv"), "--codec", "nosuchcodec"}, {"nosuchcodec"}, {in});
}

TEST_F(CliWithInput, UnknownEncoderOption) {
  expect_bad_input(dir, {in, dir.file("out.mkv"), "-c", "ffv1", "--encoder-opt", "no_such_opt=1"}, {"no_such_opt"},
                   {in});
}

TEST_F(CliWithInput, ExistingOutputWithoutOverwrite) {
  const std::string out = dir.file("out.mkv");
  { std::ofstream(out) << "precious"; }
  expect_bad_input(dir, {in, out}, {"already exists", "-y"}, {in, out});
  // -y replaces it with a complete output.
  const CliResult r = run_cli({in, out, "-y", "-c", "ffv1", "--vf", "boxblur=1"});
  EXPECT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_EQ(frames_in(out), 6u);
  EXPECT_EQ(dir.listing(), (std::vector<std::string>{"in.mkv", "out.mkv"}));
}

TEST_F(CliWithInput, OutputIsInput) {
  expect_bad_input(dir, {in, in}, {"input"}, {in});
  expect_bad_input(dir, {in, in, "-y"}, {"input"}, {in});
  expect_bad_input(dir, {in, (dir.path() / "." / "in.mkv").string(), "-y"}, {"input"}, {in});
}

TEST_F(CliWithInput, CudaWithoutDevice) {
  // The CLI links no CUDA test helper: decide from the machine itself.
  const CliResult probe = run_cli({in, dir.file("probe.mkv"), "-c", "ffv1", "--backend", "cuda"});
  if (probe.exit_code == 0) GTEST_SKIP() << "a CUDA device is present";
  fs::remove(dir.file("probe.mkv"));
  expect_bad_input(dir, {in, dir.file("out.mkv"), "--backend", "cuda"}, {STREAMBLUR_HAVE_CUDA ? "cuda" : kNoDeviceWords},
                   {in});
}

// Trimming with ffmpeg's names: each bad value is one line and a usage exit
// (2); a span past the end is a failed run (1); nothing is written either way.
TEST_F(CliWithInput, TrimBadValues) {
  const std::string out = dir.file("out.mkv");
  expect_bad_input(dir, {in, out, "-ss", "abc"}, {"-ss", "invalid time 'abc'"}, {in});
  expect_bad_input(dir, {in, out, "-ss", "-1"}, {"-ss", "negative"}, {in});
  expect_bad_input(dir, {in, out, "-t", "0"}, {"-t", "more than 0"}, {in});
  expect_bad_input(dir, {in, out, "-t", "1:60"}, {"-t", "invalid time '1:60'"}, {in});
  expect_bad_input(dir, {in, out, "--frames", "0"}, {"--frames", "at least 1"}, {in});
  expect_bad_input(dir, {in, out, "--frames", "-3"}, {"--frames", "at least 1"}, {in});
  expect_bad_input(dir, {in, out, "--frames", "2.5"}, {"--frames", "whole number"}, {in});
  EXPECT_EQ(run_cli({in, out, "-ss", "abc"}).exit_code, 2);
  expect_bad_input(dir, {in, out, "-c", "ffv1", "-ss", "5"}, {"no video frames in the requested span", "start 5 s"},
                   {in});
  EXPECT_EQ(run_cli({in, out, "-c", "ffv1", "-ss", "5"}).exit_code, 1);
}

// -ss (ffmpeg's spelling, and --ss), -t and --frames reach the pipeline: the
// 30 fps clip's frames 3, 4, 5 are [0.1 s, 0.2 s); the output starts at 0.
TEST_F(CliWithInput, TrimWithFfmpegNames) {
  const std::string out = dir.file("out.mkv");
  using Args = std::vector<std::string>;
  for (const Args& span : {Args{"-ss", "0.1", "-t", "0.1"}, Args{"--ss", "0:00.1", "-t", "100ms"},
                           Args{"-ss=0.1", "--frames", "3"}}) {
    std::vector<std::string> args{in, out, "-y", "-c", "ffv1"};
    args.insert(args.end(), span.begin(), span.end());
    const CliResult r = run_cli(args);
    ASSERT_EQ(r.exit_code, 0) << r.describe();
    EXPECT_TRUE(contains(r.err, "done: 3 frames")) << r.describe();
    MediaReader rd(out);
    DecodedFrame f;
    ASSERT_TRUE(rd.read(f));
    EXPECT_NEAR(f.frame->pts * av_q2d(rd.video().time_base), 0.0, 0.0015);
  }
  const CliResult r = run_cli({in, out, "-y", "-c", "ffv1", "--frames", "2"});
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_EQ(frames_in(out), 2u);
  EXPECT_EQ(dir.listing(), (std::vector<std::string>{"in.mkv", "out.mkv"}));
}

// Truncated input: decode what is there, warn, exit 0, playable output.
TEST(CliTruncated, WritesWhatDecodesAndWarns) {
  TempDir dir;
  const std::string in = dir.file("cut.mkv"), out = dir.file("out.mkv");
  SyntheticClipSpec spec = small_clip(30);
  spec.width = 96;
  spec.height = 64;
  spec.noise = true;
  write_synthetic_clip(in, spec);
  fs::resize_file(in, fs::file_size(in) * 6 / 10);
  const std::string in_bytes = bytes_of(in);
  const CliResult r = run_cli({in, out, "-c", "ffv1", "--vf", "gblur=sigma=1"});
  ASSERT_FALSE(r.timed_out) << r.describe();
  EXPECT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_TRUE(contains(r.err, "warning")) << r.describe();
  const size_t n = frames_in(out);
  EXPECT_GT(n, 0u);
  EXPECT_LT(n, 30u);
  EXPECT_EQ(bytes_of(in), in_bytes);
  EXPECT_EQ(dir.listing(), (std::vector<std::string>{"cut.mkv", "out.mkv"}));
}

// ---------------------------------------------------------------------------
// Successful runs
// ---------------------------------------------------------------------------

TEST_F(CliWithInput, DefaultRunKeepsFramesAndInput) {
  const std::string out = dir.file("out.mkv");
  const std::string in_bytes = bytes_of(in);
  const CliResult r = run_cli({in, out, "--vf", "gblur=sigma=2,boxblur=radius=1"});
  EXPECT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_TRUE(contains(r.err, "done: 6 frames")) << r.describe();
  EXPECT_FALSE(contains(r.err, "error")) << r.describe();
  EXPECT_EQ(frames_in(out), 6u);
  {
    MediaReader rd(out);  // default encoder for mkv: libx264; audio copied
    EXPECT_EQ(rd.video().codec_name, "h264");
    EXPECT_EQ(rd.format_context()->nb_streams, 2u);
  }
  EXPECT_EQ(bytes_of(in), in_bytes);
  EXPECT_EQ(dir.listing(), (std::vector<std::string>{"in.mkv", "out.mkv"}));
}

// The stats agree with what can be measured from outside: the frames FFmpeg
// decodes from the output, the wall time around the process, fps = frames /
// wall, and no stage busier than the run was long. A stage's blocked_s adds
// up the waits of every frame its output held, and as many frames as there
// are slots (`inflight`), plus the one the decoder holds, may wait at once:
// the bound is wall x (inflight + 1), whatever the cores (a CI run under
// ASan on 2 cores: download blocked 0.0839 s in a 0.0417 s run).
void expect_stats_consistent(const nlohmann::json& j, const std::string& out, double measured_wall_s, int inflight) {
  const int64_t frames = j.at("frames").get<int64_t>();
  EXPECT_EQ(frames, static_cast<int64_t>(frames_in(out)));
  const double wall = j.at("wall_s").get<double>();
  EXPECT_GT(wall, 0);
  EXPECT_LE(wall, measured_wall_s) << "the run reports more time than the process took";
  EXPECT_NEAR(j.at("fps").get<double>(), frames / wall, 0.01 * frames / wall);
  for (const char* k : {"setup_s", "first_frame_s", "finish_s"}) {
    EXPECT_GE(j.at(k).get<double>(), 0) << k;
    EXPECT_LE(j.at(k).get<double>(), wall) << k;
  }
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  const auto& stages = j.at("stages");
  for (const char* s : {"decode", "upload", "filter", "download", "encode"}) {
    SCOPED_TRACE(s);
    ASSERT_TRUE(stages.contains(s));
    // decode and encode are serial stages; CPU filters may run on every core.
    const double limit = std::string(s) == "filter" ? wall * cores : wall;
    EXPECT_GE(stages.at(s).at("busy_s").get<double>(), 0);
    EXPECT_LE(stages.at(s).at("busy_s").get<double>(), limit);
    EXPECT_GE(stages.at(s).at("blocked_s").get<double>(), 0);
    EXPECT_LE(stages.at(s).at("blocked_s").get<double>(), wall * (inflight + 1));
  }
}

TEST_F(CliWithInput, StatsJson) {
  const std::string out = dir.file("out.mkv"), js = dir.file("stats.json");
  const auto t0 = Clock::now();
  const CliResult r =
      run_cli({in, out, "-c", "ffv1", "--vf", "gblur=sigma=1.5", "--inflight", "4", "--stats-json", js, "-q"});
  const double measured = std::chrono::duration<double>(Clock::now() - t0).count();
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  nlohmann::json j;
  ASSERT_NO_THROW(j = nlohmann::json::parse(bytes_of(js))) << bytes_of(js);
  EXPECT_EQ(j.at("frames").get<int64_t>(), 6);
  EXPECT_TRUE(contains(j.at("filters").get<std::string>(), "gblur"));
  EXPECT_EQ(j.at("input_format").get<std::string>(), "yuv420p");
  EXPECT_EQ(j.at("processing_format").get<std::string>(), "yuv420p");
  EXPECT_FALSE(j.at("stopped_early").get<bool>());
  expect_stats_consistent(j, out, measured, 4);
  EXPECT_EQ(dir.listing(), (std::vector<std::string>{"in.mkv", "out.mkv", "stats.json"}));
}

// An unwritable stats path fails the run before anything is written: no
// video output, no temporary file (issue 14: the video was left behind).
TEST_F(CliWithInput, StatsJsonUnwritableIsAnErrorAndLeavesNothing) {
  const std::string out = dir.file("out.mkv");
  expect_bad_input(dir, {in, out, "-c", "ffv1", "--stats-json", "/nonexistent/dir/stats.json"},
                   {"stats", "/nonexistent/dir/stats.json"}, {in});
  // The parent is a file, and the path is a folder.
  expect_bad_input(dir, {in, out, "-c", "ffv1", "--stats-json", in + "/stats.json"}, {"stats"}, {in});
  expect_bad_input(dir, {in, out, "-c", "ffv1", "--stats-json", dir.path().string()}, {"stats", "folder"}, {in});
  EXPECT_EQ(dir.listing(), (std::vector<std::string>{"in.mkv"}));
}

// --re reads at the clip's frame rate: 45 frames at 30 fps take 1.5 s, and
// the stats (frames, fps, wall time) match the clock; waiting for the clock
// is not counted as decoding work.
TEST(CliRe, ReadsAtTheNativeFrameRate) {
  TempDir dir;
  const std::string in = dir.file("in.mkv"), out = dir.file("out.mkv"), js = dir.file("stats.json");
  SyntheticClipSpec spec = small_clip(45);
  spec.fps = 30;
  write_synthetic_clip(in, spec);
  const auto t0 = Clock::now();
  const CliResult r = run_cli({in, out, "-c", "ffv1", "--re", "--inflight", "4", "--stats-json", js, "-q"});
  const double measured = std::chrono::duration<double>(Clock::now() - t0).count();
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  const double paced = 44.0 / 30;  // the last frame is due 44 frame times after the first
  EXPECT_GE(measured, paced);
  const nlohmann::json j = nlohmann::json::parse(bytes_of(js));
  EXPECT_EQ(j.at("frames").get<int64_t>(), 45);
  EXPECT_GE(j.at("wall_s").get<double>(), paced);
  EXPECT_LE(j.at("fps").get<double>(), 45 / paced);
  EXPECT_LT(j.at("stages").at("decode").at("busy_s").get<double>(), 0.5 * paced) << "the pacing was counted as work";
  expect_stats_consistent(j, out, measured, 4);
}

TEST_F(CliWithInput, BackendCpuForced) {
  const std::string out = dir.file("out.mkv"), js = dir.file("stats.json");
  const CliResult r = run_cli({in, out, "-c", "ffv1", "--backend", "cpu", "--vf", "boxblur", "--stats-json", js});
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_TRUE(contains(r.err, "backend: cpu (asked for)")) << r.describe();
  EXPECT_EQ(nlohmann::json::parse(bytes_of(js)).at("backend").get<std::string>(), "cpu");
}

TEST_F(CliWithInput, QuietPrintsNothing) {
  const std::string out = dir.file("out.mkv");
  const CliResult r = run_cli({in, out, "-q", "--vf", "gblur=sigma=1", "--preset", "ultrafast"});
  EXPECT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_TRUE(r.err.empty()) << r.describe();
  EXPECT_TRUE(r.out.empty()) << r.describe();
  EXPECT_EQ(frames_in(out), 6u);
}

// The writer's notes ("encoder png cannot take yuv420p; converting ...") go
// through PipelineOptions::note, so -q silences them too.
TEST_F(CliWithInput, QuietPrintsNothingWhenTheEncoderConverts) {
  const std::string out = dir.file("frame%03d.png");
  const CliResult r = run_cli({in, out, "-q"});
  EXPECT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_TRUE(r.err.empty()) << r.describe();
  EXPECT_TRUE(r.out.empty()) << r.describe();
}

TEST_F(CliWithInput, WriterNotesNameTheOutputNotItsTemporaryFile) {
  const std::string out = dir.file("frame%03d.png");
  const CliResult r = run_cli({in, out});
  EXPECT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_NE(r.err.find("converting frames to"), std::string::npos) << r.describe();
  EXPECT_NE(r.err.find(out), std::string::npos) << r.describe();
  EXPECT_EQ(r.err.find(".streamblur-"), std::string::npos) << r.describe();
}

TEST(CliOddSize, Libx264OddSizeErrorQuotesTheEncodersReason) {
  TempDir dir;
  const std::string in = dir.file("odd.mkv"), out = dir.file("odd.mp4");
  SyntheticClipSpec spec = small_clip(2);
  spec.width = 65;
  spec.height = 49;
  write_synthetic_clip(in, spec);
  const CliResult r = run_cli({in, out, "-q"});
  EXPECT_NE(r.exit_code, 0) << r.describe();
  EXPECT_NE(r.err.find("libx264"), std::string::npos) << r.describe();
  EXPECT_NE(r.err.find("divisible by 2"), std::string::npos) << r.describe();
  EXPECT_FALSE(std::filesystem::exists(out));
}

TEST(CliStill, PngInPngOut) {
  TempDir dir;
  const std::string in = dir.file("still.png"), out = dir.file("blurred.png");
  SyntheticClipSpec spec = small_clip(1);
  spec.codec = "png";
  spec.pix_fmt = AV_PIX_FMT_RGB24;
  write_synthetic_clip(in, spec);
  const CliResult r = run_cli({in, out, "--vf", "gblur=sigma=2"});
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  MediaReader rd(out);
  EXPECT_EQ(rd.video().codec_name, "png");
  EXPECT_EQ(rd.video().width, 65);
  EXPECT_EQ(rd.video().height, 49);
  EXPECT_EQ(frames_in(out), 1u);
  EXPECT_EQ(dir.listing(), (std::vector<std::string>{"blurred.png", "still.png"}));
}

// ---------------------------------------------------------------------------
// Signals: a finalised, playable output with the frames done and exit 128 +
// the signal (130 for Ctrl-C); a second signal ends at once and leaves no
// temporary file. The set-ups are deterministic, so there is nothing to skip:
// --re makes a 300-frame 30 fps clip take 10 s, so a signal sent once frames
// are going through certainly finds the run running; a live input (a FIFO
// the test holds open) blocks the run after the first signal until the second.
// ---------------------------------------------------------------------------

// 300 frames at 30 fps (10 s under --re), small enough to encode at once.
std::string paced_clip(const TempDir& dir, const std::string& name = "long.mp4") {
  const std::string in = dir.file(name);
  SyntheticClipSpec spec;
  spec.width = 64;
  spec.height = 48;
  spec.frames = 300;
  spec.fps = 30;
  spec.codec = "libx264";
  spec.preset = "ultrafast";
  write_synthetic_clip(in, spec);
  return in;
}

// Whether process `pid` has a file in `dir` open that holds data: its
// temporary output, unnamed ("DIR/#123 (deleted)") or hidden, once a frame went out.
bool writes_in(pid_t pid, const fs::path& dir) {
  std::error_code ec;
  for (const auto& e : fs::directory_iterator("/proc/" + std::to_string(pid) + "/fd", ec)) {
    const std::string target = fs::read_symlink(e.path(), ec).string();
    struct stat st {};
    if (ec || target.rfind(dir.string() + "/", 0) != 0 || ::stat(e.path().c_str(), &st) != 0) continue;
    const bool temporary = contains(target, " (deleted)") || fs::path(target).filename().string().rfind(".", 0) == 0;
    if (S_ISREG(st.st_mode) && st.st_size > 0 && temporary) return true;
  }
  return false;
}

// Waits until the run's temporary output holds data (the handlers are
// installed and frames are going through) and `ready` (if given) holds.
// Fails the test when the process ends first.
::testing::AssertionResult wait_until_running(CliProcess& p, const TempDir& dir,
                                              const std::function<bool()>& ready = {}) {
  const auto deadline = Clock::now() + std::chrono::seconds(60);
  while (Clock::now() < deadline) {
    if (p.poll()) return ::testing::AssertionFailure() << "the run ended early: " << p.wait().describe();
    if (writes_in(p.pid(), dir.path()) && (!ready || ready())) return ::testing::AssertionSuccess();
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return ::testing::AssertionFailure() << "no frame went through in 60 s";
}

// One signal during a paced run: exit 128 + signal, a finalised output with
// some frames but not all, nothing else left; it stops at once, not after
// the clip's 10 s.
void expect_first_signal_finalises(int sig) {
  TempDir dir;
  const std::string in = paced_clip(dir), out = dir.file("out.mp4");
  CliProcess p({in, out, "--re", "--backend", "cpu", "--preset", "ultrafast"}, capture_dir());
  ASSERT_TRUE(wait_until_running(p, dir));
  const auto sent = Clock::now();
  ASSERT_EQ(::kill(p.pid(), sig), 0);
  const CliResult r = p.wait();
  const double took = std::chrono::duration<double>(Clock::now() - sent).count();
  ASSERT_FALSE(r.timed_out) << r.describe();
  ASSERT_TRUE(r.exited) << "ended by the signal instead of finishing: " << r.describe();
  EXPECT_EQ(r.exit_code, 128 + sig) << r.describe();
  EXPECT_LT(took, 5.0) << "the run went on after the signal";
  EXPECT_TRUE(contains(r.err, "stopped early")) << r.describe();
  ASSERT_TRUE(fs::exists(out)) << r.describe();
  const size_t n = frames_in(out);  // an mp4 reads back only when finalised
  EXPECT_GT(n, 0u);
  EXPECT_LT(n, 300u);
  EXPECT_EQ(dir.listing(), (std::vector<std::string>{"long.mp4", "out.mp4"}));
}

TEST(CliSignal, SigintFinalisesOutputAndExits130) { expect_first_signal_finalises(SIGINT); }
TEST(CliSignal, SigtermFinalisesLikeTheFirstCtrlC) { expect_first_signal_finalises(SIGTERM); }
TEST(CliSignal, SighupFinalisesLikeTheFirstCtrlC) { expect_first_signal_finalises(SIGHUP); }

// A segmented run stopped by Ctrl-C, or killed, while its spans spool their
// packets: no output, no spool and no temporary is left; Ctrl-C exits 130
// and says that nothing was written.
TEST(CliSignal, SegmentedRunStoppedOrKilledLeavesNothing) {
  TempDir dir;
  const std::string in = dir.file("long.mkv"), out = dir.file("out.mkv");
  SyntheticClipSpec spec;
  spec.width = 640;
  spec.height = 480;
  spec.frames = 900;
  spec.video_options = "g=30";
  write_synthetic_clip(in, spec);
  for (const int sig : {SIGINT, SIGKILL}) {
    SCOPED_TRACE(strsignal(sig));
    CliProcess p({in, out, "--vf", "gblur=sigma=20,boxblur=radius=20", "--backend", "cpu", "--segments", "3", "-c:v",
                  "ffv1"},
                 capture_dir());
    ASSERT_TRUE(wait_until_running(p, dir));  // the spans' spools (unnamed files in the folder) hold packets
    ASSERT_EQ(::kill(p.pid(), sig), 0);
    const CliResult r = p.wait();
    ASSERT_FALSE(r.timed_out) << r.describe();
    if (sig == SIGINT) {
      EXPECT_EQ(r.exit_code, 130) << r.describe();
      EXPECT_TRUE(contains(r.err, "writes no partial output")) << r.describe();
    }
    EXPECT_EQ(dir.listing(), (std::vector<std::string>{"long.mkv"})) << "a spool, temporary or partial output was left";
  }
}

// Whether a thread of `pid` is blocked in read(2) on its descriptor of `path`
// (from /proc: the syscall number 0 and its first argument).
bool blocked_reading(pid_t pid, const std::string& path) {
  const fs::path proc = "/proc/" + std::to_string(pid);
  std::error_code ec;
  std::vector<int> fds;
  for (const auto& e : fs::directory_iterator(proc / "fd", ec)) {
    std::error_code ec2;
    if (fs::read_symlink(e.path(), ec2) == fs::path(path)) fds.push_back(std::stoi(e.path().filename().string()));
  }
  if (fds.empty()) return false;
  for (const auto& t : fs::directory_iterator(proc / "task", ec)) {
    std::ifstream f(t.path() / "syscall");
    long nr = -1;
    std::string arg;
    if (!(f >> nr >> arg) || nr != 0) continue;
    const long fd = std::strtol(arg.c_str(), nullptr, 16);
    if (std::find(fds.begin(), fds.end(), static_cast<int>(fd)) != fds.end()) return true;
  }
  return false;
}

TEST(CliSignal, SecondSignalEndsAtOnceAndLeavesNoTemporaryFile) {
  for (const auto& [first, second] : {std::pair{SIGINT, SIGINT}, std::pair{SIGTERM, SIGTERM}, std::pair{SIGHUP, SIGINT}}) {
    SCOPED_TRACE(std::string(strsignal(first)) + " then " + strsignal(second));
    TempDir dir;
    // A live input: the first 60 % of a clip through a FIFO the test keeps
    // open, so the run decodes what came and then waits for more.
    const std::string clip = paced_clip(dir, "clip.ts"), live = dir.file("live.ts"), out = dir.file("out.mp4");
    const std::string bytes = bytes_of(clip);
    fs::remove(clip);
    ASSERT_EQ(::mkfifo(live.c_str(), 0600), 0) << std::strerror(errno);
    // Read-write: opening does not wait for the reader, and the run never sees EOF.
    const int fd = ::open(live.c_str(), O_RDWR);
    ASSERT_GE(fd, 0) << std::strerror(errno);
    std::thread feeder([fd, part = bytes.substr(0, bytes.size() * 6 / 10)] {
      for (size_t done = 0; done < part.size();) {
        const ssize_t n = ::write(fd, part.data() + done, part.size() - done);
        if (n <= 0) return;
        done += static_cast<size_t>(n);
      }
    });
    CliProcess p({live, out, "--backend", "cpu", "--preset", "ultrafast"}, capture_dir());
    // Frames went through and the run is blocked reading the FIFO: it cannot
    // finish, whatever the first signal asks, until the second ends it.
    const pid_t pid = p.pid();
    EXPECT_TRUE(wait_until_running(p, dir, [&] { return blocked_reading(pid, live); }));
    feeder.join();
    ASSERT_EQ(::kill(pid, first), 0);
    // Still there a while later: the first signal does not end a blocked run...
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    EXPECT_FALSE(p.poll()) << "the first signal ended the run: " << p.wait().describe();
    // ...the second does, at once.
    ::kill(pid, second);
    const auto sent = Clock::now();
    const CliResult r = p.wait();
    ::close(fd);
    EXPECT_LT(std::chrono::duration<double>(Clock::now() - sent).count(), 5.0);
    ASSERT_FALSE(r.timed_out) << r.describe();
    ASSERT_TRUE(r.exited) << r.describe();
    EXPECT_EQ(r.exit_code, 128 + second) << "not ended by the second signal: " << r.describe();
    EXPECT_EQ(dir.listing(), (std::vector<std::string>{"live.ts"})) << "a temporary or partial output was left";
  }
}

// ---------------------------------------------------------------------------
// The progress line: only on a terminal, redrawn in place with \r
// ---------------------------------------------------------------------------

struct PtyResult {
  bool exited = false;
  int exit_code = -1;
  std::string text;  // everything the terminal got (stdout and stderr)
};

// Runs the CLI with a pseudo-terminal as its stdin, stdout and stderr.
PtyResult run_cli_on_pty(const std::vector<std::string>& args) {
  PtyResult res;
  int master = -1;
  std::vector<std::string> all{kCli};
  all.insert(all.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : all) argv.push_back(a.data());
  argv.push_back(nullptr);
  const pid_t pid = ::forkpty(&master, nullptr, nullptr, nullptr);
  if (pid < 0) throw std::runtime_error(std::string("forkpty: ") + std::strerror(errno));
  if (pid == 0) {
    ::execv(kCli, argv.data());
    ::_exit(127);
  }
  const auto deadline = Clock::now() + std::chrono::seconds(60);
  char buf[4096];
  for (;;) {
    pollfd pfd{master, POLLIN, 0};
    if (Clock::now() > deadline) {
      ::kill(pid, SIGKILL);
      break;
    }
    if (::poll(&pfd, 1, 100) > 0) {
      const ssize_t n = ::read(master, buf, sizeof buf);
      if (n > 0) {
        res.text.append(buf, static_cast<size_t>(n));
        continue;
      }
      break;  // EIO: the child closed the terminal
    }
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  ::close(master);
  res.exited = WIFEXITED(status);
  res.exit_code = res.exited ? WEXITSTATUS(status) : -1;
  return res;
}

TEST_F(CliWithInput, ProgressLineOnATerminalOnly) {
  // 45 frames at 30 fps under --re: 1.5 s, several progress ticks (4 a second).
  const std::string paced = dir.file("paced.mkv");
  SyntheticClipSpec spec = small_clip(45);
  spec.fps = 30;
  write_synthetic_clip(paced, spec);
  const PtyResult t = run_cli_on_pty({paced, dir.file("out.mkv"), "-c", "ffv1", "--re"});
  ASSERT_TRUE(t.exited) << t.text;
  EXPECT_EQ(t.exit_code, 0) << t.text;
  // Each redraw starts with \r; the count goes up and ends at 45/45.
  size_t redraws = 0;
  for (size_t at = t.text.find("\rframe "); at != std::string::npos; at = t.text.find("\rframe ", at + 1)) ++redraws;
  EXPECT_GE(redraws, 3u) << t.text;
  EXPECT_TRUE(contains(t.text, "\rframe 45/45")) << t.text;
  EXPECT_LT(t.text.find("\rframe "), t.text.find("frame 45/45")) << t.text;
  EXPECT_TRUE(contains(t.text, "done: 45 frames")) << t.text;
  // -q on the terminal: nothing at all.
  const PtyResult q = run_cli_on_pty({paced, dir.file("out2.mkv"), "-c", "ffv1", "-q"});
  EXPECT_EQ(q.exit_code, 0) << q.text;
  EXPECT_EQ(q.text, "");
  // Not a terminal (files): no progress line, no \r.
  const CliResult r = run_cli({paced, dir.file("out3.mkv"), "-c", "ffv1", "--re"});
  EXPECT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_FALSE(contains(r.err, "\r")) << r.describe();
  EXPECT_FALSE(contains(r.err, "fps  speed")) << r.describe();
  EXPECT_TRUE(contains(r.err, "done: 45 frames")) << r.describe();
}

// ---------------------------------------------------------------------------
// Hostile input (issue 9): each of these aborted, leaked a file or printed
// more than one line before it was fixed.
// ---------------------------------------------------------------------------

TEST(CliHostileInput, PngSignatureAloneIsOneErrorLineNotAnAbort) {
  TempDir dir;
  const std::string in = dir.file("s.png");
  std::ofstream(in, std::ios::binary) << std::string("\x89PNG\r\n\x1a\n", 8);
  expect_bad_input(dir, {in, dir.file("o.png"), "-y", "--backend", "cpu"}, {"s.png"}, {in});
}

TEST(CliHostileInput, TruncatedFfv1MatroskaNeverAborts) {
  TempDir dir;
  const std::string full = dir.file("full.mkv"), in = dir.file("cut.mkv");
  write_synthetic_clip(full, small_clip(4));
  const std::string bytes = bytes_of(full);
  for (const size_t keep : {std::size_t{300}, std::size_t{900}, std::size_t{1500}}) {
    std::ofstream(in, std::ios::binary | std::ios::trunc) << bytes.substr(0, std::min(keep, bytes.size()));
    const CliResult r = run_cli({in, dir.file("out.mkv"), "-y", "--backend", "cpu", "-q"});
    SCOPED_TRACE("first " + std::to_string(keep) + " bytes");
    ASSERT_FALSE(r.timed_out) << r.describe();
    ASSERT_TRUE(r.exited) << "crashed: " << r.describe();
    if (r.exit_code != 0) {
      expect_clean_failure(r, {"cut.mkv"}, true);
      EXPECT_FALSE(fs::exists(dir.file("out.mkv")));
    }
    std::error_code ec;
    fs::remove(dir.file("out.mkv"), ec);
  }
}

// A palette PNG made with FFmpeg's own png encoder: left half palette entry
// 0 (opaque red), right half entry 1 (opaque blue).
void write_pal8_png(const std::string& path, int w, int h) {
  const AVCodec* codec = avcodec_find_encoder(AV_CODEC_ID_PNG);
  ASSERT_NE(codec, nullptr);
  const AVCodecContextPtr ctx_owner(avcodec_alloc_context3(codec));
  ASSERT_NE(ctx_owner, nullptr);
  AVCodecContext* ctx = ctx_owner.get();
  ctx->width = w;
  ctx->height = h;
  ctx->pix_fmt = AV_PIX_FMT_PAL8;
  ctx->time_base = AVRational{1, 25};
  ASSERT_EQ(avcodec_open2(ctx, codec, nullptr), 0);
  const AVFramePtr frame = make_frame();
  AVFrame* f = frame.get();
  f->width = w;
  f->height = h;
  f->format = AV_PIX_FMT_PAL8;
  ASSERT_EQ(av_frame_get_buffer(f, 0), 0);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) f->data[0][y * f->linesize[0] + x] = x < w / 2 ? 0 : 1;
  auto* pal = reinterpret_cast<uint32_t*>(f->data[1]);
  for (int i = 0; i < 256; ++i) pal[i] = 0xff000000u;
  pal[0] = 0xffff0000u;  // ARGB: red
  pal[1] = 0xff0000ffu;  // blue
  ASSERT_EQ(avcodec_send_frame(ctx, f), 0);
  ASSERT_EQ(avcodec_send_frame(ctx, nullptr), 0);
  const AVPacketPtr pkt = make_packet();
  ASSERT_EQ(avcodec_receive_packet(ctx, pkt.get()), 0);
  std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(pkt->data), pkt->size);
}

TEST(CliHostileInput, PalettePngIsBlurredAsRgbaWithANote) {
  TempDir dir;
  const std::string in = dir.file("pal.png"), out = dir.file("out.png");
  write_pal8_png(in, 64, 48);
  {
    MediaReader check(in);
    ASSERT_EQ(check.video().pix_fmt, AV_PIX_FMT_PAL8) << "the test image is not a palette image";
  }
  const CliResult r = run_cli({in, out, "--backend", "cpu", "--vf", "gblur=sigma=2"});
  ASSERT_TRUE(r.exited && r.exit_code == 0) << r.describe();
  EXPECT_TRUE(contains(r.err, "pal8")) << "no note about the palette: " << r.describe();
  MediaReader rd(out);
  DecodedFrame f;
  ASSERT_TRUE(rd.read(f));
  ASSERT_EQ(f.frame->format, AV_PIX_FMT_RGBA);
  auto px = [&](int x, int y) { return f.frame->data[0] + y * f.frame->linesize[0] + 4 * x; };
  // Far from the edge between the halves the colours stay; at it they mix.
  EXPECT_EQ(px(2, 20)[0], 255);
  EXPECT_EQ(px(2, 20)[2], 0);
  EXPECT_EQ(px(61, 20)[0], 0);
  EXPECT_EQ(px(61, 20)[2], 255);
  EXPECT_GT(px(31, 20)[0], 60);
  EXPECT_GT(px(31, 20)[2], 20);
  EXPECT_EQ(px(31, 20)[3], 255);
}

TEST(CliHostileInput, BadPresetIsReportedOnce) {
  TempDir dir;
  const std::string in = dir.file("in.mkv");
  SyntheticClipSpec spec = small_clip(3);
  spec.width = 64;
  spec.height = 48;
  write_synthetic_clip(in, spec);
  const CliResult r = run_cli({in, dir.file("out.mp4"), "--preset", "nosuch", "--backend", "cpu"});
  ASSERT_TRUE(r.exited) << r.describe();
  EXPECT_EQ(r.exit_code, 1) << r.describe();
  size_t ours = 0, x264_lines = 0;
  for (const std::string& l : lines_of(r.err)) {
    ours += l.rfind("streamblur: error: ", 0) == 0;
    x264_lines += contains(l, "x264 [error]");
  }
  EXPECT_EQ(ours, 1u) << r.describe();
  EXPECT_LE(x264_lines, 1u) << "the encoder was opened more than once: " << r.describe();
  EXPECT_TRUE(contains(r.err, "nosuch")) << r.describe();
  EXPECT_EQ(dir.listing(), std::vector<std::string>{"in.mkv"});
}

TEST(CliHostileInput, SpecErrorsStayOneShortLine) {
  TempDir dir;
  const std::string in = dir.file("in.mkv");
  write_synthetic_clip(in, small_clip(2));
  const std::string huge = "gblur=sigma=" + std::string(100000, '7') + "x";
  const std::vector<std::string> specs = {"gblur=sigma=2,\n,boxblur", "gblur\n=sigma=2\n:nope=1", huge,
                                          "boxblur=radius=\x01\x02", "gblur=" + std::string(5000, ':')};
  for (const std::string& spec : specs) {
    const CliResult r = run_cli({in, dir.file("out.mkv"), "--vf", spec, "-q"});
    SCOPED_TRACE(spec.substr(0, 40));
    expect_clean_failure(r, {}, true);
    EXPECT_LT(r.err.size(), 400u) << "the error echoes too much: " << r.err.size() << " bytes";
    for (char c : r.err.substr(0, r.err.size() - 1))
      EXPECT_TRUE(c != '\n' && (static_cast<unsigned char>(c) >= 0x20)) << "raw control byte in: " << r.err;
  }
  EXPECT_EQ(dir.listing(), std::vector<std::string>{"in.mkv"});
}


// Mutants of the suite's own tiny clips through the real binary: byte flips,
// truncation, a removed or a duplicated chunk. Whatever the bytes, the run
// ends by itself (no signal, no hang), fails with one error line or succeeds,
// and leaves nothing but a finished output behind. STREAMBLUR_TEST_SEED
// replays a run; STREAMBLUR_MUTANTS sets how many per clip.
TEST(CliMutants, DamagedInputsNeverCrashHangOrLeaveFiles) {
  TempDir dir;
  struct Source { std::string name; SyntheticClipSpec spec; };
  std::vector<Source> sources;
  auto add = [&](const std::string& name, const std::string& codec, AVPixelFormat fmt, bool audio) {
    SyntheticClipSpec s = small_clip(3);
    s.width = 48;
    s.height = 32;
    s.codec = codec;
    s.pix_fmt = fmt;
    s.audio = audio;
    s.audio_codec = "pcm_s16le";
    if (codec == "libx264") s.preset = "ultrafast";
    sources.push_back({name, s});
  };
  add("a.mkv", "ffv1", AV_PIX_FMT_YUV420P, true);
  add("b.mp4", "libx264", AV_PIX_FMT_YUV420P, false);
  add("c.avi", "mpeg4", AV_PIX_FMT_YUV420P, true);
  add("d.png", "png", AV_PIX_FMT_RGB24, false);
  const unsigned seed = fresh_seed();  // replayable: STREAMBLUR_TEST_SEED (test_support.hpp)
  const char* count_env = std::getenv("STREAMBLUR_MUTANTS");
  const int per_clip = count_env ? std::atoi(count_env) : 60;
  SCOPED_TRACE("seed " + std::to_string(seed) + " (from STREAMBLUR_TEST_SEED=" +
               std::to_string(TestSeeds::instance().base()) + ")");
  std::mt19937 rng(seed);
  int runs = 0, crashes = 0, hangs = 0, leftovers = 0, successes = 0;
  for (const Source& src : sources) {
    const std::string clean = dir.file("clean-" + src.name);
    write_synthetic_clip(clean, src.spec);
    const std::string bytes = bytes_of(clean);
    fs::remove(clean);
    const std::string ext = fs::path(src.name).extension().string();
    for (int i = 0; i < per_clip; ++i) {
      std::string m = bytes;
      auto pick = [&](size_t n) { return std::uniform_int_distribution<size_t>(0, n ? n - 1 : 0)(rng); };
      switch (i % 4) {
        case 0:  // byte flips
          for (int k = 0, n = 1 + static_cast<int>(pick(8)); k < n && !m.empty(); ++k) m[pick(m.size())] ^= 1 << pick(8);
          break;
        case 1:  // truncation
          m.resize(pick(m.size()));
          break;
        case 2: {  // a chunk removed
          const size_t at = pick(m.size()), len = std::min(m.size() - at, 1 + pick(64));
          m.erase(at, len);
          break;
        }
        default: {  // a chunk duplicated
          const size_t at = pick(m.size()), len = std::min(m.size() - at, 1 + pick(64));
          m.insert(at, m.substr(at, len));
          break;
        }
      }
      const std::string in = dir.file("m" + ext), out = dir.file("out" + ext);
      std::ofstream(in, std::ios::binary | std::ios::trunc) << m;
      const CliResult r = CliProcess({in, out, "-y", "-q", "--backend", "cpu", "--vf", "gblur=sigma=1"}, capture_dir())
                              .wait(std::chrono::seconds(30));
      ++runs;
      const std::string what = src.name + " mutant " + std::to_string(i) + ": " + r.describe();
      if (r.timed_out) { ++hangs; ADD_FAILURE() << "hang: " << what; }
      else if (!r.exited) { ++crashes; ADD_FAILURE() << "crash: " << what; }
      else if (r.exit_code == 0) ++successes;
      else {
        EXPECT_EQ(r.exit_code, 1) << what;
        EXPECT_EQ(lines_of(r.err).size(), 1u) << what;
        EXPECT_EQ(r.err.rfind("streamblur: error: ", 0), 0u) << what;
      }
      std::vector<std::string> expected{fs::path(in).filename().string()};
      if (r.exited && r.exit_code == 0) expected.push_back(fs::path(out).filename().string());
      std::sort(expected.begin(), expected.end());
      if (dir.listing() != expected) { ++leftovers; ADD_FAILURE() << "left behind: " << what; }
      std::error_code ec;
      fs::remove(out, ec);
      fs::remove(in, ec);
    }
  }
  std::printf("mutants: %d runs, %d succeeded, %d crashes, %d hangs, %d left files behind (seed %u)\n", runs,
              successes, crashes, hangs, leftovers, seed);
}

}  // namespace

// ---------------------------------------------------------------------------
// Image sequences (issue 15): a pattern in reads every file, a pattern out
// writes every frame, and several frames never collapse into one image.
// ---------------------------------------------------------------------------

namespace {

// in/f001.png ... in/f005.png, each frame different.
std::string make_png_sequence(const TempDir& dir, int frames = 5) {
  fs::create_directories(dir.path() / "in");
  SyntheticClipSpec spec = small_clip(frames);
  spec.codec = "png";
  spec.pix_fmt = AV_PIX_FMT_RGB24;
  const std::string pattern = dir.file("in/f%03d.png");
  write_synthetic_clip(pattern, spec);
  return pattern;
}

std::vector<std::string> names_in(const fs::path& folder) {
  std::vector<std::string> v;
  for (const auto& e : fs::directory_iterator(folder)) v.push_back(e.path().filename().string());
  std::sort(v.begin(), v.end());
  return v;
}

// The decoded pixels of a one-picture file, plane by plane.
std::string picture_bytes(const std::string& path) {
  MediaReader r(path);
  DecodedFrame f;
  if (!r.read(f)) return "";
  std::string bytes;
  const AVFrame& fr = *f.frame;
  const int planes = av_pix_fmt_count_planes(static_cast<AVPixelFormat>(fr.format));
  for (int p = 0; p < planes; ++p) {
    const int row = av_image_get_linesize(static_cast<AVPixelFormat>(fr.format), fr.width, p);
    const int rows = p == 0 ? fr.height : AV_CEIL_RSHIFT(fr.height, av_pix_fmt_desc_get(static_cast<AVPixelFormat>(fr.format))->log2_chroma_h);
    for (int y = 0; y < rows; ++y) bytes.append(reinterpret_cast<const char*>(fr.data[p] + y * fr.linesize[p]), row);
  }
  return bytes;
}

}  // namespace

// The issue's case: `streamblur in/f%03d.png out/o%03d.png` on 5 frames writes
// o001.png ... o005.png (as ffmpeg does), each the blur of its own input frame
// (the reference: the same blur of that one file run alone), and nothing else.
TEST(CliSequence, FivePngFramesInAndOut) {
  TempDir dir;
  const std::string in = make_png_sequence(dir);
  fs::create_directories(dir.path() / "out");
  const std::string out = dir.file("out/o%03d.png");
  const CliResult r = run_cli({in, out, "--vf", "gblur=sigma=2", "--backend", "cpu"});
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_EQ(names_in(dir.path() / "out"),
            (std::vector<std::string>{"o001.png", "o002.png", "o003.png", "o004.png", "o005.png"}));
  EXPECT_EQ(frames_in(out), 5u);  // the pattern reads back as a 5-frame input
  fs::create_directories(dir.path() / "ref");
  for (int i = 1; i <= 5; ++i) {
    char name[16];
    std::snprintf(name, sizeof name, "%03d.png", i);
    const std::string one_in = dir.file(std::string("in/f") + name), ref = dir.file(std::string("ref/r") + name);
    const CliResult rr = run_cli({one_in, ref, "--vf", "gblur=sigma=2", "--backend", "cpu", "-q"});
    ASSERT_EQ(rr.exit_code, 0) << rr.describe();
    const std::string got = picture_bytes(dir.file(std::string("out/o") + name));
    EXPECT_FALSE(got.empty());
    EXPECT_EQ(got, picture_bytes(ref)) << "frame " << i;
  }
  EXPECT_NE(picture_bytes(dir.file("out/o001.png")), picture_bytes(dir.file("out/o005.png")));
}

// Several frames into one plain image name: an error naming a pattern to use,
// and nothing written (ffmpeg's image2 would keep only the last picture).
TEST_F(CliWithInput, SeveralFramesIntoOneImageIsAnError) {
  expect_bad_input(dir, {in, dir.file("frame.png")}, {"frame.png", "more than one frame", "frame%03d.png"}, {in});
}

// A sequence whose first file exists is not overwritten without -y; with -y
// it is, and no hidden folder is left behind.
TEST(CliSequence, ExistingSequenceNeedsOverwrite) {
  TempDir dir;
  const std::string in = make_png_sequence(dir, 3);
  const std::string out = dir.file("o%d.png");
  { std::ofstream(dir.file("o1.png")) << "precious"; }
  expect_bad_input(dir, {in, out, "--backend", "cpu"}, {"already exists", "o1.png", "-y"}, {dir.file("o1.png")});
  const CliResult r = run_cli({in, out, "--backend", "cpu", "-y", "--vf", "boxblur=1"});
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_EQ(dir.listing(), (std::vector<std::string>{"in", "o1.png", "o2.png", "o3.png"}));
  EXPECT_EQ(frames_in(dir.file("o1.png")), 1u);
}

// A run that fails while a sequence is written leaves no part of it: the
// frames wait in a hidden folder that the failure removes.
TEST(CliSequence, FailureLeavesNoPartialSequence) {
  TempDir dir;
  const std::string in = make_png_sequence(dir, 4);
  // The last file is bigger: the size changes mid-stream, which fails the run
  // after the first frames were written.
  SyntheticClipSpec big = small_clip(1);
  big.width = 80;
  big.codec = "png";
  big.pix_fmt = AV_PIX_FMT_RGB24;
  write_synthetic_clip(dir.file("in/f004.png"), big);
  const CliResult r = run_cli({in, dir.file("o%03d.png"), "--backend", "cpu", "--vf", "boxblur=1"});
  EXPECT_NE(r.exit_code, 0) << r.describe();
  EXPECT_EQ(dir.listing(), (std::vector<std::string>{"in"})) << r.describe();
}

// The batch mode takes a sequence like any input: DIR/<its pattern>.
TEST(CliSequence, BatchWritesTheWholeSequence) {
  TempDir dir;
  const std::string in = make_png_sequence(dir, 3);
  const CliResult r = run_cli({"batch", in, "--out-dir", dir.file("out"), "--backend", "cpu", "--vf", "boxblur=1"});
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_EQ(names_in(dir.path() / "out"),
            (std::vector<std::string>{"f001.png", "f002.png", "f003.png", "streamblur-batch.json"}));
}

namespace {

// ---------------------------------------------------------------------------
// FFmpeg's spellings
// ---------------------------------------------------------------------------

// The codec of an output's video stream.
std::string video_codec_of(const std::string& path) {
  MediaReader r(path);
  return avcodec_get_name(r.format_context()->streams[r.video_stream_index()]->codecpar->codec_id);
}

struct SpellingRow {
  const char* name;
  std::vector<std::string> ffmpeg_style;  // {in} and {out} stand for the paths
  std::vector<std::string> long_form;
};

void PrintTo(const SpellingRow& row, std::ostream* os) { *os << row.name; }

std::vector<std::string> with_paths(const std::vector<std::string>& args, const std::string& in, const std::string& out) {
  std::vector<std::string> a;
  for (const std::string& s : args) a.push_back(s == "{in}" ? in : s == "{out}" ? out : s);
  return a;
}

class CliFfmpegSpelling : public ::testing::TestWithParam<SpellingRow> {};

// Each of ffmpeg's spellings gives the output its long form gives, frame for
// frame (and the filter changed the frames, so the comparison means something).
TEST_P(CliFfmpegSpelling, MeansWhatTheLongFormMeans) {
  const SpellingRow& row = GetParam();
  TempDir dir;
  const std::string in = dir.file("in.mkv");
  write_synthetic_clip(in, small_clip(5));
  const CliResult a = run_cli(with_paths(row.ffmpeg_style, in, dir.file("a.mkv")));
  ASSERT_EQ(a.exit_code, 0) << a.describe();
  const CliResult b = run_cli(with_paths(row.long_form, in, dir.file("b.mkv")));
  ASSERT_EQ(b.exit_code, 0) << b.describe();
  const std::vector<std::string> got = frame_bytes(dir.file("a.mkv")), want = frame_bytes(dir.file("b.mkv"));
  EXPECT_FALSE(got.empty());
  EXPECT_TRUE(got == want) << "the ffmpeg spelling gave another output";
  EXPECT_FALSE(got == frame_bytes(in)) << "the filter did nothing: the comparison proves little";
}

INSTANTIATE_TEST_SUITE_P(
    Rows, CliFfmpegSpelling,
    ::testing::Values(
        SpellingRow{"dash_i_vf_cv",
                    {"-hide_banner", "-nostdin", "-i", "{in}", "-vf", "gblur=sigma=2", "-c:v", "ffv1", "{out}", "-q"},
                    {"{in}", "{out}", "--vf", "gblur=sigma=2", "--codec", "ffv1", "-q"}},
        SpellingRow{"filter_v_vcodec_frames_v",
                    {"-i", "{in}", "-filter:v", "boxblur=2", "-vcodec", "ffv1", "-frames:v", "3", "{out}", "-q"},
                    {"{in}", "{out}", "--vf", "boxblur=2", "-c", "ffv1", "--frames", "3", "-q"}},
        SpellingRow{"vframes_codec_v_loglevel",
                    {"{in}", "{out}", "-loglevel", "error", "-vf", "gblur=1", "-codec:v", "ffv1", "-vframes", "2"},
                    {"{in}", "{out}", "--vf", "gblur=1", "-c", "ffv1", "--frames", "2", "-q"}},
        SpellingRow{"v_level_threads_ss",
                    {"-v", "error", "-threads", "1", "-ss", "0.1", "-i", "{in}", "-vf", "boxblur=1", "-c:v", "ffv1",
                     "{out}"},
                    {"{in}", "{out}", "--threads", "1", "--ss", "0.1", "--vf", "boxblur=1", "-c", "ffv1", "-q"}}),
    [](const ::testing::TestParamInfo<SpellingRow>& p) { return std::string(p.param.name); });

// "-crf 20" was read as "-c rf" (an encoder named rf) and "-preset" as "-p
// reset": both are encoder settings, as in ffmpeg.
TEST_F(CliWithInput, CrfAndPresetAreEncoderSettings) {
  const std::string out = dir.file("out.mp4");
  const CliResult r = run_cli({"-i", in, "-crf", "30", "-preset", "ultrafast", "-c:v", "libx264", out, "-q"});
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_EQ(video_codec_of(out), "h264");
  expect_bad_input(dir, {in, dir.file("o.mp4"), "-crf", "99"}, {"crf"}, {in});
}

// -n never overwrites (the default); with -y it is a usage error.
TEST_F(CliWithInput, DashNNeverOverwrites) {
  const std::string out = dir.file("out.mkv");
  { std::ofstream(out) << "precious"; }
  expect_bad_input(dir, {"-n", "-i", in, "-c:v", "ffv1", out}, {"already exists"}, {in, out});
  const CliResult both = run_cli({"-n", "-y", "-i", in, out});
  EXPECT_EQ(both.exit_code, 2) << both.describe();
  EXPECT_TRUE(contains(both.err, "-y and -n")) << both.describe();
  EXPECT_EQ(bytes_of(out), "precious");
}

// -loglevel: quiet prints nothing even for an error; error prints the error
// only; info (the default) prints the notes; a bad level is a usage error.
TEST_F(CliWithInput, LoglevelAsFfmpeg) {
  const CliResult quiet = run_cli({"-v", "quiet", dir.file("missing.mkv"), dir.file("o.mkv")});
  EXPECT_EQ(quiet.exit_code, 1) << quiet.describe();
  EXPECT_TRUE(quiet.err.empty()) << quiet.describe();
  const CliResult error = run_cli({"-loglevel", "error", in, dir.file("o1.mkv"), "-c", "ffv1"});
  EXPECT_EQ(error.exit_code, 0) << error.describe();
  EXPECT_TRUE(error.err.empty()) << error.describe();
  const CliResult info = run_cli({"-loglevel", "repeat+info", in, dir.file("o2.mkv"), "-c", "ffv1"});
  EXPECT_EQ(info.exit_code, 0) << info.describe();
  EXPECT_TRUE(contains(info.err, "done: 6 frames")) << info.describe();
  const CliResult bad = run_cli({"-loglevel", "loud", in, dir.file("o3.mkv")});
  EXPECT_EQ(bad.exit_code, 2) << bad.describe();
  EXPECT_TRUE(contains(bad.err, "'loud' is not a level")) << bad.describe();
  EXPECT_FALSE(fs::exists(dir.file("o3.mkv")));
}

// -f names the container: Matroska to standard output, which has no extension.
TEST_F(CliWithInput, FormatToStandardOutput) {
  const CliResult r = run_cli({"-i", in, "-f", "matroska", "-c:v", "ffv1", "-", "-q"});
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  ASSERT_GE(r.out.size(), 4u);
  EXPECT_EQ(r.out.substr(0, 4), std::string("\x1a\x45\xdf\xa3", 4)) << "not Matroska (EBML)";
  const CliResult bad = run_cli({"-i", in, "-f", "nosuchformat", dir.file("o.mkv")});
  EXPECT_NE(bad.exit_code, 0) << bad.describe();
  EXPECT_TRUE(contains(bad.err, "nosuchformat")) << bad.describe();
}

// "-" as the input is standard input, as ffmpeg's -i -: a pipe in and a pipe
// out (cat in | streamblur - - -f FORMAT), every frame through.
TEST_F(CliWithInput, StandardInputToStandardOutput) {
  const CliResult r = run_cli_stdin({"-", "-f", "matroska", "-c:v", "ffv1", "--vf", "gblur=sigma=2", "-", "-q"}, in);
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  const std::string out = dir.file("piped.mkv");
  std::ofstream(out, std::ios::binary) << r.out;
  const CliResult file = run_cli({in, dir.file("file.mkv"), "-c:v", "ffv1", "--vf", "gblur=sigma=2", "-q"});
  ASSERT_EQ(file.exit_code, 0) << file.describe();
  const sbtest::ReadFrames piped = sbtest::read_frames(out), direct = sbtest::read_frames(dir.file("file.mkv"));
  EXPECT_GT(direct.bytes.size(), 0u);
  EXPECT_EQ(piped.pts, direct.pts);
  EXPECT_TRUE(piped.bytes == direct.bytes);
  const CliResult empty = run_cli_stdin({"-", dir.file("none.mkv"), "-q"}, "/dev/null");
  EXPECT_EQ(empty.exit_code, 1) << empty.describe();
  EXPECT_TRUE(contains(empty.err, "cannot open input '-'")) << empty.describe();
  EXPECT_FALSE(fs::exists(dir.file("none.mkv")));
}

// A free local port (bound and released; the kernel does not hand it out
// again at once).
int free_port(int type) {
  const int fd = ::socket(AF_INET, type, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0)
    ADD_FAILURE() << "no free port: " << std::strerror(errno);
  ::close(fd);
  return ntohs(a.sin_port);
}

// Frames of a network input until it ends or stops sending (a UDP reader's
// timeout ends it with an error).
ReadFrames frames_until_quiet(const std::string& url) {
  ReadFrames v;
  try {
    MediaReader r(url);
    DecodedFrame f;
    while (r.read(f)) {
      v.pts.push_back(f.frame->pts);
      v.bytes.emplace_back(frame_bytes_of(*f.frame));
    }
  } catch (const std::exception&) {
  }
  return v;
}

// Network outputs are written through, in the container their scheme
// implies (mpegts for udp and tcp): every frame reaches a receiver, the same
// frames as a file written with the same lossless settings.
TEST(CliNetwork, UdpAndTcpOutputsReachAReceiver) {
  TempDir dir;
  const std::string in = dir.file("in.mkv");
  SyntheticClipSpec spec = small_clip(30);
  spec.width = 64;
  spec.height = 48;
  spec.noise = true;
  write_synthetic_clip(in, spec);
  const std::vector<std::string> enc{"--vf", "gblur=sigma=2", "-c:v", "libx264", "--preset", "ultrafast",
                                     "--encoder-opt", "qp=0", "-q"};
  auto args = [&](const std::string& out) {
    std::vector<std::string> a{in, out};
    a.insert(a.end(), enc.begin(), enc.end());
    return a;
  };
  const CliResult file = run_cli(args(dir.file("file.ts")));
  ASSERT_EQ(file.exit_code, 0) << file.describe();
  const ReadFrames want = read_frames(dir.file("file.ts"));
  ASSERT_EQ(want.bytes.size(), 30u);

  const std::string udp = "udp://127.0.0.1:" + std::to_string(free_port(SOCK_DGRAM));
  ReadFrames got;
  std::thread receiver([&] { got = frames_until_quiet(udp + "?timeout=2000000"); });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // the receiver is listening
  const CliResult sent = run_cli(args(udp + "?pkt_size=1316"));
  receiver.join();
  EXPECT_EQ(sent.exit_code, 0) << sent.describe();
  EXPECT_EQ(got.bytes.size(), want.bytes.size());
  EXPECT_TRUE(got.bytes == want.bytes);

  const std::string tcp = "tcp://127.0.0.1:" + std::to_string(free_port(SOCK_STREAM));
  CliProcess listener(args(tcp + "?listen=1"), capture_dir());
  ReadFrames over_tcp;
  for (int i = 0; i < 100 && over_tcp.bytes.empty(); ++i) {  // until the listener is up
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    over_tcp = frames_until_quiet(tcp);
  }
  const CliResult served = listener.wait();
  EXPECT_EQ(served.exit_code, 0) << served.describe();
  EXPECT_TRUE(over_tcp.bytes == want.bytes) << over_tcp.bytes.size() << " frames";
  EXPECT_EQ(dir.listing(), (std::vector<std::string>{"file.ts", "in.mkv"}));  // nothing written for the URLs
  const CliResult unknown = run_cli({in, "http://127.0.0.1:1/out", "-q"});
  EXPECT_NE(unknown.exit_code, 0) << unknown.describe();
  EXPECT_TRUE(contains(unknown.err, "name the container")) << unknown.describe();
}

// --input-opt and --output-opt reach the demuxer and the muxer, as ffmpeg's
// options before -i and before the output: the image2 demuxer starts at
// frame 3 at 10 frames/s, the mp4 muxer puts its index first (faststart);
// a key neither takes is one clear error and no output.
TEST_F(CliWithInput, InputAndOutputOptionsReachFfmpeg) {
  fs::create_directories(dir.file("seq"));
  const std::string pattern = dir.file("seq/f%03d.png");
  ASSERT_EQ(run_cli({in, pattern, "-q"}).exit_code, 0);
  const std::string out = dir.file("opts.mp4");
  const CliResult r = run_cli({pattern, out, "--input-opt", "start_number=3", "--input-opt", "framerate=10",
                               "--output-opt", "movflags=+faststart", "-q"});
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  const ReadFrames f = read_frames(out);
  ASSERT_EQ(f.pts.size(), 4u);  // frames 3 to 6
  MediaReader probe(out);
  EXPECT_NEAR(av_q2d(probe.video().time_base) * static_cast<double>(f.pts[1] - f.pts[0]), 0.1, 1e-6);
  std::ifstream file(out, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  EXPECT_LT(bytes.find("moov"), bytes.find("mdat")) << "movflags=+faststart did not reach the muxer";
  const std::string plain = dir.file("plain.mp4");
  ASSERT_EQ(run_cli({pattern, plain, "-q"}).exit_code, 0);
  EXPECT_EQ(read_frames(plain).pts.size(), 6u);
  for (const auto& [flag, what] : {std::pair{"--input-opt", "input option 'nosuch'"},
                                   std::pair{"--output-opt", "output option 'nosuch'"}}) {
    const CliResult bad = run_cli({in, dir.file("bad.mp4"), flag, "nosuch=1", "-q"});
    EXPECT_EQ(bad.exit_code, 1) << bad.describe();
    EXPECT_TRUE(contains(bad.err, what)) << bad.describe();
    EXPECT_FALSE(fs::exists(dir.file("bad.mp4")));
  }
  const CliResult no_value = run_cli({in, dir.file("bad.mp4"), "--output-opt", "movflags"});
  EXPECT_EQ(no_value.exit_code, 2) << no_value.describe();
  EXPECT_TRUE(contains(no_value.err, "--output-opt needs key=value")) << no_value.describe();
}

// -hwaccel cuda is --hwdec nvdec: without a device it is an error, never a
// silent CPU decode.
TEST_F(CliWithInput, HwaccelCudaRequiresNvdec) {
  if (run_cli({in, dir.file("probe.mkv"), "--backend", "cuda", "-q"}).exit_code == 0)
    GTEST_SKIP() << "a CUDA device is present: NVDEC may work";
  const CliResult r = run_cli({"-hwaccel", "cuda", "-i", in, dir.file("o.mkv")});
  EXPECT_EQ(r.exit_code, 1) << r.describe();
  EXPECT_TRUE(contains(r.err, "NVDEC") || contains(r.err, "nvdec")) << r.describe();
  EXPECT_FALSE(fs::exists(dir.file("o.mkv")));
}

// The default encoder follows the container, as in ffmpeg.
TEST_F(CliWithInput, DefaultEncoderFollowsTheContainer) {
  const struct {
    const char* name;
    AVCodecID codec;
  } rows[] = {{"o.mp4", AV_CODEC_ID_H264}, {"o.mkv", AV_CODEC_ID_H264}, {"o.webm", AV_CODEC_ID_VP9},
              {"o.avi", AV_CODEC_ID_MPEG4}};
  for (const auto& row : rows) {
    SCOPED_TRACE(row.name);
    const CliResult r = run_cli({in, dir.file(row.name), "-q"});
    if (!av_guess_format(nullptr, row.name, nullptr)) {
      // This FFmpeg build has no muxer for the extension.
      EXPECT_NE(r.exit_code, 0) << r.describe();
      EXPECT_TRUE(contains(r.err, "cannot tell the container of output")) << r.describe();
      EXPECT_FALSE(std::filesystem::exists(dir.file(row.name)));
      continue;
    }
    if (!avcodec_find_encoder(row.codec)) {
      // This FFmpeg build (the GPU machine's has no libvpx) lacks the
      // container's default encoder: one line that names the ones it takes.
      EXPECT_NE(r.exit_code, 0) << r.describe();
      EXPECT_TRUE(contains(r.err, "has no encoder for " + std::string(avcodec_get_name(row.codec)))) << r.describe();
      EXPECT_TRUE(contains(r.err, "name one of the encoders it takes: ")) << r.describe();
      EXPECT_FALSE(std::filesystem::exists(dir.file(row.name)));
      continue;
    }
    ASSERT_EQ(r.exit_code, 0) << r.describe();
    EXPECT_EQ(video_codec_of(dir.file(row.name)), avcodec_get_name(row.codec));
  }
  EXPECT_EQ(streamblur::io::default_video_encoder("x.png"), "png");
  EXPECT_EQ(streamblur::io::default_video_encoder("-", "matroska"), "libx264");
  const std::string err = error_of([] { streamblur::io::default_video_encoder("x.wav"); });
  EXPECT_TRUE(contains(err, "holds no video")) << err;
}

// ---------------------------------------------------------------------------
// -progress
// ---------------------------------------------------------------------------

// key=value blocks of a -progress output, in order.
std::vector<std::map<std::string, std::string>> progress_blocks(const std::string& text) {
  std::vector<std::map<std::string, std::string>> blocks(1);
  for (const std::string& line : lines_of(text)) {
    const auto eq = line.find('=');
    if (eq == std::string::npos) continue;
    blocks.back()[line.substr(0, eq)] = line.substr(eq + 1);
    if (line.rfind("progress=", 0) == 0) blocks.emplace_back();
  }
  blocks.pop_back();
  return blocks;
}

TEST_F(CliWithInput, ProgressFileAsFfmpegWritesIt) {
  const std::string progress = dir.file("progress.txt");
  const CliResult r = run_cli({"-i", in, "-c:v", "ffv1", "-progress", progress, dir.file("o.mkv"), "-q"});
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  const auto blocks = progress_blocks(bytes_of(progress));
  ASSERT_FALSE(blocks.empty()) << bytes_of(progress);
  for (const char* key : {"frame", "fps", "out_time_us", "out_time_ms", "out_time", "speed", "progress"})
    EXPECT_TRUE(blocks.back().count(key)) << key << " missing: " << bytes_of(progress);
  EXPECT_EQ(blocks.back().at("progress"), "end");
  EXPECT_EQ(blocks.back().at("frame"), "6");
  for (std::size_t i = 0; i + 1 < blocks.size(); ++i) EXPECT_EQ(blocks[i].at("progress"), "continue");
  EXPECT_EQ(blocks.back().at("out_time").size(), std::string("00:00:00.000000").size());
  // An output like any other: it exists now, so without -y the run is refused.
  expect_bad_input(dir, {"-i", in, "-progress", progress, dir.file("o2.mkv")}, {"progress", "already exists"},
                   {in, progress});
}

TEST_F(CliWithInput, ProgressToStandardOutputAndFailures) {
  const CliResult r = run_cli({in, dir.file("o.mkv"), "-c", "ffv1", "-progress", "pipe:1", "-q"});
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_TRUE(contains(r.out, "progress=end\n")) << r.describe();
  // A failed run removes the progress file it made.
  expect_bad_input(dir, {dir.file("missing.mkv"), dir.file("o2.mkv"), "-progress", dir.file("p.txt")}, {"missing.mkv"});
  // It cannot be the input, nor share standard output with the video.
  expect_bad_input(dir, {in, dir.file("o3.mkv"), "-progress", in}, {"progress", "input"}, {in});
  const CliResult both = run_cli({in, "-f", "matroska", "-", "-progress", "-"});
  EXPECT_NE(both.exit_code, 0) << both.describe();
  EXPECT_TRUE(contains(both.err, "standard output")) << both.describe();
}

// The same statistics keys in --stats-json and the batch summary.
TEST_F(CliWithInput, StatsKeysAreTheSameEverywhere) {
  const std::string js = dir.file("stats.json"), summary = dir.file("summary.json");
  ASSERT_EQ(run_cli({in, dir.file("o.mkv"), "-c", "ffv1", "--stats-json", js, "-q"}).exit_code, 0);
  ASSERT_EQ(run_cli({"batch", in, "--out-dir", dir.file("b"), "-c", "ffv1", "--summary-json", summary, "-q"}).exit_code,
            0);
  std::set<std::string> single, batch;
  const nlohmann::json stats = nlohmann::json::parse(bytes_of(js));
  for (const auto& [k, v] : stats.items()) single.insert(k);
  const nlohmann::json sj = nlohmann::json::parse(bytes_of(summary));
  for (const auto& [k, v] : sj.at("results").at(0).items()) batch.insert(k);
  batch.erase("ok");
  EXPECT_EQ(single, batch);
  for (const char* key : {"processing_format", "input_format", "setup_s", "stages", "bounding_stage"})
    EXPECT_TRUE(single.count(key)) << key;
}

}  // namespace
