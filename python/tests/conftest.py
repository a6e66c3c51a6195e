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


# --- Oracle written here with numpy alone (no streamblur helper, no weights
# from the C++ params): w(i) = exp(-i^2 / (2 sigma^2)), i in [-r, r], r = radius
# or ceil(3 sigma) (at least 1), normalised; rows then columns with
# np.convolve on edge-padded data (clamped borders); round half up once.
def np_weights(sigma, radius=None):
    r = radius if radius is not None else max(1, int(np.ceil(3 * sigma)))
    i = np.arange(-r, r + 1, dtype=np.float64)
    w = np.exp(-(i * i) / (2.0 * sigma * sigma))
    return w / w.sum()


def reference_gaussian(img, sigma, radius=None):
    w = np_weights(sigma, radius)
    r = len(w) // 2
    a = img.astype(np.float64)
    if a.ndim == 2:
        a = a[..., None]
    out = np.empty_like(a)
    for c in range(a.shape[2]):
        p = np.pad(a[..., c], r, mode="edge")
        rows = np.array([np.convolve(row, w, mode="valid") for row in p])          # (h + 2r, w)
        cols = np.array([np.convolve(col, w, mode="valid") for col in rows.T]).T   # (h, w)
        out[..., c] = cols
    top = np.iinfo(img.dtype).max
    res = np.clip(np.floor(out + 0.5), 0, top).astype(img.dtype)
    return res.reshape(img.shape)


def assert_close_unbiased(got, want, what=""):
    """At most 1 apart anywhere, at most 1% of samples differing at all, mean signed difference within 0.01:
    a rounding that leans one way (floor instead of half up) fails the last two."""
    d = np.asarray(got).astype(np.int64) - np.asarray(want).astype(np.int64)
    n = max(d.size, 1000)  # share and mean over at least 1000 samples, as the C++ tests
    assert np.abs(d).max(initial=0) <= 1, f"{what}: max |diff| {int(np.abs(d).max())}"
    assert np.count_nonzero(d) <= 0.01 * n, f"{what}: {np.count_nonzero(d)} of {d.size} samples differ"
    assert abs(int(d.sum())) <= 0.01 * n, f"{what}: mean signed difference {d.sum() / d.size}"
