// Writes the fuzzers' seed corpora: tiny clips of every container and codec
// the tests use, made with the library's own encoders, plus a few specs.
//   streamblur_fuzz_seeds OUT_DIR
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "streamblur/testing/synthetic_clip.hpp"

int main(int argc, char** argv) {
  namespace fs = std::filesystem;
  if (argc != 2) {
    std::cerr << "usage: streamblur_fuzz_seeds OUT_DIR\n";
    return 2;
  }
  const fs::path out = argv[1];
  for (const char* d : {"media", "filter_spec"}) fs::create_directories(out / d);
  struct Clip { const char* name; const char* codec; AVPixelFormat fmt; bool audio; };
  const std::vector<Clip> clips = {
      {"ffv1.mkv", "ffv1", AV_PIX_FMT_YUV420P, true},       {"x264.mp4", "libx264", AV_PIX_FMT_YUV420P, false},
      {"mpeg4.avi", "mpeg4", AV_PIX_FMT_YUV420P, true},     {"rgb.png", "png", AV_PIX_FMT_RGB24, false},
      {"p10.mkv", "ffv1", AV_PIX_FMT_YUV420P10LE, false},   {"gray.mkv", "ffv1", AV_PIX_FMT_GRAY8, false},
      {"nv12.nut", "rawvideo", AV_PIX_FMT_NV12, false},     {"mpeg4.ts", "mpeg4", AV_PIX_FMT_YUV420P, true},
  };
  for (const Clip& c : clips) {
    streamblur::io::SyntheticClipSpec s;
    s.width = 24;
    s.height = 16;
    s.frames = 2;
    s.codec = c.codec;
    s.pix_fmt = c.fmt;
    s.audio = c.audio;
    s.audio_codec = "pcm_s16le";
    if (std::string(c.codec) == "libx264") s.preset = "ultrafast";
    try {
      streamblur::io::write_synthetic_clip((out / "media" / c.name).string(), s);
    } catch (const std::exception& e) {
      std::cerr << "streamblur_fuzz_seeds: skipped " << c.name << ": " << e.what() << "\n";
    }
  }
  const std::vector<std::string> specs = {"gblur=sigma=2", "boxblur=radius=3:planes=y", "gblur=2:3:1.5,boxblur=1",
                                          "gblur=sigma=1:sigmaV=4:chroma_scale=0", "boxblur=planes=0x6"};
  for (size_t i = 0; i < specs.size(); ++i)
    std::ofstream(out / "filter_spec" / ("spec" + std::to_string(i))) << specs[i];
  return 0;
}
