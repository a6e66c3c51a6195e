#!/usr/bin/env python3
"""Writes the clips that the tests take from $STREAMBLUR_TEST_MEDIA_DIR where
the library's FFmpeg lacks their encoder (the GPU machine's build has no HEVC
encoder), encoded with PyAV's own FFmpeg (libx265):
- hevc10.mkv, 258x146, 10 frames of 10-bit 4:2:0 noise in HEVC, for
  Clips/PipelineNvdec.SameOutputAsCpuDecodeWithinOne/Hevc10Bit;
- cra.mkv, 160x144, 50 frames of 8-bit noise in HEVC with a CRA picture
  every 12 frames and RASL pictures after it (open GOPs), for the
  segmented-run tests (tests/test_span_run.cpp, kSpanCases).

    python3 tests/make_gpu_media.py DIR
"""
import os
import sys

import av
import numpy as np


def hevc_noise(path, w, h, frames, seed, pix_fmt, values, step, x265_params):
    """`frames` frames of noise in `values` (low, high), brightened by `step` a frame, in HEVC."""
    rng = np.random.default_rng(seed)
    dtype = np.uint16 if pix_fmt.endswith("10le") else np.uint8
    with av.open(path, "w") as out:
        s = out.add_stream("libx265", rate=30)
        s.width, s.height, s.pix_fmt = w, h, pix_fmt
        s.options = {"x265-params": x265_params + ":log-level=error" if x265_params else "log-level=error"}
        for i in range(frames):
            frame = av.VideoFrame(w, h, pix_fmt)
            for plane, (pw, ph) in zip(frame.planes, [(w, h)] + [((w + 1) // 2, (h + 1) // 2)] * 2):
                rows = np.zeros((ph, plane.line_size // dtype().itemsize), dtype)
                rows[:, :pw] = rng.integers(*values, (ph, pw)) + step * i
                plane.update(rows.tobytes())
            frame.pts = i
            out.mux(s.encode(frame))
        out.mux(s.encode())


def hevc10(path):
    hevc_noise(path, 258, 146, 10, 1, "yuv420p10le", (200, 800), 20, "")


def hevc_cra(path):
    hevc_noise(path, 160, 144, 50, 2, "yuv420p", (40, 200), 1,
               "keyint=12:min-keyint=12:scenecut=0:bframes=3:open-gop=1")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    os.makedirs(sys.argv[1], exist_ok=True)
    hevc10(os.path.join(sys.argv[1], "hevc10.mkv"))
    hevc_cra(os.path.join(sys.argv[1], "cra.mkv"))
