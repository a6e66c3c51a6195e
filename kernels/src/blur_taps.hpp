#pragma once
// What every blur path's launcher takes beside its two planes (Plane<T>:
// width in pixels, `channels` interleaved samples each): the radii and, for
// Gaussians, the weights.
namespace streamblur::cuda {

struct BlurTaps {
  int rx = 0, ry = 0;        // radii in pixels
  const float* x = nullptr;  // Gaussians: the 2rx+1 horizontal weights (host or device memory, as the launcher says)
  const float* y = nullptr;  // and the 2ry+1 vertical ones; nullptr for boxes
};

}  // namespace streamblur::cuda
