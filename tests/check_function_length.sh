#!/usr/bin/env bash
# No function longer than 100 lines (lizard's length: first line to last,
# comments and docstrings included) in the C++, CUDA and Python sources.
#   tests/check_function_length.sh      # lists the long ones, exits 1 if any
set -euo pipefail
cd "$(dirname "$0")/.."
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  mapfile -t files < <(git ls-files -- '*.cpp' '*.hpp' '*.cu' '*.cuh' '*.py')
else  # an exported tree (the GPU machine's copy)
  mapfile -t files < <(find apps io kernels pipeline python tests testing \
                         \( -name '*.cpp' -o -name '*.hpp' -o -name '*.cu' -o -name '*.cuh' -o -name '*.py' \) 2>/dev/null)
fi
if ! python3 -m lizard --version >/dev/null 2>&1; then
  echo "check_function_length: lizard is missing (python3 -m pip install lizard)" >&2
  exit 1
fi
if ! python3 -m lizard --warnings_only --length 100 --CCN 1000 --arguments 100 "${files[@]}"; then
  echo "check_function_length: the functions above are longer than 100 lines; split them" >&2
  exit 1
fi
echo "check_function_length: ${#files[@]} files, no function over 100 lines"
