// streamblur-bench in its tiny mode: everything runs and the JSON is
// well-formed and consistent. The figures themselves are never pass/fail.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <unistd.h>

namespace fs = std::filesystem;

TEST(Bench, TinyPipelineRunWritesWellFormedJson) {
  const fs::path dir = fs::temp_directory_path() / ("streamblur-bench-test-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const fs::path json = dir / "bench.json";
  // STREAMBLUR_BENCH overrides the build-tree path (programs moved to another machine).
  const char* env = std::getenv("STREAMBLUR_BENCH");
  const std::string bench = env && *env ? env : STREAMBLUR_BENCH_PATH;
  const std::string cmd = std::string("cd '") + dir.string() + "' && '" + bench +
                          "' pipeline --tiny --no-ffmpeg --json '" + json.string() + "' > out.txt 2> err.txt";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << "command failed: " << cmd;
  nlohmann::json j;
  std::ifstream(json) >> j;
  ASSERT_TRUE(j.contains("jobs"));
  std::set<std::string> jobs;
  for (const auto& r : j["jobs"]) {
    jobs.insert(r["job"].get<std::string>());
    EXPECT_EQ(r["tool"], "streamblur");
    EXPECT_EQ(r["frames"], 12) << r.dump();
    EXPECT_GT(r["fps"].get<double>(), 0);
    EXPECT_GT(r["wall_s"].get<double>(), 0);
    EXPECT_GT(r["ratio"].get<double>(), 0);
    for (const char* stage : {"decode", "upload", "filter", "download", "encode"})
      EXPECT_GE(r["stages"][stage]["busy_s"].get<double>(), 0) << stage;
    EXPECT_FALSE(r["bounding_stage"].get<std::string>().empty());
  }
  EXPECT_EQ(jobs, (std::set<std::string>{"decode", "transcode", "gblur-transcode", "chain-null"}));
  // two clips x (decode, transcode) + per backend (gblur-transcode, chain-null)
  EXPECT_GE(j["jobs"].size(), 8u);
  std::ifstream table(dir / "out.txt");
  const std::string text((std::istreambuf_iterator<char>(table)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("gblur-transcode"), std::string::npos);
  EXPECT_NE(text.find("bound by"), std::string::npos);
  fs::remove_all(dir);
}
