#!/usr/bin/env bash
# The wheel as a user gets it: `pip wheel ./python` (and the tests' clip
# module, python/testing), installed into a fresh virtual environment with
# the test packages from PyPI, then the Python suite run against it from
# outside the source tree. Ray is not installed there (its wheel is large;
# tests/run.sh covers it), so STREAMBLUR_ALLOW_NO_RAY=1.
#   tests/wheel_test.sh       # after apps/install-deps.sh
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
export PATH="/usr/local/cuda/bin:$PATH"
python3 -m pip wheel -q --disable-pip-version-check --no-build-isolation --no-deps \
  "$root/python" "$root/python/testing" -w "$work/wheels"
ls "$work/wheels"
python3 -m venv "$work/venv"
py="$work/venv/bin/python"
"$py" -m pip install -q --disable-pip-version-check "$work"/wheels/*.whl pytest pillow matplotlib av==14.0.1 mypy==2.4.1
where="$(cd "$work" && "$py" -c 'import streamblur; print(streamblur.__file__)')"
case "$where" in
  "$work/venv/"*) echo "wheel_test: streamblur from $where" ;;
  *) echo "wheel_test: streamblur was imported from $where, not the wheel" >&2; exit 1 ;;
esac
cd "$work"
STREAMBLUR_ALLOW_NO_RAY=1 MPLBACKEND=Agg "$py" -m pytest -q -p no:cacheprovider "$root/python/tests"
echo "wheel_test: the wheel passes the Python suite"
