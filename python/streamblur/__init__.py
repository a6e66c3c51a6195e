"""streamblur: CUDA (and CPU) Gaussian and box blurs for Python.

Images are uint8 or uint16 arrays, ``HxW`` (grayscale) or ``HxWxC`` with C = 1..4
interleaved channels, each channel blurred alike; borders are clamped to the
edge. Rows may be strided (slices, padded rows); pixels within a row must be
packed (numpy inputs that are not are copied first).

Where the work runs:

* numpy (host) arrays: on the GPU when one is usable (upload, blur, download;
  the call returns the finished numpy result), else on the CPU backend (TBB).
  ``backend="cpu"`` forces the CPU backend. Results agree within +-1.
* CUDA arrays (CuPy, PyTorch, anything with ``__dlpack__``): on the GPU, on the
  array's device, which must be the current device. The result is a new CUDA
  array of the same framework on the same device; nothing passes through the host.
* arrays from :func:`managed_empty` (CUDA managed memory seen by numpy): the
  GPU reads and writes them directly, no host copy; the result is managed too.

``out=`` writes into a given array of the same shape and dtype (``out=img``
blurs in place). ``stream=`` orders the work on the caller's CUDA stream (a raw
``cudaStream_t`` as int, a CuPy ``Stream`` or a ``torch.cuda.Stream``); the
default is the framework's current stream for CuPy and PyTorch arrays (the
legacy default stream unless you chose another) and the legacy default stream
otherwise. For CUDA arrays the call returns as soon as the work is queued on
that stream, as CuPy's and PyTorch's own operations do: later work on the same
stream sees the result; synchronise before using it from another stream.
Calls that return host-visible data (numpy, managed memory) wait for their
work. Configured filters (device weights and scratch) are cached for the last
few spec/shape pairs, so repeated calls allocate nothing.

The filters and their spec syntax are those of the ``streamblur`` CLI::

    streamblur.Chain("gblur=sigma=2,boxblur=radius=1")(img)

Video goes through the streaming pipeline (FFmpeg decode, on the CPU or with
NVDEC, the filter chain, encode): :func:`process_video` for one file,
:func:`process_videos` for many at once over several GPUs, and
:func:`frames` to iterate over the filtered frames as CuPy / PyTorch / numpy
arrays that the caller owns::

    for f in streamblur.frames("in.mp4", "gblur=sigma=2", device="cuda"):
        y = f.planes[0]
"""

from __future__ import annotations

import atexit
import math
import operator
import os
import sys
import weakref
from typing import Any, Callable, Optional

import numpy as np

try:
    from . import _streamblur as _ext
except ImportError as _e:  # the source folder without the built module, usually
    raise ImportError(
        f"streamblur: the compiled module streamblur._streamblur cannot be loaded ({_e}). Install the package "
        "with `python3 -m pip install ./python` from the checkout, and do not run Python from inside python/ "
        "(its streamblur/ source folder would shadow the installed package)."
    ) from _e

__all__ = [
    "gaussian_blur",
    "box_blur",
    "Chain",
    "managed_empty",
    "is_managed",
    "process_video",
    "process_videos",
    "frames",
    "Frame",
    "FrameIterator",
    "cuda_available",
    "device_count",
    "filter_list",
    "filter_help",
    "set_log_level",
]

__version__ = "0.1.0"

MAX_MANAGED_BYTES = int(_ext.MAX_MANAGED_BYTES)


def device_count() -> int:
    """Number of usable CUDA devices.

    Returns
    -------
    int
        The devices CUDA can use here; 0 without a device or a usable driver.

    Raises
    ------
    RuntimeError
        Any other CUDA failure (a broken driver install, a device in a bad
        state), with CUDA's own message: it is not hidden as "no GPU".
    """
    return int(_ext.device_count())


_LOG_LEVELS = {"quiet": -8, "panic": 0, "fatal": 8, "error": 16, "warning": 24, "info": 32, "verbose": 40,
               "debug": 48, "trace": 56}


def set_log_level(level: Any) -> None:
    """Sets which of FFmpeg's own log lines are printed on stderr.

    FFmpeg's log is quiet by default (libx264 prints its statistics only when
    asked), as the command line is without ``-v``; errors still reach you as
    exceptions, which quote FFmpeg's reason.

    >>> streamblur.set_log_level("info")   # FFmpeg's lines, as ffmpeg -loglevel info

    Parameters
    ----------
    level : str or int
        ffmpeg's ``-loglevel`` names: ``'quiet'`` (default), ``'panic'``,
        ``'fatal'``, ``'error'``, ``'warning'``, ``'info'``, ``'verbose'``,
        ``'debug'``, ``'trace'``; or FFmpeg's AV_LOG_* number (-8 .. 56).

    Raises
    ------
    TypeError
        ``level`` is neither a str nor an int.
    ValueError
        An unknown name, or a number out of range.
    """
    if isinstance(level, str):
        if level not in _LOG_LEVELS:
            raise ValueError(f"level must be one of {', '.join(_LOG_LEVELS)}, got {level!r}")
        value = _LOG_LEVELS[level]
    else:
        value = _integer(level, "level", -8, 56)
    _ext.set_log_level(value)


