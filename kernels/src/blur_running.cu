// Box blurs whose cost does not grow with the radius: the "running" path of
// cuda::BoxBlur, for radii up to 4096.
//
// The output at (x, y) is the sum of the window [x - rx, x + rx] x
// [y - ry, y + ry] (edges clamped) over its size, rounded half up. Three kernels,
// each costing the same per sample whatever the radius:
//
// 1. segment_sums: the sum of each column over each segment of 32 rows, and
//    over the segment's first 8, 16 and 24 rows.
// 2. scan_segments: the segment sums scanned down each column, in place, so
//    that entry k is the column's prefix sum Q(32 k) (the sum of the rows
//    above row 32 k), and one more entry holds Q(height).
// 3. box_bands: the plane is cut into bands of L rows (L chosen so that the
//    kernel fills the GPU once), one block per band, its threads across the
//    whole row, each owning 8 consecutive samples. A thread starts its
//    columns' window sums at the band's first row y0 from two prefixes,
//    Q(y0 + ry + 1) - Q(y0 - ry); each prefix is a scanned segment entry, a
//    sub-segment entry and at most 7 rows (rows outside the plane are the
//    edge row repeated, so Q extends linearly beyond both ends). Then it
//    slides the sums down the band in registers, a row entering and a row
//    leaving the window per row, loaded (8 samples in one load) a step
//    ahead. G rows at a time (G = kRowsPerScan, below),
//    the block scans the column sums into G row prefixes P in shared memory
//    (one cub::BlockScan over G x channels sums), and each output is
//    P(x + rx + 1) - P(x - rx), P extended linearly past the row's ends the
//    same way; a thread writes 4 consecutive outputs with one store, reading
//    their 8 prefixes with 16-byte loads where they lie inside the row and
//    computing them from the row's total and edge columns where all four
//    lie past the same end. Where every window covers the whole row
//    (rx >= width - 1), a variant of the kernel skips the prefixes: each
//    row's window sums are then linear in x, from the row's total (one block
//    reduction) and its two edge columns.
//
// All sums are exact integers. Column sums are 32-bit (at most 8193 x 65535);
// the row prefix is 32-bit where the whole window's sum fits and 64-bit
// otherwise on 16-bit planes (8-bit planes keep 32-bit prefixes and record
// where they wrap: box_bands' kWraps). The prefixes may wrap modulo 2^32
// (2^64): only their differences,
// which are true window sums and fit, are used. 64-bit window sums are divided
// with a float estimate and a 32-bit correction (WideDivider).
//
// Global traffic per sample: the source is read once from memory (segment
// sums) and about three more times, mostly from L2 (a row entering, a row
// leaving, and the rows the band starts add up); the output is written once.
#include <cub/block/block_reduce.cuh>
#include <cub/block/block_scan.cuh>
#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <climits>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>

#include "blur_running.hpp"
#include "device_rows.cuh"
#include "streamblur/kernels/cuda_check.hpp"

namespace streamblur::cuda::running {
namespace {

using detail::divide_round;
using detail::row_ptr;

constexpr int kSegmentRows = 32;
constexpr int kSubRows = 8;  // sub-segment sums every 8 rows
constexpr int kSubsPerSegment = kSegmentRows / kSubRows - 1;
constexpr int kColumnThreads = 256;
constexpr int kScanParts = 4;    // scan_segments: threads per column
constexpr int kScanBatch = 17;   // and loads in flight per thread (a 2160-row plane's 68 segments in one batch)
constexpr int kItems = 8;        // box_bands: consecutive samples per thread
// An upper bound on box_bands' static shared memory (cub's scan storage).
constexpr std::size_t kStaticShared = 4096;

// Programmatic dependent launch (sm_90 and later): the three kernels are
// launched while the kernel before them still runs, do what does not need its
// results (box_bands loads its first rows of the source), then wait for it.
// The waits return at once in a launch without the attribute, and compile to
// nothing before sm_90.
__device__ __forceinline__ void wait_for_previous_kernel() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}
__device__ __forceinline__ void let_next_kernel_start() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" :::);
#endif
}

// V consecutive samples of a row: one 4- or 8-byte load where the caller
// checked alignment (V = 4), else one sample (V = 1); then as 32-bit values.
template <class T, int V> struct Raw { using type = T; };
template <> struct Raw<uint8_t, 4> { using type = uint32_t; };
template <> struct Raw<uint16_t, 4> { using type = uint2; };

template <class T, int V>
__device__ __forceinline__ typename Raw<T, V>::type load_raw(const T* p) {
  return *reinterpret_cast<const typename Raw<T, V>::type*>(p);
}
template <int V, class R>
__device__ __forceinline__ void unpack(R w, uint32_t v[V]) {
  if constexpr (V == 1) {
    v[0] = w;
  } else if constexpr (sizeof(R) == 4) {
#pragma unroll
    for (int j = 0; j < 4; ++j) v[j] = (w >> (8 * j)) & 0xffu;
  } else {
    v[0] = w.x & 0xffffu; v[1] = w.x >> 16; v[2] = w.y & 0xffffu; v[3] = w.y >> 16;
  }
}

// The rows [y0, y1) of a segment at column s, loaded all at once where the
// segment is whole (a thread's loads are then all in flight together: one
// at a time, the column kernels were bound by memory latency).
template <class T, int V>
struct SegmentRows {
  typename Raw<T, V>::type raw[kSegmentRows];
  int count;
  __device__ __forceinline__ SegmentRows(const T* src, std::ptrdiff_t pitch, int s, int y0, int y1) : count(y1 - y0) {
    if (count == kSegmentRows) {
#pragma unroll
      for (int r = 0; r < kSegmentRows; ++r) raw[r] = load_raw<T, V>(row_ptr(src, pitch, y0 + r) + s);
    } else {
#pragma unroll
      for (int r = 0; r < kSegmentRows; ++r)
        if (r < count) raw[r] = load_raw<T, V>(row_ptr(src, pitch, y0 + r) + s);
    }
  }
};

// ---- 1. Column sums over segments of kSegmentRows rows, and within each
// segment the sums over its first 8, 16 and 24 rows (`sub`, three rows of
// entries per segment: a band's first window then starts from a scanned
// segment entry, a sub-segment entry and at most 7 rows). Each thread takes V
// adjacent columns.
template <int V>
__device__ __forceinline__ void store_sums(uint32_t* p, const uint32_t (&sum)[V]) {
  if constexpr (V == 4) *reinterpret_cast<uint4*>(p) = make_uint4(sum[0], sum[1], sum[2], sum[3]);
  else p[0] = sum[0];
}

template <class T, int V>
__global__ void __launch_bounds__(kColumnThreads)
segment_sums(const T* __restrict__ src, std::ptrdiff_t pitch, int samples, int height, uint32_t* __restrict__ seg,
             uint32_t* __restrict__ sub, bool early) {
  // The kernel before may write the source, or (another box before this one)
  // still read the tables. The wait comes first: once this kernel signals,
  // box_bands may start and read the source before its own wait, so that
  // kernel must have ended by then.
  wait_for_previous_kernel();
  if (early) let_next_kernel_start();
  const int s = (blockIdx.x * kColumnThreads + threadIdx.x) * V;
  if (s >= samples) return;
  const int y0 = blockIdx.y * kSegmentRows, y1 = min(height, y0 + kSegmentRows);
  const SegmentRows<T, V> rows(src, pitch, s, y0, y1);
  uint32_t sum[V] = {};
#pragma unroll
  for (int r = 0; r < kSegmentRows; ++r) {
    if (r >= rows.count) break;
    if (r % kSubRows == 0 && r > 0)
      store_sums<V>(sub + (static_cast<std::size_t>(blockIdx.y) * kSubsPerSegment + r / kSubRows - 1) * samples + s, sum);
    uint32_t v[V];
    unpack<V>(rows.raw[r], v);
#pragma unroll
    for (int j = 0; j < V; ++j) sum[j] += v[j];
  }
  store_sums<V>(seg + static_cast<std::size_t>(blockIdx.y) * samples + s, sum);
}

