// Tests of io/: media are made at test time with write_synthetic_clip (and,
// for the audio-only case, a few libavformat calls) in a temporary folder.
#include <gtest/gtest.h>

#include "test_support.hpp"

extern "C" {
#include <libavutil/channel_layout.h>
#include <libavutil/imgutils.h>
#include <libavutil/log.h>
#include <libavutil/mastering_display_metadata.h>
#include <libavutil/pixdesc.h>
}

#include <algorithm>
#include <atomic>
#include <cmath>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <ostream>
#include <random>
#include <string>
#include <vector>

#include <unistd.h>

#include "streamblur/io/av_error.hpp"
#include "streamblur/io/av_ptr.hpp"
#include "streamblur/io/convert.hpp"
#include "streamblur/io/reader.hpp"
#include "streamblur/io/stream_metadata.hpp"
#include "streamblur/io/writer.hpp"
#include "streamblur/testing/synthetic_clip.hpp"

namespace fs = std::filesystem;
using namespace streamblur::io;
using namespace sbtest;

namespace {



struct Decoded {
  VideoInfo info;
  std::vector<AVFramePtr> frames;
  std::vector<AVPacketPtr> passthrough;  // in demux order
  int warnings = 0;
  std::string title;
  int nb_streams = 0;
};

std::string container_title(const AVFormatContext* fmt) {
  const AVDictionaryEntry* e = av_dict_get(fmt->metadata, "title", nullptr, 0);
  return e ? e->value : "";
}

Decoded read_all(const std::string& path) {
  Decoded d;
  MediaReader reader(path);
  d.info = reader.video();
  d.title = container_title(reader.format_context());
  d.nb_streams = static_cast<int>(reader.format_context()->nb_streams);
  read_everything(reader, d.frames, d.passthrough);
  d.warnings = reader.warnings();
  return d;
}

// Decode `in`, encode its video with `options` into `out`, copy every other stream.
int64_t transcode(const std::string& in, const std::string& out, const EncoderOptions& options) {
  MediaReader reader(in);
  DecodedFrame f;
  if (!reader.read(f)) throw std::runtime_error("no frame in " + in);
  MediaWriter writer(out, reader.streams(), *f.frame, options);
  do {
    for (auto& p : f.passthrough) writer.write_passthrough(*p);
    writer.write_video(*f.frame);
  } while (reader.read(f));
  for (auto& p : reader.take_remaining_passthrough()) writer.write_passthrough(*p);
  writer.finish();
  return writer.frames_written();
}

// Rows of plane `p` of a frame.
int plane_rows(const AVFrame& f, int p) {
  const AVPixFmtDescriptor* d = av_pix_fmt_desc_get(static_cast<AVPixelFormat>(f.format));
  for (int c = 0; c < d->nb_components; ++c) {
    if (d->comp[c].plane != p) continue;
    const bool chroma = !(d->flags & AV_PIX_FMT_FLAG_RGB) && (c == 1 || c == 2);
    return chroma ? AV_CEIL_RSHIFT(f.height, d->log2_chroma_h) : f.height;
  }
  return 0;
}

::testing::AssertionResult same_pixels(const AVFrame& a, const AVFrame& b) {
  if (a.format != b.format || a.width != b.width || a.height != b.height)
    return ::testing::AssertionFailure() << "format/size differ: " << a.width << "x" << a.height << " "
                                         << av_get_pix_fmt_name(static_cast<AVPixelFormat>(a.format)) << " vs "
                                         << b.width << "x" << b.height << " "
                                         << av_get_pix_fmt_name(static_cast<AVPixelFormat>(b.format));
  const auto fmt = static_cast<AVPixelFormat>(a.format);
  const int planes = av_pix_fmt_count_planes(fmt);
  for (int p = 0; p < planes; ++p) {
    const int bytes = av_image_get_linesize(fmt, a.width, p);
    const int rows = plane_rows(a, p);
    if (bytes <= 0 || rows <= 0) return ::testing::AssertionFailure() << "bad plane " << p;
    for (int y = 0; y < rows; ++y)
      if (std::memcmp(a.data[p] + static_cast<ptrdiff_t>(y) * a.linesize[p],
                      b.data[p] + static_cast<ptrdiff_t>(y) * b.linesize[p], bytes) != 0)
        return ::testing::AssertionFailure() << "plane " << p << " row " << y << " differs";
  }
  return ::testing::AssertionSuccess();
}

// Same frame count, same pts, same pixels, same colour tags.
void expect_same_video(const Decoded& in, const Decoded& out) {
  ASSERT_EQ(in.frames.size(), out.frames.size());
  ASSERT_FALSE(in.frames.empty());
  EXPECT_EQ(av_cmp_q(in.info.time_base, out.info.time_base), 0);
  for (size_t i = 0; i < in.frames.size(); ++i) {
    const AVFrame& a = *in.frames[i];
    const AVFrame& b = *out.frames[i];
    EXPECT_EQ(a.pts, b.pts) << "frame " << i;
    EXPECT_TRUE(same_pixels(a, b)) << "frame " << i;
    EXPECT_EQ(a.color_range, b.color_range) << "frame " << i;
    EXPECT_EQ(a.colorspace, b.colorspace) << "frame " << i;
    EXPECT_EQ(a.color_primaries, b.color_primaries) << "frame " << i;
    EXPECT_EQ(a.color_trc, b.color_trc) << "frame " << i;
  }
}

std::vector<const AVPacket*> packets_of_stream(const Decoded& d, int stream_index) {
  std::vector<const AVPacket*> v;
  for (const auto& p : d.passthrough)
    if (p->stream_index == stream_index) v.push_back(p.get());
  return v;
}

// Passthrough packets of input stream `in_index` and output stream
// `out_index` hold the same bytes and timestamps (both files' streams have
// the same time base here).
void expect_same_packets(const Decoded& in, int in_index, const Decoded& out, int out_index) {
  const auto a = packets_of_stream(in, in_index);
  const auto b = packets_of_stream(out, out_index);
  ASSERT_FALSE(a.empty());
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    ASSERT_EQ(a[i]->size, b[i]->size) << "packet " << i;
    EXPECT_EQ(std::memcmp(a[i]->data, b[i]->data, a[i]->size), 0) << "packet " << i;
    EXPECT_EQ(a[i]->pts, b[i]->pts) << "packet " << i;
    EXPECT_EQ(a[i]->dts, b[i]->dts) << "packet " << i;
    EXPECT_EQ(a[i]->duration, b[i]->duration) << "packet " << i;
  }
}


struct DemuxedPacket {
  int64_t pts = AV_NOPTS_VALUE, dts = AV_NOPTS_VALUE, duration = 0;
  std::string bytes;
};

struct DemuxedStream {
  AVRational tb{0, 1};
  AVMediaType type = AVMEDIA_TYPE_UNKNOWN;
  AVCodecID codec_id = AV_CODEC_ID_NONE;
  std::string extradata;
  int sample_rate = 0, channels = 0;
  AVRational sar{0, 1};
  AVChromaLocation chroma_location = AVCHROMA_LOC_UNSPECIFIED;
  int disposition = 0;
  std::map<std::string, std::string> tags;
  std::vector<DemuxedPacket> packets;
};

