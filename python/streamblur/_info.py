"""What this machine and the library offer: CUDA devices, the registered filters."""

from __future__ import annotations

from ._native import _ext, _public


@_public
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


@_public
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


@_public
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


@_public
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
