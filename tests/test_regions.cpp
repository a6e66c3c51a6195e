// Region limits (regions=FILE, box=x:y:w:h, margin, feather, shape,
// interpolate) on every filter: pixels outside the boxes are the input bit for
// bit, pixels inside are the filtered frame, the soft edge ramps down, boxes
// move between keyframes, and every bad regions file fails with one line
// naming the file and the line. Expected positions and memberships are worked
// out here from the definitions, not with the product's mask code.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <numbers>
#include <random>
#include <sstream>

#include "sink_support.hpp"
#include "streamblur/config.hpp"
#if STREAMBLUR_HAVE_CUDA
#include "streamblur/kernels/cuda_raii.hpp"
#include "cuda_support.hpp"
#endif
#include "streamblur/pipeline/filter.hpp"
#include "streamblur/pipeline/pipeline.hpp"
#include "streamblur/pipeline/regions.hpp"
#include "streamblur/testing/synthetic_clip.hpp"
#include "test_support.hpp"

using namespace streamblur;
using sbtest::contains;
using sbtest::error_of;
using sbtest::TempDir;

namespace {

// A frame in host memory, rows padded (pitch != width), random samples.
struct HostFrame {
  FrameLayout layout;
  std::array<std::vector<uint8_t>, 4> bytes;
  std::array<std::ptrdiff_t, 4> pitch{};

  HostFrame(AVPixelFormat fmt, int w, int h, unsigned seed) : layout(*native_layout(fmt, w, h)) {
    std::mt19937 rng(seed);
    const int bps = layout.bytes_per_sample;
    const int max = bps == 1 ? 255 : (layout.sample_shift ? 1023 : 1023);
    for (int p = 0; p < layout.num_planes; ++p) {
      const PlaneLayout& pl = layout.planes[p];
      pitch[p] = static_cast<std::ptrdiff_t>(pl.width) * pl.channels * bps + 24;
      bytes[p].assign(static_cast<size_t>(pitch[p]) * pl.height, 0x5a);
      for (int y = 0; y < pl.height; ++y)
        for (int s = 0; s < pl.width * pl.channels; ++s) set(p, s, y, static_cast<int>(rng() % (max + 1)) << layout.sample_shift);
    }
  }
  int get(int p, int s, int y) const {
    const uint8_t* row = bytes[p].data() + y * pitch[p];
    if (layout.bytes_per_sample == 1) return row[s];
    uint16_t v;
    std::memcpy(&v, row + 2 * s, 2);
    return v;
  }
  void set(int p, int s, int y, int v) {
    uint8_t* row = bytes[p].data() + y * pitch[p];
    if (layout.bytes_per_sample == 1) row[s] = static_cast<uint8_t>(v);
    else {
      const uint16_t u = static_cast<uint16_t>(v);
      std::memcpy(row + 2 * s, &u, 2);
    }
  }
  std::array<AnyPlane, 4> planes() {
    std::array<AnyPlane, 4> a{};
    for (int p = 0; p < layout.num_planes; ++p) {
      const PlaneLayout& pl = layout.planes[p];
      a[p] = AnyPlane{bytes[p].data(), pl.width, pl.height, pitch[p], pl.channels, layout.bytes_per_sample};
    }
    return a;
  }
};

HostFrame filtered(const HostFrame& in, const std::string& chain_spec, FrameContext ctx = {}) {
  HostFrame out = in;
  FilterChain chain(parse_filter_chain(chain_spec));
  chain.configure(out.layout, Backend::Cpu);
  chain.apply(out.planes(), out.layout.num_planes, nullptr, ctx);
  return out;
}

// The luma centre of plane pixel x on an axis subsampled by 2^log2.
double centre(int x, int log2) { return (x + 0.5) * (1 << log2); }

struct Box {
  double x, y, w, h;
};

// Where a pixel centre lies against a box grown by `feather`: 1 inside the
// box, 0 farther than feather (+ a hair), -1 in between (not checked exactly).
int rect_side(double cx, double cy, const Box& b, double feather) {
  if (cx >= b.x && cx < b.x + b.w && cy >= b.y && cy < b.y + b.h) return 1;
  const double dx = std::max({b.x - cx, cx - (b.x + b.w), 0.0}), dy = std::max({b.y - cy, cy - (b.y + b.h), 0.0});
  if (feather == 0) return 0;
  return std::hypot(dx, dy) > feather + 1e-3 ? 0 : -1;
}

// Compares every sample of `got` against `in` (outside) and `want` (inside).
// side(p, x, y) says which applies. Counts both so a test can require that it
// saw each kind.
struct InOut {
  int64_t inside = 0, outside = 0;
};
template <class Side>
InOut check_planes(const HostFrame& got, const HostFrame& in, const HostFrame& want, Side side, int inside_tol = 0) {
  InOut n;
  for (int p = 0; p < got.layout.num_planes; ++p) {
    const PlaneLayout& pl = got.layout.planes[p];
    for (int y = 0; y < pl.height; ++y)
      for (int x = 0; x < pl.width; ++x) {
        const int s_ = side(p, x, y);
        if (s_ < 0) continue;
        for (int c = 0; c < pl.channels; ++c) {
          const int s = x * pl.channels + c;
          if (s_ == 0) {
            ++n.outside;
            if (got.get(p, s, y) != in.get(p, s, y)) {
              ADD_FAILURE() << "plane " << p << " x=" << x << " y=" << y << " c=" << c << " outside the boxes changed: "
                            << in.get(p, s, y) << " -> " << got.get(p, s, y);
              return n;
            }
          } else {
            ++n.inside;
            if (std::abs(got.get(p, s, y) - want.get(p, s, y)) > inside_tol) {
              ADD_FAILURE() << "plane " << p << " x=" << x << " y=" << y << " c=" << c << " inside: got "
                            << got.get(p, s, y) << ", the filtered frame has " << want.get(p, s, y);
              return n;
            }
          }
        }
      }
    // The row padding is never written.
    for (int y = 0; y < pl.height; ++y)
      for (std::ptrdiff_t b = static_cast<std::ptrdiff_t>(pl.width) * pl.channels * got.layout.bytes_per_sample;
           b < got.pitch[p]; ++b)
        if (got.bytes[p][y * got.pitch[p] + b] != 0x5a) {
          ADD_FAILURE() << "plane " << p << " row " << y << ": padding byte " << b << " written";
          return n;
        }
  }
  return n;
}

void write_file(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary);
  f << text;
}

// A test filter: every sample of the planes it is given becomes `value`;
// records the sizes it was applied to. With it the output is the mask.
class PaintFilter final : public Filter {
 public:
  PaintFilter(int value, std::optional<FilterReach> reach, std::vector<std::pair<int, int>>* sizes = nullptr,
              std::vector<const void*>* starts = nullptr)
      : value_(value), reach_(reach), sizes_(sizes), starts_(starts) {}
  void configure(const FrameLayout& l, Backend) override { layout_ = l; }
  bool touches(int p) const override { return p < layout_.num_planes; }
  void apply(int, const AnyPlane& d, DeviceStream) override {
    if (sizes_) sizes_->push_back({d.width, d.height});
    if (starts_) starts_->push_back(d.data);
    for (int y = 0; y < d.height; ++y)
      for (int s = 0; s < d.width * d.channels; ++s) {
        unsigned char* row = static_cast<unsigned char*>(d.data) + y * d.pitch;
        if (d.bytes_per_sample == 1) row[s] = static_cast<uint8_t>(value_);
        else reinterpret_cast<uint16_t*>(row)[s] = static_cast<uint16_t>(value_);
      }
  }
  std::string describe() const override { return "paint"; }
  std::optional<FilterReach> reach(int) const override { return reach_; }

 private:
  int value_;
  std::optional<FilterReach> reach_;
  std::vector<std::pair<int, int>>* sizes_;
  std::vector<const void*>* starts_;
  FrameLayout layout_;
};

// A zero frame painted with 200 through the region options `opts` ("box=...:feather=4").
HostFrame mask_frame(AVPixelFormat fmt, int w, int h, const std::string& opts, FrameContext ctx = {},
                     std::vector<std::pair<int, int>>* sizes = nullptr, std::optional<FilterReach> reach = FilterReach{},
                     std::vector<const void*>* starts = nullptr, const uint8_t** base = nullptr,
                     std::ptrdiff_t* pitch = nullptr) {
  HostFrame f(fmt, w, h, 1);
  for (int p = 0; p < f.layout.num_planes; ++p)
    for (int y = 0; y < f.layout.planes[p].height; ++y)
      for (int s = 0; s < f.layout.planes[p].width * f.layout.planes[p].channels; ++s) f.set(p, s, y, 0);
  std::string rest = opts;
  auto spec = take_region_options("paint", rest);
  EXPECT_TRUE(spec && rest.empty()) << opts;
  auto filter = make_region_filter(std::make_unique<PaintFilter>(200, reach, sizes, starts), spec);
  filter->configure(f.layout, Backend::Cpu);
  filter->begin_frame(ctx);
  auto planes = f.planes();
  for (int p = 0; p < f.layout.num_planes; ++p) filter->apply(p, planes[p], nullptr);
  if (base) *base = f.bytes[0].data();
  if (pitch) *pitch = f.pitch[0];
  return f;
}

}  // namespace

