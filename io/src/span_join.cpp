#include "streamblur/io/span_join.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>

extern "C" {
#include <libavformat/avformat.h>
#include <libavutil/mathematics.h>
}

#include "open_input.hpp"
#include "streamblur/io/av_error.hpp"

namespace streamblur::io {
namespace {

// What a spooled packet keeps besides its data.
struct SpooledHeader {
  int64_t pts, dts, duration;
  int32_t flags, size;
};

std::FILE* unnamed_file(const std::string& folder) {
#ifdef O_TMPFILE
  const int fd = ::open(folder.empty() ? "." : folder.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
  if (fd >= 0) {
    if (std::FILE* f = ::fdopen(fd, "w+b")) return f;
    ::close(fd);
  }
#endif
  return std::tmpfile();
}

}  // namespace

PacketSpool::PacketSpool(const std::string& folder) : file_(unnamed_file(folder)) {
  if (!file_)
    throw std::runtime_error("cannot make a temporary file for a span's packets: " + std::string(std::strerror(errno)));
}

std::unique_ptr<PacketSpool> PacketSpool::create(const std::string& path) {
  const int fd = ::open(path.c_str(), O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0600);
  std::FILE* f = fd >= 0 ? ::fdopen(fd, "w+b") : nullptr;
  if (!f) {
    const int err = errno;
    if (fd >= 0) ::close(fd);
    throw std::runtime_error("cannot make the span file '" + path + "': " + std::strerror(err));
  }
  return std::unique_ptr<PacketSpool>(new PacketSpool(f, Named{}));
}

std::unique_ptr<PacketSpool> PacketSpool::open(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) throw std::runtime_error("cannot read the span file '" + path + "': " + std::strerror(errno));
  return std::unique_ptr<PacketSpool>(new PacketSpool(f, Named{}));
}

PacketSpool::~PacketSpool() {
  if (file_) std::fclose(file_);
}

void PacketSpool::append(const AVPacket& p) {
  if (reading_) throw std::logic_error("PacketSpool::append after next()");
  const SpooledHeader h{p.pts, p.dts, p.duration, p.flags, p.size};
  if (std::fwrite(&h, sizeof h, 1, file_) != 1 ||
      (p.size > 0 && std::fwrite(p.data, static_cast<std::size_t>(p.size), 1, file_) != 1))
    throw std::runtime_error("cannot write a span's packets to its temporary file: " + std::string(std::strerror(errno)));
  ++count_;
}

bool PacketSpool::next(AVPacket& p) {
  if (!reading_) {
    reading_ = true;
    if (std::fflush(file_) != 0 || std::fseek(file_, 0, SEEK_SET) != 0)
      throw std::runtime_error("cannot read back a span's packets: " + std::string(std::strerror(errno)));
  }
  SpooledHeader h{};
  if (std::fread(&h, sizeof h, 1, file_) != 1) return false;
  av_packet_unref(&p);
  if (h.size < 0 || av_new_packet(&p, h.size) < 0)
    throw std::runtime_error("a span's spooled packet cannot be read back");
  if (h.size > 0 && std::fread(p.data, static_cast<std::size_t>(h.size), 1, file_) != 1)
    throw std::runtime_error("a span's temporary file ends inside a packet");
  p.pts = h.pts;
  p.dts = h.dts;
  p.duration = h.duration;
  p.flags = h.flags;
  return true;
}

namespace {

// EncodedVideo as bytes: a header of fixed fields, then the extradata and
// the side data, each after its size.
constexpr uint32_t kEncodedMagic = 0x53424556;  // "SBEV"
struct EncodedHeader {
  uint32_t magic = kEncodedMagic;
  int32_t codec_type, codec_id, format, profile, level, width, height, field_order, color_range, color_primaries,
      color_trc, color_space, chroma_location, video_delay, bits_per_coded_sample, bits_per_raw_sample;
  uint32_t codec_tag;
  int64_t bit_rate;
  AVRational sample_aspect_ratio, time_base;
};

void put_bytes(std::string& out, const void* data, std::size_t size) {
  const auto n = static_cast<uint64_t>(size);
  out.append(reinterpret_cast<const char*>(&n), sizeof n);
  out.append(static_cast<const char*>(data), size);
}

// The next sized block of `in` from `at`.
std::string take_bytes(const std::string& in, std::size_t& at) {
  uint64_t n = 0;
  if (in.size() - at < sizeof n) throw std::runtime_error("a span's encoder parameters are cut short");
  std::memcpy(&n, in.data() + at, sizeof n);
  at += sizeof n;
  if (in.size() - at < n) throw std::runtime_error("a span's encoder parameters are cut short");
  std::string b = in.substr(at, n);
  at += n;
  return b;
}

}  // namespace

std::string encoded_video_bytes(const EncodedVideo& v) {
  const AVCodecParameters& p = *v.par;
  const EncodedHeader h{kEncodedMagic, p.codec_type, p.codec_id, p.format, p.profile, p.level, p.width, p.height,
                        p.field_order, p.color_range, p.color_primaries, p.color_trc, p.color_space,
                        p.chroma_location, p.video_delay, p.bits_per_coded_sample, p.bits_per_raw_sample,
                        p.codec_tag, p.bit_rate, p.sample_aspect_ratio, v.time_base};
  std::string out(reinterpret_cast<const char*>(&h), sizeof h);
  put_bytes(out, p.extradata, p.extradata_size > 0 ? static_cast<std::size_t>(p.extradata_size) : 0);
  put_bytes(out, v.mastering_display.data(), v.mastering_display.size());
  put_bytes(out, v.content_light.data(), v.content_light.size());
  return out;
}

EncodedVideo encoded_video_of(const std::string& in) {
  EncodedHeader h{};
  if (in.size() < sizeof h) throw std::runtime_error("a span's encoder parameters are cut short");
  std::memcpy(&h, in.data(), sizeof h);
  if (h.magic != kEncodedMagic) throw std::runtime_error("these bytes are not a span's encoder parameters");
  EncodedVideo v;
  v.par.reset(avcodec_parameters_alloc());
  if (!v.par) throw std::bad_alloc();
  AVCodecParameters& p = *v.par;
  p.codec_type = static_cast<AVMediaType>(h.codec_type);
  p.codec_id = static_cast<AVCodecID>(h.codec_id);
  p.format = h.format;
  p.profile = h.profile;
  p.level = h.level;
  p.width = h.width;
  p.height = h.height;
  p.field_order = static_cast<AVFieldOrder>(h.field_order);
  p.color_range = static_cast<AVColorRange>(h.color_range);
  p.color_primaries = static_cast<AVColorPrimaries>(h.color_primaries);
  p.color_trc = static_cast<AVColorTransferCharacteristic>(h.color_trc);
  p.color_space = static_cast<AVColorSpace>(h.color_space);
  p.chroma_location = static_cast<AVChromaLocation>(h.chroma_location);
  p.video_delay = h.video_delay;
  p.bits_per_coded_sample = h.bits_per_coded_sample;
  p.bits_per_raw_sample = h.bits_per_raw_sample;
  p.codec_tag = h.codec_tag;
  p.bit_rate = h.bit_rate;
  p.sample_aspect_ratio = h.sample_aspect_ratio;
  v.time_base = h.time_base;
  std::size_t at = sizeof h;
  const std::string extradata = take_bytes(in, at);
  if (!extradata.empty()) {
    p.extradata = static_cast<uint8_t*>(av_mallocz(extradata.size() + AV_INPUT_BUFFER_PADDING_SIZE));
    if (!p.extradata) throw std::bad_alloc();
    std::memcpy(p.extradata, extradata.data(), extradata.size());
    p.extradata_size = static_cast<int>(extradata.size());
  }
  const std::string md = take_bytes(in, at), cl = take_bytes(in, at);
  v.mastering_display.assign(md.begin(), md.end());
  v.content_light.assign(cl.begin(), cl.end());
  return v;
}

namespace {

// The input's packets of every stream but the video one, in file order,
// over a CopyWindow: from the video keyframe at or before its start (where
// MediaReader seeks), until every other stream has shown a packet at or past
// its end, a packet lies a second past it, or the input ends.
class OtherStreams {
 public:
  OtherStreams(const std::string& input, int video_index, const CopyWindow& window)
      : fmt_(open_input_format(input)), video_(video_index), w_(window), passed_(fmt_->nb_streams, false) {
    const int64_t origin = fmt_->start_time != AV_NOPTS_VALUE ? fmt_->start_time : 0;
    if (w_.start != AV_NOPTS_VALUE && w_.start > origin)
      av_seek_frame(fmt_.get(), video_, av_rescale_q(w_.start, AV_TIME_BASE_Q, fmt_->streams[video_]->time_base),
                    AVSEEK_FLAG_BACKWARD);  // where it cannot seek, the packets before the start are dropped
    passed_[static_cast<std::size_t>(video_)] = true;
  }
  // The next such packet, shifted, or null at the end.
  AVPacket* next() {
    while (!all_passed()) {
      av_packet_unref(packet_.get());
      const int rc = av_read_frame(fmt_.get(), packet_.get());
      if (rc == AVERROR_EOF) return nullptr;
      if (rc < 0) throw AVError("cannot read '" + std::string(fmt_->url) + "' for its other streams", rc);
      const int64_t t = time_of(*packet_);
      if (w_.end != AV_NOPTS_VALUE && t != AV_NOPTS_VALUE && t >= w_.end + AV_TIME_BASE) return nullptr;
      if (packet_->stream_index == video_ || !admit(t)) continue;
      shift(*packet_);
      return packet_.get();
    }
    return nullptr;
  }
  AVRational time_base(const AVPacket& p) const { return fmt_->streams[p.stream_index]->time_base; }

