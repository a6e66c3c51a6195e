"""streamblur.ray: many video files over a Ray cluster, one Ray task per file;
one file over a cluster, one Ray task per span of it (:func:`process_video`).

>>> import streamblur.ray
>>> results = streamblur.ray.process_videos(["a.mp4", "b.mp4"], ["a-blur.mp4", "b-blur.mp4"],
...                                         vf="gblur=sigma=2", gpus_per_job=0.25)
>>> [r["ok"] for r in results]
[True, True]

Each file is one task of :func:`streamblur.process_video`, declared with
``num_gpus=gpus_per_job`` and ``num_cpus=1``; Ray decides where and when each
runs (placement, queueing, retries). A task sees only the GPUs Ray gave it,
through ``CUDA_VISIBLE_DEVICES``, numbered from 0, so the pipeline runs on
device 0 of the task, which is the GPU Ray chose; nothing here picks devices.
A fractional ``gpus_per_job`` packs several files on one GPU (0.25: four at a
time per GPU).

Ray is imported when :func:`process_videos` is called (``pip install ray``);
the ``streamblur`` package must be installed on every node of the cluster, and
the paths must name the same files on every node (a shared filesystem):
relative paths are made absolute against the caller's working directory.
"""

from __future__ import annotations

import math
import os
import socket
import sys
import time
import uuid
from typing import Any, Iterable, Optional

import streamblur

__all__ = ["process_videos", "process_video"]


def _import_ray():
    try:
        import ray  # noqa: PLC0415 (optional dependency, imported at call time)
    except ImportError as e:
        raise ImportError(
            f"streamblur.ray needs Ray, which cannot be imported ({e}); install it with `python3 -m pip install ray`"
        ) from e
    return ray


def _paths(paths: Iterable[Any], name: str) -> list:
    """A list of path strings; local paths made absolute, URLs (scheme://...) kept as they are."""
    if isinstance(paths, (str, bytes, os.PathLike)):
        raise TypeError(f"{name} must be a list of paths, not a single path ({paths!r})")
    out = []
    for p in paths:
        s = os.fspath(p)
        if isinstance(s, bytes):
            s = os.fsdecode(s)
        out.append(s if "://" in s else os.path.abspath(s))
    return out


def _same_file_key(path: str) -> str:
    return path if "://" in path else os.path.normcase(os.path.realpath(path))


def _run_one(src: str, dst: str, vf: str, codec: Optional[str], backend: str, options: dict) -> dict:
    """The body of one Ray task: one file through streamblur.process_video on this worker."""
    import ray  # noqa: PLC0415

    gpu_ids = [str(g) for g in ray.get_gpu_ids()]
    if backend != "cpu" and not gpu_ids:
        # Ray assigned no GPU to this task. Ray then leaves CUDA_VISIBLE_DEVICES
        # as it was (ray-project/ray#54868), so device 0 would be a GPU that Ray
        # may have given to another task: run on the CPU instead (or refuse).
        if backend == "cuda":
            raise RuntimeError(f"{src}: backend='cuda' but Ray assigned no GPU to this task (num_gpus=0)")
        backend = "cpu"
    # No device= here: the default, device 0, is the first GPU Ray made visible.
    stats = streamblur.process_video(src, dst, vf, codec, backend=backend, **options)
    return {
        "stats": stats,
        "node": ray.get_runtime_context().get_node_id(),
        "hostname": socket.gethostname(),
        "gpu_ids": gpu_ids,
    }


def _failure(src: str, dst: str, error: BaseException, ray) -> dict:
    """The result of a file whose task raised (the task's own exception) or was lost (Ray's error)."""
    cause = error
    if isinstance(error, ray.exceptions.RayTaskError) and getattr(error, "cause", None) is not None:
        cause = error.cause
    lines = [line.strip() for line in str(cause).splitlines() if line.strip()]
    message = "; ".join(lines) or type(cause).__name__
    if src not in message:
        message = f"{src}: {message}"
    return {"input": src, "output": dst, "ok": False, "error": message, "error_type": type(cause).__name__}


