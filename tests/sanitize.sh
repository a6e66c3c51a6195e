#!/usr/bin/env bash
# The C++ suites again, built with AddressSanitizer and UndefinedBehaviorSanitizer
# (host code; the CUDA kernels are built as usual and their tests skip without
# a GPU). Any report fails the run. Called by .ci/run after tests/run.sh.
#   tests/sanitize.sh
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
export PATH="/usr/local/cuda/bin:$PATH"
build="${STREAMBLUR_ASAN_BUILD_DIR:-build-asan}"
jobs="$(nproc)"
san="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all"
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSTREAMBLUR_BUILD_TESTS=ON -DSTREAMBLUR_BUILD_APPS=ON \
  -DCMAKE_CXX_FLAGS="$san" -DCMAKE_EXE_LINKER_FLAGS="$san" -DCMAKE_SHARED_LINKER_FLAGS="$san" \
  ${CMAKE_CUDA_ARCHITECTURES:+-DCMAKE_CUDA_ARCHITECTURES=$CMAKE_CUDA_ARCHITECTURES}
cmake --build "$build" -j "$jobs"
# oneTBB 2021.8's flow-graph header raises one UBSan report of its own
# (_flow_graph_impl.h:368); tests/ubsan.supp suppresses exactly that one.
export UBSAN_OPTIONS="suppressions=$root/tests/ubsan.supp:print_stacktrace=1:halt_on_error=1"
export ASAN_OPTIONS="detect_leaks=1:halt_on_error=1"
export LSAN_OPTIONS="suppressions=$root/tests/lsan.supp:print_suppressions=0"  # the list of used ones would add lines to stderr
ctest --test-dir "$build" --output-on-failure --no-tests=error -j "$jobs"
echo "tests/sanitize.sh: all tests passed under ASan + UBSan"
