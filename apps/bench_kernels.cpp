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
#include <string>
#include <random>
#include <vector>

#include "streamblur/kernels/cuda_blur.hpp"
#include "streamblur/kernels/cuda_check.hpp"
#include "streamblur/kernels/cuda_raii.hpp"
#include "streamblur/kernels/params.hpp"

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

struct Buffers {
  int width, height;
  std::ptrdiff_t pitch;
  std::vector<DeviceBuffer> src, dst;
  Buffers(int w, int h) : width(w), height(h), pitch((w + 255) / 256 * 256) {
    std::mt19937 rng(7);
    std::vector<uint8_t> host(static_cast<size_t>(pitch) * h);
    for (auto& v : host) v = static_cast<uint8_t>(rng());
    for (int i = 0; i < kRotation; ++i) {
      src.emplace_back(host.size());
      dst.emplace_back(host.size());
      CUDA_CHECK(cudaMemcpy(src.back().get(), host.data(), host.size(), cudaMemcpyHostToDevice));
    }
  }
  Plane<const uint8_t> in(int i) const { return {src[i].as<const uint8_t>(), width, height, pitch}; }
  Plane<uint8_t> out(int i) const { return {dst[i].as<uint8_t>(), width, height, pitch}; }
};

// Median time of one operation in microseconds: each sample times a whole
// rotation over the buffers between two events and divides by its length.
double median_us(const std::function<void(int)>& op, cudaStream_t stream, int samples) {
  CudaEvent a(cudaEventDefault), b(cudaEventDefault);
  for (int i = 0; i < kRotation * 2; ++i) op(i % kRotation);  // warm-up
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

// Median times with the kernels Auto picks, the fused kernel, and two passes;
// the blur is left on Auto.
template <class Blur>
std::array<double, 3> time_paths(Blur& blur, const std::function<void(int)>& op, cudaStream_t stream, int samples) {
  std::array<double, 3> t{};
  const cuda::BlurPath paths[] = {cuda::BlurPath::Fused, cuda::BlurPath::TwoPass, cuda::BlurPath::Auto};
  for (int i = 0; i < 3; ++i) {
    blur.set_path(paths[i]);
    t[(i + 1) % 3] = median_us(op, stream, samples);
  }
  return t;  // {auto, fused, two-pass}
}

int max_abs_diff(const DeviceBuffer& x, const DeviceBuffer& y, const Buffers& buf) {
  std::vector<uint8_t> hx(x.size()), hy(y.size());
  CUDA_CHECK(cudaMemcpy(hx.data(), x.get(), hx.size(), cudaMemcpyDeviceToHost));
  CUDA_CHECK(cudaMemcpy(hy.data(), y.get(), hy.size(), cudaMemcpyDeviceToHost));
  int m = 0;
  for (int r = 0; r < buf.height; ++r)
    for (int c = 0; c < buf.width; ++c) {
      const size_t i = static_cast<size_t>(r) * buf.pitch + c;
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

}  // namespace

bool npp_available() {
#ifdef STREAMBLUR_HAVE_NPP
  return true;
#else
  return false;
#endif
}

std::vector<KernelResult> run_kernel_bench(const KernelBenchOptions& opt) {
  if (cuda::device_count() == 0) throw std::runtime_error("kernel benchmark: no CUDA device");
  std::vector<KernelResult> results;
  CudaStream stream;
  const cudaStream_t st = stream.get();
  for (auto [w, h] : opt.sizes) {
    Buffers buf(w, h);
    const double copy_us = median_us(
        [&](int i) { cuda::copy_plane<uint8_t>(buf.in(i), buf.out(i), st); }, st, opt.samples);
    DeviceBuffer reference_out(buf.dst[0].size());  // our output of buffer 0, to compare NPP with
    auto record = [&](const std::string& filter, double param, int taps, const std::array<double, 3>& us,
                      std::function<void(int)> npp) {
      KernelResult r;
      r.width = w;
      r.height = h;
      r.filter = filter;
      r.param = param;
      r.taps = taps;
      r.ours_us = us[0];
      r.fused_us = us[1];
      r.two_pass_us = us[2];
      r.copy_us = copy_us;
      CUDA_CHECK(cudaMemcpyAsync(reference_out.get(), buf.dst[0].get(), reference_out.size(), cudaMemcpyDeviceToDevice, st));
      if (npp) {
        r.npp_us = median_us(npp, st, opt.samples);
        stream.synchronize();
        r.npp_max_diff = max_abs_diff(reference_out, buf.dst[0], buf);
      }
      results.push_back(r);
      if (opt.progress) opt.progress(results.back());
    };
    for (double sigma : opt.sigmas) {
      cuda::GaussianBlur blur(sigma);
      blur.reserve(w, h, 1);
      const auto us = time_paths(blur, [&](int i) { blur.apply<uint8_t>(buf.in(i), buf.out(i), st); }, st, opt.samples);
      std::function<void(int)> npp;
#ifdef STREAMBLUR_HAVE_NPP
      const std::vector<float> weights = gaussian_weights_f(sigma);
      auto d_weights = std::make_shared<DeviceBuffer>(weights.size() * sizeof(float));
      CUDA_CHECK(cudaMemcpy(d_weights->get(), weights.data(), weights.size() * sizeof(float), cudaMemcpyHostToDevice));
      const NppStreamContext ctx = npp_context(st);
      npp = [&buf, d_weights, ctx, taps = static_cast<int>(weights.size())](int i) {
        npp_check(nppiFilterGaussAdvancedBorder_8u_C1R_Ctx(buf.src[i].as<Npp8u>(), static_cast<int>(buf.pitch), {buf.width, buf.height},
                                                            {0, 0}, buf.dst[i].as<Npp8u>(), static_cast<int>(buf.pitch),
                                                            {buf.width, buf.height}, taps, d_weights->as<Npp32f>(),
                                                            NPP_BORDER_REPLICATE, ctx),
                  "nppiFilterGaussAdvancedBorder_8u_C1R_Ctx");
      };
#endif
      // Our output of buffer 0 is still in dst[0] when record() copies it.
      blur.apply<uint8_t>(buf.in(0), buf.out(0), st);
      record("gblur", sigma, 2 * blur.radius_x() + 1, us, npp);
    }
    for (int r : opt.box_radii) {
      cuda::BoxBlur blur(r);
      blur.reserve(w, h, 1);
      const auto us = time_paths(blur, [&](int i) { blur.apply<uint8_t>(buf.in(i), buf.out(i), st); }, st, opt.samples);
      std::function<void(int)> npp;
#ifdef STREAMBLUR_HAVE_NPP
      const NppStreamContext ctx = npp_context(st);
      npp = [&buf, ctx, r](int i) {
        npp_check(nppiFilterBoxBorder_8u_C1R_Ctx(buf.src[i].as<Npp8u>(), static_cast<int>(buf.pitch), {buf.width, buf.height}, {0, 0},
                                                 buf.dst[i].as<Npp8u>(), static_cast<int>(buf.pitch), {buf.width, buf.height},
                                                 {2 * r + 1, 2 * r + 1}, {r, r}, NPP_BORDER_REPLICATE, ctx),
                  "nppiFilterBoxBorder_8u_C1R_Ctx");
      };
#endif
      blur.apply<uint8_t>(buf.in(0), buf.out(0), st);
      record("boxblur", r, 2 * r + 1, us, npp);
    }
  }
  return results;
}

}  // namespace streamblur::bench
