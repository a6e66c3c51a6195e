#!/usr/bin/env bash
# streamblur on a machine without the CUDA toolkit, as a user gets it there:
# the CUDA toolkit is hidden (a private mount namespace binds empty files and
# folders over nvcc, the CUDA headers and libcudart), then a default
# configure (STREAMBLUR_WITH_CUDA=AUTO) must find no CUDA and say so, build
# the CPU backend, pass its test programs, install for a consumer project,
# and `pip wheel ./python` must build, install and pass the Python suite.
# Hiding the toolkit needs root and unshare (CI runs as root); elsewhere the
# script stops with a note instead of testing a build that still sees nvcc.
#   tests/nocuda_build.sh [BUILD_DIR]   # default build-nocuda; after apps/install-deps.sh
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="$(realpath -m "${1:-$root/build-nocuda}")"

# Everything a CUDA install puts where compilers and CMake look.
cuda_paths() {
  local p
  for p in /usr/local/cuda /usr/local/cuda-* /opt/cuda; do [ -d "$p" ] && realpath "$p"; done
  for p in nvcc ptxas nvlink fatbinary cudafe++ bin2c; do
    command -v "$p" 2>/dev/null || true
    [ -e "/usr/local/bin/$p" ] && echo "/usr/local/bin/$p"
  done
  [ -e /usr/local/include/cuda_runtime_api.h ] && echo /usr/local/include
  ls /usr/local/lib/libcudart* /usr/local/lib/libcudadevrt* 2>/dev/null || true
}

if [ -z "${STREAMBLUR_NOCUDA_INNER:-}" ] && [ -n "$(cuda_paths)" ]; then
  if [ "$(id -u)" != 0 ] || ! command -v unshare >/dev/null; then
    echo "nocuda_build: the CUDA toolkit is installed here and hiding it needs root and unshare; not run" >&2
    exit 1
  fi
  exec unshare --mount env STREAMBLUR_NOCUDA_INNER=1 bash "$0" "$build"
fi
if [ -n "${STREAMBLUR_NOCUDA_INNER:-}" ]; then
  mount --make-rprivate /
  work="$(mktemp -d)"
  mounted=""
  trap 'for m in $mounted; do umount "$m"; done; rm -rf "$work"' EXIT
  bind() { mount --bind "$1" "$2" && mounted="$2 $mounted"; }
  mkdir "$work/empty" && touch "$work/empty.file"
  hide="$(cuda_paths | sort -u)"
  for p in $hide; do [ -d "$p" ] || bind "$work/empty.file" "$p"; done  # files first: some lie in the folders
  for p in $hide; do [ -d "$p" ] && bind "$work/empty" "$p"; done
  if [ -x "$(command -v nvcc 2>/dev/null || true)" ] || [ -e /usr/local/include/cuda_runtime_api.h ]; then
    echo "nocuda_build: the CUDA toolkit is still visible" >&2
    exit 1
  fi
  echo "nocuda_build: CUDA hidden ($(cuda_paths | sort -u | tr '\n' ' '))"
  # The Python packages' incremental build folders may hold a configuration
  # with CUDA (tests/run.sh ran first): fresh empty ones in this namespace.
  for d in python/build python/testing/build; do
    mkdir -p "$root/$d" "$work/$d"
    bind "$work/$d" "$root/$d"
  done
fi

cd "$root"
# A folder configured with CUDA before would keep its compiler: start it afresh.
if grep -qs "^CMAKE_CUDA_COMPILER:.*nvcc" "$build/CMakeCache.txt"; then rm -rf "$build"; fi
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release 2>&1 | tee "$build.configure.log"
grep -q "CUDA backend: off" "$build.configure.log" || { echo "nocuda_build: configure did not say the CUDA backend is off" >&2; exit 1; }
rm -f "$build.configure.log"
grep -qx "#define STREAMBLUR_HAVE_CUDA 0" "$build/generated/streamblur/config.hpp"
cmake --build "$build" -j "$(nproc)" -- -k 0   # every error at once
"$build/apps/streamblur" --version
ctest --test-dir "$build" --output-on-failure --no-tests=error -j "$(nproc)"
bash tests/install_test.sh "$build"   # the installed CPU-only package, through find_package and pkg-config
# pip wheel ./python without nvcc, its suite in a fresh venv; the examples
# run this build's CLI (build/apps/streamblur may be a CUDA build's)
STREAMBLUR_CLI="$build/apps/streamblur" bash tests/wheel_test.sh
echo "nocuda_build: the CPU-only build, install and wheel pass"
