// A build without the CUDA backend (STREAMBLUR_HAVE_CUDA 0; tests/nocuda_build.sh
// makes one with the toolkit hidden): every way of asking for CUDA or NVDEC
// fails with one line in the library's words, before any output exists, and
// Auto runs on the CPU and says why. Built only in such builds
// (tests/CMakeLists.txt); the CUDA build's counterparts are the GPU tests.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "cli_support.hpp"
#include "streamblur/config.hpp"
#include "streamblur/pipeline/filter.hpp"
#include "streamblur/pipeline/frame_layout.hpp"
#include "streamblur/pipeline/pipeline.hpp"
#include "streamblur/testing/synthetic_clip.hpp"
#include "test_support.hpp"

static_assert(!STREAMBLUR_HAVE_CUDA, "test_no_cuda.cpp is built only without the CUDA backend");

using namespace streamblur;
using namespace sbtest;

namespace {

constexpr const char* kWords = "built without the CUDA backend";

class NoCuda : public ::testing::Test {
 protected:
  void SetUp() override {
    in = dir.file("in.mkv");
    io::SyntheticClipSpec spec;
    spec.frames = 3;
    io::write_synthetic_clip(in, spec);
    out = dir.file("out.mkv");
  }
  PipelineOptions options(BackendChoice backend, HwDecode hwdec) const {
    PipelineOptions o;
    o.input = in;
    o.output = out;
    o.filters = "gblur=sigma=2";
    o.backend = backend;
    o.hwdec = hwdec;
    o.note = [](const std::string&) {};
    return o;
  }
  TempDir dir;
  std::string in, out;
};

}  // namespace

TEST(NoCudaBuild, NoDevicesAndTheBackendIsRefused) {
  EXPECT_EQ(cuda_device_count(), 0);
  EXPECT_ONE_LINE_CONTAINS(error_of([] { resolve_backend(BackendChoice::Cuda); }), kWords, "cpu backend");
  std::string why;
  EXPECT_EQ(resolve_backend(BackendChoice::Auto, &why), Backend::Cpu);
  EXPECT_TRUE(contains(why, kWords)) << why;
}

TEST(NoCudaBuild, AChainOnTheCudaBackendIsRefused) {
  FilterChain chain(parse_filter_chain("gblur=sigma=2,boxblur=radius=3"));
  const FrameLayout layout = *native_layout(AV_PIX_FMT_YUV420P, 33, 17);
  EXPECT_ONE_LINE_CONTAINS(error_of([&] { chain.configure(layout, Backend::Cuda); }), kWords);
  EXPECT_NO_THROW(chain.configure(layout, Backend::Cpu));
}

TEST_F(NoCuda, CudaOrNvdecFailBeforeAnyOutputExists) {
  for (const auto& [backend, hwdec, also] :
       {std::tuple{BackendChoice::Cuda, HwDecode::Auto, ""}, std::tuple{BackendChoice::Cuda, HwDecode::Nvdec, ""},
        std::tuple{BackendChoice::Auto, HwDecode::Nvdec, "NVDEC"}}) {
    SCOPED_TRACE(std::string(backend == BackendChoice::Cuda ? "cuda" : "auto") +
                 (hwdec == HwDecode::Nvdec ? " nvdec" : ""));
    EXPECT_ONE_LINE_CONTAINS(error_of([&] { run_pipeline(options(backend, hwdec)); }), kWords, also);
    EXPECT_FALSE(std::filesystem::exists(out));
    EXPECT_EQ(dir.listing(), std::vector<std::string>{"in.mkv"});
  }
}

TEST_F(NoCuda, AutoRunsOnTheCpu) {
  std::vector<std::string> notes;
  PipelineOptions o = options(BackendChoice::Auto, HwDecode::Auto);
  o.note = [&](const std::string& s) { notes.push_back(s); };
  const RunStats st = run_pipeline(o);
  EXPECT_EQ(st.backend, "cpu");
  EXPECT_EQ(st.frames, 3);
  EXPECT_TRUE(std::filesystem::exists(out));
}

TEST_F(NoCuda, TheCliSaysSoInOneLine) {
  for (const std::vector<std::string>& flags :
       {std::vector<std::string>{"--backend", "cuda"}, std::vector<std::string>{"--hwdec", "nvdec"}}) {
    SCOPED_TRACE(flags[0] + " " + flags[1]);
    std::vector<std::string> args = {in, out, "--vf", "gblur=sigma=2"};
    args.insert(args.end(), flags.begin(), flags.end());
    const CliResult r = run_cli(args);
    EXPECT_NE(r.exit_code, 0) << r.describe();
    EXPECT_EQ(lines_of(r.err).size(), 1u) << r.describe();
    EXPECT_TRUE(contains(r.err, kWords)) << r.describe();
    EXPECT_FALSE(std::filesystem::exists(out));
  }
  const CliResult ok = run_cli({in, out, "--vf", "gblur=sigma=2", "-q"});
  EXPECT_EQ(ok.exit_code, 0) << ok.describe();
}
