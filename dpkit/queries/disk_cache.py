"""On-disk cache of evaluation objects (fitted kernel embeddings, exact answers), shared by processes.

Entries are keyed by *content* (SHA-256 of the data's and the workload's float64 bytes and shapes, σ, the fit
options, the tolerance), one ``.npz`` file per entry in a folder per kind, under the setting ``DPKIT_CACHE_DIR``
(:mod:`dpkit.core.settings`; docs/faq.md says where and how to turn it off).

Guarantees: a file is written under a temporary name and moved into place with :func:`os.replace`, so a reader sees
no file or a complete one. Every file stores its key and a checksum; a file that does not load, does not match its
checksum or holds another key is **never used**: :func:`load` warns :class:`CacheWarning` naming the file and the
reason, deletes it and returns ``None``. The entries are exact statistics of the private data, not releases.
"""
from __future__ import annotations

import hashlib
import json
import os
import tempfile
import warnings
from pathlib import Path
from typing import Any, Mapping

import numpy as np

from dpkit.core.settings import setting

__all__ = ["CacheWarning", "cache_dir", "entry_key", "load", "save", "clear", "FORMAT_VERSION"]

#: Bumped whenever the meaning or layout of a cached entry changes (part of every key).
FORMAT_VERSION = 1
_OFF = ("", "0", "off", "none", "false", "no")
_META = "__meta__"


class CacheWarning(RuntimeWarning):
    """A cache file was unreadable, corrupt or foreign and was discarded (the entry is recomputed)."""


def cache_dir() -> Path | None:
    """The cache root (``$DPKIT_CACHE_DIR`` or ``<clone>/results/cache``); ``None`` when disabled."""
    env = setting("DPKIT_CACHE_DIR")
    if env is not None:
        return None if env.strip().lower() in _OFF else Path(env)
    from dpkit.core.paths import results_dir

    return results_dir() / "cache"


def entry_key(kind: str, parts: Mapping[str, Any]) -> str:
    """SHA-256 (hex) of the kind, :data:`FORMAT_VERSION` and the JSON of ``parts`` (sorted keys)."""
    text = json.dumps({"kind": kind, "version": FORMAT_VERSION, **parts}, sort_keys=True, default=repr)
    return hashlib.sha256(text.encode()).hexdigest()


def _checksum(arrays: Mapping[str, np.ndarray], meta_json: str) -> str:
    h = hashlib.sha256(meta_json.encode())
    for name in sorted(arrays):
        a = np.ascontiguousarray(arrays[name])
        h.update(repr((name, a.dtype.str, a.shape)).encode())
        h.update(a.tobytes())
    return h.hexdigest()


def _path(root: Path, kind: str, key: str) -> Path:
    return root / kind / f"{key[:40]}.npz"


def save(kind: str, key: str, arrays: Mapping[str, np.ndarray], meta: Mapping[str, Any]) -> Path | None:
    """Write one entry atomically (module docs); returns its path, ``None`` if the cache is off or the
    write failed (a full or read-only disk only costs the reuse, never the run: it warns)."""
    root = cache_dir()
    if root is None:
        return None
    if _META in arrays:
        raise ValueError(f"array name {_META!r} is reserved")
    arrays = {k: np.ascontiguousarray(v) for k, v in arrays.items()}
    meta_json = json.dumps({"key": key, "kind": kind, "version": FORMAT_VERSION, "meta": dict(meta)}, sort_keys=True)
    record = json.dumps({"meta_json": meta_json, "checksum": _checksum(arrays, meta_json)})
    path = _path(root, kind, key)
    tmp = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.stem}.", suffix=".tmp", dir=path.parent)
        with os.fdopen(fd, "wb") as fh:
            np.savez(fh, **arrays, **{_META: np.array(record)})
        os.replace(tmp, path)
        tmp = None
    except OSError as exc:
        warnings.warn(f"could not write cache entry {path}: {exc}", CacheWarning, stacklevel=2)
        return None
    finally:
        if tmp is not None:
            try:
                os.unlink(tmp)
            except OSError:
                pass
    return path


def load(kind: str, key: str) -> tuple[dict[str, np.ndarray], dict[str, Any]] | None:
    """``(arrays, meta)`` of the entry, or ``None`` (no file, cache off, or a discarded bad file: warns)."""
    root = cache_dir()
    if root is None:
        return None
    path = _path(root, kind, key)
    if not path.is_file():
        return None
    try:
        with np.load(path, allow_pickle=False) as z:
            arrays = {k: np.array(z[k]) for k in z.files if k != _META}
            record = json.loads(str(z[_META][()]))
        meta_json, stored = record["meta_json"], record["checksum"]
        head = json.loads(meta_json)
    except Exception as exc:  # truncated, not a zip, missing record: unreadable
        return _discard(path, f"unreadable ({type(exc).__name__}: {exc})")
    if _checksum(arrays, meta_json) != stored:
        return _discard(path, "checksum mismatch (corrupt)")
    if head.get("key") != key or head.get("kind") != kind or head.get("version") != FORMAT_VERSION:
        return _discard(path, f"foreign entry (stored key {str(head.get('key'))[:12]}…, kind {head.get('kind')!r}, "
                              f"version {head.get('version')!r})")
    return arrays, dict(head.get("meta") or {})


def _discard(path: Path, reason: str) -> None:
    warnings.warn(f"discarding cache file {path}: {reason}; recomputing the entry", CacheWarning, stacklevel=3)
    try:
        path.unlink()
    except OSError:
        pass
    return None


def clear(kind: str | None = None) -> int:
    """Delete the cached entries (of one kind, or all); returns how many files were removed."""
    root = cache_dir()
    if root is None or not root.is_dir():
        return 0
    n = 0
    for p in (root / kind).glob("*.npz") if kind else root.glob("*/*.npz"):
        try:
            p.unlink()
            n += 1
        except OSError:
            pass
    return n
