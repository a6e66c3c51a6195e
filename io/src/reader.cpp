#include "streamblur/io/reader.hpp"

extern "C" {
#include <libavutil/avutil.h>
#include <libavutil/imgutils.h>
#include <libavutil/pixdesc.h>
}

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <system_error>
#include <utility>

#include "streamblur/io/av_error.hpp"
#include "streamblur/io/hw_decode.hpp"
#include "open_input.hpp"

namespace streamblur::io {

namespace {

// Past this many consecutive failures of the same kind the input is treated as
// ended, so a file that fails forever cannot keep read() spinning.
constexpr int kMaxConsecutiveErrors = 64;
// Frame threads of a hardware decoder when the caller names none.
constexpr int kNvdecThreads = 4;
// Warnings past this many are counted but no longer printed.
constexpr int kMaxPrintedWarnings = 20;

std::string in_quotes(const std::string& path) { return "'" + path + "'"; }

// Whether `path` is an ISO BMFF file (mp4, mov, m4v, 3gp, ...: a run of
// top-level boxes, the first an 'ftyp' or one that QuickTime files start with)
// that holds no 'moov' box. 'moov' is the index the demuxer cannot do without,
// and muxers write it last, so a copy or a recording cut short lacks it; FFmpeg
// then logs "moov atom not found" and returns only AVERROR_INVALIDDATA.
bool iso_media_without_moov(const std::string& path) {
  std::error_code ec;
  const std::uintmax_t size = std::filesystem::file_size(path, ec);
  std::ifstream f(path, std::ios::binary);
  if (ec || !f) return false;
  auto big_endian = [](const unsigned char* b, int n) {
    std::uint64_t v = 0;
    for (int i = 0; i < n; ++i) v = v << 8 | b[i];
    return v;
  };
  std::uint64_t at = 0;
  for (int n = 0; at + 8 <= size; ++n) {
    if (n == 100000) return false;  // real files hold a handful of top-level boxes
    unsigned char h[16];
    f.seekg(static_cast<std::streamoff>(at));
    if (!f.read(reinterpret_cast<char*>(h), 8)) return false;
    const std::string type(reinterpret_cast<const char*>(h + 4), 4);
    if (type == "moov") return false;
    if (n == 0 && type != "ftyp" && type != "mdat" && type != "wide" && type != "free" && type != "skip") return false;
    std::uint64_t box = big_endian(h, 4);
    if (box == 1) {  // a 64-bit size follows the type
      if (!f.read(reinterpret_cast<char*>(h + 8), 8)) return true;  // cut inside the box header
      box = big_endian(h + 8, 8);
    } else if (box == 0) {
      box = size - at;  // the last box, to the end of the file
    }
    if (box < 8) return false;  // not a box: damaged, or not this format at all
    at += box;
  }
  return true;  // the boxes run to (or past) the end of the file without a 'moov'
}

// A damaged stream can carry colour tags outside FFmpeg's enums (colorspace
// 17, say); C++ may not even load such a value as the enum type. Read the raw
// int and replace what is out of range with "unspecified", once, here.
template <class E>
void clamp_enum(E& field, int count, E unspecified) {
  static_assert(sizeof(E) == sizeof(int), "FFmpeg's colour enums are ints");
  int v = 0;
  std::memcpy(&v, &field, sizeof v);
  if (v < 0 || v >= count) field = unspecified;
}

void clamp_colour_tags(AVFrame& f) {
  clamp_enum(f.color_range, AVCOL_RANGE_NB, AVCOL_RANGE_UNSPECIFIED);
  clamp_enum(f.colorspace, AVCOL_SPC_NB, AVCOL_SPC_UNSPECIFIED);
  clamp_enum(f.color_primaries, AVCOL_PRI_NB, AVCOL_PRI_UNSPECIFIED);
  clamp_enum(f.color_trc, AVCOL_TRC_NB, AVCOL_TRC_UNSPECIFIED);
  clamp_enum(f.chroma_location, AVCHROMA_LOC_NB, AVCHROMA_LOC_UNSPECIFIED);
}

// get_format for hardware decoding: the CUDA surface format when offered.
// FFmpeg calls it again without that format when the hwaccel cannot be set up
// for the stream (an unsupported profile, say); software frames follow then.
AVPixelFormat pick_cuda_format(AVCodecContext*, const AVPixelFormat* formats) {
  for (const AVPixelFormat* f = formats; *f != AV_PIX_FMT_NONE; ++f)
    if (*f == AV_PIX_FMT_CUDA) return *f;
  for (const AVPixelFormat* f = formats; *f != AV_PIX_FMT_NONE; ++f) {
    const AVPixFmtDescriptor* d = av_pix_fmt_desc_get(*f);
    if (d && !(d->flags & AV_PIX_FMT_FLAG_HWACCEL)) return *f;
  }
  return AV_PIX_FMT_NONE;
}

// Span checks (see ReadSpan): a start beyond this many seconds (about 31,700
// years) would overflow AV_TIME_BASE arithmetic.
constexpr double kMaxSpanSeconds = 1e12;

std::string seconds_text(double s) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%g", s);
  return buf;
}

}  // namespace

