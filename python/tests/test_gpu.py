"""CUDA paths: CuPy and PyTorch arrays in and out, streams, managed memory,
devices. Skipped without a GPU (and without CuPy / PyTorch)."""

import numpy as np
import pytest

import streamblur
import support
from conftest import max_diff, pattern

SHAPES = [(1, 1), (37, 23), (24, 33, 3), (15, 40, 4), (1081, 1921)]


def cupy_pointer_is_device(cp, arr):
    attrs = cp.cuda.runtime.pointerGetAttributes(arr.data.ptr)
    return attrs.type == cp.cuda.runtime.memoryTypeDevice


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("dtype", [np.uint8, np.uint16], ids=lambda d: np.dtype(d).name)
def test_cupy_in_cupy_out(cupy, dtype, shape):
    cp = cupy
    host = pattern(shape, dtype)
    d = cp.asarray(host)
    got = streamblur.gaussian_blur(d, 2.0)
    assert isinstance(got, cp.ndarray)
    assert got.device.id == d.device.id
    assert got.shape == d.shape and got.dtype == d.dtype
    assert cupy_pointer_is_device(cp, got)
    assert max_diff(cp.asnumpy(got), streamblur.gaussian_blur(host, 2.0, backend="cpu")) <= 1
    assert max_diff(cp.asnumpy(got), support.reference_gaussian_blur(host, 2.0)) <= 1
    np.testing.assert_array_equal(cp.asnumpy(streamblur.box_blur(d, 2)), support.reference_box_blur(host, 2))


def test_cupy_strided_and_out(cupy):
    cp = cupy
    host = pattern((80, 70, 3), np.uint8, seed=3)
    big = cp.asarray(host)
    view = big[::2, 1:-1]  # strided rows on the device
    got = streamblur.box_blur(view, 1)
    np.testing.assert_array_equal(cp.asnumpy(got), support.reference_box_blur(host[::2, 1:-1].copy(), 1))
    trans = cp.asarray(host[..., 0]).T  # pixels not packed: copied on the device
    np.testing.assert_array_equal(cp.asnumpy(streamblur.box_blur(trans, 1)),
                                  support.reference_box_blur(host[..., 0].T.copy(), 1))
    out = cp.zeros_like(view)
    assert streamblur.box_blur(view, 1, out=out) is out
    np.testing.assert_array_equal(cp.asnumpy(out), cp.asnumpy(got))
    streamblur.box_blur(big, 1, out=big)  # in place
    np.testing.assert_array_equal(cp.asnumpy(big), support.reference_box_blur(host, 1))


def test_cupy_stream(cupy):
    cp = cupy
    host = pattern((512, 640), np.uint8, seed=4)
    stream = cp.cuda.Stream(non_blocking=True)
    with stream:
        d = cp.asarray(host)
        got = streamblur.gaussian_blur(d, 3.0, stream=stream)
        got2 = streamblur.gaussian_blur(d, 3.0, stream=stream.ptr)
        got3 = streamblur.gaussian_blur(d, 3.0)  # no stream=: CuPy's current stream
    stream.synchronize()  # CUDA results are queued, not waited for
    ref = support.reference_gaussian_blur(host, 3.0)
    assert max_diff(cp.asnumpy(got), ref) <= 1
    assert max_diff(cp.asnumpy(got2), ref) <= 1
    assert max_diff(cp.asnumpy(got3), ref) <= 1


def test_cupy_calls_on_two_streams_share_the_cached_filter_safely(cupy):
    # Both streams use one cached filter (same spec and shape) and so one
    # scratch buffer; its event orders each call after the previous one.
    cp = cupy
    hosts = [pattern((720, 1280), np.uint8, seed=20 + i) for i in range(8)]
    streams = [cp.cuda.Stream(non_blocking=True) for _ in range(2)]
    outs = []
    for i, h in enumerate(hosts):
        s = streams[i % 2]
        with s:
            d = cp.asarray(h)
            outs.append(streamblur.gaussian_blur(d, 2.0, stream=s))
    for s in streams:
        s.synchronize()
    for h, o in zip(hosts, outs):
        assert max_diff(cp.asnumpy(o), support.reference_gaussian_blur(h, 2.0)) <= 1


