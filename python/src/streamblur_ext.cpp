// streamblur._streamblur: the nanobind layer under the Python package.
//
// The package (streamblur/__init__.py) does the Python-side work (choosing and
// allocating the output in the input's framework, parsing stream objects,
// making numpy inputs pixel-contiguous); this layer checks every array again,
// works out where its memory lives (host, CUDA device, CUDA managed) and runs
// one FilterChain from the pipeline's filter registry over it, with the GIL
// released. Video: process_video / process_videos run run_pipeline / run_batch
// on a thread of their own, without the GIL, while the calling thread waits
// with Ctrl-C working (run_stoppable); FrameStream runs one pipeline with a
// frame sink on a thread of its own and hands each frame to Python as arrays
// that own a copy of it. Errors: std::invalid_argument -> ValueError
// (nanobind's default), CudaError and other std::runtime_error ->
// RuntimeError, bad dtype -> TypeError. The package checks the arguments'
// types and ranges first, so nanobind's own argument errors never reach users.
#include <cuda_runtime_api.h>

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <oneapi/tbb/task_arena.h>

extern "C" {
#include <libavutil/frame.h>
#include <libavutil/log.h>
#include <libavutil/pixdesc.h>
}

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "streamblur/kernels/cuda_check.hpp"
#include "streamblur/io/av_error.hpp"
#include "streamblur/io/convert.hpp"
#include "streamblur/io/log.hpp"
#include "streamblur/kernels/cuda_raii.hpp"
#include "streamblur/kernels/params.hpp"
#include "streamblur/kernels/reference.hpp"
#include "streamblur/pipeline/batch.hpp"
#include "streamblur/pipeline/filter.hpp"
#include "streamblur/pipeline/frame_layout.hpp"
#include "streamblur/io/output_file.hpp"
#include "streamblur/pipeline/pipeline.hpp"
#include "streamblur/pipeline/stats_json.hpp"

namespace nb = nanobind;
using namespace nb::literals;

namespace streamblur::python {
namespace {

using InArray = nb::ndarray<nb::ro>;  // read-only arrays are fine as inputs
using OutArray = nb::ndarray<>;

enum class Memory { Host, Device, Managed };

const char* memory_name(Memory m) {
  switch (m) {
    case Memory::Host: return "host";
    case Memory::Device: return "cuda";
    case Memory::Managed: return "managed";
  }
  return "";
}

bool have_cuda() { return cuda::device_count() > 0; }

int current_device() {
  int d = 0;
  CUDA_CHECK(cudaGetDevice(&d));
  return d;
}

std::string dtype_name(nb::dlpack::dtype t) {
  std::string base;
  switch (static_cast<nb::dlpack::dtype_code>(t.code)) {
    case nb::dlpack::dtype_code::Int: base = "int"; break;
    case nb::dlpack::dtype_code::UInt: base = "uint"; break;
    case nb::dlpack::dtype_code::Float: base = "float"; break;
    case nb::dlpack::dtype_code::Bfloat: base = "bfloat"; break;
    case nb::dlpack::dtype_code::Complex: base = "complex"; break;
    case nb::dlpack::dtype_code::Bool: return "bool";
    default: base = "dtype-code-" + std::to_string(t.code) + "-"; break;
  }
  return base + std::to_string(t.bits);
}

std::string shape_text(const nb::ndarray<nb::ro>& a) {
  std::ostringstream s;
  s << "(";
  for (size_t i = 0; i < a.ndim(); ++i) s << (i ? ", " : "") << a.shape(i);
  if (a.ndim() == 1) s << ",";
  s << ")";
  return s.str();
}

// One image as the kernels see it: a single pitch-linear plane.
struct Image {
  void* data = nullptr;
  int width = 0, height = 0, channels = 1, bytes = 1;
  std::ptrdiff_t pitch = 0;
  Memory memory = Memory::Host;
  int device = -1;

