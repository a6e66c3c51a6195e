// Gaussian blurs of one-channel 8-bit planes on the tensor cores: the "tensor"
// path of cuda::GaussianBlur.
//
// Each pass is a product with a banded Toeplitz matrix of the taps. A block
// of 8 warps owns an output tile of 128 columns by 64 rows; warp w owns its
// 16 columns [16 w, 16 w + 16) in both passes, so the passes meet only in the
// warp's own part of shared memory.
//
// 1. The block stages the tile's source, rows [y0 - ry, ...) and columns
//    [x0 - A, ...) with A = rx rounded up to 4 (edges clamped), as fp16
//    values b - 128 (exact). Planes of two interleaved channels (NV12's UV:
//    a tile of 64 pixels, 128 samples) are staged apart, each channel's
//    samples in its own half of the staged rows (columns [x0 - A, ...) of
//    that channel's pixels), so that a band of taps meets every sample it
//    spans: warps 0-3 filter U, 4-7 V, as one-channel columns, and the
//    output tile interleaves them again.
// 2. Horizontal: H (rows x 16 columns of the warp) = S (rows x 16 SX
//    columns) x T_h, in m16n8k16 MMAs (fp16 in, fp32 accumulate). Only SX =
//    ceil((16 + A + rx) / 16) column blocks of the staged tile meet a warp's
//    16 outputs, and the band's blocks are the same for every warp and row:
//    SX 16x16 blocks of taps, held in registers as MMA fragments.
// 3. H, which is no longer exact, is kept as two fp16 planes, hi = fp16(H)
//    and lo = fp16(H - hi) (22 significant bits together).
// 4. Vertical: out (64 rows x 16) = T_v x H, over SY = ceil((16 + 2 ry) /
//    16) blocks of H's rows, as hi and lo products. The two counts are
//    template parameters apart (they differ where rx != ry, or where A - rx
//    takes the band across one more block), so that a tile stages and
//    filters only the 64 + 16 SY rows its vertical band needs. The result,
//    plus the 128 the
//    staging took off times the taps' sums, is rounded half up into an
//    output tile (over the staged source, no longer needed) and stored 16
//    bytes at a time.
//
// Precision: the taps are fp16 pairs too, w = hi + lo, so every product the
// passes sum is the float kernels' to about 2^-22 (products of fp16 values
// are exact in the fp32 accumulators); the terms dropped (the taps' lo x H's
// lo) are below 2^-20 of a sample. With the taps' hi parts alone, 1.2-1.4%
// of the samples of a random plane at sigma 1 differed from the float64
// reference, against the tests' limit of 1%, for a few percent of speed
// (tuning.json: "tensor.split_taps").
//
// The grid is persistent (as many blocks as fit at once), each block loading
// its next tile's source into registers while it computes the current one
// (pairs: all but a last partial round of it, loaded after the vertical
// pass, so that 3 blocks fit an SM's registers).
// Global memory sees one read of each tile and its halo and one write per
// sample.
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <stdexcept>
#include <type_traits>

#include "blur_tensor.hpp"
#include "device_rows.cuh"
#include "streamblur/kernels/cuda_check.hpp"

