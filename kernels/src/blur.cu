// Separable Gaussian and box blurs of one pitch-linear plane.
//
// Small and medium radii run fused: a block stages its output tile plus halo
// of the source in shared memory, runs the horizontal pass over the tile's
// rows and halo rows into shared memory, then the vertical pass, so global
// memory sees about one read (plus halo) and one write per sample. One-channel
// planes use a kernel with 4 samples per thread (vector loads and stores,
// register windows); interleaved channels a generic one, which is limited by
// per-sample instructions and so pays only up to r = 3. Larger radii run in
// two passes:
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

// Fused kernel: block of 32 x 8 threads, output tile of 64 samples x 32 rows.
constexpr int kFThreadsX = 32;
constexpr int kFThreadsY = 8;
constexpr int kFTileW = 64;
constexpr int kFTileH = 32;
// Auto choice for interleaved channels: the generic fused kernel beats two
// passes up to r = 3 (tuning.json: "blur.fused_max_radius").
constexpr int kFusedMaxRadiusY = 3;

template <class In>
std::size_t fused_shared_bytes(int rx, int ry, int channels, std::size_t sample_bytes, bool weighted) {
  const std::size_t in_h = kFTileH + 2 * ry, in_w = kFTileW + 2 * static_cast<std::size_t>(rx) * channels;
  const std::size_t w = weighted ? (2 * rx + 1 + 2 * ry + 1) * sizeof(float) : 0;
  return w + in_h * kFTileW * sizeof(In) + in_h * in_w * sample_bytes;
}

template <class T, class In, class Acc, bool kWeighted>
__global__ void __launch_bounds__(kFThreadsX * kFThreadsY)
fused_blur(const T* __restrict__ src, std::ptrdiff_t src_pitch, T* __restrict__ dst, std::ptrdiff_t dst_pitch,
           int samples, int height, int channels, const float* __restrict__ weights, int rx, int ry,
           unsigned long long box_count) {
  extern __shared__ float smem[];
  const int halo_x = rx * channels;
  const int in_w = kFTileW + 2 * halo_x, in_h = kFTileH + 2 * ry;
  float* wx = smem;
  float* wy = wx + (kWeighted ? 2 * rx + 1 : 0);
  In* hsum = reinterpret_cast<In*>(wy + (kWeighted ? 2 * ry + 1 : 0));  // in_h x kFTileW
  T* tile = reinterpret_cast<T*>(hsum + in_h * kFTileW);                 // in_h x in_w
  const int tx = threadIdx.x, ty = threadIdx.y, tid = ty * kFThreadsX + tx;
  const int x0 = blockIdx.x * kFTileW, y0 = blockIdx.y * kFTileH;
  if (kWeighted) {
    for (int i = tid; i < 2 * rx + 1; i += kFThreadsX * kFThreadsY) wx[i] = weights[i];
    for (int i = tid; i < 2 * ry + 1; i += kFThreadsX * kFThreadsY) wy[i] = weights[2 * rx + 1 + i];
  }
  for (int r = ty; r < in_h; r += kFThreadsY) {
    const T* in = row_ptr(src, src_pitch, min(max(y0 - ry + r, 0), height - 1));
    for (int c = tx; c < in_w; c += kFThreadsX) tile[r * in_w + c] = in[clamp_sample(x0 - halo_x + c, samples, channels)];
  }
  __syncthreads();
  for (int r = ty; r < in_h; r += kFThreadsY)
    for (int c = tx; c < kFTileW; c += kFThreadsX) {
      const T* p = tile + r * in_w + c + halo_x;
      In acc = 0;
      for (int k = -rx; k <= rx; ++k) {
        if constexpr (kWeighted) acc += wx[k + rx] * static_cast<float>(p[k * channels]);
        else acc += static_cast<In>(p[k * channels]);
      }
      hsum[r * kFTileW + c] = acc;
    }
  __syncthreads();
  for (int r = ty; r < kFTileH; r += kFThreadsY) {
    const int y = y0 + r;
    if (y >= height) break;
    T* out = row_ptr(dst, dst_pitch, y);
    for (int c = tx; c < kFTileW; c += kFThreadsX) {
      const int x = x0 + c;
      if (x >= samples) break;
      Acc acc = 0;
      for (int k = 0; k <= 2 * ry; ++k) {
        if constexpr (kWeighted) acc += wy[k] * hsum[(r + k) * kFTileW + c];
        else acc += static_cast<Acc>(hsum[(r + k) * kFTileW + c]);
      }
      if constexpr (kWeighted) out[x] = round_clamp<T>(acc);
      else out[x] = static_cast<T>(box_round(acc, box_count));
    }
  }
}

