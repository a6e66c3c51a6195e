# The streamblur program, for the top level (apps/CMakeLists.txt) and the
# Python package, which ships it for `python -m streamblur`
# (python/CMakeLists.txt).
function(streamblur_add_cli target)
  find_package(CLI11 CONFIG REQUIRED)
  find_package(nlohmann_json CONFIG REQUIRED)
  set(dir "${CMAKE_CURRENT_FUNCTION_LIST_DIR}")
  add_executable(${target} ${dir}/streamblur.cpp ${dir}/cli_options.cpp ${dir}/cli_report.cpp ${dir}/cli_batch.cpp)
  set_target_properties(${target} PROPERTIES OUTPUT_NAME streamblur)
  target_link_libraries(${target} PRIVATE streamblur::pipeline CLI11::CLI11 nlohmann_json::nlohmann_json)
  target_compile_options(${target} PRIVATE -Wall -Wextra)
endfunction()
