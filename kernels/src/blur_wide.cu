// Gaussians of any radius in two register-blocked passes: the "wide" path of
// cuda::GaussianBlur, for planes of one channel and interleaved pairs (UV).
//
// The fused kernels (blur_tiled.cu) recompute their tile's halo rows and stop
// at radius 32; the older two-pass kernels (blur.cu) make a shared-memory load
// per tap. Here each pass is bound by its FMAs and its bytes:
//
// Pass 1 (rows, source -> intermediate plane): each thread computes 16
// consecutive samples of a row. It reads the row 16 samples at a time (one
// 16- or 32-byte load where the group lies inside the plane, clamped single
// loads at the edges), converts them to floats in registers, and runs the
// taps in chunks of 16: a chunk is 256 FMAs of 16 accumulators against a
// window of (channels + 1) x 16 samples. The next chunk's loads are issued
// before a chunk's FMAs and converted after them; three 16-sample buffers
// take turns as the window's parts, so nothing is copied between chunks. The
// taps are zero-padded at the front so that every group load is 16-sample
// aligned, and at the back to whole chunks; zeros add exactly nothing.
//
// The intermediate plane is 16-bit fixed point for 8-bit sources (the
// horizontal result times 256, rounded: within 1/512 of the float, so the
// output stays within the reference's +-1 and rarely differs from the float
// path, at half the bytes) and float for 16-bit sources.
//
// Pass 2 (columns, intermediate -> destination): each thread computes 16
// consecutive rows of two adjacent sample columns, the warp across 64
// columns, so each row load is one coalesced line; the same chunks of 16 taps
// slide down a 32-row window of three rotating buffers.
//
// Taps sit in shared memory, read as float4 broadcasts. Per output sample:
// about 2 x (2r+1) FMAs rounded up to chunks, one read of the source, one
// write and about one read of the intermediate plane (the columns pass
// rereads 2r halo rows per 16-row group, mostly from L1), one write.
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <stdexcept>

#include "blur_wide.hpp"
#include "device_rows.cuh"
#include "streamblur/kernels/cuda_check.hpp"

namespace streamblur::cuda::wide {
namespace {

constexpr int kGroup = 16;     // samples per thread and taps per chunk
constexpr int kRowWarps = 8;   // rows per block of the rows pass
constexpr int kColWarps = 4;   // 16-row groups per block of the columns pass
constexpr int kMaxGridY = 65535;
constexpr std::size_t kMaxTapBytes = 48 * 1024;

using detail::round_clamp;
using detail::check_shift;
using detail::to_high_bits;
using detail::row_ptr;

// Index of sample s of a row after clamping its pixel to the plane: the
// channel is kept, the pixel clamped.
template <int C>
__device__ __forceinline__ int clamp_sample(int s, int samples) {
  if (s < 0) return ((s % C) + C) % C;
  if (s >= samples) return samples - C + (s - samples) % C;
  return s;
}

// 16 samples as loaded: 16 bytes, or 32 for 16-bit samples.
template <class T> struct Raw;
template <> struct Raw<uint8_t> { uint4 v[1]; };
template <> struct Raw<uint16_t> { uint4 v[2]; };

__device__ __forceinline__ uint32_t pack(const uint8_t* s) {
  return s[0] | static_cast<uint32_t>(s[1]) << 8 | static_cast<uint32_t>(s[2]) << 16 | static_cast<uint32_t>(s[3]) << 24;
}
__device__ __forceinline__ uint32_t pack(const uint16_t* s) { return s[0] | static_cast<uint32_t>(s[1]) << 16; }

// Samples s .. s+15 of a row. vec: the row is 16-byte aligned (s is always a
// multiple of 16).
template <class T, int C>
__device__ __forceinline__ Raw<T> load_group(const T* __restrict__ row, int s, int samples, bool vec) {
  constexpr int kWords = sizeof(Raw<T>) / 16;
  Raw<T> r;
  if (vec && s >= 0 && s + kGroup <= samples) {
    const uint4* p = reinterpret_cast<const uint4*>(row + s);
#pragma unroll
    for (int i = 0; i < kWords; ++i) r.v[i] = __ldg(p + i);
  } else {
    T v[kGroup];
#pragma unroll
    for (int q = 0; q < kGroup; ++q) v[q] = row[clamp_sample<C>(s + q, samples)];
    constexpr int kPer = 4 / sizeof(T);  // samples per 32-bit word
#pragma unroll
    for (int i = 0; i < kWords; ++i) {
      r.v[i].x = pack(v + (4 * i + 0) * kPer);
      r.v[i].y = pack(v + (4 * i + 1) * kPer);
      r.v[i].z = pack(v + (4 * i + 2) * kPer);
      r.v[i].w = pack(v + (4 * i + 3) * kPer);
    }
  }
  return r;
}

// To floats: 0x4B0000xx (or 0x4B00xxxx) is the float 2^23 + xx exactly, so a
// PRMT and a FADD replace a quarter-rate I2F.
__device__ __forceinline__ float from_bits(uint32_t w, uint32_t selector) {
  return __int_as_float(__byte_perm(w, 0x4B000000u, selector)) - 8388608.0f;
}
// keep: the bits of each 32-bit word (two 16-bit samples) that hold the
// values (P010: the high 10 of each; all bits otherwise).
__device__ __forceinline__ void unpack(const Raw<uint8_t>& r, float* out, uint32_t /*keep*/) {
  const uint32_t w[4] = {r.v[0].x, r.v[0].y, r.v[0].z, r.v[0].w};
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int b = 0; b < 4; ++b) out[4 * i + b] = from_bits(w[i], 0x7440u + b);
}
__device__ __forceinline__ void unpack(const Raw<uint16_t>& r, float* out, uint32_t keep) {
  uint32_t w[8] = {r.v[0].x, r.v[0].y, r.v[0].z, r.v[0].w, r.v[1].x, r.v[1].y, r.v[1].z, r.v[1].w};
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    w[i] &= keep;
    out[2 * i] = from_bits(w[i], 0x7410u);
    out[2 * i + 1] = from_bits(w[i], 0x7432u);
  }
}

