"""dpkit's layers: every import points down a layer (or stays in its own), and no import closes a circle; no
module of dpkit imports a private (``_name``) name of another: what two modules share is public in its home module;
and no module but a package's ``__init__`` re-exports a name of another: a name has one address, its home module.

The layers, bottom to top, are ``dpkit._LAYERS`` (ARCHITECTURE.md explains them). The test reads every
module's imports from its syntax tree (module-level, function-level and ``TYPE_CHECKING`` imports alike: each
is a dependency), so nothing is imported or run.
"""
from __future__ import annotations

import ast
from pathlib import Path

import networkx as nx
import pytest

import dpkit

ROOT = Path(dpkit.__file__).resolve().parent


def _modules(root: Path) -> dict[str, Path]:
    out = {}
    for f in sorted(root.rglob("*.py")):
        parts = list(f.relative_to(root.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = f
    return out


def _resolve(name: str, modules: dict[str, Path]) -> str | None:
    """The dpkit module ``name`` lives in (a module, or the package whose ``__init__`` defines it)."""
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name or None


def import_graph(root: Path = ROOT) -> nx.DiGraph:
    """Module → imported dpkit module, one edge per (module, target), each with the line of the first import."""
    modules = _modules(root)
    g = nx.DiGraph()
    g.add_nodes_from(modules)
    for mod, path in modules.items():
        package = mod if path.name == "__init__.py" else mod.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = package.split(".")
                    base = ".".join(parts[:len(parts) - node.level + 1] + ([node.module] if node.module else []))
                # ``from pkg import sub`` depends on the submodule, ``from pkg import name`` on the package
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names]
            else:
                continue
            for t in targets:
                found = _resolve(t, modules) if t.startswith("dpkit") else None
                if found and found != mod and not g.has_edge(mod, found):
                    g.add_edge(mod, found, line=f"{path.relative_to(root.parent)}:{node.lineno}")
    return g


def _layer(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[1] in dpkit._LAYERS else None


def layer_violations(g: nx.DiGraph) -> list[str]:
    """Imports from a layer into a higher one (``dpkit`` itself and modules outside the layers are exempt)."""
    rank = {name: i for i, name in enumerate(dpkit._LAYERS)}
    out = []
    for a, b, data in g.edges(data=True):
        la, lb = _layer(a), _layer(b)
        if la and lb and rank[lb] > rank[la]:
            out.append(f"{data['line']}: {a} ({la}) imports {b} ({lb}), a higher layer")
    return sorted(out)


def private_imports(root: Path = ROOT) -> list[str]:
    """``file:line module.name`` of every import of an underscore name (not a dunder) from another dpkit module.

    ``from dpkit.m import _x`` and ``from .m import _x`` count wherever they are (module level, function level,
    ``TYPE_CHECKING``); ``from dpkit.m import x as _x`` (a public name under a private local name) does not.
    """
    out = []
    for mod, path in _modules(root).items():
        package = mod if path.name == "__init__.py" else mod.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if not isinstance(node, ast.ImportFrom):
                continue
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[:len(parts) - node.level + 1] + ([node.module] if node.module else []))
            if not (base == "dpkit" or base.startswith("dpkit.")) or base == mod:
                continue
            for a in node.names:
                if a.name.startswith("_") and not a.name.startswith("__"):
                    out.append(f"{path.relative_to(root.parent)}:{node.lineno} {base}.{a.name}")
    return sorted(out)


def _module_level(body: list[ast.stmt]):
    """The statements of a module body, with those inside its module-level ``if``/``try`` blocks (``TYPE_CHECKING``)."""
    for node in body:
        yield node
        if isinstance(node, (ast.If, ast.Try)):
            for block in (node.body, node.orelse, getattr(node, "finalbody", []),
                          *[h.body for h in getattr(node, "handlers", [])]):
                yield from _module_level(block)


def reexports(root: Path = ROOT) -> list[str]:
    """``file:line module.name`` of every name a module other than a package ``__init__`` imports at module level from
    another dpkit module and hands on: listed in its ``__all__``, or imported without being used.

    A module that only passes a name on is a second address for it (a shim); the importer should use the defining
    module or its package. ``from dpkit.m import x as y`` is reported as ``dpkit.m.x``.
    """
    out = []
    for mod, path in _modules(root).items():
        if path.name == "__init__.py":
            continue
        package = mod.rpartition(".")[0]
        tree = ast.parse(path.read_text(), filename=str(path))
        imported: dict[str, tuple[int, str]] = {}
        for node in _module_level(tree.body):
            if not isinstance(node, ast.ImportFrom):
                continue
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[:len(parts) - node.level + 1] + ([node.module] if node.module else []))
            if base == "dpkit" or base.startswith("dpkit."):
                for a in node.names:
                    imported[a.asname or a.name] = (node.lineno, f"{base}.{a.name}")
        listed: set[str] = set()
        for node in tree.body:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(
                node, (ast.AugAssign, ast.AnnAssign)) else []
            if any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets) and node.value is not None:
                listed |= {c.value for c in ast.walk(node.value) if isinstance(c, ast.Constant) and isinstance(c.value, str)}
        used = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
        for name, (line, full) in imported.items():
            if name in listed or name not in used:
                out.append(f"{path.relative_to(root.parent)}:{line} {full}")
    return sorted(out)




