// gblur, boxblur, unsharp and pixelate: their options structs, registry
// entries (each option row bound to a field) and Filter classes. On
// subsampled chroma planes sigma and radius shrink by the subsampling of each
// axis (chroma_scale=1, the default) so the blur has the same size on the
// picture as on luma; chroma_scale=0 uses the luma values on every plane.
#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <tuple>

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

// The vertical sigma of gblur and unsharp: exactly -1 means "same as sigma"
// (the option's default); any other value is a sigma of its own. The option
// row's range starts at -1 so that the default passes it: values between -1
// and the smallest sigma (-0.5, -1e-300, 0) are refused here.
double vertical_sigma(const char* filter, double sigma, double sigma_v) {
  if (sigma_v == -1) return sigma;
  if (!(sigma_v >= kMinSigma && sigma_v <= kMaxSigma)) {
    std::ostringstream s;
    s << filter << ": option 'sigmaV' must be -1 (same as sigma) or in [" << kMinSigma << ", " << kMaxSigma
      << "], got " << sigma_v;
    throw std::invalid_argument(s.str());
  }
  return sigma_v;
}

// A radius on a plane subsampled by 2^log2 (-1, "from sigma", stays -1).
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

// Options every blur filter has (the rows planes_option(), chroma_scale_option()
// and fields_option() bind them in each filter's own struct).
struct BlurCommonOptions {
  PlaneMask planes;
  bool chroma_scale = true;
  bool fields = false;
};

struct GblurOptions : BlurCommonOptions {
  double sigma = 0;
  int radius = 0;
  double sigma_v = 0;  // -1: same as sigma
};

struct BoxblurOptions : BlurCommonOptions {
  int radius = 0;
};

struct UnsharpOptions : BlurCommonOptions {
  double sigma = 0;
  double amount = 0;
  double threshold = 0;
  double sigma_v = 0;  // -1: same as sigma
};

struct PixelateOptions : BlurCommonOptions {
  int block = 0;
  int block_y = 0;  // -1: same as block
};

class BlurFilterBase : public Filter {
 public:
  BlurFilterBase(std::string name, const BlurCommonOptions& o)
      : name_(std::move(name)), planes_(o.planes.bits), chroma_scale_(o.chroma_scale), fields_(o.fields) {}

  void apply(int p, const AnyPlane& d, cudaStream_t stream) final {
    if (!fields_ || d.height < 2) return apply_plane(p, d, stream);
    for (const AnyPlane& field : field_views(d)) apply_plane(p, field, stream);
  }
  bool filters_into() const final { return !fields_ && plane_filters_into(); }
  void apply_from(int p, const AnyPlane& src, const AnyPlane& dst, cudaStream_t stream) final {
    apply_plane_from(p, src, dst, stream);
  }

