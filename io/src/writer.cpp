#include "streamblur/io/writer.hpp"

extern "C" {
#include <libavutil/avstring.h>
#include <libavutil/avutil.h>
#include <libavutil/dict.h>
#include <libavutil/mastering_display_metadata.h>
#include <libavutil/opt.h>
#include <libavutil/pixdesc.h>
}

#include <algorithm>
#include <cstdio>
#include <cctype>
#include <cstring>
#include <filesystem>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string_view>
#include <vector>

#include "streamblur/io/av_error.hpp"
#include "streamblur/io/convert.hpp"
#include "streamblur/io/log.hpp"
#include "streamblur/io/stream_metadata.hpp"

namespace streamblur::io {

namespace {

// What to do when an encoder refuses a size its chroma subsampling cannot
// halve (libx264 and 4:2:0 at 65x49, say): streamblur does not crop or change
// the format behind the user's back; the error says how to get an output.
std::string odd_size_advice(const AVCodec* codec, AVPixelFormat fmt, int width, int height) {
  const AVPixFmtDescriptor* d = av_pix_fmt_desc_get(fmt);
  if (!d || !((d->log2_chroma_w && width % 2) || (d->log2_chroma_h && height % 2))) return "";
  return "; " + std::string(codec->name) + " cannot code an odd size (" + std::to_string(width) + "x" +
         std::to_string(height) + ") in " + av_get_pix_fmt_name(fmt) +
         ": choose an encoder that can, e.g. ffv1 (lossless) with a .mkv output, or make the input's size "
         "even first";
}

std::string in_quotes(const std::string& s) { return "'" + s + "'"; }

const char* pix_fmt_name(int f) {
  const char* n = av_get_pix_fmt_name(static_cast<AVPixelFormat>(f));
  return n ? n : "none";
}

// Tags that describe the old encode (statistics, writing app) rather than the
// content; the muxer writes fresh ones.
bool is_stale_stream_tag(const char* key) {
  static constexpr std::string_view prefixes[] = {"encoder", "DURATION", "NUMBER_OF_FRAMES", "NUMBER_OF_BYTES",
                                                  "BPS", "_STATISTICS_"};
  const std::string_view k(key);
  for (std::string_view p : prefixes)
    if (k.size() >= p.size() && av_strncasecmp(k.data(), p.data(), p.size()) == 0) return true;
  return false;
}

void copy_stream_metadata(AVDictionary** dst, const AVDictionary* src) {
  const AVDictionaryEntry* e = nullptr;
  while ((e = av_dict_get(src, "", e, AV_DICT_IGNORE_SUFFIX)))
    if (!is_stale_stream_tag(e->key)) av_dict_set(dst, e->key, e->value, 0);
}

bool pix_fmt_supported(const AVCodec* codec, AVPixelFormat f) {
  if (!codec->pix_fmts) return true;  // the encoder does not say: let it decide at open
  for (const AVPixelFormat* p = codec->pix_fmts; *p != AV_PIX_FMT_NONE; ++p)
    if (*p == f) return true;
  return false;
}

bool valid_rational(AVRational r) { return r.num > 0 && r.den > 0; }

// The frame's field order as an encoder and a container state it.
AVFieldOrder field_order_of(const AVFrame& f) {
  if (!f.interlaced_frame) return AV_FIELD_PROGRESSIVE;
  return f.top_field_first ? AV_FIELD_TT : AV_FIELD_BB;
}

// Containers whose muxers write chapters (Matroska/WebM chapters, QuickTime/MP4
// chapter track and Nero chpl).
bool holds_chapters(const AVOutputFormat* f) {
  for (const char* n : {"matroska", "webm", "mov", "mp4", "ipod", "ismv", "ogg"})
    if (std::strcmp(f->name, n) == 0) return true;
  return false;
}

// Containers whose muxers write a display matrix (rotation): QuickTime/MP4's
// track matrix, and Matroska's ProjectionPose from FFmpeg 6.1 (libavformat 60.16) on.
bool holds_display_matrix(const AVOutputFormat* f) {
  for (const char* n : {"mov", "mp4", "ipod", "ismv", "3gp", "3g2", "psp", "f4v"})
    if (std::strcmp(f->name, n) == 0) return true;
#if LIBAVFORMAT_VERSION_INT >= AV_VERSION_INT(60, 16, 100)
  if (std::strcmp(f->name, "matroska") == 0 || std::strcmp(f->name, "webm") == 0) return true;
#endif
  return false;
}

// x265's --master-display / --max-cll values (SMPTE ST 2086 units: chromaticity
// in 0.00002, luminance in 0.0001 cd/m2), or "" when the data is incomplete.
std::string x265_master_display(const AVMasteringDisplayMetadata& m) {
  if (!m.has_primaries || !m.has_luminance) return "";
  auto q = [](AVRational r, int scale) { return static_cast<long long>(av_rescale(r.num, scale, r.den)); };
  char buf[256];
  // AVMasteringDisplayMetadata holds R, G, B; x265 wants G, B, R.
  std::snprintf(buf, sizeof buf, "G(%lld,%lld)B(%lld,%lld)R(%lld,%lld)WP(%lld,%lld)L(%lld,%lld)",
                q(m.display_primaries[1][0], 50000), q(m.display_primaries[1][1], 50000),
                q(m.display_primaries[2][0], 50000), q(m.display_primaries[2][1], 50000),
                q(m.display_primaries[0][0], 50000), q(m.display_primaries[0][1], 50000),
                q(m.white_point[0], 50000), q(m.white_point[1], 50000), q(m.max_luminance, 10000),
                q(m.min_luminance, 10000));
  return buf;
}

}  // namespace

struct MediaWriter::Impl {
  Impl(const std::string& file, const EncoderOptions& options)
      : path(file), shown(options.display_name.empty() ? file : options.display_name), note_sink(options.note) {}

