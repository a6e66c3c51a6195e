#include "streamblur/io/convert.hpp"

extern "C" {
#include <libavutil/pixdesc.h>
#include <libswscale/swscale.h>
}

#include <stdexcept>
#include <string>

#include "streamblur/io/av_error.hpp"

namespace streamblur::io {

namespace {

const char* fmt_name(AVPixelFormat f) {
  const char* n = av_get_pix_fmt_name(f);
  return n ? n : "none";
}

bool is_full_range(const AVFrame& f) {
  if (f.color_range == AVCOL_RANGE_JPEG) return true;
  if (f.color_range == AVCOL_RANGE_MPEG) return false;
  const auto fmt = static_cast<AVPixelFormat>(f.format);
  return fmt == AV_PIX_FMT_YUVJ420P || fmt == AV_PIX_FMT_YUVJ422P || fmt == AV_PIX_FMT_YUVJ444P ||
         fmt == AV_PIX_FMT_YUVJ440P || fmt == AV_PIX_FMT_YUVJ411P;
}

bool is_rgb(AVPixelFormat f) {
  const AVPixFmtDescriptor* d = av_pix_fmt_desc_get(f);
  return d && (d->flags & AV_PIX_FMT_FLAG_RGB);
}

bool is_gray(AVPixelFormat f) {
  const AVPixFmtDescriptor* d = av_pix_fmt_desc_get(f);
  return d && d->nb_components <= 2 && !(d->flags & AV_PIX_FMT_FLAG_RGB) && !(d->flags & AV_PIX_FMT_FLAG_PAL);
}

}  // namespace

bool can_convert_to(AVPixelFormat format) {
  return av_pix_fmt_desc_get(format) && sws_isSupportedOutput(format) > 0;
}

FrameConverter::FrameConverter(int width, int height, AVPixelFormat from, AVPixelFormat to)
    : width_(width), height_(height), from_(from), to_(to) {
  // swscale asserts (aborts the process) on formats it does not know.
  if (width <= 0 || height <= 0 || !av_pix_fmt_desc_get(from) || !av_pix_fmt_desc_get(to) ||
      !sws_isSupportedInput(from) || !sws_isSupportedOutput(to))
    throw std::runtime_error("cannot convert " + std::to_string(width) + "x" + std::to_string(height) + " " +
                             fmt_name(from) + " to " + fmt_name(to) + ": not a conversion swscale can do");
  sws_.reset(sws_getContext(width, height, from, width, height, to, SWS_BICUBIC | SWS_ACCURATE_RND, nullptr, nullptr,
                            nullptr));
  if (!sws_)
    throw std::runtime_error("cannot convert " + std::to_string(width) + "x" + std::to_string(height) + " " +
                             fmt_name(from) + " to " + fmt_name(to) + ": sws_getContext failed");
}

void FrameConverter::convert(const AVFrame& src, AVFrame& dst) {
  if (src.width != width_ || src.height != height_ || src.format != from_)
    throw std::runtime_error("FrameConverter: frame is " + std::to_string(src.width) + "x" +
                             std::to_string(src.height) + " " + fmt_name(static_cast<AVPixelFormat>(src.format)) +
                             ", converter was made for " + std::to_string(width_) + "x" + std::to_string(height_) +
                             " " + fmt_name(from_));
  if (!dst.data[0]) {
    dst.format = to_;
    dst.width = width_;
    dst.height = height_;
    AV_CHECK_CTX(av_frame_get_buffer(&dst, 0), "FrameConverter: cannot allocate the destination frame");
  } else if (dst.width != width_ || dst.height != height_ || dst.format != to_) {
    throw std::runtime_error("FrameConverter: destination frame does not match " + std::to_string(width_) + "x" +
                             std::to_string(height_) + " " + fmt_name(to_));
  }

  // Keep the range (no expansion or compression of levels) and use the frame's
  // own matrix for any YUV<->RGB step. swscale ignores these for gray/RGB sides.
  const int range = is_full_range(src) ? 1 : 0;
  const bool src_rgb = is_rgb(from_), dst_rgb = is_rgb(to_);
  const int cs = src_rgb ? AVCOL_SPC_BT470BG : src.colorspace;  // RGB->YUV: BT.601, swscale's default
  if (cs != last_colorspace_ || range != last_range_) {
    const int* coeffs = sws_getCoefficients(cs == AVCOL_SPC_UNSPECIFIED ? SWS_CS_DEFAULT : cs);
    sws_setColorspaceDetails(sws_.get(), coeffs, range, coeffs, range, 0, 1 << 16, 1 << 16);
    last_colorspace_ = cs;
    last_range_ = range;
  }

  const int rows = sws_scale(sws_.get(), src.data, src.linesize, 0, height_, dst.data, dst.linesize);
  if (rows <= 0)
    throw_av_error(rows < 0 ? rows : AVERROR_EXTERNAL, "sws_scale", __FILE__, __LINE__, "FrameConverter");
  AV_CHECK_CTX(av_frame_copy_props(&dst, &src), "FrameConverter: cannot copy frame properties");
  // Tags must describe the new pixels when the colour model changed.
  if (dst_rgb && !src_rgb) {
    dst.colorspace = AVCOL_SPC_RGB;
    dst.color_range = AVCOL_RANGE_JPEG;
  } else if (src_rgb && !dst_rgb && !is_gray(to_)) {
    dst.colorspace = AVCOL_SPC_BT470BG;
    dst.color_range = range ? AVCOL_RANGE_JPEG : AVCOL_RANGE_MPEG;
  }
}

}  // namespace streamblur::io