std::vector<DemuxedStream> demux_all(const std::string& path) {
  AVFormatContext* raw = nullptr;
  AV_CHECK(avformat_open_input(&raw, path.c_str(), nullptr, nullptr));
  AVInputFormatContextPtr fmt(raw);
  AV_CHECK(avformat_find_stream_info(raw, nullptr));
  std::vector<DemuxedStream> v(raw->nb_streams);
  for (unsigned i = 0; i < raw->nb_streams; ++i) {
    const AVStream* st = raw->streams[i];
    DemuxedStream& d = v[i];
    d.tb = st->time_base;
    d.type = st->codecpar->codec_type;
    d.codec_id = st->codecpar->codec_id;
    if (st->codecpar->extradata)
      d.extradata.assign(reinterpret_cast<const char*>(st->codecpar->extradata), st->codecpar->extradata_size);
    d.sample_rate = st->codecpar->sample_rate;
    d.channels = st->codecpar->ch_layout.nb_channels;
    d.sar = av_guess_sample_aspect_ratio(raw, const_cast<AVStream*>(st), nullptr);
    d.chroma_location = st->codecpar->chroma_location;
    d.disposition = st->disposition;
    const AVDictionaryEntry* e = nullptr;
    while ((e = av_dict_get(st->metadata, "", e, AV_DICT_IGNORE_SUFFIX))) d.tags[e->key] = e->value;
  }
  AVPacketPtr pkt = make_packet();
  while (av_read_frame(raw, pkt.get()) >= 0) {
    DemuxedPacket p;
    p.pts = pkt->pts;
    p.dts = pkt->dts;
    p.duration = pkt->duration;
    p.bytes.assign(reinterpret_cast<const char*>(pkt->data), pkt->size);
    v[pkt->stream_index].packets.push_back(std::move(p));
    av_packet_unref(pkt.get());
  }
  return v;
}

int first_stream_of(const std::vector<DemuxedStream>& v, AVMediaType type) {
  for (size_t i = 0; i < v.size(); ++i)
    if (v[i].type == type) return static_cast<int>(i);
  return -1;
}

std::string tag_of(const DemuxedStream& s, const std::string& key) {
  const auto it = s.tags.find(key);
  return it == s.tags.end() ? "" : it->second;
}

// `ts` ticks of `tb` in seconds (NaN for no timestamp).
double seconds_of(int64_t ts, AVRational tb) { return ts == AV_NOPTS_VALUE ? std::nan("") : ts * av_q2d(tb); }

// Where the file's video starts, in seconds. A muxer that cannot store
// negative timestamps (Matroska, for AAC's priming packet at -1024 samples)
// shifts every stream by the same amount; what must survive is each packet's
// time relative to the pictures.
double video_start(const std::vector<DemuxedStream>& v) {
  double t = INFINITY;
  for (const DemuxedStream& s : v)
    if (s.type == AVMEDIA_TYPE_VIDEO)
      for (const DemuxedPacket& p : s.packets)
        if (p.pts != AV_NOPTS_VALUE) t = std::min(t, seconds_of(p.pts, s.tb));
  return t;
}

// AAC in MPEG-TS carries a 7-byte ADTS header (9 with a CRC) that mkv and
// mp4 do not (the muxers add or strip it: FFmpeg's aac_adtstoasc); the
// payload after it is what is copied.
std::string without_adts(const std::string& b, AVCodecID id) {
  if (id != AV_CODEC_ID_AAC || b.size() < 7 || static_cast<uint8_t>(b[0]) != 0xff ||
      (static_cast<uint8_t>(b[1]) & 0xf0) != 0xf0)
    return b;
  const bool crc = !(static_cast<uint8_t>(b[1]) & 1);
  return b.substr(crc ? 9 : 7);
}

// `out` is a packet-for-packet copy of `in`: the same codec, parameters and
// bytes, and every pts, dts and duration the same instant (relative to the
// file's video start, `in_t0` and `out_t0`) to within one tick of the
// coarser of the two time bases (a rescale can round, no more).
// Matroska (FFmpeg 5.1's muxer) stores no duration for audio blocks: a short
// last audio packet reads back with a whole frame's duration
// (`last_duration_kept` false).
void expect_copied(const DemuxedStream& in, double in_t0, const DemuxedStream& out, double out_t0,
                   bool last_duration_kept = true) {
  EXPECT_EQ(out.type, in.type);
  EXPECT_EQ(out.codec_id, in.codec_id) << avcodec_get_name(out.codec_id) << " vs " << avcodec_get_name(in.codec_id);
  EXPECT_EQ(out.sample_rate, in.sample_rate);
  EXPECT_EQ(out.channels, in.channels);
  ASSERT_FALSE(in.packets.empty());
  ASSERT_EQ(out.packets.size(), in.packets.size());
  const double tick = std::max(av_q2d(in.tb), av_q2d(out.tb)) + 1e-9;
  for (size_t i = 0; i < in.packets.size(); ++i) {
    const DemuxedPacket& a = in.packets[i];
    const DemuxedPacket& b = out.packets[i];
    SCOPED_TRACE("packet " + std::to_string(i) + " (time bases " + std::to_string(in.tb.num) + "/" +
                 std::to_string(in.tb.den) + " -> " + std::to_string(out.tb.num) + "/" + std::to_string(out.tb.den) + ")");
    const std::string pa = without_adts(a.bytes, in.codec_id), pb = without_adts(b.bytes, out.codec_id);
    ASSERT_EQ(pb.size(), pa.size());
    EXPECT_TRUE(pb == pa) << "the bytes differ";
    ASSERT_EQ(a.pts == AV_NOPTS_VALUE, b.pts == AV_NOPTS_VALUE);
    if (a.pts != AV_NOPTS_VALUE)
      EXPECT_NEAR(seconds_of(b.pts, out.tb) - out_t0, seconds_of(a.pts, in.tb) - in_t0, tick) << "pts";
    if (a.dts != AV_NOPTS_VALUE && b.dts != AV_NOPTS_VALUE)
      EXPECT_NEAR(seconds_of(b.dts, out.tb) - out_t0, seconds_of(a.dts, in.tb) - in_t0, tick) << "dts";
    if (i + 1 < in.packets.size() || last_duration_kept)
      EXPECT_NEAR(seconds_of(b.duration, out.tb), seconds_of(a.duration, in.tb), tick) << "duration";
  }
}

struct CopyCase {
  const char* name;
  const char* in_ext;
  const char* out_ext;
  const char* video_codec;     // of the input and the output
  const char* audio_codec;
  const char* subtitle_codec;  // "" for none
  // What the output container stores of a stream's tags and dispositions
  // (mpegts: a language for audio and subtitles only).
  bool keeps_language, keeps_video_language, keeps_title;
  int kept_dispositions;
};

void PrintTo(const CopyCase& c, std::ostream* os) { *os << c.name; }



EncoderOptions ffv1() {
  EncoderOptions o;
  o.codec = "ffv1";
  return o;
}

}  // namespace

// ---------------------------------------------------------------------------
// Lossless round trips
// ---------------------------------------------------------------------------

TEST(IoRoundTrip, Ffv1KeepsPixelsPtsPcmAudioAndTitle) {
  TempDir dir{"streamblur_io_test"};
  SyntheticClipSpec spec;
  spec.width = 64;
  spec.height = 48;
  spec.frames = 12;
  spec.noise = true;
  spec.audio = true;
  spec.audio_codec = "pcm_s16le";
  spec.title = "streamblur synthetic";
  const std::string in = dir.file("in.mkv"), out = dir.file("out.mkv");
  write_synthetic_clip(in, spec);
  EXPECT_EQ(transcode(in, out, ffv1()), 12);

  const Decoded a = read_all(in), b = read_all(out);
  expect_same_video(a, b);
  EXPECT_EQ(a.frames.size(), 12u);
  EXPECT_EQ(a.nb_streams, 2);
  EXPECT_EQ(b.nb_streams, 2);
  expect_same_packets(a, 1, b, 1);
  EXPECT_EQ(b.title, "streamblur synthetic");
  EXPECT_EQ(b.info.codec_name, "ffv1");
  EXPECT_EQ(a.warnings, 0);
  EXPECT_EQ(b.warnings, 0);
}

TEST(IoRoundTrip, Ffv1VariableFrameRateWithAac) {
  TempDir dir{"streamblur_io_test"};
  SyntheticClipSpec spec;
  spec.frames = 15;
  spec.variable_frame_rate = true;
  spec.audio = true;
  spec.audio_codec = "aac";
  const std::string in = dir.file("vfr.mkv"), out = dir.file("vfr_out.mkv");
  write_synthetic_clip(in, spec);
  transcode(in, out, ffv1());

  const Decoded a = read_all(in), b = read_all(out);
  expect_same_video(a, b);
  ASSERT_EQ(a.frames.size(), 15u);
  // The steps really are irregular.
  std::vector<int64_t> steps;
  for (size_t i = 1; i < a.frames.size(); ++i) steps.push_back(a.frames[i]->pts - a.frames[i - 1]->pts);
  EXPECT_NE(*std::min_element(steps.begin(), steps.end()), *std::max_element(steps.begin(), steps.end()));
  expect_same_packets(a, 1, b, 1);
}