namespace streamblur::cuda::tensor {
namespace {

using detail::opt_in_shared;
using detail::round_clamp;
using detail::row_ptr;
using detail::shared_limit;

constexpr int kTileW = 128;
constexpr int kTileH = 64;
constexpr int kThreads = 256;  // 8 warps, one per 16 output columns

struct Taps {
  float x[2 * kMaxRadius + 1];  // 2 rx + 1 horizontal weights, one per pixel
  float y[2 * kMaxRadius + 1];  // 2 ry + 1 vertical weights
  int rx, ry;    // in pixels
  int x_offset;  // A - rx: where the staged columns start before the first tap
  float bias;    // 128 x sum(x) x sum(y): the staged values' offset, after both passes
};

constexpr int align4(int r) { return (r + 3) & ~3; }

// 16 x 16 blocks of the staged plane that a band of taps meets, across and
// down (radii in pixels; pairs' channels are staged apart).
constexpr int steps_x(int rx) { return (16 + align4(rx) + rx + 15) / 16; }
constexpr int steps_y(int ry) { return (16 + 2 * ry + 15) / 16; }
constexpr int steps(int rx, int ry) { return std::max(steps_x(rx), steps_y(ry)); }
static_assert(steps(kMaxRadius, kMaxRadius) == 5, "launch() instantiates 1 to 5 steps");

// The taps in shared memory as fp16 high parts and remainders, zero-padded
// by kTapPad on both sides so that every fragment's index is in range.
constexpr int kTapPad = 32;
template <int S> constexpr int kTapLen = 16 * S + 2 * kTapPad;

template <int SX, int SY, int C> struct Layout {
  static constexpr int kRows = kTileH - 16 + 16 * SY;  // staged rows = rows of H
  static constexpr int kHalfCols = kTileW / C + 16 * (SX - 1);  // staged columns of one channel
  static constexpr int kCols = C * kHalfCols;                     // staged columns
  // Pitches in halves, an odd number of 16-byte units: ldmatrix's 8 rows
  // fall in 8 different bank groups.
  static constexpr int kSPitch = kCols + 8;
  static constexpr int kHPitch = kTileW + 8;
  static constexpr int kOutPitch = kTileW + 16;  // bytes; 16-byte rows, 2-byte stores spread over the banks
  static constexpr std::size_t kSBytes = std::size_t{kRows} * kSPitch * 2;
  static constexpr std::size_t kHBytes = std::size_t{kRows} * kHPitch * 2;
  static constexpr std::size_t kTapBytes = 2 * std::size_t{kTapLen<SX> + kTapLen<SY>} * 2;  // hi and lo, x and y
  static constexpr std::size_t kShared = kSBytes + 2 * kHBytes + kTapBytes;
  static_assert(std::size_t{kTileH} * kOutPitch <= kSBytes, "the output tile reuses the staged source");
};

__device__ __forceinline__ void mma(float c[4], const uint32_t a[4], uint32_t b0, uint32_t b1) {
  asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// Four 8x8 fp16 matrices from shared memory (transposed: each 8x8 one's
// columns as rows); lanes 0-15 address rows 0-15 of a 16x16 block's left
// half, lanes 16-31 of its right half.
template <bool kTransposed = false>
__device__ __forceinline__ void load_block(uint32_t r[4], const __half* p) {
  const unsigned a = static_cast<unsigned>(__cvta_generic_to_shared(p));
  if constexpr (kTransposed)
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(a)
                 : "memory");
  else
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(a)
                 : "memory");
}

__device__ __forceinline__ uint32_t bits(__half2 h) { return *reinterpret_cast<const uint32_t*>(&h); }

struct TapHalves {
  __half* hi;
  __half* lo;
  // Taps i and i + 1 (i from -kTapPad) as an fp16 pair.
  __device__ __forceinline__ uint32_t pair(int i, bool remainder) const {
    const __half* p = (remainder ? lo : hi) + kTapPad + i;
    return uint32_t{__half_as_ushort(p[0])} | uint32_t{__half_as_ushort(p[1])} << 16;
  }
};
// w: n taps.
__device__ __forceinline__ void split_taps(const float* w, int n, __half* hi, __half* lo, int len, int tid) {
  for (int j = tid; j < len; j += kThreads) {
    const int i = j - kTapPad;
    const float v = i >= 0 && i < n ? w[i] : 0.0f;
    const __half h = __float2half_rn(v);
    hi[j] = h;
    lo[j] = __float2half_rn(v - __half2float(h));
  }
}

// Samples x .. x + 3 of a row, those outside it clamped to the edge pixel's
// sample of the same channel (C interleaved channels).
template <int C>
__device__ __forceinline__ uint32_t edge_word(const uint8_t* row, int x, int width) {
  uint32_t w = 0;
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    int c = x + j;
    if (c < 0) c = C == 1 ? 0 : (c % C + C) % C;  // the same channel of pixel 0
    else if (c >= width) c = width - C + (c - width) % C;
    w |= uint32_t{row[c]} << (8 * j);
  }
  return w;
}

