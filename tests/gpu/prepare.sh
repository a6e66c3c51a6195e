#!/usr/bin/env bash
# Prepares .gpu/ (ignored by git) for runs on the GPU machine (the device
# tool: run with carry [".gpu"], command `bash tests/gpu/run.sh STAGE...`).
# The machine has CUDA, Python, CuPy and torch but no FFmpeg, TBB or network:
# .gpu/ takes ../shared/gpu/deps.tar.xz (FFmpeg, TBB, GoogleTest), this
# machine's Highway, CLI11 and nlohmann-json headers and CMake files (Debian's
# packages, apps/install-deps.sh), and the prepared clips of
# tests/make_gpu_media.py.
#   tests/gpu/prepare.sh [SHARED_DIR]   # default ../shared
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
shared="${1:-$root/../shared}"
g="$root/.gpu"
grep -qxF /.gpu/ "$root/.git/info/exclude" 2>/dev/null || echo /.gpu/ >> "$root/.git/info/exclude"
grep -qxF /build-gpu/ "$root/.git/info/exclude" 2>/dev/null || echo /build-gpu/ >> "$root/.git/info/exclude"
mkdir -p "$g/usr/include" "$g/usr/lib/x86_64-linux-gnu/cmake" "$g/usr/share/cmake"
cp "$shared/gpu/deps.tar.xz" "$g/deps.tar.xz"
need() { [ -e "$1" ] || { echo "prepare.sh: $1 is missing (run apps/install-deps.sh first)" >&2; exit 1; }; }
for d in hwy CLI nlohmann; do need "/usr/include/$d"; cp -r "/usr/include/$d" "$g/usr/include/"; done
need /usr/lib/x86_64-linux-gnu/cmake/hwy
cp -r /usr/lib/x86_64-linux-gnu/cmake/hwy "$g/usr/lib/x86_64-linux-gnu/cmake/"
cp -P /usr/lib/x86_64-linux-gnu/libhwy*.so* "$g/usr/lib/x86_64-linux-gnu/"
for d in CLI11 nlohmann_json; do need "/usr/share/cmake/$d"; cp -r "/usr/share/cmake/$d" "$g/usr/share/cmake/"; done
# The peer ffmpeg 5.1 (static, with libx264) for the side-by-side runs: the
# pbench stage and python/tests/test_ffmpeg_compat.py (STREAMBLUR_FFMPEG).
if [ -x "$shared/gpu/peer/ffmpeg" ]; then
  mkdir -p "$g/peer"
  cp "$shared/gpu/peer/ffmpeg" "$shared/gpu/peer/"libx264.so.* "$g/peer/"
  chmod u+w "$g/peer/"*
fi
python3 "$root/tests/make_gpu_media.py" "$g/media"
echo "prepare.sh: $(du -sh "$g" | cut -f1) in $g (a run carries at most 64 MiB)"
