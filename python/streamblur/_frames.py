"""The filtered frames of a video as arrays: frames(), Frame and FrameIterator."""

from __future__ import annotations

import atexit
import weakref
from typing import Any, Optional, Union

from ._checks import _choice, _integer, _optional_str, _path, _segments, _time_seconds
from ._info import cuda_available
from ._native import _ext, _public
from ._video import _check_input_exists, _check_video_args


@_public
class Frame:
    """One filtered frame from :func:`frames`.

    The arrays own their memory: the pipeline never writes to it again.
    Frames are made by :func:`frames`; the parameters are the attributes.

    Parameters
    ----------
    planes : list of array
        One array per plane of the processing format (``format``), HxW for one
        sample per pixel, HxWxC for interleaved ones (RGB24: C = 3, NV12's
        chroma: C = 2), uint8 or uint16 (16-bit formats: the samples as stored,
        e.g. P010's 10 bits in the high bits). CuPy arrays or torch tensors on
        the device for ``device='cuda'``, numpy arrays (or CPU tensors) for
        ``'cpu'``.
    pts : float
        Presentation time in seconds (NaN when unknown).
    index : int
        0, 1, 2, ... in output order.
    format : str
        The processing format's FFmpeg name (``'yuv420p'``, ...).
    width, height : int
        The picture size (chroma planes may be smaller).
    """

    __slots__ = ("planes", "pts", "index", "format", "width", "height")

    def __init__(self, planes, pts, index, format, width, height):  # noqa: A002
        self.planes = planes
        self.pts = pts
        self.index = index
        self.format = format
        self.width = width
        self.height = height

    def __repr__(self) -> str:
        shapes = ", ".join("x".join(str(int(s)) for s in p.shape) for p in self.planes)
        return (f"Frame(index={self.index}, pts={self.pts:.6g}, format={self.format!r}, "
                f"{self.width}x{self.height}, planes=[{shapes}])")


_open_iterators = weakref.WeakSet()  # closed at exit: no pipeline thread may outlive the interpreter


@_public
class FrameIterator:
    """The iterator :func:`frames` returns: yields :class:`Frame` objects in order.

    The pipeline runs on a background thread and stays at most ``inflight``
    frames ahead of the loop. ``close()`` (also on leaving a ``with`` block, on
    ``break`` out of a ``with``, and when the iterator is garbage collected)
    stops it: frames in flight are dropped, frames already yielded stay valid.
    An error in the pipeline (unreadable input, CUDA failure) is raised by the
    next ``next()`` after the frames decoded before it.

    Made by :func:`frames`, not directly.

    Parameters
    ----------
    stream : streamblur._streamblur.FrameStream
        The running pipeline.
    device : {'cuda', 'cpu'}
        Where the frames' planes live.
    array : {'cupy', 'torch', 'numpy'}
        The planes' array type.

    Attributes
    ----------
    device, array : str
        As given.
    stats : dict or None
        The run's statistics (as :func:`process_video` returns) once it has
        ended, else None.
    notes : list of str
        The pipeline's notes (backend chosen, decoder, conversions, decode
        warnings).
    """

    def __init__(self, stream, device: str, array: str):
        self._stream = stream
        self.device = device
        self.array = array
        _open_iterators.add(self)

    def __iter__(self) -> "FrameIterator":
        return self

    def __next__(self) -> Frame:
        stream = self._stream
        if stream is None:
            raise StopIteration
        return Frame(*stream.next())

    def close(self) -> None:
        """Stops the pipeline and waits for its thread (quick: frames in flight are dropped).

        Frames already yielded stay valid; closing twice does nothing.
        """
        stream = self._stream
        if stream is not None:
            stream.close()
            self._final_stats = stream.stats()
            self._final_notes = list(stream.notes())
            self._stream = None

    def __enter__(self) -> "FrameIterator":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # noqa: BLE001 - never raise from a finaliser
            pass

    @property
    def stats(self) -> Optional[dict]:
        """The run's statistics (as :func:`process_video` returns) once it has ended, else None."""
        if self._stream is not None:
            return self._stream.stats()
        return getattr(self, "_final_stats", None)

    @property
    def notes(self) -> list:
        """The pipeline's notes: backend chosen, decoder, conversions, decode warnings."""
        if self._stream is not None:
            return list(self._stream.notes())
        return getattr(self, "_final_notes", [])

    def __repr__(self) -> str:
        state = "closed" if self._stream is None else ("running" if self._stream.running else "finished")
        return f"<streamblur.FrameIterator {state}, device={self.device!r}, array={self.array!r}>"


