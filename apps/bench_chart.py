#!/usr/bin/env python3
"""Bar chart of frames/s per configuration from `streamblur-bench pipeline --json`.

    python3 apps/bench_chart.py bench.json bench.png
"""
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main() -> int:
    if len(sys.argv) != 3:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    with open(sys.argv[1]) as f:
        data = json.load(f)
    jobs = data["jobs"]
    clips = list(dict.fromkeys(j["clip"] for j in jobs))
    fig, axes = plt.subplots(1, len(clips), figsize=(6.5 * len(clips), 4.8), squeeze=False)
    colours = {"streamblur cuda": "#76b900", "streamblur cpu": "#4c72b0", "streamblur -": "#8c8c8c", "ffmpeg -": "#dd8452"}
    for ax, clip in zip(axes[0], clips):
        rows = [j for j in jobs if j["clip"] == clip]
        labels = [f'{j["job"]}\n{j["tool"]}' + (f' ({j["backend"]})' if j["backend"] else "") for j in rows]
        fps = [j["fps"] for j in rows]
        cols = [colours.get(f'{j["tool"]} {j["backend"] or "-"}', "#999999") for j in rows]
        bars = ax.barh(range(len(rows)), fps, color=cols)
        ax.set_yticks(range(len(rows)), labels, fontsize=8)
        ax.invert_yaxis()
        ax.set_xlabel("frames/s")
        ax.set_title(f"{clip} ({data.get('codec', '')} {data.get('preset', '')})")
        for b, v in zip(bars, fps):
            ax.text(b.get_width(), b.get_y() + b.get_height() / 2, f" {v:.0f}", va="center", fontsize=8)
    fig.suptitle("streamblur-bench pipeline: frames/s per configuration")
    fig.tight_layout()
    fig.savefig(sys.argv[2], dpi=110)
    print(f"wrote {sys.argv[2]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
