"""streamblur.frames(): filtered frames as arrays, from a pipeline on a background thread.

The CPU tests run everywhere (CI has no GPU); the GPU tests skip without a
device. Every clip is made at test time, at odd sizes where the codec allows.
The filtered planes are checked against a numpy-only Gaussian written here
(not the library's reference), applied to the unfiltered frames.
"""

import faulthandler
import math
import os
import sys
import threading
import time

import numpy as np
import pytest

import streamblur
import support
from conftest import max_diff

N_FRAMES = 7
# A hang (a pipeline thread that never stops) must fail the run, not stall CI:
# explicit close() calls run under `finishes` (a clear assertion), and every
# test runs under a faulthandler watchdog that dumps all threads and ends the
# process (also covering closes from garbage collection and interpreter exit).
HANG_TIMEOUT_S = 120
_watchdog_file = None


def _uncaptured_stderr(config):
    """The terminal's stderr even while pytest captures fd 2 (else sys.__stderr__)."""
    global _watchdog_file
    if _watchdog_file is None:
        try:
            capman = config.pluginmanager.getplugin("capturemanager")
            _watchdog_file = os.fdopen(os.dup(capman._global_capturing.err.targetfd_save), "w")
        except Exception:  # noqa: BLE001 - another capture mode or pytest version
            _watchdog_file = sys.__stderr__
    return _watchdog_file


@pytest.fixture(autouse=True)
def hang_watchdog(request):
    faulthandler.dump_traceback_later(HANG_TIMEOUT_S, exit=True, file=_uncaptured_stderr(request.config))
    yield
    if not _hung:
        faulthandler.cancel_dump_traceback_later()
    # else: stays armed, so a process stuck at exit on the hung thread still ends


_hung = False


def finishes(fn, timeout=30.0):
    """Runs fn on a helper thread; False when it has not returned after `timeout` seconds."""
    global _hung
    t = threading.Thread(target=fn, daemon=True)
    t.start()
    t.join(timeout)
    if t.is_alive():
        _hung = True
        return False
    return True


# ---------------------------------------------------------------- helpers

# (pixel format, codec, container): lossless, so the unfiltered frames are the
# clip's exact samples. rgb24 goes through PNG (FFV1 takes no rgb24).
FORMATS = {
    "yuv420p": ("ffv1", "mkv"),
    "rgb24": ("png", "mkv"),
    "gray16le": ("ffv1", "mkv"),
}


def make_clip(tmp_path, pix_fmt="yuv420p", width=33, height=17, frames=N_FRAMES, noise=True, name=None):
    codec, ext = FORMATS[pix_fmt]
    path = tmp_path / (name or f"clip-{pix_fmt}-{width}x{height}.{ext}")
    support.write_test_clip(path, width=width, height=height, frames=frames, codec=codec, pix_fmt=pix_fmt,
                                noise=noise)
    return path


def gaussian_weights(sigma):
    """exp(-i^2 / (2 sigma^2)) over [-r, r], normalised; r = max(1, ceil(3 sigma)) as the library's default."""
    r = max(1, math.ceil(3.0 * sigma))
    i = np.arange(-r, r + 1, dtype=np.float64)
    w = np.exp(-(i * i) / (2.0 * sigma * sigma))
    return w / w.sum()


def numpy_gaussian(plane, sigma_x, sigma_y):
    """Separable Gaussian in double precision, borders clamped to the edge, rounded half up."""
    a = np.asarray(plane).astype(np.float64)
    squeeze = a.ndim == 2
    if squeeze:
        a = a[:, :, None]
    h, w, _ = a.shape
    wx, wy = gaussian_weights(sigma_x), gaussian_weights(sigma_y)
    rx, ry = len(wx) // 2, len(wy) // 2
    cols = np.clip(np.arange(w)[:, None] + np.arange(-rx, rx + 1)[None, :], 0, w - 1)  # (w, taps)
    rows = np.einsum("hwkc,k->hwc", a[:, cols, :], wx)
    lines = np.clip(np.arange(h)[:, None] + np.arange(-ry, ry + 1)[None, :], 0, h - 1)  # (h, taps)
    out = np.einsum("hkwc,k->hwc", rows[lines], wy)
    hi = np.iinfo(plane.dtype).max
    out = np.clip(np.floor(out + 0.5), 0, hi).astype(plane.dtype)
    return out[:, :, 0] if squeeze else out


