"""Python and the command line agree: defaults, FFmpeg's log, frames' formats
and trimming, error locations, and ``python -m streamblur``."""
import os
import subprocess
import sys

import numpy as np
import pytest

import streamblur
from support import write_test_clip


def planes_of(path, **kw):
    return [[np.array(p) for p in f.planes] for f in streamblur.frames(path, device="cpu", **kw)]


@pytest.fixture
def clip(tmp_path):
    src = tmp_path / "in.mkv"
    write_test_clip(src, width=33, height=25, frames=6)  # odd sizes: chroma planes round up
    return src


def test_process_video_without_a_chain_copies_as_the_cli_does(clip, tmp_path):
    out = tmp_path / "out.mkv"
    stats = streamblur.process_video(clip, out, codec="ffv1", backend="cpu")
    assert stats["filters"] == ""
    got, want = planes_of(out), planes_of(clip)
    assert len(got) == len(want) == 6
    for g, w in zip(got, want):
        for a, b in zip(g, w):
            assert np.array_equal(a, b), "no chain must mean no filter"


def test_process_videos_without_a_chain_copies(clip, tmp_path):
    [r] = streamblur.process_videos([clip], out_dir=tmp_path / "o", codec="ffv1", backend="cpu")
    assert r["ok"] and r["filters"] == ""
    assert np.array_equal(planes_of(r["output"])[0][0], planes_of(clip)[0][0])


