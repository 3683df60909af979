"""The six data sets of the thesis's Table 3.1 (plus a seeded ``mock``), loaded with provenance.

>>> from dpkit.data import load
>>> ds = load("CTG")            # doctest: +SKIP
>>> ds.X.shape, ds.provenance["bounds_source"]   # doctest: +SKIP
((2126, 28), 'data')

Every data set is described in ``data/registry.yaml`` (UCI page, official URLs, expected files with
sizes and sha256, licence CC BY 4.0, the recipe, the thesis's (n, d), public bounds). :func:`load`
finds the raw files (explicit ``path``; ``$DPKIT_DATA_DIR``; the repo's gitignored ``data/raw/``;
``shared/data/raw/``; else a verified download, see :mod:`dpkit.data.files`), verifies their
checksums on every call (hashes cached per file size and mtime), parses them strictly, and applies
the Table 3.1 steps (thesis Sec 3.1): keep continuous attributes, drop rows with missing values,
drop constant columns, rescale every attribute to [-1, 1]. WDBC also comes from scikit-learn's
bundled copy, so it works with no files at all.

Rescaling bounds are a release about the data when taken from the data (the thesis uses each
attribute's own min/max). :func:`load` uses PUBLIC bounds from the registry where the attribute
documentation gives them (CRM: [0, 1]; mock: [-1, 1]); otherwise it takes min/max from the data,
emits one :class:`~dpkit.core.exceptions.PrivacyLeakWarning` and records ``bounds_source="data"`` in the
provenance.
"""
from __future__ import annotations

import functools
import os
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

import numpy as np

from dpkit.core.exceptions import PrivacyLeakWarning
from dpkit.core.rng import RNGLike, resolve_rng
from dpkit.core.validation import check_positive_int
from dpkit.data.errors import (
    ChecksumError,
    DataError,
    DataNotFoundError,
    MalformedDataError,
    RegistryError,
    UnknownDatasetError,
)
from dpkit.data.files import FoundFile, fetch as _fetch_files, find_file, missing_message, search_locations, verify_file
from dpkit.data.recipes import Table, mock_table, parse, sklearn_wdbc
from dpkit.data.registry import DatasetSpec, get_spec, load_registry, registry_path

__all__ = [
    "Dataset",
    "load",
    "list_datasets",
    "dataset_info",
    "fetch",
    "status",
    "table_3_1",
    "rescale",
    "DataError",
    "UnknownDatasetError",
    "DataNotFoundError",
    "ChecksumError",
    "MalformedDataError",
    "RegistryError",
]

SKLEARN_SOURCE = "scikit-learn bundled copy"


