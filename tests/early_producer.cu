#include "early_producer.hpp"

#include "streamblur/kernels/cuda_check.hpp"

namespace sbtest {
namespace {

__device__ unsigned long long global_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__global__ void delayed_copy(const unsigned char* src, unsigned char* dst, std::size_t bytes,
                             unsigned long long delay_ns) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" :::);
#endif
  const unsigned long long start = global_ns();
  while (global_ns() - start < delay_ns) __nanosleep(1000);
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < bytes;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x)
    dst[i] = src[i];
}

}  // namespace

void early_signalling_copy(const void* src, void* dst, std::size_t bytes, unsigned long long delay_ns,
                           cudaStream_t stream) {
  // A few blocks: the dependants' blocks find room beside them.
  delayed_copy<<<4, 256, 0, stream>>>(static_cast<const unsigned char*>(src), static_cast<unsigned char*>(dst), bytes,
                                      delay_ns);
  CUDA_CHECK(cudaGetLastError());
}

}  // namespace sbtest