  size_t row_bytes() const { return static_cast<size_t>(width) * channels * bytes; }
  // Bytes from the first sample to one past the last.
  size_t extent() const { return static_cast<size_t>(height - 1) * pitch + row_bytes(); }
  bool on_device() const { return memory != Memory::Host; }
  AnyPlane plane() const { return AnyPlane{data, width, height, pitch, channels, bytes}; }
  template <class T> Plane<T> typed() const { return Plane<T>(static_cast<T*>(data), width, height, pitch, channels); }
};

// Checks dtype, shape and layout and finds where the memory lives. `what` names
// the argument in messages ("image", "out=").
Image describe(const InArray& a, const char* what) {
  const nb::dlpack::dtype t = a.dtype();
  const bool u8 = t == nb::dtype<uint8_t>(), u16 = t == nb::dtype<uint16_t>();
  if (!u8 && !u16)
    throw nb::type_error((std::string(what) + " has dtype " + dtype_name(t) +
                          "; streamblur takes uint8 or uint16 images").c_str());
  const size_t nd = a.ndim();
  if (nd != 2 && nd != 3)
    throw std::invalid_argument(std::string(what) + " has shape " + shape_text(a) +
                                "; expected HxW (grayscale) or HxWxC (C = 1..4 interleaved channels)");
  Image im;
  im.bytes = u8 ? 1 : 2;
  im.height = static_cast<int>(a.shape(0));
  im.width = static_cast<int>(a.shape(1));
  im.channels = nd == 3 ? static_cast<int>(a.shape(2)) : 1;
  if (a.shape(0) > INT32_MAX || a.shape(1) > INT32_MAX)
    throw std::invalid_argument(std::string(what) + " of shape " + shape_text(a) + " is too large");
  if (im.channels < 1 || im.channels > 4)
    throw std::invalid_argument(std::string(what) + " has shape " + shape_text(a) + "; C must be 1..4 channels");
  if (im.width == 0 || im.height == 0)
    throw std::invalid_argument(std::string(what) + " of shape " + shape_text(a) + " is empty");
  // Pixels of a row must be packed; rows may be anywhere after each other.
  const bool packed = (im.width == 1 || a.stride(1) == im.channels) && (nd == 2 || im.channels == 1 || a.stride(2) == 1);
  const int64_t row_stride = im.height == 1 ? static_cast<int64_t>(im.width) * im.channels : a.stride(0);
  if (!packed || row_stride < static_cast<int64_t>(im.width) * im.channels)
    throw std::invalid_argument(std::string(what) +
                                " must have C-contiguous pixels within each row and rows in increasing memory order "
                                "(rows may be padded or strided); make a contiguous copy first");
  im.pitch = static_cast<std::ptrdiff_t>(row_stride) * im.bytes;
  im.data = const_cast<void*>(a.data());

  switch (a.device_type()) {
    case nb::device::cpu::value:
    case nb::device::cuda_host::value:
      im.memory = Memory::Host;
      // numpy arrays from managed_empty() (or any managed allocation) report "cpu".
      if (have_cuda()) {
        cudaPointerAttributes attr{};
        if (cudaPointerGetAttributes(&attr, im.data) == cudaSuccess && attr.type == cudaMemoryTypeManaged) {
          im.memory = Memory::Managed;
          im.device = attr.device;
        } else {
          cudaGetLastError();  // clear a sticky "invalid value" from old runtimes
        }
      }
      break;
    case nb::device::cuda::value:
      im.memory = Memory::Device;
      im.device = a.device_id();
      break;
    case nb::device::cuda_managed::value:
      im.memory = Memory::Managed;
      im.device = a.device_id();
      break;
    default:
      throw std::invalid_argument(std::string(what) + " lives on DLPack device type " +
                                  std::to_string(a.device_type()) + "; streamblur takes host (numpy) or CUDA arrays");
  }
  if (im.memory == Memory::Device) {
    if (!have_cuda())
      throw std::runtime_error(std::string(what) + " is a CUDA array but no CUDA device is usable here");
    const int cur = current_device();
    if (im.device != cur)
      throw std::invalid_argument(std::string(what == std::string("image") ? "array" : "out= array") +
                                  " is on CUDA device " + std::to_string(im.device) +
                                  " but streamblur runs on device " + std::to_string(cur) +
                                  " (the current device); make device " + std::to_string(im.device) +
                                  " current first (cupy.cuda.Device(n).use(), torch.cuda.set_device(n))");
  }
  return im;
}

FrameLayout one_plane_layout(const Image& im) {
  FrameLayout l;
  l.format = im.bytes == 1 ? AV_PIX_FMT_GRAY8 : AV_PIX_FMT_GRAY16LE;  // only used in messages
  l.width = im.width;
  l.height = im.height;
  l.bytes_per_sample = im.bytes;
  l.num_planes = 1;
  PlaneLayout& p = l.planes[0];
  p.width = im.width;
  p.height = im.height;
  p.channels = im.channels;
  p.components = kCompY | kCompU | kCompV | kCompA | kCompRGB;  // every filter touches it, whatever planes= says
  p.bytes_per_sample = im.bytes;
  return l;
}

void check_same_shape(const Image& src, const Image& dst) {
  if (src.width != dst.width || src.height != dst.height || src.channels != dst.channels || src.bytes != dst.bytes)
    throw std::invalid_argument("out= must have the shape and dtype of the image");
  const auto* s = static_cast<const unsigned char*>(src.data);
  const auto* d = static_cast<const unsigned char*>(dst.data);
  const bool same = s == d && src.pitch == dst.pitch;
  if (!same && s < d + dst.extent() && d < s + src.extent())
    throw std::invalid_argument("out= overlaps the image without being the same array; pass out=image to blur in place, "
                                "or a separate array");
}

void copy_rows_host(const Image& src, const Image& dst) {
  if (src.data == dst.data) return;
  for (int y = 0; y < src.height; ++y)
    std::memcpy(static_cast<unsigned char*>(dst.data) + y * dst.pitch,
                static_cast<const unsigned char*>(src.data) + y * src.pitch, src.row_bytes());
}

void copy_rows_cuda(const Image& src, const Image& dst, cudaStream_t stream) {
  if (src.data == dst.data) return;
  // cudaMemcpyDefault: unified addressing tells host, device and managed memory apart.
  CUDA_CHECK(cudaMemcpy2DAsync(dst.data, dst.pitch, src.data, src.pitch, src.row_bytes(), src.height,
                               cudaMemcpyDefault, stream));
}

Backend pick_backend(const std::string& backend, const Image& src, const Image& dst) {
  const bool device_memory = src.memory == Memory::Device || dst.memory == Memory::Device;
  if (backend == "cpu") {
    if (device_memory)
      throw std::invalid_argument("backend='cpu' cannot read or write CUDA device memory; use backend='auto' or 'cuda'");
    return Backend::Cpu;
  }
  if (backend == "cuda") {
    if (!have_cuda()) throw std::runtime_error("backend='cuda' was asked for but no CUDA device is usable here");
    return Backend::Cuda;
  }
  if (backend == "auto") return have_cuda() ? Backend::Cuda : Backend::Cpu;
  throw std::invalid_argument("backend must be 'auto', 'cpu' or 'cuda', got '" + backend + "'");
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

// Configured CUDA chains, kept between calls: configuring allocates the
// device weights and scratch (cudaMalloc, and cudaFree on destruction, which
// synchronise), far more than a blur of a modest image costs. Each entry is
// used by one call at a time; its last call's event orders the next call
// after that call's GPU work on the GPU, without a host wait, unless the
// next call is on the same stream, which orders it already. Streams are
// compared by cudaStreamGetId, which is never reused (a new stream may get a
// destroyed one's handle).
constexpr unsigned long long kNoStream = ~0ULL;
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

// What the cache did, for the tests of "repeated calls allocate nothing":
// chains configured (device weights and scratch allocated) and staging
// buffers allocated, since the module was loaded.
// And calls that ran as one launch of their chain's CUDA graph (FilterChain::set_graphs).
// And calls the CuPy fast path ran (run_cupy).
std::atomic<long long> g_chains_configured{0}, g_staging_allocations{0}, g_graph_launches{0}, g_fast_calls{0};

// device: the current device, where the chain is configured.
std::shared_ptr<CachedChain> cuda_chain_for(const std::string& spec, const FrameLayout& layout, int device) {
  struct Key {
    std::string spec;
    std::array<int, 5> shape;  // width, height, channels, bytes per sample, device
  };
  static std::mutex mutex;
  static std::vector<std::pair<Key, std::shared_ptr<CachedChain>>> lru;  // most recent last
  constexpr size_t kEntries = 8;
  const PlaneLayout& p = layout.planes[0];
  const std::array<int, 5> shape{p.width, p.height, p.channels, layout.bytes_per_sample, device};
  std::lock_guard<std::mutex> lock(mutex);
  for (size_t i = lru.size(); i-- > 0;)  // the most recent first
    if (lru[i].first.shape == shape && lru[i].first.spec == spec) {
      if (i + 1 == lru.size()) return lru[i].second;
      auto hit = std::move(lru[i]);
      lru.erase(lru.begin() + static_cast<std::ptrdiff_t>(i));
      lru.push_back(std::move(hit));
      return lru.back().second;
    }
  auto entry = std::make_shared<CachedChain>();
  entry->chain = FilterChain(parse_filter_chain(spec));
  entry->chain.configure(layout, Backend::Cuda);  // weights and scratch on the current device
  ++g_chains_configured;
  lru.emplace_back(Key{spec, shape}, entry);
  if (lru.size() > kEntries) lru.erase(lru.begin());  // freed once no call holds it
  return entry;
}

// Calls that returned with their GPU work still queued keep their arrays
// here until an event after that work has completed, so a caller who drops
// the arrays at once (their framework may hand the memory to new arrays on
// another stream) cannot have the kernels read or write freed memory. As
// CV-CUDA's ResourceGuard and PyTorch's record_stream, but released from
// Python's side (with the GIL) on the next call or at exit, never from a CUDA
// callback. Guarded by the GIL.
struct QueuedCall {
  std::shared_ptr<cuda::CudaEvent> done;  // recorded after the call's work
  int device = 0;                         // where the event was made
  unsigned long long stream = kNoStream;  // and on which stream (cudaStreamGetId)
  InArray src;
  OutArray dst;
  nb::object src_obj, dst_obj;  // the fast path's arrays (it holds the Python objects)
};
std::vector<std::unique_ptr<QueuedCall>>& queued_calls() {
  static auto* calls = new std::vector<std::unique_ptr<QueuedCall>>();  // never destroyed: cleared at exit
  return *calls;
}

// Drops the arrays of every queued call whose work has completed; with
// wait=true waits for all first (module exit). Returns how many are still held.
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

// On each call: a scan once kHeldCalls calls are held, so that a loop of
// calls that each find the previous one done pays one query per kHeldCalls
// calls, holding at most that many calls' arrays past their work.
constexpr std::size_t kHeldCalls = 8;
void release_some_queued_calls() {
  if (queued_calls().size() >= kHeldCalls) release_queued_calls(false);
}

// The CUDA path of run_filter, without the GIL. Returns the event recorded
// after the work when it returns with the work still queued (device output);
// nothing when it waited.
// device: the current device (the caller's, read once per call).
// stream_id: where the event was recorded (cudaStreamGetId), or kNoStream.
// entry: the chain from cuda_chain_for (configured for src's shape on `device`).
std::shared_ptr<cuda::CudaEvent> run_filter_cuda(const std::shared_ptr<CachedChain>& entry, const Image& src,
                                                 const Image& dst, bool managed, int device, cudaStream_t stream,
                                                 unsigned long long& stream_id) {
  std::lock_guard<std::mutex> lock(entry->in_use);
  FilterChain& chain = entry->chain;
  struct CountGraphs {  // on every return
    const FilterChain& chain;
    long long before;
    ~CountGraphs() { g_graph_launches += chain.graph_stats().launched - before; }
  } count_graphs{chain, chain.graph_stats().launched};
  try {
    stream_id = kNoStream;
    if (cudaStreamGetId(stream, &stream_id) != cudaSuccess) {
      cudaGetLastError();  // not a stream it knows: wait below, whose error is the one to report
      stream_id = kNoStream;
    }
    if (stream_id == kNoStream || stream_id != entry->last_stream)
      CUDA_CHECK(cudaStreamWaitEvent(stream, entry->last_use->get(), 0));  // the previous user's work first
    // After this call's work: one event for the next call and for this call's held arrays.
    auto mark_done = [&] {
      auto done = std::make_shared<cuda::CudaEvent>(take_event(device));
      done->record(stream);
      drop_event(device, entry->last_use);
      entry->last_use = done;
      entry->last_stream = stream_id;
      return done;
    };
    if (dst.memory == Memory::Device && src.memory != Memory::Managed) {
      // Straight from src into dst where the first filter can write a new
      // plane (blurs), else a copy and the chain in place.
      const auto* s0 = static_cast<const unsigned char*>(src.data);
      const auto* d0 = static_cast<const unsigned char*>(dst.data);
      const bool apart = s0 + src.extent() <= d0 || d0 + dst.extent() <= s0;
      if (!apart || !chain.apply_from({src.plane()}, {dst.plane()}, 1, stream)) {
        copy_rows_cuda(src, dst, stream);
        chain.apply({dst.plane()}, 1, stream);
      }
      // Device output: no host wait. The work is ordered on `stream`, as the
      // caller's own work on that stream is; the caller keeps the arrays
      // referenced until it has run (queued_calls).
      return mark_done();
    }
    // Host or managed output: blur in a packed device buffer (host) or in
    // place (managed), and wait, since the host reads the result next.
    if (dst.memory == Memory::Managed) {
      copy_rows_cuda(src, dst, stream);
      chain.apply({dst.plane()}, 1, stream);
    } else {
      const std::size_t bytes = src.row_bytes() * src.height;
      if (entry->staging_bytes < bytes) {
        // The previous user's work (ordered before ours by the event wait
        // above) may still read the old buffer: let it finish first.
        entry->last_use->synchronize();
        entry->staging = cuda::DeviceBuffer(bytes);
        entry->staging_bytes = bytes;
        ++g_staging_allocations;
      }
      Image dev = src;
      dev.data = entry->staging.get();
      dev.pitch = static_cast<std::ptrdiff_t>(src.row_bytes());
      dev.memory = Memory::Device;
      copy_rows_cuda(src, dev, stream);
      chain.apply({dev.plane()}, 1, stream);
      copy_rows_cuda(dev, dst, stream);
    }
    mark_done();
    CUDA_CHECK(cudaStreamSynchronize(stream));
    // Without concurrent managed access the host may not touch managed
    // memory while any kernel runs.
    if (managed) CUDA_CHECK(cudaDeviceSynchronize());
    return nullptr;
  } catch (...) {
    cudaStreamSynchronize(stream);  // never free buffers under queued work
    throw;
  }
}

// Runs `spec` from src into dst (dst may be src: in place).
void run_filter(InArray src_arr, OutArray dst_arr, const std::string& spec, const std::string& backend_name,
                uintptr_t stream_handle) {
  release_some_queued_calls();
  const Image src = describe(src_arr, "image");
  const Image dst = describe(InArray(dst_arr), "out=");
  check_same_shape(src, dst);
  const Backend backend = pick_backend(backend_name, src, dst);
  const FrameLayout layout = one_plane_layout(src);
  const bool managed = src.memory == Memory::Managed || dst.memory == Memory::Managed;

  if (backend == Backend::Cpu) {
    FilterChain chain(parse_filter_chain(spec));
    nb::gil_scoped_release no_gil;
    if (managed) CUDA_CHECK(cudaDeviceSynchronize());  // no GPU work may be writing it
    chain.configure(layout, Backend::Cpu);
    copy_rows_host(src, dst);
    chain.apply({dst.plane()}, 1, nullptr);
    return;
  }

  std::shared_ptr<cuda::CudaEvent> done;
  unsigned long long stream_id = kNoStream;
  const int device = current_device();
  {
    nb::gil_scoped_release no_gil;
    const std::shared_ptr<CachedChain> entry = cuda_chain_for(spec, layout, device);
    done = run_filter_cuda(entry, src, dst, managed, device, reinterpret_cast<cudaStream_t>(stream_handle), stream_id);
  }
  if (done) {  // with the GIL again: the references are Python's
    auto call = std::make_unique<QueuedCall>();
    call->done = std::move(done);
    call->device = device;  // where run_filter_cuda recorded it
    call->stream = stream_id;
    call->src = src_arr;
    call->dst = dst_arr;
    queued_calls().push_back(std::move(call));
  }
}

// ---- the fast path for CuPy arrays
//
// A call on two CuPy arrays on the current device, on CuPy's current stream
// or a given one, with a spec the package built (gaussian_blur, box_blur,
// Chain: the same str object on every call with the same arguments) reads each
// array's pointer, shape, strides, dtype and device from its attributes
// (no DLPack capsule) and takes the configured chain and the checks' inputs
// from a small cache keyed on the spec object and the shapes: no spec
// parsing, no layout, no chain lookup, no pointer query for arrays whose
// memory kind it has seen. Anything it does not know (another type, a
// subclass, a dtype object other than numpy's own, managed memory, another
// device, a layout the checks refuse) returns False, and the package takes
// the general path, which reports the errors.
struct CupyTypes {
  nb::object ndarray;             // cupy.ndarray (exact type; subclasses take the general path)
  nb::object get_current_stream;  // cupy.cuda.get_current_stream
  nb::object u8, u16;             // numpy's dtype objects (cupy arrays return them)
  nb::object attr_data, attr_ptr, attr_device_id, attr_shape, attr_strides, attr_dtype;
};
CupyTypes* g_cupy = nullptr;  // set once by register_cupy; guarded by the GIL

void register_cupy(nb::handle ndarray, nb::handle get_current_stream, nb::handle u8, nb::handle u16) {
  if (g_cupy) return;
  auto* t = new CupyTypes();  // never freed: cached for the module's life
  t->ndarray = nb::borrow(ndarray);
  t->get_current_stream = nb::borrow(get_current_stream);
  t->u8 = nb::borrow(u8);
  t->u16 = nb::borrow(u16);
  t->attr_data = nb::str("data");
  t->attr_ptr = nb::str("ptr");
  t->attr_device_id = nb::str("device_id");
  t->attr_shape = nb::str("shape");
  t->attr_strides = nb::str("strides");
  t->attr_dtype = nb::str("dtype");
  g_cupy = t;
}

// An attribute, or null (the error cleared): the fast path then declines.
nb::object attr_or_null(nb::handle o, nb::handle name) {
  PyObject* r = PyObject_GetAttr(o.ptr(), name.ptr());
  if (!r) PyErr_Clear();
  return nb::steal(r);
}

bool small_int(PyObject* o, int64_t& v) {
  if (!o || !PyLong_CheckExact(o)) return false;
  int overflow = 0;
  v = PyLong_AsLongLongAndOverflow(o, &overflow);
  return overflow == 0 && !(v == -1 && PyErr_Occurred());
}

struct CupyArray {
  uintptr_t ptr = 0;
  int device = -1;
  int nd = 0;
  int64_t shape[3]{}, strides[3]{};  // strides in bytes, as CuPy gives them
  int bytes = 0;
};

// Reads what the fast path needs; false where it cannot (the general path decides).
bool read_cupy(nb::handle o, CupyArray& a) {
  const CupyTypes& t = *g_cupy;
  if (Py_TYPE(o.ptr()) != reinterpret_cast<PyTypeObject*>(t.ndarray.ptr())) return false;
  const nb::object dtype = attr_or_null(o, t.attr_dtype);
  if (dtype.is(t.u8)) a.bytes = 1;
  else if (dtype.is(t.u16)) a.bytes = 2;
  else return false;
  const nb::object shape = attr_or_null(o, t.attr_shape), strides = attr_or_null(o, t.attr_strides);
  if (!shape || !strides || !PyTuple_CheckExact(shape.ptr()) || !PyTuple_CheckExact(strides.ptr())) return false;
  a.nd = static_cast<int>(PyTuple_GET_SIZE(shape.ptr()));
  if ((a.nd != 2 && a.nd != 3) || PyTuple_GET_SIZE(strides.ptr()) != a.nd) return false;
  for (int i = 0; i < a.nd; ++i)
    if (!small_int(PyTuple_GET_ITEM(shape.ptr(), i), a.shape[i]) || !small_int(PyTuple_GET_ITEM(strides.ptr(), i), a.strides[i]))
      return false;
  const nb::object data = attr_or_null(o, t.attr_data);
  if (!data) return false;
  const nb::object ptr = attr_or_null(data, t.attr_ptr), device = attr_or_null(data, t.attr_device_id);
  int64_t p = 0, d = 0;
  if (!small_int(ptr.ptr(), p) || !small_int(device.ptr(), d) || p == 0) return false;
  a.ptr = static_cast<uintptr_t>(p);
  a.device = static_cast<int>(d);
  return true;
}

// The Image of a CuPy array the checks of describe() accept, or false.
bool cupy_image(const CupyArray& a, Image& im) {
  const int64_t h = a.shape[0], w = a.shape[1], c = a.nd == 3 ? a.shape[2] : 1;
  if (h <= 0 || w <= 0 || c < 1 || c > 4 || h > INT32_MAX || w > INT32_MAX) return false;
  const int64_t pixel = c * a.bytes;
  const bool packed = (w == 1 || a.strides[1] == pixel) && (a.nd == 2 || c == 1 || a.strides[2] == a.bytes);
  const int64_t row = h == 1 ? w * pixel : a.strides[0];
  if (!packed || row < w * pixel || row % a.bytes != 0) return false;
  im.data = reinterpret_cast<void*>(a.ptr);
  im.width = static_cast<int>(w);
  im.height = static_cast<int>(h);
  im.channels = static_cast<int>(c);
  im.bytes = a.bytes;
  im.pitch = static_cast<std::ptrdiff_t>(row);
  im.memory = Memory::Device;
  im.device = a.device;
  return true;
}

// Memory kinds of the last pointers seen (a CuPy pointer may be managed
// memory: those calls take the general path, which waits for the host).
bool plain_device_memory(uintptr_t ptr) {
  static std::array<uintptr_t, 8> known{};  // device (not managed) pointers, most recent first
  for (uintptr_t k : known)
    if (k == ptr) return true;
  cudaPointerAttributes attr{};
  if (cudaPointerGetAttributes(&attr, reinterpret_cast<void*>(ptr)) != cudaSuccess) {
    cudaGetLastError();
    return false;
  }
  if (attr.type != cudaMemoryTypeDevice) return false;
  std::move_backward(known.begin(), known.end() - 1, known.end());
  known[0] = ptr;
  return true;
}

// The chains the fast path used last, by spec object (held) and shape.
struct FastKey {
  nb::object spec;  // the package's spec string object: compared by identity
  std::array<int, 5> shape{};  // width, height, channels, bytes, device
};
std::vector<std::pair<FastKey, std::shared_ptr<CachedChain>>>& fast_chains() {
  static auto* v = new std::vector<std::pair<FastKey, std::shared_ptr<CachedChain>>>();  // guarded by the GIL
  return *v;
}

// True when it ran `spec` from src into dst; false when the call is not one
// it takes (nothing done: the caller runs the general path).
// stream: None for CuPy's current stream, an int handle, or an object with
// an int .ptr (a CuPy Stream); anything else declines.
bool run_cupy(nb::handle src_obj, nb::handle dst_obj, nb::handle spec, nb::handle stream) {
  if (!g_cupy || !PyUnicode_CheckExact(spec.ptr())) return false;
  CupyArray a, b;
  Image src, dst;
  if (!read_cupy(src_obj, a) || !read_cupy(dst_obj, b) || !cupy_image(a, src) || !cupy_image(b, dst)) return false;
  if (src.width != dst.width || src.height != dst.height || src.channels != dst.channels || src.bytes != dst.bytes ||
      a.nd != b.nd)
    return false;
  const auto* s0 = static_cast<const unsigned char*>(src.data);
  const auto* d0 = static_cast<const unsigned char*>(dst.data);
  if (!(s0 == d0 && src.pitch == dst.pitch) && s0 < d0 + dst.extent() && d0 < s0 + src.extent()) return false;
  const int device = current_device();
  if (src.device != device || dst.device != device) return false;
  if (!plain_device_memory(a.ptr) || !plain_device_memory(b.ptr)) return false;
  int64_t stream_handle = 0;
  if (stream.is_none()) {
    if (!small_int(attr_or_null(g_cupy->get_current_stream(), g_cupy->attr_ptr).ptr(), stream_handle)) return false;
  } else if (!small_int(PyLong_CheckExact(stream.ptr()) ? stream.ptr() : attr_or_null(stream, g_cupy->attr_ptr).ptr(),
                        stream_handle) ||
             stream_handle < 0) {
    return false;
  }

  const std::array<int, 5> shape{src.width, src.height, src.channels, src.bytes, device};
  auto& chains = fast_chains();
  std::shared_ptr<CachedChain> entry;
  for (auto& [key, chain] : chains)
    if (key.spec.is(spec) && key.shape == shape) {
      entry = chain;
      break;
    }
  if (!entry) {
    const std::string text = nb::cast<std::string>(spec);
    const FrameLayout layout = one_plane_layout(src);
    {
      nb::gil_scoped_release no_gil;
      entry = cuda_chain_for(text, layout, device);  // parses and configures on a miss; throws for a bad spec
    }
    constexpr std::size_t kFastChains = 8;
    if (chains.size() >= kFastChains) chains.erase(chains.begin());
    chains.emplace_back(FastKey{nb::borrow(spec), shape}, entry);
  }

  release_some_queued_calls();
  std::shared_ptr<cuda::CudaEvent> done;
  unsigned long long stream_id = kNoStream;
  {
    nb::gil_scoped_release no_gil;
    done = run_filter_cuda(entry, src, dst, false, device,
                           reinterpret_cast<cudaStream_t>(static_cast<uintptr_t>(stream_handle)), stream_id);
  }
  ++g_fast_calls;
  if (!done) return true;  // (device output always returns its event)
  auto call = std::make_unique<QueuedCall>();
  call->done = std::move(done);
  call->device = device;
  call->stream = stream_id;
  call->src_obj = nb::borrow(src_obj);
  call->dst_obj = nb::borrow(dst_obj);
  queued_calls().push_back(std::move(call));
  return true;
}

std::string check_chain(const std::string& spec) {
  FilterChain chain(parse_filter_chain(spec));
  if (chain.empty()) throw std::invalid_argument("the filter chain '" + spec + "' is empty");
  return chain.describe();
}

// ---- references (host only)

template <class F>
void with_host_pair(InArray src_arr, OutArray dst_arr, F&& f) {
  const Image src = describe(src_arr, "image");
  const Image dst = describe(InArray(dst_arr), "out=");
  check_same_shape(src, dst);
  if (src.memory == Memory::Device || dst.memory == Memory::Device)
    throw std::invalid_argument("the reference implementations take host arrays only");
  if (src.data == dst.data) throw std::invalid_argument("the reference implementations do not run in place");
  if (src.memory == Memory::Managed || dst.memory == Memory::Managed) CUDA_CHECK(cudaDeviceSynchronize());
  nb::gil_scoped_release no_gil;
  if (src.bytes == 1) f(src.typed<const uint8_t>(), dst.typed<uint8_t>());
  else f(src.typed<const uint16_t>(), dst.typed<uint16_t>());
}

void reference_gaussian(InArray src, OutArray dst, double sigma, int radius) {
  gaussian_radius(sigma, radius);  // range checks before releasing the GIL
  with_host_pair(src, dst, [&](auto s, auto d) { reference::gaussian_blur(s, d, sigma, radius); });
}

void reference_box(InArray src, OutArray dst, int radius) {
  check_box_radius(radius);
  with_host_pair(src, dst, [&](auto s, auto d) { reference::box_blur(s, d, radius); });
}

// ---- memory

constexpr size_t kMaxManagedBytes = size_t(1) << 30;

// A 1-D uint8 numpy array of `bytes` bytes in CUDA managed memory; freed with
// cudaFree when the last numpy view of it goes away.
nb::ndarray<nb::numpy, uint8_t> managed_bytes(size_t bytes) {
  if (bytes == 0 || bytes > kMaxManagedBytes)
    throw std::invalid_argument("managed_empty: " + std::to_string(bytes) +
                                " bytes asked for; managed arrays must hold 1 byte to 1 GiB");
  if (!have_cuda()) throw std::runtime_error("managed_empty: no CUDA device is usable here");
  void* p = nullptr;
  CUDA_CHECK(cudaMallocManaged(&p, bytes, cudaMemAttachGlobal));
  nb::capsule owner(p, [](void* q) noexcept { cudaFree(q); });
  // The host may touch managed memory only while no kernel runs (without concurrent access).
  CUDA_CHECK(cudaDeviceSynchronize());
  const size_t shape[1] = {bytes};
  return nb::ndarray<nb::numpy, uint8_t>(p, 1, shape, owner);
}

// A packed HxW[xC] uint8/uint16 array in device memory of the current device,
// for CUDA inputs of frameworks other than CuPy and PyTorch (consumers take it
// through DLPack).
nb::ndarray<nb::array_api, nb::device::cuda> cuda_empty(std::vector<size_t> shape, int bytes) {
  if (!have_cuda()) throw std::runtime_error("no CUDA device is usable here");
  if (shape.size() < 2 || shape.size() > 3 || (bytes != 1 && bytes != 2))
    throw std::invalid_argument("cuda_empty: bad shape or sample size");
  size_t n = bytes;
  for (size_t s : shape) n *= s;
  void* p = nullptr;
  CUDA_CHECK(cudaMalloc(&p, n ? n : 1));
  nb::capsule owner(p, [](void* q) noexcept { cudaFree(q); });
  return nb::ndarray<nb::array_api, nb::device::cuda>(p, shape.size(), shape.data(), owner, nullptr,
                                                      bytes == 1 ? nb::dtype<uint8_t>() : nb::dtype<uint16_t>(),
                                                      nb::device::cuda::value, current_device());
}

bool is_managed_pointer(uintptr_t p) {
  if (!have_cuda() || p == 0) return false;
  cudaPointerAttributes attr{};
  if (cudaPointerGetAttributes(&attr, reinterpret_cast<const void*>(p)) != cudaSuccess) {
    cudaGetLastError();
    return false;
  }
  return attr.type == cudaMemoryTypeManaged;
}

std::string memory_kind(InArray a) { return memory_name(describe(a, "image").memory); }

// ---- process_video, process_videos

BackendChoice parse_backend_choice(const std::string& backend) {
  if (backend == "auto") return BackendChoice::Auto;
  if (backend == "cpu") return BackendChoice::Cpu;
  if (backend == "cuda") return BackendChoice::Cuda;
  throw std::invalid_argument("backend must be 'auto', 'cpu' or 'cuda', got '" + backend + "'");
}

// The run's statistics with the keys streamblur writes everywhere (stats_json.hpp).
nb::dict run_stats_dict(const RunStats& s) {
  return nb::cast<nb::dict>(nb::module_::import_("json").attr("loads")(run_stats_json(s)));
}

// Options shared by process_video, process_videos and frames; checked here so
// that a bad value is a ValueError before anything starts.
PipelineOptions base_options(const std::string& vf, const std::string& backend, const std::string& hwdec, int device,
                             int inflight) {
  PipelineOptions o;
  o.filters = vf;
  if (!vf.empty()) parse_filter_chain(vf);  // a bad spec fails here as ValueError
  o.backend = parse_backend_choice(backend);
  o.hwdec = parse_hwdec(hwdec);
  if (device < 0) throw std::invalid_argument("device must be a CUDA device index >= 0, got " + std::to_string(device));
  o.device = device;
  if (inflight < 1 || inflight > 64) throw std::invalid_argument("inflight must be between 1 and 64");
  o.inflight = inflight;
  return o;
}

// A Python progress callback called from a pipeline thread: it takes the GIL,
// and the first exception it raises sets `stop` and is kept to be raised again
// on the calling thread (take_error()).
class PyCallback {
 public:
  explicit PyCallback(nb::object fn) : fn_(std::move(fn)) {}
  bool empty() const { return fn_.is_none(); }
  template <class MakeDict>
  void call(MakeDict&& make) {
    if (stop.load()) return;
    nb::gil_scoped_acquire gil;
    try {
      fn_(make());
    } catch (nb::python_error& e) {
      std::lock_guard<std::mutex> lock(mutex_);
      if (!error_) error_.emplace(std::move(e));
      stop.store(true);
    }
  }
  // Raises the callback's exception, if any (GIL held).
  void raise_if_failed() {
    std::optional<nb::python_error> e;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (error_) {
        e.emplace(std::move(*error_));
        error_.reset();
      }
    }
    if (e) throw nb::python_error(std::move(*e));
  }
  std::atomic<bool> stop{false};

 private:
  nb::object fn_;
  std::mutex mutex_;
  std::optional<nb::python_error> error_;
};

// ---- waiting for the pipeline with Ctrl-C working
//
// Python runs its signal handlers (Ctrl-C: raise KeyboardInterrupt) only on
// the main thread, between bytecodes; a thread blocked in C++ never gets
// there. So every wait for a run polls PyErr_CheckSignals with the GIL, about
// 20 times a second, and gives the GIL back in between.
constexpr auto kSignalPoll = std::chrono::milliseconds(50);

// Waits, without the GIL, until ready() holds (checked under `mutex`; `cv` is
// notified when it may have changed), running Python's signal handlers every
// kSignalPoll. True once ready() holds; false as soon as a handler raised (the
// Python error, usually KeyboardInterrupt, is then set). GIL held on entry and
// exit. On threads other than the main one no handler runs: it just waits.
template <class Ready>
bool wait_or_signal(std::mutex& mutex, std::condition_variable& cv, Ready ready) {
  for (;;) {
    {
      nb::gil_scoped_release no_gil;
      std::unique_lock<std::mutex> lock(mutex);
      if (cv.wait_for(lock, kSignalPoll, ready)) return true;
    }
    if (PyErr_CheckSignals() != 0) return false;
  }
}

// Runs `work` (run_pipeline or run_batch, watching callback.stop) on a thread
// of its own without the GIL, the calling thread waiting in wait_or_signal.
// A signal handler that raises (Ctrl-C) sets the stop flag: as the CLI's
// first Ctrl-C, reading stops, the frames in flight are finished and the
// output is written at its final name. Once the run has ended, the handler's
// exception is raised; otherwise the progress callback's, then the run's own.
void run_stoppable(const std::function<void()>& work, PyCallback& callback) {
  std::mutex mutex;
  std::condition_variable cv;
  bool done = false;
  std::exception_ptr error;
  std::thread worker([&] {
    try {
      work();
    } catch (...) {
      error = std::current_exception();
    }
    std::lock_guard<std::mutex> lock(mutex);
    done = true;
    cv.notify_all();
  });
  struct JoinOnExit {  // the worker uses this frame: it never outlives it, whatever throws
    std::thread& worker;
    std::atomic<bool>& stop;
    ~JoinOnExit() {
      if (!worker.joinable()) return;
      stop.store(true);  // the run is over already, unless something threw here
      nb::gil_scoped_release no_gil;
      worker.join();
    }
  } join_on_exit{worker, callback.stop};
  std::optional<nb::python_error> interrupted;
  if (!wait_or_signal(mutex, cv, [&] { return done; })) {
    interrupted.emplace();  // takes the handler's exception off the thread state
    callback.stop.store(true);
    nb::gil_scoped_release no_gil;
    std::unique_lock<std::mutex> lock(mutex);
    cv.wait(lock, [&] { return done; });  // the frames in flight, then the output's trailer
  }
  {
    nb::gil_scoped_release no_gil;
    worker.join();
  }
  if (interrupted) throw nb::python_error(std::move(*interrupted));
  callback.raise_if_failed();  // the callback's exception is the cause of the run's
  if (error) std::rethrow_exception(error);
}

nb::dict process_video(const std::string& src, const std::string& dst, const std::string& vf, const std::string& codec,
                       int crf, const std::string& preset, const std::string& backend, const std::string& hwdec,
                       int device, bool overwrite, int inflight, nb::object progress, std::optional<double> start,
                       std::optional<double> duration, std::optional<int64_t> frames, bool strict_regions) {
  PipelineOptions o = base_options(vf, backend, hwdec, device, inflight);
  o.input = src;
  o.output = dst;
  o.strict_regions = strict_regions;  // a regions file that cannot match the video: ValueError, not a warning
  o.start_seconds = start;  // checked by run_pipeline (std::invalid_argument: ValueError)
  o.duration_seconds = duration;
  o.max_frames = frames;
  o.encoder.codec = codec.empty() ? default_encoder_for(dst) : codec;
  o.encoder.crf = crf;
  o.encoder.preset = preset;
  o.overwrite = overwrite;

  // The callback runs on a pipeline thread: it takes the GIL, and an exception
  // it raises stops the run and is raised again here, as Ctrl-C does.
  PyCallback callback(std::move(progress));
  o.stop = &callback.stop;
  if (!callback.empty()) {
    o.progress = [&](const Progress& p) {
      callback.call([&] {
        nb::dict d;
        d["frames"] = p.frames;
        d["total_estimate"] = p.total_estimate;
        d["elapsed_s"] = p.elapsed_s;
        d["fps"] = p.fps;
        d["media_time_s"] = p.media_time_s;
        d["duration_s"] = p.duration_s;
        d["final"] = p.final;
        return d;
      });
    };
  }
  RunStats stats;
  run_stoppable([&] { stats = run_pipeline(o); }, callback);
  return run_stats_dict(stats);
}

nb::list process_videos(const std::vector<std::string>& inputs, const std::vector<std::string>& outputs,
                        const std::string& vf, const std::string& codec, int crf, const std::string& preset,
                        const std::string& backend, const std::string& hwdec, int jobs_per_device,
                        const std::vector<int>& devices, int inflight, bool overwrite, nb::object progress) {
  if (inputs.size() != outputs.size())
    throw std::invalid_argument("process_videos: " + std::to_string(inputs.size()) + " inputs but " +
                                std::to_string(outputs.size()) + " outputs");
  if (jobs_per_device < 1) throw std::invalid_argument("jobs must be at least 1");
  BatchOptions b;
  b.base = base_options(vf, backend, hwdec, 0, inflight);
  b.base.encoder.codec = codec;  // empty: default_encoder_for(each output)
  b.base.encoder.crf = crf;
  b.base.encoder.preset = preset;
  b.base.overwrite = overwrite;
  for (size_t i = 0; i < inputs.size(); ++i) b.jobs.push_back({inputs[i], outputs[i]});
  b.jobs_per_device = jobs_per_device;
  for (int d : devices)
    if (d < 0) throw std::invalid_argument("devices: " + std::to_string(d) + " is not a CUDA device index");
  b.devices = devices;

  PyCallback callback(std::move(progress));
  b.stop = &callback.stop;
  if (!callback.empty()) {
    b.progress = [&](const BatchProgress& p) {
      callback.call([&] {
        nb::dict d;
        d["files_total"] = p.files_total;
        d["files_done"] = p.files_done;
        d["files_failed"] = p.files_failed;
        d["running"] = p.running;
        d["frames"] = p.frames;
        d["elapsed_s"] = p.elapsed_s;
        d["fps"] = p.fps;
        d["eta_s"] = p.eta_s;
        d["final"] = p.final;
        return d;
      });
    };
  }
  std::vector<BatchResult> results;
  run_stoppable([&] { results = run_batch(b); }, callback);
  nb::list out;
  const nb::object loads = nb::module_::import_("json").attr("loads");
  for (const BatchResult& r : results) out.append(loads(batch_result_json(r)));
  return out;
}

// ---- frames(): the pipeline on a background thread, frames handed to Python

// A per-device pool for the memory of frames handed to Python: allocation is
// stream-ordered on the pipeline slot's stream, the free stream-ordered on the
// legacy default stream (where CuPy and PyTorch work unless told otherwise),
// so a frame dropped while work on it is queued there is not reused under that
// work. Its release threshold is unlimited, so the per-frame synchronisation
// does not hand the memory back to the driver between frames; trimmed when an
// iterator closes. nullptr where the device has no memory pools (then plain
// cudaMalloc / cudaFree). Pools live as long as the process.
cudaMemPool_t frame_memory_pool(int device) {
  static std::mutex mutex;
  static std::vector<std::pair<int, cudaMemPool_t>> pools;
  std::lock_guard<std::mutex> lock(mutex);
  for (const auto& [d, pool] : pools)
    if (d == device) return pool;
  int supported = 0;
  CUDA_CHECK(cudaDeviceGetAttribute(&supported, cudaDevAttrMemoryPoolsSupported, device));
  cudaMemPool_t pool = nullptr;
  if (supported) {
    cudaMemPoolProps props{};
    props.allocType = cudaMemAllocationTypePinned;
    props.location.type = cudaMemLocationTypeDevice;
    props.location.id = device;
    CUDA_CHECK(cudaMemPoolCreate(&pool, &props));
    uint64_t threshold = UINT64_MAX;
    CUDA_CHECK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &threshold));
  }
  pools.emplace_back(device, pool);
  return pool;
}

