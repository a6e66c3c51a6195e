// Tests of pipeline/: the filter registry and chain parser, and run_pipeline
// end to end. Every clip is made at test time with write_synthetic_clip in a
// temporary folder; expected pixels come from the plain CPU references in
// kernels/ applied to the decoded input. Round trips run on every backend
// present (cpu always, cuda when a device is there; the cuda cases skip
// without one).
#include <gtest/gtest.h>

#include "test_support.hpp"
#if STREAMBLUR_HAVE_CUDA
#include "cuda_support.hpp"
#endif

extern "C" {
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/imgutils.h>
#include <libavutil/log.h>
#include <libavutil/pixdesc.h>
#include <libswscale/swscale.h>
}

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <mutex>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <unistd.h>

#include "streamblur/io/convert.hpp"
#include "streamblur/io/reader.hpp"
#include "streamblur/config.hpp"
#if STREAMBLUR_HAVE_CUDA
#include "streamblur/kernels/cuda_check.hpp"
#include "streamblur/kernels/cuda_raii.hpp"
#endif
#include "streamblur/kernels/reference.hpp"
#include "streamblur/pipeline/detail/test_hooks.hpp"
#include "streamblur/pipeline/filter.hpp"
#include "streamblur/pipeline/frame_layout.hpp"
#include "streamblur/pipeline/pipeline.hpp"
#include "streamblur/testing/synthetic_clip.hpp"

namespace streamblur {
// Backend names in failure messages instead of byte dumps (found by ADL).
inline void PrintTo(Backend b, std::ostream* os) { *os << backend_name(b); }
}  // namespace streamblur

namespace fs = std::filesystem;
using namespace streamblur;
using namespace sbtest;
using io::SyntheticClipSpec;

