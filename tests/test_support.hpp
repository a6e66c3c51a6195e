#pragma once
// Helpers shared by the test programs: temporary folders, file bytes, error
// messages, and a small audio-only file (no video stream) made at test time.
#include <gtest/gtest.h>

extern "C" {
#include <libavformat/avformat.h>
}

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "streamblur/io/av_error.hpp"
#include "streamblur/io/av_ptr.hpp"
#include "streamblur/io/reader.hpp"

namespace sbtest {

// A fresh folder per test, removed at the end.
class TempDir {
 public:
  explicit TempDir(const std::string& prefix = "streamblur_test") {
    static std::atomic<int> counter{0};
    std::random_device rd;
    path_ = std::filesystem::temp_directory_path() /
            (prefix + "_" + std::to_string(::getpid()) + "_" + std::to_string(counter++) + "_" + std::to_string(rd()));
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  std::string file(const std::string& name) const { return (path_ / name).string(); }
  const std::filesystem::path& path() const { return path_; }
  // Names of the files in the folder, sorted.
  std::vector<std::string> listing() const {
    std::vector<std::string> v;
    for (const auto& e : std::filesystem::directory_iterator(path_)) v.push_back(e.path().filename().string());
    std::sort(v.begin(), v.end());
    return v;
  }

 private:
  std::filesystem::path path_;
};

inline std::string bytes_of(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

inline bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// The exception message of `fn`, or "" when nothing was thrown.
template <class Fn>
std::string error_of(Fn&& fn) {
  try {
    fn();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

// An mkv with one pcm_s16le audio stream and no video, written packet by packet.
inline void write_audio_only_mkv(const std::string& path) {
  AVFormatContext* oc = nullptr;
  AV_CHECK(avformat_alloc_output_context2(&oc, nullptr, nullptr, path.c_str()));
  AVStream* st = avformat_new_stream(oc, nullptr);
  st->codecpar->codec_type = AVMEDIA_TYPE_AUDIO;
  st->codecpar->codec_id = AV_CODEC_ID_PCM_S16LE;
  st->codecpar->sample_rate = 48000;
  av_channel_layout_default(&st->codecpar->ch_layout, 2);
  st->codecpar->format = AV_SAMPLE_FMT_S16;
  st->codecpar->bits_per_coded_sample = 16;
  st->codecpar->block_align = 4;
  st->time_base = AVRational{1, 48000};
  AV_CHECK(avio_open(&oc->pb, path.c_str(), AVIO_FLAG_WRITE));
  AV_CHECK(avformat_write_header(oc, nullptr));
  streamblur::io::AVPacketPtr pkt = streamblur::io::make_packet();
  for (int i = 0; i < 10; ++i) {
    AV_CHECK(av_new_packet(pkt.get(), 1024 * 4));
    std::memset(pkt->data, i, pkt->size);
    pkt->pts = pkt->dts = av_rescale_q(i * 1024, AVRational{1, 48000}, st->time_base);
    pkt->duration = av_rescale_q(1024, AVRational{1, 48000}, st->time_base);
    pkt->stream_index = 0;
    AV_CHECK(av_interleaved_write_frame(oc, pkt.get()));
  }
  AV_CHECK(av_write_trailer(oc));
  avio_closep(&oc->pb);
  avformat_free_context(oc);
}

// Reads every frame and every passthrough packet (in demux order) of `reader`.
inline void read_everything(streamblur::io::MediaReader& reader, std::vector<streamblur::io::AVFramePtr>& frames,
                            std::vector<streamblur::io::AVPacketPtr>& packets) {
  streamblur::io::DecodedFrame f;
  while (reader.read(f)) {
    frames.push_back(std::move(f.frame));
    for (auto& p : f.passthrough) packets.push_back(std::move(p));
  }
  for (auto& p : reader.take_remaining_passthrough()) packets.push_back(std::move(p));
}

}  // namespace sbtest

// The message is not empty, is one line, and holds every part.
#define EXPECT_ONE_LINE_CONTAINS(msg, ...)                                                   \
  do {                                                                                      \
    const std::string m_ = (msg);                                                           \
    EXPECT_FALSE(m_.empty()) << "nothing was thrown";                                       \
    EXPECT_EQ(m_.find('\n'), std::string::npos) << m_;                                      \
    for (const char* part : {__VA_ARGS__})                                                  \
      EXPECT_NE(m_.find(part), std::string::npos) << "'" << part << "' not in: " << m_;     \
  } while (0)
