"""Every example in python/examples runs end to end on its documented
command (headless matplotlib), on media made here, and does what it says:
the anonymiser blurs inside its boxes and nowhere else, the image blur is a
blur, the managed-memory demo's result is the 3x3 mean."""

import ast
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import streamblur

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
REPO = EXAMPLES.parent.parent


def run_example(name, *args, cwd):
    env = dict(os.environ, MPLBACKEND="Agg")
    return subprocess.run([sys.executable, str(EXAMPLES / name), *map(str, args)], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=300)


def test_every_example_has_a_test():
    tested = {"anonymise.py", "blur_image.py", "unified_memory_demo.py"}
    assert {p.name for p in EXAMPLES.glob("*.py")} == tested, "a new example needs its end-to-end test here"


def lumas(path):
    return [np.array(f.planes[0]).astype(np.int32) for f in streamblur.frames(path, device="cpu")]


# ---- blur_image.py

def edge_energy(gray):
    """Mean absolute difference between horizontal neighbours: high for noise, low once blurred."""
    return float(np.abs(np.diff(gray.astype(np.int32), axis=1)).mean())


def test_blur_image_saves_the_original_beside_its_blur(tmp_path):
    Image = pytest.importorskip("PIL.Image")
    pytest.importorskip("matplotlib")
    rng = np.random.default_rng(0)
    Image.fromarray(rng.integers(0, 256, (120, 160, 3), dtype=np.uint8)).save(tmp_path / "in.png")
    fig = tmp_path / "fig.png"
    r = run_example("blur_image.py", tmp_path / "in.png", "--save", fig, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert f"saved {fig}" in r.stdout
    with Image.open(fig) as im:
        gray = np.asarray(im.convert("L"))
    h, w = gray.shape
    assert w > h  # two images side by side
    # The middle band of each half: the noise on the left, its sigma-2 blur on the right.
    band = slice(h // 3, 2 * h // 3)
    left = gray[band, w // 8: 3 * w // 8]
    right = gray[band, 5 * w // 8: 7 * w // 8]
    assert edge_energy(left) > 3 * edge_energy(right), (edge_energy(left), edge_energy(right))


def test_blur_image_bad_file(tmp_path):
    pytest.importorskip("PIL.Image")
    pytest.importorskip("matplotlib")
    (tmp_path / "bad.png").write_bytes(b"not an image")
    r = run_example("blur_image.py", tmp_path / "bad.png", "--save", tmp_path / "f.png", cwd=tmp_path)
    assert r.returncode != 0 and "cannot read" in r.stderr
    assert not (tmp_path / "f.png").exists()


# ---- unified_memory_demo.py

def test_unified_memory_demo_result_is_the_3x3_mean(tmp_path):
    Image = pytest.importorskip("PIL.Image")
    r = run_example("unified_memory_demo.py", cwd=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "Test PASSED" in r.stdout
    assert ("running on the CPU backend" in r.stdout) == (not streamblur.cuda_available())
    with Image.open(tmp_path / "original_image.png") as im:
        original = np.asarray(im).astype(np.int64)
    with Image.open(tmp_path / "blurred_image.png") as im:
        blurred = np.asarray(im).astype(np.int64)
    assert original.shape == blurred.shape == (256, 256)
    assert len(np.unique(original)) > 3  # the pattern was drawn
    padded = np.pad(original, 1, mode="edge")
    mean = (sum(padded[dy:dy + 256, dx:dx + 256] for dy in range(3) for dx in range(3)) + 4) // 9
    assert np.abs(blurred - mean).max() <= 1
    assert not np.array_equal(blurred, original)


# ---- anonymise.py

def documented_demo_command():
    """The demo clip's ffmpeg command from anonymise.py's docstring, continuation lines joined."""
    doc = ast.get_docstring(ast.parse((EXAMPLES / "anonymise.py").read_text()))
    start = doc.index("    ffmpeg ")
    end = doc.index("demo.mkv", start) + len("demo.mkv")
    return " ".join(part.strip() for part in doc[start:end].split("\\\n"))


def square_x(t):
    """The square's left edge at time t: the docstring's overlay x, 20 + 110 t, which
    overlay truncates to a whole, even pixel (the chroma planes' grid)."""
    return int(20 + t * 110) & ~1


def write_demo_with_pyav(path, square):
    """The demo clip without the ffmpeg program: 2 s at 25 fps, 320x240, a
    test pattern below luma 230 and a white 56x56 square at x = 20 + 110 t, y = 80."""
    av = pytest.importorskip("av", reason="neither the ffmpeg program nor PyAV is here to make the demo clip")
    yy, xx = np.mgrid[0:240, 0:320]
    pattern = (40 + (xx * 150) // 319 + 20 * (((yy // 20) + (xx // 20)) % 2)).astype(np.uint8)
    with av.open(str(path), "w") as out:
        stream = out.add_stream("ffv1", rate=25)
        stream.width, stream.height, stream.pix_fmt = 320, 240, "yuv420p"
        for n in range(50):
            y = pattern.copy()
            if square:
                x0 = square_x(n / 25)
                y[80:136, x0:x0 + 56] = 255
            yuv = np.concatenate([y, np.full((120, 320), 128, np.uint8)])
            frame = av.VideoFrame.from_ndarray(yuv, format="yuv420p")
            out.mux(stream.encode(frame))
        out.mux(stream.encode())


@pytest.fixture
def demo(tmp_path):
    """demo.mkv as the docstring makes it (its own ffmpeg command), or the same clip through PyAV."""
    path = tmp_path / "demo.mkv"
    if shutil.which("ffmpeg"):
        subprocess.run(documented_demo_command(), shell=True, cwd=tmp_path, check=True, timeout=120,
                       capture_output=True)
    else:
        write_demo_with_pyav(path, square=True)
    return path


def keyframes_of(regions_path):
    return [json.loads(line) for line in Path(regions_path).read_text().splitlines() if line.strip()]


def far_from(shape, box):
    """The pixels more than a box's size away from it: outside its margin and feather."""
    x, y, w, h = box[:4]
    far = np.ones(shape, dtype=bool)
    far[max(0, y - h):y + 2 * h, max(0, x - w):x + 2 * w] = False
    return far


def check_anonymised(src, dst, regions_path):
    """Every keyframe has the square's box; inside it the output moved far
    from the input, far from it the output is the input up to the encoder's noise."""
    keyframes = keyframes_of(regions_path)
    before, after = lumas(src), lumas(dst)
    assert len(before) == len(after) == 50
    assert [k["frame"] for k in keyframes] == list(range(0, 50, 5)) + [49]
    for k in keyframes:
        i = k["frame"]
        assert len(k["boxes"]) == 1, k
        x, y, w, h, label = k["boxes"][0]
        assert (y, w, h, label) == (80, 56, 56, "object"), k
        assert x == square_x(i / 25), k  # the detector found the moving square
        diff = np.abs(after[i] - before[i])
        inside = diff[y:y + h, x:x + w]
        far = far_from(diff.shape, k["boxes"][0])
        assert inside.mean() > 10, f"frame {i}: the box changed by {inside.mean():.2f} levels only"
        assert diff[far].mean() < 1.0, f"frame {i}: outside the box the mean change is {diff[far].mean():.2f}"
        # libx264 (up to twice: into in.mp4, then out.mp4) moves a few samples by a few levels.
        assert np.percentile(diff[far], 99) <= 8, f"frame {i}: outside the box the output is not the input"


def test_anonymise_mp4_to_mp4_with_process_video(demo, tmp_path):
    # The README's form, INPUT.mp4 OUTPUT.mp4: the container picks the encoder (libx264).
    src = tmp_path / "in.mp4"
    streamblur.process_video(demo, src, vf="", backend="cpu")
    r = run_example("anonymise.py", src, "out.mp4", cwd=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "11 of 11 keyframes hold boxes" in r.stdout
    assert "checked 11 boxes on 11 keyframes: every one changed" in r.stdout
    check_anonymised(src, tmp_path / "out.mp4", tmp_path / "out.mp4.regions.jsonl")


def the_cli():
    """$STREAMBLUR_CLI (as for the C++ tests), the documented build/apps/streamblur, or the same program
    inside the installed package."""
    if os.environ.get("STREAMBLUR_CLI"):
        return Path(os.environ["STREAMBLUR_CLI"])
    for program in (REPO / "build" / "apps" / "streamblur", Path(streamblur.__file__).parent / "bin" / "streamblur"):
        if program.is_file():
            return program
    pytest.fail("no streamblur program: neither build/apps/streamblur nor the package's bin/streamblur")


def test_anonymise_demo_with_the_cli(demo, tmp_path):
    r = run_example("anonymise.py", demo, "blurred.mkv", "--cli", the_cli(), "--backend", "cpu", cwd=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    check_anonymised(demo, tmp_path / "blurred.mkv", tmp_path / "blurred.mkv.regions.jsonl")


def test_anonymise_pixelate_demo(demo, tmp_path):
    r = run_example("anonymise.py", demo, "pixelated.mkv", "--pixelate", "16", "--every", "10", "--backend", "cpu",
                    "--regions", "boxes.jsonl", cwd=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    keyframes = keyframes_of(tmp_path / "boxes.jsonl")
    assert [k["frame"] for k in keyframes] == [0, 10, 20, 30, 40, 49]
    before, after = lumas(demo), lumas(tmp_path / "pixelated.mkv")
    for k in keyframes:
        x, y, w, h, _ = k["boxes"][0]
        diff = np.abs(after[k["frame"]] - before[k["frame"]])
        # 16-pixel cells of a white square keep much of its inside white: less change than a blur.
        assert diff[y:y + h, x:x + w].mean() > 4, k
        assert diff[far_from(diff.shape, k["boxes"][0])].mean() < 1.0, k


def test_anonymise_fails_loudly_when_the_detector_finds_nothing(tmp_path):
    src = tmp_path / "empty.mkv"  # the demo's test pattern without the square
    if shutil.which("ffmpeg"):
        subprocess.run(["ffmpeg", "-v", "error", "-f", "lavfi", "-i", "testsrc2=size=320x240:rate=25:duration=2",
                        "-c:v", "ffv1", str(src)], check=True, timeout=120)
    else:
        write_demo_with_pyav(src, square=False)
    r = run_example("anonymise.py", src, "out.mp4", cwd=tmp_path)
    assert r.returncode == 1
    assert "0 of 11 keyframes hold boxes" in r.stdout
    assert "error: the detector found nothing in the 11 keyframes" in r.stderr
    assert not (tmp_path / "out.mp4").exists()


def test_anonymise_fails_loudly_when_a_box_is_not_blurred(demo, tmp_path, monkeypatch, capsys):
    # A blur step that writes the input unchanged: the example's own check must catch it.
    monkeypatch.syspath_prepend(str(EXAMPLES))
    import anonymise

    def copy_only(args, vf):
        streamblur.process_video(args.input, args.output, vf="", codec="ffv1", backend="cpu", overwrite=True)

    monkeypatch.setattr(anonymise, "blur", copy_only)
    assert anonymise.main([str(demo), str(tmp_path / "out.mkv"), "--backend", "cpu"]) == 1
    err = capsys.readouterr().err
    assert err.count("is not anonymised") == 11, err
    assert "error: frame 0: box [20, 80, 56, 56] is not anonymised (its pixels changed by 0.0 levels" in err
