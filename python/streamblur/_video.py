"""Video files through the streaming pipeline: process_video, process_videos, and their argument checks."""

from __future__ import annotations

import os
from typing import Any, Callable, Optional, Union

import numpy as np

from ._checks import (INT32_MAX, INT64_MAX, _BACKENDS, _HWDECS, _choice, _integer, _optional_str, _path, _paths,
                      _segments, _time_seconds)
from ._info import device_count
from ._native import _ext, _public


def _check_device_index(device: Any, name: str = "device") -> int:
    d = _integer(device, name)
    if d < 0:
        raise ValueError(f"{name} must be a CUDA device index >= 0, got {d}")
    if d > INT32_MAX:
        raise ValueError(f"{name} {d} is not a CUDA device index (at most {INT32_MAX})")
    n = device_count()
    if n and d >= n:
        raise ValueError(f"{name} {d} does not exist: {n} CUDA device(s) are usable (0..{n - 1})")
    return d


def _check_video_args(vf: Optional[str], backend: str, hwdec: str, inflight: Any,
                      progress: Optional[Callable]) -> str:
    """The checks every video entry point shares; returns vf as a str."""
    vf = _optional_str(vf, "vf", "a filter chain such as 'gblur=sigma=2'")
    _choice(backend, "backend", _BACKENDS)
    _choice(hwdec, "hwdec", _HWDECS)
    _integer(inflight, "inflight", 1, 64)
    if progress is not None and not callable(progress):
        raise TypeError("progress= must be callable")
    return vf


def _check_encode_args(codec: Any, crf: Any, preset: Any) -> tuple:
    """(codec, crf, preset) as the extension takes them: '' for the default encoder or preset, -1 for its crf."""
    codec = _optional_str(codec, "codec", "an FFmpeg encoder name such as 'libx264'")
    preset = _optional_str(preset, "preset", "the encoder's preset name, such as 'fast'")
    crf = -1 if crf is None else _integer(crf, "crf", 0, 63)
    return codec, crf, preset


def _check_input_exists(src: str, what: str) -> None:
    # An image sequence ("in/f%03d.png") names no one file; FFmpeg's image2
    # demuxer reports a missing sequence itself.
    if "%" in os.path.basename(str(src)):
        return
    if "://" not in src and not os.path.exists(src):
        raise FileNotFoundError(f"{what}: input '{src}' does not exist")