// The block's taps in shared memory: `front` zeros, the 2r+1 weights times
// `scale`, zeros up to `chunks` x 16.
__device__ __forceinline__ void stage_taps(float* taps, const float* __restrict__ weights, int radius, int front,
                                           int chunks, float scale) {
  const int n = chunks * kGroup;
  for (int i = threadIdx.y * blockDim.x + threadIdx.x; i < n; i += blockDim.x * blockDim.y) {
    const int k = i - front;
    taps[i] = k >= 0 && k <= 2 * radius ? weights[k] * scale : 0.0f;
  }
  __syncthreads();
}

// Sample i of a window held in 16-sample buffers X, Y (and Z); i is a
// compile-time constant once unrolled, so this is a register.
template <class V>
__device__ __forceinline__ const V& pick(const V* X, const V* Y, const V* Z, int i) {
  return i < kGroup ? X[i] : i < 2 * kGroup ? Y[i - kGroup] : Z[i - 2 * kGroup];
}

__device__ __forceinline__ void fma_v(float w, float v, float& a) { a = fmaf(w, v, a); }
__device__ __forceinline__ void fma_v(float w, float2 v, float2& a) {
  a.x = fmaf(w, v.x, a.x);
  a.y = fmaf(w, v.y, a.y);
}

__device__ __forceinline__ void add_v(float v, float& a) { a += v; }
__device__ __forceinline__ void add_v(float2 v, float2& a) {
  a.x += v.x;
  a.y += v.y;
}

