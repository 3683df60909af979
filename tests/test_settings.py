"""One module reads dpkit's environment variables, and its table is the configuration page.

Every ``DPKIT_*`` variable is read through :func:`dpkit.core.settings.setting`, which refuses a name its table
(:data:`~dpkit.core.settings.SETTINGS`) does not list; the docs' configuration page is generated from that table.
The syntax trees of every module of ``dpkit/``, ``docs/``, ``tools/`` and ``benchmarks/`` are searched for a read of
the environment (``os.environ.get(...)``, ``os.environ[...]``, ``... in os.environ``, ``os.getenv(...)``, a
``env="DPKIT_..."`` handed to a library such as pooch) outside the settings module.
"""
from __future__ import annotations

import ast
import importlib.util
import re
import sys
from pathlib import Path

import pytest

from dpkit.core import settings
from dpkit.core.settings import SETTINGS, UnknownSettingError, setting, settings_markdown

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = ("dpkit", "docs", "tools", "benchmarks")
SETTINGS_MODULE = Path("dpkit/core/settings.py")
#: modules that read variables by a name they are given, to put them back as they were (not a setting's read)
RESTORERS = {Path("dpkit/core/threads.py"): "environ_restored saves and restores the variables it sets",
             Path("dpkit/batch/scheduler.py"): "puts the caller's environment back after a LocalCluster"}
NAME = re.compile(r"\bDPKIT_[A-Z][A-Z0-9_]*\b")


def _modules() -> list[Path]:
    return sorted(p.relative_to(ROOT) for folder in FOLDERS for p in (ROOT / folder).rglob("*.py")
                  if "_build" not in p.parts)


def _constants(tree: ast.Module) -> dict[str, str]:
    """Module-level ``NAME = "DPKIT_..."`` assignments."""
    out = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    out[target.id] = node.value.value
    return out


def _is_environ(node: ast.AST) -> bool:
    return (isinstance(node, ast.Attribute) and node.attr == "environ") or (isinstance(node, ast.Name)
                                                                            and node.id == "environ")


