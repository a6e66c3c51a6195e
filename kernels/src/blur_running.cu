// Box blurs whose cost does not grow with the radius: the "running" path of
// cuda::BoxBlur, for radii up to 4096.
//
// The output at (x, y) is the sum of the window [x - rx, x + rx] x
// [y - ry, y + ry] (edges clamped) over its size, rounded half up. Three kernels,
// each costing the same per sample whatever the radius:
//
// 1. segment_sums: the sum of each column over each segment of 32 rows.
// 2. band_prefixes: the plane is cut into bands of L rows (L chosen so that
//    the row kernel fills the GPU). Each thread owns one column and one
//    segment; from the segment sums above it, it knows the column's prefix
//    sum Q(y) (the sum of rows < y) at its segment's first row, walks the
//    segment's rows and writes Q at the rows where some band's first window
//    starts or ends: Q(b L + ry + 1) and Q(b L - ry), and Q(H) at the end.
// 3. box_rows: one block per band, its threads across the whole row. Each
//    thread owns columns; the window's column sum at the band's first row is
//    Q(y0 + ry + 1) - Q(y0 - ry) (rows outside the plane are the edge row
//    repeated, so Q extends linearly beyond both ends), and each later row adds
//    the row entering the window and subtracts the row leaving it. Per row,
//    the block scans the column sums into a row prefix P in shared memory
//    (cub::BlockScan) and each output is P(x + rx + 1) - P(x - rx), P extended
//    linearly past the row's ends the same way.
//
// All sums are exact integers. Column sums are 32-bit (at most 8193 x 65535);
// the row prefix is 32-bit where the whole window's sum fits and 64-bit
// otherwise. The prefixes may wrap modulo 2^32 (2^64): only their differences,
// which are true window sums and fit, are used.
//
// Global traffic per sample: the three kernels read the source four times
// (once from memory, the rest mostly from L2) and write it once, plus the
// band-edge prefixes (8 bytes per column per band).
#include <cub/block/block_scan.cuh>
#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <stdexcept>
#include <string>

#include "blur_running.hpp"
#include "device_rows.cuh"
#include "streamblur/kernels/cuda_check.hpp"