def test_cupy_chain(cupy):
    cp = cupy
    host = pattern((64, 48, 2), np.uint16, seed=5)
    got = streamblur.Chain("gblur=sigma=2,boxblur=radius=1")(cp.asarray(host))
    assert isinstance(got, cp.ndarray)
    ref = support.reference_box_blur(support.reference_gaussian_blur(host, 2), 1)
    assert max_diff(cp.asnumpy(got), ref) <= 1


def test_cupy_chain_replays_its_cuda_graph(cupy):
    # The second call of a chain on the same arrays records its launches into
    # one CUDA graph and later calls launch it; every call's result is still
    # that call's input blurred (new samples in the same arrays each time).
    cp = cupy
    chain = streamblur.Chain("gblur=sigma=2,boxblur=radius=1")
    x = cp.empty((97, 131), cp.uint8)
    out = cp.empty_like(x)
    s = cp.cuda.Stream(non_blocking=True)
    before = support.cuda_cache_stats()["graph_launches"]
    for call in range(4):
        host = pattern(x.shape, np.uint8, seed=40 + call)
        x.set(host, stream=s)
        assert chain(x, out=out, stream=s) is out
        s.synchronize()
        ref = support.reference_box_blur(support.reference_gaussian_blur(host, 2), 1)
        assert max_diff(cp.asnumpy(out), ref) <= 1, f"call {call}"
    assert support.cuda_cache_stats()["graph_launches"] - before == 3, "calls 2, 3 and 4 as one graph launch"


def test_cupy_cpu_backend_refused(cupy):
    with pytest.raises(ValueError, match="backend='cpu' cannot read or write CUDA device memory"):
        streamblur.box_blur(cupy.zeros((4, 4), cupy.uint8), 1, backend="cpu")


def test_cupy_wrong_dtype(cupy):
    with pytest.raises(TypeError, match="float32"):
        streamblur.box_blur(cupy.zeros((4, 4), cupy.float32), 1)


@pytest.mark.parametrize("dtype_name", ["uint8", "uint16"])
def test_torch_in_torch_out(torch, dtype_name):
    dtype = getattr(torch, dtype_name, None)
    if dtype is None:
        pytest.skip(f"torch has no {dtype_name}")
    host = pattern((45, 38, 3), np.dtype(dtype_name), seed=6)
    t = torch.from_numpy(host.astype(np.int64)).to(dtype).cuda()
    try:
        got = streamblur.gaussian_blur(t, 2.0)
    except (TypeError, BufferError, RuntimeError) as e:
        if dtype_name == "uint16":
            pytest.skip(f"this torch cannot export uint16 through DLPack: {e}")
        raise
    assert isinstance(got, torch.Tensor)
    assert got.is_cuda and got.device == t.device and got.dtype == t.dtype
    back = got.cpu().to(torch.int64).numpy()
    assert max_diff(back, support.reference_gaussian_blur(host, 2.0)) <= 1


def test_torch_stream_and_out(torch):
    host = pattern((300, 200), np.uint8, seed=7)
    t = torch.from_numpy(host).cuda()
    out = torch.empty_like(t)
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())  # t and out were made on the current stream
    with torch.cuda.stream(s):
        res = streamblur.box_blur(t, 2, out=out, stream=s)
    s.synchronize()
    assert res is out
    np.testing.assert_array_equal(out.cpu().numpy(), support.reference_box_blur(host, 2))


def test_torch_non_contiguous(torch):
    host = pattern((40, 30), np.uint8, seed=8)
    t = torch.from_numpy(host).cuda().t()  # transposed view
    got = streamblur.box_blur(t, 1)
    np.testing.assert_array_equal(got.cpu().numpy(), support.reference_box_blur(host.T.copy(), 1))


def test_managed_memory_path(gpu):
    m = streamblur.managed_empty((256, 256), np.uint8)
    assert streamblur.is_managed(m)
    m[:] = pattern((256, 256), np.uint8, seed=9)
    ref = support.reference_box_blur(m, 1)
    res = streamblur.box_blur(m, 1)
    assert streamblur.is_managed(res)  # managed in, managed out: no host copy
    np.testing.assert_array_equal(res, ref)
    view = m[::2, 3:]  # strided managed view
    np.testing.assert_array_equal(streamblur.box_blur(view, 1), support.reference_box_blur(view.copy(), 1))
    streamblur.box_blur(m, 1, out=m)  # in place on the GPU
    np.testing.assert_array_equal(m, ref)
    g = streamblur.managed_empty((64, 64, 3), np.uint16)
    g[:] = pattern((64, 64, 3), np.uint16)
    assert max_diff(streamblur.gaussian_blur(g, 2.0), support.reference_gaussian_blur(g, 2.0)) <= 1


