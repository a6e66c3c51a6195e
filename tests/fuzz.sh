#!/usr/bin/env bash
# Builds the libFuzzer harnesses with clang (-fsanitize=fuzzer,address,undefined)
# and runs each: first over its regression inputs (tests/fuzz/regressions/NAME:
# every crash ever found, kept), then for FUZZ_SECONDS (default 60) from the
# seed corpora made at build time. Any crash, leak, sanitizer report or
# timeout fails the run; libFuzzer then leaves the input as crash-*/leak-*/
# timeout-* in the work folder: copy it into tests/fuzz/regressions/NAME/.
#   tests/fuzz.sh            # FUZZ_SECONDS=60, FUZZ_SEED=1 by default (a fixed seed: CI runs repeat)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
export PATH="/usr/local/cuda/bin:$PATH"
build="${STREAMBLUR_FUZZ_BUILD_DIR:-build-fuzz}"
seconds="${FUZZ_SECONDS:-60}"
jobs="$(nproc)"
san="-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer -g"
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_COMPILER=clang++ \
  -DCMAKE_CUDA_HOST_COMPILER=g++ -DCMAKE_CXX_FLAGS="$san" \
  -DSTREAMBLUR_BUILD_TESTS=OFF -DSTREAMBLUR_BUILD_APPS=OFF -DSTREAMBLUR_BUILD_FUZZERS=ON \
  ${CMAKE_CUDA_ARCHITECTURES:+-DCMAKE_CUDA_ARCHITECTURES=$CMAKE_CUDA_ARCHITECTURES}
cmake --build "$build" -j "$jobs"
export UBSAN_OPTIONS="suppressions=$root/tests/ubsan.supp:print_stacktrace=1:halt_on_error=1"
export ASAN_OPTIONS="detect_leaks=1"
export LSAN_OPTIONS="suppressions=$root/tests/lsan.supp:print_suppressions=0"  # the list of used ones would add lines to stderr
work="$build/fuzz-work"
summary=()
for name in filter_spec reader pipeline; do
  bin="$build/tests/fuzz/fuzz_$name"
  seeds="$build/tests/fuzz/seeds/media"
  [ "$name" = filter_spec ] && seeds="$build/tests/fuzz/seeds/filter_spec"
  mkdir -p "$work/$name/corpus"
  cp -n "$seeds"/* "$work/$name/corpus/" 2>/dev/null || true
  regressions=(tests/fuzz/regressions/$name/*)
  if [ -e "${regressions[0]}" ]; then
    echo "fuzz.sh: $name: ${#regressions[@]} regression input(s)"
    "$bin" -timeout=20 "${regressions[@]}" > "$work/$name/regressions.log" 2>&1 \
      || { cat "$work/$name/regressions.log"; echo "fuzz.sh: $name fails on a regression input" >&2; exit 1; }
  fi
  maxlen=65536
  [ "$name" = filter_spec ] && maxlen=4096
  echo "fuzz.sh: $name: fuzzing for ${seconds}s"
  (cd "$work/$name" && "$root/$bin" -seed="${FUZZ_SEED:-1}" -max_total_time="$seconds" -timeout=20 -rss_limit_mb=2560 -max_len="$maxlen" \
     -print_final_stats=1 corpus > fuzz.log 2>&1) \
    || { tail -60 "$work/$name/fuzz.log"; echo "fuzz.sh: $name found a problem; the input is in $work/$name" >&2; exit 1; }
  runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$work/$name/fuzz.log" | grep -o '[0-9]*$' || echo "?")
  summary+=("$name: $runs executions in ${seconds}s, no crash")
done
printf 'fuzz.sh: %s\n' "${summary[@]}"