def cuda_available() -> bool:
    """Whether a CUDA device is usable (the blurs then run on the GPU).

    Returns
    -------
    bool
        ``device_count() > 0``.

    Raises
    ------
    RuntimeError
        As :func:`device_count`, for a CUDA failure other than "no device".
    """
    return device_count() > 0


def filter_list() -> str:
    """The registered filters, one per line (as ``streamblur --list-filters``).

    Returns
    -------
    str
        One line per filter: its name, then its one-line help.
    """
    return _ext.filter_list()


def _filter_names() -> list:
    return [line.split()[0] for line in filter_list().splitlines() if line.strip()]


def filter_help(name: str) -> str:
    """The options of one filter (as ``streamblur --help-filter NAME``).

    Parameters
    ----------
    name : str
        A filter name from :func:`filter_list`, such as ``'gblur'``.

    Returns
    -------
    str
        The filter's help and one line per option (name, type, default,
        range, help), then the region options every filter takes.

    Raises
    ------
    TypeError
        ``name`` is not a str.
    ValueError
        No filter has that name (the message lists the filters).
    """
    if not isinstance(name, str):
        raise TypeError(f"filter_help: name must be a str (a filter name such as 'gblur'), got {type(name).__name__}")
    names = _filter_names()
    if name not in names:
        raise ValueError(f"filter_help: unknown filter {name!r}; the filters are {', '.join(names)}")
    return _ext.filter_help(name)


# ---------------------------------------------------------------- arrays


_FRAMEWORK_OF_TYPE: dict = {}  # type -> framework name, filled as types are seen (a call's host time counts)


def _framework(obj: Any) -> str:
    """'numpy', 'cupy', 'torch' or 'other', from the object's type."""
    t = type(obj)
    fw = _FRAMEWORK_OF_TYPE.get(t)
    if fw is not None:
        return fw
    if isinstance(obj, np.ndarray):
        fw = "numpy"
    else:
        module = t.__module__ or ""
        if module == "cupy" or module.startswith("cupy."):
            fw = "cupy"
        elif module == "torch" or module.startswith("torch."):
            fw = "torch"
        else:
            fw = "other"
    if fw == "cupy":
        _register_cupy(t)
    if len(_FRAMEWORK_OF_TYPE) < 64:
        _FRAMEWORK_OF_TYPE[t] = fw
    return fw


# CuPy's array type and cupy.empty, once CuPy arrays have been seen (the
# fast path allocates outputs with it).
_CUPY_NDARRAY: Any = None
_CUPY_EMPTY: Any = None


def _register_cupy(t: type) -> None:
    """Gives the extension's fast path (_ext.run_cupy) CuPy's array type, once CuPy's arrays are seen."""
    global _CUPY_NDARRAY, _CUPY_EMPTY
    cupy = sys.modules.get("cupy")
    if cupy is not None and t is getattr(cupy, "ndarray", None):
        _ext.register_cupy(cupy.ndarray, cupy.cuda.get_current_stream, np.dtype(np.uint8), np.dtype(np.uint16))
        _CUPY_NDARRAY, _CUPY_EMPTY = cupy.ndarray, cupy.empty


def _pixels_packed(shape, strides, itemsize: int) -> bool:
    """Pixels within each row contiguous and rows in increasing order (byte strides)."""
    if len(shape) not in (2, 3):
        return True  # the extension raises the shape error
    h, w = shape[0], shape[1]
    c = shape[2] if len(shape) == 3 else 1
    if h == 0 or w == 0:
        return True
    if len(shape) == 3 and c > 1 and strides[2] != itemsize:
        return False
    if w > 1 and strides[1] != c * itemsize:
        return False
    return h == 1 or strides[0] >= w * c * itemsize


_ARRAY_KINDS = "a numpy, CuPy or PyTorch array (or anything with __dlpack__ or __array_interface__)"


def _not_an_array(obj: Any, name: str) -> TypeError:
    return TypeError(f"{name} must be {_ARRAY_KINDS} of uint8 or uint16, got {type(obj).__name__}")