def _key(node: ast.AST, constants: dict[str, str]) -> str | None:
    """The variable's name if the expression is a literal or a module constant, else ``None`` (dynamic)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.Name):
        return constants.get(node.id)
    if isinstance(node, ast.Attribute):
        return GLOBAL_CONSTANTS.get(node.attr)
    return None


def _reads(tree: ast.Module) -> list[tuple[int, str | None]]:
    """``(line, name)`` of every read of the environment by name (``None``: a name computed at run time)."""
    constants = _constants(tree)
    out: list[tuple[int, str | None]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            f = node.func
            environ_get = isinstance(f, ast.Attribute) and f.attr in ("get", "setdefault") and _is_environ(f.value)
            getenv = (isinstance(f, ast.Attribute) and f.attr == "getenv") or (isinstance(f, ast.Name)
                                                                              and f.id == "getenv")
            if (environ_get or getenv) and node.args:
                out.append((node.lineno, _key(node.args[0], constants)))
            for kw in node.keywords:  # a library told to read the variable itself (pooch.create(env=...))
                if kw.arg == "env" and (name := _key(kw.value, constants)) and NAME.fullmatch(name):
                    out.append((node.lineno, name))
        elif isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load) and _is_environ(node.value):
            out.append((node.lineno, _key(node.slice, constants)))
        elif isinstance(node, ast.Compare) and any(isinstance(op, (ast.In, ast.NotIn)) for op in node.ops) \
                and any(_is_environ(c) for c in node.comparators):
            out.append((node.lineno, _key(node.left, constants)))
    return out


TREES = {p: ast.parse((ROOT / p).read_text(), filename=str(p)) for p in _modules()}
GLOBAL_CONSTANTS = {k: v for tree in TREES.values() for k, v in _constants(tree).items() if NAME.fullmatch(v)}


def test_no_module_but_the_settings_module_reads_a_dpkit_variable():
    found = []
    for path, tree in TREES.items():
        if path == SETTINGS_MODULE:
            continue
        for line, name in _reads(tree):
            if name is None and path not in RESTORERS:
                found.append(f"{path}:{line}: reads the environment by a computed name")
            elif name is not None and NAME.fullmatch(name):
                found.append(f"{path}:{line}: reads {name} (ask dpkit.core.settings.setting)")
    assert not found, "\n".join(found)


def test_the_scan_finds_a_read_of_each_kind():
    """The scan is not blind: each way of reading a variable, in a module, is found."""
    source = '''import os
import pooch
KEY = "DPKIT_X"
a = os.environ.get("DPKIT_A")
b = os.environ[KEY]
c = "DPKIT_C" in os.environ
d = os.getenv("DPKIT_D", "")
e = pooch.create(path=".", env="DPKIT_E")
f = os.environ.get(some_name)
'''
    assert sorted(_reads(ast.parse(source)), key=lambda r: r[0]) == [
        (4, "DPKIT_A"), (5, "DPKIT_X"), (6, "DPKIT_C"), (7, "DPKIT_D"), (8, "DPKIT_E"), (9, None)]


def test_every_variable_named_anywhere_is_in_the_table():
    """A ``DPKIT_*`` name in the package, the docs (code and pages), the tools, the benchmarks or the Makefile is a
    variable of the table: a retired one is not left in a page or a message."""
    files = [*(ROOT / p for p in TREES), *(ROOT / "docs").rglob("*.md"), ROOT / "Makefile"]
    unknown = {f"{p.relative_to(ROOT)}: {name}" for p in files if "_build" not in p.parts
               for name in NAME.findall(p.read_text()) if name not in SETTINGS}
    assert not unknown, "\n".join(sorted(unknown))


def test_each_variable_is_read_where_the_table_says():
    """The table's ``readers`` are the modules that ask for the variable: each names it, and each module that asks
    for a variable (``setting("DPKIT_...")``) is among its readers."""
    asked: dict[str, set[str]] = {name: set() for name in SETTINGS}
    for path, tree in TREES.items():
        constants = _constants(tree)
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "setting" \
                    and node.args and (name := _key(node.args[0], constants)):
                asked[name].add(_module_name(path))
    for name, s in SETTINGS.items():
        assert asked[name] == set(s.readers), f"{name}: read by {sorted(asked[name])}, the table says {s.readers}"
        assert s.meaning and s.default, name


def _module_name(path: Path) -> str:
    return ".".join(path.with_suffix("").parts) if path.parts[0] == "dpkit" else path.as_posix()


def test_setting_refuses_a_name_not_in_the_table(monkeypatch):
    monkeypatch.setenv("DPKIT_RESULTS_DIR", "/somewhere")
    assert setting("DPKIT_RESULTS_DIR") == "/somewhere"
    monkeypatch.delenv("DPKIT_RESULTS_DIR")
    assert setting("DPKIT_RESULTS_DIR") is None
    monkeypatch.setenv("DPKIT_CHECKPOINT_ADOPT", "verify")
    with pytest.raises(UnknownSettingError, match="'DPKIT_CHECKPOINT_ADOPT' is not one of dpkit's settings"):
        setting("DPKIT_CHECKPOINT_ADOPT")


def test_the_configuration_page_is_the_table(tmp_path):
    spec = importlib.util.spec_from_file_location("dpkit_docs_build_settings", ROOT / "docs" / "build.py")
    build = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = build  # its dataclasses look their module up
    spec.loader.exec_module(build)
    build.configuration_page(tmp_path)
    page = (tmp_path / "configuration.md").read_text()
    assert settings_markdown() in page
    rows = [line for line in page.splitlines() if line.startswith("| `DPKIT_")]
    assert [NAME.search(r).group(0) for r in rows] == list(SETTINGS)
    assert "configuration" in (ROOT / "docs" / "index.md").read_text()
    assert settings.__doc__ and "tests/test_settings.py" in settings.__doc__
