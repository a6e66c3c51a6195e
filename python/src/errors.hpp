#pragma once
// How the library's located errors (io::AVError, cuda::CudaError) reach
// Python: as RuntimeError with a `location` attribute.
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>

#include <string>

namespace streamblur::python {

// Sets a RuntimeError whose `location` attribute says where in streamblur's
// source it was raised ("reader.cpp:226"), for a verbose report.
inline void set_located_error(const char* what, const std::string& location) {
  nanobind::object err = nanobind::borrow(PyExc_RuntimeError)(what);
  err.attr("location") = location;
  PyErr_SetObject(PyExc_RuntimeError, err.ptr());
}

}  // namespace streamblur::python