void check_span(const ReadSpan& span) {
  // 1e12 s is about 31,700 years: past any real timestamp, and well inside
  // the microsecond int64 that FFmpeg seeks with.
  const std::string range = " seconds (about 31,700 years)";
  if (span.start_seconds && !(std::isfinite(*span.start_seconds) && *span.start_seconds >= 0 &&
                              *span.start_seconds <= kMaxSpanSeconds))
    throw std::invalid_argument("the start time must be from 0 to at most " + seconds_text(kMaxSpanSeconds) + range +
                                ", got " + seconds_text(*span.start_seconds));
  if (span.duration_seconds && !(std::isfinite(*span.duration_seconds) && *span.duration_seconds > 0 &&
                                 *span.duration_seconds <= kMaxSpanSeconds))
    throw std::invalid_argument("the duration must be more than 0 and at most " + seconds_text(kMaxSpanSeconds) +
                                range + ", got " + seconds_text(*span.duration_seconds));
  if (span.max_frames && *span.max_frames < 1)
    throw std::invalid_argument("the frame limit must be at least 1, got " + std::to_string(*span.max_frames));
  if ((span.from_pts || span.until_pts) && (span.start_seconds || span.duration_seconds))
    throw std::invalid_argument("a window of video timestamps does not go with a start time or a duration");
  if (span.pts_shift != 0 && !span.from_pts && !span.until_pts)
    throw std::invalid_argument("a timestamp shift goes only with a window of video timestamps");
  if (span.from_pts && span.until_pts && *span.until_pts <= *span.from_pts)
    throw std::invalid_argument("the window of video timestamps must end after it begins, got " +
                                std::to_string(*span.from_pts) + " to " + std::to_string(*span.until_pts));
}

struct MediaReader::Impl {
  std::string path;
  ReaderOptions options;
  AVInputFormatContextPtr fmt;
  AVCodecContextPtr dec;
  int video_index = -1;
  VideoInfo info;

  AVPacketPtr packet = make_packet();
  AVFramePtr frame = make_frame();
  std::vector<AVPacketPtr> pending_passthrough;

  bool demux_eof = false;     // av_read_frame reported the end; NULL was sent to the decoder
  bool decoder_eof = false;   // the decoder returned AVERROR_EOF
  int consecutive_read_errors = 0;
  int64_t max_end_us = AV_NOPTS_VALUE;  // latest packet end seen, all streams, in AV_TIME_BASE
  int consecutive_decode_errors = 0;
  std::atomic<bool> stop{false};
  std::atomic<int> warning_count{0};

  // ReaderOptions::span, on the input's clock in AV_TIME_BASE units. While
  // trimming, pending_passthrough holds the other streams' packets that lie in
  // the span (as far as it is known) and are not handed out yet, unshifted.
  bool trimming = false;
  int64_t span_start = AV_NOPTS_VALUE;     // earlier frames and packets are dropped (NOPTS: no lower cut)
  int64_t span_end = AV_NOPTS_VALUE;       // later ones (at or after it) too (NOPTS: open, or not known yet)
  int64_t duration_end = AV_NOPTS_VALUE;   // the end a duration fixes (span_end may come earlier: max_frames)
  int64_t shift = 0;                       // subtracted from every timestamp handed out
  int64_t frames_kept = 0;
  bool span_over = false;                  // the video reached the end of the span
  int64_t origin = 0;                      // the input's start time
  int64_t seek_target = AV_NOPTS_VALUE;    // where the last successful seek aimed (NOPTS: none)
  int64_t seek_back = AV_TIME_BASE;        // how much further back the next retry aims
  bool check_seek = false;                 // the next decoded frame shows whether the seek went far enough
  bool await_keyframe = false;             // after a seek: video packets up to the first keyframe are skipped
  std::vector<bool> passed_end;            // per input stream: a packet at or after span_end was seen

  void warn(const std::string& what) {
    const int n = ++warning_count;
    std::string line;
    if (n <= kMaxPrintedWarnings)
      line = "warning: " + path + ": " + what + "; continuing";
    else if (n == kMaxPrintedWarnings + 1)
      line = "warning: " + path + ": more warnings follow, no longer printed; continuing";
    if (line.empty()) return;
    if (options.warn) options.warn(line);
    else std::fprintf(stderr, "%s\n", line.c_str());
  }

