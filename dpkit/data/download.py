"""Downloads through one pooch registry built from ``data/registry.yaml``.

:func:`make_pooch` builds it (``allow_updates=False``: a corrupt file in place is an error, never silently replaced);
:func:`fetch` checks every download against all registry variants (or, without a published checksum, by a strict
parse) before it is moved into place, so an interrupted or corrupt download is never taken for a good file.
"""
from __future__ import annotations

import os
import shutil
import tempfile
import zipfile
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from dpkit.core.settings import setting
from dpkit.data import files
from dpkit.data.errors import ChecksumError, DataConfigError, DataNotFoundError
from dpkit.data.files import FoundFile, search_locations, verify_file
from dpkit.data.registry import DatasetSpec, FileSpec, FileVariant, load_registry

if TYPE_CHECKING:
    import pooch

__all__ = ["downloads_allowed", "download_url", "make_pooch", "fetch", "missing_message"]

StructureCheck = Callable[[FileSpec, Path], object]

_OFFLINE = ("1", "true", "yes", "on")
_ONLINE = ("", "0", "false", "no", "off")


def downloads_allowed(download: bool | None) -> bool:
    """``download`` if given, else not ``$DPKIT_OFFLINE`` (an unknown value is a :class:`DataConfigError`)."""
    if download is not None:
        return bool(download)
    raw = setting("DPKIT_OFFLINE") or ""
    value = raw.strip().lower()
    if value in _OFFLINE or value in _ONLINE:
        return value in _ONLINE
    raise DataConfigError(
        f"DPKIT_OFFLINE={raw!r} is not understood; use one of {'/'.join(_OFFLINE)} (no downloads) "
        f"or {'/'.join(v for v in _ONLINE if v)} or unset (downloads allowed)"
    )


def download_url(url: str, dest: Path, *, progress: bool = False) -> None:
    """Stream ``url`` to ``dest`` with :class:`pooch.HTTPDownloader` (no hash check here; :func:`fetch` verifies)."""
    import pooch

    pooch.HTTPDownloader(timeout=30, progressbar=progress)(url, str(dest), None)


def _archive_key(ds: DatasetSpec) -> str:
    return f"{ds.code}/{Path(str(ds.archive)).name}"


def make_pooch(dest: str | os.PathLike | None = None) -> pooch.Pooch:
    """The pooch registry of every data set: ``dest``, else ``$DPKIT_DATA_DIR``, else ``<repo>/data/raw``.

    Raises
    ------
    DataConfigError
        ``$DPKIT_DATA_DIR`` is set but is not an existing folder.
    DataNotFoundError
        No ``dest``, no ``$DPKIT_DATA_DIR`` and no repository folder to download into.
    """
    import pooch

    registry: dict[str, str | None] = {}
    urls: dict[str, str] = {}
    for ds in load_registry().values():
        for f in ds.files:
            key = f"{ds.code}/{f.name}"
            registry[key] = f"sha256:{f.variants[0].sha256}" if len(f.variants) == 1 else None
            if f.url:
                urls[key] = f.url
        if ds.archive:
            registry[_archive_key(ds)] = None  # no published checksum: its members are checked
            urls[_archive_key(ds)] = ds.archive
    common = dict(base_url="", registry=registry, urls=urls, allow_updates=False)
    if dest is not None:
        return pooch.create(path=Path(dest).expanduser(), **common)
    env = files.env_data_dir()  # a DPKIT_DATA_DIR that is missing or a file is an error naming it
    folder = env if env is not None else files.repo_raw_dir()
    if folder is None:
        raise DataNotFoundError("no download folder: set DPKIT_DATA_DIR to a writable folder")
    return pooch.create(path=folder, **common)


def _check_download(code: str, f: FileSpec, tmp: Path, structure_check: StructureCheck | None,
                    source: str) -> tuple[str, FileVariant | None]:
    """Verify a downloaded temporary file against the registry (or by structure); ChecksumError if bad."""
    try:
        sha, variant = verify_file(code, f, tmp)
        if variant is None:
            if structure_check is None:
                raise ChecksumError(f"[{code}] {f.name} has no registry checksum and no structure check; refusing to keep it")
            try:
                structure_check(f, tmp)
            except Exception as exc:
                raise ChecksumError(f"[{code}] {f.name} failed its structure check: {exc}") from exc
    except ChecksumError as exc:
        raise ChecksumError(f"download of {source} was corrupt and was discarded: {exc}") from exc
    return sha, variant


def _downloader(ds: DatasetSpec, missing: list[FileSpec], progress: bool, check: Callable[[Path], None] | None):
    """A pooch downloader: :func:`download_url` (offline -> DataNotFoundError), then ``check`` on the temporary file."""

    def download(url: str, output_file: str, pup: object, check_only: bool = False) -> None:
        try:
            download_url(url, Path(output_file), progress=progress)
        except Exception as exc:  # network, HTTP, disk
            reason = f"download failed ({type(exc).__name__}: {exc})"
            raise DataNotFoundError(missing_message(ds, missing, reason=reason)) from exc
        if check is not None:
            check(Path(output_file))

    return download


