#include "streamblur/testing/synthetic_clip.hpp"

extern "C" {
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/channel_layout.h>
#include <libavutil/display.h>
#include <libavutil/mastering_display_metadata.h>
#include <libavutil/opt.h>
#include <libavutil/pixdesc.h>
}

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <stdexcept>
#include <thread>
#include <vector>

#include "streamblur/io/av_error.hpp"
#include "streamblur/io/av_ptr.hpp"
#include "streamblur/io/stream_metadata.hpp"

namespace streamblur::io {

namespace {

std::string in_quotes(const std::string& s) { return "'" + s + "'"; }

const char* pix_fmt_name(AVPixelFormat f) {
  const char* n = av_get_pix_fmt_name(f);
  return n ? n : "none";
}

// Irregular frame durations (in ticks of 1/(4*fps)) for variable-frame-rate
// clips; they average 4 ticks, i.e. the nominal rate.
constexpr int kVfrTicksPerFrame = 4;
constexpr int kVfrPattern[] = {4, 2, 6, 3, 5, 4};

// ---------------------------------------------------------------------------
// Picture content. Each component is computed a row at a time as 8-bit
// "pattern" values, then mapped to the range/depth of the format and stored.
// ---------------------------------------------------------------------------

enum class Pattern { Luma, ChromaU, ChromaV, Alpha };

struct Scene {
  int w = 0, h = 0, t = 0;
  int box_x = 0, box_y = 0, box_s = 1;
  int disc_cx = 0, disc_cy = 0, disc_r2 = 1;
  uint32_t noise_seed = 0;
  bool noise = false;
  // Per-column gradient terms (full-resolution X), so rows need no division.
  std::vector<int> luma_x, chroma_x;
  // This frame's grain values (-8..7), drawn from a cheap LCG once per frame.
  // At least twice the widest row, so a row's window fits anywhere in the first half.
  std::vector<int> grain;

  Scene(int width, int height, int frame, unsigned seed, bool with_noise) : w(width), h(height), t(frame) {
    box_s = std::max(1, std::min(w, h) / 4);
    const int box_span = std::max(1, w - box_s + 1);
    box_x = (t * std::max(1, w / 48) + static_cast<int>(seed % 7u) * 3) % box_span;
    box_y = std::max(0, (h - box_s) / 3);
    const int r = std::max(1, std::min(w, h) / 6);
    disc_r2 = r * r;
    const double a = 0.15 * t + 0.5 * (seed % 11u);
    disc_cx = w / 2 + static_cast<int>(std::lround(0.3 * w * std::cos(a)));
    disc_cy = h / 2 + static_cast<int>(std::lround(0.3 * h * std::sin(a)));
    noise_seed = (seed * 2654435761u) ^ (static_cast<uint32_t>(t) * 2246822519u) ^ 0x9e3779b9u;
    noise = with_noise;
    if (noise) {
      grain.resize(std::max<size_t>(size_t{1} << 16, 2 * static_cast<size_t>(w)));
      uint32_t g = noise_seed;
      for (int& v : grain) {
        g = g * 1664525u + 1013904223u;
        v = static_cast<int>(g >> 28) - 8;
      }
    }
    luma_x.resize(static_cast<size_t>(w));
    chroma_x.resize(static_cast<size_t>(w));
    for (int X = 0; X < w; ++X) {
      luma_x[X] = static_cast<int>((static_cast<int64_t>(X) * 256) / w);
      chroma_x[X] = static_cast<int>((static_cast<int64_t>(X) * 128) / w);
    }
  }