// ---------------------------------------------------------------------------
// Options
// ---------------------------------------------------------------------------

TEST(RegionOptions, PeeledOffBeforeTheFiltersOwnTable) {
  const auto chain = parse_filter_chain("gblur=sigma=3:box=10:12:20:16:planes=y:feather=4:shape=ellipse,boxblur=2");
  ASSERT_EQ(chain.size(), 2u);
  ASSERT_TRUE(regions_of(chain[0]));
  EXPECT_EQ(chain[0].values.at("sigma"), 3);
  EXPECT_EQ(chain[0].values.at("planes"), double(kCompY));
  ASSERT_EQ(regions_of(chain[0])->boxes.size(), 1u);
  const LabeledBox& b = regions_of(chain[0])->boxes[0];
  EXPECT_EQ(b.x, 10);
  EXPECT_EQ(b.y, 12);
  EXPECT_EQ(b.w, 20);
  EXPECT_EQ(b.h, 16);
  EXPECT_EQ(regions_of(chain[0])->feather, 4);
  EXPECT_EQ(regions_of(chain[0])->shape, RegionShape::Ellipse);
  EXPECT_TRUE(regions_of(chain[0])->interpolate);
  EXPECT_FALSE(regions_of(chain[1]));
  EXPECT_EQ(chain[1].values.at("luma_radius"), 2);
  // Positional values still work beside region options, and a filter of only region options.
  EXPECT_EQ(parse_filter_chain("gblur=5:box=0:0:4:4")[0].values.at("sigma"), 5);
  EXPECT_TRUE(regions_of(parse_filter_chain("pixelate=box=0:0:4:4")[0]));
  FilterChain c(parse_filter_chain("pixelate=block=8:box=1:2:3:4:margin=0.5"));
  EXPECT_TRUE(contains(c.describe(), "pixelate(block=8")) << c.describe();
  EXPECT_TRUE(contains(c.describe(), "box=1:2:3:4")) << c.describe();
  EXPECT_TRUE(contains(c.describe(), "margin=0.5")) << c.describe();
  EXPECT_TRUE(contains(filter_help("unsharp"), "feather")) << filter_help("unsharp");
}

TEST(RegionOptions, BadOptionsSayWhat) {
  EXPECT_ONE_LINE_CONTAINS(error_of([] { parse_filter_chain("gblur=feather=3"); }), "gblur", "feather",
                           "needs regions=FILE or box=x:y:w:h");
  EXPECT_ONE_LINE_CONTAINS(error_of([] { parse_filter_chain("gblur=box=1:2:3"); }), "gblur", "box needs x:y:w:h");
  EXPECT_ONE_LINE_CONTAINS(error_of([] { parse_filter_chain("gblur=box=1:2:-3:4"); }), "negative size");
  EXPECT_ONE_LINE_CONTAINS(error_of([] { parse_filter_chain("gblur=box=1:2:a:4"); }), "box", "needs a number");
  EXPECT_ONE_LINE_CONTAINS(error_of([] { parse_filter_chain("gblur=box=1:2:3:4:shape=circle"); }), "rect or ellipse");
  EXPECT_ONE_LINE_CONTAINS(error_of([] { parse_filter_chain("gblur=box=1:2:3:4:margin=-1"); }), "margin", "out of range");
  EXPECT_ONE_LINE_CONTAINS(error_of([] { parse_filter_chain("gblur=box=1:2:3:4:interpolate=2"); }), "interpolate");
  EXPECT_ONE_LINE_CONTAINS(error_of([] { parse_filter_chain("gblur=regions="); }), "needs a file name");
  // A static box entirely outside the frame, known when the frame size is.
  FilterChain c(parse_filter_chain("gblur=box=64:0:8:8"));
  EXPECT_ONE_LINE_CONTAINS(error_of([&] { c.configure(*native_layout(AV_PIX_FMT_YUV420P, 64, 48), Backend::Cpu); }),
                           "box=64:0:8:8", "entirely outside", "64x48");
}

// ---------------------------------------------------------------------------
// Bad regions files: one line each, naming the file and the line
// ---------------------------------------------------------------------------

TEST(RegionsFile, EachBadFileSaysFileAndLine) {
  TempDir dir;
  struct Bad {
    std::string text;
    std::vector<const char*> parts;
  };
  const std::vector<Bad> cases = {
      {"{\"frame\": 0, \"boxes\": []}\n{\"frame\": 1, \"boxes\": [[1, 2, 3\n", {"line 2", "malformed JSON"}},
      {"{\"frame\": 0}\n", {"line 1", "no \"boxes\""}},
      {"\n{\"frame\": 0, \"boxes\": [[1, 2, 3, 4]]}\n{\"frame\": 4, \"boxes\": [[1, 2, 3, 4], [5, 6, -1, 4]]}\n",
       {"line 3", "box 2 has a negative size", "w=-1"}},
      {"{\"frame\": 0, \"boxes\": []}\n{\"boxes\": [[1, 2, 3, 4]]}\n", {"line 2", "needs \"frame\"", "or \"pts\""}},
      {"{\"frame\": 5, \"boxes\": []}\n{\"frame\": 9, \"boxes\": []}\n{\"frame\": 7, \"boxes\": []}\n",
       {"line 3", "frame 7 is not after frame 9", "(line 2)", "increasing order"}},
      {"{\"pts\": 0.5, \"boxes\": []}\n{\"pts\": 0.5, \"boxes\": []}\n", {"line 2", "pts 0.5 is not after pts 0.5"}},
      {"{\"pts\": 0.5, \"boxes\": []}\n{\"frame\": 3, \"boxes\": []}\n", {"line 2", "has no \"pts\"", "from line 1"}},
      {"{\"frame\": 0, \"boxes\": [[1, 2, 3]]}\n", {"line 1", "box 1 must be [x, y, w, h]"}},
      {"{\"frame\": 0, \"boxes\": [[1, 2, 3, 4, 5]]}\n", {"line 1", "label", "must be a string"}},
      {"{\"frame\": 0, \"boxes\": [[1, 2, 3, 4, \"a\"], [5, 6, 7, 8, \"a\"]]}\n", {"line 1", "\"a\" appears twice"}},
      {"{\"frame\": -1, \"boxes\": []}\n", {"line 1", "whole number from 0"}},
      {"[1, 2]\n", {"line 1", "JSON object"}},
      {"\n\n", {"holds no keyframes"}},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    const std::string path = dir.file("bad" + std::to_string(i) + ".jsonl");
    write_file(path, cases[i].text);
    const std::string msg = error_of([&] { parse_filter_chain("gblur=regions=" + path); });
    SCOPED_TRACE("case " + std::to_string(i) + ": " + msg);
    EXPECT_ONE_LINE_CONTAINS(msg, path.c_str());
    for (const char* part : cases[i].parts) EXPECT_TRUE(contains(msg, part)) << "'" << part << "' not in: " << msg;
  }
  // Missing file.
  const std::string missing = dir.file("nosuch.jsonl");
  EXPECT_ONE_LINE_CONTAINS(error_of([&] { parse_filter_chain("boxblur=regions=" + missing); }), "cannot read",
                           missing.c_str(), "No such file");
  // A folder is not a regions file.
  EXPECT_ONE_LINE_CONTAINS(error_of([&] { parse_filter_chain("boxblur=regions=" + dir.path().string()); }),
                           "not a regular file");
  // A path of bytes that each print as a 4-character escape (found by the
  // fuzzer: the message grew past 400 characters) is cut, escapes included.
  // (The fuzzer's path also held a NUL, which the chain parser now refuses
  // before any file is read: see RegionTrack::load below for a NUL there.)
  const std::string odd = "gblur=regions=" + std::string(300, '\x9e') + "x";
  const std::string odd_msg = error_of([&] { parse_filter_chain(odd); });
  EXPECT_ONE_LINE_CONTAINS(odd_msg, "cannot read regions file", "\\x9e", "...");
  EXPECT_LE(odd_msg.size(), 200u) << odd_msg;
  const std::string odd_nul = error_of([&] { parse_filter_chain(odd + std::string(1, '\0') + "x"); });
  EXPECT_ONE_LINE_CONTAINS(odd_nul, "control character", "\\x00", "byte 316");
  EXPECT_LE(odd_nul.size(), 200u) << odd_nul;
  // A box entirely outside the frame: known at configure.
  const std::string outside = dir.file("outside.jsonl");
  write_file(outside, "{\"frame\": 0, \"boxes\": [[0, 0, 8, 8]]}\n{\"frame\": 3, \"boxes\": [[0, 0, 8, 8], [10, 50, 4, 4]]}\n");
  FilterChain chain(parse_filter_chain("gblur=regions=" + outside));
  EXPECT_ONE_LINE_CONTAINS(error_of([&] { chain.configure(*native_layout(AV_PIX_FMT_YUV420P, 64, 48), Backend::Cpu); }),
                           outside.c_str(), "line 2", "box 2", "entirely outside the 64x48 frame");
  EXPECT_NO_THROW(chain.configure(*native_layout(AV_PIX_FMT_YUV420P, 64, 60), Backend::Cpu));
}

