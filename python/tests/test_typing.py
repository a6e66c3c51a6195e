"""The public surface: numpy-style docstrings, and the type stubs that ship with the package.

Every public name (``__all__`` of streamblur and of streamblur.ray) has a
docstring with Parameters (naming every parameter), Returns and Raises
sections where they apply; the stubs (``__init__.pyi``, ``ray.pyi``) name
every public name with the runtime's parameters, and are installed with
``py.typed``; mypy --strict (when installed) accepts a snippet using the API
through the installed package and rejects a wrong one, and mypy's stubtest
finds the stubs consistent with the package at run time.
"""

import ast
import inspect
import os
import re
import subprocess
import sys
import textwrap

import pytest

import streamblur
import streamblur.ray

PUBLIC_MODULES = [streamblur, streamblur.ray]
PACKAGE_DIR = os.path.dirname(streamblur.__file__)
SOURCE_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "streamblur")


def _public_objects():
    """(qualified name, object, is_method) for every public function, class, and public method of a class."""
    for mod in PUBLIC_MODULES:
        for name in mod.__all__:
            obj = getattr(mod, name)
            yield f"{mod.__name__}.{name}", obj, False
            if inspect.isclass(obj):
                for attr, member in vars(obj).items():
                    if attr.startswith("_") and attr != "__call__":
                        continue
                    if isinstance(member, property):
                        yield f"{mod.__name__}.{name}.{attr}", member, True
                    elif inspect.isfunction(member):
                        yield f"{mod.__name__}.{name}.{attr}", member, True


def _parameters(obj, is_method):
    """The parameter names a caller passes (no self; a class: its __init__'s)."""
    if isinstance(obj, property):
        return []
    target = obj.__init__ if inspect.isclass(obj) else obj
    if target is object.__init__:
        return []
    names = list(inspect.signature(target).parameters)
    if inspect.isclass(obj) or is_method:
        names = names[1:]
    return [n for n in names if n not in ("args", "kwargs")]


def _sections(doc):
    """numpy-style sections of a docstring: {title: [lines]}."""
    lines = inspect.cleandoc(doc).splitlines()
    sections, current = {}, None
    for i, line in enumerate(lines):
        if i + 1 < len(lines) and re.fullmatch(r"-{3,}", lines[i + 1].strip()) and line.strip():
            current = line.strip()
            sections[current] = []
            continue
        if current is not None and not re.fullmatch(r"-{3,}", line.strip()):
            sections[current].append(line)
    return sections


def _documented_parameters(section_lines):
    """Names listed in a Parameters section: entry lines are unindented, 'a, b : type' or 'a, b'."""
    names = set()
    for line in section_lines:
        if line and not line[0].isspace():
            for n in line.split(" : ")[0].split(","):
                names.add(n.strip())
    return names


def _returns_something(obj):
    if inspect.isclass(obj) or isinstance(obj, property):
        return False
    ret = inspect.signature(obj).return_annotation
    return ret not in (None, "None", inspect.Signature.empty)


PUBLIC = list(_public_objects())


@pytest.mark.parametrize("qualname,obj,is_method", PUBLIC, ids=[q for q, _, _ in PUBLIC])
def test_public_name_has_a_numpy_docstring(qualname, obj, is_method):
    doc = obj.__doc__
    assert doc and doc.strip(), f"{qualname} has no docstring"
    params = _parameters(obj, is_method)
    sections = _sections(doc)
    if params:
        assert "Parameters" in sections, f"{qualname} takes {params} but its docstring has no Parameters section"
        missing = set(params) - _documented_parameters(sections["Parameters"])
        assert not missing, f"{qualname}: parameters {sorted(missing)} are not in its Parameters section"
        if not inspect.isclass(obj):
            assert "Raises" in sections, f"{qualname} takes parameters but its docstring has no Raises section"
    if _returns_something(obj):
        assert "Returns" in sections, f"{qualname} returns a value but its docstring has no Returns section"


def test_help_of_gaussian_blur_is_useful():
    text = inspect.getdoc(streamblur.gaussian_blur)
    for word in ("Parameters", "sigma :", "radius :", "Returns", "Raises", "ValueError", "TypeError"):
        assert word in text, word


# ---------------------------------------------------------------- stubs


def _stub_path(module):
    base = module.__name__.split(".")[-1]
    return os.path.join(PACKAGE_DIR, "__init__.pyi" if module is streamblur else f"{base}.pyi")


