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


# STREAMBLUR_REQUIRE_GPU=1 (the GPU machine's runs) turns every "no GPU" skip
# into a failure, so a broken driver or a missing CuPy/torch cannot pass as a skip.
REQUIRE_GPU = os.environ.get("STREAMBLUR_REQUIRE_GPU", "") not in ("", "0")


def skip_without_gpu(reason):
    if REQUIRE_GPU:
        pytest.fail(f"STREAMBLUR_REQUIRE_GPU=1 but {reason}")
    pytest.skip(reason)


@pytest.fixture
def gpu():
    if not streamblur.cuda_available():
        skip_without_gpu("no CUDA device")


@pytest.fixture
def cupy(gpu):
    try:
        import cupy
    except ImportError as e:
        skip_without_gpu(f"no CuPy: {e}")
    return cupy


@pytest.fixture
def torch(gpu):
    try:
        import torch as t
    except ImportError as e:
        skip_without_gpu(f"no torch: {e}")
    if not t.cuda.is_available():
        skip_without_gpu("torch without CUDA")
    return t


def reference_gaussian(plane, sigma):
    """Gaussian blur written here from its definition, sharing nothing with streamblur:
    weights exp(-i^2 / (2 sigma^2)) over i in [-r, r], r = max(1, ceil(3 sigma)), normalised;
    rows then columns, borders clamped (edge samples repeated); rounded half up."""
    r = max(1, int(np.ceil(3 * sigma)))
    i = np.arange(-r, r + 1, dtype=np.float64)
    w = np.exp(-i * i / (2 * sigma * sigma))
    w /= w.sum()
    x = np.asarray(plane, dtype=np.float64)
    padded = np.pad(x, ((0, 0), (r, r)), mode="edge")
    rows = np.stack([np.convolve(row, w, mode="valid") for row in padded])
    padded = np.pad(rows, ((r, r), (0, 0)), mode="edge")
    cols = np.stack([np.convolve(col, w, mode="valid") for col in padded.T]).T
    return np.floor(cols + 0.5)


def assert_close_unbiased(got, want, what=""):
    """At most 1 apart anywhere, at most 1% of samples differing at all, mean signed difference within 0.01:
    a rounding that leans one way (floor instead of half up) fails the last two."""
    d = np.asarray(got, dtype=np.int64) - np.asarray(want, dtype=np.int64)
    assert d.shape == np.asarray(want).shape, what
    assert int(np.abs(d).max(initial=0)) <= 1, f"{what}: max |diff| {int(np.abs(d).max())}"
    share = float(np.count_nonzero(d)) / d.size
    assert share <= 0.01, f"{what}: {share:.2%} of samples differ"
    assert abs(float(d.mean())) <= 0.01, f"{what}: mean signed difference {float(d.mean()):.4f}"
