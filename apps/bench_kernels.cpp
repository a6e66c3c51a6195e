// streamblur-bench kernels: GPU time of each blur on full 8-bit planes against
// the floor (a device-to-device copy of the same bytes, same run) and, when
// NPP was found at configure time, NVIDIA NPP on the same buffers.
#include "bench_kernels.hpp"

#include <algorithm>
#include <array>
#include <cstdio>
#include <functional>
#include <memory>
#include <stdexcept>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "streamblur/kernels/cuda_blur.hpp"
#include "streamblur/kernels/cuda_check.hpp"
#include "streamblur/kernels/cuda_raii.hpp"
#include "streamblur/kernels/detail/blur_path.hpp"
#include "streamblur/kernels/params.hpp"
#include "streamblur/pipeline/filter.hpp"
#include "streamblur/pipeline/frame_layout.hpp"

#ifdef STREAMBLUR_HAVE_NPP
#include <nppi_filtering_functions.h>
#endif

namespace streamblur::bench {
namespace {

using cuda::CudaEvent;
using cuda::CudaStream;
using cuda::DeviceBuffer;

// Enough frames that source and destination together exceed the 60 MB L2 of an H200.
constexpr int kRotation = 16;

template <class T>
struct Buffers {
  int width, height;      // width in samples
  int channels = 1;       // interleaved samples per pixel
  std::ptrdiff_t pitch;  // bytes
  std::vector<DeviceBuffer> src, dst;
  Buffers(int w, int h) : width(w), height(h), pitch((w * sizeof(T) + 255) / 256 * 256) {
    std::mt19937 rng(7);
    std::vector<uint8_t> host(static_cast<size_t>(pitch) * h);
    for (auto& v : host) v = static_cast<uint8_t>(rng());
    for (int i = 0; i < kRotation; ++i) {
      src.emplace_back(host.size());
      dst.emplace_back(host.size());
      CUDA_CHECK(cudaMemcpy(src.back().get(), host.data(), host.size(), cudaMemcpyHostToDevice));
    }
    CUDA_CHECK(cudaDeviceSynchronize());  // a pageable copy may return before its DMA lands
  }
  Plane<const T> in(int i) const { return {src[i].as<const T>(), width / channels, height, pitch, channels}; }
  Plane<T> out(int i) const { return {dst[i].as<T>(), width / channels, height, pitch, channels}; }
};

// Median time of one operation in microseconds: each sample times a whole
// rotation over the buffers between two events and divides by its length.
double median_us(const std::function<void(int)>& op, cudaStream_t stream, int samples) {
  CudaEvent a(cudaEventDefault), b(cudaEventDefault);
  const int warm_up = samples <= 3 ? 2 : kRotation * 2;  // slow operations (NPP at large radii): a short warm-up
  for (int i = 0; i < warm_up; ++i) op(i % kRotation);
  std::vector<double> t;
  for (int s = 0; s < samples; ++s) {
    a.record(stream);
    for (int i = 0; i < kRotation; ++i) op(i);
    b.record(stream);
    b.synchronize();
    float ms = 0;
    CUDA_CHECK(cudaEventElapsedTime(&ms, a.get(), b.get()));
    t.push_back(ms * 1000.0 / kRotation);
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

// NPP's cost grows with the window (a 4K box of radius 120 takes 0.24 s), as
// does our two-pass kernels' (radius 4096): operations slower than 2 ms are
// timed over 3 rotations instead of `samples`.
double median_us_adaptive(const std::function<void(int)>& op, cudaStream_t stream, int samples) {
  CudaEvent a(cudaEventDefault), b(cudaEventDefault);
  a.record(stream);
  op(0);
  b.record(stream);
  b.synchronize();
  float ms = 0;
  CUDA_CHECK(cudaEventElapsedTime(&ms, a.get(), b.get()));
  return median_us(op, stream, ms > 2.0f ? 3 : samples);
}

// Median times with the kernels Auto picks, two passes, the
// register-blocked, 3x3 box, running-sum, wide and tensor-core kernels (0 where
// a forced path falls back to another);
// the blur is left on Auto.
template <class T, class Blur>
std::array<double, 7> time_paths(Blur& blur, int w, int h, int c, const std::function<void(int)>& op,
                                 cudaStream_t stream, int samples) {
  std::array<double, 7> t{};  // {auto, two-pass, register, box3, running, wide, tensor}
  const cuda::BlurPath forced[] = {cuda::BlurPath::TwoPass, cuda::BlurPath::Register, cuda::BlurPath::Box3,
                                   cuda::BlurPath::Running, cuda::BlurPath::Wide,     cuda::BlurPath::Tensor};
  cuda::set_path(blur, cuda::BlurPath::Auto);
  const cuda::BlurPath auto_path = cuda::path_taken(blur, w, h, c, sizeof(T));
  t[0] = median_us_adaptive(op, stream, samples);
  for (int i = 0; i < 6; ++i) {
    cuda::set_path(blur, forced[i]);
    const cuda::BlurPath taken = cuda::path_taken(blur, w, h, c, sizeof(T));
    if (taken != forced[i]) continue;            // falls back to another path: 0
    if (taken == auto_path) t[i + 1] = t[0];     // the same kernels as Auto's, timed once
    else t[i + 1] = median_us_adaptive(op, stream, samples);
  }
  cuda::set_path(blur, cuda::BlurPath::Auto);
  return t;
}

template <class T>
int max_abs_diff(const DeviceBuffer& x, const DeviceBuffer& y, const Buffers<T>& buf) {
  std::vector<T> hx(x.size() / sizeof(T)), hy(y.size() / sizeof(T));
  CUDA_CHECK(cudaMemcpy(hx.data(), x.get(), x.size(), cudaMemcpyDeviceToHost));
  CUDA_CHECK(cudaMemcpy(hy.data(), y.get(), y.size(), cudaMemcpyDeviceToHost));
  int m = 0;
  for (int r = 0; r < buf.height; ++r)
    for (int c = 0; c < buf.width; ++c) {
      const size_t i = static_cast<size_t>(r) * buf.pitch / sizeof(T) + c;
      m = std::max(m, std::abs(int(hx[i]) - int(hy[i])));
    }
  return m;
}

#ifdef STREAMBLUR_HAVE_NPP
NppStreamContext npp_context(cudaStream_t stream) {
  NppStreamContext ctx{};
  ctx.hStream = stream;
  CUDA_CHECK(cudaGetDevice(&ctx.nCudaDeviceId));
  cudaDeviceProp p{};
  CUDA_CHECK(cudaGetDeviceProperties(&p, ctx.nCudaDeviceId));
  ctx.nMultiProcessorCount = p.multiProcessorCount;
  ctx.nMaxThreadsPerMultiProcessor = p.maxThreadsPerMultiProcessor;
  ctx.nMaxThreadsPerBlock = p.maxThreadsPerBlock;
  ctx.nSharedMemPerBlock = p.sharedMemPerBlock;
  ctx.nCudaDevAttrComputeCapabilityMajor = p.major;
  ctx.nCudaDevAttrComputeCapabilityMinor = p.minor;
  CUDA_CHECK(cudaStreamGetFlags(stream, &ctx.nStreamFlags));
  return ctx;
}

void npp_check(NppStatus s, const char* what) {
  if (s != NPP_SUCCESS) throw std::runtime_error(std::string("NPP: ") + what + " failed with status " + std::to_string(s));
}
#endif

bool npp_available_impl() {
#ifdef STREAMBLUR_HAVE_NPP
  return true;
#else
  return false;
#endif
}

#ifdef STREAMBLUR_HAVE_NPP
// NPP's entry points by sample type.
NppStatus npp_gauss(const Npp8u* s, int sp, NppiSize z, Npp8u* d, int dp, int taps, const Npp32f* w, NppStreamContext c) {
  return nppiFilterGaussAdvancedBorder_8u_C1R_Ctx(s, sp, z, {0, 0}, d, dp, z, taps, w, NPP_BORDER_REPLICATE, c);
}
NppStatus npp_gauss(const Npp16u* s, int sp, NppiSize z, Npp16u* d, int dp, int taps, const Npp32f* w, NppStreamContext c) {
  return nppiFilterGaussAdvancedBorder_16u_C1R_Ctx(s, sp, z, {0, 0}, d, dp, z, taps, w, NPP_BORDER_REPLICATE, c);
}
NppStatus npp_box(const Npp8u* s, int sp, NppiSize z, Npp8u* d, int dp, int r, NppStreamContext c) {
  return nppiFilterBoxBorder_8u_C1R_Ctx(s, sp, z, {0, 0}, d, dp, z, {2 * r + 1, 2 * r + 1}, {r, r}, NPP_BORDER_REPLICATE, c);
}
NppStatus npp_box(const Npp16u* s, int sp, NppiSize z, Npp16u* d, int dp, int r, NppStreamContext c) {
  return nppiFilterBoxBorder_16u_C1R_Ctx(s, sp, z, {0, 0}, d, dp, z, {2 * r + 1, 2 * r + 1}, {r, r}, NPP_BORDER_REPLICATE, c);
}
template <class T> using NppT = std::conditional_t<sizeof(T) == 1, Npp8u, Npp16u>;
#endif

template <class T>
void bench_size(const KernelBenchOptions& opt, int w, int h, cudaStream_t st, std::vector<KernelResult>& results) {
  Buffers<T> buf(w, h);
  const int c = opt.channels;  // w stays in samples; planes of w / c pixels
  buf.channels = c;
  const int px = w / c;
  const double copy_us = median_us([&](int i) { cuda::copy_plane<T>(buf.in(i), buf.out(i), st); }, st, opt.samples);
  DeviceBuffer reference_out(buf.dst[0].size());  // our output of buffer 0, to compare NPP with
  auto record = [&](const std::string& filter, double param, int taps, cuda::BlurPath path,
                    const std::array<double, 7>& us, std::function<void(int)> npp) {
    KernelResult r;
    r.width = px;
    r.height = h;
    r.channels = c;
    r.bits = 8 * sizeof(T);
    r.filter = filter;
    r.param = param;
    r.taps = taps;
    r.path = cuda::path_name(path);
    r.ours_us = us[0];
    r.two_pass_us = us[1];
    r.register_us = us[2];
    r.box3_us = us[3];
    r.running_us = us[4];
    r.wide_us = us[5];
    r.tensor_us = us[6];
    r.copy_us = copy_us;
    CUDA_CHECK(cudaMemcpyAsync(reference_out.get(), buf.dst[0].get(), reference_out.size(), cudaMemcpyDeviceToDevice, st));
    if (npp) {
      r.npp_us = median_us_adaptive(npp, st, opt.samples);
      CUDA_CHECK(cudaStreamSynchronize(st));
      r.npp_max_diff = max_abs_diff<T>(reference_out, buf.dst[0], buf);
    }
    results.push_back(r);
    if (opt.progress) opt.progress(results.back());
  };
  for (double sigma : opt.sigmas) {
    cuda::GaussianBlur blur(sigma);
    blur.reserve(px, h, c);
    const auto us = time_paths<T>(blur, px, h, c, [&](int i) { blur.apply<T>(buf.in(i), buf.out(i), st); }, st, opt.samples);
    std::function<void(int)> npp;
#ifdef STREAMBLUR_HAVE_NPP
    // NPP's Gaussian costs grow with the taps past usefulness (24 ms at 61
    // taps on a 4K plane): timed up to 61 taps.
    const std::vector<float> weights = gaussian_weights_f(sigma);
    if (weights.size() <= 61 && c == 1) {
      auto d_weights = std::make_shared<DeviceBuffer>(DeviceBuffer::from_host(weights.data(), weights.size() * sizeof(float)));
      const NppStreamContext ctx = npp_context(st);
      npp = [&buf, d_weights, ctx, taps = static_cast<int>(weights.size())](int i) {
        npp_check(npp_gauss(buf.src[i].template as<const NppT<T>>(), static_cast<int>(buf.pitch), {buf.width, buf.height},
                            buf.dst[i].template as<NppT<T>>(), static_cast<int>(buf.pitch), taps, d_weights->as<Npp32f>(), ctx),
                  "nppiFilterGaussAdvancedBorder_C1R_Ctx");
      };
    }
#endif
    // Our output of buffer 0 is still in dst[0] when record() copies it.
    blur.apply<T>(buf.in(0), buf.out(0), st);
    record("gblur", sigma, 2 * blur.radius_x() + 1, cuda::path_taken(blur, px, h, c, sizeof(T)), us, npp);
  }
  for (int r : opt.box_radii) {
    cuda::BoxBlur blur(r);
    blur.reserve(px, h, c);
    const auto us = time_paths<T>(blur, px, h, c, [&](int i) { blur.apply<T>(buf.in(i), buf.out(i), st); }, st, opt.samples);
    std::function<void(int)> npp;
#ifdef STREAMBLUR_HAVE_NPP
    if (r <= 60 && c == 1) {  // NPP's box grows with the radius too (0.24 s at r = 120 on a 4K plane)
      const NppStreamContext ctx = npp_context(st);
      npp = [&buf, ctx, r](int i) {
        npp_check(npp_box(buf.src[i].template as<const NppT<T>>(), static_cast<int>(buf.pitch), {buf.width, buf.height},
                          buf.dst[i].template as<NppT<T>>(), static_cast<int>(buf.pitch), r, ctx),
                  "nppiFilterBoxBorder_C1R_Ctx");
      };
    }
#endif
    blur.apply<T>(buf.in(0), buf.out(0), st);
    record("boxblur", r, 2 * r + 1, cuda::path_taken(blur, px, h, c, sizeof(T)), us, npp);
  }
}

// A plane of Buffers as the filter chain takes it.
template <class P>
AnyPlane any(const P& plane) {
  using T = std::remove_const_t<std::remove_pointer_t<decltype(plane.data)>>;
  return AnyPlane{const_cast<void*>(static_cast<const void*>(plane.data)), plane.width, plane.height, plane.pitch,
                  plane.channels, static_cast<int>(sizeof(T))};
}

// Issue 10's K4 rows: the three planes of a yuv420p frame (Y w x h, U and V
// w/2 x h/2) blurred at sigma 2 one after another by the kernels Auto picks
// (three launches or more), then through a FilterChain launching directly
// and as a CUDA graph, each against a copy of the same three planes; then the
// nv12 (8-bit) or p010 (16-bit) frame through the chain. `path` is the luma
// plane's.
template <class T>
void bench_frame(const KernelBenchOptions& opt, int w, int h, cudaStream_t st, std::vector<KernelResult>& results) {
  Buffers<T> y(w, h), u(w / 2, h / 2), v(w / 2, h / 2);
  const double copy_us = median_us(
      [&](int i) {
        cuda::copy_plane<T>(y.in(i), y.out(i), st);
        cuda::copy_plane<T>(u.in(i), u.out(i), st);
        cuda::copy_plane<T>(v.in(i), v.out(i), st);
      },
      st, opt.samples);
  cuda::GaussianBlur luma(2.0), chroma(2.0);
  luma.reserve(w, h, 1);
  chroma.reserve(w / 2, h / 2, 1);
  const double us = median_us(
      [&](int i) {
        luma.apply<T>(y.in(i), y.out(i), st);
        chroma.apply<T>(u.in(i), u.out(i), st);
        chroma.apply<T>(v.in(i), v.out(i), st);
      },
      st, opt.samples);
  KernelResult r;
  r.width = w;
  r.height = h;
  r.bits = 8 * sizeof(T);
  r.filter = "gblur420";
  r.param = 2.0;
  r.taps = 2 * luma.radius_x() + 1;
  r.path = cuda::path_name(cuda::path_taken(luma, w, h, 1, sizeof(T)));
  r.ours_us = us;
  r.copy_us = copy_us;
  results.push_back(r);
  if (opt.progress) opt.progress(results.back());
  // A row per way of launching `format`'s frame through the chain (as the
  // pipeline and the Python module run it; chroma_scale=0 keeps sigma 2 on
  // the chroma planes): directly ("-chain"), then as its CUDA graph ("-graph").
  // run(chain, i): one frame of buffer set i.
  auto chain_rows = [&](AVPixelFormat format, const std::string& name, auto run) {
    const FrameLayout layout = *native_layout(format, w, h);
    for (bool graphs : {false, true}) {
      FilterChain chain(parse_filter_chain("gblur=sigma=2:chroma_scale=0"));
      chain.set_graphs(graphs);
      chain.configure(layout, Backend::Cuda);
      r.ours_us = median_us([&](int i) { run(chain, i); }, st, opt.samples);
      if (graphs && chain.graph_stats().launched == 0) throw std::logic_error("the chain never ran as a CUDA graph");
      r.filter = name + (graphs ? "-graph" : "-chain");
      results.push_back(r);
      if (opt.progress) opt.progress(results.back());
    }
  };
  auto into = [&](bool went) {
    if (!went) throw std::logic_error("gblur cannot write a new plane");
  };
  chain_rows(sizeof(T) == 1 ? AV_PIX_FMT_YUV420P : AV_PIX_FMT_YUV420P10LE, "gblur420", [&](FilterChain& chain, int i) {
    into(chain.apply_from({any(y.in(i)), any(u.in(i)), any(v.in(i))}, {any(y.out(i)), any(u.out(i)), any(v.out(i))}, 3,
                          st));
  });
  // The semi-planar frame of the same sample size (nv12 / p010: Y and one
  // plane of interleaved U, V), from src into dst. On p010 the blur kernels
  // read the 10-bit values from the samples' high bits and write them back
  // there themselves (GaussianBlur::set_sample_shift), with no shift passes.
  Buffers<T> uv(w / 2 * 2, h / 2);
  uv.channels = 2;
  r.copy_us = median_us(
      [&](int i) {
        cuda::copy_plane<T>(y.in(i), y.out(i), st);
        cuda::copy_plane<T>(uv.in(i), uv.out(i), st);
      },
      st, opt.samples);
  chain_rows(sizeof(T) == 1 ? AV_PIX_FMT_NV12 : AV_PIX_FMT_P010LE, sizeof(T) == 1 ? "gblur-nv12" : "gblur-p010",
             [&](FilterChain& chain, int i) {
               into(chain.apply_from({any(y.in(i)), any(uv.in(i))}, {any(y.out(i)), any(uv.out(i))}, 2, st));
             });
}

}  // namespace

bool npp_available() { return npp_available_impl(); }

std::vector<KernelResult> run_kernel_bench(const KernelBenchOptions& opt) {
  if (cuda::device_count() == 0) throw std::runtime_error("kernel benchmark: no CUDA device");
  std::vector<KernelResult> results;
  CudaStream stream;
  for (int bits : opt.bits)
    for (auto [w, h] : opt.sizes) {
      if (bits == 16) bench_size<uint16_t>(opt, w, h, stream.get(), results);
      else bench_size<uint8_t>(opt, w, h, stream.get(), results);
      if (opt.frame_rows && opt.channels == 1 && !opt.sigmas.empty()) {
        if (bits == 16) bench_frame<uint16_t>(opt, w, h, stream.get(), results);
        else bench_frame<uint8_t>(opt, w, h, stream.get(), results);
      }
    }
  return results;
}

}  // namespace streamblur::bench
