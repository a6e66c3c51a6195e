// Separable Gaussian and box blurs of one pitch-linear plane: the paths of
// cuda::GaussianBlur and cuda::BoxBlur, and the one table (kAutoRules) that
// chooses among them.
//
// The paths: register-blocked fused kernels for one-channel planes
// (blur_tiled.cu, which also holds the 3x3 box), running sums for boxes of any
// radius (blur_running.cu), the wide Gaussian passes (blur_wide.cu), the
// tensor-core Gaussian (blur_tensor.cu), and here the fallback for everything
// else (interleaved RGB and RGBA planes, radii beyond the others' reach): two
// passes.
//
// Pass 1 (horizontal) reads the source row segment plus its halo into shared
// memory once and writes one intermediate value per sample: float for the
// Gaussian, exact uint32 sums for the box. Pass 2 (vertical) stages a column
// tile of the intermediate plus its halo in shared memory and writes the
// rounded result. Each thread produces several outputs. Borders clamp to the
// edge. When a halo would not fit in 48 KB of shared memory (very large radii)
// the same kernels read the clamped neighbours straight from global memory.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "streamblur/kernels/cuda_blur.hpp"
#include "streamblur/kernels/cuda_convert.hpp"
#include "streamblur/kernels/detail/blur_path.hpp"
#include "streamblur/kernels/params.hpp"
#include "blur_running.hpp"
#include "blur_tensor.hpp"
#include "blur_tiled.hpp"
#include "blur_wide.hpp"
#include "device_rows.cuh"