@_public
def process_video(src: str, dst: str, vf: Optional[str] = "", codec: Optional[str] = None, *,
                  crf: Optional[int] = None, preset: Optional[str] = None, backend: str = "auto",
                  hwdec: str = "auto", device: int = 0, overwrite: bool = False, inflight: int = 4,
                  progress: Optional[Callable[[dict], Any]] = None, start: Any = None, duration: Any = None,
                  frames: Optional[int] = None, strict_regions: bool = False, segments: Union[int, str] = 1) -> dict:
    """Runs the streaming pipeline: decode ``src``, apply filter chain ``vf``, encode ``dst``.

    Audio and other streams are copied; timestamps and colour metadata pass
    through. The output is written atomically: a failed run leaves none.

    >>> stats = streamblur.process_video("in.mp4", "out.mp4", "gblur=sigma=2")

    Ctrl-C (or any signal whose Python handler raises) stops the run as the
    CLI's first Ctrl-C does: the frames in flight are finished, ``dst`` holds
    the frames done so far (none: nothing is written), then the handler's
    exception is raised. Signals reach the main thread only.

    Parameters
    ----------
    src, dst : str or os.PathLike
        The input (anything FFmpeg opens, or an image sequence pattern such as
        ``'in/f%03d.png'``) and the output (container from its extension).
        Bytes paths raise TypeError.
    vf : str or None, optional
        The filter chain, as for :class:`Chain` (``'gblur=sigma=2'``); ``''``
        (the default, as the command line without ``--vf``) or None: no
        filter, the video is decoded and encoded again.
    codec : str or None, optional
        FFmpeg encoder name; None: the container's own, as the command line
        (libx264 for mp4 and mkv, libvpx-vp9 for webm).
    crf : int or None, optional
        The encoder's quality, 0 .. 63; None: its default.
    preset : str or None, optional
        The encoder's preset (e.g. ``'fast'``); None: its default.
    backend : {'auto', 'cuda', 'cpu'}, optional
        ``'auto'`` (default): CUDA when a device is usable, else the CPU.
    hwdec : {'auto', 'nvdec', 'none'}, optional
        ``'auto'`` decodes with NVDEC (frames stay in device memory) when the
        CUDA backend runs and NVDEC takes the codec, else on the CPU;
        ``'nvdec'`` insists (an error where it cannot); ``'none'``: the CPU.
    device : int, optional
        The CUDA device index to run on (default 0).
    overwrite : bool, optional
        False (the default, as the CLI without -y) refuses an existing ``dst``
        before anything runs; True replaces it once the new one is complete.
    inflight : int, optional
        Frames in flight in the pipeline, 1 .. 64 (default 4); bounds memory.
    progress : callable or None, optional
        Called (from a pipeline thread, with the GIL) about four times a
        second and at the end with a dict: frames, total_estimate, elapsed_s,
        fps, media_time_s, duration_s, final. An exception it raises stops
        the run as Ctrl-C does, and is raised here.
    start, duration : float, str or None, optional
        Trimming, as the CLI's -ss and -t: seconds (a number, or a str in
        ffmpeg's syntax such as ``'1:02.5'``); with ``start`` the output's
        timestamps begin near 0. Copied streams are cut to the same span.
    frames : int or None, optional
        At most this many frames, as the CLI's --frames.
    strict_regions : bool, optional
        A regions file in ``vf`` that cannot match the video (docs/regions.md)
        is a warning on stderr by default; True: a ValueError, no ``dst``.
    segments : int or 'auto', optional
        As the CLI's --segments (docs/cli.md#segments): 1 .. 64 spans (or 'auto')
        cut at keyframes, run at once and joined into the plain run's output.

    Returns
    -------
    dict
        The run's statistics, the keys of the CLI's --stats-json (docs/cli.md):
        frames, fps, wall_s, backend, decoder, filters, stages, ...

    Raises
    ------
    TypeError
        An argument of the wrong type (named in the message), before anything
        is opened.
    ValueError
        A value out of range or a bad filter chain, before anything is opened;
        ``start < 0``, ``duration <= 0`` or ``frames < 1``; with
        ``strict_regions``, a regions file that cannot match the video.
    FileNotFoundError, FileExistsError
        ``src`` does not exist; ``dst`` exists and ``overwrite`` is False.
    RuntimeError
        The run failed: an unreadable input, an encoder error, a CUDA failure,
        a span holding no frame (nothing is written).
    KeyboardInterrupt
        Ctrl-C, after the frames done so far are written (see above).
    """
    src = _path(src, "src")
    dst = _path(dst, "dst")
    vf = _check_video_args(vf, backend, hwdec, inflight, progress)
    codec, crf, preset = _check_encode_args(codec, crf, preset)
    device = _check_device_index(device)
    start = _time_seconds(start, "start")
    duration = _time_seconds(duration, "duration")
    frames = None if frames is None else _integer(frames, "frames", 1, INT64_MAX)
    segments = _segments(segments)
    _check_input_exists(src, "process_video")
    return _ext.process_video(src, dst, vf, codec, crf, preset, backend, hwdec, device, bool(overwrite),
                              int(inflight), progress, start, duration, frames, bool(strict_regions), segments)


