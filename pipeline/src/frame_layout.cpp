#include "streamblur/pipeline/frame_layout.hpp"

extern "C" {
#include <libavutil/pixdesc.h>
}

namespace streamblur {
namespace {

struct NativeFormat {
  AVPixelFormat format;
  int bytes;
  int log2_w, log2_h;  // chroma subsampling
  enum Kind { Planar, SemiPlanar, Gray, Packed } kind;
  int packed_channels;
};

constexpr NativeFormat kNative[] = {
    {AV_PIX_FMT_YUV420P, 1, 1, 1, NativeFormat::Planar, 0},
    {AV_PIX_FMT_YUVJ420P, 1, 1, 1, NativeFormat::Planar, 0},
    {AV_PIX_FMT_YUV422P, 1, 1, 0, NativeFormat::Planar, 0},
    {AV_PIX_FMT_YUVJ422P, 1, 1, 0, NativeFormat::Planar, 0},
    {AV_PIX_FMT_YUV444P, 1, 0, 0, NativeFormat::Planar, 0},
    {AV_PIX_FMT_YUVJ444P, 1, 0, 0, NativeFormat::Planar, 0},
    {AV_PIX_FMT_GRAY8, 1, 0, 0, NativeFormat::Gray, 0},
    {AV_PIX_FMT_NV12, 1, 1, 1, NativeFormat::SemiPlanar, 0},
    {AV_PIX_FMT_YUV420P10LE, 2, 1, 1, NativeFormat::Planar, 0},
    {AV_PIX_FMT_P010LE, 2, 1, 1, NativeFormat::SemiPlanar, 0},
    {AV_PIX_FMT_GRAY16LE, 2, 0, 0, NativeFormat::Gray, 0},
    {AV_PIX_FMT_RGB24, 1, 0, 0, NativeFormat::Packed, 3},
    {AV_PIX_FMT_BGR24, 1, 0, 0, NativeFormat::Packed, 3},
    {AV_PIX_FMT_RGBA, 1, 0, 0, NativeFormat::Packed, 4},
    {AV_PIX_FMT_BGRA, 1, 0, 0, NativeFormat::Packed, 4},
};

int ceil_shift(int v, int s) { return -((-v) >> s); }

}  // namespace

std::optional<FrameLayout> native_layout(AVPixelFormat format, int width, int height) {
  for (const NativeFormat& n : kNative) {
    if (n.format != format) continue;
    FrameLayout l;
    l.format = format;
    l.width = width;
    l.height = height;
    l.bytes_per_sample = n.bytes;
    if (format == AV_PIX_FMT_P010LE) l.sample_shift = 6;
    auto plane = [&](int w, int h, int ch, int lw, int lh, unsigned comps) {
      PlaneLayout p;
      p.width = w; p.height = h; p.channels = ch; p.log2_chroma_w = lw; p.log2_chroma_h = lh;
      p.components = comps; p.bytes_per_sample = n.bytes;
      l.planes[l.num_planes++] = p;
    };
    const int cw = ceil_shift(width, n.log2_w), chh = ceil_shift(height, n.log2_h);
    switch (n.kind) {
      case NativeFormat::Planar:
        plane(width, height, 1, 0, 0, kCompY);
        plane(cw, chh, 1, n.log2_w, n.log2_h, kCompU);
        plane(cw, chh, 1, n.log2_w, n.log2_h, kCompV);
        break;
      case NativeFormat::SemiPlanar:
        plane(width, height, 1, 0, 0, kCompY);
        plane(cw, chh, 2, n.log2_w, n.log2_h, kCompU | kCompV);
        break;
      case NativeFormat::Gray:
        plane(width, height, 1, 0, 0, kCompY);
        break;
      case NativeFormat::Packed:
        plane(width, height, n.packed_channels, 0, 0, kCompRGB | (n.packed_channels == 4 ? kCompA : 0u));
        break;
    }
    return l;
  }
  return std::nullopt;
}

AVPixelFormat nearest_native_format(AVPixelFormat format) {
  if (native_layout(format, 2, 2)) return format;
  const AVPixFmtDescriptor* d = av_pix_fmt_desc_get(format);
  if (!d) return AV_PIX_FMT_YUV420P;
  // Palette images: the palette may hold alpha; blurring mixes colours, so
  // they are filtered as RGBA (and cannot be written back as a palette).
  if (d->flags & AV_PIX_FMT_FLAG_PAL) return AV_PIX_FMT_RGBA;
  const bool deep = d->comp[0].depth > 8;
  if (d->nb_components <= 2 && !(d->flags & AV_PIX_FMT_FLAG_RGB)) return deep ? AV_PIX_FMT_GRAY16LE : AV_PIX_FMT_GRAY8;
  if (d->flags & AV_PIX_FMT_FLAG_RGB) return (d->flags & AV_PIX_FMT_FLAG_ALPHA) ? AV_PIX_FMT_RGBA : AV_PIX_FMT_RGB24;
  if (deep) return AV_PIX_FMT_YUV420P10LE;  // the only 16-bit YUV layout kept natively
  if (d->log2_chroma_w == 0 && d->log2_chroma_h == 0) return AV_PIX_FMT_YUV444P;
  if (d->log2_chroma_h == 0) return AV_PIX_FMT_YUV422P;
  return AV_PIX_FMT_YUV420P;
}

std::string pixel_format_name(AVPixelFormat format) {
  const char* n = av_get_pix_fmt_name(format);
  return n ? n : "unknown";
}

std::string native_format_names() {
  std::string s;
  for (const NativeFormat& n : kNative) {
    if (!s.empty()) s += ", ";
    s += pixel_format_name(n.format);
  }
  return s;
}

}  // namespace streamblur