def process_videos(inputs: Iterable[Any], outputs: Iterable[Any], vf: str = "",
                   codec: Optional[str] = None, backend: str = "auto", gpus_per_job: float = 0.25, *,
                   crf: Optional[int] = None, preset: Optional[str] = None, hwdec: str = "auto",
                   overwrite: bool = False, inflight: int = 4, max_retries: Optional[int] = None,
                   ray_remote_args: Optional[dict] = None) -> list:
    """Runs :func:`streamblur.process_video` on every ``inputs[i] -> outputs[i]``, one Ray task per file.

    Ray is connected with ``ray.init()`` (an address in RAY_ADDRESS, a running
    local cluster, or a new local one) unless ``ray.is_initialized()`` already.
    A failing file never stops the others and is not raised; a failed run
    leaves no output file. Ctrl-C (or a failure of Ray itself) cancels the
    files still running and is raised.

    Parameters
    ----------
    inputs, outputs : iterable of str or os.PathLike
        Paths, as many outputs as inputs; the outputs must be distinct and none
        may be an input.
    vf, codec, crf, preset, hwdec, overwrite, inflight
        As for :func:`streamblur.process_video`, for every file (``inflight``
        is frames in flight within one file; how many files run at once is
        Ray's decision, from the resources each task asks for).
    backend : {'auto', 'cuda', 'cpu'}, optional
        ``'cpu'`` always declares ``num_gpus=0``, whatever ``gpus_per_job``
        says. ``'auto'`` (default) declares ``num_gpus=0`` when the cluster has
        no GPU at the time of the call, and a task that Ray gives no GPU
        (``gpus_per_job=0``) runs on the CPU backend rather than on a GPU it
        was not given. ``'cuda'`` needs ``gpus_per_job > 0`` and waits, as Ray
        does, for a node with a free GPU.
    gpus_per_job : float, optional
        Each task is declared with ``num_gpus=gpus_per_job`` (default 0.25;
        fractions pack several files on one GPU; above 1 it must be a whole
        number) and ``num_cpus=1``. Ray sets ``CUDA_VISIBLE_DEVICES`` for the
        task and the pipeline uses the first visible device.
    max_retries : int or None, optional
        Passed to Ray's ``.options(max_retries=...)`` (None: Ray's default,
        which retries tasks whose worker died, not tasks that raised).
    ray_remote_args : dict or None, optional
        More ``.options(...)`` for every task (``num_cpus``, ``memory``,
        ``resources``, ``retry_exceptions``, ``runtime_env``,
        ``scheduling_strategy``...); they override the ones above.

    Returns
    -------
    list of dict
        One dict per file, in the order of ``inputs``: ``input``, ``output``
        (absolute paths), ``ok``; on success the run's statistics (the dict
        :func:`streamblur.process_video` returns: frames, wall_s, fps,
        backend, ...) plus ``node`` (the Ray node id), ``hostname`` and
        ``gpu_ids`` (the GPUs Ray assigned, as Ray numbers them); on failure
        ``error`` (one line naming the input) and ``error_type``.

    Raises
    ------
    TypeError
        A wrong type: ``inputs`` or ``outputs`` a single path,
        ``gpus_per_job`` not a number, ``ray_remote_args`` not a dict, and
        those :func:`streamblur.process_video` checks.
    ValueError
        Before anything runs: as many outputs as inputs not given, an output
        given twice or that is an input, ``gpus_per_job`` negative or a
        fraction above 1, ``backend='cuda'`` with ``gpus_per_job=0``, a bad
        value or filter chain.
    ImportError
        Ray cannot be imported (``pip install ray``).
    """
    ins = _paths(inputs, "inputs")
    outs = _paths(outputs, "outputs")
    _check_pairs(ins, outs)
    # vf, backend, hwdec, inflight: the checks streamblur.process_video makes, made once here.
    vf = streamblur._check_video_args(vf, backend, hwdec, inflight, None)
    _check_gpu_args(backend, gpus_per_job, ray_remote_args)
    if vf:
        streamblur.Chain(vf)  # a bad chain is one ValueError here, not one failure per file
    if not ins:
        return []

    ray = _import_ray()
    if not ray.is_initialized():
        ray.init()
    task_options = _task_options(ray, backend, gpus_per_job, max_retries, ray_remote_args)
    run_options = {"crf": crf, "preset": preset, "hwdec": hwdec,
                   "overwrite": bool(overwrite), "inflight": int(inflight)}

    remote = ray.remote(_run_one)
    refs = []
    try:
        for src, dst in zip(ins, outs):
            name = f"streamblur:{os.path.basename(src) or src}"
            refs.append(remote.options(name=name, **task_options).remote(src, dst, vf, codec, backend, run_options))
        return [_result(ray, src, dst, ref) for src, dst, ref in zip(ins, outs, refs)]
    except BaseException:
        _cancel(ray, refs)  # Ctrl-C or a failure of Ray itself: don't leave the remaining files running
        raise


