// gblur and boxblur: the registry entries and the Filter classes. On
// subsampled chroma planes sigma and radius shrink by the subsampling of each
// axis (chroma_scale=1, the default) so the blur has the same size on the
// picture as on luma; chroma_scale=0 uses the luma values on every plane.
#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <optional>
#include <sstream>

#include "streamblur/kernels/cpu_blur.hpp"
#include "streamblur/kernels/cuda_blur.hpp"
#include "streamblur/kernels/effects.hpp"
#include "streamblur/kernels/params.hpp"
#include "streamblur/pipeline/filter.hpp"

namespace streamblur {
namespace {

template <class T>
Plane<T> typed(const AnyPlane& p) {
  return Plane<T>(static_cast<T*>(p.data), p.width, p.height, p.pitch, p.channels);
}

// Runs a separable CPU blur over row ranges with TBB; in place is safe
// because the horizontal pass finishes before the vertical one starts.
template <class T, class Tmp, class Op>
void cpu_blur_plane(const Op& op, Plane<T> plane, std::vector<Tmp>& tmp, int vertical_grain) {
  const int S = plane.samples_per_row(), H = plane.height;
  tmp.resize(static_cast<size_t>(S) * H);
  Plane<Tmp> t(tmp.data(), plane.width, H, static_cast<std::ptrdiff_t>(S) * sizeof(Tmp), plane.channels);
  tbb::parallel_for(tbb::blocked_range<int>(0, H, 8), [&](const tbb::blocked_range<int>& r) {
    op.template horizontal_rows<T>(Plane<const T>(plane), t, r.begin(), r.end());
  });
  tbb::parallel_for(tbb::blocked_range<int>(0, H, vertical_grain), [&](const tbb::blocked_range<int>& r) {
    op.template vertical_rows<T>(Plane<const Tmp>(t), plane, r.begin(), r.end());
  });
}

// The box: rows in parallel for the horizontal running sums, then column
// strips in parallel for the vertical ones (each strip slides down the whole
// height, so no part re-sums 2r+1 rows to start, whatever r is).
template <class T>
void cpu_box_plane(const cpu::BoxBlur& op, Plane<T> plane, std::vector<uint32_t>& tmp) {
  const int S = plane.samples_per_row(), H = plane.height;
  tmp.resize(static_cast<size_t>(S) * H);
  Plane<uint32_t> t(tmp.data(), plane.width, H, static_cast<std::ptrdiff_t>(S) * sizeof(uint32_t), plane.channels);
  tbb::parallel_for(tbb::blocked_range<int>(0, H, 8), [&](const tbb::blocked_range<int>& r) {
    op.horizontal_rows<T>(Plane<const T>(plane), t, r.begin(), r.end());
  });
  constexpr int kStrip = 128;  // samples: whole cache lines of sums and output, several SIMD vectors
  const int strips = (S + kStrip - 1) / kStrip;
  tbb::parallel_for(tbb::blocked_range<int>(0, strips), [&](const tbb::blocked_range<int>& r) {
    op.vertical_columns<T>(Plane<const uint32_t>(t), plane, r.begin() * kStrip, std::min(S, r.end() * kStrip));
  });
}

// Device memory of per-plane CUDA blurs.
template <class GpuBlur>
std::size_t sum_device_bytes(const std::array<std::unique_ptr<GpuBlur>, 4>& planes) {
  std::size_t n = 0;
  for (const auto& g : planes)
    if (g) n += g->device_bytes();
  return n;
}

// Per-plane sizes of a blur, after chroma scaling.
struct PlaneParams {
  double sigma_x = 0, sigma_y = 0;
  int radius_x = -1, radius_y = -1;
};

int scale_radius(int radius, int log2) { return radius < 0 ? -1 : static_cast<int>(std::lround(radius / double(1 << log2))); }

// fields=1: each field of an interlaced picture (even lines, odd lines) is
// blurred on its own, so lines of the two fields (two moments in time) are
// never mixed. A field is a view of the plane with twice the pitch and half
// the height, the bottom one starting a line down: the kernels see an
// ordinary plane.
std::array<AnyPlane, 2> field_views(const AnyPlane& d) {
  AnyPlane top = d, bottom = d;
  top.height = (d.height + 1) / 2;
  top.pitch = d.pitch * 2;
  bottom.data = static_cast<unsigned char*>(d.data) + d.pitch;
  bottom.height = d.height / 2;
  bottom.pitch = d.pitch * 2;
  return {top, bottom};
}

class BlurFilterBase : public Filter {
 public:
  explicit BlurFilterBase(std::string name, unsigned planes, bool chroma_scale, bool fields)
      : name_(std::move(name)), planes_(planes), chroma_scale_(chroma_scale), fields_(fields) {}

