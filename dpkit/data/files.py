"""Finding, verifying and downloading raw files.

Search order for every file of a data set ``CODE`` (first hit wins, per file):

1. the explicit ``path`` argument (a file, or a folder holding the files or a ``CODE/`` subfolder);
2. ``$DPKIT_DATA_DIR`` (``$DPKIT_DATA_DIR/CODE/<file>`` or ``$DPKIT_DATA_DIR/<file>``);
3. the repository's gitignored ``data/raw/CODE/``;
4. ``shared/data/raw/CODE/``: the offline copies of this machine, found by walking up from the
   package folder and from the current directory (``<clone>/../shared`` in CI);
5. a download from UCI (pooch), verified before it is moved into place.

A file that is found but fails its checksum is an error, never skipped in favour of a later
location. Hashes are cached in memory per (path, size, mtime, inode), so verifying on every
load costs one ``stat``.
"""
from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

from dpkit.core.paths import shared_dir
from typing import Callable

from dpkit.data.errors import ChecksumError, DataNotFoundError
from dpkit.data.registry import DatasetSpec, FileSpec, FileVariant, repo_root

__all__ = [
    "Location",
    "FoundFile",
    "search_locations",
    "shared_raw_dir",
    "repo_raw_dir",
    "sha256_file",
    "verify_file",
    "find_file",
    "download_url",
    "fetch",
    "missing_message",
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


def repo_raw_dir() -> Path | None:
    """``<repo>/data/raw`` (gitignored; may not exist)."""
    root = repo_root()
    return None if root is None else root / "data" / "raw"


def shared_raw_dir() -> Path | None:
    """The machine's offline copies ``shared/data/raw``, if there is one.

    Walks up from this package's folder and from the current directory and, at every
    ancestor ``a``, tries ``a/shared/data/raw`` (so ``<clone>/../shared`` is found from
    anywhere inside the clone). Set ``DPKIT_SHARED_DIR`` to override (its ``data/raw`` is used).
    """
    shared = shared_dir()
    if shared is None:
        return None
    p = shared / "data" / "raw"
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
    env = os.environ.get("DPKIT_DATA_DIR")
    if env:
        locs.append(Location("$DPKIT_DATA_DIR", Path(env).expanduser()))
    repo = repo_raw_dir()
    if repo is not None:
        locs.append(Location("repo data/raw", repo))
    shared = shared_raw_dir()
    if shared is not None:
        locs.append(Location("shared data/raw", shared))
    return locs


def sha256_file(path: str | os.PathLike) -> str:
    """sha256 of a file, cached in memory per (resolved path, size, mtime_ns, inode)."""
    p = Path(path)
    st = p.stat()
    key = (str(p.resolve()), st.st_size, st.st_mtime_ns, st.st_ino)
    h = _HASH_CACHE.get(key)
    if h is None:
        d = hashlib.sha256()
        with open(p, "rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                d.update(chunk)
        h = d.hexdigest()
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
    if explicit is not None and explicit.is_file():
        if explicit_role:
            return FoundFile(spec=spec, path=explicit, found_in="path argument")
    for loc in search_locations(path):
        cands = [loc.folder / code / spec.name, loc.folder / spec.name]
        for c in cands:
            if c.is_file():
                return FoundFile(spec=spec, path=c, found_in=loc.label)
    return None


def download_target_dir() -> Path:
    """Where downloads go: ``$DPKIT_DATA_DIR`` if set, else the repo's gitignored ``data/raw``."""
    env = os.environ.get("DPKIT_DATA_DIR")
    if env:
        return Path(env).expanduser()
    repo = repo_raw_dir()
    if repo is None:
        raise DataNotFoundError("no download folder: set DPKIT_DATA_DIR to a writable folder")
    return repo


def download_url(url: str, dest: Path, *, progress: bool = False) -> None:
    """Download ``url`` to ``dest`` with pooch (no hash check here; the caller verifies)."""
    import pooch

    pooch.retrieve(
        url,
        known_hash=None,
        fname=dest.name,
        path=str(dest.parent),
        progressbar=progress,
        downloader=pooch.HTTPDownloader(timeout=30, progressbar=progress),
    )


def _install_verified(code: str, spec: FileSpec, tmp_file: Path, target: Path, structure_check=None) -> FoundFile:
    """Verify a downloaded temporary file, then atomically move it into place (never cache a bad one).

    Files with a registry checksum must match it; files without one (the CSN training file) must
    pass ``structure_check(spec, path)`` (a full strict parse with the expected row count).
    """
    try:
        sha, variant = verify_file(code, spec, tmp_file)
        if variant is None:
            if structure_check is None:
                raise ChecksumError(f"[{code}] {spec.name} has no registry checksum and no structure check; refusing to keep it")
            try:
                structure_check(spec, tmp_file)
            except Exception as exc:
                raise ChecksumError(f"[{code}] {spec.name} failed its structure check: {exc}") from exc
    except ChecksumError as exc:
        tmp_file.unlink(missing_ok=True)
        raise ChecksumError(f"download of {spec.url or spec.name} was corrupt and was discarded: {exc}") from exc
    target.parent.mkdir(parents=True, exist_ok=True)
    os.replace(tmp_file, target)
    return FoundFile(spec=spec, path=target, found_in="downloaded", sha256=sha, variant=variant, verified=variant is not None)


def fetch(
    ds: DatasetSpec,
    *,
    roles: list[str] | None = None,
    dest: str | os.PathLike | None = None,
    progress: bool = False,
    downloader: Callable[..., None] | None = None,
    structure_check: Callable[[FileSpec, Path], object] | None = None,
) -> list[FoundFile]:
    """Download the files of ``ds`` (all, or ``roles``) into ``dest/CODE/``, verifying each.

    Each file goes to a temporary folder next to its target, is checked against the registry
    (size and sha256), and only then renamed into place, so an interrupted or corrupt download
    is never taken for a good file. PAM comes as one zip whose members are checked one by one.

    Raises
    ------
    DataNotFoundError
        No network (or the server failed); the message says what to download and where to put it.
    ChecksumError
        The download does not match the registry (nothing is kept).
    """
    dl = downloader or download_url
    root = Path(dest).expanduser() if dest is not None else download_target_dir()
    target_dir = root / ds.code
    specs = [f for f in ds.files if roles is None or f.role in roles]
    created = not target_dir.exists()
    target_dir.mkdir(parents=True, exist_ok=True)
    out: list[FoundFile] = []
    try:
        _fetch_into(ds, specs, target_dir, dl, progress, out, structure_check)
    finally:
        if created and not out:
            try:
                target_dir.rmdir()  # leave no empty folder behind after a failed download
            except OSError:
                pass
    return out


def _fetch_into(ds: DatasetSpec, specs: list[FileSpec], target_dir: Path, dl, progress: bool, out: list[FoundFile], structure_check) -> None:
    with tempfile.TemporaryDirectory(prefix=".dpkit-download-", dir=target_dir) as tmp:
        tmpdir = Path(tmp)
        direct = [f for f in specs if f.url]
        via_archive = [f for f in specs if not f.url]
        for f in direct:
            tmp_file = tmpdir / Path(f.name).name
            try:
                dl(f.url, tmp_file, progress=progress)
            except ChecksumError:
                raise
            except Exception as exc:  # network, HTTP, disk
                raise DataNotFoundError(missing_message(ds, [f], reason=f"download failed ({type(exc).__name__}: {exc})")) from exc
            out.append(_install_verified(ds.code, f, tmp_file, target_dir / f.name, structure_check))
        if via_archive:
            if not ds.archive:
                raise DataNotFoundError(missing_message(ds, via_archive, reason="no download URL in the registry"))
            zpath = tmpdir / Path(ds.archive).name
            try:
                dl(ds.archive, zpath, progress=progress)
            except Exception as exc:
                raise DataNotFoundError(missing_message(ds, via_archive, reason=f"download failed ({type(exc).__name__}: {exc})")) from exc
            try:
                with zipfile.ZipFile(zpath) as zf:
                    for f in via_archive:
                        member = ds.archive_prefix + f.name
                        tmp_file = tmpdir / ("member-" + Path(f.name).name)
                        try:
                            with zf.open(member) as src, open(tmp_file, "wb") as dst:
                                shutil.copyfileobj(src, dst, 1 << 20)
                        except KeyError as exc:
                            raise ChecksumError(f"[{ds.code}] archive {ds.archive} has no member {member}") from exc
                        out.append(_install_verified(ds.code, f, tmp_file, target_dir / f.name, structure_check))
            except zipfile.BadZipFile as exc:
                raise ChecksumError(f"[{ds.code}] download of {ds.archive} is not a valid zip (corrupt or truncated); nothing was kept") from exc


def missing_message(ds: DatasetSpec, missing: list[FileSpec], *, reason: str = "", path=None) -> str:
    """The error text for missing files: what was searched, what to download, from where, and where to put it."""
    locs = search_locations(path)
    where = "\n".join(f"    - {loc.label}: {loc.folder / ds.code}/" for loc in locs) or "    (none)"
    try:
        target = download_target_dir() / ds.code
    except DataNotFoundError:
        target = Path("$DPKIT_DATA_DIR") / ds.code
    lines = [f"[{ds.code}] {ds.title}: required file(s) not found: {', '.join(f.name for f in missing)}."]
    if reason:
        lines.append(f"  Download attempt: {reason}.")
    lines.append("  Searched (only the path argument):" if path is not None else "  Searched (in order):")
    lines.append(where)
    lines.append("  What to download:")
    direct = [f for f in missing if f.url]
    packed = [f for f in missing if not f.url]
    for f in direct:
        size = f" ({f.variants[0].size:,} bytes, sha256 {f.variants[0].sha256})" if f.variants else " (no published checksum)"
        lines.append(f"    - {f.name}{size} from {f.url}")
    if packed:
        src = ds.archive or f"the data set page {ds.page}"
        lines.append(f"    - {src}; unzip it and keep these member(s) of {ds.archive_prefix or 'the archive'} (bytes, sha256):")
        for f in packed:
            v = f"{f.variants[0].size:,}  {f.variants[0].sha256}" if f.variants else "no published checksum"
            lines.append(f"        {f.name}  ({v})")
    if ds.page:
        lines.append(f"  Data set page: {ds.page}")
    lines.append(f"  Where to put it: {target}/ keeping the relative names above, e.g. {target / missing[0].name}")
    lines.append("  (the repo's data/raw/ is gitignored: never commit raw data),")
    lines.append("  or any folder named by DPKIT_DATA_DIR as <DPKIT_DATA_DIR>/" + ds.code + "/,")
    lines.append(f"  or run `python -m dpkit.data fetch {ds.code}` on a machine with network, then `python -m dpkit.data verify`.")
    return "\n".join(lines)
