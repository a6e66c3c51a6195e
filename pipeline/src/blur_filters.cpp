// gblur, boxblur, unsharp and pixelate: their options structs, registry
// entries (each option row bound to a field) and Filter classes.
//
// gblur, boxblur and unsharp share their names with FFmpeg's filters, so a
// spec written for FFmpeg means what it means there: FFmpeg's option names
// and short names, its positional order, its defaults, its values in each
// plane's own pixels (docs/filters.md, "FFmpeg compatibility"). streamblur's
// own options come after FFmpeg's, by name only; chroma_scale=1 divides
// sizes on subsampled chroma by the subsampling, so the blur has the same
// size on the picture as on luma (pixelate's default; gblur's is FFmpeg's 0).
#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <tuple>

#include "streamblur/config.hpp"
#include "streamblur/kernels/cpu_blur.hpp"
#if STREAMBLUR_HAVE_CUDA
#include "streamblur/kernels/cuda_blur.hpp"
#endif
#include "streamblur/kernels/effects.hpp"
#include "streamblur/kernels/params.hpp"
#include "streamblur/pipeline/filter.hpp"

namespace streamblur {
namespace {

// Each separable filter's device operation (one per plane).
#if STREAMBLUR_HAVE_CUDA
using GpuGaussian = cuda::GaussianBlur;
using GpuBox = cuda::BoxBlur;
using GpuUnsharp = cuda::Unsharp;
#else
// Without the CUDA backend there is none: FilterChain::configure refuses
// Backend::Cuda, so no filter makes one.
struct NoDeviceOp {
  template <class... Args>
  explicit NoDeviceOp(const Args&...) { throw std::logic_error(kNoCudaBackend); }
  void reserve(int, int, int) {}
  template <class T> void apply(Plane<const T>, Plane<T>, DeviceStream) {}
  std::size_t device_bytes() const { return 0; }
};
using GpuGaussian = NoDeviceOp;
using GpuBox = NoDeviceOp;
using GpuUnsharp = NoDeviceOp;
#endif

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
// and fields_option() bind them in each filter's own struct), and the names
// of the options the text gave (FilterInfo::make fills it).
struct BlurCommonOptions {
  PlaneMask planes;
  bool chroma_scale = true;
  bool fields = false;
  GivenOptions given;
  bool has(const char* name) const { return given.count(name) > 0; }
};

// gblur: FFmpeg's options (sigma, steps, planes, sigmaV, in its order), then
// streamblur's radius. steps is FFmpeg's count of IIR passes, an accuracy
// setting of its approximation: the blur here is the exact Gaussian.
struct GblurOptions : BlurCommonOptions {
  double sigma = 0;
  int steps = 1;
  int radius = 0;
  double sigma_v = 0;  // -1: same as sigma
};

// boxblur: FFmpeg's radius and power (passes) for luma, chroma and alpha,
// in its order (-1: luma's), or streamblur's radius= (one pass, chroma
// scaled by chroma_scale) instead of them.
struct BoxblurOptions : BlurCommonOptions {
  int luma_radius = 2, luma_power = 2, chroma_radius = -1, chroma_power = -1, alpha_radius = -1, alpha_power = -1;
  int radius = -1;  // -1: FFmpeg's per-plane options
};

// unsharp: FFmpeg's matrix sizes and amounts for luma, chroma and alpha, in
// its order, or streamblur's sigma/amount/threshold/sigmaV instead of them.
struct UnsharpOptions : BlurCommonOptions {
  int lx = 5, ly = 5, cx = 5, cy = 5, ax = 5, ay = 5;
  double la = 1, ca = 0, aa = 0;
  double sigma = 0;  // -1: FFmpeg's matrix sizes
  double amount = 0;
  double threshold = 0;
  double sigma_v = 0;  // -1: same as sigma
};

struct PixelateOptions : BlurCommonOptions {
  int block = 0;
  int block_y = 0;  // -1: same as block
};

// FFmpeg's blur filters take one set of values for luma (and the colours of
// RGB), one for chroma and one for alpha: the set for the components `hit`
// of one plane. An interleaved plane whose components would take different
// sets (RGBA's colours and alpha) is refused, and so are chroma values given
// for RGB, which has no chroma (FFmpeg would apply them to gbrp's B and R).
template <class V>
V plane_class_value(const std::string& filter, unsigned hit, const V& luma, const V& chroma, const V& alpha,
                    bool chroma_given) {
  std::optional<V> v;
  auto take = [&](const V& x, const char* what) {
    if (v && !(*v == x))
      throw std::invalid_argument(filter + ": one interleaved plane holds components that take different values (" +
                                  what + "'s and luma's); give them the same, or pick components with planes=");
    v = x;
  };
  if (hit & (kCompY | kCompRGB)) take(luma, "luma");
  if (hit & (kCompU | kCompV)) take(chroma, "chroma");
  if (hit & kCompA) take(alpha, "alpha");
  if ((hit & kCompRGB) && chroma_given && !(chroma == luma))
    throw std::invalid_argument(filter + ": RGB has no chroma planes, so the chroma options cannot apply as given "
                                         "(the colours take luma's); give luma's options only");
  return *v;
}

// FFmpeg's unsharp blurs with an msize-tap binomial kernel ((msize - 1) / 2
// passes of [1 2 1] / 4), whose variance is (msize - 1) / 4. The sampled
// Gaussian of the same radius with that variance: its sigma, by bisection.
double binomial_sigma(int msize) {
  const int r = (msize - 1) / 2;
  const double target = (msize - 1) / 4.0;
  auto variance = [r](double sigma) {
    double sum = 0, moment = 0;
    for (int i = -r; i <= r; ++i) {
      const double w = std::exp(-i * i / (2 * sigma * sigma));
      sum += w;
      moment += w * i * i;
    }
    return moment / sum;
  };
  double lo = kMinSigma, hi = 4.0 * r + 1;
  for (int k = 0; k < 100; ++k) {
    const double mid = (lo + hi) / 2;
    (variance(mid) < target ? lo : hi) = mid;
  }
  return (lo + hi) / 2;
}

class BlurFilterBase : public Filter {
 public:
  BlurFilterBase(std::string name, const BlurCommonOptions& o)
      : name_(std::move(name)), planes_(o.planes.bits), chroma_scale_(o.chroma_scale), fields_(o.fields) {}

