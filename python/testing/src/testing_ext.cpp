// _streamblur_testing: the Python tests' synthetic clips, written by
// streamblur_testing's write_synthetic_clip (the C++ tests' writer), so the
// Python suite keeps its clips (any size and pixel format the encoders take,
// 10-bit, audio, noise) without the product module carrying a test writer.
// python/tests/support.py is its only caller.
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>

#include <stdexcept>
#include <string>

extern "C" {
#include <libavutil/pixdesc.h>
}

#include "streamblur/testing/synthetic_clip.hpp"

namespace nb = nanobind;
using namespace nb::literals;

namespace {

void write_clip(const std::string& path, int width, int height, int frames, const std::string& codec,
                const std::string& pix_fmt, int fps, bool noise, const std::string& preset,
                const std::string& audio_codec) {
  streamblur::io::SyntheticClipSpec spec;
  spec.audio = !audio_codec.empty();
  if (spec.audio) spec.audio_codec = audio_codec;
  spec.width = width;
  spec.height = height;
  spec.frames = frames;
  spec.fps = fps;
  spec.codec = codec;
  spec.noise = noise;
  spec.preset = preset;
  spec.pix_fmt = av_get_pix_fmt(pix_fmt.c_str());
  if (spec.pix_fmt == AV_PIX_FMT_NONE) throw std::invalid_argument("unknown pixel format '" + pix_fmt + "'");
  nb::gil_scoped_release no_gil;
  streamblur::io::write_synthetic_clip(path, spec);
}

}  // namespace

NB_MODULE(_streamblur_testing, m) {
  m.doc() = "streamblur's test helpers (not part of streamblur): synthetic clips for the Python tests.";
  m.def("write_clip", &write_clip, "path"_a, "width"_a, "height"_a, "frames"_a, "codec"_a, "pix_fmt"_a, "fps"_a,
        "noise"_a, "preset"_a, "audio_codec"_a,
        "Writes a deterministic synthetic clip (streamblur::io::write_synthetic_clip); the container comes from the "
        "path's extension. Raises ValueError for an unknown pixel format, RuntimeError when FFmpeg fails.");
}
