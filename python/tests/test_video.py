"""process_video: the pipeline from Python, on a tiny lossless clip made at test time."""

import pytest

import streamblur


@pytest.fixture
def clip(tmp_path):
    path = tmp_path / "in.mkv"
    streamblur._write_test_clip(path, width=64, height=48, frames=12, codec="ffv1")
    assert path.stat().st_size > 0
    return path


def test_round_trip_with_progress(clip, tmp_path):
    out = tmp_path / "out.mkv"
    calls = []
    stats = streamblur.process_video(clip, out, vf="gblur=sigma=2,boxblur=radius=1", codec="ffv1",
                                     progress=calls.append)
    assert out.stat().st_size > 0
    assert stats["frames"] == 12
    assert stats["backend"] in ("cpu", "cuda")
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


def test_bad_filter_spec(clip, tmp_path):
    with pytest.raises(ValueError, match="unknown|blurry"):
        streamblur.process_video(clip, tmp_path / "out.mkv", vf="blurry=2")


def test_unknown_encoder(clip, tmp_path):
    with pytest.raises(RuntimeError, match="nosuchcodec"):
        streamblur.process_video(clip, tmp_path / "out.mkv", codec="nosuchcodec")


def test_no_overwrite(clip, tmp_path):
    out = tmp_path / "out.mkv"
    out.write_bytes(b"keep")
    with pytest.raises(RuntimeError, match="already exists"):
        streamblur.process_video(clip, out, codec="ffv1", overwrite=False)
    assert out.read_bytes() == b"keep"


def test_image_sequence_in_and_out(tmp_path):
    # A pattern input reads every file; a pattern output writes every frame (o001.png ...), as ffmpeg does.
    (tmp_path / "in").mkdir()
    (tmp_path / "out").mkdir()
    streamblur._write_test_clip(tmp_path / "in" / "f%03d.png", width=40, height=30, frames=5, codec="png",
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