// Every error of a regions file is one line "regions file 'PATH', line N: ..."
// in the library's words: JSON the parser refuses (a number beyond a double
// included), values of the wrong type, missing keys, sizes not above 0.
TEST(RegionsFile, EveryLineErrorSaysFileCommaLineInItsOwnWords) {
  TempDir dir;
  struct Bad {
    std::string text;
    int line;
    std::string message;  // after "regions file 'PATH', line N: "; a prefix of it when `prefix_only`
    bool prefix_only = false;
  };
  const std::string ok = "{\"frame\": 0, \"boxes\": [[1, 2, 3, 4]]}\n";
  const std::vector<Bad> cases = {
      {"{\"frame\": 0, \"boxes\": [[1e400, 2, 3, 4]]}\n", 1,
       "number 1e400 is out of range (a number here must be within about 1.8e308)"},
      {ok + "{\"frame\": 1e400, \"boxes\": []}\n", 2,
       "number 1e400 is out of range (a number here must be within about 1.8e308)"},
      {ok + "\n{\"pts\": -2e999, \"boxes\": []}\n", 3,
       "number -2e999 is out of range (a number here must be within about 1.8e308)"},
      {ok + "{\"frame\": 1, \"boxes\": [[1, 2, 3\n", 2, "malformed JSON: ", true},
      {"{frame: 0}\n", 1, "malformed JSON: ", true},
      {"{\"frame\": \"3\", \"boxes\": []}\n", 1, "\"frame\" must be a whole number from 0, got \"3\""},
      {"{\"frame\": 1.5, \"boxes\": []}\n", 1, "\"frame\" must be a whole number from 0, got 1.5"},
      {"{\"pts\": \"soon\", \"boxes\": []}\n", 1, "\"pts\" must be a number of seconds, got \"soon\""},
      {"{\"frame\": 0, \"boxes\": {\"x\": 1}}\n", 1, "\"boxes\" must be a list, got {\"x\":1}"},
      {"{\"frame\": 0, \"boxes\": [[1, \"2\", 3, 4]]}\n", 1, "box 1: x, y, w and h must be numbers, got [1,\"2\",3,4]"},
      {"{\"frame\": 0, \"boxes\": [[1, 2, 3, 4, 7]]}\n", 1,
       "box 1: the fifth value (the label) must be a string, got 7"},
      {"\"just a string\"\n", 1, "expected a JSON object such as {\"frame\": 0, \"boxes\": [[x, y, w, h]]}"},
      {ok + "{\"boxes\": []}\n", 2, "needs \"frame\" (index from 0) or \"pts\" (seconds)"},
      {"{\"frame\": 0}\n", 1, "no \"boxes\" (a list of [x, y, w, h] or [x, y, w, h, \"label\"])"},
      {"{\"frame\": 0, \"boxes\": [[1, 2, -3, 4]]}\n", 1,
       "box 1 has a negative size (w=-3, h=4); w and h must be more than 0"},
      {ok + "{\"frame\": 2, \"boxes\": [[1, 2, 3, 4], [5, 6, 7, -0.5]]}\n", 2,
       "box 2 has a negative size (w=7, h=-0.5); w and h must be more than 0"},
      // Zero-size boxes are refused as box=0:0:0:0 is, not skipped.
      {"{\"frame\": 0, \"boxes\": [[1, 2, 0, 4]]}\n", 1, "box 1 has zero width (w=0, h=4); w and h must be more than 0"},
      {"{\"frame\": 0, \"boxes\": [[1, 2, 3, 0]]}\n", 1, "box 1 has zero height (w=3, h=0); w and h must be more than 0"},
      {"{\"frame\": 0, \"boxes\": [[0, 0, 0, 0, \"face\"]]}\n", 1,
       "box 1 has zero width and height (w=0, h=0); w and h must be more than 0"},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    const std::string path = dir.file("bad" + std::to_string(i) + ".jsonl");
    write_file(path, cases[i].text);
    const std::string msg = error_of([&] { parse_filter_chain("gblur=regions=" + path); });
    SCOPED_TRACE("case " + std::to_string(i) + ": " + msg);
    const std::string want = "regions file '" + path + "', line " + std::to_string(cases[i].line) + ": " + cases[i].message;
    EXPECT_EQ(msg.find('\n'), std::string::npos);
    if (cases[i].prefix_only) {
      EXPECT_EQ(msg.substr(0, want.size()), want);
      EXPECT_GT(msg.size(), want.size());  // with the JSON parser's reason
      EXPECT_FALSE(contains(msg, "json.exception")) << msg;
    } else {
      EXPECT_EQ(msg, want);
    }
    // The same from RegionTrack::load, which the Python module and the CLI reach too.
    EXPECT_EQ(error_of([&] { RegionTrack::load(path); }), msg);
  }
  // A NUL in a path would end it early for the OS: refused, not cut.
  const std::string nul_path = dir.file("bad0.jsonl") + std::string(1, '\0') + "x";
  EXPECT_ONE_LINE_CONTAINS(error_of([&] { RegionTrack::load(nul_path); }), "regions file", "NUL");
}

// FFmpeg's quoting and escaping (av_get_token) reach a regions path: a ':' or
// ',' in it escaped with '\' or inside '...'.
TEST(RegionOptions, PathsWithColonsAndCommasQuotedOrEscaped) {
  TempDir dir;
  const std::string base = dir.path().string();
  std::filesystem::create_directories(dir.path() / "dir:x");
  const std::string colon = base + "/dir:x/faces.jsonl";
  write_file(colon, "{\"frame\": 0, \"boxes\": [[1, 2, 3, 4]]}\n");
  const std::string comma = base + "/a,b:c.jsonl";
  write_file(comma, "{\"frame\": 0, \"boxes\": [[1, 2, 3, 4]]}\n{\"frame\": 5, \"boxes\": []}\n");

  auto chain = parse_filter_chain("gblur=regions=" + base + "/dir\\:x/faces.jsonl:sigma=3");
  ASSERT_EQ(chain.size(), 1u);
  ASSERT_TRUE(regions_of(chain[0]));
  EXPECT_EQ(regions_of(chain[0])->file, colon);
  ASSERT_TRUE(regions_of(chain[0])->track);
  EXPECT_EQ(regions_of(chain[0])->track->name(), colon);
  EXPECT_EQ(regions_of(chain[0])->track->keyframes().size(), 1u);
  EXPECT_EQ(chain[0].values.at("sigma"), 3);

  chain = parse_filter_chain("gblur=regions='" + base + "/a,b:c.jsonl',boxblur=1");
  ASSERT_EQ(chain.size(), 2u);
  ASSERT_TRUE(regions_of(chain[0]) && regions_of(chain[0])->track);
  EXPECT_EQ(regions_of(chain[0])->file, comma);
  EXPECT_EQ(regions_of(chain[0])->track->keyframes().size(), 2u);
  EXPECT_FALSE(regions_of(chain[1]));
  EXPECT_EQ(chain[1].values.at("luma_radius"), 1);

  // Escapes and a quoted part mixed in one value; a box after it still takes its four values.
  chain = parse_filter_chain("pixelate=block=4:regions=" + base + "/a\\,b':c.jsonl':box=1:2:3:4");
  ASSERT_TRUE(regions_of(chain[0]) && regions_of(chain[0])->track);
  EXPECT_EQ(regions_of(chain[0])->file, comma);
  ASSERT_EQ(regions_of(chain[0])->boxes.size(), 1u);
  EXPECT_EQ(regions_of(chain[0])->boxes[0].h, 4);
  EXPECT_EQ(chain[0].values.at("block"), 4);

  // Unescaped, the ':' still ends the value: the path is cut there and the rest is an option.
  const std::string cut = "'" + base + "/dir'";
  EXPECT_ONE_LINE_CONTAINS(error_of([&] { parse_filter_chain("gblur=regions=" + colon); }), "cannot read regions file",
                           cut.c_str());
  EXPECT_ONE_LINE_CONTAINS(error_of([&] { parse_filter_chain("gblur=regions='" + colon); }), "unterminated quote");

  // The take_region_options entry point follows the same rules and leaves the rest as written.
  std::string rest = "sigma='2':regions=" + base + "/dir\\:x/faces.jsonl:planes=y";
  const auto spec = take_region_options("gblur", rest);
  ASSERT_TRUE(spec);
  EXPECT_EQ(spec->file, colon);
  EXPECT_EQ(rest, "sigma='2':planes=y");
}

