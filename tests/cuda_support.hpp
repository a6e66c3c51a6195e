#pragma once
// Host-to-device copies for the GPU tests. A copy from pageable host memory
// may return before its DMA has landed, and the code under test launches on
// non-blocking streams that do not order themselves after the legacy
// default stream: these copies wait until the bytes are on the device.
#include <cuda_runtime_api.h>

#include <cstddef>

#include "streamblur/kernels/cuda_check.hpp"

namespace sbtest {

inline void upload(void* dst, const void* src, std::size_t bytes) {
  CUDA_CHECK(cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaStreamSynchronize(nullptr));
}

inline void upload_2d(void* dst, std::size_t dst_pitch, const void* src, std::size_t src_pitch, std::size_t row_bytes,
                      std::size_t rows) {
  CUDA_CHECK(cudaMemcpy2D(dst, dst_pitch, src, src_pitch, row_bytes, rows, cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaStreamSynchronize(nullptr));
}

}  // namespace sbtest