def _stub_names(path):
    """Top-level names a stub defines: {name: ast node}."""
    tree = ast.parse(open(path).read(), path)
    names = {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names[node.name] = node
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names[node.target.id] = node
        elif isinstance(node, ast.Assign):
            for t in node.targets:
                if isinstance(t, ast.Name):
                    names[t.id] = node
    return names


def _stub_all(names):
    node = names.get("__all__")
    assert node is not None, "the stub has no __all__"
    return [ast.literal_eval(e) for e in node.value.elts]


def _stub_params(fn):
    a = fn.args
    names = [x.arg for x in a.posonlyargs + a.args + a.kwonlyargs]
    return names


def test_py_typed_and_stubs_are_installed():
    assert os.path.isfile(os.path.join(PACKAGE_DIR, "py.typed")), f"no py.typed in {PACKAGE_DIR}"
    for mod in PUBLIC_MODULES:
        assert os.path.isfile(_stub_path(mod)), f"{_stub_path(mod)} is not installed"


@pytest.mark.skipif(not os.path.isdir(SOURCE_DIR), reason="not run from a checkout")
def test_installed_stubs_are_the_checkouts():
    # A stale install (stubs edited, package not reinstalled) would pass the other tests with old stubs.
    for mod in PUBLIC_MODULES:
        installed = _stub_path(mod)
        with open(installed) as a, open(os.path.join(SOURCE_DIR, os.path.basename(installed))) as b:
            assert a.read() == b.read(), f"{installed} differs from the checkout's: reinstall the package"


@pytest.mark.parametrize("mod", PUBLIC_MODULES, ids=[m.__name__ for m in PUBLIC_MODULES])
def test_stub_names_every_public_name_with_its_parameters(mod):
    names = _stub_names(_stub_path(mod))
    assert _stub_all(names) == list(mod.__all__), "the stub's __all__ differs from the package's"
    for name in mod.__all__:
        assert name in names, f"{mod.__name__}.{name} is missing from {_stub_path(mod)}"
        obj, node = getattr(mod, name), names[name]
        if inspect.isfunction(obj):
            assert isinstance(node, ast.FunctionDef), f"{name}: a function, not one in the stub"
            assert _stub_params(node) == list(inspect.signature(obj).parameters), (
                f"{name}: the stub's parameters differ from the function's")
        elif inspect.isclass(obj):
            assert isinstance(node, ast.ClassDef), f"{name}: a class, not one in the stub"
            methods = {n.name: n for n in node.body if isinstance(n, ast.FunctionDef)}
            for attr, member in vars(obj).items():
                if attr.startswith("_") and attr not in ("__init__", "__call__", "__iter__", "__next__",
                                                         "__enter__", "__exit__"):
                    continue
                if inspect.isfunction(member) or isinstance(member, property):
                    assert attr in methods, f"{name}.{attr} is missing from the stub"
                if inspect.isfunction(member) and attr != "__exit__":  # *exc at run time, typed in the stub
                    assert _stub_params(methods[attr]) == list(inspect.signature(member).parameters), (
                        f"{name}.{attr}: the stub's parameters differ from the method's")
    if mod is streamblur:
        assert "__version__" in names and "MAX_MANAGED_BYTES" in names


# ---------------------------------------------------------------- mypy

GOOD = """
from __future__ import annotations

import numpy as np
import numpy.typing as npt

import streamblur
import streamblur.ray


def run(img: npt.NDArray[np.uint8]) -> None:
    y = streamblur.gaussian_blur(img, 2.0, radius=3, backend="cpu")
    z = streamblur.box_blur(y, 1, out=np.empty_like(img))
    chain = streamblur.Chain("gblur=sigma=2")
    w = chain(z, backend="auto")
    print(chain.spec, chain.description, w)
    m = streamblur.managed_empty((4, 4), np.uint16)
    ok: bool = streamblur.is_managed(m) and streamblur.cuda_available()
    n: int = streamblur.device_count()
    text: str = streamblur.filter_list() + streamblur.filter_help("gblur")
    stats = streamblur.process_video("in.mkv", "out.mkv", "boxblur=radius=1", "ffv1", crf=None,
                                     progress=lambda p: print(p["frames"]), start="0:01", frames=3)
    fps: float = stats["fps"]
    for r in streamblur.process_videos(["a.mkv"], out_dir="out", devices=[0], jobs=1):
        print(r["ok"])
    with streamblur.frames("in.mkv", "gblur=sigma=2", device="cpu") as it:
        for f in it:
            print(f.index, f.pts, f.format, f.width, f.height, len(f.planes))
        print(it.stats, it.notes)
    rr = streamblur.ray.process_videos(["a.mkv"], ["b.mkv"], gpus_per_job=0.5)
    print(ok, n, text, fps, rr, streamblur.__version__, streamblur.MAX_MANAGED_BYTES)
"""

BAD = """
import streamblur

streamblur.gaussian_blur(None, "two")
streamblur.box_blur(1, 2, backend="gpu")
streamblur.no_such_function()
"""


def _mypy(tmp_path, name, text):
    src = tmp_path / name
    src.write_text(textwrap.dedent(text))
    # In a folder of its own, so only the installed package (found through py.typed) is seen.
    r = subprocess.run([sys.executable, "-m", "mypy", "--strict", "--no-incremental", "--python-executable",
                        sys.executable, str(src)], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    return r.returncode, r.stdout + r.stderr


def test_mypy_strict_accepts_the_api_and_rejects_misuse(tmp_path):
    pytest.importorskip("mypy", reason="mypy is not installed (pip install mypy)")
    rc, out = _mypy(tmp_path, "good.py", GOOD)
    assert rc == 0, out
    rc, out = _mypy(tmp_path, "bad.py", BAD)
    assert rc == 1, out
    assert 'Argument 2 to "gaussian_blur" has incompatible type "str"' in out, out
    assert '"backend" to "box_blur"' in out, out
    assert 'has no attribute "no_such_function"' in out, out


def test_stubtest_finds_the_stubs_consistent_with_the_runtime(tmp_path):
    pytest.importorskip("mypy", reason="mypy is not installed (pip install mypy)")
    # Every stub name and signature against the imported package (and its submodules).
    r = subprocess.run([sys.executable, "-m", "mypy.stubtest", "streamblur"], cwd=tmp_path, capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
