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
"""

from __future__ import annotations

import math
import os
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
    "cuda_available",
    "device_count",
    "filter_list",
    "filter_help",
]

__version__ = "0.1.0"

MAX_MANAGED_BYTES = int(_ext.MAX_MANAGED_BYTES)


def device_count() -> int:
    """Number of usable CUDA devices (0 without a driver or a device)."""
    return int(_ext.device_count())


def cuda_available() -> bool:
    """True when a CUDA device is usable; the blurs then run on the GPU."""
    return device_count() > 0


def filter_list() -> str:
    """The registered filters, one per line (as ``streamblur --list-filters``)."""
    return _ext.filter_list()


def filter_help(name: str) -> str:
    """The options of filter ``name`` (as ``streamblur --help-filter NAME``)."""
    return _ext.filter_help(name)


# ---------------------------------------------------------------- arrays


def _framework(obj: Any) -> str:
    """'numpy', 'cupy', 'torch' or 'other', from the object's type."""
    if isinstance(obj, np.ndarray):
        return "numpy"
    module = type(obj).__module__ or ""
    if module == "cupy" or module.startswith("cupy."):
        return "cupy"
    if module == "torch" or module.startswith("torch."):
        return "torch"
    return "other"


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


def _prepare_input(img: Any):
    """(array the extension can take, framework name)."""
    fw = _framework(img)
    if fw == "numpy":
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
    # PIL images, lists, anything numpy understands.
    return _prepare_input(np.asarray(img))[0], "numpy"


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
        import cupy  # noqa: PLC0415

        return int(cupy.cuda.get_current_stream().ptr)
    if fw == "torch" and arr.is_cuda:
        import torch  # noqa: PLC0415

        return int(torch.cuda.current_stream(arr.device).cuda_stream)
    return 0


def _check_out(out: Any, img: Any) -> Any:
    fw = _framework(out)
    if fw == "numpy" and not out.flags.writeable:
        raise ValueError("out= is read-only")
    shape_o = tuple(int(s) for s in out.shape)
    shape_i = tuple(int(s) for s in img.shape)
    if shape_o != shape_i:
        raise ValueError(f"out= has shape {shape_o} but the image has shape {shape_i}")
    if str(out.dtype).replace("torch.", "") != str(img.dtype).replace("torch.", ""):
        raise TypeError(f"out= has dtype {out.dtype} but the image has dtype {img.dtype}")
    if fw == "numpy" and not _pixels_packed(out.shape, out.strides, out.itemsize):
        raise ValueError("out= must have C-contiguous pixels within each row (rows may be strided)")
    return out


def _run(spec: str, img: Any, out: Any, stream: Any, backend: str) -> Any:
    if backend not in ("auto", "cpu", "cuda"):
        raise ValueError(f"backend must be 'auto', 'cpu' or 'cuda', got {backend!r}")
    handle = _stream_handle(stream)
    src, fw = _prepare_input(img)
    if stream is None and fw in ("cupy", "torch"):
        handle = _current_framework_stream(src, fw)
    if out is None:
        where = _ext.memory_kind(src)  # also checks dtype, shape, device
        dst = _new_output(src, fw, where)
    else:
        dst = _check_out(out, src)
    _ext.run_filter(src, dst, spec, backend, handle)
    return dst


def _number(x: Any, name: str) -> float:
    try:
        v = float(x)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be a number, got {type(x).__name__}") from None
    if not math.isfinite(v):
        raise ValueError(f"{name} must be finite, got {x!r}")
    return v