@dataclass(frozen=True, kw_only=True, repr=False, eq=False)
class Dataset:
    """A loaded data set, ready for the mechanisms: ``X`` in [-1, 1]^d.

    Attributes
    ----------
    name : str
        Registry code (``"CRM"``, ..., ``"mock"``).
    X : ndarray of shape (n, d), float64, read-only
        The preprocessed data rescaled to [-1, 1]^d (thesis Sec 3.1, Table 3.1).
    columns : tuple of str
        Column names of ``X``.
    raw_shape : (int, int)
        Rows x fields of the raw file as read, before preprocessing.
    bounds : ndarray of shape (d, 2)
        ``[lower, upper]`` per column, in original units, used for the rescaling
        ``x -> 2 (x - lower) / (upper - lower) - 1``.
    bounds_source : {"public", "data", "user"}
        Where the bounds came from; ``"data"`` means the min/max of the private data (a
        :class:`PrivacyLeakWarning` was emitted).
    provenance : dict
        Files (path, sha256, where found, verified?), source, rows/columns dropped and why,
        subsample size and seed, bounds source, notes.
    thesis_shape : (int, int) or None
        (n, d) printed in Table 3.1.
    """

    name: str
    title: str
    X: np.ndarray
    columns: tuple[str, ...]
    raw_shape: tuple[int, int]
    bounds: np.ndarray
    bounds_source: str
    provenance: Mapping[str, Any] = field(default_factory=dict)
    thesis_shape: tuple[int, int] | None = None

    @property
    def n(self) -> int:
        return int(self.X.shape[0])

    @property
    def d(self) -> int:
        return int(self.X.shape[1])

    @property
    def shape(self) -> tuple[int, int]:
        """(n, d) after preprocessing."""
        return (self.n, self.d)

    @property
    def matches_thesis(self) -> bool | None:
        """Whether ``shape`` equals Table 3.1's (n, d) (None for ``mock``)."""
        return None if self.thesis_shape is None else self.shape == tuple(self.thesis_shape)

    @property
    def X_original(self) -> np.ndarray:
        """The preprocessed data in original units (inverse of the rescaling; clipped values stay clipped)."""
        return self.to_original(self.X)

    def to_original(self, Z: np.ndarray) -> np.ndarray:
        """Map points of [-1, 1]^d (e.g. a synthetic database) back to original units."""
        Z = np.asarray(Z, dtype=np.float64)
        lo, hi = self.bounds[:, 0], self.bounds[:, 1]
        return lo + (Z + 1.0) * 0.5 * (hi - lo)

    def summary(self) -> dict[str, Any]:
        """A JSON-friendly one-line description (shape vs thesis, source, bounds source)."""
        return {
            "name": self.name,
            "n": self.n,
            "d": self.d,
            "thesis_n": None if self.thesis_shape is None else self.thesis_shape[0],
            "thesis_d": None if self.thesis_shape is None else self.thesis_shape[1],
            "raw_shape": list(self.raw_shape),
            "source": self.provenance.get("source"),
            "bounds_source": self.bounds_source,
        }

    def __repr__(self) -> str:
        return (
            f"Dataset({self.name!r}, n={self.n}, d={self.d}, raw_shape={self.raw_shape}, "
            f"thesis_shape={self.thesis_shape}, bounds_source={self.bounds_source!r}, "
            f"source={self.provenance.get('source')!r})"
        )


def rescale(values: np.ndarray, lower: np.ndarray, upper: np.ndarray) -> tuple[np.ndarray, int]:
    """Rescale columns from ``[lower, upper]`` to [-1, 1], clipping values outside; return (X, #clipped).

    Requires ``upper > lower`` for every column (degenerate columns are dropped before).
    """
    v = np.asarray(values, dtype=np.float64)
    lo = np.broadcast_to(np.asarray(lower, dtype=np.float64), (v.shape[1],))
    hi = np.broadcast_to(np.asarray(upper, dtype=np.float64), (v.shape[1],))
    if not np.all(hi > lo):
        bad = np.flatnonzero(~(hi > lo))
        raise ValueError(f"bounds must satisfy upper > lower for every column; violated at columns {bad.tolist()}")
    outside = (v < lo) | (v > hi)
    X = 2.0 * (np.clip(v, lo, hi) - lo) / (hi - lo) - 1.0
    X = np.ascontiguousarray(np.clip(X, -1.0, 1.0))  # clip: rounding; C order for the mechanisms
    return X, int(outside.sum())


def list_datasets() -> list[str]:
    """Registry codes, in registry order (``["CRM", "CSN", "CTG", "PAM", "PKS", "WDBC", "mock"]``)."""
    return list(load_registry())


def dataset_info(name: str) -> DatasetSpec:
    """The registry entry of ``name`` (UCI id, page, files, recipe, thesis shape, public bounds)."""
    return get_spec(name)


def fetch(
    name: str,
    *,
    dest: str | os.PathLike | None = None,
    progress: bool = False,
    include_optional: bool = True,
    missing_only: bool = True,
):
    """Download ``name``'s files from UCI into ``dest`` (default ``$DPKIT_DATA_DIR`` or ``data/raw``), verified.

    Each file is checked (registry size and sha256, or a full strict parse for the CSN training
    file, which has no published checksum) in a temporary folder and only then renamed into place.
    With ``missing_only`` (default) files already found in a search location are skipped.
    Returns the list of installed :class:`~dpkit.data.files.FoundFile`. Offline this raises
    :class:`DataNotFoundError` with what to download and where to put it.
    """
    spec = get_spec(name)
    if spec.synthetic:
        return []
    roles = [f.role for f in spec.files if (include_optional or not f.optional)
             and not (missing_only and find_file(spec.code, f) is not None)]
    if not roles:
        return []
    return _fetch_files(spec, roles=roles, dest=dest, progress=progress, structure_check=_structure_check(spec))


