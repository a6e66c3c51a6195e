// FrameStream (frame_stream.hpp): the pipeline on a background thread, frames
// copied out in its sink and handed to Python. Host frames are copied here;
// the copies that involve a device are DeviceFrames' (frame_memory.hpp).
#include "frame_stream.hpp"

#include <nanobind/ndarray.h>

#include <oneapi/tbb/task_arena.h>

extern "C" {
#include <libavutil/frame.h>
#include <libavutil/pixdesc.h>
}

#include <cstdlib>
#include <cstring>
#include <new>
#include <stdexcept>
#include <utility>

#include "cuda_memory.hpp"
#include "video.hpp"

namespace streamblur::python {
namespace {

class HostFrameBlock final : public FrameBlock {
 public:
  explicit HostFrameBlock(void* data) : FrameBlock(data, -1) {}
  ~HostFrameBlock() override { std::free(data_); }
};

}  // namespace

std::unique_ptr<FrameBlock> host_frame_block(size_t bytes) {
  void* data = std::aligned_alloc(256, (bytes + 255) / 256 * 256);
  if (!data) throw std::bad_alloc();
  return std::make_unique<HostFrameBlock>(data);
}

FrameStream::FrameStream(const std::string& path, const std::string& vf, const std::string& backend,
                         const std::string& hwdec, int inflight, bool to_device, int device, int array_kind,
                         const std::string& format, std::optional<double> start, std::optional<double> duration,
                         int segments)
    : to_device_(to_device), device_(device), kind_(static_cast<ArrayKind>(array_kind)),
      want_format_(parse_frame_format(format, to_device)), device_frames_(device, to_device) {
  if (array_kind < 0 || array_kind > 2) throw std::invalid_argument("bad array kind");
  if (to_device && kind_ == ArrayKind::Numpy)
    throw std::invalid_argument("frames on the device need array='cupy' or 'torch'");
  if (to_device) require_cuda("device='cuda' was asked for");
  PipelineOptions o = base_options(vf, backend, hwdec, device, inflight);
  if (to_device && o.backend == BackendChoice::Cpu && o.hwdec == HwDecode::Nvdec)
    throw std::invalid_argument("hwdec='nvdec' needs the CUDA backend (backend='auto' or 'cuda')");
  capacity_ = static_cast<size_t>(inflight);
  o.input = path;
  o.start_seconds = start;  // checked by run_pipeline (std::invalid_argument: ValueError)
  o.duration_seconds = duration;
  o.stop = &stop_;
  o.segments = segments;  // checked by run_pipeline (std::invalid_argument: ValueError)
  o.sink_memory = to_device ? SinkMemory::Device : SinkMemory::Host;
  o.note = [this](const std::string& text) {
    std::lock_guard<std::mutex> lock(mutex_);
    notes_.push_back(text);
  };
  o.frame_sink = [this](const FrameView& v) { sink(v); };
  thread_ = std::thread([this, o = std::move(o)] { run(o); });
}

FrameStream::~FrameStream() { shut_down(/*release_gil=*/false); }

nb::tuple FrameStream::next() {
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
  nb::list planes = plane_arrays(*f);
  return nb::make_tuple(planes, f->pts_seconds, f->index, pixel_format_name(l.format), l.width, l.height);
}

// The frame's planes as arrays of kind_, all owning f's block (taken from f):
// the block goes when the last plane does.
nb::list FrameStream::plane_arrays(QueuedFrame& f) const {
  const FrameLayout& l = f.layout;
  const nb::dlpack::dtype dtype = l.bytes_per_sample == 1 ? nb::dtype<uint8_t>() : nb::dtype<uint16_t>();
  const int device_type = f.block->on_device() ? nb::device::cuda::value : nb::device::cpu::value;
  const int device_id = f.block->on_device() ? f.block->device_index() : 0;
  unsigned char* base = f.block->data();
  nb::capsule owner(f.block.release(), [](void* p) noexcept { delete static_cast<FrameBlock*>(p); });
  nb::list planes;
  for (int p = 0; p < l.num_planes; ++p) {
    const PlaneLayout& pl = l.planes[p];
    const size_t shape[3] = {static_cast<size_t>(pl.height), static_cast<size_t>(pl.width),
                             static_cast<size_t>(pl.channels)};
    const size_t ndim = pl.channels == 1 ? 2 : 3;
    void* data = base + f.offset[p];
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
  return planes;
}

void FrameStream::close() { shut_down(/*release_gil=*/true); }

nb::object FrameStream::stats() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!stats_) return nb::none();
  return run_stats_dict(*stats_);
}

std::vector<std::string> FrameStream::notes() {
  std::lock_guard<std::mutex> lock(mutex_);
  return notes_;
}

bool FrameStream::running() {
  std::lock_guard<std::mutex> lock(mutex_);
  return !finished_;
}

void FrameStream::run(const PipelineOptions& o) {
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
void FrameStream::sink(const FrameView& v) {
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
AVPixelFormat FrameStream::parse_frame_format(const std::string& name, bool to_device) {
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
FrameView FrameStream::converted(const FrameView& v) {
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

std::unique_ptr<QueuedFrame> FrameStream::copy_frame(const FrameView& view) {
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
  if (to_device_ || v.on_device) {
    f->block = device_frames_.copy(v, f->offset, bytes);
    return f;
  }
  // Host to host: no CUDA at all (the CPU backend).
  f->block = host_frame_block(bytes);
  for (int p = 0; p < l.num_planes; ++p) {
    const size_t row = plane_row_bytes(l, p);
    const auto* src = static_cast<const unsigned char*>(v.planes[p].data);
    unsigned char* dst = f->block->data() + f->offset[p];
    for (int y = 0; y < l.planes[p].height; ++y) std::memcpy(dst + y * row, src + y * v.planes[p].pitch, row);
  }
  return f;
}

// The next frame, or nullptr once the pipeline has finished and the queue is
// empty. GIL held (released while it waits).
std::unique_ptr<QueuedFrame> FrameStream::pop() {
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

std::unique_ptr<QueuedFrame> FrameStream::take_front() {  // mutex_ held
  std::unique_ptr<QueuedFrame> f = std::move(queue_.front());
  queue_.pop_front();
  has_room_.notify_one();
  return f;
}

void FrameStream::join() {
  std::lock_guard<std::mutex> lock(join_mutex_);
  if (thread_.joinable()) thread_.join();
}

void FrameStream::shut_down(bool release_gil) {
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
  device_frames_.release();
}

}  // namespace streamblur::python