TEST(IoRoundTrip, ColourTagsKept) {
  TempDir dir{"streamblur_io_test"};
  SyntheticClipSpec spec;
  spec.pix_fmt = AV_PIX_FMT_YUV444P;
  spec.color_range = AVCOL_RANGE_JPEG;
  spec.colorspace = AVCOL_SPC_BT470BG;
  spec.color_primaries = AVCOL_PRI_BT470BG;
  spec.color_trc = AVCOL_TRC_SMPTE170M;
  const std::string in = dir.file("tags.mkv"), out = dir.file("tags_out.mkv");
  write_synthetic_clip(in, spec);
  transcode(in, out, ffv1());
  const Decoded a = read_all(in), b = read_all(out);
  ASSERT_FALSE(a.frames.empty());
  EXPECT_EQ(a.frames[0]->color_range, AVCOL_RANGE_JPEG);
  EXPECT_EQ(a.frames[0]->colorspace, AVCOL_SPC_BT470BG);
  EXPECT_EQ(a.frames[0]->color_primaries, AVCOL_PRI_BT470BG);
  EXPECT_EQ(a.frames[0]->color_trc, AVCOL_TRC_SMPTE170M);
  expect_same_video(a, b);
}

struct SizeCase {
  int w, h;
  AVPixelFormat fmt;
};

class IoOddSize : public ::testing::TestWithParam<SizeCase> {};

TEST_P(IoOddSize, Ffv1RoundTripIsLossless) {
  const SizeCase c = GetParam();
  TempDir dir{"streamblur_io_test"};
  SyntheticClipSpec spec;
  spec.width = c.w;
  spec.height = c.h;
  spec.pix_fmt = c.fmt;
  spec.frames = 5;
  spec.noise = true;
  const std::string in = dir.file("odd.mkv"), out = dir.file("odd_out.mkv");
  write_synthetic_clip(in, spec);
  transcode(in, out, ffv1());
  const Decoded a = read_all(in), b = read_all(out);
  EXPECT_EQ(a.info.width, c.w);
  EXPECT_EQ(a.info.height, c.h);
  EXPECT_EQ(a.info.pix_fmt, c.fmt);
  EXPECT_EQ(a.frames.size(), 5u);
  expect_same_video(a, b);
}

INSTANTIATE_TEST_SUITE_P(Sizes, IoOddSize,
                         ::testing::Values(SizeCase{33, 17, AV_PIX_FMT_YUV444P}, SizeCase{1, 1, AV_PIX_FMT_GRAY8},
                                           SizeCase{3, 5, AV_PIX_FMT_YUV420P}, SizeCase{35, 9, AV_PIX_FMT_YUV422P},
                                           SizeCase{31, 19, AV_PIX_FMT_YUV420P10LE}),
                         [](const ::testing::TestParamInfo<SizeCase>& i) {
                           std::string n = std::to_string(i.param.w) + "x" + std::to_string(i.param.h) + "_" +
                                           av_get_pix_fmt_name(i.param.fmt);
                           for (char& ch : n)
                             if (!isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           return n;
                         });

TEST(IoRoundTrip, Yuv420p10le) {
  TempDir dir{"streamblur_io_test"};
  SyntheticClipSpec spec;
  spec.width = 96;
  spec.height = 54;
  spec.pix_fmt = AV_PIX_FMT_YUV420P10LE;
  spec.noise = true;
  const std::string in = dir.file("p10.mkv"), out = dir.file("p10_out.mkv");
  write_synthetic_clip(in, spec);
  transcode(in, out, ffv1());
  const Decoded a = read_all(in), b = read_all(out);
  ASSERT_FALSE(a.frames.empty());
  EXPECT_EQ(a.frames[0]->format, AV_PIX_FMT_YUV420P10LE);
  // Values really use 10 bits (some sample above 255).
  const auto* y = reinterpret_cast<const uint16_t*>(a.frames[0]->data[0]);
  bool above = false;
  for (int i = 0; i < a.frames[0]->width; ++i) above = above || y[i] > 255;
  EXPECT_TRUE(above);
  expect_same_video(a, b);
}

TEST(IoStill, PngInPngOut) {
  TempDir dir{"streamblur_io_test"};
  SyntheticClipSpec spec;
  spec.width = 40;
  spec.height = 30;
  spec.frames = 1;
  spec.codec = "png";
  spec.pix_fmt = AV_PIX_FMT_RGB24;
  const std::string in = dir.file("still.png"), out = dir.file("still_out.png");
  write_synthetic_clip(in, spec);
  EncoderOptions o;
  o.codec = "png";
  EXPECT_EQ(transcode(in, out, o), 1);
  const Decoded a = read_all(in), b = read_all(out);
  ASSERT_EQ(a.frames.size(), 1u);
  ASSERT_EQ(b.frames.size(), 1u);
  EXPECT_EQ(a.info.width, 40);
  EXPECT_EQ(a.info.height, 30);
  EXPECT_LE(a.info.frame_count_estimate, 1);  // png_pipe declares no count: 0 = unknown
  EXPECT_TRUE(same_pixels(*a.frames[0], *b.frames[0]));
}

// A clip with audio written to an image sequence: the files hold the pictures
// and nothing else (audio packets must not land in them).
TEST(IoStill, ClipWithAudioToPngSequence) {
  TempDir dir{"streamblur_io_test"};
  SyntheticClipSpec spec;
  spec.frames = 3;
  spec.audio = true;
  spec.audio_codec = "pcm_s16le";
  const std::string in = dir.file("a.mkv"), out = dir.file("f%d.png");
  write_synthetic_clip(in, spec);
  EncoderOptions o;
  o.codec = "png";
  EXPECT_EQ(transcode(in, out, o), 3);
  const Decoded b = read_all(dir.file("f3.png"));
  ASSERT_EQ(b.frames.size(), 1u);
  EXPECT_EQ(b.info.width, 64);
  EXPECT_EQ(b.nb_streams, 1);
}

// ---------------------------------------------------------------------------
// Lossy codecs
// ---------------------------------------------------------------------------

TEST(IoLossy, Libx264Mp4FrameCountAndAudio) {
  TempDir dir{"streamblur_io_test"};
  SyntheticClipSpec spec;
  spec.width = 128;
  spec.height = 72;
  spec.frames = 20;
  spec.codec = "libx264";
  spec.preset = "ultrafast";
  spec.noise = true;
  spec.audio = true;
  const std::string in = dir.file("x264.mp4"), out = dir.file("x264_out.mp4");
  write_synthetic_clip(in, spec);
  EncoderOptions o;
  o.codec = "libx264";
  o.preset = "ultrafast";
  EXPECT_EQ(transcode(in, out, o), 20);
  const Decoded a = read_all(in), b = read_all(out);
  EXPECT_EQ(a.frames.size(), 20u);
  EXPECT_EQ(b.frames.size(), 20u);
  EXPECT_EQ(a.info.codec_name, "h264");
  EXPECT_EQ(b.info.codec_name, "h264");
  EXPECT_NEAR(static_cast<double>(a.info.frame_count_estimate), 20.0, 1.0);
  for (size_t i = 0; i < b.frames.size() && i < a.frames.size(); ++i) {
    EXPECT_EQ(a.frames[i]->pts, b.frames[i]->pts) << "frame " << i;
    EXPECT_EQ(b.frames[i]->colorspace, AVCOL_SPC_BT709);
  }
  // The aac track is copied packet for packet: the same bytes, timestamps and
  // durations (both files have the audio in 1/48000).
  const std::vector<DemuxedStream> pa = demux_all(in), pb = demux_all(out);
  ASSERT_EQ(pa.size(), 2u);
  ASSERT_EQ(pb.size(), 2u);
  ASSERT_EQ(pb[1].type, AVMEDIA_TYPE_AUDIO);
  expect_copied(pa[1], video_start(pa), pb[1], video_start(pb));
  EXPECT_EQ(pb[1].extradata, pa[1].extradata);
}

// mpegts has a 1/90000 time base that mpeg4 refuses, and mpeg4 takes only
// yuv420p: the writer falls back to a frame-rate time base and converts.
TEST(IoLossy, Mpeg4TimeBaseFallbackAndPixelConversion) {
  TempDir dir{"streamblur_io_test"};
  SyntheticClipSpec spec;
  spec.frames = 10;
  spec.codec = "libx264";
  spec.preset = "ultrafast";
  spec.pix_fmt = AV_PIX_FMT_YUV444P;
  const std::string in = dir.file("in.ts"), out = dir.file("mpeg4.mkv");
  write_synthetic_clip(in, spec);
  EncoderOptions o;
  o.codec = "mpeg4";
  EXPECT_EQ(transcode(in, out, o), 10);
  const Decoded a = read_all(in), b = read_all(out);
  EXPECT_EQ(a.info.time_base.den, 90000);
  ASSERT_EQ(a.frames.size(), 10u);
  ASSERT_EQ(b.frames.size(), 10u);
  EXPECT_EQ(b.frames[0]->format, AV_PIX_FMT_YUV420P);
  EXPECT_EQ(b.info.width, 64);
  for (size_t i = 0; i < 10; ++i) {
    const double ta = a.frames[i]->pts * av_q2d(a.info.time_base);
    const double tb = b.frames[i]->pts * av_q2d(b.info.time_base);
    EXPECT_NEAR(ta, tb, 0.0011) << "frame " << i;
  }
}

// ---------------------------------------------------------------------------
// Reader details
// ---------------------------------------------------------------------------

TEST(IoReader, InfoAndStop) {
  TempDir dir{"streamblur_io_test"};
  SyntheticClipSpec spec;
  spec.frames = 10;
  spec.fps = 25;
  const std::string in = dir.file("info.mkv");
  write_synthetic_clip(in, spec);
  MediaReader r(in, ReaderOptions{2});
  EXPECT_EQ(r.video().width, 64);
  EXPECT_EQ(r.video().height, 48);
  EXPECT_EQ(r.video().pix_fmt, AV_PIX_FMT_YUV420P);
  EXPECT_EQ(av_cmp_q(r.video().frame_rate, AVRational{25, 1}), 0);
  EXPECT_NEAR(static_cast<double>(r.video().frame_count_estimate), 10.0, 1.0);
  EXPECT_NEAR(r.video().duration_seconds, 0.4, 0.05);
  DecodedFrame f;
  ASSERT_TRUE(r.read(f));
  EXPECT_EQ(f.frame->pts, 0);
  ASSERT_TRUE(r.read(f));
  r.request_stop();
  EXPECT_FALSE(r.read(f));
  EXPECT_FALSE(r.read(f));
}

TEST(IoReader, TruncatedMkvWarnsAndEnds) {
  TempDir dir{"streamblur_io_test"};
  SyntheticClipSpec spec;
  spec.frames = 30;
  spec.noise = true;
  spec.audio = true;
  spec.audio_codec = "pcm_s16le";
  const std::string in = dir.file("trunc.mkv");
  write_synthetic_clip(in, spec);
  fs::resize_file(in, fs::file_size(in) * 6 / 10);
  const auto t0 = std::chrono::steady_clock::now();
  Decoded d;
  EXPECT_NO_THROW(d = read_all(in));
  EXPECT_GT(d.frames.size(), 0u);
  EXPECT_LT(d.frames.size(), 30u);
  EXPECT_GT(d.warnings, 0);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(20));
}