// One chunk: acc[j] += taps[k] * window[j + k * C] for the chunk's 16 taps.
// kPartial: the chunk's 16 products are summed apart and then added, so that
// a sum of n taps rounds at full magnitude n / 16 times instead of n. 16-bit
// samples need it: at sigma 100 (601 and 401 taps) plain fp32 sums flipped
// the rounding of 1% of the samples against the float64 reference; 8-bit
// sums are far from that (their intermediate plane's 1/512 dominates).
template <int C, bool kPartial, class V>
__device__ __forceinline__ void chunk_fma(const float4* __restrict__ taps4, const V* X, const V* Y, const V* Z, V* acc) {
  V part[kGroup];
#pragma unroll
  for (int j = 0; j < kGroup; ++j) part[j] = V{};
  V* sum = kPartial ? part : acc;
#pragma unroll
  for (int q = 0; q < 4; ++q) {
    const float4 w4 = taps4[q];
    const float w[4] = {w4.x, w4.y, w4.z, w4.w};
#pragma unroll
    for (int kk = 0; kk < 4; ++kk)
#pragma unroll
      for (int j = 0; j < kGroup; ++j) fma_v(w[kk], pick(X, Y, Z, j + (4 * q + kk) * C), sum[j]);
  }
  if constexpr (kPartial) {
#pragma unroll
    for (int j = 0; j < kGroup; ++j) add_v(part[j], acc[j]);
  }
}

// The float plane between the passes: 8-bit sources keep it as 16-bit fixed
// point (the horizontal result times 256, rounded: within 1/512 of the float,
// half the bytes); 16-bit sources as floats.
template <class T> struct Mid { using type = float; };
template <> struct Mid<uint8_t> { using type = uint16_t; };
template <class T> constexpr float kMidScale = sizeof(T) == 1 ? 256.0f : 1.0f;

// A rows-pass result group of 16 written to the intermediate plane.
__device__ __forceinline__ void store_group(float* out, const float* acc, bool whole, int valid) {
  if (whole) {
#pragma unroll
    for (int q = 0; q < kGroup / 4; ++q)
      reinterpret_cast<float4*>(out)[q] = make_float4(acc[4 * q], acc[4 * q + 1], acc[4 * q + 2], acc[4 * q + 3]);
  } else {
#pragma unroll
    for (int j = 0; j < kGroup; ++j)
      if (j < valid) out[j] = acc[j];
  }
}
__device__ __forceinline__ void store_group(uint16_t* out, const float* acc, bool whole, int valid) {
  uint32_t u[kGroup];
#pragma unroll
  for (int j = 0; j < kGroup; ++j) u[j] = __float2uint_rn(acc[j] * 256.0f);
  if (whole) {
#pragma unroll
    for (int q = 0; q < kGroup / 8; ++q)
      reinterpret_cast<uint4*>(out)[q] = make_uint4(u[8 * q] | u[8 * q + 1] << 16, u[8 * q + 2] | u[8 * q + 3] << 16,
                                                    u[8 * q + 4] | u[8 * q + 5] << 16, u[8 * q + 6] | u[8 * q + 7] << 16);
  } else {
#pragma unroll
    for (int j = 0; j < kGroup; ++j)
      if (j < valid) out[j] = static_cast<uint16_t>(u[j]);
  }
}

// One chunk of the rows pass: the next chunk's new groups are loaded before
// this chunk's FMAs and converted after them, into the buffers the next
// chunk's window adds (C = 1: Z, free during this chunk; C = 2: X and Y,
// whose samples this chunk is the last to use).
template <class T, int C>
__device__ __forceinline__ void row_chunk(float* X, float* Y, float* Z, const T* __restrict__ row, int next, int samples,
                                          bool vec, bool more, const float4* __restrict__ taps4, float* acc,
                                          uint32_t keep) {
  Raw<T> raw[C];
  if (more) {
#pragma unroll
    for (int g = 0; g < C; ++g) raw[g] = load_group<T, C>(row, next + g * kGroup, samples, vec);
  }
  chunk_fma<C, sizeof(T) == 2>(taps4, X, Y, Z, acc);
  if (more) {
    if constexpr (C == 1) {
      unpack(raw[0], Z, keep);
    } else {
      unpack(raw[0], X, keep);
      unpack(raw[1], Y, keep);
    }
  }
}

