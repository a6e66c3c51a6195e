"""Ctrl-C (SIGINT) stops process_video, process_videos and a frames() loop
promptly, without a progress callback, as the CLI's first Ctrl-C does: the
run finishes the frames in flight, writes a playable output at the final
name, and KeyboardInterrupt is raised.

Each run happens in a child Python (a small script) that gets the SIGINT;
the clips are made at test time and are slow to filter on the CPU backend
(a chain of wide Gaussians), so the uninterrupted runs take far longer than
the few seconds a stop may take."""

import os
import shutil
import signal
import subprocess
import sys
import time

import pytest

import support

av = pytest.importorskip("av")

pytestmark = pytest.mark.skipif(not hasattr(signal, "SIGINT") or os.name != "posix", reason="POSIX signals")

FRAMES = 300
SLOW_VF = ",".join(["gblur=sigma=100"] * 8)  # about 12 frames/s at 640x480 on two cores
STOP_WITHIN_S = 8.0  # from SIGINT to the child's exit (the frames in flight are finished first)

SCRIPT = r"""
import os, signal, sys, time
signal.signal(signal.SIGINT, signal.default_int_handler)  # a child of a shell's background job ignores SIGINT
import streamblur
mode, vf, args = sys.argv[1], sys.argv[2], sys.argv[3:]
try:
    if mode == "video":
        streamblur.process_video(args[0], args[1], vf=vf, codec="ffv1", backend="cpu")
    elif mode == "videos":
        streamblur.process_videos(args[:-1], out_dir=args[-1], vf=vf, codec="ffv1", backend="cpu", jobs=2)
    else:  # frames: report when next() gives up, then leave at once (a frame may still be in the filters)
        it = streamblur.frames(args[0], vf, device="cpu", backend="cpu", inflight=1)
        print("READY", flush=True)
        for f in it:
            pass
except KeyboardInterrupt:
    print("KeyboardInterrupt", time.monotonic(), flush=True)
    if mode == "frames":
        os._exit(3)
    sys.exit(3)
print("FINISHED", flush=True)
"""


@pytest.fixture(scope="module")
def slow_clip(tmp_path_factory):
    path = tmp_path_factory.mktemp("interrupt") / "slow.mkv"
    support.write_test_clip(path, width=640, height=480, frames=FRAMES, codec="ffv1")
    return path


