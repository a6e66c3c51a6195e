#!/usr/bin/env bash
# The GPU machine's stages, run in the repository root there after
# tests/gpu/prepare.sh here (device tool: carry [".gpu"]):
#   bash tests/gpu/run.sh build kctest memcheck racecheck
# Logs go to $OUT (log.txt, and a file per stage), key lines to stdout.
# Stages:
#   build      cmake + ninja into $BUILD (default build-gpu), tests and apps
#   pip        the Python module and the tests' clip module into /tmp/site (no network: --no-deps)
#   ctest      every test ($CTR: a ctest -R regex)
#   kctest     the kernel tests ($KF: a gtest filter, default CudaBlur*)
#   py         pytest on the module ($PYK: a -k expression)
#   memcheck   compute-sanitizer memcheck on the kernel tests ($MCF), planes
#              capped at 400,000 pixels (STREAMBLUR_TEST_MAX_PIXELS), and on
#              a small segmented CUDA run ($MCS)
#   racecheck  compute-sanitizer racecheck on its own smaller set ($RCF)
#   kbench     streamblur-bench kernels $KARGS (output kbench$KN.txt)
#   pbench     streamblur-bench pipeline --no-cpu $PARGS beside the peer ffmpeg
#              (.gpu/peer/ffmpeg, copied from ../shared/gpu/peer), JSON and
#              text to pbench$KN.json / .txt
#   pybench    apps/bench_python.py
#   mut:A,B    tests/mutations.py -k A -k B --gpu --worktree (-R $MUTR)
#   script:F   bash F
#   pack:F     tar.xz of $OUT's logs into F (the device tool brings back few
#              files: OUT=/tmp/l ... pack:$OUT_OF_THE_DEVICE/logs.tar.xz)
# GPU tests must run here, not skip: STREAMBLUR_REQUIRE_GPU=1 makes a
# missing device a failure.
set -uo pipefail
R=$(pwd); G=$R/.gpu; OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
LOG=$OUT/log.txt
[ -d /opt/streamblur-deps ] || tar -xJf "$G/deps.tar.xz" -C /opt
export PATH=/usr/local/cuda/bin:$PATH
export PKG_CONFIG_PATH=/opt/streamblur-deps/lib/pkgconfig
export CMAKE_PREFIX_PATH="/opt/streamblur-deps:$G/usr"   # a list: ':' here
export LD_LIBRARY_PATH=/opt/streamblur-deps/lib:/opt/streamblur-deps/lib/x86_64-linux-gnu:$G/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
export STREAMBLUR_REQUIRE_GPU=1 STREAMBLUR_ALLOW_NO_RAY=1
[ -d "$G/media" ] && export STREAMBLUR_TEST_MEDIA_DIR="$G/media"
# The peer ffmpeg (prepare.sh copies it) for the Python suite's FFmpeg comparisons.
if [ -z "${STREAMBLUR_FFMPEG:-}" ] && [ -x "$G/peer/ffmpeg" ]; then
  export STREAMBLUR_FFMPEG="$G/peer/ffmpeg" LD_LIBRARY_PATH="$G/peer:$LD_LIBRARY_PATH"