def _close_open_iterators() -> None:
    # At exit no pipeline thread may still be running while the interpreter goes.
    for it in list(_open_iterators):
        try:
            it.close()
        except Exception:  # noqa: BLE001
            pass


atexit.register(_close_open_iterators)


_ARRAY_KIND = {"numpy": 0, "cupy": 1, "torch": 2}


def _default_device_array() -> str:
    """'cupy' when CuPy can be imported, else 'torch'."""
    try:
        import cupy  # noqa: F401, PLC0415

        return "cupy"
    except ImportError:
        pass
    try:
        import torch  # noqa: F401, PLC0415

        return "torch"
    except ImportError:
        raise RuntimeError("frames on the GPU (device='cuda') are CuPy arrays or torch tensors, and neither CuPy nor "
                           "PyTorch can be imported; install one, or use device='cpu'") from None


def _framework_device(array: str) -> int:
    """The calling thread's current CUDA device, as the array framework sees it."""
    if array == "cupy":
        import cupy  # noqa: PLC0415

        return int(cupy.cuda.runtime.getDevice())
    if array == "torch":
        import torch  # noqa: PLC0415

        if torch.cuda.is_available():
            return int(torch.cuda.current_device())
    return int(_ext.current_device()) if cuda_available() else 0


def _frames_device(device, array, backend, hwdec, format):  # noqa: A002
    """frames()'s device and array kind, defaults filled in and checked."""
    if device is None:
        device = "cuda" if cuda_available() and not format else "cpu"
    _choice(device, "device", ("cuda", "cpu", None))
    if device == "cuda":
        if not cuda_available():
            raise RuntimeError("frames(device='cuda'): no CUDA device is usable here; use device='cpu' or None")
        if backend == "cpu" and hwdec == "nvdec":
            raise ValueError("hwdec='nvdec' needs the CUDA backend (backend='auto' or 'cuda')")
        if array is None:
            array = _default_device_array()
        _choice(array, "array", ("cupy", "torch"), "for device='cuda'")
    else:
        if array is None:
            array = "numpy"
        _choice(array, "array", ("numpy", "torch"), "for device='cpu'")
    return device, array