namespace streamblur::cuda {
namespace {

constexpr int kHThreads = 256;
constexpr int kHPerThread = 4;
constexpr int kHTile = kHThreads * kHPerThread;  // samples per block along a row
constexpr int kVThreadsX = 32;
constexpr int kVThreadsY = 8;
constexpr int kVPerThread = 8;
constexpr int kVTileY = kVThreadsY * kVPerThread;  // rows per block
constexpr int kMaxGridY = 65535;
constexpr std::size_t kMaxShared = 48 * 1024;

using detail::row_ptr;
using detail::round_clamp;
using detail::check_shift;

// Index of sample s of a row after clamping its pixel to [0, width): the
// channel is kept, the pixel clamped.
__device__ __forceinline__ int clamp_sample(int s, int samples, int channels) {
  if (s < 0) return ((s % channels) + channels) % channels;
  if (s >= samples) return samples - channels + (s - samples) % channels;
  return s;
}

// Horizontal pass. kWeighted: Gaussian (float weights), else box (exact sums).
template <class T, class Acc, bool kShared, bool kWeighted>
__global__ void __launch_bounds__(kHThreads)
horizontal_pass(const T* __restrict__ src, std::ptrdiff_t src_pitch, Acc* __restrict__ tmp,
                std::ptrdiff_t tmp_pitch, int samples, int height, int channels,
                const float* __restrict__ weights, int radius) {
  extern __shared__ float smem[];
  float* w = smem;                                          // 2r+1 weights (Gaussian only)
  T* line = reinterpret_cast<T*>(smem + (kWeighted ? 2 * radius + 1 : 0));
  const int halo = radius * channels;
  const int x0 = blockIdx.x * kHTile;
  if (kWeighted)
    for (int i = threadIdx.x; i < 2 * radius + 1; i += blockDim.x) w[i] = weights[i];

  for (int y = blockIdx.y; y < height; y += gridDim.y) {
    const T* in = row_ptr(src, src_pitch, y);
    if (kShared) {
      __syncthreads();  // the previous row's readers are done with `line`
      for (int i = threadIdx.x; i < kHTile + 2 * halo; i += blockDim.x)
        line[i] = in[clamp_sample(x0 - halo + i, samples, channels)];
    }
    __syncthreads();
    Acc* out = row_ptr(tmp, tmp_pitch, y);
#pragma unroll
    for (int j = 0; j < kHPerThread; ++j) {
      const int x = x0 + threadIdx.x + j * kHThreads;
      if (x >= samples) break;
      Acc acc = 0;
      for (int k = -radius; k <= radius; ++k) {
        const T v = kShared ? line[x - x0 + halo + k * channels] : in[clamp_sample(x + k * channels, samples, channels)];
        if constexpr (kWeighted) acc += w[k + radius] * static_cast<float>(v);
        else acc += static_cast<Acc>(v);
      }
      out[x] = acc;
    }
  }
}

// round(sum / count) half up, in the accumulator's width (a 64-bit division
// is a long software sequence on the GPU; 32-bit sums need none of it).
template <class Acc>
__device__ __forceinline__ Acc box_round(Acc sum, unsigned long long count) {
  return (sum + static_cast<Acc>(count / 2)) / static_cast<Acc>(count);
}

// Vertical pass: In is the intermediate type (float or uint32), Acc the sum.
template <class T, class In, class Acc, bool kShared, bool kWeighted>
__global__ void __launch_bounds__(kVThreadsX * kVThreadsY)
vertical_pass(const In* __restrict__ tmp, std::ptrdiff_t tmp_pitch, T* __restrict__ dst,
              std::ptrdiff_t dst_pitch, int samples, int height, const float* __restrict__ weights,
              int radius, unsigned long long box_count) {
  extern __shared__ float smem[];
  float* w = smem;
  In* tile = reinterpret_cast<In*>(smem + (kWeighted ? 2 * radius + 1 : 0));
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int x = blockIdx.x * kVThreadsX + tx;
  const int y0 = blockIdx.y * kVTileY;
  if (kWeighted)
    for (int i = ty * kVThreadsX + tx; i < 2 * radius + 1; i += kVThreadsX * kVThreadsY) w[i] = weights[i];
  if (kShared) {
    for (int i = ty; i < kVTileY + 2 * radius; i += kVThreadsY) {
      const int yy = min(max(y0 - radius + i, 0), height - 1);
      tile[i * kVThreadsX + tx] = x < samples ? row_ptr(tmp, tmp_pitch, yy)[x] : In(0);
    }
  }
  __syncthreads();
  if (x >= samples) return;
#pragma unroll
  for (int j = 0; j < kVPerThread; ++j) {
    const int y = y0 + ty + j * kVThreadsY;
    if (y >= height) break;
    Acc acc = 0;
    for (int k = -radius; k <= radius; ++k) {
      const In v = kShared ? tile[(y - y0 + radius + k) * kVThreadsX + tx]
                           : row_ptr(tmp, tmp_pitch, min(max(y + k, 0), height - 1))[x];
      if constexpr (kWeighted) acc += w[k + radius] * v;
      else acc += static_cast<Acc>(v);
    }
    T* out = row_ptr(dst, dst_pitch, y);
    if constexpr (kWeighted) out[x] = round_clamp<T>(acc);
    else out[x] = static_cast<T>(box_round(acc, box_count));  // exact, rounded half up
  }
}

__global__ void round_high_bits_kernel(uint16_t* data, std::ptrdiff_t pitch, int samples, int height, int shift) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x;
  const int y = blockIdx.y;
  if (x >= samples || y >= height) return;
  uint16_t* row = row_ptr(data, pitch, y);
  const unsigned half = (1u << shift) >> 1, top = 0xFFFFu & ~((1u << shift) - 1);
  row[x] = static_cast<uint16_t>(min((row[x] + half) & ~((1u << shift) - 1), top));
}

__global__ void shift_samples_kernel(uint16_t* data, std::ptrdiff_t pitch, int samples, int height, int shift) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x;
  const int y = blockIdx.y;
  if (x >= samples || y >= height) return;
  uint16_t* row = row_ptr(data, pitch, y);
  row[x] = static_cast<uint16_t>(shift >= 0 ? row[x] >> shift : row[x] << -shift);
}

std::size_t scratch_pitch(int samples) {
  return (static_cast<std::size_t>(samples) * 4 + 255) / 256 * 256;  // 4-byte intermediates, 256-byte rows
}

void ensure_scratch(DeviceBuffer& scratch, int width, int height, int channels) {
  const std::size_t need = scratch_pitch(width * channels) * static_cast<std::size_t>(height);
  if (scratch.size() < need) scratch = DeviceBuffer(need);
}

template <class T>
void check_planes(const Plane<const T>& src, const Plane<T>& dst) {
  if (src.width != dst.width || src.height != dst.height || src.channels != dst.channels)
    throw std::invalid_argument("blur: source and destination planes differ in size or channels");
  if (src.channels < 1 || src.width < 0 || src.height < 0)
    throw std::invalid_argument("blur: bad plane shape");
}

