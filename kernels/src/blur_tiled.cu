// Register-blocked fused blurs of one-channel planes (Y, U, V, gray): the
// "register" path of cuda::GaussianBlur / cuda::BoxBlur.
//
// A block of 32 x 8 threads owns an output tile of 128 samples by TH rows. It
// stages the tile and its halo of the source in shared memory once (vector
// loads where the tile lies inside the plane), runs the horizontal pass over
// the tile's rows and halo rows into a float (Gaussian) or uint32 (box) tile,
// then the vertical pass, and stores 4 samples at a time. Global memory sees
// one read of the tile plus halo and one write per sample.
//
// Gaussian: the radius R is a compile-time bucket (1, 2, 3, 4, 6, 8, 12, 16,
// 24, 32); a blur of radius r <= R runs the bucket's kernel with its weights
// padded by zeros, which adds exactly nothing. The weights travel as a kernel
// parameter (constant bank), so every tap is one FMA with a constant operand:
// no shared-memory load per tap, fully unrolled windows in registers (each
// loaded sample feeds up to 4 horizontal outputs; each loaded float4 of the
// horizontal result up to TH/8 x 4 vertical ones). Bytes become floats with
// one PRMT and one FADD (the 2^23 trick) instead of a quarter-rate I2F.
//
// Box: exact sliding sums in both directions with a runtime radius (no
// per-tap cost beyond the first window of each thread), rounded half up by
// 32-bit division through a float reciprocal and one exact correction.
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <atomic>
#include <cstdint>
#include <stdexcept>

#include "blur_tiled.hpp"
#include "device_rows.cuh"
#include "streamblur/kernels/cuda_check.hpp"

