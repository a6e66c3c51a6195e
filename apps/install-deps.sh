#!/usr/bin/env bash
# Installs what streamblur needs to build and test on Debian/Ubuntu: the
# FFmpeg, oneTBB, GoogleTest, CLI11 and nlohmann-json development packages
# (apt-get), and the Python build/test packages (pip). The CUDA toolkit is
# expected at /usr/local/cuda (nvcc); a GPU is optional.
set -euo pipefail
SUDO=""
if [ "$(id -u)" != 0 ] && command -v sudo >/dev/null; then SUDO=sudo; fi
pkgs=(cmake ninja-build pkg-config g++ libavcodec-dev libavformat-dev libavutil-dev libswscale-dev
      libtbb-dev libhwy-dev libgtest-dev libcli11-dev nlohmann-json3-dev python3-pip clang libclang-rt-dev
      ffmpeg)  # ffmpeg: the program, for python/tests/test_ffmpeg_compat.py
missing=()
for p in "${pkgs[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
if [ ${#missing[@]} -gt 0 ]; then
  echo "install-deps: apt-get install ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
python3 -m pip install -q --disable-pip-version-check "nanobind>=2.0" "scikit-build-core>=0.10" pytest numpy pillow matplotlib \
  av==14.0.1 mypy==2.4.1 lizard==1.24.3 \
  ray==2.60.0  # mypy: python/tests/test_typing.py checks the stubs; lizard: tests/check_function_length.sh; av: PyAV, its own FFmpeg build, the Python tests' independent decoder; ray: python/tests/test_ray.py (streamblur.ray); a big wheel (~70 MB), tests run on the CPU backend
if ! command -v nvcc >/dev/null && [ ! -x /usr/local/cuda/bin/nvcc ]; then
  echo "install-deps: warning: nvcc not found; install the CUDA toolkit (https://developer.nvidia.com/cuda-downloads)" >&2
fi
