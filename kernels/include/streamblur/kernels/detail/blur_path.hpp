#pragma once
// For the tests and the benchmark: the kernel paths GaussianBlur and BoxBlur
// can be forced onto (set_path) and report (path_taken). A detail header: in
// the source tree only, never installed (cmake/install.cmake), not part of
// the API.
#include "streamblur/kernels/cuda_blur.hpp"

namespace streamblur::cuda {

namespace detail {
// Which kernels run. Auto picks by channels and radius (from measurements on
// an H200); the others force one, for tests and the benchmark. Register: the
// register-blocked fused kernels for one-channel planes (radius <= 32).
// Sliding: sliding windows in registers with warp shuffles, no shared memory,
// for one-channel planes (Gaussian radius <= 6, box radius 1..4, rx == ry).
// Running: box only; running sums whose cost does not grow with the radius,
// for planes of one or two interleaved channels up to 8192 samples wide. A
// forced path falls back (running and sliding to register, register to
// fused, fused to two passes) where it cannot run: a Gaussian (running),
// interleaved channels, a radius or tile too large for the kernel or the
// device's shared memory.
// Wide: Gaussian only; two register-blocked passes through a float plane
// whose cost is their FMAs, for any radius, on planes of one or two
// interleaved channels; it falls back to two passes (a box, 3-4 channels).
// Tensor: Gaussian only, on 8-bit planes of one channel or of interleaved
// pairs (each channel filtered apart), up to radius 32 either way; both
// passes as fp16 matrix products on the tensor cores (fp16 taps summing to 1,
// fp32 sums, the intermediate split into two fp16 parts); it falls
// back to the register path (16-bit samples, a box) and on from there.
enum class BlurPath : int { Auto, Fused, TwoPass, Register, Sliding, Running, Wide, Tensor };
static_assert(static_cast<int>(BlurPath::Auto) == 0, "GaussianBlur and BoxBlur start on Auto (path_{})");

// The one door to a blur's private path.
struct PathAccess {
  template <class Blur> static void set(Blur& blur, BlurPath path) noexcept { blur.path_ = path; }
  template <class Blur> static BlurPath get(const Blur& blur) noexcept { return blur.path_; }
};

// Forces the kernel path a blur's apply() runs; Auto by default.
inline void set_path(GaussianBlur& blur, BlurPath path) noexcept { PathAccess::set(blur, path); }
inline void set_path(BoxBlur& blur, BlurPath path) noexcept { PathAccess::set(blur, path); }

// The kernels apply() runs for a width x height plane of `channels` samples
// of `sample_bytes` on the current device, after the fall-backs (never Auto).
BlurPath path_taken(const GaussianBlur& blur, int width, int height, int channels, std::size_t sample_bytes);
BlurPath path_taken(const BoxBlur& blur, int width, int height, int channels, std::size_t sample_bytes);
}  // namespace detail

// Spelled cuda::BlurPath, cuda::set_path and cuda::path_taken by the tests and the benchmark.
using detail::BlurPath;
using detail::path_taken;
using detail::set_path;

// "auto", "fused", "two-pass", "register", "sliding", "running", "wide", "tensor".
const char* path_name(BlurPath path) noexcept;

}  // namespace streamblur::cuda
