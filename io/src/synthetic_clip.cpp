#include "streamblur/io/synthetic_clip.hpp"

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

}  // namespace

void write_synthetic_clip(const std::string& path, const SyntheticClipSpec& spec) {
  if (spec.width <= 0 || spec.height <= 0 || spec.frames <= 0 || spec.fps <= 0)
    throw std::invalid_argument("synthetic clip " + in_quotes(path) + ": width, height, frames and fps must be > 0");

  // Owns the output while it is written; on an exception the file is closed
  // without a trailer.
  AVOutputFormatContextPtr out;
  {
    AVFormatContext* raw = nullptr;
    AV_CHECK_CTX(avformat_alloc_output_context2(&raw, nullptr, nullptr, path.c_str()),
                 "synthetic clip: cannot choose an output format for " + in_quotes(path));
    out.reset(raw);
  }
  AVFormatContext* oc = out.get();

  // --- video encoder -------------------------------------------------------
  const AVCodec* vcodec = avcodec_find_encoder_by_name(spec.codec.c_str());
  if (!vcodec || vcodec->type != AVMEDIA_TYPE_VIDEO)
    throw AVError("synthetic clip: unknown video encoder " + in_quotes(spec.codec), AVERROR_ENCODER_NOT_FOUND);
  if (vcodec->pix_fmts) {
    bool ok = false;
    for (const AVPixelFormat* p = vcodec->pix_fmts; *p != AV_PIX_FMT_NONE; ++p) ok = ok || *p == spec.pix_fmt;
    if (!ok)
      throw AVError("synthetic clip: encoder " + in_quotes(spec.codec) + " does not take pixel format " +
                        in_quotes(pix_fmt_name(spec.pix_fmt)),
                    AVERROR(EINVAL));
  }
  check_fillable(spec.pix_fmt);

  const bool vfr = spec.variable_frame_rate;
  const AVRational vtb = vfr ? AVRational{1, spec.fps * kVfrTicksPerFrame} : AVRational{1, spec.fps};
  const bool yuvj = spec.pix_fmt == AV_PIX_FMT_YUVJ420P || spec.pix_fmt == AV_PIX_FMT_YUVJ422P ||
                    spec.pix_fmt == AV_PIX_FMT_YUVJ444P || spec.pix_fmt == AV_PIX_FMT_YUVJ440P;
  const AVColorRange range = yuvj ? AVCOL_RANGE_JPEG : spec.color_range;

  EncodedStream video;
  video.enc.reset(avcodec_alloc_context3(vcodec));
  if (!video.enc) throw std::bad_alloc();
  AVCodecContext* venc = video.enc.get();
  venc->width = spec.width;
  venc->height = spec.height;
  venc->pix_fmt = spec.pix_fmt;
  venc->time_base = vtb;
  venc->framerate = AVRational{spec.fps, 1};
  venc->sample_aspect_ratio = spec.sample_aspect_ratio;
  venc->chroma_sample_location = spec.chroma_location;
  venc->color_range = range;
  venc->colorspace = spec.colorspace;
  venc->color_primaries = spec.color_primaries;
  venc->color_trc = spec.color_trc;
  venc->thread_count = 0;
  if (oc->oformat->flags & AVFMT_GLOBALHEADER) venc->flags |= AV_CODEC_FLAG_GLOBAL_HEADER;
  if (spec.interlaced) {
    venc->field_order = AV_FIELD_TT;
    venc->flags |= AV_CODEC_FLAG_INTERLACED_DCT | AV_CODEC_FLAG_INTERLACED_ME;
  }
  // HDR10 values (SMPTE ST 2086 / CTA-861.3): BT.2020 primaries, D65.
  AVMasteringDisplayMetadata mastering{};
  mastering.display_primaries[0][0] = av_make_q(34000, 50000);  // R
  mastering.display_primaries[0][1] = av_make_q(16000, 50000);
  mastering.display_primaries[1][0] = av_make_q(13250, 50000);  // G
  mastering.display_primaries[1][1] = av_make_q(34500, 50000);
  mastering.display_primaries[2][0] = av_make_q(7500, 50000);   // B
  mastering.display_primaries[2][1] = av_make_q(3000, 50000);
  mastering.white_point[0] = av_make_q(15635, 50000);
  mastering.white_point[1] = av_make_q(16450, 50000);
  mastering.max_luminance = av_make_q(kSyntheticMaxLuminance * 10000, 10000);
  mastering.min_luminance = av_make_q(50, 10000);
  mastering.has_primaries = mastering.has_luminance = 1;
  AVContentLightMetadata light{};
  light.MaxCLL = kSyntheticMaxCll;
  light.MaxFALL = kSyntheticMaxFall;
  AVDictionary* vopts = encoder_dict(spec, true);
  if (spec.hdr && std::strcmp(vcodec->name, "libx265") == 0)
    av_dict_set(&vopts, "x265-params",
                "master-display=G(13250,34500)B(7500,3000)R(34000,16000)WP(15635,16450)L(10000000,50):max-cll=1000,400:"
                "log-level=error",
                0);
  open_encoder(venc, vcodec, vopts, path);

  video.st = avformat_new_stream(oc, nullptr);
  if (!video.st) throw std::bad_alloc();
  AV_CHECK_CTX(avcodec_parameters_from_context(video.st->codecpar, venc), "synthetic clip " + in_quotes(path));
  video.st->time_base = vtb;
  video.st->avg_frame_rate = AVRational{spec.fps, 1};
  video.st->sample_aspect_ratio = venc->sample_aspect_ratio;
  apply_tags(video.st, spec.video_tags);
  if (spec.rotation != 0) {
    int32_t matrix[9];
    av_display_rotation_set(matrix, spec.rotation);
    set_stream_side_data(*video.st, AV_PKT_DATA_DISPLAYMATRIX, reinterpret_cast<const uint8_t*>(matrix), sizeof matrix);
  }
  if (spec.hdr) {
    set_stream_side_data(*video.st, AV_PKT_DATA_MASTERING_DISPLAY_METADATA,
                         reinterpret_cast<const uint8_t*>(&mastering), sizeof mastering);
    set_stream_side_data(*video.st, AV_PKT_DATA_CONTENT_LIGHT_LEVEL, reinterpret_cast<const uint8_t*>(&light),
                         sizeof light);
  }

  // Video ticks per frame and the clip's end, in vtb.
  std::vector<int64_t> pts(static_cast<size_t>(spec.frames));
  int64_t end = 0;
  for (int i = 0; i < spec.frames; ++i) {
    pts[i] = end;
    end += vfr ? kVfrPattern[i % (sizeof kVfrPattern / sizeof kVfrPattern[0])] : 1;
  }

  // --- audio encoder -------------------------------------------------------
  EncodedStream audio;
  int audio_frame_size = 0;
  int64_t audio_total = 0;
  if (spec.audio) {
    const AVCodec* acodec = avcodec_find_encoder_by_name(spec.audio_codec.c_str());
    if (!acodec || acodec->type != AVMEDIA_TYPE_AUDIO)
      throw AVError("synthetic clip: unknown audio encoder " + in_quotes(spec.audio_codec), AVERROR_ENCODER_NOT_FOUND);
    const AVSampleFormat sfmt = pick_sample_format(acodec);
    if (sfmt == AV_SAMPLE_FMT_NONE)
      throw AVError("synthetic clip: audio encoder " + in_quotes(spec.audio_codec) + " takes no float/s16/s32 samples",
                    AVERROR(EINVAL));
    int rate = 48000;
    if (acodec->supported_samplerates) {
      bool has = false;
      for (const int* r = acodec->supported_samplerates; *r; ++r) has = has || *r == 48000;
      if (!has) rate = acodec->supported_samplerates[0];
    }
    audio.enc.reset(avcodec_alloc_context3(acodec));
    if (!audio.enc) throw std::bad_alloc();
    AVCodecContext* aenc = audio.enc.get();
    aenc->sample_fmt = sfmt;
    aenc->sample_rate = rate;
    av_channel_layout_default(&aenc->ch_layout, 2);
    aenc->time_base = AVRational{1, rate};
    if (oc->oformat->flags & AVFMT_GLOBALHEADER) aenc->flags |= AV_CODEC_FLAG_GLOBAL_HEADER;
    open_encoder(aenc, acodec, nullptr, path);
    audio_frame_size = aenc->frame_size > 0 ? aenc->frame_size : 1024;
    audio_total = av_rescale_q_rnd(end, vtb, AVRational{1, rate}, AV_ROUND_UP);
    // Encoders with a fixed frame size that cannot take a short last frame get
    // whole frames only.
    if (!(acodec->capabilities & (AV_CODEC_CAP_VARIABLE_FRAME_SIZE | AV_CODEC_CAP_SMALL_LAST_FRAME)))
      audio_total = (audio_total + audio_frame_size - 1) / audio_frame_size * audio_frame_size;

    audio.st = avformat_new_stream(oc, nullptr);
    if (!audio.st) throw std::bad_alloc();
    AV_CHECK_CTX(avcodec_parameters_from_context(audio.st->codecpar, aenc), "synthetic clip " + in_quotes(path));
    audio.st->time_base = aenc->time_base;
    apply_tags(audio.st, spec.audio_tags);
  }

  // --- subtitle encoder ----------------------------------------------------
  EncodedStream subs;
  const AVRational stb{1, 1000};
  if (!spec.subtitle_codec.empty()) {
    const AVCodec* scodec = avcodec_find_encoder_by_name(spec.subtitle_codec.c_str());
    if (!scodec || scodec->type != AVMEDIA_TYPE_SUBTITLE)
      throw AVError("synthetic clip: unknown subtitle encoder " + in_quotes(spec.subtitle_codec),
                    AVERROR_ENCODER_NOT_FOUND);
    if (spec.subtitle_cues <= 0) throw std::invalid_argument("synthetic clip: subtitle_cues must be > 0");
    subs.enc.reset(avcodec_alloc_context3(scodec));
    if (!subs.enc) throw std::bad_alloc();
    AVCodecContext* senc = subs.enc.get();
    senc->time_base = stb;
    senc->subtitle_header = static_cast<uint8_t*>(av_mallocz(sizeof kAssHeader));  // freed with the context
    if (!senc->subtitle_header) throw std::bad_alloc();
    std::memcpy(senc->subtitle_header, kAssHeader, sizeof kAssHeader);
    senc->subtitle_header_size = static_cast<int>(sizeof kAssHeader - 1);
    if (oc->oformat->flags & AVFMT_GLOBALHEADER) senc->flags |= AV_CODEC_FLAG_GLOBAL_HEADER;
    open_encoder(senc, scodec, nullptr, path);
    subs.st = avformat_new_stream(oc, nullptr);
    if (!subs.st) throw std::bad_alloc();
    AV_CHECK_CTX(avcodec_parameters_from_context(subs.st->codecpar, senc), "synthetic clip " + in_quotes(path));
    subs.st->time_base = stb;
    apply_tags(subs.st, spec.subtitle_tags);
  }

  if (!spec.title.empty()) av_dict_set(&oc->metadata, "title", spec.title.c_str(), 0);
  if (std::strcmp(oc->oformat->name, "image2") == 0 && !is_sequence_pattern(path))
    av_opt_set_int(oc->priv_data, "update", 1, 0);
  for (int c = 0; c < spec.chapters; ++c)
    add_chapter(*oc, c + 1, vtb, end * c / spec.chapters, end * (c + 1) / spec.chapters,
                "Chapter " + std::to_string(c + 1));

  if (!(oc->oformat->flags & AVFMT_NOFILE))
    AV_CHECK_CTX(avio_open(&oc->pb, path.c_str(), AVIO_FLAG_WRITE), "synthetic clip: cannot open output " + in_quotes(path));
  AV_CHECK_CTX(avformat_write_header(oc, nullptr), "synthetic clip: cannot write the header of " + in_quotes(path));

  AVPacketPtr pkt = make_packet();
  AVFramePtr vframe = make_frame();
  vframe->format = spec.pix_fmt;
  vframe->width = spec.width;
  vframe->height = spec.height;
  AV_CHECK_CTX(av_frame_get_buffer(vframe.get(), 0), "synthetic clip: cannot allocate a frame");
  AVFramePtr aframe = make_frame();
  int64_t audio_written = 0;

  // Cue c covers [c, c + 0.6) of the clip's length / subtitle_cues, in ms.
  int cues_written = 0;
  const int64_t clip_ms = av_rescale_q(end, vtb, stb);
  auto write_subtitles_until = [&](int64_t video_pts, bool all) {
    if (!subs.enc) return;
    while (cues_written < spec.subtitle_cues) {
      const int64_t start = clip_ms * cues_written / spec.subtitle_cues;
      const int64_t duration = std::max<int64_t>(1, clip_ms * 6 / (10 * spec.subtitle_cues));
      if (!all && av_compare_ts(start, stb, video_pts, vtb) > 0) return;
      const std::string text = "0,0,Default,,0,0,0,,cue " + std::to_string(cues_written + 1);
      AVSubtitleRect rect{};
      rect.type = SUBTITLE_ASS;
      rect.ass = const_cast<char*>(text.c_str());
      AVSubtitleRect* rects[] = {&rect};
      AVSubtitle sub{};
      sub.num_rects = 1;
      sub.rects = rects;
      sub.start_display_time = 0;
      sub.end_display_time = static_cast<uint32_t>(duration);
      sub.pts = av_rescale_q(start, stb, AV_TIME_BASE_Q);
      std::vector<uint8_t> buf(4096);
      const int size = avcodec_encode_subtitle(subs.enc.get(), buf.data(), static_cast<int>(buf.size()), &sub);
      if (size < 0)
        throw_av_error(size, "avcodec_encode_subtitle", __FILE__, __LINE__, "synthetic clip " + in_quotes(path));
      AV_CHECK_CTX(av_new_packet(pkt.get(), size), "synthetic clip: subtitle packet");
      std::memcpy(pkt->data, buf.data(), static_cast<size_t>(size));
      pkt->pts = pkt->dts = start;
      pkt->duration = duration;
      pkt->flags |= AV_PKT_FLAG_KEY;
      pkt->stream_index = subs.st->index;
      av_packet_rescale_ts(pkt.get(), stb, subs.st->time_base);
      const int wrc = av_interleaved_write_frame(oc, pkt.get());
      av_packet_unref(pkt.get());
      if (wrc < 0)
        throw_av_error(wrc, "av_interleaved_write_frame", __FILE__, __LINE__, "synthetic clip " + in_quotes(path));
      ++cues_written;
    }
  };

  auto write_audio_until = [&](int64_t video_pts, bool all) {
    if (!spec.audio) return;
    AVCodecContext* aenc = audio.enc.get();
    while (audio_written < audio_total &&
           (all || av_compare_ts(audio_written, aenc->time_base, video_pts, vtb) <= 0)) {
      av_frame_unref(aframe.get());
      aframe->format = aenc->sample_fmt;
      aframe->sample_rate = aenc->sample_rate;
      AV_CHECK_CTX(av_channel_layout_copy(&aframe->ch_layout, &aenc->ch_layout), "synthetic clip: audio layout");
      aframe->nb_samples = static_cast<int>(std::min<int64_t>(audio_frame_size, audio_total - audio_written));
      AV_CHECK_CTX(av_frame_get_buffer(aframe.get(), 0), "synthetic clip: cannot allocate an audio frame");
      fill_tone(*aframe, audio_written);
      aframe->pts = audio_written;
      audio_written += aframe->nb_samples;
      encode(audio, aframe.get(), oc, pkt.get(), path);
    }
  };

  for (int i = 0; i < spec.frames; ++i) {
    write_audio_until(pts[i], false);
    write_subtitles_until(pts[i], false);
    AV_CHECK_CTX(av_frame_make_writable(vframe.get()), "synthetic clip: cannot write a frame");
    fill_picture(*vframe, Scene(spec.width, spec.height, i, spec.seed, spec.noise), range == AVCOL_RANGE_JPEG);
    vframe->pts = pts[i];
    vframe->pkt_duration = (i + 1 < spec.frames ? pts[i + 1] : end) - pts[i];
    vframe->color_range = range;
    vframe->colorspace = spec.colorspace;
    vframe->color_primaries = spec.color_primaries;
    vframe->color_trc = spec.color_trc;
    vframe->sample_aspect_ratio = spec.sample_aspect_ratio;
    vframe->chroma_location = spec.chroma_location;
    vframe->interlaced_frame = spec.interlaced ? 1 : 0;
    vframe->top_field_first = spec.interlaced ? 1 : 0;
    encode(video, vframe.get(), oc, pkt.get(), path);
  }
  write_audio_until(end, true);
  write_subtitles_until(end, true);
  encode(video, nullptr, oc, pkt.get(), path);
  if (spec.audio) encode(audio, nullptr, oc, pkt.get(), path);

  AV_CHECK_CTX(av_write_trailer(oc), "synthetic clip: cannot write the trailer of " + in_quotes(path));
  if (!(oc->oformat->flags & AVFMT_NOFILE))
    AV_CHECK_CTX(avio_closep(&oc->pb), "synthetic clip: cannot close " + in_quotes(path));
}

}  // namespace streamblur::io
