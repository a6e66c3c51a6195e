"""streamblur.ray.process_videos: files mapped over a local Ray cluster, on the CPU backend.

CI installs Ray, so a missing Ray fails there. The GPU machine cannot carry
Ray's wheel; its suite sets STREAMBLUR_ALLOW_NO_RAY=1 and these tests skip.
The outputs are FFV1 in NUT, which streamblur writes byte for byte the same on
every run (Matroska would not: it stores a random segment UID), so a Ray run is
compared with a local run of the same file by bytes.
"""

import os
import threading

import pytest

import streamblur
import support

if os.environ.get("STREAMBLUR_ALLOW_NO_RAY") == "1":
    ray = pytest.importorskip("ray")
else:
    try:
        import ray
    except ImportError as e:
        raise ImportError(f"Ray is not installed ({e}): `python3 -m pip install ray`, or set "
                          "STREAMBLUR_ALLOW_NO_RAY=1 to skip these tests") from e

import streamblur.ray  # noqa: E402

VF = "gblur=sigma=2,boxblur=radius=1"  # not the default chain, so a lost vf= shows
FRAMES = 8
SIZES = [(64, 48), (72, 48), (80, 40), (64, 56)]  # different clips, so a mixed-up output shows


@pytest.fixture(scope="module")
def cluster():
    if ray.is_initialized():
        ray.shutdown()
    # num_gpus=0: the same cluster on every machine, and a task asking for a
    # GPU would never be placed (the tests would time out, not pass).
    ray.init(num_cpus=2, num_gpus=0, include_dashboard=False, object_store_memory=100 * 1024 * 1024,
             log_to_driver=False)
    yield
    ray.shutdown()


@pytest.fixture(scope="module")
def clips(tmp_path_factory):
    folder = tmp_path_factory.mktemp("ray-clips")
    paths = []
    for i, (w, h) in enumerate(SIZES):
        path = folder / f"clip{i}.mkv"
        support.write_test_clip(path, w, h, frames=FRAMES, codec="ffv1", pix_fmt="yuv420p")
        paths.append(path)
    return paths


def within(call, *args, timeout=180, **kwargs):
    """call(*args, **kwargs) with a time limit (a task Ray cannot place waits forever)."""
    box = {}

    def body():
        try:
            box["result"] = call(*args, **kwargs)
        except BaseException as e:  # noqa: BLE001 (handed to the test thread)
            box["error"] = e

    thread = threading.Thread(target=body, daemon=True)
    thread.start()
    thread.join(timeout)
    if thread.is_alive():
        pytest.fail(f"{call.__qualname__} did not finish within {timeout} s (a task Ray cannot place?)")
    if "error" in box:
        raise box["error"]
    return box["result"]


def run_videos(*args, **kwargs):
    return within(streamblur.ray.process_videos, *args, **kwargs)


def run_spans(*args, **kwargs):
    return within(streamblur.ray.process_video, *args, **kwargs)


def local_run(src, dst):
    streamblur.process_video(src, dst, vf=VF, codec="ffv1", backend="cpu")
    return dst.read_bytes()


def test_outputs_match_local_runs(cluster, clips, tmp_path):
    outs = [tmp_path / f"ray{i}.nut" for i in range(len(clips))]
    # Default gpus_per_job (0.25): backend="cpu" must still ask Ray for no GPU,
    # or nothing is placed on this GPU-less cluster.
    results = run_videos(clips, outs, vf=VF, codec="ffv1", backend="cpu")
    assert len(results) == len(clips)
    node = ray.get_runtime_context().get_node_id()
    expected = []
    for i, (clip, out, r) in enumerate(zip(clips, outs, results)):
        assert r["ok"], r
        assert r["input"] == str(clip) and r["output"] == str(out)
        assert r["frames"] == FRAMES and r["backend"] == "cpu"
        assert "gblur" in r["filters"] and "boxblur" in r["filters"]
        assert r["node"] == node and r["hostname"] and r["gpu_ids"] == []
        first = local_run(clip, tmp_path / f"local{i}a.nut")
        second = local_run(clip, tmp_path / f"local{i}b.nut")
        assert first == second, "a local run is not byte-for-byte repeatable; compare decoded frames instead"
        assert out.read_bytes() == first, f"{out.name} differs from a local run of {clip.name}"
        expected.append(first)
    assert len(set(expected)) == len(expected), "the clips must differ for the comparison to catch mix-ups"