namespace {


bool have_cuda() { return cuda_device_count() > 0; }

#define SKIP_WITHOUT_CUDA() SBTEST_SKIP_WITHOUT_GPU()



// Everything a test compares of a file, read with io::MediaReader.
struct Media {
  io::VideoInfo info;
  std::vector<io::AVFramePtr> frames;
  std::vector<io::AVPacketPtr> packets;  // passthrough, demux order
  std::vector<AVRational> stream_tbs;
  std::string title;
  int warnings = 0;
};

Media read_media(const std::string& path) {
  Media m;
  io::MediaReader r(path);
  m.info = r.video();
  const AVFormatContext* fc = r.format_context();
  if (const AVDictionaryEntry* e = av_dict_get(fc->metadata, "title", nullptr, 0)) m.title = e->value;
  for (unsigned i = 0; i < fc->nb_streams; ++i) m.stream_tbs.push_back(fc->streams[i]->time_base);
  read_everything(r, m.frames, m.packets);
  m.warnings = r.warnings();
  return m;
}

// ---------------------------------------------------------------------------
// Expected pixels: the oracle blurs of test_support.hpp, plane by plane.
// ---------------------------------------------------------------------------

// A plane's geometry, from FFmpeg's pixel format descriptor (independent of
// the pipeline's own FrameLayout).
struct PlaneGeom {
  int width = 0, height = 0, channels = 0, bytes = 1, log2_w = 0, log2_h = 0;
};

std::vector<PlaneGeom> plane_geoms(const AVFrame& f) {
  const auto fmt = static_cast<AVPixelFormat>(f.format);
  const AVPixFmtDescriptor* d = av_pix_fmt_desc_get(fmt);
  const bool rgb = d->flags & AV_PIX_FMT_FLAG_RGB;
  const bool alpha = d->flags & AV_PIX_FMT_FLAG_ALPHA;
  std::vector<PlaneGeom> g(static_cast<size_t>(av_pix_fmt_count_planes(fmt)));
  for (int c = 0; c < d->nb_components; ++c) {
    PlaneGeom& p = g[static_cast<size_t>(d->comp[c].plane)];
    const bool chroma = !rgb && !(alpha && c == d->nb_components - 1) && (c == 1 || c == 2);
    p.channels += 1;
    p.bytes = (d->comp[c].depth + 7) / 8;
    p.log2_w = chroma ? d->log2_chroma_w : 0;
    p.log2_h = chroma ? d->log2_chroma_h : 0;
    p.width = AV_CEIL_RSHIFT(f.width, p.log2_w);
    p.height = AV_CEIL_RSHIFT(f.height, p.log2_h);
  }
  return g;
}

// One filter of a chain, as the test means it (not as the parser reads it).
struct BlurOp {
  enum Kind { Gauss, Box } kind = Gauss;
  double sigma = 0.5;
  double sigma_v = -1;     // -1: same as sigma
  int radius = -1;         // gblur: -1 = ceil(3 sigma); boxblur: the radius
  unsigned plane_mask = 0xF;  // bit p: plane index p is filtered
  bool chroma_scale = true;
};

BlurOp gauss(double sigma, int radius = -1, double sigma_v = -1) {
  BlurOp o;
  o.kind = BlurOp::Gauss;
  o.sigma = sigma;
  o.radius = radius;
  o.sigma_v = sigma_v;
  return o;
}
BlurOp box(int radius) {
  BlurOp o;
  o.kind = BlurOp::Box;
  o.radius = radius;
  return o;
}
BlurOp on_planes(BlurOp o, unsigned mask) {
  o.plane_mask = mask;
  return o;
}
BlurOp unscaled(BlurOp o) {
  o.chroma_scale = false;
  return o;
}

// The rule for subsampled planes: sigma / 2^s per axis (never below
// 0.1) and an explicit radius lround(radius / 2^s).
double scaled_sigma(double sigma, int log2) { return std::max(0.1, sigma / double(1 << log2)); }
int scaled_radius(int radius, int log2) {
  return radius < 0 ? -1 : static_cast<int>(std::lround(radius / double(1 << log2)));
}

template <class T>
void reference_plane(const BlurOp& op, uint8_t* data, int linesize, const PlaneGeom& g) {
  std::vector<uint8_t> copy(static_cast<size_t>(linesize) * g.height);
  std::memcpy(copy.data(), data, copy.size());
  Plane<const T> src(reinterpret_cast<const T*>(copy.data()), g.width, g.height, linesize, g.channels);
  Plane<T> dst(reinterpret_cast<T*>(data), g.width, g.height, linesize, g.channels);
  const int lw = op.chroma_scale ? g.log2_w : 0, lh = op.chroma_scale ? g.log2_h : 0;
  // The test's own oracle (test_support.hpp), not kernels/' reference: it
  // shares no code (weights, rounding) with what the pipeline runs.
  if (op.kind == BlurOp::Gauss) {
    const double sv = op.sigma_v < 0 ? op.sigma : op.sigma_v;
    oracle::gaussian_blur<T>(src.data, src.pitch, dst.data, dst.pitch, g.width, g.height, g.channels,
                             scaled_sigma(op.sigma, lw), scaled_sigma(sv, lh), scaled_radius(op.radius, lw),
                             scaled_radius(op.radius, lh));
  } else {
    oracle::box_blur<T>(src.data, src.pitch, dst.data, dst.pitch, g.width, g.height, g.channels,
                        scaled_radius(op.radius, lw), scaled_radius(op.radius, lh));
  }
}

// A copy of `in` with the chain applied by the references.
io::AVFramePtr reference_frame(const AVFrame& in, const std::vector<BlurOp>& ops) {
  io::AVFramePtr f(av_frame_clone(&in));
  if (!f || av_frame_make_writable(f.get()) < 0) throw std::runtime_error("cannot copy a frame");
  const std::vector<PlaneGeom> geoms = plane_geoms(*f);
  for (const BlurOp& op : ops)
    for (size_t p = 0; p < geoms.size(); ++p) {
      if (!(op.plane_mask & (1u << p))) continue;
      if (geoms[p].bytes == 1) reference_plane<uint8_t>(op, f->data[p], f->linesize[p], geoms[p]);
      else reference_plane<uint16_t>(op, f->data[p], f->linesize[p], geoms[p]);
    }
  return f;
}

// Every plane of `actual` against `expected` (sbtest::tolerance_of: exact for
// 0; for 1, within +-1 with at most 1% of samples differing and no bias);
// names the plane and the worst sample.
::testing::AssertionResult planes_near(const AVFrame& expected, const AVFrame& actual, int tolerance) {
  if (expected.format != actual.format || expected.width != actual.width || expected.height != actual.height)
    return ::testing::AssertionFailure()
           << "format/size differ: expected " << expected.width << "x" << expected.height << " "
           << av_get_pix_fmt_name(static_cast<AVPixelFormat>(expected.format)) << ", got " << actual.width << "x"
           << actual.height << " " << av_get_pix_fmt_name(static_cast<AVPixelFormat>(actual.format));
  const std::vector<PlaneGeom> geoms = plane_geoms(expected);
  for (size_t p = 0; p < geoms.size(); ++p) {
    const PlaneGeom& g = geoms[p];
    // Packed formats with padding (bgr0) compare every byte of the row.
    const int row_samples = av_image_get_linesize(static_cast<AVPixelFormat>(expected.format), expected.width,
                                                  static_cast<int>(p)) / g.bytes;
    const ::testing::AssertionResult r =
        g.bytes == 1 ? planes_close<uint8_t>(actual.data[p], actual.linesize[p], expected.data[p], expected.linesize[p],
                                             row_samples, g.height, 1, tolerance_of(tolerance))
                     : planes_close<uint16_t>(reinterpret_cast<const uint16_t*>(actual.data[p]), actual.linesize[p],
                                              reinterpret_cast<const uint16_t*>(expected.data[p]), expected.linesize[p],
                                              row_samples, g.height, 1, tolerance_of(tolerance));
    if (!r)
      return ::testing::AssertionFailure() << "plane " << p << " (" << g.width << "x" << g.height << "x" << g.channels
                                           << "): " << r.message();
  }
  return ::testing::AssertionSuccess();
}

SyntheticClipSpec clip(int w, int h, int frames, AVPixelFormat fmt = AV_PIX_FMT_YUV420P,
                       const std::string& codec = "ffv1") {
  SyntheticClipSpec s;
  s.width = w;
  s.height = h;
  s.frames = frames;
  s.pix_fmt = fmt;
  s.codec = codec;
  return s;
}

PipelineOptions options_for(const std::string& in, const std::string& out, const std::string& filters,
                            Backend backend, const std::string& codec = "ffv1") {
  PipelineOptions o;
  o.input = in;
  o.output = out;
  o.filters = filters;
  o.backend = backend == Backend::Cuda ? BackendChoice::Cuda : BackendChoice::Cpu;
  o.encoder.codec = codec;
  o.note = [](const std::string&) {};
  return o;
}

std::string backend_param_name(Backend b) { return backend_name(b); }

// ---------------------------------------------------------------------------
// Filter registry and chain parser
// ---------------------------------------------------------------------------

TEST(FilterSpec, RegistryHasGblurAndBoxblur) {
  ASSERT_NE(find_filter("gblur"), nullptr);
  ASSERT_NE(find_filter("boxblur"), nullptr);
  EXPECT_EQ(find_filter("blur"), nullptr);
  const std::string list = filter_list();
  EXPECT_TRUE(contains(list, "gblur")) << list;
  EXPECT_TRUE(contains(list, "boxblur")) << list;
  for (const FilterInfo& f : filter_registry()) EXPECT_TRUE(contains(list, f.name)) << f.name;
}

TEST(FilterSpec, Defaults) {
  auto chain = parse_filter_chain("gblur,boxblur");
  ASSERT_EQ(chain.size(), 2u);
  EXPECT_EQ(chain[0].info->name, "gblur");
  EXPECT_DOUBLE_EQ(chain[0].values.at("sigma"), 0.5);
  EXPECT_DOUBLE_EQ(chain[0].values.at("radius"), -1);
  EXPECT_DOUBLE_EQ(chain[0].values.at("sigmaV"), -1);
  EXPECT_DOUBLE_EQ(chain[0].values.at("chroma_scale"), 0);  // FFmpeg's: sigma in each plane's own pixels
  EXPECT_EQ(static_cast<unsigned>(chain[0].values.at("planes")), kCompY | kCompU | kCompV | kCompA | kCompRGB);
  EXPECT_EQ(chain[1].info->name, "boxblur");
  EXPECT_DOUBLE_EQ(chain[1].values.at("luma_radius"), 2);  // FFmpeg's boxblur defaults: 2:2
  EXPECT_DOUBLE_EQ(chain[1].values.at("luma_power"), 2);
  EXPECT_DOUBLE_EQ(chain[1].values.at("radius"), -1);  // streamblur's one-pass mode: off
  EXPECT_TRUE(chain[0].given.empty());
  // Every option of the table is present, defaults filled in.
  for (const auto& inst : chain)
    for (const OptionSpec& o : inst.info->options) EXPECT_EQ(inst.values.count(o.name), 1u) << o.name;
}

// Values without a name fill the options in FFmpeg's order; streamblur's own
// options come after FFmpeg's and only by name.
TEST(FilterSpec, PositionalAndNamed) {
  auto c = parse_filter_chain("gblur=2");
  ASSERT_EQ(c.size(), 1u);
  EXPECT_DOUBLE_EQ(c[0].values.at("sigma"), 2);
  EXPECT_EQ(c[0].given, GivenOptions{"sigma"});

  c = parse_filter_chain("gblur=2:3:y:4");  // FFmpeg: sigma, steps, planes, sigmaV
  EXPECT_DOUBLE_EQ(c[0].values.at("sigma"), 2);
  EXPECT_DOUBLE_EQ(c[0].values.at("steps"), 3);
  EXPECT_EQ(static_cast<unsigned>(c[0].values.at("planes")), unsigned(kCompY));
  EXPECT_DOUBLE_EQ(c[0].values.at("sigmaV"), 4);
  EXPECT_DOUBLE_EQ(c[0].values.at("radius"), -1);
  EXPECT_ONE_LINE_CONTAINS(error_of([] { parse_filter_chain("gblur=2:3:y:4:5"); }), "too many");

  c = parse_filter_chain("gblur=1.5:sigmaV=3:planes=y");
  EXPECT_DOUBLE_EQ(c[0].values.at("sigma"), 1.5);
  EXPECT_DOUBLE_EQ(c[0].values.at("sigmaV"), 3);
  EXPECT_EQ(static_cast<unsigned>(c[0].values.at("planes")), unsigned(kCompY));

  c = parse_filter_chain("boxblur=3:1:2:4:1:0");  // FFmpeg: lr, lp, cr, cp, ar, ap
  EXPECT_DOUBLE_EQ(c[0].values.at("luma_radius"), 3);
  EXPECT_DOUBLE_EQ(c[0].values.at("luma_power"), 1);
  EXPECT_DOUBLE_EQ(c[0].values.at("chroma_radius"), 2);
  EXPECT_DOUBLE_EQ(c[0].values.at("chroma_power"), 4);
  EXPECT_DOUBLE_EQ(c[0].values.at("alpha_radius"), 1);
  EXPECT_DOUBLE_EQ(c[0].values.at("alpha_power"), 0);
  EXPECT_DOUBLE_EQ(c[0].values.at("radius"), -1);

  c = parse_filter_chain("boxblur=lr=4:lp=1:cr=0:cp=3");  // FFmpeg's short names
  EXPECT_DOUBLE_EQ(c[0].values.at("luma_radius"), 4);
  EXPECT_DOUBLE_EQ(c[0].values.at("luma_power"), 1);
  EXPECT_DOUBLE_EQ(c[0].values.at("chroma_radius"), 0);
  EXPECT_DOUBLE_EQ(c[0].values.at("chroma_power"), 3);
  EXPECT_EQ(c[0].given, (GivenOptions{"chroma_power", "chroma_radius", "luma_power", "luma_radius"}));

  c = parse_filter_chain("unsharp=7:3:-1:5:9:0.8");  // FFmpeg: lx, ly, la, cx, cy, ca
  EXPECT_DOUBLE_EQ(c[0].values.at("luma_msize_x"), 7);
  EXPECT_DOUBLE_EQ(c[0].values.at("luma_msize_y"), 3);
  EXPECT_DOUBLE_EQ(c[0].values.at("luma_amount"), -1);
  EXPECT_DOUBLE_EQ(c[0].values.at("chroma_msize_x"), 5);
  EXPECT_DOUBLE_EQ(c[0].values.at("chroma_msize_y"), 9);
  EXPECT_DOUBLE_EQ(c[0].values.at("chroma_amount"), 0.8);
  c = parse_filter_chain("unsharp=lx=9:la=2");
  EXPECT_DOUBLE_EQ(c[0].values.at("luma_msize_x"), 9);
  EXPECT_DOUBLE_EQ(c[0].values.at("luma_amount"), 2);

  c = parse_filter_chain(" gblur = sigma = 2 : chroma_scale = 1 , boxblur=radius=4:planes=uv ");
  ASSERT_EQ(c.size(), 2u);
  EXPECT_DOUBLE_EQ(c[0].values.at("sigma"), 2);
  EXPECT_DOUBLE_EQ(c[0].values.at("chroma_scale"), 1);
  EXPECT_DOUBLE_EQ(c[1].values.at("radius"), 4);
  EXPECT_EQ(static_cast<unsigned>(c[1].values.at("planes")), unsigned(kCompU | kCompV));

  c = parse_filter_chain("gblur=chroma_scale=true:sigma=1");
  EXPECT_DOUBLE_EQ(c[0].values.at("chroma_scale"), 1);

  // FFmpeg-style plane-index mask: 1 = first plane (Y or RGB).
  c = parse_filter_chain("boxblur=radius=1:planes=0x1");
  EXPECT_EQ(static_cast<unsigned>(c[0].values.at("planes")), unsigned(kCompY | kCompRGB));
  c = parse_filter_chain("boxblur=radius=1:planes=6");
  EXPECT_EQ(static_cast<unsigned>(c[0].values.at("planes")), unsigned(kCompU | kCompV));
}

// A spec that mixes streamblur's own options with FFmpeg's, or that FFmpeg
// would refuse, is refused with what to write instead.
TEST(FilterSpec, FfmpegAndOwnOptionsExcludeEachOther) {
  EXPECT_ONE_LINE_CONTAINS(error_of([] { parse_filter_chain("boxblur=radius=2:lr=3"); }), "boxblur", "radius",
                           "luma_radius", "exclude");
  EXPECT_ONE_LINE_CONTAINS(error_of([] { parse_filter_chain("boxblur=chroma_scale=0"); }), "chroma_scale",
                           "radius");
  EXPECT_ONE_LINE_CONTAINS(error_of([] { parse_filter_chain("unsharp=sigma=2:luma_msize_x=5"); }), "unsharp",
                           "exclude");
  EXPECT_ONE_LINE_CONTAINS(error_of([] { parse_filter_chain("unsharp=4:4:1"); }), "luma_msize_x", "odd");
  EXPECT_ONE_LINE_CONTAINS(error_of([] { parse_filter_chain("unsharp=25"); }), "luma_msize_x", "out of range");
  EXPECT_ONE_LINE_CONTAINS(error_of([] { parse_filter_chain("gblur=1:7"); }), "steps", "out of range");
  EXPECT_NO_THROW(parse_filter_chain("boxblur=radius=2:chroma_scale=0:planes=y"));
  EXPECT_NO_THROW(parse_filter_chain("unsharp=sigma=2:amount=1.5:threshold=2"));
}

TEST(FilterSpec, EmptyChain) {
  EXPECT_TRUE(parse_filter_chain("").empty());
  EXPECT_TRUE(parse_filter_chain("   ").empty());
  EXPECT_ONE_LINE_CONTAINS(error_of([] { parse_filter_chain("gblur,,boxblur"); }), "empty filter");
  EXPECT_ONE_LINE_CONTAINS(error_of([] { parse_filter_chain("gblur,"); }), "empty filter");
}

TEST(FilterSpec, Errors) {
  EXPECT_ONE_LINE_CONTAINS(error_of([] { parse_filter_chain("blur=2"); }), "unknown filter 'blur'");
  EXPECT_ONE_LINE_CONTAINS(error_of([] { parse_filter_chain("gblur=2,median"); }), "unknown filter 'median'");
  EXPECT_ONE_LINE_CONTAINS(error_of([] { parse_filter_chain("gblur=size=2"); }), "unknown option 'size'", "gblur");
  EXPECT_ONE_LINE_CONTAINS(error_of([] { parse_filter_chain("gblur=sigma=1000"); }), "sigma", "out of range");
  EXPECT_ONE_LINE_CONTAINS(error_of([] { parse_filter_chain("gblur=sigma=0"); }), "sigma", "out of range");
  EXPECT_ONE_LINE_CONTAINS(error_of([] { parse_filter_chain("boxblur=radius=-2"); }), "radius", "out of range");
  EXPECT_ONE_LINE_CONTAINS(error_of([] { parse_filter_chain("gblur=radius=5000"); }), "radius", "out of range");
  EXPECT_ONE_LINE_CONTAINS(error_of([] { parse_filter_chain("gblur=sigma=abc"); }), "sigma", "number", "abc");
  EXPECT_ONE_LINE_CONTAINS(error_of([] { parse_filter_chain("gblur=sigma="); }), "sigma", "number");
  EXPECT_ONE_LINE_CONTAINS(error_of([] { parse_filter_chain("gblur=sigma=2x"); }), "sigma", "number");
  EXPECT_ONE_LINE_CONTAINS(error_of([] { parse_filter_chain("gblur=sigma=nan"); }), "sigma", "number");
  EXPECT_ONE_LINE_CONTAINS(error_of([] { parse_filter_chain("boxblur=radius=1.5"); }), "radius", "whole number");
  EXPECT_ONE_LINE_CONTAINS(error_of([] { parse_filter_chain("boxblur=1:planes=y:chroma_scale=1:7"); }), "positional");
  EXPECT_ONE_LINE_CONTAINS(error_of([] { parse_filter_chain("boxblur=1:1:1:1:1:1:7"); }), "too many");
  EXPECT_ONE_LINE_CONTAINS(error_of([] { parse_filter_chain("gblur=planes=xyz"); }), "planes", "xyz");
  EXPECT_ONE_LINE_CONTAINS(error_of([] { parse_filter_chain("gblur=sigmaV=0.05"); }), "sigmaV");
  // All parse errors are std::invalid_argument.
  EXPECT_THROW(parse_filter_chain("nosuch"), std::invalid_argument);
  EXPECT_THROW(parse_filter_chain("gblur=nosuch=1"), std::invalid_argument);
}

TEST(FilterSpec, HelpListsEveryOption) {
  for (const FilterInfo& f : filter_registry()) {
    const std::string help = filter_help(f.name);
    EXPECT_TRUE(contains(help, f.name)) << help;
    for (const OptionSpec& o : f.options) EXPECT_TRUE(contains(help, o.name)) << o.name << " missing in:\n" << help;
  }
  const std::string g = filter_help("gblur");
  for (const char* name : {"sigma", "radius", "sigmaV", "planes", "chroma_scale"}) EXPECT_TRUE(contains(g, name)) << g;
  EXPECT_THROW(filter_help("nosuch"), std::invalid_argument);
  EXPECT_ONE_LINE_CONTAINS(error_of([] { filter_help("nosuch"); }), "unknown filter 'nosuch'");
}

TEST(FilterSpec, PlanesSelectingHalfOfAnInterleavedPlaneIsRefused) {
  // NV12's chroma plane holds U and V together: planes=u cannot be done.
  FilterChain chain(parse_filter_chain("gblur=sigma=1:planes=u"));
  const FrameLayout nv12 = *native_layout(AV_PIX_FMT_NV12, 16, 16);
  EXPECT_THROW(chain.configure(nv12, Backend::Cpu), std::invalid_argument);
  const FrameLayout yuv = *native_layout(AV_PIX_FMT_YUV420P, 16, 16);
  EXPECT_NO_THROW(chain.configure(yuv, Backend::Cpu));
}

// ---------------------------------------------------------------------------
// Small helpers of the pipeline's public interface
// ---------------------------------------------------------------------------

TEST(PipelineBasics, DefaultEncoder) {
  EXPECT_EQ(default_encoder_for("out.png"), "png");
  EXPECT_EQ(default_encoder_for("dir/out.mp4"), "libx264");
  EXPECT_EQ(default_encoder_for("out.mkv"), "libx264");
}

TEST(PipelineBasics, ResolveBackend) {
  std::string why;
  EXPECT_EQ(resolve_backend(BackendChoice::Cpu, &why), Backend::Cpu);
  EXPECT_TRUE(contains(why, "cpu")) << why;
  if (have_cuda()) {
    EXPECT_EQ(resolve_backend(BackendChoice::Auto, &why), Backend::Cuda);
    EXPECT_EQ(resolve_backend(BackendChoice::Cuda, &why), Backend::Cuda);
  } else {
    EXPECT_EQ(resolve_backend(BackendChoice::Auto, &why), Backend::Cpu);
    EXPECT_TRUE(contains(why, STREAMBLUR_HAVE_CUDA ? "no CUDA device" : "built without the CUDA backend")) << why;
    EXPECT_THROW(resolve_backend(BackendChoice::Cuda), std::runtime_error);
  }
}

TEST(PipelineBasics, NativeFormats) {
  for (AVPixelFormat f : {AV_PIX_FMT_YUV420P, AV_PIX_FMT_YUV422P, AV_PIX_FMT_YUV444P, AV_PIX_FMT_GRAY8, AV_PIX_FMT_NV12,
                          AV_PIX_FMT_YUV420P10LE, AV_PIX_FMT_RGB24})
    EXPECT_EQ(nearest_native_format(f), f) << pixel_format_name(f);
  EXPECT_EQ(nearest_native_format(AV_PIX_FMT_BGR0), AV_PIX_FMT_RGB24);
  EXPECT_EQ(nearest_native_format(AV_PIX_FMT_YUV411P), AV_PIX_FMT_YUV422P);
  const FrameLayout l = *native_layout(AV_PIX_FMT_YUV420P, 97, 65);
  ASSERT_EQ(l.num_planes, 3);
  EXPECT_EQ(l.planes[1].width, 49);
  EXPECT_EQ(l.planes[1].height, 33);
}

// ---------------------------------------------------------------------------
// Lossless round trips: output = reference chain applied to the decoded input
// ---------------------------------------------------------------------------

struct RoundTripCase {
  std::string name;
  SyntheticClipSpec spec;
  std::string container = "mkv";
  std::string encoder = "ffv1";
  std::string filters;
  std::vector<BlurOp> ops;
  int tolerance = 0;
  // When set: input and output are converted to this format (losslessly)
  // before the references run and the comparison (non-native inputs).
  AVPixelFormat compare_as = AV_PIX_FMT_NONE;
  std::string expect_note;  // a note that must be given through PipelineOptions::note
};

// Test names in failure messages instead of byte dumps.
void PrintTo(const RoundTripCase& c, std::ostream* os) { *os << c.name << " (" << c.filters << ")"; }

std::vector<RoundTripCase> round_trip_cases() {
  std::vector<RoundTripCase> v;
  auto add = [&](std::string name, SyntheticClipSpec spec, std::string filters, std::vector<BlurOp> ops, int tol) {
    RoundTripCase c;
    c.name = std::move(name);
    c.spec = spec;
    c.filters = std::move(filters);
    c.ops = std::move(ops);
    c.tolerance = tol;
    v.push_back(std::move(c));
  };
  add("Yuv420pGblurOddSize", clip(97, 65, 6), "gblur=sigma=2", {unscaled(gauss(2))}, 1);
  add("Yuv420pGblurExplicitRadiusAndSigmaV", clip(65, 49, 5), "gblur=sigma=3:radius=5:sigmaV=1.5",
      {unscaled(gauss(3, 5, 1.5))}, 1);
  add("Yuv420pGblurSmallSigmaClampsOnChroma", clip(64, 48, 5), "gblur=sigma=0.15:chroma_scale=1", {gauss(0.15)}, 1);
  add("Yuv420pBoxblur", clip(97, 65, 5), "boxblur=radius=3", {box(3)}, 0);
  add("Yuv422pGblur", clip(66, 50, 5, AV_PIX_FMT_YUV422P), "gblur=sigma=1.7", {unscaled(gauss(1.7))}, 1);
  add("Yuv422pBoxblur", clip(67, 51, 5, AV_PIX_FMT_YUV422P), "boxblur=radius=5", {box(5)}, 0);
  add("Yuv444pGblur", clip(64, 48, 5, AV_PIX_FMT_YUV444P), "gblur=sigma=1.2:radius=2", {unscaled(gauss(1.2, 2))}, 1);
  add("Yuv444pBoxblur", clip(65, 49, 5, AV_PIX_FMT_YUV444P), "boxblur=radius=2", {box(2)}, 0);
  add("GrayGblur", clip(97, 65, 5, AV_PIX_FMT_GRAY8), "gblur=sigma=2.5", {unscaled(gauss(2.5))}, 1);
  add("GrayBoxblur", clip(64, 48, 5, AV_PIX_FMT_GRAY8), "boxblur=radius=4", {box(4)}, 0);
  add("Yuv420p10leGblur", clip(65, 49, 5, AV_PIX_FMT_YUV420P10LE), "gblur=sigma=1.5", {unscaled(gauss(1.5))}, 1);
  add("Yuv420p10leBoxblur", clip(64, 48, 5, AV_PIX_FMT_YUV420P10LE), "boxblur=radius=3", {box(3)}, 0);
  add("Gray16Boxblur", clip(64, 48, 5, AV_PIX_FMT_GRAY16LE), "boxblur=radius=2", {box(2)}, 0);
  add("PlanesYLeavesChromaUntouched", clip(97, 65, 5), "gblur=sigma=2:planes=y", {on_planes(unscaled(gauss(2)), 1)}, 1);
  add("PlanesUvBoxblur", clip(64, 48, 5), "boxblur=radius=2:planes=uv", {on_planes(box(2), 6)}, 0);
  add("ChromaScaleOnGblur", clip(97, 65, 5), "gblur=sigma=2:chroma_scale=1", {gauss(2)}, 1);
  add("ChromaScaleOffBoxblur", clip(64, 48, 5), "boxblur=radius=3:chroma_scale=0", {unscaled(box(3))}, 0);
  add("ChainGblurThenBoxblur", clip(97, 65, 5), "gblur=sigma=1.5,boxblur=radius=2", {unscaled(gauss(1.5)), box(2)}, 1);
  add("ChainTwoBoxblurs", clip(64, 48, 5, AV_PIX_FMT_YUV422P), "boxblur=radius=1,boxblur=radius=3:planes=y",
      {box(1), on_planes(box(3), 1)}, 0);
  // FFmpeg's boxblur: luma_radius:luma_power:chroma_radius:chroma_power, the
  // chroma radius in chroma pixels; power 0 leaves the plane untouched.
  add("FfmpegBoxblurOnePass", clip(97, 65, 5), "boxblur=2:1", {unscaled(box(2))}, 0);
  add("FfmpegBoxblurChromaRadius", clip(97, 65, 5), "boxblur=3:1:1:1", {on_planes(box(3), 1), on_planes(unscaled(box(1)), 6)}, 0);
  add("FfmpegBoxblurPowerZeroLeavesChroma", clip(64, 48, 5), "boxblur=lr=2:lp=1:cp=0", {on_planes(box(2), 1)}, 0);
  add("FfmpegGblurStepsChangeNothing", clip(65, 49, 5), "gblur=sigma=2:steps=6", {unscaled(gauss(2))}, 1);
  add("NoFilterIsLossless", clip(65, 49, 5), "", {}, 0);
  {
    // bgr0 is not processed natively: converted to rgb24 for filtering and
    // back (both conversions only reorder bytes, so the round trip is exact).
    add("Bgr0ConvertedToRgb24AndBack", clip(65, 49, 5, AV_PIX_FMT_BGR0), "boxblur=radius=2", {box(2)}, 0);
    v.back().compare_as = AV_PIX_FMT_RGB24;
    v.back().expect_note = "bgr0";
    add("Bgr0Gblur", clip(64, 48, 5, AV_PIX_FMT_BGR0), "gblur=sigma=1.3", {unscaled(gauss(1.3))}, 1);
    v.back().compare_as = AV_PIX_FMT_RGB24;
    v.back().expect_note = "rgb24";
  }
  {
    // ffv1 cannot hold nv12; rawvideo in matroska can (both on the GPU machine).
    add("Nv12RawvideoGblur", clip(97, 65, 5, AV_PIX_FMT_NV12, "rawvideo"), "gblur=sigma=2", {unscaled(gauss(2))}, 1);
    v.back().encoder = "rawvideo";
    add("Nv12RawvideoBoxblur", clip(64, 48, 5, AV_PIX_FMT_NV12, "rawvideo"), "boxblur=radius=3", {box(3)}, 0);
    v.back().encoder = "rawvideo";
    add("Nv12RawvideoChromaScaleOn", clip(64, 48, 5, AV_PIX_FMT_NV12, "rawvideo"), "gblur=sigma=1:chroma_scale=1",
        {gauss(1)}, 1);
    v.back().encoder = "rawvideo";
  }
  {
    // Still images: png in, png out (rgb24 and rgba are native packed formats).
    add("PngRgb24Boxblur", clip(65, 49, 1, AV_PIX_FMT_RGB24, "png"), "boxblur=radius=2", {box(2)}, 0);
    v.back().container = "png";
    v.back().encoder = "png";
    add("PngRgbaGblur", clip(64, 48, 1, AV_PIX_FMT_RGBA, "png"), "gblur=sigma=1.5", {unscaled(gauss(1.5))}, 1);
    v.back().container = "png";
    v.back().encoder = "png";
  }
  return v;
}

class PipelineRoundTrip : public ::testing::TestWithParam<std::tuple<Backend, RoundTripCase>> {};

TEST_P(PipelineRoundTrip, OutputEqualsReferenceOnEveryPlane) {
  const Backend backend = std::get<0>(GetParam());
  const RoundTripCase& c = std::get<1>(GetParam());
  if (backend == Backend::Cuda) SKIP_WITHOUT_CUDA();
  TempDir dir;
  const std::string in = dir.file("in." + c.container), out = dir.file("out." + c.container);
  io::write_synthetic_clip(in, c.spec);
  const std::string in_bytes = bytes_of(in);

  PipelineOptions o = options_for(in, out, c.filters, backend, c.encoder);
  std::vector<std::string> notes;
  o.note = [&](const std::string& s) { notes.push_back(s); };
  o.inflight = 3;
  RunStats st;
  ASSERT_NO_THROW(st = run_pipeline(o));
  EXPECT_EQ(st.backend, backend_name(backend));
  EXPECT_EQ(st.frames, c.spec.frames);
  EXPECT_EQ(bytes_of(in), in_bytes) << "the input was changed";
  EXPECT_EQ(dir.listing(), (std::vector<std::string>{"in." + c.container, "out." + c.container}))
      << "temporary files left behind";
  if (!c.expect_note.empty()) {
    bool found = false;
    for (const std::string& n : notes) found = found || (contains(n, c.expect_note) && contains(n, "convert"));
    EXPECT_TRUE(found) << "no note about converting " << c.expect_note;
  }

  const Media a = read_media(in), b = read_media(out);
  ASSERT_EQ(a.frames.size(), static_cast<size_t>(c.spec.frames));
  ASSERT_EQ(b.frames.size(), a.frames.size());
  EXPECT_EQ(b.info.pix_fmt, a.info.pix_fmt) << pixel_format_name(b.info.pix_fmt);
  for (size_t i = 0; i < a.frames.size(); ++i) {
    EXPECT_EQ(b.frames[i]->pts, a.frames[i]->pts) << "frame " << i;
    io::AVFramePtr src, got;
    if (c.compare_as != AV_PIX_FMT_NONE) {
      io::FrameConverter to(a.info.width, a.info.height, a.info.pix_fmt, c.compare_as);
      src = io::make_frame();
      got = io::make_frame();
      to.convert(*a.frames[i], *src);
      to.convert(*b.frames[i], *got);
    } else {
      src.reset(av_frame_clone(a.frames[i].get()));
      got.reset(av_frame_clone(b.frames[i].get()));
    }
    const io::AVFramePtr expected = reference_frame(*src, c.ops);
    EXPECT_TRUE(planes_near(*expected, *got, c.tolerance)) << c.filters << ", frame " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Cases, PipelineRoundTrip,
    ::testing::Combine(::testing::Values(Backend::Cpu, Backend::Cuda), ::testing::ValuesIn(round_trip_cases())),
    [](const ::testing::TestParamInfo<PipelineRoundTrip::ParamType>& info) {
      return backend_param_name(std::get<0>(info.param)) + "_" + std::get<1>(info.param).name;
    });

// ---------------------------------------------------------------------------
// Formats end to end, checked without the product's own reader or converter:
// input and output are decoded here with libavformat/libavcodec directly, the
// input is blurred with the oracle, and every plane of the output must match
// (with the bias limits). JPEG-range YUV comes from MJPEG, packed RGB and
// gray16 from rawvideo / ffv1; yuv411p goes through swscale both ways.
// ---------------------------------------------------------------------------

// Every video frame of `path`, decoded with FFmpeg's API only.
std::vector<io::AVFramePtr> decode_independently(const std::string& path) {
  AVFormatContext* fc = nullptr;
  if (avformat_open_input(&fc, path.c_str(), nullptr, nullptr) < 0) throw std::runtime_error("cannot open " + path);
  const io::AVInputFormatContextPtr fc_owner(fc);
  if (avformat_find_stream_info(fc, nullptr) < 0) throw std::runtime_error("no stream info in " + path);
  const int vs = av_find_best_stream(fc, AVMEDIA_TYPE_VIDEO, -1, -1, nullptr, 0);
  if (vs < 0) throw std::runtime_error("no video in " + path);
  const AVCodec* dec = avcodec_find_decoder(fc->streams[vs]->codecpar->codec_id);
  const io::AVCodecContextPtr cc(avcodec_alloc_context3(dec));
  if (avcodec_parameters_to_context(cc.get(), fc->streams[vs]->codecpar) < 0 || avcodec_open2(cc.get(), dec, nullptr) < 0)
    throw std::runtime_error("cannot open the decoder of " + path);
  std::vector<io::AVFramePtr> frames;
  auto drain = [&] {
    for (;;) {
      io::AVFramePtr f = io::make_frame();
      const int rc = avcodec_receive_frame(cc.get(), f.get());
      if (rc == AVERROR(EAGAIN) || rc == AVERROR_EOF) return;
      if (rc < 0) throw std::runtime_error("decode error in " + path);
      frames.push_back(std::move(f));
    }
  };
  io::AVPacketPtr pkt = io::make_packet();
  while (av_read_frame(fc, pkt.get()) >= 0) {
    if (pkt->stream_index == vs) {
      if (avcodec_send_packet(cc.get(), pkt.get()) < 0) throw std::runtime_error("bad packet in " + path);
      drain();
    }
    av_packet_unref(pkt.get());
  }
  avcodec_send_packet(cc.get(), nullptr);
  drain();
  return frames;
}

// `in` converted to `to` by swscale with the flags the product documents for
// its format conversions (bicubic, accurate rounding).
io::AVFramePtr sws_convert(const AVFrame& in, AVPixelFormat to) {
  io::AVFramePtr out = io::make_frame();
  out->format = to;
  out->width = in.width;
  out->height = in.height;
  if (av_frame_get_buffer(out.get(), 0) < 0) throw std::bad_alloc();
  const io::SwsContextPtr sws(sws_getContext(in.width, in.height, static_cast<AVPixelFormat>(in.format), in.width,
                                             in.height, to, SWS_BICUBIC | SWS_ACCURATE_RND, nullptr, nullptr, nullptr));
  if (!sws) throw std::runtime_error("sws_getContext failed");
  sws_scale(sws.get(), in.data, in.linesize, 0, in.height, out->data, out->linesize);
  return out;
}

struct FormatCase {
  std::string name;
  AVPixelFormat fmt;
  std::string in_codec;            // encoder of the input clip (container: mkv; nut for rawvideo)
  std::string filters;
  std::vector<BlurOp> ops;
  int tolerance;
  AVPixelFormat via = AV_PIX_FMT_NONE;  // the processing format when the input is converted
};
void PrintTo(const FormatCase& c, std::ostream* os) { *os << c.name << " (" << c.filters << ")"; }

std::vector<FormatCase> format_cases() {
  return {
      {"Yuvj420pMjpegGblur", AV_PIX_FMT_YUVJ420P, "mjpeg", "gblur=sigma=2", {unscaled(gauss(2))}, 1},
      {"Yuvj422pMjpegGblur", AV_PIX_FMT_YUVJ422P, "mjpeg", "gblur=sigma=1.7", {unscaled(gauss(1.7))}, 1},
      {"Yuvj422pMjpegBoxblur", AV_PIX_FMT_YUVJ422P, "mjpeg", "boxblur=radius=3", {box(3)}, 0},
      {"Yuvj444pMjpegGblurThenBoxblur", AV_PIX_FMT_YUVJ444P, "mjpeg", "gblur=sigma=1.2,boxblur=radius=1", {unscaled(gauss(1.2)), box(1)}, 1},
      {"Bgr24RawvideoGblur", AV_PIX_FMT_BGR24, "rawvideo", "gblur=sigma=1.5", {unscaled(gauss(1.5))}, 1},
      {"Bgr24RawvideoBoxblur", AV_PIX_FMT_BGR24, "rawvideo", "boxblur=radius=2", {box(2)}, 0},
      {"BgraRawvideoGblur", AV_PIX_FMT_BGRA, "rawvideo", "gblur=sigma=2.5", {unscaled(gauss(2.5))}, 1},
      {"Gray16Ffv1Gblur", AV_PIX_FMT_GRAY16LE, "ffv1", "gblur=sigma=2", {unscaled(gauss(2))}, 1},
      {"Yuv411pThroughYuv422pGblur", AV_PIX_FMT_YUV411P, "ffv1", "gblur=sigma=2", {unscaled(gauss(2))}, 1, AV_PIX_FMT_YUV422P},
  };
}

// yuvjNNNp is yuvNNNp with full range: an output may say either, as long as
// its range says full (checked separately).
AVPixelFormat without_j(int fmt) {
  switch (fmt) {
    case AV_PIX_FMT_YUVJ420P: return AV_PIX_FMT_YUV420P;
    case AV_PIX_FMT_YUVJ422P: return AV_PIX_FMT_YUV422P;
    case AV_PIX_FMT_YUVJ444P: return AV_PIX_FMT_YUV444P;
    default: return static_cast<AVPixelFormat>(fmt);
  }
}

class PipelineFormats : public ::testing::TestWithParam<std::tuple<Backend, FormatCase>> {};

TEST_P(PipelineFormats, EveryPlaneEqualsTheOracleOnIndependentlyDecodedFrames) {
  const Backend backend = std::get<0>(GetParam());
  const FormatCase& c = std::get<1>(GetParam());
  if (backend == Backend::Cuda) SKIP_WITHOUT_CUDA();
  TempDir dir;
  // NUT holds rawvideo of any pixel format (matroska does not: bgr24, gray16...).
  // The GPU machine's minimal FFmpeg has no NUT muxer and no MJPEG encoder:
  // there the RGB cases go through AVI, gray16 and yuv411p through lossless
  // FFV1 in matroska, and the JPEG-range cases cannot be made (AVI and
  // matroska keep no yuvj rawvideo); they skip, saying so (not a GPU skip).
  const bool nut = av_guess_format("nut", nullptr, nullptr) != nullptr;
  if (c.in_codec == "mjpeg" && (!nut || !avcodec_find_encoder_by_name("mjpeg")))
    GTEST_SKIP() << "this FFmpeg has no " << (nut ? "MJPEG encoder" : "NUT muxer") << " to make and keep a "
                 << av_get_pix_fmt_name(c.fmt) << " clip";
  const bool rgb = c.fmt == AV_PIX_FMT_BGR24 || c.fmt == AV_PIX_FMT_BGRA;
  const std::string raw_ext = nut ? "nut" : rgb ? "avi" : "mkv";
  const std::string out_codec = nut || rgb ? "rawvideo" : "ffv1";
  const std::string in = dir.file(c.in_codec == "rawvideo" ? "in." + raw_ext : "in.mkv"),
                    out = dir.file("out." + raw_ext);
  SyntheticClipSpec spec = clip(66, 50, 4, c.fmt, c.in_codec);
  if (c.in_codec == "mjpeg") spec.color_range = AVCOL_RANGE_JPEG;
  io::write_synthetic_clip(in, spec);
  PipelineOptions o = options_for(in, out, c.filters, backend, out_codec);  // lossless for every format
  ASSERT_NO_THROW(run_pipeline(o));
  const std::vector<io::AVFramePtr> a = decode_independently(in), b = decode_independently(out);
  ASSERT_EQ(a.size(), 4u);
  ASSERT_EQ(b.size(), a.size());
  for (size_t i = 0; i < a.size(); ++i) {
    SCOPED_TRACE(testing::Message() << c.name << ", frame " << i);
    ASSERT_EQ(a[i]->format, c.fmt) << av_get_pix_fmt_name(static_cast<AVPixelFormat>(a[i]->format));
    EXPECT_EQ(without_j(b[i]->format), without_j(a[i]->format))
        << av_get_pix_fmt_name(static_cast<AVPixelFormat>(b[i]->format));
    // (NUT stores no colour range; PipelinePassthrough.ColourTagsKept checks the tags.)
    io::AVFramePtr expected;
    if (c.via == AV_PIX_FMT_NONE) {
      expected = reference_frame(*a[i], c.ops);
    } else {
      const io::AVFramePtr blurred = reference_frame(*sws_convert(*a[i], c.via), c.ops);
      expected = sws_convert(*blurred, c.fmt);
    }
    expected->format = without_j(expected->format);
    b[i]->format = without_j(b[i]->format);
    EXPECT_TRUE(planes_near(*expected, *b[i], c.tolerance));
  }
}

INSTANTIATE_TEST_SUITE_P(
    Cases, PipelineFormats,
    ::testing::Combine(::testing::Values(Backend::Cpu, Backend::Cuda), ::testing::ValuesIn(format_cases())),
    [](const ::testing::TestParamInfo<PipelineFormats::ParamType>& info) {
      return backend_param_name(std::get<0>(info.param)) + "_" + std::get<1>(info.param).name;
    });

// CUDA and CPU backends agree within +-1 per sample on every plane.
class PipelineCudaVsCpu : public ::testing::TestWithParam<RoundTripCase> {};

TEST_P(PipelineCudaVsCpu, SameOutputWithinOne) {
  SKIP_WITHOUT_CUDA();
  const RoundTripCase& c = GetParam();
  TempDir dir;
  const std::string in = dir.file("in." + c.container);
  io::write_synthetic_clip(in, c.spec);
  const std::string out_cpu = dir.file("cpu." + c.container), out_gpu = dir.file("cuda." + c.container);
  ASSERT_NO_THROW(run_pipeline(options_for(in, out_cpu, c.filters, Backend::Cpu, c.encoder)));
  ASSERT_NO_THROW(run_pipeline(options_for(in, out_gpu, c.filters, Backend::Cuda, c.encoder)));
  const Media a = read_media(out_cpu), b = read_media(out_gpu);
  ASSERT_EQ(a.frames.size(), static_cast<size_t>(c.spec.frames));
  ASSERT_EQ(b.frames.size(), a.frames.size());
  for (size_t i = 0; i < a.frames.size(); ++i) {
    EXPECT_EQ(a.frames[i]->pts, b.frames[i]->pts);
    EXPECT_TRUE(planes_near(*a.frames[i], *b.frames[i], 1)) << c.filters << ", frame " << i;
  }
}

std::vector<RoundTripCase> cuda_vs_cpu_cases() {
  std::vector<RoundTripCase> v;
  for (const RoundTripCase& c : round_trip_cases())
    if (c.name == "Yuv420pGblurOddSize" || c.name == "Yuv422pBoxblur" || c.name == "Yuv444pGblur" ||
        c.name == "GrayGblur" || c.name == "Yuv420p10leGblur" || c.name == "ChainGblurThenBoxblur" ||
        c.name == "Bgr0Gblur" || c.name == "Nv12RawvideoGblur" || c.name == "PngRgbaGblur" ||
        c.name == "PlanesYLeavesChromaUntouched")
      v.push_back(c);
  // A heavier blur: large radii on every plane.
  RoundTripCase big;
  big.name = "Yuv420pGblurSigma8Box7";
  big.spec = clip(97, 65, 6);
  big.filters = "gblur=sigma=8,boxblur=7";
  v.push_back(big);
  return v;
}

INSTANTIATE_TEST_SUITE_P(Cases, PipelineCudaVsCpu, ::testing::ValuesIn(cuda_vs_cpu_cases()),
                         [](const ::testing::TestParamInfo<RoundTripCase>& info) { return info.param.name; });

// ---------------------------------------------------------------------------
// Timestamps, audio, colour and metadata pass through
// ---------------------------------------------------------------------------

class PipelinePassthrough : public ::testing::TestWithParam<Backend> {
 protected:
  void SetUp() override {
    if (GetParam() == Backend::Cuda) SBTEST_SKIP_WITHOUT_GPU();
  }
};

// Passthrough packets of input stream `in_index` and output stream
// `out_index`: same count, bytes and time (pts compared in seconds when the
// time bases differ).
void expect_same_packets(const Media& in, int in_index, const Media& out, int out_index) {
  std::vector<const AVPacket*> a, b;
  for (const auto& p : in.packets)
    if (p->stream_index == in_index) a.push_back(p.get());
  for (const auto& p : out.packets)
    if (p->stream_index == out_index) b.push_back(p.get());
  ASSERT_FALSE(a.empty());
  ASSERT_EQ(a.size(), b.size());
  const AVRational ta = in.stream_tbs.at(in_index), tb = out.stream_tbs.at(out_index);
  for (size_t i = 0; i < a.size(); ++i) {
    ASSERT_EQ(a[i]->size, b[i]->size) << "packet " << i;
    EXPECT_EQ(std::memcmp(a[i]->data, b[i]->data, a[i]->size), 0) << "packet " << i << " differs";
    if (av_cmp_q(ta, tb) == 0) EXPECT_EQ(a[i]->pts, b[i]->pts) << "packet " << i;
    else EXPECT_EQ(av_compare_ts(a[i]->pts, ta, b[i]->pts, tb), 0) << "packet " << i;
  }
}

void expect_same_timing(const Media& a, const Media& b) {
  ASSERT_EQ(a.frames.size(), b.frames.size());
  EXPECT_EQ(av_cmp_q(a.info.time_base, b.info.time_base), 0)
      << a.info.time_base.num << "/" << a.info.time_base.den << " vs " << b.info.time_base.num << "/"
      << b.info.time_base.den;
  for (size_t i = 0; i < a.frames.size(); ++i) EXPECT_EQ(a.frames[i]->pts, b.frames[i]->pts) << "frame " << i;
}

TEST_P(PipelinePassthrough, PcmAudioTitleAndPts) {
  TempDir dir;
  SyntheticClipSpec spec = clip(64, 48, 12);
  spec.audio = true;
  spec.audio_codec = "pcm_s16le";
  spec.title = "streamblur pipeline test";
  const std::string in = dir.file("in.mkv"), out = dir.file("out.mkv");
  io::write_synthetic_clip(in, spec);
  const RunStats st = run_pipeline(options_for(in, out, "gblur=sigma=1", GetParam()));
  EXPECT_EQ(st.frames, 12);
  const Media a = read_media(in), b = read_media(out);
  expect_same_timing(a, b);
  EXPECT_EQ(b.title, spec.title);
  ASSERT_EQ(b.stream_tbs.size(), 2u);
  expect_same_packets(a, 1, b, 1);
}

TEST_P(PipelinePassthrough, VariableFrameRateWithAac) {
  TempDir dir;
  SyntheticClipSpec spec = clip(65, 49, 12);
  spec.variable_frame_rate = true;
  spec.audio = true;
  spec.audio_codec = "aac";
  const std::string in = dir.file("in.mkv"), out = dir.file("out.mkv");
  io::write_synthetic_clip(in, spec);
  run_pipeline(options_for(in, out, "boxblur=radius=1", GetParam()));
  const Media a = read_media(in), b = read_media(out);
  // The input really is irregular.
  std::set<int64_t> steps;
  for (size_t i = 1; i < a.frames.size(); ++i) steps.insert(a.frames[i]->pts - a.frames[i - 1]->pts);
  EXPECT_GT(steps.size(), 1u);
  expect_same_timing(a, b);
  expect_same_packets(a, 1, b, 1);
}

TEST_P(PipelinePassthrough, Libx264Mp4WithAac) {
  TempDir dir;
  SyntheticClipSpec spec = clip(64, 48, 10, AV_PIX_FMT_YUV420P, "libx264");
  spec.preset = "ultrafast";
  spec.audio = true;
  spec.audio_codec = "aac";
  spec.title = "x264 clip";
  const std::string in = dir.file("in.mp4"), out = dir.file("out.mp4");
  io::write_synthetic_clip(in, spec);
  PipelineOptions o = options_for(in, out, "gblur=sigma=1.5", GetParam(), "libx264");
  o.encoder.preset = "ultrafast";
  const RunStats st = run_pipeline(o);
  EXPECT_EQ(st.frames, 10);
  const Media a = read_media(in), b = read_media(out);
  ASSERT_EQ(a.frames.size(), 10u);
  ASSERT_EQ(b.frames.size(), a.frames.size());
  for (size_t i = 0; i < a.frames.size(); ++i)
    EXPECT_EQ(av_compare_ts(a.frames[i]->pts, a.info.time_base, b.frames[i]->pts, b.info.time_base), 0)
        << "frame " << i << ": " << a.frames[i]->pts << " vs " << b.frames[i]->pts;
  EXPECT_EQ(b.title, spec.title);
  ASSERT_EQ(b.stream_tbs.size(), 2u);
  expect_same_packets(a, 1, b, 1);
}

TEST_P(PipelinePassthrough, ColourTagsKept) {
  struct Tags {
    AVColorRange range;
    AVColorSpace space;
    AVColorPrimaries prim;
    AVColorTransferCharacteristic trc;
  };
  for (const Tags& t : {Tags{AVCOL_RANGE_JPEG, AVCOL_SPC_SMPTE170M, AVCOL_PRI_SMPTE170M, AVCOL_TRC_SMPTE170M},
                        Tags{AVCOL_RANGE_MPEG, AVCOL_SPC_BT2020_NCL, AVCOL_PRI_BT2020, AVCOL_TRC_SMPTE2084}}) {
    TempDir dir;
    SyntheticClipSpec spec = clip(64, 48, 5, t.range == AVCOL_RANGE_MPEG ? AV_PIX_FMT_YUV420P10LE : AV_PIX_FMT_YUV420P);
    spec.color_range = t.range;
    spec.colorspace = t.space;
    spec.color_primaries = t.prim;
    spec.color_trc = t.trc;
    const std::string in = dir.file("in.mkv"), out = dir.file("out.mkv");
    io::write_synthetic_clip(in, spec);
    run_pipeline(options_for(in, out, "gblur=sigma=1", GetParam()));
    const Media a = read_media(in), b = read_media(out);
    ASSERT_EQ(b.frames.size(), 5u);
    EXPECT_EQ(a.frames[0]->color_range, t.range);
    for (const auto& f : b.frames) {
      EXPECT_EQ(f->color_range, t.range);
      EXPECT_EQ(f->colorspace, t.space);
      EXPECT_EQ(f->color_primaries, t.prim);
      EXPECT_EQ(f->color_trc, t.trc);
    }
  }
}

TEST_P(PipelinePassthrough, InflightOneAndManyKeepOrder) {
  TempDir dir;
  SyntheticClipSpec spec = clip(64, 48, 12);
  spec.variable_frame_rate = true;
  const std::string in = dir.file("in.mkv");
  io::write_synthetic_clip(in, spec);
  const Media a = read_media(in);
  for (int inflight : {1, 2, 8}) {
    const std::string out = dir.file("out" + std::to_string(inflight) + ".mkv");
    PipelineOptions o = options_for(in, out, "boxblur=radius=2", GetParam());
    o.inflight = inflight;
    run_pipeline(o);
    const Media b = read_media(out);
    expect_same_timing(a, b);
    for (size_t i = 0; i < b.frames.size(); ++i)
      EXPECT_TRUE(planes_near(*reference_frame(*a.frames[i], {box(2)}), *b.frames[i], 0))
          << "inflight " << inflight << ", frame " << i;
  }
}

// Frames really complete out of order (the test hook delays every fifth frame
// in the parallel finish stage, with 8 in flight), and still come out in
// input order: pts strictly increasing and equal to the input's, and each
// frame's pixels are the blur of its own input frame. The hook's record of
// completion order proves the reordering happened, so this cannot pass
// vacuously on a machine where frames would finish in order anyway.
TEST_P(PipelinePassthrough, DelayedFramesFinishOutOfOrderAndAreWrittenInOrder) {
  TempDir dir;
  const int n = 60;
  const std::string in = dir.file("in.mkv"), out = dir.file("out.mkv");
  io::write_synthetic_clip(in, clip(32, 24, n));
  const Media a = read_media(in);
  ASSERT_EQ(a.frames.size(), static_cast<size_t>(n));
  // Frames must differ from their neighbours, or a swap would go unseen.
  for (int i = 1; i < n; ++i)
    ASSERT_FALSE(planes_near(*a.frames[i - 1], *a.frames[i], 0)) << "input frames " << i - 1 << " and " << i << " are equal";

  std::mutex m;
  std::vector<int64_t> completed;
  PipelineOptions o = options_for(in, out, "boxblur=radius=1", GetParam());
  o.inflight = 8;
  detail::PipelineTestHooks hooks;
  hooks.on_finish = [&](int64_t index) {
    if (index % 5 == 0) std::this_thread::sleep_for(std::chrono::milliseconds(40));
    std::lock_guard<std::mutex> lock(m);
    completed.push_back(index);
  };
  ASSERT_EQ(detail::run_pipeline_with_hooks(o, hooks).frames, n);

  // The hook saw every frame once, and some finished before an earlier one.
  ASSERT_EQ(completed.size(), static_cast<size_t>(n));
  EXPECT_EQ(std::set<int64_t>(completed.begin(), completed.end()).size(), static_cast<size_t>(n));
  int overtaken = 0;  // frames that finished after a later frame
  int64_t latest = -1;
  for (int64_t i : completed) {
    overtaken += i < latest;
    latest = std::max(latest, i);
  }
  EXPECT_GE(overtaken, 5) << "frames did not finish out of order; the test would prove nothing";

  const Media b = read_media(out);
  ASSERT_EQ(b.frames.size(), a.frames.size());
  for (int i = 0; i < n; ++i) {
    EXPECT_EQ(b.frames[i]->pts, a.frames[i]->pts) << "frame " << i;
    if (i > 0) EXPECT_GT(b.frames[i]->pts, b.frames[i - 1]->pts) << "frame " << i;
    EXPECT_TRUE(planes_near(*reference_frame(*a.frames[i], {box(1)}), *b.frames[i], 0)) << "frame " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(Backends, PipelinePassthrough, ::testing::Values(Backend::Cpu, Backend::Cuda),
                         [](const ::testing::TestParamInfo<Backend>& info) { return backend_param_name(info.param); });

// ---------------------------------------------------------------------------
// Null sink, statistics, progress, stop
// ---------------------------------------------------------------------------

TEST(PipelineRun, NullSinkCountsFramesAndStatsAreSane) {
  TempDir dir;
  const std::string in = dir.file("in.mkv");
  io::write_synthetic_clip(in, clip(65, 49, 9));
  PipelineOptions o = options_for(in, "", "gblur=sigma=2,boxblur=1", Backend::Cpu);
  o.backend = BackendChoice::Auto;
  std::vector<Progress> calls;
  o.progress = [&](const Progress& p) { calls.push_back(p); };
  // The wall time measured around the call bounds what the run reports.
  const auto t0 = std::chrono::steady_clock::now();
  const RunStats st = run_pipeline(o);
  const double outside_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(st.frames, 9);
  EXPECT_GT(st.wall_s, 0);
  EXPECT_LE(st.wall_s, outside_s) << "the run reports more time than it took";
  // fps is frames over a wall time no longer than the call: at least
  // frames / outside_s. (Set-up before the clock starts may be left out, so
  // the report may be faster than that, but not by more than the set-up.)
  EXPECT_GE(st.fps, st.frames / outside_s * (1 - 1e-9)) << "fps below frames / wall time of the call";
  EXPECT_LE(st.fps, st.frames / (st.wall_s * (1 - 1e-9))) << "fps above frames / reported wall time";
  EXPECT_EQ(st.backend, have_cuda() ? "cuda" : "cpu");
  EXPECT_FALSE(st.filters.empty());
  EXPECT_TRUE(contains(st.filters, "gblur")) << st.filters;
  EXPECT_TRUE(contains(st.filters, "boxblur")) << st.filters;
  EXPECT_EQ(st.input_format, "yuv420p");
  EXPECT_EQ(st.processing_format, "yuv420p");
  EXPECT_FALSE(st.bounding_stage.empty());
  EXPECT_FALSE(st.stopped_early);
  EXPECT_EQ(st.decode_warnings, 0);
  // Serial stages (decode, encode) cannot be busy or blocked longer than the
  // call took; the parallel filter stage at most `inflight` frames at a time.
  for (const StageStats* s : {&st.decode, &st.encode}) {
    EXPECT_LE(s->busy_s, outside_s);
    EXPECT_LE(s->blocked_s, outside_s);
  }
  EXPECT_LE(st.filter.busy_s, outside_s * o.inflight);
  // first_frame_s counts from the start, set-up included; finishing follows it.
  EXPECT_LE(st.setup_s, st.first_frame_s);
  EXPECT_LE(st.first_frame_s + st.finish_s, outside_s);
  EXPECT_GT(st.decode.busy_s, 0);
  EXPECT_GT(st.filter.busy_s, 0);
  ASSERT_FALSE(calls.empty());
  EXPECT_TRUE(calls.back().final);
  EXPECT_EQ(calls.back().frames, 9);
  for (size_t i = 0; i + 1 < calls.size(); ++i) EXPECT_FALSE(calls[i].final);
  EXPECT_EQ(dir.listing(), std::vector<std::string>{"in.mkv"}) << "the null sink wrote something";
}

TEST(PipelineRun, NullSinkWithoutFiltersAndNotes) {
  TempDir dir;
  const std::string in = dir.file("in.mkv");
  io::write_synthetic_clip(in, clip(64, 48, 7, AV_PIX_FMT_BGR0));
  PipelineOptions o = options_for(in, "", "", Backend::Cpu);
  std::vector<std::string> notes;
  o.note = [&](const std::string& s) { notes.push_back(s); };
  const RunStats st = run_pipeline(o);
  EXPECT_EQ(st.frames, 7);
  EXPECT_TRUE(st.filters.empty());
  EXPECT_EQ(st.input_format, "bgr0");
  EXPECT_EQ(st.processing_format, "rgb24");
  bool backend_note = false;
  for (const auto& n : notes) backend_note = backend_note || contains(n, "backend");
  EXPECT_TRUE(backend_note);
}

// A clip long enough that the progress callback (about 4 times a second)
// comes before the end; the stop flag is set from it. A fast machine may
// finish the first clip within a quarter of a second: then a longer one.
// On each backend (the CUDA one drains frames in flight from the GPU).
class PipelineStop : public ::testing::TestWithParam<Backend> {
 protected:
  void SetUp() override {
    if (GetParam() == Backend::Cuda) SBTEST_SKIP_WITHOUT_GPU();
  }
};

TEST_P(PipelineStop, StopFromProgressCallbackFinalisesOutput) {
  for (const int total : {240, 1200}) {
    TempDir dir;
    const std::string in = dir.file("in.mkv"), out = dir.file("out.mkv");
    SyntheticClipSpec spec = clip(160, 120, total);
    spec.audio = true;
    spec.audio_codec = "pcm_s16le";
    io::write_synthetic_clip(in, spec);

    std::atomic<bool> stop{false};
    PipelineOptions o = options_for(in, out, "gblur=sigma=12", GetParam());
    o.inflight = 2;
    o.stop = &stop;
    bool final_seen = false;
    int64_t frames_at_stop = -1;
    o.progress = [&](const Progress& p) {
      if (p.final) {
        final_seen = true;
        return;
      }
      if (!stop.load()) {
        frames_at_stop = p.frames;
        stop.store(true);
      }
    };
    RunStats st;
    ASSERT_NO_THROW(st = run_pipeline(o));
    EXPECT_TRUE(final_seen);
    if (!stop.load()) continue;  // ended before the first progress call
    EXPECT_TRUE(st.stopped_early);
    EXPECT_GE(st.frames, frames_at_stop);
    EXPECT_LT(st.frames, total) << "the stop flag did not end the run early";
    const Media b = read_media(out);  // playable and finalised: every frame written is there
    EXPECT_EQ(static_cast<int64_t>(b.frames.size()), st.frames);
    EXPECT_EQ(b.warnings, 0);
    EXPECT_EQ(dir.listing(), (std::vector<std::string>{"in.mkv", "out.mkv"}));
    return;
  }
  GTEST_SKIP() << "every run ended before the first progress call";
}

INSTANTIATE_TEST_SUITE_P(Backends, PipelineStop, ::testing::Values(Backend::Cpu, Backend::Cuda),
                         [](const ::testing::TestParamInfo<Backend>& info) { return backend_param_name(info.param); });

// The stop flag set by another thread once the output has started.
TEST(PipelineRun, StopFromAnotherThread) {
  TempDir dir;
  const std::string in = dir.file("in.mkv"), out = dir.file("out.mp4");
  const int total = 200;
  io::write_synthetic_clip(in, clip(160, 120, total));
  std::atomic<bool> stop{false}, done{false};
  PipelineOptions o = options_for(in, out, "gblur=sigma=15", Backend::Cpu, "libx264");
  o.encoder.preset = "ultrafast";
  o.inflight = 2;
  o.stop = &stop;
  std::thread stopper([&] {
    // Wait for the temporary output to hold something (the writer started).
    for (int i = 0; i < 2000 && !done.load(); ++i) {
      bool started = false;
      std::error_code ec;
      for (const auto& e : fs::directory_iterator(dir.path(), ec))
        if (contains(e.path().filename().string(), ".streamblur-") && fs::file_size(e.path(), ec) > 0) started = true;
      if (started) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    stop.store(true);
  });
  RunStats st;
  EXPECT_NO_THROW(st = run_pipeline(o));
  done.store(true);
  stopper.join();
  if (st.frames == total) GTEST_SKIP() << "the run ended before the stop flag was set";
  EXPECT_TRUE(st.stopped_early);
  EXPECT_GT(st.frames, 0);
  const Media b = read_media(out);  // an mp4 is playable only when finalised (moov written)
  EXPECT_EQ(static_cast<int64_t>(b.frames.size()), st.frames);
}

// Stopped before any frame: nothing to write; a clear error and no file.
TEST(PipelineRun, StopBeforeStartWritesNothing) {
  TempDir dir;
  const std::string in = dir.file("in.mkv"), out = dir.file("out.mkv");
  io::write_synthetic_clip(in, clip(64, 48, 5));
  std::atomic<bool> stop{true};
  PipelineOptions o = options_for(in, out, "gblur", Backend::Cpu);
  o.stop = &stop;
  EXPECT_THROW(run_pipeline(o), std::runtime_error);
  EXPECT_ONE_LINE_CONTAINS(error_of([&] { run_pipeline(o); }), "stopped");
  EXPECT_EQ(dir.listing(), std::vector<std::string>{"in.mkv"});
}

TEST(PipelineRun, TruncatedInputWritesWhatDecodes) {
  TempDir dir;
  const std::string in = dir.file("in.mkv"), out = dir.file("out.mkv");
  SyntheticClipSpec spec = clip(96, 64, 30);
  spec.noise = true;
  io::write_synthetic_clip(in, spec);
  fs::resize_file(in, fs::file_size(in) * 6 / 10);
  RunStats st;
  ASSERT_NO_THROW(st = run_pipeline(options_for(in, out, "boxblur=1", Backend::Cpu)));
  EXPECT_GT(st.frames, 0);
  EXPECT_LT(st.frames, 30);
  EXPECT_GT(st.decode_warnings, 0);
  const Media b = read_media(out);
  EXPECT_EQ(static_cast<int64_t>(b.frames.size()), st.frames);
}

// ---------------------------------------------------------------------------
// Output is never partial; the input is only read
// ---------------------------------------------------------------------------

class PipelineFailure : public ::testing::Test {
 protected:
  void SetUp() override {
    in = dir.file("in.mkv");
    SyntheticClipSpec spec = clip(64, 48, 6);
    spec.audio = true;
    spec.audio_codec = "pcm_s16le";
    io::write_synthetic_clip(in, spec);
    in_bytes = bytes_of(in);
  }
  void expect_nothing_written() {
    EXPECT_EQ(dir.listing(), std::vector<std::string>{"in.mkv"}) << "output or temporary file left behind";
    EXPECT_EQ(bytes_of(in), in_bytes) << "the input was changed";
  }
  TempDir dir;
  std::string in, in_bytes;
};

TEST_F(PipelineFailure, UnknownEncoder) {
  const std::string out = dir.file("out.mkv");
  EXPECT_ONE_LINE_CONTAINS(error_of([&] { run_pipeline(options_for(in, out, "gblur", Backend::Cpu, "nosuchcodec")); }),
                           "nosuchcodec");
  expect_nothing_written();
}

TEST_F(PipelineFailure, UnknownEncoderOption) {
  const std::string out = dir.file("out.mkv");
  PipelineOptions o = options_for(in, out, "gblur", Backend::Cpu);
  o.encoder.options["no_such_option"] = "1";
  EXPECT_ONE_LINE_CONTAINS(error_of([&] { run_pipeline(o); }), "no_such_option");
  expect_nothing_written();
}

TEST_F(PipelineFailure, EncoderContainerMismatch) {
  // The mp4 muxer cannot hold rawvideo: found when the writer opens, after the first frame.
  const std::string out = dir.file("out.mp4");
  EXPECT_FALSE(error_of([&] { run_pipeline(options_for(in, out, "", Backend::Cpu, "rawvideo")); }).empty());
  expect_nothing_written();
}

TEST_F(PipelineFailure, BadFilterTouchesNothing) {
  const std::string out = dir.file("out.mkv");
  EXPECT_ONE_LINE_CONTAINS(error_of([&] { run_pipeline(options_for(in, out, "gblur=sigma=-3", Backend::Cpu)); }),
                           "sigma");
  EXPECT_ONE_LINE_CONTAINS(error_of([&] { run_pipeline(options_for(in, out, "sharpen", Backend::Cpu)); }),
                           "unknown filter");
  expect_nothing_written();
}

TEST_F(PipelineFailure, PlanesHalfOfNv12IsAnErrorNotACrash) {
  TempDir d2;
  const std::string nv = d2.file("nv.mkv");
  io::write_synthetic_clip(nv, clip(64, 48, 3, AV_PIX_FMT_NV12, "rawvideo"));
  const std::string out = d2.file("out.mkv");
  EXPECT_ONE_LINE_CONTAINS(error_of([&] { run_pipeline(options_for(nv, out, "gblur=planes=v", Backend::Cpu, "rawvideo")); }),
                           "planes");
  EXPECT_EQ(d2.listing(), std::vector<std::string>{"nv.mkv"});
}

TEST_F(PipelineFailure, ExistingOutputWithoutOverwrite) {
  const std::string out = dir.file("out.mkv");
  { std::ofstream(out) << "precious"; }
  EXPECT_ONE_LINE_CONTAINS(error_of([&] { run_pipeline(options_for(in, out, "gblur", Backend::Cpu)); }),
                           "already exists");
  EXPECT_EQ(bytes_of(out), "precious");
  EXPECT_EQ(dir.listing(), (std::vector<std::string>{"in.mkv", "out.mkv"}));

  // With overwrite the file is replaced by a complete output.
  PipelineOptions o = options_for(in, out, "gblur", Backend::Cpu);
  o.overwrite = true;
  EXPECT_EQ(run_pipeline(o).frames, 6);
  EXPECT_EQ(read_media(out).frames.size(), 6u);
  EXPECT_EQ(dir.listing(), (std::vector<std::string>{"in.mkv", "out.mkv"}));
  EXPECT_EQ(bytes_of(in), in_bytes);
}

TEST_F(PipelineFailure, FailedOverwriteKeepsTheOldOutput) {
  const std::string out = dir.file("out.mkv");
  { std::ofstream(out) << "precious"; }
  PipelineOptions o = options_for(in, out, "gblur", Backend::Cpu, "nosuchcodec");
  o.overwrite = true;
  EXPECT_THROW(run_pipeline(o), std::exception);
  EXPECT_EQ(bytes_of(out), "precious");
  EXPECT_EQ(dir.listing(), (std::vector<std::string>{"in.mkv", "out.mkv"}));
}

TEST_F(PipelineFailure, OutputIsInput) {
  for (const std::string& out : {in, (dir.path() / "." / "in.mkv").string()}) {
    PipelineOptions o = options_for(in, out, "gblur", Backend::Cpu);
    o.overwrite = true;  // even with overwrite
    EXPECT_ONE_LINE_CONTAINS(error_of([&] { run_pipeline(o); }), "input");
    expect_nothing_written();
  }
}

TEST_F(PipelineFailure, UnwritableOutputDirectory) {
  EXPECT_ONE_LINE_CONTAINS(
      error_of([&] { run_pipeline(options_for(in, "/nonexistent/dir/out.mkv", "gblur", Backend::Cpu)); }),
      "/nonexistent/dir/out.mkv");
  expect_nothing_written();
}

TEST_F(PipelineFailure, MissingInput) {
  const std::string missing = dir.file("missing.mkv");
  EXPECT_ONE_LINE_CONTAINS(error_of([&] { run_pipeline(options_for(missing, dir.file("out.mkv"), "", Backend::Cpu)); }),
                           "missing.mkv");
  expect_nothing_written();
}

TEST_F(PipelineFailure, CudaWithoutDevice) {
  if (have_cuda()) GTEST_SKIP() << "a CUDA device is present";
  EXPECT_ONE_LINE_CONTAINS(error_of([&] { run_pipeline(options_for(in, dir.file("out.mkv"), "gblur", Backend::Cuda)); }),
                           STREAMBLUR_HAVE_CUDA ? "cuda" : kNoDeviceWords);
  expect_nothing_written();
}

TEST_F(PipelineFailure, BadInflight) {
  PipelineOptions o = options_for(in, dir.file("out.mkv"), "gblur", Backend::Cpu);
  o.inflight = 0;
  EXPECT_THROW(run_pipeline(o), std::invalid_argument);
  expect_nothing_written();
}

TEST_F(PipelineFailure, SuccessLeavesOnlyTheOutputAndTheInputUnchanged) {
  const std::string out = dir.file("out.mkv");
  run_pipeline(options_for(in, out, "gblur=sigma=2", Backend::Cpu));
  EXPECT_EQ(dir.listing(), (std::vector<std::string>{"in.mkv", "out.mkv"}));
  EXPECT_EQ(bytes_of(in), in_bytes);
  // An output in the current folder (no directory part) works too.
  const fs::path cwd = fs::current_path();
  fs::current_path(dir.path());
  std::string err = error_of([&] { run_pipeline(options_for("in.mkv", "rel.mkv", "", Backend::Cpu)); });
  fs::current_path(cwd);
  EXPECT_EQ(err, "");
  EXPECT_EQ(dir.listing(), (std::vector<std::string>{"in.mkv", "out.mkv", "rel.mkv"}));
}

}  // namespace

// ---------------------------------------------------------------------------
// P010: 10-bit values in the high bits of 16-bit samples. The output keeps the
// low 6 bits zero and its values are the blur of the 10-bit values (+-1).
// ---------------------------------------------------------------------------

// (No container of the GPU machine's FFmpeg holds raw P010, so this runs the
// filter chain on P010 planes directly, as the pipeline does.)
class PipelineP010 : public ::testing::TestWithParam<Backend> {};

// Runs `chain` on 16-bit planes held here: in place, or through device
// copies on the CUDA backend.
void apply_to_host_planes(FilterChain& chain, Backend backend, const FrameLayout& layout,
                          std::array<std::vector<uint16_t>, 2>& data) {
  std::array<AnyPlane, 4> planes{};
  auto plane = [&](int p, void* ptr) {
    const PlaneLayout& pl = layout.planes[p];
    return AnyPlane{ptr, pl.width, pl.height, static_cast<std::ptrdiff_t>(pl.width) * pl.channels * 2, pl.channels, 2};
  };
#if STREAMBLUR_HAVE_CUDA
  if (backend == Backend::Cuda) {
    std::array<cuda::DeviceBuffer, 2> dev;
    for (int p = 0; p < 2; ++p) {
      dev[p] = cuda::DeviceBuffer(data[p].size() * 2);
      sbtest::upload(dev[p].get(), data[p].data(), data[p].size() * 2);
      planes[p] = plane(p, dev[p].get());
    }
    chain.apply(planes, 2, nullptr);
    for (int p = 0; p < 2; ++p)
      CUDA_CHECK(cudaMemcpy(data[p].data(), dev[p].get(), data[p].size() * 2, cudaMemcpyDeviceToHost));
    return;
  }
#endif
  ASSERT_EQ(backend, Backend::Cpu);
  for (int p = 0; p < 2; ++p) planes[p] = plane(p, data[p].data());
  chain.apply(planes, 2, nullptr);
}

TEST_P(PipelineP010, LowBitsStayZeroAndValuesAreTheTenBitBlur) {
  const Backend backend = GetParam();
  if (backend == Backend::Cuda) SKIP_WITHOUT_CUDA();
  const int W = 66, H = 38;
  const FrameLayout layout = *native_layout(AV_PIX_FMT_P010LE, W, H);
  ASSERT_EQ(layout.num_planes, 2);
  ASSERT_EQ(layout.sample_shift, 6);
  FilterChain chain(parse_filter_chain("gblur=sigma=2"));
  chain.configure(layout, backend);
  const unsigned seed = sbtest::fresh_seed();
  SCOPED_TRACE(testing::Message() << "seed " << seed);
  std::mt19937 rng(seed);
  std::array<std::vector<uint16_t>, 2> ten, data;
  for (int p = 0; p < 2; ++p) {
    const PlaneLayout& pl = layout.planes[p];
    const size_t n = static_cast<size_t>(pl.width) * pl.channels * pl.height;
    ten[p].resize(n);
    data[p].resize(n);
    for (size_t i = 0; i < n; ++i) {
      ten[p][i] = static_cast<uint16_t>(rng() % 1024);
      data[p][i] = static_cast<uint16_t>(ten[p][i] << 6);
    }
  }
  apply_to_host_planes(chain, backend, layout, data);
  for (int p = 0; p < 2; ++p) {
    const PlaneLayout& pl = layout.planes[p];
    std::vector<uint16_t> want(ten[p].size());
    const std::ptrdiff_t pitch = static_cast<std::ptrdiff_t>(pl.width) * pl.channels * 2;
    const double sigma = 2.0;  // every plane: sigma in its own pixels, as FFmpeg
    oracle::gaussian_blur<uint16_t>(ten[p].data(), pitch, want.data(), pitch, pl.width, pl.height, pl.channels, sigma,
                                    sigma);
    // Low bits zero, and the 10-bit values unbiased: truncating instead of
    // rounding the low bits moves about half of them by -1.
    int low_bits = 0;
    SampleDiffs d(1);
    for (size_t i = 0; i < want.size(); ++i) {
      low_bits += (data[p][i] & 63) != 0;
      d.add(data[p][i] >> 6, want[i], static_cast<int>(i), 0);
    }
    EXPECT_EQ(low_bits, 0) << "plane " << p;
    EXPECT_TRUE(d.check(kRounding)) << "plane " << p;
  }
}

INSTANTIATE_TEST_SUITE_P(Backends, PipelineP010, ::testing::Values(Backend::Cpu, Backend::Cuda),
                         [](const ::testing::TestParamInfo<Backend>& info) { return backend_param_name(info.param); });

// ---------------------------------------------------------------------------
// Frame sinks: filtered frames handed to the caller's code
// ---------------------------------------------------------------------------

namespace {

// A frame copied out of a FrameView (host memory), plane by plane, packed rows.
struct SunkFrame {
  int64_t index = 0, pts = 0;
  double pts_seconds = 0;
  bool on_device = false;
  FrameLayout layout;
  std::vector<std::vector<uint8_t>> planes;
};

SunkFrame copy_view(const FrameView& v) {
  SunkFrame f;
  f.index = v.index;
  f.pts = v.pts;
  f.pts_seconds = v.pts_seconds;
  f.on_device = v.on_device;
  f.layout = v.layout;
  for (int p = 0; p < v.layout.num_planes; ++p) {
    const AnyPlane& a = v.planes[p];
    const std::size_t row = static_cast<std::size_t>(a.width) * a.channels * a.bytes_per_sample;
    std::vector<uint8_t> bytes(row * a.height);
    if (v.on_device) {
#if STREAMBLUR_HAVE_CUDA
      CUDA_CHECK(cudaMemcpy2DAsync(bytes.data(), row, a.data, a.pitch, row, a.height, cudaMemcpyDeviceToHost, v.stream));
      CUDA_CHECK(cudaStreamSynchronize(v.stream));
#else
      ADD_FAILURE() << "a frame on a device, in a build without the CUDA backend";
#endif
    } else {
      for (int y = 0; y < a.height; ++y)
        std::memcpy(bytes.data() + y * row, static_cast<const uint8_t*>(a.data) + y * a.pitch, row);
    }
    f.planes.push_back(std::move(bytes));
  }
  return f;
}

std::vector<SunkFrame> sink_frames(PipelineOptions o, RunStats* stats = nullptr) {
  std::vector<SunkFrame> frames;
  o.output.clear();
  o.frame_sink = [&](const FrameView& v) { frames.push_back(copy_view(v)); };
  const RunStats st = run_pipeline(o);
  if (stats) *stats = st;
  return frames;
}

// The decoded frame's planes packed like SunkFrame's (independent of FrameLayout).
std::vector<std::vector<uint8_t>> packed_planes(const AVFrame& f) {
  std::vector<std::vector<uint8_t>> out;
  const std::vector<PlaneGeom> geoms = plane_geoms(f);
  for (size_t p = 0; p < geoms.size(); ++p) {
    const PlaneGeom& g = geoms[p];
    const std::size_t row = static_cast<std::size_t>(g.width) * g.channels * g.bytes;
    std::vector<uint8_t> bytes(row * g.height);
    for (int y = 0; y < g.height; ++y) std::memcpy(bytes.data() + y * row, f.data[p] + y * f.linesize[p], row);
    out.push_back(std::move(bytes));
  }
  return out;
}

// Largest |a - b| over samples of 1 or 2 bytes, and how many differ at all.
struct Diff {
  int worst = 0;
  std::size_t differing = 0, samples = 0;
  double mean_signed = 0;
};
Diff diff_samples(const std::vector<uint8_t>& a, const std::vector<uint8_t>& b, int bytes) {
  Diff d;
  if (a.size() != b.size()) {
    d.worst = 1 << 30;
    return d;
  }
  double sum = 0;
  for (std::size_t i = 0; i < a.size(); i += bytes) {
    int x = a[i], y = b[i];
    if (bytes == 2) {
      x |= a[i + 1] << 8;
      y |= b[i + 1] << 8;
    }
    d.worst = std::max(d.worst, std::abs(x - y));
    d.differing += x != y;
    sum += y - x;
    ++d.samples;
  }
  d.mean_signed = d.samples ? sum / d.samples : 0;
  return d;
}

// `got` against `want` (packed planes of 1- or 2-byte samples) with the
// bias limits of sbtest::tolerance_of(tol).
::testing::AssertionResult packed_close(const std::vector<uint8_t>& want, const std::vector<uint8_t>& got, int bytes,
                                        int tol) {
  if (want.size() != got.size())
    return ::testing::AssertionFailure() << "sizes differ: " << want.size() << " vs " << got.size() << " bytes";
  SampleDiffs d(tol);
  for (std::size_t i = 0; i < want.size(); i += bytes) {
    int x = want[i], y = got[i];
    if (bytes == 2) {
      x |= want[i + 1] << 8;
      y |= got[i + 1] << 8;
    }
    d.add(y, x, static_cast<int>(i / bytes), 0);
  }
  return d.check(tolerance_of(tol));
}

}  // namespace

TEST(PipelineFrameSink, CpuFramesEqualTheEncodedOutputInOrderWithPts) {
  TempDir dir;
  const std::string in = dir.file("in.mkv"), out = dir.file("out.mkv");
  io::write_synthetic_clip(in, clip(33, 17, 6));
  PipelineOptions o = options_for(in, out, "gblur=sigma=1.5", Backend::Cpu);
  ASSERT_NO_THROW(run_pipeline(o));
  const Media written = read_media(out);
  RunStats st;
  const std::vector<SunkFrame> got = sink_frames(o, &st);
  ASSERT_EQ(got.size(), 6u);
  EXPECT_EQ(st.frames, 6);
  EXPECT_EQ(st.decoder, "cpu");
  EXPECT_EQ(st.gpu_memory_bytes, 0u);
  EXPECT_EQ(dir.listing(), (std::vector<std::string>{"in.mkv", "out.mkv"})) << "a frame sink wrote a file";
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].index, static_cast<int64_t>(i));
    EXPECT_FALSE(got[i].on_device);
    EXPECT_EQ(got[i].pts, written.frames[i]->pts);
    EXPECT_NEAR(got[i].pts_seconds, written.frames[i]->pts * av_q2d(written.info.time_base), 1e-9);
    EXPECT_EQ(got[i].layout.format, AV_PIX_FMT_YUV420P);
    const auto expected = packed_planes(*written.frames[i]);
    ASSERT_EQ(got[i].planes.size(), 3u);
    for (size_t p = 0; p < 3; ++p) EXPECT_EQ(got[i].planes[p], expected[p]) << "frame " << i << " plane " << p;
  }
}

TEST(PipelineFrameSink, ExceptionFromTheSinkStopsTheRunAndIsRethrown) {
  TempDir dir;
  const std::string in = dir.file("in.mkv");
  io::write_synthetic_clip(in, clip(32, 16, 20));
  PipelineOptions o = options_for(in, "", "boxblur=1", Backend::Cpu);
  int calls = 0;
  o.frame_sink = [&](const FrameView&) {
    if (++calls == 3) throw std::runtime_error("model failed on frame 3");
  };
  EXPECT_EQ(error_of([&] { run_pipeline(o); }), "model failed on frame 3");
  EXPECT_EQ(calls, 3);
}

TEST(PipelineFrameSink, SinkAndOutputTogetherAreRefused) {
  TempDir dir;
  const std::string in = dir.file("in.mkv");
  io::write_synthetic_clip(in, clip(32, 16, 2));
  PipelineOptions o = options_for(in, dir.file("out.mkv"), "", Backend::Cpu);
  o.frame_sink = [](const FrameView&) {};
  EXPECT_THROW(run_pipeline(o), std::invalid_argument);
  EXPECT_EQ(dir.listing(), std::vector<std::string>{"in.mkv"});
}

TEST(PipelineFrameSink, DevicePlanesEqualHostPlanes) {
  SKIP_WITHOUT_CUDA();
  TempDir dir;
  const std::string in = dir.file("in.mkv");
  io::write_synthetic_clip(in, clip(97, 33, 5, AV_PIX_FMT_YUV420P10LE));
  PipelineOptions o = options_for(in, "", "gblur=sigma=2,boxblur=1", Backend::Cuda);
  o.sink_memory = SinkMemory::Host;
  const std::vector<SunkFrame> host = sink_frames(o);
  o.sink_memory = SinkMemory::Device;
  RunStats st;
  const std::vector<SunkFrame> dev = sink_frames(o, &st);
  ASSERT_EQ(host.size(), 5u);
  ASSERT_EQ(dev.size(), 5u);
  EXPECT_GT(st.gpu_memory_bytes, 0u);
  for (size_t i = 0; i < dev.size(); ++i) {
    EXPECT_TRUE(dev[i].on_device);
    EXPECT_FALSE(host[i].on_device);
    EXPECT_EQ(dev[i].planes, host[i].planes) << "frame " << i;
  }
}

// ---------------------------------------------------------------------------
// Hardware decoding (NVDEC): choice, fallback, and pixels equal to CPU decoding
// ---------------------------------------------------------------------------

TEST(PipelineHwdec, ParseHwdec) {
  EXPECT_EQ(parse_hwdec("auto"), HwDecode::Auto);
  EXPECT_EQ(parse_hwdec("nvdec"), HwDecode::Nvdec);
  EXPECT_EQ(parse_hwdec("cuda"), HwDecode::Nvdec);
  EXPECT_EQ(parse_hwdec("none"), HwDecode::None);
  EXPECT_TRUE(contains(error_of([] { parse_hwdec("vaapi"); }), "'vaapi'"));
}

TEST(PipelineHwdec, AutoWithoutDeviceDecodesOnTheCpuWithANote) {
  if (have_cuda()) GTEST_SKIP() << "checks the no-device fallback; the GPU machine runs the NVDEC tests instead";
  TempDir dir;
  const std::string in = dir.file("in.mkv");
  io::write_synthetic_clip(in, clip(32, 16, 3));
  PipelineOptions o = options_for(in, dir.file("out.mkv"), "gblur=sigma=1", Backend::Cpu);
  o.backend = BackendChoice::Auto;
  o.hwdec = HwDecode::Auto;
  std::vector<std::string> notes;
  o.note = [&](const std::string& s) { notes.push_back(s); };
  const RunStats st = run_pipeline(o);
  EXPECT_EQ(st.decoder, "cpu");
  EXPECT_EQ(st.frames, 3);
  bool said = false;
  // (A build without the CUDA backend says so in its backend note.)
  const char* why = STREAMBLUR_HAVE_CUDA ? "decode: cpu" : "backend: cpu";
  for (const auto& n : notes) said = said || (contains(n, why) && contains(n, kNoDeviceWords));
  EXPECT_TRUE(said) << "no note saying why decoding stayed on the CPU";
}

TEST(PipelineHwdec, NvdecWithoutDeviceIsAClearErrorAndWritesNothing) {
  if (have_cuda()) GTEST_SKIP() << "checks the no-device error; the GPU machine runs the NVDEC tests instead";
  TempDir dir;
  const std::string in = dir.file("in.mkv");
  io::write_synthetic_clip(in, clip(32, 16, 3));
  PipelineOptions o = options_for(in, dir.file("out.mkv"), "gblur=sigma=1", Backend::Cpu);
  o.backend = BackendChoice::Auto;
  o.hwdec = HwDecode::Nvdec;
  const std::string e = error_of([&] { run_pipeline(o); });
  EXPECT_TRUE(contains(e, "NVDEC decoding was asked for") && contains(e, kNoDeviceWords) && !contains(e, "--")) << e;
  EXPECT_EQ(dir.listing(), std::vector<std::string>{"in.mkv"});
}

TEST(PipelineHwdec, NvdecWithTheCpuBackendIsRefused) {
  TempDir dir;
  const std::string in = dir.file("in.mkv");
  io::write_synthetic_clip(in, clip(32, 16, 3));
  PipelineOptions o = options_for(in, dir.file("out.mkv"), "gblur=sigma=1", Backend::Cpu);
  o.hwdec = HwDecode::Nvdec;
  const std::string e = error_of([&] { run_pipeline(o); });
  EXPECT_TRUE(contains(e, "NVDEC decoding needs the CUDA backend") && !contains(e, "--")) << e;
  EXPECT_EQ(dir.listing(), std::vector<std::string>{"in.mkv"});
}

namespace {

struct HwdecCase {
  std::string name;
  SyntheticClipSpec spec;
  std::string container = "mkv";
  std::string media_file;  // when the encoder is missing here: a prepared clip in $STREAMBLUR_TEST_MEDIA_DIR
};

std::vector<HwdecCase> hwdec_cases() {
  std::vector<HwdecCase> v;
  HwdecCase h264;
  h264.name = "H264Yuv420p";
  h264.spec = clip(320, 240, 12, AV_PIX_FMT_YUV420P, "libx264");
  h264.spec.noise = true;
  v.push_back(h264);
  HwdecCase crop = h264;  // not a multiple of the 16-pixel macroblock: the decoder crops
  crop.name = "H264CroppedSize";
  crop.spec = clip(250, 142, 9, AV_PIX_FMT_YUV420P, "libx264");
  crop.spec.noise = true;
  v.push_back(crop);
  HwdecCase hevc;
  hevc.name = "Hevc10Bit";
  // NVDEC's HEVC decoder takes 144x144 and up; smaller streams fall back to the CPU.
  hevc.spec = clip(258, 146, 10, AV_PIX_FMT_YUV420P10LE, "libx265");
  hevc.spec.noise = true;
  hevc.media_file = "hevc10.mkv";
  v.push_back(hevc);
  return v;
}

// Makes the case's clip with the library's encoders, or takes the prepared
// one (the GPU machine's FFmpeg has no HEVC encoder).
std::string hwdec_input(const HwdecCase& c, const TempDir& dir) {
  const std::string path = dir.file("in." + c.container);
  if (avcodec_find_encoder_by_name(c.spec.codec.c_str())) {
    io::write_synthetic_clip(path, c.spec);
    return path;
  }
  const char* media = std::getenv("STREAMBLUR_TEST_MEDIA_DIR");
  if (!c.media_file.empty() && media && fs::exists(fs::path(media) / c.media_file))
    return (fs::path(media) / c.media_file).string();
  return "";
}

}  // namespace

class PipelineNvdec : public ::testing::TestWithParam<HwdecCase> {};

// NVDEC frames (converted on the GPU from NV12/P010) give the same filtered
// pixels as CPU-decoded frames, within +-1, on every plane, in the format
// the CPU path uses; both through a frame sink and through the encoder.
TEST_P(PipelineNvdec, SameOutputAsCpuDecodeWithinOne) {
  SKIP_WITHOUT_CUDA();
  const HwdecCase& c = GetParam();
  TempDir dir;
  const std::string in = hwdec_input(c, dir);
  if (in.empty())
    GTEST_FAIL() << "no " << c.spec.codec << " encoder here and no prepared " << c.media_file
                 << " in $STREAMBLUR_TEST_MEDIA_DIR";
  PipelineOptions o = options_for(in, "", "gblur=sigma=2,boxblur=radius=1", Backend::Cuda);
  o.sink_memory = SinkMemory::Host;
  o.hwdec = HwDecode::None;
  RunStats cpu_st, hw_st;
  const std::vector<SunkFrame> cpu = sink_frames(o, &cpu_st);
  o.hwdec = HwDecode::Nvdec;
  std::vector<std::string> notes;
  o.note = [&](const std::string& s) { notes.push_back(s); };
  const std::vector<SunkFrame> hw = sink_frames(o, &hw_st);
  EXPECT_EQ(cpu_st.decoder, "cpu");
  ASSERT_EQ(hw_st.decoder, "nvdec") << "NVDEC was not used";
  // The decoder's surfaces count in the memory the run reports.
  EXPECT_GT(hw_st.gpu_memory_bytes, cpu_st.gpu_memory_bytes);
  ASSERT_EQ(hw.size(), cpu.size());
  ASSERT_GT(hw.size(), 0u);
  for (const auto& n : notes) EXPECT_FALSE(contains(n, "decode: cpu")) << n;
  for (size_t i = 0; i < hw.size(); ++i) {
    EXPECT_EQ(hw[i].pts, cpu[i].pts) << "frame " << i;
    EXPECT_EQ(hw[i].layout.format, cpu[i].layout.format);
    ASSERT_EQ(hw[i].planes.size(), cpu[i].planes.size());
    for (size_t p = 0; p < hw[i].planes.size(); ++p) {
      EXPECT_TRUE(packed_close(cpu[i].planes[p], hw[i].planes[p], hw[i].layout.bytes_per_sample, 1))
          << "frame " << i << " plane " << p;
    }
  }
  // Through the encoder (lossless), the written files agree too.
  const std::string out_cpu = dir.file("cpu.mkv"), out_hw = dir.file("hw.mkv");
  PipelineOptions w = options_for(in, out_cpu, "gblur=sigma=2", Backend::Cuda);
  w.hwdec = HwDecode::None;
  ASSERT_NO_THROW(run_pipeline(w));
  w.output = out_hw;
  w.hwdec = HwDecode::Nvdec;
  ASSERT_EQ(run_pipeline(w).decoder, "nvdec");
  const Media a = read_media(out_cpu), b = read_media(out_hw);
  ASSERT_EQ(a.frames.size(), b.frames.size());
  for (size_t i = 0; i < a.frames.size(); ++i) {
    EXPECT_EQ(a.frames[i]->pts, b.frames[i]->pts);
    EXPECT_TRUE(planes_near(*a.frames[i], *b.frames[i], 1)) << "frame " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(Clips, PipelineNvdec, ::testing::ValuesIn(hwdec_cases()),
                         [](const ::testing::TestParamInfo<HwdecCase>& info) { return info.param.name; });

// A stream NVDEC cannot take (FFmpeg's hwaccel refuses H.264 4:4:4, or the
// format is not one NVDEC writes) is decoded on the CPU with a note, and the
// output is still right.
TEST(PipelineNvdecFallback, UnsupportedStreamFallsBackWithANote) {
  SKIP_WITHOUT_CUDA();
  TempDir dir;
  const std::string in = dir.file("in.mkv");
  io::write_synthetic_clip(in, clip(64, 48, 5, AV_PIX_FMT_YUV422P, "libx264"));
  PipelineOptions o = options_for(in, "", "gblur=sigma=1", Backend::Cuda);
  o.sink_memory = SinkMemory::Host;
  std::vector<std::string> notes;
  o.note = [&](const std::string& s) { notes.push_back(s); };
  RunStats st;
  const std::vector<SunkFrame> hw = sink_frames(o, &st);
  EXPECT_EQ(st.decoder, "cpu");
  bool said = false;
  for (const auto& n : notes) said = said || contains(n, "decode: cpu");
  EXPECT_TRUE(said);
  o.hwdec = HwDecode::None;
  const std::vector<SunkFrame> cpu = sink_frames(o);
  ASSERT_EQ(hw.size(), cpu.size());
  for (size_t i = 0; i < hw.size(); ++i) EXPECT_EQ(hw[i].planes, cpu[i].planes);
  o.hwdec = HwDecode::Nvdec;
  EXPECT_TRUE(contains(error_of([&] { sink_frames(o); }), "NVDEC decoding was asked for, but"));
}

// Pipelines on several threads at once, each on its own device (all of them
// on device 0 with one GPU), give the same frames as one run alone.
TEST(PipelineNvdecConcurrent, ManyPipelinesAtOnceMatchOneAlone) {
  SKIP_WITHOUT_CUDA();
  TempDir dir;
  const std::string in = dir.file("in.mkv");
  SyntheticClipSpec spec = clip(160, 96, 16, AV_PIX_FMT_YUV420P, "libx264");
  spec.noise = true;
  io::write_synthetic_clip(in, spec);
  PipelineOptions o = options_for(in, "", "gblur=sigma=2", Backend::Cuda);
  o.sink_memory = SinkMemory::Host;
  const std::vector<SunkFrame> alone = sink_frames(o);
  const int devices = cuda_device_count();
  constexpr int kRuns = 6;
  std::vector<std::vector<SunkFrame>> got(kRuns);
  std::vector<std::string> errors(kRuns);
  std::vector<int> used(kRuns, -1);
  std::vector<std::thread> threads;
  for (int i = 0; i < kRuns; ++i)
    threads.emplace_back([&, i] {
      try {
        PipelineOptions p = o;
        p.device = i % devices;
        p.hwdec = i % 2 ? HwDecode::Nvdec : HwDecode::None;
        RunStats st;
        got[i] = sink_frames(p, &st);
        used[i] = st.device;
      } catch (const std::exception& e) {
        errors[i] = e.what();
      }
    });
  for (auto& t : threads) t.join();
  for (int i = 0; i < kRuns; ++i) {
    EXPECT_EQ(errors[i], "") << "run " << i;
    EXPECT_EQ(used[i], i % devices);
    ASSERT_EQ(got[i].size(), alone.size()) << "run " << i;
    for (size_t f = 0; f < alone.size(); ++f) EXPECT_EQ(got[i][f].planes, alone[f].planes) << "run " << i << " frame " << f;
  }
}

// ---------------------------------------------------------------------------
// Interlaced video: fields=1 blurs each field on its own; the field order
// reaches the output (issue 15).
// ---------------------------------------------------------------------------

namespace {

// `in` with the chain applied by the references to each field (even rows,
// odd rows) apart.
io::AVFramePtr reference_frame_per_field(const AVFrame& in, const std::vector<BlurOp>& ops) {
  io::AVFramePtr f(av_frame_clone(&in));
  if (!f || av_frame_make_writable(f.get()) < 0) throw std::runtime_error("cannot copy a frame");
  const std::vector<PlaneGeom> geoms = plane_geoms(*f);
  for (const BlurOp& op : ops)
    for (size_t p = 0; p < geoms.size(); ++p) {
      if (!(op.plane_mask & (1u << p))) continue;
      for (int field = 0; field < 2; ++field) {
        PlaneGeom g = geoms[p];
        g.height = (geoms[p].height + 1 - field) / 2;
        uint8_t* data = f->data[p] + static_cast<std::ptrdiff_t>(field) * f->linesize[p];
        if (g.bytes == 1) reference_plane<uint8_t>(op, data, 2 * f->linesize[p], g);
        else reference_plane<uint16_t>(op, data, 2 * f->linesize[p], g);
      }
    }
  return f;
}

}  // namespace

TEST(FilterSpec, FieldsOption) {
  const auto chain = parse_filter_chain("gblur=sigma=2:fields=1,boxblur=radius=1");
  ASSERT_EQ(chain.size(), 2u);
  EXPECT_EQ(chain[0].values.at("fields"), 1);
  EXPECT_EQ(chain[1].values.at("fields"), 0);  // off by default
  EXPECT_TRUE(contains(filter_help("gblur"), "fields"));
  EXPECT_ONE_LINE_CONTAINS(error_of([] { parse_filter_chain("boxblur=fields=2"); }), "fields", "out of range");
}

class PipelineFields : public ::testing::TestWithParam<Backend> {
 protected:
  void SetUp() override {
    if (GetParam() == Backend::Cuda) SBTEST_SKIP_WITHOUT_GPU();
  }
};

// Each field of each output frame is the reference blur of that field of the
// input frame (within 1, as every CPU/CUDA path is); without fields=1 the
// fields are mixed and the result differs.
TEST_P(PipelineFields, EachFieldEqualsTheReferenceBlurOfThatField) {
  TempDir dir;
  const std::string in = dir.file("tt.mkv");
  SyntheticClipSpec spec = clip(64, 48, 4, AV_PIX_FMT_YUV420P, "libx264");
  spec.preset = "ultrafast";
  spec.interlaced = true;
  io::write_synthetic_clip(in, spec);
  const Media input = read_media(in);
  ASSERT_EQ(input.frames.size(), 4u);
  ASSERT_TRUE(input.frames[0]->interlaced_frame);

  for (const char* chain : {"gblur=sigma=2:fields=1", "boxblur=radius=2:fields=1"}) {
    SCOPED_TRACE(chain);
    const BlurOp op = std::string(chain).rfind("gblur", 0) == 0 ? unscaled(gauss(2)) : box(2);
    const std::vector<SunkFrame> got = sink_frames(options_for(in, "", chain, GetParam()));
    ASSERT_EQ(got.size(), 4u);
    int fields_differ_from_whole = 0;
    for (size_t i = 0; i < got.size(); ++i) {
      const auto expected = packed_planes(*reference_frame_per_field(*input.frames[i], {op}));
      const auto whole = packed_planes(*reference_frame(*input.frames[i], {op}));
      ASSERT_EQ(got[i].planes.size(), expected.size());
      for (size_t p = 0; p < expected.size(); ++p) {
        EXPECT_TRUE(packed_close(expected[p], got[i].planes[p], 1, op.kind == BlurOp::Box ? 0 : 1))
            << "frame " << i << " plane " << p;
        fields_differ_from_whole += diff_samples(whole[p], got[i].planes[p], 1).worst > 1;
      }
    }
    EXPECT_GT(fields_differ_from_whole, 0) << "per-field and whole-frame blurs gave the same pixels";
  }
}

// Interlaced H.264 in, interlaced H.264 out: the stream says top field first
// and every decoded frame is flagged interlaced, through either backend.
TEST_P(PipelineFields, FieldOrderReachesTheOutput) {
  TempDir dir;
  const std::string in = dir.file("tt.mkv"), out = dir.file("out.mkv");
  SyntheticClipSpec spec = clip(64, 48, 4, AV_PIX_FMT_YUV420P, "libx264");
  spec.preset = "ultrafast";
  spec.interlaced = true;
  io::write_synthetic_clip(in, spec);
  PipelineOptions o = options_for(in, out, "gblur=sigma=1:fields=1", GetParam(), "libx264");
  o.encoder.preset = "ultrafast";
  ASSERT_NO_THROW(run_pipeline(o));
  const Media m = read_media(out);
  ASSERT_EQ(m.frames.size(), 4u);
  for (const auto& f : m.frames) {
    EXPECT_TRUE(f->interlaced_frame);
    EXPECT_TRUE(f->top_field_first);
  }
  AVFormatContext* raw = nullptr;
  ASSERT_GE(avformat_open_input(&raw, out.c_str(), nullptr, nullptr), 0);
  io::AVInputFormatContextPtr fc(raw);
  ASSERT_GE(avformat_find_stream_info(raw, nullptr), 0);
  EXPECT_EQ(raw->streams[0]->codecpar->field_order, AV_FIELD_TT);
}

INSTANTIATE_TEST_SUITE_P(Backends, PipelineFields, ::testing::Values(Backend::Cpu, Backend::Cuda),
                         [](const ::testing::TestParamInfo<Backend>& info) { return backend_param_name(info.param); });
