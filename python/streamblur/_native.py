"""The compiled module, streamblur._streamblur: imported here, once, for the whole package.

The package's other modules take it from here (``from ._native import _ext``).
"""

from __future__ import annotations

from typing import TypeVar


try:
    from . import _streamblur as _ext
except ImportError as _e:  # the source folder without the built module, usually
    raise ImportError(
        f"streamblur: the compiled module streamblur._streamblur cannot be loaded ({_e}). Install the package "
        "with `python3 -m pip install ./python` from the checkout, and do not run Python from inside python/ "
        "(its streamblur/ source folder would shadow the installed package)."
    ) from _e


_T = TypeVar("_T")


def _public(obj: _T) -> _T:
    """Names a public function or class streamblur's own (its ``__module__``), as the package re-exports it.

    ``repr()``, ``help()`` and pickle then name it ``streamblur.NAME``, as before
    the package was split into private modules, not the module defining it.
    """
    obj.__module__ = "streamblur"
    return obj
