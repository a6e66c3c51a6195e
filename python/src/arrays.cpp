// The checks every array gets (dtype, shape, layout) and where its memory
// lives; the CUDA questions (managed memory, the current device) are asked
// through cuda_memory.hpp, which a build without CUDA answers too.
#include "arrays.hpp"

#include <cstdint>
#include <cstring>
#include <sstream>
#include <stdexcept>
#include <string>

#include "cuda_memory.hpp"

namespace streamblur::python {
namespace {

std::string dtype_name(nb::dlpack::dtype t) {
  std::string base;
  switch (static_cast<nb::dlpack::dtype_code>(t.code)) {
    case nb::dlpack::dtype_code::Int: base = "int"; break;
    case nb::dlpack::dtype_code::UInt: base = "uint"; break;
    case nb::dlpack::dtype_code::Float: base = "float"; break;
    case nb::dlpack::dtype_code::Bfloat: base = "bfloat"; break;
    case nb::dlpack::dtype_code::Complex: base = "complex"; break;
    case nb::dlpack::dtype_code::Bool: return "bool";
    default: base = "dtype-code-" + std::to_string(t.code) + "-"; break;
  }
  return base + std::to_string(t.bits);
}

std::string shape_text(const nb::ndarray<nb::ro>& a) {
  std::ostringstream s;
  s << "(";
  for (size_t i = 0; i < a.ndim(); ++i) s << (i ? ", " : "") << a.shape(i);
  if (a.ndim() == 1) s << ",";
  s << ")";
  return s.str();
}

// The Image's size, channels and sample size, from dtype and shape.
Image image_shape(const InArray& a, const char* what) {
  const nb::dlpack::dtype t = a.dtype();
  const bool u8 = t == nb::dtype<uint8_t>(), u16 = t == nb::dtype<uint16_t>();
  if (!u8 && !u16)
    throw nb::type_error((std::string(what) + " has dtype " + dtype_name(t) +
                          "; streamblur takes uint8 or uint16 images").c_str());
  const size_t nd = a.ndim();
  if (nd != 2 && nd != 3)
    throw std::invalid_argument(std::string(what) + " has shape " + shape_text(a) +
                                "; expected HxW (grayscale) or HxWxC (C = 1..4 interleaved channels)");
  Image im;
  im.bytes = u8 ? 1 : 2;
  im.height = static_cast<int>(a.shape(0));
  im.width = static_cast<int>(a.shape(1));
  im.channels = nd == 3 ? static_cast<int>(a.shape(2)) : 1;
  im.ndim = static_cast<int>(nd);
  if (a.shape(0) > INT32_MAX || a.shape(1) > INT32_MAX)
    throw std::invalid_argument(std::string(what) + " of shape " + shape_text(a) + " is too large");
  if (im.channels < 1 || im.channels > 4)
    throw std::invalid_argument(std::string(what) + " has shape " + shape_text(a) + "; C must be 1..4 channels");
  if (im.width == 0 || im.height == 0)
    throw std::invalid_argument(std::string(what) + " of shape " + shape_text(a) + " is empty");
  return im;
}

// Bytes from one row to the next. Pixels of a row must be packed; rows may
// be anywhere after each other.
std::ptrdiff_t row_pitch(const InArray& a, const Image& im, const char* what) {
  const size_t nd = a.ndim();
  const bool packed = (im.width == 1 || a.stride(1) == im.channels) && (nd == 2 || im.channels == 1 || a.stride(2) == 1);
  const int64_t row_stride = im.height == 1 ? static_cast<int64_t>(im.width) * im.channels : a.stride(0);
  if (!packed || row_stride < static_cast<int64_t>(im.width) * im.channels)
    throw std::invalid_argument(std::string(what) +
                                " must have C-contiguous pixels within each row and rows in increasing memory order "
                                "(rows may be padded or strided); make a contiguous copy first");
  return static_cast<std::ptrdiff_t>(row_stride) * im.bytes;
}

// im.memory and im.device from the array's DLPack device, checked.
void locate_memory(const InArray& a, Image& im, const char* what) {
  switch (a.device_type()) {
    case nb::device::cpu::value:
    case nb::device::cuda_host::value:
      im.memory = Memory::Host;
      find_managed_memory(im);
      return;
    case nb::device::cuda::value:
      im.memory = Memory::Device;
      im.device = a.device_id();
      break;
    case nb::device::cuda_managed::value:
      im.memory = Memory::Managed;
      im.device = a.device_id();
      break;
    default:
      throw std::invalid_argument(std::string(what) + " lives on DLPack device type " +
                                  std::to_string(a.device_type()) + "; streamblur takes host (numpy) or CUDA arrays");
  }
  check_cuda_array(im, what);
}

}  // namespace

const char* memory_name(Memory m) {
  switch (m) {
    case Memory::Host: return "host";
    case Memory::Device: return "cuda";
    case Memory::Managed: return "managed";
  }
  return "";
}

Image describe(const InArray& a, const char* what) {
  Image im = image_shape(a, what);
  im.pitch = row_pitch(a, im, what);
  im.data = const_cast<void*>(a.data());
  locate_memory(a, im, what);
  return im;
}

FrameLayout one_plane_layout(const Image& im) {
  FrameLayout l;
  l.format = im.bytes == 1 ? AV_PIX_FMT_GRAY8 : AV_PIX_FMT_GRAY16LE;  // only used in messages
  l.width = im.width;
  l.height = im.height;
  l.bytes_per_sample = im.bytes;
  l.num_planes = 1;
  PlaneLayout& p = l.planes[0];
  p.width = im.width;
  p.height = im.height;
  p.channels = im.channels;
  p.components = kCompY | kCompU | kCompV | kCompA | kCompRGB;  // every filter touches it, whatever planes= says
  p.bytes_per_sample = im.bytes;
  return l;
}

std::string Image::shape_text() const {
  std::string s = "(" + std::to_string(height) + ", " + std::to_string(width);
  if (ndim == 3) s += ", " + std::to_string(channels);
  return s + ")";
}

void check_same_shape(const Image& src, const Image& dst) {
  if (src.ndim != dst.ndim || src.width != dst.width || src.height != dst.height || src.channels != dst.channels)
    throw std::invalid_argument("out= has shape " + dst.shape_text() + " but the image has shape " + src.shape_text());
  if (src.bytes != dst.bytes)
    throw nb::type_error((std::string("out= has dtype ") + dst.dtype_name() + " but the image has dtype " +
                          src.dtype_name()).c_str());
  const auto* s = static_cast<const unsigned char*>(src.data);
  const auto* d = static_cast<const unsigned char*>(dst.data);
  const bool same = s == d && src.pitch == dst.pitch;
  if (!same && s < d + dst.extent() && d < s + src.extent())
    throw std::invalid_argument("out= overlaps the image without being the same array; pass out=image to blur in place, "
                                "or a separate array");
}

void copy_rows_host(const Image& src, const Image& dst) {
  if (src.data == dst.data) return;
  for (int y = 0; y < src.height; ++y)
    std::memcpy(static_cast<unsigned char*>(dst.data) + y * dst.pitch,
                static_cast<const unsigned char*>(src.data) + y * src.pitch, src.row_bytes());
}

std::string memory_kind(InArray a) { return memory_name(describe(a, "image").memory); }

}  // namespace streamblur::python
