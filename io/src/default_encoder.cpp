// The encoder a container gets when none is named (writer.hpp).
#include <algorithm>
#include <cctype>
#include <stdexcept>
#include <string>

extern "C" {
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
}

#include "streamblur/io/writer.hpp"

namespace streamblur::io {
namespace {

// The video encoders of this build that `of` can hold, as "a, b, c".
std::string encoders_for(const AVOutputFormat* of) {
  std::string list;
  void* it = nullptr;
  while (const AVCodec* c = av_codec_iterate(&it)) {
    if (!av_codec_is_encoder(c) || c->type != AVMEDIA_TYPE_VIDEO) continue;
    if (c->capabilities & AV_CODEC_CAP_EXPERIMENTAL) continue;
    if (avformat_query_codec(of, c->id, FF_COMPLIANCE_NORMAL) != 1) continue;
    list += (list.empty() ? "" : ", ") + std::string(c->name);
  }
  return list.empty() ? "none in this FFmpeg build" : list;
}

}  // namespace

bool is_network_url(const std::string& path) {
  const std::size_t colon = path.find("://");
  if (colon == std::string::npos || colon == 0 || path.rfind("file:", 0) == 0) return false;
  return std::all_of(path.begin(), path.begin() + static_cast<std::ptrdiff_t>(colon), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '+' || c == '-' || c == '.';
  });
}

const AVOutputFormat* guess_output_format(const std::string& path) {
  if (is_network_url(path)) {
    const std::string scheme = path.substr(0, path.find("://"));
    static const std::pair<const char*, const char*> kByScheme[] = {
        {"udp", "mpegts"}, {"srt", "mpegts"}, {"tcp", "mpegts"}, {"rtp", "rtp_mpegts"}, {"rtmp", "flv"},
        {"rtmps", "flv"}};
    for (const auto& [s, format] : kByScheme)
      if (scheme == s) return av_guess_format(format, nullptr, nullptr);
  }
  return av_guess_format(nullptr, path.c_str(), nullptr);
}

std::string default_video_encoder(const std::string& path, const std::string& format_name) {
  const AVOutputFormat* of =
      format_name.empty() ? guess_output_format(path) : av_guess_format(format_name.c_str(), nullptr, nullptr);
  if (!of) return "libx264";
  const AVCodecID id = av_guess_codec(of, nullptr, path.c_str(), nullptr, AVMEDIA_TYPE_VIDEO);
  if (id == AV_CODEC_ID_NONE)
    throw std::runtime_error("the " + std::string(of->name) + " container holds no video");
  if (const AVCodec* c = avcodec_find_encoder(id)) return c->name;
  throw std::runtime_error("this FFmpeg build has no encoder for " + std::string(avcodec_get_name(id)) +
                           ", the default video codec of the " + of->name + " container; name one of the encoders it "
                           "takes: " + encoders_for(of));
}

}  // namespace streamblur::io