  void configure(const FrameLayout& layout, Backend backend) override {
    backend_ = backend;
    sample_shift_ = layout.sample_shift;
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
  // The same kernels on the same planes every frame, and per-plane operation
  // objects (their own weights and scratch), so planes may run side by side.
  bool graph_safe() const final { return true; }
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
  // The same from src into dst, where plane_filters_into().
  virtual bool plane_filters_into() const { return false; }
  virtual void apply_plane_from(int, const AnyPlane&, const AnyPlane&, cudaStream_t) {}
  std::string fields_note() const { return fields_ ? ",fields=1" : ""; }
  std::string name_;
  unsigned planes_;
  bool chroma_scale_;
  bool fields_;
  Backend backend_ = Backend::Cpu;
  int sample_shift_ = 0;  // the layout's (0 unless takes_sample_shift)
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
  void apply_plane_from(int p, const AnyPlane& s, const AnyPlane& d, cudaStream_t stream) final {
    auto& self = static_cast<Derived&>(*this);
    if constexpr (requires(Plane<uint8_t> a) { self.template run_from<uint8_t>(p, a, a, stream); }) {
      if (d.bytes_per_sample == 1) self.template run_from<uint8_t>(p, typed<uint8_t>(s), typed<uint8_t>(d), stream);
      else self.template run_from<uint16_t>(p, typed<uint16_t>(s), typed<uint16_t>(d), stream);
    }
  }
};

// How each pair of plane operations runs, in place, on one plane: the CPU
// one over row bands with TBB (with a scratch plane of Scratch), the CUDA
// one enqueued on the stream.
template <class CpuOp>
struct CpuScratch {
  using type = float;
};
template <>
struct CpuScratch<cpu::BoxBlur> {
  using type = uint32_t;
};

template <class T>
void run_cpu(const cpu::GaussianBlur& op, Plane<T> plane, std::vector<float>& tmp) {
  cpu_blur_plane<T>(op, plane, tmp, 8);
}
template <class T>
void run_cpu(const cpu::BoxBlur& op, Plane<T> plane, std::vector<uint32_t>& tmp) {
  cpu_box_plane<T>(op, plane, tmp);
}
template <class T>
void run_cpu(const cpu::Unsharp& op, Plane<T> plane, std::vector<float>& tmp) {
  tmp.resize(static_cast<size_t>(plane.samples_per_row()) * plane.height);
  tbb::parallel_for(tbb::blocked_range<int>(0, plane.height, 8), [&](const tbb::blocked_range<int>& r) {
    op.horizontal_rows<T>(Plane<const T>(plane), tmp, r.begin(), r.end());
  });
  tbb::parallel_for(tbb::blocked_range<int>(0, plane.height, 8), [&](const tbb::blocked_range<int>& r) {
    op.combine_rows<T>(tmp, plane, r.begin(), r.end());
  });
}

template <class T, class GpuOp>
void run_gpu(GpuOp& op, Plane<T> plane, cudaStream_t stream) {
  op.template apply<T>(Plane<const T>(plane), plane, stream);
}
template <class T>
void run_gpu(cuda::Unsharp& op, Plane<T> plane, cudaStream_t stream) {
  op.apply<T>(plane, stream);
}

// A filter that is one CPU operation and one CUDA operation per plane, both
// built from the same per-plane parameters: this base builds them for the
// backend, dispatches each plane by backend and sample size, and counts their
// device memory. A filter gives only its plane set-up,
// `plane_params(lw, lh, bytes)`: the constructor arguments (a tuple) of both
// operations for a plane with chroma subsampling lw, lh and `bytes` per sample,
// and `plane_reach(params)`: how far the operation reads around a sample.
template <class Derived, class CpuOp, class GpuOp>
class SeparableFilter : public TypedFilter<SeparableFilter<Derived, CpuOp, GpuOp>> {
  using Base = TypedFilter<SeparableFilter<Derived, CpuOp, GpuOp>>;

 public:
  using Base::Base;

  template <class T>
  void run(int p, Plane<T> plane, cudaStream_t stream) {
    if (this->backend_ == Backend::Cuda) run_gpu<T>(*gpu_[p], plane, stream);
    else run_cpu<T>(*cpu_[p], plane, tmp_[p]);
  }
  // CUDA blurs read src and write dst (unsharp works in place only).
  static constexpr bool kGpuInto = !std::is_same_v<GpuOp, cuda::Unsharp>;
  template <class T>
  void run_from(int p, Plane<T> src, Plane<T> dst, cudaStream_t stream) {
    if constexpr (kGpuInto) gpu_[p]->template apply<T>(Plane<const T>(src), dst, stream);
  }
  std::size_t device_bytes() const override { return sum_device_bytes(gpu_); }
  // The CUDA Gaussian and box take P010's shift in their kernels.
  static constexpr bool kGpuShift = requires(GpuOp& op) { op.set_sample_shift(0); };
  bool takes_sample_shift(Backend backend) const override { return kGpuShift && backend == Backend::Cuda; }