def test_numpy_on_gpu_matches_cpu_backend(gpu):
    for shape, dtype in [((1081, 1921), np.uint8), ((97, 131, 3), np.uint16), ((5, 3, 4), np.uint8)]:
        img = pattern(shape, dtype, seed=10)
        gpu_res = streamblur.gaussian_blur(img, 2.5, backend="cuda")
        cpu_res = streamblur.gaussian_blur(img, 2.5, backend="cpu")
        assert max_diff(gpu_res, cpu_res) <= 1
        np.testing.assert_array_equal(streamblur.box_blur(img, 3, backend="cuda"), streamblur.box_blur(img, 3, backend="cpu"))


def test_raw_stream_handle(cupy):
    cp = cupy
    host = pattern((64, 64), np.uint8, seed=11)
    s = cp.cuda.Stream(non_blocking=True)
    got = streamblur.box_blur(host, 1, stream=s.ptr)  # numpy via a caller's stream
    np.testing.assert_array_equal(got, support.reference_box_blur(host, 1))


def test_array_on_another_device(cupy):
    cp = cupy
    if streamblur.device_count() < 2:
        pytest.skip("needs two GPUs")
    with cp.cuda.Device(1):
        d = cp.zeros((16, 16), cp.uint8)
    with cp.cuda.Device(0):
        with pytest.raises(ValueError, match="array is on CUDA device 1 but streamblur runs on device 0"):
            streamblur.box_blur(d, 1)
    with cp.cuda.Device(1):
        got = streamblur.box_blur(d, 1)
        assert got.device.id == 1


@pytest.mark.parametrize("where", ["numpy", "cupy"])
def test_repeated_calls_allocate_nothing(gpu, where, request):
    # The module's docs promise that configured filters (device weights and
    # scratch) and, for host images, the device staging buffer are cached:
    # after the first call of a spec and shape, further calls allocate nothing.
    host = pattern((61, 47), np.uint8, seed=3)
    img = host
    if where == "cupy":
        img = request.getfixturevalue("cupy").asarray(host)
    first = streamblur.gaussian_blur(img, 1.7)
    before = support.cuda_cache_stats()
    for _ in range(5):
        again = streamblur.gaussian_blur(img, 1.7)
    after = support.cuda_cache_stats()
    allocations = ("chains_configured", "staging_allocations")
    assert [after[k] for k in allocations] == [before[k] for k in allocations], \
        f"repeated calls allocated: {before} -> {after}"
    to_host = (lambda a: a) if where == "numpy" else request.getfixturevalue("cupy").asnumpy
    assert (to_host(again) == to_host(first)).all()
    # A shape not seen before (each case its own: the cache is shared by numpy and CuPy
    # calls) is configured once.
    h, w = (40, 30) if where == "numpy" else (41, 29)
    streamblur.gaussian_blur(host[:h, :w].copy() if where == "numpy" else img[:h, :w].copy(), 1.7)
    grown = support.cuda_cache_stats()
    assert grown["chains_configured"] == after["chains_configured"] + 1


def test_arrays_dropped_while_work_is_queued_stay_alive(cupy):
    # A call on device arrays returns with its kernels queued on the given
    # stream. The caller drops input and output at once and CuPy's pool hands
    # the input's memory to a new array, filled on another stream right away.
    # The module holds both arrays until its work has run, so the pool cannot
    # reuse them and the result is untouched.
    cp = cupy
    host = pattern((3000, 4000), np.uint8, seed=5)
    want = streamblur.gaussian_blur(host, 12.0, backend="cpu")
    s = cp.cuda.Stream(non_blocking=True)
    for _ in range(3):
        x = cp.asarray(host)
        out = cp.empty_like(x)
        cp.cuda.Device().synchronize()
        streamblur.gaussian_blur(x, 12.0, out=out, stream=s)  # a slow blur, still queued on return
        held = {x.data.ptr, out.data.ptr}
        del x, out
        junk = [cp.full(host.shape, 255, dtype=cp.uint8) for _ in range(2)]  # CuPy's pool reuses freed blocks first
        s.synchronize()
        assert not held & {j.data.ptr for j in junk}, "an array's memory was reused while its work was queued"
        del junk
    # The held arrays are let go once their work has run.
    assert streamblur._ext.release_queued_calls(False) == 0
    # And the result, when the caller does keep the output, is right. The
    # upload runs on CuPy's stream, which `s` does not wait for: wait for it
    # here, as above (without this the kernels could read the array before
    # its pageable upload had landed; a GPU run saw 147 off).
    x = cp.asarray(host)
    out = cp.empty_like(x)
    cp.cuda.Device().synchronize()
    streamblur.gaussian_blur(x, 12.0, out=out, stream=s)
    del x
    junk = cp.full(host.shape, 255, dtype=cp.uint8)
    s.synchronize()
    assert max_diff(cp.asnumpy(out), want) <= 1
    del junk