def expected_blur(frame_planes, width, height, sigma):
    """gblur=sigma=S: S on every plane, in that plane's own pixels (FFmpeg's meaning, chroma_scale=0)."""
    return [numpy_gaussian(p, sigma, sigma) for p in frame_planes]


class DiffStats:
    """Per-plane agreement over many frames: within +-1, at most 1% off, mean signed difference <= 0.01."""

    def __init__(self, planes):
        self.n = [0] * planes
        self.off = [0] * planes
        self.signed = [0] * planes

    def add(self, i, got, want):
        d = np.asarray(got).astype(np.int64) - np.asarray(want).astype(np.int64)
        assert np.abs(d).max(initial=0) <= 1, f"plane {i}: a sample differs by {np.abs(d).max()}"
        self.n[i] += d.size
        self.off[i] += int(np.count_nonzero(d))
        self.signed[i] += int(d.sum())

    def check(self):
        for i, n in enumerate(self.n):
            assert n > 0
            assert self.off[i] <= 0.01 * n, f"plane {i}: {self.off[i]} of {n} samples differ"
            assert abs(self.signed[i] / n) <= 0.01, f"plane {i}: mean signed difference {self.signed[i] / n}"


def host_planes(frame):
    """The frame's planes as numpy arrays (copies for device arrays)."""
    out = []
    for p in frame.planes:
        if isinstance(p, np.ndarray):
            out.append(p)
        elif type(p).__module__.startswith("cupy"):
            out.append(p.get())
        else:  # torch (uint16 through int16: older NumPy bridges lack torch.uint16)
            import torch  # noqa: PLC0415

            t = p.cpu()
            out.append(t.view(torch.int16).numpy().view(np.uint16) if t.element_size() == 2 else t.numpy())
    return out


def collect(path, vf="", **kw):
    """Every frame of a run, as (index, pts, format, width, height, host planes)."""
    return [(f.index, f.pts, f.format, f.width, f.height, [np.array(p) for p in host_planes(f)])
            for f in streamblur.frames(path, vf, **kw)]


# ---------------------------------------------------------------- CPU device (runs everywhere)


@pytest.mark.parametrize("backend", ["cpu", "auto"])
@pytest.mark.parametrize("pix_fmt,sigma", [("yuv420p", 2.0), ("rgb24", 1.5), ("gray16le", 2.5)])
def test_cpu_frames_equal_independent_gaussian(tmp_path, pix_fmt, sigma, backend):
    clip = make_clip(tmp_path, pix_fmt)
    raw = collect(clip, "", device="cpu", backend=backend)
    got = collect(clip, f"gblur=sigma={sigma}", device="cpu", backend=backend)
    assert len(raw) == len(got) == N_FRAMES
    planes = {"yuv420p": 3, "rgb24": 1, "gray16le": 1}[pix_fmt]
    stats = DiffStats(planes)
    for (ri, rpts, rfmt, rw, rh, rplanes), (gi, gpts, gfmt, gw, gh, gplanes) in zip(raw, got):
        assert (ri, rfmt, rw, rh) == (gi, gfmt, gw, gh)
        assert rpts == gpts
        assert (gfmt, gw, gh) == (pix_fmt, 33, 17)
        assert len(gplanes) == planes
        for i, (want, have) in enumerate(zip(expected_blur(rplanes, rw, rh, sigma), gplanes)):
            assert have.shape == want.shape and have.dtype == want.dtype
            stats.add(i, have, want)
    stats.check()
    # Shapes and dtypes of the processing format.
    first = got[0][5]
    if pix_fmt == "yuv420p":
        assert [p.shape for p in first] == [(17, 33), (9, 17), (9, 17)]
        assert all(p.dtype == np.uint8 for p in first)
    elif pix_fmt == "rgb24":
        assert first[0].shape == (17, 33, 3) and first[0].dtype == np.uint8
    else:
        assert first[0].shape == (17, 33) and first[0].dtype == np.uint16
        assert first[0].max() > 255  # really 16-bit samples