// Names in messages are UTF-8 as given (not \xc3\xa9); bytes that are not
// UTF-8 and control characters are still escaped.
TEST(RegionsFile, NonAsciiPathsPrintAsUtf8) {
  TempDir dir;
  const std::string missing = dir.file("visages_\xc3\xa9t\xc3\xa9.jsonl");
  EXPECT_ONE_LINE_CONTAINS(error_of([&] { parse_filter_chain("gblur=regions=" + missing); }),
                           "cannot read regions file", missing.c_str(), "No such file");
  const std::string named = dir.file("r\xc3\xa9gions.jsonl");
  write_file(named, "{\"frame\": 0, \"boxes\": [[1, 2, 3, 4, \"\xc3\xa9l\xc3\xa8ve\"], [1, 2, 3, 4, \"\xc3\xa9l\xc3\xa8ve\"]]}\n");
  EXPECT_EQ(error_of([&] { parse_filter_chain("gblur=regions=" + named); }),
            "regions file '" + named + "', line 1: label \"\xc3\xa9l\xc3\xa8ve\" appears twice");
  const std::string bad = dir.file("bad\xff\x01.jsonl");
  EXPECT_ONE_LINE_CONTAINS(error_of([&] { RegionTrack::load(bad); }), "cannot read regions file",
                           "bad\\xff\\x01.jsonl");
}

// ---------------------------------------------------------------------------
// Keyframes: which boxes a frame gets
// ---------------------------------------------------------------------------

TEST(RegionsFile, MovingBoxIsInterpolatedBetweenKeyframes) {
  std::istringstream in(
      "{\"frame\": 0, \"boxes\": [[4, 10, 16, 12]]}\n"
      "{\"frame\": 10, \"boxes\": [[44, 30, 24, 12]]}\n"
      "{\"frame\": 20, \"boxes\": []}\n");
  const RegionTrack t = RegionTrack::parse(in, "moving.jsonl");
  auto at = [&](int64_t i, bool interp = true) { return t.boxes_at(FrameContext{std::nan(""), i}, interp); };
  // Frame 5 is halfway: x = 4 + (44 - 4) * 5/10, y = 10 + 20 * 0.5, w = 16 + 8 * 0.5.
  auto b = at(5);
  ASSERT_EQ(b.size(), 1u);
  EXPECT_DOUBLE_EQ(b[0].x, 24);
  EXPECT_DOUBLE_EQ(b[0].y, 20);
  EXPECT_DOUBLE_EQ(b[0].w, 20);
  EXPECT_DOUBLE_EQ(b[0].h, 12);
  b = at(3);
  ASSERT_EQ(b.size(), 1u);
  EXPECT_DOUBLE_EQ(b[0].x, 4 + 40 * 0.3);
  // On keyframes, exactly theirs; interpolate=0 holds the earlier keyframe's.
  EXPECT_DOUBLE_EQ(at(10)[0].x, 44);
  EXPECT_DOUBLE_EQ(at(7, false)[0].x, 4);
  // The box has no partner in frame 20's empty list: it stays where it was seen until then.
  b = at(15);
  ASSERT_EQ(b.size(), 1u);
  EXPECT_DOUBLE_EQ(b[0].x, 44);
  // On the last keyframe (empty), after it, before the first, and with no frame index: nothing.
  EXPECT_TRUE(at(20).empty());
  EXPECT_TRUE(at(21).empty());
  EXPECT_TRUE(at(-1).empty());
  EXPECT_EQ(t.max_boxes(), 2u);
}

TEST(RegionsFile, LabelsPairBoxesAndUnlabelledOnesPairByOrder) {
  std::istringstream in(
      "{\"pts\": 1.0, \"boxes\": [[0, 0, 10, 10, \"alice\"], [100, 0, 10, 10, \"bob\"], [0, 50, 4, 4], [9, 9, 2, 2, \"carol\"]]}\n"
      "{\"pts\": 2.0, \"boxes\": [[200, 0, 10, 10, \"bob\"], [20, 0, 10, 10, \"alice\"], [10, 50, 4, 4], [70, 70, 6, 6, \"dave\"]]}\n");
  const RegionTrack t = RegionTrack::parse(in, "labels.jsonl");
  EXPECT_EQ(t.key(), RegionTrack::Key::Pts);
  const auto b = t.boxes_at(FrameContext{1.25, -1}, true);
  auto find = [&](double y, double w) -> std::vector<LabeledBox> {
    std::vector<LabeledBox> r;
    for (const auto& x : b)
      if (x.y == y && x.w == w) r.push_back(x);
    return r;
  };
  ASSERT_EQ(b.size(), 5u);  // alice, bob, the unlabelled one, carol (held), dave (held)
  bool alice = false, bob = false, carol = false, dave = false;
  for (const LabeledBox& x : b) {
    if (x.label == "alice") { alice = true; EXPECT_DOUBLE_EQ(x.x, 5); }
    if (x.label == "bob") { bob = true; EXPECT_DOUBLE_EQ(x.x, 125); }
    if (x.label == "carol") { carol = true; EXPECT_DOUBLE_EQ(x.x, 9); }
    if (x.label == "dave") { dave = true; EXPECT_DOUBLE_EQ(x.x, 70); }
  }
  EXPECT_TRUE(alice && bob && carol && dave);
  const auto u = find(50, 4);
  ASSERT_EQ(u.size(), 1u);
  EXPECT_DOUBLE_EQ(u[0].x, 2.5);
  // A frame's pts within 0.1 ms of a keyframe's is on it; before the first keyframe, nothing; unknown pts, nothing.
  EXPECT_DOUBLE_EQ(t.boxes_at(FrameContext{1.99995, 7}, true)[1].x, 20);
  EXPECT_TRUE(t.boxes_at(FrameContext{0.5, 0}, true).empty());
  EXPECT_TRUE(t.boxes_at(FrameContext{}, true).empty());
}

// ---------------------------------------------------------------------------
// Pixels: outside exact, inside the filtered frame, every plane, odd sizes
// ---------------------------------------------------------------------------

struct PixelCase {
  std::string name;
  AVPixelFormat fmt;
  std::string filter;
};

class RegionPixels : public ::testing::TestWithParam<PixelCase> {};

TEST_P(RegionPixels, OutsideIsTheInputInsideIsTheFilteredFrame) {
  const PixelCase& c = GetParam();
  // 259x93: odd sizes, and wide enough that the crop around the boxes is smaller than the plane.
  const HostFrame in(c.fmt, 259, 93, 7);
  const std::vector<Box> boxes = {{150, 20, 31, 17}, {9, 61, 20, 30}};
  const std::string opts = ":box=150:20:31:17:box=9:61:20:30";
  const HostFrame got = filtered(in, c.filter + opts);
  const HostFrame want = filtered(in, c.filter);
  auto side = [&](int p, int x, int y) {
    const PlaneLayout& pl = in.layout.planes[p];
    const double cx = centre(x, pl.log2_chroma_w), cy = centre(y, pl.log2_chroma_h);
    int s = 0;
    for (const Box& b : boxes) s = std::max(s, rect_side(cx, cy, b, 0));
    return s;
  };
  const InOut n = check_planes(got, in, want, side);
  EXPECT_GT(n.inside, 1000);
  EXPECT_GT(n.outside, 10000);
  // The filter changes the boxes (else "inside equals filtered" proves nothing).
  int changed = 0;
  for (int y = 25; y < 35; ++y)
    for (int x = 152; x < 178; ++x) changed += got.get(0, x * in.layout.planes[0].channels, y) != in.get(0, x * in.layout.planes[0].channels, y);
  EXPECT_GT(changed, 50);
}

TEST_P(RegionPixels, FeatheredEllipseWithMargin) {
  const PixelCase& c = GetParam();
  const HostFrame in(c.fmt, 131, 77, 11);
  // box 40,20 30x20 with margin 0.1 -> 37,18 36x24; feather 5 beyond that.
  const HostFrame got = filtered(in, c.filter + ":box=40:20:30:20:margin=0.1:feather=5:shape=ellipse");
  const HostFrame want = filtered(in, c.filter);
  auto side = [&](int p, int x, int y) {
    const PlaneLayout& pl = in.layout.planes[p];
    const double cx = centre(x, pl.log2_chroma_w), cy = centre(y, pl.log2_chroma_h);
    const double a = 18, b = 12, ex = 37 + a, ey = 18 + b;
    const double q = (cx - ex) * (cx - ex) / (a * a) + (cy - ey) * (cy - ey) / (b * b);
    if (q <= 0.999) return 1;
    // Outside the larger ellipse (semi-axes + feather) the mask is 0 along any ray.
    const double qo = (cx - ex) * (cx - ex) / ((a + 5) * (a + 5)) + (cy - ey) * (cy - ey) / ((b + 5) * (b + 5));
    return qo > 1.3 ? 0 : -1;
  };
  const InOut n = check_planes(got, in, want, side);
  EXPECT_GT(n.inside, 300);
  EXPECT_GT(n.outside, 5000);
}