def _structure_check(spec: DatasetSpec):
    """A full strict parse of a downloaded file that has no registry checksum (expects the registry's row count)."""

    def check(fs, p: Path) -> None:
        parse(spec, {fs.role: p}, {fs.role: True})

    return check


# --------------------------------------------------------------------------- file resolution


def _downloads_allowed(download: bool | None) -> bool:
    if download is not None:
        return bool(download)
    return os.environ.get("DPKIT_OFFLINE", "").strip().lower() not in ("1", "true", "yes")


def _roles_for(spec: DatasetSpec, subjects: list[int] | None) -> list[str]:
    if spec.recipe == "pam":
        roles = [f.role for f in spec.files if f.role.startswith("subject")]
        if subjects is not None:
            want = [f"subject{int(s)}" for s in subjects]
            unknown = [w for w in want if w not in roles]
            if unknown or not want:
                raise ValueError(f"subjects must be a non-empty subset of {[int(r[7:]) for r in roles]}; got {subjects!r}")
            roles = want
        return roles
    if spec.recipe == "csn":
        return ["train", "test"]
    return [f.role for f in spec.files if not f.optional]


def _role_of_explicit_file(spec: DatasetSpec, p: Path, roles: list[str]) -> str:
    for f in spec.files:
        if f.role in roles and Path(f.name).name == p.name:
            return f.role
    return next(f.role for f in spec.files if f.role in roles and not f.optional)


def _locate(spec: DatasetSpec, roles: list[str], path, download: bool | None) -> dict[str, FoundFile]:
    explicit_file = None
    if path is not None:
        p = Path(path).expanduser()
        if not p.exists():
            raise DataNotFoundError(
                f"[{spec.code}] path argument {p} does not exist; pass the data file or a folder holding it "
                f"(expected file(s): {', '.join(spec.file(r).name for r in roles)})"
            )
        if p.is_file():
            explicit_file = _role_of_explicit_file(spec, p, roles)
            if spec.recipe == "csn":
                roles = [explicit_file]  # an explicit CSN file is used alone (never mixed with a train file found elsewhere)
    found: dict[str, FoundFile] = {}
    for role in roles:
        fs = spec.file(role)
        hit = find_file(spec.code, fs, path=path, explicit_role=(role == explicit_file))
        if hit is not None:
            found[role] = hit
    if spec.recipe == "csn":
        required = [] if ("train" in found or "test" in found) else ["test"]
    else:
        required = [r for r in roles if r not in found]
    missing = [r for r in required if r not in found]
    if missing:
        specs = [spec.file(r) for r in missing]
        if path is not None:
            raise DataNotFoundError(missing_message(spec, specs, path=path, reason="not attempted: an explicit path was given"))
        if not _downloads_allowed(download):
            raise DataNotFoundError(missing_message(spec, specs, reason="downloads disabled (download=False or DPKIT_OFFLINE=1)"))
        for ff in _fetch_files(spec, roles=missing, structure_check=_structure_check(spec)):
            found[ff.spec.role] = ff
    if spec.recipe == "csn" and "train" not in found and download is True and path is None:
        try:  # optional file, no published checksum: only on explicit request
            for ff in _fetch_files(spec, roles=["train"], structure_check=_structure_check(spec)):
                found[ff.spec.role] = ff
        except DataNotFoundError:
            pass  # offline: the test split stands in (stated in the provenance notes)
    return found