def test_held_arrays_are_let_go_per_stream(cupy):
    # The module holds each call's arrays until its work has run, and lets
    # go of a stream's calls together once the newest of them has run
    # (streams run in order): calls on a stream that has finished are let go
    # while a call queued behind a long kernel on another stream is kept.
    cp = cupy
    spin = cp.RawKernel(
        r"""extern "C" __global__ void spin(long long cycles) {
              const long long t0 = clock64();
              while (clock64() - t0 < cycles) {}
            }""",
        "spin",
    )
    slow = cp.cuda.Stream(non_blocking=True)
    fast = cp.cuda.Stream(non_blocking=True)
    big = cp.asarray(pattern((300, 400), np.uint8, seed=8))
    big_out = cp.empty_like(big)
    small = cp.asarray(pattern((64, 64), np.uint8, seed=9))
    outs = [cp.empty_like(small) for _ in range(3)]
    # First calls on these shapes configure their chains (cudaMalloc, which
    # waits for the whole device): make them before the long kernel.
    streamblur.gaussian_blur(big, 3.0, out=big_out, stream=slow)
    streamblur.gaussian_blur(small, 1.0, out=outs[0], stream=fast)
    cp.cuda.Device().synchronize()
    assert streamblur._ext.release_queued_calls(False) == 0
    with slow:  # a RawKernel runs on the current stream
        spin((1,), (1,), (np.int64(1_000_000_000),))  # about half a second
    streamblur.gaussian_blur(big, 3.0, out=big_out, stream=slow)  # queued behind it
    for out in outs:
        streamblur.gaussian_blur(small, 1.0, out=out, stream=fast)
    fast.synchronize()
    assert streamblur._ext.release_queued_calls(False) == 1, "the slow stream's call is kept, the others let go"
    slow.synchronize()
    assert streamblur._ext.release_queued_calls(False) == 0
    want = streamblur.gaussian_blur(cp.asnumpy(small), 1.0, backend="cpu")
    for out in outs:
        assert max_diff(cp.asnumpy(out), want) <= 1


def fast_calls():
    return support.cuda_cache_stats()["fast_calls"]


