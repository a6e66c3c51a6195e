#pragma once
// Stages people chain besides blurs: unsharp masking and pixelation.
//
// unsharp: out = src + amount * (src - G(src)), G a Gaussian (borders clamped,
//   kept unrounded), rounded half up and clamped to the sample range; where
//   |src - G(src)| < threshold the sample is left as it is (no sharpening of
//   grain). amount < 0 softens.
// pixelate: each block_x x block_y cell of the grid anchored at the top-left
//   corner takes the exact mean of its samples (per channel, rounded half up);
//   the cells on the right and bottom edges are partial.
//
// Three forms each, as for the blurs: a plain reference (slow, obviously
// right), a CPU version (rows, so a caller can run them in parallel) and a
// CUDA version (enqueued on the caller's stream, no host sync).
#include "streamblur/config.hpp"
#if STREAMBLUR_HAVE_CUDA
#include <cuda_runtime_api.h>

#include "streamblur/kernels/cuda_raii.hpp"
#endif

#include <cstdint>
#include <vector>

#include "streamblur/kernels/plane.hpp"

namespace streamblur {

// The options of unsharp (see above); check_unsharp() gives the valid ranges.
struct UnsharpParams {
  double sigma_x = 1.0, sigma_y = 1.0;
  int radius_x = -1, radius_y = -1;  // -1: max(1, ceil(3 sigma))
  double amount = 1.0;               // [-2, 10]; negative softens
  double threshold = 0.0;            // in samples of the plane's type
};

void check_unsharp(const UnsharpParams& p);  // throws std::invalid_argument with one line
// Throws std::invalid_argument with one line for a block size out of range.
void check_pixelate(int block_x, int block_y);

namespace reference {
// Plain references: unsharp and pixelate of src into dst.
template <class T>
void unsharp(Plane<const T> src, Plane<T> dst, const UnsharpParams& p);
template <class T>
void pixelate(Plane<const T> src, Plane<T> dst, int block_x, int block_y);
}  // namespace reference

namespace cpu {
// Unsharp masking on the CPU in two row passes (see the passes below).
class Unsharp {
 public:
  explicit Unsharp(const UnsharpParams& p);
  // Pass 1, rows [y0, y1): the horizontal Gaussian of src into tmp (floats,
  // width * channels per row). Pass 2, rows [y0, y1), after every row of pass
  // 1: the vertical Gaussian of tmp combined with plane, in place.
  template <class T> void horizontal_rows(Plane<const T> src, std::vector<float>& tmp, int y0, int y1) const;
  template <class T> void combine_rows(const std::vector<float>& tmp, Plane<T> plane, int y0, int y1) const;

 private:
  UnsharpParams p_;
  std::vector<float> wx_, wy_;
};
// Cell rows [cy0, cy1) (cell row k covers lines k*block_y ...), in place.
template <class T>
void pixelate_cell_rows(Plane<T> plane, int block_x, int block_y, int cy0, int cy1);
// Number of cell rows of a plane `height` rows tall.
inline int cell_rows(int height, int block_y) { return (height + block_y - 1) / block_y; }
}  // namespace cpu

#if STREAMBLUR_HAVE_CUDA
namespace cuda {
// Unsharp masking of one plane on the device, in place; scratch owned by the object.
class Unsharp {
 public:
  explicit Unsharp(const UnsharpParams& p);
  void reserve(int width, int height, int channels);  // scratch, so apply() never allocates
  template <class T> void apply(Plane<T> plane, cudaStream_t stream);  // in place
  std::size_t device_bytes() const noexcept { return weights_.size() + scratch_.size(); }

 private:
  UnsharpParams p_;
  int rx_, ry_;
  DeviceBuffer weights_;  // 2rx+1 horizontal then 2ry+1 vertical floats
  DeviceBuffer scratch_;  // the horizontal pass, floats
};
template <class T>
void pixelate(Plane<T> plane, int block_x, int block_y, cudaStream_t stream);  // in place
}  // namespace cuda
#endif  // STREAMBLUR_HAVE_CUDA

}  // namespace streamblur