  void open();
  void setup_span();
  bool seek_to(int64_t target);
  bool retry_seek();
  int64_t packet_time(const AVPacket& p) const;
  void admit(AVPacketPtr packet);
  enum class Place { Keep, Drop, End, Reseek };
  Place place(const AVFrame& f);
  void shift_frame(AVFrame& f) const;
  std::vector<AVPacketPtr> release(int64_t before, bool all);
  void read_to_span_end();
  void note_packet_end(const AVPacket& p);
  void check_complete();
  void send_eof_to_decoder();
  bool read(DecodedFrame& out);
  void open_format();
  const AVCodec* select_video_stream();
  void open_decoder(const AVCodec* decoder);
  void describe_video(const AVCodec* decoder);
  enum class Delivery { Frame, Dropped, End };
  Delivery deliver(DecodedFrame& out);
  void note_decode_error(int rc);
  void feed_decoder();
};

AVInputFormatContextPtr open_input_format(const std::string& path, AVIOContext* custom_io,
                                          const std::map<std::string, std::string>& options) {
  AVFormatContext* raw = nullptr;
  if (custom_io) {
    raw = avformat_alloc_context();
    if (!raw) throw std::bad_alloc();
    raw->pb = custom_io;
    raw->flags |= AVFMT_FLAG_CUSTOM_IO;
  }
  // "-" is standard input, as ffmpeg's -i - (FFmpeg's own name for it is pipe:0).
  const std::string url = custom_io ? "" : path == "-" ? "pipe:0" : path;
  // On failure avformat_open_input frees the context (not a custom AVIOContext).
  AVDictionary* given = nullptr;
  for (const auto& [k, v] : options) av_dict_set(&given, k.c_str(), v.c_str(), 0);
  int rc = avformat_open_input(&raw, url.c_str(), nullptr, &given);
  std::string unknown;
  if (const AVDictionaryEntry* e = av_dict_get(given, "", nullptr, AV_DICT_IGNORE_SUFFIX)) unknown = e->key;
  av_dict_free(&given);
  if (rc >= 0 && !unknown.empty()) {
    avformat_close_input(&raw);
    throw std::invalid_argument("input option '" + unknown + "' is not an option of the input's demuxer or protocol");
  }
  if (rc < 0) {
    std::error_code ec;
    std::string ctx = "cannot open input " + in_quotes(path);
    if (std::filesystem::is_regular_file(path, ec) && std::filesystem::file_size(path, ec) == 0 && !ec)
      ctx += " (the file is empty)";
    else if (rc == AVERROR_INVALIDDATA && !custom_io && iso_media_without_moov(path))
      ctx += " (the file looks truncated: no 'moov' index; was it copied or recorded completely?)";
    throw_av_error(rc, "avformat_open_input", __FILE__, __LINE__, ctx);
  }
  AVInputFormatContextPtr fmt(raw);
  // FFmpeg's tty demuxer turns any .txt/.nfo file into "video" of rendered
  // ANSI text; for a blur tool that is a user mistake, not an input.
  if (std::strcmp(fmt->iformat->name, "tty") == 0)
    throw AVError("cannot open input " + in_quotes(path) + ": a text file, not video", AVERROR_INVALIDDATA);

  AV_CHECK_CTX(avformat_find_stream_info(fmt.get(), nullptr), "cannot read stream information of " + in_quotes(path));
  return fmt;
}

// The demuxer, opened and probed.
void MediaReader::Impl::open_format() { fmt = open_input_format(path, options.custom_io, options.format_options); }

// The best video stream (video_index) and its decoder.
const AVCodec* MediaReader::Impl::select_video_stream() {
  const AVCodec* decoder = nullptr;
  const int rc = av_find_best_stream(fmt.get(), AVMEDIA_TYPE_VIDEO, -1, -1, &decoder, 0);
  if (rc == AVERROR_STREAM_NOT_FOUND)
    throw AVError("no video stream in " + in_quotes(path) + " (" + av_error_string(rc) + ")", rc);
  if (rc == AVERROR_DECODER_NOT_FOUND) {
    const int idx = av_find_best_stream(fmt.get(), AVMEDIA_TYPE_VIDEO, -1, -1, nullptr, 0);
    const char* name = idx >= 0 ? avcodec_get_name(fmt->streams[idx]->codecpar->codec_id) : "?";
    throw AVError("no decoder for video codec '" + std::string(name) + "' of " + in_quotes(path) + " (" +
                      av_error_string(rc) + ")",
                  rc);
  }
  if (rc < 0) throw_av_error(rc, "av_find_best_stream", __FILE__, __LINE__, "cannot select the video stream of " + in_quotes(path));
  video_index = rc;
  return decoder;
}

