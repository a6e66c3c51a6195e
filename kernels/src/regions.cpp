// Region blending on the CPU: the plain reference and the row version the
// pipeline's CPU backend runs in parallel (definitions in regions.hpp). Built
// with -ffp-contract=off so region_box_alpha rounds as the CUDA kernel does.
#include "streamblur/kernels/regions.hpp"

#include <algorithm>
#include <cstring>

namespace streamblur {

namespace reference {

template <class T>
void region_blend(Plane<const T> in, Plane<const T> filtered, Plane<T> out, const std::vector<RegionBox>& boxes,
                  const RegionMask& mask) {
  const int C = in.channels;
  for (int y = 0; y < in.height; ++y) {
    const float py = region_centre(mask.y0 + y, mask.log2_h);
    for (int x = 0; x < in.width; ++x) {
      const float px = region_centre(mask.x0 + x, mask.log2_w);
      float alpha = 0.0f;
      for (const RegionBox& b : boxes) alpha = std::max(alpha, region_box_alpha(px, py, b, mask.feather, mask.ellipse));
      for (int c = 0; c < C; ++c)
        out.row(y)[x * C + c] = region_mix<T>(in.row(y)[x * C + c], filtered.row(y)[x * C + c], alpha);
    }
  }
}

template void region_blend<uint8_t>(Plane<const uint8_t>, Plane<const uint8_t>, Plane<uint8_t>,
                                    const std::vector<RegionBox>&, const RegionMask&);
template void region_blend<uint16_t>(Plane<const uint16_t>, Plane<const uint16_t>, Plane<uint16_t>,
                                     const std::vector<RegionBox>&, const RegionMask&);

}  // namespace reference

namespace cpu {

template <class T>
void region_blend_rows(Plane<const T> in, Plane<T> plane, const std::vector<RegionBox>& boxes, const RegionMask& mask,
                       int y0, int y1) {
  const int C = plane.channels, W = plane.width;
  const std::size_t row_bytes = static_cast<std::size_t>(W) * C * sizeof(T);
  std::vector<RegionBox> row_boxes;
  row_boxes.reserve(boxes.size());
  for (int y = y0; y < y1; ++y) {
    const float py = region_centre(mask.y0 + y, mask.log2_h);
    // Boxes whose soft edge reaches this row's centres (alpha is 0 beyond feather).
    row_boxes.clear();
    for (const RegionBox& b : boxes)
      if (b.x1 > b.x0 && b.y1 > b.y0 && py >= b.y0 - mask.feather && py <= b.y1 + mask.feather) row_boxes.push_back(b);
    const T* src = in.row(y);
    T* dst = plane.row(y);
    if (row_boxes.empty()) {
      std::memcpy(dst, src, row_bytes);
      continue;
    }
    for (int x = 0; x < W; ++x) {
      const float px = region_centre(mask.x0 + x, mask.log2_w);
      float alpha = 0.0f;
      for (const RegionBox& b : row_boxes) {
        alpha = std::max(alpha, region_box_alpha(px, py, b, mask.feather, mask.ellipse));
        if (alpha >= 1.0f) break;
      }
      for (int c = 0; c < C; ++c) dst[x * C + c] = region_mix<T>(src[x * C + c], dst[x * C + c], alpha);
    }
  }
}

template void region_blend_rows<uint8_t>(Plane<const uint8_t>, Plane<uint8_t>, const std::vector<RegionBox>&,
                                         const RegionMask&, int, int);
template void region_blend_rows<uint16_t>(Plane<const uint16_t>, Plane<uint16_t>, const std::vector<RegionBox>&,
                                          const RegionMask&, int, int);

}  // namespace cpu

}  // namespace streamblur
