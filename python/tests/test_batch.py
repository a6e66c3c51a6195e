"""streamblur.process_videos (run_batch), and process_video's hwdec / device
arguments and statistics. Lossless FFV1 clips made at test time, so the
outputs can be compared with the frames of a single run."""

from pathlib import Path

import numpy as np
import pytest

import streamblur
import support

SPEC = "gblur=sigma=2,boxblur=radius=1"


def make_clips(tmp_path, n, frames=6, width=33, height=17):
    paths = []
    for i in range(n):
        p = tmp_path / f"in{i}.mkv"
        support.write_test_clip(p, width=width + 2 * i, height=height, frames=frames + i, codec="ffv1", noise=True)
        paths.append(p)
    return paths


def planes_of(path, vf="", **kw):
    return [[np.array(p) for p in f.planes] for f in streamblur.frames(path, vf, device="cpu", **kw)]


def assert_same_frames(a, b):
    assert len(a) == len(b) > 0
    for fa, fb in zip(a, b):
        for pa, pb in zip(fa, fb):
            np.testing.assert_array_equal(pa, pb)


def test_cpu_batch_with_one_bad_file(tmp_path):
    good = make_clips(tmp_path, 3)
    missing = tmp_path / "missing.mkv"
    junk = tmp_path / "junk.mkv"
    junk.write_bytes(b"this is not a video" * 100)
    inputs = [good[0], missing, good[1], junk, good[2]]
    outputs = [tmp_path / f"out{i}.mkv" for i in range(len(inputs))]
    calls = []
    results = streamblur.process_videos(inputs, outputs, vf=SPEC, codec="ffv1", backend="cpu", jobs=2,
                                        progress=calls.append)
    assert [r["input"] for r in results] == [str(p) for p in inputs]  # in the order given
    assert [r["output"] for r in results] == [str(p) for p in outputs]
    assert [r["ok"] for r in results] == [True, False, True, False, True]
    for r, src in zip(results, inputs):
        assert r["device"] == -1  # the CPU backend
        if r["ok"]:
            assert "error" not in r
            assert r["backend"] == "cpu" and "gblur" in r["filters"]
            assert r["frames"] == len(planes_of(src))
            # The output holds the filtered frames of a single run (FFV1 is lossless).
            assert_same_frames(planes_of(r["output"]), planes_of(src, SPEC, backend="cpu"))
        else:
            assert src.name in r["error"]
            assert "\n" not in r["error"]
            assert not Path(r["output"]).exists()  # a failed file leaves no output
    assert calls and calls[-1]["final"]
    last = calls[-1]
    assert last["files_total"] == 5 and last["files_done"] == 5 and last["files_failed"] == 2
    assert last["frames"] == sum(r["frames"] for r in results if r["ok"])


def test_out_dir_and_defaults(tmp_path):
    clips = make_clips(tmp_path, 2)
    out_dir = tmp_path / "blurred" / "nested"
    results = streamblur.process_videos(clips, out_dir=out_dir, vf="boxblur=radius=2", codec="ffv1", backend="cpu")
    assert all(r["ok"] for r in results), results
    for r, src in zip(results, clips):
        assert r["output"] == str(out_dir / src.name)
        assert (out_dir / src.name).stat().st_size > 0
    assert streamblur.process_videos([], out_dir=out_dir) == []


def test_bad_arguments_raise_value_error(tmp_path):
    clips = make_clips(tmp_path, 2)
    outs = [tmp_path / "a.mkv", tmp_path / "b.mkv"]
    with pytest.raises(ValueError, match="outputs"):
        streamblur.process_videos(clips, outs[:1])
    with pytest.raises(ValueError, match="not both"):
        streamblur.process_videos(clips, outs, out_dir=tmp_path)
    with pytest.raises(ValueError, match="out_dir"):
        streamblur.process_videos(clips)
    with pytest.raises(ValueError, match="jobs"):
        streamblur.process_videos(clips, outs, jobs=0)
    with pytest.raises(ValueError, match="blurry"):
        streamblur.process_videos(clips, outs, vf="blurry=1")
    with pytest.raises(ValueError, match="backend"):
        streamblur.process_videos(clips, outs, backend="gpu")
    with pytest.raises(ValueError, match="hwdec"):
        streamblur.process_videos(clips, outs, hwdec="vdpau")
    with pytest.raises(ValueError, match="'x'"):
        streamblur.process_videos(clips, outs, devices="0,x")
    with pytest.raises(ValueError, match="device"):
        streamblur.process_videos(clips, outs, devices=[-1])
    with pytest.raises(ValueError, match="same output"):
        streamblur.process_videos(clips, [outs[0], outs[0]], codec="ffv1", backend="cpu")
    with pytest.raises(ValueError, match="input"):
        streamblur.process_videos(clips, clips, codec="ffv1", backend="cpu")
    with pytest.raises(TypeError):
        streamblur.process_videos(str(clips[0]), outs[:1])
    assert not any(p.exists() for p in outs)