  std::string path;   // the file written
  std::string shown;  // the name messages use (EncoderOptions::display_name, else path)
  std::function<void(const std::string&)> note_sink;
  AVOutputFormatContextPtr oc;
  AVCodecContextPtr enc;
  int video_out_index = -1;
  AVRational input_video_tb{0, 1};
  AVRational enc_tb{0, 1};
  std::vector<int> stream_map;          // input stream index -> output stream index, -1 = dropped
  std::vector<AVRational> input_tbs;    // input stream time bases
  std::unique_ptr<FrameConverter> converter;
  AVPacketPtr packet = make_packet();
  int64_t last_pts = AV_NOPTS_VALUE;    // in enc_tb
  int64_t frames = 0;
  bool finished = false;
  std::function<void(const AVPacket&)> video_packets;  // EncoderOptions::video_packets: no file
  bool image_muxer = false;             // image2 or image2pipe: pictures only, no other streams
  bool single_image = false;            // an image muxer writing one file (no %d pattern): one frame only
  // HDR metadata of the input (stream side data, else the first frame's), for
  // the output stream and for encoders that write it into the bitstream.
  std::vector<uint8_t> mastering_display;  // an AVMasteringDisplayMetadata, or empty
  std::vector<uint8_t> content_light;      // an AVContentLightMetadata, or empty

  // A note for the user, printf-style, through EncoderOptions::note (default: stderr).
  template <class... A>
  void note(const char* fmt, A... args) {
    char buf[512];
    std::snprintf(buf, sizeof buf, fmt, args...);
    if (note_sink) note_sink(buf);
    else std::fprintf(stderr, "%s\n", buf);
  }