def _as_numpy(img: Any) -> np.ndarray:
    """PIL images, nested lists, anything numpy makes a numeric array of; TypeError naming the image otherwise."""
    if img is None or isinstance(img, (str, bytes, bytearray)):
        raise _not_an_array(img, "image")
    try:
        arr = np.asarray(img)
    except Exception as e:  # noqa: BLE001 - ragged lists, objects whose __array__ fails
        raise TypeError(f"image must be {_ARRAY_KINDS}; numpy cannot make an array of this "
                        f"{type(img).__name__} ({e})") from None
    if arr.dtype.kind not in "biufc":  # objects, strings, dates: nothing an image holds
        raise _not_an_array(img, "image")
    return arr


def _prepare_input(img: Any):
    """(array the extension can take, framework name)."""
    fw = _framework(img)
    if fw == "numpy":
        if img.dtype.char not in "BH":  # uint8, uint16 (either byte order)
            raise TypeError(f"image has dtype {img.dtype}; streamblur takes uint8 or uint16 images")
        if img.dtype.byteorder not in ("=", "|") and img.dtype.kind in "ui":
            img = img.astype(img.dtype.newbyteorder("="))
        if not _pixels_packed(img.shape, img.strides, img.itemsize):
            img = np.ascontiguousarray(img)
        return img, fw
    if fw == "cupy":
        if not _pixels_packed(img.shape, img.strides, img.itemsize):
            import cupy  # noqa: PLC0415

            img = cupy.ascontiguousarray(img)
        return img, fw
    if fw == "torch":
        if img.requires_grad:
            img = img.detach()
        item = img.element_size()
        if not _pixels_packed(tuple(img.shape), tuple(s * item for s in img.stride()), item):
            img = img.contiguous()
        return img, fw
    if hasattr(img, "__dlpack__"):
        return img, fw
    return _prepare_input(_as_numpy(img))[0], "numpy"


def _new_output(img: Any, fw: str, where: str):
    shape = tuple(int(s) for s in img.shape)
    if fw == "cupy":
        import cupy  # noqa: PLC0415

        return cupy.empty(shape, dtype=img.dtype)
    if fw == "torch":
        import torch  # noqa: PLC0415

        return torch.empty(shape, dtype=img.dtype, device=img.device)
    if where == "managed":
        return managed_empty(shape, img.dtype)
    if where == "cuda":
        bytes_per_sample = 1 if str(getattr(img, "dtype", "uint8")).endswith("uint8") else 2
        return _ext.cuda_empty(list(shape), bytes_per_sample)
    if fw == "numpy":
        return np.empty(shape, dtype=img.dtype)
    return np.empty(shape, dtype=np.asarray(img).dtype)


def _stream_handle(stream: Any) -> int:
    """A raw cudaStream_t from an int, a CuPy Stream (.ptr) or a torch Stream (.cuda_stream)."""
    if stream is None:
        return 0
    if isinstance(stream, (bool,)):
        raise TypeError("stream= must be a CUDA stream (int handle, CuPy Stream or torch.cuda.Stream), got a bool")
    if isinstance(stream, int):
        if stream < 0:
            raise ValueError(f"stream= handle must not be negative, got {stream}")
        if stream >= 2**64:
            raise ValueError(f"stream= handle {stream} is out of range (a cudaStream_t is 64 bits)")
        return stream
    for attr in ("cuda_stream", "ptr"):
        value = getattr(stream, attr, None)
        if isinstance(value, int):
            return value
    raise TypeError(
        f"stream= must be a CUDA stream: an int cudaStream_t, a CuPy Stream (.ptr) or a torch.cuda.Stream "
        f"(.cuda_stream); got {type(stream).__name__}"
    )


def _current_framework_stream(arr: Any, fw: str) -> int:
    """The framework's current stream for a CUDA array (0, the legacy default, for host arrays)."""
    if fw == "cupy":
        return sys.modules["cupy"].cuda.get_current_stream().ptr  # loaded: the array is CuPy's
    if fw == "torch" and arr.is_cuda:
        import torch  # noqa: PLC0415

        return int(torch.cuda.current_stream(arr.device).cuda_stream)
    return 0