TEST(IoReader, TruncatedH264TsEnds) {
  TempDir dir{"streamblur_io_test"};
  SyntheticClipSpec spec;
  spec.frames = 30;
  spec.codec = "libx264";
  spec.preset = "ultrafast";
  spec.noise = true;
  const std::string in = dir.file("trunc.ts");
  write_synthetic_clip(in, spec);
  fs::resize_file(in, fs::file_size(in) * 6 / 10);
  Decoded d;
  EXPECT_NO_THROW(d = read_all(in));
  EXPECT_GT(d.frames.size(), 0u);
  EXPECT_LT(d.frames.size(), 30u);
}

// ---------------------------------------------------------------------------
// Errors: one line, naming the file or the name, with FFmpeg's reason.
// ---------------------------------------------------------------------------

TEST(IoErrors, MissingFile) {
  TempDir dir{"streamblur_io_test"};
  const std::string p = dir.file("missing.mp4");
  EXPECT_ONE_LINE_CONTAINS(error_of([&] { MediaReader r(p); }), "cannot open input", p.c_str(),
                           "No such file or directory");
}

TEST(IoErrors, EmptyFile) {
  TempDir dir{"streamblur_io_test"};
  const std::string p = dir.file("empty.mp4");
  std::ofstream(p).close();
  EXPECT_ONE_LINE_CONTAINS(error_of([&] { MediaReader r(p); }), "cannot open input", p.c_str(), "empty");
}

TEST(IoErrors, TextFile) {
  TempDir dir{"streamblur_io_test"};
  const std::string p = dir.file("notes.mp4");
  {
    std::ofstream o(p);
    for (int i = 0; i < 200; ++i) o << "This is a text file, not a video. Line " << i << ".\n";
  }
  EXPECT_ONE_LINE_CONTAINS(error_of([&] { MediaReader r(p); }), "cannot open input", p.c_str(),
                           "Invalid data found when processing input");
  // An FFmpeg with the tty demuxer would show a .txt file as video of rendered text.
  const std::string txt = dir.file("notes.txt");
  fs::copy_file(p, txt);
  EXPECT_ONE_LINE_CONTAINS(error_of([&] { MediaReader r(txt); }), "cannot open input", txt.c_str());
}

// An mp4 cut short (a copy or a recording that stopped) has lost its 'moov'
// index, which the muxer writes at the end: FFmpeg says only "Invalid data
// found"; the message adds what it most likely means.
TEST(IoErrors, TruncatedMp4SaysItLooksTruncated) {
  TempDir dir{"streamblur_io_test"};
  SyntheticClipSpec spec;
  spec.frames = 10;
  spec.codec = "mpeg4";
  for (const char* name : {"cut.mp4", "cut.mov"}) {
    const std::string p = dir.file(name);
    write_synthetic_clip(p, spec);
    ASSERT_NO_THROW(MediaReader r(p));  // whole, it opens
    fs::resize_file(p, fs::file_size(p) / 2);
    EXPECT_ONE_LINE_CONTAINS(error_of([&] { MediaReader r(p); }), "cannot open input", p.c_str(),
                             "Invalid data found", "the file looks truncated: no 'moov' index",
                             "copied or recorded completely");
  }
  // Text in a file named .mp4 is invalid data too, but not a cut mp4: no such note.
  const std::string text = dir.file("notes.mp4");
  {
    std::ofstream o(text);
    for (int i = 0; i < 200; ++i) o << "This is a text file, not a video. Line " << i << ".\n";
  }
  const std::string msg = error_of([&] { MediaReader r(text); });
  EXPECT_ONE_LINE_CONTAINS(msg, "cannot open input", "Invalid data found");
  EXPECT_FALSE(contains(msg, "truncated")) << msg;
}


TEST(IoErrors, AudioOnlyFile) {
  TempDir dir{"streamblur_io_test"};
  const std::string p = dir.file("audio_only.mkv");
  write_audio_only_mkv(p);
  EXPECT_ONE_LINE_CONTAINS(error_of([&] { MediaReader r(p); }), "no video stream", p.c_str());
}

// A tiny ffv1 clip, its reader and first frame, for writer errors.
struct WriterInput {
  TempDir dir{"streamblur_io_test"};
  std::string in = dir.file("w.mkv");
  std::unique_ptr<MediaReader> reader;
  DecodedFrame first;
  WriterInput() {
    SyntheticClipSpec spec;
    spec.frames = 2;
    write_synthetic_clip(in, spec);
    reader = std::make_unique<MediaReader>(in);
    if (!reader->read(first)) throw std::runtime_error("no frame");
  }
};

