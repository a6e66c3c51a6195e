#pragma once
// Region masks: limiting a filter to boxes (faces, plates) for anonymising.
// pipeline/src/regions.cpp runs a filter on a crop of the plane and blends
//   out = in + alpha * (filtered - in), rounded half up,
// per sample, alpha in [0, 1] from the boxes. alpha 0 gives the input back
// bit for bit, alpha 1 the filtered sample exactly (integers below 2^24 are
// exact in float).
//
// Coordinates are luma pixels: pixel (x, y) covers [x, x+1) x [y, y+1), its
// centre (x + 0.5, y + 0.5). A plane subsampled by 2^log2_w x 2^log2_h is
// masked at the centre of the luma area each of its pixels covers, so a box on
// even luma positions covers exactly the chroma pixels under it.
//
// alpha of one box (the maximum over the boxes):
//  - rect: 1 for centres in [x0, x1) x [y0, y1); outside, with feather f > 0,
//    1 - d / f for the Euclidean distance d to the box (0 from d >= f), so the
//    corners of the soft edge are rounded; with f = 0 a hard edge.
//  - ellipse: the ellipse inscribed in the box; 1 inside it (border
//    included); outside, 1 - d / f with d the distance from the ellipse along
//    the ray from its centre.
// The ramp lies outside the box, so the box itself is always fully filtered.
//
// region_box_alpha is one inline function for host and device; regions.cu is
// built with --fmad=false and regions.cpp with -ffp-contract=off, so both
// evaluate it with the same IEEE operations (sqrt and division correctly
// rounded on both) and the CPU and CUDA masks agree bit for bit.
//
// Three forms as for the filters: reference (plain loops over every box for
// every sample), cpu (rows, boxes sorted out per row, for TBB) and cuda (one
// thread per sample, the boxes in a small device array).
#include "streamblur/config.hpp"
#if STREAMBLUR_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

#include <cmath>
#include <cstdint>
#include <vector>

#include "streamblur/kernels/plane.hpp"

#if defined(__CUDACC__)
#define STREAMBLUR_HOST_DEVICE __host__ __device__
#else
#define STREAMBLUR_HOST_DEVICE
#endif

namespace streamblur {

// [x0, x1) x [y0, y1) in luma pixels; an empty box (x1 <= x0 or y1 <= y0) covers nothing.
struct RegionBox {
  float x0 = 0, y0 = 0, x1 = 0, y1 = 0;
};

// How boxes become alpha on one plane: edge, shape, subsampling, crop offset.
struct RegionMask {
  float feather = 0;           // width of the soft edge in luma pixels; 0: hard edge
  bool ellipse = false;        // the ellipse inscribed in each box instead of the box
  int log2_w = 0, log2_h = 0;  // the plane's subsampling against luma
  int x0 = 0, y0 = 0;          // plane position (pixels) of the first pixel of the planes passed (a crop)
};

// alpha in [0, 1] of luma position (px, py) for one box (rules above).
STREAMBLUR_HOST_DEVICE inline float region_box_alpha(float px, float py, const RegionBox& b, float feather,
                                                     bool ellipse) {
  if (!(b.x1 > b.x0) || !(b.y1 > b.y0)) return 0.0f;
  float d = 0.0f;  // distance outside the shape
  if (ellipse) {
    const float a = 0.5f * (b.x1 - b.x0), c = 0.5f * (b.y1 - b.y0);
    const float dx = px - (b.x0 + a), dy = py - (b.y0 + c);
    const float u = dx / a, v = dy / c;
    const float q = u * u + v * v;
    if (q <= 1.0f) return 1.0f;
    if (!(feather > 0.0f)) return 0.0f;
    d = sqrtf(dx * dx + dy * dy) * (1.0f - 1.0f / sqrtf(q));
  } else {
    if (px >= b.x0 && px < b.x1 && py >= b.y0 && py < b.y1) return 1.0f;
    if (!(feather > 0.0f)) return 0.0f;
    const float dx = px < b.x0 ? b.x0 - px : (px >= b.x1 ? px - b.x1 : 0.0f);
    const float dy = py < b.y0 ? b.y0 - py : (py >= b.y1 ? py - b.y1 : 0.0f);
    d = sqrtf(dx * dx + dy * dy);
  }
  return d >= feather ? 0.0f : 1.0f - d / feather;
}

// The luma position of the centre of plane pixel x (plane subsampled by 2^log2).
STREAMBLUR_HOST_DEVICE inline float region_centre(int x, int log2) {
  return (static_cast<float>(x) + 0.5f) * static_cast<float>(1 << log2);
}

// One blended sample: in + alpha * (filtered - in), rounded half up.
template <class T>
STREAMBLUR_HOST_DEVICE inline T region_mix(T in, T filtered, float alpha) {
  if (alpha <= 0.0f) return in;
  if (alpha >= 1.0f) return filtered;
  const float a = static_cast<float>(in), f = static_cast<float>(filtered);
  return static_cast<T>(floorf(a + alpha * (f - a) + 0.5f));
}

namespace reference {
// out = blend of `in` (before) and `filtered`, every box tried for every sample.
template <class T>
void region_blend(Plane<const T> in, Plane<const T> filtered, Plane<T> out, const std::vector<RegionBox>& boxes,
                  const RegionMask& mask);
}  // namespace reference

namespace cpu {
// Rows [y0, y1) of `plane` (filtered, in place) blended with `in` (the same
// samples before filtering); rows that no box reaches are copied from `in`.
template <class T>
void region_blend_rows(Plane<const T> in, Plane<T> plane, const std::vector<RegionBox>& boxes, const RegionMask& mask,
                       int y0, int y1);
}  // namespace cpu

#if STREAMBLUR_HAVE_CUDA
namespace cuda {
// The same on the device: `plane` (filtered, in place), `in` (before), the
// `count` boxes in device memory. Enqueued on `stream`, no host sync.
template <class T>
void region_blend(Plane<const T> in, Plane<T> plane, const RegionBox* device_boxes, int count, const RegionMask& mask,
                  cudaStream_t stream);
}  // namespace cuda
#endif  // STREAMBLUR_HAVE_CUDA

}  // namespace streamblur
