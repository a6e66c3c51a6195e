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


# ---------------------------------------------------------------- every argument of every public function
#
# Each bad value raises TypeError (a wrong type) or ValueError (a value out
# of range, huge ints included) whose message names the argument, in the
# library's words: never nanobind's overload listing or an internal signature.

import pathlib  # noqa: E402
import re  # noqa: E402

BIG = 2**70
INTERNALS = ("incompatible function arguments", "memory_kind", "(self", "Invoked with", "_streamblur", "nanobind",
             "supported:", "-> ")
SIGNATURE = re.compile(r"\w+\(\w+: ")  # 'process_video(src: str, ...'


class BytesPath:
    """An os.PathLike that gives bytes."""

    def __fspath__(self):
        return b"in.mkv"


class StrPath:
    def __init__(self, p):
        self.p = str(p)

    def __fspath__(self):
        return self.p


def short(v):
    """A short id for a value in a case name."""
    if isinstance(v, (int, float, str, bytes)) and not isinstance(v, bool):
        r = repr(v)
        return r if len(r) <= 12 else f"{r[:6]}...({len(r)} chars)"
    return type(v).__name__


BAD_IMAGES = [None, "abc", b"abc", np.zeros((4, 4), object), {"a": 1}, object()]


def image_cases():
    calls = {
        "gaussian_blur": lambda v: streamblur.gaussian_blur(v, 2),
        "box_blur": lambda v: streamblur.box_blur(v, 1),
        "Chain": lambda v: streamblur.Chain("gblur")(v),
    }
    for fn, call in calls.items():
        for v in BAD_IMAGES:
            yield f"{fn}-image-{short(v)}", call, v, TypeError, "image"


def blur_option_cases():
    img = img8()
    calls = {
        "gaussian_blur": lambda **kw: streamblur.gaussian_blur(img, 2, **kw),
        "box_blur": lambda **kw: streamblur.box_blur(img, 1, **kw),
        "Chain": lambda **kw: streamblur.Chain("gblur")(img, **kw),
    }
    bad = [
        ("out", "abc", TypeError), ("out", b"abc", TypeError), ("out", 3, TypeError), ("out", object(), TypeError),
        ("out", np.zeros((8, 8), object), TypeError), ("out", [[0] * 8] * 8, TypeError),
        ("stream", "abc", TypeError), ("stream", b"abc", TypeError), ("stream", 1.5, TypeError),
        ("stream", BIG, ValueError), ("stream", 10**20, ValueError), ("stream", object(), TypeError),
        ("backend", None, TypeError), ("backend", 3, TypeError), ("backend", b"cpu", TypeError),
        ("backend", "gpu", ValueError),
    ]
    for fn, call in calls.items():
        for name, v, exc in bad:
            yield f"{fn}-{name}-{short(v)}", (lambda v, call=call, name=name: call(**{name: v})), v, exc, name


def number_cases():
    img = img8()
    sig = lambda v: streamblur.gaussian_blur(img, v)  # noqa: E731
    grad = lambda v: streamblur.gaussian_blur(img, 2, radius=v)  # noqa: E731
    brad = lambda v: streamblur.box_blur(img, v)  # noqa: E731
    for v, exc in [(None, TypeError), ("2", TypeError), (b"2", TypeError), (10**400, ValueError),
                   (np.zeros(2), TypeError), (object(), TypeError)]:
        yield f"gaussian_blur-sigma-{short(v)}", sig, v, exc, "sigma"
    for call, fn in ((grad, "gaussian_blur"), (brad, "box_blur")):
        for v, exc in [("1", TypeError), (b"1", TypeError), (1.5, TypeError), (BIG, ValueError),
                       (10**20, ValueError), (-BIG, ValueError)]:
            yield f"{fn}-radius-{short(v)}", call, v, exc, "radius"
    yield "box_blur-radius-None", brad, None, TypeError, "radius"


def small_function_cases():
    for v in (None, 3, b"gblur", ["gblur"]):
        yield f"Chain-spec-{short(v)}", streamblur.Chain, v, TypeError, "spec"
        yield f"filter_help-name-{short(v)}", streamblur.filter_help, v, TypeError, "name"
    yield "filter_help-name-unknown", streamblur.filter_help, "nope", ValueError, "nope"
    me_shape = lambda v: streamblur.managed_empty(v)  # noqa: E731
    me_dtype = lambda v: streamblur.managed_empty((2, 2), v)  # noqa: E731
    for v, exc in [(None, TypeError), ("3", TypeError), (b"3", TypeError), (1.5, TypeError), ((2, None), TypeError),
                   (BIG, ValueError), ((BIG, 2), ValueError), ((2**40, 2**40), ValueError), ((-1,), ValueError)]:
        yield f"managed_empty-shape-{v!r}"[:40], me_shape, v, exc, "shape"
    for v, exc in [("foo", TypeError), (object, TypeError), (3, TypeError)]:
        yield f"managed_empty-dtype-{v!r}", me_dtype, v, exc, "dtype"