def _fetch_one(pup: pooch.Pooch, ds: DatasetSpec, f: FileSpec, progress: bool,
               structure_check: StructureCheck | None) -> FoundFile:
    key = f"{ds.code}/{f.name}"
    target = pup.abspath / key
    if target.exists():  # already in the download folder: verified, never overwritten
        sha, variant = verify_file(ds.code, f, target)
        return FoundFile(spec=f, path=target, found_in="download folder", sha256=sha, variant=variant,
                         verified=variant is not None)
    result: dict[str, tuple[str, FileVariant | None]] = {}

    def check(tmp: Path) -> None:
        result["ok"] = _check_download(ds.code, f, tmp, structure_check, f.url or f.name)

    pup.fetch(key, downloader=_downloader(ds, [f], progress, check))
    sha, variant = result["ok"]
    return FoundFile(spec=f, path=target, found_in="downloaded", sha256=sha, variant=variant, verified=variant is not None)


def _extract_member(zf: zipfile.ZipFile, ds: DatasetSpec, f: FileSpec, target: Path) -> FoundFile:
    member = ds.archive_prefix + f.name
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(prefix=".dpkit-member-", dir=target.parent)
    os.close(fd)
    tmp = Path(name)
    try:
        try:
            with zf.open(member) as src, open(tmp, "wb") as dst:
                shutil.copyfileobj(src, dst, 1 << 20)
        except KeyError as exc:
            raise ChecksumError(f"[{ds.code}] archive {ds.archive} has no member {member}") from exc
        sha, variant = _check_download(ds.code, f, tmp, None, f"{ds.archive} member {member}")
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)
    return FoundFile(spec=f, path=target, found_in="downloaded", sha256=sha, variant=variant, verified=variant is not None)


def _fetch_members(pup: pooch.Pooch, ds: DatasetSpec, packed: list[FileSpec], progress: bool) -> list[FoundFile]:
    if not ds.archive:
        raise DataNotFoundError(missing_message(ds, packed, reason="no download URL in the registry"))
    out: list[FoundFile] = []

    def unpack(fname: str, action: str, pup: pooch.Pooch) -> list[str]:
        """pooch processor: verify and install the requested members, then delete the zip."""
        try:
            with zipfile.ZipFile(fname) as zf:
                for f in packed:
                    out.append(_extract_member(zf, ds, f, pup.abspath / ds.code / f.name))
        except zipfile.BadZipFile as exc:
            raise ChecksumError(f"[{ds.code}] download of {ds.archive} is not a valid zip (corrupt or truncated); "
                                "nothing was kept") from exc
        finally:
            Path(fname).unlink(missing_ok=True)
        return [str(ff.path) for ff in out]

    pup.fetch(_archive_key(ds), processor=unpack, downloader=_downloader(ds, packed, progress, None))
    return out


def _prune_empty(folder: Path) -> None:
    """Remove ``folder`` and its sub-folders if they hold no file (after a failed download)."""
    if not folder.is_dir():
        return
    for root, _dirs, _files in os.walk(folder, topdown=False):
        try:
            Path(root).rmdir()
        except OSError:
            pass  # not empty: a verified file stays


def fetch(
    ds: DatasetSpec,
    *,
    roles: list[str] | None = None,
    dest: str | os.PathLike | None = None,
    progress: bool = False,
    structure_check: StructureCheck | None = None,
) -> list[FoundFile]:
    """Download the files of ``ds`` (all, or ``roles``) into ``<download folder>/CODE/``, verifying each.

    Raises
    ------
    DataNotFoundError
        No network (or the server failed); the message says what to download and where to put it.
    ChecksumError
        The download does not match the registry (nothing is kept).
    """
    pup = make_pooch(dest)
    folder = pup.abspath / ds.code
    created = not folder.exists()
    specs = [f for f in ds.files if roles is None or f.role in roles]
    out: list[FoundFile] = []
    try:
        for f in specs:
            if f.url:
                out.append(_fetch_one(pup, ds, f, progress, structure_check))
        packed = [f for f in specs if not f.url]
        if packed:
            out.extend(_fetch_members(pup, ds, packed, progress))
    finally:
        if created and not out:
            _prune_empty(folder)  # leave no empty folder behind after a failed download
    return out


def missing_message(ds: DatasetSpec, missing: list[FileSpec], *, reason: str = "", path=None) -> str:
    """The error text for missing files: what was searched, what to download, from where, and where to put it."""
    locs = search_locations(path)
    where = "\n".join(f"    - {loc.label}: {loc.folder / ds.code}/" for loc in locs) or "    (none)"
    try:
        target = make_pooch().abspath / ds.code
    except DataNotFoundError:
        target = Path("$DPKIT_DATA_DIR") / ds.code
    lines = [f"[{ds.code}] {ds.title}: required file(s) not found: {', '.join(f.name for f in missing)}."]
    if reason:
        lines.append(f"  Download attempt: {reason}.")
    lines.append("  Searched (only the path argument):" if path is not None else "  Searched (in order):")
    lines.append(where)
    lines.append("  What to download:")
    for f in (f for f in missing if f.url):
        size = f" ({f.variants[0].size:,} bytes, sha256 {f.variants[0].sha256})" if f.variants else " (no published checksum)"
        lines.append(f"    - {f.name}{size} from {f.url}")
    packed = [f for f in missing if not f.url]
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
    lines.append(f"  or run `python -m dpkit.data fetch {ds.code}` on a machine with network, "
                 "then `python -m dpkit.data verify`.")
    return "\n".join(lines)