// 8-bit, one channel: three blocks per multiprocessor (80 registers, no
// spills), faster than the compiler's 93 registers and two blocks
// (tuning.json: "wide.rows_min_blocks"). The others need more registers than that.
template <class T, int C, int kMinBlocks = sizeof(T) == 1 && C == 1 ? 3 : 2>
__global__ void __launch_bounds__(32 * kRowWarps, kMinBlocks)
wide_rows(const T* __restrict__ src, std::ptrdiff_t src_pitch, typename Mid<T>::type* __restrict__ mid,
          std::ptrdiff_t mid_pitch, int samples, int height, const float* __restrict__ weights, int radius, int front,
          int chunks, bool vec, uint32_t keep, float scale) {
  extern __shared__ float4 taps4[];
  stage_taps(reinterpret_cast<float*>(taps4), weights, radius, front, chunks, scale);
  const int y = blockIdx.y * kRowWarps + threadIdx.y;
  const int xs = (blockIdx.x * 32 + threadIdx.x) * kGroup;
  if (y >= height || xs >= samples) return;
  const T* row = row_ptr(src, src_pitch, y);
  // Output xs + j = sum over padded taps k of taps[k] * row[base + j + k * C];
  // chunk c's window is groups cC .. cC + C of 16 samples from base.
  const int base = xs - (radius + front) * C;
  float A[kGroup], B[kGroup], N[kGroup];
  float acc[kGroup];
#pragma unroll
  for (int j = 0; j < kGroup; ++j) acc[j] = 0.0f;
  unpack(load_group<T, C>(row, base, samples, vec), A, keep);
  unpack(load_group<T, C>(row, base + kGroup, samples, vec), B, keep);
  if constexpr (C == 2) unpack(load_group<T, C>(row, base + 2 * kGroup, samples, vec), N, keep);
  auto next = [&](int c) { return base + ((c + 1) * C + 1) * kGroup; };
  // Three buffers rotate roles with period 3, so no window is copied.
  for (int c = 0;; c += 3) {
    if constexpr (C == 1) {
      row_chunk<T, C>(A, B, N, row, next(c), samples, vec, c + 1 < chunks, taps4 + c * 4, acc, keep);
      if (c + 1 >= chunks) break;
      row_chunk<T, C>(B, N, A, row, next(c + 1), samples, vec, c + 2 < chunks, taps4 + (c + 1) * 4, acc, keep);
      if (c + 2 >= chunks) break;
      row_chunk<T, C>(N, A, B, row, next(c + 2), samples, vec, c + 3 < chunks, taps4 + (c + 2) * 4, acc, keep);
    } else {
      row_chunk<T, C>(A, B, N, row, next(c), samples, vec, c + 1 < chunks, taps4 + c * 4, acc, keep);
      if (c + 1 >= chunks) break;
      row_chunk<T, C>(N, A, B, row, next(c + 1), samples, vec, c + 2 < chunks, taps4 + (c + 1) * 4, acc, keep);
      if (c + 2 >= chunks) break;
      row_chunk<T, C>(B, N, A, row, next(c + 2), samples, vec, c + 3 < chunks, taps4 + (c + 2) * 4, acc, keep);
    }
    if (c + 3 >= chunks) break;
  }
  store_group(row_ptr(mid, mid_pitch, y) + xs, acc, xs + kGroup <= samples, samples - xs);
}

// Two adjacent columns of the intermediate plane, as floats.
__device__ __forceinline__ float2 load_pair(const float* p) { return __ldg(reinterpret_cast<const float2*>(p)); }
__device__ __forceinline__ float2 load_pair(const uint16_t* p) {
  const uint32_t w = __ldg(reinterpret_cast<const unsigned int*>(p));
  return make_float2(from_bits(w, 0x7410u), from_bits(w, 0x7432u));
}

// One chunk of the columns pass: rows of the next chunk's new buffer (Z, free
// during this chunk) are loaded before the FMAs.
template <bool kPartial, class M>
__device__ __forceinline__ void column_chunk(const float2* X, const float2* Y, float2* Z, const M* col,
                                             std::ptrdiff_t pitch, int next, int height, bool more,
                                             const float4* __restrict__ taps4, float2* acc) {
  if (more) {
#pragma unroll
    for (int q = 0; q < kGroup; ++q) Z[q] = load_pair(row_ptr(col, pitch, min(max(next + q, 0), height - 1)));
  }
  chunk_fma<1, kPartial>(taps4, X, Y, static_cast<const float2*>(nullptr), acc);
}

