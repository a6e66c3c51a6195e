// run_filter's CUDA path (cuda_calls.hpp): the chain cache, the events that
// order calls on a chain, the call itself, and the arrays held for calls
// whose work is still queued. CUDA builds only.
#include "cuda_filter.hpp"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstddef>
#include <iterator>

#include "cuda_calls.hpp"
#include "cuda_memory.hpp"
#include "streamblur/kernels/cuda_check.hpp"

namespace streamblur::python {

std::atomic<long long> g_fast_calls{0};  // calls the CuPy fast path ran (run_cupy)

namespace {

// What the cache did, for the tests of "repeated calls allocate nothing":
// chains configured (device weights and scratch allocated) and staging
// buffers allocated, since the module was loaded.
// And calls that ran as one launch of their chain's CUDA graph (FilterChain::set_graphs).
std::atomic<long long> g_chains_configured{0}, g_staging_allocations{0}, g_graph_launches{0};

void copy_rows_cuda(const Image& src, const Image& dst, cudaStream_t stream) {
  if (src.data == dst.data) return;
  // cudaMemcpyDefault: unified addressing tells host, device and managed memory apart.
  CUDA_CHECK(cudaMemcpy2DAsync(dst.data, dst.pitch, src.data, src.pitch, src.row_bytes(), src.height,
                               cudaMemcpyDefault, stream));
}

// Events of completed calls, with their device, for the next calls on that
// device (creating one per call cost a driver call each time).
std::mutex g_spare_events_mutex;
std::vector<std::pair<int, cuda::CudaEvent>>& spare_events() {
  static auto* events = new std::vector<std::pair<int, cuda::CudaEvent>>();  // never destroyed: the driver may be gone at exit
  return *events;
}
cuda::CudaEvent take_event(int device) {
  std::lock_guard<std::mutex> lock(g_spare_events_mutex);
  auto& v = spare_events();
  for (auto it = v.rbegin(); it != v.rend(); ++it)
    if (it->first == device) {
      cuda::CudaEvent e = std::move(it->second);
      v.erase(std::next(it).base());
      return e;
    }
  return cuda::CudaEvent();
}
// A call's event is shared by its chain's cache entry (the next call waits
// for it) and, while the call's arrays are held, its QueuedCall; whichever
// lets go last gives it back for another call to record (recording an
// event again never changes what an earlier wait on it waits for).
void drop_event(int device, std::shared_ptr<cuda::CudaEvent>& e) {
  if (e && e.use_count() == 1) {
    std::lock_guard<std::mutex> lock(g_spare_events_mutex);
    if (spare_events().size() < 64) spare_events().emplace_back(device, std::move(*e));
  }
  e.reset();
}

// Calls that returned with their GPU work still queued keep their arrays
// here until an event after that work has completed. As CV-CUDA's
// ResourceGuard and PyTorch's record_stream, but released from Python's side
// (with the GIL) on the next call or at exit, never from a CUDA callback.
// Guarded by the GIL.
std::vector<std::unique_ptr<QueuedCall>>& queued_calls() {
  static auto* calls = new std::vector<std::unique_ptr<QueuedCall>>();  // never destroyed: cleared at exit
  return *calls;
}

// On each call: a scan once kHeldCalls calls are held, so that a loop of
// calls that each find the previous one done pays one query per kHeldCalls
// calls, holding at most that many calls' arrays past their work.
constexpr std::size_t kHeldCalls = 8;

}  // namespace

std::shared_ptr<CachedChain> ChainCache::get(const std::string& spec, const FrameLayout& layout, int device) {
  const PlaneLayout& p = layout.planes[0];
  const std::array<int, 5> shape{p.width, p.height, p.channels, layout.bytes_per_sample, device};
  std::lock_guard<std::mutex> lock(mutex_);
  for (size_t i = lru_.size(); i-- > 0;)  // the most recent first
    if (lru_[i].first.shape == shape && lru_[i].first.spec == spec) {
      if (i + 1 == lru_.size()) return lru_[i].second;
      auto hit = std::move(lru_[i]);
      lru_.erase(lru_.begin() + static_cast<std::ptrdiff_t>(i));
      lru_.push_back(std::move(hit));
      return lru_.back().second;
    }
  auto entry = std::make_shared<CachedChain>();
  entry->chain = FilterChain(parse_filter_chain(spec));
  entry->chain.configure(layout, Backend::Cuda);  // weights and scratch on the current device
  ++g_chains_configured;
  lru_.emplace_back(Key{spec, shape}, entry);
  if (lru_.size() > kEntries) lru_.erase(lru_.begin());  // freed once no call holds it
  return entry;
}

ChainCache& chain_cache() {
  static ChainCache cache;
  return cache;
}

std::shared_ptr<cuda::CudaEvent> CudaFilterCall::run(bool managed) {
  std::lock_guard<std::mutex> lock(entry_.in_use);
  struct CountGraphs {  // on every return
    const FilterChain& chain;
    long long before;
    ~CountGraphs() { g_graph_launches += chain.graph_stats().launched - before; }
  } count_graphs{entry_.chain, entry_.chain.graph_stats().launched};
  try {
    wait_for_last_use();
    if (dst_.memory == Memory::Device && src_.memory != Memory::Managed) {
      into_device();
      // Device output: no host wait. The work is ordered on `stream`, as the
      // caller's own work on that stream is; the caller keeps the arrays
      // referenced until it has run (hold_until_done).
      return mark_done();
    }
    // Host or managed output: wait, since the host reads the result next.
    through_device();
    mark_done();
    CUDA_CHECK(cudaStreamSynchronize(stream_));
    // Without concurrent managed access the host may not touch managed
    // memory while any kernel runs.
    if (managed) CUDA_CHECK(cudaDeviceSynchronize());
    return nullptr;
  } catch (...) {
    cudaStreamSynchronize(stream_);  // never free buffers under queued work
    throw;
  }
}

void CudaFilterCall::wait_for_last_use() {
  stream_id_ = kNoStream;
  if (cudaStreamGetId(stream_, &stream_id_) != cudaSuccess) {
    cudaGetLastError();  // not a stream it knows: wait below, whose error is the one to report
    stream_id_ = kNoStream;
  }
  if (stream_id_ == kNoStream || stream_id_ != entry_.last_stream)
    CUDA_CHECK(cudaStreamWaitEvent(stream_, entry_.last_use->get(), 0));  // the previous user's work first
}

// After this call's work: one event for the next call and for this call's held arrays.
std::shared_ptr<cuda::CudaEvent> CudaFilterCall::mark_done() {
  auto done = std::make_shared<cuda::CudaEvent>(take_event(device_));
  done->record(stream_);
  drop_event(device_, entry_.last_use);
  entry_.last_use = done;
  entry_.last_stream = stream_id_;
  return done;
}

// Straight from src into dst where the first filter can write a new plane
// (blurs), else a copy and the chain in place.
void CudaFilterCall::into_device() {
  const auto* s0 = static_cast<const unsigned char*>(src_.data);
  const auto* d0 = static_cast<const unsigned char*>(dst_.data);
  const bool apart = s0 + src_.extent() <= d0 || d0 + dst_.extent() <= s0;
  if (!apart || !entry_.chain.apply_from({src_.plane()}, {dst_.plane()}, 1, stream_)) {
    copy_rows_cuda(src_, dst_, stream_);
    entry_.chain.apply({dst_.plane()}, 1, stream_);
  }
}

// Host or managed output: blurred in place (managed) or in a packed device
// buffer (host) and copied back.
void CudaFilterCall::through_device() {
  FilterChain& chain = entry_.chain;
  if (dst_.memory == Memory::Managed) {
    copy_rows_cuda(src_, dst_, stream_);
    chain.apply({dst_.plane()}, 1, stream_);
    return;
  }
  grow_staging(src_.row_bytes() * src_.height);
  Image dev = src_;
  dev.data = entry_.staging.get();
  dev.pitch = static_cast<std::ptrdiff_t>(src_.row_bytes());
  dev.memory = Memory::Device;
  copy_rows_cuda(src_, dev, stream_);
  chain.apply({dev.plane()}, 1, stream_);
  copy_rows_cuda(dev, dst_, stream_);
}

void CudaFilterCall::grow_staging(std::size_t bytes) {
  if (entry_.staging_bytes >= bytes) return;
  // The previous user's work (ordered before ours by the event wait) may
  // still read the old buffer: let it finish first.
  entry_.last_use->synchronize();
  entry_.staging = cuda::DeviceBuffer(bytes);
  entry_.staging_bytes = bytes;
  ++g_staging_allocations;
}

void hold_until_done(std::unique_ptr<QueuedCall> call) { queued_calls().push_back(std::move(call)); }

// Newest first: once a call's event has completed, so has every earlier
// call's on the same stream (streams run in order), so a scan usually costs
// one event query per stream in use, where querying every held call on every
// call would cost a good part of a call's host time.
std::size_t release_queued_calls(bool wait) {
  auto& calls = queued_calls();
  if (wait && !calls.empty()) {
    nb::gil_scoped_release no_gil;
    for (auto& c : calls) cudaEventSynchronize(c->done->get());  // exit path: errors are not reported here
  }
  using StreamOf = std::pair<int, unsigned long long>;  // device, stream id
  std::array<StreamOf, 8> finished{};  // streams whose newest held call has completed
  std::size_t n_finished = 0;
  std::vector<bool> release(calls.size());
  for (std::size_t i = calls.size(); i-- > 0;) {
    QueuedCall& c = *calls[i];
    const StreamOf where{c.device, c.stream};
    const auto end = finished.begin() + static_cast<std::ptrdiff_t>(n_finished);
    if (c.stream != kNoStream && std::find(finished.begin(), end, where) != end) {
      release[i] = true;
      continue;
    }
    const cudaError_t rc = cudaEventQuery(c.done->get());
    if (rc == cudaErrorNotReady) continue;
    release[i] = true;  // done, or failed (nothing left to protect)
    if (rc == cudaSuccess && c.stream != kNoStream && n_finished < finished.size()) finished[n_finished++] = where;
  }
  std::size_t kept = 0;
  for (std::size_t i = 0; i < calls.size(); ++i) {
    if (!release[i]) {
      calls[kept++] = std::move(calls[i]);
      continue;
    }
    if (!wait) drop_event(calls[i]->device, calls[i]->done);  // its event may serve again
  }
  calls.resize(kept);
  return calls.size();
}

void release_some_queued_calls() {
  if (queued_calls().size() >= kHeldCalls) release_queued_calls(false);
}

void run_filter_cuda(const InArray& src_arr, const OutArray& dst_arr, const Image& src, const Image& dst,
                     const FrameLayout& layout, const std::string& spec, uintptr_t stream_handle) {
  const bool managed = src.memory == Memory::Managed || dst.memory == Memory::Managed;
  std::shared_ptr<cuda::CudaEvent> done;
  unsigned long long stream_id = kNoStream;
  const int device = current_device();
  {
    nb::gil_scoped_release no_gil;
    const std::shared_ptr<CachedChain> entry = chain_cache().get(spec, layout, device);
    CudaFilterCall call(entry, src, dst, device, reinterpret_cast<cudaStream_t>(stream_handle));
    done = call.run(managed);
    stream_id = call.stream_id();
  }
  if (!done) return;
  // With the GIL again: the references are Python's.
  auto call = std::make_unique<QueuedCall>();
  call->done = std::move(done);
  call->device = device;  // where the call recorded it
  call->stream = stream_id;
  call->src = src_arr;
  call->dst = dst_arr;
  hold_until_done(std::move(call));
}

nb::dict cuda_cache_stats() {
  nb::dict d;
  d["chains_configured"] = g_chains_configured.load();
  d["staging_allocations"] = g_staging_allocations.load();
  d["graph_launches"] = g_graph_launches.load();
  d["fast_calls"] = g_fast_calls.load();
  return d;
}

}  // namespace streamblur::python