// Fused kernel for planes of one channel (Y, U, V, gray): each thread owns
// 4 adjacent samples of 4 rows. Rows are loaded 4 samples at a time (one
// 32- or 64-bit load) where the tile lies inside the plane, the horizontal pass
// slides a register window along the row, and results are stored 4 at a time.
constexpr int kX4ThreadsX = 32;
constexpr int kX4ThreadsY = 8;
constexpr int kX4TileW = kX4ThreadsX * 4;  // 128 samples
constexpr int kX4TileH = kX4ThreadsY * 4;  // 32 rows
constexpr int kX4MaxRadius = 32;           // halo columns are loaded by one thread each
// Auto uses it up to these radii: it beats two passes up to r = 15 for the
// Gaussian and r = 8 for the box, not at 30 / 15 (tuning.json:
// "blur.x4_auto_max_radius").
constexpr int kX4AutoMaxRadiusGauss = 16;
constexpr int kX4AutoMaxRadiusBox = 8;

template <class In>
std::size_t x4_shared_bytes(int rx, int ry, std::size_t sample_bytes, bool weighted) {
  const std::size_t in_h = kX4TileH + 2 * ry, in_w = kX4TileW + 2 * rx;
  const std::size_t w = weighted ? (2 * rx + 1 + 2 * ry + 1) * sizeof(float) : 0;
  const std::size_t tile = (in_h * in_w * sample_bytes + 15) / 16 * 16;
  return (w + 15) / 16 * 16 + tile + in_h * kX4TileW * sizeof(In);
}

template <class T> struct Vec4;
template <> struct Vec4<uint8_t> { using type = uchar4; };
template <> struct Vec4<uint16_t> { using type = ushort4; };

template <class T, class In, class Acc, bool kWeighted>
__global__ void __launch_bounds__(kX4ThreadsX * kX4ThreadsY)
fused_blur_x4(const T* __restrict__ src, std::ptrdiff_t src_pitch, T* __restrict__ dst, std::ptrdiff_t dst_pitch,
              int samples, int height, const float* __restrict__ weights, int rx, int ry,
              unsigned long long box_count, bool vector_io) {
  using V = typename Vec4<T>::type;
  extern __shared__ float smem[];
  const int in_w = kX4TileW + 2 * rx, in_h = kX4TileH + 2 * ry;
  float* wx = smem;
  float* wy = wx + (kWeighted ? 2 * rx + 1 : 0);
  const int wfloats = kWeighted ? 2 * rx + 1 + 2 * ry + 1 : 0;
  T* tile = reinterpret_cast<T*>(smem + (wfloats + 3) / 4 * 4);
  In* hsum = reinterpret_cast<In*>(reinterpret_cast<unsigned char*>(tile) +
                                   (static_cast<std::size_t>(in_h) * in_w * sizeof(T) + 15) / 16 * 16);
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int x0 = blockIdx.x * kX4TileW, y0 = blockIdx.y * kX4TileH;
  if (kWeighted) {
    for (int i = ty * kX4ThreadsX + tx; i < wfloats; i += kX4ThreadsX * kX4ThreadsY)
      smem[i] = weights[i];  // horizontal then vertical, as stored
  }
  const bool full_row = vector_io && x0 + kX4TileW <= samples;
  for (int r = ty; r < in_h; r += kX4ThreadsY) {
    const T* in = row_ptr(src, src_pitch, min(max(y0 - ry + r, 0), height - 1));
    T* t = tile + r * in_w;
    const int c = tx * 4;
    if (full_row) {
      const V v = *reinterpret_cast<const V*>(in + x0 + c);
      t[rx + c] = v.x; t[rx + c + 1] = v.y; t[rx + c + 2] = v.z; t[rx + c + 3] = v.w;
    } else {
#pragma unroll
      for (int j = 0; j < 4; ++j) t[rx + c + j] = in[min(max(x0 + c + j, 0), samples - 1)];
    }
    if (tx < rx) {  // halo columns, clamped at the plane's edges
      t[tx] = in[min(max(x0 - rx + tx, 0), samples - 1)];
      t[rx + kX4TileW + tx] = in[min(max(x0 + kX4TileW + tx, 0), samples - 1)];
    }
  }
  __syncthreads();
  // Horizontal: 4 outputs per thread per row from a window of 4 + 2rx samples.
  for (int r = ty; r < in_h; r += kX4ThreadsY) {
    const T* t = tile + r * in_w + tx * 4;
    In acc[4] = {0, 0, 0, 0};
    for (int i = 0; i < 4 + 2 * rx; ++i) {
      const T v = t[i];
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        const int k = i - j;
        if (k >= 0 && k <= 2 * rx) {
          if constexpr (kWeighted) acc[j] += wx[k] * static_cast<float>(v);
          else acc[j] += static_cast<In>(v);
        }
      }
    }
    In* h = hsum + r * kX4TileW + tx * 4;
#pragma unroll
    for (int j = 0; j < 4; ++j) h[j] = acc[j];
  }
  __syncthreads();
  // Vertical: 4 columns x 4 rows per thread.
  const int c = tx * 4, r0 = ty * 4;
  Acc acc[4][4] = {};
  for (int i = 0; i < 4 + 2 * ry; ++i) {
    const In* h = hsum + (r0 + i) * kX4TileW + c;
    In v[4];
#pragma unroll
    for (int q = 0; q < 4; ++q) v[q] = h[q];
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const int k = i - j;
      if (k >= 0 && k <= 2 * ry) {
#pragma unroll
        for (int q = 0; q < 4; ++q) {
          if constexpr (kWeighted) acc[j][q] += wy[k] * v[q];
          else acc[j][q] += static_cast<Acc>(v[q]);
        }
      }
    }
  }
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    const int y = y0 + r0 + j;
    if (y >= height) break;
    T* out = row_ptr(dst, dst_pitch, y) + x0 + c;
    T o[4];
