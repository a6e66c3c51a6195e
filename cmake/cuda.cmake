# Whether the CUDA backend is built (STREAMBLUR_HAVE_CUDA), from
# STREAMBLUR_WITH_CUDA: AUTO builds it when a CUDA compiler is found, ON
# requires one, OFF never looks. Included by the top level and by the Python
# package. Writes streamblur/config.hpp, which says the same to the sources.
include(CheckLanguage)
if(NOT DEFINED STREAMBLUR_WITH_CUDA)
  set(STREAMBLUR_WITH_CUDA AUTO)
endif()
set(STREAMBLUR_HAVE_CUDA OFF)
if(NOT STREAMBLUR_WITH_CUDA STREQUAL "OFF")
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    enable_language(CUDA)
    find_package(CUDAToolkit REQUIRED)
    set(STREAMBLUR_HAVE_CUDA ON)
  elseif(STREAMBLUR_WITH_CUDA STREQUAL "ON")
    message(FATAL_ERROR "streamblur: STREAMBLUR_WITH_CUDA=ON, but no CUDA compiler was found: install the CUDA "
                        "toolkit (nvcc), or pass -DCMAKE_CUDA_COMPILER=/path/to/nvcc")
  endif()
endif()
if(STREAMBLUR_HAVE_CUDA)
  message(STATUS "streamblur: CUDA backend: on (nvcc ${CMAKE_CUDA_COMPILER_VERSION}, ${CMAKE_CUDA_ARCHITECTURES})")
else()
  message(STATUS "streamblur: CUDA backend: off (no CUDA compiler found, or STREAMBLUR_WITH_CUDA=OFF): building the "
                 "CPU backend only; install the CUDA toolkit (nvcc) for the GPU backend")
endif()
set(STREAMBLUR_CUDA_DEFINE 0)
if(STREAMBLUR_HAVE_CUDA)
  set(STREAMBLUR_CUDA_DEFINE 1)
endif()
configure_file(${CMAKE_CURRENT_LIST_DIR}/config.hpp.in ${PROJECT_BINARY_DIR}/generated/streamblur/config.hpp @ONLY)