// The decoder, on NVDEC where options.hw_device gives a device and it opens
// there, else on the CPU (info.hw_note says why).
void MediaReader::Impl::open_decoder(const AVCodec* decoder) {
  AVStream* st = fmt->streams[video_index];
  AVBufferRefPtr hw;
  if (options.hw_device) hw = options.hw_device(*st->codecpar, *decoder);
  auto open_decoder = [&](AVBufferRef* hw_device) {
    dec.reset(avcodec_alloc_context3(decoder));
    if (!dec) throw std::bad_alloc();
    AV_CHECK_CTX(avcodec_parameters_to_context(dec.get(), st->codecpar),
                 "cannot set up the " + std::string(decoder->name) + " decoder for " + in_quotes(path));
    dec->pkt_timebase = st->time_base;
    if (hw_device) {
      dec->hw_device_ctx = av_buffer_ref(hw_device);
      if (!dec->hw_device_ctx) throw std::bad_alloc();
      dec->get_format = pick_cuda_format;
      // The surfaces the caller holds at once (frames in flight) come on top
      // of the decoder's own references, so decoding never waits for them.
      dec->extra_hw_frames = options.extra_hw_frames;
      // NVDEC decodes the pictures, but FFmpeg parses slices and manages
      // references on the CPU; a few frame threads keep several pictures in
      // the engine at once (FFmpeg's nvdec is async-safe). Each thread adds one
      // surface to the pool (FFmpeg counts them in).
      dec->thread_count = options.decoder_threads > 0 ? options.decoder_threads : kNvdecThreads;
      dec->thread_type = FF_THREAD_FRAME;
    } else {
      dec->thread_count = options.decoder_threads;
      dec->thread_type = FF_THREAD_FRAME | FF_THREAD_SLICE;
    }
    return avcodec_open2(dec.get(), decoder, nullptr);
  };
  int rc = open_decoder(hw.get());
  if (rc < 0 && hw) {
    info.hw_note = "the NVDEC decoder could not be opened (" + av_error_string(rc) + ")";
    hw.reset();
    rc = open_decoder(nullptr);
  }
  if (rc < 0)
    throw_av_error(rc, "avcodec_open2", __FILE__, __LINE__,
                   "cannot open the " + std::string(decoder->name) + " decoder for " + in_quotes(path));
  info.hw_decode = hw != nullptr;
}

// info from the stream and the opened decoder; throws where the header gives
// no usable picture size or pixel format.
void MediaReader::Impl::describe_video(const AVCodec* decoder) {
  AVStream* st = fmt->streams[video_index];
  const bool hw = info.hw_decode;
  info.width = st->codecpar->width;
  info.height = st->codecpar->height;
  // With a hwaccel the context's format becomes AV_PIX_FMT_CUDA once decoding
  // starts; the stream's own format is what the CPU decoder would give.
  info.pix_fmt = hw ? static_cast<AVPixelFormat>(st->codecpar->format) : dec->pix_fmt;
  info.time_base = st->time_base;
  if (st->avg_frame_rate.num > 0 && st->avg_frame_rate.den > 0)
    info.frame_rate = st->avg_frame_rate;
  else if (st->r_frame_rate.num > 0 && st->r_frame_rate.den > 0)
    info.frame_rate = st->r_frame_rate;
  info.sample_aspect_ratio = av_guess_sample_aspect_ratio(fmt.get(), st, nullptr);
  if (st->duration != AV_NOPTS_VALUE && st->duration > 0)
    info.duration_seconds = static_cast<double>(st->duration) * av_q2d(st->time_base);
  else if (fmt->duration != AV_NOPTS_VALUE && fmt->duration > 0)
    info.duration_seconds = static_cast<double>(fmt->duration) / AV_TIME_BASE;
  if (st->nb_frames > 0)
    info.frame_count_estimate = st->nb_frames;
  else if (info.duration_seconds > 0 && info.frame_rate.num > 0)
    info.frame_count_estimate = static_cast<int64_t>(std::llround(info.duration_seconds * av_q2d(info.frame_rate)));
  info.codec_name = decoder->name;
  // A damaged header can leave the decoder without a size or pixel format;
  // nothing downstream can work without them (swscale asserts on "none").
  if (info.width <= 0 || info.height <= 0 ||
      av_image_check_size(static_cast<unsigned>(info.width), static_cast<unsigned>(info.height), 0, nullptr) < 0)
    throw AVError("cannot decode the video of " + in_quotes(path) + ": no valid picture size (" +
                      std::to_string(info.width) + "x" + std::to_string(info.height) + "; damaged or truncated header?)",
                  AVERROR_INVALIDDATA);
  if (info.pix_fmt == AV_PIX_FMT_NONE || !av_pix_fmt_desc_get(info.pix_fmt))
    throw AVError("cannot decode the video of " + in_quotes(path) +
                      ": the decoder reports no pixel format (damaged or truncated header?)",
                  AVERROR_INVALIDDATA);
}

