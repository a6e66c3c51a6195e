#pragma once
// Deterministic synthetic media made with the library's own encoders: tests and
// the benchmark make their clips at run time instead of committing media.
#include <string>

extern "C" {
#include <libavutil/pixfmt.h>
}

namespace streamblur::io {

struct SyntheticClipSpec {
  int width = 64;
  int height = 48;
  int frames = 10;
  int fps = 30;
  AVPixelFormat pix_fmt = AV_PIX_FMT_YUV420P;
  std::string codec = "ffv1";        // ffv1, libx264, mpeg4, png, ...
  std::string preset;                // e.g. "ultrafast" for libx264
  int crf = -1;
  bool audio = false;                // adds a stereo 48 kHz audio track
  std::string audio_codec = "aac";   // aac, pcm_s16le, ...
  bool variable_frame_rate = false;  // irregular pts steps
  bool noise = false;                // moving content plus film-like grain (realistic decode load)
  AVColorRange color_range = AVCOL_RANGE_MPEG;
  AVColorSpace colorspace = AVCOL_SPC_BT709;
  AVColorPrimaries color_primaries = AVCOL_PRI_BT709;
  AVColorTransferCharacteristic color_trc = AVCOL_TRC_BT709;
  unsigned seed = 1;
  std::string title;                 // container metadata "title" when not empty
};

// Writes the clip to `path` (container from the extension). Throws AVError on failure.
void write_synthetic_clip(const std::string& path, const SyntheticClipSpec& spec);

}  // namespace streamblur::io