def _verify(spec: DatasetSpec, found: dict[str, FoundFile], verify: bool) -> dict[str, FoundFile]:
    out = {}
    for role, ff in found.items():
        if verify:
            sha, variant = verify_file(spec.code, ff.spec, ff.path)
        else:
            from dpkit.data.files import sha256_file

            sha, variant = sha256_file(ff.path), None
        out[role] = FoundFile(spec=ff.spec, path=ff.path, found_in=ff.found_in, sha256=sha, variant=variant, verified=variant is not None)
    return out


@functools.lru_cache(maxsize=16)
def _parse_cached(code: str, registry_key: tuple, file_key: tuple) -> Table:
    spec = get_spec(code)
    files = {role: Path(p) for role, p, _sha, _chk in file_key}
    checked = {role: chk for role, _p, _sha, chk in file_key}
    return parse(spec, files, checked)


def _registry_key() -> tuple:
    p = registry_path()
    return (str(p), p.stat().st_mtime_ns)


# --------------------------------------------------------------------------- load


def _resolve_bounds(spec: DatasetSpec, bounds, values: np.ndarray, columns: tuple[str, ...]):
    """Return (lower, upper, source, reference) arrays for the kept columns."""
    d = values.shape[1]
    if isinstance(bounds, str):
        if bounds not in ("registry", "data"):
            raise ValueError(f"bounds must be 'registry', 'data', a (lower, upper) pair or a dict column -> (lower, upper); got {bounds!r}")
        if bounds == "registry" and spec.public_bounds is not None:
            lo, hi = spec.public_bounds
            return np.full(d, lo), np.full(d, hi), "public", spec.bounds_reference
        lo, hi = values.min(axis=0), values.max(axis=0)
        why = "bounds='data' requested" if bounds == "data" else "the registry has no documented public bounds"
        return lo, hi, "data", f"per-column min/max of the loaded data ({why})"
    if isinstance(bounds, Mapping):
        missing = [c for c in columns if c not in bounds]
        if missing:
            raise ValueError(f"bounds dict lacks column(s) {missing}")
        lo = np.array([float(bounds[c][0]) for c in columns])
        hi = np.array([float(bounds[c][1]) for c in columns])
    else:
        try:
            lo_, hi_ = bounds
        except (TypeError, ValueError):
            raise ValueError(f"bounds must be 'registry', 'data', a (lower, upper) pair or a dict; got {bounds!r}") from None
        lo = np.broadcast_to(np.asarray(lo_, dtype=np.float64), (d,)).copy()
        hi = np.broadcast_to(np.asarray(hi_, dtype=np.float64), (d,)).copy()
    if not (np.all(np.isfinite(lo)) and np.all(np.isfinite(hi)) and np.all(hi > lo)):
        raise ValueError("user bounds must be finite with upper > lower for every column")
    return lo, hi, "user", "bounds passed by the caller (treated as public)"