def video_cases(clip, tmp):
    dst = tmp / "out.mkv"
    pv = lambda **kw: streamblur.process_video(kw.pop("src", clip), kw.pop("dst", dst), **kw)  # noqa: E731
    pvs = lambda **kw: streamblur.process_videos(kw.pop("inputs", [clip]), kw.pop("outputs", [dst]), **kw)  # noqa: E731
    fr = lambda **kw: streamblur.frames(kw.pop("path", clip), **kw)  # noqa: E731
    paths = [(None, TypeError), (3, TypeError), (b"in.mkv", TypeError), (BytesPath(), TypeError)]
    common = [
        ("vf", 3, TypeError), ("vf", b"gblur", TypeError),
        ("backend", None, TypeError), ("backend", 3, TypeError), ("backend", "gpu", ValueError),
        ("hwdec", None, TypeError), ("hwdec", b"none", TypeError), ("hwdec", "vdpau", ValueError),
        ("inflight", "4", TypeError), ("inflight", None, TypeError), ("inflight", BIG, ValueError),
        ("inflight", 10**20, ValueError),
    ]
    encode = [
        ("codec", 3, TypeError), ("codec", b"ffv1", TypeError),
        ("preset", 3, TypeError), ("preset", b"fast", TypeError),
        ("crf", "18", TypeError), ("crf", 1.5, TypeError), ("crf", BIG, ValueError), ("crf", 10**20, ValueError),
        ("crf", -1, ValueError), ("progress", 3, TypeError),
    ]
    one = [
        ("device", None, TypeError), ("device", "0", TypeError), ("device", BIG, ValueError),
        ("device", 10**20, ValueError),
        ("frames", "10", TypeError), ("frames", 1.5, TypeError), ("frames", BIG, ValueError),
        ("frames", 10**20, ValueError), ("frames", 0, ValueError),
        ("start", b"1", TypeError), ("start", object(), TypeError), ("start", 10**400, ValueError),
        ("duration", b"1", TypeError), ("duration", [1], TypeError), ("duration", 10**400, ValueError),
    ]
    batch = [
        ("jobs", "2", TypeError), ("jobs", None, TypeError), ("jobs", BIG, ValueError), ("jobs", 10**20, ValueError),
        ("devices", None, TypeError), ("devices", 1.5, TypeError), ("devices", b"0", TypeError),
        ("devices", BIG, ValueError), ("devices", [BIG], ValueError), ("devices", [10**20], ValueError),
        ("devices", ["0"], TypeError), ("out_dir", b"out", TypeError), ("out_dir", 3, TypeError),
    ]
    frames_args = [
        ("device", 3, TypeError), ("device", b"cpu", TypeError), ("device", "gpu", ValueError),
        ("array", 3, TypeError), ("array", b"numpy", TypeError),
    ]
    for v, exc in paths:
        yield f"process_video-src-{short(v)}", lambda v: pv(src=v), v, exc, "src"
        yield f"process_video-dst-{short(v)}", lambda v: pv(dst=v), v, exc, "dst"
        yield f"process_videos-inputs-{short(v)}", lambda v: pvs(inputs=[v]), v, exc, "inputs"
        yield f"process_videos-outputs-{short(v)}", lambda v: pvs(outputs=[v]), v, exc, "outputs"
        yield f"frames-path-{short(v)}", lambda v: fr(path=v), v, exc, "path"
    yield "process_videos-inputs-None", lambda v: pvs(inputs=v), None, TypeError, "inputs"
    yield "process_videos-outputs-int", lambda v: pvs(outputs=v), 3, TypeError, "outputs"
    for name, v, exc in common + encode + one:
        yield f"process_video-{name}-{short(v)}", (lambda v, name=name: pv(**{name: v})), v, exc, name
    for name, v, exc in common + encode + batch:
        if name == "out_dir":
            call = lambda v: streamblur.process_videos([clip], out_dir=v)  # noqa: E731
        else:
            call = lambda v, name=name: pvs(**{name: v})  # noqa: E731
        yield f"process_videos-{name}-{short(v)}", call, v, exc, name
    for name, v, exc in common + frames_args:
        yield f"frames-{name}-{short(v)}", (lambda v, name=name: fr(**{name: v})), v, exc, name