def _check_out(out: Any, img: Any) -> Any:
    if not (hasattr(out, "shape") and hasattr(out, "dtype")):
        raise TypeError(f"out= must be {_ARRAY_KINDS} of the image's shape and dtype, or None; "
                        f"got {type(out).__name__}")
    # The common case first: out= of the image's own array type (shapes and
    # dtypes compare directly; the extension checks the layout of both).
    if type(out) is type(img) and not isinstance(out, np.ndarray):
        if out.shape != img.shape:
            raise ValueError(f"out= has shape {tuple(out.shape)} but the image has shape {tuple(img.shape)}")
        if out.dtype != img.dtype:
            raise TypeError(f"out= has dtype {out.dtype} but the image has dtype {img.dtype}")
        return out
    fw = _framework(out)
    if fw == "numpy" and not out.flags.writeable:
        raise ValueError("out= is read-only")
    shape_o = tuple(int(s) for s in out.shape)
    shape_i = tuple(int(s) for s in img.shape)
    if shape_o != shape_i:
        raise ValueError(f"out= has shape {shape_o} but the image has shape {shape_i}")
    # Same framework: the dtypes compare directly (numpy's str(dtype) runs
    # Python code, a large share of the module's host time per call).
    same = out.dtype == img.dtype if type(out) is type(img) else (
        str(out.dtype).replace("torch.", "") == str(img.dtype).replace("torch.", ""))
    if not same:
        raise TypeError(f"out= has dtype {out.dtype} but the image has dtype {img.dtype}")
    if fw == "numpy" and not _pixels_packed(out.shape, out.strides, out.itemsize):
        raise ValueError("out= must have C-contiguous pixels within each row (rows may be strided)")
    return out


# Calls on CuPy arrays first try the extension's fast path (_ext.run_cupy:
# the arrays' attributes read in C++, the chain from a cache keyed on the
# spec object and the shape), which declines, doing nothing, whatever it does
# not know; _run is the general path and gives the errors. Without out= the
# output is allocated here first, as the general path would (cupy.empty of
# the image's shape and dtype), and handed to whichever path runs.
_FAST_BACKENDS = ("auto", "cuda")


def _call(spec: str, img: Any, out: Any, stream: Any, backend: str) -> Any:
    if backend in _FAST_BACKENDS:
        if out is None and type(img) is _CUPY_NDARRAY:
            out = _CUPY_EMPTY(img.shape, dtype=img.dtype)
        if out is not None and _ext.run_cupy(img, out, spec, stream):
            return out
    return _run(spec, img, out, stream, backend)


def _run(spec: str, img: Any, out: Any, stream: Any, backend: str) -> Any:
    _choice(backend, "backend", _BACKENDS)
    handle = _stream_handle(stream)
    src, fw = _prepare_input(img)
    if stream is None and fw in ("cupy", "torch"):
        handle = _current_framework_stream(src, fw)
    if out is None:
        where = _ext.memory_kind(src)  # also checks dtype, shape, device
        dst = _new_output(src, fw, where)
    else:
        dst = _check_out(out, src)
    try:
        _ext.run_filter(src, dst, spec, backend, handle)
    except TypeError as e:
        if "incompatible function arguments" not in str(e):
            raise
        # An array object the extension cannot read (neither DLPack nor the buffer protocol).
        raise TypeError(f"image and out= must be {_ARRAY_KINDS}; got {type(img).__name__} and "
                        f"{type(dst).__name__}") from None
    return dst


def _number(x: Any, name: str) -> float:
    if isinstance(x, (str, bytes, bytearray)):
        raise TypeError(f"{name} must be a number, got {type(x).__name__}")
    try:
        v = float(x)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be a number, got {type(x).__name__}") from None
    except OverflowError:
        raise ValueError(f"{name} is out of range (too large for a float)") from None
    if not math.isfinite(v):
        raise ValueError(f"{name} must be finite, got {x!r}")
    return v


INT32_MAX = 2**31 - 1
INT64_MAX = 2**63 - 1


def _integer(x: Any, name: str, lo: Optional[int] = None, hi: Optional[int] = None) -> int:
    """int(x) for an int or numpy integer (not a bool) in [lo, hi]: TypeError / ValueError naming `name`."""
    if isinstance(x, bool) or not isinstance(x, (int, np.integer)):
        raise TypeError(f"{name} must be an integer, got {type(x).__name__}")
    v = int(x)
    if (lo is not None and v < lo) or (hi is not None and v > hi):
        if hi is None:
            raise ValueError(f"{name} must be at least {lo}, got {v}")
        raise ValueError(f"{name} must be between {lo} and {hi}, got {v}")
    return v


def _choice(x: Any, name: str, choices: tuple, where: str = "") -> str:
    """x, one of the str `choices`: TypeError for another type, ValueError for another str.
    where: said after the choices ("for device='cpu'")."""
    if isinstance(x, str) and x in choices:
        return x
    listed = ", ".join(repr(c) for c in choices[:-1]) + f" or {choices[-1]!r}" + (f" {where}" if where else "")
    if not isinstance(x, str):
        raise TypeError(f"{name} must be {listed} (a str), got {type(x).__name__}")
    raise ValueError(f"{name} must be {listed}, got {x!r}")


def _optional_str(x: Any, name: str, example: str) -> str:
    """'' for None, else x, which must be a str."""
    if x is None:
        return ""
    if not isinstance(x, str):
        raise TypeError(f"{name} must be a str ({example}) or None, got {type(x).__name__}")
    return x