// The memory of one frame handed to Python: every plane, packed, in one block
// (host, or device memory of `device`). Python frees it (through the capsule
// that owns it) when the last plane array of the frame is gone.
class FrameBlock {
 public:
  static std::unique_ptr<FrameBlock> host(size_t bytes) {
    auto b = std::unique_ptr<FrameBlock>(new FrameBlock);
    b->data_ = std::aligned_alloc(256, (bytes + 255) / 256 * 256);
    if (!b->data_) throw std::bad_alloc();
    return b;
  }
  // Device memory of the current device (which is `device`), ready for work on `stream`.
  static std::unique_ptr<FrameBlock> device(size_t bytes, int device, cudaStream_t stream) {
    auto b = std::unique_ptr<FrameBlock>(new FrameBlock);
    b->device_ = device;
    b->pool_ = frame_memory_pool(device);
    if (b->pool_) CUDA_CHECK(cudaMallocFromPoolAsync(&b->data_, bytes, b->pool_, stream));
    else CUDA_CHECK(cudaMalloc(&b->data_, bytes));
    return b;
  }
  ~FrameBlock() {
    if (!data_) return;
    if (device_ < 0) {
      std::free(data_);
      return;
    }
    // Errors are ignored: this may run at interpreter exit, after the CUDA runtime has gone.
    int current = -1;
    if (cudaGetDevice(&current) == cudaSuccess && current != device_) cudaSetDevice(device_);
    if (pool_) cudaFreeAsync(data_, cudaStreamLegacy);
    else cudaFree(data_);
    if (current >= 0 && current != device_) cudaSetDevice(current);
    cudaGetLastError();
  }
  FrameBlock(const FrameBlock&) = delete;
  FrameBlock& operator=(const FrameBlock&) = delete;
  unsigned char* data() const { return static_cast<unsigned char*>(data_); }
  bool on_device() const { return device_ >= 0; }
  int device_index() const { return device_; }