  void apply(int p, const AnyPlane& d, DeviceStream stream) final {
    if (!fields_ || d.height < 2) return apply_plane(p, d, stream);
    for (const AnyPlane& field : field_views(d)) apply_plane(p, field, stream);
  }
  FilterCapabilities capabilities(Backend backend) const final {
    FilterCapabilities c;
    c.filters_into = !fields_ && plane_filters_into(backend);
    // The same kernels on the same planes every frame, and per-plane operation
    // objects (their own weights and scratch), so planes may run side by side.
    c.graph_safe = true;
    c.takes_sample_shift = takes_sample_shift(backend);
    return c;
  }
  void apply_from(int p, const AnyPlane& src, const AnyPlane& dst, DeviceStream stream) final {
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
      if (!make_plane(p, lw, lh, sized, hit, layout.bytes_per_sample)) touched_[p] = false;
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
  // Sets plane p up for its selected components `hit`; false: the filter
  // leaves the plane as it is (FFmpeg's power or amount 0).
  virtual bool make_plane(int p, int lw, int lh, const PlaneLayout& pl, unsigned hit, int bytes) = 0;
  // Blurs one plane (or one field of it) in place.
  virtual void apply_plane(int p, const AnyPlane& d, DeviceStream stream) = 0;
  // The same from src into dst, where plane_filters_into(backend).
  virtual bool plane_filters_into(Backend) const { return false; }
  // FilterCapabilities::takes_sample_shift.
  virtual bool takes_sample_shift(Backend) const { return false; }
  virtual void apply_plane_from(int, const AnyPlane&, const AnyPlane&, DeviceStream) {}
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
  void apply_plane(int p, const AnyPlane& d, DeviceStream stream) final {
    auto& self = static_cast<Derived&>(*this);
    if (d.bytes_per_sample == 1) self.template run<uint8_t>(p, typed<uint8_t>(d), stream);
    else self.template run<uint16_t>(p, typed<uint16_t>(d), stream);
  }
  void apply_plane_from(int p, const AnyPlane& s, const AnyPlane& d, DeviceStream stream) final {
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
void run_gpu(GpuOp& op, Plane<T> plane, DeviceStream stream) {
  op.template apply<T>(Plane<const T>(plane), plane, stream);
}
#if STREAMBLUR_HAVE_CUDA
template <class T>
void run_gpu(cuda::Unsharp& op, Plane<T> plane, DeviceStream stream) {
  op.apply<T>(plane, stream);
}
#endif

// A filter that is one CPU operation and one CUDA operation per plane, both
// built from the same per-plane parameters: this base builds them for the
// backend, dispatches each plane by backend and sample size, and counts their
// device memory. A filter gives only its plane set-up,
// `plane_params(lw, lh, bytes, hit)`: the constructor arguments (a tuple) of
// both operations for a plane with chroma subsampling lw, lh, `bytes` per
// sample and the selected components `hit`; `plane_passes(hit)`: how many
// times the operation runs on it (0: the plane is left alone); and
// `plane_reach(params)`: how far the operation reads around a sample.
template <class Derived, class CpuOp, class GpuOp>
class SeparableFilter : public TypedFilter<SeparableFilter<Derived, CpuOp, GpuOp>> {
  using Base = TypedFilter<SeparableFilter<Derived, CpuOp, GpuOp>>;

 public:
  using Base::Base;

  // Each plane passes_[p] times (boxblur's power; 1 for the others).
  template <class T>
  void run(int p, Plane<T> plane, DeviceStream stream) {
    for (int k = 0; k < passes_[p]; ++k) {
      if (this->backend_ == Backend::Cuda) run_gpu<T>(*gpu_[p], plane, stream);
      else run_cpu<T>(*cpu_[p], plane, tmp_[p]);
    }
  }
  // CUDA blurs read src and write dst (unsharp works in place only); further
  // passes run in place on dst.
  static constexpr bool kGpuInto = !std::is_same_v<GpuOp, GpuUnsharp>;
  template <class T>
  void run_from(int p, Plane<T> src, Plane<T> dst, DeviceStream stream) {
    if constexpr (kGpuInto) {
      gpu_[p]->template apply<T>(Plane<const T>(src), dst, stream);
      for (int k = 1; k < passes_[p]; ++k) gpu_[p]->template apply<T>(Plane<const T>(dst), dst, stream);
    }
  }
  std::size_t device_bytes() const override { return sum_device_bytes(gpu_); }
  // The CUDA Gaussian and box take P010's shift in their kernels.
  static constexpr bool kGpuShift = requires(GpuOp& op) { op.set_sample_shift(0); };
  bool takes_sample_shift(Backend backend) const final { return kGpuShift && backend == Backend::Cuda; }

 private:
  bool make_plane(int p, int lw, int lh, const PlaneLayout& pl, unsigned hit, int bytes) final {
    const auto& self = static_cast<const Derived&>(*this);
    passes_[p] = self.plane_passes(hit);
    if (passes_[p] == 0) return false;
    const auto params = self.plane_params(lw, lh, bytes, hit);
    this->reach_[p] = self.plane_reach(params);  // for region limits: how far the operation reads
    this->reach_[p].x *= passes_[p];
    this->reach_[p].y *= passes_[p];
    if (this->backend_ == Backend::Cuda) {
      gpu_[p] = std::apply([](const auto&... a) { return std::make_unique<GpuOp>(a...); }, params);
      gpu_[p]->reserve(pl.width, pl.height, pl.channels);
      if constexpr (kGpuShift) gpu_[p]->set_sample_shift(this->sample_shift_);
    } else {
      cpu_[p] = std::apply([](const auto&... a) { return std::make_unique<CpuOp>(a...); }, params);
    }
    return true;
  }
  bool plane_filters_into(Backend backend) const final { return kGpuInto && backend == Backend::Cuda; }
  std::array<std::unique_ptr<CpuOp>, 4> cpu_;
  std::array<std::unique_ptr<GpuOp>, 4> gpu_;
  std::array<std::vector<typename CpuScratch<CpuOp>::type>, 4> tmp_;
  std::array<int, 4> passes_{1, 1, 1, 1};
};

class GaussianFilter final : public SeparableFilter<GaussianFilter, cpu::GaussianBlur, GpuGaussian> {
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
  int plane_passes(unsigned) const { return 1; }
  std::tuple<double, double, int, int> plane_params(int lw, int lh, int, unsigned) const {
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

// boxblur: with radius= one (2r+1) mean on every plane, chroma scaled by
// chroma_scale; otherwise FFmpeg's: each plane class (luma, chroma, alpha)
// its own radius, in its own pixels, and power (passes), chroma's and
// alpha's defaulting to luma's.
class BoxFilter final : public SeparableFilter<BoxFilter, cpu::BoxBlur, GpuBox> {
 public:
  struct Class {
    int radius = 0, power = 0;
    bool operator==(const Class&) const = default;
  };
  explicit BoxFilter(const BoxblurOptions& o) : SeparableFilter("boxblur", o), radius_(o.radius) {
    static const char* const kFfmpeg[] = {"luma_radius", "luma_power", "chroma_radius", "chroma_power",
                                          "alpha_radius", "alpha_power"};
    const bool ffmpeg = std::any_of(std::begin(kFfmpeg), std::end(kFfmpeg), [&](const char* n) { return o.has(n); });
    if (o.has("radius") && ffmpeg)
      throw std::invalid_argument("boxblur: radius (one window on every plane) and FFmpeg's luma_radius, "
                                  "luma_power, chroma_* and alpha_* exclude each other; give one or the other");
    if (!o.has("radius") && o.has("chroma_scale"))
      throw std::invalid_argument("boxblur: chroma_scale goes with radius; FFmpeg's chroma_radius is in chroma "
                                  "pixels (give it, or radius=N:chroma_scale=...)");
    luma_ = {o.luma_radius, o.luma_power};
    chroma_ = {o.chroma_radius < 0 ? luma_.radius : o.chroma_radius, o.chroma_power < 0 ? luma_.power : o.chroma_power};
    alpha_ = {o.alpha_radius < 0 ? luma_.radius : o.alpha_radius, o.alpha_power < 0 ? luma_.power : o.alpha_power};
    chroma_given_ = o.has("chroma_radius") || o.has("chroma_power");
    for (const Class& c : {luma_, chroma_, alpha_}) check_box_radius(c.radius);
    if (radius_ >= 0) check_box_radius(radius_);
  }
  std::string describe() const override {
    if (radius_ >= 0) return "boxblur(radius=" + std::to_string(radius_) + fields_note() + ")";
    auto c = [](const Class& k) { return std::to_string(k.radius) + "x" + std::to_string(k.power); };
    return "boxblur(luma=" + c(luma_) + ",chroma=" + c(chroma_) + ",alpha=" + c(alpha_) + fields_note() + ")";
  }
  int plane_passes(unsigned hit) const {
    if (radius_ >= 0) return 1;
    const Class c = plane_class_value(name_, hit, luma_, chroma_, alpha_, chroma_given_);
    return c.radius == 0 ? 0 : c.power;
  }
  std::tuple<int, int> plane_params(int lw, int lh, int, unsigned hit) const {
    if (radius_ >= 0) return {scale_radius(radius_, lw), scale_radius(radius_, lh)};
    const int r = plane_class_value(name_, hit, luma_, chroma_, alpha_, chroma_given_).radius;
    return {r, r};
  }
  static FilterReach plane_reach(const std::tuple<int, int>& t) { return {std::get<0>(t), std::get<1>(t)}; }

 private:
  int radius_;
  Class luma_, chroma_, alpha_;
  bool chroma_given_ = false;
};

// unsharp: src + amount * (src - blur(src)), rounded half up and clamped.
// With sigma/amount/threshold/sigmaV (streamblur's) the blur is that
// Gaussian on every plane, sigma scaled on chroma like gblur's; otherwise
// FFmpeg's: each plane class its matrix size (in its own pixels) and amount,
// the blur the Gaussian with the variance of FFmpeg's binomial matrix.
// threshold is in 8-bit units (x257 on 16-bit planes).
class UnsharpFilter final : public SeparableFilter<UnsharpFilter, cpu::Unsharp, GpuUnsharp> {
 public:
  struct Class {
    int mx = 5, my = 5;
    double amount = 0;
    bool operator==(const Class&) const = default;
  };
  explicit UnsharpFilter(const UnsharpOptions& o);
  std::string describe() const override {
    std::ostringstream s;
    if (gaussian_) {
      s << "unsharp(sigma=" << sigma_ << ",sigmaV=" << sigma_v_ << ",amount=" << amount_ << ",threshold=" << threshold_
        << fields_note() << ")";
    } else {
      auto c = [&](const char* n, const Class& k) { s << n << "=" << k.mx << "x" << k.my << ":" << k.amount; };
      s << "unsharp(";
      c("luma", luma_);
      c(",chroma", chroma_);
      c(",alpha", alpha_);
      s << fields_note() << ")";
    }
    return s.str();
  }
  int plane_passes(unsigned hit) const {
    return gaussian_ || plane_class_value(name_, hit, luma_, chroma_, alpha_, chroma_given_).amount != 0 ? 1 : 0;
  }
  std::tuple<UnsharpParams> plane_params(int lw, int lh, int bytes, unsigned hit) const {
    UnsharpParams u;
    if (gaussian_) {
      u.sigma_x = std::max(kMinSigma, sigma_ / (1 << lw));
      u.sigma_y = std::max(kMinSigma, sigma_v_ / (1 << lh));
      u.amount = amount_;
      u.threshold = threshold_ * (bytes == 2 ? 257.0 : 1.0);
      return {u};
    }
    const Class c = plane_class_value(name_, hit, luma_, chroma_, alpha_, chroma_given_);
    u.radius_x = (c.mx - 1) / 2;
    u.radius_y = (c.my - 1) / 2;
    u.sigma_x = binomial_sigma(c.mx);
    u.sigma_y = binomial_sigma(c.my);
    u.amount = c.amount;
    return {u};
  }
  static FilterReach plane_reach(const std::tuple<UnsharpParams>& t) {
    const UnsharpParams& u = std::get<0>(t);
    return {gaussian_radius(u.sigma_x, u.radius_x), gaussian_radius(u.sigma_y, u.radius_y)};
  }

 private:
  bool gaussian_ = false;
  double sigma_ = 1, sigma_v_ = 1, amount_ = 1, threshold_ = 0;
  Class luma_, chroma_, alpha_;
  bool chroma_given_ = false;
};

UnsharpFilter::UnsharpFilter(const UnsharpOptions& o) : SeparableFilter("unsharp", o) {
  static const char* const kOwn[] = {"sigma", "amount", "threshold", "sigmaV", "chroma_scale"};
  static const char* const kFfmpeg[] = {"luma_msize_x", "luma_msize_y", "luma_amount", "chroma_msize_x",
                                        "chroma_msize_y", "chroma_amount", "alpha_msize_x", "alpha_msize_y",
                                        "alpha_amount"};
  auto any = [&](const auto& names) { return std::any_of(std::begin(names), std::end(names), [&](const char* n) { return o.has(n); }); };
  gaussian_ = any(kOwn);
  if (gaussian_ && any(kFfmpeg))
    throw std::invalid_argument("unsharp: streamblur's sigma, amount, threshold, sigmaV and chroma_scale and "
                                "FFmpeg's luma_*, chroma_* and alpha_* matrix options exclude each other; give "
                                "one set or the other");
  if (gaussian_) {
    sigma_ = o.has("sigma") ? o.sigma : 1.0;
    if (!(sigma_ >= kMinSigma)) {
      std::ostringstream m;
      m << "unsharp: option 'sigma' must be in [" << kMinSigma << ", " << kMaxSigma << "], got " << sigma_;
      throw std::invalid_argument(m.str());
    }
    sigma_v_ = vertical_sigma("unsharp", sigma_, o.sigma_v);
    amount_ = o.amount;
    threshold_ = o.threshold;
    UnsharpParams p;
    p.sigma_x = sigma_;
    p.sigma_y = sigma_v_;
    p.amount = amount_;
    p.threshold = threshold_;
    check_unsharp(p);
    return;
  }
  luma_ = {o.lx, o.ly, o.la};
  chroma_ = {o.cx, o.cy, o.ca};
  alpha_ = {o.ax, o.ay, o.aa};
  chroma_given_ = o.has("chroma_msize_x") || o.has("chroma_msize_y") || o.has("chroma_amount");
  const std::pair<const char*, int> sizes[] = {{"luma_msize_x", o.lx},   {"luma_msize_y", o.ly},
                                               {"chroma_msize_x", o.cx}, {"chroma_msize_y", o.cy},
                                               {"alpha_msize_x", o.ax},  {"alpha_msize_y", o.ay}};
  for (const auto& [name, v] : sizes)
    if (v % 2 == 0)
      throw std::invalid_argument(std::string("unsharp: option '") + name + "' must be odd (3 to 23), got " +
                                  std::to_string(v));
}

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
  void run(int p, Plane<T> plane, DeviceStream stream) {
#if STREAMBLUR_HAVE_CUDA
    if (backend_ == Backend::Cuda) return cuda::pixelate<T>(plane, bx_[p], by_[p], stream);
#endif
    (void)stream;
    tbb::parallel_for(tbb::blocked_range<int>(0, cpu::cell_rows(plane.height, by_[p])),
                      [&](const tbb::blocked_range<int>& r) {
                        cpu::pixelate_cell_rows<T>(plane, bx_[p], by_[p], r.begin(), r.end());
                      });
  }

 private:
  bool make_plane(int p, int lw, int lh, const PlaneLayout&, unsigned, int) override {
    bx_[p] = std::max(1, static_cast<int>(std::lround(block_ / double(1 << lw))));
    by_[p] = std::max(1, static_cast<int>(std::lround(block_y_ / double(1 << lh))));
    reach_[p] = {0, 0, bx_[p], by_[p]};  // whole cells: a crop starts and ends on the grid
    return true;
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
                                   "vertical sizes count field lines)",
                                   0, 0, 1)
      .named_only();
}
template <class O>
OptionRow<O> chroma_scale_option(double default_value, const char* help) {
  return OptionSpec::bind<O, bool>(&O::chroma_scale, "chroma_scale", help, default_value, 0, 1).named_only();
}

FilterInfo gblur_info() {
  using B = OptionSpec;
  using O = GblurOptions;
  return FilterInfo::make<O>(
      "gblur", "Gaussian blur, w(i) = exp(-i^2/(2 sigma^2)), borders clamped to the edge",
      {B::bind(&O::sigma, "sigma", "standard deviation in pixels (of each plane, as FFmpeg's)", 0.5, kMinSigma,
               kMaxSigma),
       B::bind(&O::steps, "steps",
               "FFmpeg's number of passes of its approximation; the blur here is exact, whatever the value", 1, 1,
               6),
       planes_option<O>(),
       B::bind(&O::sigma_v, "sigmaV", "vertical sigma; -1 = same as sigma", -1, -1, kMaxSigma),
       B::bind(&O::radius, "radius", "kernel radius in pixels; -1 = ceil(3 sigma)", -1, -1, kMaxGaussRadius)
           .named_only(),
       chroma_scale_option<O>(0, "1: divide sigma and radius on subsampled chroma by the subsampling, so the blur "
                                 "has the same size on the picture; 0 (as FFmpeg): the same values on every plane"),
       fields_option<O>()},
      [](const O& o) { return std::make_unique<GaussianFilter>(o); });
}

FilterInfo boxblur_info() {
  using B = OptionSpec;
  using O = BoxblurOptions;
  return FilterInfo::make<O>(
      "boxblur",
      "mean over a (2r+1)x(2r+1) window, applied power times, exact integer sums rounded half up, borders clamped",
      {B::bind(&O::luma_radius, "luma_radius", "luma (and RGB) window radius in pixels; 0 = identity", 2, 0,
               kMaxBoxRadius)
           .alias("lr"),
       B::bind(&O::luma_power, "luma_power", "times the luma window is applied; 0 = identity", 2, 0, 100).alias("lp"),
       B::bind(&O::chroma_radius, "chroma_radius", "chroma window radius in chroma pixels; -1 = luma_radius", -1, -1,
               kMaxBoxRadius)
           .alias("cr"),
       B::bind(&O::chroma_power, "chroma_power", "times the chroma window is applied; -1 = luma_power", -1, -1, 100)
           .alias("cp"),
       B::bind(&O::alpha_radius, "alpha_radius", "alpha window radius in pixels; -1 = luma_radius", -1, -1,
               kMaxBoxRadius)
           .alias("ar"),
       B::bind(&O::alpha_power, "alpha_power", "times the alpha window is applied; -1 = luma_power", -1, -1, 100)
           .alias("ap"),
       B::bind(&O::radius, "radius",
               "instead of the options above: one window of this radius on every plane, once; -1 = not used", -1, -1,
               kMaxBoxRadius)
           .named_only(),
       planes_option<O>().named_only(),
       chroma_scale_option<O>(1, "with radius: divide it on subsampled chroma by the subsampling, so the window "
                                 "has the same size on the picture"),
       fields_option<O>()},
      [](const O& o) { return std::make_unique<BoxFilter>(o); });
}

FilterInfo unsharp_info() {
  using B = OptionSpec;
  using O = UnsharpOptions;
  auto size = [](int O::*field, const char* name, const char* alias, const char* help) {
    return B::bind(field, name, help, 5, 3, 23).alias(alias);
  };
  auto amount = [](double O::*field, const char* name, const char* alias, double def, const char* help) {
    return B::bind(field, name, help, def, -2, 5).alias(alias);
  };
  return FilterInfo::make<O>(
      "unsharp",
      "sharpen: src + amount * (src - blur(src)), rounded half up and clamped; the blur as FFmpeg's matrix of each "
      "plane class (luma, chroma, alpha), or a Gaussian of sigma",
      {size(&O::lx, "luma_msize_x", "lx", "luma matrix width, odd (a Gaussian of the binomial's variance)"),
       size(&O::ly, "luma_msize_y", "ly", "luma matrix height, odd"),
       amount(&O::la, "luma_amount", "la", 1, "luma strength; 0 = identity, negative softens"),
       size(&O::cx, "chroma_msize_x", "cx", "chroma matrix width, odd, in chroma pixels"),
       size(&O::cy, "chroma_msize_y", "cy", "chroma matrix height, odd"),
       amount(&O::ca, "chroma_amount", "ca", 0, "chroma strength"),
       size(&O::ax, "alpha_msize_x", "ax", "alpha matrix width, odd"),
       size(&O::ay, "alpha_msize_y", "ay", "alpha matrix height, odd"),
       amount(&O::aa, "alpha_amount", "aa", 0, "alpha strength"),
       B::bind(&O::sigma, "sigma",
               "instead of the matrices: the Gaussian's standard deviation in pixels, on every plane; -1 = not used "
               "(1 when amount, threshold or sigmaV is given)",
               -1, -1, kMaxSigma)
           .named_only(),
       B::bind(&O::amount, "amount", "with sigma: the strength; 0 = identity, negative softens", 1.0, -2.0, 10.0)
           .named_only(),
       B::bind(&O::threshold, "threshold",
               "with sigma: smallest |src - blur| that is sharpened, in 8-bit units (x257 on 16-bit planes)", 0, 0,
               255)
           .named_only(),
       B::bind(&O::sigma_v, "sigmaV", "with sigma: vertical sigma; -1 = same as sigma", -1, -1, kMaxSigma)
           .named_only(),
       planes_option<O>().named_only(),
       chroma_scale_option<O>(1, "with sigma: divide it on subsampled chroma by the subsampling"),
       fields_option<O>()},
      [](const O& o) { return std::make_unique<UnsharpFilter>(o); });
}

FilterInfo pixelate_info() {
  using B = OptionSpec;
  using O = PixelateOptions;
  return FilterInfo::make<O>(
      "pixelate",
      "mosaic: each block x block_y cell (grid from the top-left corner, partial cells at the right and bottom) "
      "becomes the exact mean of its samples, rounded half up",
      {B::bind(&O::block, "block", "cell width (and height) in pixels", 16, 1, 4096),
       B::bind(&O::block_y, "block_y", "cell height; -1 = same as block", -1, -1, 4096), planes_option<O>(),
       chroma_scale_option<O>(1, "divide the cells on subsampled chroma by the subsampling, so they cover the same "
                                 "picture area as on luma"),
       fields_option<O>()},
      [](const O& o) { return std::make_unique<PixelateFilter>(o); });
}

}  // namespace

std::vector<FilterInfo> make_blur_filters() { return {gblur_info(), boxblur_info(), unsharp_info(), pixelate_info()}; }

}  // namespace streamblur
