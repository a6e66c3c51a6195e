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

# The package is split into private modules by concern; this file re-exports
# their names. Besides the public API it re-exports the private helpers the
# module has always had (tests and streamblur.ray reach some of them as
# streamblur._NAME); not _arrays' _CUPY_NDARRAY and _CUPY_EMPTY, which _arrays
# rebinds once CuPy is seen (a copy here would stay None). Import order: _frames before _image, so that their
# atexit hooks run as they always have (last registered runs first: the
# queued GPU calls are waited for, then the open frame iterators are closed).

from ._native import _ext  # noqa: F401 - the compiled module, imported once (with its friendly ImportError)
from ._checks import (  # noqa: F401
    INT32_MAX, INT64_MAX, _BACKENDS, _HWDECS, _choice, _integer, _number, _optional_str, _path, _paths,
    _time_seconds,
)
from ._info import _filter_names, cuda_available, device_count, filter_help, filter_list  # noqa: F401
from ._log import _LOG_LEVELS, set_log_level  # noqa: F401
from ._managed import MAX_MANAGED_BYTES, _shape, is_managed, managed_empty  # noqa: F401
from ._arrays import (  # noqa: F401
    _ARRAY_KINDS, _FAST_BACKENDS, _FRAMEWORK_OF_TYPE, _as_numpy, _call,
    _current_framework_stream, _framework, _new_output, _not_an_array, _pixels_packed, _prepare_input,
    _register_cupy, _run, _stream_handle, _unreadable,
)
from ._video import (  # noqa: F401
    _check_device_index, _check_encode_args, _check_input_exists, _check_video_args, _device_list, process_video,
    process_videos,
)
from ._frames import (  # noqa: F401
    _ARRAY_KIND, Frame, FrameIterator, _close_open_iterators, _default_device_array, _framework_device,
    _frames_device, _open_iterators, frames,
)
from ._image import (  # noqa: F401
    _BOXBLUR_SPECS, _GBLUR_SPECS, Chain, _boxblur_spec, _cached_spec, _gblur_spec, box_blur, gaussian_blur,
)

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