TEST(IoErrors, UnknownEncoder) {
  WriterInput w;
  EncoderOptions o;
  o.codec = "foo";
  const std::string out = w.dir.file("o.mkv");
  EXPECT_ONE_LINE_CONTAINS(error_of([&] { MediaWriter m(out, w.reader->streams(), *w.first.frame, o); }),
                           "unknown encoder 'foo'");
  EXPECT_FALSE(fs::exists(out));
}

TEST(IoErrors, UnwritablePath) {
  WriterInput w;
  EXPECT_ONE_LINE_CONTAINS(
      error_of([&] { MediaWriter m("/nonexistent/dir/out.mkv", w.reader->streams(), *w.first.frame, ffv1()); }),
      "/nonexistent/dir/out.mkv", "No such file or directory");
}

TEST(IoErrors, UnknownEncoderOption) {
  WriterInput w;
  EncoderOptions o = ffv1();
  o.options["definitely_not_an_option"] = "1";
  EXPECT_ONE_LINE_CONTAINS(error_of([&] { MediaWriter m(w.dir.file("o.mkv"), w.reader->streams(), *w.first.frame, o); }),
                           "definitely_not_an_option", "ffv1");
  // A real option of the encoder is fine.
  o.options.clear();
  o.options["slicecrc"] = "1";
  EXPECT_EQ(error_of([&] { MediaWriter m(w.dir.file("o2.mkv"), w.reader->streams(), *w.first.frame, o); }), "");
}

TEST(IoErrors, UnknownOutputFormat) {
  WriterInput w;
  EXPECT_ONE_LINE_CONTAINS(
      error_of([&] { MediaWriter m(w.dir.file("o.nosuchext"), w.reader->streams(), *w.first.frame, ffv1()); }),
      "o.nosuchext");
}

TEST(IoErrors, SyntheticClipRejectsPixelFormatOfEncoder) {
  TempDir dir{"streamblur_io_test"};
  SyntheticClipSpec spec;
  spec.codec = "png";
  spec.pix_fmt = AV_PIX_FMT_YUV420P;
  EXPECT_ONE_LINE_CONTAINS(error_of([&] { write_synthetic_clip(dir.file("x.png"), spec); }), "png", "yuv420p");
}

TEST(IoWriter, DestructorWithoutFinishDoesNotThrow) {
  WriterInput w;
  const std::string out = w.dir.file("unfinished.mkv");
  {
    MediaWriter m(out, w.reader->streams(), *w.first.frame, ffv1());
    m.write_video(*w.first.frame);
  }
  EXPECT_TRUE(fs::exists(out));
}

// ---------------------------------------------------------------------------
// Synthetic clips
// ---------------------------------------------------------------------------

// Big enough that the picture is filled on several threads.
TEST(IoSynthetic, DeterministicSeededAndMoving) {
  TempDir dir{"streamblur_io_test"};
  SyntheticClipSpec spec;
  spec.width = 1280;
  spec.height = 720;
  spec.frames = 2;
  spec.noise = true;
  write_synthetic_clip(dir.file("a.mkv"), spec);
  write_synthetic_clip(dir.file("b.mkv"), spec);
  spec.seed = 2;
  write_synthetic_clip(dir.file("c.mkv"), spec);
  const Decoded a = read_all(dir.file("a.mkv")), b = read_all(dir.file("b.mkv")), c = read_all(dir.file("c.mkv"));
  ASSERT_EQ(a.frames.size(), 2u);
  ASSERT_EQ(b.frames.size(), 2u);
  ASSERT_EQ(c.frames.size(), 2u);
  EXPECT_TRUE(same_pixels(*a.frames[0], *b.frames[0]));
  EXPECT_TRUE(same_pixels(*a.frames[1], *b.frames[1]));
  EXPECT_FALSE(same_pixels(*a.frames[0], *a.frames[1]));
  EXPECT_FALSE(same_pixels(*a.frames[0], *c.frames[0]));
  // Limited range is respected.
  const AVFrame& f = *a.frames[0];
  int lo = 255, hi = 0;
  for (int y = 0; y < f.height; ++y)
    for (int x = 0; x < f.width; ++x) {
      lo = std::min<int>(lo, f.data[0][y * f.linesize[0] + x]);
      hi = std::max<int>(hi, f.data[0][y * f.linesize[0] + x]);
    }
  EXPECT_GE(lo, 16);
  EXPECT_LE(hi, 235);
  EXPECT_GT(hi - lo, 150);
}

TEST(IoSynthetic, PixelFormatsTheEncoderTakes) {
  TempDir dir{"streamblur_io_test"};
  struct Case {
    AVPixelFormat fmt;
    const char* codec;
    const char* file;
  };
  for (const Case& k : {Case{AV_PIX_FMT_YUVJ420P, "libx264", "j.mp4"}, Case{AV_PIX_FMT_NV12, "libx264", "nv12.mp4"},
                        Case{AV_PIX_FMT_GRAY8, "ffv1", "g.mkv"}, Case{AV_PIX_FMT_YUV422P, "ffv1", "422.mkv"}}) {
    SyntheticClipSpec spec;
    spec.pix_fmt = k.fmt;
    spec.codec = k.codec;
    spec.preset = std::string(k.codec) == "libx264" ? "ultrafast" : "";
    spec.frames = 3;
    write_synthetic_clip(dir.file(k.file), spec);
    const Decoded d = read_all(dir.file(k.file));
    EXPECT_EQ(d.frames.size(), 3u) << k.file;
    if (k.fmt == AV_PIX_FMT_YUVJ420P) {
      ASSERT_FALSE(d.frames.empty());
      EXPECT_EQ(d.frames[0]->color_range, AVCOL_RANGE_JPEG);
    }
  }
  SyntheticClipSpec p010;
  p010.pix_fmt = AV_PIX_FMT_P010LE;  // ffv1 does not take it: a clear error, no silent conversion
  EXPECT_ONE_LINE_CONTAINS(error_of([&] { write_synthetic_clip(dir.file("p010.mkv"), p010); }), "p010le", "ffv1");
}

// ---------------------------------------------------------------------------
// FrameConverter
// ---------------------------------------------------------------------------

TEST(IoConvert, Yuv420To444AndBackKeepsSizePtsAndTags) {
  const int w = 37, h = 21;
  AVFramePtr src = make_frame();
  src->format = AV_PIX_FMT_YUV420P;
  src->width = w;
  src->height = h;
  ASSERT_GE(av_frame_get_buffer(src.get(), 0), 0);
  for (int p = 0; p < 3; ++p) {
    const int pw = p ? (w + 1) / 2 : w, ph = p ? (h + 1) / 2 : h;
    for (int y = 0; y < ph; ++y)
      for (int x = 0; x < pw; ++x) src->data[p][y * src->linesize[p] + x] = static_cast<uint8_t>(16 + (x * 7 + y * 3 + p * 50) % 200);
  }
  src->pts = 1234;
  src->color_range = AVCOL_RANGE_MPEG;
  src->colorspace = AVCOL_SPC_BT709;
  src->color_primaries = AVCOL_PRI_BT709;
  src->color_trc = AVCOL_TRC_BT709;

  FrameConverter up(w, h, AV_PIX_FMT_YUV420P, AV_PIX_FMT_YUV444P);
  FrameConverter down(w, h, AV_PIX_FMT_YUV444P, AV_PIX_FMT_YUV420P);
  EXPECT_EQ(up.to(), AV_PIX_FMT_YUV444P);
  AVFramePtr mid = make_frame(), back = make_frame();
  up.convert(*src, *mid);
  EXPECT_EQ(mid->format, AV_PIX_FMT_YUV444P);
  EXPECT_EQ(mid->width, w);
  EXPECT_EQ(mid->height, h);
  EXPECT_EQ(mid->pts, 1234);
  EXPECT_EQ(mid->colorspace, AVCOL_SPC_BT709);
  down.convert(*mid, *back);
  EXPECT_EQ(back->format, AV_PIX_FMT_YUV420P);
  EXPECT_EQ(back->width, w);
  EXPECT_EQ(back->height, h);
  EXPECT_EQ(back->pts, 1234);
  EXPECT_EQ(back->color_range, AVCOL_RANGE_MPEG);
  // Luma is not resampled: it must come back unchanged.
  for (int y = 0; y < h; ++y)
    EXPECT_EQ(std::memcmp(src->data[0] + y * src->linesize[0], back->data[0] + y * back->linesize[0], w), 0)
        << "row " << y;
  // A second conversion into the now allocated frame works too.
  up.convert(*src, *mid);
  EXPECT_EQ(mid->pts, 1234);
  // Wrong input format is refused.
  EXPECT_THROW(up.convert(*mid, *back), std::runtime_error);
}