@_public
def process_videos(inputs, outputs=None, *, out_dir=None, vf: Optional[str] = "", codec: Optional[str] = None,
                   crf: Optional[int] = None, preset: Optional[str] = None, backend: str = "auto",
                   hwdec: str = "auto", jobs: int = 2, devices: Any = "all", inflight: int = 4,
                   overwrite: bool = False, progress: Optional[Callable[[dict], Any]] = None,
                   segments: Union[int, str] = 1) -> list:
    """Runs the pipeline over many files at once: ``jobs`` pipelines per GPU on every GPU in ``devices``.

    A failing file never stops the others and never raises; each output is
    written atomically (a failed file leaves no output). Ctrl-C stops the
    batch as the CLI's does, with or without ``progress``: no new file starts
    (those not started are not written), each running file stops as in
    :func:`process_video` (a playable output with the frames done so far, at
    its final name), and then KeyboardInterrupt is raised (the per-file
    results are not returned).

    Parameters
    ----------
    inputs : iterable of str or os.PathLike
        The input paths.
    outputs : iterable of str or os.PathLike, optional
        One output path per input; or None with ``out_dir``.
    out_dir : str or os.PathLike, optional
        Each output is ``out_dir/<input's file name>`` (the folder is made if
        missing).
    vf, codec, crf, preset, backend, hwdec, inflight, overwrite, segments
        As for :func:`process_video`, for every file (``codec=None``: each
        output's default encoder; a segmented file stopped writes nothing).
    jobs : int, optional
        Pipelines at once per GPU (default 2); on the CPU backend ``jobs``
        pipelines run in all.
    devices : 'all', int, list of int or str, optional
        ``'all'`` (default), a list of CUDA device indices (``[0, 1]``), one
        index, or a string such as ``"0,1"``.
    progress : callable or None, optional
        Called about four times a second and once at the end with a dict:
        files_total, files_done, files_failed, running, frames, elapsed_s, fps
        (all files together), eta_s (-1 when unknown), final. An exception it
        raises stops the batch and is raised here.

    Returns
    -------
    list of dict
        One dict per input, in order: ``input``, ``output``, ``ok``,
        ``device`` (CUDA device it ran on, -1 for the CPU), ``error`` (a
        one-line message) and ``skipped`` (True: never started, the batch was
        stopped) only when the file failed, and, when it succeeded, the
        statistics :func:`process_video` returns.

    Raises
    ------
    TypeError
        An argument of the wrong type (``inputs`` a single path, say), before
        any file starts.
    ValueError
        Bad arguments before any file starts: both or neither of ``outputs``
        and ``out_dir``, as many outputs as inputs not given, an output given
        twice or that is an input, a device that does not exist, a value out
        of range, a bad filter chain.
    KeyboardInterrupt
        Ctrl-C (see above).
    """
    if isinstance(inputs, (str, bytes, os.PathLike)):
        raise TypeError("inputs must be a list of paths (for one file use process_video)")
    inputs = _paths(inputs, "inputs")
    if outputs is not None and out_dir is not None:
        raise ValueError("give outputs= or out_dir=, not both")
    if outputs is None:
        if out_dir is None:
            raise ValueError("give outputs= (one path per input) or out_dir=")
        out_dir = _path(out_dir, "out_dir")
        outputs = [os.path.join(out_dir, os.path.basename(p)) for p in inputs]
    else:
        outputs = _paths(outputs, "outputs")
        if len(outputs) != len(inputs):
            raise ValueError(f"{len(inputs)} inputs but {len(outputs)} outputs")
    vf = _check_video_args(vf, backend, hwdec, inflight, progress)
    codec, crf, preset = _check_encode_args(codec, crf, preset)
    jobs = _integer(jobs, "jobs", 1, INT32_MAX)
    segments = _segments(segments)
    device_list = _device_list(devices)
    # Devices that do not exist, a device listed twice, two inputs with one
    # output, an output that is an input: ValueError from run_batch's checks.
    if out_dir is not None and inputs:
        os.makedirs(out_dir, exist_ok=True)
    if not inputs:
        return []
    return list(_ext.process_videos(inputs, outputs, vf, codec, crf, preset, backend, hwdec, jobs, device_list,
                                    int(inflight), bool(overwrite), progress, segments))


def _device_list(devices: Any) -> list:
    """process_videos' devices=: [] for 'all', else the CUDA device indices (their existence is checked later)."""
    if isinstance(devices, str):
        return list(_ext.parse_device_list(devices))  # ValueError for a bad list
    if isinstance(devices, (int, np.integer)) and not isinstance(devices, bool):
        return [_check_device_index(devices, "devices")]
    what = "devices must be 'all', a CUDA device index, a list of them or a str such as '0,1'"
    if isinstance(devices, (bytes, bytearray)):
        raise TypeError(f"{what}; got {type(devices).__name__}")
    try:
        entries = list(devices)
    except TypeError:
        raise TypeError(f"{what}; got {type(devices).__name__}") from None
    if not entries:
        raise ValueError("devices is empty; give 'all' or at least one device index")
    return [_check_device_index(d, "devices entry") for d in entries]
