#pragma once
// The memory of the frames FrameStream hands to Python: host blocks
// (host_frame_block, frame_stream.cpp) and the CUDA side, DeviceFrames
// (cuda_frames.cpp; in a build without the CUDA toolkit no_cuda.cpp, since
// no frame is then on the device or goes to it).
#include <array>
#include <cstddef>
#include <memory>

#include "streamblur/pipeline/frame_layout.hpp"
#include "streamblur/pipeline/pipeline.hpp"

namespace streamblur::python {

// The memory of one frame handed to Python: every plane, packed, in one block
// (host, or device memory of device_index()). Python frees it (through the
// capsule that owns it) when the last plane array of the frame is gone.
class FrameBlock {
 public:
  virtual ~FrameBlock() = default;
  FrameBlock(const FrameBlock&) = delete;
  FrameBlock& operator=(const FrameBlock&) = delete;
  unsigned char* data() const { return static_cast<unsigned char*>(data_); }
  bool on_device() const { return device_ >= 0; }
  int device_index() const { return device_; }

 protected:
  FrameBlock(void* data, int device) : data_(data), device_(device) {}
  void* data_ = nullptr;
  int device_ = -1;  // -1: host memory
};

// `bytes` of host memory, aligned to 256 bytes.
std::unique_ptr<FrameBlock> host_frame_block(size_t bytes);

inline size_t plane_row_bytes(const FrameLayout& l, int p) {
  return static_cast<size_t>(l.planes[p].width) * l.planes[p].channels * l.bytes_per_sample;
}

// FrameStream's copies that involve a device: frames whose planes are in
// device memory, and frames handed over in device memory of `device`
// (to_device). Used on the pipeline's sink thread, then released after it
// has been joined.
class DeviceFrames {
 public:
  DeviceFrames(int device, bool to_device);
  ~DeviceFrames();
  DeviceFrames(const DeviceFrames&) = delete;
  DeviceFrames& operator=(const DeviceFrames&) = delete;

  // A block of `bytes` (device memory with to_device, else host memory)
  // holding v's planes packed at `offset`; the copy is complete on return,
  // so Python can use the frame on any stream.
  std::unique_ptr<FrameBlock> copy(const FrameView& v, const std::array<size_t, 4>& offset, size_t bytes);
  // Gives the frame pool's unused memory back (frames Python still holds
  // keep theirs) and drops the upload stream.
  void release();

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace streamblur::python
