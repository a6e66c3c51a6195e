#include "streamblur/io/av_ptr.hpp"

#include <new>

namespace streamblur::io {

AVFramePtr make_frame() {
  AVFramePtr f(av_frame_alloc());
  if (!f) throw std::bad_alloc();
  return f;
}

AVPacketPtr make_packet() {
  AVPacketPtr p(av_packet_alloc());
  if (!p) throw std::bad_alloc();
  return p;
}

}  // namespace streamblur::io
