#pragma once
// Plain, obviously-right CPU references: direct 2-D sums in double (Gaussian)
// or exact integers (box), borders clamped to the edge. Slow on purpose; tests
// compare every other implementation with these.
#include <cstdint>

#include "streamblur/kernels/plane.hpp"

namespace streamblur::reference {

template <class T>
void gaussian_blur(Plane<const T> src, Plane<T> dst, double sigma, int radius = -1);

template <class T>
void box_blur(Plane<const T> src, Plane<T> dst, int radius);

}  // namespace streamblur::reference
