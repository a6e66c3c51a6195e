// libFuzzer harness: the whole CPU pipeline (decode, gblur + boxblur, encode
// to FFV1 in Matroska) on the fuzzer's bytes as an input file. A failing run
// must throw std::exception and leave no output; anything else is a finding.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <string>

extern "C" {
#include <libavutil/log.h>
}

#include "streamblur/pipeline/pipeline.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace fs = std::filesystem;
  static const fs::path dir = [] {
    av_log_set_level(AV_LOG_QUIET);
    fs::path d = fs::temp_directory_path() / ("streamblur-fuzz-" + std::to_string(::getpid()));
    fs::create_directories(d);
    return d;
  }();
  const fs::path in = dir / "in", out = dir / "out.mkv";
  std::ofstream(in, std::ios::binary | std::ios::trunc).write(reinterpret_cast<const char*>(data),
                                                              static_cast<std::streamsize>(size));
  streamblur::PipelineOptions o;
  o.input = in.string();
  o.output = out.string();
  o.filters = "gblur=sigma=1,boxblur=1";
  o.backend = streamblur::BackendChoice::Cpu;
  o.hwdec = streamblur::HwDecode::None;
  o.inflight = 2;
  o.decoder_threads = 1;
  o.overwrite = true;
  o.encoder.codec = "ffv1";
  o.note = [](const std::string&) {};
  bool ok = true;
  try {
    streamblur::run_pipeline(o);
  } catch (const std::exception&) {
    ok = false;
  }
  std::error_code ec;
  // Only the input and, after success, the output may exist: no temporary file.
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (name != "in" && !(ok && name == "out.mkv")) std::abort();
  }
  fs::remove(out, ec);
  return 0;
}