def _cancel(ray, refs):
    """Cancels the tasks of `refs` that are still running."""
    for ref in refs:
        try:
            ray.cancel(ref)
        except Exception:  # noqa: BLE001 (finished or already gone)
            pass


def _check_pairs(ins, outs):
    """As many outputs as inputs, each output once, none of them an input (ValueError)."""
    if len(ins) != len(outs):
        raise ValueError(f"process_videos: {len(ins)} inputs but {len(outs)} outputs")
    seen = {}
    for dst in outs:
        key = _same_file_key(dst)
        if key in seen:
            raise ValueError(f"process_videos: output '{dst}' appears twice")
        seen[key] = dst
    for src in ins:
        if _same_file_key(src) in seen:
            raise ValueError(f"process_videos: '{src}' is both an input and an output")


def _check_gpu_args(backend, gpus_per_job, ray_remote_args):
    """gpus_per_job a number Ray takes, and one above 0 for backend='cuda'; ray_remote_args a dict."""
    if isinstance(gpus_per_job, bool) or not isinstance(gpus_per_job, (int, float)):
        raise TypeError(f"gpus_per_job must be a number, got {type(gpus_per_job).__name__}")
    if not math.isfinite(gpus_per_job) or gpus_per_job < 0:
        raise ValueError(f"gpus_per_job must be >= 0, got {gpus_per_job!r}")
    if gpus_per_job > 1 and gpus_per_job != int(gpus_per_job):
        raise ValueError(f"gpus_per_job above 1 must be a whole number (Ray's rule), got {gpus_per_job!r}")
    if backend == "cuda" and gpus_per_job == 0 and not (ray_remote_args or {}).get("num_gpus"):
        raise ValueError("backend='cuda' needs gpus_per_job > 0 (the GPU share Ray reserves for each file)")
    if ray_remote_args is not None and not isinstance(ray_remote_args, dict):
        raise TypeError(f"ray_remote_args must be a dict, got {type(ray_remote_args).__name__}")


def _task_options(ray, backend, gpus_per_job, max_retries, ray_remote_args):
    """The .options(...) of every task: one CPU, the GPU share (none for the CPU backend or a cluster without GPUs)."""
    num_gpus = 0 if backend == "cpu" else gpus_per_job
    if backend == "auto" and num_gpus > 0 and ray.cluster_resources().get("GPU", 0) <= 0:
        num_gpus = 0  # no GPU anywhere: the task would never be placed
    task_options = {"num_cpus": 1, "num_gpus": num_gpus}
    if max_retries is not None:
        task_options["max_retries"] = int(max_retries)
    task_options.update(ray_remote_args or {})
    return task_options


def _result(ray, src, dst, ref):
    """One file's dict: its statistics and where it ran, or its failure."""
    try:
        done = ray.get(ref)
    except ray.exceptions.RayError as e:
        return _failure(src, dst, e, ray)
    result = {"input": src, "output": dst, "ok": True}
    result.update({k: v for k, v in done["stats"].items() if k not in result})
    result.update(node=done["node"], hostname=done["hostname"], gpu_ids=done["gpu_ids"])
    return result


# ---- one file, one Ray task per span


def _run_span(job: dict, plan: dict, span: int, spool: str) -> dict:
    """The body of one span's Ray task: the span into its spool file on this worker."""
    import ray  # noqa: PLC0415

    from ._native import _ext  # noqa: PLC0415

    gpu_ids = [str(g) for g in ray.get_gpu_ids()]
    if job["backend"] != "cpu" and not gpu_ids:  # as _run_one: never a GPU Ray did not give
        if job["backend"] == "cuda":
            raise RuntimeError(f"{job['src']}: backend='cuda' but Ray assigned no GPU to span {span + 1}")
        job = dict(job, backend="cpu")
    stats, encoded = _ext.run_segment(job, plan, span, spool)
    return {"stats": stats, "encoded": encoded, "node": ray.get_runtime_context().get_node_id(),
            "hostname": socket.gethostname(), "gpu_ids": gpu_ids}


