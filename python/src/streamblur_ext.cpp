// streamblur._streamblur: the nanobind layer under the Python package.
//
// The package (streamblur/__init__.py) does the Python-side work (choosing and
// allocating the output in the input's framework, parsing stream objects,
// making numpy inputs pixel-contiguous); this layer checks every array again,
// works out where its memory lives (host, CUDA device, CUDA managed) and runs
// one FilterChain from the pipeline's filter registry over it, with the GIL
// released. Errors: std::invalid_argument -> ValueError (nanobind's default),
// CudaError and other std::runtime_error -> RuntimeError, bad dtype -> TypeError.
#include <cuda_runtime_api.h>

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <array>
#include <memory>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

extern "C" {
#include <libavutil/pixdesc.h>
}

#include "streamblur/io/synthetic_clip.hpp"
#include "streamblur/kernels/cuda_check.hpp"
#include "streamblur/kernels/cuda_raii.hpp"
#include "streamblur/kernels/params.hpp"
#include "streamblur/kernels/reference.hpp"
#include "streamblur/pipeline/filter.hpp"
#include "streamblur/pipeline/frame_layout.hpp"
#include "streamblur/pipeline/pipeline.hpp"

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

// Configured CUDA chains, kept between calls: configuring allocates the
// device weights and scratch (cudaMalloc, and cudaFree on destruction, which
// synchronise), far more than a blur of a modest image costs. Each entry is
// used by one call at a time; its event orders a call after the previous
// call's GPU work on the GPU, without a host wait.
struct CachedChain {
  std::mutex in_use;
  FilterChain chain;
  cuda::CudaEvent last_use;
  ~CachedChain() {
    try {
      last_use.synchronize();  // never free scratch under queued work
    } catch (...) {
    }
  }
};

std::shared_ptr<CachedChain> cuda_chain_for(const std::string& spec, const FrameLayout& layout) {
  static std::mutex mutex;
  static std::vector<std::pair<std::string, std::shared_ptr<CachedChain>>> lru;  // most recent last
  constexpr size_t kEntries = 8;
  int device = 0;
  CUDA_CHECK(cudaGetDevice(&device));
  const PlaneLayout& p = layout.planes[0];
  const std::string key = spec + "|" + std::to_string(p.width) + "x" + std::to_string(p.height) + "x" +
                          std::to_string(p.channels) + "x" + std::to_string(layout.bytes_per_sample) + "@" +
                          std::to_string(device);
  std::lock_guard<std::mutex> lock(mutex);
  for (size_t i = 0; i < lru.size(); ++i)
    if (lru[i].first == key) {
      auto hit = lru[i];
      lru.erase(lru.begin() + static_cast<std::ptrdiff_t>(i));
      lru.push_back(hit);
      return hit.second;
    }
  auto entry = std::make_shared<CachedChain>();
  entry->chain = FilterChain(parse_filter_chain(spec));
  entry->chain.configure(layout, Backend::Cuda);  // weights and scratch on the current device
  lru.emplace_back(key, entry);
  if (lru.size() > kEntries) lru.erase(lru.begin());  // freed once no call holds it
  return entry;
}

