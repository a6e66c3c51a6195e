"""Arrays in and out of the extension: the array's framework, the input as the extension takes it,
the output, the CUDA stream, and the call itself (the CuPy fast path, else the general path)."""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

from ._checks import _BACKENDS, _choice
from ._managed import managed_empty
from ._native import _ext


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
    """(array the extension can take, framework name): converted (byte order, packing, no autograd), not checked;
    the extension checks every array once (dtype, shape, layout, memory)."""
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
    try:
        return _ext.run_filter(src, out, spec, backend, handle, lambda where: _new_output(src, fw, where))
    except TypeError as e:
        if "incompatible function arguments" not in str(e):
            raise
        raise _unreadable(img, out) from None


def _unreadable(img: Any, out: Any) -> Exception:
    """The error for arrays the extension could not take (neither DLPack nor the buffer protocol, or read-only)."""
    if isinstance(out, np.ndarray) and not out.flags.writeable:
        return ValueError("out= is read-only")
    if isinstance(out, np.ndarray) and out.dtype.byteorder not in ("=", "|"):
        return TypeError(f"out= has dtype {out.dtype.str} (not in this machine's byte order); "
                         "streamblur writes uint8 or uint16 in native order")
    if out is not None and not (hasattr(out, "shape") and hasattr(out, "dtype")):
        return TypeError(f"out= must be {_ARRAY_KINDS} of the image's shape and dtype, or None; "
                         f"got {type(out).__name__}")
    return TypeError(f"image and out= must be {_ARRAY_KINDS}; got {type(img).__name__} and {type(out).__name__}")
