// Plain CPU twins of the device layout conversions (tests only).
#include <stdexcept>

#include "streamblur/kernels/cuda_convert.hpp"

namespace streamblur::reference {

template <class T>
void shift_copy(Plane<const T> src, Plane<T> dst, int shift) {
  if (src.width != dst.width || src.height != dst.height || src.channels != dst.channels)
    throw std::invalid_argument("shift_copy: planes differ in size or channels");
  for (int y = 0; y < src.height; ++y)
    for (int x = 0; x < src.samples_per_row(); ++x) dst.row(y)[x] = static_cast<T>(src.row(y)[x] >> shift);
}

template <class T>
void split_channels(Plane<const T> in, Plane<T> first, Plane<T> second, int shift) {
  if (in.channels != 2 || first.width != in.width || second.width != in.width)
    throw std::invalid_argument("split_channels: needs one two-channel plane and two one-channel planes of its size");
  for (int y = 0; y < in.height; ++y)
    for (int x = 0; x < in.width; ++x) {
      first.row(y)[x] = static_cast<T>(in.row(y)[2 * x] >> shift);
      second.row(y)[x] = static_cast<T>(in.row(y)[2 * x + 1] >> shift);
    }
}

template void shift_copy<uint8_t>(Plane<const uint8_t>, Plane<uint8_t>, int);
template void shift_copy<uint16_t>(Plane<const uint16_t>, Plane<uint16_t>, int);
template void split_channels<uint8_t>(Plane<const uint8_t>, Plane<uint8_t>, Plane<uint8_t>, int);
template void split_channels<uint16_t>(Plane<const uint16_t>, Plane<uint16_t>, Plane<uint16_t>, int);

}  // namespace streamblur::reference
