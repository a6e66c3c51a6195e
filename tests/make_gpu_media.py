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


def hevc10(path, w=258, h=146, frames=10, seed=1):
    rng = np.random.default_rng(seed)
    with av.open(path, "w") as out:
        s = out.add_stream("libx265", rate=30)
        s.width, s.height, s.pix_fmt = w, h, "yuv420p10le"
        s.options = {"x265-params": "log-level=error"}
        for i in range(frames):
            frame = av.VideoFrame(w, h, "yuv420p10le")
            for plane, (pw, ph) in zip(frame.planes, [(w, h)] + [((w + 1) // 2, (h + 1) // 2)] * 2):
                rows = np.zeros((ph, plane.line_size // 2), np.uint16)
                rows[:, :pw] = rng.integers(200, 800, (ph, pw)) + 20 * i
                plane.update(rows.tobytes())
            frame.pts = i
            out.mux(s.encode(frame))
        out.mux(s.encode())


def hevc_cra(path, w=160, h=144, frames=50, seed=2):
    rng = np.random.default_rng(seed)
    with av.open(path, "w") as out:
        s = out.add_stream("libx265", rate=30)
        s.width, s.height, s.pix_fmt = w, h, "yuv420p"
        s.options = {"x265-params": "keyint=12:min-keyint=12:scenecut=0:bframes=3:open-gop=1:log-level=error"}
        for i in range(frames):
            frame = av.VideoFrame(w, h, "yuv420p")
            for plane, (pw, ph) in zip(frame.planes, [(w, h)] + [(w // 2, h // 2)] * 2):
                rows = np.zeros((ph, plane.line_size), np.uint8)
                rows[:, :pw] = rng.integers(40, 200, (ph, pw)) + i
                plane.update(rows.tobytes())
            frame.pts = i
            out.mux(s.encode(frame))
        out.mux(s.encode())


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    os.makedirs(sys.argv[1], exist_ok=True)
    hevc10(os.path.join(sys.argv[1], "hevc10.mkv"))
    hevc_cra(os.path.join(sys.argv[1], "cra.mkv"))