def process_video(src: Any, dst: Any, vf: str = "", codec: Optional[str] = None, backend: str = "auto",
                  gpus_per_span: float = 0.25, *, segments: Any = "auto", crf: Optional[int] = None,
                  preset: Optional[str] = None, hwdec: str = "auto", overwrite: bool = False, inflight: int = 4,
                  start: Any = None, duration: Any = None, frames: Optional[int] = None,
                  max_retries: Optional[int] = None, ray_remote_args: Optional[dict] = None) -> dict:
    """One file as :func:`streamblur.process_video` with ``segments=`` writes it, its spans run as Ray tasks.

    This process plans the spans (the keyframe scan), Ray runs each span on
    any worker (its decoder, filters and encoder; the encoded video goes to a
    hidden file beside ``dst``), and this process joins them with the input's
    other streams copied once: the output is the one
    ``streamblur.process_video(src, dst, ..., segments=N)`` writes. Every node
    must see ``src`` and the folder of ``dst`` at the same paths (a shared
    filesystem). A span that fails fails the call with its error; the other
    spans are cancelled and nothing is left (no output, no span files).

    Parameters
    ----------
    src, dst : str or os.PathLike
        The input and the output file, as for :func:`streamblur.process_video`.
    segments : int or 'auto', optional
        The spans, as for :func:`streamblur.process_video` (default 'auto',
        chosen on this machine). Where the input cannot be cut (one GOP, a
        pipe), the whole file is one task, with a note on stderr.
    gpus_per_span : float, optional
        Each span's task is declared with ``num_gpus=gpus_per_span`` and
        ``num_cpus=1``, as ``gpus_per_job`` in :func:`process_videos`.
    vf, codec, backend, crf, preset, hwdec, overwrite, inflight, start, duration, frames
        As for :func:`streamblur.process_video`. A ``regions=`` file is
        refused (its checks count the boxes every span used, in one process).
    max_retries, ray_remote_args
        As for :func:`process_videos`, for every span's task.

    Returns
    -------
    dict
        The run's statistics as :func:`streamblur.process_video` returns
        them (frames, segments, scan_s, join_s, wall_s, fps, backend,
        decoder, ...: the spans' counts and stage times added up), plus
        ``spans``: for each span its frames, wall_s, ``node``, ``hostname``
        and ``gpu_ids``.

    Raises
    ------
    ValueError, TypeError, FileNotFoundError
        Before any task runs, as :func:`streamblur.process_video` raises them.
    RuntimeError
        A span failed (its error, naming the span), or its frames or encoder
        headers do not join.
    ImportError
        Ray cannot be imported (``pip install ray``).
    """
    from ._checks import _segments, _time_seconds  # noqa: PLC0415
    from ._native import _ext  # noqa: PLC0415
    from ._video import _check_encode_args, _check_input_exists  # noqa: PLC0415

    t0 = time.monotonic()
    src_path, dst_path = _paths([src], "src")[0], _paths([dst], "dst")[0]
    vf = streamblur._check_video_args(vf, backend, hwdec, inflight, None)
    codec, crf, preset = _check_encode_args(codec, crf, preset)
    _check_gpu_args(backend, gpus_per_span, ray_remote_args)
    _check_input_exists(src_path, "streamblur.ray.process_video")
    job = {"src": src_path, "dst": dst_path, "vf": vf, "codec": codec, "crf": crf, "preset": preset,
           "backend": backend, "hwdec": hwdec, "inflight": int(inflight), "overwrite": bool(overwrite),
           "segments": _segments(segments), "start": _time_seconds(start, "start"),
           "duration": _time_seconds(duration, "duration"),
           "frames": None if frames is None else streamblur._checks._integer(frames, "frames", 1)}
    plan = _ext.plan_segments(job)
    for note in plan["notes"]:
        print(note, file=sys.stderr)
    scan_s = time.monotonic() - t0

    ray = _import_ray()
    if not ray.is_initialized():
        ray.init()
    task_options = _task_options(ray, backend, gpus_per_span, max_retries, ray_remote_args)
    if not plan["spans"]:
        return _one_task(ray, job, plan, task_options, codec, t0)
    return _span_tasks(ray, job, plan, task_options, scan_s, t0)