// A thread's share of a tile's staged source: groups of C words (4 C
// samples: pairs' groups hold 4 pixels of each channel).
template <class L, int C>
struct Tile {
  static constexpr int kGroupsPerRow = L::kCols / (4 * C);
  static constexpr int kGroups = L::kRows * kGroupsPerRow;
  static constexpr int kPer = (kGroups + kThreads - 1) / kThreads;
  // The rounds of groups loaded while the current tile is computed; on
  // pairs the rest (a partial round) is loaded after the vertical pass, so
  // that its registers are free through both passes (see kMinBlocks).
  static constexpr int kEarly = C == 2 ? kGroups / kThreads : kPer;
  uint32_t words[kPer][C];

  // Rows [y0 - ry, ...), samples [x0 - C A, ...) (rx in pixels), edges
  // clamped (to the edge pixel's sample of the same channel); the thread's
  // rounds [K0, K1) of groups, their loads in flight together.
  template <int K0 = 0, int K1 = kEarly>
  __device__ __forceinline__ void load(const uint8_t* __restrict__ src, std::ptrdiff_t sp, int width, int height,
                                       int x0, int y0, int rx, int ry, bool vector_in, int tid) {
    const int xs = x0 - C * align4(rx);
#pragma unroll
    for (int k = K0; k < K1; ++k) {
      const int g = tid + k * kThreads;
#pragma unroll
      for (int c = 0; c < C; ++c) words[k][c] = 0;
      if (g < kGroups) {
        const int i = g / kGroupsPerRow, x = xs + 4 * C * (g - i * kGroupsPerRow);
        const uint8_t* row = row_ptr(src, sp, min(max(y0 - ry + i, 0), height - 1));
#pragma unroll
        for (int c = 0; c < C; ++c) {
          const int xc = x + 4 * c;
          if (vector_in && xc >= 0 && xc + 3 < width) {
            words[k][c] = __ldg(reinterpret_cast<const unsigned int*>(row + xc));
          } else {
            words[k][c] = edge_word<C>(row, xc, width);
          }
        }
      }
    }
  }
  // Into shared memory as fp16 b - 128: 0x64bb is the fp16 1024 + b exactly;
  // minus 1152 leaves b - 128. Pairs: U0 V0 U1 V1 U2 V2 U3 V3 as U0-U3 into
  // the first half of the row and V0-V3 into the second, 8 bytes each.
  __device__ __forceinline__ void stage(__half* staged, int tid) const {
    const __half2 offset = __float2half2_rn(1152.0f);
    auto to_half2 = [&](uint32_t w, unsigned selector) {
      const uint32_t b = __byte_perm(w, 0x6464u, selector);
      return bits(__hsub2(*reinterpret_cast<const __half2*>(&b), offset));
    };
#pragma unroll
    for (int k = 0; k < kPer; ++k) {
      const int g = tid + k * kThreads;
      if (g < kGroups) {
        const int i = g / kGroupsPerRow, q = g - i * kGroupsPerRow;
        __half* row = staged + i * L::kSPitch + 4 * q;
        if constexpr (C == 1) {
          *reinterpret_cast<uint2*>(row) = make_uint2(to_half2(words[k][0], 0x4140), to_half2(words[k][0], 0x4342));
        } else {
          *reinterpret_cast<uint2*>(row) = make_uint2(to_half2(words[k][0], 0x4240), to_half2(words[k][1], 0x4240));
          *reinterpret_cast<uint2*>(row + L::kHalfCols) =
              make_uint2(to_half2(words[k][0], 0x4341), to_half2(words[k][1], 0x4341));
        }
      }
    }
  }
};