// What the choice of kernels reads: the blur and the plane.
struct BlurShape {
  bool weighted;             // Gaussian (else box)
  int channels;              // interleaved samples per pixel
  std::size_t sample_bytes;  // 1 or 2
  int rx, ry;
  int samples, height;       // samples per row, rows
  bool one_channel() const { return channels == 1; }
  int radius() const { return std::max(rx, ry); }
  long long total() const { return static_cast<long long>(samples) * height; }
};

constexpr long long kLargePlaneSamples = 4'000'000;
// Boxes from this radius (rx or ry) take the running sums, whose cost does
// not grow with the radius: on one-channel planes beyond the register path's
// reach and, before it, from about where they overtake the register kernel
// (on planes of 4 M samples or more 9 at 8 bits and 7 at 16, else 11); on
// interleaved pairs from r = 1, ahead of two passes (tuning.json: "blur.running_from_radius").
constexpr int kRunningFromRadius = 11;
constexpr int kRunningFromRadiusLarge = 9;     // 8-bit samples
constexpr int kRunningFromRadiusLarge16 = 7;   // 16-bit samples
constexpr int kRunningFromRadiusPairs = 1;
// One-channel Gaussians on planes of 4 M samples or more take the wide passes
// (blur_wide.cu) from this radius, at either sample size: above the register
// kernels' 24 bucket, where the wide passes win. Smaller planes keep the
// register kernels up to r = 32 (tuning.json: "blur.wide_from_radius").
constexpr int kWideFromRadiusLarge = 25;
// One-channel 8-bit Gaussians take the tensor-core kernel (blur_tensor.cu)
// from these radii up to its largest, 32: on planes of 4 M samples or more
// from r = 5 (the register kernel wins at r = 3), on smaller planes from
// r = 13, the register kernels winning or tying below (tuning.json:
// "blur.tensor_from_radius").
constexpr int kTensorFromRadiusLarge = 5;
constexpr int kTensorFromRadius = 13;
// 8-bit pairs take it up to this many blocks of taps per band, on planes
// under this many samples from kTensorPairsSmallFromBlocks (see kAutoRules).
constexpr long long kTensorPairsMinSamples = 2'000'000;
constexpr int kTensorPairsMaxBlocks = 4;
constexpr int kTensorPairsSmallFromBlocks = 3;

// Whether `path`'s kernels can run `s` on this device (never for Auto).
template <class In>
bool fits(BlurPath path, const BlurShape& s) {
  switch (path) {
    case BlurPath::Tensor: return s.weighted && tensor::fits(s.rx, s.ry, s.sample_bytes, s.channels);
    case BlurPath::Wide: return s.weighted && wide::fits(s.channels, s.rx, s.ry);
    case BlurPath::Running:
      return !s.weighted && running::fits(s.samples / s.channels, s.channels, s.sample_bytes, s.rx, s.ry);
    case BlurPath::Box3: return !s.weighted && s.one_channel() && s.rx == 1 && s.ry == 1;
    case BlurPath::Register:
      return s.one_channel() && (s.weighted ? tiled::gauss_fits(s.rx, s.ry, s.sample_bytes)
                                            : tiled::box_fits(s.rx, s.ry, s.sample_bytes));
    case BlurPath::TwoPass: return true;
    case BlurPath::Auto: break;
  }
  return false;
}

