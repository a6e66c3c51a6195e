#!/usr/bin/env bash
# The installable package, as a user gets it: `cmake --install` the given
# build into a fresh prefix, build tests/consumer against it with
# find_package(streamblur), run it, and compile it once more with pkg-config.
#   tests/install_test.sh [BUILD_DIR]   (default: build)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="$(cd "$root" && cd "${1:-build}" && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
export PATH="/usr/local/cuda/bin:$PATH"
cmake --install "$build" --prefix "$work/prefix" > "$work/install.log"
# Everything a user needs is there.
# (The CUDA headers only where the CUDA backend was built.)
cuda_headers=""
grep -qx "#define STREAMBLUR_HAVE_CUDA 1" "$build/generated/streamblur/config.hpp" &&
  cuda_headers="include/streamblur/kernels/cuda_blur.hpp"
for f in include/streamblur/pipeline/pipeline.hpp include/streamblur/config.hpp $cuda_headers \
         include/streamblur/io/reader.hpp bin/streamblur bin/streamblur-bench; do
  [ -e "$work/prefix/$f" ] || { echo "install_test: $f is not installed" >&2; exit 1; }
done
cfg="$(find "$work/prefix" -name streamblurConfig.cmake)"
pc="$(find "$work/prefix" -name streamblur.pc)"
[ -n "$cfg" ] && [ -n "$pc" ] || { echo "install_test: no streamblurConfig.cmake or streamblur.pc" >&2; exit 1; }
"$work/prefix/bin/streamblur" --version > /dev/null
# ...and nothing of the tests': no streamblur_testing (the clip writer), no
# detail/ header (test and benchmark hooks), none of them named by an
# installed header, the CMake package or the .pc file.
leaked="$( { find "$work/prefix" \( -path '*/include/streamblur/*/detail' -o -path '*/include/streamblur/testing' \
                  -o -name '*streamblur_testing*' \) -print
            grep -rlE '#include "streamblur/[a-z]+/detail/|test_finish_hook|TestHooks|synthetic|remove_temp_outputs|path_name' \
              "$work/prefix/include"
            grep -lE 'testing' "$pc" "$(dirname "$cfg")"/*.cmake; } || true)"
[ -z "$leaked" ] || { printf 'install_test: test-only code is installed or named:\n%s\n' "$leaked" >&2; exit 1; }

# CMake: find_package(streamblur) in a project of its own.
cmake -S "$root/tests/consumer" -B "$work/consumer" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$work/prefix" > "$work/consumer.log" || { cat "$work/consumer.log"; exit 1; }
cmake --build "$work/consumer" > "$work/consumer-build.log" || { cat "$work/consumer-build.log"; exit 1; }
"$work/consumer/consumer" "$work/run-cmake"

# pkg-config: the same program, compiled and linked from the .pc file alone
# (no -std here either: the .pc's Cflags carry -std=c++20).
export PKG_CONFIG_PATH="$(dirname "$pc")${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
# shellcheck disable=SC2046
g++ -O1 "$root/tests/consumer/main.cpp" -o "$work/consumer-pc" $(pkg-config --cflags --libs streamblur)
"$work/consumer-pc" "$work/run-pc"
echo "install_test: the installed package builds and runs a consumer (CMake and pkg-config)"