// ---------------------------------------------------------------------------
// What real files carry besides pictures: rotation, chapters, field order,
// HDR metadata, image sequences (issue 15). Read back through libavformat, as
// ffprobe reads them.
// ---------------------------------------------------------------------------

namespace {

// The opened file's video stream and container, for what ffprobe would print.
struct Probe {
  AVInputFormatContextPtr fmt;
  const AVStream* video = nullptr;
  explicit Probe(const std::string& path) {
    AVFormatContext* raw = nullptr;
    AV_CHECK(avformat_open_input(&raw, path.c_str(), nullptr, nullptr));
    fmt.reset(raw);
    AV_CHECK(avformat_find_stream_info(raw, nullptr));
    const int v = av_find_best_stream(raw, AVMEDIA_TYPE_VIDEO, -1, -1, nullptr, 0);
    AV_CHECK(v);
    video = raw->streams[v];
  }
  double rotation(bool* has) const { return stream_rotation(*video, has); }
  std::vector<std::string> chapter_titles() const {
    std::vector<std::string> v;
    for (unsigned i = 0; i < fmt->nb_chapters; ++i) {
      const AVDictionaryEntry* e = av_dict_get(fmt->chapters[i]->metadata, "title", nullptr, 0);
      v.push_back(e ? e->value : "");
    }
    return v;
  }
  // Chapter i's start and end in seconds.
  std::pair<double, double> chapter_span(unsigned i) const {
    const AVChapter* c = fmt->chapters[i];
    return {c->start * av_q2d(c->time_base), c->end * av_q2d(c->time_base)};
  }
};

SyntheticClipSpec x264_clip(int frames) {
  SyntheticClipSpec spec;
  spec.width = 64;
  spec.height = 48;
  spec.frames = frames;
  spec.codec = "libx264";
  spec.preset = "ultrafast";
  return spec;
}

EncoderOptions x264_fast() {
  EncoderOptions o;
  o.codec = "libx264";
  o.preset = "ultrafast";
  return o;
}

}  // namespace

struct RotationCase {
  const char* ext;
  int degrees;
};

class IoKeepsRotation : public ::testing::TestWithParam<RotationCase> {};

// A phone video's display matrix (rotation=90 / 270, i.e. -90) reaches the
// output unchanged; the pixels are not rotated.
TEST_P(IoKeepsRotation, DisplayMatrixCopied) {
  const RotationCase c = GetParam();
  TempDir dir{"streamblur_io_test"};
  SyntheticClipSpec spec = x264_clip(4);
  spec.rotation = c.degrees;
  const std::string in = dir.file(std::string("portrait.") + c.ext), out = dir.file(std::string("out.") + c.ext);
  write_synthetic_clip(in, spec);
  bool has_in = false;
  const double in_rot = Probe(in).rotation(&has_in);
  if (!has_in)
    GTEST_SKIP() << "this FFmpeg (" << LIBAVFORMAT_IDENT << ") does not store a display matrix in ." << c.ext;
  // The matrix is stored as the container defines it (mov counts clockwise): ask
  // the input what it reads as, as ffprobe does, and want the same from the output.
  EXPECT_NEAR(std::abs(in_rot), 90, 1e-6);
  const double expected = in_rot;
  EXPECT_EQ(transcode(in, out, x264_fast()), 4);
  bool has_out = false;
  EXPECT_NEAR(Probe(out).rotation(&has_out), expected, 1e-6);
  EXPECT_TRUE(has_out) << "the output has no display matrix";
  const Decoded d = read_all(out);
  EXPECT_EQ(d.info.width, 64);  // not rotated: still 64x48
  EXPECT_EQ(d.info.height, 48);
}

INSTANTIATE_TEST_SUITE_P(Containers, IoKeepsRotation,
                         ::testing::Values(RotationCase{"mp4", 90}, RotationCase{"mp4", 270},
                                           RotationCase{"mkv", 90}, RotationCase{"mkv", 270},
                                           RotationCase{"mov", 90}),
                         [](const auto& info) {
                           return std::string(info.param.ext) + "_" + std::to_string(info.param.degrees);
                         });

// Where the output container cannot hold the rotation (Matroska before FFmpeg
// 6.1, image files), the user is told, not left with a sideways video.
TEST(IoKeeps, RotationIntoContainerWithoutItIsNoted) {
  TempDir dir{"streamblur_io_test"};
  SyntheticClipSpec spec = x264_clip(3);
  spec.rotation = 90;
  const std::string in = dir.file("portrait.mp4"), out = dir.file("out.mkv");
  write_synthetic_clip(in, spec);
  EncoderOptions o = x264_fast();
  std::string notes;
  o.note = [&](const std::string& s) { notes += s + "\n"; };
  EXPECT_EQ(transcode(in, out, o), 3);
  bool has_out = false;
  Probe(out).rotation(&has_out);
  if (has_out) {
    EXPECT_FALSE(contains(notes, "display rotation")) << notes;  // kept: nothing to say
  } else {
    EXPECT_TRUE(contains(notes, "the matroska container cannot hold the input's display rotation (-90 degrees)"))
        << notes;
  }
}

class IoKeepsChapters : public ::testing::TestWithParam<const char*> {};

// Chapters are copied with their titles and times.
TEST_P(IoKeepsChapters, TitlesAndTimes) {
  const std::string ext = GetParam();
  TempDir dir{"streamblur_io_test"};
  SyntheticClipSpec spec = x264_clip(30);  // 1 s at 30 fps: chapters [0, 0.5) and [0.5, 1)
  spec.chapters = 2;
  const std::string in = dir.file("ch." + ext), out = dir.file("out." + ext);
  write_synthetic_clip(in, spec);
  const Probe pin(in);
  ASSERT_EQ(pin.chapter_titles(), (std::vector<std::string>{"Chapter 1", "Chapter 2"}));
  EXPECT_EQ(transcode(in, out, x264_fast()), 30);
  const Probe pout(out);
  ASSERT_EQ(pout.chapter_titles(), pin.chapter_titles());
  for (unsigned i = 0; i < 2; ++i) {
    EXPECT_NEAR(pout.chapter_span(i).first, pin.chapter_span(i).first, 0.002) << "chapter " << i;
    EXPECT_NEAR(pout.chapter_span(i).second, pin.chapter_span(i).second, 0.002) << "chapter " << i;
  }
  // mp4 keeps its chapters in a text track the demuxer hides: no extra stream appears.
  EXPECT_EQ(read_all(out).nb_streams, read_all(in).nb_streams);
}

INSTANTIATE_TEST_SUITE_P(Containers, IoKeepsChapters, ::testing::Values("mkv", "mp4"));

// A container without chapters says so instead of dropping them silently.
TEST(IoKeeps, ChaptersIntoContainerWithoutThemIsNoted) {
  TempDir dir{"streamblur_io_test"};
  SyntheticClipSpec spec = x264_clip(6);
  spec.chapters = 2;
  const std::string in = dir.file("ch.mkv"), out = dir.file("out.ts");
  write_synthetic_clip(in, spec);
  EncoderOptions o = x264_fast();
  std::string notes;
  o.note = [&](const std::string& s) { notes += s + "\n"; };
  EXPECT_EQ(transcode(in, out, o), 6);
  EXPECT_TRUE(contains(notes, "cannot hold chapters; 2 chapter(s) not copied")) << notes;
}

