#include "streamblur/io/hw_decode.hpp"

#include "streamblur/config.hpp"

extern "C" {
#include <libavutil/hwcontext.h>
#if STREAMBLUR_HAVE_CUDA
#include <libavutil/hwcontext_cuda.h>
#endif
#include <libavutil/imgutils.h>
#include <libavutil/pixdesc.h>
}

#include "streamblur/io/av_error.hpp"

namespace streamblur::io {

std::string nvdec_unsupported_reason(const AVCodecParameters& par, const AVCodec& decoder) {
  bool has_cuda = false;
  for (int i = 0;; ++i) {
    const AVCodecHWConfig* cfg = avcodec_get_hw_config(&decoder, i);
    if (!cfg) break;
    if (cfg->device_type == AV_HWDEVICE_TYPE_CUDA && (cfg->methods & AV_CODEC_HW_CONFIG_METHOD_HW_DEVICE_CTX))
      has_cuda = true;
  }
  if (!has_cuda)
    return std::string("this FFmpeg has no NVDEC (CUDA hwaccel) for ") + avcodec_get_name(par.codec_id);
  // The surfaces NVDEC writes (NV12, P010, YUV444P) must map onto the format
  // the CPU decoder gives, sample for sample, so both paths filter the same data.
  switch (static_cast<AVPixelFormat>(par.format)) {
    case AV_PIX_FMT_YUV420P:
    case AV_PIX_FMT_YUVJ420P:
    case AV_PIX_FMT_NV12:
    case AV_PIX_FMT_YUV420P10LE:
    case AV_PIX_FMT_P010LE:
    case AV_PIX_FMT_YUV444P:
    case AV_PIX_FMT_YUVJ444P:
      return "";
    default: {
      const char* name = av_get_pix_fmt_name(static_cast<AVPixelFormat>(par.format));
      return std::string("NVDEC does not decode ") + (name ? name : "this pixel format") + " video";
    }
  }
}

AVBufferRefPtr make_cuda_device_context(void* cu_context, void* cu_stream) {
#if !STREAMBLUR_HAVE_CUDA
  (void)cu_context;
  (void)cu_stream;
  throw AVError("NVDEC needs the CUDA backend, and this streamblur was built without CUDA", AVERROR(ENOSYS));
#else
  AVBufferRefPtr ref(av_hwdevice_ctx_alloc(AV_HWDEVICE_TYPE_CUDA));
  if (!ref) throw AVError("cannot allocate a CUDA device context for NVDEC (FFmpeg built without CUDA?)", AVERROR(ENOSYS));
  auto* dev = reinterpret_cast<AVHWDeviceContext*>(ref->data);
  auto* cuda = static_cast<AVCUDADeviceContext*>(dev->hwctx);
  cuda->cuda_ctx = static_cast<CUcontext>(cu_context);
  cuda->stream = static_cast<CUstream>(cu_stream);
  AV_CHECK_CTX(av_hwdevice_ctx_init(ref.get()), "cannot set up NVDEC on the CUDA context");
  return ref;
#endif
}

AVPixelFormat hw_frame_sw_format(const AVFrame& f) {
  if (!f.hw_frames_ctx) return AV_PIX_FMT_NONE;
  return reinterpret_cast<const AVHWFramesContext*>(f.hw_frames_ctx->data)->sw_format;
}

std::size_t hw_decoder_surface_bytes(const AVBufferRef* hw_frames_ctx) {
  if (!hw_frames_ctx) return 0;
  const auto* fc = reinterpret_cast<const AVHWFramesContext*>(hw_frames_ctx->data);
  const int one = av_image_get_buffer_size(fc->sw_format, fc->width, fc->height, 256);
  if (one <= 0 || fc->initial_pool_size <= 0) return 0;
  return 2 * static_cast<std::size_t>(one) * fc->initial_pool_size;
}

}  // namespace streamblur::io
