#pragma once
// RAII owners for FFmpeg objects, after torchcodec's FFMPEGCommon.h: one
// deleter template over FFmpeg's free function gives a unique_ptr alias for
// every FFmpeg type streamblur owns. It takes both shapes FFmpeg has: free
// functions taking the object's address (av_frame_free(&f), which also nulls
// it) and those taking the object (sws_freeContext(s)). Types whose freeing is
// more than one call (an output context and its file) get a named function.
// make_frame and make_packet allocate, throwing std::bad_alloc, never null.
extern "C" {
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/buffer.h>
#include <libavutil/dict.h>
#include <libavutil/frame.h>
}
#include <memory>
#include <type_traits>

extern "C" {
struct SwsContext;
void sws_freeContext(struct SwsContext* swsContext);
}

namespace streamblur::io {

// unique_ptr deleter calling `Fn(&p)` or `Fn(p)`, whichever Fn takes.
template <auto Fn>
struct AvDeleter {
  template <class T>
  void operator()(T* p) const noexcept {
    if constexpr (std::is_invocable_v<decltype(Fn), T**>) Fn(&p);
    else Fn(p);
  }
};

// A unique_ptr owning a T freed with Fn.
template <class T, auto Fn>
using AvPtr = std::unique_ptr<T, AvDeleter<Fn>>;

// Muxing: closes the file the caller opened with avio_open (when the muxer
// writes one: no AVFMT_NOFILE) without writing a trailer, then frees the
// context with its streams and chapters.
void free_output_format_context(AVFormatContext* c) noexcept;
// A custom AVIOContext (avio_alloc_context) and its current buffer (FFmpeg may
// have replaced the one it was given), not the opaque pointer.
void free_custom_io_context(AVIOContext* io) noexcept;
// An AVChapter made by hand (add_chapter) before a context owns it: its
// metadata, then itself.
void free_chapter(AVChapter* c) noexcept;

using AVFramePtr = AvPtr<AVFrame, av_frame_free>;
using AVPacketPtr = AvPtr<AVPacket, av_packet_free>;
using AVCodecContextPtr = AvPtr<AVCodecContext, avcodec_free_context>;
using AVCodecParametersPtr = AvPtr<AVCodecParameters, avcodec_parameters_free>;
using AVBufferRefPtr = AvPtr<AVBufferRef, av_buffer_unref>;
using AVBufferPoolPtr = AvPtr<AVBufferPool, av_buffer_pool_uninit>;
using AVDictionaryPtr = AvPtr<AVDictionary, av_dict_free>;
using SwsContextPtr = AvPtr<SwsContext, sws_freeContext>;
// Demuxing: avformat_open_input's context.
using AVInputFormatContextPtr = AvPtr<AVFormatContext, avformat_close_input>;
// Muxing: avformat_alloc_output_context2's context.
using AVOutputFormatContextPtr = AvPtr<AVFormatContext, free_output_format_context>;
using AVIOContextPtr = AvPtr<AVIOContext, free_custom_io_context>;
using AVChapterPtr = AvPtr<AVChapter, free_chapter>;

// Allocate, throwing std::bad_alloc on failure.
AVFramePtr make_frame();
AVPacketPtr make_packet();

// Lends an owned dictionary to an FFmpeg call that takes AVDictionary** (and
// may consume or replace it), and owns what the call leaves, even when fn throws:
//   with_dict(opts, [&](AVDictionary** d) { return avcodec_open2(ctx, codec, d); })
template <class Fn>
auto with_dict(AVDictionaryPtr& dict, Fn&& fn) {
  struct Lent {
    AVDictionaryPtr& owner;
    AVDictionary* raw;
    ~Lent() { owner.reset(raw); }
  } lent{dict, dict.release()};
  return fn(&lent.raw);
}

}  // namespace streamblur::io