template <class T>
__device__ __forceinline__ void store_pair(T* out, float2 v, bool both, int shift) {
  out[0] = to_high_bits(round_clamp<T>(v.x), shift);
  if (both) out[1] = to_high_bits(round_clamp<T>(v.y), shift);
}

// Each thread: 16 consecutive rows of two adjacent sample columns, the warp
// across 64 columns, so each row load is one coalesced line.
template <class T>
__global__ void __launch_bounds__(32 * kColWarps)
wide_columns(const typename Mid<T>::type* __restrict__ mid, std::ptrdiff_t mid_pitch, T* __restrict__ dst,
             std::ptrdiff_t dst_pitch, int samples, int height, const float* __restrict__ weights, int radius,
             int chunks, int shift) {
  extern __shared__ float4 taps4[];
  stage_taps(reinterpret_cast<float*>(taps4), weights, radius, 0, chunks, 1.0f / kMidScale<T>);
  const int x = (blockIdx.x * 32 + threadIdx.x) * 2;
  const int ys = (blockIdx.y * kColWarps + threadIdx.y) * kGroup;
  if (x >= samples || ys >= height) return;
  // x + 1 may be one past the row's last sample: the plane's pitch leaves
  // room for it (plane_pitch), and it is never stored.
  const auto* col = mid + x;
  // Output row ys + j = sum over padded taps k of taps[k] * col[base + j + k].
  const int base = ys - radius;
  float2 A[kGroup], B[kGroup], N[kGroup], acc[kGroup];
#pragma unroll
  for (int j = 0; j < kGroup; ++j) acc[j] = make_float2(0.0f, 0.0f);
#pragma unroll
  for (int q = 0; q < kGroup; ++q) {
    A[q] = load_pair(row_ptr(col, mid_pitch, min(max(base + q, 0), height - 1)));
    B[q] = load_pair(row_ptr(col, mid_pitch, min(max(base + kGroup + q, 0), height - 1)));
  }
  auto next = [&](int c) { return base + (c + 2) * kGroup; };
  for (int c = 0;; c += 3) {
    column_chunk<sizeof(T) == 2>(A, B, N, col, mid_pitch, next(c), height, c + 1 < chunks, taps4 + c * 4, acc);
    if (c + 1 >= chunks) break;
    column_chunk<sizeof(T) == 2>(B, N, A, col, mid_pitch, next(c + 1), height, c + 2 < chunks, taps4 + (c + 1) * 4, acc);
    if (c + 2 >= chunks) break;
    column_chunk<sizeof(T) == 2>(N, A, B, col, mid_pitch, next(c + 2), height, c + 3 < chunks, taps4 + (c + 2) * 4, acc);
    if (c + 3 >= chunks) break;
  }
  const bool both = x + 1 < samples;
#pragma unroll
  for (int j = 0; j < kGroup; ++j)
    if (ys + j < height) store_pair(row_ptr(dst, dst_pitch, ys + j) + x, acc[j], both, shift);
}

// Front zeros that make (radius + front) * channels a multiple of 16.
int front_taps(int radius, int channels) {
  const int unit = kGroup / channels;
  return (radius + unit - 1) / unit * unit - radius;
}

int chunks_of(int taps) { return (taps + kGroup - 1) / kGroup; }

std::size_t tap_bytes(int chunks) { return static_cast<std::size_t>(chunks) * kGroup * sizeof(float); }

bool aligned16(const void* p, std::ptrdiff_t pitch) {
  return reinterpret_cast<std::uintptr_t>(p) % 16 == 0 && pitch % 16 == 0;
}

