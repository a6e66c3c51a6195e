#pragma once
// Encode + mux. The container comes from the output's extension (or format_name);
// every non-video stream of the input is stream-copied packet for packet.
#include <cstdint>
#include <functional>
#include <memory>
#include <map>
#include <string>
#include <vector>

#include "streamblur/io/av_ptr.hpp"
#include "streamblur/io/reader.hpp"

namespace streamblur::io {

// Which encoder MediaWriter uses and how, and where its notes go.
struct EncoderOptions {
  std::string codec = "libx264";           // any FFmpeg encoder by name
  int crf = -1;                            // -1: encoder default (libx264 gets 18 when unset)
  std::string preset;                      // empty: encoder default
  std::map<std::string, std::string> options;  // --encoder-opt key=value, passed to the encoder
  std::string format_name;                 // empty: guess from the path's extension
  // --output-opt key=value: options of the muxer and of the output's
  // protocol (movflags, pkt_size, listen, ...); one that neither takes is an
  // error before anything is written.
  std::map<std::string, std::string> format_options;
  int encoder_threads = 0;                 // 0 = automatic
  std::string display_name;                // the name messages give the output (e.g. the final name
                                           // while a temporary file is written); empty: the path
  std::function<void(const std::string&)> note;  // notes (conversions, skipped streams); empty: stderr
  // When set, the encoded video packets go here instead of into a file (the
  // spans of a segmented run): nothing is written to the path, whose
  // container only decides how the encoder runs (global headers). Packet
  // timestamps are in MediaWriter::encoded_video().time_base; the callback
  // may keep the packet's data (av_packet_ref) and must not free it.
  std::function<void(const AVPacket&)> video_packets;
};

// What an encoder made of a video stream, for a writer that copies its
// packets (the join of a segmented run's spans): its parameters (extradata
// among them), its time base and the HDR metadata its stream carries.
struct EncodedVideo {
  AVCodecParametersPtr par;
  AVRational time_base{0, 1};
  std::vector<uint8_t> mastering_display;  // an AVMasteringDisplayMetadata, or empty
  std::vector<uint8_t> content_light;      // an AVContentLightMetadata, or empty
};

// Encodes filtered frames and muxes them with the input's other streams.
class MediaWriter {
 public:
  // Opens the output: one video stream encoded with `options`, using the
  // size, pixel format, colour range/matrix/primaries/transfer, chroma location and
  // sample aspect ratio of `first_frame` (the first frame that will be written),
  // the input video stream's time base (so every timestamp is kept) and frame
  // rate, plus a copy of every other stream of `input` the container can hold
  // (the others are skipped with a note on stderr), the container and stream
  // metadata, and the chapters (moved and cut to a trimmed read's span). When the encoder cannot take the frame's pixel format, frames
  // are converted with swscale to the encoder's closest format (note on stderr).
  // Throws AVError naming what failed (unknown encoder, unwritable path, ...).
  MediaWriter(const std::string& path, const InputStreams& input, const AVFrame& first_frame,
              const EncoderOptions& options);
  // The same output with no encoder: the video stream is `video`, its
  // packets given to write_video_packet (the join of a segmented run), the
  // other streams, metadata and chapters as above. options.codec is unused.
  MediaWriter(const std::string& path, const InputStreams& input, const EncodedVideo& video,
              const EncoderOptions& options);
  ~MediaWriter();  // closes the file if finish() was not called (no trailer)
  MediaWriter(const MediaWriter&) = delete;
  MediaWriter& operator=(const MediaWriter&) = delete;

  // frame->pts is in the input video stream's time base.
  void write_video(const AVFrame& frame);
  // packet->stream_index is the INPUT stream index; packets of skipped streams are dropped.
  void write_passthrough(AVPacket& packet);
  // An encoded video packet (the second constructor), its timestamps in the
  // EncodedVideo's time base. Takes the packet's reference.
  void write_video_packet(AVPacket& packet);
  // Flushes the encoder and writes the trailer.
  void finish();
  // What the encoder makes of the video stream (see EncodedVideo).
  EncodedVideo encoded_video() const;

  // Video frames written so far (write_video calls that returned).
  int64_t frames_written() const noexcept;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The video encoder a container gets when none is named, as ffmpeg picks it:
// the encoder of the container's own default video codec (libx264 for mp4,
// mkv and mov; libvpx-vp9 for webm; mpeg4 for avi; png for a .png), the
// container named by `format_name` or guessed from the path. Throws
// std::runtime_error when this FFmpeg build has no encoder for it, listing the
// encoders the container takes. An unknown container gets libx264 (opening
// the output then says what is wrong).
std::string default_video_encoder(const std::string& path, const std::string& format_name = {});

// Whether `path` is a URL of a protocol other than file: ("udp://...").
bool is_network_url(const std::string& path);
// The container an output is written in when no format is named, as ffmpeg
// guesses it, and for a network URL from its scheme as live streaming uses
// them: mpegts for udp, srt and tcp, rtp_mpegts for rtp, flv for rtmp(s).
// nullptr when neither the scheme nor the extension tells.
const AVOutputFormat* guess_output_format(const std::string& path);

}  // namespace streamblur::io