def load(
    name: str,
    *,
    path: str | os.PathLike | None = None,
    bounds: str | tuple | Mapping[str, tuple[float, float]] = "registry",
    n: int | None = None,
    d: int | None = None,
    rng: RNGLike = 0,
    verify: bool = True,
    download: bool | None = None,
    source: str | None = None,
    subjects: list[int] | None = None,
) -> Dataset:
    """Load a Table 3.1 data set (or ``mock``) rescaled to [-1, 1]^d, with provenance.

    Parameters
    ----------
    name : str
        ``"CRM"``, ``"CSN"``, ``"CTG"``, ``"PAM"``, ``"PKS"``, ``"WDBC"`` or ``"mock"`` (case-insensitive).
    path : path, optional
        A raw data file or a folder holding it (searched first).
    bounds : "registry", "data", (lower, upper) or dict column -> (lower, upper)
        ``"registry"`` (default): documented public bounds where the registry has them, else the
        data's own min/max (thesis Sec 3.1) with a :class:`PrivacyLeakWarning`. ``"data"``: always
        the data's min/max (warns). A pair or dict: public bounds from the caller. Values outside
        public/user bounds are clipped (count in ``provenance["clipped_values"]``).
    n : int, optional
        Seeded subsample size (without replacement, original order kept). Default: the thesis's
        recipe (all rows; CSN: 100000 of the training file when present). For ``mock``: rows (1000).
    d : int, optional
        ``mock`` only: columns (default 5).
    rng : int, Generator, SeedSequence or None
        Seed of subsamples and of ``mock`` (default 0, so loads are reproducible).
    verify : bool
        Check sizes and sha256 against the registry (default). ``False`` loads an edited copy,
        records its sha256 and says "not verified" in the provenance.
    download : bool, optional
        Download missing required files from UCI (default: yes unless ``DPKIT_OFFLINE=1``).
        The CSN training file (optional, no published checksum) is downloaded only with
        ``download=True``.
    source : {"files", "sklearn"}, optional
        WDBC only: force the raw file or scikit-learn's bundled copy. Default: files if found,
        else the bundled copy.
    subjects : list of int, optional
        PAM only: which Protocol subject files (101..109) to use (default all nine).

    Returns
    -------
    Dataset

    Raises
    ------
    UnknownDatasetError, DataNotFoundError, ChecksumError, MalformedDataError
        Each names the file and the fix; nothing is silently skipped or half-loaded.
    """
    spec = get_spec(name)
    if n is not None:
        n = check_positive_int(n, name="n")
    if d is not None:
        d = check_positive_int(d, name="d")
    if d is not None and not spec.synthetic:
        raise ValueError(f"d is only for the mock data set; {spec.code} has a fixed recipe")
    if source is not None and (spec.code != "WDBC" or source not in ("files", "sklearn")):
        raise ValueError(f"source must be None, or 'files'/'sklearn' for WDBC; got {source!r} for {spec.code}")
    notes: list[str] = []
    prov: dict[str, Any] = {
        "dataset": spec.code,
        "title": spec.title,
        "uci_id": spec.uci_id,
        "page": spec.page,
        "licence": spec.licence,
        "citation": spec.citation,
        "recipe": spec.preprocessing,
        "registry": str(registry_path()),
        "files": [],
    }
    gen = None
    seed_repr = rng if isinstance(rng, (int, np.integer)) and not isinstance(rng, bool) else (None if rng is None else type(rng).__name__)

    if spec.synthetic:
        defaults = spec.raw.get("defaults") or {}
        nn = int(n if n is not None else defaults.get("n", 1000))
        dd = int(d if d is not None else defaults.get("d", 5))
        gen = resolve_rng(rng)
        table = mock_table(nn, dd, gen)
        prov.update(source="synthetic", seed=seed_repr)
        n_for_subsample = None
    else:
        wdbc_sklearn = False
        if spec.code == "WDBC" and source != "files":
            # the bundled copy is the fallback when no file is found (never for a corrupt one, nor with path=)
            wdbc_sklearn = source == "sklearn" or (path is None and find_file(spec.code, spec.file("data")) is None)
        if wdbc_sklearn:
            table, msha = sklearn_wdbc(spec)
            want = spec.raw.get("matrix_sha256")
            if verify and msha != want:
                raise ChecksumError(
                    f"[WDBC] scikit-learn's bundled breast_cancer data (matrix sha256 {msha}) differs from UCI's "
                    f"wdbc.data (registry {want}); place wdbc.data ({spec.file('data').url}) in "
                    f"data/raw/WDBC/ or $DPKIT_DATA_DIR/WDBC/ instead."
                )
            import sklearn

            prov.update(source=SKLEARN_SOURCE)
            prov["files"].append(
                {"role": "data", "file": f"sklearn/datasets/data/breast_cancer.csv (scikit-learn {sklearn.__version__})",
                 "sha256_matrix": msha, "found_in": SKLEARN_SOURCE, "verified": bool(verify and msha == want)}
            )
            notes.append("no wdbc.data found in the search locations; used scikit-learn's bundled copy, "
                         "whose 569 x 30 feature matrix is checked against the UCI file's hash")
        else:
            roles = _roles_for(spec, subjects)
            found = _locate(spec, roles, path, download)
            found = _verify(spec, found, verify)
            use = dict(found)
            if spec.recipe == "csn":
                if "train" in found:
                    use = {"train": found["train"]}
                    notes.append("training file census-income.data.gz present: thesis recipe, seeded subsample of it")
                else:
                    use = {"test": found["test"]}
                    if n is None:
                        notes.append(
                            "training file census-income.data.gz not found: the whole 99,762-row TEST split stands in; "
                            "the thesis's n = 100000 (a subsample of the 199,523-row training file) cannot be reached from it"
                        )
            file_key = tuple(sorted((r, str(ff.path), ff.sha256, bool(ff.verified)) for r, ff in use.items()))
            table = _parse_cached(spec.code, _registry_key(), file_key)
            for r, ff in use.items():
                prov["files"].append(
                    {"role": r, "file": str(ff.path), "name": ff.spec.name, "sha256": ff.sha256, "found_in": ff.found_in,
                     "verified": ff.verified,
                     "check": ("sha256 + size match registry" + (f" ({ff.variant.note})" if ff.variant and ff.variant.note else ""))
                     if ff.verified else ("NOT verified (verify=False)" if not verify else "no published checksum; checked by structure (row and field counts)")}
                )
            prov["source"] = "files (" + ", ".join(sorted({ff.found_in for ff in use.values()})) + ")"
        n_for_subsample = n
        if spec.recipe == "csn" and n is None and prov["files"] and prov["files"][0]["role"] == "train":
            n_for_subsample = spec.thesis_n

    # ---- Table 3.1 steps: drop rows with missing values, subsample, drop constant columns, rescale
    values = np.asarray(table.values)
    columns = tuple(table.columns)
    nan_rows = np.isnan(values).any(axis=1)
    if nan_rows.any():
        values = values[~nan_rows]
        notes.append(f"dropped {int(nan_rows.sum())} row(s) with a missing value")
    prov["rows_dropped_missing"] = int(nan_rows.sum())
    prov["subsample"] = None
    if not spec.synthetic and n_for_subsample is not None:
        N = values.shape[0]
        if n_for_subsample > N:
            raise ValueError(f"n = {n_for_subsample} exceeds the {N} rows available for {spec.code}")
        if n_for_subsample < N:
            gen = resolve_rng(rng)
            idx = np.sort(gen.choice(N, size=int(n_for_subsample), replace=False))
            values = values[idx]
            prov["subsample"] = {"n": int(n_for_subsample), "of": int(N), "seed": seed_repr,
                                 "method": "uniform without replacement (numpy Generator.choice), original order kept"}
            notes.append(f"seeded subsample of {n_for_subsample} of {N} rows (seed {seed_repr})")
    if values.shape[0] < 2:
        raise MalformedDataError(f"[{spec.code}] fewer than 2 rows left after preprocessing; check the file(s) {[f.get('file') for f in prov['files']]}")
    const = values.min(axis=0) == values.max(axis=0)
    dropped_const = [c for c, k in zip(columns, const) if k]
    if dropped_const:
        values = values[:, ~const]
        columns = tuple(c for c, k in zip(columns, const) if not k)
        notes.append(f"dropped constant column(s) {dropped_const}")
    prov["columns_dropped_constant"] = dropped_const
    prov["columns_excluded"] = dict(table.excluded)
    lo, hi, bsrc, bref = _resolve_bounds(spec, bounds, values, columns)
    if bsrc == "data":
        warnings.warn(
            f"{spec.code}: rescaling bounds are the {bref}; this is a "
            "release about the data outside any privacy budget. Pass public bounds (bounds=(lower, upper)) "
            "or add them to data/registry.yaml to avoid it.",
            PrivacyLeakWarning,
            stacklevel=2,
        )
    X, clipped = rescale(values, lo, hi)
    X.setflags(write=False)
    B = np.column_stack([lo, hi]).astype(np.float64)
    B.setflags(write=False)
    notes.extend(table.notes)
    prov.update(
        bounds_source=bsrc,
        bounds_reference=bref,
        privacy_leak_warning=bsrc == "data",
        clipped_values=clipped,
        raw_shape=list(table.raw_shape),
        shape=[int(X.shape[0]), int(X.shape[1])],
        thesis_shape=None if spec.thesis_shape is None else list(spec.thesis_shape),
        notes=notes,
    )
    if spec.synthetic:
        prov.update(n=int(X.shape[0]), d=int(X.shape[1]))
    return Dataset(
        name=spec.code,
        title=spec.title,
        X=X,
        columns=columns,
        raw_shape=tuple(int(s) for s in table.raw_shape),
        bounds=B,
        bounds_source=bsrc,
        provenance=prov,
        thesis_shape=spec.thesis_shape,
    )


