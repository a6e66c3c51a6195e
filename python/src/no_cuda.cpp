// The module's CUDA side in a build without the CUDA toolkit
// (streamblur/config.hpp: STREAMBLUR_HAVE_CUDA 0): cuda_memory.hpp,
// cuda_calls.hpp and DeviceFrames with no device. Host arrays run on the CPU
// backend; whatever needs CUDA (a CUDA or managed array, backend='cuda',
// managed_empty(), frames on the device) raises the error a CUDA build
// without a device raises, "... no CUDA device is usable here", followed by
// the library's reason, kNoCudaBackend. The CuPy fast path always declines,
// so CuPy arrays reach the general path and that error.
#include <stdexcept>
#include <string>

#include "cuda_calls.hpp"
#include "cuda_memory.hpp"
#include "frame_memory.hpp"
#include "streamblur/config.hpp"
#include "streamblur/pipeline/filter.hpp"

#if STREAMBLUR_HAVE_CUDA
#error "no_cuda.cpp is for builds without the CUDA backend; CUDA builds compile the cuda_*.cpp files (python/CMakeLists.txt)"
#endif

namespace streamblur::python {
namespace {

// The no-device message of the CUDA build, with the reason.
std::runtime_error no_device(const std::string& prefix) {
  return std::runtime_error(prefix + "no CUDA device is usable here: " + kNoCudaBackend);
}

}  // namespace

// ---- cuda_memory.hpp

int device_count() { return 0; }

bool have_cuda() { return false; }

int current_device() { throw no_device(""); }

void require_cuda(const std::string& asked) { throw no_device(asked + " but "); }

// Without the CUDA runtime there is nobody to ask: memory that reports
// itself as host memory is used as host memory.
void find_managed_memory(Image&) {}

void check_cuda_array(const Image&, const char* what) { require_cuda(std::string(what) + " is a CUDA array"); }

void wait_for_device() {}  // no GPU work can be queued without CUDA

nb::ndarray<nb::numpy, uint8_t> managed_bytes(size_t) { throw no_device("managed_empty: "); }

nb::ndarray<nb::array_api, nb::device::cuda> cuda_empty(std::vector<size_t>, int) { throw no_device(""); }

bool is_managed_pointer(uintptr_t) { return false; }

void register_cuda_error_translator() {}  // no cuda::CudaError without CUDA

// ---- cuda_calls.hpp

// Never reached: pick_backend() picks the CPU backend or throws without CUDA.
void run_filter_cuda(const InArray&, const OutArray&, const Image&, const Image&, const FrameLayout&,
                     const std::string&, uintptr_t) {
  throw std::runtime_error(kNoCudaBackend);
}

std::size_t release_queued_calls(bool) { return 0; }  // no call ever returns with work queued

void release_some_queued_calls() {}

nb::dict cuda_cache_stats() {
  nb::dict d;
  d["chains_configured"] = 0;
  d["staging_allocations"] = 0;
  d["graph_launches"] = 0;
  d["fast_calls"] = 0;
  return d;
}

bool run_cupy(nb::handle, nb::handle, nb::handle, nb::handle) { return false; }

void register_cupy(nb::handle, nb::handle, nb::handle, nb::handle) {}

// ---- frame_memory.hpp: no frame is on the device (the CPU backend) or goes
// to it (FrameStream refuses device='cuda' through require_cuda()).

struct DeviceFrames::State {};

DeviceFrames::DeviceFrames(int, bool) {}

DeviceFrames::~DeviceFrames() = default;

std::unique_ptr<FrameBlock> DeviceFrames::copy(const FrameView&, const std::array<size_t, 4>&, size_t) {
  throw std::runtime_error(kNoCudaBackend);
}

void DeviceFrames::release() {}

}  // namespace streamblur::python
