#!/usr/bin/env python3
"""The Python module on CuPy arrays, against CuPy itself, in one script (K5).

Three figures, each a ratio against a reference timed in the same process:

1. host time per call: 10,000 calls of gaussian_blur(x, 1.0, out=y) on a
   64x64 uint8 CuPy array, without synchronising, against 10,000 calls of
   CuPy's own cp.add(x, x, out=z) (goal: at most 0.5);
2. queued 4K calls: 96 calls of gaussian_blur(x, 2.0, out=y) on 3840x2160
   uint8 CuPy arrays (16 input/output pairs in turn, as the kernel bench
   rotates 16 buffers so that the L2 does not hold them) between two CUDA
   events, per call, against the same
   plane's kernel time taken from `streamblur-bench kernels --json` when a
   file is given (goal: at most 1.2), and against one device copy of the
   plane (cp.copyto) timed the same way;
3. cupyx.scipy.ndimage.gaussian_filter (mode='nearest', truncate=3, the same
   radius ceil(3 sigma)) and uniform_filter on the same arrays, for scale.

    apps/bench_python.py [--kernels-json FILE] [--calls 10000]
"""
import argparse
import itertools
import json
import sys
import time

import cupy as cp
import cupyx.scipy.ndimage as ndi

import streamblur


def host_us_per_call(fn, calls):
    fn()
    cp.cuda.Device().synchronize()
    t0 = time.perf_counter()
    for _ in range(calls):
        fn()
    t1 = time.perf_counter()
    cp.cuda.Device().synchronize()
    return (t1 - t0) * 1e6 / calls


def gpu_us_per_call(fn, calls=100, rounds=5):
    stream = cp.cuda.get_current_stream()
    fn()
    best = []
    for _ in range(rounds):
        a, b = cp.cuda.Event(), cp.cuda.Event()
        a.record(stream)
        for _ in range(calls):
            fn()
        b.record(stream)
        b.synchronize()
        best.append(cp.cuda.get_elapsed_time(a, b) * 1000.0 / calls)
    best.sort()
    return best[len(best) // 2]


def kernel_us(path, width, height, sigma):
    with open(path) as f:
        rows = json.load(f)["kernels"]
    for r in rows:
        if (r["width"], r["height"], r["filter"], r["param"], r.get("bits", 8)) == (width, height, "gblur", sigma, 8):
            return r["ours_us"]
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kernels-json", help="output of `streamblur-bench kernels --json FILE` from this machine")
    ap.add_argument("--calls", type=int, default=10000)
    args = ap.parse_args()
    if not streamblur.cuda_available():
        print("bench_python: no CUDA device", file=sys.stderr)
        return 1

    small = cp.random.randint(0, 256, (64, 64), dtype=cp.uint8)
    small_out = cp.empty_like(small)
    z = cp.empty_like(small)
    ours = host_us_per_call(lambda: streamblur.gaussian_blur(small, 1.0, out=small_out), args.calls)
    ours_alloc = host_us_per_call(lambda: streamblur.gaussian_blur(small, 1.0), args.calls)
    add = host_us_per_call(lambda: cp.add(small, small, out=z), args.calls)
    print(f"host time per call, 64x64 uint8, {args.calls} calls, no synchronisation:")
    print(f"  gaussian_blur(x, 1.0, out=y) {ours:8.1f} us")
    print(f"  gaussian_blur(x, 1.0)        {ours_alloc:8.1f} us  (allocates the output)")
    print(f"  cp.add(x, x, out=z)          {add:8.1f} us")
    print(f"  K5 host ratio ours/cp.add = {ours / add:.2f}  (goal <= 0.5)")

    # 16 input/output pairs in turn, as the C++ kernel bench rotates 16
    # buffers: one pair (16.6 MB) would stay in the H200's 60 MB L2.
    w, h = 3840, 2160
    pairs = [(cp.random.randint(0, 256, (h, w), dtype=cp.uint8), cp.empty((h, w), dtype=cp.uint8)) for _ in range(16)]
    turn = itertools.cycle(pairs)
    def rotating(fn):
        return lambda: fn(*next(turn))
    queued = gpu_us_per_call(rotating(lambda a, b: streamblur.gaussian_blur(a, 2.0, out=b)), calls=96)
    copy = gpu_us_per_call(rotating(lambda a, b: cp.copyto(b, a)), calls=96)
    box = gpu_us_per_call(rotating(lambda a, b: streamblur.box_blur(a, 1, out=b)), calls=96)
    print(f"\n4K uint8, 96 calls between two events over 16 rotating array pairs, per call:")
    print(f"  gaussian_blur(x, 2.0, out=y) {queued:8.1f} us")
    print(f"  box_blur(x, 1, out=y)        {box:8.1f} us")
    print(f"  cp.copyto (device copy)      {copy:8.1f} us  (x copy: gblur {queued / copy:.2f}, box {box / copy:.2f})")
    if args.kernels_json:
        k = kernel_us(args.kernels_json, w, h, 2.0)
        if k:
            print(f"  C++ kernel (bench json)      {k:8.1f} us  K5 queued ratio = {queued / k:.2f}  (goal <= 1.2)")

    ref_g = gpu_us_per_call(rotating(lambda a, b: ndi.gaussian_filter(a, 2.0, output=b, mode="nearest", truncate=3.0)), 16, 3)
    ref_b = gpu_us_per_call(rotating(lambda a, b: ndi.uniform_filter(a, 3, output=b, mode="nearest")), 16, 3)
    print(f"\ncupyx.scipy.ndimage on the same 4K arrays, rotating as above (per call):")
    print(f"  gaussian_filter(sigma=2, nearest, truncate=3) {ref_g:8.1f} us   ours faster by {ref_g / queued:.1f}x")
    print(f"  uniform_filter(size=3, nearest)               {ref_b:8.1f} us   ours faster by {ref_b / box:.1f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