# --------------------------------------------------------------------------- status


def status(name: str, *, path=None, load_data: bool = True) -> dict[str, Any]:
    """Where each file of ``name`` is, whether its checksum is ok, and the loaded shape vs the thesis.

    Never raises for data problems: they are reported in ``"status"`` (``OK``, ``OK (n differs)``,
    ``MISSING``, ``BAD CHECKSUM``, ``MALFORMED``, ``ERROR``) and ``"message"``.
    """
    spec = get_spec(name)
    out: dict[str, Any] = {"name": spec.code, "title": spec.title, "thesis_shape": spec.thesis_shape, "files": [],
                           "shape": None, "source": None, "status": None, "message": ""}
    if spec.synthetic:
        ds = load(spec.code)
        out.update(shape=ds.shape, source="synthetic", status="OK")
        return out
    for f in spec.files:
        hit = find_file(spec.code, f, path=path)
        row = {"role": f.role, "name": f.name, "optional": f.optional, "found_in": None, "path": None, "checksum": "not found"}
        if hit is not None:
            row.update(found_in=hit.found_in, path=str(hit.path))
            try:
                _sha, variant = verify_file(spec.code, f, hit.path)
                row["checksum"] = "ok" if variant is not None else "no published checksum"
            except ChecksumError as exc:
                row["checksum"] = "MISMATCH"
                out["message"] = str(exc)
        out["files"].append(row)
    if not load_data:
        return out
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", PrivacyLeakWarning)
            ds = load(spec.code, path=path, download=False)
        out.update(shape=ds.shape, source=ds.provenance.get("source"))
        if ds.matches_thesis:
            out["status"] = "OK"
        elif spec.thesis_d == ds.d:
            out["status"] = "OK (n differs)"
            out["message"] = "; ".join(ds.provenance["notes"][:1])
        else:
            out["status"] = "SHAPE DIFFERS"
    except DataNotFoundError as exc:
        out.update(status="MISSING", message=str(exc))
    except ChecksumError as exc:
        out.update(status="BAD CHECKSUM", message=str(exc))
    except MalformedDataError as exc:
        out.update(status="MALFORMED", message=str(exc))
    except DataError as exc:
        out.update(status="ERROR", message=str(exc))
    return out