def test_batch_progress_exception_stops_and_propagates(tmp_path):
    clips = make_clips(tmp_path, 3, frames=20)

    class Stop(Exception):
        pass

    def progress(p):
        raise Stop("enough")

    with pytest.raises(Stop, match="enough"):
        streamblur.process_videos(clips, out_dir=tmp_path / "out", codec="ffv1", backend="cpu", progress=progress)


def test_process_video_reports_decoder_and_device(tmp_path):
    (clip,) = make_clips(tmp_path, 1)
    stats = streamblur.process_video(clip, tmp_path / "out.mkv", vf=SPEC, codec="ffv1", backend="cpu", hwdec="none")
    assert stats["decoder"] == "cpu"
    assert stats["device"] == -1
    assert stats["gpu_memory_bytes"] == 0
    with pytest.raises(ValueError, match="hwdec"):
        streamblur.process_video(clip, tmp_path / "out2.mkv", hwdec="dxva")
    with pytest.raises(ValueError, match="device"):
        streamblur.process_video(clip, tmp_path / "out2.mkv", device=-1)
    if not streamblur.cuda_available():
        with pytest.raises(RuntimeError, match="(?i)cuda|nvdec|device"):
            streamblur.process_video(clip, tmp_path / "out3.mkv", codec="ffv1", hwdec="nvdec")


# ---------------------------------------------------------------- GPU (skipped without a device)


def test_process_video_on_the_gpu_reports_it(gpu, tmp_path):
    (clip,) = make_clips(tmp_path, 1)
    stats = streamblur.process_video(clip, tmp_path / "out.mkv", vf=SPEC, codec="ffv1", backend="cuda", device=0)
    assert stats["backend"] == "cuda" and stats["device"] == 0
    assert stats["gpu_memory_bytes"] > 0
    assert stats["decoder"] in ("cpu", "nvdec")  # NVDEC takes no FFV1: auto falls back to the CPU


def test_batch_on_all_devices(gpu, tmp_path):
    clips = make_clips(tmp_path, 5, frames=10, width=64, height=48)
    bad = tmp_path / "missing.mkv"
    results = streamblur.process_videos(clips + [bad], out_dir=tmp_path / "out", vf=SPEC, codec="ffv1",
                                        backend="cuda", devices="all", jobs=2)
    assert [r["ok"] for r in results] == [True] * 5 + [False]
    n = streamblur.device_count()
    for r, src in zip(results[:5], clips):
        assert 0 <= r["device"] < n
        assert r["backend"] == "cuda"
        assert r["gpu_memory_bytes"] > 0
        # The GPU's output equals the CPU backend's single run within +-1.
        got = planes_of(r["output"])
        want = planes_of(src, SPEC, backend="cpu")
        assert len(got) == len(want)
        for fg, fw in zip(got, want):
            for pg, pw in zip(fg, fw):
                assert int(np.max(np.abs(pg.astype(np.int64) - pw.astype(np.int64)))) <= 1
    assert "missing.mkv" in results[5]["error"]
    if n > 1:
        assert len({r["device"] for r in results[:5]}) > 1  # spread over the GPUs
    explicit = streamblur.process_videos(clips[:2], out_dir=tmp_path / "out0", vf=SPEC, codec="ffv1",
                                         devices=[0], jobs=1)
    assert all(r["ok"] and r["device"] == 0 for r in explicit)