def _one_task(ray, job, plan, task_options, codec, t0):
    """The whole file as one task (it cannot be cut), as process_videos runs a file."""
    print(f"segments: one segment ({plan['one_because']})", file=sys.stderr)
    options = {k: job[k] for k in ("hwdec", "overwrite", "inflight", "start", "duration", "frames")}
    options.update(crf=None if job["crf"] < 0 else job["crf"], preset=job["preset"] or None)
    ref = ray.remote(_run_one).options(name="streamblur:" + os.path.basename(job["src"]), **task_options).remote(
        job["src"], job["dst"], job["vf"], codec or None, job["backend"], options)
    done = ray.get(ref)
    stats = dict(done["stats"])
    stats["spans"] = [{"frames": stats["frames"], "wall_s": stats["wall_s"], "node": done["node"],
                       "hostname": done["hostname"], "gpu_ids": done["gpu_ids"]}]
    stats["wall_s"] = time.monotonic() - t0
    return stats


def _span_files(dst: str, n: int) -> list:
    """Hidden, unique names beside dst for the spans' encoded video."""
    folder, name = os.path.split(dst)
    tag = uuid.uuid4().hex[:12]
    return [os.path.join(folder, f".{name}.span{k + 1}-{tag}.sbspan") for k in range(n)]


def _span_tasks(ray, job, plan, task_options, scan_s, t0):
    """Every span a task, then the join here; the span files are removed whatever happens."""
    spools = _span_files(job["dst"], len(plan["spans"]))
    remote = ray.remote(_run_span)
    refs = []
    try:
        for k, spool in enumerate(spools):
            name = f"streamblur:{os.path.basename(job['src'])}:span{k + 1}"
            refs.append(remote.options(name=name, **task_options).remote(job, plan, k, spool))
        done = [_span_result(ray, job, k, ref) for k, ref in enumerate(refs)]
        joined = _ext_join(job, plan, spools, done)
    except BaseException:
        _cancel(ray, refs)
        raise
    finally:
        for spool in spools:
            try:
                os.remove(spool)
            except FileNotFoundError:
                pass
    return _combined(done, joined, scan_s, t0)


def _span_result(ray, job, k, ref):
    """Span k's result, or its failure raised as one RuntimeError naming the input and the span."""
    try:
        return ray.get(ref)
    except ray.exceptions.RayError as e:
        failure = _failure(job["src"], job["dst"], e, ray)
        raise RuntimeError(f"span {k + 1}: {failure['error']}") from e


def _ext_join(job, plan, spools, done):
    from ._native import _ext  # noqa: PLC0415

    return _ext.join_segments(job, plan, spools, [d["stats"]["frames"] for d in done], [d["encoded"] for d in done])


def _combined(done, joined, scan_s, t0):
    """The spans' statistics as one run's, as the library adds them up."""
    stats = dict(done[0]["stats"])
    for key in ("frames", "decode_warnings", "gpu_memory_bytes"):
        stats[key] = sum(d["stats"].get(key, 0) for d in done)
    if len({d["stats"].get("decoder") for d in done}) > 1:
        stats["decoder"] = "mixed"
    stats["stages"] = {name: {k: sum(d["stats"]["stages"][name][k] for d in done) for k in stage}
                       for name, stage in stats["stages"].items()}
    stats.update(segments=joined["segments"], scan_s=scan_s, join_s=joined["join_s"])
    stats["wall_s"] = time.monotonic() - t0
    stats["fps"] = stats["frames"] / stats["wall_s"] if stats["wall_s"] > 0 else 0.0
    stats["spans"] = [{"frames": d["stats"]["frames"], "wall_s": d["stats"]["wall_s"], "node": d["node"],
                       "hostname": d["hostname"], "gpu_ids": d["gpu_ids"]} for d in done]
    return stats
