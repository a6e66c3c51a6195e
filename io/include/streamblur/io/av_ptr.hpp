#pragma once
// RAII owners for FFmpeg objects (as torchcodec does): unique_ptr with deleters.
extern "C" {
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/frame.h>
}
#include <memory>

namespace streamblur::io {

struct AVFrameDeleter { void operator()(AVFrame* f) const noexcept { av_frame_free(&f); } };
struct AVPacketDeleter { void operator()(AVPacket* p) const noexcept { av_packet_free(&p); } };
struct AVCodecContextDeleter { void operator()(AVCodecContext* c) const noexcept { avcodec_free_context(&c); } };
struct AVBufferRefDeleter { void operator()(AVBufferRef* b) const noexcept { av_buffer_unref(&b); } };
struct AVInputFormatContextDeleter { void operator()(AVFormatContext* c) const noexcept { avformat_close_input(&c); } };

using AVFramePtr = std::unique_ptr<AVFrame, AVFrameDeleter>;
using AVPacketPtr = std::unique_ptr<AVPacket, AVPacketDeleter>;
using AVCodecContextPtr = std::unique_ptr<AVCodecContext, AVCodecContextDeleter>;
using AVBufferRefPtr = std::unique_ptr<AVBufferRef, AVBufferRefDeleter>;
using AVInputFormatContextPtr = std::unique_ptr<AVFormatContext, AVInputFormatContextDeleter>;

// Allocate, throwing std::bad_alloc on failure.
AVFramePtr make_frame();
AVPacketPtr make_packet();

}  // namespace streamblur::io