// Auto's rules, from the kernel benchmark (8- and 16-bit planes, 1080p and
// 4K; the figures are in tuning.json under the names given): the first row
// whose path fits the plane and whose rule holds runs it. Every path Auto
// takes is here, and no other runs unless forced.
struct AutoRule {
  BlurPath path;
  bool (*takes)(const BlurShape&);
};
constexpr AutoRule kAutoRules[] = {
    // 8-bit pairs: the tensor-core kernel (each channel staged apart, so its
    // blocks of taps are counted in pixels) while its band meets at most 4
    // blocks of taps, on planes under 2 M samples from 3 blocks ("blur.tensor_pairs").
    {BlurPath::Tensor,
     [](const BlurShape& s) {
       const int blocks = tensor::tap_blocks(s.rx, s.ry);
       return s.channels == 2 && blocks <= kTensorPairsMaxBlocks &&
              (s.total() >= kTensorPairsMinSamples || blocks >= kTensorPairsSmallFromBlocks);
     }},
    // Other Gaussian pairs: the wide passes at every sigma ("blur.wide_pairs").
    {BlurPath::Wide, [](const BlurShape& s) { return s.channels == 2; }},
    // Boxes: running sums from the radius where they overtake ("blur.running_from_radius").
    {BlurPath::Running,
     [](const BlurShape& s) {
       const bool large = s.total() >= kLargePlaneSamples;
       const int from = !s.one_channel() ? kRunningFromRadiusPairs
                        : !large         ? kRunningFromRadius
                                         : (s.sample_bytes == 1 ? kRunningFromRadiusLarge : kRunningFromRadiusLarge16);
       return s.radius() >= from;
     }},
    // The 3x3 box: its own kernel on every plane ("blur.auto_box3").
    {BlurPath::Box3, [](const BlurShape&) { return true; }},
    // One-channel 8-bit Gaussians: tensor cores from kTensorFromRadius(Large) ("blur.tensor_from_radius").
    {BlurPath::Tensor,
     [](const BlurShape& s) {
       return s.one_channel() && s.radius() >= (s.total() >= kLargePlaneSamples ? kTensorFromRadiusLarge : kTensorFromRadius);
     }},
    // One-channel Gaussians: the wide passes above the register kernels' reach,
    // and on large planes from kWideFromRadiusLarge ("blur.wide_from_radius").
    {BlurPath::Wide,
     [](const BlurShape& s) {
       return s.one_channel() && s.radius() >= (s.total() >= kLargePlaneSamples ? kWideFromRadiusLarge : tiled::kMaxRadius + 1);
     }},
    // Other one-channel blurs: register-blocked, up to radius 32 ("blur.auto_box_register").
    {BlurPath::Register, [](const BlurShape&) { return true; }},
    // Interleaved channels beyond the above: the wide passes, then two passes
    // (RGB and RGBA planes: "blur.interleaved_rgb").
    {BlurPath::Wide, [](const BlurShape&) { return true; }},
    {BlurPath::TwoPass, [](const BlurShape&) { return true; }},
};

// Where a forced path that cannot run the plane goes instead (any other: two passes).
constexpr std::pair<BlurPath, BlurPath> kFallbacks[] = {
    {BlurPath::Tensor, BlurPath::Register},
    {BlurPath::Running, BlurPath::Register},
    {BlurPath::Box3, BlurPath::Register},
};

// The path that runs (never Auto): Auto's first rule that applies, or the
// forced path, else its fall-backs down to two passes.
template <class In>
BlurPath choose_path(BlurPath path, const BlurShape& s) {
  if (path == BlurPath::Auto) {
    for (const AutoRule& r : kAutoRules)
      if (fits<In>(r.path, s) && r.takes(s)) return r.path;
    return BlurPath::TwoPass;
  }
  while (path != BlurPath::TwoPass && !fits<In>(path, s)) {
    const auto* next = std::find_if(std::begin(kFallbacks), std::end(kFallbacks),
                                    [path](const auto& f) { return f.first == path; });
    path = next == std::end(kFallbacks) ? BlurPath::TwoPass : next->second;
  }
  return path;
}

// Two passes through the scratch plane: horizontal from src into it, then
// vertical from it into dst, each launch checked.
template <class T, class In, class Acc, bool kWeighted>
void run_two_passes(Plane<const T> src, Plane<T> dst, const BlurTaps& taps, void* scratch, cudaStream_t stream) {
  const int rx = taps.rx, ry = taps.ry, samples = src.samples_per_row(), height = src.height;
  const std::ptrdiff_t tmp_pitch = static_cast<std::ptrdiff_t>(scratch_pitch(samples));
  In* tmp = static_cast<In*>(scratch);
  const float* wx = taps.x;
  const float* wy = taps.y;

  int radius = rx;
  std::size_t wbytes = kWeighted ? (2 * radius + 1) * sizeof(float) : 0;
  const std::size_t h_shared = wbytes + (kHTile + 2 * static_cast<std::size_t>(radius) * src.channels) * sizeof(T);
  const dim3 h_grid((samples + kHTile - 1) / kHTile, std::min(height, kMaxGridY));
  if (h_shared <= kMaxShared)
    horizontal_pass<T, In, true, kWeighted><<<h_grid, kHThreads, h_shared, stream>>>(
        src.data, src.pitch, tmp, tmp_pitch, samples, height, src.channels, wx, radius);
  else
    horizontal_pass<T, In, false, kWeighted><<<h_grid, kHThreads, wbytes, stream>>>(
        src.data, src.pitch, tmp, tmp_pitch, samples, height, src.channels, wx, radius);
  STREAMBLUR_CHECK_LAUNCH("horizontal_pass", stream);

  const unsigned long long count = static_cast<unsigned long long>(2 * rx + 1) * (2 * ry + 1);
  radius = ry;
  wbytes = kWeighted ? (2 * radius + 1) * sizeof(float) : 0;
  const std::size_t v_shared = wbytes + (kVTileY + 2 * static_cast<std::size_t>(radius)) * kVThreadsX * sizeof(In);
  const unsigned grid_y = (height + kVTileY - 1) / kVTileY;
  if (grid_y > static_cast<unsigned>(kMaxGridY)) throw std::invalid_argument("blur: plane too tall");
  const dim3 v_grid((samples + kVThreadsX - 1) / kVThreadsX, grid_y);
  const dim3 v_block(kVThreadsX, kVThreadsY);
  if (v_shared <= kMaxShared)
    vertical_pass<T, In, Acc, true, kWeighted><<<v_grid, v_block, v_shared, stream>>>(
        tmp, tmp_pitch, dst.data, dst.pitch, samples, height, wy, radius, count);
  else
    vertical_pass<T, In, Acc, false, kWeighted><<<v_grid, v_block, wbytes, stream>>>(
        tmp, tmp_pitch, dst.data, dst.pitch, samples, height, wy, radius, count);
  STREAMBLUR_CHECK_LAUNCH("vertical_pass", stream);
}

