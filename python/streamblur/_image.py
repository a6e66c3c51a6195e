"""The image API: gaussian_blur, box_blur and Chain, the specs they build, and an exit hook."""

from __future__ import annotations

import atexit
from typing import Any, Callable, Optional

from ._arrays import _call
from ._checks import _integer, _number
from ._native import _ext, _public


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


@_public
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


@_public
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


@_public
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


# Calls on device arrays may return with their GPU work queued; the module holds
# their arrays until it has run. At exit: wait for it, then let them go.
# (Registered after _frames' hook, so it runs before it, as it always has: __init__.py
# imports _frames first.)
atexit.register(lambda: _ext.release_queued_calls(True))