namespace streamblur::cuda::tiled {
namespace {

constexpr int kTileW = 128;  // samples per tile row: 32 threads x 4
constexpr int kThreadsX = 32;
constexpr int kThreadsY = 8;

// x, y: the horizontal and vertical taps (zero-padded to the bucket's radius R).
// xq: gauss_tiled's 8-bit horizontal taps as fixed point, x * 2^15 rounded
// (summing to 2^15 exactly), in pairs (x[2m], x[2m + 1]) of 16 bits, x[2R + 1] = 0.
template <int R> struct Taps { float x[2 * R + 1]; float y[2 * R + 1]; uint32_t xq[R + 1]; };
constexpr int kTapBits = 15;

template <class T> struct Io;
template <> struct Io<uint8_t> { using V = uchar4; using W = uint32_t; };   // 4 samples
template <> struct Io<uint16_t> { using V = ushort4; using W = uint2; };   // 4 samples

using detail::round_clamp;
using detail::divide_round;
using detail::check_shift;
using detail::to_high_bits;
using detail::opt_in_shared;
using detail::shared_limit;
template <class T> __device__ __forceinline__ const T* row_at(const T* b, std::ptrdiff_t p, int y) { return detail::row_ptr(b, p, y); }
template <class T> __device__ __forceinline__ T* row_at(T* b, std::ptrdiff_t p, int y) { return detail::row_ptr(b, p, y); }

// 4 16-bit samples starting at a 4-sample-aligned shared address, as floats:
// 0x4B00xxxx is the float 2^23 + xxxx exactly. keep: the bits of each 32-bit
// word that hold the values (P010: the high 10 of each sample; see gauss_tiled).
__device__ __forceinline__ void unpack4(const uint16_t* p, float out[4], uint32_t keep = ~0u) {
  uint2 w = *reinterpret_cast<const uint2*>(p);
  w.x &= keep;
  w.y &= keep;
  out[0] = __int_as_float(__byte_perm(w.x, 0x4B000000u, 0x7410)) - 8388608.0f;
  out[1] = __int_as_float(__byte_perm(w.x, 0x4B000000u, 0x7432)) - 8388608.0f;
  out[2] = __int_as_float(__byte_perm(w.y, 0x4B000000u, 0x7410)) - 8388608.0f;
  out[3] = __int_as_float(__byte_perm(w.y, 0x4B000000u, 0x7432)) - 8388608.0f;
}

// Shared tile of the source: rows [y0 - ry, y0 + TH + ry), columns
// [x0 - halo, x0 + 128 + halo) with halo = rx rounded up to 4 (at most 32), so
// that the interior starts 4-sample aligned. Edges clamp. Each thread issues
// the loads of kBatch rows before it stores any of them, so that many loads
// are in flight (a row at a time, the tall tiles' loads are bound by memory
// latency). Short tiles keep kBatch = 1: their few rows per thread gain
// nothing, and the registers cost occupancy (tuning.json:
// "tiled.batched_loads").
template <class T, int kBatch>
__device__ __forceinline__ void load_tile(const T* __restrict__ src, std::ptrdiff_t pitch, int width, int height, int x0,
                                          int y0, int rows_in, int halo_x, int ry, int stride, bool vector_io,
                                          T* tile) {
  using V = typename Io<T>::V;
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int c = tx * 4;
  const bool full = vector_io && x0 + kTileW <= width;
  const bool halo_lane = tx < halo_x;
  for (int r0 = ty; r0 < rows_in; r0 += kThreadsY * kBatch) {
    V v[kBatch];
    T left[kBatch], right[kBatch];
#pragma unroll
    for (int j = 0; j < kBatch; ++j) {
      const int r = r0 + j * kThreadsY;
      if (r >= rows_in) break;
      const T* in = row_at(src, pitch, min(max(y0 - ry + r, 0), height - 1));
      if (full) {
        v[j] = *reinterpret_cast<const V*>(in + x0 + c);
      } else {
        v[j].x = in[min(x0 + c, width - 1)];
        v[j].y = in[min(x0 + c + 1, width - 1)];
        v[j].z = in[min(x0 + c + 2, width - 1)];
        v[j].w = in[min(x0 + c + 3, width - 1)];
      }
      if (halo_lane) {
        left[j] = in[max(x0 - halo_x + tx, 0)];
        right[j] = in[min(x0 + kTileW + tx, width - 1)];
      }
    }
#pragma unroll
    for (int j = 0; j < kBatch; ++j) {
      const int r = r0 + j * kThreadsY;
      if (r >= rows_in) break;
      T* t = tile + r * stride + halo_x;
      *reinterpret_cast<V*>(t + c) = v[j];
      if (halo_lane) {
        t[tx - halo_x] = left[j];
        t[kTileW + tx] = right[j];
      }
    }
  }
}

template <class T>
__device__ __forceinline__ void store4(T* out, int x, int width, const T o[4], bool full) {
  using V = typename Io<T>::V;
  if (full) {
    V v;
    v.x = o[0]; v.y = o[1]; v.z = o[2]; v.w = o[3];
    *reinterpret_cast<V*>(out + x) = v;
  } else {
#pragma unroll
    for (int q = 0; q < 4; ++q)
      if (x + q < width) out[x + q] = o[q];
  }
}

constexpr int align4(int r) { return (r + 3) / 4 * 4; }

// Row stride of the staged source, in samples: tile plus halo, 16-byte rows.
template <class T>
__host__ __device__ constexpr int tile_stride(int halo_x) {
  return ((kTileW + 2 * halo_x) * static_cast<int>(sizeof(T)) + 15) / 16 * 16 / static_cast<int>(sizeof(T));
}

// Bytes of the staged source: its rows to a 16-byte boundary, then `pad`
// bytes that nothing writes (the 8-bit Gaussian's last word of a window may
// reach past the last row's samples; the tap there is 0).
template <class T>
__host__ __device__ constexpr std::size_t tile_bytes(int halo_x, int rows_in, int pad = 0) {
  return (static_cast<std::size_t>(rows_in) * tile_stride<T>(halo_x) * sizeof(T) + 15) / 16 * 16 + pad;
}
constexpr int kGaussTilePad = 16;

template <class T>
std::size_t shared_bytes(int halo_x, int rows_in, std::size_t acc_bytes, int pad = 0) {
  return tile_bytes<T>(halo_x, rows_in, pad) + static_cast<std::size_t>(rows_in) * kTileW * acc_bytes;
}

// The 8-bit Gaussian's horizontal pass, integer dot products on the packed
// bytes, two taps per DP2A (16-bit fixed-point weight pairs by two adjacent
// samples), so no sample is converted to float: output j's pair m holds
// window samples i = kFirst + j + 2m and i + 1, the low or high half of word
// i / 4 (i even) or of the word shifted by one sample (i odd). Exact integer
// sums below 255 * 2^15 < 2^23, then one conversion to float per output.
// Outputs at tile columns c..c+3 need samples [c - R, c + 3 + R], read as
// aligned groups of 4 from column c - kHalo.
template <class T, int R, int TH>
__device__ __forceinline__ void gauss_rows_dp2a(const T* tile, float* hsum, const Taps<R>& taps, int c) {
  constexpr int kHalo = align4(R);
  constexpr int kRowsIn = TH + 2 * R;
  constexpr int kStride = tile_stride<T>(kHalo);
  constexpr int kFirst = kHalo - R;  // offset of sample c - R in the loaded window
  // Words through the one holding sample kFirst + 2R + 4 (output 3's tap
  // 2R + 1, weight 0), and one more for the shifted word of sample
  // kFirst + 2R + 3: odd[(kFirst + 2R + 3) / 4] takes w[that + 1].
  constexpr int kWords = (kFirst + 2 * R + 3) / 4 + 2;
  for (int r = threadIdx.y; r < kRowsIn; r += kThreadsY) {
    const uint32_t* t = reinterpret_cast<const uint32_t*>(tile + r * kStride + c);
    uint32_t w[kWords], odd[kWords - 1];
#pragma unroll
    for (int g = 0; g < kWords; ++g) w[g] = t[g];
#pragma unroll
    for (int g = 0; g + 1 < kWords; ++g) odd[g] = __funnelshift_r(w[g], w[g + 1], 8);  // samples 4g+1 .. 4g+4
    float out[4];
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      uint32_t acc = 0;
#pragma unroll
      for (int m = 0; m <= R; ++m) {
        const int i = kFirst + j + 2 * m;
        if (i % 4 == 0) acc = __dp2a_lo(taps.xq[m], w[i / 4], acc);
        else if (i % 4 == 2) acc = __dp2a_hi(taps.xq[m], w[i / 4], acc);
        else if (i % 4 == 1) acc = __dp2a_lo(taps.xq[m], odd[i / 4], acc);
        else acc = __dp2a_hi(taps.xq[m], odd[i / 4], acc);
      }
      out[j] = __uint2float_rn(acc);  // exact: below 2^24
    }
    *reinterpret_cast<float4*>(hsum + r * kTileW + c) = make_float4(out[0], out[1], out[2], out[3]);
  }
}

// The 16-bit Gaussian's horizontal pass, in floats. A sample shift (P010):
// the staged samples with their low bits cleared are 2^shift times the
// values, and the horizontal taps come 2^-shift times the weights
// (gauss_taps), so the sums are the values' exactly.
template <class T, int R, int TH>
__device__ __forceinline__ void gauss_rows_float(const T* tile, float* hsum, const Taps<R>& taps, int c, int shift) {
  constexpr int kHalo = align4(R);
  constexpr int kRowsIn = TH + 2 * R;
  constexpr int kStride = tile_stride<T>(kHalo);
  constexpr int kFirst = kHalo - R;  // offset of sample c - R in the loaded window
  constexpr int kGroups = (kFirst + 2 * R + 4 + 3) / 4;
  const uint32_t keep = (0xFFFFu >> shift << shift) * 0x10001u;
  for (int r = threadIdx.y; r < kRowsIn; r += kThreadsY) {
    const T* t = tile + r * kStride + c;  // column c - kHalo of the source window
    float acc[4] = {0.f, 0.f, 0.f, 0.f};
#pragma unroll
    for (int g = 0; g < kGroups; ++g) {
      float v[4];
      unpack4(t + 4 * g, v, keep);
#pragma unroll
      for (int q = 0; q < 4; ++q) {
        const int i = 4 * g + q - kFirst;  // index in [c - R, ...] counting from c - R
#pragma unroll
        for (int j = 0; j < 4; ++j) {
          const int k = i - j;
          if (k >= 0 && k <= 2 * R) acc[j] = fmaf(taps.x[k], v[q], acc[j]);
        }
      }
    }
    *reinterpret_cast<float4*>(hsum + r * kTileW + c) = make_float4(acc[0], acc[1], acc[2], acc[3]);
  }
}

// The vertical pass: 4 columns (from c) x kRowsPerThread consecutive rows
// (from r0) per thread, over the horizontal sums.
template <int R, int kRowsPerThread>
__device__ __forceinline__ void gauss_columns(const float* hsum, const Taps<R>& taps, int r0, int c,
                                              float (&acc)[kRowsPerThread][4]) {
#pragma unroll
  for (int j = 0; j < kRowsPerThread; ++j)
#pragma unroll
    for (int q = 0; q < 4; ++q) acc[j][q] = 0.f;
#pragma unroll
  for (int i = 0; i < kRowsPerThread + 2 * R; ++i) {
    const float4 h = *reinterpret_cast<const float4*>(hsum + (r0 + i) * kTileW + c);
#pragma unroll
    for (int j = 0; j < kRowsPerThread; ++j) {
      const int k = i - j;
      if (k >= 0 && k <= 2 * R) {
        acc[j][0] = fmaf(taps.y[k], h.x, acc[j][0]);
        acc[j][1] = fmaf(taps.y[k], h.y, acc[j][1]);
        acc[j][2] = fmaf(taps.y[k], h.z, acc[j][2]);
        acc[j][3] = fmaf(taps.y[k], h.w, acc[j][3]);
      }
    }
  }
}

// The thread's outputs, rounded, shifted up and stored 4 at a time.
template <class T, int kRowsPerThread>
__device__ __forceinline__ void store_gauss_rows(T* __restrict__ dst, std::ptrdiff_t dst_pitch, int width, int height,
                                                 int x0, int y0, int r0, int c, const float (&acc)[kRowsPerThread][4],
                                                 bool vector_io, int shift) {
  const bool full = vector_io && x0 + kTileW <= width;
#pragma unroll
  for (int j = 0; j < kRowsPerThread; ++j) {
    const int y = y0 + r0 + j;
    if (y >= height) break;
    T o[4];
#pragma unroll
    for (int q = 0; q < 4; ++q) o[q] = to_high_bits(round_clamp<T>(acc[j][q]), shift);
    store4<T>(row_at(dst, dst_pitch, y), x0 + c, width, o, full);
  }
}

// Stages the tile, runs the horizontal pass into shared memory, then the
// vertical pass and the stores.
template <class T, int R, int TH, int kMinBlocks = 1>
__global__ void __launch_bounds__(kThreadsX * kThreadsY, kMinBlocks)
gauss_tiled(const T* __restrict__ src, std::ptrdiff_t src_pitch, T* __restrict__ dst, std::ptrdiff_t dst_pitch,
            int width, int height, const Taps<R> taps, bool vector_io, int shift) {
  constexpr int kHalo = align4(R);
  constexpr int kRowsIn = TH + 2 * R;
  constexpr int kStride = tile_stride<T>(kHalo);
  constexpr int kRowsPerThread = TH / kThreadsY;
  extern __shared__ float4 smem4[];
  T* tile = reinterpret_cast<T*>(smem4);
  float* hsum =
      reinterpret_cast<float*>(reinterpret_cast<unsigned char*>(smem4) + tile_bytes<T>(kHalo, kRowsIn, kGaussTilePad));
  const int x0 = blockIdx.x * kTileW, y0 = blockIdx.y * TH;
  load_tile<T, (R <= 4 ? 1 : 8)>(src, src_pitch, width, height, x0, y0, kRowsIn, kHalo, R, kStride, vector_io, tile);
  __syncthreads();

  const int c = threadIdx.x * 4;
  if constexpr (sizeof(T) == 1) gauss_rows_dp2a<T, R, TH>(tile, hsum, taps, c);
  else gauss_rows_float<T, R, TH>(tile, hsum, taps, c, shift);
  __syncthreads();

  const int r0 = threadIdx.y * kRowsPerThread;
  float acc[kRowsPerThread][4];
  gauss_columns<R, kRowsPerThread>(hsum, taps, r0, c, acc);
  store_gauss_rows<T, kRowsPerThread>(dst, dst_pitch, width, height, x0, y0, r0, c, acc, vector_io, shift);
}

// Its own tile layout (no kGaussTilePad), which keeps the 8-bit kernel at 80
// registers and 3 blocks per SM: through the Gaussian's tile_bytes the
// compiler took 93 and fitted 2, much slower (tuning.json: "tiled.box_layout").
template <class T, int TH, int kBatch>
__global__ void __launch_bounds__(kThreadsX * kThreadsY)
box_tiled(const T* __restrict__ src, std::ptrdiff_t src_pitch, T* __restrict__ dst, std::ptrdiff_t dst_pitch,
          int width, int height, int rx, int ry, uint32_t count, float inv_count, bool vector_io) {
  constexpr int kRowsPerThread = TH / kThreadsY;
  const int halo = align4(rx);
  const int rows_in = TH + 2 * ry;
  const int stride = tile_stride<T>(halo);
  extern __shared__ float4 smem4[];
  T* tile = reinterpret_cast<T*>(smem4);
  uint32_t* hsum = reinterpret_cast<uint32_t*>(reinterpret_cast<unsigned char*>(smem4) +
                                               (static_cast<std::size_t>(rows_in) * stride * sizeof(T) + 15) / 16 * 16);
  const int x0 = blockIdx.x * kTileW, y0 = blockIdx.y * TH;
  load_tile<T, kBatch>(src, src_pitch, width, height, x0, y0, rows_in, halo, ry, stride, vector_io, tile);
  __syncthreads();

  const int c = threadIdx.x * 4;
  for (int r = threadIdx.y; r < rows_in; r += kThreadsY) {
    const T* t = tile + r * stride + halo + c;  // sample at output column c
    uint32_t s = 0;
    for (int k = -rx; k <= rx; ++k) s += t[k];
    uint4 out;
    out.x = s;
    s += t[rx + 1] - static_cast<uint32_t>(t[-rx]);
    out.y = s;
    s += t[rx + 2] - static_cast<uint32_t>(t[-rx + 1]);
    out.z = s;
    s += t[rx + 3] - static_cast<uint32_t>(t[-rx + 2]);
    out.w = s;
    *reinterpret_cast<uint4*>(hsum + r * kTileW + c) = out;
  }
  __syncthreads();

  const int r0 = threadIdx.y * kRowsPerThread;
  uint4 s = make_uint4(0, 0, 0, 0);
  for (int i = 0; i <= 2 * ry; ++i) {
    const uint4 h = *reinterpret_cast<const uint4*>(hsum + (r0 + i) * kTileW + c);
    s.x += h.x; s.y += h.y; s.z += h.z; s.w += h.w;
  }
  const bool full = vector_io && x0 + kTileW <= width;
#pragma unroll
  for (int j = 0; j < kRowsPerThread; ++j) {
    const int y = y0 + r0 + j;
    if (y >= height) break;
    if (j > 0) {
      const uint4 add = *reinterpret_cast<const uint4*>(hsum + (r0 + j + 2 * ry) * kTileW + c);
      const uint4 sub = *reinterpret_cast<const uint4*>(hsum + (r0 + j - 1) * kTileW + c);
      s.x += add.x - sub.x; s.y += add.y - sub.y; s.z += add.z - sub.z; s.w += add.w - sub.w;
    }
    T o[4];
    o[0] = static_cast<T>(divide_round(s.x, count, inv_count));
    o[1] = static_cast<T>(divide_round(s.y, count, inv_count));
    o[2] = static_cast<T>(divide_round(s.z, count, inv_count));
    o[3] = static_cast<T>(divide_round(s.w, count, inv_count));
    store4<T>(row_at(dst, dst_pitch, y), x0 + c, width, o, full);
  }
}

bool aligned(const void* p, std::ptrdiff_t pitch, std::size_t bytes) {
  return reinterpret_cast<std::uintptr_t>(p) % bytes == 0 && pitch % static_cast<std::ptrdiff_t>(bytes) == 0;
}

// ---- The 3x3 box (rx = ry = 1), the box3 path: bound by
// memory, so built for bytes in flight. Each lane owns 8 samples of a row
// (one 8- or 16-byte load), the warp 256 consecutive samples; a lane's
// neighbours come by warp shuffles, the warp's two outer ones by single loads.
// Each warp writes kBox3Rows rows and issues the loads of all its
// kBox3Rows + 2 rows before it adds any. Sums are exact; the quotient by 9 is
// a multiply-high (exact for every sum a 3x3 box of 8- or 16-bit samples has).
// Two rows per warp: a 1080p plane is one wave of short warps, and more of
// them, each with fewer dependent rows, finish sooner, while 4K gains little
// from more rows per warp; 4 warps per block (tuning.json: "tiled.box3").
// Planes over 65535 x 8 rows need strips that step down by the grid; that
// loop, run on every plane, costs time at 4K, so it is a separate
// instantiation.
constexpr int kBox3Lane = 8;   // samples per lane
constexpr int kBox3Rows = 2;   // output rows per warp
constexpr int kBox3Warps = 4;  // warps per block, stacked over row strips
constexpr unsigned kBox3MaxGridY = 65535;          // taller planes: blocks step down by the grid

template <class T> struct Box3Word;
template <> struct Box3Word<uint8_t> { using type = uint2; };
template <> struct Box3Word<uint16_t> { using type = uint4; };

template <class T>
__device__ __forceinline__ void box3_unpack(typename Box3Word<T>::type w, uint32_t v[kBox3Lane]) {
  if constexpr (sizeof(T) == 1) {
#pragma unroll
    for (int q = 0; q < 4; ++q) {
      v[q] = (w.x >> (8 * q)) & 0xFFu;
      v[4 + q] = (w.y >> (8 * q)) & 0xFFu;
    }
  } else {
    const uint32_t u[4] = {w.x, w.y, w.z, w.w};
#pragma unroll
    for (int q = 0; q < 4; ++q) {
      v[2 * q] = u[q] & 0xFFFFu;
      v[2 * q + 1] = u[q] >> 16;
    }
  }
}

template <class T>
__device__ __forceinline__ typename Box3Word<T>::type box3_pack(const uint32_t o[kBox3Lane]) {
  if constexpr (sizeof(T) == 1) {
    return make_uint2(o[0] | o[1] << 8 | o[2] << 16 | o[3] << 24, o[4] | o[5] << 8 | o[6] << 16 | o[7] << 24);
  } else {
    return make_uint4(o[0] | o[1] << 16, o[2] | o[3] << 16, o[4] | o[5] << 16, o[6] | o[7] << 16);
  }
}

// round(s / 9) half up: floor((s + 4) / 9) by a multiply-high.
__device__ __forceinline__ uint32_t div9_round(uint32_t s) { return __umulhi(s + 4u, 0x38E38E39u) >> 1; }

// One warp's strip of kBox3Rows output rows from row y0 (the same for every
// lane of the warp).
template <class T>
__device__ __forceinline__ void box3_strip(const T* __restrict__ src, std::ptrdiff_t src_pitch, T* __restrict__ dst,
                                           std::ptrdiff_t dst_pitch, int width, int height, bool vector_io, int y0) {
  using W = typename Box3Word<T>::type;
  constexpr int kIn = kBox3Rows + 2;
  const int lane = threadIdx.x;
  const int x = (blockIdx.x * 32 + lane) * kBox3Lane;
  const bool vector_row = vector_io && x + kBox3Lane <= width;
  const bool vector_out = vector_row;
  W raw[kIn];
  uint32_t outer[kIn];  // lane 0: the sample left of the warp; lane 31: the one right of it
#pragma unroll
  for (int i = 0; i < kIn; ++i) {
    const T* row = row_at(src, src_pitch, min(max(y0 - 1 + i, 0), height - 1));
    if (vector_row) {
      raw[i] = *reinterpret_cast<const W*>(row + x);
    } else {
      uint32_t v[kBox3Lane];
#pragma unroll
      for (int q = 0; q < kBox3Lane; ++q) v[q] = row[min(x + q, width - 1)];
      raw[i] = box3_pack<T>(v);
    }
    outer[i] = 0;
    if (lane == 0) outer[i] = row[max(x - 1, 0)];
    if (lane == 31) outer[i] = row[min(x + kBox3Lane, width - 1)];
  }
  // Horizontal sums of row i into h.
  auto hsum = [&](int i, uint32_t h[kBox3Lane]) {
    uint32_t v[kBox3Lane];
    box3_unpack<T>(raw[i], v);
    uint32_t left = __shfl_up_sync(0xffffffffu, v[kBox3Lane - 1], 1);
    uint32_t right = __shfl_down_sync(0xffffffffu, v[0], 1);
    if (lane == 0) left = outer[i];
    if (lane == 31) right = outer[i];
#pragma unroll
    for (int q = 0; q < kBox3Lane; ++q)
      h[q] = (q == 0 ? left : v[q - 1]) + v[q] + (q == kBox3Lane - 1 ? right : v[q + 1]);
  };
  uint32_t a[kBox3Lane], b[kBox3Lane], c[kBox3Lane];
  hsum(0, a);
  hsum(1, b);
#pragma unroll
  for (int i = 0; i < kBox3Rows; ++i) {
    hsum(i + 2, c);
    const int y = y0 + i;
    if (y < height && x < width) {
      uint32_t o[kBox3Lane];
#pragma unroll
      for (int q = 0; q < kBox3Lane; ++q) o[q] = div9_round(a[q] + b[q] + c[q]);
      T* out = row_at(dst, dst_pitch, y) + x;
      if (vector_out) {
        *reinterpret_cast<W*>(out) = box3_pack<T>(o);
      } else {
#pragma unroll
        for (int q = 0; q < kBox3Lane; ++q)
          if (x + q < width) out[q] = static_cast<T>(o[q]);
      }
    }
#pragma unroll
    for (int q = 0; q < kBox3Lane; ++q) {
      a[q] = b[q];
      b[q] = c[q];
    }
  }
}

// kStrided: the plane is taller than the grid's kBox3MaxGridY blocks of
// strips, and each warp's strips step down by the grid. Otherwise each warp
// runs its one strip, without the loop (see kBox3Rows).
template <class T, bool kStrided>
__global__ void __launch_bounds__(32 * kBox3Warps)
box3(const T* __restrict__ src, std::ptrdiff_t src_pitch, T* __restrict__ dst, std::ptrdiff_t dst_pitch, int width,
     int height, bool vector_io) {
  const int first = (blockIdx.y * kBox3Warps + threadIdx.y) * kBox3Rows;
  if constexpr (kStrided) {
    for (int y0 = first; y0 < height; y0 += static_cast<int>(gridDim.y) * kBox3Warps * kBox3Rows)
      box3_strip(src, src_pitch, dst, dst_pitch, width, height, vector_io, y0);
  } else {
    if (first < height) box3_strip(src, src_pitch, dst, dst_pitch, width, height, vector_io, first);
  }
}

// Tile height by radius: taller tiles recompute fewer halo rows in the
// horizontal pass, shorter ones use less shared memory.
template <int R> constexpr int gauss_tile_rows() { return R <= 4 ? 32 : 64; }
// The tall tiles' registers capped for 3 blocks per SM (80 registers): left
// to itself the compiler may take 86-88 and fit 2, which is slower, and a cap
// of 4 blocks (64 registers) is slower again (tuning.json:
// "tiled.gauss_min_blocks").
template <int R> constexpr int gauss_min_blocks() { return R <= 4 ? 1 : 3; }

dim3 tile_grid(int width, int height, int tile_rows) {
  const unsigned rows = static_cast<unsigned>((height + tile_rows - 1) / tile_rows);
  if (rows > 65535u) throw std::invalid_argument("blur: plane too tall");
  return dim3(static_cast<unsigned>((width + kTileW - 1) / kTileW), rows);
}

// gauss_tiled's taps for a bucket of radius R >= rx, ry.
// shift: 16-bit samples' sample shift; the horizontal taps take its 2^-shift.
template <class T, int R>
Taps<R> gauss_taps(const float* wx, int rx, const float* wy, int ry, int shift) {
  Taps<R> taps{};
  for (int k = -rx; k <= rx; ++k) taps.x[R + k] = std::ldexp(wx[rx + k], -shift);
  for (int k = -ry; k <= ry; ++k) taps.y[R + k] = wy[ry + k];
  if constexpr (sizeof(T) == 1) {
    // The horizontal sums come out as integers times 2^15 (see gauss_tiled):
    // the vertical taps take the 2^-15 (exact, a power of two).
    int q[2 * R + 2] = {};
    int sum = 0;
    for (int k = 0; k <= 2 * R; ++k) sum += q[k] = static_cast<int>(std::lround(taps.x[k] * (1 << kTapBits)));
    q[R] += (1 << kTapBits) - sum;  // the rounding's remainder on the centre tap: flat areas stay exact
    for (int m = 0; m <= R; ++m) taps.xq[m] = static_cast<uint32_t>(q[2 * m]) | static_cast<uint32_t>(q[2 * m + 1]) << 16;
    for (float& v : taps.y) v *= 1.0f / (1 << kTapBits);
  }
  return taps;
}

template <class T, int R>
void launch_gauss(const T* src, std::ptrdiff_t sp, T* dst, std::ptrdiff_t dp, int width, int height,
                  const float* wx, int rx, const float* wy, int ry, int shift, cudaStream_t stream) {
  constexpr int TH = gauss_tile_rows<R>();
  const Taps<R> taps = gauss_taps<T, R>(wx, rx, wy, ry, shift);
  const std::size_t shared = shared_bytes<T>(align4(R), TH + 2 * R, sizeof(float), kGaussTilePad);
  auto kernel = gauss_tiled<T, R, TH, gauss_min_blocks<R>()>;
  static std::atomic<unsigned long long> opted{0};
  opt_in_shared(kernel, opted);
  const bool vector_io = aligned(src, sp, 4 * sizeof(T)) && aligned(dst, dp, 4 * sizeof(T));
  const dim3 grid = tile_grid(width, height, TH);
  kernel<<<grid, dim3(kThreadsX, kThreadsY), shared, stream>>>(src, sp, dst, dp, width, height, taps, vector_io, shift);
  STREAMBLUR_CHECK_LAUNCH("gauss_tiled", stream);
}

template <class T>
void launch_box3(const T* src, std::ptrdiff_t sp, T* dst, std::ptrdiff_t dp, int width, int height, cudaStream_t stream) {
  const bool vector_io = aligned(src, sp, kBox3Lane * sizeof(T)) && aligned(dst, dp, kBox3Lane * sizeof(T));
  const int rows_per_block = kBox3Rows * kBox3Warps;
  const unsigned grid_y = std::min(static_cast<unsigned>((height + rows_per_block - 1) / rows_per_block), kBox3MaxGridY);
  const dim3 grid(static_cast<unsigned>((width + 32 * kBox3Lane - 1) / (32 * kBox3Lane)), grid_y);
  const bool strided = static_cast<long long>(grid_y) * rows_per_block < height;
  auto kernel = strided ? box3<T, true> : box3<T, false>;
  kernel<<<grid, dim3(32, kBox3Warps), 0, stream>>>(src, sp, dst, dp, width, height, vector_io);
  STREAMBLUR_CHECK_LAUNCH("box3", stream);
}

// Box tiles of 64 rows (32 are slower at 4K; tuning.json: "tiled.box_tile_rows");
// rows loaded in batches above ry = 8 (see load_tile).
constexpr int kBoxTileRows = 64;

int gauss_bucket(int radius) {
  constexpr int kBuckets[] = {1, 2, 3, 4, 6, 8, 12, 16, 24, 32};
  for (int b : kBuckets)
    if (radius <= b) return b;
  return 0;
}

template <class T>
std::size_t gauss_shared(int bucket) {
  const int th = bucket <= 4 ? 32 : 64;  // gauss_tile_rows
  return shared_bytes<T>(align4(bucket), th + 2 * bucket, sizeof(float), kGaussTilePad);
}

}  // namespace