  // Fills row[x] (0..255) for x < cw of component row y (component
  // coordinates; sx/sy: log2 subsampling of this component).
  void row(Pattern p, int c, int y, int cw, int sx, int sy, int* out) const {
    const int Y = y << sy;
    const bool in_box_rows = Y >= box_y && Y < box_y + box_s;
    const int dy = Y - disc_cy;
    const int dy2 = dy * dy;
    switch (p) {
      case Pattern::Alpha:
        for (int x = 0; x < cw; ++x) out[x] = 255;
        return;
      case Pattern::Luma: {
        const int gy = static_cast<int>((static_cast<int64_t>(Y) * 96) / std::max(1, h)) + t * 3;
        for (int x = 0; x < cw; ++x) {
          const int X = x << sx;
          const int g = (luma_x[X] + gy) & 255;
          int v = g < 128 ? 2 * g : 2 * (255 - g) + 1;  // triangle wave: smooth gradient
          if (in_box_rows && X >= box_x && X < box_x + box_s) v = 235 - v / 4;
          const int dx = X - disc_cx;
          if (dx * dx + dy2 < disc_r2) v = 24 + (v >> 3);
          out[x] = v;
        }
        break;
      }
      case Pattern::ChromaU:
      case Pattern::ChromaV: {
        const bool u = p == Pattern::ChromaU;
        const int gy = static_cast<int>((static_cast<int64_t>(Y) * 128) / std::max(1, h));
        for (int x = 0; x < cw; ++x) {
          const int X = x << sx;
          const int gx = chroma_x[X];
          int v = u ? 64 + ((gx + t * 2) & 127) : 64 + ((gy + t) & 127);
          if (in_box_rows && X >= box_x && X < box_x + box_s) v = u ? 200 : 90;
          const int dx = X - disc_cx;
          if (dx * dx + dy2 < disc_r2) v = u ? 100 : 40;
          out[x] = v;
        }
        break;
      }
    }
    if (noise) {
      // Film-like grain: a window of this frame's noise table at a random
      // offset per row (rows must not repeat each other), luma +-8, chroma +-4.
      // Row offsets come from a hash of (component, row), so rows can be
      // filled in any order and on any thread with the same result.
      uint32_t h = noise_seed ^ (static_cast<uint32_t>(c) * 0x9e3779b9u) ^ (static_cast<uint32_t>(y) * 0x85ebca6bu);
      h ^= h >> 16;
      h *= 0x7feb352du;
      h ^= h >> 15;
      h *= 0x846ca68bu;
      h ^= h >> 16;
      const int* n = grain.data() + h % (grain.size() / 2);
      const int scale = p == Pattern::Luma ? 0 : 1;
      for (int x = 0; x < cw; ++x) {
        const int v = out[x] + (n[x] >> scale);
        out[x] = v < 0 ? 0 : (v > 255 ? 255 : v);
      }
    }
  }
};

// Checks that the format is one this writer can fill: byte-addressed
// components of up to 16 bits.
void check_fillable(AVPixelFormat f) {
  const AVPixFmtDescriptor* d = av_pix_fmt_desc_get(f);
  if (!d) throw std::runtime_error("synthetic clip: unknown pixel format");
  if (d->flags & (AV_PIX_FMT_FLAG_BITSTREAM | AV_PIX_FMT_FLAG_PAL | AV_PIX_FMT_FLAG_HWACCEL |
                  AV_PIX_FMT_FLAG_BAYER | AV_PIX_FMT_FLAG_FLOAT))
    throw std::runtime_error(std::string("synthetic clip: pixel format '") + pix_fmt_name(f) + "' is not supported");
  for (int c = 0; c < d->nb_components; ++c) {
    const AVComponentDescriptor& k = d->comp[c];
    const bool byte = k.depth == 8 && k.shift == 0;
    const bool word = k.depth > 8 && k.depth + k.shift <= 16 && k.step % 2 == 0 && k.offset % 2 == 0;
    if (!byte && !word)
      throw std::runtime_error(std::string("synthetic clip: pixel format '") + pix_fmt_name(f) +
                               "' is not supported");
  }
}

// Fills rows [y0, y1) of component c.
void fill_rows(AVFrame& frame, const AVPixFmtDescriptor* d, const Scene& scene, bool full_range, int c, int y0,
               int y1, std::vector<int>& row) {
  const bool rgb = d->flags & AV_PIX_FMT_FLAG_RGB;
  const bool big_endian = d->flags & AV_PIX_FMT_FLAG_BE;
  const AVComponentDescriptor& comp = d->comp[c];
  const bool alpha = (d->flags & AV_PIX_FMT_FLAG_ALPHA) && c == d->nb_components - 1;
  const bool chroma = !rgb && !alpha && (c == 1 || c == 2);
  Pattern p = Pattern::Luma;
  if (alpha)
    p = Pattern::Alpha;
  else if (c == 1)
    p = Pattern::ChromaU;
  else if (c == 2)
    p = Pattern::ChromaV;
  const int sx = chroma ? d->log2_chroma_w : 0;
  const int sy = chroma ? d->log2_chroma_h : 0;
  const int cw = AV_CEIL_RSHIFT(frame.width, sx);
  const int depth = comp.depth;
  // Level mapping (in 8-bit units, then scaled to the depth): limited range
  // for YUV unless full range was asked for.
  int lo = 0, span = 255;
  if (!rgb && !alpha && !full_range) {
    lo = 16;
    span = chroma ? 224 : 219;
  }
  const int up = depth - 8;
  const int shift = comp.shift;
  const int step = comp.step;
  row.resize(static_cast<size_t>(cw));
  for (int y = y0; y < y1; ++y) {
    scene.row(p, c, y, cw, sx, sy, row.data());
    uint8_t* dst = frame.data[comp.plane] + static_cast<ptrdiff_t>(y) * frame.linesize[comp.plane] + comp.offset;
    if (depth <= 8) {
      if (step == 1) {
        for (int x = 0; x < cw; ++x) dst[x] = static_cast<uint8_t>(lo + (row[x] * span + 127) / 255);
      } else {
        for (int x = 0; x < cw; ++x)
          dst[static_cast<ptrdiff_t>(x) * step] = static_cast<uint8_t>(lo + (row[x] * span + 127) / 255);
      }
    } else {
      const int max = (1 << depth) - 1;
      for (int x = 0; x < cw; ++x) {
        int v = alpha ? max : ((lo << up) + ((row[x] * span) << up) / 255);
        const auto s = static_cast<uint16_t>(v << shift);
        uint8_t* o = dst + static_cast<ptrdiff_t>(x) * step;
        if (big_endian) {
          o[0] = static_cast<uint8_t>(s >> 8);
          o[1] = static_cast<uint8_t>(s & 0xff);
        } else {
          o[0] = static_cast<uint8_t>(s & 0xff);
          o[1] = static_cast<uint8_t>(s >> 8);
        }
      }
    }
  }
}

// Fills every component; large pictures are split into row bands on a few
// threads (4K clips for the benchmark would otherwise be bound by this).
void fill_picture(AVFrame& frame, const Scene& scene, bool full_range) {
  const AVPixFmtDescriptor* d = av_pix_fmt_desc_get(static_cast<AVPixelFormat>(frame.format));
  const bool rgb = d->flags & AV_PIX_FMT_FLAG_RGB;
  auto rows_of = [&](int c) {
    const bool alpha = (d->flags & AV_PIX_FMT_FLAG_ALPHA) && c == d->nb_components - 1;
    const bool chroma = !rgb && !alpha && (c == 1 || c == 2);
    return AV_CEIL_RSHIFT(frame.height, chroma ? d->log2_chroma_h : 0);
  };
  const int64_t samples = static_cast<int64_t>(frame.width) * frame.height;
  const unsigned hw = std::max(1u, std::thread::hardware_concurrency());
  const int bands = static_cast<int>(std::clamp<int64_t>(samples / (256 * 1024), 1, std::min(8u, hw)));
  auto fill_band = [&](int band) {
    std::vector<int> row;
    for (int c = 0; c < d->nb_components; ++c) {
      const int h = rows_of(c);
      fill_rows(frame, d, scene, full_range, c, h * band / bands, h * (band + 1) / bands, row);
    }
  };
  if (bands == 1) {
    fill_band(0);
    return;
  }
  std::vector<std::thread> workers;
  workers.reserve(static_cast<size_t>(bands - 1));
  for (int b = 1; b < bands; ++b) workers.emplace_back(fill_band, b);
  fill_band(0);
  for (auto& t : workers) t.join();
}

// ---------------------------------------------------------------------------
// Audio: a stereo sine tone (440 Hz left, 660 Hz right).
// ---------------------------------------------------------------------------

AVSampleFormat pick_sample_format(const AVCodec* codec) {
  static constexpr AVSampleFormat preferred[] = {AV_SAMPLE_FMT_FLTP, AV_SAMPLE_FMT_FLT,  AV_SAMPLE_FMT_S16,
                                                 AV_SAMPLE_FMT_S16P, AV_SAMPLE_FMT_S32,  AV_SAMPLE_FMT_S32P};
  if (!codec->sample_fmts) return AV_SAMPLE_FMT_S16;
  for (AVSampleFormat want : preferred)
    for (const AVSampleFormat* f = codec->sample_fmts; *f != AV_SAMPLE_FMT_NONE; ++f)
      if (*f == want) return want;
  return AV_SAMPLE_FMT_NONE;
}

void fill_tone(AVFrame& f, int64_t first_sample) {
  const int rate = f.sample_rate;
  const int channels = f.ch_layout.nb_channels;
  const auto fmt = static_cast<AVSampleFormat>(f.format);
  const bool planar = av_sample_fmt_is_planar(fmt);
  for (int i = 0; i < f.nb_samples; ++i) {
    const double t = static_cast<double>(first_sample + i) / rate;
    for (int c = 0; c < channels; ++c) {
      const double hz = c == 0 ? 440.0 : 660.0;
      const double s = 0.25 * std::sin(2.0 * M_PI * hz * t);
      const int idx = planar ? i : i * channels + c;
      uint8_t* base = f.extended_data[planar ? c : 0];
      switch (fmt) {
        case AV_SAMPLE_FMT_FLT:
        case AV_SAMPLE_FMT_FLTP:
          reinterpret_cast<float*>(base)[idx] = static_cast<float>(s);
          break;
        case AV_SAMPLE_FMT_S16:
        case AV_SAMPLE_FMT_S16P:
          reinterpret_cast<int16_t*>(base)[idx] = static_cast<int16_t>(std::lround(s * 32767.0));
          break;
        case AV_SAMPLE_FMT_S32:
        case AV_SAMPLE_FMT_S32P:
          reinterpret_cast<int32_t*>(base)[idx] = static_cast<int32_t>(std::lround(s * 2147483647.0));
          break;
        default:
          break;
      }
    }
  }
}

AVDictionary* encoder_dict(const SyntheticClipSpec& spec, bool video) {
  AVDictionary* d = nullptr;
  if (video) {
    if (spec.crf >= 0) av_dict_set(&d, "crf", std::to_string(spec.crf).c_str(), 0);
    if (!spec.preset.empty()) av_dict_set(&d, "preset", spec.preset.c_str(), 0);
    if (!spec.video_options.empty() && av_dict_parse_string(&d, spec.video_options.c_str(), "=", ":", 0) < 0) {
      av_dict_free(&d);
      throw AVError("synthetic clip: cannot parse the video options '" + spec.video_options + "'", AVERROR(EINVAL));
    }
  }
  return d;
}

void open_encoder(AVCodecContext* ctx, const AVCodec* codec, AVDictionary* opts_raw, const std::string& path) {
  AVDictionaryPtr opts(opts_raw);
  const int rc = with_dict(opts, [&](AVDictionary** d) { return avcodec_open2(ctx, codec, d); });
  if (rc < 0)
    throw_av_error(rc, "avcodec_open2", __FILE__, __LINE__,
                   "synthetic clip " + in_quotes(path) + ": cannot open encoder " + in_quotes(codec->name));
  if (const AVDictionaryEntry* e = av_dict_get(opts.get(), "", nullptr, AV_DICT_IGNORE_SUFFIX))
    throw AVError("synthetic clip " + in_quotes(path) + ": encoder " + in_quotes(codec->name) + " has no option " +
                      in_quotes(e->key),
                  AVERROR_OPTION_NOT_FOUND);
}

struct EncodedStream {
  AVCodecContextPtr enc;
  AVStream* st = nullptr;
};

void drain(EncodedStream& s, AVFormatContext* oc, AVPacket* pkt, const std::string& path) {
  for (;;) {
    const int rc = avcodec_receive_packet(s.enc.get(), pkt);
    if (rc == AVERROR(EAGAIN) || rc == AVERROR_EOF) return;
    if (rc < 0) throw_av_error(rc, "avcodec_receive_packet", __FILE__, __LINE__, "synthetic clip " + in_quotes(path));
    pkt->stream_index = s.st->index;
    av_packet_rescale_ts(pkt, s.enc->time_base, s.st->time_base);
    const int wrc = av_interleaved_write_frame(oc, pkt);
    av_packet_unref(pkt);
    if (wrc < 0) throw_av_error(wrc, "av_interleaved_write_frame", __FILE__, __LINE__, "synthetic clip " + in_quotes(path));
  }
}

void encode(EncodedStream& s, const AVFrame* frame, AVFormatContext* oc, AVPacket* pkt, const std::string& path) {
  for (;;) {
    const int rc = avcodec_send_frame(s.enc.get(), frame);
    if (rc == AVERROR(EAGAIN)) {
      drain(s, oc, pkt, path);
      continue;
    }
    if (rc < 0) throw_av_error(rc, "avcodec_send_frame", __FILE__, __LINE__, "synthetic clip " + in_quotes(path));
    break;
  }
  drain(s, oc, pkt, path);
}

// The subtitle header text encoders (ass, subrip, mov_text) parse: one
// "Default" style, as FFmpeg's own default header has.
constexpr char kAssHeader[] =
    "[Script Info]\r\n"
    "ScriptType: v4.00+\r\n"
    "PlayResX: 384\r\n"
    "PlayResY: 288\r\n"
    "\r\n"
    "[V4+ Styles]\r\n"
    "Format: Name, Fontname, Fontsize, PrimaryColour, SecondaryColour, OutlineColour, BackColour, Bold, Italic, "
    "Underline, StrikeOut, ScaleX, ScaleY, Spacing, Angle, BorderStyle, Outline, Shadow, Alignment, MarginL, MarginR, "
    "MarginV, Encoding\r\n"
    "Style: Default,Arial,16,&Hffffff,&Hffffff,&H0,&H0,0,0,0,0,100,100,0,0,1,1,0,2,10,10,10,1\r\n"
    "\r\n"
    "[Events]\r\n"
    "Format: Layer, Start, End, Style, Name, MarginL, MarginR, MarginV, Effect, Text\r\n";

void apply_tags(AVStream* st, const SyntheticStreamTags& tags) {
  if (!tags.language.empty()) av_dict_set(&st->metadata, "language", tags.language.c_str(), 0);
  if (!tags.title.empty()) av_dict_set(&st->metadata, "title", tags.title.c_str(), 0);
  st->disposition = tags.disposition;
}

// ---------------------------------------------------------------------------
// The clip's streams, set up in the order they are written: video, audio,
// subtitles.
// ---------------------------------------------------------------------------

// When each video frame starts and where the clip ends, in ticks of `tb`.
struct Timeline {
  AVRational tb{1, 1};
  std::vector<int64_t> pts;  // of frame i
  int64_t end = 0;
};

Timeline make_timeline(const SyntheticClipSpec& spec) {
  const bool vfr = spec.variable_frame_rate;
  Timeline t;
  t.tb = vfr ? AVRational{1, spec.fps * kVfrTicksPerFrame} : AVRational{1, spec.fps};
  t.pts.resize(static_cast<size_t>(spec.frames));
  for (int i = 0; i < spec.frames; ++i) {
    t.pts[i] = t.end;
    t.end += vfr ? kVfrPattern[i % std::size(kVfrPattern)] : 1;
  }
  return t;
}

// The yuvj formats are full range whatever the spec says.
AVColorRange clip_range(const SyntheticClipSpec& spec) {
  const bool yuvj = spec.pix_fmt == AV_PIX_FMT_YUVJ420P || spec.pix_fmt == AV_PIX_FMT_YUVJ422P ||
                    spec.pix_fmt == AV_PIX_FMT_YUVJ444P || spec.pix_fmt == AV_PIX_FMT_YUVJ440P;
  return yuvj ? AVCOL_RANGE_JPEG : spec.color_range;
}

// HDR10 values (SMPTE ST 2086 / CTA-861.3): BT.2020 primaries, D65.
AVMasteringDisplayMetadata hdr_mastering_display() {
  AVMasteringDisplayMetadata m{};
  m.display_primaries[0][0] = av_make_q(34000, 50000);  // R
  m.display_primaries[0][1] = av_make_q(16000, 50000);
  m.display_primaries[1][0] = av_make_q(13250, 50000);  // G
  m.display_primaries[1][1] = av_make_q(34500, 50000);
  m.display_primaries[2][0] = av_make_q(7500, 50000);   // B
  m.display_primaries[2][1] = av_make_q(3000, 50000);
  m.white_point[0] = av_make_q(15635, 50000);
  m.white_point[1] = av_make_q(16450, 50000);
  m.max_luminance = av_make_q(kSyntheticMaxLuminance * 10000, 10000);
  m.min_luminance = av_make_q(50, 10000);
  m.has_primaries = m.has_luminance = 1;
  return m;
}

// The spec's video encoder, refused unless it takes the spec's pixel format
// and this writer can fill that format.
const AVCodec* find_video_encoder(const SyntheticClipSpec& spec) {
  const AVCodec* codec = avcodec_find_encoder_by_name(spec.codec.c_str());
  if (!codec || codec->type != AVMEDIA_TYPE_VIDEO)
    throw AVError("synthetic clip: unknown video encoder " + in_quotes(spec.codec), AVERROR_ENCODER_NOT_FOUND);
  if (codec->pix_fmts) {
    bool ok = false;
    for (const AVPixelFormat* p = codec->pix_fmts; *p != AV_PIX_FMT_NONE; ++p) ok = ok || *p == spec.pix_fmt;
    if (!ok)
      throw AVError("synthetic clip: encoder " + in_quotes(spec.codec) + " does not take pixel format " +
                        in_quotes(pix_fmt_name(spec.pix_fmt)),
                    AVERROR(EINVAL));
  }
  check_fillable(spec.pix_fmt);
  return codec;
}

// Opens the video encoder with the spec's size, rate, colour tags, aspect
// ratio, field order and options (libx265 also gets the HDR values).
AVCodecContextPtr open_video_encoder(const AVCodec* codec, const SyntheticClipSpec& spec, const Timeline& t,
                                     const AVFormatContext& oc, const std::string& path) {
  AVCodecContextPtr enc(avcodec_alloc_context3(codec));
  if (!enc) throw std::bad_alloc();
  enc->width = spec.width;
  enc->height = spec.height;
  enc->pix_fmt = spec.pix_fmt;
  enc->time_base = t.tb;
  enc->framerate = AVRational{spec.fps, 1};
  enc->sample_aspect_ratio = spec.sample_aspect_ratio;
  enc->chroma_sample_location = spec.chroma_location;
  enc->color_range = clip_range(spec);
  enc->colorspace = spec.colorspace;
  enc->color_primaries = spec.color_primaries;
  enc->color_trc = spec.color_trc;
  enc->thread_count = 0;
  if (oc.oformat->flags & AVFMT_GLOBALHEADER) enc->flags |= AV_CODEC_FLAG_GLOBAL_HEADER;
  if (spec.interlaced) {
    enc->field_order = AV_FIELD_TT;
    enc->flags |= AV_CODEC_FLAG_INTERLACED_DCT | AV_CODEC_FLAG_INTERLACED_ME;
  }
  AVDictionary* opts = encoder_dict(spec, true);
  if (spec.hdr && std::strcmp(codec->name, "libx265") == 0)
    av_dict_set(&opts, "x265-params",
                "master-display=G(13250,34500)B(7500,3000)R(34000,16000)WP(15635,16450)L(10000000,50):max-cll=1000,400:"
                "log-level=error",
                0);
  open_encoder(enc.get(), codec, opts, path);
  return enc;
}

// The video stream: the encoder's parameters, the spec's tags, display
// matrix and HDR side data.
EncodedStream add_video_stream(AVFormatContext* oc, const SyntheticClipSpec& spec, const Timeline& t,
                               const std::string& path) {
  EncodedStream video;
  video.enc = open_video_encoder(find_video_encoder(spec), spec, t, *oc, path);
  video.st = avformat_new_stream(oc, nullptr);
  if (!video.st) throw std::bad_alloc();
  AV_CHECK_CTX(avcodec_parameters_from_context(video.st->codecpar, video.enc.get()), "synthetic clip " + in_quotes(path));
  video.st->time_base = t.tb;
  video.st->avg_frame_rate = AVRational{spec.fps, 1};
  video.st->sample_aspect_ratio = video.enc->sample_aspect_ratio;
  apply_tags(video.st, spec.video_tags);
  if (spec.rotation != 0) {
    int32_t matrix[9];
    av_display_rotation_set(matrix, spec.rotation);
    set_stream_side_data(*video.st, AV_PKT_DATA_DISPLAYMATRIX, reinterpret_cast<const uint8_t*>(matrix), sizeof matrix);
  }
  if (spec.hdr) {
    const AVMasteringDisplayMetadata mastering = hdr_mastering_display();
    AVContentLightMetadata light{};
    light.MaxCLL = kSyntheticMaxCll;
    light.MaxFALL = kSyntheticMaxFall;
    set_stream_side_data(*video.st, AV_PKT_DATA_MASTERING_DISPLAY_METADATA,
                         reinterpret_cast<const uint8_t*>(&mastering), sizeof mastering);
    set_stream_side_data(*video.st, AV_PKT_DATA_CONTENT_LIGHT_LEVEL, reinterpret_cast<const uint8_t*>(&light),
                         sizeof light);
  }
  return video;
}

// The audio track: its encoder and stream, and how many samples it holds.
struct AudioTrack {
  EncodedStream s;
  int frame_size = 0;   // samples per frame sent to the encoder
  int64_t total = 0;    // samples in the clip
  int64_t written = 0;  // samples sent so far
};

// 48 kHz when the encoder takes it, else its first rate.
int audio_rate(const AVCodec* codec) {
  if (!codec->supported_samplerates) return 48000;
  for (const int* r = codec->supported_samplerates; *r; ++r)
    if (*r == 48000) return 48000;
  return codec->supported_samplerates[0];
}

AVCodecContextPtr open_audio_encoder(const SyntheticClipSpec& spec, const AVFormatContext& oc, const std::string& path) {
  const AVCodec* codec = avcodec_find_encoder_by_name(spec.audio_codec.c_str());
  if (!codec || codec->type != AVMEDIA_TYPE_AUDIO)
    throw AVError("synthetic clip: unknown audio encoder " + in_quotes(spec.audio_codec), AVERROR_ENCODER_NOT_FOUND);
  const AVSampleFormat sfmt = pick_sample_format(codec);
  if (sfmt == AV_SAMPLE_FMT_NONE)
    throw AVError("synthetic clip: audio encoder " + in_quotes(spec.audio_codec) + " takes no float/s16/s32 samples",
                  AVERROR(EINVAL));
  AVCodecContextPtr enc(avcodec_alloc_context3(codec));
  if (!enc) throw std::bad_alloc();
  enc->sample_fmt = sfmt;
  enc->sample_rate = audio_rate(codec);
  av_channel_layout_default(&enc->ch_layout, 2);
  enc->time_base = AVRational{1, enc->sample_rate};
  if (oc.oformat->flags & AVFMT_GLOBALHEADER) enc->flags |= AV_CODEC_FLAG_GLOBAL_HEADER;
  open_encoder(enc.get(), codec, nullptr, path);
  return enc;
}

// A stereo tone as long as the video (whole encoder frames when the encoder
// cannot take a short last one).
AudioTrack add_audio_stream(AVFormatContext* oc, const SyntheticClipSpec& spec, const Timeline& t,
                            const std::string& path) {
  AudioTrack audio;
  audio.s.enc = open_audio_encoder(spec, *oc, path);
  AVCodecContext* enc = audio.s.enc.get();
  audio.frame_size = enc->frame_size > 0 ? enc->frame_size : 1024;
  audio.total = av_rescale_q_rnd(t.end, t.tb, AVRational{1, enc->sample_rate}, AV_ROUND_UP);
  if (!(enc->codec->capabilities & (AV_CODEC_CAP_VARIABLE_FRAME_SIZE | AV_CODEC_CAP_SMALL_LAST_FRAME)))
    audio.total = (audio.total + audio.frame_size - 1) / audio.frame_size * audio.frame_size;
  audio.s.st = avformat_new_stream(oc, nullptr);
  if (!audio.s.st) throw std::bad_alloc();
  AV_CHECK_CTX(avcodec_parameters_from_context(audio.s.st->codecpar, enc), "synthetic clip " + in_quotes(path));
  audio.s.st->time_base = enc->time_base;
  apply_tags(audio.s.st, spec.audio_tags);
  return audio;
}

// Subtitle packets are timed in milliseconds.
constexpr AVRational kSubtitleTimeBase{1, 1000};

EncodedStream add_subtitle_stream(AVFormatContext* oc, const SyntheticClipSpec& spec, const std::string& path) {
  const AVCodec* codec = avcodec_find_encoder_by_name(spec.subtitle_codec.c_str());
  if (!codec || codec->type != AVMEDIA_TYPE_SUBTITLE)
    throw AVError("synthetic clip: unknown subtitle encoder " + in_quotes(spec.subtitle_codec),
                  AVERROR_ENCODER_NOT_FOUND);
  if (spec.subtitle_cues <= 0) throw std::invalid_argument("synthetic clip: subtitle_cues must be > 0");
  EncodedStream subs;
  subs.enc.reset(avcodec_alloc_context3(codec));
  if (!subs.enc) throw std::bad_alloc();
  AVCodecContext* enc = subs.enc.get();
  enc->time_base = kSubtitleTimeBase;
  enc->subtitle_header = static_cast<uint8_t*>(av_mallocz(sizeof kAssHeader));  // freed with the context
  if (!enc->subtitle_header) throw std::bad_alloc();
  std::memcpy(enc->subtitle_header, kAssHeader, sizeof kAssHeader);
  enc->subtitle_header_size = static_cast<int>(sizeof kAssHeader - 1);
  if (oc->oformat->flags & AVFMT_GLOBALHEADER) enc->flags |= AV_CODEC_FLAG_GLOBAL_HEADER;
  open_encoder(enc, codec, nullptr, path);
  subs.st = avformat_new_stream(oc, nullptr);
  if (!subs.st) throw std::bad_alloc();
  AV_CHECK_CTX(avcodec_parameters_from_context(subs.st->codecpar, enc), "synthetic clip " + in_quotes(path));
  subs.st->time_base = kSubtitleTimeBase;
  apply_tags(subs.st, spec.subtitle_tags);
  return subs;
}

// ---------------------------------------------------------------------------
// Writing: the header, the frames of every stream interleaved by time, the
// encoders drained, the trailer.
// ---------------------------------------------------------------------------

// One write_synthetic_clip call. Members are freed in reverse order: the
// frames and the encoders before the output, which an exception closes
// without a trailer.
class ClipWriter {
 public:
  ClipWriter(const std::string& path, const SyntheticClipSpec& spec);
  void write();

