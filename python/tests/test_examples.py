"""The examples run end to end (headless matplotlib)."""

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def run_example(name, *args, cwd):
    env = dict(os.environ, MPLBACKEND="Agg")
    return subprocess.run([sys.executable, str(EXAMPLES / name), *map(str, args)], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=300)


def test_blur_image_saves_figure(tmp_path):
    Image = pytest.importorskip("PIL.Image")
    pytest.importorskip("matplotlib")
    rng = np.random.default_rng(0)
    Image.fromarray(rng.integers(0, 256, (60, 80, 3), dtype=np.uint8)).save(tmp_path / "in.png")
    fig = tmp_path / "fig.png"
    r = run_example("blur_image.py", tmp_path / "in.png", "--save", fig, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert fig.stat().st_size > 0
    with Image.open(fig) as im:
        assert im.size[0] > im.size[1]  # two images side by side


def test_blur_image_bad_file(tmp_path):
    pytest.importorskip("PIL.Image")
    pytest.importorskip("matplotlib")
    (tmp_path / "bad.png").write_bytes(b"not an image")
    r = run_example("blur_image.py", tmp_path / "bad.png", "--save", tmp_path / "f.png", cwd=tmp_path)
    assert r.returncode != 0 and "cannot read" in r.stderr


def test_unified_memory_demo(tmp_path):
    Image = pytest.importorskip("PIL.Image")
    r = run_example("unified_memory_demo.py", cwd=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "Test PASSED" in r.stdout
    import streamblur

    assert ("running on the CPU backend" in r.stdout) == (not streamblur.cuda_available())
    for name in ("original_image.png", "blurred_image.png"):
        with Image.open(tmp_path / name) as im:
            assert im.size == (256, 256)