bool gauss_fits(int rx, int ry, std::size_t sample_bytes) {
  const int b = gauss_bucket(std::max(rx, ry));
  if (b == 0 || rx < 0 || ry < 0) return false;
  return (sample_bytes == 1 ? gauss_shared<uint8_t>(b) : gauss_shared<uint16_t>(b)) <= shared_limit();
}

bool box_fits(int rx, int ry, std::size_t sample_bytes) {
  if (rx < 0 || ry < 0 || rx > kMaxRadius || ry > kMaxRadius) return false;
  const std::size_t need = sample_bytes == 1 ? shared_bytes<uint8_t>(align4(rx), kBoxTileRows + 2 * ry, 4)
                                             : shared_bytes<uint16_t>(align4(rx), kBoxTileRows + 2 * ry, 4);
  return need <= shared_limit();
}

static void check_one_channel(int src_channels, int dst_channels) {
  if (src_channels != 1 || dst_channels != 1)
    throw std::invalid_argument("register-blocked blur: planes of one channel only");
}

template <class T>
void gauss(Plane<const T> s, Plane<T> d, const BlurTaps& taps, int shift, cudaStream_t stream) {
  const T* src = s.data;
  T* dst = d.data;
  const std::ptrdiff_t sp = s.pitch, dp = d.pitch;
  const int width = s.width, height = s.height, rx = taps.rx, ry = taps.ry;
  const float *wx = taps.x, *wy = taps.y;
  check_one_channel(s.channels, d.channels);
  if (!gauss_fits(rx, ry, sizeof(T))) throw std::invalid_argument("register-blocked Gaussian: radius too large here");
  check_shift<T>(shift);
  switch (gauss_bucket(std::max(rx, ry))) {
    case 1: return launch_gauss<T, 1>(src, sp, dst, dp, width, height, wx, rx, wy, ry, shift, stream);
    case 2: return launch_gauss<T, 2>(src, sp, dst, dp, width, height, wx, rx, wy, ry, shift, stream);
    case 3: return launch_gauss<T, 3>(src, sp, dst, dp, width, height, wx, rx, wy, ry, shift, stream);
    case 4: return launch_gauss<T, 4>(src, sp, dst, dp, width, height, wx, rx, wy, ry, shift, stream);
    case 6: return launch_gauss<T, 6>(src, sp, dst, dp, width, height, wx, rx, wy, ry, shift, stream);
    case 8: return launch_gauss<T, 8>(src, sp, dst, dp, width, height, wx, rx, wy, ry, shift, stream);
    case 12: return launch_gauss<T, 12>(src, sp, dst, dp, width, height, wx, rx, wy, ry, shift, stream);
    case 16: return launch_gauss<T, 16>(src, sp, dst, dp, width, height, wx, rx, wy, ry, shift, stream);
    case 24: return launch_gauss<T, 24>(src, sp, dst, dp, width, height, wx, rx, wy, ry, shift, stream);
    case 32: return launch_gauss<T, 32>(src, sp, dst, dp, width, height, wx, rx, wy, ry, shift, stream);
    default: throw std::invalid_argument("register-blocked Gaussian: radius above 32");
  }
}

