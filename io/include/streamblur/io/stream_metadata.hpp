#pragma once
// What a video stream carries besides its pictures, read and written through
// one API whatever the FFmpeg version: stream side data (display matrix,
// HDR mastering display and light level, spherical, stereo 3D), chapters,
// image-sequence names. FFmpeg 6.1 moved stream side data into
// AVCodecParameters::coded_side_data; these helpers hide the difference.
extern "C" {
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
}

#include <cstddef>
#include <cstdint>
#include <string>

namespace streamblur::io {

// The stream's side data of `type`, or nullptr; `size` gets its byte count.
const uint8_t* stream_side_data(const AVStream& st, AVPacketSideDataType type, std::size_t* size = nullptr);
// Adds (or replaces) side data of `type` on `st`, a copy of `data`. Throws std::bad_alloc.
void set_stream_side_data(AVStream& st, AVPacketSideDataType type, const uint8_t* data, std::size_t size);

// The side data of a video stream that stays true after a blur (pixels are
// not moved, so the display matrix holds; colours are not changed, so the
// HDR mastering display and content light level hold; projection and stereo
// layout hold). Everything else describes the old encode and is dropped.
inline constexpr AVPacketSideDataType kKeptVideoSideData[] = {
    AV_PKT_DATA_DISPLAYMATRIX, AV_PKT_DATA_MASTERING_DISPLAY_METADATA, AV_PKT_DATA_CONTENT_LIGHT_LEVEL,
    AV_PKT_DATA_SPHERICAL, AV_PKT_DATA_STEREO3D};

// Copies the kept side data (above) from `in` to `out`; returns how many entries.
int copy_kept_video_side_data(const AVStream& in, AVStream& out);

// The display matrix's rotation in degrees as ffprobe prints it (counter-clockwise,
// -180..180], or 0 when the stream has none; `has` says whether it has one.
double stream_rotation(const AVStream& st, bool* has = nullptr);

// Appends a chapter [start, end) in `tb` with a "title" tag (when not empty).
// Throws std::bad_alloc.
void add_chapter(AVFormatContext& oc, int64_t id, AVRational tb, int64_t start, int64_t end, const std::string& title);

// Whether `path` names an image sequence (%d, %03d, ... as FFmpeg's image2 muxer reads it).
bool is_sequence_pattern(const std::string& path);
// The file name of frame `number` of a sequence pattern ("" when not a pattern).
std::string sequence_file_name(const std::string& pattern, int number);

}  // namespace streamblur::io
