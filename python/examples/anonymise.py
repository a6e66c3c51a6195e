#!/usr/bin/env python3
"""Anonymise a video: blur (or pixelate) the regions a detector finds.

    python3 anonymise.py INPUT OUTPUT [--every 5] [--sigma 12 | --pixelate 16]
                         [--regions FILE] [--cli PATH] [--backend cpu]

Runs a detector on every Nth frame (here a stand-in that finds the bright
object of the demo clip below; put your face or plate detector in `detect`),
writes what it found as a regions file (JSON Lines, one keyframe a line:
{"frame": 37, "boxes": [[x, y, w, h, "label"], ...]}), and blurs only those
regions with streamblur. Between keyframes streamblur moves the boxes
linearly (boxes paired by label), so the detector need not run on every frame;
the file ends with a keyframe on the last frame so the last frames are covered.

The video is processed with streamblur.process_video, or with the streamblur
CLI when --cli PATH is given. A demo clip with a bright square moving over a
test pattern (Debian's ffmpeg):

    ffmpeg -f lavfi -i "testsrc2=size=320x240:rate=25:duration=2" \\
        -vf "drawbox=x='20+t*110':y=80:w=56:h=56:color=white@1:t=fill" -c:v ffv1 demo.mkv
    python3 anonymise.py demo.mkv blurred.mkv --cli build/apps/streamblur --backend cpu
"""
import argparse
import json
import subprocess
import sys

import numpy as np


def detect(luma):
    """Boxes [x, y, w, h, label] in luma pixels. A stand-in: the bounding box
    of the pure-white pixels (the demo clip's moving square)."""
    ys, xs = np.nonzero(luma >= 230)
    if len(xs) < 16:
        return []
    x0, x1, y0, y1 = int(xs.min()), int(xs.max()) + 1, int(ys.min()), int(ys.max()) + 1
    return [[x0, y0, x1 - x0, y1 - y0, "object"]]


def write_regions(src, path, every):
    """Runs `detect` on frames 0, N, 2N, ... and the last, writing one keyframe each."""
    import streamblur

    keyframes = []
    last = None
    for i, frame in enumerate(streamblur.frames(src, device="cpu")):
        last = (i, frame)
        if i % every == 0:
            keyframes.append({"frame": i, "boxes": detect(np.asarray(frame.planes[0]))})
    if last is not None and last[0] % every != 0:
        keyframes.append({"frame": last[0], "boxes": detect(np.asarray(last[1].planes[0]))})
    with open(path, "w") as f:
        for k in keyframes:
            f.write(json.dumps(k) + "\n")
    return len(keyframes)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("input")
    parser.add_argument("output")
    parser.add_argument("--every", type=int, default=5, help="run the detector on every Nth frame (default 5)")
    parser.add_argument("--sigma", type=float, default=12.0, help="Gaussian sigma of the blur (default 12)")
    parser.add_argument("--pixelate", type=int, metavar="BLOCK", help="pixelate with this cell size instead of blurring")
    parser.add_argument("--regions", default=None, help="regions file to write (default OUTPUT.regions.jsonl)")
    parser.add_argument("--cli", metavar="PATH", help="run this streamblur CLI instead of streamblur.process_video")
    parser.add_argument("--backend", default="auto", choices=["auto", "cpu", "cuda"])
    args = parser.parse_args(argv)
    if args.every < 1:
        parser.error("--every must be 1 or more")

    regions = args.regions or args.output + ".regions.jsonl"
    n = write_regions(args.input, regions, args.every)
    print(f"anonymise: {n} keyframes in {regions}")
    # margin: a little around the detector's box; feather: no hard seam; ellipse: face-shaped.
    limits = f"regions={regions}:margin=0.1:feather=8:shape=ellipse"
    vf = f"pixelate=block={args.pixelate}:{limits}" if args.pixelate else f"gblur=sigma={args.sigma}:{limits}"
    if args.cli:
        r = subprocess.run([args.cli, args.input, args.output, "--vf", vf, "--backend", args.backend, "-y", "-q",
                            "--codec", "ffv1"])
        return r.returncode
    import streamblur

    stats = streamblur.process_video(args.input, args.output, vf=vf, codec="ffv1", backend=args.backend, overwrite=True)
    print(f"anonymise: {stats.get('frames')} frames with {vf}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
