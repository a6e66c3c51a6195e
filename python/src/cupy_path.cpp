// The fast path for CuPy arrays (cuda_calls.hpp: run_cupy); CUDA builds only.
//
// A call on two CuPy arrays on the current device, on CuPy's current stream
// or a given one, with a spec the package built (gaussian_blur, box_blur,
// Chain: the same str object on every call with the same arguments) reads each
// array's pointer, shape, strides, dtype and device from its attributes
// (no DLPack capsule) and takes the configured chain and the checks' inputs
// from a small cache keyed on the spec object and the shapes: no spec
// parsing, no layout, no chain lookup, no pointer query for arrays whose
// memory kind it has seen. Anything it does not know (another type, a
// subclass, a dtype object other than numpy's own, managed memory, another
// device, a layout the checks refuse) returns False, and the package takes
// the general path, which reports the errors.
#include <cuda_runtime_api.h>

#include <nanobind/nanobind.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "cuda_calls.hpp"
#include "cuda_filter.hpp"
#include "cuda_memory.hpp"

namespace streamblur::python {
namespace {

struct CupyTypes {
  nb::object ndarray;             // cupy.ndarray (exact type; subclasses take the general path)
  nb::object get_current_stream;  // cupy.cuda.get_current_stream
  nb::object u8, u16;             // numpy's dtype objects (cupy arrays return them)
  nb::object attr_data, attr_ptr, attr_device_id, attr_shape, attr_strides, attr_dtype;
};
CupyTypes* g_cupy = nullptr;  // set once by register_cupy; guarded by the GIL

// An attribute, or null (the error cleared): the fast path then declines.
nb::object attr_or_null(nb::handle o, nb::handle name) {
  PyObject* r = PyObject_GetAttr(o.ptr(), name.ptr());
  if (!r) PyErr_Clear();
  return nb::steal(r);
}

bool small_int(PyObject* o, int64_t& v) {
  if (!o || !PyLong_CheckExact(o)) return false;
  int overflow = 0;
  v = PyLong_AsLongLongAndOverflow(o, &overflow);
  return overflow == 0 && !(v == -1 && PyErr_Occurred());
}

struct CupyArray {
  uintptr_t ptr = 0;
  int device = -1;
  int nd = 0;
  int64_t shape[3]{}, strides[3]{};  // strides in bytes, as CuPy gives them
  int bytes = 0;
};

// a.nd, a.shape and a.strides from the array's shape and strides tuples.
bool read_shape(nb::handle o, CupyArray& a) {
  const CupyTypes& t = *g_cupy;
  const nb::object shape = attr_or_null(o, t.attr_shape), strides = attr_or_null(o, t.attr_strides);
  if (!shape || !strides || !PyTuple_CheckExact(shape.ptr()) || !PyTuple_CheckExact(strides.ptr())) return false;
  a.nd = static_cast<int>(PyTuple_GET_SIZE(shape.ptr()));
  if ((a.nd != 2 && a.nd != 3) || PyTuple_GET_SIZE(strides.ptr()) != a.nd) return false;
  for (int i = 0; i < a.nd; ++i)
    if (!small_int(PyTuple_GET_ITEM(shape.ptr(), i), a.shape[i]) || !small_int(PyTuple_GET_ITEM(strides.ptr(), i), a.strides[i]))
      return false;
  return true;
}

// a.ptr and a.device from the array's .data (a MemoryPointer).
bool read_data(nb::handle o, CupyArray& a) {
  const CupyTypes& t = *g_cupy;
  const nb::object data = attr_or_null(o, t.attr_data);
  if (!data) return false;
  const nb::object ptr = attr_or_null(data, t.attr_ptr), device = attr_or_null(data, t.attr_device_id);
  int64_t p = 0, d = 0;
  if (!small_int(ptr.ptr(), p) || !small_int(device.ptr(), d) || p == 0) return false;
  a.ptr = static_cast<uintptr_t>(p);
  a.device = static_cast<int>(d);
  return true;
}

// Reads what the fast path needs; false where it cannot (the general path decides).
bool read_cupy(nb::handle o, CupyArray& a) {
  const CupyTypes& t = *g_cupy;
  if (Py_TYPE(o.ptr()) != reinterpret_cast<PyTypeObject*>(t.ndarray.ptr())) return false;
  const nb::object dtype = attr_or_null(o, t.attr_dtype);
  if (dtype.is(t.u8)) a.bytes = 1;
  else if (dtype.is(t.u16)) a.bytes = 2;
  else return false;
  return read_shape(o, a) && read_data(o, a);
}

// Bytes between rows where the pixels of a row are packed as describe()
// wants them, else 0.
int64_t packed_row_pitch(const CupyArray& a) {
  const int64_t h = a.shape[0], w = a.shape[1], c = a.nd == 3 ? a.shape[2] : 1;
  const int64_t pixel = c * a.bytes;
  const bool packed = (w == 1 || a.strides[1] == pixel) && (a.nd == 2 || c == 1 || a.strides[2] == a.bytes);
  const int64_t row = h == 1 ? w * pixel : a.strides[0];
  if (!packed || row < w * pixel || row % a.bytes != 0) return 0;
  return row;
}

// The Image of a CuPy array the checks of describe() accept, or false.
bool cupy_image(const CupyArray& a, Image& im) {
  const int64_t h = a.shape[0], w = a.shape[1], c = a.nd == 3 ? a.shape[2] : 1;
  if (h <= 0 || w <= 0 || c < 1 || c > 4 || h > INT32_MAX || w > INT32_MAX) return false;
  const int64_t row = packed_row_pitch(a);
  if (row == 0) return false;
  im.data = reinterpret_cast<void*>(a.ptr);
  im.width = static_cast<int>(w);
  im.height = static_cast<int>(h);
  im.channels = static_cast<int>(c);
  im.bytes = a.bytes;
  im.pitch = static_cast<std::ptrdiff_t>(row);
  im.memory = Memory::Device;
  im.device = a.device;
  return true;
}

// Memory kinds of the last pointers seen (a CuPy pointer may be managed
// memory: those calls take the general path, which waits for the host).
bool plain_device_memory(uintptr_t ptr) {
  static std::array<uintptr_t, 8> known{};  // device (not managed) pointers, most recent first
  for (uintptr_t k : known)
    if (k == ptr) return true;
  cudaPointerAttributes attr{};
  if (cudaPointerGetAttributes(&attr, reinterpret_cast<void*>(ptr)) != cudaSuccess) {
    cudaGetLastError();
    return false;
  }
  if (attr.type != cudaMemoryTypeDevice) return false;
  std::move_backward(known.begin(), known.end() - 1, known.end());
  known[0] = ptr;
  return true;
}

// Whether dst can be out= for src as check_same_shape() has it: the same
// shape and dtype, and the same array or memory apart.
bool fits_as_out(const Image& src, const Image& dst) {
  if (src.width != dst.width || src.height != dst.height || src.channels != dst.channels || src.bytes != dst.bytes)
    return false;
  const auto* s0 = static_cast<const unsigned char*>(src.data);
  const auto* d0 = static_cast<const unsigned char*>(dst.data);
  return (s0 == d0 && src.pitch == dst.pitch) || !(s0 < d0 + dst.extent() && d0 < s0 + src.extent());
}

// The Images of two CuPy arrays the general path would take as image and
// out=, in plain device memory of the current device (set in `device`);
// false otherwise.
bool cupy_pair(nb::handle src_obj, nb::handle dst_obj, Image& src, Image& dst, int& device) {
  CupyArray a, b;
  if (!read_cupy(src_obj, a) || !read_cupy(dst_obj, b) || !cupy_image(a, src) || !cupy_image(b, dst)) return false;
  if (a.nd != b.nd || !fits_as_out(src, dst)) return false;
  device = current_device();
  if (src.device != device || dst.device != device) return false;
  return plain_device_memory(a.ptr) && plain_device_memory(b.ptr);
}

// The cudaStream_t handle run_cupy's `stream` names, or false.
bool cupy_stream(nb::handle stream, int64_t& handle) {
  if (stream.is_none()) return small_int(attr_or_null(g_cupy->get_current_stream(), g_cupy->attr_ptr).ptr(), handle);
  const nb::object given = PyLong_CheckExact(stream.ptr()) ? nb::borrow(stream) : attr_or_null(stream, g_cupy->attr_ptr);
  return small_int(given.ptr(), handle) && handle >= 0;
}

// The chains the fast path used last, by spec object (held) and shape.
struct FastKey {
  nb::object spec;  // the package's spec string object: compared by identity
  std::array<int, 5> shape{};  // width, height, channels, bytes, device
};
std::vector<std::pair<FastKey, std::shared_ptr<CachedChain>>>& fast_chains() {
  static auto* v = new std::vector<std::pair<FastKey, std::shared_ptr<CachedChain>>>();  // guarded by the GIL
  return *v;
}

// The chain for `spec` on src's shape on `device`: from fast_chains(), else
// from the chain cache (which parses and configures it on a miss, and throws
// for a bad spec).
std::shared_ptr<CachedChain> fast_chain(nb::handle spec, const Image& src, int device) {
  const std::array<int, 5> shape{src.width, src.height, src.channels, src.bytes, device};
  auto& chains = fast_chains();
  for (auto& [key, chain] : chains)
    if (key.spec.is(spec) && key.shape == shape) return chain;
  const std::string text = nb::cast<std::string>(spec);
  const FrameLayout layout = one_plane_layout(src);
  std::shared_ptr<CachedChain> entry;
  {
    nb::gil_scoped_release no_gil;
    entry = chain_cache().get(text, layout, device);
  }
  constexpr std::size_t kFastChains = 8;
  if (chains.size() >= kFastChains) chains.erase(chains.begin());
  chains.emplace_back(FastKey{nb::borrow(spec), shape}, entry);
  return entry;
}

}  // namespace

void register_cupy(nb::handle ndarray, nb::handle get_current_stream, nb::handle u8, nb::handle u16) {
  if (g_cupy) return;
  auto* t = new CupyTypes();  // never freed: cached for the module's life
  t->ndarray = nb::borrow(ndarray);
  t->get_current_stream = nb::borrow(get_current_stream);
  t->u8 = nb::borrow(u8);
  t->u16 = nb::borrow(u16);
  t->attr_data = nb::str("data");
  t->attr_ptr = nb::str("ptr");
  t->attr_device_id = nb::str("device_id");
  t->attr_shape = nb::str("shape");
  t->attr_strides = nb::str("strides");
  t->attr_dtype = nb::str("dtype");
  g_cupy = t;
}

bool run_cupy(nb::handle src_obj, nb::handle dst_obj, nb::handle spec, nb::handle stream) {
  if (!g_cupy || !PyUnicode_CheckExact(spec.ptr())) return false;
  Image src, dst;
  int device = -1;
  int64_t stream_handle = 0;
  if (!cupy_pair(src_obj, dst_obj, src, dst, device) || !cupy_stream(stream, stream_handle)) return false;
  const std::shared_ptr<CachedChain> entry = fast_chain(spec, src, device);

  release_some_queued_calls();
  std::shared_ptr<cuda::CudaEvent> done;
  unsigned long long stream_id = kNoStream;
  {
    nb::gil_scoped_release no_gil;
    CudaFilterCall call(entry, src, dst, device, reinterpret_cast<cudaStream_t>(static_cast<uintptr_t>(stream_handle)));
    done = call.run(/*managed=*/false);
    stream_id = call.stream_id();
  }
  ++g_fast_calls;
  if (!done) return true;  // (device output always returns its event)
  auto call = std::make_unique<QueuedCall>();
  call->done = std::move(done);
  call->device = device;
  call->stream = stream_id;
  call->src_obj = nb::borrow(src_obj);
  call->dst_obj = nb::borrow(dst_obj);
  hold_until_done(std::move(call));
  return true;
}

}  // namespace streamblur::python
