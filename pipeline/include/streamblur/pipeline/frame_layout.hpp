#pragma once
// The pixel formats processed natively, plane by plane, and the nearest of
// them for every other format (converted with swscale on the way in and back).
#include <array>
#include <optional>
#include <string>

extern "C" {
#include <libavutil/pixfmt.h>
}

namespace streamblur {

// Components a plane holds, for the `planes=` option.
enum PlaneComponent : unsigned { kCompY = 1, kCompU = 2, kCompV = 4, kCompA = 8, kCompRGB = 16 };

// The shape of one plane of a native format.
struct PlaneLayout {
  int width = 0;
  int height = 0;
  int channels = 1;      // interleaved samples per pixel (2 for NV12/P010 chroma)
  int log2_chroma_w = 0; // subsampling of this plane against the picture
  int log2_chroma_h = 0;
  unsigned components = kCompY;
  int bytes_per_sample = 1;
};

// A native format's planes at one picture size.
struct FrameLayout {
  AVPixelFormat format = AV_PIX_FMT_NONE;
  int width = 0;
  int height = 0;
  int bytes_per_sample = 1;  // 1 or 2
  int sample_shift = 0;      // low bits that must stay zero (6 for P010: 10 bits in the high bits)
  int num_planes = 0;
  std::array<PlaneLayout, 4> planes{};
};

// The layout of a natively processed format; nullopt for any other.
std::optional<FrameLayout> native_layout(AVPixelFormat format, int width, int height);

// The natively processed format closest to `format` (itself when native).
AVPixelFormat nearest_native_format(AVPixelFormat format);

// FFmpeg's name of `format` (av_get_pix_fmt_name), "unknown" when it has none.
std::string pixel_format_name(AVPixelFormat format);

// Comma-separated list of the native formats, for --help and the README.
std::string native_format_names();

}  // namespace streamblur