// ---- 2. Scan the segment sums down each column, in place: entry k becomes
// Q(32 k), and entry `segments` Q(height). kScanParts adjacent threads share
// a column, each taking a run of segments: their loads all go out at once
// (kScanBatch at a time), and a shuffle adds up the runs before theirs.
__global__ void __launch_bounds__(kColumnThreads)
scan_segments(uint32_t* __restrict__ seg, int samples, int segments, bool early) {
  if (early) let_next_kernel_start();
  wait_for_previous_kernel();  // segment_sums
  const int g = blockIdx.x * kColumnThreads + threadIdx.x;
  const int s = g / kScanParts, part = g % kScanParts;  // a column's parts share a group of lanes
  const int per_part = (segments + kScanParts - 1) / kScanParts;
  const int k0 = part * per_part, k1 = min(segments, k0 + per_part);
  const bool live = s < samples;
  uint32_t sum = 0;
  for (int k = k0; live && k < k1; k += kScanBatch)
#pragma unroll
    for (int i = 0; i < kScanBatch; ++i)
      if (k + i < k1) sum += seg[static_cast<std::size_t>(k + i) * samples + s];
  uint32_t run = sum;  // inclusive over the parts up to this one
#pragma unroll
  for (int d = 1; d < kScanParts; d <<= 1) {
    const uint32_t n = __shfl_up_sync(0xffffffffu, run, d, kScanParts);
    if (part >= d) run += n;
  }
  if (!live) return;
  run -= sum;  // the rows above this part's first segment
  for (int k = k0; k < k1; k += kScanBatch) {
    uint32_t v[kScanBatch];
#pragma unroll
    for (int i = 0; i < kScanBatch; ++i)
      if (k + i < k1) v[i] = seg[static_cast<std::size_t>(k + i) * samples + s];
#pragma unroll
    for (int i = 0; i < kScanBatch; ++i)
      if (k + i < k1) {
        seg[static_cast<std::size_t>(k + i) * samples + s] = run;
        run += v[i];
      }
  }
  if (part == kScanParts - 1) seg[static_cast<std::size_t>(segments) * samples + s] = run;
}

// ---- 3. One band of rows per block.

// G x C sums scanned together (G rows of C channels).
template <class Acc, int C>
struct Vec {
  Acc v[C];
};
template <class Acc, int C>
struct VecAdd {
  __device__ __forceinline__ Vec<Acc, C> operator()(const Vec<Acc, C>& a, const Vec<Acc, C>& b) const {
    Vec<Acc, C> r;
#pragma unroll
    for (int c = 0; c < C; ++c) r.v[c] = a.v[c] + b.v[c];
    return r;
  }
};

// The rounded quotient (n + d / 2) / d of a 32-bit sum by a fixed d >= 2, by
// multiplication (Granlund and Montgomery's round-up method, exact for every
// 32-bit n), without a float quotient's two conversions per output.
struct Divider {
  uint32_t magic;
  int shift;  // ceil(log2 d) - 1
  uint32_t half;
};
inline Divider make_divider(uint32_t d) {
  int l = 0;
  while ((uint64_t{1} << l) < d) ++l;
  const uint32_t magic = static_cast<uint32_t>(((uint64_t{1} << 32) * ((uint64_t{1} << l) - d)) / d + 1);
  return {magic, l - 1, d / 2};
}
__device__ __forceinline__ uint32_t divide_round(uint32_t sum, uint32_t count, const Divider& dv) {
  (void)count;
  const uint32_t n = sum + dv.half;
  const uint32_t t = __umulhi(dv.magic, n);
  return (t + ((n - t) >> 1)) >> dv.shift;
}

// The same for the 64-bit window sums of the widest windows (below 2^43:
// 8193^2 x 65535), whose quotients fit 16 bits and whose divisors 27 bits
// (8193^2). A float estimate from the sum's two 32-bit halves is within 2^-6
// of the true quotient (four roundings of 2^-24 relative each, times at most
// 65536), so its integer part is off by at most one; the remainder of that
// estimate lies in [-d, 2d) and so is exact in 32-bit wrapping arithmetic,
// and one step fixes the estimate: cheaper than a double quotient (a 64-bit
// to double conversion and back, and a 64-bit product, per output).
struct WideDivider {
  float inv;          // 1 / d
  float two32_inv;    // 2^32 / d
  uint32_t d, half;
};
inline WideDivider make_wide_divider(unsigned long long d) {
  return {static_cast<float>(1.0 / static_cast<double>(d)), static_cast<float>(4294967296.0 / static_cast<double>(d)),
          static_cast<uint32_t>(d), static_cast<uint32_t>(d / 2)};
}
__device__ __forceinline__ uint32_t divide_round(unsigned long long sum, unsigned long long count,
                                                 const WideDivider& dv) {
  (void)count;
  const unsigned long long n = sum + dv.half;
  const uint32_t hi = static_cast<uint32_t>(n >> 32), lo = static_cast<uint32_t>(n);
  uint32_t q = __float2uint_rz(fmaf(__uint2float_rn(hi), dv.two32_inv, __uint2float_rn(lo) * dv.inv));
  const int rem = static_cast<int>(lo - q * dv.d);  // n - q d, which is in [-d, 2d)
  if (rem < 0) --q;
  else if (rem >= static_cast<int>(dv.d)) ++q;
  return q;
}

// Rounded quotients of window sums one step (one pixel) apart, each step
// changing the sum by less than the divisor (box_bands' kSteps): the first
// quotient is a division, and each next one moves the remainder by the step
// and the quotient by at most one. A step is a column sum entering the
// window less one leaving it, below 255 (2 ry + 1) on 8-bit planes, and the
// divisor (2 rx + 1)(2 ry + 1) is larger where 2 rx + 1 > 255: true of every
// 8-bit window whose sum needs 64 bits (2 rx + 1 >= 2^32 / (255 x 8193)),
// and in the same way of steps of one row (2 ry + 1 > 255).
struct QuotientStep {
  uint32_t q;
  int r;  // n - q d, in [0, d), for n the sum plus d / 2
};
__device__ __forceinline__ QuotientStep first_quotient(unsigned long long sum, const WideDivider& dv) {
  const uint32_t q = divide_round(sum, 0ull, dv);
  return {q, static_cast<int>(static_cast<uint32_t>(sum) + dv.half - q * dv.d)};
}
__device__ __forceinline__ void next_quotient(QuotientStep& s, int step, const WideDivider& dv) {
  s.r += step;  // in (-d, 2d)
  if (s.r < 0) {
    s.r += static_cast<int>(dv.d);
    --s.q;
  } else if (s.r >= static_cast<int>(dv.d)) {
    s.r -= static_cast<int>(dv.d);
    ++s.q;
  }
}
inline bool quotient_steps_hold(std::size_t sample_bytes, int r) {
  return 2.0 * r + 1 > (sample_bytes == 1 ? 255.0 : 65535.0);
}
// Which band kernels take their quotients by steps: those of 8-bit windows
// whose sums need 64 bits (whole-row windows with 64-bit sums, and wrapping
// prefixes).
template <class T, class Acc, bool kWhole, bool kWraps>
constexpr bool quotient_steps() {
  return kWraps || (kWhole && sizeof(T) == 1 && sizeof(Acc) == 8);
}

template <class Acc> struct Quotient;
template <> struct Quotient<uint32_t> { using Inv = Divider; };
template <> struct Quotient<unsigned long long> { using Inv = WideDivider; };

// The type of a window's sum: the prefixes' own, or 64-bit from wrapping
// 32-bit prefixes (box_bands' kWraps).
template <class Acc, bool kWraps>
using WindowSum = std::conditional_t<kWraps, unsigned long long, Acc>;
constexpr int kMaxWraps = 3;