// A persistent grid: each block runs tiles blockIdx.x, + gridDim.x, ...,
// loading the next tile's source while it computes the current one.
// Blocks per SM the registers must allow: as many as the tile's shared
// memory lets an H200's SM hold (228 KB, 1 KB reserved per block), at most 3
// (with 1 block the compiler took 138 registers at S = 4 and ran far slower
// than at 2, which shared memory fits there), and at most kSplitMinBlocks
// where the counts differ (at 3, 80 registers, the 3 x 2 kernel spilled and
// ran slower; tuning.json: "tensor.min_blocks").
constexpr int kSplitMinBlocks = 2;
// On pairs at most kPairMinBlocks. At 3, 80 registers, the 2 x 2 pair kernel
// spilled 72 bytes while it held its next tile's whole source and summed the
// vertical products apart; it holds no more than whole rounds of groups
// (Tile::kEarly), its last partial round loaded after the vertical pass, and
// sums the vertical products in one accumulator (kOneSum), and spills
// nothing. 3 blocks beat 2 on a whole frame's graph, where the UV blocks fill
// the SMs the Y kernel's last round leaves, though not on a lone 1920x1080x2
// plane (tuning.json: "tensor.pair_blocks").
constexpr int kPairMinBlocks = 3;
template <int SX, int SY, int C>
constexpr int kMinBlocks = static_cast<int>(
    std::min<std::size_t>({SX == SY ? 3 : kSplitMinBlocks, C == 1 ? 3 : kPairMinBlocks,
                           228 * 1024 / (Layout<SX, SY, C>::kShared + 1024)}));
static_assert(kMinBlocks<2, 2, 1> == 3 && kMinBlocks<3, 3, 1> == 2 && kMinBlocks<4, 4, 1> == 2 &&
              kMinBlocks<5, 5, 1> == 1 && kMinBlocks<2, 2, 2> == kPairMinBlocks);

// The horizontal B fragments of the taps: element (k, n) of step s, half h
// is x[16 s + k - n - 8 h - x_offset]; lane (g, t) holds k = 2t, 2t+1 (b0)
// and 2t+8, 2t+9 (b1), n = g.
template <int SX>
__device__ __forceinline__ void horizontal_fragments(uint32_t (&bt)[SX][2][2][2], const TapHalves& tx, const Taps& taps,
                                                     int g, int t) {
#pragma unroll
  for (int s = 0; s < SX; ++s)
#pragma unroll
    for (int h = 0; h < 2; ++h)
#pragma unroll
      for (int part = 0; part < 2; ++part) {
        const int i = 16 * s + 2 * t - g - 8 * h - taps.x_offset;
        bt[s][h][part][0] = tx.pair(i, part);
        bt[s][h][part][1] = tx.pair(i + 8, part);
      }
}

// The vertical A fragments: element (m, k) of step s is y[16 s + k - m];
// lane (g, t) holds (g, 2t..), (g+8, 2t..), (g, 2t+8..), (g+8, 2t+8..), the
// last equal to the first.
template <int SY>
__device__ __forceinline__ void vertical_fragments(uint32_t (&at)[SY][2][4], const TapHalves& ty, int g, int t) {
#pragma unroll
  for (int s = 0; s < SY; ++s)
#pragma unroll
    for (int part = 0; part < 2; ++part) {
      const int i = 16 * s + 2 * t - g;
      at[s][part][0] = at[s][part][3] = ty.pair(i, part);
      at[s][part][1] = ty.pair(i - 8, part);
      at[s][part][2] = ty.pair(i + 8, part);
    }
}