@pytest.mark.parametrize("shape", SHAPES[:4] + [(33, 70, 2)], ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("dtype", [np.uint8, np.uint16], ids=lambda d: np.dtype(d).name)
def test_cupy_fast_path_equals_the_references(cupy, dtype, shape):
    # Calls on CuPy arrays run through the extension's fast path (the
    # arrays' attributes read in C++, the chain from its cache): every call
    # below must take it and give the independent references' result, on
    # packed arrays, on rows padded inside a wider array, in place and into a
    # new array.
    cp = cupy
    host = pattern(shape, dtype, seed=11)
    wide = cp.zeros((shape[0], shape[1] + 5) + tuple(shape[2:]), dtype)
    padded = wide[:, 2:2 + shape[1]]  # rows strided past their pixels, not at the allocation's start
    padded[...] = cp.asarray(host)
    packed = cp.asarray(host)
    gref = support.reference_gaussian_blur(host, 1.5)
    bref = support.reference_box_blur(host, 2)
    before = fast_calls()
    for img in (packed, padded):
        out = cp.full(shape, 7, dtype)
        assert streamblur.gaussian_blur(img, 1.5, out=out) is out
        assert max_diff(cp.asnumpy(out), gref) <= 1
        out_wide = cp.full(wide.shape, 7, dtype)
        out_view = out_wide[:, 3:3 + shape[1]]
        assert streamblur.box_blur(img, 2, out=out_view) is out_view
        np.testing.assert_array_equal(cp.asnumpy(out_view), bref)
        np.testing.assert_array_equal(cp.asnumpy(out_wide[:, :3]), 7)  # nothing written outside the view
        np.testing.assert_array_equal(cp.asnumpy(out_wide[:, 3 + shape[1]:]), 7)
    in_place = cp.asarray(host)
    assert streamblur.box_blur(in_place, 2, out=in_place) is in_place
    np.testing.assert_array_equal(cp.asnumpy(in_place), bref)
    chain_out = cp.empty_like(packed)
    streamblur.Chain("gblur=sigma=1.5,boxblur=radius=2")(packed, out=chain_out)
    assert max_diff(cp.asnumpy(chain_out), support.reference_box_blur(gref, 2)) <= 1
    new = streamblur.gaussian_blur(padded, 1.5)  # without out=: a new packed CuPy array
    assert isinstance(new, cp.ndarray) and new.shape == shape and new.dtype == dtype and new.flags.c_contiguous
    assert max_diff(cp.asnumpy(new), gref) <= 1
    assert fast_calls() - before == 7, "every call above takes the fast path"


def test_cupy_fast_path_streams_and_cache(cupy):
    # stream=None is CuPy's current stream; a CuPy Stream and an int handle
    # are taken too. Repeated calls configure nothing new; a new sigma or
    # radius is a new spec, not the cached one.
    cp = cupy
    host = pattern((120, 97), np.uint8, seed=12)
    x = cp.asarray(host)
    out = cp.empty_like(x)
    s = cp.cuda.Stream(non_blocking=True)
    cp.cuda.Device().synchronize()
    before = support.cuda_cache_stats()
    with s:  # the current stream: the blur must be ordered on it, not on the legacy stream
        for sigma in (1.0, 2.0, 1.0, 2.0):
            x2 = x.copy()  # queued on s
            streamblur.gaussian_blur(x2, sigma, out=out)
            got = cp.asnumpy(out)  # on s
            assert max_diff(got, support.reference_gaussian_blur(host, sigma)) <= 1, f"sigma {sigma}"
    streamblur.box_blur(x, 3, out=out, stream=s)
    s.synchronize()
    np.testing.assert_array_equal(cp.asnumpy(out), support.reference_box_blur(host, 3))
    streamblur.box_blur(x, 1, out=out, stream=s.ptr)
    s.synchronize()
    np.testing.assert_array_equal(cp.asnumpy(out), support.reference_box_blur(host, 1))
    after = support.cuda_cache_stats()
    assert after["fast_calls"] - before["fast_calls"] == 6
    assert after["chains_configured"] - before["chains_configured"] <= 4, "one chain per spec, none per call"
    for _ in range(20):
        streamblur.gaussian_blur(x, 2.0, out=out, stream=s)
    s.synchronize()
    assert support.cuda_cache_stats()["chains_configured"] == after["chains_configured"]


def test_cupy_fast_path_declines_what_it_does_not_check(cupy):
    # Overlaps, mismatched shapes or dtypes, unpacked pixels, other dtypes, a
    # bad stream and a host output are left to the general path, which gives
    # its errors (or, for the host output, the result): the fast path runs
    # none of them.
    cp = cupy
    big = cp.asarray(pattern((50, 40), np.uint8, seed=13))
    before = fast_calls()
    with pytest.raises(ValueError, match="overlaps"):
        streamblur.box_blur(big[:-1], 1, out=big[1:])
    with pytest.raises(ValueError, match="shape"):
        streamblur.box_blur(big, 1, out=cp.empty((50, 41), cp.uint8))
    with pytest.raises(TypeError, match="dtype"):
        streamblur.box_blur(big, 1, out=cp.empty((50, 40), cp.uint16))
    with pytest.raises(ValueError, match="C-contiguous pixels"):
        streamblur.box_blur(big, 1, out=cp.empty((40, 50), cp.uint8).T)
    with pytest.raises(TypeError, match="float32"):
        f = cp.zeros((4, 4), cp.float32)
        streamblur.box_blur(f, 1, out=cp.zeros_like(f))
    with pytest.raises(TypeError, match="stream="):
        streamblur.box_blur(big, 1, out=cp.empty_like(big), stream=True)
    host_out = np.empty((50, 40), np.uint8)  # a CuPy image into a numpy array: the general path's copy
    assert streamblur.box_blur(big, 1, out=host_out) is host_out
    np.testing.assert_array_equal(host_out, support.reference_box_blur(cp.asnumpy(big), 1))
    assert fast_calls() == before