#pragma unroll
    for (int q = 0; q < 4; ++q) {
      if constexpr (kWeighted) o[q] = round_clamp<T>(acc[j][q]);
      else o[q] = static_cast<T>(box_round(acc[j][q], box_count));
    }
    if (full_row) {
      V v;
      v.x = o[0]; v.y = o[1]; v.z = o[2]; v.w = o[3];
      *reinterpret_cast<V*>(out) = v;
    } else {
#pragma unroll
      for (int q = 0; q < 4; ++q)
        if (x0 + c + q < samples) out[q] = o[q];
    }
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

// The kernel that runs, after Auto's choice and the fall-backs.
enum class Kernel { Tensor, Sliding, Register, Running, Wide, FusedX4, Fused, TwoPass };

// Auto's choice, from the kernel benchmark (8- and 16-bit planes, 1080p and
// 4K; the figures are in tuning.json, under the entries named here and by the
// constants below):
// - Gaussians on one-channel 8-bit planes: the tensor-core kernel from
//   kTensorFromRadius(Large) to radius 32, and on 8-bit pairs while the band
//   meets at most 4 blocks of taps (to sigma 7), on planes under 2 M samples
//   from 3 blocks (sigma 3);
// - other Gaussians on one-channel planes: the register-blocked kernels up to
//   radius 32 (faster than the fused and sliding ones at every sigma and size
//   measured), the wide two passes above and, on planes of 4 M samples or
//   more, from kWideFromRadiusLarge;
// - boxes of radius 1: the 3x3 box kernel (the sliding path's radius 1) on
//   every plane, ahead of the register and fused kernels ("blur.auto_box3");
// - other boxes up to radius 32: register-blocked, on smaller planes from
//   radius 1 too, where it ties or beats the fused kernel
//   ("blur.auto_box_register"); running sums from kRunningFromRadius (two
//   passes where those cannot run).
// Interleaved channels: Gaussians on 8-bit pairs the tensor-core kernel as
// above, on other pairs the wide passes; boxes on pairs take the running
// sums (from kRunningFromRadiusPairs); other cases the generic fused kernel
// up to ry = 3, else two passes.
constexpr long long kLargePlaneSamples = 4'000'000;
// Boxes from this radius (rx or ry) take the running sums, whose cost does
// not grow with the radius: on one-channel planes beyond the register path's
// reach and, before it, from about where they overtake the register kernel
// (on planes of 4 M samples or more 9 at 8 bits and 7 at 16, else 11); on
// interleaved pairs from r = 1, ahead of the generic fused kernel and
// two passes (tuning.json: "blur.running_from_radius").
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
// under this many samples from kTensorPairsSmallFromBlocks (see choose_kernel).
constexpr long long kTensorPairsMinSamples = 2'000'000;
constexpr int kTensorPairsMaxBlocks = 4;
constexpr int kTensorPairsSmallFromBlocks = 3;

