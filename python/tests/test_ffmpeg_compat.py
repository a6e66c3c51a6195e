"""A chain written for FFmpeg means the same in streamblur: the ffmpeg program
runs each spec below on the same input, and streamblur's output must lie
within the row's PSNR of it on every plane, with no bias.

The ffmpeg program: $STREAMBLUR_FFMPEG, else ``ffmpeg`` on PATH (CI installs
Debian's; the GPU machine has ../shared/gpu/peer/ffmpeg). Without one the
tests skip, except under CI=true or STREAMBLUR_REQUIRE_FFMPEG=1, where they
fail.
"""
import os
import re
import shutil
import subprocess

import numpy as np
import pytest

import streamblur

FFMPEG = os.environ.get("STREAMBLUR_FFMPEG") or shutil.which("ffmpeg")
REQUIRE_FFMPEG = any(os.environ.get(k, "") not in ("", "0", "false") for k in ("CI", "STREAMBLUR_REQUIRE_FFMPEG"))

# (spec, PSNR floor in dB on every plane). boxblur and unsharp compute what
# FFmpeg's do (they differ by FFmpeg's integer rounding per pass and its
# mirrored edges); gblur is exact where FFmpeg's is an IIR approximation
# whose distance shrinks with steps (docs/filters.md gives it), so the rows
# take steps=6. unsharp's rows lie 55 dB or more from FFmpeg's: their floor is
# higher, so that a wrong amount (1.2 for 1.0) fails.
CASES = [
    ("boxblur", 45),
    ("boxblur=2:1", 45),
    ("boxblur=5:3:2:1", 45),
    ("boxblur=lr=1:lp=4:cr=0", 45),
    ("boxblur=luma_radius=3:luma_power=1:chroma_radius=1:chroma_power=2", 45),
    ("unsharp", 52),
    ("unsharp=5:5:1.0", 52),
    ("unsharp=3:3:1.5:3:3:1.5", 52),
    ("unsharp=7:3:-1:5:9:0.8", 52),
    ("unsharp=luma_msize_x=13:luma_msize_y=13:luma_amount=2", 52),
    ("gblur=sigma=2:steps=6", 45),
    ("gblur=sigma=3:steps=6:planes=1", 45),
    ("gblur=sigma=1.5:steps=6:sigmaV=4", 42),  # FFmpeg's approximation is farther from exact at sigmaV 4
]


def _need_ffmpeg():
    if FFMPEG:
        return FFMPEG
    if REQUIRE_FFMPEG:
        pytest.fail("no ffmpeg program (set STREAMBLUR_FFMPEG or install ffmpeg)")
    pytest.skip("no ffmpeg program")


_FILTERS = None


def _need_filter(spec):
    """The ffmpeg program must have the spec's filter (the GPU machine's has no unsharp)."""
    global _FILTERS
    if _FILTERS is None:
        r = subprocess.run([_need_ffmpeg(), "-hide_banner", "-filters"], capture_output=True, text=True, timeout=60,
                           check=False)
        _FILTERS = {line.split()[1] for line in r.stdout.splitlines() if len(line.split()) > 2}
    name = spec.split("=")[0]
    if name not in _FILTERS:
        if REQUIRE_FFMPEG:
            pytest.fail(f"the ffmpeg program has no {name} filter")
        pytest.skip(f"the ffmpeg program has no {name} filter")


def _ffmpeg(*args):
    r = subprocess.run([_need_ffmpeg(), "-nostdin", "-v", "error", "-y", *map(str, args)], capture_output=True,
                       text=True, timeout=120, check=False)
    assert r.returncode == 0, r.stderr


def _size(path):
    """The video's width and height, as the ffmpeg program reports them."""
    r = subprocess.run([_need_ffmpeg(), "-nostdin", "-hide_banner", "-i", str(path)], capture_output=True, text=True,
                       timeout=60, check=False)
    m = re.search(r"Stream #\S+: Video: .*?, (\d+)x(\d+)", r.stderr)
    assert m, r.stderr
    return int(m.group(1)), int(m.group(2))


