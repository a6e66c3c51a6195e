#include "region_checks.hpp"

#include <algorithm>
#include <stdexcept>
#include <utility>

extern "C" {
#include <libavformat/avformat.h>
}

namespace streamblur::detail {

RegionVideo region_video(const io::MediaReader& reader, bool trimmed_start, int64_t frames) {
  const io::VideoInfo& info = reader.video();
  RegionVideo v;
  v.width = info.width;
  v.height = info.height;
  v.frames = frames;
  v.frame_rate = av_q2d(info.frame_rate);
  const AVFormatContext* fmt = reader.format_context();
  const AVStream* st = fmt->streams[reader.video_stream_index()];
  double t0 = st->start_time != AV_NOPTS_VALUE ? st->start_time * av_q2d(st->time_base)
              : fmt->start_time != AV_NOPTS_VALUE ? static_cast<double>(fmt->start_time) / AV_TIME_BASE
                                                  : 0.0;
  t0 -= static_cast<double>(reader.timestamp_shift()) / AV_TIME_BASE;
  v.input_start_s = t0;
  if (info.duration_seconds > 0) v.input_end_s = t0 + info.duration_seconds;
  v.start_s = trimmed_start ? std::max(t0, 0.0) : t0;  // frames before the start are dropped
  if (v.frames > 0 && v.frame_rate > 0) v.end_s = v.start_s + static_cast<double>(v.frames) / v.frame_rate;
  else v.end_s = v.input_end_s;
  if (reader.span_end() != AV_NOPTS_VALUE)
    v.end_s = std::min(v.end_s, static_cast<double>(reader.span_end()) / AV_TIME_BASE);
  return v;
}

RegionChecks::RegionChecks(const std::vector<FilterInstanceSpec>& chain, bool strict, bool writes_output,
                           std::function<void(const std::string&)> note)
    : chain_(chain), strict_(strict), writes_output_(writes_output), note_(std::move(note)) {}

void RegionChecks::problem(const std::string& why) {
  if (!strict_) {
    note_("warning: " + why);
    return;
  }
  throw std::invalid_argument(why + (writes_output_ ? "; no output written" : ""));
}

void RegionChecks::fit(const RegionVideo& video) {
  for (const FilterInstanceSpec& f : chain_)
    if (const RegionSpec* r = regions_of(f))
      if (const std::string why = regions_never_match(*r, video); !why.empty()) {
        reported_.insert(r);
        problem(why);
      }
}

void RegionChecks::used() {
  for (const FilterInstanceSpec& f : chain_)
    if (const RegionSpec* r = regions_of(f); r && !reported_.count(r))
      if (const std::string why = regions_unused(*r); !why.empty()) problem(why);
}

}  // namespace streamblur::detail
