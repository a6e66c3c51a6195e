#!/usr/bin/env bash
# The whole test suite: function lengths (lizard), build (Release), run every GoogleTest program through
# ctest, install into a scratch prefix and build a consumer project against
# it, then build the Python module (and the tests' clip module,
# python/testing) and run its pytest suite. GPU tests skip
# themselves where no CUDA device is present. Exits non-zero on any failure.
#   tests/run.sh            # assumes the dependencies are installed
#   tests/run.sh --install  # installs them first (apps/install-deps.sh)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
[ "${1:-}" = "--install" ] && bash apps/install-deps.sh
bash tests/check_function_length.sh   # no function over 100 lines (lizard)
python3 tests/mutations.py --check    # every deliberate bug still applies to the code
for p in tests/gpu/variants/*.patch; do   # every A/B variant of tests/gpu/ab.sh still applies
  git apply --check "$p" || { echo "tests/run.sh: $p no longer applies to the code" >&2; exit 1; }
done
export PATH="/usr/local/cuda/bin:$PATH"
build="${STREAMBLUR_BUILD_DIR:-build}"
jobs="$(nproc)"
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DSTREAMBLUR_BUILD_TESTS=ON -DSTREAMBLUR_BUILD_APPS=ON ${CMAKE_CUDA_ARCHITECTURES:+-DCMAKE_CUDA_ARCHITECTURES=$CMAKE_CUDA_ARCHITECTURES}
cmake --build "$build" -j "$jobs"
ctest --test-dir "$build" --output-on-failure --no-tests=error -j "$jobs"
bash tests/install_test.sh "$build"   # cmake --install, then a consumer project via find_package and pkg-config
if [ -f python/pyproject.toml ]; then
  python3 -m pip install -q --disable-pip-version-check --no-build-isolation ./python ./python/testing
  MPLBACKEND=Agg python3 -m pytest -q python/tests
fi
echo "tests/run.sh: all tests passed"