// A thread's kItems consecutive samples of a row, packed into 32-bit words.
template <class T>
struct Samples {
  static constexpr int kPer = 4 / sizeof(T);
  static constexpr uint32_t kMask = sizeof(T) == 1 ? 0xffu : 0xffffu;
  uint32_t w[kItems / kPer];
  __device__ __forceinline__ uint32_t operator[](int i) const { return (w[i / kPer] >> (8 * sizeof(T) * (i % kPer))) & kMask; }
};

// `whole`: the samples lie inside the row and one vector load may fetch them.
template <class T>
__device__ __forceinline__ Samples<T> load_samples(const T* row, int s0, int samples, bool whole) {
  Samples<T> r;
  if (whole) {
    if constexpr (sizeof(T) == 1) {
      const uint2 v = *reinterpret_cast<const uint2*>(row + s0);
      r.w[0] = v.x; r.w[1] = v.y;
    } else {
      const uint4 v = *reinterpret_cast<const uint4*>(row + s0);
      r.w[0] = v.x; r.w[1] = v.y; r.w[2] = v.z; r.w[3] = v.w;
    }
  } else {
#pragma unroll
    for (int j = 0; j < kItems / Samples<T>::kPer; ++j) r.w[j] = 0;
#pragma unroll
    for (int i = 0; i < kItems; ++i)
      if (s0 + i < samples)
        r.w[i / Samples<T>::kPer] |= static_cast<uint32_t>(row[s0 + i]) << (8 * sizeof(T) * (i % Samples<T>::kPer));
  }
  return r;
}

// Entries of one row prefix in shared memory: kCapacity + C, rounded up to 16 bytes.
template <class Acc>
__host__ __device__ constexpr int prefix_stride(int entries) {
  return (entries * static_cast<int>(sizeof(Acc)) + 15) / 16 * 16 / static_cast<int>(sizeof(Acc));
}

// Rows per scan (G) and the blocks per multiprocessor that the band kernel's
// registers must allow (512-thread blocks): one row per cub scan at 2 blocks
// ran fastest, ahead of 2 rows, 4 rows at 1 block and a scan of one barrier
// per row; 4 outputs per store beat one (tuning.json: "running.band_shape").
constexpr int kRowsPerScan = 1;
constexpr int kBandMinBlocks = 2;

// Blocks per multiprocessor that a band kernel's registers must allow: one
// for 1024 threads; three for 256 threads with 32-bit prefixes (rows of up to
// 2048 samples: 1080p planes and 960x1080 pairs), whose grid is one wave of
// blocks, so that the band count follows (left at 2 blocks, the 8-bit pair
// kernel ran its bands at low occupancy; tuning.json:
// "running.band_min_blocks"); otherwise kBandMinBlocks.
template <class Acc, int kBlock>
constexpr int band_min_blocks() {
  if (kBlock == 1024) return 1;
  if (kBlock == 256 && sizeof(Acc) == 4) return std::max(3, kBandMinBlocks);
  return kBandMinBlocks;
}

// Rows scanned together (G): kRowsPerScan, at most 2 where more prefix rows
// would not fit the shared memory (64-bit sums on the widest rows) or the
// registers (1024 threads).
template <class Acc, int kBlock>
constexpr int rows_per_step() {
  return sizeof(Acc) == 8 || kBlock == 1024 ? std::min(2, kRowsPerScan) : kRowsPerScan;
}

// G prefix rows, and 8 entries past the last one that the 4-output loads may
// touch (their values unused); for windows wider than the row (kWhole), G
// rows of each channel's two edge sums and row total.
template <class Acc, int C, int kBlock, bool kWhole = false>
constexpr std::size_t band_shared_bytes() {
  if constexpr (kWhole) return static_cast<std::size_t>(rows_per_step<Acc, kBlock>()) * 3 * C * sizeof(Acc);
  return (static_cast<std::size_t>(rows_per_step<Acc, kBlock>()) * prefix_stride<Acc>(kBlock * kItems + C) + 8) *
         sizeof(Acc);
}

using AnyPhase = std::integral_constant<int, -1>;  // a load's offset modulo 4, not known at compile time

// P[i .. i + 3] of a prefix row (16-byte aligned), i % 4 == M known at
// compile time: one aligned 16-byte load, two where M != 0, and constant
// selects. M < 0: i % 4 known only at run time (the same across a warp),
// one branch to the load of that phase.
template <int M>
__device__ __forceinline__ void load4(const uint32_t* P, int i, uint32_t (&v)[4], std::integral_constant<int, M>) {
  if constexpr (M < 0) {
    switch (i & 3) {
      case 0: return load4(P, i, v, std::integral_constant<int, 0>{});
      case 1: return load4(P, i, v, std::integral_constant<int, 1>{});
      case 2: return load4(P, i, v, std::integral_constant<int, 2>{});
      default: return load4(P, i, v, std::integral_constant<int, 3>{});
    }
  } else {
    const uint4* p = reinterpret_cast<const uint4*>(P + (i - M));
    const uint4 a = p[0];
    if constexpr (M == 0) {
      v[0] = a.x; v[1] = a.y; v[2] = a.z; v[3] = a.w;
    } else {
      const uint4 b = p[1];
      if constexpr (M == 1) { v[0] = a.y; v[1] = a.z; v[2] = a.w; v[3] = b.x; }
      else if constexpr (M == 2) { v[0] = a.z; v[1] = a.w; v[2] = b.x; v[3] = b.y; }
      else { v[0] = a.w; v[1] = b.x; v[2] = b.y; v[3] = b.z; }
    }
  }
}
// The same for 64-bit prefixes: two aligned 16-byte loads where i is even,
// three where it is odd (i % 2 is the same across a warp).
__device__ __forceinline__ void load4(const unsigned long long* P, int i, unsigned long long (&v)[4]) {
  const ulonglong2* p = reinterpret_cast<const ulonglong2*>(P + (i & ~1));
  const ulonglong2 a = p[0], b = p[1];
  if ((i & 1) == 0) {
    v[0] = a.x; v[1] = a.y; v[2] = b.x; v[3] = b.y;
    return;
  }
  const ulonglong2 c = p[2];
  v[0] = a.y; v[1] = b.x; v[2] = b.y; v[3] = c.x;
}
template <int M>
__device__ __forceinline__ void load4(const unsigned long long* P, int i, unsigned long long (&v)[4],
                                      std::integral_constant<int, M>) {
  load4(P, i, v);
}
template <class T>
__device__ __forceinline__ void store4(T* o, const uint32_t (&v)[4]) {
  if constexpr (sizeof(T) == 1) *reinterpret_cast<uint32_t*>(o) = v[0] | v[1] << 8 | v[2] << 16 | v[3] << 24;
  else *reinterpret_cast<uint2*>(o) = make_uint2(v[0] | v[1] << 16, v[2] | v[3] << 16);
}

// ---- Pieces of box_bands (below), in the order it uses them. Those that
// were lambdas inside it are still called through lambdas there, and take
// what those captured by reference: the kernel's compiled code stays the
// same only so.

// Which rows of the tables a prefix Q(y) adds.
struct TableRows {
  int q = -1, sub = -1;  // rows of q and sub to add (-1: none)
};

// Q(y)'s source rows for the thread's samples, added up into `out` (they
// need nothing from the column kernels, so they load before the wait for
// them), and the table rows to add after it.
template <class T, class Row>
__device__ __forceinline__ TableRows band_prefix_rows(int y, uint32_t (&out)[kItems], const Row& row, const int& s0,
                                                      const int& samples, const bool& whole, const int& height,
                                                      const int& segments) {
  if (y <= 0) {  // the first row repeated above the plane
    const Samples<T> v = load_samples(row(0), s0, samples, whole);
#pragma unroll
    for (int i = 0; i < kItems; ++i) out[i] = static_cast<uint32_t>(y) * v[i];
    return {};
  }
  if (y >= height) {  // Q(height), then the last row repeated below it
    const Samples<T> v = load_samples(row(height - 1), s0, samples, whole);
#pragma unroll
    for (int i = 0; i < kItems; ++i) out[i] = static_cast<uint32_t>(y - height) * v[i];
    return {segments, -1};
  }
  const int k = y / kSegmentRows, j = y % kSegmentRows / kSubRows;
  const int first = k * kSegmentRows + j * kSubRows;  // y - first < kSubRows
#pragma unroll
  for (int i = 0; i < kItems; ++i) out[i] = 0;
#pragma unroll
  for (int r = 0; r < kSubRows - 1; ++r)
    if (first + r < y) {
      const Samples<T> v = load_samples(row(first + r), s0, samples, whole);
#pragma unroll
      for (int i = 0; i < kItems; ++i) out[i] += v[i];
    }
  return {k, j > 0 ? k * kSubsPerSegment + j - 1 : -1};
}