def test_bad_inputs_fail_alone(cluster, clips, tmp_path):
    garbage = tmp_path / "garbage.mkv"
    garbage.write_bytes(b"this is not a video file\n" * 40)
    missing = tmp_path / "missing.mkv"
    ins = [clips[0], garbage, clips[1], missing]
    outs = [tmp_path / f"out{i}.nut" for i in range(len(ins))]
    results = run_videos(ins, outs, vf=VF, codec="ffv1", backend="cpu", gpus_per_job=0)
    assert [r["ok"] for r in results] == [True, False, True, False]
    for src, out, r in zip(ins, outs, results):
        assert r["input"] == str(src) and r["output"] == str(out)
        if r["ok"]:
            assert r["frames"] == FRAMES and out.stat().st_size > 0
        else:
            assert str(src) in r["error"], r["error"]
            assert "\n" not in r["error"]
            assert not out.exists()
            assert not [p for p in tmp_path.iterdir() if out.name in p.name], "a failed run left a file behind"
    assert results[3]["error_type"] == "FileNotFoundError"


def test_error_names_the_file_when_the_cause_does_not(cluster, clips, tmp_path):
    # "unknown encoder 'nosuchcodec'" names no file: the result puts the input in front.
    outs = [tmp_path / "a.nut", tmp_path / "b.nut"]
    results = run_videos(clips[:2], outs, vf=VF, codec="nosuchcodec", backend="cpu")
    for clip, r in zip(clips[:2], results):
        assert not r["ok"]
        assert r["error"].startswith(f"{clip}: ") and "nosuchcodec" in r["error"], r["error"]
        assert r["error_type"] == "RuntimeError"
    assert not list(tmp_path.iterdir())


def test_hwdec_reaches_process_video(cluster, clips, tmp_path):
    # process_video refuses NVDEC decoding on the CPU backend: proof that hwdec= got there.
    (r,) = run_videos(clips[:1], [tmp_path / "a.nut"], vf=VF, codec="ffv1", backend="cpu", hwdec="nvdec")
    assert not r["ok"] and "NVDEC decoding needs the CUDA backend" in r["error"], r
    (r,) = run_videos(clips[:1], [tmp_path / "b.nut"], vf=VF, codec="ffv1", backend="cpu", hwdec="none")
    assert r["ok"] and r["decoder"] == "cpu", r


def test_auto_backend_without_gpus_runs_on_cpu(cluster, clips, tmp_path):
    # The cluster has no GPU: asking Ray for gpus_per_job would never be placed.
    out = tmp_path / "auto.nut"
    (r,) = run_videos([str(clips[2])], [str(out)], vf=VF, codec="ffv1")
    assert r["ok"], r
    assert r["backend"] == "cpu" and r["frames"] == FRAMES
    assert out.read_bytes() == local_run(clips[2], tmp_path / "local.nut")


