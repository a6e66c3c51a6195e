#pragma once
// Plain, obviously-right CPU references: direct 2-D sums in double (Gaussian)
// or exact integers (box), borders clamped to the edge. Slow on purpose; tests
// compare every other implementation with these.
#include <cstdint>

#include "streamblur/kernels/plane.hpp"

namespace streamblur::reference {

// Gaussian of src into dst (radius -1: ceil(3 sigma)), as params.hpp's weights.
template <class T>
void gaussian_blur(Plane<const T> src, Plane<T> dst, double sigma, int radius = -1);
// Anisotropic form (subsampled chroma): separate horizontal and vertical sigma/radius.
template <class T>
void gaussian_blur(Plane<const T> src, Plane<T> dst, double sigma_x, double sigma_y, int radius_x, int radius_y);

// Mean over the (2 radius + 1)^2 window, rounded half up.
template <class T>
void box_blur(Plane<const T> src, Plane<T> dst, int radius);
// (2 rx + 1) x (2 ry + 1) window.
template <class T>
void box_blur(Plane<const T> src, Plane<T> dst, int radius_x, int radius_y);

}  // namespace streamblur::reference