// Row k of a table of `samples` entries, added to the thread's sums.
__device__ __forceinline__ void add_table_row(const uint32_t* table, int k, uint32_t (&out)[kItems],
                                              const int& samples, const int& s0, const bool& q_whole) {
  const uint32_t* p = table + static_cast<std::size_t>(k) * samples + s0;
  if (q_whole) {
    const uint4 a = reinterpret_cast<const uint4*>(p)[0], b = reinterpret_cast<const uint4*>(p)[1];
    out[0] += a.x; out[1] += a.y; out[2] += a.z; out[3] += a.w; out[4] += b.x; out[5] += b.y; out[6] += b.z; out[7] += b.w;
  } else {
#pragma unroll
    for (int i = 0; i < kItems; ++i) out[i] += s0 + i < samples ? p[i] : 0u;
  }
}

// The rows entering and leaving the window at rows y .. y + G - 1.
template <class T, int G>
__device__ __forceinline__ void fetch_rows(Samples<T> (&entering)[G], Samples<T> (&leaving)[G], int y, const T* src,
                                           std::ptrdiff_t src_pitch, int ry, int height, int s0, int samples, bool whole) {
  auto row = [&](int y) { return row_ptr(src, src_pitch, y); };
#pragma unroll
  for (int g = 0; g < G; ++g) {
    entering[g] = load_samples(row(min(y + g + ry, height - 1)), s0, samples, whole);
    leaving[g] = load_samples(row(min(max(y + g - ry - 1, 0), height - 1)), s0, samples, whole);
  }
}

// A row's prefixes P as the outputs read them (write_row_outputs). The
// helpers take the type of value they return (their first argument): Wide,
// the true prefix, or with kWraps also Acc, its low 32 bits, which is all
// that the steps between quotients need (kSteps) and costs no wraps and half
// the registers.
//
// Entry e (channel c) of P as a true prefix: with kWraps, 2^32 for each wrap
// at or before it (the row's wraps read from shared memory where needed, the
// same words across the block: with steps, only for each group's first
// sums).
template <bool kWraps, class V, class Acc>
__device__ __forceinline__ V prefix_entry(V, int e, int c, const Acc* const& P,
                                          const int (*const& wrapped)[1 + kMaxWraps]) {
  if constexpr (kWraps && sizeof(V) == 8) {
    unsigned long long high = 0;
#pragma unroll
    for (int k = 1; k <= kMaxWraps; ++k) high += e >= wrapped[c][k];
    return static_cast<V>(P[e]) + static_cast<V>(high << 32);
  } else {
    return static_cast<V>(P[e]);
  }
}
// The row's total of channel c plus n times its last column (P past the
// row's right end).
template <int C, class V, class Acc, class At>
__device__ __forceinline__ V prefix_right_of(V v, int n, int c, const Acc* const& P, const int& samples, const At& at) {
  return static_cast<V>(at(v, samples + c, c) +
                        static_cast<V>(n) * static_cast<V>(static_cast<Acc>(P[samples + c] - P[samples - C + c])));
}
// n times channel c's first column (P at or before 0).
template <int C, class V, class Acc>
__device__ __forceinline__ V prefix_left_of(V, int n, int c, const Acc* const& P) {
  return static_cast<V>(static_cast<V>(static_cast<long long>(n)) * static_cast<V>(P[C + c]));
}
// P at pixel i of channel c, inside the row or past either end.
template <int C, class V, class At, class RightOf, class LeftOf>
__device__ __forceinline__ V prefix_at(V v, int i, int c, const int& width, const At& at, const RightOf& right_of,
                                       const LeftOf& left_of) {
  if (i <= 0) return left_of(v, i, c);
  if (i >= width) return right_of(v, i - width, c);
  return at(v, i * C + c, c);
}
// prefix_at without branches, for groups that straddle an end of the row
// (group_prefixes): an entry clamped into the row plus the extension past
// either end, so that one lane's eight loads issue together. (With p_at,
// whose branches hold each load back, the one lane at each end of a row
// whose group straddles it costs the whole block that lane's latency at
// every row; rows with rx % 4 = 1 or 2 have such a group at both ends;
// tuning.json: "running.straddle".)
template <int C, class V, class Acc, class At>
__device__ __forceinline__ V prefix_ext(V v, int i, int c, const Acc* const& P, const int& samples, const int& width,
                                        const At& at) {
  const int xc = min(max(i, 0), width);
  const V last = static_cast<V>(static_cast<Acc>(P[samples + c] - P[samples - C + c]));  // the last column
  return static_cast<V>(at(v, xc * C + c, c) + static_cast<V>(max(i - width, 0)) * last -
                        static_cast<V>(max(-i, 0)) * static_cast<V>(P[C + c]));
}

// The prefixes of a group of four outputs starting at sample s4. Sample s's
// two prefixes are the entries s + (rx + 1) C and s - rx C: loaded (load4)
// where they lie in [0, samples + C), computed from the row's edge columns
// where all four lie past the same end of the row (per channel: the group's
// samples are channels j % C), and one by one where the group straddles an
// end. Loaded ones are P's own type, so with kWraps only Acc. m_hi, m_lo:
// std::integral_constant<int, M> with M the loaded entries' offset modulo 4
// where known at compile time (hence straight-line loads), -1 where not.
template <int C, bool kSteps, class Acc, class V, class MHi, class MLo, class RightOf, class LeftOf, class PExt,
          class PAt>
__device__ __forceinline__ void group_prefixes_at(int s4, V (&hi)[4], V (&lo)[4], MHi m_hi, MLo m_lo,
                                                  const Acc* const& P, const int& rx, const int& samples,
                                                  const int& width, const RightOf& right_of, const LeftOf& left_of,
                                                  const PExt& p_ext, const PAt& p_at) {
  const int off_hi = (rx + 1) * C, off_lo = -rx * C;
  const int x0 = s4 / C, x3 = (s4 + 3) / C;  // the group's first and last pixel
  const bool lo_in = s4 + off_lo >= 0, lo_out = x3 <= rx;
  const bool hi_in = s4 + off_hi + 3 < samples + C, hi_out = x0 + rx + 1 >= width;
  if ((lo_in || lo_out) && (hi_in || hi_out)) {
    if (hi_in) {
      load4(P, s4 + off_hi, hi, m_hi);
    } else {
#pragma unroll
      for (int j = 0; j < 4; ++j) hi[j] = right_of(V{}, (s4 + j) / C + rx + 1 - width, j % C);
    }
    if (lo_in) {
      load4(P, s4 + off_lo, lo, m_lo);
    } else {
#pragma unroll
      for (int j = 0; j < 4; ++j) lo[j] = left_of(V{}, (s4 + j) / C - rx, j % C);
    }
  } else {
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const int x = (s4 + j) / C, c = s4 + j - x * C;
      if (!kSteps) {  // (with steps, the 64-register pair kernels spilled)
        hi[j] = p_ext(V{}, x + rx + 1, c);
        lo[j] = p_ext(V{}, x - rx, c);
      } else {
        hi[j] = p_at(V{}, x + rx + 1, c);
        lo[j] = p_at(V{}, x - rx, c);
      }
    }
  }
}