  void apply(int p, const AnyPlane& d, cudaStream_t stream) final {
    if (!fields_ || d.height < 2) return apply_plane(p, d, stream);
    for (const AnyPlane& field : field_views(d)) apply_plane(p, field, stream);
  }

  void configure(const FrameLayout& layout, Backend backend) override {
    backend_ = backend;
    touched_.fill(false);
    for (int p = 0; p < layout.num_planes; ++p) {
      const PlaneLayout& pl = layout.planes[p];
      const unsigned hit = pl.components & planes_;
      if (!hit) continue;
      if (hit != pl.components && !(pl.components & kCompRGB))
        throw std::invalid_argument(name_ + ": planes selects only part of " + pixel_format_name(layout.format) +
                                    "'s interleaved plane " + std::to_string(p) + "; select both u and v");
      touched_[p] = true;
      const int lw = chroma_scale_ ? pl.log2_chroma_w : 0, lh = chroma_scale_ ? pl.log2_chroma_h : 0;
      // A field has half the lines (the top one the extra line of an odd height).
      PlaneLayout sized = pl;
      if (fields_) sized.height = (pl.height + 1) / 2;
      make_plane(p, lw, lh, sized, layout.bytes_per_sample);
    }
  }
  bool touches(int plane) const override { return touched_[plane]; }
  std::optional<FilterReach> reach(int plane) const override {
    FilterReach r = reach_[plane];
    if (fields_) {  // a field line is every other plane line, and a crop must start on a top-field line
      r.y *= 2;
      r.grid_y *= 2;
    }
    return r;
  }

 protected:
  virtual void make_plane(int p, int lw, int lh, const PlaneLayout& pl, int bytes) = 0;
  // Blurs one plane (or one field of it) in place.
  virtual void apply_plane(int p, const AnyPlane& d, cudaStream_t stream) = 0;
  std::string fields_note() const { return fields_ ? ",fields=1" : ""; }
  std::string name_;
  unsigned planes_;
  bool chroma_scale_;
  bool fields_;
  Backend backend_ = Backend::Cpu;
  std::array<bool, 4> touched_{};
  std::array<FilterReach, 4> reach_{};  // set by make_plane: the kernel radius (or cell grid) per plane
};

// Dispatches a plane (or field) to Derived::run<T> by its sample size, so a
// filter writes one template for both and its plane set-up, nothing else.
template <class Derived>
class TypedFilter : public BlurFilterBase {
 public:
  using BlurFilterBase::BlurFilterBase;

 protected:
  void apply_plane(int p, const AnyPlane& d, cudaStream_t stream) final {
    auto& self = static_cast<Derived&>(*this);
    if (d.bytes_per_sample == 1) self.template run<uint8_t>(p, typed<uint8_t>(d), stream);
    else self.template run<uint16_t>(p, typed<uint16_t>(d), stream);
  }
};

class GaussianFilter final : public TypedFilter<GaussianFilter> {
 public:
  explicit GaussianFilter(const OptionValues& v)
      : TypedFilter("gblur", static_cast<unsigned>(v.at("planes")), v.at("chroma_scale") != 0, v.at("fields") != 0),
        sigma_(v.at("sigma")), sigma_v_(v.at("sigmaV") < 0 ? v.at("sigma") : v.at("sigmaV")),
        radius_(static_cast<int>(v.at("radius"))) {
    if (v.at("sigmaV") >= 0 && v.at("sigmaV") < kMinSigma)
      throw std::invalid_argument("gblur: option 'sigmaV' must be -1 (same as sigma) or in [0.1, 100]");
    gaussian_radius(sigma_, radius_);  // range checks now
  }
  std::string describe() const override {
    std::ostringstream s;
    s << "gblur(sigma=" << sigma_ << ",sigmaV=" << sigma_v_ << ",radius=" << radius_ << fields_note() << ")";
    return s.str();
  }
  template <class T>
  void run(int p, Plane<T> plane, cudaStream_t stream) {
    if (backend_ == Backend::Cuda) gpu_[p]->apply<T>(Plane<const T>(plane), plane, stream);
    else cpu_blur_plane<T>(*cpu_[p], plane, tmp_[p], 8);
  }