void MediaReader::Impl::open() {
  open_format();
  const AVCodec* decoder = select_video_stream();
  open_decoder(decoder);
  describe_video(decoder);
  setup_span();
}

// ---- the span (ReadSpan): where it lies on the input's clock, and the seek.

void MediaReader::Impl::setup_span() {
  const ReadSpan& span = options.span;
  check_span(span);
  if (!span.active()) return;
  trimming = true;
  passed_end.assign(fmt->nb_streams, false);
  origin = fmt->start_time != AV_NOPTS_VALUE ? fmt->start_time : 0;
  const auto us = [](double s) { return static_cast<int64_t>(std::llround(s * AV_TIME_BASE)); };
  if (span.start_seconds) {
    span_start = origin + us(*span.start_seconds);
    shift = span_start;
  }
  if (span.duration_seconds)
    span_end = duration_end = (span_start != AV_NOPTS_VALUE ? span_start : origin) + us(*span.duration_seconds);
  // A pts window, unshifted. Rescaling keeps the order of pts that are at
  // least a microsecond apart, as any two frames' are, so the cuts on the
  // microsecond clock fall between the same frames.
  const AVRational tb = fmt->streams[video_index]->time_base;
  if (span.from_pts) span_start = av_rescale_q(*span.from_pts, tb, AV_TIME_BASE_Q);
  if (span.until_pts) span_end = duration_end = av_rescale_q(*span.until_pts, tb, AV_TIME_BASE_Q);
  if (span.from_pts || span.until_pts) shift = span.pts_shift;
  if (span_start != AV_NOPTS_VALUE && span_start > origin) seek_to(span_start);
}

// Seeks to the video keyframe at or before `target` (input clock). False when
// the input cannot seek there (a pipe, some formats): reading then goes on
// from where it is, and frames before the start are dropped all the same.
bool MediaReader::Impl::seek_to(int64_t target) {
  const AVRational tb = fmt->streams[video_index]->time_base;
  if (av_seek_frame(fmt.get(), video_index, av_rescale_q(target, AV_TIME_BASE_Q, tb), AVSEEK_FLAG_BACKWARD) < 0)
    return false;
  avcodec_flush_buffers(dec.get());
  pending_passthrough.clear();  // read again after the seek
  demux_eof = decoder_eof = false;
  seek_target = target;
  check_seek = true;
  // Some demuxers (MPEG-TS) land on any packet; decoding from one that is not
  // a keyframe gives frames built on missing references. From before the
  // input's start there is nothing to skip (and a stream whose container marks
  // no keyframes at all still decodes from there, after the retries).
  await_keyframe = target > origin;
  return true;
}

// The first frame after a seek shows after the start (or none comes at all:
// decoders drop pictures whose references were skipped): the place found (by
// decode time with frames reordered, or by a search that is not keyframe
// exact, as in MPEG-TS) lies past frames the span needs. Seeks further back,
// doubling the step; past the input's start it aims a second before it, which
// demuxers take as their beginning, and retries no more. False when it did not seek.
bool MediaReader::Impl::retry_seek() {
  if (!check_seek) return false;
  check_seek = false;
  if (seek_target == AV_NOPTS_VALUE || seek_target <= origin) return false;
  int64_t target = seek_target - seek_back;
  if (target <= origin) target = origin - AV_TIME_BASE;
  seek_back *= 2;
  return seek_to(target);
}

// A packet's time on the input clock: its pts, else its dts; NOPTS when it has neither.
int64_t MediaReader::Impl::packet_time(const AVPacket& p) const {
  const int64_t t = p.pts != AV_NOPTS_VALUE ? p.pts : p.dts;
  if (t == AV_NOPTS_VALUE) return AV_NOPTS_VALUE;
  return av_rescale_q(t, fmt->streams[p.stream_index]->time_base, AV_TIME_BASE_Q);
}

