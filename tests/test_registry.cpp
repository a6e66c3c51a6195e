// Every registered filter, built from filter_registry() so a new filter cannot
// land untested (FFmpeg's one-FATE-line-per-filter rule): at its defaults and
// at one larger setting of each numeric option,
// - through the pipeline (CPU backend) it equals the same chain applied to
//   the decoded input by hand, on every plane of an odd-sized 4:2:0 clip;
// - written to a lossless file and read back, it is unchanged;
// - on the CUDA backend it agrees with the CPU within +-1, on at most 1% of
//   samples, without bias (GPU machine; STREAMBLUR_REQUIRE_GPU=1 fails instead
//   of skipping).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>
#include <random>
#include <set>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "streamblur/config.hpp"
#if STREAMBLUR_HAVE_CUDA
#include "streamblur/kernels/cuda_raii.hpp"
#include "cuda_support.hpp"
#endif
#include "streamblur/pipeline/filter.hpp"
#include "streamblur/pipeline/frame_layout.hpp"
#include "streamblur/pipeline/pipeline.hpp"
#include "streamblur/testing/synthetic_clip.hpp"
#include "sink_support.hpp"
#include "test_support.hpp"

using namespace streamblur;
using namespace sbtest;

namespace {

struct Case {
  std::string name;  // for the test's name
  std::string spec;  // the chain
};
void PrintTo(const Case& c, std::ostream* os) { *os << c.spec; }

// A value above the default, inside the range: what "one larger setting" means here.
double larger(const OptionSpec& o) {
  const double d = o.default_value;
  double v = o.type == OptionType::Int ? std::floor(d * 2 + 3) : d * 2 + 1.5;
  if (o.max > o.min) v = std::min(v, o.max);
  return v;
}

std::string number(double v) {
  std::ostringstream s;
  s << v;
  return s.str();
}

std::vector<Case> registry_cases() {
  std::vector<Case> cases;
  for (const FilterInfo& f : filter_registry()) {
    cases.push_back({f.name + "_defaults", f.name});
    for (const OptionSpec& o : f.options) {
      if (o.type != OptionType::Double && o.type != OptionType::Int) continue;
      if (o.default_value < 0) continue;  // "-1 = derived from another option": covered by the defaults
      cases.push_back({f.name + "_" + o.name, f.name + "=" + o.name + "=" + number(larger(o))});
    }
  }
  return cases;
}

class RegistryFilter : public ::testing::TestWithParam<Case> {
 protected:
  static void SetUpTestSuite() {
    dir_ = std::make_unique<TempDir>();
    in_ = dir_->file("in.mkv");
    io::SyntheticClipSpec spec;
    spec.width = 47;
    spec.height = 29;
    spec.frames = 2;
    spec.noise = true;
    io::write_synthetic_clip(in_, spec);
    source_ = std::make_unique<SinkFrames>(run_to_sink(in_, "", BackendChoice::Cpu));
  }
  static void TearDownTestSuite() {
    source_.reset();
    dir_.reset();
  }
  static std::unique_ptr<TempDir> dir_;
  static std::string in_;
  static std::unique_ptr<SinkFrames> source_;
};
std::unique_ptr<TempDir> RegistryFilter::dir_;
std::string RegistryFilter::in_;
std::unique_ptr<SinkFrames> RegistryFilter::source_;

}  // namespace

TEST_P(RegistryFilter, PipelineEqualsTheChainAppliedByHand) {
  const SinkFrames out = run_to_sink(in_, GetParam().spec, BackendChoice::Cpu);
  ASSERT_EQ(out.planes.size(), source_->planes.size());
  FilterChain chain(parse_filter_chain(GetParam().spec));
  chain.configure(source_->layout, Backend::Cpu);
  for (size_t k = 0; k < out.planes.size(); ++k) {
    std::array<std::vector<uint8_t>, 3> want = source_->planes[k];
    std::array<AnyPlane, 4> planes{};
    for (int p = 0; p < 3; ++p) {
      const PlaneLayout& pl = source_->layout.planes[p];
      planes[p] = AnyPlane{want[p].data(), pl.width, pl.height, static_cast<std::ptrdiff_t>(pl.width) * pl.channels,
                           pl.channels, 1};
    }
    chain.apply(planes, 3, nullptr);
    for (int p = 0; p < 3; ++p) EXPECT_EQ(out.planes[k][p], want[p]) << "frame " << k << " plane " << p;
  }
}

