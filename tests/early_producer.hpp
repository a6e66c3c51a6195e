#pragma once
// A producer for the tests of programmatic dependent launches (sm_90 and
// later; before that, a plain delayed copy).
#include <cuda_runtime_api.h>

#include <cstddef>

namespace sbtest {

// Copies `bytes` from src to dst on `stream`, but first lets the next kernel
// in the stream start (griddepcontrol.launch_dependents) and waits
// `delay_ns`: a dependent launch after it that reads dst before its
// griddepcontrol.wait sees the bytes dst held before.
void early_signalling_copy(const void* src, void* dst, std::size_t bytes, unsigned long long delay_ns,
                           cudaStream_t stream);

}  // namespace sbtest