// Keeps another stream's packet when it lies in the span (as far as it is known).
void MediaReader::Impl::admit(AVPacketPtr packet) {
  const int64_t t = packet_time(*packet);
  if (t != AV_NOPTS_VALUE) {
    if (span_start != AV_NOPTS_VALUE && t < span_start) return;
    if (span_end != AV_NOPTS_VALUE && t >= span_end) {
      passed_end[packet->stream_index] = true;
      return;
    }
  }
  pending_passthrough.push_back(std::move(packet));
}

// Where a decoded video frame falls: before the span (dropped), in it, or at
// its end. Reseek: the seek landed after the start and went back further.
MediaReader::Impl::Place MediaReader::Impl::place(const AVFrame& f) {
  // A frame without a timestamp cannot be placed; it goes with the frames before it.
  if (f.pts == AV_NOPTS_VALUE) return frames_kept > 0 || span_start == AV_NOPTS_VALUE ? Place::Keep : Place::Drop;
  const int64_t t = av_rescale_q(f.pts, fmt->streams[video_index]->time_base, AV_TIME_BASE_Q);
  if (check_seek && t > span_start && retry_seek()) return Place::Reseek;
  check_seek = false;
  if (span_start != AV_NOPTS_VALUE && t < span_start) return Place::Drop;
  if (span_end != AV_NOPTS_VALUE && t >= span_end) return Place::End;
  if (options.span.max_frames && frames_kept >= *options.span.max_frames) {
    span_end = t;  // the span ends where the first frame past the limit begins
    return Place::End;
  }
  ++frames_kept;
  return Place::Keep;
}

void MediaReader::Impl::shift_frame(AVFrame& f) const {
  if (shift == 0) return;
  const int64_t d = av_rescale_q(shift, AV_TIME_BASE_Q, fmt->streams[video_index]->time_base);
  for (int64_t* ts : {&f.pts, &f.best_effort_timestamp, &f.pkt_dts})
    if (*ts != AV_NOPTS_VALUE) *ts -= d;
}

// Hands out the pending packets timed before `before` (all of them with
// `all`), shifted: for each stream the longest prefix in demux order, so no
// stream's packets change order. Packets at or after a span end found since
// they were admitted (max_frames) are dropped.
std::vector<AVPacketPtr> MediaReader::Impl::release(int64_t before, bool all) {
  std::vector<AVPacketPtr> out, held;
  std::vector<bool> holding(fmt->nb_streams, false);
  for (AVPacketPtr& p : pending_passthrough) {
    const int idx = p->stream_index;
    const int64_t t = packet_time(*p);
    if (t != AV_NOPTS_VALUE && span_end != AV_NOPTS_VALUE && t >= span_end) {
      passed_end[idx] = true;
      continue;
    }
    if (!all && (holding[idx] || (t != AV_NOPTS_VALUE && t >= before))) {
      holding[idx] = true;
      held.push_back(std::move(p));
      continue;
    }
    if (shift != 0) {
      const int64_t d = av_rescale_q(shift, AV_TIME_BASE_Q, fmt->streams[idx]->time_base);
      if (p->pts != AV_NOPTS_VALUE) p->pts -= d;
      if (p->dts != AV_NOPTS_VALUE) p->dts -= d;
    }
    out.push_back(std::move(p));
  }
  pending_passthrough = std::move(held);
  return out;
}

// The video has reached the span's end. Other streams' packets timed before
// it may still follow in the file (interleaved after the video packets that
// decoded the last frames): read on, without decoding, until every other
// stream has shown a packet at or past the end, a packet lies a second past
// it, or the input ends.
void MediaReader::Impl::read_to_span_end() {
  span_over = true;
  if (span_end == AV_NOPTS_VALUE) return;
  // Packets admitted before the end was known (max_frames) may lie past it.
  std::erase_if(pending_passthrough, [&](const AVPacketPtr& p) {
    const int64_t t = packet_time(*p);
    if (t == AV_NOPTS_VALUE || t < span_end) return false;
    passed_end[p->stream_index] = true;
    return true;
  });
  auto all_passed = [&] {
    for (unsigned i = 0; i < fmt->nb_streams; ++i)
      if (static_cast<int>(i) != video_index && !passed_end[i]) return false;
    return true;
  };
  while (!all_passed() && !stop.load(std::memory_order_relaxed)) {
    if (av_read_frame(fmt.get(), packet.get()) < 0) break;  // the end, or damage: what was read stays
    const int64_t t = packet_time(*packet);
    if (t != AV_NOPTS_VALUE && t >= span_end + AV_TIME_BASE) {
      av_packet_unref(packet.get());
      break;
    }
    if (packet->stream_index == video_index) {
      av_packet_unref(packet.get());
      continue;
    }
    AVPacketPtr copy = make_packet();
    av_packet_move_ref(copy.get(), packet.get());
    admit(std::move(copy));
  }
}