template <class In>
Kernel choose_kernel(BlurPath path, bool weighted, int channels, std::size_t sample_bytes, int rx, int ry,
                     int samples, int height) {
  const bool one_channel = channels == 1;
  const long long samples_total = static_cast<long long>(samples) * height;
  const bool large = samples_total >= kLargePlaneSamples;
  const bool sliding_fits = one_channel && tiled::sliding_fits(!weighted, rx, ry);
  const bool register_fits =
      one_channel && (weighted ? tiled::gauss_fits(rx, ry, sample_bytes) : tiled::box_fits(rx, ry, sample_bytes));
  const bool running_fits = !weighted && running::fits(samples / channels, channels, sample_bytes, rx, ry);
  const bool wide_fits = weighted && wide::fits(channels, rx, ry);
  const bool tensor_fits = weighted && tensor::fits(rx, ry, sample_bytes, channels);
  if (path == BlurPath::Tensor && tensor_fits) return Kernel::Tensor;
  if (path == BlurPath::Tensor) path = BlurPath::Register;
  if (path == BlurPath::Wide && wide_fits) return Kernel::Wide;
  // Interleaved 8-bit pairs: the tensor-core kernel (each channel staged
  // apart, so its blocks of taps are counted in pixels) while its band meets
  // at most 4 blocks of taps, on planes under 2 M samples from 3 blocks: at 5
  // blocks its lead over the wide passes is under 5%, and on a 1080p frame's
  // UV plane it is no faster than them at 2 and 4 blocks (tuning.json:
  // "blur.tensor_pairs").
  if (path == BlurPath::Auto && channels == 2 && tensor_fits) {
    const int blocks = tensor::tap_blocks(rx, ry);
    if (blocks <= kTensorPairsMaxBlocks &&
        (samples_total >= kTensorPairsMinSamples || blocks >= kTensorPairsSmallFromBlocks))
      return Kernel::Tensor;
  }
  // Other pairs: the wide passes at every sigma measured, ahead of the
  // generic fused kernel (tuning.json: "blur.wide_pairs").
  if (path == BlurPath::Auto && wide_fits && channels == 2) return Kernel::Wide;
  if (path == BlurPath::Wide) path = BlurPath::TwoPass;
  const int running_from =
      one_channel ? (large ? (sample_bytes == 1 ? kRunningFromRadiusLarge : kRunningFromRadiusLarge16) : kRunningFromRadius)
                  : kRunningFromRadiusPairs;
  const int wide_from = large ? kWideFromRadiusLarge : tiled::kMaxRadius + 1;
  if (path == BlurPath::Auto && running_fits && std::max(rx, ry) >= running_from) return Kernel::Running;
  if (path == BlurPath::Running && running_fits) return Kernel::Running;
  if (path == BlurPath::Running) path = BlurPath::Register;
  if (path == BlurPath::Auto && one_channel) {
    if (!weighted && rx == 1 && ry == 1 && sliding_fits) return Kernel::Sliding;
    else if (tensor_fits && std::max(rx, ry) >= (large ? kTensorFromRadiusLarge : kTensorFromRadius))
      return Kernel::Tensor;
    else if (weighted && wide_fits && std::max(rx, ry) >= wide_from) return Kernel::Wide;
    else if (register_fits) return Kernel::Register;
  }
  if (path == BlurPath::Sliding && sliding_fits) return Kernel::Sliding;
  if (path == BlurPath::Sliding) path = BlurPath::Register;
  if (path == BlurPath::Register && register_fits) return Kernel::Register;
  if (path == BlurPath::Register) path = BlurPath::Fused;
  const int auto_max = weighted ? kX4AutoMaxRadiusGauss : kX4AutoMaxRadiusBox;
  const bool auto_x4 = path == BlurPath::Auto && rx <= auto_max && ry <= auto_max;
  if (one_channel && (path == BlurPath::Fused || auto_x4) && rx <= kX4MaxRadius &&
      x4_shared_bytes<In>(rx, ry, sample_bytes, weighted) <= kMaxShared &&
      (height + kX4TileH - 1) / kX4TileH <= kMaxGridY)
    return Kernel::FusedX4;
  if ((path == BlurPath::Fused || (path == BlurPath::Auto && ry <= kFusedMaxRadiusY)) &&
      fused_shared_bytes<In>(rx, ry, channels, sample_bytes, weighted) <= kMaxShared &&
      (height + kFTileH - 1) / kFTileH <= kMaxGridY)
    return Kernel::Fused;
  if (path == BlurPath::Auto && wide_fits) return Kernel::Wide;
  return Kernel::TwoPass;
}