std::vector<PixelCase> pixel_cases() {
  std::vector<PixelCase> v;
  const std::pair<AVPixelFormat, const char*> fmts[] = {{AV_PIX_FMT_YUV420P, "yuv420p"},
                                                        {AV_PIX_FMT_NV12, "nv12"},
                                                        {AV_PIX_FMT_YUV420P10LE, "yuv420p10"},
                                                        {AV_PIX_FMT_P010LE, "p010"},
                                                        {AV_PIX_FMT_RGB24, "rgb24"}};
  const std::pair<const char*, const char*> filters[] = {{"gblur", "gblur=sigma=3"},
                                                         {"boxblur", "boxblur=radius=4"},
                                                         {"unsharp", "unsharp=sigma=1.5:amount=2"},
                                                         {"pixelate", "pixelate=block=7:block_y=5"},
                                                         {"gblur_fields", "gblur=sigma=2:fields=1"},
                                                         {"pixelate_fields", "pixelate=block=6:fields=1"}};
  for (const auto& f : fmts)
    for (const auto& g : filters) v.push_back({std::string(g.first) + "_" + f.second, f.first, g.second});
  return v;
}

INSTANTIATE_TEST_SUITE_P(Regions, RegionPixels, ::testing::ValuesIn(pixel_cases()),
                         [](const auto& info) { return info.param.name; });

// ---------------------------------------------------------------------------
// The mask itself (a filter that paints 200: the output is 200 x alpha)
// ---------------------------------------------------------------------------

TEST(RegionMaskShape, FeatheredEdgesRampDownMonotonically) {
  const int W = 97, H = 61;
  const HostFrame f = mask_frame(AV_PIX_FMT_GRAY8, W, H, "box=30:20:24:14:feather=9");
  const Box b{30, 20, 24, 14};
  for (int y = 0; y < H; ++y)
    for (int x = 0; x < W; ++x) {
      const double cx = x + 0.5, cy = y + 0.5;
      const int v = f.get(0, x, y);
      const int side = rect_side(cx, cy, b, 9);
      if (side == 1) ASSERT_EQ(v, 200) << x << "," << y;
      if (side == 0) ASSERT_EQ(v, 0) << x << "," << y;
      if (side == -1) {
        // 200 (1 - d / 9), d the distance to the box, rounded half up: within one step.
        const double dx = std::max({b.x - cx, cx - (b.x + b.w), 0.0}), dy = std::max({b.y - cy, cy - (b.y + b.h), 0.0});
        const double want = 200 * (1 - std::hypot(dx, dy) / 9);
        ASSERT_NEAR(v, want, 1.0) << x << "," << y;
      }
    }
  // Monotone: never rising moving away from the box, along rows and columns.
  for (int y = 0; y < H; ++y) {
    for (int x = 42; x + 1 < W; ++x) ASSERT_GE(f.get(0, x, y), f.get(0, x + 1, y)) << x << "," << y;
    for (int x = 42; x > 0; --x) ASSERT_GE(f.get(0, x, y), f.get(0, x - 1, y)) << x << "," << y;
  }
  for (int x = 0; x < W; ++x) {
    for (int y = 27; y + 1 < H; ++y) ASSERT_GE(f.get(0, x, y), f.get(0, x, y + 1)) << x << "," << y;
    for (int y = 27; y > 0; --y) ASSERT_GE(f.get(0, x, y), f.get(0, x, y - 1)) << x << "," << y;
  }
  // The ramp is really there: values strictly between 0 and 200 right of the box.
  int between = 0;
  for (int x = 54; x < 63; ++x) between += f.get(0, x, 27) > 0 && f.get(0, x, 27) < 200;
  EXPECT_GE(between, 7);
}

TEST(RegionMaskShape, EllipseMembershipOfPixelCentres) {
  const int W = 83, H = 57;
  const HostFrame f = mask_frame(AV_PIX_FMT_GRAY8, W, H, "box=11:7:50:31:shape=ellipse");
  const double a = 25, b = 15.5, ex = 36, ey = 22.5;
  int in = 0;
  for (int y = 0; y < H; ++y)
    for (int x = 0; x < W; ++x) {
      const double q = (x + 0.5 - ex) * (x + 0.5 - ex) / (a * a) + (y + 0.5 - ey) * (y + 0.5 - ey) / (b * b);
      if (std::abs(q - 1) < 1e-4) continue;
      ASSERT_EQ(f.get(0, x, y), q < 1 ? 200 : 0) << x << "," << y << " q=" << q;
      in += q < 1;
    }
  // About pi a b pixels.
  EXPECT_NEAR(in, std::numbers::pi * a * b, 30);
  // The corners of the box are outside the ellipse.
  EXPECT_EQ(f.get(0, 12, 8), 0);
  EXPECT_EQ(f.get(0, 60, 37), 0);
}

TEST(RegionMaskShape, ChromaUsesTheMaskScaledBySubsampling) {
  // yuv420p 41x29, box 8,6 10x8 in luma: chroma pixels whose centre (c + 0.5) * 2
  // lies in [8, 18) x [6, 14): columns 4..8, rows 3..6.
  const HostFrame f = mask_frame(AV_PIX_FMT_YUV420P, 41, 29, "box=8:6:10:8");
  for (int p = 1; p < 3; ++p)
    for (int y = 0; y < 15; ++y)
      for (int x = 0; x < 21; ++x)
        ASSERT_EQ(f.get(p, x, y), (x >= 4 && x <= 8 && y >= 3 && y <= 6) ? 200 : 0) << p << ": " << x << "," << y;
  // yuv422p: full-height chroma, rows 6..13.
  const HostFrame g = mask_frame(AV_PIX_FMT_YUV422P, 41, 29, "box=8:6:10:8");
  for (int y = 0; y < 29; ++y)
    for (int x = 0; x < 21; ++x)
      ASSERT_EQ(g.get(1, x, y), (x >= 4 && x <= 8 && y >= 6 && y <= 13) ? 200 : 0) << x << "," << y;
}

TEST(RegionMaskShape, OnlyTheCropAroundTheBoxesIsFiltered) {
  std::vector<std::pair<int, int>> sizes;
  // 1000x400 gray, box 500,200 10x10, reach 3: crop x from floor((500-1-3)/64)*64 = 448 to 576, rows 195..214.
  std::vector<const void*> starts;
  const uint8_t* base = nullptr;
  std::ptrdiff_t pitch = 0;
  const HostFrame kept = mask_frame(AV_PIX_FMT_GRAY8, 1000, 400, "box=500:200:10:10", {}, &sizes,
                                    FilterReach{3, 3, 1, 1}, &starts, &base, &pitch);
  ASSERT_EQ(sizes.size(), 1u);
  ASSERT_EQ(starts.size(), 1u);
  // The crop starts on a multiple of 64 pixels (SIMD lanes and CUDA vector loads as on the whole plane).
  const std::ptrdiff_t offset = static_cast<const uint8_t*>(starts[0]) - base;  // the frame moved out, its rows did not
  EXPECT_EQ(offset % pitch % 64, 0) << "crop starts at x=" << offset % pitch;
  EXPECT_LE(sizes[0].first, 192);
  EXPECT_GE(sizes[0].first, 10 + 2 * 3);
  EXPECT_LE(sizes[0].second, 24);
  EXPECT_GE(sizes[0].second, 10 + 2 * 3);
  // A filter that gives no reach runs on the whole plane.
  sizes.clear();
  mask_frame(AV_PIX_FMT_GRAY8, 1000, 400, "box=500:200:10:10", {}, &sizes, std::nullopt);
  ASSERT_EQ(sizes.size(), 1u);
  EXPECT_EQ(sizes[0], std::make_pair(1000, 400));
  // No box on this frame: nothing runs.
  sizes.clear();
  TempDir dir;
  write_file(dir.file("r.jsonl"), "{\"frame\": 3, \"boxes\": [[1, 1, 5, 5]]}\n");
  const HostFrame f = mask_frame(AV_PIX_FMT_GRAY8, 64, 48, "regions=" + dir.file("r.jsonl"), FrameContext{0.0, 1}, &sizes);
  EXPECT_TRUE(sizes.empty());
  EXPECT_EQ(f.get(0, 2, 2), 0);
}

TEST(RegionMaskShape, InterpolatedBoxLandsWhereTheTestComputesIt) {
  TempDir dir;
  const std::string path = dir.file("moving.jsonl");
  // A 12x10 box moving from x=3 (frame 2) to x=63 (frame 8), y fixed at 20.
  write_file(path, "{\"frame\": 2, \"boxes\": [[3, 20, 12, 10]]}\n{\"frame\": 8, \"boxes\": [[63, 20, 12, 10]]}\n");
  for (int frame : {2, 4, 5, 8}) {
    const double x0 = 3 + (63 - 3) * (frame - 2) / 6.0;  // 3, 23, 33, 63
    const HostFrame f = mask_frame(AV_PIX_FMT_GRAY8, 97, 50, "regions=" + path, FrameContext{std::nan(""), frame});
    for (int y = 0; y < 50; ++y)
      for (int x = 0; x < 97; ++x) {
        const bool in = x + 0.5 >= x0 && x + 0.5 < x0 + 12 && y + 0.5 >= 20 && y + 0.5 < 30;
        ASSERT_EQ(f.get(0, x, y), in ? 200 : 0) << "frame " << frame << " at " << x << "," << y;
      }
  }
}

// ---------------------------------------------------------------------------
// End to end: a synthetic clip through the pipeline and the CLI
// ---------------------------------------------------------------------------