 private:
  FrameBlock() = default;
  void* data_ = nullptr;
  int device_ = -1;  // -1: host memory
  cudaMemPool_t pool_ = nullptr;
};

// A frame copied out of the pipeline, waiting in the queue for Python.
struct QueuedFrame {
  int64_t index = 0;
  double pts_seconds = 0;
  FrameLayout layout;
  std::array<size_t, 4> offset{};
  std::unique_ptr<FrameBlock> block;
};

size_t plane_row_bytes(const FrameLayout& l, int p) {
  return static_cast<size_t>(l.planes[p].width) * l.planes[p].channels * l.bytes_per_sample;
}

// Which framework the plane arrays are made for.
enum class ArrayKind { Numpy = 0, Cupy = 1, Torch = 2 };

// Runs one pipeline with a frame sink on its own thread and hands the frames
// to Python through a bounded queue. Ownership: each frame is copied, during
// the sink call, into a FrameBlock of its own, which the Python arrays own, so
// a frame Python still holds is never overwritten; memory in use is the
// pipeline's slots, the queue (`capacity` frames) and the frames Python holds.
class FrameStream {
 public:
  // `format`: the pixel format frames are handed over in ("" for the
  // processing format), converted on the CPU; `start`, `duration`: trimming.
  FrameStream(const std::string& path, const std::string& vf, const std::string& backend, const std::string& hwdec,
              int inflight, bool to_device, int device, int array_kind, const std::string& format,
              std::optional<double> start, std::optional<double> duration)
      : to_device_(to_device), device_(device), kind_(static_cast<ArrayKind>(array_kind)),
        want_format_(parse_frame_format(format, to_device)) {
    if (array_kind < 0 || array_kind > 2) throw std::invalid_argument("bad array kind");
    if (to_device && kind_ == ArrayKind::Numpy)
      throw std::invalid_argument("frames on the device need array='cupy' or 'torch'");
    if (to_device && !have_cuda()) throw std::runtime_error("device='cuda' was asked for but no CUDA device is usable here");
    PipelineOptions o = base_options(vf, backend, hwdec, device, inflight);
    if (to_device && o.backend == BackendChoice::Cpu && o.hwdec == HwDecode::Nvdec)
      throw std::invalid_argument("hwdec='nvdec' needs the CUDA backend (backend='auto' or 'cuda')");
    capacity_ = static_cast<size_t>(inflight);
    o.input = path;
    o.start_seconds = start;  // checked by run_pipeline (std::invalid_argument: ValueError)
    o.duration_seconds = duration;
    o.stop = &stop_;
    o.sink_memory = to_device ? SinkMemory::Device : SinkMemory::Host;
    o.note = [this](const std::string& text) {
      std::lock_guard<std::mutex> lock(mutex_);
      notes_.push_back(text);
    };
    o.frame_sink = [this](const FrameView& v) { sink(v); };
    thread_ = std::thread([this, o = std::move(o)] { run(o); });
  }