 private:
  void make_plane(int p, int lw, int lh, const PlaneLayout& pl, int) override {
    const double sx = std::max(kMinSigma, sigma_ / (1 << lw)), sy = std::max(kMinSigma, sigma_v_ / (1 << lh));
    const int rx = scale_radius(radius_, lw), ry = scale_radius(radius_, lh);
    reach_[p] = {gaussian_radius(sx, rx), gaussian_radius(sy, ry)};
    if (backend_ == Backend::Cuda) {
      gpu_[p] = std::make_unique<cuda::GaussianBlur>(sx, sy, rx, ry);
      gpu_[p]->reserve(pl.width, pl.height, pl.channels);
    } else {
      cpu_[p] = std::make_unique<cpu::GaussianBlur>(sx, sy, rx, ry);
    }
  }
  double sigma_, sigma_v_;
  int radius_;
  std::array<std::unique_ptr<cpu::GaussianBlur>, 4> cpu_;
  std::array<std::unique_ptr<cuda::GaussianBlur>, 4> gpu_;

 public:
  std::size_t device_bytes() const override { return sum_device_bytes(gpu_); }
  std::array<std::vector<float>, 4> tmp_;
};

class BoxFilter final : public TypedFilter<BoxFilter> {
 public:
  explicit BoxFilter(const OptionValues& v)
      : TypedFilter("boxblur", static_cast<unsigned>(v.at("planes")), v.at("chroma_scale") != 0, v.at("fields") != 0),
        radius_(static_cast<int>(v.at("radius"))) {
    check_box_radius(radius_);
  }
  std::string describe() const override { return "boxblur(radius=" + std::to_string(radius_) + fields_note() + ")"; }
  template <class T>
  void run(int p, Plane<T> plane, cudaStream_t stream) {
    if (backend_ == Backend::Cuda) gpu_[p]->apply<T>(Plane<const T>(plane), plane, stream);
    else cpu_box_plane<T>(*cpu_[p], plane, tmp_[p]);
  }

 private:
  void make_plane(int p, int lw, int lh, const PlaneLayout& pl, int) override {
    const int rx = scale_radius(radius_, lw), ry = scale_radius(radius_, lh);
    reach_[p] = {rx, ry};
    if (backend_ == Backend::Cuda) {
      gpu_[p] = std::make_unique<cuda::BoxBlur>(rx, ry);
      gpu_[p]->reserve(pl.width, pl.height, pl.channels);
    } else {
      cpu_[p] = std::make_unique<cpu::BoxBlur>(rx, ry);
    }
  }
  int radius_;
  std::array<std::unique_ptr<cpu::BoxBlur>, 4> cpu_;
  std::array<std::unique_ptr<cuda::BoxBlur>, 4> gpu_;

