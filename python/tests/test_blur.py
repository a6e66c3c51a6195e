"""Results against the C++ references, for every dtype and layout, on the
default backend (GPU when present, else CPU) and on the CPU backend."""

import numpy as np
import pytest

import streamblur
import support
from conftest import max_diff, pattern, assert_close_unbiased, np_weights, reference_gaussian

DTYPES = [np.uint8, np.uint16]
SHAPES = [(1, 1), (3, 5), (37, 23), (20, 31, 1), (17, 19, 2), (24, 33, 3), (15, 40, 4)]
BACKENDS = ["auto", "cpu"]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_gaussian_matches_reference(dtype, shape, backend):
    img = pattern(shape, dtype)
    got = streamblur.gaussian_blur(img, 2.0, backend=backend)
    assert isinstance(got, np.ndarray)
    assert got.shape == img.shape and got.dtype == img.dtype
    ref = support.reference_gaussian_blur(img, 2.0)
    assert max_diff(got, ref) <= 1


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_box_matches_reference(dtype, shape, backend):
    img = pattern(shape, dtype, seed=1)
    got = streamblur.box_blur(img, 2, backend=backend)
    np.testing.assert_array_equal(got, support.reference_box_blur(img, 2))


@pytest.mark.parametrize("sigma,radius", [(0.5, None), (1.3, 2), (3.0, None), (2.0, 0), (10.0, 5)])
def test_gaussian_sigma_radius(sigma, radius):
    img = pattern((41, 29, 3), np.uint8, seed=2)
    got = streamblur.gaussian_blur(img, sigma, radius)
    assert max_diff(got, support.reference_gaussian_blur(img, sigma, radius)) <= 1


def test_radius_zero_is_identity():
    img = pattern((9, 11), np.uint16)
    np.testing.assert_array_equal(streamblur.box_blur(img, 0), img)
    np.testing.assert_array_equal(streamblur.gaussian_blur(img, 2.0, radius=0), img)


def test_channels_blurred_alike():
    plane = pattern((30, 26), np.uint8, seed=3)
    rgb = np.stack([plane, plane, plane], axis=-1)
    got = streamblur.gaussian_blur(rgb, 1.5)
    single = streamblur.gaussian_blur(plane, 1.5)
    for c in range(3):
        np.testing.assert_array_equal(got[..., c], single)


def test_input_untouched():
    img = pattern((16, 16), np.uint8)
    keep = img.copy()
    streamblur.gaussian_blur(img, 2)
    np.testing.assert_array_equal(img, keep)


def test_read_only_input():
    img = pattern((16, 12), np.uint8)
    img.flags.writeable = False
    assert max_diff(streamblur.box_blur(img, 1), support.reference_box_blur(img, 1)) == 0


def test_constant_image_stays_constant():
    img = np.full((50, 70, 3), 200, np.uint8)
    np.testing.assert_array_equal(streamblur.gaussian_blur(img, 5.0), img)
    img16 = np.full((50, 70), 65535, np.uint16)
    np.testing.assert_array_equal(streamblur.box_blur(img16, 3), img16)


# ---- strided inputs


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_strided_rows_slice(dtype):
    big = pattern((64, 50, 3), dtype, seed=4)
    view = big[::2, 1:-1]  # rows strided, pixels packed: no copy needed
    assert not view.flags.c_contiguous
    got = streamblur.gaussian_blur(view, 1.7)
    ref = support.reference_gaussian_blur(np.ascontiguousarray(view), 1.7)
    assert max_diff(got, ref) <= 1
    np.testing.assert_array_equal(streamblur.box_blur(view, 2), support.reference_box_blur(np.ascontiguousarray(view), 2))


def test_padded_rows():
    padded = np.zeros((33, 64), np.uint16)
    padded[:, :41] = pattern((33, 41), np.uint16, seed=5)
    view = padded[:, :41]
    got = streamblur.gaussian_blur(view, 2.5)
    assert max_diff(got, support.reference_gaussian_blur(view.copy(), 2.5)) <= 1


@pytest.mark.parametrize("view", ["transpose", "column_step", "channel_step", "reversed", "fortran"])
def test_pixels_not_packed_numpy_copied(view):
    base = pattern((40, 30, 6), np.uint8, seed=6)
    arr = {
        "transpose": base[..., 0].T,
        "column_step": base[:, ::2, :3],
        "channel_step": base[..., ::2],
        "reversed": base[::-1, :, :3],
        "fortran": np.asfortranarray(base[..., :4]),
    }[view]
    got = streamblur.box_blur(arr, 1)
    np.testing.assert_array_equal(got, support.reference_box_blur(np.ascontiguousarray(arr), 1))


# ---- out=


def test_out_is_written_and_returned():
    img = pattern((21, 17, 3), np.uint8)
    out = np.zeros_like(img)
    res = streamblur.box_blur(img, 1, out=out)
    assert res is out
    np.testing.assert_array_equal(out, support.reference_box_blur(img, 1))


def test_out_in_place():
    img = pattern((25, 19), np.uint16)
    ref = support.reference_gaussian_blur(img, 1.2)
    res = streamblur.gaussian_blur(img, 1.2, out=img)
    assert res is img
    assert max_diff(img, ref) <= 1


def test_out_strided_rows():
    img = pattern((12, 10), np.uint8)
    big = np.zeros((24, 16), np.uint8)
    out = big[::2, 3:13]
    streamblur.box_blur(img, 1, out=out)
    np.testing.assert_array_equal(out, support.reference_box_blur(img, 1))
    assert not big[1::2].any()  # rows in between untouched