 private:
  int64_t time_of(const AVPacket& p) const {
    const int64_t t = p.pts != AV_NOPTS_VALUE ? p.pts : p.dts;
    return t == AV_NOPTS_VALUE ? t : av_rescale_q(t, time_base(p), AV_TIME_BASE_Q);
  }
  bool admit(int64_t t) {
    if (t == AV_NOPTS_VALUE) return true;
    if (w_.start != AV_NOPTS_VALUE && t < w_.start) return false;
    if (w_.end != AV_NOPTS_VALUE && t >= w_.end) {
      passed_[static_cast<std::size_t>(packet_->stream_index)] = true;
      return false;
    }
    return true;
  }
  void shift(AVPacket& p) const {
    if (w_.shift == 0) return;
    const int64_t d = av_rescale_q(w_.shift, AV_TIME_BASE_Q, time_base(p));
    if (p.pts != AV_NOPTS_VALUE) p.pts -= d;
    if (p.dts != AV_NOPTS_VALUE) p.dts -= d;
  }
  bool all_passed() const {
    return w_.end != AV_NOPTS_VALUE && std::all_of(passed_.begin(), passed_.end(), [](bool b) { return b; });
  }

  AVInputFormatContextPtr fmt_;
  int video_;
  CopyWindow w_;
  std::vector<bool> passed_;  // per stream: a packet at or past the end was seen (the video's from the start)
  AVPacketPtr packet_ = make_packet();
};

int64_t decode_time(const AVPacket& p) { return p.dts != AV_NOPTS_VALUE ? p.dts : p.pts; }

}  // namespace

SpanJoinStats join_spans(const std::string& input, const InputStreams& streams, const EncodedVideo& video,
                         const std::vector<PacketSpool*>& spools, const std::string& url,
                         const EncoderOptions& options, const CopyWindow& window) {
  MediaWriter writer(url, streams, video, options);
  OtherStreams other(input, streams.video_index, window);
  SpanJoinStats stats;
  AVPacketPtr v = make_packet();
  std::size_t span = 0;
  int64_t last_dts = AV_NOPTS_VALUE;
  // The next video packet in the spools' order, or false after the last.
  auto next_video = [&]() {
    for (; span < spools.size(); ++span)
      if (spools[span]->next(*v)) return true;
    return false;
  };
  bool have_video = next_video();
  AVPacket* o = other.next();
  while (have_video || o) {
    const bool video_first =
        have_video && (!o || decode_time(*o) == AV_NOPTS_VALUE ||
                       av_compare_ts(decode_time(*v), video.time_base, decode_time(*o), other.time_base(*o)) <= 0);
    if (!video_first) {
      writer.write_passthrough(*o);
      ++stats.copied_packets;
      o = other.next();
      continue;
    }
    const int64_t t = decode_time(*v);
    if (t != AV_NOPTS_VALUE && last_dts != AV_NOPTS_VALUE && t <= last_dts)
      throw std::runtime_error("span " + std::to_string(span + 1) + "'s video packets do not follow span " +
                               std::to_string(span) + "'s (decode time " + std::to_string(t) + " after " +
                               std::to_string(last_dts) + ")");
    if (t != AV_NOPTS_VALUE) last_dts = t;
    writer.write_video_packet(*v);
    ++stats.video_packets;
    have_video = next_video();
  }
  writer.finish();
  return stats;
}

}  // namespace streamblur::io