BlurPath path_of(Kernel k) {
  switch (k) {
    case Kernel::Tensor: return BlurPath::Tensor;
    case Kernel::Sliding: return BlurPath::Sliding;
    case Kernel::Register: return BlurPath::Register;
    case Kernel::Running: return BlurPath::Running;
    case Kernel::Wide: return BlurPath::Wide;
    case Kernel::FusedX4:
    case Kernel::Fused: return BlurPath::Fused;
    default: return BlurPath::TwoPass;
  }
}

// The 4-per-thread fused kernel from src into out (its launch; the caller
// checks it).
template <class T, class In, class Acc, bool kWeighted>
void launch_fused_x4(Plane<const T> src, Plane<T> out, const float* weights, int rx, int ry, int samples, int height,
                     unsigned long long box_count, cudaStream_t stream) {
  const std::size_t shared = x4_shared_bytes<In>(rx, ry, sizeof(T), kWeighted);
  const unsigned grid_y = (height + kX4TileH - 1) / kX4TileH;
  const std::size_t align = 4 * sizeof(T);
  auto aligned = [&](const void* p, std::ptrdiff_t pitch) {
    return reinterpret_cast<std::uintptr_t>(p) % align == 0 && pitch % static_cast<std::ptrdiff_t>(align) == 0;
  };
  const bool vector_io = aligned(src.data, src.pitch) && aligned(out.data, out.pitch);
  const dim3 grid((samples + kX4TileW - 1) / kX4TileW, grid_y);
  fused_blur_x4<T, In, Acc, kWeighted><<<grid, dim3(kX4ThreadsX, kX4ThreadsY), shared, stream>>>(
      src.data, src.pitch, out.data, out.pitch, samples, height, weights, rx, ry, box_count, vector_io);
}

// The generic fused kernel from src into out (its launch; the caller checks
// it).
template <class T, class In, class Acc, bool kWeighted>
void launch_fused(Plane<const T> src, Plane<T> out, const float* weights, int rx, int ry, int samples, int height,
                  unsigned long long box_count, cudaStream_t stream) {
  const std::size_t shared = fused_shared_bytes<In>(rx, ry, src.channels, sizeof(T), kWeighted);
  const unsigned grid_y = (height + kFTileH - 1) / kFTileH;
  const dim3 grid((samples + kFTileW - 1) / kFTileW, grid_y);
  fused_blur<T, In, Acc, kWeighted><<<grid, dim3(kFThreadsX, kFThreadsY), shared, stream>>>(
      src.data, src.pitch, out.data, out.pitch, samples, height, src.channels, weights, rx, ry, box_count);
}