def test_out_wrong_shape():
    img = pattern((10, 10), np.uint8)
    with pytest.raises(ValueError, match=r"out= has shape \(10, 11\) but the image has shape \(10, 10\)"):
        streamblur.box_blur(img, 1, out=np.zeros((10, 11), np.uint8))


def test_out_wrong_dtype():
    img = pattern((10, 10), np.uint8)
    with pytest.raises(TypeError, match="out= has dtype uint16 but the image has dtype uint8"):
        streamblur.box_blur(img, 1, out=np.zeros((10, 10), np.uint16))


def test_out_channel_axis_counts():
    img = pattern((10, 10), np.uint8)
    with pytest.raises(ValueError, match=r"out= has shape \(10, 10, 1\) but the image has shape \(10, 10\)"):
        streamblur.box_blur(img, 1, out=np.zeros((10, 10, 1), np.uint8))


def test_out_not_native_byte_order():
    img = pattern((10, 10), np.uint16)
    with pytest.raises(TypeError, match="out= has dtype >u2 .*byte order"):
        streamblur.box_blur(img, 1, out=np.zeros((10, 10), ">u2"))


def test_out_not_an_array():
    img = pattern((10, 10), np.uint8)
    with pytest.raises(TypeError, match="out= must be a numpy, CuPy or PyTorch array .* got str"):
        streamblur.box_blur(img, 1, out="x")


def test_out_read_only():
    img = pattern((10, 10), np.uint8)
    out = np.zeros_like(img)
    out.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        streamblur.box_blur(img, 1, out=out)


def test_out_pixels_not_packed():
    img = pattern((10, 10), np.uint8)
    out = np.zeros((10, 20), np.uint8)[:, ::2]
    with pytest.raises(ValueError, match="C-contiguous pixels"):
        streamblur.box_blur(img, 1, out=out)


def test_out_overlapping():
    big = pattern((20, 10), np.uint8)
    with pytest.raises(ValueError, match="overlaps"):
        streamblur.box_blur(big[:10], 1, out=big[5:15])


# ---- Chain


def test_chain_equals_gaussian_then_box():
    img = pattern((45, 38, 3), np.uint8, seed=7)
    chain = streamblur.Chain("gblur=sigma=2,boxblur=radius=1")
    got = chain(img)
    expected = streamblur.box_blur(streamblur.gaussian_blur(img, 2), 1)
    np.testing.assert_array_equal(got, expected)
    ref = support.reference_box_blur(support.reference_gaussian_blur(img, 2), 1)
    assert max_diff(got, ref) <= 1
    assert "gblur" in chain.description and "boxblur" in chain.description
    assert repr(chain) == "Chain('gblur=sigma=2,boxblur=radius=1')"


def test_chain_positional_and_planes_option():
    img = pattern((20, 20), np.uint16)
    # planes= selects planes of video frames; an image is one plane, always filtered
    np.testing.assert_array_equal(streamblur.Chain("boxblur=radius=2:planes=u")(img), streamblur.box_blur(img, 2))
    # FFmpeg's positional order: luma_radius, luma_power (default 2: the window twice, rounded once)
    np.testing.assert_array_equal(streamblur.Chain("boxblur=2:1")(img), support.reference_box_blur(img, 2))
    twice = support.reference_box_blur(support.reference_box_blur(img, 2), 2)
    assert max_diff(streamblur.Chain("boxblur=2")(img), twice) <= 1
    assert max_diff(streamblur.Chain("boxblur=2")(img), streamblur.box_blur(img, 2)) > 1


def test_chain_out_and_cpu_backend():
    img = pattern((20, 24, 2), np.uint8)
    out = np.empty_like(img)
    streamblur.Chain("gblur=sigma=1")(img, out=out, backend="cpu")
    assert max_diff(out, support.reference_gaussian_blur(img, 1)) <= 1


def test_pil_image_input():
    Image = pytest.importorskip("PIL.Image")
    pil = Image.fromarray(pattern((30, 40, 3), np.uint8))
    got = streamblur.gaussian_blur(pil, 2)
    assert isinstance(got, np.ndarray) and got.shape == (30, 40, 3)


def test_filter_help_and_list():
    assert "gblur" in streamblur.filter_list() and "boxblur" in streamblur.filter_list()
    assert "sigma" in streamblur.filter_help("gblur")


def test_managed_empty_works_without_gpu_too():
    m = streamblur.managed_empty((32, 48), np.uint8)
    assert m.shape == (32, 48) and m.dtype == np.uint8
    assert streamblur.is_managed(m) == streamblur.cuda_available()
    m[:] = pattern((32, 48), np.uint8)
    ref = support.reference_box_blur(m, 1)
    res = streamblur.box_blur(m, 1)
    np.testing.assert_array_equal(res, ref)
    assert streamblur.is_managed(res) == streamblur.cuda_available()
    streamblur.box_blur(m, 1, out=m)
    np.testing.assert_array_equal(m, ref)


def test_numpy_weights_hand_checked():
    # sigma 1, radius 1: exp(-1/2) = 0.6065307; sum 2.2130613 -> 0.2740686, 0.4518628, 0.2740686
    np.testing.assert_allclose(np_weights(1.0, 1), [0.2740686, 0.4518628, 0.2740686], atol=1e-6)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("sigma,radius", [(0.5, None), (1.0, 1), (2.0, None), (3.5, 4)])
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_gaussian_matches_numpy_oracle(dtype, sigma, radius, backend):
    img = pattern((61, 47, 2), dtype, seed=7)
    got = streamblur.gaussian_blur(img, sigma, radius, backend=backend)
    assert_close_unbiased(got, reference_gaussian(img, sigma, radius))
    # the package's own reference helper agrees with numpy too
    assert_close_unbiased(support.reference_gaussian_blur(img, sigma, radius), reference_gaussian(img, sigma, radius))