fi
B=${BUILD:-build-gpu}
say() { echo "== $*" | tee -a "$LOG"; }
rc_all=0
for st in "$@"; do
  t0=$(date +%s)
  case $st in
    build)
      say build
      cmake -S . -B "$B" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 \
        -DSTREAMBLUR_BUILD_TESTS=ON -DSTREAMBLUR_BUILD_APPS=ON >> "$LOG" 2>&1 &&
        cmake --build "$B" -j"$(nproc)" >> "$LOG" 2>&1 || { say BUILD FAILED; tail -40 "$LOG"; exit 1; } ;;
    pip)
      say pip
      rm -rf /tmp/site
      CMAKE_ARGS="-DCMAKE_CUDA_ARCHITECTURES=90" python3 -m pip install --no-build-isolation --no-deps \
        --target /tmp/site ./python ./python/testing >> "$LOG" 2>&1 || { say PIP FAILED; tail -40 "$LOG"; exit 1; } ;;
    ctest)
      say ctest
      ctest --test-dir "$B" --output-on-failure -j8 ${CTR:+-R "$CTR"} > "$OUT/ctest.txt" 2>&1 || rc_all=1
      grep -E "tests passed|tests failed|\(Failed\)" "$OUT/ctest.txt" | tail -20 ;;
    kctest)
      say kctest
      "$B/tests/streamblur_cuda_kernel_tests" --gtest_filter="${KF:-CudaBlur*}" > "$OUT/kctest.txt" 2>&1 || rc_all=1
      grep -E "^\[  (PASSED|FAILED|SKIPPED)" "$OUT/kctest.txt" | tail -20 ;;
    py)
      say pytest
      PYTHONPATH=/tmp/site MPLBACKEND=Agg python3 -m pytest -q -p no:cacheprovider python/tests ${PYK:+-k "$PYK"} > "$OUT/pytest.txt" 2>&1 || rc_all=1
      tail -5 "$OUT/pytest.txt" ;;
    memcheck)
      say memcheck
      STREAMBLUR_TEST_MAX_PIXELS=400000 compute-sanitizer --tool memcheck --error-exitcode 9 \
        "$B/tests/streamblur_cuda_kernel_tests" --gtest_filter="${MCF:-CudaBlur.Running*:CudaBlur.RacecheckSet:CudaBlur/CudaBox.*:CudaBlur.Tensor*}" > "$OUT/memcheck.txt" 2>&1
      rc=$?; [ $rc = 0 ] || rc_all=1
      echo "memcheck rc=$rc"; grep -E "ERROR SUMMARY|^\[  (PASSED|FAILED)" "$OUT/memcheck.txt" | tail -5
      # A small segmented run on the CUDA backend (NVDEC spans at once, $MCS).
      compute-sanitizer --tool memcheck --error-exitcode 9 \
        "$B/tests/streamblur_span_run_tests" --gtest_filter="${MCS:-SegmentedRun.Cuda*}" > "$OUT/memcheck-segments.txt" 2>&1
      rc=$?; [ $rc = 0 ] || rc_all=1
      echo "memcheck segments rc=$rc"; grep -E "ERROR SUMMARY|^\[  (PASSED|FAILED)" "$OUT/memcheck-segments.txt" | tail -5 ;;
    racecheck)
      say racecheck
      compute-sanitizer --tool racecheck --error-exitcode 9 \
        "$B/tests/streamblur_cuda_kernel_tests" --gtest_filter="${RCF:-CudaBlur.RacecheckSet:CudaBlur.RunningBoxWideSumsOfConstantPlanes}" > "$OUT/racecheck.txt" 2>&1
      rc=$?; [ $rc = 0 ] || rc_all=1
      echo "racecheck rc=$rc"; grep -E "RACECHECK SUMMARY|ERROR SUMMARY|^\[  (PASSED|FAILED)" "$OUT/racecheck.txt" | tail -5 ;;
    kbench)
      say kbench ${KARGS:-}
      "$B/apps/streamblur-bench" kernels ${KARGS:-} > "$OUT/kbench${KN:-}.txt" 2>&1; echo "rc=$?"
      tail -60 "$OUT/kbench${KN:-}.txt" ;;
    pbench)
      say pbench ${PARGS:-}
      ff=(); [ -x "$G/peer/ffmpeg" ] && ff=(--ffmpeg "$G/peer/ffmpeg")
      "$B/apps/streamblur-bench" pipeline --no-cpu "${ff[@]}" ${PARGS:-} \
        --work-dir /tmp/bench-clips --json "$OUT/pbench${KN:-}.json" > "$OUT/pbench${KN:-}.txt" 2>&1; echo "rc=$?"
      tail -40 "$OUT/pbench${KN:-}.txt" ;;
    pybench)
      say pybench
      PYTHONPATH=/tmp/site python3 apps/bench_python.py > "$OUT/pybench.txt" 2>&1 || rc_all=1
      tail -30 "$OUT/pybench.txt" ;;
    mut:*)
      name=${st#mut:}; say "mutation $name"
      ks=(); IFS=, read -ra names <<< "$name"; for n in "${names[@]}"; do ks+=(-k "$n"); done
      CMAKE_CUDA_ARCHITECTURES=90 python3 tests/mutations.py --worktree --gpu "${ks[@]}" ${MUTR:+-R "$MUTR"} > "$OUT/mut-${name//,/+}.txt" 2>&1 || rc_all=1
      tail -6 "$OUT/mut-${name//,/+}.txt" ;;
    pack:*)
      # The device tool brings back only a few files from its $OUT: run the
      # stages with OUT pointing elsewhere, then pack:$DEVICE_OUT/logs.tar.xz.
      f=${st#pack:}; say "pack $f"
      tar -cJf "$f" -C "$OUT" . || rc_all=1 ;;
    script:*)
      f=${st#script:}; say "script $f"
      bash "$f" 2>&1 | tee -a "$LOG" | tail -"${TAILN:-80}" ;;
    *) say "unknown stage $st"; exit 2 ;;
  esac
  echo "   [$st $(( $(date +%s) - t0 )) s]" | tee -a "$LOG"
done
exit $rc_all