def _run_python(code, *args):
    env = dict(os.environ, PYTHONPATH=os.path.dirname(__file__) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.run([sys.executable, "-c", code, *map(str, args)], capture_output=True, text=True, env=env,
                          timeout=120, check=False)


ENCODE = """
import sys, streamblur
from support import write_test_clip
write_test_clip(sys.argv[1], width=64, height=48, frames=4)
if len(sys.argv) > 3:
    streamblur.set_log_level(sys.argv[3])
streamblur.process_video(sys.argv[1], sys.argv[2], codec="libx264", backend="cpu")
"""


def test_ffmpeg_log_is_quiet_unless_asked(tmp_path):
    quiet = _run_python(ENCODE, tmp_path / "a.mkv", tmp_path / "a.mp4")
    assert quiet.returncode == 0, quiet.stderr
    assert "x264" not in quiet.stderr and "libx264" not in quiet.stderr, quiet.stderr
    info = _run_python(ENCODE, tmp_path / "b.mkv", tmp_path / "b.mp4", "info")
    assert info.returncode == 0, info.stderr
    assert "libx264" in info.stderr, "set_log_level('info') shows FFmpeg's own lines"


@pytest.mark.parametrize("bad, error", [("loud", ValueError), (99, ValueError), (1.5, TypeError), (None, TypeError)])
def test_set_log_level_refuses_what_it_cannot_mean(bad, error):
    with pytest.raises(error):
        streamblur.set_log_level(bad)


def bt601_rgb(y, u, v):
    """Limited-range BT.601 YUV to RGB, the independent reference for rgb24."""
    y = (y.astype(np.float64) - 16) * 255 / 219
    u = (u.astype(np.float64) - 128) * 255 / 224
    v = (v.astype(np.float64) - 128) * 255 / 224
    r = y + 1.402 * v
    g = y - 0.344136 * u - 0.714136 * v
    b = y + 1.772 * u
    return np.clip(np.rint(np.stack([r, g, b], axis=-1)), 0, 255)


def test_frames_in_rgb24_match_an_independent_conversion(tmp_path):
    src = tmp_path / "in444.mkv"
    write_test_clip(src, width=35, height=21, frames=3, pix_fmt="yuv444p")  # no chroma to interpolate
    yuv = planes_of(src)
    rgb = [f[0] for f in planes_of(src, format="rgb24")]
    assert len(rgb) == 3
    for (y, u, v), got in zip(yuv, rgb):
        assert got.shape == (21, 35, 3) and got.dtype == np.uint8
        diff = got.astype(np.int64) - bt601_rgb(y, u, v).astype(np.int64)
        assert np.abs(diff).max() <= 3, np.abs(diff).max()
        assert abs(diff.mean()) < 0.5, diff.mean()  # no bias
        for c in range(3):
            assert abs(diff[..., c].mean()) < 0.75, (c, diff[..., c].mean())


def test_frames_in_gray_and_their_own_format(clip):
    own = planes_of(clip)
    gray = planes_of(clip, format="gray")
    same = planes_of(clip, format="yuv420p")
    assert len(gray) == len(own) == len(same) == 6
    for g, o, s in zip(gray, own, same):
        assert len(g) == 1 and g[0].shape == (25, 33)
        assert all(np.array_equal(a, b) for a, b in zip(o, s)), "the processing format is passed through"
        assert np.array_equal(g[0], o[0]), "gray is the luma plane as stored, as swscale and PyAV give it"


def test_frames_format_errors(clip):
    with pytest.raises(ValueError, match="format must be one of"):
        list(streamblur.frames(clip, device="cpu", format="nosuch"))
    with pytest.raises(TypeError, match="format"):
        streamblur.frames(clip, device="cpu", format=3)


def test_frames_start_and_duration_trim_as_process_video(tmp_path):
    src = tmp_path / "in.mkv"
    write_test_clip(src, width=32, height=24, frames=30, fps=10)
    every = planes_of(src)
    part = list(streamblur.frames(src, device="cpu", start=1.0, duration="0.5"))
    assert len(part) == 5
    assert np.array_equal(np.array(part[0].planes[0]), every[10][0])
    assert part[0].pts == pytest.approx(0.0, abs=0.06)  # timestamps start near 0, as the CLI's -ss
    with pytest.raises(ValueError):
        streamblur.frames(src, device="cpu", duration=0)


def test_errors_carry_their_source_location_apart(tmp_path):
    bad = tmp_path / "bad.mp4"
    bad.write_bytes(bytes(np.random.default_rng(1).integers(0, 256, 4096, dtype=np.uint8)))
    with pytest.raises(RuntimeError) as e:
        streamblur.process_video(bad, tmp_path / "out.mkv")
    message = str(e.value)
    assert ".cpp:" not in message and "bad.mp4" in message, message
    assert getattr(e.value, "location", "").startswith("reader.cpp:"), vars(e.value)


def test_python_dash_m_is_the_command_line(clip, tmp_path):
    out = tmp_path / "out.mkv"
    r = subprocess.run([sys.executable, "-m", "streamblur", "-i", str(clip), "-vf", "boxblur=1", "-c:v", "ffv1",
                        str(out), "-q"], capture_output=True, text=True, timeout=120, check=False)
    assert r.returncode == 0, r.stderr
    assert len(planes_of(out)) == 6
    again = subprocess.run([sys.executable, "-m", "streamblur", str(clip), str(out)], capture_output=True, text=True,
                           timeout=120, check=False)
    assert again.returncode == 1 and "use -y" in again.stderr, again.stderr
    usage = subprocess.run([sys.executable, "-m", "streamblur", "--help"], capture_output=True, text=True,
                           timeout=120, check=False)
    assert usage.returncode == 0 and "--vf" in usage.stdout


def test_process_video_segments_give_the_plain_runs_frames(tmp_path):
    src = tmp_path / "long.mkv"
    write_test_clip(src, width=33, height=25, frames=40)  # ffv1: a keyframe every 12 frames
    one, three = tmp_path / "one.mkv", tmp_path / "three.mkv"
    streamblur.process_video(src, one, "gblur=sigma=1.5", codec="ffv1", backend="cpu")
    stats = streamblur.process_video(src, three, "gblur=sigma=1.5", codec="ffv1", backend="cpu", segments=3)
    assert stats["segments"] == 3 and stats["frames"] == 40
    assert stats["scan_s"] >= 0 and stats["join_s"] >= 0
    got, want = planes_of(three), planes_of(one)
    assert len(got) == len(want) == 40
    for i, (g, w) in enumerate(zip(got, want)):
        for a, b in zip(g, w):
            assert np.array_equal(a, b), f"frame {i}"


def test_process_videos_runs_each_file_in_segments(tmp_path):
    srcs = [tmp_path / "a.mkv", tmp_path / "b.mkv"]
    for i, src in enumerate(srcs):
        write_test_clip(src, width=33 + 2 * i, height=25, frames=40)  # a keyframe every 12 frames
    plain = [tmp_path / "plain-a.mkv", tmp_path / "plain-b.mkv"]
    seg = [tmp_path / "seg-a.mkv", tmp_path / "seg-b.mkv"]
    for src, out in zip(srcs, plain):
        streamblur.process_video(src, out, "gblur=sigma=1.5", codec="ffv1", backend="cpu")
    results = streamblur.process_videos(srcs, seg, vf="gblur=sigma=1.5", codec="ffv1", backend="cpu", segments=3)
    assert [r["ok"] for r in results] == [True, True], results
    assert [r["segments"] for r in results] == [3, 3]
    for got_path, want_path in zip(seg, plain):
        got, want = planes_of(got_path), planes_of(want_path)
        assert len(got) == len(want) == 40
        for i, (g, w) in enumerate(zip(got, want)):
            for a, b in zip(g, w):
                assert np.array_equal(a, b), f"{got_path.name} frame {i}"
    with pytest.raises(ValueError, match="segments"):
        streamblur.process_videos(srcs, seg, segments=65, overwrite=True)


def test_frames_in_segments_come_in_order(tmp_path):
    src = tmp_path / "long.mkv"
    write_test_clip(src, width=33, height=25, frames=40)  # a keyframe every 12 frames
    for trim in ({}, dict(start=0.1)):
        with streamblur.frames(src, "gblur=sigma=1.5", device="cpu", backend="cpu", **trim) as it:
            want = [(f.index, f.pts, [p.copy() for p in f.planes]) for f in it]
        with streamblur.frames(src, "gblur=sigma=1.5", backend="cpu", segments=3, **trim) as it:
            got = [(f.index, f.pts, [p.copy() for p in f.planes]) for f in it]
            stats = it.stats
        assert stats["segments"] == 3 and stats["frames"] == len(want) >= 37
        assert [g[:2] for g in got] == [w[:2] for w in want]
        for (i, _, g), (_, _, w) in zip(got, want):
            for a, b in zip(g, w):
                assert isinstance(a, np.ndarray) and np.array_equal(a, b), f"frame {i}"
    with pytest.raises(ValueError, match="host memory only"):
        streamblur.frames(src, device="cuda", segments=2)


def test_process_video_segments_refuse_what_they_do_not_go_with(tmp_path):
    src = tmp_path / "in.mkv"
    write_test_clip(src, width=33, height=25, frames=12)
    with pytest.raises(ValueError, match="segments must be between 1 and 64"):
        streamblur.process_video(src, tmp_path / "o.mkv", segments=0)
    assert not (tmp_path / "o.mkv").exists()


def test_segments_auto_is_accepted_and_says_what_it_chose(tmp_path, capfd):
    src = tmp_path / "in.mkv"
    write_test_clip(src, width=33, height=25, frames=40)
    one, auto = tmp_path / "one.mkv", tmp_path / "auto.mkv"
    streamblur.process_video(src, one, "gblur=sigma=1.5", codec="ffv1", backend="cpu")
    capfd.readouterr()
    stats = streamblur.process_video(src, auto, "gblur=sigma=1.5", codec="ffv1", backend="cpu", segments="auto")
    assert stats["segments"] == 1 and stats["frames"] == 40  # 40 frames make no span of 240
    assert "segments: one segment (auto: spans of 240 frames or more in 40)" in capfd.readouterr().err
    for i, (g, w) in enumerate(zip(planes_of(auto), planes_of(one))):
        for a, b in zip(g, w):
            assert np.array_equal(a, b), f"frame {i}"
    with streamblur.frames(src, "gblur=sigma=1.5", backend="cpu", segments="auto") as it:
        assert sum(1 for _ in it) == 40
    with pytest.raises(ValueError, match="segments must be 'auto' or an integer between 1 and 64, got 'many'"):
        streamblur.process_video(src, tmp_path / "o.mkv", segments="many")
    with pytest.raises(ValueError, match="segments must be between 1 and 64, got 0"):
        streamblur.frames(src, segments=0)
    assert not (tmp_path / "o.mkv").exists()


def test_process_video_segments_trim_as_the_plain_run(tmp_path):
    src = tmp_path / "long.mkv"
    write_test_clip(src, width=33, height=25, frames=40)  # ffv1: a keyframe every 12 frames
    one, three = tmp_path / "one.mkv", tmp_path / "three.mkv"
    trim = dict(start=0.1, frames=30)  # frames 3 to 32 of the clip's 30 a second
    streamblur.process_video(src, one, "gblur=sigma=1.5", codec="ffv1", backend="cpu", **trim)
    stats = streamblur.process_video(src, three, "gblur=sigma=1.5", codec="ffv1", backend="cpu", segments=3, **trim)
    assert stats["segments"] >= 2 and stats["frames"] == 30
    got, want = planes_of(three), planes_of(one)
    assert len(got) == len(want) == 30
    for i, (g, w) in enumerate(zip(got, want)):
        for a, b in zip(g, w):
            assert np.array_equal(a, b), f"frame {i}"
