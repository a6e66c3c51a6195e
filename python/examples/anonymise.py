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
CLI when --cli PATH is given, the encoder chosen by the output's container
(libx264 for mp4 and mkv), both with strict regions: a regions file that
cannot match the video fails the run. Then the example checks its own result:
on every keyframe, the pixels inside each box must have changed. If the
detector found nothing, or a box came out unchanged, it says so and exits 1.

A demo clip with a white square moving over a test pattern (Debian's ffmpeg;
the square is a second input moved by overlay, whose x may use the time t):

    ffmpeg -f lavfi -i "testsrc2=size=320x240:rate=25:duration=2" \\
        -f lavfi -i "color=white:size=56x56:rate=25" \\
        -filter_complex "[0][1]overlay=x='20+t*110':y=80:shortest=1" -c:v ffv1 demo.mkv
    python3 anonymise.py demo.mkv blurred.mp4
    python3 anonymise.py demo.mkv blurred.mkv --cli build/apps/streamblur --backend cpu
"""
import argparse
import json
import subprocess
import sys

import numpy as np

# A box counts as anonymised when its pixels moved by this much on average
# (luma levels), beyond what the encoder changed outside the boxes.
MIN_CHANGE = 4.0


def detect(luma):
    """Boxes [x, y, w, h, label] in luma pixels. A stand-in: the bounding box
    of the pure-white pixels (the demo clip's moving square)."""
    ys, xs = np.nonzero(luma >= 230)
    if len(xs) < 16:
        return []
    x0, x1, y0, y1 = int(xs.min()), int(xs.max()) + 1, int(ys.min()), int(ys.max()) + 1
    return [[x0, y0, x1 - x0, y1 - y0, "object"]]


def luma_frames(path):
    """Every frame's luma plane (a copy), in order."""
    import streamblur

    return [np.array(frame.planes[0]) for frame in streamblur.frames(path, device="cpu")]


def write_regions(frames, path, every):
    """Runs `detect` on frames 0, N, 2N, ... and the last, writing one keyframe each; returns them."""
    picked = sorted(set(range(0, len(frames), every)) | {len(frames) - 1}) if frames else []
    keyframes = [{"frame": i, "boxes": detect(frames[i])} for i in picked]
    with open(path, "w") as f:
        for k in keyframes:
            f.write(json.dumps(k) + "\n")
    return keyframes


def box_mask(shape, boxes):
    mask = np.zeros(shape, dtype=bool)
    for x, y, w, h, *_ in boxes:
        mask[max(0, y):max(0, y + h), max(0, x):max(0, x + w)] = True
    return mask


def unchanged_boxes(before, after, keyframes):
    """The keyframes' boxes whose pixels did not change: [(frame, box, mean change, encoder noise)]."""
    if len(before) != len(after):
        raise SystemExit(f"anonymise: the output has {len(after)} frames, the input {len(before)}")
    failures = []
    for k in keyframes:
        i = k["frame"]
        diff = np.abs(after[i].astype(np.int32) - before[i].astype(np.int32))
        # Encoder noise: far from every box (feather and margin included).
        grown = [[x - w, y - h, 3 * w, 3 * h] for x, y, w, h, *_ in k["boxes"]]
        far = ~box_mask(diff.shape, grown)
        noise = float(diff[far].mean()) if far.any() else 0.0
        for box in k["boxes"]:
            inside = diff[box_mask(diff.shape, [box])]
            change = float(inside.mean()) if inside.size else 0.0
            if change < MIN_CHANGE + 2 * noise:
                failures.append((i, box, change, noise))
    return failures


def blur(args, vf):
    """Runs the chain over the video; returns an error message or None."""
    if args.cli:
        r = subprocess.run([args.cli, args.input, args.output, "--vf", vf, "--backend", args.backend, "-y", "-q",
                            "--strict-regions"])
        return None if r.returncode == 0 else f"the streamblur CLI exited with {r.returncode}"
    import streamblur

    try:
        stats = streamblur.process_video(args.input, args.output, vf=vf, backend=args.backend, overwrite=True,
                                         strict_regions=True)
    except (ValueError, RuntimeError) as e:
        return str(e)
    print(f"anonymise: {stats['frames']} frames through {vf}")
    return None


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
    before = luma_frames(args.input)
    keyframes = write_regions(before, regions, args.every)
    found = [k for k in keyframes if k["boxes"]]
    print(f"anonymise: {len(found)} of {len(keyframes)} keyframes hold boxes, in {regions}")
    if not found:
        print(f"anonymise: error: the detector found nothing in the {len(keyframes)} keyframes of {args.input}; "
              "nothing would be anonymised", file=sys.stderr)
        return 1
    # margin: a little around the detector's box; feather: no hard seam; ellipse: face-shaped.
    limits = f"regions={regions}:margin=0.1:feather=8:shape=ellipse"
    vf = f"pixelate=block={args.pixelate}:{limits}" if args.pixelate else f"gblur=sigma={args.sigma}:{limits}"
    error = blur(args, vf)
    if error:
        print(f"anonymise: error: {error}", file=sys.stderr)
        return 1
    failures = unchanged_boxes(before, luma_frames(args.output), found)
    for i, box, change, noise in failures:
        print(f"anonymise: error: frame {i}: box {box[:4]} is not anonymised (its pixels changed by {change:.1f} "
              f"levels on average, the encoder's noise elsewhere is {noise:.1f})", file=sys.stderr)
    if failures:
        return 1
    boxes = sum(len(k["boxes"]) for k in found)
    print(f"anonymise: checked {boxes} boxes on {len(found)} keyframes: every one changed; wrote {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
