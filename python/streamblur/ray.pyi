# Type hints for streamblur.ray (the docstrings live in ray.py).
import os
from typing import Any, Iterable, Literal, Union

__all__ = ["process_videos", "process_video"]

_Path = Union[str, os.PathLike[str]]

def process_videos(
    inputs: Iterable[_Path],
    outputs: Iterable[_Path],
    vf: str | None = "",
    codec: str | None = None,
    backend: Literal["auto", "cpu", "cuda"] = "auto",
    gpus_per_job: float = 0.25,
    *,
    crf: int | None = None,
    preset: str | None = None,
    hwdec: Literal["auto", "nvdec", "none"] = "auto",
    overwrite: bool = False,
    inflight: int = 4,
    max_retries: int | None = None,
    ray_remote_args: dict[str, Any] | None = None,
) -> list[dict[str, Any]]: ...

def process_video(
    src: _Path,
    dst: _Path,
    vf: str | None = "",
    codec: str | None = None,
    backend: Literal["auto", "cpu", "cuda"] = "auto",
    gpus_per_span: float = 0.25,
    *,
    segments: int | Literal["auto"] = "auto",
    crf: int | None = None,
    preset: str | None = None,
    hwdec: Literal["auto", "nvdec", "none"] = "auto",
    overwrite: bool = False,
    inflight: int = 4,
    start: float | str | None = None,
    duration: float | str | None = None,
    frames: int | None = None,
    max_retries: int | None = None,
    ray_remote_args: dict[str, Any] | None = None,
) -> dict[str, Any]: ...
