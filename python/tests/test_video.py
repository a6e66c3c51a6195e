"""process_video: the pipeline from Python, on a tiny lossless clip made at test time."""

import pytest

import streamblur
import support


@pytest.fixture
def clip(tmp_path):
    path = tmp_path / "in.mkv"
    support.write_test_clip(path, width=64, height=48, frames=12, codec="ffv1")
    assert path.stat().st_size > 0
    return path


def test_round_trip_with_progress(clip, tmp_path):
    out = tmp_path / "out.mkv"
    calls = []
    stats = streamblur.process_video(clip, out, vf="gblur=sigma=2,boxblur=radius=1", codec="ffv1",
                                     progress=calls.append)
    assert out.stat().st_size > 0
    assert stats["frames"] == 12
    # backend="auto" takes the GPU exactly when one is usable (a broken driver must not pass as "cpu").
    assert stats["backend"] == ("cuda" if streamblur.cuda_available() else "cpu")
    assert "gblur" in stats["filters"]
    assert calls, "progress was never called"
    assert calls[-1]["final"] and calls[-1]["frames"] == 12
    assert all(c["frames"] <= 12 for c in calls)
    # The output decodes to the same number of frames.
    again = streamblur.process_video(out, tmp_path / "again.mkv", vf="", codec="ffv1")
    assert again["frames"] == 12


def test_cpu_backend_and_default_codec(clip, tmp_path):
    stats = streamblur.process_video(str(clip), str(tmp_path / "out.mkv"), vf="boxblur=1", codec="ffv1",
                                     backend="cpu")
    assert stats["backend"] == "cpu" and stats["frames"] == 12


def test_progress_exception_stops_and_propagates(clip, tmp_path):
    class Stop(Exception):
        pass

    def progress(p):
        raise Stop("user stopped")

    with pytest.raises(Stop, match="user stopped"):
        streamblur.process_video(clip, tmp_path / "out.mkv", codec="ffv1", progress=progress)
    # As after Ctrl-C: the frames done (at least the one before the first
    # progress call) are written as a finished file; no temporary is left.
    assert (tmp_path / "out.mkv").stat().st_size > 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.mkv", "out.mkv"]


@pytest.mark.parametrize("backend", ["cpu", "cuda"])
def test_progress_exception_mid_run_keeps_the_frames_done(backend, tmp_path, request):
    # The exception above usually comes from the final call (a 12-frame clip
    # ends within the first quarter second); here it comes from the first
    # call during the run, on each backend: the run stops early, the frames
    # done are in a finished file and the exception is raised. A fast machine
    # may finish the first clip before the first call: then a longer one.
    if backend == "cuda":
        request.getfixturevalue("gpu")  # skips without a GPU (fails with STREAMBLUR_REQUIRE_GPU=1)

    class Stop(Exception):
        pass

    for total, (w, h) in ((240, (160, 120)), (2400, (320, 240))):
        src, out = tmp_path / f"in{total}.mkv", tmp_path / f"out{total}.mkv"
        support.write_test_clip(src, width=w, height=h, frames=total, codec="ffv1")
        seen = []

        def progress(p):
            seen.append(p)
            if not p["final"]:
                raise Stop("user stopped")

        try:
            streamblur.process_video(src, out, vf="gblur=sigma=12", codec="ffv1", backend=backend, inflight=2,
                                     progress=progress)
        except Stop:
            pass
        else:
            assert [p["final"] for p in seen] == [True]
            continue  # ended before the first call during the run
        assert [p["final"] for p in seen] == [False], "no call after the one that raised"
        with streamblur.frames(str(out), device="cpu", backend="cpu") as it:
            written = sum(1 for _ in it)
        assert seen[0]["frames"] <= written <= total, "the frames done were written"
        assert not any(p.name.startswith(".") for p in tmp_path.iterdir()), "a temporary output was left"
        if written == total:
            continue  # every frame was already in flight when the call came
        return
    pytest.fail("every run ended before the first progress call during the run could stop it")


def test_bad_filter_spec(clip, tmp_path):
    with pytest.raises(ValueError, match="unknown|blurry"):
        streamblur.process_video(clip, tmp_path / "out.mkv", vf="blurry=2")


