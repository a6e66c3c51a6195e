#pragma once
// Demux + decode of the best video stream of any input FFmpeg opens. Packets of
// every other stream are kept, in file order, for stream copy.
#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "streamblur/io/av_ptr.hpp"

namespace streamblur::io {

// What the reader found out about the input's video stream.
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

// A part of the input, as ffmpeg's input-side -ss and -t and its -frames:v.
// Times are seconds from the input's start time (AVFormatContext::start_time,
// as ffmpeg counts -ss). Unset fields do not limit; with no field set the
// reader behaves as if there were no span.
//  - start: seek (av_seek_frame, AVSEEK_FLAG_BACKWARD, on the video stream) to
//    the keyframe at or before the start, decode forward and drop video frames
//    whose pts is before it; packets of other streams with a pts before it are
//    dropped too. When set, every timestamp handed out (frames and packets, in
//    each stream's time base) is shifted back by the start position, so the
//    output begins near 0 as ffmpeg's does.
//  - duration: video frames and other streams' packets with a pts at or after
//    start + duration are dropped (the span is [start, start + duration)).
//  - max_frames: after that many video frames read() returns false; the span
//    then ends where the next frame would have begun (its pts), or at the end
//    of the input when there is none.
// Other streams are cut at packet level (stream copy): a packet is kept when
// its pts (its dts when it has no pts) lies in the span; one with neither is kept.
//  - from_pts, until_pts: a window of video pts in the video stream's own time
//    base (a segmented run's spans, io::plan_spans), [from_pts, until_pts);
//    an unset end does not limit. It seeks and cuts as start and duration do,
//    but timestamps are handed out unshifted, as they are in the input, or
//    shifted back by pts_shift (AV_TIME_BASE units, as a start shifts them:
//    the span of a trimmed segmented run). Not together with start_seconds
//    or duration_seconds.
struct ReadSpan {
  std::optional<double> start_seconds{};     // >= 0
  std::optional<double> duration_seconds{};  // > 0
  std::optional<int64_t> max_frames{};       // >= 1
  std::optional<int64_t> from_pts{}, until_pts{};
  int64_t pts_shift = 0;                     // with from_pts or until_pts only
  bool active() const { return start_seconds || duration_seconds || max_frames || from_pts || until_pts; }
};

// Throws std::invalid_argument for a start that is negative (or not a
// number), a duration that is not more than 0, max_frames < 1, a pts window
// whose end is not after its start, or a pts window with a start or duration.
void check_span(const ReadSpan& span);

// How MediaReader opens and decodes its input.
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
  // Only this part of the input is read (see ReadSpan); the constructor
  // throws what check_span throws.
  ReadSpan span;
  // --input-opt key=value: options of the demuxer and of the input's
  // protocol (timeout, probesize, framerate, listen, ...); one that neither
  // takes is std::invalid_argument, before any frame is read.
  std::map<std::string, std::string> format_options;
};

// What an output takes of its input (MediaWriter): every stream (the video
// one, which is encoded, among them; the others are copied), the container's
// metadata and chapters, and how a trimmed read moved the timestamps.
// MediaReader::streams() describes what it reads; the pointers are the
// reader's (its demuxer's streams) and stay valid while it lives.
struct InputStreams {
  std::vector<const AVStream*> streams;  // in input order: codec parameters, time base, metadata, disposition
  int video_index = -1;                  // the one of `streams` that is encoded
  VideoInfo video;                       // its description (time base, frame rate, ...)
  const AVDictionary* metadata = nullptr;  // the container's
  std::vector<const AVChapter*> chapters;
  int64_t timestamp_shift = 0;           // taken off every timestamp, AV_TIME_BASE units (MediaReader's)
  int64_t span_end = AV_NOPTS_VALUE;     // the span's end on the shifted clock, or none (MediaReader's)
};

// Opens an input and decodes its best video stream frame by frame (see read()).
class MediaReader {
 public:
  // Throws AVError / std::runtime_error naming the path: cannot open, not media,
  // no video stream, no decoder. The message adds what is likely wrong where
  // it can tell: an empty file, an mp4/mov cut short (no 'moov' index).
  explicit MediaReader(const std::string& path, ReaderOptions options = {});
  ~MediaReader();
  MediaReader(const MediaReader&) = delete;
  MediaReader& operator=(const MediaReader&) = delete;

  // The video stream's description, the demuxer's context and the stream's index.
  const VideoInfo& video() const noexcept;
  const AVFormatContext* format_context() const noexcept;
  int video_stream_index() const noexcept;
  // What an output of this input copies of it (see InputStreams).
  InputStreams streams() const;

  // Next decoded frame; false at end of stream (decoder drained). Corrupt or
  // truncated data: the bad part is skipped, one warning goes to stderr
  // (warnings() counts them) and decoding goes on with what is there.
  bool read(DecodedFrame& out);

  // Packets of other streams read after the last video frame (call after read() returned false).
  // With a span: only those in the span, shifted like the rest.
  std::vector<AVPacketPtr> take_remaining_passthrough();

  // With ReadSpan::start_seconds: the shift subtracted from every timestamp
  // handed out, in AV_TIME_BASE units (the input's start time plus the start);
  // 0 otherwise. The writer moves chapters by it.
  int64_t timestamp_shift() const noexcept;
  // The span's end on the shifted clock (AV_TIME_BASE units) when a duration
  // fixes it, AV_NOPTS_VALUE otherwise.
  int64_t span_end() const noexcept;

  // Makes read() return false from the next call on (Ctrl-C); thread-safe.
  void request_stop() noexcept;
  // Warnings about damaged input so far.
  int warnings() const noexcept;
  // Device memory of the hardware decoder's surfaces (0 for CPU decoding, or
  // before the first frame); see hw_decoder_surface_bytes.
  std::size_t hw_surface_bytes() const noexcept;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace streamblur::io
