#pragma once
// Arrays as the kernels see them: the Image an array describes (one
// pitch-linear plane), where its memory lives (host, CUDA device, CUDA
// managed), and the checks every call makes of its dtype, shape and layout.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/string.h>  // in every file: a caster missing from one compiles, then fails at run time

#include <cstddef>
#include <string>

#include "streamblur/kernels/plane.hpp"
#include "streamblur/pipeline/filter.hpp"
#include "streamblur/pipeline/frame_layout.hpp"

namespace nb = nanobind;

namespace streamblur::python {

using InArray = nb::ndarray<nb::ro>;  // read-only arrays are fine as inputs
using OutArray = nb::ndarray<>;

enum class Memory { Host, Device, Managed };

// What memory_kind() says: "host", "cuda" or "managed".
const char* memory_name(Memory m);

// One image as the kernels see it: a single pitch-linear plane.
struct Image {
  void* data = nullptr;
  int width = 0, height = 0, channels = 1, bytes = 1;
  int ndim = 2;  // HxW, or HxWxC (3)
  std::ptrdiff_t pitch = 0;
  Memory memory = Memory::Host;
  int device = -1;

  size_t row_bytes() const { return static_cast<size_t>(width) * channels * bytes; }
  // Bytes from the first sample to one past the last.
  size_t extent() const { return static_cast<size_t>(height - 1) * pitch + row_bytes(); }
  bool on_device() const { return memory != Memory::Host; }
  // As numpy prints them: "(h, w)" or "(h, w, c)", and "uint8" or "uint16".
  std::string shape_text() const;
  const char* dtype_name() const { return bytes == 1 ? "uint8" : "uint16"; }
  AnyPlane plane() const { return AnyPlane{data, width, height, pitch, channels, bytes}; }
  template <class T> Plane<T> typed() const { return Plane<T>(static_cast<T*>(data), width, height, pitch, channels); }
};

// Checks dtype, shape and layout and finds where the memory lives. `what` names
// the argument in messages ("image", "out=").
Image describe(const InArray& a, const char* what);

// The frame a chain is configured for: im as the one plane of a frame.
FrameLayout one_plane_layout(const Image& im);

// out= must have the image's shape and dtype (ValueError and TypeError
// naming both), and be the image itself or memory apart from it. With
// describe(), the only checks an array gets: the package's Python converts
// (byte order, packing) but leaves the checking here.
void check_same_shape(const Image& src, const Image& dst);

// src's rows into dst, both in host memory (nothing when they are the same).
void copy_rows_host(const Image& src, const Image& dst);

// memory_kind(): where an array's memory lives, checked as the blurs check it.
std::string memory_kind(InArray a);

}  // namespace streamblur::python
