"""``import dpkit as dp`` is the public API: every façade name resolves to the object its module defines, every
registered method's class is exported (by the façade and by ``dpkit.methods``), and the import stays lazy."""
from __future__ import annotations

import ast
import dataclasses
import importlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import dpkit as dp
from dpkit.methods.registry import CATALOGUE

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("name", sorted(dp._API))
def test_every_facade_name_resolves_to_its_defining_module(name):
    target = dp._API[name]
    module, _, attr = target.partition(":")
    value = getattr(dp, name)
    if attr:
        assert value is getattr(importlib.import_module(module), attr)
    else:
        assert value is importlib.import_module(module)
    assert name in dp.__all__ and name in dir(dp)


def test_an_unknown_name_is_refused_by_name():
    with pytest.raises(AttributeError, match="no attribute 'lod'"):
        dp.lod  # noqa: B018


def _registered_classes() -> set[type]:
    """The classes of every registered method and of every method-valued field (candidate sources)."""
    out = set()
    for entry in CATALOGUE:
        out.add(type(entry.method))
        for f in dataclasses.fields(entry.method):
            v = getattr(entry.method, f.name)
            if dataclasses.is_dataclass(v) and not isinstance(v, type):
                out.add(type(v))
    return out


@pytest.mark.parametrize("cls", sorted(_registered_classes(), key=lambda c: c.__name__), ids=lambda c: c.__name__)
def test_every_registered_method_is_exported(cls):
    assert getattr(dp, cls.__name__, None) is cls
    if cls.__module__.startswith("dpkit.methods."):  # the methods layer exports every method it defines
        import dpkit.methods

        assert cls.__name__ in dpkit.methods.__all__ and getattr(dpkit.methods, cls.__name__) is cls


def test_import_dpkit_loads_no_facade_module():
    """The façade is lazy: ``import dpkit`` imports none of the modules its table names, nor pandas or matplotlib."""
    code = ("import sys, dpkit; mods = {t.partition(':')[0] for t in dpkit._API.values()}; "
            "print(sorted(m for m in mods | {'pandas', 'matplotlib', 'scipy'} if m in sys.modules))")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]", out.stdout


def test_the_api_page_lists_every_facade_name_and_its_example_runs():
    """docs/api/facade.md is written from the table: every name once, with its defining module; its example runs."""
    sys.path.insert(0, str(ROOT / "docs"))
    try:
        import build
    finally:
        sys.path.remove(str(ROOT / "docs"))
    page = build.facade_page()
    for name in (n for n in dp.__all__ if n != "__version__"):
        assert page.count(f"| `dp.{name}` |") == 1, name
    assert "| `dp.AIM` | class | `dpkit.methods.aim.AIM` |" in page
    example = page.split("```python\n", 1)[1].split("```", 1)[0]
    ns: dict = {}
    exec(example, ns)  # noqa: S102
    assert len(ns["records"]) == 2


def _notebook_code(path: Path) -> ast.Module:
    cells = json.loads(path.read_text())["cells"]
    code = "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "code")
    return ast.parse("\n".join(line for line in code.splitlines() if not line.lstrip().startswith(("%", "!"))))


@pytest.mark.parametrize("path", sorted((ROOT / "notebooks").glob("*.ipynb")), ids=lambda p: p.stem)
def test_notebooks_reach_dpkit_through_the_facade_only(path):
    """A notebook imports dpkit once, as ``import dpkit as dp``, uses only façade names, and hands its checks to its
    report through ``Report.record`` (no loop of ``report.add(c)``)."""
    tree = _notebook_code(path)
    dpkit_imports = [ast.unparse(n) for n in ast.walk(tree)
                     if isinstance(n, ast.Import) and any(a.name.split(".")[0] == "dpkit" for a in n.names)
                     or isinstance(n, ast.ImportFrom) and (n.module or "").split(".")[0] == "dpkit"]
    assert dpkit_imports == ["import dpkit as dp"]
    used = {n.attr for n in ast.walk(tree)
            if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id == "dp"}
    assert used - set(dp.__all__) == set()
    assert not any(isinstance(n, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "dp" for t in n.targets)
                   for n in ast.walk(tree)), "a variable named dp hides the façade"
    copy_loops = [ast.unparse(n).splitlines()[0] for n in ast.walk(tree)
                  if isinstance(n, ast.For) and len(n.body) == 1 and isinstance(n.body[0], ast.Expr)
                  and isinstance(call := n.body[0].value, ast.Call) and getattr(call.func, "attr", "") == "add"]
    assert copy_loops == []