// kSteps, four samples per store: eight consecutive samples per thread
// (kBlock x 8 is the row's capacity: one group of eight at most), two groups
// of four: the first sum of each channel as a step from the same output on
// the row before (on the band's first row, exact and divided), the other
// seven as steps from the sum one pixel before, all from their low 32 bits.
// A step down a row is a row entering the window less one leaving it, below
// 255 (2 rx + 1), and the divisor is larger, as 2 ry + 1 > 255 too
// (quotient_steps_hold). (Four samples per thread and a division for every
// four outputs cost these windows far more instructions than those with
// 32-bit sums; tuning.json: "running.eight_outputs".)
template <class T, class Acc, class Wide, int C, int kBlock, class Inv, class GroupPrefixes, class PAt>
__device__ __forceinline__ void steps_outputs(T* o, const int& t, const int& samples, const int& rx,
                                              QuotientStep (&above)[C], uint32_t (&above_sum)[C], bool& above_known,
                                              const Inv& inv_count, const GroupPrefixes& group_prefixes,
                                              const PAt& p_at) {
  // (A loop that runs at most once: as an `if`, the 64-register kernels
  // spilled 114-298 bytes.)
  for (int s8 = 8 * t; s8 < samples; s8 += 8 * kBlock) {
    QuotientStep qs[C];
    uint32_t before[C];  // the low 32 bits of each channel's last sum
#pragma unroll
    for (int h = 0; h < 8; h += 4) {
      if (s8 + h >= samples) break;  // samples % 4 == 0 here
      Acc hi[4], lo[4];
      group_prefixes(s8 + h, hi, lo, AnyPhase{}, AnyPhase{});
      uint32_t v[4];
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        const uint32_t sum = static_cast<uint32_t>(hi[j] - lo[j]);
        if (h == 0 && j < C) {
          if (above_known) {
            qs[j] = above[j];
            next_quotient(qs[j], static_cast<int>(sum - above_sum[j]), inv_count);
          } else {  // the band's first row
            const int x = (s8 + j) / C;
            qs[j] = first_quotient(p_at(Wide{}, x + rx + 1, j) - p_at(Wide{}, x - rx, j), inv_count);
          }
          above[j] = qs[j];
          above_sum[j] = sum;
        } else {
          next_quotient(qs[j % C], static_cast<int>(sum - before[j % C]), inv_count);
        }
        before[j % C] = sum;
        v[j] = qs[j % C].q;
      }
      store4(o + s8 + h, v);
    }
  }
  above_known = true;
}

// Four consecutive samples per thread and store, each a division.
template <class T, class Wide, int kBlock, class Inv, class MHi, class MLo, class GroupPrefixes>
__device__ __forceinline__ void group_outputs(T* o, MHi m_hi, MLo m_lo, const int& t, const int& samples,
                                              const Wide& count, const Inv& inv_count,
                                              const GroupPrefixes& group_prefixes) {
  for (int s4 = 4 * t; s4 < samples; s4 += 4 * kBlock) {
    uint32_t v[4];
    Wide hi[4], lo[4];
    group_prefixes(s4, hi, lo, m_hi, m_lo);
#pragma unroll
    for (int j = 0; j < 4; ++j) v[j] = static_cast<uint32_t>(divide_round(hi[j] - lo[j], count, inv_count));
    store4(o + s4, v);
  }
}

// Row o's outputs from its prefix row P (P[i]: the prefix at sample index
// i) and its wraps. Each output: P(x + rx + 1) - P(x - rx). P(width) is the
// row's total (the entry past its last sample); past the ends P grows by the
// edge pixel's column sum, P(1) - P(0) on the left (P(0) = 0), P(width) -
// P(width - 1) on the right.
template <class T, class Acc, class Wide, int C, int kBlock, bool kWraps, bool kSteps, class Inv>
__device__ __forceinline__ void write_row_outputs(T* const& o, const Acc* const& P,
                                                  const int (*const& wrapped)[1 + kMaxWraps], const int& samples,
                                                  const int& width, const int& rx, const int& t,
                                                  const bool& out_aligned, const Wide& count, const Inv& inv_count,
                                                  QuotientStep (&above)[C], uint32_t (&above_sum)[C],
                                                  bool& above_known) {
  auto at = [&](auto v, int e, int c) { return prefix_entry<kWraps>(v, e, c, P, wrapped); };
  auto right_of = [&](auto v, int n, int c) { return prefix_right_of<C>(v, n, c, P, samples, at); };
  auto left_of = [&](auto v, int n, int c) { return prefix_left_of<C>(v, n, c, P); };
  auto p_at = [&](auto v, int i, int c) { return prefix_at<C>(v, i, c, width, at, right_of, left_of); };
  auto p_ext = [&](auto v, int i, int c) { return prefix_ext<C>(v, i, c, P, samples, width, at); };
  auto group_prefixes = [&](int s4, auto (&hi)[4], auto (&lo)[4], auto m_hi, auto m_lo) {
    group_prefixes_at<C, kSteps>(s4, hi, lo, m_hi, m_lo, P, rx, samples, width, right_of, left_of, p_ext, p_at);
  };
  if (out_aligned) {
    if constexpr (kSteps) {
      steps_outputs<T, Acc, Wide, C, kBlock>(o, t, samples, rx, above, above_sum, above_known, inv_count,
                                             group_prefixes, p_at);
    } else {
      auto groups = [&](auto m_hi, auto m_lo) {
        group_outputs<T, Wide, kBlock>(o, m_hi, m_lo, t, samples, count, inv_count, group_prefixes);
      };
      // The loads' offsets modulo 4, (rx + 1) C and -rx C, as constants:
      // one loop per value of rx % 4 (one channel) or rx % 2 (pairs).
      // With the offset a runtime value, the unaligned loads' selects and
      // branches made rows with both offsets unaligned (rx % 4 = 1, 2)
      // execute more instructions than the others (tuning.json:
      // "running.load_phases").
      using std::integral_constant;
      if constexpr (sizeof(Acc) == 4 && C == 1) {
        switch (rx & 3) {
          case 0: groups(integral_constant<int, 1>{}, integral_constant<int, 0>{}); break;
          case 1: groups(integral_constant<int, 2>{}, integral_constant<int, 3>{}); break;
          case 2: groups(integral_constant<int, 3>{}, integral_constant<int, 2>{}); break;
          default: groups(integral_constant<int, 0>{}, integral_constant<int, 1>{}); break;
        }
      } else if constexpr (sizeof(Acc) == 4 && C == 2) {
        if (rx & 1) groups(integral_constant<int, 0>{}, integral_constant<int, 2>{});
        else groups(integral_constant<int, 2>{}, integral_constant<int, 0>{});
      } else {
        groups(AnyPhase{}, AnyPhase{});
      }
    }
  } else {
    // One output at a time. Unrolled, this path set the register count
    // of the whole kernel and made the 64-register kernels (512 and 1024
    // threads) spill; the 256-thread kernels have room and run faster
    // with it unrolled (tuning.json: "running.one_output_unroll").
#pragma unroll(kWraps || kBlock > 256 ? 1 : 4)
    for (int s = t; s < samples; s += kBlock) {
      const int x = s / C, c = s - x * C;
      o[s] = static_cast<T>(divide_round(p_at(Wide{}, x + rx + 1, c) - p_at(Wide{}, x - rx, c), count, inv_count));
    }
  }
}

template <class Acc>
__device__ __forceinline__ void store_prefixes(Acc* out, const Acc (&p)[kItems]) {
  if constexpr (sizeof(Acc) == 4) {
    reinterpret_cast<uint4*>(out)[0] = make_uint4(p[0], p[1], p[2], p[3]);
    reinterpret_cast<uint4*>(out)[1] = make_uint4(p[4], p[5], p[6], p[7]);
  } else {
#pragma unroll
    for (int j = 0; j < kItems / 2; ++j) reinterpret_cast<ulonglong2*>(out)[j] = make_ulonglong2(p[2 * j], p[2 * j + 1]);
  }
}