// Horizontal: H = S x T_h for the warp's 16 columns (cb), the hi and lo taps
// in separate sums (shorter MMA chains), kept as fp16 hi and lo planes.
template <class L, int SX>
__device__ __forceinline__ void horizontal_pass(const __half* staged, __half* h_hi, __half* h_lo,
                                                const uint32_t (&bt)[SX][2][2][2], int staged_col, int cb,
                                                int lane_row, int lane_col, int g, int t) {
#pragma unroll
  for (int rb = 0; rb < L::kRows / 16; ++rb) {
    float acc[2][2][4] = {};  // [n half][hi, lo taps]
#pragma unroll
    for (int s = 0; s < SX; ++s) {
      uint32_t a[4];
      load_block(a, staged + (16 * rb + lane_row) * L::kSPitch + staged_col + 16 * s + lane_col);
#pragma unroll
      for (int h = 0; h < 2; ++h)
#pragma unroll
        for (int part = 0; part < 2; ++part) mma(acc[h][part], a, bt[s][h][part][0], bt[s][h][part][1]);
    }
    // This lane's results: rows g and g + 8, columns 8h + 2t and + 1.
#pragma unroll
    for (int h = 0; h < 2; ++h)
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        const float v0 = acc[h][0][2 * e] + acc[h][1][2 * e], v1 = acc[h][0][2 * e + 1] + acc[h][1][2 * e + 1];
        const __half2 hi = __floats2half2_rn(v0, v1);
        const float2 f = __half22float2(hi);
        const int i = (16 * rb + g + 8 * e) * L::kHPitch + 16 * cb + 8 * h + 2 * t;
        *reinterpret_cast<__half2*>(h_hi + i) = hi;
        *reinterpret_cast<__half2*>(h_lo + i) = __floats2half2_rn(v0 - f.x, v1 - f.y);
      }
  }
}

// Vertical: out = T_v x H for the warp's 16 columns, taps hi x H hi, taps lo
// x H hi and taps hi x H lo, summed apart (shorter MMA chains), or on pairs
// in one sum (fewer registers, a chain three times as long; see kMinBlocks);
// plus the staging's bias, rounded into the output tile.
template <class L, int SY, int C>
__device__ __forceinline__ void vertical_pass(const __half* h_hi, const __half* h_lo, uint8_t* out,
                                              const uint32_t (&at)[SY][2][4], const Taps& taps, int cb, int lane_row,
                                              int lane_col, int g, int t) {
  constexpr bool kOneSum = C == 2;
  constexpr int kSums = kOneSum ? 1 : 3;
#pragma unroll
  for (int ob = 0; ob < kTileH / 16; ++ob) {
    float acc[2][kSums][4] = {};
#pragma unroll
    for (int s = 0; s < SY; ++s) {
      // b[0], b[1]: columns 0-7's fragment; b[2], b[3]: columns 8-15's.
      uint32_t bh[4], bl[4];
      const int i = (16 * (ob + s) + lane_row) * L::kHPitch + 16 * cb + lane_col;
      load_block<true>(bh, h_hi + i);
      load_block<true>(bl, h_lo + i);
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        mma(acc[h][0], at[s][0], bh[2 * h], bh[2 * h + 1]);
        mma(acc[h][1 % kSums], at[s][1], bh[2 * h], bh[2 * h + 1]);
        mma(acc[h][2 % kSums], at[s][0], bl[2 * h], bl[2 * h + 1]);
      }
    }
#pragma unroll
    for (int h = 0; h < 2; ++h)
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        float v[2];
#pragma unroll
        for (int q = 0; q < 2; ++q) {
          v[q] = acc[h][0][2 * e + q];
#pragma unroll
          for (int p = 1; p < kSums; ++p) v[q] += acc[h][p][2 * e + q];
          v[q] += taps.bias;
        }
        const uint32_t b = round_clamp<uint8_t>(v[0]) | uint32_t{round_clamp<uint8_t>(v[1])} << 8;
        *reinterpret_cast<uint16_t*>(out + (16 * ob + g + 8 * e) * L::kOutPitch + 16 * cb + 8 * h + 2 * t) =
            static_cast<uint16_t>(b);
      }
  }
}