class IoKeepsFieldOrder : public ::testing::TestWithParam<const char*> {};

// Interlaced H.264 (top field first) stays interlaced: the stream's field
// order reads tt, and decoded frames are flagged interlaced, top field first.
TEST_P(IoKeepsFieldOrder, TopFieldFirstH264) {
  const std::string ext = GetParam();
  TempDir dir{"streamblur_io_test"};
  SyntheticClipSpec spec = x264_clip(6);
  spec.interlaced = true;
  const std::string in = dir.file("tt." + ext), out = dir.file("out." + ext);
  write_synthetic_clip(in, spec);
  ASSERT_EQ(Probe(in).video->codecpar->field_order, AV_FIELD_TT);
  EXPECT_EQ(transcode(in, out, x264_fast()), 6);
  EXPECT_EQ(Probe(out).video->codecpar->field_order, AV_FIELD_TT) << "field order " << Probe(out).video->codecpar->field_order;
  const Decoded d = read_all(out);
  ASSERT_EQ(d.frames.size(), 6u);
  for (const auto& f : d.frames) {
    EXPECT_TRUE(f->interlaced_frame);
    EXPECT_TRUE(f->top_field_first);
  }
}

INSTANTIATE_TEST_SUITE_P(Containers, IoKeepsFieldOrder, ::testing::Values("mkv", "mp4"));

class IoKeepsHdr : public ::testing::TestWithParam<const char*> {};

// HEVC 10-bit HDR10: mastering display and content light level stay on the
// output stream (container), and x265 writes them into the bitstream again.
TEST_P(IoKeepsHdr, MasteringDisplayAndLightLevel) {
  const std::string ext = GetParam();
  if (!avcodec_find_encoder_by_name("libx265"))  // the GPU machine's minimal FFmpeg
    GTEST_SKIP() << "this FFmpeg has no libx265 encoder to make an HDR10 clip";
  TempDir dir{"streamblur_io_test"};
  SyntheticClipSpec spec;
  spec.width = 64;
  spec.height = 48;
  spec.frames = 3;
  spec.codec = "libx265";
  spec.preset = "ultrafast";
  spec.pix_fmt = AV_PIX_FMT_YUV420P10LE;
  spec.color_primaries = AVCOL_PRI_BT2020;
  spec.color_trc = AVCOL_TRC_SMPTE2084;
  spec.colorspace = AVCOL_SPC_BT2020_NCL;
  spec.hdr = true;
  const std::string in = dir.file("hdr." + ext), out = dir.file("out." + ext);
  write_synthetic_clip(in, spec);
  auto check = [](const std::string& path, bool want_frame_side_data) {
    const Probe p(path);
    std::size_t size = 0;
    const auto* md = reinterpret_cast<const AVMasteringDisplayMetadata*>(
        stream_side_data(*p.video, AV_PKT_DATA_MASTERING_DISPLAY_METADATA, &size));
    ASSERT_NE(md, nullptr) << path << ": no mastering display metadata on the stream";
    EXPECT_TRUE(md->has_luminance && md->has_primaries);
    EXPECT_NEAR(av_q2d(md->max_luminance), kSyntheticMaxLuminance, 0.01) << path;
    EXPECT_NEAR(av_q2d(md->display_primaries[0][0]), 0.68, 0.0001) << path;
    const auto* cll = reinterpret_cast<const AVContentLightMetadata*>(
        stream_side_data(*p.video, AV_PKT_DATA_CONTENT_LIGHT_LEVEL, &size));
    ASSERT_NE(cll, nullptr) << path << ": no content light level on the stream";
    EXPECT_EQ(cll->MaxCLL, static_cast<unsigned>(kSyntheticMaxCll)) << path;
    EXPECT_EQ(cll->MaxFALL, static_cast<unsigned>(kSyntheticMaxFall)) << path;
    if (want_frame_side_data) {
      const Decoded d = read_all(path);
      ASSERT_FALSE(d.frames.empty());
      EXPECT_NE(av_frame_get_side_data(d.frames[0].get(), AV_FRAME_DATA_MASTERING_DISPLAY_METADATA), nullptr)
          << path << ": no mastering display SEI";
      EXPECT_NE(av_frame_get_side_data(d.frames[0].get(), AV_FRAME_DATA_CONTENT_LIGHT_LEVEL), nullptr)
          << path << ": no content light level SEI";
      EXPECT_EQ(d.frames[0]->color_trc, AVCOL_TRC_SMPTE2084);
    }
  };
  check(in, true);
  EncoderOptions o;
  o.codec = "libx265";
  o.preset = "ultrafast";
  o.options["x265-params"] = "log-level=error";  // the user's own x265-params are kept beside the HDR values
  EXPECT_EQ(transcode(in, out, o), 3);
  check(out, true);
}

INSTANTIATE_TEST_SUITE_P(Containers, IoKeepsHdr, ::testing::Values("mkv", "mp4"));

// An image sequence pattern writes one numbered file per frame (from 1, as
// ffmpeg does), and a pattern input reads every file back.
TEST(IoImageSequence, PatternOutAndIn) {
  TempDir dir{"streamblur_io_test"};
  SyntheticClipSpec spec;
  spec.width = 40;
  spec.height = 30;
  spec.frames = 5;
  spec.codec = "png";
  spec.pix_fmt = AV_PIX_FMT_RGB24;
  fs::create_directories(dir.path() / "in");
  fs::create_directories(dir.path() / "out");
  const std::string in = dir.file("in/f%03d.png"), out = dir.file("out/o%03d.png");
  write_synthetic_clip(in, spec);
  EncoderOptions o;
  o.codec = "png";
  EXPECT_EQ(transcode(in, out, o), 5);
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir.path() / "out")) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"o001.png", "o002.png", "o003.png", "o004.png", "o005.png"}));
  const Decoded a = read_all(in), b = read_all(out);
  ASSERT_EQ(a.frames.size(), 5u);
  ASSERT_EQ(b.frames.size(), 5u);
  for (size_t i = 0; i < 5; ++i) EXPECT_TRUE(same_pixels(*a.frames[i], *b.frames[i])) << "frame " << i;
  EXPECT_FALSE(same_pixels(*a.frames[0], *a.frames[4]));  // the frames differ, so order is checked
}

// Several frames into one plain image name would keep only the last picture
// (FFmpeg's image2 muxer overwrites it): an error, not a success.
TEST(IoImageSequence, SeveralFramesIntoOneImageIsAnError) {
  TempDir dir{"streamblur_io_test"};
  SyntheticClipSpec spec;
  spec.frames = 3;
  const std::string in = dir.file("a.mkv"), out = dir.file("last.png");
  write_synthetic_clip(in, spec);
  EncoderOptions o;
  o.codec = "png";
  EXPECT_ONE_LINE_CONTAINS(error_of([&] { transcode(in, out, o); }), "last.png", "more than one frame",
                           "last%03d.png");
}

// ---------------------------------------------------------------------------
// Stream copy (issue 14): audio and subtitles are copied packet for packet
// while the video is re-encoded, also between containers whose time bases
// differ (mkv 1/1000, mp4 1/sample rate, ts 1/90000). The files are read back
// with libavformat alone, as ffprobe -show_packets would, not with the reader
// under test.
// ---------------------------------------------------------------------------


class IoStreamCopy : public ::testing::TestWithParam<CopyCase> {};

