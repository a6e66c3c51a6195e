"""Argument checks the package's entry points share: numbers, integers, choices, paths, times.

Each raises TypeError or ValueError naming the argument.
"""

from __future__ import annotations

import math
import os
from typing import Any, Optional

import numpy as np

from ._native import _ext


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


def _segments(x: Any) -> int:
    """segments=: 1 .. 64, or 'auto' (0, the library's kSegmentsAuto)."""
    if isinstance(x, str):
        if x == "auto":
            return 0
        raise ValueError(f"segments must be 'auto' or an integer between 1 and 64, got {x!r}")
    return _integer(x, "segments", 1, 64)


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