 private:
  void make_plane(int p, int lw, int lh, const PlaneLayout& pl, int bytes) final {
    const auto& self = static_cast<const Derived&>(*this);
    const auto params = self.plane_params(lw, lh, bytes);
    this->reach_[p] = self.plane_reach(params);  // for region limits: how far the operation reads
    if (this->backend_ == Backend::Cuda) {
      gpu_[p] = std::apply([](const auto&... a) { return std::make_unique<GpuOp>(a...); }, params);
      gpu_[p]->reserve(pl.width, pl.height, pl.channels);
      if constexpr (kGpuShift) gpu_[p]->set_sample_shift(this->sample_shift_);
    } else {
      cpu_[p] = std::apply([](const auto&... a) { return std::make_unique<CpuOp>(a...); }, params);
    }
  }
  bool plane_filters_into() const final { return kGpuInto && this->backend_ == Backend::Cuda; }
  std::array<std::unique_ptr<CpuOp>, 4> cpu_;
  std::array<std::unique_ptr<GpuOp>, 4> gpu_;
  std::array<std::vector<typename CpuScratch<CpuOp>::type>, 4> tmp_;
};

class GaussianFilter final : public SeparableFilter<GaussianFilter, cpu::GaussianBlur, cuda::GaussianBlur> {
 public:
  explicit GaussianFilter(const GblurOptions& o)
      : SeparableFilter("gblur", o), sigma_(o.sigma), sigma_v_(vertical_sigma("gblur", o.sigma, o.sigma_v)),
        radius_(o.radius) {
    gaussian_radius(sigma_, radius_);  // range checks now
  }
  std::string describe() const override {
    std::ostringstream s;
    s << "gblur(sigma=" << sigma_ << ",sigmaV=" << sigma_v_ << ",radius=" << radius_ << fields_note() << ")";
    return s.str();
  }
  std::tuple<double, double, int, int> plane_params(int lw, int lh, int) const {
    return {std::max(kMinSigma, sigma_ / (1 << lw)), std::max(kMinSigma, sigma_v_ / (1 << lh)),
            scale_radius(radius_, lw), scale_radius(radius_, lh)};
  }
  static FilterReach plane_reach(const std::tuple<double, double, int, int>& t) {
    return {gaussian_radius(std::get<0>(t), std::get<2>(t)), gaussian_radius(std::get<1>(t), std::get<3>(t))};
  }

 private:
  double sigma_, sigma_v_;
  int radius_;
};

class BoxFilter final : public SeparableFilter<BoxFilter, cpu::BoxBlur, cuda::BoxBlur> {
 public:
  explicit BoxFilter(const BoxblurOptions& o) : SeparableFilter("boxblur", o), radius_(o.radius) {
    check_box_radius(radius_);
  }
  std::string describe() const override { return "boxblur(radius=" + std::to_string(radius_) + fields_note() + ")"; }
  std::tuple<int, int> plane_params(int lw, int lh, int) const {
    return {scale_radius(radius_, lw), scale_radius(radius_, lh)};
  }
  static FilterReach plane_reach(const std::tuple<int, int>& t) { return {std::get<0>(t), std::get<1>(t)}; }