def test_unknown_encoder(clip, tmp_path):
    with pytest.raises(RuntimeError, match="nosuchcodec"):
        streamblur.process_video(clip, tmp_path / "out.mkv", codec="nosuchcodec")


def test_no_overwrite(clip, tmp_path):
    out = tmp_path / "out.mkv"
    out.write_bytes(b"keep")
    with pytest.raises(FileExistsError, match="already exists.*overwrite=True"):
        streamblur.process_video(clip, out, codec="ffv1", overwrite=False)
    assert out.read_bytes() == b"keep"


def test_image_sequence_in_and_out(tmp_path):
    # A pattern input reads every file; a pattern output writes every frame (o001.png ...), as ffmpeg does.
    (tmp_path / "in").mkdir()
    (tmp_path / "out").mkdir()
    support.write_test_clip(tmp_path / "in" / "f%03d.png", width=40, height=30, frames=5, codec="png",
                                pix_fmt="rgb24")
    assert sorted(p.name for p in (tmp_path / "in").iterdir()) == [f"f{i:03d}.png" for i in range(1, 6)]
    stats = streamblur.process_video(tmp_path / "in" / "f%03d.png", tmp_path / "out" / "o%03d.png",
                                     vf="boxblur=1", backend="cpu")
    assert stats["frames"] == 5
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == [f"o{i:03d}.png" for i in range(1, 6)]
    # The batch mode too: out_dir/<the pattern>.
    streamblur.process_videos([str(tmp_path / "in" / "f%03d.png")], out_dir=tmp_path / "batch", vf="boxblur=1",
                              backend="cpu")
    assert sorted(p.name for p in (tmp_path / "batch").iterdir()) == [f"f{i:03d}.png" for i in range(1, 6)]


def test_several_frames_into_one_image_is_an_error(clip, tmp_path):
    with pytest.raises(RuntimeError, match="more than one frame"):
        streamblur.process_video(clip, tmp_path / "one.png", backend="cpu")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.mkv"]


# ---- what process_video writes, read back by PyAV (its own FFmpeg build, no code shared with streamblur)

def _planes(frame):
    """The frame's planes as 2-D numpy arrays (odd sizes: chroma is ceil(w/2) x ceil(h/2))."""
    import numpy as np
    out = []
    for p in frame.planes:
        a = np.frombuffer(bytes(p), dtype=np.uint8).reshape(p.height, p.line_size)
        out.append(a[:, : p.width].copy())
    return out


def _decode(path):
    av = pytest.importorskip("av", reason="PyAV (apps/install-deps.sh installs it) decodes the outputs")
    with av.open(str(path)) as c:
        v = c.streams.video[0]
        frames = [(_planes(f), float(f.pts * f.time_base), f.format.name) for f in c.decode(v)]
    with av.open(str(path)) as c:
        audio = [(bytes(p), float(p.pts * p.time_base), float(p.duration * p.time_base))
                 for p in c.demux(c.streams.audio) if p.size] if c.streams.audio else []
    return frames, audio


