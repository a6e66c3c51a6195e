"""FFmpeg's log level (set_log_level)."""

from __future__ import annotations

from typing import Any

from ._checks import _integer
from ._native import _ext, _public


_LOG_LEVELS = {"quiet": -8, "panic": 0, "fatal": 8, "error": 16, "warning": 24, "info": 32, "verbose": 40,
               "debug": 48, "trace": 56}


@_public
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
