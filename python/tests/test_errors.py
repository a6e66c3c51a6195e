"""Errors are Python exceptions with clear messages."""

import numpy as np
import pytest

import streamblur
import support


def img8(shape=(8, 8)):
    return np.zeros(shape, np.uint8)


@pytest.mark.parametrize("dtype", [np.float32, np.int16, np.uint32, np.bool_])
def test_wrong_dtype(dtype):
    with pytest.raises(TypeError, match=r"dtype (float32|int16|uint32|bool); streamblur takes uint8 or uint16"):
        streamblur.gaussian_blur(np.zeros((8, 8), dtype), 2)


@pytest.mark.parametrize("shape", [(8,), (2, 3, 4, 5), ()])
def test_wrong_ndim(shape):
    with pytest.raises(ValueError, match=r"expected HxW \(grayscale\) or HxWxC"):
        streamblur.box_blur(np.zeros(shape, np.uint8), 1)


def test_too_many_channels():
    with pytest.raises(ValueError, match="C must be 1..4"):
        streamblur.box_blur(np.zeros((4, 4, 5), np.uint8), 1)


def test_empty_image():
    with pytest.raises(ValueError, match="is empty"):
        streamblur.box_blur(np.zeros((0, 4), np.uint8), 1)


@pytest.mark.parametrize("sigma", [0, 0.05, 1000, -1])
def test_sigma_out_of_range(sigma):
    with pytest.raises(ValueError, match=r"sigma .* is out of range \[0.1, 100\]"):
        streamblur.gaussian_blur(img8(), sigma)


@pytest.mark.parametrize("sigma", [float("nan"), float("inf")])
def test_sigma_not_finite(sigma):
    with pytest.raises(ValueError, match="sigma must be finite"):
        streamblur.gaussian_blur(img8(), sigma)


def test_sigma_not_a_number():
    with pytest.raises(TypeError, match="sigma must be a number"):
        streamblur.gaussian_blur(img8(), "two")


def test_negative_radius():
    with pytest.raises(ValueError, match=r"radius -1 is out of range \[0, 4096\]"):
        streamblur.box_blur(img8(), -1)
    with pytest.raises(ValueError, match=r"radius -3 is out of range \[0, 1024\]"):
        streamblur.gaussian_blur(img8(), 2, radius=-3)


def test_radius_too_large_and_not_int():
    with pytest.raises(ValueError, match="out of range"):
        streamblur.box_blur(img8(), 5000)
    with pytest.raises(TypeError, match="radius must be an integer"):
        streamblur.box_blur(img8(), 1.5)


def test_checks_hold_after_a_valid_call_with_equal_values():
    # Valid specs are remembered by their arguments and the arguments' types:
    # radius=True equals radius=1 but must still be refused, a NaN sigma never
    # matches, and an unhashable sigma still works.
    img = img8()
    streamblur.gaussian_blur(img, 2, radius=1)
    streamblur.box_blur(img, 1)
    with pytest.raises(TypeError, match="radius must be an integer"):
        streamblur.gaussian_blur(img, 2, radius=True)
    with pytest.raises(TypeError, match="radius must be an integer"):
        streamblur.box_blur(img, True)
    for _ in range(2):
        with pytest.raises(ValueError, match="sigma must be finite"):
            streamblur.gaussian_blur(img, float("nan"))
    got = streamblur.gaussian_blur(img, np.array([2.0])[0], radius=np.int64(1))
    assert np.array_equal(got, streamblur.gaussian_blur(img, 2.0, radius=1))


@pytest.mark.parametrize(
    "spec,message",
    [
        ("blurry=3", "blurry"),
        ("gblur=sigma=0", r"out of range"),
        ("gblur=sigma=abc", "needs a number"),
        ("boxblur=radius=1:size=3", "size"),
    ],
)
def test_bad_chain_spec(spec, message):
    with pytest.raises(ValueError, match=message):
        streamblur.Chain(spec)


def test_empty_chain_spec():
    with pytest.raises(ValueError):
        streamblur.Chain("")


def test_chain_spec_type():
    with pytest.raises(TypeError, match="must be a str"):
        streamblur.Chain(3)


def test_bad_backend():
    with pytest.raises(ValueError, match="backend must be 'auto', 'cpu' or 'cuda'"):
        streamblur.box_blur(img8(), 1, backend="gpu")


@pytest.mark.skipif(streamblur.cuda_available(), reason="needs a machine without a GPU")
def test_cuda_backend_without_gpu():
    with pytest.raises(RuntimeError, match="no CUDA device"):
        streamblur.box_blur(img8(), 1, backend="cuda")


def test_bad_stream():
    with pytest.raises(TypeError, match="stream= must be a CUDA stream"):
        streamblur.box_blur(img8(), 1, stream="default")
    with pytest.raises(ValueError, match="must not be negative"):
        streamblur.box_blur(img8(), 1, stream=-5)


def test_managed_empty_too_large():
    with pytest.raises(ValueError, match="limited to 1073741824 bytes"):
        streamblur.managed_empty((40000, 40000), np.uint8)


def test_process_video_missing_input(tmp_path):
    with pytest.raises(FileNotFoundError, match="does not exist"):
        streamblur.process_video(tmp_path / "nope.mkv", tmp_path / "out.mkv")


def test_reference_rejects_bad_sigma():
    with pytest.raises(ValueError, match="out of range"):
        support.reference_gaussian_blur(img8(), 0.0)


def test_process_video_on_a_bare_png_signature_raises_instead_of_aborting(tmp_path):
    # swscale used to assert (abort the interpreter) on a stream with no size or pixel format.
    src = tmp_path / "s.png"
    src.write_bytes(b"\x89PNG\r\n\x1a\n")
    with pytest.raises(RuntimeError, match="s.png"):
        streamblur.process_video(src, tmp_path / "o.png", backend="cpu")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.png"]


def test_chain_spec_error_is_one_short_line():
    with pytest.raises(ValueError) as e:
        streamblur.Chain("gblur=sigma=" + "7" * 100000 + "x\n")
    msg = str(e.value)
    assert "\n" not in msg and len(msg) < 300, msg