def _integer(x: Any, name: str) -> int:
    if isinstance(x, bool) or not isinstance(x, (int, np.integer)):
        raise TypeError(f"{name} must be an integer, got {type(x).__name__}")
    return int(x)


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

    img: uint8/uint16 array, HxW or HxWxC (C <= 4); numpy, CuPy, PyTorch or any
    DLPack CUDA array. sigma: 0.1 .. 100. radius: None for ceil(3 sigma), else
    0 .. 1024. Returns an array of the input's kind (numpy for numpy, CUDA
    array on the same device for CUDA input, managed for managed input), or
    ``out`` when given. See the module docstring for ``stream`` and ``backend``.
    """
    return _run(_gblur_spec(sigma, radius), img, out, stream, backend)


def box_blur(img: Any, radius: int, *, out: Any = None, stream: Any = None, backend: str = "auto") -> Any:
    """Mean over the (2 radius + 1) x (2 radius + 1) window (exact, rounded half up).

    radius: 0 .. 4096 (0 copies the image). Arrays as for :func:`gaussian_blur`.
    """
    return _run(_boxblur_spec(radius), img, out, stream, backend)


class Chain:
    """A filter chain in the CLI's syntax, parsed once, applied to many images.

    >>> blur = streamblur.Chain("gblur=sigma=2,boxblur=radius=1")
    >>> result = blur(img)            # same as box_blur(gaussian_blur(img, 2), 1)

    Options such as ``planes=`` are ignored for images: an image is one plane and
    every filter of the chain applies to all of its channels.
    """

    def __init__(self, spec: str):
        if not isinstance(spec, str):
            raise TypeError(f"the chain spec must be a str, got {type(spec).__name__}")
        self.spec = spec
        self.description = _ext.check_chain(spec)  # ValueError for a bad spec

    def __call__(self, img: Any, *, out: Any = None, stream: Any = None, backend: str = "auto") -> Any:
        return _run(self.spec, img, out, stream, backend)

    def __repr__(self) -> str:
        return f"Chain({self.spec!r})"


def managed_empty(shape, dtype=np.uint8) -> np.ndarray:
    """A numpy array in CUDA managed (unified) memory.

    numpy reads and writes it directly, and the blur functions hand it to the
    GPU as it is (no staging copy; the result is managed too). This is for
    convenience, not speed: pages migrate between host and device on demand,
    which is slower than explicit copies from pinned memory. At most 1 GiB.

    Without a usable GPU it returns an ordinary numpy array (see
    :func:`is_managed`), so code written for it still runs.
    """
    if isinstance(shape, (int, np.integer)):
        shape = (int(shape),)
    shape = tuple(int(s) for s in shape)
    if any(s < 0 for s in shape):
        raise ValueError(f"managed_empty: negative dimension in shape {shape}")
    dt = np.dtype(dtype)
    nbytes = int(np.prod(shape, dtype=np.int64)) * dt.itemsize
    if nbytes > MAX_MANAGED_BYTES:
        raise ValueError(
            f"managed_empty: {shape} of {dt} needs {nbytes} bytes; managed arrays are limited to "
            f"{MAX_MANAGED_BYTES} bytes (1 GiB), use device arrays (CuPy, PyTorch) for more"
        )
    if not cuda_available() or nbytes == 0:
        return np.empty(shape, dtype=dt)
    raw = _ext.managed_bytes(nbytes)
    return raw.view(dt).reshape(shape)


def is_managed(arr: Any) -> bool:
    """True when ``arr`` lives in CUDA managed memory (e.g. from :func:`managed_empty`)."""
    if not cuda_available():
        return False
    if isinstance(arr, np.ndarray):
        return arr.size > 0 and bool(_ext.is_managed_pointer(arr.__array_interface__["data"][0]))
    try:
        return _ext.memory_kind(arr) == "managed"
    except (TypeError, ValueError):
        return False


def process_video(src: str, dst: str, vf: str = "gblur=sigma=2", codec: Optional[str] = None, *,
                  crf: Optional[int] = None, preset: Optional[str] = None, backend: str = "auto",
                  overwrite: bool = True, inflight: int = 4,
                  progress: Optional[Callable[[dict], Any]] = None) -> dict:
    """Runs the streaming pipeline: decode ``src``, apply filter chain ``vf``, encode ``dst``.

    codec: FFmpeg encoder name; None picks the container's image encoder for
    image outputs and libx264 otherwise. Audio and other streams are copied.
    progress: called (from a pipeline thread, with the GIL) about four times a
    second and once at the end with a dict: frames, total_estimate, elapsed_s,
    fps, media_time_s, duration_s, final. An exception it raises stops the run
    and is raised here. Returns the run's statistics as a dict.
    """
    src = os.fspath(src)
    dst = os.fspath(dst)
    if "://" not in src and not os.path.exists(src):
        raise FileNotFoundError(f"process_video: input '{src}' does not exist")
    if progress is not None and not callable(progress):
        raise TypeError("progress= must be callable")
    return _ext.process_video(
        src, dst, vf or "", codec or "", -1 if crf is None else int(crf), preset or "", backend,
        bool(overwrite), int(inflight), progress,
    )


# ---------------------------------------------------------------- test helpers


def _reference_gaussian_blur(img: np.ndarray, sigma: float, radius: Optional[int] = None) -> np.ndarray:
    """The plain C++ reference (slow, exact in double); host arrays only."""
    src, _ = _prepare_input(np.asarray(img))
    out = np.empty(src.shape, dtype=src.dtype)
    _ext.reference_gaussian_blur(src, out, _number(sigma, "sigma"), -1 if radius is None else _integer(radius, "radius"))
    return out


def _reference_box_blur(img: np.ndarray, radius: int) -> np.ndarray:
    """The plain C++ box reference (exact integer sums); host arrays only."""
    src, _ = _prepare_input(np.asarray(img))
    out = np.empty(src.shape, dtype=src.dtype)
    _ext.reference_box_blur(src, out, _integer(radius, "radius"))
    return out


def _write_test_clip(path: str, width: int = 64, height: int = 48, frames: int = 10, codec: str = "ffv1",
                     pix_fmt: str = "yuv420p", fps: int = 30) -> None:
    """Writes a deterministic synthetic clip (io::write_synthetic_clip)."""
    _ext.write_test_clip(os.fspath(path), int(width), int(height), int(frames), codec, pix_fmt, int(fps))