  ~FrameStream() { shut_down(/*release_gil=*/false); }
  FrameStream(const FrameStream&) = delete;
  FrameStream& operator=(const FrameStream&) = delete;

  // (planes, pts_seconds, index, format, width, height) of the next frame;
  // raises StopIteration at the end and the pipeline's error where it failed.
  nb::tuple next() {
    std::unique_ptr<QueuedFrame> f = pop();
    if (!f) {
      std::exception_ptr error;
      {
        nb::gil_scoped_release no_gil;
        join();  // the pipeline has finished: collect its thread
        std::lock_guard<std::mutex> lock(mutex_);
        error = std::exchange(error_, nullptr);  // raised once
      }
      if (error) std::rethrow_exception(error);
      throw nb::stop_iteration();
    }
    const FrameLayout& l = f->layout;
    const nb::dlpack::dtype dtype = l.bytes_per_sample == 1 ? nb::dtype<uint8_t>() : nb::dtype<uint16_t>();
    const int device_type = f->block->on_device() ? nb::device::cuda::value : nb::device::cpu::value;
    const int device_id = f->block->on_device() ? f->block->device_index() : 0;
    unsigned char* base = f->block->data();
    // One owner for every plane of the frame: the block goes when the last plane does.
    nb::capsule owner(f->block.release(), [](void* p) noexcept { delete static_cast<FrameBlock*>(p); });
    nb::list planes;
    for (int p = 0; p < l.num_planes; ++p) {
      const PlaneLayout& pl = l.planes[p];
      const size_t shape[3] = {static_cast<size_t>(pl.height), static_cast<size_t>(pl.width),
                               static_cast<size_t>(pl.channels)};
      const size_t ndim = pl.channels == 1 ? 2 : 3;
      void* data = base + f->offset[p];
      switch (kind_) {
        case ArrayKind::Numpy:
          planes.append(nb::cast(nb::ndarray<nb::numpy>(data, ndim, shape, owner, nullptr, dtype, device_type, device_id)));
          break;
        case ArrayKind::Cupy:
          planes.append(nb::cast(nb::ndarray<nb::cupy>(data, ndim, shape, owner, nullptr, dtype, device_type, device_id)));
          break;
        case ArrayKind::Torch:
          planes.append(nb::cast(nb::ndarray<nb::pytorch>(data, ndim, shape, owner, nullptr, dtype, device_type, device_id)));
          break;
      }
    }
    return nb::make_tuple(planes, f->pts_seconds, f->index, pixel_format_name(l.format), l.width, l.height);
  }