namespace {

class RegionsClip : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir;
    in_ = dir_->file("in.mkv");
    io::SyntheticClipSpec spec;
    spec.width = 97;
    spec.height = 55;
    spec.frames = 9;
    spec.fps = 25;
    spec.noise = true;
    io::write_synthetic_clip(in_, spec);
    // A 16x14 box moving 8 pixels right a frame; keyframes on frames 0, 4 and 8.
    write_file(dir_->file("frames.jsonl"),
               "{\"frame\": 0, \"boxes\": [[10, 20, 16, 14, \"face\"]]}\n"
               "{\"frame\": 4, \"boxes\": [[42, 20, 16, 14, \"face\"]]}\n"
               "{\"frame\": 8, \"boxes\": [[74, 20, 16, 14, \"face\"]]}\n");
    // The same by pts (25 fps: frame i at i / 25 s).
    write_file(dir_->file("pts.jsonl"),
               "{\"pts\": 0.0, \"boxes\": [[10, 20, 16, 14]]}\n"
               "{\"pts\": 0.16, \"boxes\": [[42, 20, 16, 14]]}\n"
               "{\"pts\": 0.32, \"boxes\": [[74, 20, 16, 14]]}\n");
  }
  static void TearDownTestSuite() { delete dir_; }
  static double box_x(int frame) { return 10 + 8.0 * frame; }
  // Every frame: outside the frame's box the input, inside the whole-frame blur.
  static void check(const sbtest::SinkFrames& got, const sbtest::SinkFrames& plain, const sbtest::SinkFrames& blurred,
                    int tol = 0) {
    ASSERT_EQ(got.planes.size(), 9u);
    ASSERT_EQ(plain.planes.size(), 9u);
    for (int k = 0; k < 9; ++k)
      for (int p = 0; p < 3; ++p) {
        const int w = got.width(p), h = got.height(p), l = p ? 1 : 0;
        int inside = 0;
        for (int y = 0; y < h; ++y)
          for (int x = 0; x < w; ++x) {
            const double cx = (x + 0.5) * (1 << l), cy = (y + 0.5) * (1 << l);
            const bool in = cx >= box_x(k) && cx < box_x(k) + 16 && cy >= 20 && cy < 34;
            const int g = got.planes[k][p][y * w + x];
            const int want = (in ? blurred : plain).planes[k][p][y * w + x];
            inside += in;
            ASSERT_LE(std::abs(g - want), in ? tol : 0) << "frame " << k << " plane " << p << " at " << x << "," << y
                                               << (in ? " (inside)" : " (outside)");
          }
        EXPECT_EQ(inside, p ? 8 * 7 : 16 * 14) << "frame " << k << " plane " << p;
      }
  }
  static TempDir* dir_;
  static std::string in_;
};
TempDir* RegionsClip::dir_ = nullptr;
std::string RegionsClip::in_;

}  // namespace

TEST_F(RegionsClip, PipelineFollowsTheBoxByFrameAndByPts) {
  const auto plain = sbtest::run_to_sink(in_, "", BackendChoice::Cpu);
  const auto blurred = sbtest::run_to_sink(in_, "gblur=sigma=4", BackendChoice::Cpu);
  check(sbtest::run_to_sink(in_, "gblur=sigma=4:regions=" + dir_->file("frames.jsonl"), BackendChoice::Cpu), plain,
        blurred);
  check(sbtest::run_to_sink(in_, "gblur=sigma=4:regions=" + dir_->file("pts.jsonl"), BackendChoice::Cpu), plain,
        blurred);
}

TEST_F(RegionsClip, CliRunWithARegionsFile) {
  const std::string cli = STREAMBLUR_CLI_PATH;
  if (cli.empty()) GTEST_SKIP() << "the CLI is not built";
  const std::string out = dir_->file("out.mkv"), err = dir_->file("err.txt");
  const std::string cmd = "'" + cli + "' '" + in_ + "' '" + out + "' --backend cpu --codec ffv1 -y -q --vf 'gblur=sigma=4:regions=" +
                          dir_->file("frames.jsonl") + "' 2> '" + err + "'";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << sbtest::bytes_of(err);
  check(sbtest::run_to_sink(out, "", BackendChoice::Cpu), sbtest::run_to_sink(in_, "", BackendChoice::Cpu),
        sbtest::run_to_sink(in_, "gblur=sigma=4", BackendChoice::Cpu));
  // A bad regions file: one line naming the file and the line, non-zero exit, no output.
  const std::string bad = dir_->file("bad.jsonl"), out2 = dir_->file("out2.mkv");
  write_file(bad, "{\"frame\": 0, \"boxes\": [[1, 2, 3, 4]]}\n{\"frame\": 1, \"boxes\": [[1, 2, -3, 4]]}\n");
  const std::string cmd2 = "'" + cli + "' '" + in_ + "' '" + out2 + "' --backend cpu -q --vf 'gblur=regions=" + bad +
                           "' 2> '" + err + "'";
  EXPECT_NE(std::system(cmd2.c_str()), 0);
  std::string msg = sbtest::bytes_of(err);
  while (!msg.empty() && msg.back() == '\n') msg.pop_back();
  EXPECT_ONE_LINE_CONTAINS(msg, bad.c_str(), "line 2", "negative size");
  EXPECT_FALSE(std::filesystem::exists(out2));
}

// ---------------------------------------------------------------------------
// CUDA: the same results as the CPU
// ---------------------------------------------------------------------------

#if STREAMBLUR_HAVE_CUDA  // (the CPU builds have no device planes to make)
namespace {

// The chain on the device, results back on the host.
HostFrame filtered_on_gpu(const HostFrame& in, const std::string& chain_spec, FrameContext ctx = {}) {
  HostFrame out = in;
  std::array<cuda::DeviceBuffer, 4> dev;
  std::array<AnyPlane, 4> planes = out.planes();
  for (int p = 0; p < in.layout.num_planes; ++p) {
    dev[p] = cuda::DeviceBuffer(out.bytes[p].size());
    sbtest::upload(dev[p].get(), out.bytes[p].data(), out.bytes[p].size());
    planes[p].data = dev[p].get();
  }
  cuda::CudaStream stream;
  FilterChain chain(parse_filter_chain(chain_spec));
  chain.configure(out.layout, Backend::Cuda);
  chain.apply(planes, in.layout.num_planes, stream.get(), ctx);
  stream.synchronize();
  for (int p = 0; p < in.layout.num_planes; ++p)
    CUDA_CHECK(cudaMemcpy(out.bytes[p].data(), dev[p].get(), out.bytes[p].size(), cudaMemcpyDeviceToHost));
  return out;
}

}  // namespace

TEST_P(RegionPixels, CudaAgreesWithCpu) {
  SBTEST_SKIP_WITHOUT_GPU();
  const PixelCase& c = GetParam();
  const HostFrame in(c.fmt, 259, 93, 5);
  const std::string spec = c.filter + ":box=150:20:31:17:box=9:61:20:30:feather=6:margin=0.05";
  const HostFrame cpu = filtered(in, spec), gpu = filtered_on_gpu(in, spec);
  const HostFrame cpu_e = filtered(in, c.filter + ":box=40:20:30:20:feather=5:shape=ellipse");
  const HostFrame gpu_e = filtered_on_gpu(in, c.filter + ":box=40:20:30:20:feather=5:shape=ellipse");
  // Box and pixelate are exact integer filters and the masks agree bit for bit: exact.
  // The Gaussian ones may differ by float rounding (as the whole-frame filters do).
  const bool exact = contains(c.filter, "boxblur") || contains(c.filter, "pixelate");
  const int tol = exact ? 0 : 1;
  const int shift = in.layout.sample_shift;  // P010: compare the 10-bit values (1 LSB = 64 in the container)
  for (const auto& [a, b] : {std::pair{&gpu, &cpu}, std::pair{&gpu_e, &cpu_e}})
    for (int p = 0; p < in.layout.num_planes; ++p) {
      const PlaneLayout& pl = in.layout.planes[p];
      sbtest::SampleDiffs d(tol);
      for (int y = 0; y < pl.height; ++y)
        for (int s = 0; s < pl.width * pl.channels; ++s)
          d.add(a->get(p, s, y) >> shift, b->get(p, s, y) >> shift, s, y);
      EXPECT_TRUE(d.check(sbtest::tolerance_of(tol))) << "plane " << p;
    }
  // Outside the boxes the device leaves the input bit for bit, as the CPU does.
  const std::vector<Box> boxes = {{150 - 1.55, 20 - 0.85, 34.1, 18.7}, {9 - 1, 61 - 1.5, 22, 33}};
  auto side = [&](int p, int x, int y) {
    const PlaneLayout& pl = in.layout.planes[p];
    const double cx = centre(x, pl.log2_chroma_w), cy = centre(y, pl.log2_chroma_h);
    int s = 0;
    for (const Box& b : boxes)
      if (rect_side(cx, cy, b, 6) != 0) s = 1;  // inside a box or its feather: not checked here
    return s == 0 ? 0 : -1;
  };
  const InOut n = check_planes(gpu, in, gpu, side);
  EXPECT_GT(n.outside, 10000);
}

