#pragma once
// For the tests and the benchmark: the kernel paths GaussianBlur and BoxBlur
// can be forced onto (set_path) and report (path_taken). A detail header: in
// the source tree only, never installed (cmake/install.cmake), not part of
// the API.
#include "streamblur/kernels/cuda_blur.hpp"

namespace streamblur::cuda {

namespace detail {
// Which kernels run. Auto picks by the table in kernels/src/blur.cu
// (kAutoRules: channels, radius and plane size, from measurements on an
// H200); the others force one, for tests and the benchmark. A forced path
// that cannot run the plane falls back (tensor, running and box3 to
// register, register and wide to two passes).
// - Register: register-blocked fused kernels for one-channel planes (radius <= 32).
// - Box3: the 3x3 box of one-channel planes (rx = ry = 1).
// - Running: boxes only; running sums whose cost does not grow with the
//   radius, for planes of one or two interleaved channels up to 8192 samples wide.
// - Wide: Gaussians only; two register-blocked passes through a float plane,
//   any radius, planes of one or two interleaved channels.
// - Tensor: Gaussians only, on 8-bit planes of one channel or of interleaved
//   pairs, up to radius 32 either way; both passes as fp16 matrix products on
//   the tensor cores (fp16 taps summing to 1, fp32 sums, the intermediate
//   split into two fp16 parts).
// - TwoPass: the fallback for everything else (interleaved RGB and RGBA,
//   radii beyond the others' reach): two passes through a scratch plane.
enum class BlurPath : int { Auto, TwoPass, Register, Box3, Running, Wide, Tensor };
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

// "auto", "two-pass", "register", "box3", "running", "wide", "tensor".
const char* path_name(BlurPath path) noexcept;

}  // namespace streamblur::cuda
