#!/usr/bin/env bash
# The main job on a fresh machine: install what is missing, build, make a small
# sample clip, and blur it with the CLI (CUDA when a GPU is present, else the
# CPU backend; the tool says which).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
bash apps/install-deps.sh
export PATH="/usr/local/cuda/bin:$PATH"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DSTREAMBLUR_BUILD_TESTS=OFF >/dev/null
cmake --build build -j "$(nproc)"
mkdir -p sample
build/apps/streamblur-bench make-clip sample/sample.mp4 --size 1280x720 --frames 90
build/apps/streamblur sample/sample.mp4 sample/sample-blurred.mp4 -y --vf "gblur=sigma=2,boxblur=radius=3" \
  --stats-json sample/stats.json
echo "demo: wrote sample/sample-blurred.mp4 and sample/stats.json"
