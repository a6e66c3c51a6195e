#pragma once
// The join of a segmented run (PipelineOptions::segments): each span's
// encoded video packets are spooled as its encoder makes them, and the
// spools, one after another, become the output's video stream beside the
// input's other streams, copied once over the whole input.
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

extern "C" {
#include <libavutil/avutil.h>
}

#include "streamblur/io/av_ptr.hpp"
#include "streamblur/io/reader.hpp"
#include "streamblur/io/writer.hpp"

namespace streamblur::io {

// Encoded packets in an unnamed temporary file (O_TMPFILE) in a given
// folder, or, where that folder's filesystem has none, in the system's
// (tmpfile): nothing of it outlives the process, however it ends. Each
// packet keeps its data, timestamps, duration and flags (not its side data).
class PacketSpool {
 public:
  explicit PacketSpool(const std::string& folder);
  // A spool in a named file instead, for a span run in another process
  // (streamblur.ray): create() makes `path`, which must not exist yet
  // (std::runtime_error otherwise); open() reads one written so. The file
  // stays when the spool is destroyed: its caller removes it.
  static std::unique_ptr<PacketSpool> create(const std::string& path);
  static std::unique_ptr<PacketSpool> open(const std::string& path);
  ~PacketSpool();
  PacketSpool(const PacketSpool&) = delete;
  PacketSpool& operator=(const PacketSpool&) = delete;

  // Appends `packet` (from one thread at a time). Throws std::runtime_error
  // when the spool cannot be written (a full disk).
  void append(const AVPacket& packet);
  // The packets in the order appended, from the first: false after the last.
  bool next(AVPacket& packet);
  int64_t packets() const noexcept { return count_; }

 private:
  struct Named {};
  PacketSpool(std::FILE* file, Named) : file_(file) {}

  std::FILE* file_ = nullptr;
  int64_t count_ = 0;
  bool reading_ = false;
};

// An encoder's parameters (EncodedVideo) as bytes and back, for a span
// encoded in another process: every field the join's video stream takes.
// encoded_video_of throws std::runtime_error for bytes that are not such.
std::string encoded_video_bytes(const EncodedVideo& video);
EncodedVideo encoded_video_of(const std::string& bytes);

// The part of the input's other streams that a trimmed run keeps, as
// MediaReader cuts them for a ReadSpan with a start and an end: packets timed
// (pts, else dts) in [start, end) on the input's clock, AV_TIME_BASE units
// (NOPTS: open; a packet with neither time is kept), their timestamps moved
// back by `shift`. The default keeps everything as it is.
struct CopyWindow {
  int64_t start = AV_NOPTS_VALUE, end = AV_NOPTS_VALUE;
  int64_t shift = 0;
};

// What join_spans wrote.
struct SpanJoinStats {
  int64_t video_packets = 0;
  int64_t copied_packets = 0;  // of the input's other streams
};

// Writes `url` (path: the name in messages, EncoderOptions::display_name):
// the video stream `video` with the spools' packets in order, every other
// stream of `streams` (the input's, from a MediaReader of `input` opened with
// the run's start and duration) copied from `input` over `window`, packets
// interleaved by decode time. Throws
// std::runtime_error when a span's packets do not follow the one before
// (decode times going back), AVError for a read or write failure.
SpanJoinStats join_spans(const std::string& input, const InputStreams& streams, const EncodedVideo& video,
                         const std::vector<PacketSpool*>& spools, const std::string& url,
                         const EncoderOptions& options, const CopyWindow& window = {});

}  // namespace streamblur::io