void MediaReader::Impl::note_packet_end(const AVPacket& p) {
  int64_t t = p.pts != AV_NOPTS_VALUE ? p.pts : p.dts;
  if (t == AV_NOPTS_VALUE) return;
  if (p.duration > 0) t += p.duration;
  const int64_t us = av_rescale_q(t, fmt->streams[p.stream_index]->time_base, AV_TIME_BASE_Q);
  if (max_end_us == AV_NOPTS_VALUE || us > max_end_us) max_end_us = us;
}

// Some demuxers (matroska, for one) end a cut-off file with a plain EOF. When
// the header declared a duration and every stream stopped well short of it,
// the file was most likely truncated: say so.
void MediaReader::Impl::check_complete() {
  if (fmt->duration == AV_NOPTS_VALUE || fmt->duration <= 0 || max_end_us == AV_NOPTS_VALUE) return;
  if (fmt->duration_estimation_method == AVFMT_DURATION_FROM_BITRATE) return;  // a guess, not a declaration
  const int64_t start = fmt->start_time != AV_NOPTS_VALUE ? fmt->start_time : 0;
  const int64_t end = max_end_us - start;
  int64_t slack = fmt->duration / 100;  // 1 %
  if (info.frame_rate.num > 0) slack = std::max(slack, av_rescale_q(3, av_inv_q(info.frame_rate), AV_TIME_BASE_Q));
  slack = std::max<int64_t>(slack, AV_TIME_BASE / 20);  // 50 ms
  if (end + slack < fmt->duration) {
    char msg[160];
    std::snprintf(msg, sizeof msg, "input ends at %.3f s, before the %.3f s its header declares (truncated?)",
                  static_cast<double>(end) / AV_TIME_BASE, static_cast<double>(fmt->duration) / AV_TIME_BASE);
    warn(msg);
  }
}

void MediaReader::Impl::send_eof_to_decoder() {
  demux_eof = true;
  const int rc = avcodec_send_packet(dec.get(), nullptr);
  // AVERROR_EOF: already flushed. Anything else cannot be recovered from; the
  // decoder then has nothing more to give.
  if (rc < 0 && rc != AVERROR_EOF) {
    warn("flushing the decoder failed: " + av_error_string(rc));
    decoder_eof = true;
  }
}

// The decoded `frame` handed out, or dropped where trimming leaves it out.
MediaReader::Impl::Delivery MediaReader::Impl::deliver(DecodedFrame& out) {
  consecutive_decode_errors = 0;
  if (frame->width <= 0 || frame->height <= 0 || frame->format < 0)
    throw AVError("cannot decode the video of " + in_quotes(path) + ": the decoder gave a frame with no size or " +
                      "pixel format (damaged input?)",
                  AVERROR_INVALIDDATA);
  if (frame->decode_error_flags != 0 || (frame->flags & AV_FRAME_FLAG_CORRUPT))
    warn("frame at pts " + std::to_string(frame->best_effort_timestamp) + " was decoded with errors");
  clamp_colour_tags(*frame);
  frame->pts = frame->best_effort_timestamp;
  if (!trimming) {
    out.frame = std::move(frame);
    out.passthrough = std::move(pending_passthrough);
    pending_passthrough.clear();
    frame = make_frame();
    return Delivery::Frame;
  }
  const Place where = place(*frame);
  if (where != Place::Keep) {
    av_frame_unref(frame.get());
    if (where != Place::End) return Delivery::Dropped;  // Drop, Reseek
    read_to_span_end();
    return Delivery::End;
  }
  // The other streams' packets timed before this frame go with it; later
  // ones wait, so none past an end found later (max_frames) goes out.
  if (frame->pts != AV_NOPTS_VALUE)
    out.passthrough = release(av_rescale_q(frame->pts, fmt->streams[video_index]->time_base, AV_TIME_BASE_Q), false);
  else
    out.passthrough.clear();
  shift_frame(*frame);
  out.frame = std::move(frame);
  frame = make_frame();
  return Delivery::Frame;
}

// A frame-threaded decoder reports a bad packet at receive, not at send.
void MediaReader::Impl::note_decode_error(int rc) {
  warn("decoding failed: " + av_error_string(rc));
  if (++consecutive_decode_errors >= kMaxConsecutiveErrors) {
    warn("too many decoding errors in a row, stopping");
    decoder_eof = true;
  }
}