def _path(p: Any, name: str) -> str:
    """A str path from a str or os.PathLike; TypeError naming `name` otherwise (bytes paths too)."""
    try:
        s = os.fspath(p)
    except TypeError:
        raise TypeError(f"{name} must be a path (a str or os.PathLike), got {type(p).__name__}") from None
    if not isinstance(s, str):
        raise TypeError(f"{name} must be a str path (or an os.PathLike giving one), got {type(s).__name__}; "
                        "decode bytes paths with os.fsdecode()")
    return s


def _paths(paths: Any, name: str) -> list:
    """A list of str paths from an iterable of str or os.PathLike paths."""
    if isinstance(paths, (str, bytes, os.PathLike)):
        raise TypeError(f"{name} must be a list of paths, not one path")
    try:
        items = list(paths)
    except TypeError:
        raise TypeError(f"{name} must be a list of paths, got {type(paths).__name__}") from None
    return [_path(p, f"{name}[{i}]") for i, p in enumerate(items)]


_BACKENDS = ("auto", "cpu", "cuda")
_HWDECS = ("auto", "nvdec", "none")


# Specs already built, by the arguments and their types (True must not pass
# for radius 1), one table per filter: repeated calls skip the checks and the
# formatting, and get the same str object (the fast path's cache compares
# specs by identity).
_GBLUR_SPECS: dict = {}
_BOXBLUR_SPECS: dict = {}


def _cached_spec(table: dict, key: tuple, build: Callable[..., str], *args: Any) -> str:
    try:
        return table[key]
    except (KeyError, TypeError):  # TypeError: an unhashable argument
        pass
    spec = build(*args)
    try:
        if len(table) < 256:
            table[key] = spec
    except TypeError:
        pass
    return spec


def _gblur_spec(sigma: Any, radius: Optional[int]) -> str:
    s = _number(sigma, "sigma")
    if not (_ext.MIN_SIGMA <= s <= _ext.MAX_SIGMA):
        raise ValueError(f"sigma {s:g} is out of range [{_ext.MIN_SIGMA:g}, {_ext.MAX_SIGMA:g}]")
    r = -1
    if radius is not None:
        r = _integer(radius, "radius")
        if not (0 <= r <= _ext.MAX_GAUSS_RADIUS):
            raise ValueError(f"radius {r} is out of range [0, {_ext.MAX_GAUSS_RADIUS}] (or None for ceil(3 sigma))")
    return f"gblur=sigma={s!r}:radius={r}"


def _boxblur_spec(radius: Any) -> str:
    r = _integer(radius, "radius")
    if not (0 <= r <= _ext.MAX_BOX_RADIUS):
        raise ValueError(f"radius {r} is out of range [0, {_ext.MAX_BOX_RADIUS}]")
    return f"boxblur=radius={r}"


# ---------------------------------------------------------------- public API


def gaussian_blur(img: Any, sigma: float, radius: Optional[int] = None, *, out: Any = None,
                  stream: Any = None, backend: str = "auto") -> Any:
    """Gaussian blur with weights exp(-i^2 / (2 sigma^2)), i in [-radius, radius].

    Each channel is blurred on its own; borders are clamped to the edge.

    >>> y = streamblur.gaussian_blur(img, 2.0)       # radius ceil(3 sigma) = 6

    Parameters
    ----------
    img : array
        uint8 or uint16, HxW or HxWxC (C = 1..4): a numpy array (or anything
        numpy makes one of, such as a PIL image), a CuPy array, a PyTorch
        tensor or any DLPack CUDA array.
    sigma : float
        The Gaussian's standard deviation in pixels, 0.1 .. 100.
    radius : int or None, optional
        None (default) for ceil(3 sigma), else 0 .. 1024.
    out : array, optional
        Written instead of a new array: the image's shape and dtype, pixels
        packed within each row (``out=img`` blurs in place).
    stream : int, CuPy Stream or torch.cuda.Stream, optional
        The CUDA stream the work is ordered on (an int is a raw
        ``cudaStream_t``). Default: the framework's current stream for CuPy
        and PyTorch arrays, the legacy default stream otherwise. Calls on CUDA
        arrays return once the work is queued (see the module docstring).
    backend : {'auto', 'cpu', 'cuda'}, optional
        ``'auto'`` (default): the GPU when one is usable, else the CPU
        backend; ``'cpu'`` forces the CPU backend; ``'cuda'`` insists on the GPU.

    Returns
    -------
    array
        The result, of the input's kind: numpy for numpy input, a CUDA array
        of the same framework on the same device for CUDA input, managed
        memory for managed input; ``out`` itself when given.

    Raises
    ------
    TypeError
        The image (or ``out``) is not an array of uint8 or uint16, ``out``
        has another dtype, or an argument has the wrong type (``sigma`` not a number, ``radius`` not an integer, ``stream``
        not a stream, ``backend`` not a str).
    ValueError
        A value out of range (sigma, radius, a negative stream handle), an image that
        is not HxW or HxWxC with C in 1..4, an empty image, ``out`` of another
        shape or read-only, an unknown ``backend``.
    RuntimeError
        ``backend='cuda'`` without a usable GPU, or a CUDA failure.
    """
    key = (sigma, radius, type(sigma), type(radius))
    try:
        spec = _GBLUR_SPECS[key]
    except (KeyError, TypeError):
        spec = _cached_spec(_GBLUR_SPECS, key, _gblur_spec, sigma, radius)
    return _call(spec, img, out, stream, backend)


