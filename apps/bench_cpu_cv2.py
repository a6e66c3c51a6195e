#!/usr/bin/env python3
"""The CPU filters against OpenCV on the same cores, in one script.

Runs `streamblur-bench kernels --backend cpu` (the CLI's own CPU filter
path: a configured FilterChain, SIMD rows over oneTBB) and OpenCV's
GaussianBlur / blur on a plane of the same size with the same thread count,
interleaved, and prints our time over cv2's for each filter (the goal of
issue 11: at most 1.0 on 16 threads at 4K). cv2 uses BORDER_REPLICATE, the
same borders as ours, and for gblur the same kernel size (2 ceil(3 sigma) + 1).

    apps/bench_cpu_cv2.py BENCH [--threads N] [--size 3840x2160] [--rounds 3]
"""
import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time

import numpy as np


def median_ms(fn, samples=15):
    fn()
    t = []
    for _ in range(samples):
        a = time.perf_counter()
        fn()
        t.append((time.perf_counter() - a) * 1e3)
    return sorted(t)[len(t) // 2]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("bench", help="the streamblur-bench program")
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--size", default="3840x2160")
    ap.add_argument("--rounds", type=int, default=3, help="ours then cv2, this many times; the best of each is kept")
    a = ap.parse_args()
    try:
        import cv2
    except ImportError:
        print("bench_cpu_cv2: no cv2 here (pip install opencv-python-headless); nothing to compare", file=sys.stderr)
        return 2
    cv2.setNumThreads(a.threads)
    w, h = map(int, a.size.split("x"))
    img = np.random.default_rng(7).integers(0, 256, (h, w), dtype=np.uint8)
    ours, theirs = {}, {}
    for _ in range(a.rounds):
        with tempfile.NamedTemporaryFile(suffix=".json") as f:
            subprocess.run([a.bench, "kernels", "--backend", "cpu", "--threads", str(a.threads), "--size", a.size,
                            "--json", f.name], check=True, stdout=subprocess.DEVNULL)
            report = json.load(open(f.name))
        simd = report["simd"]
        for row in report["cpu_kernels"]:
            ours[row["filter"]] = min(ours.get(row["filter"], math.inf), row["ms"])
        for spec in ours:
            name, _, value = spec.partition("=")
            v = float(value.split("=")[1])
            if name == "gblur":
                k = 2 * max(1, math.ceil(3 * v)) + 1
                fn = lambda: cv2.GaussianBlur(img, (k, k), v, borderType=cv2.BORDER_REPLICATE)
            else:
                k = 2 * int(v) + 1
                fn = lambda: cv2.blur(img, (k, k), borderType=cv2.BORDER_REPLICATE)
            theirs[spec] = min(theirs.get(spec, math.inf), median_ms(fn))
    print(f"CPU filters vs OpenCV {cv2.__version__}: {a.size} 8-bit plane, {a.threads} threads, streamblur SIMD "
          f"{simd}; best of {a.rounds} rounds of medians")
    print(f"{'filter':20} {'ours_ms':>9} {'cv2_ms':>9} {'ours/cv2':>9}  goal <= 1.0")
    for spec in ours:
        r = ours[spec] / theirs[spec]
        print(f"{spec:20} {ours[spec]:9.3f} {theirs[spec]:9.3f} {r:9.2f}  {'met' if r <= 1.0 else 'missed'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
