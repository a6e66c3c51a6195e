#pragma once
// Hardware (NVDEC) decoding through FFmpeg's CUDA hwaccel, sharing a CUDA
// context that the caller already made (the runtime's primary context), so
// decoded surfaces and the caller's kernels live in one context and frames
// never leave device memory. io/ only wraps the context; it runs no kernels.
#include <string>

#include "streamblur/io/av_ptr.hpp"

namespace streamblur::io {

// Why this FFmpeg cannot decode `stream` with NVDEC ("" when it can try):
// no CUDA hwaccel for the codec in this build, or a pixel format NVDEC does not
// output. The hardware itself is asked only when decoding starts.
std::string nvdec_unsupported_reason(const AVCodecParameters& stream, const AVCodec& decoder);

// An AV_HWDEVICE_TYPE_CUDA device context wrapping an existing CUcontext and
// CUstream (FFmpeg 5.1 has no AV_CUDA_USE_CURRENT_CONTEXT; a context FFmpeg
// did not create is not destroyed by it). Throws AVError on failure.
AVBufferRefPtr make_cuda_device_context(void* cu_context, void* cu_stream);

// The software pixel format of a hardware frame (its frames context), or
// AV_PIX_FMT_NONE for a software frame.
AVPixelFormat hw_frame_sw_format(const AVFrame& frame);

// Bytes of device memory a hardware decoder's surfaces hold, from its frames
// context (AVCodecContext::hw_frames_ctx): FFmpeg's nvdec asks NVDEC for
// initial_pool_size decode surfaces and maps each picture into an output
// surface of a pool that grows to about as many, so the figure is twice the
// pool (this matched the measured growth of device memory per 1080p stream
// on the H200). 0 when unknown.
std::size_t hw_decoder_surface_bytes(const AVBufferRef* hw_frames_ctx);

}  // namespace streamblur::io