// Chunk (row, c) of the output tile: 16 bytes (pairs: U's and V's 8 pixels
// interleaved again; the output tile holds U's 64 pixels, then V's).
template <class L, int C>
__device__ __forceinline__ uint4 output_chunk(const uint8_t* out, int row, int c) {
  if constexpr (C == 1) {
    return *reinterpret_cast<const uint4*>(out + row * L::kOutPitch + c);
  } else {
    const uint2 u = *reinterpret_cast<const uint2*>(out + row * L::kOutPitch + c / 2);
    const uint2 w = *reinterpret_cast<const uint2*>(out + row * L::kOutPitch + kTileW / 2 + c / 2);
    return make_uint4(__byte_perm(u.x, w.x, 0x5140), __byte_perm(u.x, w.x, 0x7362), __byte_perm(u.y, w.y, 0x5140),
                      __byte_perm(u.y, w.y, 0x7362));
  }
}

// C: 1, or 2 interleaved channels (staged apart, interleaved again at the
// store). Lays out shared memory, splits the taps into fragments, then runs
// its tiles: stage, load the next, the two passes, store.
template <int SX, int SY, int C>
__global__ void __launch_bounds__(kThreads, kMinBlocks<SX, SY, C>) gauss_tensor(const uint8_t* __restrict__ src, std::ptrdiff_t sp,
                                                         uint8_t* __restrict__ dst, std::ptrdiff_t dp, int width,
                                                         int height, const Taps taps, int tiles_x, int tiles,
                                                         bool vector_in, bool vector_out) {
  using L = Layout<SX, SY, C>;
  extern __shared__ __align__(16) unsigned char smem[];
  __half* staged = reinterpret_cast<__half*>(smem);
  __half* h_hi = reinterpret_cast<__half*>(smem + L::kSBytes);
  __half* h_lo = h_hi + L::kRows * L::kHPitch;
  __half* tap_mem = h_lo + L::kRows * L::kHPitch;
  const TapHalves tx{tap_mem, tap_mem + kTapLen<SX>};
  const TapHalves ty{tap_mem + 2 * kTapLen<SX>, tap_mem + 2 * kTapLen<SX> + kTapLen<SY>};
  uint8_t* out = smem;  // after the horizontal pass
  const int tid = threadIdx.x;
  const int warp = tid >> 5, lane = tid & 31, g = lane >> 2, t = lane & 3;
  const int cb = warp;  // the warp's 16 columns of H and of the output: pairs' U in 0-63, V in 64-127
  // Its staged columns: of its channel's half.
  constexpr int kWarpsPerChannel = 8 / C;
  const int staged_col = C == 1 ? 16 * warp : warp / kWarpsPerChannel * L::kHalfCols + 16 * (warp % kWarpsPerChannel);
  const int lane_row = lane & 15, lane_col = 8 * (lane >> 4);  // ldmatrix addresses

  int tile = blockIdx.x;
  Tile<L, C> next;
  if (tile < tiles)
    next.template load<0, Tile<L, C>::kPer>(src, sp, width, height, tile % tiles_x * kTileW, tile / tiles_x * kTileH,
                                            taps.rx, taps.ry, vector_in, tid);
  split_taps(taps.x, 2 * taps.rx + 1, tx.hi, tx.lo, kTapLen<SX>, tid);
  split_taps(taps.y, 2 * taps.ry + 1, ty.hi, ty.lo, kTapLen<SY>, tid);
  __syncthreads();
  uint32_t bt[SX][2][2][2];  // [step][n half][hi, lo][b0, b1]
  horizontal_fragments<SX>(bt, tx, taps, g, t);
  uint32_t at[SY][2][4];  // [step][hi, lo][a0..a3]
  vertical_fragments<SY>(at, ty, g, t);

  for (; tile < tiles; tile += gridDim.x) {
    const int x0 = tile % tiles_x * kTileW, y0 = tile / tiles_x * kTileH;
    next.stage(staged, tid);
    __syncthreads();
    const int following = tile + gridDim.x;
    if (following < tiles)
      next.load(src, sp, width, height, following % tiles_x * kTileW, following / tiles_x * kTileH, taps.rx, taps.ry,
                vector_in, tid);
    horizontal_pass<L, SX>(staged, h_hi, h_lo, bt, staged_col, cb, lane_row, lane_col, g, t);
    __syncthreads();  // every warp is done with the staged source: the output tile takes its place
    vertical_pass<L, SY, C>(h_hi, h_lo, out, at, taps, cb, lane_row, lane_col, g, t);
    __syncthreads();
    if (following < tiles)  // the last partial round, if any
      next.template load<Tile<L, C>::kEarly, Tile<L, C>::kPer>(src, sp, width, height, following % tiles_x * kTileW,
                                                             following / tiles_x * kTileH, taps.rx, taps.ry,
                                                             vector_in, tid);
    // Store the tile, 16 bytes per thread and step. (The stores stay in the
    // kernel: as a function of their own they changed the compiled code.)
    constexpr int kChunksPerRow = kTileW / 16;
#pragma unroll
    for (int k = tid; k < kTileH * kChunksPerRow; k += kThreads) {
      const int row = k / kChunksPerRow, c = 16 * (k % kChunksPerRow);
      const int y = y0 + row, x = x0 + c;
      if (y >= height || x >= width) continue;
      uint4 v;
      v = output_chunk<L, C>(out, row, c);
      uint8_t* d = row_ptr(dst, dp, y) + x;
      if (vector_out && x + 16 <= width) {
        *reinterpret_cast<uint4*>(d) = v;
      } else {
        const uint8_t* b = reinterpret_cast<const uint8_t*>(&v);
        for (int j = 0; j < 16 && x + j < width; ++j) d[j] = b[j];
      }
    }
    __syncthreads();  // the output tile is read: the next source may take its place
  }
}