 public:
  std::size_t device_bytes() const override { return sum_device_bytes(gpu_); }
  std::array<std::vector<uint32_t>, 4> tmp_;
};

// unsharp: src + amount * (src - gaussian(src)); sigma scales on chroma like
// gblur's. threshold is in 8-bit units (x257 on 16-bit planes).
class UnsharpFilter final : public TypedFilter<UnsharpFilter> {
 public:
  explicit UnsharpFilter(const OptionValues& v)
      : TypedFilter("unsharp", static_cast<unsigned>(v.at("planes")), v.at("chroma_scale") != 0, v.at("fields") != 0),
        sigma_(v.at("sigma")), sigma_v_(v.at("sigmaV") < 0 ? v.at("sigma") : v.at("sigmaV")), amount_(v.at("amount")),
        threshold_(v.at("threshold")) {
    UnsharpParams p;
    p.sigma_x = sigma_;
    p.sigma_y = sigma_v_;
    p.amount = amount_;
    p.threshold = threshold_;
    check_unsharp(p);
  }
  std::string describe() const override {
    std::ostringstream s;
    s << "unsharp(sigma=" << sigma_ << ",sigmaV=" << sigma_v_ << ",amount=" << amount_ << ",threshold=" << threshold_
      << fields_note() << ")";
    return s.str();
  }
  template <class T>
  void run(int p, Plane<T> plane, cudaStream_t stream) {
    if (backend_ == Backend::Cuda) return gpu_[p]->apply<T>(plane, stream);
    tmp_[p].resize(static_cast<size_t>(plane.samples_per_row()) * plane.height);
    const cpu::Unsharp& op = *cpu_[p];
    tbb::parallel_for(tbb::blocked_range<int>(0, plane.height, 8), [&](const tbb::blocked_range<int>& r) {
      op.horizontal_rows<T>(Plane<const T>(plane), tmp_[p], r.begin(), r.end());
    });
    tbb::parallel_for(tbb::blocked_range<int>(0, plane.height, 8), [&](const tbb::blocked_range<int>& r) {
      op.combine_rows<T>(tmp_[p], plane, r.begin(), r.end());
    });
  }

 private:
  void make_plane(int p, int lw, int lh, const PlaneLayout& pl, int bytes) override {
    UnsharpParams u;
    u.sigma_x = std::max(kMinSigma, sigma_ / (1 << lw));
    u.sigma_y = std::max(kMinSigma, sigma_v_ / (1 << lh));
    u.amount = amount_;
    u.threshold = threshold_ * (bytes == 2 ? 257.0 : 1.0);
    reach_[p] = {gaussian_radius(u.sigma_x, u.radius_x), gaussian_radius(u.sigma_y, u.radius_y)};
    if (backend_ == Backend::Cuda) {
      gpu_[p] = std::make_unique<cuda::Unsharp>(u);
      gpu_[p]->reserve(pl.width, pl.height, pl.channels);
    } else {
      cpu_[p] = std::make_unique<cpu::Unsharp>(u);
    }
  }
  double sigma_, sigma_v_, amount_, threshold_;
  std::array<std::unique_ptr<cpu::Unsharp>, 4> cpu_;
  std::array<std::unique_ptr<cuda::Unsharp>, 4> gpu_;
  std::array<std::vector<float>, 4> tmp_;

 public:
  std::size_t device_bytes() const override { return sum_device_bytes(gpu_); }
};

// pixelate: block x block_y cells, each the exact mean of its samples; on
// subsampled chroma the cells shrink with the subsampling (chroma_scale=1) so
// they cover the same picture area as on luma.
class PixelateFilter final : public TypedFilter<PixelateFilter> {
 public:
  explicit PixelateFilter(const OptionValues& v)
      : TypedFilter("pixelate", static_cast<unsigned>(v.at("planes")), v.at("chroma_scale") != 0, v.at("fields") != 0),
        block_(static_cast<int>(v.at("block"))),
        block_y_(v.at("block_y") < 0 ? block_ : static_cast<int>(v.at("block_y"))) {
    check_pixelate(block_, block_y_);
  }
  std::string describe() const override {
    return "pixelate(block=" + std::to_string(block_) + ",block_y=" + std::to_string(block_y_) + fields_note() + ")";
  }
  template <class T>
  void run(int p, Plane<T> plane, cudaStream_t stream) {
    if (backend_ == Backend::Cuda) return cuda::pixelate<T>(plane, bx_[p], by_[p], stream);
    tbb::parallel_for(tbb::blocked_range<int>(0, cpu::cell_rows(plane.height, by_[p])),
                      [&](const tbb::blocked_range<int>& r) {
                        cpu::pixelate_cell_rows<T>(plane, bx_[p], by_[p], r.begin(), r.end());
                      });
  }

