"""CUDA managed (unified) memory seen by numpy: managed_empty, is_managed."""

from __future__ import annotations

import math
import operator
from typing import Any

import numpy as np

from ._info import cuda_available
from ._native import _ext, _public

MAX_MANAGED_BYTES = int(_ext.MAX_MANAGED_BYTES)


@_public
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


@_public
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