template <class T, int TH, int kBatch>
void launch_box(const T* src, std::ptrdiff_t sp, T* dst, std::ptrdiff_t dp, int width, int height, int rx, int ry,
                cudaStream_t stream) {
  const std::size_t shared = shared_bytes<T>(align4(rx), TH + 2 * ry, 4);
  static std::atomic<unsigned long long> opted{0};
  opt_in_shared(box_tiled<T, TH, kBatch>, opted);
  const uint32_t count = static_cast<uint32_t>((2 * rx + 1) * (2 * ry + 1));
  const bool vector_io = aligned(src, sp, 4 * sizeof(T)) && aligned(dst, dp, 4 * sizeof(T));
  const dim3 grid = tile_grid(width, height, TH);
  box_tiled<T, TH, kBatch><<<grid, dim3(kThreadsX, kThreadsY), shared, stream>>>(src, sp, dst, dp, width, height, rx, ry, count,
                                                                        1.0f / static_cast<float>(count), vector_io);
  STREAMBLUR_CHECK_LAUNCH("box_tiled", stream);
}

template <class T>
void box(Plane<const T> src, Plane<T> dst, const BlurTaps& taps, cudaStream_t stream) {
  check_one_channel(src.channels, dst.channels);
  const int rx = taps.rx, ry = taps.ry;
  if (!box_fits(rx, ry, sizeof(T))) throw std::invalid_argument("register-blocked box: radius too large here");
  if (ry <= 8) launch_box<T, kBoxTileRows, 1>(src.data, src.pitch, dst.data, dst.pitch, src.width, src.height, rx, ry, stream);
  else launch_box<T, kBoxTileRows, 8>(src.data, src.pitch, dst.data, dst.pitch, src.width, src.height, rx, ry, stream);
}

template <class T>
void box3_blur(Plane<const T> src, Plane<T> dst, cudaStream_t stream) {
  check_one_channel(src.channels, dst.channels);
  launch_box3<T>(src.data, src.pitch, dst.data, dst.pitch, src.width, src.height, stream);
}

template void box3_blur<uint8_t>(Plane<const uint8_t>, Plane<uint8_t>, cudaStream_t);
template void box3_blur<uint16_t>(Plane<const uint16_t>, Plane<uint16_t>, cudaStream_t);
template void gauss<uint8_t>(Plane<const uint8_t>, Plane<uint8_t>, const BlurTaps&, int, cudaStream_t);
template void gauss<uint16_t>(Plane<const uint16_t>, Plane<uint16_t>, const BlurTaps&, int, cudaStream_t);
template void box<uint8_t>(Plane<const uint8_t>, Plane<uint8_t>, const BlurTaps&, cudaStream_t);
template void box<uint16_t>(Plane<const uint16_t>, Plane<uint16_t>, const BlurTaps&, cudaStream_t);

}  // namespace streamblur::cuda::tiled