// Launches the blur. weights == nullptr selects the box.
// weights: 2rx+1 horizontal then 2ry+1 vertical (Gaussian only), on the
// device; host_weights the same on the host (for the register path).
// shift: the samples' value sits above `shift` low bits (P010; see
// detail::to_high_bits). The register and wide Gaussians read and write such
// samples themselves; for the other kernels the plane is shifted down into
// dst, blurred there in place and shifted back up (two more passes over it).
// (The register Gaussian clears the low bits as it converts the staged
// samples, and the register box shifts around: shifting the staged samples
// as they are loaded costs the 16-bit kernels with batched loads about a
// quarter more time; tuning.json: "blur.p010_shift".)
template <class T, class Acc, bool kWeighted>
void run_passes(Plane<const T> src, Plane<T> dst, const float* weights, const float* host_weights, int rx, int ry,
                void* scratch, BlurPath path, int shift, cudaStream_t stream) {
  using In = std::conditional_t<kWeighted, float, uint32_t>;
  const int samples = src.samples_per_row();
  const int height = src.height;
  // Tiles read their neighbours' rows, so in place the register, box3, tensor
  // and running kernels write to the scratch plane and the result is copied
  // back (still fewer bytes than two passes).
  const bool in_place = src.data == dst.data;
  const Plane<T> out = in_place ? Plane<T>(static_cast<T*>(scratch), src.width, height,
                                           static_cast<std::ptrdiff_t>(scratch_pitch(samples)), src.channels)
                                : dst;
  auto finish_tiled = [&](const char* kernel) {
    STREAMBLUR_CHECK_LAUNCH(kernel, stream);
    if (in_place) copy_plane<T>(Plane<const T>(out), dst, stream);
  };
  const BlurPath kernel = choose_path<In>(path, {kWeighted, src.channels, sizeof(T), rx, ry, samples, height});
  const bool takes_shift = kernel == BlurPath::Wide || (kernel == BlurPath::Register && kWeighted);
  if (shift != 0 && !takes_shift) {
    if constexpr (sizeof(T) == 2) {
      if (in_place) shift_samples(dst, shift, stream);
      else shift_copy<T>(src, dst, shift, stream);
      run_passes<T, Acc, kWeighted>(Plane<const T>(dst), dst, weights, host_weights, rx, ry, scratch, path, 0, stream);
      shift_samples(dst, -shift, stream);
    }
    return;
  }
  const BlurTaps host{rx, ry, host_weights, kWeighted ? host_weights + 2 * rx + 1 : nullptr};
  const BlurTaps device{rx, ry, weights, kWeighted ? weights + 2 * rx + 1 : nullptr};
  if (kernel == BlurPath::Tensor) {
    if constexpr (kWeighted && sizeof(T) == 1) tensor::gauss(src, out, host, stream);
    return finish_tiled("gauss_tensor");
  }
  if (kernel == BlurPath::Box3) {
    tiled::box3_blur<T>(src, out, stream);
    return finish_tiled("box3");
  }
  if (kernel == BlurPath::Running) {
    if constexpr (!kWeighted) {
      void* sums = in_place ? static_cast<unsigned char*>(scratch) + scratch_pitch(samples) * height : scratch;
      running::box<T>(src, out, host, sums, stream);
    }
    if (in_place) copy_plane<T>(Plane<const T>(out), dst, stream);
    return;
  }
  if (kernel == BlurPath::Wide) {
    if constexpr (kWeighted) wide::gauss<T>(src, dst, device, shift, scratch, stream);  // scratch_pitch >= wide::plane_pitch
    return;
  }
  if (kernel == BlurPath::Register) {
    if constexpr (kWeighted) tiled::gauss<T>(src, out, host, shift, stream);
    else tiled::box<T>(src, out, host, stream);
    return finish_tiled(kWeighted ? "gauss_tiled" : "box_tiled");
  }
  run_two_passes<T, In, Acc, kWeighted>(src, dst, device, scratch, stream);
}

}  // namespace