namespace streamblur::cuda::running {
namespace {

using detail::divide_round;
using detail::row_ptr;

constexpr int kSegmentRows = 32;
constexpr int kColumnThreads = 256;
constexpr int kMinBandRows = 4;
constexpr int kPixelsPerThread = 8;  // row kernel: pixels each thread scans
// An upper bound on the row kernel's static shared memory (cub's scan storage).
constexpr std::size_t kStaticShared = 2048;

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

// ---- 1. Column sums over segments of kSegmentRows rows; each thread takes V
// adjacent columns.
template <class T, int V>
__global__ void __launch_bounds__(kColumnThreads)
segment_sums(const T* __restrict__ src, std::ptrdiff_t pitch, int samples, int height, uint32_t* __restrict__ seg) {
  const int s = (blockIdx.x * kColumnThreads + threadIdx.x) * V;
  if (s >= samples) return;
  const int y0 = blockIdx.y * kSegmentRows, y1 = min(height, y0 + kSegmentRows);
  const SegmentRows<T, V> rows(src, pitch, s, y0, y1);
  uint32_t sum[V] = {};
#pragma unroll
  for (int r = 0; r < kSegmentRows; ++r) {
    if (r >= rows.count) break;
    uint32_t v[V];
    unpack<V>(rows.raw[r], v);
#pragma unroll
    for (int j = 0; j < V; ++j) sum[j] += v[j];
  }
#pragma unroll
  for (int j = 0; j < V; ++j) seg[static_cast<std::size_t>(blockIdx.y) * samples + s + j] = sum[j];
}

// ---- 2. Column prefixes at the rows where the bands' first windows start
// and end. qa[b]: Q(b L + ry + 1); qb[b]: Q(b L - ry); written where that row
// lies in [0, height). qh: Q(height).
template <class T, int V>
__global__ void __launch_bounds__(kColumnThreads)
band_prefixes(const T* __restrict__ src, std::ptrdiff_t pitch, int samples, int height, int band_rows, int bands,
              int ry, const uint32_t* __restrict__ seg, uint32_t* __restrict__ qa, uint32_t* __restrict__ qb,
              uint32_t* __restrict__ qh) {
  const int s = (blockIdx.x * kColumnThreads + threadIdx.x) * V;
  if (s >= samples) return;
  const int k = blockIdx.y;
  const int y0 = k * kSegmentRows, y1 = min(height, y0 + kSegmentRows);
  const SegmentRows<T, V> rows(src, pitch, s, y0, y1);  // in flight while the offsets add up
  uint32_t q[V] = {};  // Q(y), modulo 2^32
#pragma unroll 8
  for (int i = 0; i < k; ++i) {
    const uint32_t* p = seg + static_cast<std::size_t>(i) * samples + s;
    if constexpr (V == 4) {
      const uint4 w = *reinterpret_cast<const uint4*>(p);
      q[0] += w.x; q[1] += w.y; q[2] += w.z; q[3] += w.w;
    } else {
      q[0] += p[0];
    }
  }
  // The first band whose row b L + ry + 1 (resp. b L - ry) is >= y0.
  int ba = y0 - ry - 1 <= 0 ? 0 : (y0 - ry - 1 + band_rows - 1) / band_rows;
  int ya = ba * band_rows + ry + 1;
  int bb = (y0 + ry + band_rows - 1) / band_rows;
  int yb = bb * band_rows - ry;
  // At row `at` of band b, store the prefix into `out` and move on to the
  // next band's row.
  auto store_band = [&](int y, int& at, int& b, uint32_t* __restrict__ out) {
    if (y != at) return;
    if (b < bands)
#pragma unroll
      for (int j = 0; j < V; ++j) out[static_cast<std::size_t>(b) * samples + s + j] = q[j];
    ++b;
    at += band_rows;
  };
#pragma unroll
  for (int r = 0; r < kSegmentRows; ++r) {
    if (r >= rows.count) break;
    const int y = y0 + r;
    store_band(y, ya, ba, qa);
    store_band(y, yb, bb, qb);
    uint32_t v[V];
    unpack<V>(rows.raw[r], v);
#pragma unroll
    for (int j = 0; j < V; ++j) q[j] += v[j];
  }
  if (y1 == height)
#pragma unroll
    for (int j = 0; j < V; ++j) qh[s + j] = q[j];
}

// ---- 3. One band of rows per block.
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
// 32-bit n): the float quotient's two conversions were a large part of the
// row kernel's instructions.
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

template <class Acc> struct Quotient;
template <> struct Quotient<uint32_t> { using Inv = Divider; };
template <> struct Quotient<unsigned long long> { using Inv = double; };

// Dynamic shared memory of the row kernel: the prefix (Acc) of a row of
// kBlock * kPixelsPerThread pixels plus its total, then the column sums.
template <class Acc>
__host__ __device__ constexpr std::size_t prefix_bytes(int capacity) {
  return (static_cast<std::size_t>(capacity) * sizeof(Acc) + 15) / 16 * 16;
}

template <class T, class Acc, int C, int kBlock>
__global__ void __launch_bounds__(kBlock)
box_rows(const T* __restrict__ src, std::ptrdiff_t src_pitch, T* __restrict__ dst, std::ptrdiff_t dst_pitch,
         int width, int height, int rx, int ry, int band_rows, const uint32_t* __restrict__ qa,
         const uint32_t* __restrict__ qb, const uint32_t* __restrict__ qh, Acc count,
         typename Quotient<Acc>::Inv inv_count) {
  using V = Vec<Acc, C>;
  using Scan = cub::BlockScan<V, kBlock, cub::BLOCK_SCAN_WARP_SCANS>;
  constexpr int kItems = kPixelsPerThread * C;  // consecutive samples a thread scans (a multiple of 4)
  constexpr int kCapacity = kBlock * kItems;    // samples a row may have
  __shared__ typename Scan::TempStorage scan_storage;
  __shared__ uint32_t edges[2][C];  // the row's first and last pixels' column sums
  extern __shared__ __align__(16) unsigned char smem[];
  const int samples = width * C;
  Acc* prefix = reinterpret_cast<Acc*>(smem);  // kCapacity + C entries
  uint32_t* sums = reinterpret_cast<uint32_t*>(smem + prefix_bytes<Acc>(kCapacity + C));  // kCapacity
  const int t = threadIdx.x;
  const int y0 = blockIdx.x * band_rows, y1 = min(height, y0 + band_rows);
  const std::size_t band = blockIdx.x;

  // The window's column sums at row y0, from the band-edge prefixes; they
  // stay in shared memory and slide down the band there. Past the row's end
  // they stay 0 for the scan.
  const T* first = src;
  const T* last = row_ptr(src, src_pitch, height - 1);
  auto q_at = [&](int y, const uint32_t* q, int s) -> uint32_t {
    if (y <= 0) return static_cast<uint32_t>(y) * first[s];  // edge row repeated above the plane
    if (y >= height) return qh[s] + static_cast<uint32_t>(y - height) * last[s];
    return q[band * samples + s];
  };
  for (int s = t; s < kCapacity; s += kBlock)
    sums[s] = s < samples ? q_at(y0 + ry + 1, qa, s) - q_at(y0 - ry, qb, s) : 0u;

  // The samples entering and leaving the window at the next row, loaded a row
  // ahead so that their latency hides behind this row's scan and outputs.
  constexpr int kOwned = kItems;  // samples t, t + kBlock, ...
  T entering[kOwned], leaving[kOwned];
  auto fetch = [&](int y) {
    const T* in = row_ptr(src, src_pitch, min(y + ry, height - 1));
    const T* out = row_ptr(src, src_pitch, max(y - ry - 1, 0));
#pragma unroll
    for (int k = 0; k < kOwned; ++k) {
      const int s = t + k * kBlock;
      if (s < samples) {
        entering[k] = in[s];
        leaving[k] = out[s];
      }
    }
  };
  if (y0 + 1 < y1) fetch(y0 + 1);

  for (int y = y0; y < y1; ++y) {
    if (y > y0) {
#pragma unroll
      for (int k = 0; k < kOwned; ++k) {
        const int s = t + k * kBlock;
        if (s < samples) sums[s] += static_cast<uint32_t>(entering[k]) - static_cast<uint32_t>(leaving[k]);
      }
      if (y + 1 < y1) fetch(y + 1);
    }
    __syncthreads();

    // Exclusive prefix of the column sums along the row, per channel: each
    // thread takes kItems consecutive samples (16-byte shared loads/stores).
    uint32_t item[kItems];
#pragma unroll
    for (int q = 0; q < kItems / 4; ++q) {
      const uint4 w = reinterpret_cast<const uint4*>(sums + t * kItems)[q];
      item[4 * q] = w.x; item[4 * q + 1] = w.y; item[4 * q + 2] = w.z; item[4 * q + 3] = w.w;
    }
    V total{};
#pragma unroll
    for (int i = 0; i < kItems; ++i) total.v[i % C] += item[i];
    V run, aggregate;
    Scan(scan_storage).ExclusiveScan(total, run, V{}, VecAdd<Acc, C>{}, aggregate);
    Acc out_prefix[kItems];
#pragma unroll
    for (int i = 0; i < kItems; ++i) {
      out_prefix[i] = run.v[i % C];
      run.v[i % C] += item[i];
    }
    if constexpr (sizeof(Acc) == 4) {
#pragma unroll
      for (int q = 0; q < kItems / 4; ++q)
        reinterpret_cast<uint4*>(prefix + t * kItems)[q] =
            make_uint4(out_prefix[4 * q], out_prefix[4 * q + 1], out_prefix[4 * q + 2], out_prefix[4 * q + 3]);
    } else {
#pragma unroll
      for (int q = 0; q < kItems / 2; ++q)
        reinterpret_cast<ulonglong2*>(prefix + t * kItems)[q] = make_ulonglong2(out_prefix[2 * q], out_prefix[2 * q + 1]);
    }
    if (t == 0)
#pragma unroll
      for (int c = 0; c < C; ++c) {
        prefix[kCapacity + c] = aggregate.v[c];  // the total, when the row fills the capacity
        edges[0][c] = sums[c];
        edges[1][c] = sums[(width - 1) * C + c];
      }
    __syncthreads();

    // Each output: P(x + rx + 1) - P(x - rx), P extended past the row's ends
    // by the edge pixel's column sum. P(width) is the total (the prefix past
    // the row's last pixel, where the column sums are 0).
    T* o = row_ptr(dst, dst_pitch, y);
    const Acc* total_at = prefix + (samples == kCapacity ? kCapacity : samples);
#pragma unroll 4
    for (int s = t; s < samples; s += kBlock) {
      const int x = s / C, c = s - x * C;
      auto p_at = [&](int i) -> Acc {
        if (i <= 0) return static_cast<Acc>(static_cast<long long>(i)) * static_cast<Acc>(edges[0][c]);
        if (i >= width) return total_at[c] + static_cast<Acc>(i - width) * static_cast<Acc>(edges[1][c]);
        return prefix[i * C + c];
      };
      const Acc sum = p_at(x + rx + 1) - p_at(x - rx);
      o[s] = static_cast<T>(divide_round(sum, count, inv_count));
    }
    // No barrier here: the next row's first one keeps its writes to sums[],
    // prefix[], edges[] and the scan storage after every thread's outputs.
  }
}

// ---- Host side.

// Threads per block of the row kernel for a row of `width` pixels.
int block_threads(int width) {
  if (width <= 256 * kPixelsPerThread) return 256;
  if (width <= 512 * kPixelsPerThread) return 512;
  return 1024;
}

template <class Acc>
std::size_t row_shared_bytes(int width, int channels) {
  const int capacity = block_threads(width) * kPixelsPerThread * channels;
  return prefix_bytes<Acc>(capacity + channels) + static_cast<std::size_t>(capacity) * sizeof(uint32_t);
}

bool wide_sums(std::size_t sample_bytes, int rx, int ry) {
  const double max_sample = sample_bytes == 1 ? 255.0 : 65535.0;
  const double count = (2.0 * rx + 1) * (2.0 * ry + 1);
  return max_sample * count + count / 2 >= 4294967296.0;
}

// Rows per band: enough bands for about two blocks' worth of threads on every
// multiprocessor, at least kMinBandRows (each band costs 8 bytes of prefixes
// per column). STREAMBLUR_RUNNING_BAND_ROWS overrides it (benchmark tuning).
int band_rows(int width, int height) {
  static const int forced = [] {
    const char* e = std::getenv("STREAMBLUR_RUNNING_BAND_ROWS");
    return e ? std::max(kMinBandRows, std::atoi(e)) : 0;
  }();
  if (forced > 0) return forced;
  const int per_sm = std::max(1, 2048 / block_threads(width));
  const int target = detail::multiprocessors() * per_sm;
  return std::max(kMinBandRows, (height + target - 1) / target);
}

template <class T, class Acc, int C, int kBlock>
void launch_rows(const T* src, std::ptrdiff_t src_pitch, T* dst, std::ptrdiff_t dst_pitch, int width, int height,
                 int rx, int ry, int rows, int bands, const uint32_t* qa, const uint32_t* qb, const uint32_t* qh,
                 cudaStream_t stream) {
  static std::atomic<unsigned long long> opted{0};
  auto kernel = box_rows<T, Acc, C, kBlock>;
  static_assert(sizeof(typename cub::BlockScan<Vec<Acc, C>, kBlock, cub::BLOCK_SCAN_WARP_SCANS>::TempStorage) <= kStaticShared);
  const std::size_t shared = row_shared_bytes<Acc>(width, C);
  if (shared + kStaticShared > 48 * 1024) detail::opt_in_shared(kernel, opted, kStaticShared);
  const Acc count = static_cast<Acc>(2 * rx + 1) * static_cast<Acc>(2 * ry + 1);
  typename Quotient<Acc>::Inv inv;
  if constexpr (sizeof(Acc) == 4) inv = make_divider(count);
  else inv = 1.0 / static_cast<double>(count);
  kernel<<<bands, kBlock, shared, stream>>>(src, src_pitch, dst, dst_pitch, width, height, rx, ry, rows, qa, qb, qh,
                                            count, inv);
}

template <class T, class Acc, int C>
void launch_rows(const T* src, std::ptrdiff_t src_pitch, T* dst, std::ptrdiff_t dst_pitch, int width, int height,
                 int rx, int ry, int rows, int bands, const uint32_t* qa, const uint32_t* qb, const uint32_t* qh,
                 cudaStream_t stream) {
  const int threads = block_threads(width);
  if (threads == 256)
    return launch_rows<T, Acc, C, 256>(src, src_pitch, dst, dst_pitch, width, height, rx, ry, rows, bands, qa, qb, qh, stream);
  if (threads == 512 || C > 1)  // interleaved pairs are at most 4096 pixels wide
    return launch_rows<T, Acc, C, 512>(src, src_pitch, dst, dst_pitch, width, height, rx, ry, rows, bands, qa, qb, qh, stream);
  if constexpr (C == 1)
    launch_rows<T, Acc, C, 1024>(src, src_pitch, dst, dst_pitch, width, height, rx, ry, rows, bands, qa, qb, qh, stream);
}

}  // namespace

bool fits(int width, int channels, std::size_t sample_bytes, int rx, int ry) {
  if (channels < 1 || channels > kMaxChannels || width < 1 || width * channels > kMaxSamples) return false;
  if (rx < 0 || ry < 0 || rx > 4096 || ry > 4096 || rx + ry == 0) return false;
  const std::size_t shared = wide_sums(sample_bytes, rx, ry) ? row_shared_bytes<unsigned long long>(width, channels)
                                                              : row_shared_bytes<uint32_t>(width, channels);
  return shared + kStaticShared <= detail::shared_limit();
}

std::size_t scratch_bytes(int width, int channels, int height) {
  const std::size_t samples = static_cast<std::size_t>(width) * channels;
  const std::size_t segments = (height + kSegmentRows - 1) / kSegmentRows;
  const std::size_t bands = (height + kMinBandRows - 1) / kMinBandRows;
  return (segments + 2 * bands + 1) * samples * sizeof(uint32_t);
}

template <class T>
void box(const T* src, std::ptrdiff_t src_pitch, T* dst, std::ptrdiff_t dst_pitch, int width, int height,
         int channels, int rx, int ry, void* scratch, cudaStream_t stream) {
  if (!fits(width, channels, sizeof(T), rx, ry))
    throw std::invalid_argument("running box: a " + std::to_string(width) + "x" + std::to_string(channels) +
                                " row does not fit the running-sum kernels");
  const int samples = width * channels;
  const int segments = (height + kSegmentRows - 1) / kSegmentRows;
  const int rows = band_rows(width, height);
  const int bands = (height + rows - 1) / rows;
  uint32_t* seg = static_cast<uint32_t*>(scratch);
  uint32_t* qa = seg + static_cast<std::size_t>(segments) * samples;
  uint32_t* qb = qa + static_cast<std::size_t>(bands) * samples;
  uint32_t* qh = qb + static_cast<std::size_t>(bands) * samples;

  // Four columns per thread where rows allow 4-sample loads.
  const std::size_t vec = 4 * sizeof(T);
  const bool wide_loads = reinterpret_cast<std::uintptr_t>(src) % vec == 0 &&
                          src_pitch % static_cast<std::ptrdiff_t>(vec) == 0 && samples % 4 == 0;
  const int per_thread = wide_loads ? 4 : 1;
  const dim3 grid((samples / per_thread + kColumnThreads - 1) / kColumnThreads, segments);
  if (wide_loads) {
    segment_sums<T, 4><<<grid, kColumnThreads, 0, stream>>>(src, src_pitch, samples, height, seg);
    STREAMBLUR_CHECK_LAUNCH("segment_sums", stream);
    band_prefixes<T, 4><<<grid, kColumnThreads, 0, stream>>>(src, src_pitch, samples, height, rows, bands, ry, seg, qa, qb, qh);
  } else {
    segment_sums<T, 1><<<grid, kColumnThreads, 0, stream>>>(src, src_pitch, samples, height, seg);
    STREAMBLUR_CHECK_LAUNCH("segment_sums", stream);
    band_prefixes<T, 1><<<grid, kColumnThreads, 0, stream>>>(src, src_pitch, samples, height, rows, bands, ry, seg, qa, qb, qh);
  }
  STREAMBLUR_CHECK_LAUNCH("band_prefixes", stream);
  const bool wide = wide_sums(sizeof(T), rx, ry);
  if (channels == 1) {
    if (wide) launch_rows<T, unsigned long long, 1>(src, src_pitch, dst, dst_pitch, width, height, rx, ry, rows, bands, qa, qb, qh, stream);
    else launch_rows<T, uint32_t, 1>(src, src_pitch, dst, dst_pitch, width, height, rx, ry, rows, bands, qa, qb, qh, stream);
  } else {
    if (wide) launch_rows<T, unsigned long long, 2>(src, src_pitch, dst, dst_pitch, width, height, rx, ry, rows, bands, qa, qb, qh, stream);
    else launch_rows<T, uint32_t, 2>(src, src_pitch, dst, dst_pitch, width, height, rx, ry, rows, bands, qa, qb, qh, stream);
  }
  STREAMBLUR_CHECK_LAUNCH("box_rows", stream);
}

template void box<uint8_t>(const uint8_t*, std::ptrdiff_t, uint8_t*, std::ptrdiff_t, int, int, int, int, int, void*,
                           cudaStream_t);
template void box<uint16_t>(const uint16_t*, std::ptrdiff_t, uint16_t*, std::ptrdiff_t, int, int, int, int, int, void*,
                            cudaStream_t);

}  // namespace streamblur::cuda::running
