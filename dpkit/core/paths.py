"""The one place that finds the source tree and the shared reference folder beside it.

dpkit runs from an editable install of its clone: the repository root is the ancestor of this
file that holds ``dpkit/`` and ``data/registry.yaml``; the reference material (offline data
copies) lives where ``$DPKIT_SHARED_DIR`` points, else in the ``shared`` folder beside the clone.
"""
from __future__ import annotations

import os
import uuid
from pathlib import Path
from typing import Any

from dpkit.core.settings import setting

__all__ = ["repo_root", "shared_dir", "figures_dir", "results_dir", "write_atomic", "library_fingerprint",
           "repetition_file", "repetition_files"]

_HERE = Path(__file__).resolve()


def repo_root() -> Path | None:
    """The clone holding ``dpkit/`` and ``data/registry.yaml``; ``None`` for a non-editable install."""
    for parent in _HERE.parents:
        if (parent / "data" / "registry.yaml").is_file() and (parent / "dpkit").is_dir():
            return parent
    return None


def shared_dir() -> Path | None:
    """``$DPKIT_SHARED_DIR`` if set, else the first ancestor ``a/shared`` (holding ``data/raw``)
    found walking up from the package and from the current directory; ``None`` if there is none."""
    env = setting("DPKIT_SHARED_DIR")
    if env:
        p = Path(env)
        return p if p.is_dir() else None
    starts = [_HERE.parent]
    try:
        starts.append(Path.cwd().resolve())
    except OSError:  # cwd deleted
        pass
    for start in starts:
        for a in (start, *start.parents):
            if (a / "shared" / "data" / "raw").is_dir():
                return a / "shared"
    return None


def _in_repo(*parts: str) -> Path:
    root = repo_root()
    return (root if root is not None else Path.cwd()).joinpath(*parts)


def figures_dir() -> Path:
    """``<clone>/figures``: where paper figures are exported (the current directory's otherwise);
    ``$DPKIT_FIGURES_DIR`` when set (e.g. a test's scratch folder)."""
    env = setting("DPKIT_FIGURES_DIR")
    return Path(env) if env else _in_repo("figures")


def results_dir() -> Path:
    """``<clone>/results``: the default home of run outputs (gitignored); ``$DPKIT_RESULTS_DIR`` when set."""
    env = setting("DPKIT_RESULTS_DIR")
    return Path(env) if env else _in_repo("results")


def write_atomic(path: str | os.PathLike, data: bytes | str) -> None:
    """Write ``data`` to ``path`` atomically: a temporary file in the same folder, then a rename, so a reader
    (or a process killed mid-write) sees the old file or the whole new one, never a part."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex[:8]}")
    try:
        if isinstance(data, str):
            tmp.write_text(data)
        else:
            tmp.write_bytes(data)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def library_fingerprint(root: str | os.PathLike | None = None) -> str:
    """A hash of this dpkit's Python code (relative paths and syntax trees), 16 hex digits.

    Each module enters as its abstract syntax tree without docstrings (``ast.dump``, no line numbers), so
    comments, docstrings, blank lines and line breaks do not change the fingerprint, while any change to
    code does (a constant, a name, an operator, an import). Kept repetitions are only reused by code
    that computes what they were computed with (:mod:`dpkit.experiments.checkpoint`,
    :mod:`dpkit.batch.execute`), so a docstring edit does not make kept repetitions stale. A file
    that does not parse enters with its bytes. ``root``: another package folder (default: the one this
    module belongs to).
    """
    import hashlib

    from dpkit.core.pysource import parse

    base = Path(root) if root is not None else _HERE.parents[1]
    h = hashlib.sha256()
    for f in sorted(base.rglob("*.py")):
        raw = f.read_bytes()
        key = hashlib.sha256(raw).digest()
        body = _CODE_DIGESTS.get(key)
        if body is None:
            try:  # under dpkit.core.pysource's lock: CPython 3.11's parser is not safe in several threads at once
                body = hashlib.sha256(_code_only(parse(raw)).encode()).digest()
            except (SyntaxError, ValueError):
                body = hashlib.sha256(raw).digest()
            _CODE_DIGESTS[key] = body
        h.update(f.relative_to(base).as_posix().encode() + b"\0" + body + b"\0")
    return h.hexdigest()[:16]


#: Per-process memo of :func:`library_fingerprint`'s per-file code digests, keyed by the file's bytes' sha256.
_CODE_DIGESTS: dict[bytes, bytes] = {}


def _code_only(tree: Any) -> str:
    """``ast.dump`` of ``tree`` with every module, class and function docstring removed."""
    import ast

    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                    and isinstance(body[0].value.value, str):
                node.body = body[1:] or [ast.Pass()]
    return ast.dump(tree, annotate_fields=False, include_attributes=False)


#: File name pattern of one kept repetition (:class:`dpkit.experiments.checkpoint.RepetitionCheckpoint`).
_REPETITION_GLOB = "rep-*.pkl"


def repetition_file(folder: str | os.PathLike, index: int) -> Path:
    """Where a checkpoint folder keeps repetition ``index`` (``rep-00007.pkl``): the one place that names the layout,
    read by the checkpoint itself and by the batch runner's and ``status``'s counts."""
    return Path(folder) / f"rep-{int(index):05d}.pkl"


def repetition_files(folder: str | os.PathLike, *, recursive: bool = True) -> list[Path]:
    """The kept repetitions below ``folder`` (with ``recursive``, those of all its data sets), sorted; ``[]`` if the
    folder does not exist."""
    base = Path(folder)
    if not base.is_dir():
        return []
    return sorted(base.rglob(_REPETITION_GLOB) if recursive else base.glob(_REPETITION_GLOB))