TEST_P(RegistryFilter, LosslessFileRoundTrip) {
  const std::string out = dir_->file(GetParam().name + ".mkv");
  PipelineOptions o;
  o.input = in_;
  o.output = out;
  o.filters = GetParam().spec;
  o.backend = BackendChoice::Cpu;
  o.encoder.codec = "ffv1";
  o.overwrite = true;
  o.note = [](const std::string&) {};
  run_pipeline(o);
  const SinkFrames direct = run_to_sink(in_, GetParam().spec, BackendChoice::Cpu);
  const SinkFrames back = run_to_sink(out, "", BackendChoice::Cpu);
  ASSERT_EQ(back.planes.size(), direct.planes.size());
  for (size_t k = 0; k < back.planes.size(); ++k)
    for (int p = 0; p < 3; ++p) EXPECT_EQ(back.planes[k][p], direct.planes[k][p]) << "frame " << k << " plane " << p;
}

TEST_P(RegistryFilter, CudaAgreesWithCpu) {
  SBTEST_SKIP_WITHOUT_GPU();
  const SinkFrames cpu = run_to_sink(in_, GetParam().spec, BackendChoice::Cpu);
  const SinkFrames gpu = run_to_sink(in_, GetParam().spec, BackendChoice::Cuda);
  ASSERT_EQ(gpu.planes.size(), cpu.planes.size());
  for (size_t k = 0; k < gpu.planes.size(); ++k)
    for (int p = 0; p < 3; ++p) {
      const auto& a = gpu.planes[k][p];
      const auto& b = cpu.planes[k][p];
      ASSERT_EQ(a.size(), b.size());
      SampleDiffs d(kRounding.max_abs);
      for (size_t i = 0; i < a.size(); ++i) d.add(a[i], b[i], static_cast<int>(i), 0);
      EXPECT_TRUE(d.check(kRounding)) << "frame " << k << " plane " << p;
    }
}

// The chain on device planes: CUDA backend builds only.
#if STREAMBLUR_HAVE_CUDA

