"""The data registry: ``data/registry.yaml`` read into small frozen objects.

The YAML file is the human-readable source of truth (UCI id and page, official URLs,
expected files with sizes and sha256, licence, preprocessing recipe, the thesis's
Table 3.1 shape, public rescaling bounds, preprocessing steps declared public). This
module only reads and checks it; :mod:`dpkit.data.download` turns it into a pooch registry.
"""
from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from dpkit.core.paths import repo_root
from dpkit.core.settings import setting
from dpkit.data.errors import RegistryError, UnknownDatasetError

__all__ = ["PUBLIC_STEPS", "FileVariant", "FileSpec", "DatasetSpec", "registry_path", "load_registry", "get_spec"]

#: Data-dependent Table 3.1 steps a registry entry may declare public (``public_steps:``).
PUBLIC_STEPS = ("drop_missing_rows", "drop_constant_columns")

_SHA256 = re.compile(r"^[0-9a-f]{64}$")


@dataclass(frozen=True, kw_only=True)
class FileVariant:
    """One accepted byte-exact version of a file."""

    size: int
    sha256: str
    note: str = ""


@dataclass(frozen=True, kw_only=True)
class FileSpec:
    """An expected raw file, relative to ``<search dir>/<CODE>/``."""

    role: str
    name: str
    url: str | None = None
    optional: bool = False
    rows: int | None = None
    variants: tuple[FileVariant, ...] = ()
    note: str = ""

    @property
    def has_checksum(self) -> bool:
        return bool(self.variants)