 private:
  int radius_;
};

// unsharp: src + amount * (src - gaussian(src)); sigma scales on chroma like
// gblur's. threshold is in 8-bit units (x257 on 16-bit planes).
class UnsharpFilter final : public SeparableFilter<UnsharpFilter, cpu::Unsharp, cuda::Unsharp> {
 public:
  explicit UnsharpFilter(const UnsharpOptions& o)
      : SeparableFilter("unsharp", o), sigma_(o.sigma), sigma_v_(vertical_sigma("unsharp", o.sigma, o.sigma_v)),
        amount_(o.amount), threshold_(o.threshold) {
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
  std::tuple<UnsharpParams> plane_params(int lw, int lh, int bytes) const {
    UnsharpParams u;
    u.sigma_x = std::max(kMinSigma, sigma_ / (1 << lw));
    u.sigma_y = std::max(kMinSigma, sigma_v_ / (1 << lh));
    u.amount = amount_;
    u.threshold = threshold_ * (bytes == 2 ? 257.0 : 1.0);
    return {u};
  }
  static FilterReach plane_reach(const std::tuple<UnsharpParams>& t) {
    const UnsharpParams& u = std::get<0>(t);
    return {gaussian_radius(u.sigma_x, u.radius_x), gaussian_radius(u.sigma_y, u.radius_y)};
  }

 private:
  double sigma_, sigma_v_, amount_, threshold_;
};

// pixelate: block x block_y cells, each the exact mean of its samples; on
// subsampled chroma the cells shrink with the subsampling (chroma_scale=1) so
// they cover the same picture area as on luma. Not separable: no operation
// objects, the cell sizes are its plane set-up.
class PixelateFilter final : public TypedFilter<PixelateFilter> {
 public:
  explicit PixelateFilter(const PixelateOptions& o)
      : TypedFilter("pixelate", o), block_(o.block), block_y_(o.block_y < 0 ? block_ : o.block_y) {
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

// The rows every blur filter has, bound in its own options struct.
template <class O>
OptionRow<O> planes_option() {
  return OptionSpec::bind<O, PlaneMask>(&O::planes, "planes",
                                        "planes to filter: all, letters of 'yuva' or 'rgb', or a plane mask 0..15",
                                        double(kCompY | kCompU | kCompV | kCompA | kCompRGB), 0, 0);
}
template <class O>
OptionRow<O> fields_option() {
  return OptionSpec::bind<O, bool>(&O::fields, "fields",
                                   "blur each field of interlaced video on its own (even and odd lines apart; "
                                   "sigmaV/radius count field lines)",
                                   0, 0, 1);
}
template <class O>
OptionRow<O> chroma_scale_option() {
  return OptionSpec::bind<O, bool>(
      &O::chroma_scale, "chroma_scale",
      "scale sigma/radius by the chroma subsampling so the blur has the same size on the picture", 1, 0, 1);
}

}  // namespace

std::vector<FilterInfo> make_blur_filters() {
  using B = OptionSpec;
  std::vector<FilterInfo> r;
  r.push_back(FilterInfo::make<GblurOptions>(
      "gblur", "Gaussian blur, w(i) = exp(-i^2/(2 sigma^2)), borders clamped to the edge",
      {B::bind(&GblurOptions::sigma, "sigma", "standard deviation in pixels", 0.5, kMinSigma, kMaxSigma),
       B::bind(&GblurOptions::radius, "radius", "kernel radius in pixels; -1 = ceil(3 sigma)", -1, -1,
               kMaxGaussRadius),
       B::bind(&GblurOptions::sigma_v, "sigmaV", "vertical sigma; -1 = same as sigma", -1, -1, kMaxSigma),
       planes_option<GblurOptions>(), chroma_scale_option<GblurOptions>(), fields_option<GblurOptions>()},
      [](const GblurOptions& o) { return std::make_unique<GaussianFilter>(o); }));
  r.push_back(FilterInfo::make<BoxblurOptions>(
      "boxblur", "mean over a (2r+1)x(2r+1) window, exact integer sums rounded half up, borders clamped",
      {B::bind(&BoxblurOptions::radius, "radius", "window radius in pixels; 0 = identity", 2, 0, kMaxBoxRadius),
       planes_option<BoxblurOptions>(), chroma_scale_option<BoxblurOptions>(), fields_option<BoxblurOptions>()},
      [](const BoxblurOptions& o) { return std::make_unique<BoxFilter>(o); }));
  r.push_back(FilterInfo::make<UnsharpOptions>(
      "unsharp",
      "sharpen: src + amount * (src - gblur(src)), rounded half up and clamped; where |src - gblur(src)| < "
      "threshold the sample is kept",
      {B::bind(&UnsharpOptions::sigma, "sigma", "standard deviation of the blur taken away, in pixels", 1.0,
               kMinSigma, kMaxSigma),
       B::bind(&UnsharpOptions::amount, "amount", "strength; 0 = identity, negative softens", 1.0, -2.0, 10.0),
       B::bind(&UnsharpOptions::threshold, "threshold",
               "smallest |src - blur| that is sharpened, in 8-bit units (x257 on 16-bit planes)", 0, 0, 255),
       B::bind(&UnsharpOptions::sigma_v, "sigmaV", "vertical sigma; -1 = same as sigma", -1, -1, kMaxSigma),
       planes_option<UnsharpOptions>(), chroma_scale_option<UnsharpOptions>(), fields_option<UnsharpOptions>()},
      [](const UnsharpOptions& o) { return std::make_unique<UnsharpFilter>(o); }));
  r.push_back(FilterInfo::make<PixelateOptions>(
      "pixelate",
      "mosaic: each block x block_y cell (grid from the top-left corner, partial cells at the right and bottom) "
      "becomes the exact mean of its samples, rounded half up",
      {B::bind(&PixelateOptions::block, "block", "cell width (and height) in pixels", 16, 1, 4096),
       B::bind(&PixelateOptions::block_y, "block_y", "cell height; -1 = same as block", -1, -1, 4096),
       planes_option<PixelateOptions>(), chroma_scale_option<PixelateOptions>(), fields_option<PixelateOptions>()},
      [](const PixelateOptions& o) { return std::make_unique<PixelateFilter>(o); }));
  return r;
}

}  // namespace streamblur