// FilterChain::apply_from (the Python module's path for CUDA arrays): where
// the first filter can write a new plane, the chain from a source plane into
// a separate one equals a copy and the chain in place, bit for bit, and the
// source is left as it was; where it cannot, it says so and does nothing.
TEST_P(RegistryFilter, CudaIntoANewPlaneEqualsInPlace) {
  SBTEST_SKIP_WITHOUT_GPU();
  for (int bytes : {1, 2}) {
    const FrameLayout layout = *native_layout(bytes == 1 ? AV_PIX_FMT_GRAY8 : AV_PIX_FMT_GRAY16LE, 61, 37);
    const PlaneLayout& pl = layout.planes[0];
    const std::ptrdiff_t pitch = static_cast<std::ptrdiff_t>(pl.width) * bytes + 24;
    const std::size_t size = static_cast<std::size_t>(pitch) * pl.height;
    std::vector<unsigned char> host(size);
    std::mt19937 rng(fresh_seed());
    for (auto& v : host) v = static_cast<unsigned char>(rng());
    cuda::DeviceBuffer src(size), in_place(size), into(size);
    CUDA_CHECK(cudaMemcpy(src.get(), host.data(), size, cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(in_place.get(), host.data(), size, cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemset(into.get(), 0x5A, size));
    CUDA_CHECK(cudaDeviceSynchronize());
    auto plane = [&](cuda::DeviceBuffer& b) { return AnyPlane{b.get(), pl.width, pl.height, pitch, pl.channels, bytes}; };
    cuda::CudaStream stream;
    FilterChain a(parse_filter_chain(GetParam().spec)), b(parse_filter_chain(GetParam().spec));
    a.configure(layout, Backend::Cuda);
    b.configure(layout, Backend::Cuda);
    a.apply({plane(in_place)}, 1, stream.get());
    const bool went_into = b.apply_from({plane(src)}, {plane(into)}, 1, stream.get());
    stream.synchronize();
    const std::string name = GetParam().spec.substr(0, GetParam().spec.find('='));
    EXPECT_EQ(went_into, name == "gblur" || name == "boxblur") << "which filters write a new plane";
    std::vector<unsigned char> got(size), want(size), src_after(size);
    CUDA_CHECK(cudaMemcpy(want.data(), in_place.get(), size, cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaMemcpy(got.data(), into.get(), size, cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaMemcpy(src_after.data(), src.get(), size, cudaMemcpyDeviceToHost));
    EXPECT_EQ(src_after, host) << "the source plane changed";
    const std::size_t row = static_cast<std::size_t>(pl.width) * bytes;
    for (int y = 0; y < pl.height; ++y) {
      const std::size_t o = static_cast<std::size_t>(y) * pitch;
      if (went_into)
        ASSERT_TRUE(std::equal(got.begin() + o, got.begin() + o + row, want.begin() + o)) << "row " << y << " bytes " << bytes;
      else
        ASSERT_TRUE(std::all_of(got.begin() + o, got.begin() + o + pitch, [](unsigned char v) { return v == 0x5A; }))
            << "it said no, but wrote row " << y;
    }
  }
}

// CUDA graphs of the chain (FilterChain::set_graphs): on a frame of every
// plane layout (three planes, an interleaved UV pair, P010's high bits), a
// chain that records its launches into a graph and replays it gives what the
// same chain launching directly gives, bit for bit, on every call, with new
// samples in the same buffers before each call (a replay that kept a stale
// argument or skipped a plane would differ); a second set of buffers runs
// directly again first. The graph is recorded on the second call on a set of
// planes and launched from then on.
namespace {

// A frame's planes in device buffers, rows padded past the samples.
struct DeviceFrame {
  DeviceFrame(const FrameLayout& l) : layout(l) {
    for (int p = 0; p < l.num_planes; ++p) {
      const PlaneLayout& pl = l.planes[p];
      row[p] = static_cast<std::size_t>(pl.width) * pl.channels * l.bytes_per_sample;
      pitch[p] = static_cast<std::ptrdiff_t>(row[p]) + 24;
      buf[p] = cuda::DeviceBuffer(static_cast<std::size_t>(pitch[p]) * pl.height);
    }
  }
  std::array<AnyPlane, 4> planes() {
    std::array<AnyPlane, 4> a{};
    for (int p = 0; p < layout.num_planes; ++p) {
      const PlaneLayout& pl = layout.planes[p];
      a[p] = AnyPlane{buf[p].get(), pl.width, pl.height, pitch[p], pl.channels, layout.bytes_per_sample};
    }
    return a;
  }
  void upload(const std::array<std::vector<unsigned char>, 4>& host) {
    // Complete on return: the chains run on a non-blocking stream, which does
    // not wait for a pageable copy's DMA on the legacy stream.
    for (int p = 0; p < layout.num_planes; ++p)
      sbtest::upload_2d(buf[p].get(), static_cast<std::size_t>(pitch[p]), host[p].data(), row[p], row[p],
                        static_cast<std::size_t>(layout.planes[p].height));
  }
  std::array<std::vector<unsigned char>, 4> download() const {
    std::array<std::vector<unsigned char>, 4> host;
    for (int p = 0; p < layout.num_planes; ++p) {
      host[p].resize(row[p] * layout.planes[p].height);
      CUDA_CHECK(cudaMemcpy2D(host[p].data(), row[p], buf[p].get(), static_cast<std::size_t>(pitch[p]), row[p],
                              static_cast<std::size_t>(layout.planes[p].height), cudaMemcpyDeviceToHost));
    }
    return host;
  }
  FrameLayout layout;
  std::array<cuda::DeviceBuffer, 4> buf;
  std::array<std::size_t, 4> row{};
  std::array<std::ptrdiff_t, 4> pitch{};
};

// Random samples for every plane; P010 keeps its low 6 bits zero, as its decoders do.
std::array<std::vector<unsigned char>, 4> random_frame(const FrameLayout& l, std::mt19937& rng) {
  std::array<std::vector<unsigned char>, 4> host;
  for (int p = 0; p < l.num_planes; ++p) {
    const PlaneLayout& pl = l.planes[p];
    host[p].resize(static_cast<std::size_t>(pl.width) * pl.channels * l.bytes_per_sample * pl.height);
    for (auto& v : host[p]) v = static_cast<unsigned char>(rng());
    if (l.sample_shift)
      for (std::size_t i = 0; i < host[p].size(); i += 2) host[p][i] &= static_cast<unsigned char>(0xFF << l.sample_shift);
  }
  return host;
}

// One call of `chain` on `g` and of `direct` on `w`, both given the same new
// random samples first: their outputs must be equal, bit for bit.
void expect_same_call(FilterChain& chain, DeviceFrame& g, FilterChain& direct, DeviceFrame& w, cudaStream_t stream,
                      std::mt19937& rng, const std::string& what) {
  const auto host = random_frame(g.layout, rng);
  g.upload(host);
  w.upload(host);
  chain.apply(g.planes(), g.layout.num_planes, stream);
  direct.apply(w.planes(), w.layout.num_planes, stream);
  CUDA_CHECK(cudaStreamSynchronize(stream));
  const auto want = w.download(), got = g.download();
  for (int p = 0; p < g.layout.num_planes; ++p) EXPECT_TRUE(got[p] == want[p]) << what << ", plane " << p;
}

}  // namespace

TEST_P(RegistryFilter, CudaGraphEqualsDirectLaunches) {
  SBTEST_SKIP_WITHOUT_GPU();
  std::mt19937 rng(fresh_seed());
  for (AVPixelFormat format : {AV_PIX_FMT_YUV420P, AV_PIX_FMT_NV12, AV_PIX_FMT_P010LE}) {
    SCOPED_TRACE(pixel_format_name(format));
    const FrameLayout layout = *native_layout(format, 61, 37);
    FilterChain direct(parse_filter_chain(GetParam().spec)), graphed(parse_filter_chain(GetParam().spec));
    direct.set_graphs(false);
    direct.configure(layout, Backend::Cuda);
    graphed.configure(layout, Backend::Cuda);
    DeviceFrame a(layout), b(layout), other(layout);
    cuda::CudaStream stream;
    for (int call = 0; call < 5; ++call)  // the last call: new buffers
      expect_same_call(graphed, call < 4 ? b : other, direct, a, stream.get(), rng, "call " + std::to_string(call));
    EXPECT_EQ(direct.graph_stats().launched, 0);
    EXPECT_EQ(graphed.graph_stats().recorded, 1) << "recorded on the second call on the same planes";
    EXPECT_EQ(graphed.graph_stats().launched, 3) << "launched on calls 2, 3 and 4, not on new buffers";
    // apply_from (the Python module's path): src is left alone, dst written.
    // On P010 it runs where every filter takes the shift itself (gblur, boxblur).
    DeviceFrame src(layout), into(layout);
    for (int call = 0; call < 3; ++call) {
      const auto host = random_frame(layout, rng);
      a.upload(host);
      src.upload(host);
      direct.apply(a.planes(), layout.num_planes, stream.get());
      const bool went = graphed.apply_from(src.planes(), into.planes(), layout.num_planes, stream.get());
      stream.synchronize();
      if (!went) break;  // unsharp, pixelate: in place only (tested above)
      const auto want = a.download(), got = into.download(), src_after = src.download();
      for (int p = 0; p < layout.num_planes; ++p) {
        ASSERT_EQ(got[p], want[p]) << "apply_from call " << call << " plane " << p;
        ASSERT_EQ(src_after[p], host[p]) << "apply_from changed its source, plane " << p;
      }
      if (call == 2) EXPECT_EQ(graphed.graph_stats().launched, 5) << "apply_from's graph, calls 2 and 3";
    }
  }
}

// P010 (values in the high 10 bits): every filter's chain on a P010 frame,
// whose samples also have random low bits (which must be ignored), gives bit
// for bit what the same chain gives on the values (each sample >> 6, a plane
// layout without the shift) shifted back up: whether its filters take the
// shift in their kernels (gblur, boxblur: no shift passes, and apply_from
// runs) or the chain shifts the planes around them (the others).
TEST_P(RegistryFilter, CudaP010EqualsTheChainOnTheValues) {
  SBTEST_SKIP_WITHOUT_GPU();
  std::mt19937 rng(fresh_seed());
  const FrameLayout p010 = *native_layout(AV_PIX_FMT_P010LE, 61, 37);
  FrameLayout plain = p010;
  plain.sample_shift = 0;
  FilterChain shifted(parse_filter_chain(GetParam().spec)), on_values(parse_filter_chain(GetParam().spec));
  shifted.configure(p010, Backend::Cuda);
  on_values.configure(plain, Backend::Cuda);
  // The planes the chain's filters take (unsharp's defaults leave chroma, as FFmpeg's do).
  std::array<bool, 4> touched{};
  for (const FilterInstanceSpec& f : parse_filter_chain(GetParam().spec)) {
    auto filter = f.info->create(f.values, f.given);
    filter->configure(plain, Backend::Cuda);
    for (int p = 0; p < p010.num_planes; ++p) touched[p] = touched[p] || filter->touches(p);
  }
  DeviceFrame a(p010), b(plain), src(p010), into(p010);
  cuda::CudaStream stream;
  for (int call = 0; call < 3; ++call) {  // graphs from the second call
    std::array<std::vector<unsigned char>, 4> raw = random_frame(plain, rng), values = raw;
    for (int p = 0; p < p010.num_planes; ++p)
      for (std::size_t i = 0; i < raw[p].size(); i += 2) {
        const unsigned v = (raw[p][i] | raw[p][i + 1] << 8) >> 6;
        values[p][i] = static_cast<unsigned char>(v & 0xFF);
        values[p][i + 1] = static_cast<unsigned char>(v >> 8);
      }
    a.upload(raw);
    b.upload(values);
    src.upload(raw);
    shifted.apply(a.planes(), p010.num_planes, stream.get());
    on_values.apply(b.planes(), p010.num_planes, stream.get());
    const bool went = shifted.apply_from(src.planes(), into.planes(), p010.num_planes, stream.get());
    stream.synchronize();
    auto want = b.download();
    for (int p = 0; p < p010.num_planes; ++p) {
      if (!touched[p]) {  // a plane no filter takes is left as it came, low bits and all
        want[p] = raw[p];
        continue;
      }
      for (std::size_t i = 0; i < want[p].size(); i += 2) {
        const unsigned v = (want[p][i] | want[p][i + 1] << 8) << 6;
        want[p][i] = static_cast<unsigned char>(v & 0xFF);
        want[p][i + 1] = static_cast<unsigned char>((v >> 8) & 0xFF);
      }
    }
    const auto got = a.download();
    for (int p = 0; p < p010.num_planes; ++p) ASSERT_EQ(got[p], want[p]) << "call " << call << " plane " << p;
    const std::string spec = GetParam().spec;
    const bool takes = spec.rfind("gblur", 0) == 0 || spec.rfind("boxblur", 0) == 0;
    EXPECT_EQ(went, takes && spec.find("fields=1") == std::string::npos) << "apply_from on P010";
    if (!went) continue;
    const auto got_into = into.download(), src_after = src.download();
    for (int p = 0; p < p010.num_planes; ++p) {
      ASSERT_EQ(got_into[p], want[p]) << "apply_from call " << call << " plane " << p;
      ASSERT_EQ(src_after[p], raw[p]) << "apply_from changed its source, plane " << p;
    }
  }
}

// Where a chain cannot be a graph it launches directly, and right: on the
// legacy default stream (which cannot be captured), with a filter limited
// to regions (its boxes change per frame), and inside the caller's own
// capture, where its launches become part of the caller's graph.
TEST(ChainGraphs, DirectWhereNoGraphCanBeRecorded) {
  SBTEST_SKIP_WITHOUT_GPU();
  std::mt19937 rng(fresh_seed());
  const FrameLayout layout = *native_layout(AV_PIX_FMT_YUV420P, 75, 43);
  const std::string spec = "gblur=sigma=2,boxblur=radius=3";
  FilterChain want_chain(parse_filter_chain(spec));
  want_chain.set_graphs(false);
  want_chain.configure(layout, Backend::Cuda);
  DeviceFrame a(layout), b(layout);
  cuda::CudaStream stream;
  auto expect_same = [&](const std::array<std::vector<unsigned char>, 4>& host, const char* what) {
    a.upload(host);
    want_chain.apply(a.planes(), 3, stream.get());
    stream.synchronize();
    const auto want = a.download(), got = b.download();
    for (int p = 0; p < 3; ++p) ASSERT_EQ(got[p], want[p]) << what << " plane " << p;
  };
  {
    FilterChain chain(parse_filter_chain(spec));
    chain.configure(layout, Backend::Cuda);
    for (int call = 0; call < 3; ++call) {
      const auto host = random_frame(layout, rng);
      b.upload(host);
      chain.apply(b.planes(), 3, nullptr);
      CUDA_CHECK(cudaDeviceSynchronize());
      expect_same(host, "legacy stream");
    }
    EXPECT_EQ(chain.graph_stats().launched, 0) << "the legacy stream";
  }
  {
    FilterChain chain(parse_filter_chain("gblur=sigma=2:box=20:8:10:10"));
    FilterChain direct(parse_filter_chain("gblur=sigma=2:box=20:8:10:10"));
    chain.configure(layout, Backend::Cuda);
    direct.configure(layout, Backend::Cuda);
    direct.set_graphs(false);
    for (int call = 0; call < 3; ++call) expect_same_call(chain, b, direct, a, stream.get(), rng, "regions");
    EXPECT_EQ(chain.graph_stats().launched, 0) << "a region filter";
  }
  {
    FilterChain chain(parse_filter_chain(spec));
    chain.configure(layout, Backend::Cuda);
    const auto host = random_frame(layout, rng);
    b.upload(host);
    chain.apply(b.planes(), 3, stream.get());  // the first call, outside: it may allocate
    stream.synchronize();
    b.upload(host);
    cudaGraph_t graph = nullptr;
    CUDA_CHECK(cudaStreamBeginCapture(stream.get(), cudaStreamCaptureModeThreadLocal));
    chain.apply(b.planes(), 3, stream.get());
    CUDA_CHECK(cudaStreamEndCapture(stream.get(), &graph));
    cuda::CudaGraphExec exec(graph);
    CUDA_CHECK(cudaGraphDestroy(graph));
    exec.launch(stream.get());
    stream.synchronize();
    expect_same(host, "the caller's graph");
    EXPECT_EQ(chain.graph_stats().launched, 0) << "inside the caller's capture";
  }
  {
    // Planes larger than the chain was configured for grow the filters'
    // scratch (a new allocation): the graphs recorded before point at the
    // freed one, so they are dropped and recorded again.
    const FrameLayout big_layout = *native_layout(AV_PIX_FMT_YUV420P, 301, 203);
    DeviceFrame big(big_layout), big_want(big_layout);
    FilterChain chain(parse_filter_chain(spec)), direct(parse_filter_chain(spec));
    chain.configure(layout, Backend::Cuda);
    direct.configure(layout, Backend::Cuda);
    direct.set_graphs(false);
    for (int call = 0; call < 5; ++call)
      expect_same_call(chain, call == 2 ? big : b, direct, call == 2 ? big_want : a, stream.get(), rng,
                       "call " + std::to_string(call));
    EXPECT_EQ(chain.graph_stats().recorded, 2) << "recorded on call 2, and again on call 5 after the scratch grew";
    EXPECT_EQ(chain.graph_stats().launched, 2);
  }
}

namespace {

// A chain of three GPU nodes recorded as a graph gives the same frames as
// direct launches, over four calls with fresh input each.
void expect_graph_equals_direct(const std::string& spec, const FrameLayout& layout, std::mt19937& rng) {
  FilterChain direct(parse_filter_chain(spec)), graphed(parse_filter_chain(spec));
  direct.set_graphs(false);
  direct.configure(layout, Backend::Cuda);
  graphed.configure(layout, Backend::Cuda);
  DeviceFrame a(layout), b(layout);
  cuda::CudaStream stream;
  for (int call = 0; call < 4; ++call)
    expect_same_call(graphed, b, direct, a, stream.get(), rng, "call " + std::to_string(call));
  EXPECT_EQ(graphed.graph_stats().launched, 3);
}

}  // namespace

// The running-sum boxes launch their three kernels early (programmatic
// dependent launch), also inside a recorded graph: after another
// filter, and one running box after another, on odd sizes and every plane
// (NV12's UV pairs take them from r = 1), the graph equals direct launches.
TEST(ChainGraphs, RunningBoxesEqualDirectLaunches) {
  SBTEST_SKIP_WITHOUT_GPU();
  std::mt19937 rng(fresh_seed());
  const std::string spec = "gblur=sigma=2,boxblur=radius=40,boxblur=radius=9";
  for (AVPixelFormat format : {AV_PIX_FMT_YUV420P, AV_PIX_FMT_NV12, AV_PIX_FMT_P010LE}) {
    SCOPED_TRACE(pixel_format_name(format));
    expect_graph_equals_direct(spec, *native_layout(format, 257, 131), rng);
  }
}

// On every device (the pipeline runs one chain per frame slot on each GPU it
// is given): the branch streams live where the graph was recorded.
TEST(ChainGraphs, EqualDirectLaunchesOnEveryDevice) {
  SBTEST_SKIP_WITHOUT_GPU();
  std::mt19937 rng(fresh_seed());
  const FrameLayout layout = *native_layout(AV_PIX_FMT_YUV420P, 99, 71);
  const std::string spec = "gblur=sigma=2,boxblur=radius=3";
  const int count = cuda::device_count();
  for (int device = 0; device < count; ++device) {
    SCOPED_TRACE("device " + std::to_string(device));
    CUDA_CHECK(cudaSetDevice(device));
    expect_graph_equals_direct(spec, layout, rng);
  }
  CUDA_CHECK(cudaSetDevice(0));
}

#endif  // STREAMBLUR_HAVE_CUDA

TEST(Registry, EveryFilterHasCases) {
  // The list the suite above runs: each registered filter, at least at its defaults.
  const std::vector<Case> cases = registry_cases();
  for (const FilterInfo& f : filter_registry()) {
    int n = 0;
    for (const Case& c : cases) n += c.spec.rfind(f.name, 0) == 0;
    EXPECT_GE(n, 2) << f.name << ": defaults and at least one larger setting";
  }
  EXPECT_GE(filter_registry().size(), 4u);
}

// Every option row reaches the filter it belongs to (each row binds a field of
// the filter's options struct): set alone to another valid value, it changes
// what the filter says it does (describe(), naming the value given), which
// planes it touches, or its output on a noisy 4:2:0 frame.
TEST(Registry, EveryOptionRowReachesItsFilter) {
  const FrameLayout layout = *native_layout(AV_PIX_FMT_YUV420P, 48, 32);
  std::mt19937 rng(fresh_seed());
  std::array<std::vector<uint8_t>, 3> source;
  for (int p = 0; p < 3; ++p) {
    source[p].resize(static_cast<size_t>(layout.planes[p].width) * layout.planes[p].height);
    for (uint8_t& v : source[p]) v = static_cast<uint8_t>(rng());
  }
  struct Seen {
    std::string describe;
    std::array<bool, 3> touches{};
    std::array<std::vector<uint8_t>, 3> planes;
    bool operator==(const Seen&) const = default;
  };
  auto run = [&](const std::string& spec) {
    FilterChain chain(parse_filter_chain(spec));
    chain.configure(layout, Backend::Cpu);
    const auto specs = parse_filter_chain(spec);
    auto filter = specs[0].info->create(specs[0].values, specs[0].given);
    filter->configure(layout, Backend::Cpu);
    Seen seen{chain.describe(), {}, source};
    std::array<AnyPlane, 4> planes{};
    for (int p = 0; p < 3; ++p) {
      seen.touches[p] = filter->touches(p);
      const PlaneLayout& pl = layout.planes[p];
      planes[p] = AnyPlane{seen.planes[p].data(), pl.width, pl.height, pl.width, 1, 1};
    }
    chain.apply(planes, 3, nullptr);
    return seen;
  };
  // Rows that apply only beside another option (set with it, against that
  // option alone), and rows that change nothing on a frame without alpha,
  // or at all (gblur's steps: FFmpeg's approximation, exact here).
  const std::map<std::string, std::string> companion = {{"boxblur.chroma_scale", "radius=2"},
                                                         {"unsharp.planes", "chroma_amount=1"}};
  const std::set<std::string> no_effect = {"gblur.steps",          "boxblur.alpha_radius",  "boxblur.alpha_power",
                                           "unsharp.alpha_msize_x", "unsharp.alpha_msize_y", "unsharp.alpha_amount"};
  for (const FilterInfo& f : filter_registry()) {
    for (const OptionSpec& o : f.options) {
      std::string value;
      if (o.type == OptionType::Planes) value = "y";
      else if (o.type == OptionType::Bool) value = o.default_value != 0 ? "0" : "1";
      else value = number(o.default_value < 0 ? 3.0 : larger(o));  // -1 means "from another option"
      const auto with = companion.find(f.name + "." + o.name);
      const std::string base = with == companion.end() ? f.name : f.name + "=" + with->second;
      const std::string spec = base + (with == companion.end() ? "=" : ":") + o.name + "=" + value;
      SCOPED_TRACE(spec);
      const Seen defaults = run(base), changed = run(spec);
      if (no_effect.count(f.name + "." + o.name)) {
        EXPECT_TRUE(changed.planes == defaults.planes) << "documented to change nothing here: " << spec;
        continue;
      }
      EXPECT_FALSE(changed == defaults) << "the option changed nothing: " << changed.describe;
      if (contains(changed.describe, o.name + "="))
        EXPECT_TRUE(contains(changed.describe, o.name + "=" + value)) << changed.describe;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Registry, RegistryFilter, ::testing::ValuesIn(registry_cases()),
                         [](const auto& info) { return info.param.name; });

// ---------------------------------------------------------------------------
// The chain's text: control characters, and FFmpeg's quoting and escaping
// (av_get_token: '\' takes the next character as it is, '...' a span, no
// escapes inside) at both levels, the chain's ',' and the options' ':' / '='.
// ---------------------------------------------------------------------------

// A NUL inside the spec (Python's Chain('gblur=sigma=2\x00junk')) is refused,
// not read as the end of the text.
TEST(ChainText, NulAndControlCharactersAreRefused) {
  const std::string with_nul = std::string("gblur=sigma=2") + '\0' + "junk";
  ASSERT_EQ(with_nul.size(), 18u);
  const std::string msg = error_of([&] { parse_filter_chain(with_nul); });
  EXPECT_ONE_LINE_CONTAINS(msg, "control character", "\\x00", "byte 14", "gblur=sigma=2\\x00junk");
  // A NUL at the very end, and one inside a regions path (which the OS would cut there).
  EXPECT_ONE_LINE_CONTAINS(error_of([] { parse_filter_chain(std::string("boxblur=3\0", 10)); }), "control character",
                           "\\x00", "byte 10");
  EXPECT_ONE_LINE_CONTAINS(error_of([] { parse_filter_chain(std::string("gblur=regions=a.jsonl\0.x", 24)); }),
                           "control character", "byte 22");
  for (const char c : {'\x01', '\x1b', '\x7f'}) {
    const std::string spec = std::string("gblur=sigma=2") + c;
    SCOPED_TRACE(int(c));
    EXPECT_ONE_LINE_CONTAINS(error_of([&] { parse_filter_chain(spec); }), "control character");
  }
  // Spaces, tabs and line breaks are layout, as in FFmpeg (its WHITESPACES).
  const auto chain = parse_filter_chain(" gblur = sigma = 2 ,\n\tboxblur=3\r\n");
  ASSERT_EQ(chain.size(), 2u);
  EXPECT_EQ(chain[0].values.at("sigma"), 2);
  EXPECT_EQ(chain[1].values.at("luma_radius"), 3);
}

TEST(ChainText, QuotesAndBackslashesAsInFfmpeg) {
  // Quoted and escaped values reach the option table without their quoting.
  auto chain = parse_filter_chain("gblur=sigma='2.5':planes=\\y");
  ASSERT_EQ(chain.size(), 1u);
  EXPECT_EQ(chain[0].values.at("sigma"), 2.5);
  EXPECT_EQ(chain[0].values.at("planes"), double(kCompY));
  chain = parse_filter_chain("gblur='3':'2':'uv'");  // positional, quoted
  EXPECT_EQ(chain[0].values.at("sigma"), 3);
  EXPECT_EQ(chain[0].values.at("steps"), 2);
  EXPECT_EQ(chain[0].values.at("planes"), double(kCompU | kCompV));
  // A quoted ',' does not end the filter; an unquoted one after the quote does.
  chain = parse_filter_chain("gblur=planes='y',boxblur=radius=1");
  ASSERT_EQ(chain.size(), 2u);
  EXPECT_EQ(chain[1].values.at("radius"), 1);
  // An escaped ',' or ':' is part of the value (and so not a number here).
  EXPECT_EQ(error_of([] { parse_filter_chain("gblur=sigma=2\\,boxblur"); }),
            "gblur: option 'sigma' needs a number, got '2,boxblur'");
  EXPECT_EQ(error_of([] { parse_filter_chain("gblur=sigma='2:3'"); }), "gblur: option 'sigma' needs a number, got '2:3'");
  EXPECT_EQ(error_of([] { parse_filter_chain("gblur=sigma=2\\:3"); }), "gblur: option 'sigma' needs a number, got '2:3'");
  // An escaped '=' makes a positional value, not a key.
  EXPECT_EQ(error_of([] { parse_filter_chain("gblur=sigma\\=2"); }), "gblur: option 'sigma' needs a number, got 'sigma=2'");
  // No escapes inside quotes: the backslash stays, the quote closes.
  EXPECT_EQ(error_of([] { parse_filter_chain("gblur=sigma='2\\'"); }), "gblur: option 'sigma' needs a number, got '2\\\\'");
  // Quoted spaces are kept, unquoted ones around a value are not.
  EXPECT_EQ(error_of([] { parse_filter_chain("gblur=planes=' y'"); }),
            "gblur: bad planes value ' y' (expected all, a subset of 'yuva', 'rgb', or a mask 0..15)");
  EXPECT_EQ(parse_filter_chain("gblur=planes= y ")[0].values.at("planes"), double(kCompY));
}

TEST(ChainText, UnterminatedQuoteIsAnError) {
  EXPECT_ONE_LINE_CONTAINS(error_of([] { parse_filter_chain("gblur=sigma='2"); }), "unterminated quote", "byte 13",
                           "gblur=sigma='2");
  EXPECT_ONE_LINE_CONTAINS(error_of([] { parse_filter_chain("gblur=sigma=2,boxblur='1,pixelate"); }),
                           "unterminated quote", "byte 23");
  // An escaped quote opens nothing.
  EXPECT_EQ(error_of([] { parse_filter_chain("gblur=sigma=\\'2"); }), "gblur: option 'sigma' needs a number, got ''2'");
}

// What the fuzzer checks (tests/fuzz/fuzz_filter_spec.cpp), over its saved
// findings and random text made of the syntax's pieces: a spec parses or
// throws std::invalid_argument with one short line, nothing else.
TEST(ChainText, AnyTextGivesOneShortLine) {
  std::vector<std::string> specs;
  const std::filesystem::path saved = std::filesystem::path(__FILE__).parent_path() / "fuzz/regressions/filter_spec";
  if (std::filesystem::is_directory(saved))
    for (const auto& e : std::filesystem::directory_iterator(saved)) specs.push_back(bytes_of(e.path().string()));
  static const char* const kPieces[] = {"gblur", "boxblur", "unsharp", "pixelate", "=", ":", ",", "'", "\\", " ",
                                        "\n", "sigma", "regions", "box", "1", "-1", "0", "2.5", "1e400", "\xc3\xa9",
                                        "\xc3", "\x9e", "\xe2\x80\xa8", "" /* a NUL */, "\x01", "y"};
  std::mt19937 rng(fresh_seed());
  for (int n = 0; n < 20000; ++n) {
    std::string s;
    for (int k = rng() % 12; k >= 0; --k) {
      const std::size_t i = rng() % std::size(kPieces);
      s += i == 23 ? std::string(1, '\0') : std::string(kPieces[i]);
    }
    specs.push_back(s);
  }
  specs.push_back(std::string(3000, '\'') + "'");
  specs.push_back("gblur=regions=" + std::string(5000, '\x9e'));
  for (const std::string& spec : specs) {
    try {
      parse_filter_chain(spec);
    } catch (const std::invalid_argument& e) {
      const std::string msg = e.what();
      ASSERT_FALSE(msg.empty()) << testing::PrintToString(spec);
      ASSERT_EQ(msg.find('\n'), std::string::npos) << testing::PrintToString(spec) << ": " << msg;
      ASSERT_LE(msg.size(), 400u) << testing::PrintToString(spec) << ": " << msg;
    }
  }
}