def table_3_1(names: list[str] | None = None, *, rng: RNGLike = 0, path=None) -> list[dict[str, Any]]:
    """Table 3.1 side by side: thesis (n, d) vs what loads here, with status and source.

    Data-derived bounds are computed silently here (only shapes are reported).
    """
    rows = []
    for code in names or [c for c in list_datasets() if not get_spec(c).synthetic]:
        spec = get_spec(code)
        row = {"code": spec.code, "data set": spec.title, "thesis_n": spec.thesis_n, "thesis_d": spec.thesis_d,
               "n": None, "d": None, "status": "", "source": "", "bounds": "", "note": ""}
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", PrivacyLeakWarning)
                ds = load(code, rng=rng, path=path, download=False)
            row.update(n=ds.n, d=ds.d, source=ds.provenance["source"], bounds=ds.bounds_source)
            if ds.matches_thesis:
                row["status"] = "match"
            elif ds.d == spec.thesis_d:
                row["status"] = "d matches, n differs"
                row["note"] = ds.provenance["notes"][0] if ds.provenance["notes"] else ""
            else:
                row["status"] = "shape differs"
        except DataError as exc:
            row["status"] = "unavailable (" + type(exc).__name__ + ")"
            row["note"] = str(exc).splitlines()[0]
        rows.append(row)
    return rows