def box_blur(img: Any, radius: int, *, out: Any = None, stream: Any = None, backend: str = "auto") -> Any:
    """Mean over the (2 radius + 1) x (2 radius + 1) window (exact, rounded half up).

    Each channel is blurred on its own; borders are clamped to the edge.

    Parameters
    ----------
    img : array
        uint8 or uint16, HxW or HxWxC (C = 1..4): a numpy array (or anything
        numpy makes one of, such as a PIL image), a CuPy array, a PyTorch
        tensor or any DLPack CUDA array.
    radius : int
        0 .. 4096 (0 copies the image).
    out : array, optional
        Written instead of a new array: the image's shape and dtype, pixels
        packed within each row (``out=img`` blurs in place).
    stream : int, CuPy Stream or torch.cuda.Stream, optional
        The CUDA stream the work is ordered on (an int is a raw
        ``cudaStream_t``). Default: the framework's current stream for CuPy
        and PyTorch arrays, the legacy default stream otherwise. Calls on CUDA
        arrays return once the work is queued (see the module docstring).
    backend : {'auto', 'cpu', 'cuda'}, optional
        ``'auto'`` (default): the GPU when one is usable, else the CPU
        backend; ``'cpu'`` forces the CPU backend; ``'cuda'`` insists on the GPU.

    Returns
    -------
    array
        The result, of the input's kind: numpy for numpy input, a CUDA array
        of the same framework on the same device for CUDA input, managed
        memory for managed input; ``out`` itself when given.

    Raises
    ------
    TypeError
        The image (or ``out``) is not an array of uint8 or uint16, ``out``
        has another dtype, or an argument has the wrong type (``radius`` not an integer, ``stream``
        not a stream, ``backend`` not a str).
    ValueError
        A value out of range (radius, a negative stream handle), an image that
        is not HxW or HxWxC with C in 1..4, an empty image, ``out`` of another
        shape or read-only, an unknown ``backend``.
    RuntimeError
        ``backend='cuda'`` without a usable GPU, or a CUDA failure.
    """
    key = (radius, type(radius))
    try:
        spec = _BOXBLUR_SPECS[key]
    except (KeyError, TypeError):
        spec = _cached_spec(_BOXBLUR_SPECS, key, _boxblur_spec, radius)
    return _call(spec, img, out, stream, backend)


