#include "streamblur/io/av_ptr.hpp"

extern "C" {
#include <libavutil/mem.h>
}

#include <new>

namespace streamblur::io {

void free_output_format_context(AVFormatContext* c) noexcept {
  if (!c) return;
  if (c->pb && c->oformat && !(c->oformat->flags & AVFMT_NOFILE)) avio_closep(&c->pb);
  avformat_free_context(c);
}

void free_custom_io_context(AVIOContext* io) noexcept {
  if (!io) return;
  av_freep(&io->buffer);
  avio_context_free(&io);
}

void free_chapter(AVChapter* c) noexcept {
  if (!c) return;
  av_dict_free(&c->metadata);
  av_free(c);
}

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
