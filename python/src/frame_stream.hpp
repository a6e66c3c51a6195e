#pragma once
// frames(): FrameStream runs one pipeline with a frame sink on a thread of
// its own and hands each frame to Python as arrays that own a copy of it.
#include <nanobind/nanobind.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <array>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "frame_memory.hpp"
#include "streamblur/io/av_ptr.hpp"
#include "streamblur/io/convert.hpp"
#include "streamblur/pipeline/frame_layout.hpp"
#include "streamblur/pipeline/pipeline.hpp"

namespace nb = nanobind;

namespace streamblur::python {

// A frame copied out of the pipeline, waiting in the queue for Python.
struct QueuedFrame {
  int64_t index = 0;
  double pts_seconds = 0;
  FrameLayout layout;
  std::array<size_t, 4> offset{};
  std::unique_ptr<FrameBlock> block;
};

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
  // processing format), converted on the CPU; `start`, `duration`: trimming;
  // `segments`: PipelineOptions::segments (frames in host memory only).
  FrameStream(const std::string& path, const std::string& vf, const std::string& backend, const std::string& hwdec,
              int inflight, bool to_device, int device, int array_kind, const std::string& format,
              std::optional<double> start, std::optional<double> duration, int segments);
  ~FrameStream();
  FrameStream(const FrameStream&) = delete;
  FrameStream& operator=(const FrameStream&) = delete;

  // (planes, pts_seconds, index, format, width, height) of the next frame;
  // raises StopIteration at the end and the pipeline's error where it failed.
  nb::tuple next();
  // Stops the pipeline (it finishes the frames in flight, which are dropped)
  // and waits for its thread. Frames already handed out stay valid.
  void close();
  // The run's statistics once it has finished (None before, or when it failed).
  nb::object stats();
  std::vector<std::string> notes();
  bool running();

 private:
  void run(const PipelineOptions& o);
  void sink(const FrameView& v);
  static AVPixelFormat parse_frame_format(const std::string& name, bool to_device);
  FrameView converted(const FrameView& v);
  std::unique_ptr<QueuedFrame> copy_frame(const FrameView& view);
  nb::list plane_arrays(QueuedFrame& f) const;
  std::unique_ptr<QueuedFrame> pop();
  std::unique_ptr<QueuedFrame> take_front();
  void join();
  void shut_down(bool release_gil);

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
  DeviceFrames device_frames_;  // the sink's copies on or for the device; released after the join
  std::mutex join_mutex_;
  std::thread thread_;  // last: started once everything above exists
};

}  // namespace streamblur::python
