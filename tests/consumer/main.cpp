// Uses the installed streamblur: writes a clip, blurs it through the whole
// pipeline (CPU backend), and blurs one plane with the CPU kernel directly.
// Exits non-zero, with a line saying why, when anything is off.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "streamblur/kernels/cpu_blur.hpp"
#include "streamblur/pipeline/pipeline.hpp"

// A w x h 4:2:0 clip of `frames` frames written by hand as YUV4MPEG2 (the
// package ships no clip writer: the tests' one is a library of the build tree).
static void write_y4m(const std::string& path, int w, int h, int frames) {
  std::ofstream f(path, std::ios::binary);
  f << "YUV4MPEG2 W" << w << " H" << h << " F30:1 Ip A1:1 C420jpeg\n";
  const int cw = (w + 1) / 2, ch = (h + 1) / 2;
  for (int i = 0; i < frames; ++i) {
    f << "FRAME\n";
    for (int y = 0; y < h; ++y)
      for (int x = 0; x < w; ++x) f.put(static_cast<char>(16 + (x * 7 + y * 3 + i * 11) % 220));
    for (int plane = 0; plane < 2; ++plane)
      for (int y = 0; y < ch; ++y)
        for (int x = 0; x < cw; ++x) f.put(static_cast<char>(112 + (x + y + plane + i) % 32));
  }
  if (!f) throw std::runtime_error("cannot write " + path);
}

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: consumer WORK_DIR\n");
    return 2;
  }
  try {
    namespace fs = std::filesystem;
    const fs::path dir = argv[1];
    fs::create_directories(dir);
    const std::string in = (dir / "in.y4m").string(), out = (dir / "out.mkv").string();
    fs::remove(out);
    write_y4m(in, 33, 17, 5);

    streamblur::PipelineOptions o;
    o.input = in;
    o.output = out;
    o.filters = "gblur=sigma=2,boxblur=radius=1";
    o.backend = streamblur::BackendChoice::Cpu;
    o.encoder.codec = "ffv1";
    const streamblur::RunStats st = streamblur::run_pipeline(o);
    if (st.frames != 5 || !fs::exists(out) || fs::file_size(out) == 0) {
      std::fprintf(stderr, "consumer: the pipeline wrote %lld frames to '%s' (5 expected)\n",
                   static_cast<long long>(st.frames), out.c_str());
      return 1;
    }

    // An impulse blurred by the CPU Gaussian: symmetric, sums to the impulse.
    const int w = 9, h = 9;
    std::vector<uint16_t> src(w * h, 0), img(w * h, 0);
    src[4 * w + 4] = 10000;
    std::vector<float> tmp;
    streamblur::cpu::GaussianBlur blur(1.0);
    blur.apply<uint16_t>(streamblur::Plane<const uint16_t>(src.data(), w, h, w * sizeof(uint16_t)),
                         streamblur::Plane<uint16_t>(img.data(), w, h, w * sizeof(uint16_t)), tmp);
    long sum = 0;
    for (uint16_t v : img) sum += v;
    if (img[4 * w + 3] != img[4 * w + 5] || img[3 * w + 4] != img[5 * w + 4] || std::labs(sum - 10000) > 81) {
      std::fprintf(stderr, "consumer: the CPU blur of an impulse is not symmetric or lost mass (sum %ld)\n", sum);
      return 1;
    }
    std::printf("consumer: %lld frames through the installed pipeline; impulse blur ok (centre %u)\n",
                static_cast<long long>(st.frames), img[4 * w + 4]);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "consumer: %s\n", e.what());
    return 1;
  }
}
