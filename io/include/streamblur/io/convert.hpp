#pragma once
// swscale conversion between pixel formats of the same size, keeping pts and
// colour properties of the frame.
#include "streamblur/io/av_ptr.hpp"

namespace streamblur::io {

// Whether swscale can write `format` (it cannot write palettes, for one).
bool can_convert_to(AVPixelFormat format);

// One swscale context converting width x height frames from `from` to `to`.
class FrameConverter {
 public:
  FrameConverter(int width, int height, AVPixelFormat from, AVPixelFormat to);
  FrameConverter(const FrameConverter&) = delete;
  FrameConverter& operator=(const FrameConverter&) = delete;
  // Converts src into dst (allocating dst's buffers if it has none); copies
  // pts, duration and colour properties. Not thread-safe: one per thread.
  void convert(const AVFrame& src, AVFrame& dst);
  AVPixelFormat to() const noexcept { return to_; }

 private:
  SwsContextPtr sws_;
  int width_, height_;
  AVPixelFormat from_, to_;
  int last_colorspace_ = -1;  // colour details last given to sws_ (set again only on change)
  int last_range_ = -1;
};

}  // namespace streamblur::io