class Chain:
    """A filter chain in the CLI's syntax, parsed once, applied to many images.

    >>> blur = streamblur.Chain("gblur=sigma=2,boxblur=radius=1")
    >>> result = blur(img)            # same as box_blur(gaussian_blur(img, 2), 1)

    Options such as ``planes=`` are ignored for images: an image is one plane and
    every filter of the chain applies to all of its channels. Of the region
    options only ``box=`` applies: a regions file (``regions=FILE``) places
    its boxes by frame index or pts, which an image has not, so calling a
    chain with one raises ValueError (use it with :func:`process_video`).

    Parameters
    ----------
    spec : str
        The chain, as the CLI's ``--vf`` takes it (:func:`filter_list` and
        :func:`filter_help` give the filters and their options).

    Attributes
    ----------
    spec : str
        The chain as given.
    description : str
        The chain as parsed, each filter with the values of its options.

    Raises
    ------
    TypeError
        ``spec`` is not a str.
    ValueError
        ``spec`` is empty or not a valid chain (an unknown filter or option, a
        bad or out-of-range value); the message is one line saying which.
    """

    def __init__(self, spec: str):
        if not isinstance(spec, str):
            raise TypeError(f"the chain spec must be a str, got {type(spec).__name__}")
        self.spec = spec
        self.description = _ext.check_chain(spec)  # ValueError for a bad spec

    def __call__(self, img: Any, *, out: Any = None, stream: Any = None, backend: str = "auto") -> Any:
        """Applies the chain to one image.

        Parameters
        ----------
        img : array
            uint8 or uint16, HxW or HxWxC (C = 1..4): a numpy array (or anything
            numpy makes one of, such as a PIL image), a CuPy array, a PyTorch
            tensor or any DLPack CUDA array.
        out : array, optional
            Written instead of a new array: the image's shape and dtype, pixels
            packed within each row (``out=img`` blurs in place).
        stream : int, CuPy Stream or torch.cuda.Stream, optional
            The CUDA stream the work is ordered on (an int is a raw
            ``cudaStream_t``). Default: the framework's current stream for CuPy
            and PyTorch arrays, the legacy default stream otherwise. Calls on CUDA
            arrays return once the work is queued (see the module docstring).
        backend : {'auto', 'cpu', 'cuda'}, optional
            ``'auto'`` (default): the GPU when one is usable, else the CPU
            backend; ``'cpu'`` forces the CPU backend; ``'cuda'`` insists on the GPU.

        Returns
        -------
        array
            The result, of the input's kind: numpy for numpy input, a CUDA array
            of the same framework on the same device for CUDA input, managed
            memory for managed input; ``out`` itself when given.

        Raises
        ------
        TypeError
            The image (or ``out``) is not an array of uint8 or uint16, ``out``
            has another dtype, or an argument has the wrong type (``stream``
            not a stream, ``backend`` not a str).
        ValueError
            A value out of range (a negative stream handle), an image that
            is not HxW or HxWxC with C in 1..4, an empty image, ``out`` of another
            shape or read-only, an unknown ``backend``; a chain with
            ``regions=FILE`` (it needs video frames with timestamps).
        RuntimeError
            ``backend='cuda'`` without a usable GPU, or a CUDA failure.
        """
        return _call(self.spec, img, out, stream, backend)

    def __repr__(self) -> str:
        return f"Chain({self.spec!r})"


def managed_empty(shape, dtype=np.uint8) -> np.ndarray:
    """A numpy array in CUDA managed (unified) memory.

    numpy reads and writes it directly, and the blur functions hand it to the
    GPU as it is (no staging copy; the result is managed too). This is for
    convenience, not speed: pages migrate between host and device on demand,
    which is slower than explicit copies from pinned memory. At most 1 GiB
    (``MAX_MANAGED_BYTES``).

    Parameters
    ----------
    shape : int or tuple of int
        The array's shape, as for ``numpy.empty``.
    dtype : numpy dtype, optional
        Its dtype (default ``numpy.uint8``).

    Returns
    -------
    numpy.ndarray
        Uninitialised, in managed memory. Without a usable GPU (or for an
        empty shape) an ordinary numpy array (see :func:`is_managed`), so code
        written for it still runs.

    Raises
    ------
    TypeError
        ``shape`` is not an int or a sequence of ints, or ``dtype`` is not a
        numpy dtype or holds Python objects.
    ValueError
        A negative dimension, or more than 1 GiB.
    RuntimeError
        The CUDA allocation failed.
    """
    shape = _shape(shape)
    try:
        dt = np.dtype(dtype)
    except TypeError:
        raise TypeError(f"managed_empty: dtype must be a numpy dtype (such as np.uint8), got {dtype!r}") from None
    if dt.hasobject:
        raise TypeError(f"managed_empty: dtype {dt} holds Python objects, which cannot live in managed memory")
    nbytes = math.prod(shape) * dt.itemsize
    if nbytes > MAX_MANAGED_BYTES:
        raise ValueError(
            f"managed_empty: shape {shape} of {dt} needs {nbytes} bytes; managed arrays are limited to "
            f"{MAX_MANAGED_BYTES} bytes (1 GiB), use device arrays (CuPy, PyTorch) for more"
        )
    if not cuda_available() or nbytes == 0:
        return np.empty(shape, dtype=dt)
    raw = _ext.managed_bytes(nbytes)
    return raw.view(dt).reshape(shape)


def _shape(shape: Any) -> tuple:
    """A tuple of ints >= 0 from an int or a sequence of ints (numpy's rule)."""
    if isinstance(shape, (int, np.integer)) and not isinstance(shape, bool):
        shape = (shape,)
    if isinstance(shape, (str, bytes, bytearray)):
        raise TypeError(f"managed_empty: shape must be an int or a tuple of ints, got {type(shape).__name__}")
    try:
        shape = tuple(operator.index(s) for s in shape)
    except TypeError:
        raise TypeError(f"managed_empty: shape must be an int or a tuple of ints, got {shape!r}") from None
    if any(s < 0 for s in shape):
        raise ValueError(f"managed_empty: negative dimension in shape {shape}")
    return shape