template <class T>
void copy_plane(Plane<const T> src, Plane<T> dst, cudaStream_t stream) {
  check_planes(src, dst);
  if (src.width == 0 || src.height == 0 || src.data == dst.data) return;
  CUDA_CHECK(cudaMemcpy2DAsync(dst.data, dst.pitch, src.data, src.pitch,
                               static_cast<std::size_t>(src.samples_per_row()) * sizeof(T), src.height,
                               cudaMemcpyDeviceToDevice, stream));
}

const char* path_name(BlurPath path) noexcept {
  switch (path) {
    case BlurPath::Auto: return "auto";
    case BlurPath::TwoPass: return "two-pass";
    case BlurPath::Register: return "register";
    case BlurPath::Box3: return "box3";
    case BlurPath::Running: return "running";
    case BlurPath::Wide: return "wide";
    case BlurPath::Tensor: return "tensor";
  }
  return "?";
}

GaussianBlur::GaussianBlur(double sigma_x, double sigma_y, int radius_x, int radius_y)
    : radius_x_(gaussian_radius(sigma_x, radius_x)), radius_y_(gaussian_radius(sigma_y, radius_y)) {
  host_weights_ = gaussian_weights_f(sigma_x, radius_x);
  const std::vector<float> wy = gaussian_weights_f(sigma_y, radius_y);
  host_weights_.insert(host_weights_.end(), wy.begin(), wy.end());
  weights_ = DeviceBuffer::from_host(host_weights_.data(), host_weights_.size() * sizeof(float));
}

namespace detail {
BlurPath path_taken(const GaussianBlur& blur, int width, int height, int channels, std::size_t sample_bytes) {
  return choose_path<float>(PathAccess::get(blur),
                            {true, channels, sample_bytes, blur.radius_x(), blur.radius_y(), width * channels, height});
}

BlurPath path_taken(const BoxBlur& blur, int width, int height, int channels, std::size_t sample_bytes) {
  return choose_path<uint32_t>(PathAccess::get(blur),
                               {false, channels, sample_bytes, blur.radius_x(), blur.radius_y(), width * channels, height});
}
}  // namespace detail

void GaussianBlur::reserve(int width, int height, int channels) { ensure_scratch(scratch_, width, height, channels); }

// Radius 0 with a sample shift: the values, their low bits cleared.
template <class T>
void copy_values(Plane<const T> src, Plane<T> dst, int shift, cudaStream_t stream) {
  if constexpr (sizeof(T) == 2) {
    if (shift != 0) {
      if (src.data == dst.data) shift_samples(dst, shift, stream);
      else shift_copy<T>(src, dst, shift, stream);
      return shift_samples(dst, -shift, stream);
    }
  }
  copy_plane(src, dst, stream);
}

void GaussianBlur::set_sample_shift(int shift) {
  check_shift<uint16_t>(shift);
  shift_ = shift;
}

template <class T>
void GaussianBlur::apply(Plane<const T> src, Plane<T> dst, cudaStream_t stream) {
  check_planes(src, dst);
  check_shift<T>(shift_);
  if (src.width == 0 || src.height == 0) return;
  if (radius_x_ == 0 && radius_y_ == 0) return copy_values(src, dst, shift_, stream);
  ensure_scratch(scratch_, src.width, src.height, src.channels);
  run_passes<T, float, true>(src, dst, weights_.as<float>(), host_weights_.data(), radius_x_, radius_y_, scratch_.get(),
                             path_, shift_, stream);
}

