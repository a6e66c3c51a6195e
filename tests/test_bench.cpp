// streamblur-bench in its tiny mode: everything runs and the JSON is
// well-formed and consistent. Speeds are never pass/fail, but the times must
// be possible: each job's wall time fits in the time the test measured around
// the whole command (the jobs run one after another), fps is frames over that
// wall time, and a serial stage is never busy longer than its job took.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <utility>
#include <string>
#include <thread>
#include <unistd.h>

#include "bench_kernels.hpp"

namespace fs = std::filesystem;

// The kernel table's "fastest" column: the quickest forced path of a row, and
// whether Auto's kernels took over 5% longer than it (rows from a real run,
// where the column would have flagged 1080p box r = 3).
TEST(Bench, FastestPathIsTheQuickestTimedOneAndMarksAutosMisses) {
  using streamblur::bench::KernelResult;
  KernelResult r;
  r.path = "box3";
  r.ours_us = r.box3_us = 11.3;
  r.two_pass_us = 22.8;
  r.register_us = 9.8;
  r.running_us = 12.4;
  EXPECT_EQ(streamblur::bench::fastest_path(r).path, "register");
  EXPECT_DOUBLE_EQ(streamblur::bench::fastest_path(r).us, 9.8);
  EXPECT_TRUE(streamblur::bench::auto_missed_fastest(r));
  r.register_us = 10.9;  // Auto within 5% of the fastest: no mark
  EXPECT_EQ(streamblur::bench::fastest_path(r).path, "register");
  EXPECT_FALSE(streamblur::bench::auto_missed_fastest(r));
  r.register_us = 0;  // not timed (or fell back): never the fastest
  r.tensor_us = 11.0;
  EXPECT_EQ(streamblur::bench::fastest_path(r).path, "tensor");
  r.path = "tensor";  // Auto took the fastest: no mark, whatever the times
  r.ours_us = 11.9;
  EXPECT_FALSE(streamblur::bench::auto_missed_fastest(r));
  KernelResult frame;  // a whole-frame row times no forced path
  frame.path = "tensor";
  frame.ours_us = 45.2;
  EXPECT_EQ(streamblur::bench::fastest_path(frame).path, "");
  EXPECT_FALSE(streamblur::bench::auto_missed_fastest(frame));
}