// kWhole: the thread's outputs of row o from its edges. kSteps: the
// thread's first output of each channel divides, the others step by last -
// first (the sum's slope in x).
template <class T, class Acc, int C, bool kSteps, class Inv>
__device__ __forceinline__ void whole_row_outputs(T* o, const Acc* edges, int s0, int samples, int rx, int width,
                                                  bool out_aligned, Acc count, const Inv& inv_count) {
  QuotientStep qs[C];
#pragma unroll
  for (int h = 0; h < kItems; h += 4) {  // 4 outputs at a time (fewer live registers)
    uint32_t v[4];
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const int c = (h + j) % C, x = (s0 + h + j) / C;  // s0 is a multiple of C
      const Acc first = edges[c], last = edges[C + c];
      if constexpr (kSteps)
        if (h + j >= C) {
          next_quotient(qs[c], static_cast<int>(static_cast<uint32_t>(last) - static_cast<uint32_t>(first)),
                        inv_count);
          v[j] = qs[c].q;
          continue;
        }
      const Acc sum = static_cast<Acc>(rx - x + 1) * first + static_cast<Acc>(x + rx - width + 2) * last +
                      (edges[2 * C + c] - first - last);
      if constexpr (kSteps) {
        qs[c] = first_quotient(sum, inv_count);
        v[j] = qs[c].q;
      } else {
        v[j] = static_cast<uint32_t>(divide_round(sum, count, inv_count));
      }
    }
    if (out_aligned) {  // samples % 4 == 0: whole groups of 4
      if (s0 + h + 4 <= samples) store4(o + s0 + h, v);
    } else {
#pragma unroll
      for (int j = 0; j < 4; ++j)
        if (s0 + h + j < samples) o[s0 + h + j] = static_cast<T>(v[j]);
    }
  }
}

// kWraps, thread 0: the other parity's records cleared, for the next step.
template <int P, int G, int C>
__device__ __forceinline__ void clear_wraps(int (&wraps)[P][G][C][1 + kMaxWraps], int parity, int t) {
  if (t == 0)  // the other parity's records, for the next step
#pragma unroll
    for (int g = 0; g < G; ++g)
#pragma unroll
      for (int c = 0; c < C; ++c) {
        wraps[parity ^ 1][g][c][0] = 0;
#pragma unroll
        for (int k = 1; k <= kMaxWraps; ++k) wraps[parity ^ 1][g][c][k] = INT_MAX;
      }
}

// kWhole: every window covers the whole row (rx >= width - 1), so a row's
// window sums are a linear function of x: sum(x) = (rx - x + 1) c(0) +
// (x + rx - width + 2) c(width - 1) + the sum of the columns between, with
// c the column sums. The block then adds up each row (no prefixes in shared
// memory, no scan) and computes its outputs from that total and the two edge
// columns.
//
// kWraps (8-bit samples whose window sums need 64 bits, windows narrower
// than the row): the prefixes stay 32-bit and wrap, and the block records
// where each row's prefix of each channel wraps (an entry whose prefix is
// below the one before it: each step adds less than 2^32). An entry's true
// prefix is its 32-bit value plus 2^32 times the wraps at or before it. A
// channel's row total is below 8192 x 255 x 8193 < 4 x 2^32, so at most 3
// wraps. This halves the scan's and the prefixes' words against 64-bit
// prefixes; the window sums and their quotients are 64-bit.
//
// The kernel: its shared memory and state, the band's first window sums,
// then G rows a step: their column sums, their prefixes (or totals), their
// outputs.
template <class T, class Acc, int C, int kBlock, bool kWhole, bool kWraps = false>
__global__ void __launch_bounds__(kBlock, band_min_blocks<Acc, kBlock>())
box_bands(const T* __restrict__ src, std::ptrdiff_t src_pitch, T* __restrict__ dst, std::ptrdiff_t dst_pitch,
          int width, int height, int rx, int ry, int band_rows, bool aligned, bool out_aligned, const uint32_t* __restrict__ q,
          const uint32_t* __restrict__ sub, int segments, WindowSum<Acc, kWraps> count,
          typename Quotient<WindowSum<Acc, kWraps>>::Inv inv_count) {
  // #lizard forgives: 162 lines. Moving its steps out into functions, as
  // the pieces above were, changed the generated code of 37 of its kernels;
  // that split waits for a GPU benchmark run beside today's code.
  static_assert(!kWraps || (sizeof(T) == 1 && sizeof(Acc) == 4 && !kWhole));
  using Wide = WindowSum<Acc, kWraps>;  // a window's sum
  constexpr bool kSteps = quotient_steps<T, Acc, kWhole, kWraps>();
  constexpr int G = rows_per_step<Acc, kBlock>();
  using Sum = Vec<Acc, G * C>;
  using Scan = cub::BlockScan<Sum, kBlock, cub::BLOCK_SCAN_WARP_SCANS>;
  using Reduce = cub::BlockReduce<Sum, kBlock, cub::BLOCK_REDUCE_WARP_REDUCTIONS>;
  constexpr int kCapacity = kBlock * kItems;  // samples a row may have
  constexpr int kStride = prefix_stride<Acc>(kCapacity + C);
  __shared__ typename std::conditional_t<kWhole, Reduce, Scan>::TempStorage scan_storage;
  extern __shared__ __align__(16) unsigned char smem[];
  Acc* prefix = reinterpret_cast<Acc*>(smem);  // G rows of kStride entries
  // kWraps: per step parity, row and channel, the count of wraps and their
  // entries (INT_MAX: none); a step fills one parity, clears the other.
  __shared__ int wraps[kWraps ? 2 : 1][G][C][1 + kMaxWraps];
  if constexpr (kWraps) {
    if (threadIdx.x == 0)
      for (int b = 0; b < 2; ++b)
        for (int g = 0; g < G; ++g)
          for (int c = 0; c < C; ++c) {
            wraps[b][g][c][0] = 0;
            for (int k = 1; k <= kMaxWraps; ++k) wraps[b][g][c][k] = INT_MAX;
          }
  }
  int parity = 0;
  // kSteps with prefixes (kWraps): the thread's first output of each channel
  // on the row before (quotient, remainder, low 32 bits of the sum), for the
  // next row's to step from (steps_outputs); registers, as shared memory
  // took the 1024-thread pair kernel past the 48 KB a launch gets.
  QuotientStep above[C];
  uint32_t above_sum[C];
  bool above_known = false;
  const int samples = width * C;
  const int t = threadIdx.x, s0 = t * kItems;
  const bool active = s0 < samples;
  const bool whole = aligned && s0 + kItems <= samples;                      // one load per row
  const bool q_whole = samples % 4 == 0 && s0 + kItems <= samples;           // two 16-byte loads per prefix
  const int y0 = blockIdx.x * band_rows, y1 = min(height, y0 + band_rows);
  auto row = [&](int y) { return row_ptr(src, src_pitch, y); };
  // Q(y) for the thread's samples: a scanned segment entry, a sub-segment
  // entry and the rows after it.
  auto prefix_rows = [&](int y, uint32_t (&out)[kItems]) -> TableRows {
    return band_prefix_rows<T>(y, out, row, s0, samples, whole, height, segments);
  };
  auto add_tables = [&](TableRows t, uint32_t (&out)[kItems]) {
    if (t.q >= 0) add_table_row(q, t.q, out, samples, s0, q_whole);
    if (t.sub >= 0) add_table_row(sub, t.sub, out, samples, s0, q_whole);
  };
  // The rows entering and leaving the window at rows y .. y + G - 1, loaded a
  // step ahead so that their latency hides behind a step's scan and outputs.
  Samples<T> entering[G], leaving[G];
  auto fetch = [&](int y) { fetch_rows<T, G>(entering, leaving, y, src, src_pitch, ry, height, s0, samples, whole); };
  // The window's column sums at the band's first row: Q(y0 + ry + 1) - Q(y0 - ry).
  uint32_t sums[kItems] = {}, low[kItems] = {};
  TableRows sums_tables, low_tables;
  if (active) {
    sums_tables = prefix_rows(y0 + ry + 1, sums);
    low_tables = prefix_rows(y0 - ry, low);
  }
  fetch(y0);  // zeros past the row's end, as the scan needs
  wait_for_previous_kernel();  // scan_segments (and so segment_sums)
  if (active) {
    add_tables(sums_tables, sums);
    add_tables(low_tables, low);
#pragma unroll
    for (int i = 0; i < kItems; ++i) sums[i] -= low[i];
  }

  auto write_outputs = [&](T* o, const Acc* P, const int (*wrapped)[1 + kMaxWraps]) {
    write_row_outputs<T, Acc, Wide, C, kBlock, kWraps, kSteps>(o, P, wrapped, samples, width, rx, t, out_aligned,
                                                               count, inv_count, above, above_sum, above_known);
  };

  for (int y = y0; y < y1; y += G) {
    uint32_t rows[G][kItems];  // column sums at rows y .. y + G - 1
#pragma unroll
    for (int g = 0; g < G; ++g)
#pragma unroll
      for (int i = 0; i < kItems; ++i) {
        if (y + g > y0) sums[i] += entering[g][i] - leaving[g][i];
        rows[g][i] = sums[i];
      }
    if (y + G < y1) fetch(y + G);

    // The G rows' column sums per channel: what the scan (or the reduction)
    // adds up along the row.
    Sum total{};
#pragma unroll
    for (int g = 0; g < G; ++g)
#pragma unroll
      for (int i = 0; i < kItems; ++i) total.v[g * C + i % C] += rows[g][i];
    if constexpr (kWhole) {
      // Each row's total and edge columns, a barrier, then the thread's own
      // samples. The next step's reduction has a barrier before thread 0
      // writes the edges again; every thread reaches it after reading them.
      const Sum row_total = Reduce(scan_storage).Reduce(total, VecAdd<Acc, G * C>{});  // thread 0's is the block's
#pragma unroll
      for (int g = 0; g < G; ++g) {
        Acc* edges = prefix + g * 3 * C;
        if (t == 0)
#pragma unroll
          for (int c = 0; c < C; ++c) {
            edges[c] = rows[g][c];
            edges[2 * C + c] = row_total.v[g * C + c];
          }
#pragma unroll
        for (int i = 0; i < kItems; ++i)
          if (s0 + i >= samples - C && s0 + i < samples) edges[C + s0 + i - (samples - C)] = rows[g][i];
      }
      __syncthreads();
#pragma unroll
      for (int g = 0; g < G; ++g) {
        if (y + g >= y1) break;
        whole_row_outputs<T, Acc, C, kSteps>(row_ptr(dst, dst_pitch, y + g), prefix + g * 3 * C, s0, samples, rx,
                                             width, out_aligned, count, inv_count);
      }
    } else {
    Sum run, aggregate;
    Scan(scan_storage).ExclusiveScan(total, run, Sum{}, VecAdd<Acc, G * C>{}, aggregate);
    // kWraps: the rows whose wraps write_outputs reads. With four samples
    // per store, only the band's first row: its first quotients divide true
    // prefixes, and every later row's step from the row above and from the
    // low 32 bits alone; one output at a time, every row.
    auto wrap_records_read = [&](int g) { return !out_aligned || (g == 0 && y == y0); };
#pragma unroll
    for (int g = 0; g < G; ++g) {
      Acc p[kItems];
#pragma unroll
      for (int i = 0; i < kItems; ++i) {
        p[i] = run.v[g * C + i % C];
        run.v[g * C + i % C] += rows[g][i];
        if constexpr (kWraps)
          if (wrap_records_read(g) && run.v[g * C + i % C] < p[i]) {  // the channel's next entry wraps
            int* w = wraps[parity][g][i % C];
            const int k = atomicAdd(w, 1);
            if (k < kMaxWraps) w[1 + k] = s0 + i + C;
          }
      }
      store_prefixes(prefix + g * kStride + s0, p);
    }
    if constexpr (kWraps) clear_wraps(wraps, parity, t);
    if (t == 0)
#pragma unroll
      for (int g = 0; g < G; ++g)
#pragma unroll
        for (int c = 0; c < C; ++c) prefix[g * kStride + kCapacity + c] = aggregate.v[g * C + c];  // a full row's total
    __syncthreads();
#pragma unroll
    for (int g = 0; g < G; ++g) {
      if (y + g >= y1) break;
      write_outputs(row_ptr(dst, dst_pitch, y + g), prefix + g * kStride, wraps[kWraps ? parity : 0][g]);
    }
    parity ^= 1;
    // No barrier here: the next step's scan has one before any thread writes
    // the prefixes again, and every thread reaches it after its outputs.
    }
  }
}