  void open(const InputStreams& input, const AVFrame& first, const EncoderOptions& options);
  void open_copy(const InputStreams& input, const EncodedVideo& video, const EncoderOptions& options);
  void check_video_index(const InputStreams& input) const;
  void add_streams(const InputStreams& input, const AVCodecParameters& video_par);
  void open_file(const InputStreams& input, const EncoderOptions& options);
  void open_container(const EncoderOptions& options);
  const AVCodec* choose_encoder(const AVFrame& first, const EncoderOptions& options);
  void take_hdr_metadata(const AVStream& in_vst, const AVFrame& first);
  void open_encoder(const AVCodec* codec, const AVFrame& first, const EncoderOptions& options,
                    const VideoInfo& vinfo);
  void add_video_stream(const AVStream& ist, const VideoInfo& vinfo, const AVCodecParameters& par);
  bool can_copy_stream(unsigned i, const AVCodecParameters& par);
  void add_copied_stream(unsigned i, const AVStream& ist);
  void copy_chapters(const InputStreams& input);
  AVCodecContextPtr try_open_encoder(const AVCodec* codec, const AVFrame& first, const EncoderOptions& options,
                                     AVRational tb, AVRational frame_rate, AVRational sar, int& rc,
                                     std::string& leftover_key);
  void write_encoded_packets();
  void send_frame(const AVFrame* frame);
};

AVCodecContextPtr MediaWriter::Impl::try_open_encoder(const AVCodec* codec, const AVFrame& first,
                                                     const EncoderOptions& options, AVRational tb,
                                                     AVRational frame_rate, AVRational sar, int& rc,
                                                     std::string& leftover_key) {
  AVCodecContextPtr ctx(avcodec_alloc_context3(codec));
  if (!ctx) throw std::bad_alloc();
  ctx->width = first.width;
  ctx->height = first.height;
  ctx->pix_fmt = converter ? converter->to() : static_cast<AVPixelFormat>(first.format);
  ctx->time_base = tb;
  if (valid_rational(frame_rate)) ctx->framerate = frame_rate;
  ctx->sample_aspect_ratio = sar;
  ctx->color_range = first.color_range;
  ctx->colorspace = first.colorspace;
  ctx->color_primaries = first.color_primaries;
  ctx->color_trc = first.color_trc;
  ctx->chroma_sample_location = first.chroma_location;
  // Interlaced pictures stay interlaced: the container states the field order,
  // and encoders that code fields (libx264: MBAFF, mpeg2video) are told to.
  ctx->field_order = field_order_of(first);
  if (first.interlaced_frame) ctx->flags |= AV_CODEC_FLAG_INTERLACED_DCT | AV_CODEC_FLAG_INTERLACED_ME;
  ctx->thread_count = options.encoder_threads;
  if (oc->oformat->flags & AVFMT_GLOBALHEADER) ctx->flags |= AV_CODEC_FLAG_GLOBAL_HEADER;

  AVDictionaryPtr dict;
  auto set = [&](const char* key, const char* value) {
    with_dict(dict, [&](AVDictionary** d) { return av_dict_set(d, key, value, 0); });
  };
  const bool x264 = std::strcmp(codec->name, "libx264") == 0 || std::strcmp(codec->name, "libx264rgb") == 0;
  if (options.crf >= 0)
    set("crf", std::to_string(options.crf).c_str());
  else if (x264)
    set("crf", "18");
  if (!options.preset.empty()) set("preset", options.preset.c_str());
  for (const auto& [k, v] : options.options) set(k.c_str(), v.c_str());
  if (std::strcmp(codec->name, "libx265") == 0) {
    // FFmpeg's libx265 wrapper does not read HDR side data (before FFmpeg 7);
    // x265 writes the SEI when given the values as parameters. The user's own
    // x265-params come last, so they win.
    std::string params;
    if (mastering_display.size() >= sizeof(AVMasteringDisplayMetadata)) {
      const std::string md =
          x265_master_display(*reinterpret_cast<const AVMasteringDisplayMetadata*>(mastering_display.data()));
      if (!md.empty()) params += "master-display=" + md;
    }
    if (content_light.size() >= sizeof(AVContentLightMetadata)) {
      const auto* c = reinterpret_cast<const AVContentLightMetadata*>(content_light.data());
      params += std::string(params.empty() ? "" : ":") + "max-cll=" + std::to_string(c->MaxCLL) + "," +
                std::to_string(c->MaxFALL);
    }
    if (!params.empty()) {
      const AVDictionaryEntry* user = av_dict_get(dict.get(), "x265-params", nullptr, 0);
      if (user && *user->value) params += std::string(":") + user->value;
      set("x265-params", params.c_str());
    }
  }

  take_last_log_error();  // forget older messages: a failure below quotes its own
  rc = with_dict(dict, [&](AVDictionary** d) { return avcodec_open2(ctx.get(), codec, d); });
  if (rc >= 0) {
    const AVDictionaryEntry* e = av_dict_get(dict.get(), "", nullptr, AV_DICT_IGNORE_SUFFIX);
    if (e) leftover_key = e->key;
  }
  return ctx;
}

// Whether an encoder's refusal is about the time base or frame rate (the
// only failure a retry with another time base can mend).
static bool mentions_time_base(const std::string& said) {
  std::string low;
  for (char c : said) low += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (const char* key : {"timebase", "time base", "time_base", "fps", "frame rate", "framerate"})
    if (low.find(key) != std::string::npos) return true;
  return false;
}

// Steps of open(), in order: container, encoder, streams, chapters, file.

void MediaWriter::Impl::open_container(const EncoderOptions& options) {
  const char* format_name = options.format_name.empty() ? nullptr : options.format_name.c_str();
  AVFormatContext* new_oc = nullptr;
  AV_CHECK_CTX(avformat_alloc_output_context2(&new_oc, nullptr, format_name, path.c_str()),
               "cannot choose an output format for " + in_quotes(shown) +
                   (format_name ? " (format " + in_quotes(options.format_name) + ")" : std::string()));
  oc.reset(new_oc);
  const AVOutputFormat* ofmt = oc->oformat;
  image_muxer = std::strcmp(ofmt->name, "image2") == 0 || std::strcmp(ofmt->name, "image2pipe") == 0;
}

// The encoder asked for, checked against the container; a converter when it
// cannot take the frames' pixel format.
const AVCodec* MediaWriter::Impl::choose_encoder(const AVFrame& first, const EncoderOptions& options) {
  const AVOutputFormat* ofmt = oc->oformat;
  const AVCodec* codec = avcodec_find_encoder_by_name(options.codec.c_str());
  if (!codec) throw AVError("unknown encoder " + in_quotes(options.codec), AVERROR_ENCODER_NOT_FOUND);
  if (codec->type != AVMEDIA_TYPE_VIDEO)
    throw AVError("encoder " + in_quotes(options.codec) + " is not a video encoder", AVERROR(EINVAL));
  if (avformat_query_codec(ofmt, codec->id, FF_COMPLIANCE_NORMAL) == 0)
    throw AVError("the " + std::string(ofmt->name) + " container of " + in_quotes(shown) + " cannot hold " +
                      avcodec_get_name(codec->id) + " video",
                  AVERROR(EINVAL));
  const auto src_fmt = static_cast<AVPixelFormat>(first.format);
  if (!pix_fmt_supported(codec, src_fmt)) {
    const AVPixelFormat best = avcodec_find_best_pix_fmt_of_list(codec->pix_fmts, src_fmt, 0, nullptr);
    if (best == AV_PIX_FMT_NONE)
      throw AVError("encoder " + in_quotes(codec->name) + " takes no pixel format that " + pix_fmt_name(src_fmt) +
                        " converts to",
                    AVERROR(EINVAL));
    note("note: %s: encoder %s cannot take %s; converting frames to %s", shown.c_str(),
                 codec->name, pix_fmt_name(src_fmt), pix_fmt_name(best));
    converter = std::make_unique<FrameConverter>(first.width, first.height, src_fmt, best);
  }
  return codec;
}

// HDR metadata: the input stream's, else the first frame's (HEVC carries it in SEI).
void MediaWriter::Impl::take_hdr_metadata(const AVStream& in_vst, const AVFrame& first) {
  auto hdr_data = [&](AVPacketSideDataType stream_type, AVFrameSideDataType frame_type) {
    std::size_t size = 0;
    if (const uint8_t* d = stream_side_data(in_vst, stream_type, &size)) return std::vector<uint8_t>(d, d + size);
    if (const AVFrameSideData* fd = av_frame_get_side_data(&first, frame_type))
      return std::vector<uint8_t>(fd->data, fd->data + fd->size);
    return std::vector<uint8_t>();
  };
  mastering_display = hdr_data(AV_PKT_DATA_MASTERING_DISPLAY_METADATA, AV_FRAME_DATA_MASTERING_DISPLAY_METADATA);
  content_light = hdr_data(AV_PKT_DATA_CONTENT_LIGHT_LEVEL, AV_FRAME_DATA_CONTENT_LIGHT_LEVEL);
}

// Opens `codec` in the input's time base; where the encoder refuses that time
// base, once more in one derived from the frame rate. Throws naming what was
// asked for (a bad preset or option value fails here).
void MediaWriter::Impl::open_encoder(const AVCodec* codec, const AVFrame& first, const EncoderOptions& options,
                                     const VideoInfo& vinfo) {
  AVRational sar = first.sample_aspect_ratio;
  if (!valid_rational(sar)) sar = vinfo.sample_aspect_ratio;
  if (!valid_rational(sar)) sar = AVRational{0, 1};
  int rc = 0;
  std::string leftover;
  AVRational tb = valid_rational(input_video_tb) ? input_video_tb : av_inv_q(vinfo.frame_rate);
  if (!valid_rational(tb)) tb = AVRational{1, 25};
  enc = try_open_encoder(codec, first, options, tb, vinfo.frame_rate, sar, rc, leftover);
  std::string said = rc < 0 ? take_last_log_error() : std::string();  // e.g. libx264: "width not divisible by 2"
  // Without FFmpeg's log captured (install_log_capture) the reason is unknown: retry then too.
  if (rc < 0 && (said.empty() || mentions_time_base(said))) {
    // Some encoders limit the time base (mpeg4: denominator <= 65535, mpeg2:
    // standard rates). Retry with one derived from the frame rate; pts are
    // rescaled, exactly for constant-rate input. Only then: any other failure
    // (a bad preset, say) would fail again and be reported twice.
    AVRational fallback{0, 1};
    if (valid_rational(vinfo.frame_rate)) {
      av_reduce(&fallback.num, &fallback.den, vinfo.frame_rate.den, vinfo.frame_rate.num, 65535);
    } else {
      fallback = AVRational{1, 25};
    }
    if (valid_rational(fallback) && av_cmp_q(fallback, tb) != 0) {
      std::string leftover2;
      int rc2 = 0;
      AVCodecContextPtr retry =
          try_open_encoder(codec, first, options, fallback, vinfo.frame_rate, sar, rc2, leftover2);
      if (rc2 >= 0) {
        note("note: %s: encoder %s rejected time base %d/%d; using %d/%d", shown.c_str(),
                     codec->name, tb.num, tb.den, fallback.num, fallback.den);
        enc = std::move(retry);
        rc = rc2;
        leftover = leftover2;
      } else {
        said = take_last_log_error();
      }
    }
  }
  if (rc < 0) {
    std::string asked;
    if (!options.preset.empty()) asked += "preset " + in_quotes(options.preset);
    if (options.crf >= 0) asked += std::string(asked.empty() ? "" : ", ") + "crf " + std::to_string(options.crf);
    for (const auto& [k, v] : options.options) asked += std::string(asked.empty() ? "" : ", ") + k + "=" + v;
    throw_av_error(rc, "avcodec_open2", __FILE__, __LINE__,
                   "cannot open encoder " + in_quotes(codec->name) + (asked.empty() ? "" : " (" + asked + ")") +
                       " for " + std::to_string(first.width) + "x" + std::to_string(first.height) + " " +
                       pix_fmt_name(enc->pix_fmt) + (said.empty() ? "" : " [" + said + "]") +
                       odd_size_advice(codec, enc->pix_fmt, first.width, first.height));
  }
  if (!leftover.empty())
    throw AVError("encoder " + in_quotes(codec->name) + " has no option " + in_quotes(leftover), AVERROR_OPTION_NOT_FOUND);
  enc_tb = enc->time_base;
}

// The encoded video stream, with what stays true after a blur: display
// matrix (pixels are not rotated), HDR mastering display and light level,
// projection, stereo.
void MediaWriter::Impl::add_video_stream(const AVStream& ist, const VideoInfo& vinfo, const AVCodecParameters& par) {
  const AVOutputFormat* ofmt = oc->oformat;
  AVStream* st = avformat_new_stream(oc.get(), nullptr);
  if (!st) throw std::bad_alloc();
  AV_CHECK_CTX(avcodec_parameters_copy(st->codecpar, &par),
               "cannot set the video stream parameters of " + in_quotes(shown));
  st->time_base = enc_tb;
  if (valid_rational(vinfo.frame_rate)) st->avg_frame_rate = vinfo.frame_rate;
  st->sample_aspect_ratio = par.sample_aspect_ratio;
  st->disposition = ist.disposition;
  copy_stream_metadata(&st->metadata, ist.metadata);
  copy_kept_video_side_data(ist, *st);
  if (!mastering_display.empty() && !stream_side_data(*st, AV_PKT_DATA_MASTERING_DISPLAY_METADATA))
    set_stream_side_data(*st, AV_PKT_DATA_MASTERING_DISPLAY_METADATA, mastering_display.data(),
                         mastering_display.size());
  if (!content_light.empty() && !stream_side_data(*st, AV_PKT_DATA_CONTENT_LIGHT_LEVEL))
    set_stream_side_data(*st, AV_PKT_DATA_CONTENT_LIGHT_LEVEL, content_light.data(), content_light.size());
  bool rotated = false;
  const double deg = stream_rotation(*st, &rotated);
  if (rotated && deg != 0 && !holds_display_matrix(ofmt))
    note("note: %s: the %s container cannot hold the input's display rotation (%g degrees) with this FFmpeg; "
         "the output plays unrotated",
         shown.c_str(), image_muxer ? "image" : ofmt->name, deg);
  video_out_index = st->index;
}

// Whether input stream `i` (not the video) can be copied; a note says why
// not where it cannot.
bool MediaWriter::Impl::can_copy_stream(unsigned i, const AVCodecParameters& par) {
  const AVOutputFormat* ofmt = oc->oformat;
  const char* kind = av_get_media_type_string(par.codec_type);
  kind = kind ? kind : "unknown";
  if (par.codec_id == AV_CODEC_ID_NONE) {
    note("note: %s: input stream %u (%s) has no known codec; not copied", shown.c_str(), i, kind);
    return false;
  }
  if (image_muxer) {
    note("note: %s: image files hold pictures only; input stream %u (%s) not copied", shown.c_str(), i, kind);
    return false;
  }
  // Fonts and other attachments: only Matroska stores them (avformat_query_codec
  // does not know them as codecs).
  if (par.codec_type == AVMEDIA_TYPE_ATTACHMENT && std::strcmp(ofmt->name, "matroska") != 0) {
    note("note: %s: the %s container cannot hold attachments; input stream %u not copied", shown.c_str(),
         ofmt->name, i);
    return false;
  }
  const int holds = par.codec_type == AVMEDIA_TYPE_ATTACHMENT
                        ? 1
                        : avformat_query_codec(ofmt, par.codec_id, FF_COMPLIANCE_NORMAL);
  // Muxers that cannot say (holds < 0) and have no default codec of that kind
  // do not take such streams at all.
  AVCodecID kind_default = AV_CODEC_ID_PROBE;
  if (par.codec_type == AVMEDIA_TYPE_AUDIO) kind_default = ofmt->audio_codec;
  if (par.codec_type == AVMEDIA_TYPE_SUBTITLE) kind_default = ofmt->subtitle_codec;
  if (holds == 0 || (holds < 0 && kind_default == AV_CODEC_ID_NONE)) {
    note("note: %s: the %s container cannot hold input stream %u (%s %s); not copied", shown.c_str(), ofmt->name,
         i, kind, avcodec_get_name(par.codec_id));
    return false;
  }
  return true;
}

// Input stream `i` copied as it is (audio, subtitles, data, attachments), or
// left out with a note.
void MediaWriter::Impl::add_copied_stream(unsigned i, const AVStream& ist) {
  const AVCodecParameters* par = ist.codecpar;
  if (!can_copy_stream(i, *par)) return;
  // Copy into a scratch first: a stream once added cannot be taken out again.
  AVCodecParametersPtr scratch(avcodec_parameters_alloc());
  if (!scratch) throw std::bad_alloc();
  const int rc = avcodec_parameters_copy(scratch.get(), par);
  if (rc < 0) {
    const char* kind = av_get_media_type_string(par->codec_type);
    note("note: %s: cannot copy input stream %u (%s %s): %s; not copied", shown.c_str(), i, kind ? kind : "unknown",
         avcodec_get_name(par->codec_id), av_error_string(rc).c_str());
    return;
  }
  AVStream* st = avformat_new_stream(oc.get(), nullptr);
  if (!st) throw std::bad_alloc();
  AV_CHECK_CTX(avcodec_parameters_copy(st->codecpar, scratch.get()),
               "cannot copy input stream " + std::to_string(i) + " to " + in_quotes(shown));
  st->codecpar->codec_tag = 0;
  st->time_base = ist.time_base;
  st->avg_frame_rate = ist.avg_frame_rate;
  st->r_frame_rate = ist.r_frame_rate;
  st->sample_aspect_ratio = ist.sample_aspect_ratio;
  st->disposition = ist.disposition;
  copy_stream_metadata(&st->metadata, ist.metadata);
  stream_map[i] = st->index;
}

// Chapters, rescaled to the output video's time base (timestamps are kept,
// so the chapters still mark the same pictures). A trimmed input (ReadSpan)
// moves them by its timestamp shift, as ffmpeg does: those wholly before the
// span or after its end are left out, the others clipped to it.
void MediaWriter::Impl::copy_chapters(const InputStreams& input) {
  if (input.chapters.empty()) return;
  if (!holds_chapters(oc->oformat)) {
    note("note: %s: the %s container cannot hold chapters; %zu chapter(s) not copied", shown.c_str(),
         oc->oformat->name, input.chapters.size());
    return;
  }
  const int64_t shift = input.timestamp_shift, span_end = input.span_end;
  for (const AVChapter* c : input.chapters) {
    const int64_t d = av_rescale_q(shift, AV_TIME_BASE_Q, c->time_base);
    int64_t start = c->start - d, end = c->end - d;
    if (shift != 0 || span_end != AV_NOPTS_VALUE) {
      const int64_t last =
          span_end == AV_NOPTS_VALUE ? INT64_MAX : av_rescale_q(span_end, AV_TIME_BASE_Q, c->time_base);
      if (end <= 0 || start >= last) continue;
      start = std::max<int64_t>(start, 0);
      end = std::min(end, last);
    }
    add_chapter(*oc, c->id, enc_tb, av_rescale_q_rnd(start, c->time_base, enc_tb, AV_ROUND_NEAR_INF),
                av_rescale_q_rnd(end, c->time_base, enc_tb, AV_ROUND_NEAR_INF), "");
    av_dict_copy(&oc->chapters[oc->nb_chapters - 1]->metadata, c->metadata, 0);  // title, language, ...
  }
}

void MediaWriter::Impl::check_video_index(const InputStreams& input) const {
  if (input.video_index < 0 || static_cast<std::size_t>(input.video_index) >= input.streams.size())
    throw std::invalid_argument("the input's video stream is not among its streams, writing " + in_quotes(shown));
}

void MediaWriter::Impl::open(const InputStreams& input, const AVFrame& first, const EncoderOptions& options) {
  check_video_index(input);
  open_container(options);
  const AVCodec* codec = choose_encoder(first, options);
  input_video_tb = input.video.time_base;
  take_hdr_metadata(*input.streams[input.video_index], first);
  open_encoder(codec, first, options, input.video);
  AVCodecParametersPtr par(avcodec_parameters_alloc());
  if (!par) throw std::bad_alloc();
  AV_CHECK_CTX(avcodec_parameters_from_context(par.get(), enc.get()),
               "cannot set the video stream parameters of " + in_quotes(shown));
  add_streams(input, *par);
  if (!video_packets) open_file(input, options);
}

void MediaWriter::Impl::open_copy(const InputStreams& input, const EncodedVideo& video, const EncoderOptions& options) {
  check_video_index(input);
  if (!video.par || !valid_rational(video.time_base))
    throw std::invalid_argument("no encoded video stream to copy, writing " + in_quotes(shown));
  open_container(options);
  input_video_tb = input.video.time_base;
  enc_tb = video.time_base;
  mastering_display = video.mastering_display;
  content_light = video.content_light;
  add_streams(input, *video.par);
  open_file(input, options);
}

// Streams, in input order: the video one with `video_par`, the others copied.
void MediaWriter::Impl::add_streams(const InputStreams& input, const AVCodecParameters& video_par) {
  const unsigned n = static_cast<unsigned>(input.streams.size());
  stream_map.assign(n, -1);
  input_tbs.resize(n);
  for (unsigned i = 0; i < n; ++i) {
    input_tbs[i] = input.streams[i]->time_base;
    if (static_cast<int>(i) == input.video_index) {
      add_video_stream(*input.streams[i], input.video, video_par);
      stream_map[i] = video_out_index;
    } else {
      add_copied_stream(i, *input.streams[i]);
    }
  }
}

// Metadata, chapters, then the file and its header.
void MediaWriter::Impl::open_file(const InputStreams& input, const EncoderOptions& options) {
  av_dict_copy(&oc->metadata, input.metadata, 0);
  av_dict_set(&oc->metadata, "encoder", nullptr, 0);
  copy_chapters(input);

  // Image outputs: a pattern (out%03d.png) writes one file per frame; a plain
  // name writes one picture, and a second frame is an error (write_video).
  if (image_muxer) {
    single_image = std::strcmp(oc->oformat->name, "image2") == 0 && !is_sequence_pattern(path);
    if (single_image) av_opt_set_int(oc->priv_data, "update", 1, 0);
  }
  AVDictionary* given = nullptr;
  for (const auto& [k, v] : options.format_options) av_dict_set(&given, k.c_str(), v.c_str(), 0);
  struct FreeDict {
    AVDictionary*& d;
    ~FreeDict() { av_dict_free(&d); }
  } free_given{given};
  if (!(oc->oformat->flags & AVFMT_NOFILE))
    AV_CHECK_CTX(avio_open2(&oc->pb, path.c_str(), AVIO_FLAG_WRITE, nullptr, &given),
                 "cannot open output " + in_quotes(shown));
  AV_CHECK_CTX(avformat_write_header(oc.get(), &given), "cannot write the header of " + in_quotes(shown));
  if (const AVDictionaryEntry* e = av_dict_get(given, "", nullptr, AV_DICT_IGNORE_SUFFIX))
    throw std::invalid_argument("output option '" + std::string(e->key) + "' is not an option of the " +
                                oc->oformat->name + " muxer or of the output's protocol");
}

void MediaWriter::Impl::write_encoded_packets() {
  AVStream* st = oc->streams[video_out_index];
  for (;;) {
    const int rc = avcodec_receive_packet(enc.get(), packet.get());
    if (rc == AVERROR(EAGAIN) || rc == AVERROR_EOF) return;
    if (rc < 0) throw_av_error(rc, "avcodec_receive_packet", __FILE__, __LINE__, "encoding video for " + in_quotes(shown));
    packet->stream_index = video_out_index;
    if (video_packets) {  // a span's packets: in enc_tb, no file
      video_packets(*packet);
      av_packet_unref(packet.get());
      continue;
    }
    av_packet_rescale_ts(packet.get(), enc_tb, st->time_base);
    const int wrc = av_interleaved_write_frame(oc.get(), packet.get());
    av_packet_unref(packet.get());
    if (wrc < 0) throw_av_error(wrc, "av_interleaved_write_frame", __FILE__, __LINE__, "cannot write to " + in_quotes(shown));
  }
}

void MediaWriter::Impl::send_frame(const AVFrame* frame) {
  for (;;) {
    const int rc = avcodec_send_frame(enc.get(), frame);
    if (rc == AVERROR(EAGAIN)) {
      // The encoder wants its output taken first.
      write_encoded_packets();
      continue;
    }
    if (frame == nullptr && rc == AVERROR_EOF) return;  // already flushed
    if (rc < 0) throw_av_error(rc, "avcodec_send_frame", __FILE__, __LINE__, "encoding video for " + in_quotes(shown));
    return;
  }
}

MediaWriter::MediaWriter(const std::string& path, const InputStreams& input, const AVFrame& first_frame,
                         const EncoderOptions& options)
    : impl_(std::make_unique<Impl>(path, options)) {
  impl_->video_packets = options.video_packets;
  impl_->open(input, first_frame, options);
}

MediaWriter::MediaWriter(const std::string& path, const InputStreams& input, const EncodedVideo& video,
                         const EncoderOptions& options)
    : impl_(std::make_unique<Impl>(path, options)) {
  impl_->open_copy(input, video, options);
}

MediaWriter::~MediaWriter() = default;

void MediaWriter::write_video(const AVFrame& frame) {
  Impl& m = *impl_;
  if (m.finished) throw std::logic_error("MediaWriter::write_video after finish() for " + in_quotes(m.shown));
  if (!m.enc)
    throw std::logic_error("MediaWriter::write_video on a writer that copies encoded video, for " + in_quotes(m.shown));
  if (m.single_image && m.frames >= 1) {
    // FFmpeg's image2 muxer would overwrite the one file with each frame and
    // report success: several frames collapsed into one picture.
    const std::filesystem::path shown(m.shown);
    const std::string example =
        (shown.parent_path() / (shown.stem().string() + "%03d" + shown.extension().string())).string();
    throw std::runtime_error("output " + in_quotes(m.shown) +
                             " is one image file but the input has more than one frame; name an image sequence "
                             "such as " + in_quotes(example) + " to write every frame");
  }

  AVFramePtr f = make_frame();
  if (m.converter) {
    m.converter->convert(frame, *f);
  } else {
    AV_CHECK_CTX(av_frame_ref(f.get(), &frame), "cannot reference a frame for " + in_quotes(m.shown));
  }

  int64_t pts = frame.pts;
  if (pts != AV_NOPTS_VALUE && av_cmp_q(m.input_video_tb, m.enc_tb) != 0 && valid_rational(m.input_video_tb))
    pts = av_rescale_q(pts, m.input_video_tb, m.enc_tb);
  if (pts == AV_NOPTS_VALUE) {
    // Missing timestamp: one frame after the previous one.
    int64_t step = 1;
    if (m.enc->framerate.num > 0 && m.enc->framerate.den > 0)
      step = std::max<int64_t>(1, av_rescale_q(1, av_inv_q(m.enc->framerate), m.enc_tb));
    pts = m.last_pts == AV_NOPTS_VALUE ? 0 : m.last_pts + step;
  }
  // Encoders and muxers need strictly increasing timestamps; only a rescale to
  // a coarser time base or a broken input can violate that.
  if (m.last_pts != AV_NOPTS_VALUE && pts <= m.last_pts) pts = m.last_pts + 1;
  m.last_pts = pts;
  f->pts = pts;
  f->pict_type = AV_PICTURE_TYPE_NONE;

  m.send_frame(f.get());
  m.write_encoded_packets();
  ++m.frames;
}

void MediaWriter::write_passthrough(AVPacket& packet) {
  Impl& m = *impl_;
  if (m.finished) throw std::logic_error("MediaWriter::write_passthrough after finish() for " + in_quotes(m.shown));
  const int in_index = packet.stream_index;
  if (in_index < 0 || in_index >= static_cast<int>(m.stream_map.size()) || m.stream_map[in_index] < 0 ||
      m.stream_map[in_index] == m.video_out_index) {
    av_packet_unref(&packet);
    return;
  }
  const int out_index = m.stream_map[in_index];
  // FFmpeg's mov/mp4 muxer ends every mov_text cue with an empty sample of its
  // own (the gap until the next cue). The input's gap samples are such empty
  // samples (a zero text length, nothing else): copied too, every gap would
  // appear twice.
  if (m.oc->streams[out_index]->codecpar->codec_id == AV_CODEC_ID_MOV_TEXT && packet.size == 2 && packet.data &&
      packet.data[0] == 0 && packet.data[1] == 0) {
    av_packet_unref(&packet);
    return;
  }
  av_packet_rescale_ts(&packet, m.input_tbs[in_index], m.oc->streams[out_index]->time_base);
  packet.stream_index = out_index;
  packet.pos = -1;
  const int rc = av_interleaved_write_frame(m.oc.get(), &packet);  // takes the packet's reference
  av_packet_unref(&packet);
  if (rc < 0)
    throw_av_error(rc, "av_interleaved_write_frame", __FILE__, __LINE__,
                   "cannot write to " + in_quotes(m.shown) + " (copying input stream " + std::to_string(in_index) + ")");
}

void MediaWriter::write_video_packet(AVPacket& packet) {
  Impl& m = *impl_;
  if (m.finished || m.enc)
    throw std::logic_error("MediaWriter::write_video_packet after finish() or on an encoding writer, for " +
                           in_quotes(m.shown));
  av_packet_rescale_ts(&packet, m.enc_tb, m.oc->streams[m.video_out_index]->time_base);
  packet.stream_index = m.video_out_index;
  packet.pos = -1;
  const int rc = av_interleaved_write_frame(m.oc.get(), &packet);
  av_packet_unref(&packet);
  if (rc < 0)
    throw_av_error(rc, "av_interleaved_write_frame", __FILE__, __LINE__, "cannot write to " + in_quotes(m.shown));
  ++m.frames;
}

EncodedVideo MediaWriter::encoded_video() const {
  const Impl& m = *impl_;
  EncodedVideo v;
  v.par.reset(avcodec_parameters_alloc());
  if (!v.par) throw std::bad_alloc();
  if (m.enc)
    AV_CHECK_CTX(avcodec_parameters_from_context(v.par.get(), m.enc.get()), "cannot read the encoder of " + in_quotes(m.shown));
  else
    AV_CHECK_CTX(avcodec_parameters_copy(v.par.get(), m.oc->streams[m.video_out_index]->codecpar),
                 "cannot read the video stream of " + in_quotes(m.shown));
  v.time_base = m.enc_tb;
  v.mastering_display = m.mastering_display;
  v.content_light = m.content_light;
  return v;
}

void MediaWriter::finish() {
  Impl& m = *impl_;
  if (m.finished) return;
  m.finished = true;  // even when something below throws: no second trailer attempt
  if (m.enc) {
    m.send_frame(nullptr);
    m.write_encoded_packets();
  }
  if (m.video_packets) return;  // nothing was written to a file
  AV_CHECK_CTX(av_write_trailer(m.oc.get()), "cannot write the trailer of " + in_quotes(m.shown));
  if (m.oc->pb && !(m.oc->oformat->flags & AVFMT_NOFILE))
    AV_CHECK_CTX(avio_closep(&m.oc->pb), "cannot close " + in_quotes(m.shown));
}

int64_t MediaWriter::frames_written() const noexcept { return impl_->frames; }

}  // namespace streamblur::io
