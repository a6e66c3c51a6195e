// libFuzzer harness: demux + decode of a few frames from memory (an
// AVIOContext over the fuzzer's bytes). Damaged input may throw std::exception
// (one clear error); a crash, hang or sanitizer report is a finding.
#include <cstdint>
#include <cstring>
#include <exception>

extern "C" {
#include <libavformat/avio.h>
#include <libavutil/log.h>
#include <libavutil/mem.h>
}

#include "streamblur/io/reader.hpp"

namespace {

struct Memory {
  const uint8_t* data;
  size_t size;
  size_t pos = 0;
};

int read_packet(void* opaque, uint8_t* buf, int n) {
  auto* m = static_cast<Memory*>(opaque);
  const size_t left = m->size - m->pos;
  if (left == 0) return AVERROR_EOF;
  const size_t k = std::min(left, static_cast<size_t>(n));
  std::memcpy(buf, m->data + m->pos, k);
  m->pos += k;
  return static_cast<int>(k);
}

int64_t seek(void* opaque, int64_t offset, int whence) {
  auto* m = static_cast<Memory*>(opaque);
  if (whence == AVSEEK_SIZE) return static_cast<int64_t>(m->size);
  int64_t target = offset;
  if ((whence & ~AVSEEK_FORCE) == SEEK_CUR) target += static_cast<int64_t>(m->pos);
  else if ((whence & ~AVSEEK_FORCE) == SEEK_END) target += static_cast<int64_t>(m->size);
  if (target < 0 || target > static_cast<int64_t>(m->size)) return AVERROR(EINVAL);
  m->pos = static_cast<size_t>(target);
  return target;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const bool quiet = [] {
    av_log_set_level(AV_LOG_QUIET);
    return true;
  }();
  (void)quiet;
  Memory mem{data, size};
  constexpr int kBuffer = 4096;
  auto* buffer = static_cast<uint8_t*>(av_malloc(kBuffer));
  if (!buffer) return 0;
  const streamblur::io::AVIOContextPtr io(avio_alloc_context(buffer, kBuffer, 0, &mem, read_packet, nullptr, seek));
  if (!io) {
    av_free(buffer);
    return 0;
  }
  try {
    streamblur::io::ReaderOptions o;
    o.custom_io = io.get();
    o.decoder_threads = 1;
    o.warn = [](const std::string&) {};
    streamblur::io::MediaReader reader("fuzz-input", o);
    streamblur::io::DecodedFrame f;
    for (int i = 0; i < 8 && reader.read(f); ++i) {}
  } catch (const std::exception&) {
  }
  return 0;
}