  // Stops the pipeline (it finishes the frames in flight, which are dropped)
  // and waits for its thread. Frames already handed out stay valid.
  void close() { shut_down(/*release_gil=*/true); }

  // The run's statistics once it has finished (None before, or when it failed).
  nb::object stats() {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!stats_) return nb::none();
    return run_stats_dict(*stats_);
  }

  std::vector<std::string> notes() {
    std::lock_guard<std::mutex> lock(mutex_);
    return notes_;
  }

  bool running() {
    std::lock_guard<std::mutex> lock(mutex_);
    return !finished_;
  }

 private:
  void run(const PipelineOptions& o) {
    try {
      // An arena of its own: the sink blocks while the queue is full, and a
      // thread of another graph (another iterator, process_video) must never
      // pick up this graph's sink task and block in it.
      tbb::task_arena arena;
      RunStats stats;
      arena.execute([&] { stats = run_pipeline(o); });
      std::lock_guard<std::mutex> lock(mutex_);
      stats_ = stats;
    } catch (...) {
      std::lock_guard<std::mutex> lock(mutex_);
      if (!stop_.load()) error_ = std::current_exception();  // after close() nobody asks
    }
    std::lock_guard<std::mutex> lock(mutex_);
    finished_ = true;
    has_frame_.notify_all();
  }

  // On the pipeline's sink thread, one frame at a time.
  void sink(const FrameView& v) {
    {
      std::unique_lock<std::mutex> lock(mutex_);
      has_room_.wait(lock, [&] { return queue_.size() < capacity_ || stop_.load(); });
      if (stop_.load()) return;  // closed: the frames still in flight are dropped
    }
    std::unique_ptr<QueuedFrame> f = copy_frame(v);
    std::lock_guard<std::mutex> lock(mutex_);
    if (stop_.load()) return;
    queue_.push_back(std::move(f));
    has_frame_.notify_one();
  }

  // A native format by FFmpeg's name, for frames handed over in it (host
  // memory only: swscale runs on the CPU); AV_PIX_FMT_NONE for "".
  static AVPixelFormat parse_frame_format(const std::string& name, bool to_device) {
    if (name.empty()) return AV_PIX_FMT_NONE;
    const AVPixelFormat f = av_get_pix_fmt(name.c_str());
    if (f == AV_PIX_FMT_NONE || !native_layout(f, 2, 2))
      throw std::invalid_argument("format must be one of " + native_format_names() + ", got '" + name + "'");
    if (to_device)
      throw std::invalid_argument("format='" + name + "' converts frames on the CPU: use device='cpu', or leave "
                                  "format out for device frames in the processing format");
    return f;
  }

  // The frame in want_format_, converted from the pipeline's host planes.
  FrameView converted(const FrameView& v) {
    const FrameLayout& l = v.layout;
    if (!converter_ || converted_->width != l.width || converted_->height != l.height || from_format_ != l.format) {
      converter_ = std::make_unique<io::FrameConverter>(l.width, l.height, l.format, want_format_);
      converted_ = io::AVFramePtr(av_frame_alloc());
      from_format_ = l.format;
    }
    io::AVFramePtr src(av_frame_alloc());
    src->format = l.format;
    src->width = l.width;
    src->height = l.height;
    for (int p = 0; p < l.num_planes; ++p) {
      src->data[p] = static_cast<uint8_t*>(const_cast<void*>(v.planes[p].data));
      src->linesize[p] = static_cast<int>(v.planes[p].pitch);
    }
    converter_->convert(*src, *converted_);
    FrameView out = v;
    out.layout = *native_layout(want_format_, l.width, l.height);
    for (int p = 0; p < out.layout.num_planes; ++p) {
      const PlaneLayout& pl = out.layout.planes[p];
      out.planes[p] = AnyPlane{converted_->data[p], pl.width, pl.height, converted_->linesize[p], pl.channels,
                               out.layout.bytes_per_sample};
    }
    return out;
  }

  std::unique_ptr<QueuedFrame> copy_frame(const FrameView& view) {
    const bool convert = want_format_ != AV_PIX_FMT_NONE && !view.on_device && view.layout.format != want_format_;
    const FrameView v = convert ? converted(view) : view;
    auto f = std::make_unique<QueuedFrame>();
    f->index = v.index;
    f->pts_seconds = v.pts_seconds;
    f->layout = v.layout;
    const FrameLayout& l = v.layout;
    size_t bytes = 0;
    for (int p = 0; p < l.num_planes; ++p) {
      f->offset[p] = bytes;
      bytes += (plane_row_bytes(l, p) * l.planes[p].height + 255) / 256 * 256;
    }
    if (!to_device_ && !v.on_device) {  // host to host: no CUDA at all (the CPU backend)
      f->block = FrameBlock::host(bytes);
      for (int p = 0; p < l.num_planes; ++p) {
        const size_t row = plane_row_bytes(l, p);
        const auto* src = static_cast<const unsigned char*>(v.planes[p].data);
        unsigned char* dst = f->block->data() + f->offset[p];
        for (int y = 0; y < l.planes[p].height; ++y) std::memcpy(dst + y * row, src + y * v.planes[p].pitch, row);
      }
      return f;
    }
    // Device planes are copied on the slot's stream (ordered after the frame's
    // work, and before the slot's reuse); host planes going to the device on a
    // stream of our own. Either way the copy is complete before the frame is
    // handed over, so Python can use it on any stream.
    const int device = v.on_device ? v.device : device_;
    CUDA_CHECK(cudaSetDevice(device));
    cudaStream_t stream = v.on_device ? v.stream : upload_stream();
    if (to_device_) {
      f->block = FrameBlock::device(bytes, device_, stream);
      used_pool_ = frame_memory_pool(device_);
    } else {
      f->block = FrameBlock::host(bytes);
    }
    for (int p = 0; p < l.num_planes; ++p) {
      const size_t row = plane_row_bytes(l, p);
      CUDA_CHECK(cudaMemcpy2DAsync(f->block->data() + f->offset[p], row, v.planes[p].data,
                                   static_cast<size_t>(v.planes[p].pitch), row, l.planes[p].height, cudaMemcpyDefault,
                                   stream));
    }
    CUDA_CHECK(cudaStreamSynchronize(stream));
    return f;
  }

  cudaStream_t upload_stream() {
    if (!upload_stream_) upload_stream_.emplace();  // on device_, made current by the caller
    return upload_stream_->get();
  }

  // The next frame, or nullptr once the pipeline has finished and the queue is
  // empty. GIL held (released while it waits).
  std::unique_ptr<QueuedFrame> pop() {
    std::unique_ptr<QueuedFrame> f;
    {
      std::lock_guard<std::mutex> lock(mutex_);  // only ever held briefly: no GIL release needed
      if (!queue_.empty()) f = take_front();
      else if (finished_ || stop_.load()) return nullptr;
    }
    if (f) return f;
    // Ctrl-C while waiting: KeyboardInterrupt from next(); the pipeline goes on
    // and no frame is lost (the next call returns the next frame).
    if (!wait_or_signal(mutex_, has_frame_, [&] { return !queue_.empty() || finished_ || stop_.load(); }))
      throw nb::python_error();
    std::lock_guard<std::mutex> lock(mutex_);
    if (queue_.empty()) return nullptr;
    return take_front();
  }

  std::unique_ptr<QueuedFrame> take_front() {  // mutex_ held
    std::unique_ptr<QueuedFrame> f = std::move(queue_.front());
    queue_.pop_front();
    has_room_.notify_one();
    return f;
  }

  void join() {
    std::lock_guard<std::mutex> lock(join_mutex_);
    if (thread_.joinable()) thread_.join();
  }

  void shut_down(bool release_gil) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_.store(true);
      has_room_.notify_all();
      has_frame_.notify_all();
    }
    // The pipeline thread never needs the GIL, so joining with it held cannot
    // deadlock; close() lets other Python threads run meanwhile.
    if (release_gil) {
      nb::gil_scoped_release no_gil;
      join();
    } else {
      join();
    }
    std::deque<std::unique_ptr<QueuedFrame>> dropped;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      dropped.swap(queue_);
      error_ = nullptr;
    }
    dropped.clear();
    if (used_pool_) cudaMemPoolTrimTo(used_pool_, 0);  // memory of frames Python still holds stays
    upload_stream_.reset();
    if (to_device_) cudaGetLastError();
  }

  const bool to_device_;
  const int device_;
  const ArrayKind kind_;
  const AVPixelFormat want_format_;  // AV_PIX_FMT_NONE: the processing format
  std::unique_ptr<io::FrameConverter> converter_;  // sink thread only
  io::AVFramePtr converted_;
  AVPixelFormat from_format_ = AV_PIX_FMT_NONE;
  size_t capacity_ = 4;
  std::atomic<bool> stop_{false};
  std::mutex mutex_;
  std::condition_variable has_room_, has_frame_;
  std::deque<std::unique_ptr<QueuedFrame>> queue_;
  bool finished_ = false;
  std::exception_ptr error_;
  std::optional<RunStats> stats_;
  std::vector<std::string> notes_;
  std::optional<cuda::CudaStream> upload_stream_;
  cudaMemPool_t used_pool_ = nullptr;  // written by the sink, read after the join
  std::mutex join_mutex_;
  std::thread thread_;  // last: started once everything above exists
};