// Audio (and subtitles) are copied byte for byte with their timestamps and
// durations, tags and dispositions; the video is re-encoded with its aspect
// ratio, chroma location, tags and disposition.
TEST_P(IoStreamCopy, PacketsTimestampsTagsAndDispositions) {
  const CopyCase c = GetParam();
  if (*c.subtitle_codec && !avcodec_find_encoder_by_name(c.subtitle_codec))
    GTEST_SKIP() << "this libavcodec has no " << c.subtitle_codec << " encoder";
  TempDir dir{"streamblur_io_test"};
  SyntheticClipSpec spec;
  spec.width = 64;
  spec.height = 48;
  spec.frames = 20;
  spec.fps = 25;
  spec.codec = c.video_codec;
  if (spec.codec == "libx264") spec.preset = "ultrafast";
  spec.audio = true;
  spec.audio_codec = c.audio_codec;
  spec.subtitle_codec = c.subtitle_codec;
  spec.sample_aspect_ratio = AVRational{16, 11};
  spec.chroma_location = AVCHROMA_LOC_TOPLEFT;
  spec.video_tags = {"eng", "the picture", AV_DISPOSITION_DEFAULT};
  spec.audio_tags = {"fra", "commentary", AV_DISPOSITION_DEFAULT};
  spec.subtitle_tags = {"deu", "forced cues", AV_DISPOSITION_FORCED};
  const std::string in = dir.file(std::string("in.") + c.in_ext), out = dir.file(std::string("out.") + c.out_ext);
  write_synthetic_clip(in, spec);
  EncoderOptions o;
  o.codec = c.video_codec;
  if (o.codec == "libx264") o.preset = "ultrafast";
  std::string notes;
  o.note = [&](const std::string& s) { notes += s + "\n"; };
  EXPECT_EQ(transcode(in, out, o), 20);
  EXPECT_EQ(notes, "");

  const std::vector<DemuxedStream> a = demux_all(in), b = demux_all(out);
  ASSERT_EQ(b.size(), a.size()) << notes;
  const double a0 = video_start(a), b0 = video_start(b);
  for (size_t i = 0; i < a.size(); ++i) {
    SCOPED_TRACE("stream " + std::to_string(i) + " (" + av_get_media_type_string(a[i].type) + ")");
    ASSERT_EQ(b[i].type, a[i].type);
    const bool mkv_audio = std::string(c.out_ext) == "mkv" && a[i].type == AVMEDIA_TYPE_AUDIO;
    if (a[i].type != AVMEDIA_TYPE_VIDEO) expect_copied(a[i], a0, b[i], b0, !mkv_audio);
    // Tags and dispositions: the input file holds what its container can; the
    // output must hold the same where its container can.
    // (mp4 says "und" where the input said nothing.)
    if (c.keeps_language && (a[i].type != AVMEDIA_TYPE_VIDEO || c.keeps_video_language) &&
        !(tag_of(a[i], "language").empty() && tag_of(b[i], "language") == "und"))
      EXPECT_EQ(tag_of(b[i], "language"), tag_of(a[i], "language"));
    if (c.keeps_title) EXPECT_EQ(tag_of(b[i], "title"), tag_of(a[i], "title"));
    EXPECT_EQ(b[i].disposition & c.kept_dispositions, a[i].disposition & c.kept_dispositions)
        << "dispositions " << a[i].disposition << " -> " << b[i].disposition;
  }
  // The input really carries what is checked.
  const int ia = first_stream_of(a, AVMEDIA_TYPE_AUDIO);
  ASSERT_GE(ia, 0);
  if (c.keeps_language) EXPECT_EQ(tag_of(a[ia], "language"), "fra");
  if (c.keeps_title) EXPECT_EQ(tag_of(a[ia], "title"), "commentary");
  if (*c.subtitle_codec) {
    const int is = first_stream_of(a, AVMEDIA_TYPE_SUBTITLE);
    ASSERT_GE(is, 0) << "the input has no subtitle stream";
    // mp4 adds an empty sample (a 2-byte zero text length) for each gap.
    EXPECT_EQ(std::count_if(a[is].packets.begin(), a[is].packets.end(),
                            [](const DemuxedPacket& p) { return p.bytes.size() > 2; }),
              3);
    if (c.kept_dispositions & AV_DISPOSITION_FORCED) EXPECT_TRUE(a[is].disposition & AV_DISPOSITION_FORCED);
  }

  // The re-encoded video: sample aspect ratio and chroma location.
  const int va = first_stream_of(a, AVMEDIA_TYPE_VIDEO), vb = first_stream_of(b, AVMEDIA_TYPE_VIDEO);
  EXPECT_EQ(av_cmp_q(a[va].sar, AVRational{16, 11}), 0) << a[va].sar.num << ":" << a[va].sar.den;
  EXPECT_EQ(av_cmp_q(b[vb].sar, AVRational{16, 11}), 0) << b[vb].sar.num << ":" << b[vb].sar.den;
  EXPECT_EQ(b[vb].chroma_location, a[va].chroma_location);
  // Codecs that store them in the bitstream (H.264's VUI) give them to every
  // frame too; FFV1 leaves both to the container.
  const Decoded da = read_all(in), db = read_all(out);
  ASSERT_EQ(db.frames.size(), 20u);
  ASSERT_EQ(da.frames.size(), 20u);
  for (size_t i = 0; i < db.frames.size(); ++i) {
    EXPECT_EQ(av_cmp_q(db.frames[i]->sample_aspect_ratio, da.frames[i]->sample_aspect_ratio), 0) << "frame " << i;
    EXPECT_EQ(db.frames[i]->chroma_location, da.frames[i]->chroma_location) << "frame " << i;
  }
  if (spec.codec == "libx264") {
    EXPECT_EQ(av_cmp_q(da.frames[0]->sample_aspect_ratio, AVRational{16, 11}), 0);
    EXPECT_EQ(da.frames[0]->chroma_location, AVCHROMA_LOC_TOPLEFT) << "the input does not carry the chroma location";
  } else {
    EXPECT_EQ(a[va].chroma_location, AVCHROMA_LOC_TOPLEFT) << "the input does not carry the chroma location";
  }
}

constexpr int kMkvDispositions = AV_DISPOSITION_DEFAULT | AV_DISPOSITION_FORCED;

INSTANTIATE_TEST_SUITE_P(
    Containers, IoStreamCopy,
    ::testing::Values(
        CopyCase{"mkv_to_mp4", "mkv", "mp4", "libx264", "aac", "", true, true, false, AV_DISPOSITION_DEFAULT},
        CopyCase{"mp4_to_mkv", "mp4", "mkv", "libx264", "aac", "", true, true, false, AV_DISPOSITION_DEFAULT},
        CopyCase{"ts_to_mkv", "ts", "mkv", "libx264", "aac", "", true, false, false, 0},
        CopyCase{"mkv_to_ts", "mkv", "ts", "libx264", "aac", "", true, false, false, 0},
        CopyCase{"mkv_to_mkv_subrip", "mkv", "mkv", "ffv1", "pcm_s16le", "subrip", true, true, true, kMkvDispositions},
        CopyCase{"mkv_to_mkv_ass", "mkv", "mkv", "ffv1", "aac", "ass", true, true, true, kMkvDispositions},
        CopyCase{"mp4_to_mp4_mov_text", "mp4", "mp4", "libx264", "aac", "mov_text", true, true, false,
                 kMkvDispositions},
        CopyCase{"mov_to_mp4_mov_text", "mov", "mp4", "libx264", "aac", "mov_text", true, true, false,
                 AV_DISPOSITION_DEFAULT}),
    [](const auto& info) { return std::string(info.param.name); });

// A container that cannot hold a subtitle codec (subrip in mp4: it takes
// mov_text only) gets the rest, and the user is told which stream was left out.
TEST(IoStreamCopyLimits, SubripIntoMp4IsNoted) {
  if (!avcodec_find_encoder_by_name("subrip")) GTEST_SKIP() << "this FFmpeg has no subrip encoder";
  TempDir dir{"streamblur_io_test"};
  SyntheticClipSpec spec = x264_clip(5);
  spec.audio = true;
  spec.subtitle_codec = "subrip";
  const std::string in = dir.file("in.mkv"), out = dir.file("out.mp4");
  write_synthetic_clip(in, spec);
  EncoderOptions o = x264_fast();
  std::string notes;
  o.note = [&](const std::string& s) { notes += s + "\n"; };
  EXPECT_EQ(transcode(in, out, o), 5);
  EXPECT_TRUE(contains(notes, "cannot hold input stream 2 (subtitle subrip); not copied")) << notes;
  const std::vector<DemuxedStream> b = demux_all(out);
  ASSERT_EQ(b.size(), 2u);
  EXPECT_EQ(b[1].type, AVMEDIA_TYPE_AUDIO);
}