@pytest.mark.parametrize("backend", ["cpu", "cuda"])
def test_process_video_pixels_pts_and_audio(tmp_path, backend, request):
    from conftest import assert_close_unbiased, reference_gaussian
    if backend == "cuda":
        request.getfixturevalue("gpu")
    src = tmp_path / "in.mkv"
    # Odd sizes (chroma 33x25), 9 frames, a PCM audio track copied packet for packet.
    support.write_test_clip(src, width=65, height=49, frames=9, codec="ffv1", audio_codec="pcm_s16le")
    out = tmp_path / "out.mkv"
    stats = streamblur.process_video(src, out, vf="gblur=sigma=1.5", codec="ffv1", backend=backend)
    assert stats["frames"] == 9 and stats["backend"] == backend
    fin, ain = _decode(src)
    fout, aout = _decode(out)
    assert len(fout) == len(fin) == 9
    for k, ((pin, tin, fmt_in), (pout, tout, fmt_out)) in enumerate(zip(fin, fout)):
        assert fmt_out == fmt_in == "yuv420p"
        assert tout == pytest.approx(tin, abs=1e-6), f"frame {k}: pts {tout} s, input {tin} s"
        assert [p.shape for p in pout] == [(49, 65), (25, 33), (25, 33)]
        # Every plane takes sigma in its own pixels, as in FFmpeg (gblur's chroma_scale=0).
        for plane, sigma in zip(range(3), (1.5, 1.5, 1.5)):
            assert_close_unbiased(pout[plane], reference_gaussian(pin[plane], sigma), f"frame {k} plane {plane}")
        assert not all((a == b).all() for a, b in zip(pout, pin)), "the blur changed nothing"
    # Audio: the same packets (bytes and times) in the output.
    assert ain, "the test clip has no audio"
    assert [a[0] for a in aout] == [a[0] for a in ain], "audio packets are not the input's bytes"
    assert [a[1] for a in aout] == pytest.approx([a[1] for a in ain], abs=1e-3)
    assert sum(a[2] for a in aout) == pytest.approx(sum(a[2] for a in ain), abs=1e-3)


def test_overwrite_default_agrees_with_the_cli(clip, tmp_path):
    # The CLI refuses an existing output without -y; so do process_video and process_videos by default.
    out = tmp_path / "out.mkv"
    out.write_bytes(b"keep")
    with pytest.raises(FileExistsError, match="already exists"):
        streamblur.process_video(clip, out, codec="ffv1")
    assert out.read_bytes() == b"keep"
    results = streamblur.process_videos([clip], [out], codec="ffv1", backend="cpu")
    assert not results[0]["ok"] and "already exists" in results[0]["error"]
    assert out.read_bytes() == b"keep"
    # overwrite=True replaces it with a complete output.
    stats = streamblur.process_video(clip, out, codec="ffv1", overwrite=True)
    assert stats["frames"] == 12 and out.read_bytes() != b"keep"


@pytest.mark.parametrize("backend", ["cpu", "cuda"])
def test_process_video_trims_like_the_cli(tmp_path, backend, request):
    # start/duration/frames are the CLI's -ss/-t/--frames: the frames of
    # [start, start + duration), shifted to begin at 0, and the audio packets
    # of the same span, shifted alike.
    if backend == "cuda":
        request.getfixturevalue("gpu")
    src = tmp_path / "in.mkv"
    support.write_test_clip(src, width=64, height=48, frames=30, codec="ffv1", fps=10, audio_codec="pcm_s16le")
    fin, ain = _decode(src)
    out = tmp_path / "out.mkv"
    stats = streamblur.process_video(src, out, vf="boxblur=1", codec="ffv1", backend=backend, start="0:01",
                                     duration=1.5)
    fout, aout = _decode(out)
    assert stats["frames"] == len(fout) == 15  # 10 fps: 1.0, 1.1, ... 2.4
    assert [f[1] for f in fout] == pytest.approx([round(0.1 * k, 1) for k in range(15)], abs=1e-3)
    kept = [a for a in ain if 1.0 <= a[1] < 2.5]
    assert kept and [a[0] for a in aout] == [a[0] for a in kept]
    assert [a[1] for a in aout] == pytest.approx([a[1] - 1.0 for a in kept], abs=1e-3)

    out2 = tmp_path / "out2.mkv"
    assert streamblur.process_video(src, out2, vf="", codec="ffv1", backend=backend, frames=4)["frames"] == 4
    fout2, aout2 = _decode(out2)
    assert [f[1] for f in fout2] == pytest.approx([f[1] for f in fin[:4]], abs=1e-3)  # no start: times kept
    assert aout2 and max(a[1] for a in aout2) < fin[4][1]

    for bad, err in ((dict(start=-1), ValueError), (dict(start="abc"), ValueError), (dict(duration=0), ValueError),
                     (dict(frames=0), ValueError), (dict(frames=1.5), TypeError), (dict(start=99), RuntimeError)):
        with pytest.raises(err):
            streamblur.process_video(src, tmp_path / "bad.mkv", codec="ffv1", backend=backend, **bad)
        assert not (tmp_path / "bad.mkv").exists()