// One packet read: video goes to the decoder, the other streams wait to go
// out with the frames; the end of the input flushes the decoder.
void MediaReader::Impl::feed_decoder() {
  int rc = av_read_frame(fmt.get(), packet.get());
  if (rc == AVERROR_EOF) {
    check_complete();
    send_eof_to_decoder();
    return;
  }
  if (rc < 0) {
    warn("reading failed: " + av_error_string(rc));
    const bool io_dead = fmt->pb && (fmt->pb->eof_reached || fmt->pb->error);
    if (io_dead || ++consecutive_read_errors >= kMaxConsecutiveErrors) send_eof_to_decoder();
    return;
  }
  consecutive_read_errors = 0;
  note_packet_end(*packet);
  if (packet->flags & AV_PKT_FLAG_CORRUPT)
    warn("packet of stream " + std::to_string(packet->stream_index) + " is marked corrupt");
  if (packet->stream_index != video_index) {
    AVPacketPtr copy = make_packet();
    av_packet_move_ref(copy.get(), packet.get());
    if (trimming) admit(std::move(copy));
    else pending_passthrough.push_back(std::move(copy));
    return;
  }
  if (await_keyframe && !(packet->flags & AV_PKT_FLAG_KEY)) {
    av_packet_unref(packet.get());
    return;
  }
  await_keyframe = false;
  rc = avcodec_send_packet(dec.get(), packet.get());
  if (rc == AVERROR(EAGAIN)) {
    // receive_frame just said EAGAIN, so send must accept; a decoder that
    // breaks this rule would spin, so the packet is dropped instead.
    warn("decoder refused a packet after asking for input; packet dropped");
  } else if (rc < 0 && rc != AVERROR_EOF) {
    const int64_t pts = packet->pts != AV_NOPTS_VALUE ? packet->pts : packet->dts;
    warn("decoding packet at pts " + std::to_string(pts) + " failed: " + av_error_string(rc));
  }
  av_packet_unref(packet.get());
}

bool MediaReader::Impl::read(DecodedFrame& out) {
  while (!decoder_eof && !span_over) {
    if (stop.load(std::memory_order_relaxed)) return false;
    const int rc = avcodec_receive_frame(dec.get(), frame.get());
    if (rc == 0) {
      const Delivery d = deliver(out);
      if (d == Delivery::Dropped) continue;
      return d == Delivery::Frame;
    }
    // The decoder's end; or it needs input after NULL was sent, where it must
    // end with AVERROR_EOF: never wait forever.
    if (rc == AVERROR_EOF || (rc == AVERROR(EAGAIN) && demux_eof)) {
      if (trimming && retry_seek()) continue;
      decoder_eof = true;
      break;
    }
    if (rc != AVERROR(EAGAIN)) note_decode_error(rc);
    else feed_decoder();  // EAGAIN: the decoder needs input
  }
  return false;
}

MediaReader::MediaReader(const std::string& path, ReaderOptions options) : impl_(std::make_unique<Impl>()) {
  impl_->path = path;
  impl_->options = options;
  impl_->open();
}

MediaReader::~MediaReader() = default;

const VideoInfo& MediaReader::video() const noexcept { return impl_->info; }
const AVFormatContext* MediaReader::format_context() const noexcept { return impl_->fmt.get(); }
int MediaReader::video_stream_index() const noexcept { return impl_->video_index; }

InputStreams MediaReader::streams() const {
  const AVFormatContext* fmt = impl_->fmt.get();
  InputStreams s;
  s.streams.assign(fmt->streams, fmt->streams + fmt->nb_streams);
  s.video_index = impl_->video_index;
  s.video = impl_->info;
  s.metadata = fmt->metadata;
  s.chapters.assign(fmt->chapters, fmt->chapters + fmt->nb_chapters);
  s.timestamp_shift = timestamp_shift();
  s.span_end = span_end();
  return s;
}

bool MediaReader::read(DecodedFrame& out) { return impl_->read(out); }

std::vector<AVPacketPtr> MediaReader::take_remaining_passthrough() {
  if (impl_->trimming) return impl_->release(0, true);
  std::vector<AVPacketPtr> rest = std::move(impl_->pending_passthrough);
  impl_->pending_passthrough.clear();
  return rest;
}

int64_t MediaReader::timestamp_shift() const noexcept { return impl_->shift; }
int64_t MediaReader::span_end() const noexcept {
  return impl_->duration_end == AV_NOPTS_VALUE ? AV_NOPTS_VALUE : impl_->duration_end - impl_->shift;
}

void MediaReader::request_stop() noexcept { impl_->stop.store(true); }
int MediaReader::warnings() const noexcept { return impl_->warning_count.load(); }
std::size_t MediaReader::hw_surface_bytes() const noexcept { return hw_decoder_surface_bytes(impl_->dec->hw_frames_ctx); }

}  // namespace streamblur::io
