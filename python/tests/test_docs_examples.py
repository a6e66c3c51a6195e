"""The Python code blocks of docs/python.md, README.md and python/README.md run as they are.

Each ```python block runs alone, in a fresh interpreter, in a temporary folder
holding the media the examples name (in.mp4, a.mp4, b.mp4: small clips made
here). A block whose first line is a comment saying it needs CuPy, torch, Ray
or a GPU ("# needs CuPy and a GPU") is skipped where that is missing (and
fails under STREAMBLUR_REQUIRE_GPU=1 when it is a GPU that is missing).
"""

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import streamblur
from conftest import REQUIRE_GPU, skip_without_gpu
from support import write_test_clip

ROOT = Path(__file__).resolve().parents[2]
PAGES = ["docs/python.md", "README.md", "python/README.md"]
FENCE = re.compile(r"^```python[ \t]*\n(.*?)^```[ \t]*$", re.M | re.S)


def python_blocks(page):
    text = (ROOT / page).read_text(encoding="utf-8")
    blocks = []
    for m in FENCE.finditer(text):
        line = text.count("\n", 0, m.start()) + 1
        blocks.append((f"{page}:{line}", m.group(1)))
    return blocks


BLOCKS = [b for page in PAGES for b in python_blocks(page)]


def test_pages_have_python_blocks():
    for page in PAGES:
        assert python_blocks(page), f"{page} has no ```python block"


def needs(code):
    """What the block's first-line comment says it needs: a subset of {'cupy', 'torch', 'ray', 'gpu'}."""
    first = code.lstrip().splitlines()[0] if code.strip() else ""
    if not first.startswith("#") or "needs" not in first.lower():
        return set()
    words = first.lower()
    return {w for w in ("cupy", "torch", "ray", "gpu") if w in words}


def importable(name):
    try:
        __import__(name)
        return True
    except ImportError:
        return False


@pytest.fixture(scope="module")
def media(tmp_path_factory):
    d = tmp_path_factory.mktemp("docs-media")
    write_test_clip(d / "in.mp4", width=64, height=48, frames=10, codec="libx264", audio_codec="aac")
    for name in ("a.mp4", "b.mp4"):
        shutil.copy(d / "in.mp4", d / name)
    return d


@pytest.mark.parametrize("where,code", BLOCKS, ids=[w for w, _ in BLOCKS])
def test_block_runs(where, code, media, tmp_path):
    need = needs(code)
    if "gpu" in need and not streamblur.cuda_available():
        skip_without_gpu(f"{where} needs a GPU")
    for mod in sorted(need - {"gpu"}):
        if not importable(mod):
            if mod == "ray" and os.environ.get("STREAMBLUR_ALLOW_NO_RAY", "") in ("", "0"):
                pytest.fail(f"{where} needs Ray, which cannot be imported (STREAMBLUR_ALLOW_NO_RAY=1 to skip)")
            if mod != "ray" and REQUIRE_GPU:
                pytest.fail(f"STREAMBLUR_REQUIRE_GPU=1 but {where} needs {mod}, which cannot be imported")
            pytest.skip(f"{where} needs {mod}")
    for f in media.iterdir():
        shutil.copy(f, tmp_path / f.name)
    env = dict(os.environ, MPLBACKEND="Agg")
    r = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True,
                       timeout=600)
    assert r.returncode == 0, f"{where} failed:\n{code}\n--- stdout\n{r.stdout}\n--- stderr\n{r.stderr}"