@dataclass(frozen=True, kw_only=True)
class DatasetSpec:
    """One registry entry (see ``data/registry.yaml`` for the meaning of each field)."""

    code: str
    title: str
    recipe: str
    uci_id: int | None = None
    page: str | None = None
    archive: str | None = None
    archive_prefix: str = ""
    citation: str = ""
    licence: str = ""
    thesis_n: int | None = None
    thesis_d: int | None = None
    files: tuple[FileSpec, ...] = ()
    preprocessing: str = ""
    public_bounds: tuple[float, float] | None = None
    bounds_reference: str = ""
    public_steps: Mapping[str, str] = field(default_factory=dict)
    synthetic: bool = False
    unavailable_offline: str = ""
    raw: Mapping[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @property
    def thesis_shape(self) -> tuple[int, int] | None:
        if self.thesis_n is None or self.thesis_d is None:
            return None
        return (self.thesis_n, self.thesis_d)

    def file(self, role: str) -> FileSpec:
        for f in self.files:
            if f.role == role:
                return f
        raise RegistryError(f"registry entry {self.code!r} has no file with role {role!r}")

    @property
    def required_files(self) -> tuple[FileSpec, ...]:
        return tuple(f for f in self.files if not f.optional)


def registry_path() -> Path:
    """Path of the registry: ``$DPKIT_REGISTRY`` if set, else ``<repo>/data/registry.yaml``."""
    env = setting("DPKIT_REGISTRY")
    if env:
        return Path(env).expanduser()
    root = repo_root()
    if root is None:
        raise RegistryError(
            "data/registry.yaml not found next to the dpkit package; install dpkit in editable mode "
            "(pip install -e .) or point DPKIT_REGISTRY at a copy of data/registry.yaml"
        )
    return root / "data" / "registry.yaml"


def _variant(role: str, v: Mapping[str, Any]) -> FileVariant:
    sha = str(v["sha256"]).lower()
    if not _SHA256.match(sha):
        raise ValueError(f"file {role!r}: sha256 {v['sha256']!r} is not 64 hexadecimal digits")
    return FileVariant(size=int(v["size"]), sha256=sha, note=str(v.get("note", "")))


def _file(role: str, f: Mapping[str, Any]) -> FileSpec:
    return FileSpec(
        role=str(role),
        name=str(f["name"]),
        url=f.get("url"),
        optional=bool(f.get("optional", False)),
        rows=None if f.get("rows") is None else int(f["rows"]),
        variants=tuple(_variant(role, v) for v in (f.get("variants") or ())),
        note=str(f.get("note", "")).strip(),
    )


def _public_steps(e: Mapping[str, Any]) -> dict[str, str]:
    steps = {str(k): " ".join(str(v).split()) for k, v in (e.get("public_steps") or {}).items()}
    unknown = sorted(set(steps) - set(PUBLIC_STEPS))
    if unknown:
        raise ValueError(f"public_steps names unknown step(s) {unknown}; known: {list(PUBLIC_STEPS)}")
    if any(not why for why in steps.values()):
        raise ValueError("every public_steps entry needs the public reference that justifies it")
    return steps


def _parse_entry(code: str, e: Mapping[str, Any], path: str) -> DatasetSpec:
    try:
        b = e.get("bounds")
        thesis = e.get("thesis") or {}
        return DatasetSpec(
            code=code,
            title=str(e["title"]),
            recipe=str(e["recipe"]),
            uci_id=e.get("uci_id"),
            page=e.get("page"),
            archive=e.get("archive"),
            archive_prefix=str(e.get("archive_prefix", "")),
            citation=str(e.get("citation", "")),
            licence=str(e.get("licence", "")),
            thesis_n=thesis.get("n"),
            thesis_d=thesis.get("d"),
            files=tuple(_file(role, f) for role, f in (e.get("files") or {}).items()),
            preprocessing=" ".join(str(e.get("preprocessing", "")).split()),
            public_bounds=None if b is None else (float(b["lower"]), float(b["upper"])),
            bounds_reference="" if b is None else " ".join(str(b.get("reference", "")).split()),
            public_steps=_public_steps(e),
            synthetic=bool(e.get("synthetic", False)),
            unavailable_offline=" ".join(str(e.get("unavailable_offline") or "").split()),
            raw=dict(e),
        )
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise RegistryError(f"registry entry {code!r} in {path} is malformed ({type(exc).__name__}: {exc})") from exc


@functools.lru_cache(maxsize=4)
def _load_registry_cached(path: str, mtime_ns: int) -> dict[str, DatasetSpec]:
    import yaml

    try:
        with open(path, encoding="utf-8") as fh:
            doc = yaml.safe_load(fh)
    except yaml.YAMLError as exc:
        raise RegistryError(f"registry file {path} is not valid YAML: {' '.join(str(exc).split())}") from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise RegistryError(f"registry file {path} cannot be read ({type(exc).__name__}: {exc})") from exc
    if not isinstance(doc, dict) or not isinstance(doc.get("datasets"), dict):
        raise RegistryError(f"registry file {path}: expected a mapping with a 'datasets' key")
    for code, e in doc["datasets"].items():
        if not isinstance(e, dict):
            raise RegistryError(f"registry file {path}: entry {code!r} is not a mapping")
    return {str(code): _parse_entry(str(code), e, path) for code, e in doc["datasets"].items()}


def load_registry() -> dict[str, DatasetSpec]:
    """All registry entries by code (cached per file modification time)."""
    p = registry_path()
    if not p.is_file():
        via = " (from DPKIT_REGISTRY)" if setting("DPKIT_REGISTRY") else ""
        raise RegistryError(f"registry file {p}{via} does not exist or is not a file")
    return _load_registry_cached(str(p), p.stat().st_mtime_ns)


def get_spec(name: str) -> DatasetSpec:
    """The registry entry for ``name`` (case-insensitive), or :class:`UnknownDatasetError` listing the valid names."""
    if not isinstance(name, str):
        raise TypeError(f"name must be a str; got {type(name).__name__}")
    reg = load_registry()
    for code, spec in reg.items():
        if code.lower() == name.strip().lower():
            return spec
    raise UnknownDatasetError(
        f"unknown data set {name!r}; known: {', '.join(reg)} (registry: {registry_path()}). "
        "To add one, see data/README.md; for your own data, pass a spec file's path (docs/guide/own-data.md)."
    )
