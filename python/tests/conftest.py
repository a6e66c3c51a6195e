import os

import numpy as np
import pytest

os.environ.setdefault("MPLBACKEND", "Agg")  # examples run headless

import streamblur  # noqa: E402


def pattern(shape, dtype, seed=0):
    """Random image with some structure (edges survive a blur, noise does not)."""
    rng = np.random.default_rng(seed)
    hi = np.iinfo(dtype).max
    img = rng.integers(0, hi + 1, size=shape, dtype=np.int64)
    h, w = shape[0], shape[1]
    img[: h // 2, : w // 3] = hi
    return img.astype(dtype)


def max_diff(a, b):
    return int(np.max(np.abs(np.asarray(a).astype(np.int64) - np.asarray(b).astype(np.int64))))


@pytest.fixture
def gpu():
    if not streamblur.cuda_available():
        pytest.skip("no CUDA device")


@pytest.fixture
def cupy(gpu):
    return pytest.importorskip("cupy")


@pytest.fixture
def torch(gpu):
    t = pytest.importorskip("torch")
    if not t.cuda.is_available():
        pytest.skip("torch without CUDA")
    return t