// ---- Host side.

// Threads per block of the band kernel for a row of `samples` samples.
int block_threads(int samples) {
  if (samples <= 256 * kItems) return 256;
  if (samples <= 512 * kItems) return 512;
  return 1024;
}

template <class Acc, int C>
std::size_t band_shared_bytes(int samples) {
  switch (block_threads(samples)) {
    case 256: return band_shared_bytes<Acc, C, 256>();
    case 512: return band_shared_bytes<Acc, C, 512>();
    default: return band_shared_bytes<Acc, C, 1024>();
  }
}

bool wide_sums(std::size_t sample_bytes, int rx, int ry) {
  const double max_sample = sample_bytes == 1 ? 255.0 : 65535.0;
  const double count = (2.0 * rx + 1) * (2.0 * ry + 1);
  return max_sample * count + count / 2 >= 4294967296.0;
}

// Rows per band: one wave of blocks (as many as fit at once on every
// multiprocessor), at least one step.
int band_rows(int height, int blocks_per_sm, int step) {
  const int target = detail::multiprocessors() * std::max(1, blocks_per_sm);
  return std::max(step, (height + target - 1) / target);
}

// How the three kernels are launched: 0 (devices before sm_90), one after
// the other; 3 (sm_90 and later), scan_segments and box_bands with
// programmatic dependent launch, each starting as the blocks of the kernel
// before it end, segment_sums and scan_segments letting the next kernel
// start at once (its blocks start where room is left, and wait), and
// segment_sums itself a dependent launch, starting as the kernel before it
// in the stream ends. (tests/gpu/ab.sh compares other settings from patches.)
// box_bands reads the source before its wait, so the source's producer must
// have ended before box_bands starts: segment_sums waits for it before it
// signals (signalling first would let a producer that signals early race
// box_bands' first loads: the test
// CudaBlur.RunningBoxWaitsForAnEarlySignallingProducer).
int launch_mode() { return detail::device_attribute<cudaDevAttrComputeCapabilityMajor>() >= 9 ? 3 : 0; }

// kernel<<<grid, block, shared, stream>>>(args...), after the kernel before
// it in the stream or (`programmatic`) overlapping its end.
template <class... Params, class... Args>
void launch(const char* name, void (*kernel)(Params...), dim3 grid, dim3 block, std::size_t shared,
            cudaStream_t stream, bool programmatic, Args&&... args) {
  cudaLaunchAttribute attribute{};
  attribute.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attribute.val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t config{};
  config.gridDim = grid;
  config.blockDim = block;
  config.dynamicSmemBytes = shared;
  config.stream = stream;
  config.attrs = &attribute;
  config.numAttrs = programmatic ? 1 : 0;
  const cudaError_t rc = cudaLaunchKernelEx(&config, kernel, std::forward<Args>(args)...);
  if (rc != cudaSuccess) throw_cuda_error(rc, name, __FILE__, __LINE__);
  check_launch(name, stream, __FILE__, __LINE__);
}