// Runs `spec` from src into dst (dst may be src: in place).
void run_filter(InArray src_arr, OutArray dst_arr, const std::string& spec, const std::string& backend_name,
                uintptr_t stream_handle) {
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

  nb::gil_scoped_release no_gil;
  auto stream = reinterpret_cast<cudaStream_t>(stream_handle);
  const std::shared_ptr<CachedChain> entry = cuda_chain_for(spec, layout);
  std::lock_guard<std::mutex> lock(entry->in_use);
  FilterChain& chain = entry->chain;
  cuda::DeviceBuffer staging;
  try {
    CUDA_CHECK(cudaStreamWaitEvent(stream, entry->last_use.get(), 0));  // the previous user's work first
    if (dst.memory == Memory::Device && src.memory != Memory::Managed) {
      copy_rows_cuda(src, dst, stream);
      chain.apply({dst.plane()}, 1, stream);
      entry->last_use.record(stream);
      // Device output: no host wait. The work is ordered on `stream`, as the
      // caller's own work on that stream is.
      return;
    }
    // Host or managed output: blur in a packed device buffer (host) or in
    // place (managed), and wait, since the host reads the result next.
    if (dst.memory == Memory::Managed) {
      copy_rows_cuda(src, dst, stream);
      chain.apply({dst.plane()}, 1, stream);
    } else {
      staging = cuda::DeviceBuffer(src.row_bytes() * src.height);
      Image dev = src;
      dev.data = staging.get();
      dev.pitch = static_cast<std::ptrdiff_t>(src.row_bytes());
      dev.memory = Memory::Device;
      copy_rows_cuda(src, dev, stream);
      chain.apply({dev.plane()}, 1, stream);
      copy_rows_cuda(dev, dst, stream);
    }
    entry->last_use.record(stream);
    CUDA_CHECK(cudaStreamSynchronize(stream));
    // Without concurrent managed access the host may not touch managed
    // memory while any kernel runs.
    if (managed) CUDA_CHECK(cudaDeviceSynchronize());
  } catch (...) {
    cudaStreamSynchronize(stream);  // never free buffers under queued work
    throw;
  }
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

// ---- process_video

nb::dict run_stats_dict(const RunStats& s) {
  nb::dict d;
  d["backend"] = s.backend;
  d["filters"] = s.filters;
  d["frames"] = s.frames;
  d["wall_s"] = s.wall_s;
  d["fps"] = s.fps;
  d["bounding_stage"] = s.bounding_stage;
  d["decode_warnings"] = s.decode_warnings;
  d["stopped_early"] = s.stopped_early;
  d["input_format"] = s.input_format;
  d["processing_format"] = s.processing_format;
  nb::dict stages;
  const std::pair<const char*, const StageStats*> all[] = {
      {"decode", &s.decode}, {"upload", &s.upload}, {"filter", &s.filter}, {"download", &s.download}, {"encode", &s.encode}};
  for (const auto& [name, st] : all) {
    nb::dict x;
    x["busy_s"] = st->busy_s;
    x["blocked_s"] = st->blocked_s;
    stages[name] = x;
  }
  d["stages"] = stages;
  return d;
}

nb::dict process_video(const std::string& src, const std::string& dst, const std::string& vf, const std::string& codec,
                       int crf, const std::string& preset, const std::string& backend, bool overwrite, int inflight,
                       nb::object progress) {
  PipelineOptions o;
  o.input = src;
  o.output = dst;
  o.filters = vf;
  if (!vf.empty()) parse_filter_chain(vf);  // a bad spec fails here as ValueError
  if (backend == "auto") o.backend = BackendChoice::Auto;
  else if (backend == "cpu") o.backend = BackendChoice::Cpu;
  else if (backend == "cuda") o.backend = BackendChoice::Cuda;
  else throw std::invalid_argument("backend must be 'auto', 'cpu' or 'cuda', got '" + backend + "'");
  o.encoder.codec = codec.empty() ? default_encoder_for(dst) : codec;
  o.encoder.crf = crf;
  o.encoder.preset = preset;
  o.overwrite = overwrite;
  if (inflight < 1) throw std::invalid_argument("inflight must be at least 1");
  o.inflight = inflight;

  // The callback runs on a pipeline thread: it takes the GIL, and an exception
  // it raises stops the run and is raised again here.
  std::atomic<bool> stop{false};
  std::mutex err_mutex;
  std::optional<nb::python_error> callback_error;
  if (!progress.is_none()) {
    o.stop = &stop;
    o.progress = [&](const Progress& p) {
      if (stop.load()) return;
      nb::gil_scoped_acquire gil;
      try {
        nb::dict d;
        d["frames"] = p.frames;
        d["total_estimate"] = p.total_estimate;
        d["elapsed_s"] = p.elapsed_s;
        d["fps"] = p.fps;
        d["media_time_s"] = p.media_time_s;
        d["duration_s"] = p.duration_s;
        d["final"] = p.final;
        progress(d);
      } catch (nb::python_error& e) {
        std::lock_guard<std::mutex> lock(err_mutex);
        if (!callback_error) callback_error.emplace(std::move(e));
        stop.store(true);
      }
    };
  }
  RunStats stats;
  {
    nb::gil_scoped_release no_gil;
    stats = run_pipeline(o);
  }
  if (callback_error) {
    nb::python_error e = std::move(*callback_error);
    callback_error.reset();
    throw e;
  }
  return run_stats_dict(stats);
}

void write_test_clip(const std::string& path, int width, int height, int frames, const std::string& codec,
                     const std::string& pix_fmt, int fps) {
  io::SyntheticClipSpec spec;
  spec.width = width;
  spec.height = height;
  spec.frames = frames;
  spec.fps = fps;
  spec.codec = codec;
  spec.pix_fmt = av_get_pix_fmt(pix_fmt.c_str());
  if (spec.pix_fmt == AV_PIX_FMT_NONE) throw std::invalid_argument("unknown pixel format '" + pix_fmt + "'");
  nb::gil_scoped_release no_gil;
  io::write_synthetic_clip(path, spec);
}

}  // namespace
}  // namespace streamblur::python

NB_MODULE(_streamblur, m) {
  using namespace streamblur;
  using namespace streamblur::python;
  m.doc() = "Low-level bindings of the streamblur C++/CUDA library; use the streamblur package instead.";

  m.def("device_count", &cuda::device_count, "Number of usable CUDA devices (0 without a driver or device).");
  m.def("current_device", &current_device, "The current CUDA device of the calling thread.");
  m.def("run_filter", &run_filter, "src"_a, "dst"_a, "spec"_a, "backend"_a, "stream"_a,
        "Runs filter chain `spec` from src into dst (same shape and dtype; dst may be src).");
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
        "overwrite"_a, "inflight"_a, "progress"_a.none());
  m.def("write_test_clip", &write_test_clip, "path"_a, "width"_a, "height"_a, "frames"_a, "codec"_a, "pix_fmt"_a,
        "fps"_a);
  m.attr("MAX_MANAGED_BYTES") = kMaxManagedBytes;
  m.attr("MIN_SIGMA") = kMinSigma;
  m.attr("MAX_SIGMA") = kMaxSigma;
  m.attr("MAX_GAUSS_RADIUS") = kMaxGaussRadius;
  m.attr("MAX_BOX_RADIUS") = kMaxBoxRadius;
}