// The launches instantiated: every (SX, SY) with SY <= SX <= SY + 2 (with
// rx = ry, SX - SY is 0 or 1); any other pair of counts runs as (max, max),
// the extra blocks of taps being zeros.
constexpr bool instantiated(int sx, int sy) { return sy <= sx && sx <= sy + 2; }

// The counts a launch takes for radii rx and ry (pixels).
struct Steps {
  int x, y;
};
constexpr Steps launch_steps_for(int rx, int ry) {
  const int sx = steps_x(rx), sy = steps_y(ry), s = std::max(sx, sy);
  if (!instantiated(sx, sy)) return {s, s};
  return {sx, sy};
}

// f(SX, SY) for the counts' instantiation, as std::integral_constant values.
template <class F>
auto with_steps(Steps st, F&& f) {
#define STREAMBLUR_TENSOR_CASE(X, Y) \
  if (st.x == X && st.y == Y) return f(std::integral_constant<int, X>{}, std::integral_constant<int, Y>{});
  STREAMBLUR_TENSOR_CASE(1, 1)
  STREAMBLUR_TENSOR_CASE(2, 2)
  STREAMBLUR_TENSOR_CASE(3, 3)
  STREAMBLUR_TENSOR_CASE(4, 4)
  STREAMBLUR_TENSOR_CASE(5, 5)
  STREAMBLUR_TENSOR_CASE(2, 1)
  STREAMBLUR_TENSOR_CASE(3, 2)
  STREAMBLUR_TENSOR_CASE(4, 3)
  STREAMBLUR_TENSOR_CASE(5, 4)
  STREAMBLUR_TENSOR_CASE(3, 1)
  STREAMBLUR_TENSOR_CASE(4, 2)
  STREAMBLUR_TENSOR_CASE(5, 3)
#undef STREAMBLUR_TENSOR_CASE
  throw std::invalid_argument("tensor-core Gaussian: radius above 32");
}

std::size_t shared_for(Steps st, int channels) {
  return with_steps(st, [channels](auto sx, auto sy) {
    return channels == 1 ? Layout<sx, sy, 1>::kShared : Layout<sx, sy, 2>::kShared;
  });
}

