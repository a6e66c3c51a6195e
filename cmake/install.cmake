# cmake --install build --prefix P: the public headers, the four libraries
# (static unless BUILD_SHARED_LIBS), a CMake package with the targets
# streamblur::kernels, streamblur::io, streamblur::filters and streamblur::pipeline, and a
# pkg-config file. The programs install themselves (apps/CMakeLists.txt).
include(CMakePackageConfigHelpers)

set(STREAMBLUR_CMAKE_DIR "${CMAKE_INSTALL_LIBDIR}/cmake/streamblur")

install(TARGETS streamblur_kernels streamblur_io streamblur_filters streamblur_pipeline
        EXPORT streamblurTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
# detail/ holds the hooks of the tests, the benchmark and the CLI (forced
# kernel paths, the pipeline's test hooks, the signal handler's registry of
# temporary outputs): in the source tree only. streamblur_testing (testing/)
# is not installed either.
foreach(part kernels io pipeline)
  install(DIRECTORY ${PROJECT_SOURCE_DIR}/${part}/include/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
          FILES_MATCHING PATTERN "*.hpp" PATTERN "detail" EXCLUDE)
endforeach()
install(FILES ${PROJECT_BINARY_DIR}/generated/streamblur/config.hpp DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/streamblur)

install(EXPORT streamblurTargets NAMESPACE streamblur:: DESTINATION ${STREAMBLUR_CMAKE_DIR})
configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/streamblurConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/streamblurConfig.cmake
                              INSTALL_DESTINATION ${STREAMBLUR_CMAKE_DIR})
# 0.x: a minor release may break the API, so only the same minor version matches.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/streamblurConfigVersion.cmake
                                 COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/streamblurConfig.cmake ${PROJECT_BINARY_DIR}/streamblurConfigVersion.cmake
        DESTINATION ${STREAMBLUR_CMAKE_DIR})

# pkg-config: FFmpeg and TBB through their own .pc files; the CUDA runtime by
# path (the toolkit ships no .pc on the default search path).
# Static libraries need every dependency on the consumer's link line;
# shared ones carry theirs (Highway is a private dependency of kernels).
set(STREAMBLUR_PC_CUDART "")
set(STREAMBLUR_PC_CFLAGS_CUDA "")
if(STREAMBLUR_HAVE_CUDA)
  set(STREAMBLUR_PC_CUDART "-L${CUDAToolkit_LIBRARY_DIR} -lcudart")
  list(JOIN CUDAToolkit_INCLUDE_DIRS " -I" STREAMBLUR_PC_CUDA_INCLUDES)
  set(STREAMBLUR_PC_CFLAGS_CUDA " -I${STREAMBLUR_PC_CUDA_INCLUDES}")
endif()
if(BUILD_SHARED_LIBS)
  set(STREAMBLUR_PC_LIBS_PRIVATE "${STREAMBLUR_PC_CUDART}")
  set(STREAMBLUR_PC_LIBS_EXTRA "")
  set(STREAMBLUR_PC_REQUIRES "")
  set(STREAMBLUR_PC_REQUIRES_PRIVATE "libhwy")
else()
  set(STREAMBLUR_PC_LIBS_PRIVATE "")
  set(STREAMBLUR_PC_LIBS_EXTRA "${STREAMBLUR_PC_CUDART} -lpthread")
  set(STREAMBLUR_PC_REQUIRES "libhwy")
  set(STREAMBLUR_PC_REQUIRES_PRIVATE "")
endif()
# Cflags carry -std=c++20, as the CMake targets carry cxx_std_20: the public
# headers need C++20 and GCC 12 defaults to gnu++17.
# The prefix is found from the .pc file's own place, so `cmake --install
# --prefix P` (a prefix chosen after configuring) gives a correct file.
file(RELATIVE_PATH STREAMBLUR_PC_UP "/p/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/p")
set(STREAMBLUR_PC_PREFIX "\${pcfiledir}/${STREAMBLUR_PC_UP}")
configure_file(${CMAKE_CURRENT_LIST_DIR}/streamblur.pc.in ${PROJECT_BINARY_DIR}/streamblur.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/streamblur.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