template <class T, class Acc, int C, int kBlock, bool kWhole, bool kWraps>
void launch_bands(const T* src, std::ptrdiff_t src_pitch, T* dst, std::ptrdiff_t dst_pitch, int width, int height,
                  int rx, int ry, const uint32_t* q, const uint32_t* sub, int segments, bool programmatic,
                  cudaStream_t stream) {
  static std::atomic<unsigned long long> opted{0};
  static std::atomic<int> per_sm_of[64] = {};  // per device, which may differ
  std::atomic<int>& per_sm = per_sm_of[detail::device_index() & 63];
  auto kernel = box_bands<T, Acc, C, kBlock, kWhole, kWraps>;
  static_assert(sizeof(typename cub::BlockScan<Vec<Acc, rows_per_step<Acc, kBlock>() * C>, kBlock,
                                               cub::BLOCK_SCAN_WARP_SCANS>::TempStorage) <= kStaticShared);
  static_assert(sizeof(typename cub::BlockReduce<Vec<Acc, rows_per_step<Acc, kBlock>() * C>, kBlock,
                                                 cub::BLOCK_REDUCE_WARP_REDUCTIONS>::TempStorage) <= kStaticShared);
  constexpr std::size_t shared = band_shared_bytes<Acc, C, kBlock, kWhole>();
  if (shared + kStaticShared > 48 * 1024) detail::opt_in_shared(kernel, opted, kStaticShared);
  if (per_sm.load(std::memory_order_relaxed) == 0) {
    int n = 0;
    CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, kernel, kBlock, shared));
    per_sm.store(std::max(1, n), std::memory_order_relaxed);
  }
  const int rows = band_rows(height, per_sm.load(std::memory_order_relaxed), rows_per_step<Acc, kBlock>());
  const int bands = (height + rows - 1) / rows;
  using Wide = WindowSum<Acc, kWraps>;
  if (quotient_steps<T, Acc, kWhole, kWraps>() &&
      (!quotient_steps_hold(sizeof(T), rx) || (kWraps && !quotient_steps_hold(sizeof(T), ry))))
    throw std::logic_error(  // box_bands' kSteps
        "running box: quotient steps need 2 rx + 1 (and with prefixes 2 ry + 1) above the largest sample");
  const Wide count = static_cast<Wide>(2 * rx + 1) * static_cast<Wide>(2 * ry + 1);
  typename Quotient<Wide>::Inv inv;
  if constexpr (sizeof(Wide) == 4) inv = make_divider(count);
  else inv = make_wide_divider(count);
  const bool aligned = reinterpret_cast<std::uintptr_t>(src) % 16 == 0 && src_pitch % 16 == 0;
  const bool out_aligned = reinterpret_cast<std::uintptr_t>(dst) % 8 == 0 && dst_pitch % 8 == 0 && width * C % 4 == 0;
  launch("box_bands", kernel, bands, kBlock, shared, stream, programmatic, src, src_pitch, dst, dst_pitch, width,
         height, rx, ry, rows, aligned, out_aligned, q, sub, segments, count, inv);
}

// kWide: the window sums need 64 bits. Windows that cover the row take the
// whole-row kernel (64-bit sums where kWide); others the prefixes: 64-bit
// where kWide on 16-bit samples, 32-bit wrapping ones on 8-bit samples.
template <class T, bool kWide, int C>
void launch_bands(const T* src, std::ptrdiff_t src_pitch, T* dst, std::ptrdiff_t dst_pitch, int width, int height,
                  int rx, int ry, const uint32_t* q, const uint32_t* sub, int segments, bool programmatic,
                  cudaStream_t stream) {
  using Whole = std::conditional_t<kWide, unsigned long long, uint32_t>;
  using Prefix = std::conditional_t<kWide && sizeof(T) == 2, unsigned long long, uint32_t>;
  constexpr bool kWraps = kWide && sizeof(T) == 1;
  auto go = [&](auto block) {
    if (rx >= width - 1)  // every window covers the row
      launch_bands<T, Whole, C, decltype(block)::value, true, false>(src, src_pitch, dst, dst_pitch, width, height, rx,
                                                                     ry, q, sub, segments, programmatic, stream);
    else
      launch_bands<T, Prefix, C, decltype(block)::value, false, kWraps>(src, src_pitch, dst, dst_pitch, width, height,
                                                                        rx, ry, q, sub, segments, programmatic, stream);
  };
  switch (block_threads(width * C)) {
    case 256: return go(std::integral_constant<int, 256>{});
    case 512: return go(std::integral_constant<int, 512>{});
    default: return go(std::integral_constant<int, 1024>{});
  }
}

}  // namespace

bool fits(int width, int channels, std::size_t sample_bytes, int rx, int ry) {
  if (channels < 1 || channels > kMaxChannels || width < 1 || width * channels > kMaxSamples) return false;
  if (rx < 0 || ry < 0 || rx > 4096 || ry > 4096 || rx + ry == 0) return false;
  const int samples = width * channels;
  const bool wide = wide_sums(sample_bytes, rx, ry);
  const std::size_t shared = channels == 1
      ? (wide ? band_shared_bytes<unsigned long long, 1>(samples) : band_shared_bytes<uint32_t, 1>(samples))
      : (wide ? band_shared_bytes<unsigned long long, 2>(samples) : band_shared_bytes<uint32_t, 2>(samples));
  return shared + kStaticShared <= detail::shared_limit();
}

std::size_t scratch_bytes(int width, int channels, int height) {
  const std::size_t samples = static_cast<std::size_t>(width) * channels;
  const std::size_t segments = (height + kSegmentRows - 1) / kSegmentRows;
  return (segments + 1 + kSubsPerSegment * segments) * samples * sizeof(uint32_t);
}

template <class T>
void box(Plane<const T> s, Plane<T> d, const BlurTaps& taps, void* scratch, cudaStream_t stream) {
  const T* src = s.data;
  T* dst = d.data;
  const std::ptrdiff_t src_pitch = s.pitch, dst_pitch = d.pitch;
  const int width = s.width, height = s.height, channels = s.channels, rx = taps.rx, ry = taps.ry;
  if (!fits(width, channels, sizeof(T), rx, ry))
    throw std::invalid_argument("running box: a " + std::to_string(width) + "x" + std::to_string(channels) +
                                " row does not fit the running-sum kernels");
  const int samples = width * channels;
  const int segments = (height + kSegmentRows - 1) / kSegmentRows;
  uint32_t* q = static_cast<uint32_t*>(scratch);
  uint32_t* sub = q + static_cast<std::size_t>(segments + 1) * samples;

  // Four columns per thread where rows allow 4-sample loads.
  const std::size_t vec = 4 * sizeof(T);
  const bool wide_loads = reinterpret_cast<std::uintptr_t>(src) % vec == 0 &&
                          src_pitch % static_cast<std::ptrdiff_t>(vec) == 0 && samples % 4 == 0;
  const int per_thread = wide_loads ? 4 : 1;
  const dim3 grid((samples / per_thread + kColumnThreads - 1) / kColumnThreads, segments);
  const int mode = launch_mode();
  const bool early = mode >= 2;
  launch("segment_sums", wide_loads ? segment_sums<T, 4> : segment_sums<T, 1>, grid, kColumnThreads, 0, stream,
         mode == 3, src, src_pitch, samples, height, q, sub, early);
  launch("scan_segments", scan_segments, (samples * kScanParts + kColumnThreads - 1) / kColumnThreads, kColumnThreads,
         0, stream, mode > 0, q, samples, segments, early);
  const bool wide = wide_sums(sizeof(T), rx, ry), programmatic = mode > 0;
  auto bands = [&](auto wide_sums, auto channel_count) {
    launch_bands<T, decltype(wide_sums)::value, decltype(channel_count)::value>(
        src, src_pitch, dst, dst_pitch, width, height, rx, ry, q, sub, segments, programmatic, stream);
  };
  using One = std::integral_constant<int, 1>;
  using Two = std::integral_constant<int, 2>;
  if (channels == 1) {
    if (wide) bands(std::true_type{}, One{});
    else bands(std::false_type{}, One{});
  } else {
    if (wide) bands(std::true_type{}, Two{});
    else bands(std::false_type{}, Two{});
  }
}

template void box<uint8_t>(Plane<const uint8_t>, Plane<uint8_t>, const BlurTaps&, void*, cudaStream_t);
template void box<uint16_t>(Plane<const uint16_t>, Plane<uint16_t>, const BlurTaps&, void*, cudaStream_t);

}  // namespace streamblur::cuda::running