 private:
  void write_header();
  void write_audio_until(int64_t video_pts, bool all);
  void write_subtitles_until(int64_t video_pts, bool all);
  void write_cue(int64_t start_ms, int64_t duration_ms);
  void write_video_frame(int i);
  void finish();

  const std::string& path_;
  const SyntheticClipSpec& spec_;
  AVOutputFormatContextPtr out_;
  AVFormatContext* oc_ = nullptr;
  Timeline timeline_;
  AVColorRange range_;
  EncodedStream video_;
  AudioTrack audio_;
  EncodedStream subs_;
  int cues_written_ = 0;
  AVPacketPtr pkt_;
  AVFramePtr vframe_, aframe_;
};

const SyntheticClipSpec& checked(const std::string& path, const SyntheticClipSpec& spec) {
  if (spec.width <= 0 || spec.height <= 0 || spec.frames <= 0 || spec.fps <= 0)
    throw std::invalid_argument("synthetic clip " + in_quotes(path) + ": width, height, frames and fps must be > 0");
  return spec;
}

AVOutputFormatContextPtr alloc_output(const std::string& path) {
  AVFormatContext* raw = nullptr;
  AV_CHECK_CTX(avformat_alloc_output_context2(&raw, nullptr, nullptr, path.c_str()),
               "synthetic clip: cannot choose an output format for " + in_quotes(path));
  return AVOutputFormatContextPtr(raw);
}

ClipWriter::ClipWriter(const std::string& path, const SyntheticClipSpec& spec)
    : path_(path),
      spec_(checked(path, spec)),
      out_(alloc_output(path)),
      oc_(out_.get()),
      timeline_(make_timeline(spec)),
      range_(clip_range(spec)) {
  video_ = add_video_stream(oc_, spec, timeline_, path);
  if (spec.audio) audio_ = add_audio_stream(oc_, spec, timeline_, path);
  if (!spec.subtitle_codec.empty()) subs_ = add_subtitle_stream(oc_, spec, path);
  pkt_ = make_packet();
  vframe_ = make_frame();
  vframe_->format = spec.pix_fmt;
  vframe_->width = spec.width;
  vframe_->height = spec.height;
  AV_CHECK_CTX(av_frame_get_buffer(vframe_.get(), 0), "synthetic clip: cannot allocate a frame");
  aframe_ = make_frame();
}

// Container metadata and chapters, then the file and its header.
void ClipWriter::write_header() {
  if (!spec_.title.empty()) av_dict_set(&oc_->metadata, "title", spec_.title.c_str(), 0);
  if (std::strcmp(oc_->oformat->name, "image2") == 0 && !is_sequence_pattern(path_))
    av_opt_set_int(oc_->priv_data, "update", 1, 0);
  const int64_t end = timeline_.end;
  for (int c = 0; c < spec_.chapters; ++c)
    add_chapter(*oc_, c + 1, timeline_.tb, end * c / spec_.chapters, end * (c + 1) / spec_.chapters,
                "Chapter " + std::to_string(c + 1));
  if (!(oc_->oformat->flags & AVFMT_NOFILE))
    AV_CHECK_CTX(avio_open(&oc_->pb, path_.c_str(), AVIO_FLAG_WRITE),
                 "synthetic clip: cannot open output " + in_quotes(path_));
  AV_CHECK_CTX(avformat_write_header(oc_, nullptr), "synthetic clip: cannot write the header of " + in_quotes(path_));
}

void ClipWriter::write() {
  write_header();
  for (int i = 0; i < spec_.frames; ++i) {
    write_audio_until(timeline_.pts[i], false);
    write_subtitles_until(timeline_.pts[i], false);
    write_video_frame(i);
  }
  write_audio_until(timeline_.end, true);
  write_subtitles_until(timeline_.end, true);
  finish();
}

// The tone's frames that start at or before video_pts (all: the rest).
void ClipWriter::write_audio_until(int64_t video_pts, bool all) {
  if (!spec_.audio) return;
  AVCodecContext* enc = audio_.s.enc.get();
  while (audio_.written < audio_.total &&
         (all || av_compare_ts(audio_.written, enc->time_base, video_pts, timeline_.tb) <= 0)) {
    av_frame_unref(aframe_.get());
    aframe_->format = enc->sample_fmt;
    aframe_->sample_rate = enc->sample_rate;
    AV_CHECK_CTX(av_channel_layout_copy(&aframe_->ch_layout, &enc->ch_layout), "synthetic clip: audio layout");
    aframe_->nb_samples = static_cast<int>(std::min<int64_t>(audio_.frame_size, audio_.total - audio_.written));
    AV_CHECK_CTX(av_frame_get_buffer(aframe_.get(), 0), "synthetic clip: cannot allocate an audio frame");
    fill_tone(*aframe_, audio_.written);
    aframe_->pts = audio_.written;
    audio_.written += aframe_->nb_samples;
    encode(audio_.s, aframe_.get(), oc_, pkt_.get(), path_);
  }
}

// Cue c covers [c, c + 0.6) of the clip's length / subtitle_cues; the cues
// that start at or before video_pts are written (all: the rest).
void ClipWriter::write_subtitles_until(int64_t video_pts, bool all) {
  if (!subs_.enc) return;
  const int64_t clip_ms = av_rescale_q(timeline_.end, timeline_.tb, kSubtitleTimeBase);
  while (cues_written_ < spec_.subtitle_cues) {
    const int64_t start = clip_ms * cues_written_ / spec_.subtitle_cues;
    const int64_t duration = std::max<int64_t>(1, clip_ms * 6 / (10 * spec_.subtitle_cues));
    if (!all && av_compare_ts(start, kSubtitleTimeBase, video_pts, timeline_.tb) > 0) return;
    write_cue(start, duration);
    ++cues_written_;
  }
}

// Encodes cue cues_written_ + 1 ("cue N") and writes its packet.
void ClipWriter::write_cue(int64_t start_ms, int64_t duration_ms) {
  const std::string text = "0,0,Default,,0,0,0,,cue " + std::to_string(cues_written_ + 1);
  AVSubtitleRect rect{};
  rect.type = SUBTITLE_ASS;
  rect.ass = const_cast<char*>(text.c_str());
  AVSubtitleRect* rects[] = {&rect};
  AVSubtitle sub{};
  sub.num_rects = 1;
  sub.rects = rects;
  sub.start_display_time = 0;
  sub.end_display_time = static_cast<uint32_t>(duration_ms);
  sub.pts = av_rescale_q(start_ms, kSubtitleTimeBase, AV_TIME_BASE_Q);
  std::vector<uint8_t> buf(4096);
  const int size = avcodec_encode_subtitle(subs_.enc.get(), buf.data(), static_cast<int>(buf.size()), &sub);
  if (size < 0) throw_av_error(size, "avcodec_encode_subtitle", __FILE__, __LINE__, "synthetic clip " + in_quotes(path_));
  AVPacket* pkt = pkt_.get();
  AV_CHECK_CTX(av_new_packet(pkt, size), "synthetic clip: subtitle packet");
  std::memcpy(pkt->data, buf.data(), static_cast<size_t>(size));
  pkt->pts = pkt->dts = start_ms;
  pkt->duration = duration_ms;
  pkt->flags |= AV_PKT_FLAG_KEY;
  pkt->stream_index = subs_.st->index;
  av_packet_rescale_ts(pkt, kSubtitleTimeBase, subs_.st->time_base);
  const int wrc = av_interleaved_write_frame(oc_, pkt);
  av_packet_unref(pkt);
  if (wrc < 0) throw_av_error(wrc, "av_interleaved_write_frame", __FILE__, __LINE__, "synthetic clip " + in_quotes(path_));
}

// Draws frame i and encodes it with its time, duration and tags.
void ClipWriter::write_video_frame(int i) {
  AVFrame* f = vframe_.get();
  AV_CHECK_CTX(av_frame_make_writable(f), "synthetic clip: cannot write a frame");
  fill_picture(*f, Scene(spec_.width, spec_.height, i, spec_.seed, spec_.noise), range_ == AVCOL_RANGE_JPEG);
  const std::vector<int64_t>& pts = timeline_.pts;
  f->pts = pts[i];
  f->pkt_duration = (i + 1 < spec_.frames ? pts[i + 1] : timeline_.end) - pts[i];
  f->color_range = range_;
  f->colorspace = spec_.colorspace;
  f->color_primaries = spec_.color_primaries;
  f->color_trc = spec_.color_trc;
  f->sample_aspect_ratio = spec_.sample_aspect_ratio;
  f->chroma_location = spec_.chroma_location;
  f->interlaced_frame = spec_.interlaced ? 1 : 0;
  f->top_field_first = spec_.interlaced ? 1 : 0;
  encode(video_, f, oc_, pkt_.get(), path_);
}

// Drains the encoders, then writes the trailer and closes the file.
void ClipWriter::finish() {
  encode(video_, nullptr, oc_, pkt_.get(), path_);
  if (spec_.audio) encode(audio_.s, nullptr, oc_, pkt_.get(), path_);
  AV_CHECK_CTX(av_write_trailer(oc_), "synthetic clip: cannot write the trailer of " + in_quotes(path_));
  if (!(oc_->oformat->flags & AVFMT_NOFILE))
    AV_CHECK_CTX(avio_closep(&oc_->pb), "synthetic clip: cannot close " + in_quotes(path_));
}

}  // namespace

void write_synthetic_clip(const std::string& path, const SyntheticClipSpec& spec) {
  ClipWriter(path, spec).write();
}

}  // namespace streamblur::io