def test_relative_paths_are_made_absolute(cluster, clips, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (r,) = run_videos([os.path.relpath(clips[3])], ["rel.nut"], vf=VF, codec="ffv1", backend="cpu")
    assert r["ok"], r
    assert r["output"] == str(tmp_path / "rel.nut") and (tmp_path / "rel.nut").stat().st_size > 0


def test_argument_errors(clips, tmp_path):
    # All checked before any task is submitted.
    pv = streamblur.ray.process_videos
    with pytest.raises(ValueError, match="2 inputs but 1 outputs"):
        pv(clips[:2], [tmp_path / "a.nut"])
    with pytest.raises(ValueError, match="appears twice"):
        pv(clips[:2], [tmp_path / "a.nut", tmp_path / "." / "a.nut"])
    with pytest.raises(ValueError, match="both an input and an output"):
        pv(clips[:2], [tmp_path / "a.nut", clips[0]])
    with pytest.raises(TypeError, match="list of paths"):
        pv(str(clips[0]), str(tmp_path / "a.nut"))
    with pytest.raises(ValueError, match="backend"):
        pv(clips[:1], [tmp_path / "a.nut"], backend="gpu")
    with pytest.raises(ValueError, match="gpus_per_job"):
        pv(clips[:1], [tmp_path / "a.nut"], gpus_per_job=-1)
    with pytest.raises(ValueError, match="whole number"):
        pv(clips[:1], [tmp_path / "a.nut"], gpus_per_job=1.5)
    with pytest.raises(ValueError, match="gpus_per_job > 0"):
        pv(clips[:1], [tmp_path / "a.nut"], backend="cuda", gpus_per_job=0)
    with pytest.raises(ValueError, match="hwdec"):
        pv(clips[:1], [tmp_path / "a.nut"], hwdec="gpu")
    with pytest.raises(ValueError, match="inflight"):
        pv(clips[:1], [tmp_path / "a.nut"], inflight=0)
    with pytest.raises(ValueError, match="blurry"):
        pv(clips[:1], [tmp_path / "a.nut"], vf="blurry=2")
    assert pv([], []) == []
    assert not list(tmp_path.iterdir())


# ---- streamblur.ray.process_video: one file, a task per span


@pytest.fixture(scope="module")
def long_clip(tmp_path_factory):
    path = tmp_path_factory.mktemp("ray-long") / "long.mkv"
    # ffv1 with a keyframe every 12 frames, and AAC audio to be copied once.
    support.write_test_clip(path, 48, 32, frames=40, codec="ffv1", audio_codec="aac")
    return path


def test_one_file_in_span_tasks_is_the_local_segmented_run(cluster, long_clip, tmp_path):
    for trim in ({}, dict(start=0.2, frames=25)):
        local = tmp_path / "local.nut"
        streamblur.process_video(long_clip, local, VF, codec="ffv1", backend="cpu", segments=3, overwrite=True,
                                 **trim)
        out = tmp_path / "ray.nut"
        stats = run_spans(long_clip, out, VF, codec="ffv1", backend="cpu", segments=3, overwrite=True, **trim)
        assert stats["segments"] == 3 and stats["frames"] == (25 if trim else 40), stats
        assert [s["frames"] for s in stats["spans"]] and sum(s["frames"] for s in stats["spans"]) == stats["frames"]
        assert all(s["node"] == ray.get_runtime_context().get_node_id() for s in stats["spans"])
        assert stats["backend"] == "cpu" and stats["scan_s"] >= 0 and stats["join_s"] >= 0
        assert out.read_bytes() == local.read_bytes(), f"the Ray run differs from the local segmented run ({trim})"
        assert sorted(p.name for p in tmp_path.iterdir()) == ["local.nut", "ray.nut"]  # no span file left


def test_a_file_that_cannot_be_cut_is_one_task(cluster, tmp_path, capfd):
    src = tmp_path / "short.mkv"
    support.write_test_clip(src, 48, 32, frames=8)  # one GOP
    out = tmp_path / "out.nut"
    stats = run_spans(src, out, VF, codec="ffv1", backend="cpu", segments=4)
    assert stats["segments"] == 1 and stats["frames"] == 8 and len(stats["spans"]) == 1
    assert "segments: one segment (" in capfd.readouterr().err
    assert out.read_bytes() == local_run(src, tmp_path / "local.nut")


def test_a_failing_span_fails_the_call_and_leaves_nothing(cluster, long_clip, tmp_path):
    from streamblur._native import _ext

    out = tmp_path / "out.nut"
    job = {"src": str(long_clip), "dst": str(out), "vf": VF, "codec": "ffv1", "crf": -1, "preset": "",
           "backend": "cpu", "hwdec": "auto", "inflight": 4, "overwrite": False, "segments": 3, "start": None,
           "duration": None, "frames": None}
    plan = _ext.plan_segments(job)
    assert len(plan["spans"]) == 3
    _, until, first, frames = plan["spans"][1]
    plan["spans"][1] = (10**12, until, first, frames)  # a span past the end of the input: its run fails
    task_options = {"num_cpus": 1, "num_gpus": 0}
    with pytest.raises(RuntimeError, match="span 2: .*"):
        streamblur.ray._span_tasks(ray, job, plan, task_options, 0.0, 0.0)
    assert list(tmp_path.iterdir()) == []  # no output, no span file


def test_span_tasks_refuse_before_anything_runs(long_clip, tmp_path):
    regions = tmp_path / "boxes.jsonl"
    regions.write_text('{"frame": 0, "boxes": [[0, 0, 8, 8]]}\n')
    with pytest.raises(ValueError, match="do not go with a regions file"):
        streamblur.ray.process_video(long_clip, tmp_path / "o.nut", f"gblur=sigma=2:regions={regions}",
                                     backend="cpu", segments=2)
    existing = tmp_path / "exists.nut"
    existing.write_bytes(b"keep")
    with pytest.raises(FileExistsError):
        streamblur.ray.process_video(long_clip, existing, VF, backend="cpu", segments=2)
    assert existing.read_bytes() == b"keep"
    with pytest.raises(ValueError, match="segments must be 'auto' or an integer"):
        streamblur.ray.process_video(long_clip, tmp_path / "o.nut", VF, segments="all")
    with pytest.raises(FileNotFoundError):
        streamblur.ray.process_video(tmp_path / "missing.mkv", tmp_path / "o.nut", VF)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["boxes.jsonl", "exists.nut"]