template <class T, int C>
void launch(const T* src, std::ptrdiff_t sp, T* dst, std::ptrdiff_t dp, int width, int height, const float* wx, int rx,
            const float* wy, int ry, int shift, void* scratch, cudaStream_t stream) {
  using M = typename Mid<T>::type;
  // With a sample shift (P010) the rows pass reads the samples with their low
  // bits cleared, 2^shift times the values, and its taps are 2^-shift times
  // the weights: its floats are the values' exactly (powers of two scale
  // without rounding), so the rest runs as on any plane.
  const uint32_t keep = 0xFFFFu >> shift << shift;
  const float scale = std::ldexp(1.0f, -shift);
  const int samples = width * C;
  M* mid = static_cast<M*>(scratch);
  const auto mp = static_cast<std::ptrdiff_t>(plane_pitch(samples, sizeof(T)));
  const int front = front_taps(rx, C);
  const int h_chunks = chunks_of(front + 2 * rx + 1);
  const unsigned row_blocks_y = static_cast<unsigned>((height + kRowWarps - 1) / kRowWarps);
  const unsigned col_blocks_y = static_cast<unsigned>((height + kGroup * kColWarps - 1) / (kGroup * kColWarps));
  if (row_blocks_y > static_cast<unsigned>(kMaxGridY)) throw std::invalid_argument("blur: plane too tall");
  const dim3 h_grid(static_cast<unsigned>((samples + 32 * kGroup - 1) / (32 * kGroup)), row_blocks_y);
  wide_rows<T, C><<<h_grid, dim3(32, kRowWarps), tap_bytes(h_chunks), stream>>>(
      src, sp, mid, mp, samples, height, wx, rx, front, h_chunks, aligned16(src, sp), keep | keep << 16, scale);
  STREAMBLUR_CHECK_LAUNCH("wide_rows", stream);
  const int v_chunks = chunks_of(2 * ry + 1);
  const dim3 v_grid(static_cast<unsigned>((samples + 63) / 64), col_blocks_y);
  wide_columns<T><<<v_grid, dim3(32, kColWarps), tap_bytes(v_chunks), stream>>>(mid, mp, dst, dp, samples, height, wy,
                                                                               ry, v_chunks, shift);
  STREAMBLUR_CHECK_LAUNCH("wide_columns", stream);
}

}  // namespace

std::size_t plane_pitch(int samples, std::size_t sample_bytes) {
  // An odd row's last pair reads one sample past the row: an odd number of
  // 2- or 4-byte samples is never a multiple of 256 bytes, so the rounding
  // leaves room for it.
  const std::size_t bytes = static_cast<std::size_t>(samples) * (sample_bytes == 1 ? 2 : 4);
  return (bytes + 255) / 256 * 256;
}

std::size_t scratch_bytes(int samples, int height, std::size_t sample_bytes) {
  return plane_pitch(samples, sample_bytes) * static_cast<std::size_t>(height);
}

bool fits(int channels, int rx, int ry) {
  if (channels < 1 || channels > kMaxChannels || rx < 0 || ry < 0) return false;
  return tap_bytes(chunks_of(front_taps(rx, channels) + 2 * rx + 1)) <= kMaxTapBytes &&
         tap_bytes(chunks_of(2 * ry + 1)) <= kMaxTapBytes;
}

template <class T>
void gauss(Plane<const T> s, Plane<T> d, const BlurTaps& taps, int shift, void* scratch, cudaStream_t stream) {
  const T* src = s.data;
  T* dst = d.data;
  const std::ptrdiff_t sp = s.pitch, dp = d.pitch;
  const int width = s.width, height = s.height, channels = s.channels, rx = taps.rx, ry = taps.ry;
  const float *wx = taps.x, *wy = taps.y;
  if (!fits(channels, rx, ry)) throw std::invalid_argument("wide Gaussian: channels or radius not supported");
  check_shift<T>(shift);
  if (reinterpret_cast<std::uintptr_t>(scratch) % 16 != 0)
    throw std::invalid_argument("wide Gaussian: the scratch plane must be 16-byte aligned");
  if (width <= 0 || height <= 0) return;
  if (channels == 1) launch<T, 1>(src, sp, dst, dp, width, height, wx, rx, wy, ry, shift, scratch, stream);
  else launch<T, 2>(src, sp, dst, dp, width, height, wx, rx, wy, ry, shift, scratch, stream);
}

template void gauss<uint8_t>(Plane<const uint8_t>, Plane<uint8_t>, const BlurTaps&, int, void*, cudaStream_t);
template void gauss<uint16_t>(Plane<const uint16_t>, Plane<uint16_t>, const BlurTaps&, int, void*, cudaStream_t);

}  // namespace streamblur::cuda::wide
