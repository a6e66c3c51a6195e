#pragma once
// Demux + decode of the best video stream of any input FFmpeg opens. Packets of
// every other stream are kept, in file order, for stream copy.
#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "streamblur/io/av_ptr.hpp"

namespace streamblur::io {

struct VideoInfo {
  int width = 0;
  int height = 0;
  AVPixelFormat pix_fmt = AV_PIX_FMT_NONE;
  AVRational time_base{0, 1};       // of the input video stream; frame pts are in it
  AVRational frame_rate{0, 1};      // avg_frame_rate (or r_frame_rate), may be 0/1
  AVRational sample_aspect_ratio{0, 1};
  int64_t frame_count_estimate = 0; // nb_frames or duration*rate; 0 when unknown
  double duration_seconds = 0.0;    // 0 when unknown
  std::string codec_name;
  bool hw_decode = false;           // frames come from a hardware decoder (AV_PIX_FMT_CUDA, in device memory)
  std::string hw_note;              // why hardware decoding was asked for but not set up ("" otherwise)
};

// One decoded video frame plus the packets of other streams demuxed before it.
struct DecodedFrame {
  AVFramePtr frame;                        // pts = best_effort_timestamp, in VideoInfo::time_base
  std::vector<AVPacketPtr> passthrough;    // stream_index is the INPUT stream index
};

// Asks for hardware decoding once the video stream is known, before the
// decoder opens: returns a hardware device context (a new reference, e.g.
// from make_cuda_device_context) or nullptr to decode on the CPU. It may
// throw to fail the open.
using HwDeviceProvider = std::function<AVBufferRefPtr(const AVCodecParameters& stream, const AVCodec& decoder)>;

struct ReaderOptions {
  int decoder_threads = 0;  // 0 = FFmpeg's automatic choice (frame + slice threads)
  HwDeviceProvider hw_device;  // empty: CPU decoding
  int extra_hw_frames = 8;     // decoder surfaces beyond its own references (frames the caller holds at once)
  // Read through this instead of opening the path (the path then only names
  // the input in messages): bytes in memory, a pipe, ... The caller keeps it
  // alive while the reader lives and frees it afterwards.
  AVIOContext* custom_io = nullptr;
  // Where warnings about damaged input go (one line each, "warning: ..."); empty: stderr.
  std::function<void(const std::string&)> warn;
};

class MediaReader {
 public:
  // Throws AVError / std::runtime_error naming the path: cannot open, not media,
  // no video stream, no decoder.
  explicit MediaReader(const std::string& path, ReaderOptions options = {});
  ~MediaReader();
  MediaReader(const MediaReader&) = delete;
  MediaReader& operator=(const MediaReader&) = delete;

  const VideoInfo& video() const noexcept;
  const AVFormatContext* format_context() const noexcept;
  int video_stream_index() const noexcept;

  // Next decoded frame; false at end of stream (decoder drained). Corrupt or
  // truncated data: the bad part is skipped, one warning goes to stderr
  // (warnings() counts them) and decoding goes on with what is there.
  bool read(DecodedFrame& out);

  // Packets of other streams read after the last video frame (call after read() returned false).
  std::vector<AVPacketPtr> take_remaining_passthrough();

  // Makes read() return false from the next call on (Ctrl-C); thread-safe.
  void request_stop() noexcept;
  int warnings() const noexcept;
  // Device memory of the hardware decoder's surfaces (0 for CPU decoding, or
  // before the first frame); see hw_decoder_surface_bytes.
  std::size_t hw_surface_bytes() const noexcept;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace streamblur::io