// A RuntimeError whose `location` attribute says where in streamblur's source
// it was raised ("reader.cpp:226"), for a verbose report.
void set_located_error(const char* what, const std::string& location) {
  nb::object err = nb::borrow(PyExc_RuntimeError)(what);
  err.attr("location") = location;
  PyErr_SetObject(PyExc_RuntimeError, err.ptr());
}

nb::dict cuda_cache_stats() {
  nb::dict d;
  d["chains_configured"] = g_chains_configured.load();
  d["staging_allocations"] = g_staging_allocations.load();
  d["graph_launches"] = g_graph_launches.load();
  d["fast_calls"] = g_fast_calls.load();
  return d;
}

}  // namespace
}  // namespace streamblur::python

NB_MODULE(_streamblur, m) {
  using namespace streamblur;
  using namespace streamblur::python;
  m.doc() = "Low-level bindings of the streamblur C++/CUDA library; use the streamblur package instead.";
  // An output that exists without overwrite=True is Python's FileExistsError.
  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const io::OutputExistsError& e) {
      PyErr_SetString(PyExc_FileExistsError, (std::string(e.what()) + " (pass overwrite=True to replace it)").c_str());
    } catch (const io::AVError& e) {
      set_located_error(e.what(), e.location());
    } catch (const cuda::CudaError& e) {
      set_located_error(e.what(), e.location());
    }
  });

  // FFmpeg's own log is quiet until set_log_level() asks for it; its last
  // error line is still kept for the messages.
  io::install_log_capture(AV_LOG_QUIET);
  m.def("set_log_level", &io::install_log_capture, "level"_a,
        "Prints FFmpeg's log lines at or below an AV_LOG_* level (-8: none) on stderr.");
  m.def("device_count", &cuda::device_count, "Number of usable CUDA devices (0 without a driver or device).");
  m.def("current_device", &current_device, "The current CUDA device of the calling thread.");
  m.def("run_filter", &run_filter, "src"_a, "dst"_a, "spec"_a, "backend"_a, "stream"_a,
        "Runs filter chain `spec` from src into dst (same shape and dtype; dst may be src).");
  m.def("run_cupy", &run_cupy, "src"_a, "dst"_a, "spec"_a, "stream"_a.none(),
        "The fast path of run_filter for two CuPy arrays on CuPy's current stream; False where it does not apply "
        "(nothing was done).");
  m.def("register_cupy", &register_cupy, "ndarray"_a, "get_current_stream"_a, "uint8"_a, "uint16"_a,
        "Gives the fast path CuPy's array type, its current-stream function and numpy's uint8/uint16 dtypes.");
  m.def("check_chain", &check_chain, "spec"_a, "Parses a filter chain; returns its description.");
  m.def("filter_list", &filter_list);
  m.def("filter_help", &filter_help, "name"_a);
  m.def("reference_gaussian_blur", &reference_gaussian, "src"_a, "dst"_a, "sigma"_a, "radius"_a);
  m.def("reference_box_blur", &reference_box, "src"_a, "dst"_a, "radius"_a);
  m.def("managed_bytes", &managed_bytes, "nbytes"_a);
  m.def("cuda_empty", &cuda_empty, "shape"_a, "bytes_per_sample"_a);
  m.def("is_managed_pointer", &is_managed_pointer, "ptr"_a);
  m.def("memory_kind", &memory_kind, "array"_a, "'host', 'cuda' or 'managed' (checks the array like the blurs do).");
  m.def("process_video", &process_video, "src"_a, "dst"_a, "vf"_a, "codec"_a, "crf"_a, "preset"_a, "backend"_a,
        "hwdec"_a, "device"_a, "overwrite"_a, "inflight"_a, "progress"_a.none(), "start"_a.none(),
        "duration"_a.none(), "frames"_a.none(), "strict_regions"_a);
  m.def("parse_time", &parse_time, "text"_a,
        "Seconds from ffmpeg's time syntax (12.5, 1500ms, [HH:]MM:SS[.m]); ValueError otherwise.");
  m.def("process_videos", &process_videos, "inputs"_a, "outputs"_a, "vf"_a, "codec"_a, "crf"_a, "preset"_a,
        "backend"_a, "hwdec"_a, "jobs_per_device"_a, "devices"_a, "inflight"_a, "overwrite"_a, "progress"_a.none());
  m.def("parse_device_list", &parse_device_list, "text"_a, "[] for 'all', else the listed device indices.");
  m.def("release_queued_calls", &release_queued_calls, "wait"_a,
        "Drops the arrays held for calls whose GPU work has completed (wait=True: waits for all); returns how many "
        "calls still hold theirs.");
  m.def("cuda_cache_stats", &cuda_cache_stats,
        "Counts of CUDA chains configured and staging buffers allocated by the blurs since import.");
  nb::class_<FrameStream>(m, "FrameStream",
                          "One pipeline run with a frame sink on a background thread (see streamblur.frames).")
      .def(nb::init<const std::string&, const std::string&, const std::string&, const std::string&, int, bool, int,
                    int, const std::string&, std::optional<double>, std::optional<double>>(),
           "path"_a, "vf"_a, "backend"_a, "hwdec"_a, "inflight"_a, "to_device"_a, "device"_a, "array_kind"_a,
           "format"_a, "start"_a.none(), "duration"_a.none())
      .def("next", &FrameStream::next,
           "(planes, pts_seconds, index, format, width, height); StopIteration at the end")
      .def("close", &FrameStream::close)
      .def("stats", &FrameStream::stats)
      .def("notes", &FrameStream::notes)
      .def_prop_ro("running", &FrameStream::running);
  m.attr("MAX_MANAGED_BYTES") = kMaxManagedBytes;
  m.attr("MIN_SIGMA") = kMinSigma;
  m.attr("MAX_SIGMA") = kMaxSigma;
  m.attr("MAX_GAUSS_RADIUS") = kMaxGaussRadius;
  m.attr("MAX_BOX_RADIUS") = kMaxBoxRadius;
}
