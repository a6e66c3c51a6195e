#pragma once
// What run_filter's CUDA path (cuda_filter.cpp) and the CuPy fast path
// (cupy_path.cpp) share; CUDA builds only. A call takes a configured chain
// from the ChainCache, runs on it as a CudaFilterCall, and where it returns
// with its work still queued, hands its arrays to hold_until_done().
#include <cuda_runtime_api.h>

#include <nanobind/nanobind.h>

#include <array>
#include <atomic>
#include <cstddef>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "arrays.hpp"
#include "streamblur/kernels/cuda_raii.hpp"
#include "streamblur/pipeline/filter.hpp"

namespace streamblur::python {

// No stream id: cudaStreamGetId did not know the stream, or nothing ran yet.
inline constexpr unsigned long long kNoStream = ~0ULL;

// A configured CUDA chain, kept between calls (ChainCache). Each entry is
// used by one call at a time; its last call's event orders the next call
// after that call's GPU work on the GPU, without a host wait, unless the
// next call is on the same stream, which orders it already. Streams are
// compared by cudaStreamGetId, which is never reused (a new stream may get a
// destroyed one's handle).
struct CachedChain {
  std::mutex in_use;
  FilterChain chain;
  cuda::DeviceBuffer staging;  // host images: the packed device copy they are blurred in (grows, never shrinks)
  std::size_t staging_bytes = 0;
  std::shared_ptr<cuda::CudaEvent> last_use = std::make_shared<cuda::CudaEvent>();
  unsigned long long last_stream = kNoStream;  // where last_use was recorded
  ~CachedChain() {
    try {
      last_use->synchronize();  // never free scratch under queued work
    } catch (...) {
    }
  }
};

// Configured CUDA chains, kept between calls: configuring allocates the
// device weights and scratch (cudaMalloc, and cudaFree on destruction, which
// synchronise), far more than a blur of a modest image costs. The
// kEntries used last, by spec and shape; an entry dropped from it is freed
// once no call holds it.
class ChainCache {
 public:
  // The chain for `spec` on frames of `layout` on `device` (the current
  // device, where a miss configures it). Parses the spec on a miss: throws
  // std::invalid_argument for a bad one.
  std::shared_ptr<CachedChain> get(const std::string& spec, const FrameLayout& layout, int device);

 private:
  static constexpr std::size_t kEntries = 8;
  struct Key {
    std::string spec;
    std::array<int, 5> shape;  // width, height, channels, bytes per sample, device
  };
  std::mutex mutex_;
  std::vector<std::pair<Key, std::shared_ptr<CachedChain>>> lru_;  // most recent last
};
ChainCache& chain_cache();  // the module's one

// One call of a cached chain from src into dst on `stream`, without the GIL.
class CudaFilterCall {
 public:
  // device: the current device (the caller's, read once per call), where
  // entry is configured for src's shape.
  CudaFilterCall(const std::shared_ptr<CachedChain>& entry, const Image& src, const Image& dst, int device,
                 cudaStream_t stream)
      : entry_(*entry), src_(src), dst_(dst), device_(device), stream_(stream) {}

  // Runs it. Returns the event recorded after the work when it returns with
  // the work still queued (device output); nothing when it waited.
  // managed: src or dst is managed memory.
  std::shared_ptr<cuda::CudaEvent> run(bool managed);
  // Where that event was recorded (cudaStreamGetId), or kNoStream.
  unsigned long long stream_id() const { return stream_id_; }

 private:
  void wait_for_last_use();
  std::shared_ptr<cuda::CudaEvent> mark_done();
  void into_device();
  void through_device();
  void grow_staging(std::size_t bytes);

  CachedChain& entry_;
  const Image src_, dst_;
  const int device_;
  const cudaStream_t stream_;
  unsigned long long stream_id_ = kNoStream;
};

// A call that returned with its GPU work still queued, and the arrays it
// keeps until an event after that work has completed (hold_until_done).
struct QueuedCall {
  std::shared_ptr<cuda::CudaEvent> done;  // recorded after the call's work
  int device = 0;                         // where the event was made
  unsigned long long stream = kNoStream;  // and on which stream (cudaStreamGetId)
  InArray src;
  OutArray dst;
  nb::object src_obj, dst_obj;  // the fast path's arrays (it holds the Python objects)
};

// Keeps the call's arrays until its work has completed, so that a caller who
// drops them at once (their framework may hand the memory to new arrays on
// another stream) cannot have the kernels read or write freed memory. GIL held.
void hold_until_done(std::unique_ptr<QueuedCall> call);

// Calls the CuPy fast path ran (cuda_cache_stats' fast_calls).
extern std::atomic<long long> g_fast_calls;

}  // namespace streamblur::python