def test_cpu_frames_count_index_pts_and_stats(tmp_path):
    clip = make_clip(tmp_path)
    it = streamblur.frames(clip, "boxblur=radius=1", device="cpu")
    assert isinstance(it, streamblur.FrameIterator)
    seen = list(it)
    assert [f.index for f in seen] == list(range(N_FRAMES))
    pts = [f.pts for f in seen]
    assert all(math.isfinite(p) for p in pts)
    assert pts[0] == pytest.approx(0.0, abs=1e-9)
    assert all(b > a for a, b in zip(pts, pts[1:])), pts
    assert pts[1] - pts[0] == pytest.approx(1 / 30, abs=1e-3)  # Matroska keeps milliseconds
    for f in seen:
        assert all(isinstance(p, np.ndarray) for p in f.planes)
        assert all(p.flags.c_contiguous and p.flags.writeable for p in f.planes)
    with pytest.raises(StopIteration):
        next(it)
    stats = it.stats
    assert stats is not None and stats["frames"] == N_FRAMES
    assert stats["decoder"] in ("cpu", "nvdec")
    assert "boxblur" in stats["filters"]
    assert isinstance(it.notes, list)
    assert "Frame(index=0" in repr(seen[0])


def test_cpu_frames_box_blur_exact(tmp_path):
    # boxblur is exact: the planes equal a plain box mean of the unfiltered ones.
    clip = make_clip(tmp_path, "gray16le")
    raw = collect(clip, "", device="cpu")
    got = collect(clip, "boxblur=radius=2", device="cpu")
    for (*_, (r,)), (*_, (g,)) in zip(raw, got):
        a = r.astype(np.int64)
        h, w = a.shape
        idx_y = np.clip(np.arange(h)[:, None] + np.arange(-2, 3)[None, :], 0, h - 1)
        idx_x = np.clip(np.arange(w)[:, None] + np.arange(-2, 3)[None, :], 0, w - 1)
        s = a[:, idx_x].sum(axis=2)[idx_y].sum(axis=1)
        np.testing.assert_array_equal(g, ((s + 12) // 25).astype(np.uint16))


def test_frames_held_by_the_user_are_never_overwritten(tmp_path):
    clip = make_clip(tmp_path, frames=24)
    held, copies = [], []
    for f in streamblur.frames(clip, "gblur=sigma=1", device="cpu", inflight=1):
        held.append(f)
        copies.append([p.copy() for p in f.planes])
    assert len(held) == 24
    # The content moves from frame to frame, so reused memory would show.
    assert any(not np.array_equal(held[0].planes[0], f.planes[0]) for f in held[1:])
    for f, c in zip(held, copies):
        for p, q in zip(f.planes, c):
            np.testing.assert_array_equal(p, q)
    # Planes of different frames never share memory.
    addresses = {p.__array_interface__["data"][0] for f in held for p in f.planes}
    assert len(addresses) == 3 * len(held)


def test_break_early_then_a_new_iterator_works(tmp_path):
    clip = make_clip(tmp_path, width=96, height=64, frames=90, noise=False)
    t0 = time.monotonic()
    for _ in range(3):
        it = streamblur.frames(clip, "gblur=sigma=2", device="cpu", inflight=2)
        for f in it:
            if f.index == 1:
                break
        time.sleep(0.3)  # the pipeline fills the queue and waits in its sink: close() must still end it
        assert finishes(it.close), "close() hangs: the pipeline thread does not stop"
        with pytest.raises(StopIteration):
            next(it)
    # Dropped without close(): garbage collection stops it.
    for f in streamblur.frames(clip, device="cpu", inflight=1):
        time.sleep(0.3)
        break
    del f
    # A pipeline that never got to run its first frame stops too.
    assert finishes(streamblur.frames(clip, device="cpu").close)
    # With a context manager, leaving the block stops the pipeline.
    with streamblur.frames(clip, device="cpu", inflight=1) as it:
        first = next(it)
    assert first.index == 0
    assert it.stats is None or it.stats["frames"] < 90
    assert time.monotonic() - t0 < 60
    # Everything still works afterwards.
    assert len(list(streamblur.frames(clip, "boxblur=1", device="cpu"))) == 90


def test_two_iterators_interleaved(tmp_path):
    # Two pipelines whose sinks both wait for Python: neither may starve the other.
    a = make_clip(tmp_path, frames=30, name="a.mkv")
    b = make_clip(tmp_path, "gray16le", frames=20, name="b.mkv")
    pairs = list(zip(streamblur.frames(a, "gblur=sigma=1", device="cpu", inflight=1),
                     streamblur.frames(b, "gblur=sigma=1", device="cpu", inflight=1)))
    assert len(pairs) == 20
    assert [(x.index, y.index) for x, y in pairs] == [(i, i) for i in range(20)]


def test_errors_are_clear(tmp_path):
    clip = make_clip(tmp_path)
    with pytest.raises(FileNotFoundError, match="nope.mkv"):
        streamblur.frames(tmp_path / "nope.mkv")
    with pytest.raises(ValueError, match="blurry"):
        streamblur.frames(clip, "blurry=2", device="cpu")
    with pytest.raises(ValueError, match="sigma"):
        streamblur.frames(clip, "gblur=sigma=1000", device="cpu")
    with pytest.raises(ValueError, match="device"):
        streamblur.frames(clip, device="gpu")
    with pytest.raises(ValueError, match="hwdec"):
        streamblur.frames(clip, device="cpu", hwdec="vaapi")
    with pytest.raises(ValueError, match="backend"):
        streamblur.frames(clip, device="cpu", backend="opencl")
    with pytest.raises(ValueError, match="inflight"):
        streamblur.frames(clip, device="cpu", inflight=0)
    with pytest.raises(ValueError, match="array"):
        streamblur.frames(clip, device="cpu", array="cupy")
    # A file that exists but is no video: the error comes from the loop, naming the file.
    junk = tmp_path / "junk.mkv"
    junk.write_bytes(np.random.default_rng(1).integers(0, 256, 4096, dtype=np.uint8).tobytes())
    it = streamblur.frames(junk, device="cpu")
    with pytest.raises(RuntimeError, match="junk.mkv"):
        next(it)
    with pytest.raises(StopIteration):  # raised once; then the iterator is over
        next(it)
    it.close()


def test_cuda_device_without_gpu_is_a_clear_error(tmp_path):
    if streamblur.cuda_available():
        pytest.skip("a CUDA device is present")
    clip = make_clip(tmp_path)
    with pytest.raises(RuntimeError, match="no CUDA device"):
        streamblur.frames(clip, device="cuda")
    it = streamblur.frames(clip)  # device=None: the CPU here
    assert it.device == "cpu"
    assert isinstance(next(it).planes[0], np.ndarray)
    it.close()


def test_torch_arrays_on_cpu(tmp_path):
    torch = pytest.importorskip("torch")
    clip = make_clip(tmp_path)
    want = collect(clip, "gblur=sigma=2", device="cpu")
    got = list(streamblur.frames(clip, "gblur=sigma=2", device="cpu", array="torch"))
    assert len(got) == len(want)
    for f, w in zip(got, want):
        assert all(isinstance(p, torch.Tensor) and p.device.type == "cpu" and p.dtype == torch.uint8
                   for p in f.planes)
        for p, q in zip(f.planes, w[5]):
            np.testing.assert_array_equal(p.numpy(), q)


# ---------------------------------------------------------------- GPU (skipped without a device)


def assert_close_frames(got, want):
    """Same frames (index, pts, format, size), planes within +-1."""
    assert len(got) == len(want) > 0
    for g, w in zip(got, want):
        assert g[:5] == w[:5]
        assert len(g[5]) == len(w[5])
        for p, q in zip(g[5], w[5]):
            assert p.shape == q.shape and p.dtype == q.dtype
            assert max_diff(p, q) <= 1


@pytest.mark.parametrize("pix_fmt", ["yuv420p", "rgb24", "gray16le"])
def test_cuda_frames_cupy_equal_cpu_frames(cupy, tmp_path, pix_fmt):
    cp = cupy
    clip = make_clip(tmp_path, pix_fmt)
    spec = "gblur=sigma=2,boxblur=radius=1"
    want = collect(clip, spec, device="cpu", backend="cpu")
    frames = list(streamblur.frames(clip, spec, device="cuda", array="cupy"))
    for f in frames:
        for p in f.planes:
            assert isinstance(p, cp.ndarray)
            assert p.device.id == cp.cuda.runtime.getDevice()
            assert p.flags.c_contiguous
            attrs = cp.cuda.runtime.pointerGetAttributes(p.data.ptr)
            assert attrs.type == cp.cuda.runtime.memoryTypeDevice
    got = [(f.index, f.pts, f.format, f.width, f.height, host_planes(f)) for f in frames]
    assert_close_frames(got, want)
    # The planes are ordinary CuPy arrays: CuPy can work on them.
    assert int(frames[0].planes[0].astype(cp.int64).sum()) == int(got[0][5][0].astype(np.int64).sum())
    np.testing.assert_array_equal(cp.asnumpy(frames[0].planes[0] + 0), host_planes(frames[0])[0])


def test_cuda_frames_torch_equal_cpu_frames(torch, tmp_path):
    clip = make_clip(tmp_path, "yuv420p")
    spec = "gblur=sigma=2"
    want = collect(clip, spec, device="cpu", backend="cpu")
    frames = list(streamblur.frames(clip, spec, device="cuda", array="torch"))
    for f in frames:
        for p in f.planes:
            assert isinstance(p, torch.Tensor)
            assert p.is_cuda and p.device.index == torch.cuda.current_device()
            assert p.dtype == torch.uint8 and p.is_contiguous()
    got = [(f.index, f.pts, f.format, f.width, f.height, host_planes(f)) for f in frames]
    assert_close_frames(got, want)
    # 16-bit planes come as torch.uint16 (PyTorch 2.3 and later take it through DLPack).
    if hasattr(torch, "uint16"):
        clip16 = make_clip(tmp_path, "gray16le")
        want16 = collect(clip16, spec, device="cpu", backend="cpu")
        with streamblur.frames(clip16, spec, device="cuda", array="torch") as it:
            f16 = next(it)
        assert f16.planes[0].dtype == torch.uint16 and f16.planes[0].is_cuda
        assert max_diff(host_planes(f16)[0], want16[0][5][0]) <= 1


def test_cuda_frames_default_array_and_device(cupy, tmp_path):
    clip = make_clip(tmp_path)
    it = streamblur.frames(clip, "gblur=sigma=2")  # device=None: the GPU here; array: CuPy
    assert it.device == "cuda" and it.array == "cupy"
    f = next(it)
    assert isinstance(f.planes[0], cupy.ndarray)
    it.close()


def test_cuda_frames_held_are_never_overwritten(cupy, tmp_path):
    cp = cupy
    clip = make_clip(tmp_path, width=64, height=48, frames=24)
    held, copies = [], []
    for f in streamblur.frames(clip, "gblur=sigma=1", device="cuda", array="cupy", inflight=1):
        held.append(f)
        copies.append([cp.asnumpy(p) for p in f.planes])
    assert len(held) == 24
    assert any(not np.array_equal(copies[0][0], c[0]) for c in copies[1:])
    for f, c in zip(held, copies):
        for p, q in zip(f.planes, c):
            np.testing.assert_array_equal(cp.asnumpy(p), q)
    assert len({p.data.ptr for f in held for p in f.planes}) == 3 * len(held)


def test_cuda_frames_break_early_no_hang(cupy, tmp_path):
    clip = make_clip(tmp_path, width=96, height=64, frames=90, noise=False)
    for _ in range(3):
        with streamblur.frames(clip, "gblur=sigma=2", device="cuda", inflight=2) as it:
            for f in it:
                if f.index == 2:
                    time.sleep(0.3)
                    break
            assert finishes(it.close), "close() hangs: the pipeline thread does not stop"
    assert len(list(streamblur.frames(clip, device="cuda"))) == 90


def h264_clip(tmp_path, frames=60, width=176, height=144):
    path = tmp_path / "h264.mp4"
    try:
        support.write_test_clip(path, width=width, height=height, frames=frames, codec="libx264", noise=True)
    except RuntimeError as e:
        pytest.skip(f"no libx264 encoder here: {e}")
    return path


def test_nvdec_frames_equal_cpu_decoded_frames(cupy, tmp_path):
    clip = h264_clip(tmp_path)
    spec = "gblur=sigma=2"
    it = streamblur.frames(clip, spec, device="cuda", hwdec="nvdec")
    nv = [(f.index, f.pts, f.format, f.width, f.height, host_planes(f)) for f in it]
    assert it.stats["decoder"] == "nvdec"
    it2 = streamblur.frames(clip, spec, device="cuda", hwdec="none")
    cpu = [(f.index, f.pts, f.format, f.width, f.height, host_planes(f)) for f in it2]
    assert it2.stats["decoder"] == "cpu"
    assert len(nv) == 60
    assert_close_frames(nv, cpu)
    # Unfiltered, NVDEC and the CPU decoder agree exactly (H.264 decoding is bit-exact).
    raw_nv = collect(clip, "", device="cuda", hwdec="nvdec")
    raw_cpu = collect(clip, "", device="cpu", hwdec="none", backend="cpu")
    assert len(raw_nv) == len(raw_cpu) == 60
    for g, w in zip(raw_nv, raw_cpu):
        assert g[1] == w[1]
        for p, q in zip(g[5], w[5]):
            np.testing.assert_array_equal(p, q)


def test_nvdec_frames_no_host_to_device_copy(torch, tmp_path):
    # NVDEC frames stay on the GPU from decoder to the user's tensor: while the
    # frames are iterated no host-to-device copy may happen. The first frame is
    # taken before profiling starts: set-up (filter weights) may upload once.
    from torch.profiler import ProfilerActivity, profile

    clip = h264_clip(tmp_path, frames=90)
    it = streamblur.frames(clip, "gblur=sigma=2", device="cuda", hwdec="nvdec", array="torch", inflight=2)
    first = next(it)
    assert first.planes[0].is_cuda
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        rest = list(it)
        torch.cuda.synchronize()
    assert len(rest) == 89
    assert it.stats["decoder"] == "nvdec"
    names = [e.name for e in prof.events()]
    host_to_device = [n for n in names if "HtoD" in n]
    assert not host_to_device, f"{len(host_to_device)} host-to-device copies while iterating: {host_to_device[:5]}"
    # The profiler did see the GPU work (the frames' device-to-device copies).
    assert any("DtoD" in n for n in names), f"no device copies recorded; events: {sorted(set(names))[:20]}"
