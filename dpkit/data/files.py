"""Finding and verifying raw files.

Every file of a data set is looked for in a fixed order, first hit wins (docs/getting-started.md, "The data"): the
explicit ``path``, ``$DPKIT_DATA_DIR``, the repository's ``data/raw/``, the machine's offline copies
(:func:`dpkit.core.paths.shared_dir`), then a verified download (:mod:`dpkit.data.download`).

Errors: a ``$DPKIT_DATA_DIR`` that is not a folder raises :class:`DataConfigError`; a file that fails its checksum is
an error, never skipped for a later location. Hashes are cached per (path, size, mtime, inode).
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from dpkit.core.paths import repo_root, shared_dir
from dpkit.core.settings import setting
from dpkit.data.errors import ChecksumError, DataConfigError
from dpkit.data.registry import FileSpec, FileVariant

__all__ = [
    "Location",
    "FoundFile",
    "env_data_dir",
    "search_locations",
    "shared_raw_dir",
    "repo_raw_dir",
    "sha256_file",
    "verify_file",
    "find_file",
]

_HASH_CACHE: dict[tuple[str, int, int, int], str] = {}


@dataclass(frozen=True)
class Location:
    """A search location: a label (for provenance and messages) and a folder."""

    label: str
    folder: Path


@dataclass(frozen=True)
class FoundFile:
    """A located file with its location label and (once verified) sha256 and matching variant."""

    spec: FileSpec
    path: Path
    found_in: str
    sha256: str | None = None
    variant: FileVariant | None = None
    verified: bool = False


def _env_folder(var: str, env: str | None, what: str) -> Path | None:
    """The folder ``env`` that the setting ``var`` names (``None`` if unset); an error naming it if it is not one."""
    if not env:
        return None
    p = Path(env).expanduser()
    if not p.exists():
        raise DataConfigError(f"{var}={env!r} does not exist; create it (mkdir -p {p}) or unset {var} ({what})")
    if not p.is_dir():
        raise DataConfigError(f"{var}={env!r} is a file, not a folder; point {var} at a folder or unset it ({what})")
    return p


def env_data_dir() -> Path | None:
    """``$DPKIT_DATA_DIR`` if set (it must be an existing folder: :class:`DataConfigError` otherwise)."""
    return _env_folder("DPKIT_DATA_DIR", setting("DPKIT_DATA_DIR"),
                       "the folder searched first for raw files and where fetch downloads")


def repo_raw_dir() -> Path | None:
    """``<repo>/data/raw`` (gitignored; may not exist)."""
    root = repo_root()
    return None if root is None else root / "data" / "raw"


def shared_raw_dir() -> Path | None:
    """The machine's offline copies ``<shared>/data/raw``, if there is one.

    Found by :func:`dpkit.core.paths.shared_dir` (``$DPKIT_SHARED_DIR``, else ``<ancestor>/shared``
    holding ``data/raw``). A ``$DPKIT_SHARED_DIR`` that is not a folder with ``data/raw`` is a
    :class:`DataConfigError` naming it.
    """
    env = _env_folder("DPKIT_SHARED_DIR", setting("DPKIT_SHARED_DIR"), "the reference folder holding data/raw")
    shared = shared_dir()
    if shared is None:
        return None
    p = shared / "data" / "raw"
    if env is not None and not p.is_dir():
        raise DataConfigError(f"DPKIT_SHARED_DIR={str(env)!r} has no data/raw folder ({p}); "
                              "point it at the shared folder or unset it")
    return p if p.is_dir() else None


def search_locations(path: str | os.PathLike | None = None) -> list[Location]:
    """The folders searched, in order ($DPKIT_DATA_DIR, repo data/raw, shared data/raw).

    An explicit ``path`` is authoritative: then only it is searched (a file's folder, or the
    folder itself), so a missing file there is an error rather than a silent switch to another copy.
    """
    if path is not None:
        p = Path(path).expanduser()
        return [Location("path argument", p if p.is_dir() else p.parent)]
    locs: list[Location] = []
    env = env_data_dir()
    if env is not None:
        locs.append(Location("$DPKIT_DATA_DIR", env))
    repo = repo_raw_dir()
    if repo is not None:
        locs.append(Location("repo data/raw", repo))
    shared = shared_raw_dir()
    if shared is not None:
        locs.append(Location("shared data/raw", shared))
    return locs


def sha256_file(path: str | os.PathLike) -> str:
    """sha256 of a file (:func:`pooch.file_hash`), cached in memory per (resolved path, size, mtime_ns, inode)."""
    import pooch

    p = Path(path)
    st = p.stat()
    key = (str(p.resolve()), st.st_size, st.st_mtime_ns, st.st_ino)
    h = _HASH_CACHE.get(key)
    if h is None:
        h = pooch.file_hash(str(p), alg="sha256")
        _HASH_CACHE[key] = h
    return h


def _fix_hint(code: str, spec: FileSpec) -> str:
    url = f" from {spec.url}" if spec.url else ""
    return (
        f"delete or replace it with the original {spec.name}{url} "
        f"(or run `python -m dpkit.data fetch {code}` where a network is available)"
    )


def verify_file(code: str, spec: FileSpec, path: Path) -> tuple[str, FileVariant | None]:
    """Check ``path`` against the accepted (size, sha256) variants of ``spec``.

    Returns ``(sha256, variant)``; ``variant`` is None when the registry has no checksum for
    this file (then the loader checks it by structure instead).

    Raises
    ------
    ChecksumError
        Size or hash matches no variant; the message names the file, says whether it looks
        truncated, and what to do.
    """
    size = path.stat().st_size
    sha = sha256_file(path)
    if not spec.variants:
        return sha, None
    for v in spec.variants:
        if v.size == size and v.sha256 == sha:
            return sha, v
    sizes = sorted({v.size for v in spec.variants})
    if size < min(sizes):
        what = f"it is {size:,} bytes but should be {' or '.join(f'{s:,}' for s in sizes)}: truncated or incomplete"
    elif size not in sizes:
        what = f"it is {size:,} bytes but should be {' or '.join(f'{s:,}' for s in sizes)}"
    else:
        what = "its size is right but its content differs (edited or corrupt)"
    raise ChecksumError(
        f"[{code}] checksum mismatch for {path}: sha256 {sha} is none of the registry's "
        f"{', '.join(v.sha256[:12] + '...' for v in spec.variants)}; {what}. Fix: {_fix_hint(code, spec)}."
    )


def find_file(
    code: str, spec: FileSpec, *, path: str | os.PathLike | None = None, explicit_role: bool = False
) -> FoundFile | None:
    """First location holding ``spec``'s file, or None.

    ``explicit_role=True`` means ``path`` is a file given for this role (used as is, whatever its name).
    """
    explicit = Path(path).expanduser() if path is not None else None
    if explicit is not None and explicit.is_file() and explicit_role:
        return FoundFile(spec=spec, path=explicit, found_in="path argument")
    for loc in search_locations(path):
        for c in (loc.folder / code / spec.name, loc.folder / spec.name):
            if c.is_file():
                return FoundFile(spec=spec, path=c, found_in=loc.label)
    return None
