"""Test helpers that are not part of streamblur's API: the C++ references,
synthetic clips, and the CUDA cache's counters. They call the extension
module directly, and the clips come from the tests' own module,
_streamblur_testing (python/testing: pip install --no-build-isolation
./python/testing), which the streamblur package does not carry."""

import os
from typing import Optional

import numpy as np

import streamblur
from streamblur import _streamblur as _ext


def reference_gaussian_blur(img: np.ndarray, sigma: float, radius: Optional[int] = None) -> np.ndarray:
    """The plain C++ reference (slow, exact in double); host arrays only."""
    src, _ = streamblur._prepare_input(np.asarray(img))
    out = np.empty(src.shape, dtype=src.dtype)
    r = -1 if radius is None else streamblur._integer(radius, "radius")
    _ext.reference_gaussian_blur(src, out, streamblur._number(sigma, "sigma"), r)
    return out


def reference_box_blur(img: np.ndarray, radius: int) -> np.ndarray:
    """The plain C++ box reference (exact integer sums); host arrays only."""
    src, _ = streamblur._prepare_input(np.asarray(img))
    out = np.empty(src.shape, dtype=src.dtype)
    _ext.reference_box_blur(src, out, streamblur._integer(radius, "radius"))
    return out


def write_test_clip(path: str, width: int = 64, height: int = 48, frames: int = 10, codec: str = "ffv1",
                     pix_fmt: str = "yuv420p", fps: int = 30, noise: bool = False, preset: str = "",
                     audio_codec: str = "") -> None:
    """Writes a deterministic synthetic clip (io::write_synthetic_clip, as the C++ tests' clips).

    noise=True adds moving film-like grain (realistic decode load); preset: the
    encoder's preset (e.g. 'ultrafast' for libx264), empty for its default;
    audio_codec: adds a stereo 48 kHz tone in that codec (e.g. 'aac',
    'pcm_s16le'), empty for none.
    """
    try:
        import _streamblur_testing
    except ImportError as e:
        raise ImportError("the Python tests make their clips with _streamblur_testing: "
                          "pip install --no-build-isolation ./python/testing") from e
    _streamblur_testing.write_clip(os.fspath(path), int(width), int(height), int(frames), codec, pix_fmt, int(fps),
                                   bool(noise), preset, audio_codec)


def cuda_cache_stats() -> dict:
    """How often the CUDA blurs configured a chain, allocated a staging buffer or ran as one CUDA graph
    launch since import (for tests)."""
    return dict(_ext.cuda_cache_stats())