// Two passes through the scratch plane: horizontal from src into it, then
// vertical from it into dst, each launch checked.
template <class T, class In, class Acc, bool kWeighted>
void run_two_passes(Plane<const T> src, Plane<T> dst, const float* weights, int rx, int ry, void* scratch,
                    int samples, int height, cudaStream_t stream) {
  const std::ptrdiff_t tmp_pitch = static_cast<std::ptrdiff_t>(scratch_pitch(samples));
  In* tmp = static_cast<In*>(scratch);
  const float* wx = weights;
  const float* wy = kWeighted ? weights + 2 * rx + 1 : nullptr;

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
  const unsigned long long box_count = static_cast<unsigned long long>(2 * rx + 1) * (2 * ry + 1);
  // Tiles read their neighbours' rows, so in place a fused kernel writes to the
  // scratch plane and the result is copied back (still fewer bytes than two passes).
  const bool in_place = src.data == dst.data;
  const Plane<T> out = in_place ? Plane<T>(static_cast<T*>(scratch), src.width, height,
                                           static_cast<std::ptrdiff_t>(scratch_pitch(samples)), src.channels)
                                : dst;
  auto finish_fused = [&](const char* kernel) {
    STREAMBLUR_CHECK_LAUNCH(kernel, stream);
    if (in_place) copy_plane<T>(Plane<const T>(out), dst, stream);
  };
  const Kernel kernel = choose_kernel<In>(path, kWeighted, src.channels, sizeof(T), rx, ry, samples, height);
  const bool takes_shift = kernel == Kernel::Wide || (kernel == Kernel::Register && kWeighted);
  if (shift != 0 && !takes_shift) {
    if constexpr (sizeof(T) == 2) {
      if (in_place) shift_samples(dst, shift, stream);
      else shift_copy<T>(src, dst, shift, stream);
      run_passes<T, Acc, kWeighted>(Plane<const T>(dst), dst, weights, host_weights, rx, ry, scratch, path, 0, stream);
      shift_samples(dst, -shift, stream);
    }
    return;
  }
  if (kernel == Kernel::Tensor) {
    if constexpr (kWeighted && sizeof(T) == 1)
      tensor::gauss(src.data, src.pitch, out.data, out.pitch, samples, height, src.channels, host_weights, rx,
                    host_weights + 2 * rx + 1, ry, stream);
    return finish_fused("gauss_tensor");
  }
  if (kernel == Kernel::Sliding) {
    tiled::sliding<T>(src.data, src.pitch, out.data, out.pitch, samples, height, host_weights, rx,
                      kWeighted ? host_weights + 2 * rx + 1 : nullptr, ry, stream);
    return finish_fused("sliding_blur");
  }
  if (kernel == Kernel::Running) {
    if constexpr (!kWeighted) {
      void* sums = in_place ? static_cast<unsigned char*>(scratch) + scratch_pitch(samples) * height : scratch;
      running::box<T>(src.data, src.pitch, out.data, out.pitch, src.width, height, src.channels, rx, ry, sums, stream);
    }
    if (in_place) copy_plane<T>(Plane<const T>(out), dst, stream);
    return;
  }
  if (kernel == Kernel::Wide) {
    if constexpr (kWeighted)
      wide::gauss<T>(src.data, src.pitch, dst.data, dst.pitch, src.width, height, src.channels, weights, rx,
                     weights + 2 * rx + 1, ry, shift, scratch, stream);  // scratch_pitch >= wide::plane_pitch
    return;
  }
  if (kernel == Kernel::Register) {
    if constexpr (kWeighted)
      tiled::gauss<T>(src.data, src.pitch, out.data, out.pitch, samples, height, host_weights, rx,
                      host_weights + 2 * rx + 1, ry, shift, stream);
    else
      tiled::box<T>(src.data, src.pitch, out.data, out.pitch, samples, height, rx, ry, stream);
    return finish_fused(kWeighted ? "gauss_tiled" : "box_tiled");
  }
  if (kernel == Kernel::FusedX4) {
    launch_fused_x4<T, In, Acc, kWeighted>(src, out, weights, rx, ry, samples, height, box_count, stream);
    return finish_fused("fused_blur_x4");
  }
  if (kernel == Kernel::Fused) {
    launch_fused<T, In, Acc, kWeighted>(src, out, weights, rx, ry, samples, height, box_count, stream);
    return finish_fused("fused_blur");
  }
  run_two_passes<T, In, Acc, kWeighted>(src, dst, weights, rx, ry, scratch, samples, height, stream);
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
    case BlurPath::Fused: return "fused";
    case BlurPath::TwoPass: return "two-pass";
    case BlurPath::Register: return "register";
    case BlurPath::Sliding: return "sliding";
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
  return path_of(choose_kernel<float>(PathAccess::get(blur), true, channels, sample_bytes, blur.radius_x(),
                                      blur.radius_y(), width * channels, height));
}

BlurPath path_taken(const BoxBlur& blur, int width, int height, int channels, std::size_t sample_bytes) {
  return path_of(choose_kernel<uint32_t>(PathAccess::get(blur), false, channels, sample_bytes, blur.radius_x(),
                                         blur.radius_y(), width * channels, height));
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