BoxBlur::BoxBlur(int radius_x, int radius_y) : radius_x_(radius_x), radius_y_(radius_y) {
  check_box_radius(radius_x);
  check_box_radius(radius_y);
}

// The box's scratch: the uint32 intermediate of two passes, or the output of
// an in-place blur followed by the running path's band sums.
void ensure_box_scratch(DeviceBuffer& scratch, int width, int height, int channels) {
  const std::size_t need = scratch_pitch(width * channels) * static_cast<std::size_t>(height) +
                           running::scratch_bytes(width, channels, height);
  if (scratch.size() < need) scratch = DeviceBuffer(need);
}

void BoxBlur::reserve(int width, int height, int channels) { ensure_box_scratch(scratch_, width, height, channels); }

void BoxBlur::set_sample_shift(int shift) {
  check_shift<uint16_t>(shift);
  shift_ = shift;
}

template <class T>
void BoxBlur::apply(Plane<const T> src, Plane<T> dst, cudaStream_t stream) {
  check_planes(src, dst);
  check_shift<T>(shift_);
  if (src.width == 0 || src.height == 0) return;
  if (radius_x_ == 0 && radius_y_ == 0) return copy_values(src, dst, shift_, stream);
  ensure_box_scratch(scratch_, src.width, src.height, src.channels);
  // Column sums fit 32 bits unless max_sample * window overflows them.
  const double worst = static_cast<double>(static_cast<T>(~T(0))) * (2.0 * radius_x_ + 1) * (2.0 * radius_y_ + 1);
  if (worst < 4294967296.0)
    run_passes<T, uint32_t, false>(src, dst, nullptr, nullptr, radius_x_, radius_y_, scratch_.get(), path_, shift_,
                                   stream);
  else
    run_passes<T, unsigned long long, false>(src, dst, nullptr, nullptr, radius_x_, radius_y_, scratch_.get(), path_,
                                             shift_, stream);
}

void round_to_high_bits(Plane<uint16_t> plane, int shift, cudaStream_t stream) {
  if (plane.width == 0 || plane.height == 0 || shift <= 0) return;
  if (shift > 15) throw std::invalid_argument("round_to_high_bits: shift must be 1..15");
  const int samples = plane.samples_per_row();
  for (int y0 = 0; y0 < plane.height; y0 += kMaxGridY) {  // grid.y is limited
    const int rows = std::min(kMaxGridY, plane.height - y0);
    const dim3 grid((samples + 255) / 256, rows);
    round_high_bits_kernel<<<grid, 256, 0, stream>>>(plane.row(y0), plane.pitch, samples, rows, shift);
    STREAMBLUR_CHECK_LAUNCH("round_high_bits_kernel", stream);
  }
}

void shift_samples(Plane<uint16_t> plane, int shift, cudaStream_t stream) {
  if (shift < -15 || shift > 15) throw std::invalid_argument("shift_samples: shift must be -15..15");
  if (plane.width == 0 || plane.height == 0 || shift == 0) return;
  const int samples = plane.samples_per_row();
  for (int y0 = 0; y0 < plane.height; y0 += kMaxGridY) {  // grid.y is limited
    const int rows = std::min(kMaxGridY, plane.height - y0);
    const dim3 grid((samples + 255) / 256, rows);
    shift_samples_kernel<<<grid, 256, 0, stream>>>(plane.row(y0), plane.pitch, samples, rows, shift);
    STREAMBLUR_CHECK_LAUNCH("shift_samples_kernel", stream);
  }
}

template void copy_plane<uint8_t>(Plane<const uint8_t>, Plane<uint8_t>, cudaStream_t);
template void copy_plane<uint16_t>(Plane<const uint16_t>, Plane<uint16_t>, cudaStream_t);
template void GaussianBlur::apply<uint8_t>(Plane<const uint8_t>, Plane<uint8_t>, cudaStream_t);
template void GaussianBlur::apply<uint16_t>(Plane<const uint16_t>, Plane<uint16_t>, cudaStream_t);
template void BoxBlur::apply<uint8_t>(Plane<const uint8_t>, Plane<uint8_t>, cudaStream_t);
template void BoxBlur::apply<uint16_t>(Plane<const uint16_t>, Plane<uint16_t>, cudaStream_t);

}  // namespace streamblur::cuda
