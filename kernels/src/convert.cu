// Device-side layout conversions for frames decoded into device memory.
#include "streamblur/kernels/cuda_convert.hpp"

#include <stdexcept>
#include <string>

#include "streamblur/kernels/cuda_check.hpp"

namespace streamblur::cuda {
namespace {

constexpr int kBlockX = 32;
constexpr int kBlockY = 8;

template <class T>
__global__ void shift_copy_kernel(const T* __restrict__ src, std::ptrdiff_t src_pitch, T* __restrict__ dst,
                                  std::ptrdiff_t dst_pitch, int samples, int height, int shift) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x;
  const int y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= samples || y >= height) return;
  const T* s = reinterpret_cast<const T*>(reinterpret_cast<const char*>(src) + y * src_pitch);
  T* d = reinterpret_cast<T*>(reinterpret_cast<char*>(dst) + y * dst_pitch);
  d[x] = static_cast<T>(s[x] >> shift);
}

template <class T>
__global__ void split_channels_kernel(const T* __restrict__ src, std::ptrdiff_t src_pitch, T* __restrict__ a,
                                      std::ptrdiff_t a_pitch, T* __restrict__ b, std::ptrdiff_t b_pitch, int width,
                                      int height, int shift) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x;
  const int y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= width || y >= height) return;
  const T* s = reinterpret_cast<const T*>(reinterpret_cast<const char*>(src) + y * src_pitch);
  reinterpret_cast<T*>(reinterpret_cast<char*>(a) + y * a_pitch)[x] = static_cast<T>(s[2 * x] >> shift);
  reinterpret_cast<T*>(reinterpret_cast<char*>(b) + y * b_pitch)[x] = static_cast<T>(s[2 * x + 1] >> shift);
}

void check_shift(int shift, std::size_t sample_bytes, const char* what) {
  if (shift < 0 || shift >= static_cast<int>(8 * sample_bytes))
    throw std::invalid_argument(std::string(what) + ": shift " + std::to_string(shift) + " out of range");
}

dim3 grid_for(int x, int y) { return dim3((x + kBlockX - 1) / kBlockX, (y + kBlockY - 1) / kBlockY); }

}  // namespace

template <class T>
void shift_copy(Plane<const T> src, Plane<T> dst, int shift, cudaStream_t stream) {
  check_shift(shift, sizeof(T), "shift_copy");
  if (src.width != dst.width || src.height != dst.height || src.channels != dst.channels)
    throw std::invalid_argument("shift_copy: planes differ in size or channels");
  if (src.width == 0 || src.height == 0) return;
  const int samples = src.samples_per_row();
  if (shift == 0) {
    CUDA_CHECK(cudaMemcpy2DAsync(dst.data, dst.pitch, src.data, src.pitch, samples * sizeof(T), src.height,
                                 cudaMemcpyDeviceToDevice, stream));
    return;
  }
  shift_copy_kernel<T><<<grid_for(samples, src.height), dim3(kBlockX, kBlockY), 0, stream>>>(
      src.data, src.pitch, dst.data, dst.pitch, samples, src.height, shift);
  STREAMBLUR_CHECK_LAUNCH("shift_copy_kernel", stream);
}

template <class T>
void split_channels(Plane<const T> in, Plane<T> first, Plane<T> second, int shift, cudaStream_t stream) {
  check_shift(shift, sizeof(T), "split_channels");
  if (in.channels != 2 || first.channels != 1 || second.channels != 1 || first.width != in.width ||
      second.width != in.width || first.height != in.height || second.height != in.height)
    throw std::invalid_argument("split_channels: needs one two-channel plane and two one-channel planes of its size");
  if (in.width == 0 || in.height == 0) return;
  split_channels_kernel<T><<<grid_for(in.width, in.height), dim3(kBlockX, kBlockY), 0, stream>>>(
      in.data, in.pitch, first.data, first.pitch, second.data, second.pitch, in.width, in.height, shift);
  STREAMBLUR_CHECK_LAUNCH("split_channels_kernel", stream);
}

template void shift_copy<uint8_t>(Plane<const uint8_t>, Plane<uint8_t>, int, cudaStream_t);
template void shift_copy<uint16_t>(Plane<const uint16_t>, Plane<uint16_t>, int, cudaStream_t);
template void split_channels<uint8_t>(Plane<const uint8_t>, Plane<uint8_t>, Plane<uint8_t>, int, cudaStream_t);
template void split_channels<uint16_t>(Plane<const uint16_t>, Plane<uint16_t>, Plane<uint16_t>, int, cudaStream_t);

}  // namespace streamblur::cuda