def _planes(path):
    """Every yuv420p frame's planes, decoded by the ffmpeg program (not streamblur)."""
    width, height = _size(path)
    r = subprocess.run([_need_ffmpeg(), "-nostdin", "-v", "error", "-i", str(path), "-f", "rawvideo", "-pix_fmt",
                        "yuv420p", "-"], capture_output=True, timeout=120, check=False)
    assert r.returncode == 0, r.stderr.decode(errors="replace")
    cw, ch = (width + 1) // 2, (height + 1) // 2
    sizes = [(height, width), (ch, cw), (ch, cw)]
    frame_bytes = sum(h * w for h, w in sizes)
    assert len(r.stdout) % frame_bytes == 0, f"{path}: {len(r.stdout)} bytes, not whole {width}x{height} frames"
    data = np.frombuffer(r.stdout, np.uint8)
    out = []
    for start in range(0, len(data), frame_bytes):
        planes, at = [], start
        for h, w in sizes:
            planes.append(data[at:at + h * w].reshape(h, w).astype(np.float64))
            at += h * w
        out.append(planes)
    return out


@pytest.fixture(scope="module")
def source(tmp_path_factory):
    """FFmpeg's own test pattern at an odd size (chroma planes round up)."""
    path = tmp_path_factory.mktemp("compat") / "src.mkv"
    _ffmpeg("-f", "lavfi", "-i", "testsrc2=size=320x240:rate=25", "-vf", "scale=321:241", "-frames:v", "8",
            "-pix_fmt", "yuv420p", "-c:v", "rawvideo", path)  # (testsrc2 itself rounds sizes down to even)
    assert _size(path) == (321, 241)
    return path


@pytest.fixture(params=["cpu", "cuda"])
def backend(request):
    if request.param == "cuda" and not streamblur.cuda_available():
        request.getfixturevalue("gpu")  # skips, or fails under STREAMBLUR_REQUIRE_GPU=1
    return request.param


@pytest.mark.parametrize("spec, floor", CASES)
def test_ffmpeg_spec_means_what_ffmpeg_does(source, backend, tmp_path, spec, floor):
    _need_filter(spec)
    want_path, got_path = tmp_path / "ffmpeg.mkv", tmp_path / "streamblur.mkv"
    # rawvideo: the GPU machine's peer ffmpeg has no ffv1 decoder.
    _ffmpeg("-i", source, "-vf", spec, "-c:v", "rawvideo", want_path)
    streamblur.process_video(source, got_path, spec, codec="rawvideo", backend=backend, hwdec="none")
    want, got, src = _planes(want_path), _planes(got_path), _planes(source)
    assert len(got) == len(want) == 8
    for n, (g, w, s) in enumerate(zip(got, want, src)):
        for p, (gp, wp, sp) in enumerate(zip(g, w, s)):
            where = f"{spec} ({backend}): frame {n}, plane {p}"
            assert gp.shape == wp.shape, where
            if np.array_equal(wp, sp):  # FFmpeg left the plane alone: so must streamblur
                assert np.array_equal(gp, sp), where + ": FFmpeg leaves this plane untouched"
                continue
            mse = float(np.mean((gp - wp) ** 2))
            psnr = float("inf") if mse == 0 else 10 * np.log10(255.0 ** 2 / mse)
            assert psnr >= floor, f"{where}: {psnr:.2f} dB from FFmpeg's, below {floor}"
            assert abs(float(np.mean(gp - wp))) < 0.25, f"{where}: biased by {np.mean(gp - wp):+.3f}"
            assert not np.array_equal(gp, sp), where + ": FFmpeg filters this plane; streamblur left it"


@pytest.mark.parametrize("spec, hint", [
    ("boxblur=radius=2:lr=3", "radius"),
    ("unsharp=sigma=2:lx=5", "sigma"),
    ("boxblur=chroma_scale=0", "radius"),
    ("unsharp=4:4:1", "odd"),
])
def test_mixing_streamblur_and_ffmpeg_options_is_refused(spec, hint):
    with pytest.raises(ValueError, match=hint):
        streamblur.Chain(spec)
