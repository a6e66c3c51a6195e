#pragma once
// Move-only owners of CUDA resources. Destructors never throw.
#include <cuda_runtime_api.h>

#include <cstddef>
#include <utility>

#include "streamblur/kernels/cuda_check.hpp"

namespace streamblur::cuda {

// A non-blocking CUDA stream (never the legacy default stream).
class CudaStream {
 public:
  CudaStream() { CUDA_CHECK(cudaStreamCreateWithFlags(&s_, cudaStreamNonBlocking)); }
  ~CudaStream() { if (s_) check_teardown(cudaStreamDestroy(s_), "cudaStreamDestroy"); }
  CudaStream(CudaStream&& o) noexcept : s_(std::exchange(o.s_, nullptr)) {}
  CudaStream& operator=(CudaStream&& o) noexcept { std::swap(s_, o.s_); return *this; }
  CudaStream(const CudaStream&) = delete;
  CudaStream& operator=(const CudaStream&) = delete;
  cudaStream_t get() const noexcept { return s_; }
  void synchronize() const { CUDA_CHECK(cudaStreamSynchronize(s_)); }
 private:
  cudaStream_t s_ = nullptr;
};

// A CUDA event, without timing unless asked; ready() polls it without blocking.
class CudaEvent {
 public:
  explicit CudaEvent(unsigned flags = cudaEventDisableTiming) { CUDA_CHECK(cudaEventCreateWithFlags(&e_, flags)); }
  ~CudaEvent() { if (e_) check_teardown(cudaEventDestroy(e_), "cudaEventDestroy"); }
  CudaEvent(CudaEvent&& o) noexcept : e_(std::exchange(o.e_, nullptr)) {}
  CudaEvent& operator=(CudaEvent&& o) noexcept { std::swap(e_, o.e_); return *this; }
  CudaEvent(const CudaEvent&) = delete;
  CudaEvent& operator=(const CudaEvent&) = delete;
  cudaEvent_t get() const noexcept { return e_; }
  void record(cudaStream_t s) { CUDA_CHECK(cudaEventRecord(e_, s)); }
  void synchronize() const { CUDA_CHECK(cudaEventSynchronize(e_)); }
  bool ready() const {
    const cudaError_t rc = cudaEventQuery(e_);
    if (rc == cudaErrorNotReady) return false;
    CUDA_CHECK(rc);
    return true;
  }
 private:
  cudaEvent_t e_ = nullptr;
};

// An instantiated CUDA graph (cudaGraphExec_t). Destroying one that is still
// running is safe: the driver frees it when it completes.
class CudaGraphExec {
 public:
  CudaGraphExec() = default;
  explicit CudaGraphExec(cudaGraph_t graph) { CUDA_CHECK(cudaGraphInstantiate(&e_, graph, 0)); }
  ~CudaGraphExec() { if (e_) check_teardown(cudaGraphExecDestroy(e_), "cudaGraphExecDestroy"); }
  CudaGraphExec(CudaGraphExec&& o) noexcept : e_(std::exchange(o.e_, nullptr)) {}
  CudaGraphExec& operator=(CudaGraphExec&& o) noexcept { std::swap(e_, o.e_); return *this; }
  CudaGraphExec(const CudaGraphExec&) = delete;
  CudaGraphExec& operator=(const CudaGraphExec&) = delete;
  explicit operator bool() const noexcept { return e_ != nullptr; }
  void launch(cudaStream_t s) const { CUDA_CHECK(cudaGraphLaunch(e_, s)); }
 private:
  cudaGraphExec_t e_ = nullptr;
};

// Device memory from cudaMalloc; size() in bytes.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(std::size_t bytes) { if (bytes) CUDA_CHECK(cudaMalloc(&p_, bytes)); size_ = bytes; }
  // A buffer holding a copy of `bytes` host bytes, complete on return: a copy
  // from pageable memory may return before its DMA lands, and kernels on
  // non-blocking streams do not wait for the legacy stream, so it waits.
  static DeviceBuffer from_host(const void* src, std::size_t bytes) {
    DeviceBuffer b(bytes);
    CUDA_CHECK(cudaMemcpy(b.p_, src, bytes, cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaStreamSynchronize(nullptr));
    return b;
  }
  ~DeviceBuffer() { if (p_) check_teardown(cudaFree(p_), "cudaFree"); }
  DeviceBuffer(DeviceBuffer&& o) noexcept : p_(std::exchange(o.p_, nullptr)), size_(std::exchange(o.size_, 0)) {}
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept { std::swap(p_, o.p_); std::swap(size_, o.size_); return *this; }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  void* get() const noexcept { return p_; }
  template <class T> T* as() const noexcept { return static_cast<T*>(p_); }
  std::size_t size() const noexcept { return size_; }
 private:
  void* p_ = nullptr;
  std::size_t size_ = 0;
};

// Page-locked host memory: the only kind of host memory uploads and downloads use.
class PinnedBuffer {
 public:
  PinnedBuffer() = default;
  explicit PinnedBuffer(std::size_t bytes) { if (bytes) CUDA_CHECK(cudaMallocHost(&p_, bytes)); size_ = bytes; }
  ~PinnedBuffer() { if (p_) check_teardown(cudaFreeHost(p_), "cudaFreeHost"); }
  PinnedBuffer(PinnedBuffer&& o) noexcept : p_(std::exchange(o.p_, nullptr)), size_(std::exchange(o.size_, 0)) {}
  PinnedBuffer& operator=(PinnedBuffer&& o) noexcept { std::swap(p_, o.p_); std::swap(size_, o.size_); return *this; }
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;
  void* get() const noexcept { return p_; }
  template <class T> T* as() const noexcept { return static_cast<T*>(p_); }
  std::size_t size() const noexcept { return size_; }
 private:
  void* p_ = nullptr;
  std::size_t size_ = 0;
};

}  // namespace streamblur::cuda