def start(mode, vf, *args, cwd):
    proc = subprocess.Popen([sys.executable, "-c", SCRIPT, mode, vf, *map(str, args)], cwd=cwd,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    proc.started = time.monotonic()
    return proc


def wait_for(pred, timeout, what, proc):
    t0 = time.monotonic()
    while not pred():
        if proc.poll() is not None:
            out, err = proc.communicate()
            pytest.fail(f"the child ended before {what}: rc {proc.returncode}\n{out}\n{err[-2000:]}")
        if time.monotonic() - t0 > timeout:
            proc.kill()
            pytest.fail(f"timed out waiting for {what}")
        time.sleep(0.02)


def interrupt(proc, limit=STOP_WITHIN_S):
    """SIGINT, then (stdout, stderr, seconds until the child ended)."""
    t0 = time.monotonic()
    proc.send_signal(signal.SIGINT)
    try:
        out, err = proc.communicate(timeout=limit)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        pytest.fail(f"still running {limit:g} s after SIGINT (Ctrl-C was ignored)\n{out}\n{err[-2000:]}")
    return out, err, time.monotonic() - t0


def temporaries(folder):
    """Hidden temporary outputs (where the filesystem has no unnamed files)."""
    return [p for p in folder.iterdir() if p.name.startswith(".")]


def files_written(proc, folder):
    """How many files in `folder` the child has open: its outputs, once their first frame is done (the
    writer opens with it). An unnamed temporary shows as 'FOLDER/#INODE (deleted)'. Without /proc: the
    hidden temporaries, else a guess after a while."""
    fd_dir = f"/proc/{proc.pid}/fd"
    if not os.path.isdir(fd_dir):
        return len(temporaries(folder)) or (99 if time.monotonic() - proc.started > 3 else 0)
    prefix = os.path.realpath(folder) + os.sep
    targets = set()
    for fd in os.listdir(fd_dir):
        try:
            target = os.readlink(os.path.join(fd_dir, fd))
        except OSError:
            continue
        if target.startswith(prefix):
            targets.add(target)
    return len(targets)


def decoded_frames(path):
    with av.open(str(path)) as c:
        return sum(1 for _ in c.decode(video=0))


def test_ctrl_c_stops_process_video_and_keeps_a_playable_output(slow_clip, tmp_path):
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    dst = out_dir / "out.mkv"
    proc = start("video", SLOW_VF, slow_clip, dst, cwd=tmp_path)
    wait_for(lambda: files_written(proc, out_dir) >= 1, 60, "the run to start writing", proc)
    time.sleep(0.3)
    out, err, took = interrupt(proc)
    assert "KeyboardInterrupt" in out, f"no KeyboardInterrupt raised: rc {proc.returncode}\n{out}\n{err[-2000:]}"
    assert proc.returncode == 3
    assert dst.exists(), "no output at the final name"
    assert not temporaries(out_dir), "a temporary output was left"
    n = decoded_frames(dst)
    assert 0 < n < FRAMES, f"{n} frames written of {FRAMES}"
    assert took < STOP_WITHIN_S


def test_ctrl_c_stops_process_videos_and_keeps_playable_outputs(slow_clip, tmp_path):
    inputs = []
    for name in ("a.mkv", "b.mkv", "c.mkv"):
        shutil.copy(slow_clip, tmp_path / name)
        inputs.append(tmp_path / name)
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    proc = start("videos", SLOW_VF, *inputs, out_dir, cwd=tmp_path)
    # jobs=2: a and b run, c waits for a free worker.
    wait_for(lambda: files_written(proc, out_dir) >= 2, 60, "both runs to start writing", proc)
    time.sleep(0.3)
    out, err, took = interrupt(proc)
    assert "KeyboardInterrupt" in out, f"no KeyboardInterrupt raised: rc {proc.returncode}\n{out}\n{err[-2000:]}"
    assert proc.returncode == 3
    assert not temporaries(out_dir), "a temporary output was left"
    for name in ("a.mkv", "b.mkv"):
        n = decoded_frames(out_dir / name)
        assert 0 < n < FRAMES, f"{name}: {n} frames written of {FRAMES}"
    assert not (out_dir / "c.mkv").exists(), "a file started after Ctrl-C"
    assert took < STOP_WITHIN_S


def test_ctrl_c_interrupts_a_frames_loop_waiting_for_a_slow_frame(tmp_path):
    # Each 4K frame takes seconds in this chain: next() waits that long for it,
    # and Ctrl-C must not wait with it.
    src = tmp_path / "big.mkv"
    support.write_test_clip(src, width=3840, height=2160, frames=3, codec="ffv1")
    proc = start("frames", ",".join(["gblur=sigma=100"] * 16), src, cwd=tmp_path)
    line = proc.stdout.readline()
    assert line.strip() == "READY", line
    time.sleep(0.5)  # next() is waiting for the first frame
    sent = time.monotonic()
    proc.send_signal(signal.SIGINT)
    try:
        out, err = proc.communicate(timeout=STOP_WITHIN_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        pytest.fail(f"still running {STOP_WITHIN_S:g} s after SIGINT\n{out}\n{err[-2000:]}")
    marks = [ln.split() for ln in out.splitlines() if ln.startswith("KeyboardInterrupt")]
    assert marks, f"no KeyboardInterrupt raised: rc {proc.returncode}\n{out}\n{err[-2000:]}"
    assert "FINISHED" not in out
    latency = float(marks[0][1]) - sent
    assert latency < 1.0, f"KeyboardInterrupt came {latency:.2f} s after SIGINT"
