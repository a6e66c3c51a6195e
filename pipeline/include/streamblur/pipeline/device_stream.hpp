#pragma once
// The stream GPU work is queued on, in the interfaces that take one (filters,
// frame views), declared without the CUDA headers so that they build without
// the CUDA toolkit. It is the CUDA runtime's cudaStream_t itself (a pointer to
// the opaque CUstream_st), so a cudaStream_t, a CuPy or PyTorch stream's
// handle, passes as it is. nullptr: the legacy default stream on the CUDA
// backend, and nothing at all on the CPU backend.
struct CUstream_st;

namespace streamblur {
using DeviceStream = CUstream_st*;
}  // namespace streamblur