@_public
def frames(path, vf: str = "", *, device: Optional[str] = None, hwdec: str = "auto", backend: str = "auto",
           inflight: int = 4, array: Optional[str] = None, format: Optional[str] = None,  # noqa: A002
           start: Any = None, duration: Any = None, segments: Union[int, str] = 1) -> FrameIterator:
    """Iterates over the frames of a video, filtered by ``vf``, as arrays.

    >>> for f in streamblur.frames("in.mp4", "gblur=sigma=2", device="cuda"):
    ...     y = f.planes[0]          # CuPy array (H, W) uint8 on the GPU; f.pts in seconds
    >>> with streamblur.frames("in.mp4", device="cpu") as it:
    ...     first = next(it)         # numpy planes; leaving the block stops the pipeline

    Ownership: every yielded frame owns its memory (a copy made on the GPU, or
    in host memory, as the pipeline hands the frame over; the copy is complete
    before the frame is yielded, so it can be used on any stream). Frames you
    keep are never overwritten; their memory goes back when the last of their
    plane arrays is gone. Device memory comes from a stream-ordered pool and is
    released on the legacy default stream: work you queue on another stream
    must be finished before you drop the arrays.

    Ctrl-C while ``next()`` waits for a frame raises KeyboardInterrupt at
    once; the pipeline goes on (no frame is lost: a later ``next()`` returns
    the next one) until the iterator is closed (leaving its ``with`` block).

    Parameters
    ----------
    path : str or os.PathLike
        The input video (anything FFmpeg opens).
    vf : str or None, optional
        The filter chain, as for :class:`Chain`; ``''`` (default): no filter.
    device : {'cuda', 'cpu'} or None, optional
        ``'cuda'``: plane arrays in device memory of the current CUDA device
        (CuPy arrays or torch tensors); ``'cpu'``: numpy arrays; None
        (default): ``'cuda'`` when a device is usable, else ``'cpu'``.
    hwdec, backend : str, optional
        As for :func:`process_video` (NVDEC frames go to the filters and to you
        without leaving the GPU).
    inflight : int, optional
        Frames in flight in the pipeline, 1 .. 64 (default 4); the iterator
        also keeps up to that many finished frames ready.
    array : {'cupy', 'torch', 'numpy'} or None, optional
        For ``'cuda'``: ``'cupy'`` or ``'torch'`` (default CuPy when it can be
        imported, else PyTorch); for ``'cpu'``: ``'numpy'`` (default) or
        ``'torch'``.
    format : str or None, optional
        The pixel format frames come in, by FFmpeg's name, as PyAV's
        ``to_ndarray(format=...)``: ``'rgb24'`` (one HxWx3 plane), ``'gray'``
        (one HxW plane: the luma as stored), ``'yuv420p'`` (three planes), or
        another format streamblur processes natively (a ValueError lists
        them); converted after the filters with FFmpeg's swscale (the input's
        colour matrix and range). None (default): the processing format (the
        input's own when it is processed natively). Only with ``device='cpu'``.
    start, duration : float, str or None, optional
        Trimming, as for :func:`process_video`.
    segments : int or 'auto', optional
        1 .. 64 spans at once (or 'auto', as for :func:`process_video`), the frames still in order (docs/python.md), in
        host memory (``device=None`` means ``'cpu'``; ``'cuda'``: ValueError).

    Returns
    -------
    FrameIterator
        A context manager; ``close()`` stops the pipeline early.

    Raises
    ------
    TypeError
        An argument of the wrong type.
    ValueError
        A bad value or filter chain.
    FileNotFoundError
        ``path`` does not exist.
    RuntimeError
        ``device='cuda'`` without a usable GPU, or neither CuPy nor PyTorch
        can be imported for it. An error while decoding raises from the loop.
    ImportError
        ``array='torch'`` or ``'cupy'`` and that package cannot be imported.
    """
    path = _path(path, "path")
    vf = _check_video_args(vf, backend, hwdec, inflight, None)
    format = _optional_str(format, "format", "'rgb24'")  # noqa: A001
    start = _time_seconds(start, "start")
    duration = _time_seconds(duration, "duration")
    if duration is not None and duration <= 0:  # raised here, not from the first next()
        raise ValueError(f"duration must be more than 0 seconds, got {duration}")
    segments = _segments(segments)
    if segments != 1 and device == "cuda":
        raise ValueError("segments other than 1 hand the frames over in host memory only, for now: use device='cpu'")
    device, array = _frames_device("cpu" if segments != 1 else device, array, backend, hwdec, format)
    if vf:
        _ext.check_chain(vf)  # ValueError for a bad chain, before anything starts
    _check_input_exists(path, "frames")
    if array == "torch":
        import torch  # noqa: F401, PLC0415 - fails here, not in the loop, when PyTorch is missing
    elif array == "cupy":
        import cupy  # noqa: F401, PLC0415
    if device == "cuda":
        dev = _framework_device(array)
    else:  # the CUDA backend may still filter (and NVDEC decode) on the current device
        dev = int(_ext.current_device()) if cuda_available() else 0
    stream = _ext.FrameStream(path, vf, backend, hwdec, int(inflight), device == "cuda", dev, _ARRAY_KIND[array],
                              format, start, duration, segments)
    return FrameIterator(stream, device, array)