bool aligned(const void* p, std::ptrdiff_t pitch, std::size_t to) {
  return reinterpret_cast<std::uintptr_t>(p) % to == 0 && pitch % static_cast<std::ptrdiff_t>(to) == 0;
}

template <int SX, int SY, int C>
void launch(const uint8_t* src, std::ptrdiff_t sp, uint8_t* dst, std::ptrdiff_t dp, int width, int height,
            const Taps& taps, cudaStream_t stream) {
  using L = Layout<SX, SY, C>;
  auto kernel = gauss_tensor<SX, SY, C>;
  static std::atomic<unsigned long long> opted{0};
  opt_in_shared(kernel, opted);
  // As many blocks as run at once (the occupancy, per device), or fewer.
  static std::atomic<int> per_sm[64] = {};
  const int device = detail::device_index() & 63;
  int resident = per_sm[device].load(std::memory_order_relaxed);
  if (resident == 0) {
    CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&resident, kernel, kThreads, L::kShared));
    resident = std::max(resident, 1);
    per_sm[device].store(resident, std::memory_order_relaxed);
  }
  const int tiles_x = (width + kTileW - 1) / kTileW;
  const long long tiles = static_cast<long long>(tiles_x) * ((height + kTileH - 1) / kTileH);
  if (tiles > (1ll << 30)) throw std::invalid_argument("tensor-core Gaussian: plane too large");
  const int blocks =
      static_cast<int>(std::min<long long>(tiles, static_cast<long long>(resident) * detail::multiprocessors()));
  kernel<<<blocks, kThreads, L::kShared, stream>>>(src, sp, dst, dp, width, height, taps, tiles_x,
                                                   static_cast<int>(tiles), aligned(src, sp, 4), aligned(dst, dp, 16));
  STREAMBLUR_CHECK_LAUNCH("gauss_tensor", stream);
}

template <int C>
void launch_steps(const uint8_t* src, std::ptrdiff_t sp, uint8_t* dst, std::ptrdiff_t dp, int width, int height,
                  const Taps& taps, cudaStream_t stream) {
  with_steps(launch_steps_for(taps.rx, taps.ry), [&](auto sx, auto sy) {
    launch<sx, sy, C>(src, sp, dst, dp, width, height, taps, stream);
  });
}

}  // namespace

bool fits(int rx, int ry, std::size_t sample_bytes, int channels) {
  if (sample_bytes != 1 || (channels != 1 && channels != 2) || rx < 0 || ry < 0 || rx > kMaxRadius || ry > kMaxRadius)
    return false;
  return shared_for(launch_steps_for(rx, ry), channels) <= shared_limit();
}

int tap_blocks(int rx, int ry) { return steps(rx, ry); }

void gauss(Plane<const uint8_t> s, Plane<uint8_t> d, const BlurTaps& in, cudaStream_t stream) {
  const uint8_t* src = s.data;
  uint8_t* dst = d.data;
  const std::ptrdiff_t sp = s.pitch, dp = d.pitch;
  const int width = s.samples_per_row(), height = s.height, channels = s.channels, rx = in.rx, ry = in.ry;
  const float *wx = in.x, *wy = in.y;
  if (!fits(rx, ry, 1, channels))
    throw std::invalid_argument("tensor-core Gaussian: radius or channels beyond it, or tile beyond shared memory");
  if (width <= 0 || height <= 0) return;
  Taps taps{};
  double sx = 0, sy = 0;
  for (int i = 0; i <= 2 * rx; ++i) sx += taps.x[i] = wx[i];
  for (int i = 0; i <= 2 * ry; ++i) sy += taps.y[i] = wy[i];
  taps.rx = rx;
  taps.ry = ry;
  taps.x_offset = align4(rx) - rx;
  taps.bias = static_cast<float>(128.0 * sx * sy);
  if (channels == 1) return launch_steps<1>(src, sp, dst, dp, width, height, taps, stream);
  return launch_steps<2>(src, sp, dst, dp, width, height, taps, stream);
}

}  // namespace streamblur::cuda::tensor