TEST(Bench, TinyPipelineRunWritesWellFormedJson) {
  const fs::path dir = fs::temp_directory_path() / ("streamblur-bench-test-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const fs::path json = dir / "bench.json";
  // STREAMBLUR_BENCH overrides the build-tree path (programs moved to another machine).
  const char* env = std::getenv("STREAMBLUR_BENCH");
  const std::string bench = env && *env ? env : STREAMBLUR_BENCH_PATH;
  const std::string cmd = std::string("cd '") + dir.string() + "' && '" + bench +
                          "' pipeline --tiny --no-ffmpeg --json '" + json.string() + "' > out.txt 2> err.txt";
  const auto t0 = std::chrono::steady_clock::now();
  ASSERT_EQ(std::system(cmd.c_str()), 0) << "command failed: " << cmd;
  const double outside_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  // Parallel stages (CPU filter threads, GPU work of several slots) can add up
  // to more than the wall time, but not beyond one per thread or slot.
  const double parallel = std::max(16u, std::thread::hardware_concurrency());
  double sum_wall = 0;
  nlohmann::json j;
  std::ifstream(json) >> j;
  ASSERT_TRUE(j.contains("jobs"));
  std::set<std::string> jobs;
  for (const auto& r : j["jobs"]) {
    jobs.insert(r["job"].get<std::string>());
    EXPECT_EQ(r["tool"], "streamblur");
    EXPECT_EQ(r["frames"], 12) << r.dump();
    const double wall = r["wall_s"].get<double>(), fps = r["fps"].get<double>();
    EXPECT_GT(wall, 0);
    EXPECT_LE(wall, outside_s) << r.dump();
    sum_wall += wall;
    EXPECT_GE(fps, 12 / outside_s) << "slower than the whole command allows: " << r.dump();
    EXPECT_NEAR(fps * wall, 12.0, 12e-6) << "fps is not frames / wall_s: " << r.dump();
    EXPECT_GT(r["ratio"].get<double>(), 0);
    for (const char* stage : {"decode", "encode"}) {
      EXPECT_GE(r["stages"][stage]["busy_s"].get<double>(), 0) << stage;
      EXPECT_LE(r["stages"][stage]["busy_s"].get<double>(), wall) << stage << ": " << r.dump();
    }
    for (const char* stage : {"upload", "filter", "download"}) {
      EXPECT_GE(r["stages"][stage]["busy_s"].get<double>(), 0) << stage;
      EXPECT_LE(r["stages"][stage]["busy_s"].get<double>(), wall * parallel) << stage << ": " << r.dump();
    }
    EXPECT_FALSE(r["bounding_stage"].get<std::string>().empty());
  }
  EXPECT_LE(sum_wall, outside_s) << "the jobs report more time than the whole command took";
  EXPECT_EQ(jobs, (std::set<std::string>{"decode", "transcode", "gblur-transcode", "chain-null"}));
  // two clips x (decode, transcode) + per backend (gblur-transcode, chain-null)
  EXPECT_GE(j["jobs"].size(), 8u);
  std::ifstream table(dir / "out.txt");
  const std::string text((std::istreambuf_iterator<char>(table)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("gblur-transcode"), std::string::npos);
  EXPECT_NE(text.find("bound by"), std::string::npos);
  fs::remove_all(dir);
}

// `scale` in a tiny mode on the CPU backend: 1 and 2 streams of a small clip,
// both jobs; the NVDEC and mixed rows are there, marked skipped with the reason
// (NVDEC needs the CUDA backend). Figures are never pass/fail, only their presence.
TEST(Bench, TinyScaleRunWritesRowsForEveryStreamCount) {
  const fs::path dir = fs::temp_directory_path() / ("streamblur-bench-scale-test-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const fs::path json = dir / "scale.json";
  const char* env = std::getenv("STREAMBLUR_BENCH");
  const std::string bench = env && *env ? env : STREAMBLUR_BENCH_PATH;
  const std::string cmd = std::string("cd '") + dir.string() + "' && '" + bench +
                          "' scale --streams 1,2 --frames 10 --size 320x180 --backend cpu --no-ffmpeg --json '" +
                          json.string() + "' > out.txt 2> err.txt";
  const auto t0 = std::chrono::steady_clock::now();
  ASSERT_EQ(std::system(cmd.c_str()), 0) << "command failed: " << cmd;
  const double outside_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  double sum_wall = 0;
  nlohmann::json j;
  std::ifstream(json) >> j;
  ASSERT_TRUE(j.contains("scale"));
  const auto& s = j["scale"];
  EXPECT_EQ(s["backend"], "cpu");
  EXPECT_EQ(s["frames_per_stream"], 10);
  EXPECT_FALSE(s["nvdec_available"].get<bool>());  // CPU backend: no NVDEC
  std::set<std::pair<std::string, int>> measured;
  std::set<std::string> skipped;
  for (const auto& r : s["rows"]) {
    EXPECT_EQ(r["tool"], "streamblur") << r.dump();
    EXPECT_FALSE(r["failed"].get<bool>()) << r.dump();
    if (r["skipped"].get<bool>()) {
      EXPECT_NE(r["decode"], "cpu") << r.dump();
      EXPECT_FALSE(r["note"].get<std::string>().empty()) << r.dump();
      skipped.insert(r["job"].get<std::string>() + "/" + r["decode"].get<std::string>());
      continue;
    }
    EXPECT_EQ(r["decode"], "cpu") << r.dump();
    const int streams = r["streams"].get<int>();
    measured.insert({r["job"].get<std::string>(), streams});
    EXPECT_EQ(r["frames"], 10 * streams) << r.dump();
    const double wall = r["wall_s"].get<double>();
    EXPECT_GT(wall, 0) << r.dump();
    sum_wall += wall;
    EXPECT_NEAR(r["fps"].get<double>() * wall, 10.0 * streams, 1e-5 * streams) << "fps is not frames / wall_s: " << r.dump();
    EXPECT_GE(r["fps"].get<double>(), 10 * streams / outside_s) << r.dump();
    EXPECT_NEAR(r["per_stream_fps"].get<double>(), r["fps"].get<double>() / streams, 1e-6) << r.dump();
    EXPECT_GT(r["ratio_1stream"].get<double>(), 0) << r.dump();
    if (streams == 1) EXPECT_DOUBLE_EQ(r["ratio_1stream"].get<double>(), 1.0) << r.dump();
    EXPECT_EQ(r["nvdec_streams"], 0) << r.dump();
  }
  EXPECT_LE(sum_wall, outside_s) << "the rows report more time than the whole command took";
  EXPECT_EQ(measured, (std::set<std::pair<std::string, int>>{
                          {"chain-null", 1}, {"chain-null", 2}, {"chain-transcode", 1}, {"chain-transcode", 2}}));
  EXPECT_EQ(skipped, (std::set<std::string>{"chain-null/nvdec", "chain-null/mixed", "chain-transcode/nvdec",
                                            "chain-transcode/mixed"}));
  EXPECT_FALSE(s.contains("compare"));  // one device at most
  std::ifstream table(dir / "out.txt");
  const std::string text((std::istreambuf_iterator<char>(table)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("agg_fps"), std::string::npos);
  EXPECT_NE(text.find("P7"), std::string::npos);
  // no transcode output is left behind
  for (const auto& e : fs::recursive_directory_iterator(dir))
    EXPECT_EQ(e.path().filename().string().rfind("scale-out-", 0), std::string::npos) << e.path();
  fs::remove_all(dir);
}
