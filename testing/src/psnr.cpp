#include "streamblur/testing/psnr.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>

extern "C" {
#include <libavutil/pixdesc.h>
}

#include "streamblur/io/reader.hpp"

namespace streamblur::io {
namespace {

constexpr double kExactDb = 100;  // a frame with no error

double db(double mse, double peak) { return mse <= 0 ? kExactDb : 10 * std::log10(peak * peak / mse); }

// The sum of squared differences of one plane and the decoded one.
template <class T>
double squared_error(const HostPlane& ref, const uint8_t* data, int linesize) {
  double sum = 0;
  for (int y = 0; y < ref.rows; ++y) {
    const T* a = reinterpret_cast<const T*>(static_cast<const uint8_t*>(ref.data) + y * ref.pitch);
    const T* b = reinterpret_cast<const T*>(data + static_cast<std::ptrdiff_t>(y) * linesize);
    for (int x = 0; x < ref.samples; ++x) {
      const double d = static_cast<double>(a[x]) - static_cast<double>(b[x]);
      sum += d * d;
    }
  }
  return sum;
}

}  // namespace

struct PsnrMeter::File {
  std::string path;
  MediaReader reader;
  std::vector<double> mse, frames_db;
  double peak = 255;
  explicit File(const std::string& p) : path(p), reader(p) {}

  void add(const std::vector<HostPlane>& ref) {
    DecodedFrame d;
    const std::string at = "'" + path + "', frame " + std::to_string(mse.size());
    if (!reader.read(d)) throw std::runtime_error("psnr: " + at + ": the file has no more frames");
    const AVFrame& f = *d.frame;
    const AVPixFmtDescriptor* desc = av_pix_fmt_desc_get(static_cast<AVPixelFormat>(f.format));
    if (!desc || static_cast<std::size_t>(av_pix_fmt_count_planes(static_cast<AVPixelFormat>(f.format))) != ref.size())
      throw std::runtime_error("psnr: " + at + ": its planes are not the reference's");
    double sum = 0, samples = 0;
    for (std::size_t p = 0; p < ref.size(); ++p) {
      const bool chroma = p == 1 || p == 2;
      const int w = chroma ? AV_CEIL_RSHIFT(f.width, desc->log2_chroma_w) : f.width;
      const int h = chroma ? AV_CEIL_RSHIFT(f.height, desc->log2_chroma_h) : f.height;
      if (w != ref[p].samples || h != ref[p].rows)
        throw std::runtime_error("psnr: " + at + ": plane " + std::to_string(p) + " is " + std::to_string(w) + "x" +
                                 std::to_string(h) + ", the reference's " + std::to_string(ref[p].samples) + "x" +
                                 std::to_string(ref[p].rows));
      sum += ref[p].bytes_per_sample == 1 ? squared_error<uint8_t>(ref[p], f.data[p], f.linesize[p])
                                          : squared_error<uint16_t>(ref[p], f.data[p], f.linesize[p]);
      samples += static_cast<double>(w) * h;
    }
    peak = std::ldexp(1.0, ref.front().bits) - 1;
    mse.push_back(sum / samples);
    frames_db.push_back(db(mse.back(), peak));
  }
};

PsnrMeter::PsnrMeter(const std::vector<std::string>& files) {
  for (const std::string& f : files) files_.push_back(std::make_unique<File>(f));
}

PsnrMeter::~PsnrMeter() = default;

void PsnrMeter::add(const std::vector<HostPlane>& reference) {
  for (auto& f : files_) f->add(reference);
}

void PsnrMeter::finish() {
  for (auto& f : files_) {
    DecodedFrame d;
    if (f->reader.read(d))
      throw std::runtime_error("psnr: '" + f->path + "' has more frames than the " + std::to_string(f->mse.size()) +
                               " of the reference");
  }
}

const std::vector<double>& PsnrMeter::frames_db(std::size_t k) const { return files_.at(k)->frames_db; }

double PsnrMeter::average_db(std::size_t k) const {
  const File& f = *files_.at(k);
  if (f.mse.empty()) return 0;
  double sum = 0;
  for (const double m : f.mse) sum += m;
  return db(sum / static_cast<double>(f.mse.size()), f.peak);
}

SpanQuality span_quality(const PsnrMeter& meter, std::size_t plain, std::size_t segmented) {
  SpanQuality q;
  q.plain_db = meter.average_db(plain);
  q.segmented_db = meter.average_db(segmented);
  const std::vector<double>&a = meter.frames_db(plain), &b = meter.frames_db(segmented);
  for (std::size_t i = 0; i < std::min(a.size(), b.size()); ++i)
    if (q.worst_frame < 0 || a[i] - b[i] > q.worst_drop_db) {
      q.worst_frame = static_cast<int64_t>(i);
      q.worst_drop_db = a[i] - b[i];
    }
  return q;
}

}  // namespace streamblur::io
