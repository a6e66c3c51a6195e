#!/usr/bin/env python3
"""Charts of frames/s from streamblur-bench's JSON.

    python3 apps/bench_chart.py bench.json bench.png

`pipeline --json`: a bar per configuration and clip (NVDEC rows marked).
`scale --json`: aggregate frames/s against the number of concurrent streams,
one line per job and decode mode. A file holding both gets both.
"""
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

COLOURS = {
    "streamblur cuda cpu": "#76b900",
    "streamblur cuda nvdec": "#2f6b00",
    "streamblur cpu cpu": "#4c72b0",
    "streamblur - cpu": "#8c8c8c",
    "ffmpeg - cpu": "#dd8452",
    "ffmpeg - nvdec": "#a0522d",
}


def pipeline_axes(data, axes):
    jobs = data["jobs"]
    clips = list(dict.fromkeys(j["clip"] for j in jobs))
    for ax, clip in zip(axes, clips):
        rows = [j for j in jobs if j["clip"] == clip]
        labels = []
        for j in rows:
            decoder = j.get("decoder", "cpu")
            extra = [j["backend"]] if j["backend"] else []
            if decoder == "nvdec":
                extra.append("NVDEC" if j["tool"] == "streamblur" else "-hwaccel cuda")
            labels.append(f'{j["job"]}\n{j["tool"]}' + (f' ({", ".join(extra)})' if extra else ""))
        fps = [j["fps"] for j in rows]
        cols = [COLOURS.get(f'{j["tool"]} {j["backend"] or "-"} {j.get("decoder", "cpu")}', "#999999") for j in rows]
        bars = ax.barh(range(len(rows)), fps, color=cols)
        ax.set_yticks(range(len(rows)), labels, fontsize=8)
        ax.invert_yaxis()
        ax.set_xlabel("frames/s")
        ax.set_title(f"{clip} ({data.get('codec', '')} {data.get('preset', '')})")
        for b, v in zip(bars, fps):
            ax.text(b.get_width(), b.get_y() + b.get_height() / 2, f" {v:.0f}", va="center", fontsize=8)
    return len(clips)


def scale_axes(scale, ax):
    groups = {}
    for r in scale["rows"]:
        if r["skipped"] or r["failed"]:
            continue
        groups.setdefault(f'{r["job"]} ({r["tool"]}, {r["decode"]} decode)', []).append((r["streams"], r["fps"]))
    for label, points in groups.items():
        points.sort()
        ax.plot([p[0] for p in points], [p[1] for p in points], marker="o", label=label)
    if "compare" in scale:
        c = scale["compare"]
        for key, marker in (("one_device", "s"), ("all_devices", "D")):
            r = c[key]
            ax.plot([r["streams"]], [r["fps"]], marker=marker, linestyle="none",
                    label=f'chain-null {r["decode"]}, devices {",".join(map(str, r["devices"]))}')
    ax.axhline(2000, color="#cc0000", linewidth=0.8, linestyle="--", label="P7 target (2000)")
    ax.set_xscale("log", base=2)
    counts = sorted({r["streams"] for r in scale["rows"] if not r["skipped"]})
    if counts:
        ax.set_xticks(counts, [str(c) for c in counts])
    ax.set_xlabel("concurrent streams")
    ax.set_ylabel("aggregate frames/s")
    devices = ",".join(map(str, scale.get("devices", []))) or "-"
    ax.set_title(f'scale: {scale["frames_per_stream"]} frames per stream, backend {scale["backend"]}, devices {devices}')
    ax.legend(fontsize=7)
    ax.grid(True, alpha=0.3)


def main() -> int:
    if len(sys.argv) != 3:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    with open(sys.argv[1]) as f:
        data = json.load(f)
    clips = len(dict.fromkeys(j["clip"] for j in data["jobs"])) if "jobs" in data else 0
    panels = clips + (1 if "scale" in data else 0)
    if panels == 0:
        print("no pipeline jobs or scale rows in " + sys.argv[1], file=sys.stderr)
        return 1
    fig, axes = plt.subplots(1, panels, figsize=(6.5 * panels, 4.8), squeeze=False)
    if clips:
        pipeline_axes(data, axes[0][:clips])
    if "scale" in data:
        scale_axes(data["scale"], axes[0][clips])
    fig.suptitle("streamblur-bench: frames/s per configuration")
    fig.tight_layout()
    fig.savefig(sys.argv[2], dpi=110)
    print(f"wrote {sys.argv[2]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