#endif  // STREAMBLUR_HAVE_CUDA

TEST_F(RegionsClip, CudaPipelineAgreesWithCpu) {
  SBTEST_SKIP_WITHOUT_GPU();
  const std::string chain = "boxblur=radius=3:regions=" + dir_->file("frames.jsonl") + ":feather=3";
  const auto cpu = sbtest::run_to_sink(in_, chain, BackendChoice::Cpu);
  const auto gpu = sbtest::run_to_sink(in_, chain, BackendChoice::Cuda);
  ASSERT_EQ(gpu.planes.size(), cpu.planes.size());
  for (size_t k = 0; k < gpu.planes.size(); ++k)
    for (int p = 0; p < 3; ++p) EXPECT_EQ(gpu.planes[k][p], cpu.planes[k][p]) << "frame " << k << " plane " << p;
  const auto plain = sbtest::run_to_sink(in_, "", BackendChoice::Cuda);
  const auto blurred = sbtest::run_to_sink(in_, "gblur=sigma=4", BackendChoice::Cuda);
  check(sbtest::run_to_sink(in_, "gblur=sigma=4:regions=" + dir_->file("pts.jsonl"), BackendChoice::Cuda), plain,
        blurred, 1);
}

// ---------------------------------------------------------------------------
// Never silently wrong: a regions file that cannot apply, or cannot match
// ---------------------------------------------------------------------------

// An image or plane filtered on its own has no frame index and no pts: a
// regions file there is an error, not a chain that filters nothing.
TEST(RegionsFile, ImageCallsWithoutFrameTimestampsRefuseAFile) {
  TempDir dir;
  const std::string by_frame = dir.file("faces.jsonl"), by_pts = dir.file("pts.jsonl");
  write_file(by_frame, "{\"frame\": 0, \"boxes\": [[0, 0, 32, 24]]}\n{\"frame\": 9, \"boxes\": [[0, 0, 32, 24]]}\n");
  write_file(by_pts, "{\"pts\": 0, \"boxes\": [[0, 0, 32, 24]]}\n{\"pts\": 1, \"boxes\": [[0, 0, 32, 24]]}\n");
  const HostFrame in(AV_PIX_FMT_YUV420P, 64, 48, 3);
  for (const std::string& chain : {"gblur=sigma=2:regions=" + by_frame, "pixelate=regions=" + by_pts + ":block=4"}) {
    const std::string msg = error_of([&] { filtered(in, chain); });
    SCOPED_TRACE(msg);
    EXPECT_ONE_LINE_CONTAINS(msg, "regions=FILE cannot apply here", "needs video frames with timestamps",
                             "an image or plane filtered on its own has neither");
    EXPECT_TRUE(contains(msg, chain.substr(0, chain.find('='))) && (contains(msg, by_frame) || contains(msg, by_pts)));
    EXPECT_FALSE(contains(msg, "--")) << "no CLI flags in the library's messages: " << msg;
  }
  // A frame with an index but no pts, for a file keyed by pts.
  EXPECT_ONE_LINE_CONTAINS(error_of([&] { filtered(in, "gblur=regions=" + by_pts, FrameContext{std::nan(""), 3}); }),
                           "gblur", by_pts.c_str(), "keyed by \"pts\"", "frame 3 has no timestamp");
  // With the key it needs the file applies (the box covers the top-left quarter) ...
  const HostFrame on_frame = filtered(in, "gblur=sigma=2:regions=" + by_frame, FrameContext{std::nan(""), 0});
  const HostFrame on_pts = filtered(in, "gblur=sigma=2:regions=" + by_pts, FrameContext{0.0, -1});
  EXPECT_NE(on_frame.bytes[0], in.bytes[0]);
  EXPECT_EQ(on_pts.bytes[0], on_frame.bytes[0]);
  // ... and box= needs no key.
  EXPECT_NE(filtered(in, "gblur=sigma=2:box=0:0:32:24").bytes[0], in.bytes[0]);
}

namespace {

// 2 s of 30 fps from pts 0, 64x48: what a run knows before its first frame.
RegionVideo two_seconds() {
  RegionVideo v;
  v.width = 64;
  v.height = 48;
  v.frames = 60;
  v.frame_rate = 30;
  v.start_s = v.input_start_s = 0;
  v.end_s = v.input_end_s = 2;
  return v;
}

// regions_never_match for a file of `lines` (one keyframe a line).
std::string never_match(const std::string& lines, const RegionVideo& v, const std::string& extra = "") {
  static int n = 0;
  TempDir dir;
  const std::string path = dir.file("r" + std::to_string(n++) + ".jsonl");
  write_file(path, lines);
  const auto chain = parse_filter_chain("gblur=regions=" + path + extra);
  const std::string msg = regions_never_match(*regions_of(chain[0]), v);
  const std::string prefix = "regions file '" + path + "' does not fit this video: ";
  if (!msg.empty()) EXPECT_EQ(msg.substr(0, prefix.size()), prefix) << msg;
  EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
  return msg.empty() ? msg : msg.substr(prefix.size());
}

const char* const kBox = "[[10, 10, 16, 16]]";
std::string key_line(const char* key, double at, const std::string& boxes = kBox) {
  std::ostringstream s;
  s << "{\"" << key << "\": " << at << ", \"boxes\": " << boxes << "}\n";
  return s.str();
}

}  // namespace

TEST(RegionsNeverMatch, NoBoxesAtAll) {
  EXPECT_EQ(never_match(key_line("frame", 0, "[]") + key_line("frame", 10, "[]") + key_line("frame", 59, "[]"),
                        two_seconds()),
            "none of its 3 keyframes has a box, so it blurs nothing");
  EXPECT_EQ(never_match(key_line("pts", 0, "[]"), two_seconds()), "its keyframe has no box, so it blurs nothing");
  EXPECT_EQ(never_match(key_line("frame", 0) + key_line("frame", 59, "[]"), two_seconds()), "");
}

// Boxes that reach no pixel centre: fractions of the picture instead of pixels.
TEST(RegionsNeverMatch, NoBoxReachesAPixel) {
  const std::string normalised = key_line("frame", 0, "[[0.1, 0.2, 0.1, 0.12]]") +
                                 key_line("frame", 30, "[[0.55, 0.6, 0.2, 0.3], [0.1, 0.1, 0.05, 0.05]]");
  EXPECT_EQ(never_match(normalised, two_seconds()),
            "none of its 3 boxes reaches a pixel of the 64x48 picture (the largest is 0.2x0.3, line 2); boxes are in "
            "luma pixels, not fractions of the picture");
  // A margin or a feather that reaches a pixel centre: the file can blur something.
  EXPECT_EQ(never_match(normalised, two_seconds(), ":feather=1"), "");
  // One real box among them is enough.
  EXPECT_EQ(never_match(normalised + key_line("frame", 40, "[[0, 0, 1, 1]]"), two_seconds()), "");
}

TEST(RegionsNeverMatch, FrameKeysPastTheLastFrame) {
  RegionVideo v = two_seconds();
  v.frames = 9;
  EXPECT_EQ(never_match(key_line("frame", 100) + key_line("frame", 150) + key_line("frame", 200, "[]"), v),
            "its boxes lie on frames 100 to 199 (lines 1 to 2), but the video has 9 frames (0 to 8)");
  // The count is an estimate: one frame past it is left to the run's own count.
  EXPECT_EQ(never_match(key_line("frame", 9), v), "");
  EXPECT_EQ(never_match(key_line("frame", 10), v), "its boxes lie on frames 10 to 10 (line 1), but the video has 9 frames (0 to 8)");
  EXPECT_EQ(never_match(key_line("frame", 8), v), "");
  // A keyframe without boxes before a far one: with interpolation the far
  // box covers the span from frame 1 on (it has no partner), without it not.
  const std::string spread = key_line("frame", 0, "[]") + key_line("frame", 50);
  EXPECT_EQ(never_match(spread, v), "");
  EXPECT_EQ(never_match(spread, v, ":interpolate=0"),
            "its boxes lie on frames 50 to 50 (line 2), but the video has 9 frames (0 to 8)");
  v.frames = 0;  // unknown: nothing to say before the run
  EXPECT_EQ(never_match(key_line("frame", 100), v), "");
}

