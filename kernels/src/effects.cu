// CUDA unsharp masking and pixelation (definitions in effects.hpp). Plain
// kernels: one thread per sample (unsharp: a horizontal pass into float
// scratch, then the vertical pass fused with the combine) and one thread per
// cell column strip (pixelate). Correct first; they are not tuned like the blurs.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "streamblur/kernels/cuda_check.hpp"
#include "streamblur/kernels/effects.hpp"
#include "streamblur/kernels/params.hpp"

namespace streamblur::cuda {
namespace {

template <class T>
__device__ const T* row_of(const T* base, std::ptrdiff_t pitch, int y) {
  return reinterpret_cast<const T*>(reinterpret_cast<const unsigned char*>(base) + y * pitch);
}
template <class T>
__device__ T* row_of(T* base, std::ptrdiff_t pitch, int y) {
  return reinterpret_cast<T*>(reinterpret_cast<unsigned char*>(base) + y * pitch);
}

template <class T>
__global__ void unsharp_rows_kernel(const T* src, std::ptrdiff_t pitch, int width, int height, int channels,
                                    const float* w, int r, float* tmp) {
  const int s = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y;
  const int S = width * channels;
  if (s >= S || y >= height) return;
  const int x = s / channels, c = s - x * channels;
  const T* in = row_of(src, pitch, y);
  float acc = 0;
  for (int k = -r; k <= r; ++k) acc += w[k + r] * static_cast<float>(in[min(max(x + k, 0), width - 1) * channels + c]);
  tmp[static_cast<std::size_t>(y) * S + s] = acc;
}

template <class T>
__global__ void unsharp_combine_kernel(T* plane, std::ptrdiff_t pitch, int width, int height, int channels,
                                       const float* w, int r, const float* tmp, float amount, float threshold,
                                       float max_value) {
  const int s = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
  const int S = width * channels;
  if (s >= S || y >= height) return;
  float acc = 0;
  for (int k = -r; k <= r; ++k) acc += w[k + r] * tmp[static_cast<std::size_t>(min(max(y + k, 0), height - 1)) * S + s];
  T* row = row_of(plane, pitch, y);
  const float src = static_cast<float>(row[s]), d = src - acc;
  if (fabsf(d) < threshold) return;
  row[s] = static_cast<T>(fminf(fmaxf(floorf(src + amount * d + 0.5f), 0.0f), max_value));
}

// One thread per (cell column, channel) of one cell row: sums the cell, then
// writes its mean over the cell.
template <class T>
__global__ void pixelate_kernel(T* plane, std::ptrdiff_t pitch, int width, int height, int channels, int bx, int by) {
  const int cells_x = (width + bx - 1) / bx;
  const int t = blockIdx.x * blockDim.x + threadIdx.x, cy = blockIdx.y;
  if (t >= cells_x * channels) return;
  const int cell = t / channels, c = t - cell * channels;
  const int x0 = cell * bx, x1 = min(width, x0 + bx), y0 = cy * by, y1 = min(height, y0 + by);
  unsigned long long sum = 0;
  for (int y = y0; y < y1; ++y) {
    const T* row = row_of(static_cast<const T*>(plane), pitch, y);
    for (int x = x0; x < x1; ++x) sum += row[x * channels + c];
  }
  const unsigned long long n = static_cast<unsigned long long>(x1 - x0) * (y1 - y0);
  const T mean = static_cast<T>((sum + n / 2) / n);
  for (int y = y0; y < y1; ++y) {
    T* row = row_of(plane, pitch, y);
    for (int x = x0; x < x1; ++x) row[x * channels + c] = mean;
  }
}

}  // namespace

Unsharp::Unsharp(const UnsharpParams& p)
    : p_(p), rx_(gaussian_radius(p.sigma_x, p.radius_x)), ry_(gaussian_radius(p.sigma_y, p.radius_y)) {
  check_unsharp(p);
  std::vector<float> w = gaussian_weights_f(p.sigma_x, p.radius_x);
  const std::vector<float> v = gaussian_weights_f(p.sigma_y, p.radius_y);
  w.insert(w.end(), v.begin(), v.end());
  weights_ = DeviceBuffer::from_host(w.data(), w.size() * sizeof(float));
}

void Unsharp::reserve(int width, int height, int channels) {
  const std::size_t bytes = static_cast<std::size_t>(width) * channels * height * sizeof(float);
  if (scratch_.size() < bytes) scratch_ = DeviceBuffer(bytes);
}

template <class T>
void Unsharp::apply(Plane<T> plane, cudaStream_t stream) {
  if (plane.width <= 0 || plane.height <= 0) return;
  reserve(plane.width, plane.height, plane.channels);
  const int S = plane.samples_per_row();
  const float* w = weights_.as<const float>();
  unsharp_rows_kernel<T><<<dim3((S + 255) / 256, plane.height), 256, 0, stream>>>(
      plane.data, plane.pitch, plane.width, plane.height, plane.channels, w, rx_, scratch_.as<float>());
  STREAMBLUR_CHECK_LAUNCH("unsharp_rows_kernel", stream);
  const dim3 block(64, 4);
  unsharp_combine_kernel<T><<<dim3((S + 63) / 64, (plane.height + 3) / 4), block, 0, stream>>>(
      plane.data, plane.pitch, plane.width, plane.height, plane.channels, w + 2 * rx_ + 1, ry_,
      scratch_.as<const float>(), static_cast<float>(p_.amount), static_cast<float>(p_.threshold),
      static_cast<float>(sample_max<T>()));
  STREAMBLUR_CHECK_LAUNCH("unsharp_combine_kernel", stream);
}

template <class T>
void pixelate(Plane<T> plane, int block_x, int block_y, cudaStream_t stream) {
  check_pixelate(block_x, block_y);
  if (plane.width <= 0 || plane.height <= 0) return;
  const int threads = (plane.width + block_x - 1) / block_x * plane.channels;
  const int cell_rows = (plane.height + block_y - 1) / block_y;
  pixelate_kernel<T><<<dim3((threads + 127) / 128, cell_rows), 128, 0, stream>>>(
      plane.data, plane.pitch, plane.width, plane.height, plane.channels, block_x, block_y);
  STREAMBLUR_CHECK_LAUNCH("pixelate_kernel", stream);
}

template void Unsharp::apply<uint8_t>(Plane<uint8_t>, cudaStream_t);
template void Unsharp::apply<uint16_t>(Plane<uint16_t>, cudaStream_t);
template void pixelate<uint8_t>(Plane<uint8_t>, int, int, cudaStream_t);
template void pixelate<uint16_t>(Plane<uint16_t>, int, int, cudaStream_t);

}  // namespace streamblur::cuda