def circles(g: nx.DiGraph) -> list[list[str]]:
    """The import circles: strongly connected sets of more than one module."""
    return sorted(sorted(c) for c in nx.strongly_connected_components(g) if len(c) > 1)


def test_every_folder_of_dpkit_is_a_layer():
    folders = {p.name for p in ROOT.iterdir() if p.is_dir() and (p / "__init__.py").is_file()}
    assert folders == set(dpkit._LAYERS)


def test_imports_point_down_the_layers():
    assert layer_violations(import_graph()) == []


def test_no_import_closes_a_circle():
    g = import_graph()
    assert circles(g) == [], [g.edges[e]["line"] for c in circles(g) for e in g.subgraph(c).edges]


def test_no_module_imports_a_private_name_of_another():
    found = private_imports()
    assert found == [], "private names imported across modules (make them public in their home module):\n" + "\n".join(found)


def _write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        p = root / "dpkit" / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    return root / "dpkit"


@pytest.mark.parametrize("files, kind", [
    ({"__init__.py": "", "core/__init__.py": "", "core/a.py": "def f():\n    from dpkit.batch.b import g\n",
      "batch/__init__.py": "", "batch/b.py": "g = 1\n"}, "up"),
    ({"__init__.py": "", "queries/__init__.py": "", "queries/a.py": "from dpkit.queries import b\n",
      "queries/b.py": "from .a import x\n"}, "circle"),
])
def test_the_checks_find_a_planted_upward_import_and_circle(tmp_path, files, kind):
    g = import_graph(_write(tmp_path, files))
    if kind == "up":
        assert layer_violations(g) == ["dpkit/core/a.py:2: dpkit.core.a (core) imports dpkit.batch.b (batch), a higher layer"]
    else:
        assert circles(g) == [["dpkit.queries.a", "dpkit.queries.b"]]


def test_the_check_finds_planted_private_imports(tmp_path):
    root = _write(tmp_path, {
        "__init__.py": "", "core/__init__.py": "",
        "core/a.py": "_x = 1\ny = 2\n__version__ = '0'\n",
        "core/b.py": ("from dpkit.core.a import _x\n"              # flagged
                      "from dpkit.core.a import y as _y\n"         # a public name aliased: fine
                      "from dpkit.core.a import __version__\n"     # a dunder: fine
                      "from dpkit.core import a as _a\n"           # a module aliased: fine
                      "def f():\n    from .a import _x\n"),       # relative, inside a function: flagged
        "core/c.py": "_z = 0\nfrom dpkit.core.c import _z\n",    # its own name: fine
    })
    assert private_imports(root) == ["dpkit/core/b.py:1 dpkit.core.a._x", "dpkit/core/b.py:6 dpkit.core.a._x"]


def test_no_module_but_a_package_init_re_exports_a_name():
    found = reexports()
    assert found == [], ("names re-exported by a module that does not define them (import them from their home "
                         "module, or export them from the package's __init__):\n" + "\n".join(found))


def test_the_check_finds_planted_re_exports(tmp_path):
    root = _write(tmp_path, {
        "__init__.py": "", "core/__init__.py": "from dpkit.core.a import x\n__all__ = ['x']\n",  # a package: fine
        "core/a.py": "x = 1\ny = 2\nz = 3\n",
        "core/b.py": ("from dpkit.core.a import x, y\n"                   # x used but listed in __all__: flagged
                      "from dpkit.core.a import z as w  # noqa: F401\n"  # imported, never used: flagged
                      "__all__ = ['x', 'f']\n"                           # y used, not listed: fine
                      "def f():\n    from dpkit.core.a import z\n    return x + y + z\n"),  # function level: fine
        "core/c.py": ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                      "    from .a import y\n"),                           # relative, under TYPE_CHECKING, unused
    })
    assert reexports(root) == ["dpkit/core/b.py:1 dpkit.core.a.x", "dpkit/core/b.py:2 dpkit.core.a.z",
                               "dpkit/core/c.py:3 dpkit.core.a.y"]