TEST(RegionsNeverMatch, PtsKeysInMillisecondsOrFrameNumbers) {
  const RegionVideo v = two_seconds();
  std::string ms, frames, seconds;
  for (int i = 0; i <= 4; ++i) ms += key_line("pts", i * 500);
  for (int f : {0, 15, 30, 45, 59}) frames += key_line("pts", f);
  for (int i = 0; i <= 4; ++i) seconds += key_line("pts", i * 0.5);
  EXPECT_EQ(never_match(ms, v),
            "its \"pts\" keys run from 0 to 2000 s, but the video lasts 2 s (pts 0 to 2 s); they look like milliseconds "
            "(2000 ms is 2 s): \"pts\" is in seconds, as ffprobe's pts_time");
  EXPECT_EQ(never_match(frames, v),
            "its \"pts\" keys run from 0 to 59 s, but the video lasts 2 s (pts 0 to 2 s); they look like frame numbers "
            "(frame 59 at 30 fps is at 1.96667 s): \"pts\" is in seconds, as ffprobe's pts_time; frame numbers go in "
            "\"frame\"");
  EXPECT_EQ(never_match(seconds, v), "");
  // A file of whole seconds for the whole input of a run trimmed to its
  // first 2 s (duration): its keys lie within the input, so they are seconds.
  RegionVideo trimmed = v;
  trimmed.input_end_s = 60;
  std::string whole_seconds;
  for (int i = 0; i <= 60; ++i) whole_seconds += key_line("pts", i);
  EXPECT_EQ(never_match(whole_seconds, trimmed), "");
  EXPECT_EQ(never_match(whole_seconds, v).substr(0, 41), "its \"pts\" keys run from 0 to 60 s, but th");
}

TEST(RegionsNeverMatch, PtsKeysOutsideTheFrames) {
  RegionVideo v = two_seconds();
  EXPECT_EQ(never_match(key_line("pts", 2.5) + key_line("pts", 3.5), v),
            "its boxes lie at pts 2.5 to 3.5 s (lines 1 to 2), but the video's frames lie at pts 0 to 1.96667 s");
  EXPECT_EQ(never_match(key_line("pts", 1.9) + key_line("pts", 3.5), v), "");
  // A stream that starts at 1.4 s (MPEG-TS often does) and a file counted from 0.
  v.start_s = v.input_start_s = 1.4;
  v.end_s = v.input_end_s = 3.4;
  EXPECT_EQ(never_match(key_line("pts", 0) + key_line("pts", 1.2) + key_line("pts", 1.3, "[]"), v),
            "its boxes lie at pts 0 to 1.3 s (lines 1 to 2), but the video's frames lie at pts 1.4 to 3.36667 s");
  EXPECT_EQ(never_match(key_line("pts", 0) + key_line("pts", 1.5), v), "");
}

namespace {

// One run of the clip with `chain` into `out` ("": a frame sink), the notes kept.
struct RegionsRun {
  std::string error;
  std::vector<std::string> notes;
  int64_t frames = 0;
  std::string warnings() const {
    std::string w;
    for (const std::string& n : notes)
      if (n.rfind("warning: ", 0) == 0) w += n + "\n";
    return w;
  }
};

RegionsRun run_regions(const std::string& in, const std::string& chain, const std::string& out, bool strict) {
  RegionsRun r;
  PipelineOptions o;
  o.input = in;
  o.filters = chain;
  o.backend = BackendChoice::Cpu;
  o.strict_regions = strict;
  o.note = [&](const std::string& s) { r.notes.push_back(s); };
  if (out.empty()) o.frame_sink = [&](const FrameView&) { ++r.frames; };
  o.output = out;
  o.encoder.codec = "ffv1";
  o.overwrite = true;
  r.error = error_of([&] { r.frames = std::max(r.frames, run_pipeline(o).frames); });
  return r;
}

}  // namespace

// Each kind of file that cannot match the clip (97x55, 9 frames at 25 fps):
// a warning with the numbers and a complete run, or with strict_regions the
// run's error and no output.
TEST_F(RegionsClip, FilesThatCannotMatchWarnOrFailWhenStrict) {
  struct Case {
    std::string name, text, message;
  };
  const std::vector<Case> cases = {
      {"empty.jsonl", "{\"frame\": 0, \"boxes\": []}\n{\"frame\": 8, \"boxes\": []}\n",
       "none of its 2 keyframes has a box, so it blurs nothing"},
      {"late.jsonl", "{\"frame\": 200, \"boxes\": [[10, 20, 16, 14]]}\n{\"frame\": 300, \"boxes\": [[10, 20, 16, 14]]}\n",
       "its boxes lie on frames 200 to 300 (lines 1 to 2), but the video has 9 frames (0 to 8)"},
      {"ms.jsonl", "{\"pts\": 0, \"boxes\": [[10, 20, 16, 14]]}\n{\"pts\": 160, \"boxes\": [[42, 20, 16, 14]]}\n"
                   "{\"pts\": 320, \"boxes\": [[74, 20, 16, 14]]}\n",
       "its \"pts\" keys run from 0 to 320 s, but the video lasts 0.36 s (pts 0 to 0.36 s); they look like "
       "milliseconds (320 ms is 0.32 s)"},
      {"numbers.jsonl", "{\"pts\": 0, \"boxes\": [[10, 20, 16, 14]]}\n{\"pts\": 8, \"boxes\": [[74, 20, 16, 14]]}\n",
       "they look like frame numbers (frame 8 at 25 fps is at 0.32 s)"},
      {"fractions.jsonl", "{\"frame\": 0, \"boxes\": [[0.1, 0.35, 0.2, 0.25]]}\n{\"frame\": 8, \"boxes\": []}\n",
       "its box reaches no pixel of the 97x55 picture (the largest is 0.2x0.25, line 1)"},
  };
  for (const Case& c : cases) {
    const std::string path = dir_->file(c.name), out = dir_->file("out-" + c.name + ".mkv");
    write_file(path, c.text);
    const std::string chain = "gblur=sigma=4:regions=" + path;
    SCOPED_TRACE(c.name);
    const RegionsRun warned = run_regions(in_, chain, out, false);
    ASSERT_EQ(warned.error, "");
    EXPECT_EQ(warned.frames, 9);
    const std::string head = "warning: regions file '" + path + "' does not fit this video: ";
    const std::string warnings = warned.warnings();
    EXPECT_EQ(warnings.substr(0, head.size()), head) << warnings;
    EXPECT_TRUE(contains(warnings, c.message)) << warnings;
    EXPECT_EQ(std::count(warnings.begin(), warnings.end(), '\n'), 1) << "said once: " << warnings;
    EXPECT_TRUE(std::filesystem::exists(out));
    std::filesystem::remove(out);

    const RegionsRun strict = run_regions(in_, chain, out, true);
    const std::string does_not_fit = "regions file '" + path + "' does not fit this video: ";
    EXPECT_ONE_LINE_CONTAINS(strict.error, does_not_fit.c_str(), c.message.c_str(), "; no output written");
    EXPECT_FALSE(std::filesystem::exists(out)) << "a failed run leaves no output";
    EXPECT_EQ(strict.warnings(), "");
  }
}

// A file that passes the checks before the run (the last frame's count is
// an estimate) but whose boxes touched no frame: said at the end, with the
// numbers; strict fails the run before the output is committed.
TEST_F(RegionsClip, NoBoxTouchedAFrameIsSaidAtTheEnd) {
  const std::string path = dir_->file("just_past.jsonl"), out = dir_->file("just_past.mkv");
  write_file(path, "{\"frame\": 9, \"boxes\": [[10, 20, 16, 14]]}\n");
  const std::string chain = "gblur=sigma=4:regions=" + path;
  const std::string msg = "regions file '" + path +
                          "': no box touched any of the 9 frames (frames 0 to 8); its boxes lie on frames 9 to 9 (line 1)";
  const RegionsRun warned = run_regions(in_, chain, out, false);
  ASSERT_EQ(warned.error, "");
  EXPECT_EQ(warned.warnings(), "warning: " + msg + "\n");
  EXPECT_TRUE(std::filesystem::exists(out));
  std::filesystem::remove(out);
  const RegionsRun strict = run_regions(in_, chain, out, true);
  EXPECT_EQ(strict.error, msg + "; no output written");
  EXPECT_FALSE(std::filesystem::exists(out)) << "the end-of-run check fails the run before the commit";
  // With a frame sink (no output file) the same error, without the output's words.
  EXPECT_EQ(run_regions(in_, chain, "", true).error, msg);
  // By pts: boxes just after the last frame (0.32 s) count the frames' pts.
  const std::string late_pts = dir_->file("late_pts.jsonl");
  write_file(late_pts, "{\"pts\": 0.37, \"boxes\": [[10, 20, 16, 14]]}\n");
  EXPECT_EQ(run_regions(in_, "gblur=regions=" + late_pts, "", false).warnings(),
            "warning: regions file '" + late_pts +
                "': no box touched any of the 9 frames (pts 0 to 0.32 s); its boxes lie at pts 0.37 to 0.37 s (line 1)\n");
}

// Files that fit say nothing, strict or not, and their boxes are applied.
TEST_F(RegionsClip, FilesThatFitSayNothing) {
  for (const char* name : {"frames.jsonl", "pts.jsonl"}) {
    const RegionsRun r = run_regions(in_, "gblur=sigma=4:regions=" + dir_->file(name), "", true);
    EXPECT_EQ(r.error, "") << name;
    EXPECT_EQ(r.frames, 9) << name;
    EXPECT_EQ(r.warnings(), "") << name;
  }
  // One box on the last frame only: it touched a frame.
  const std::string last = dir_->file("last.jsonl");
  write_file(last, "{\"frame\": 8, \"boxes\": [[10, 20, 16, 14]]}\n");
  EXPECT_EQ(run_regions(in_, "gblur=regions=" + last, "", true).error, "");
}
