#include "streamblur/io/stream_metadata.hpp"

#include "streamblur/io/av_ptr.hpp"

extern "C" {
#include <libavutil/display.h>
#include <libavutil/mem.h>
}

#include <cstring>
#include <new>
#include <vector>

namespace streamblur::io {

// FFmpeg 6.1 (libavformat 60.15) deprecated AVStream side data for
// AVCodecParameters::coded_side_data.
#if LIBAVFORMAT_VERSION_INT >= AV_VERSION_INT(60, 15, 100)
#define STREAMBLUR_CODECPAR_SIDE_DATA 1
#else
#define STREAMBLUR_CODECPAR_SIDE_DATA 0
#endif

const uint8_t* stream_side_data(const AVStream& st, AVPacketSideDataType type, std::size_t* size) {
#if STREAMBLUR_CODECPAR_SIDE_DATA
  const AVPacketSideData* sd =
      av_packet_side_data_get(st.codecpar->coded_side_data, st.codecpar->nb_coded_side_data, type);
  if (size) *size = sd ? sd->size : 0;
  return sd ? sd->data : nullptr;
#else
  for (int i = 0; i < st.nb_side_data; ++i)
    if (st.side_data[i].type == type) {
      if (size) *size = st.side_data[i].size;
      return st.side_data[i].data;
    }
  if (size) *size = 0;
  return nullptr;
#endif
}

void set_stream_side_data(AVStream& st, AVPacketSideDataType type, const uint8_t* data, std::size_t size) {
#if STREAMBLUR_CODECPAR_SIDE_DATA
  AVPacketSideData* sd =
      av_packet_side_data_new(&st.codecpar->coded_side_data, &st.codecpar->nb_coded_side_data, type, size, 0);
  if (!sd) throw std::bad_alloc();
  std::memcpy(sd->data, data, size);
#else
  uint8_t* copy = av_stream_new_side_data(&st, type, size);
  if (!copy) throw std::bad_alloc();
  std::memcpy(copy, data, size);
#endif
}

int copy_kept_video_side_data(const AVStream& in, AVStream& out) {
  int n = 0;
  for (AVPacketSideDataType type : kKeptVideoSideData) {
    std::size_t size = 0;
    const uint8_t* data = stream_side_data(in, type, &size);
    if (!data || size == 0) continue;
    set_stream_side_data(out, type, data, size);
    ++n;
  }
  return n;
}

double stream_rotation(const AVStream& st, bool* has) {
  std::size_t size = 0;
  const uint8_t* m = stream_side_data(st, AV_PKT_DATA_DISPLAYMATRIX, &size);
  if (has) *has = m && size >= 9 * sizeof(int32_t);
  if (!m || size < 9 * sizeof(int32_t)) return 0;
  return av_display_rotation_get(reinterpret_cast<const int32_t*>(m));
}

void add_chapter(AVFormatContext& oc, int64_t id, AVRational tb, int64_t start, int64_t end, const std::string& title) {
  // The public API has no constructor for chapters; like ffmpeg's own
  // copy_chapters, allocate one and append it (avformat_free_context frees both).
  AVChapterPtr ch(static_cast<AVChapter*>(av_mallocz(sizeof(AVChapter))));
  if (!ch) throw std::bad_alloc();
  ch->id = id;
  ch->time_base = tb;
  ch->start = start;
  ch->end = end;
  if (!title.empty() && av_dict_set(&ch->metadata, "title", title.c_str(), 0) < 0) throw std::bad_alloc();
  if (av_dynarray_add_nofree(&oc.chapters, reinterpret_cast<int*>(&oc.nb_chapters), ch.get()) < 0)
    throw std::bad_alloc();
  ch.release();  // the context owns it now
}

bool is_sequence_pattern(const std::string& path) {
  std::vector<char> buf(path.size() + 32);
  return av_get_frame_filename2(buf.data(), static_cast<int>(buf.size()), path.c_str(), 1, 0) >= 0;
}

std::string sequence_file_name(const std::string& pattern, int number) {
  std::vector<char> buf(pattern.size() + 32);
  if (av_get_frame_filename2(buf.data(), static_cast<int>(buf.size()), pattern.c_str(), number, 0) < 0) return "";
  return buf.data();
}

}  // namespace streamblur::io