 private:
  void make_plane(int p, int lw, int lh, const PlaneLayout&, int) override {
    bx_[p] = std::max(1, static_cast<int>(std::lround(block_ / double(1 << lw))));
    by_[p] = std::max(1, static_cast<int>(std::lround(block_y_ / double(1 << lh))));
    reach_[p] = {0, 0, bx_[p], by_[p]};  // whole cells: a crop starts and ends on the grid
  }
  int block_, block_y_;
  std::array<int, 4> bx_{}, by_{};
};

OptionSpec planes_option() {
  return {"planes", "planes to filter: all, letters of 'yuva' or 'rgb', or a plane mask 0..15", OptionType::Planes,
          double(kCompY | kCompU | kCompV | kCompA | kCompRGB), 0, 0};
}
OptionSpec fields_option() {
  return {"fields", "blur each field of interlaced video on its own (even and odd lines apart; sigmaV/radius count "
          "field lines)",
          OptionType::Bool, 0, 0, 1};
}
OptionSpec chroma_scale_option() {
  return {"chroma_scale", "scale sigma/radius by the chroma subsampling so the blur has the same size on the picture",
          OptionType::Bool, 1, 0, 1};
}

}  // namespace

std::vector<FilterInfo> make_blur_filters() {
  std::vector<FilterInfo> r;
  r.push_back({"gblur", "Gaussian blur, w(i) = exp(-i^2/(2 sigma^2)), borders clamped to the edge",
               {{"sigma", "standard deviation in pixels", OptionType::Double, 0.5, kMinSigma, kMaxSigma},
                {"radius", "kernel radius in pixels; -1 = ceil(3 sigma)", OptionType::Int, -1, -1, kMaxGaussRadius},
                {"sigmaV", "vertical sigma; -1 = same as sigma", OptionType::Double, -1, -1, kMaxSigma},
                planes_option(),
                chroma_scale_option(),
                fields_option()},
               [](const OptionValues& v) { return std::make_unique<GaussianFilter>(v); }});
  r.push_back({"boxblur", "mean over a (2r+1)x(2r+1) window, exact integer sums rounded half up, borders clamped",
               {{"radius", "window radius in pixels; 0 = identity", OptionType::Int, 2, 0, kMaxBoxRadius},
                planes_option(),
                chroma_scale_option(),
                fields_option()},
               [](const OptionValues& v) { return std::make_unique<BoxFilter>(v); }});
  r.push_back({"unsharp", "sharpen: src + amount * (src - gblur(src)), rounded half up and clamped; where "
                          "|src - gblur(src)| < threshold the sample is kept",
               {{"sigma", "standard deviation of the blur taken away, in pixels", OptionType::Double, 1.0, kMinSigma,
                 kMaxSigma},
                {"amount", "strength; 0 = identity, negative softens", OptionType::Double, 1.0, -2.0, 10.0},
                {"threshold", "smallest |src - blur| that is sharpened, in 8-bit units (x257 on 16-bit planes)",
                 OptionType::Double, 0, 0, 255},
                {"sigmaV", "vertical sigma; -1 = same as sigma", OptionType::Double, -1, -1, kMaxSigma},
                planes_option(),
                chroma_scale_option(),
                fields_option()},
               [](const OptionValues& v) { return std::make_unique<UnsharpFilter>(v); }});
  r.push_back({"pixelate", "mosaic: each block x block_y cell (grid from the top-left corner, partial cells at the "
                           "right and bottom) becomes the exact mean of its samples, rounded half up",
               {{"block", "cell width (and height) in pixels", OptionType::Int, 16, 1, 4096},
                {"block_y", "cell height; -1 = same as block", OptionType::Int, -1, -1, 4096},
                planes_option(),
                chroma_scale_option(),
                fields_option()},
               [](const OptionValues& v) { return std::make_unique<PixelateFilter>(v); }});
  return r;
}

}  // namespace streamblur