@pytest.fixture(scope="module")
def tiny_clip(tmp_path_factory):
    path = tmp_path_factory.mktemp("args") / "in.mkv"
    support.write_test_clip(path, width=16, height=16, frames=2, codec="ffv1")
    return path




def message_problem(e, name):
    """What is wrong with the message of exception e about argument `name`, or None."""
    msg = str(e)
    if not re.search(rf"(?<![\w]){re.escape(name)}(?![\w])", msg):
        return f"the message does not name {name!r}: {msg[:300]!r}"
    for bad in INTERNALS:
        if bad in msg:
            return f"internal detail {bad!r} in {msg[:300]!r}"
    if SIGNATURE.search(msg):
        return f"an internal signature in {msg[:300]!r}"
    if "--" in msg:
        return f"a CLI flag in {msg!r}"
    if len(msg) > 400 or "\n" in msg:
        return f"not one short line: {msg[:300]!r}"
    return None


@pytest.mark.parametrize("case", list(image_cases()) + list(blur_option_cases()) + list(number_cases())
                         + list(small_function_cases()), ids=lambda c: c[0])
def test_every_bad_argument_names_the_argument(case):
    _, call, value, exc, name = case
    with pytest.raises(exc) as e:
        call(value)
    assert type(e.value) is exc, f"{type(e.value).__name__}: {e.value}"
    problem = message_problem(e.value, name)
    assert problem is None, problem


def test_every_bad_video_argument_names_the_argument(tiny_clip, tmp_path):
    failures = []
    n = 0
    for case_id, call, value, exc, name in video_cases(tiny_clip, tmp_path):
        n += 1
        try:
            call(value)
        except Exception as e:  # noqa: BLE001
            if type(e) is not exc:
                failures.append(f"{case_id}: {type(e).__name__} (want {exc.__name__}): {str(e)[:200]!r}")
                continue
            problem = message_problem(e, name)
            if problem:
                failures.append(f"{case_id}: {problem}")
        else:
            failures.append(f"{case_id}: nothing raised")
        if (tmp_path / "out.mkv").exists():
            failures.append(f"{case_id}: wrote the output")
            (tmp_path / "out.mkv").unlink()
    assert n > 100
    # And the checks refuse nothing valid: os.PathLike str paths, numpy integers, a frame limit past the clip.
    for case_id, call in good_video_calls(tiny_clip, tmp_path):
        n += 1
        try:
            call()
        except Exception as e:  # noqa: BLE001
            failures.append(f"{case_id}: valid, but raised {type(e).__name__}: {str(e)[:200]!r}")
    assert not failures, f"{len(failures)} of {n} cases:\n" + "\n".join(failures)


def good_video_calls(clip, tmp):
    def frames_of(**kw):
        with streamblur.frames(**kw) as it:
            assert sum(1 for _ in it) == 2

    def ok(results):
        assert all(r["ok"] for r in results), results

    cpu = dict(vf="", codec="ffv1", backend="cpu", overwrite=True)
    yield "process_video-PathLike", lambda: streamblur.process_video(StrPath(clip), StrPath(tmp / "g1.mkv"), **cpu)
    yield "process_videos-PathLike", lambda: ok(streamblur.process_videos([StrPath(clip)], [StrPath(tmp / "g2.mkv")],
                                                                         **cpu))
    yield "process_videos-out_dir-PathLike", lambda: ok(streamblur.process_videos(
        [pathlib.Path(clip)], out_dir=StrPath(tmp / "g3"), **cpu))
    yield "frames-PathLike", lambda: frames_of(path=StrPath(clip), device="cpu", backend="cpu")
    yield "process_video-numpy-ints", lambda: streamblur.process_video(
        clip, tmp / "g4.mkv", vf="", codec="libx264", backend="cpu", frames=2**62, crf=np.int64(10),
        inflight=np.int32(2), device=np.int64(0))
    yield "process_videos-numpy-ints", lambda: ok(streamblur.process_videos(
        [clip], [tmp / "g5.mkv"], vf="", codec="libx264", backend="cpu", crf=np.uint8(0), jobs=np.int64(1),
        devices=[np.int64(0)] if streamblur.cuda_available() else "all"))
    yield "gaussian_blur-numpy-numbers", lambda: streamblur.gaussian_blur(img8(), np.float32(2), radius=np.uint16(3))
