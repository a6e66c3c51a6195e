# Type hints for the streamblur package (PEP 561; py.typed marks the package
# as typed). The docstrings live in the package's private modules (_image.py,
# _video.py, ...), whose names __init__.py re-exports; python/tests/test_typing.py
# checks that this file names every public name of the package.
import os
from types import TracebackType
from typing import Any, Callable, Iterable, Iterator, Literal, Sequence, SupportsIndex, Union

import numpy as np
import numpy.typing as npt

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

__version__: str
MAX_MANAGED_BYTES: int

# An image: a numpy, CuPy or PyTorch array, or anything with __dlpack__ or
# __array_interface__ (numpy, CuPy and PyTorch ship no common protocol type).
_Array = Any
# A CUDA stream: a raw cudaStream_t as int, a CuPy Stream or a torch.cuda.Stream.
_Stream = Any
_Path = Union[str, os.PathLike[str]]
# A time in seconds, or a str in ffmpeg's syntax ("1:02.5").
_Time = Union[float, str, None]
_Backend = Literal["auto", "cpu", "cuda"]
_HwDecode = Literal["auto", "nvdec", "none"]

def device_count() -> int: ...
def cuda_available() -> bool: ...
def set_log_level(level: str | int) -> None: ...
def filter_list() -> str: ...
def filter_help(name: str) -> str: ...
def gaussian_blur(
    img: _Array,
    sigma: float,
    radius: int | None = None,
    *,
    out: _Array | None = None,
    stream: _Stream | None = None,
    backend: _Backend = "auto",
) -> _Array: ...
def box_blur(
    img: _Array,
    radius: int,
    *,
    out: _Array | None = None,
    stream: _Stream | None = None,
    backend: _Backend = "auto",
) -> _Array: ...

class Chain:
    spec: str
    description: str
    def __init__(self, spec: str) -> None: ...
    def __call__(
        self,
        img: _Array,
        *,
        out: _Array | None = None,
        stream: _Stream | None = None,
        backend: _Backend = "auto",
    ) -> _Array: ...

def managed_empty(shape: SupportsIndex | Sequence[SupportsIndex], dtype: npt.DTypeLike = ...) -> np.ndarray[Any, np.dtype[Any]]: ...
def is_managed(arr: object) -> bool: ...
def process_video(
    src: _Path,
    dst: _Path,
    vf: str | None = "",
    codec: str | None = None,
    *,
    crf: int | None = None,
    preset: str | None = None,
    backend: _Backend = "auto",
    hwdec: _HwDecode = "auto",
    device: int = 0,
    overwrite: bool = False,
    inflight: int = 4,
    progress: Callable[[dict[str, Any]], object] | None = None,
    start: _Time = None,
    duration: _Time = None,
    frames: int | None = None,
    strict_regions: bool = False,
    segments: int | Literal["auto"] = 1,
) -> dict[str, Any]: ...
def process_videos(
    inputs: Iterable[_Path],
    outputs: Iterable[_Path] | None = None,
    *,
    out_dir: _Path | None = None,
    vf: str | None = "",
    codec: str | None = None,
    crf: int | None = None,
    preset: str | None = None,
    backend: _Backend = "auto",
    hwdec: _HwDecode = "auto",
    jobs: int = 2,
    devices: Literal["all"] | int | Sequence[int] | str = "all",
    inflight: int = 4,
    overwrite: bool = False,
    progress: Callable[[dict[str, Any]], object] | None = None,
    segments: int | Literal["auto"] = 1,
) -> list[dict[str, Any]]: ...

class Frame:
    planes: list[_Array]
    pts: float
    index: int
    format: str
    width: int
    height: int
    def __init__(self, planes: list[_Array], pts: float, index: int, format: str, width: int, height: int) -> None: ...

class FrameIterator:
    device: str
    array: str
    def __init__(self, stream: Any, device: str, array: str) -> None: ...
    def __iter__(self) -> FrameIterator: ...
    def __next__(self) -> Frame: ...
    def close(self) -> None: ...
    def __enter__(self) -> FrameIterator: ...
    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None: ...
    def __del__(self) -> None: ...
    @property
    def stats(self) -> dict[str, Any] | None: ...
    @property
    def notes(self) -> list[str]: ...

def frames(
    path: _Path,
    vf: str | None = "",
    *,
    device: Literal["cuda", "cpu"] | None = None,
    hwdec: _HwDecode = "auto",
    backend: _Backend = "auto",
    inflight: int = 4,
    array: Literal["cupy", "torch", "numpy"] | None = None,
    format: str | None = None,
    start: _Time = None,
    duration: _Time = None,
    segments: int | Literal["auto"] = 1,
) -> FrameIterator: ...