def is_managed(arr: Any) -> bool:
    """Whether ``arr`` lives in CUDA managed memory (e.g. from :func:`managed_empty`).

    Parameters
    ----------
    arr : object
        Any object; arrays that are not readable as arrays give False.

    Returns
    -------
    bool
        True for a non-empty array in managed memory; False otherwise, and
        always without a usable GPU.

    Raises
    ------
    RuntimeError
        As :func:`device_count`, for a CUDA failure other than "no device".
    """
    if not cuda_available():
        return False
    if isinstance(arr, np.ndarray):
        return arr.size > 0 and bool(_ext.is_managed_pointer(arr.__array_interface__["data"][0]))
    try:
        return _ext.memory_kind(arr) == "managed"
    except (TypeError, ValueError):
        return False


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


def _time_seconds(x: Any, name: str) -> Optional[float]:
    """None, a number of seconds, or a str in ffmpeg's time syntax ('12.5', '1:02.5')."""
    if x is None:
        return None
    if isinstance(x, str):
        try:
            return _ext.parse_time(x)
        except ValueError as e:
            raise ValueError(f"{name}: {e}") from None
    if isinstance(x, (bytes, bytearray)):
        raise TypeError(f"{name} must be a number of seconds or a str such as '1:02.5', got {type(x).__name__}")
    return _number(x, name)


def process_video(src: str, dst: str, vf: Optional[str] = "", codec: Optional[str] = None, *,
                  crf: Optional[int] = None, preset: Optional[str] = None, backend: str = "auto",
                  hwdec: str = "auto", device: int = 0, overwrite: bool = False, inflight: int = 4,
                  progress: Optional[Callable[[dict], Any]] = None, start: Any = None, duration: Any = None,
                  frames: Optional[int] = None, strict_regions: bool = False) -> dict:
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
        ``'nvdec'`` insists (an error where it cannot); ``'none'`` always
        decodes on the CPU.
    device : int, optional
        The CUDA device index to run on (default 0).
    overwrite : bool, optional
        False (the default, as the CLI without -y) refuses an existing ``dst``
        before anything runs; True replaces it, only once the new output is
        complete.
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
        is a warning on stderr by default; True makes it a ValueError, and no
        ``dst`` is written.

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
    _check_input_exists(src, "process_video")
    return _ext.process_video(src, dst, vf, codec, crf, preset, backend, hwdec, device, bool(overwrite),
                              int(inflight), progress, start, duration, frames, bool(strict_regions))


def process_videos(inputs, outputs=None, *, out_dir=None, vf: Optional[str] = "", codec: Optional[str] = None,
                   crf: Optional[int] = None, preset: Optional[str] = None, backend: str = "auto",
                   hwdec: str = "auto", jobs: int = 2, devices: Any = "all", inflight: int = 4,
                   overwrite: bool = False, progress: Optional[Callable[[dict], Any]] = None) -> list:
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
    vf, codec, crf, preset, backend, hwdec, inflight, overwrite
        As for :func:`process_video`, for every file (``codec=None``: each
        output's default encoder).
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
    device_list = _device_list(devices)
    # Devices that do not exist, a device listed twice, two inputs with one
    # output, an output that is an input: ValueError from run_batch's checks.
    if out_dir is not None and inputs:
        os.makedirs(out_dir, exist_ok=True)
    if not inputs:
        return []
    return list(_ext.process_videos(inputs, outputs, vf, codec, crf, preset, backend, hwdec, jobs, device_list,
                                    int(inflight), bool(overwrite), progress))


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


# ---------------------------------------------------------------- frames


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
# Calls on device arrays may return with their GPU work queued; the module holds
# their arrays until it has run. At exit: wait for it, then let them go.
atexit.register(lambda: _ext.release_queued_calls(True))

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


def frames(path, vf: str = "", *, device: Optional[str] = None, hwdec: str = "auto", backend: str = "auto",
           inflight: int = 4, array: Optional[str] = None, format: Optional[str] = None,  # noqa: A002
           start: Any = None, duration: Any = None) -> FrameIterator:
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
    the next one) until the iterator is closed, e.g. by leaving its ``with``
    block.

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
        (one HxW plane: the luma as stored), ``'yuv420p'`` (three planes), or another format
        streamblur processes natively (a ValueError lists them); converted
        after the filters with FFmpeg's swscale (the input's colour matrix and
        range). None (default): the
        processing format (the input's own when it is processed natively).
        Only with ``device='cpu'``.
    start, duration : float, str or None, optional
        Trimming, as for :func:`process_video`.

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
    device, array = _frames_device(device, array, backend, hwdec, format)
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
                              format, start, duration)
    return FrameIterator(stream, device, array)


# ---------------------------------------------------------------- test helpers
