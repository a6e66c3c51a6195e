#pragma once
// The quality of encoded files against the frames they were made from: PSNR
// per frame over every plane, as FFmpeg's psnr filter counts it. Part of
// streamblur_testing: the segmented run's tests and streamblur-bench measure
// a segmented libx264 output against the plain run's with it.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

extern "C" {
#include <libavutil/pixdesc.h>
}

namespace streamblur::io {

// One plane of a reference picture in host memory.
struct HostPlane {
  const void* data = nullptr;
  std::ptrdiff_t pitch = 0;          // bytes between rows
  int samples = 0, rows = 0;         // samples per row (width x channels), rows
  int bytes_per_sample = 1;          // 1 (8-bit) or 2 (up to 16-bit, native order)
  int bits = 8;                      // significant bits: the peak is 2^bits - 1
};

// The planes of a filtered frame in host memory (a FrameView of
// PipelineOptions::frame_sink with SinkMemory::Host, or any view with its
// fields) as PsnrMeter takes them.
template <class View>
std::vector<HostPlane> host_planes(const View& v) {
  std::vector<HostPlane> planes;
  const int bits = av_pix_fmt_desc_get(v.layout.format)->comp[0].depth + v.layout.sample_shift;
  for (int p = 0; p < v.layout.num_planes; ++p) {
    const auto& pl = v.planes[p];
    planes.push_back({pl.data, pl.pitch, pl.width * pl.channels, pl.height, pl.bytes_per_sample, bits});
  }
  return planes;
}

// Decodes `files` (on the CPU) side by side against reference pictures
// handed in one by one, in output order.
class PsnrMeter {
 public:
  explicit PsnrMeter(const std::vector<std::string>& files);
  ~PsnrMeter();
  PsnrMeter(const PsnrMeter&) = delete;
  PsnrMeter& operator=(const PsnrMeter&) = delete;

  // The next frame of every file against `reference` (the files' planar
  // pixel format). Throws std::runtime_error naming the file and frame when
  // a file has no frame left or a plane's size differs.
  void add(const std::vector<HostPlane>& reference);
  // Throws when a file still has frames: every file holds as many frames as were added.
  void finish();

  // For file k: each frame's PSNR (dB; 100 where it is exact), and the
  // average over the frames, from their mean squared error (the psnr
  // filter's "average").
  const std::vector<double>& frames_db(std::size_t k) const;
  double average_db(std::size_t k) const;

 private:
  struct File;
  std::vector<std::unique_ptr<File>> files_;
};

// A segmented output beside the plain run's, both against the same frames.
struct SpanQuality {
  double plain_db = 0, segmented_db = 0;  // averages
  int64_t worst_frame = -1;               // where the segmented output falls furthest below the plain one
  double worst_drop_db = 0;               // by this much (at most 0 where it is never below)
};
SpanQuality span_quality(const PsnrMeter& meter, std::size_t plain, std::size_t segmented);

}  // namespace streamblur::io
