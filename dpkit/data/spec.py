"""Your own data: a spec file, a pandas DataFrame or an installed package's entry point, without editing dpkit.

A YAML *spec file*'s path works wherever a data set name does; :func:`from_dataframe` takes the same keys for a
DataFrame, :func:`register_dataset` names one for this process, and an installed package names its data sets in the
entry-point group ``dpkit.datasets``. The keys and a worked example of each: ``docs/guide/own-data.md``.

Privacy of the preprocessing (Dwork and Roth 2014, Sec 2.3): declared bounds are used as they are (values outside are
clipped with a :class:`~dpkit.data.errors.ClippingWarning`); a column without declared bounds is rescaled with the
data's own minimum and maximum, with a :class:`~dpkit.core.exceptions.PrivacyLeakWarning` naming it and
``bounds_source="data"`` in the provenance; rows dropped for a missing value are recorded and warned about.

Errors: nothing is silently dropped: a non-numeric column without an encoding, a missing value without a policy, a
missing column, a constant column without declared bounds, a row count other than the declared one, each is an error
naming the file, the column or the value.
"""
from __future__ import annotations

import dataclasses
import difflib
import hashlib
import importlib.metadata
import importlib.resources
import json
import os
import re
import tempfile
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from dpkit.core.exceptions import PrivacyLeakWarning
from dpkit.core.rng import RNGLike, resolve_rng
from dpkit.core.validation import check_int_in_range
from dpkit.data.dataset import Dataset
from dpkit.data.errors import (
    ChecksumError,
    ClippingWarning,
    DataError,
    DataNotFoundError,
    MalformedDataError,
    SpecError,
    UnknownDatasetError,
)
from dpkit.data.registry import load_registry
from dpkit.data.steps import rescale

__all__ = [
    "ENTRY_POINT_GROUP", "SPEC_KEYS", "FORMATS", "MIN_BOARD_ROWS", "MAX_BOARD_COLUMNS", "UserSpec", "read_spec",
    "spec_from_mapping", "from_dataframe", "register_dataset", "unregister_dataset", "user_datasets",
    "is_user_dataset", "resolve_user", "load_user", "check_board_shape", "is_spec_path", "quick_datasets",
    "data_fingerprint", "dataset_argument", "absolute_spec_paths", "DATA_PARAMETERS",
]

#: the entry-point group an installed package names its data sets in
ENTRY_POINT_GROUP = "dpkit.datasets"
#: the keys a spec may hold (any other is an error naming it)
SPEC_KEYS = ("name", "title", "citation", "path", "url", "package", "sha256", "format", "read", "columns", "bounds",
             "bounds_reference", "encodings", "missing", "rows")
#: file formats and their suffixes
FORMATS = {"csv": (".csv", ".csv.gz", ".txt", ".tsv", ".csv.bz2", ".csv.zip", ".csv.xz"), "parquet": (".parquet", ".pq"),
           "excel": (".xlsx", ".xls", ".xlsm", ".ods")}
#: pandas reader options a spec's ``read:`` may pass
READ_OPTIONS = {"csv": ("sep", "header", "names", "decimal", "comment", "skiprows", "na_values", "encoding"),
                "parquet": (), "excel": ("sheet", "header", "names", "skiprows", "na_values")}
#: the board's range (``make board``): the fewest rows, the most columns. 100 rows: below them a single row moves an
#: ε = 1 answer by more than 2/(nε) = 0.02, the size of the published board's larger errors, so every method's
#: ranking is its noise; 101 columns: the widest data set the board has run (CRM, Table 3.1)
MIN_BOARD_ROWS = 100
MAX_BOARD_COLUMNS = 101

_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_.-]{0,63}$")
_SHA256 = re.compile(r"^[0-9a-f]{64}$")
_SPEC_SUFFIXES = (".yaml", ".yml")
_MISSING = ("refuse", "drop_rows")


@dataclass(frozen=True, kw_only=True)
class UserSpec:
    """A checked spec of a data set from outside the package (see the module docstring for each key).

    ``origin`` says where it came from (``"spec file <path>"``, ``"DataFrame"``, ``"entry point <name>
    (<value>)"``); ``base`` is the folder a relative ``path`` is read from; ``frame`` the DataFrame of a data set given
    in memory; ``raw`` the keys as given (for the provenance).
    """

    name: str
    title: str = ""
    citation: str = ""
    path: str | None = None
    url: str | None = None
    package: str | None = None
    sha256: str | None = None
    format: str | None = None
    read: Mapping[str, Any] = field(default_factory=dict)
    columns: tuple[str, ...] | None = None
    bounds: Mapping[str, tuple[float, float]] = field(default_factory=dict)
    bounds_reference: str = ""
    encodings: Mapping[str, tuple[str, tuple[Any, ...]]] = field(default_factory=dict)
    missing: str | Mapping[str, Any] = "refuse"
    rows: int | None = None
    origin: str = ""
    base: Path | None = None
    spec_file: Path | None = None
    frame: Any = field(default=None, repr=False, compare=False)
    raw: Mapping[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @property
    def where(self) -> str:
        """Where this spec is, for messages (``spec file x.yaml``, ``DataFrame 'name'``, ...)."""
        return self.origin or f"data set {self.name!r}"


# ---- reading and checking a spec -------------------------------------------------------------------------------


def _fail(where: str, message: str) -> SpecError:
    return SpecError(f"{where}: {message}")


def _text(value: Any, key: str, where: str) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise _fail(where, f"{key} must be text; got {value!r}")
    return " ".join(value.split())


def _check_name(name: Any, where: str) -> str:
    if not isinstance(name, str) or not _NAME.match(name):
        raise _fail(where, f"name must be a letter followed by up to 63 letters, digits, '_', '-' or '.'; got {name!r}")
    for code in load_registry():
        if code.lower() == name.lower():
            raise _fail(where, f"name {name!r} collides with the registered data set {code!r} of data/registry.yaml; "
                               "choose another name")
    if name.lower().endswith(_SPEC_SUFFIXES):
        raise _fail(where, f"name {name!r} ends like a spec file; choose a name without {'/'.join(_SPEC_SUFFIXES)}")
    return name


def _bounds(value: Any, where: str) -> dict[str, tuple[float, float]]:
    if value is None:
        return {}
    if isinstance(value, (list, tuple)) and len(value) == 2 and not any(isinstance(v, (list, tuple)) for v in value):
        value = {"*": value}  # one pair for every column without bounds of its own
    if not isinstance(value, Mapping):
        raise _fail(where, f"bounds must be a mapping column -> [lower, upper] or one [lower, upper] for every column; "
                           f"got {value!r}")
    out = {}
    for col, pair in value.items():
        try:
            lo, hi = (float(x) for x in pair)
        except (TypeError, ValueError):
            raise _fail(where, f"bounds of column {col!r} must be [lower, upper] numbers; got {pair!r}") from None
        if not (np.isfinite(lo) and np.isfinite(hi) and hi > lo):
            raise _fail(where, f"bounds of column {col!r} must be finite with upper > lower; got [{lo:g}, {hi:g}]")
        out[str(col)] = (lo, hi)
    return out


def _encodings(value: Any, where: str) -> dict[str, tuple[str, tuple[Any, ...]]]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise _fail(where, f"encodings must be a mapping column -> {{ordinal: [levels]}} or {{one_hot: [levels]}}; "
                           f"got {value!r}")
    out = {}
    for col, enc in value.items():
        if not isinstance(enc, Mapping) or len(enc) != 1 or next(iter(enc)) not in ("ordinal", "one_hot"):
            raise _fail(where, f"encoding of column {col!r} must be {{ordinal: [levels]}} or {{one_hot: [levels]}}; "
                               f"got {enc!r}")
        kind, levels = next(iter(enc.items()))
        if not isinstance(levels, (list, tuple)) or len(levels) < 2 or len(set(map(repr, levels))) != len(levels):
            raise _fail(where, f"encoding of column {col!r}: {kind} needs a list of at least 2 distinct levels; "
                               f"got {levels!r}")
        out[str(col)] = (str(kind), tuple(levels))
    return out


def _missing(value: Any, where: str) -> str | dict[str, Any]:
    if value is None:
        return "refuse"
    if isinstance(value, str) and value in _MISSING:
        return value
    if isinstance(value, Mapping) and set(value) == {"fill"} and isinstance(value["fill"], Mapping) and value["fill"]:
        return {"fill": {str(k): v for k, v in value["fill"].items()}}
    raise _fail(where, f"missing must be 'refuse', 'drop_rows' or {{fill: {{column: value}}}}; got {value!r}")


def spec_from_mapping(doc: Mapping[str, Any], *, origin: str, base: Path | None = None, spec_file: Path | None = None,
                      frame: Any = None, name: str | None = None) -> UserSpec:
    """Check a spec given as a mapping (the keys of the module docstring); ``name`` overrides its ``name`` key.

    Raises
    ------
    SpecError
        An unknown key, a missing or colliding name, a malformed value: the message names ``origin`` and the key.
    """
    if not isinstance(doc, Mapping):
        raise _fail(origin, f"a spec must be a mapping of {', '.join(SPEC_KEYS)}; got {type(doc).__name__}")
    unknown = [k for k in doc if k not in SPEC_KEYS]
    if unknown:
        hints = [f"{k!r}" + (f" (did you mean {m[0]!r}?)" if (m := difflib.get_close_matches(str(k), SPEC_KEYS, n=1))
                            else "") for k in unknown]
        raise _fail(origin, f"unknown key(s) {', '.join(hints)}; a spec holds {', '.join(SPEC_KEYS)}")
    where = origin
    nm = _check_name(name if name is not None else doc.get("name"), where)
    places = [k for k in ("path", "url") if doc.get(k) is not None]
    if frame is None:
        if not places:
            raise _fail(where, "name the data: path (a local file, relative to its spec file), url (with sha256) or "
                               "package with path (a file installed with a Python package)")
        if len(places) > 1:
            raise _fail(where, "give either path or url, not both")
        if doc.get("package") is not None and "path" not in places:
            raise _fail(where, "package needs path: the file's name inside the package")
    elif places or doc.get("package") is not None:
        raise _fail(where, "a DataFrame spec takes no path, url or package")
    sha = doc.get("sha256")
    if sha is not None:
        sha = str(sha).lower()
        if not _SHA256.match(sha):
            raise _fail(where, f"sha256 must be 64 hexadecimal digits; got {doc['sha256']!r}")
    if doc.get("url") is not None and sha is None:
        raise _fail(where, "url needs sha256: a download is only used once its checksum matches")
    fmt = doc.get("format")
    if fmt is not None and fmt not in FORMATS:
        raise _fail(where, f"format must be one of {', '.join(FORMATS)}; got {fmt!r}")
    read = doc.get("read") or {}
    if not isinstance(read, Mapping):
        raise _fail(where, f"read must be a mapping of reader options; got {read!r}")
    cols = doc.get("columns")
    if cols is not None:
        if not isinstance(cols, (list, tuple)) or not cols or not all(isinstance(c, (str, int)) for c in cols):
            raise _fail(where, f"columns must be a non-empty list of column names; got {cols!r}")
        cols = tuple(str(c) for c in cols)
        dup = sorted({c for c in cols if cols.count(c) > 1})
        if dup:
            raise _fail(where, f"columns repeats {dup}")
    rows = doc.get("rows")
    if rows is not None and (isinstance(rows, bool) or not isinstance(rows, int) or rows < 1):
        raise _fail(where, f"rows must be a positive integer (the expected number of rows); got {rows!r}")
    bounds, enc = _bounds(doc.get("bounds"), where), _encodings(doc.get("encodings"), where)
    both = sorted(set(bounds) & set(enc))
    if both:
        raise _fail(where, f"column(s) {both} have both bounds and an encoding; an encoded column's bounds follow from "
                           "its levels")
    if cols is not None:
        for key, named in (("bounds", bounds), ("encodings", enc)):
            stray = [c for c in named if c not in cols and c != "*"]
            if stray:
                raise _fail(where, f"{key} names column(s) {stray} that are not in columns {list(cols)}")
    raw = {k: v for k, v in doc.items()}
    return UserSpec(name=nm, title=_text(doc.get("title"), "title", where) or nm,
                    citation=_text(doc.get("citation"), "citation", where),
                    path=None if doc.get("path") is None else str(doc["path"]),
                    url=None if doc.get("url") is None else str(doc["url"]),
                    package=None if doc.get("package") is None else str(doc["package"]), sha256=sha, format=fmt,
                    read=dict(read), columns=cols, bounds=bounds, bounds_reference=_text(doc.get("bounds_reference"),
                                                                                       "bounds_reference", where),
                    encodings=enc, missing=_missing(doc.get("missing"), where), rows=rows, origin=origin, base=base,
                    spec_file=spec_file, frame=frame, raw=raw)


def is_spec_path(name: Any) -> bool:
    """Whether ``name`` is meant as a spec file (a str or path ending in .yaml or .yml)."""
    return isinstance(name, (str, os.PathLike)) and os.fspath(name).strip().lower().endswith(_SPEC_SUFFIXES)


def read_spec(path: str | os.PathLike) -> UserSpec:
    """Read and check a spec file.

    Raises
    ------
    DataNotFoundError
        No such spec file.
    SpecError
        It is not valid YAML, or a key is unknown or malformed (named with the file).
    """
    import yaml

    p = Path(path).expanduser().resolve()
    if not p.is_file():
        raise DataNotFoundError(f"spec file {p} does not exist" + (" (it is a folder)" if p.is_dir() else ""))
    try:
        doc = yaml.safe_load(p.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        raise SpecError(f"spec file {p} is not valid YAML: {' '.join(str(exc).split())}") from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise SpecError(f"spec file {p} cannot be read ({type(exc).__name__}: {exc})") from exc
    return spec_from_mapping(doc if doc is not None else {}, origin=f"spec file {p}", base=p.parent, spec_file=p)


# ---- names: registered in this process, entry points -----------------------------------------------------------

_REGISTERED: dict[str, UserSpec] = {}


def register_dataset(name: str, data: Any, **spec: Any) -> UserSpec:
    """Give a DataFrame, a spec mapping or a spec file a name that :func:`dpkit.data.load` knows in this process.

    Parameters
    ----------
    name : str
        Not a registry code nor an entry point's name (case-insensitive).
    data : pandas.DataFrame, mapping or path
        The data (with ``spec`` keys: ``columns``, ``bounds``, ``encodings``, ``missing``, ``rows``, ``citation``,
        ...) or a spec.
    **spec
        Spec keys for a DataFrame.

    Raises
    ------
    SpecError
        The name collides with a registered data set, an entry point or an earlier registration; a malformed spec.
    """
    where = f"register_dataset({name!r})"
    _check_name(name, where)
    taken = [n for n in (*_REGISTERED, *_entry_points()) if n.lower() == str(name).lower()]
    if taken:
        raise _fail(where, f"name {name!r} is already taken by {_owner(taken[0])}; unregister_dataset() it first or "
                           "choose another name")
    user = _user_spec(data, name=name, origin=f"DataFrame {name!r} (register_dataset)", spec=spec)
    _REGISTERED[name] = user
    return user


def unregister_dataset(name: str) -> None:
    """Forget a name given by :func:`register_dataset` (an unknown name is an error naming it)."""
    if name not in _REGISTERED:
        raise UnknownDatasetError(f"{name!r} was not registered with register_dataset; registered: {list(_REGISTERED)}")
    del _REGISTERED[name]


def _owner(name: str) -> str:
    return "register_dataset" if name in _REGISTERED else f"entry point {name!r} of group {ENTRY_POINT_GROUP}"


def _entry_points() -> dict[str, Any]:
    return {ep.name: ep for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP)}


def user_datasets() -> list[str]:
    """The names registered in this process and those of the installed packages' entry points."""
    return [*_REGISTERED, *(n for n in _entry_points() if n not in _REGISTERED)]


def _user_spec(data: Any, *, name: str | None, origin: str, spec: Mapping[str, Any]) -> UserSpec:
    import pandas as pd

    if isinstance(data, pd.DataFrame):
        return spec_from_mapping({**spec, "name": name} if name is not None else spec, origin=origin, frame=data)
    if spec:
        raise _fail(origin, f"spec keys {sorted(spec)} are for a DataFrame; put them into its spec")
    if isinstance(data, (str, os.PathLike)):
        user = read_spec(data)
    elif isinstance(data, Mapping):
        user = spec_from_mapping(data, origin=origin, base=None)
    else:
        raise _fail(origin, f"expected a pandas DataFrame, a spec mapping or a spec file's path; got "
                            f"{type(data).__name__}")
    return user if name is None else dataclasses.replace(user, name=name)


def _from_entry_point(name: str, ep: Any) -> UserSpec:
    origin = f"entry point {name!r} ({ep.value}) of group {ENTRY_POINT_GROUP}"
    try:
        obj = ep.load()
        if callable(obj) and not isinstance(obj, (str, os.PathLike, Mapping)) and not hasattr(obj, "columns"):
            obj = obj()
    except SpecError:
        raise
    except Exception as exc:
        raise SpecError(f"{origin} cannot be loaded ({type(exc).__name__}: {exc})") from exc
    user = _user_spec(obj, name=None, origin=origin, spec={"name": name} if hasattr(obj, "columns") else {})
    if user.name.lower() != name.lower():
        user = dataclasses.replace(user, name=_check_name(name, origin))
    return dataclasses.replace(user, origin=origin)


def is_user_dataset(name: Any) -> bool:
    """Whether :func:`dpkit.data.load` reads ``name`` through this module (a spec path, a registered name, an entry
    point's name); a registry code is not (the registry comes first, so a name there can never be taken over)."""
    if is_spec_path(name):
        return True
    if not isinstance(name, str):
        return False
    if any(code.lower() == name.strip().lower() for code in load_registry()):
        return False
    return name in _REGISTERED or name in _entry_points()


_LOADED: dict[str, str] = {}


def dataset_argument(name: str) -> str:
    """What loads the data set called ``name`` again in another process: for a data set loaded from a spec file in
    this process, that file's path, else ``name`` itself (a registry code, an entry point's name). The widgets'
    data-set choice writes it into the commands and manifests they make (:func:`dpkit.outputs.widgets.as_datasets`).
    """
    return _LOADED.get(name, name)


#: notebook parameters that name data sets (:func:`absolute_spec_paths`)
DATA_PARAMETERS = ("DATASETS", "DATASET")


def absolute_spec_paths(parameters: Mapping[str, Any], base: str | os.PathLike) -> dict[str, Any]:
    """``parameters`` with every relative spec file path in ``DATASETS``/``DATASET`` made absolute from ``base``.

    A notebook runs in its own folder, so the batch runner resolves each spec file a manifest (``base``: its folder)
    or a ``-p`` (``base``: the current folder) names before the run, as it resolves a manifest's ``output``.
    """
    def fix(v: Any) -> Any:
        if is_spec_path(v) and not Path(os.fspath(v)).expanduser().is_absolute():
            return str((Path(base) / os.fspath(v)).resolve())
        return v

    out = dict(parameters)
    for key in DATA_PARAMETERS:
        if key in out:
            out[key] = [fix(v) for v in out[key]] if isinstance(out[key], list) else fix(out[key])
    return out


def quick_datasets(names: Any, *, default: str | Sequence[str] = "WDBC") -> list[Any]:
    """The data sets a QUICK notebook run keeps: ``default`` (one registry code or several) and your own data sets
    (spec paths, registered names, entry points) among ``names``, in their order; ``default`` (as a list) when there
    is none of them.

    >>> quick_datasets(["CRM", "WDBC"]), quick_datasets(["CRM"]), quick_datasets(["CRM", "my.yaml"])
    (['WDBC'], ['WDBC'], ['my.yaml'])
    >>> quick_datasets(["CTG", "my.yaml", "CRM"], default=("WDBC", "CTG")), quick_datasets(["CRM"], default=("WDBC", "CTG"))
    (['CTG', 'my.yaml'], ['WDBC', 'CTG'])
    """
    defaults = [default] if isinstance(default, str) else list(default)
    kept = [x for x in names if x in defaults or is_user_dataset(x)] if isinstance(names, (list, tuple)) else []
    return kept or defaults


def resolve_user(name: str | os.PathLike) -> UserSpec:
    """The checked spec of a spec path, a registered name or an entry point's name.

    Raises
    ------
    UnknownDatasetError, DataNotFoundError, SpecError
    """
    if is_spec_path(name):
        return read_spec(name)
    if name in _REGISTERED:
        return _REGISTERED[name]
    eps = _entry_points()
    if name in eps:
        return _from_entry_point(str(name), eps[name])
    raise UnknownDatasetError(f"unknown data set {name!r}: no spec file, no register_dataset name, no entry point of "
                              f"group {ENTRY_POINT_GROUP}")


def user_file_status(name: str | os.PathLike) -> dict[str, Any]:
    """The status of your own data set's file for ``python -m dpkit.data list`` (:func:`dpkit.data.status`), without
    downloading or parsing: ``name``, ``title``, ``origin`` (where its spec came from), ``files`` (one row: where the
    file was found, its path, its sha256 and ``checksum`` ``ok``/``MISMATCH``/``none declared``; a DataFrame's is the
    hash of its columns and values) and ``status`` ``None`` (``MISSING``, ``BAD CHECKSUM`` or ``ERROR`` with a
    ``message`` when the file is absent, differs from the declared sha256 or its spec is bad).
    """
    from dpkit.data.files import sha256_file

    out: dict[str, Any] = {"name": os.fspath(name), "title": "", "origin": "", "thesis_shape": None, "files": [],
                           "shape": None, "source": None, "status": None, "message": ""}
    try:
        user = resolve_user(name)
    except DataError as exc:
        out.update(status="ERROR", message=str(exc))
        return out
    out.update(name=user.name, title=user.title, origin=user.where)
    row: dict[str, Any] = {"role": "data", "name": Path(str(user.path or user.url or "")).name or "DataFrame",
                           "optional": False, "found_in": None, "path": None, "sha256": None, "checksum": "not found"}
    out["files"].append(row)
    if user.frame is not None:
        row.update(found_in="memory", sha256=_frame_sha256(user.frame), checksum="none declared")
        out["source"] = "memory"
        return out
    try:
        p, found_in = _locate(user, verify=False, download=False)
    except DataError as exc:
        out.update(status="MISSING", message=str(exc))
        return out
    sha = sha256_file(p)
    row.update(found_in=found_in, path=str(p), sha256=sha,
               checksum="none declared" if user.sha256 is None else "ok" if sha == user.sha256 else "MISMATCH")
    out["source"] = found_in
    if row["checksum"] == "MISMATCH":
        out.update(status="BAD CHECKSUM", message=f"{user.where}: {p} has sha256 {sha}, its spec says {user.sha256}")
    return out


def from_dataframe(df: Any, *, name: str = "dataframe", rng: RNGLike = 0, n: int | None = None, **spec: Any) -> Dataset:
    """A :class:`Dataset` from a DataFrame in memory, with the keys of a spec file (module docstring; ``bounds``: the
    declared public bounds, a mapping column -> (lower, upper) or one pair for every column; ``n``, ``rng``: a seeded
    subsample as in :func:`dpkit.data.load`).

    >>> import pandas as pd
    >>> df = pd.DataFrame({"age": [30, 40, 50, 60], "smoker": ["no", "yes", "no", "no"]})
    >>> ds = from_dataframe(df, name="toy", bounds={"age": [0, 100]}, encodings={"smoker": {"ordinal": ["no", "yes"]}})
    >>> ds.X.round(6).tolist(), ds.bounds_source
    ([[-0.4, -1.0], [-0.2, 1.0], [0.0, -1.0], [0.2, -1.0]], 'public')
    """
    user = _user_spec(df, name=name, origin=f"DataFrame {name!r}", spec=spec)
    if n is not None:
        n = check_int_in_range(n, name="n", low=2)
    return _load(user, bounds="registry", n=n, rng=rng, verify=True, download=None, stacklevel=3)


# ---- reading the data ------------------------------------------------------------------------------------------


def _format(user: UserSpec, fname: str) -> str:
    if user.format is not None:
        return user.format
    low = fname.lower()
    for fmt, suffixes in FORMATS.items():
        if low.endswith(suffixes):
            return fmt
    raise _fail(user.where, f"cannot tell the format of {fname!r} from its suffix; add format: csv, parquet or excel")


def _download_dir() -> Path:
    from dpkit.data.files import env_data_dir, repo_raw_dir

    base = env_data_dir() or repo_raw_dir()
    if base is None:
        return Path(tempfile.gettempdir()) / "dpkit-data"
    return base


def _locate(user: UserSpec, *, verify: bool, download: bool | None) -> tuple[Path, str]:
    """The file to read and where it was found; downloads a ``url`` (checked against ``sha256``)."""
    from dpkit.data.download import download_url, downloads_allowed
    from dpkit.data.files import sha256_file

    if user.package is not None:
        try:
            root = importlib.resources.files(user.package)
        except (ModuleNotFoundError, TypeError) as exc:
            raise DataNotFoundError(f"{user.where}: package {user.package!r} is not installed ({exc})") from exc
        res = root.joinpath(str(user.path))
        with importlib.resources.as_file(res) as p:
            if not Path(p).is_file():
                raise DataNotFoundError(f"{user.where}: package {user.package!r} has no file {user.path!r} ({p})")
            return Path(p), f"package {user.package}"
    if user.path is not None:
        p = Path(user.path).expanduser()
        if not p.is_absolute() and user.base is not None:
            p = user.base / p
        if not p.is_file():
            raise DataNotFoundError(f"{user.where}: data file {p} does not exist" + (" (a folder)" if p.is_dir() else ""))
        return p, "path"
    url = str(user.url)
    target = _download_dir() / "user" / user.name / (Path(url.split("?")[0]).name or "data")
    if target.is_file() and sha256_file(target) == user.sha256:
        return target, f"download cache {target.parent}"
    if not downloads_allowed(download):
        raise DataNotFoundError(f"{user.where}: {target} is not here and downloads are off (DPKIT_OFFLINE or "
                                f"download=False); download {url} to {target}")
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".part")
    os.close(fd)
    try:
        try:
            download_url(url, Path(tmp))
        except Exception as exc:
            raise DataNotFoundError(f"{user.where}: download of {url} failed ({type(exc).__name__}: {exc})") from exc
        got = sha256_file(tmp)
        if got != user.sha256:
            raise ChecksumError(f"{user.where}: the download of {url} has sha256 {got}, its spec says {user.sha256}; "
                                "nothing was kept")
        os.replace(tmp, target)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return target, f"downloaded from {url}"


def _read_file(user: UserSpec, p: Path) -> Any:
    import pandas as pd

    fmt = _format(user, p.name)
    opts = dict(user.read)
    bad = [k for k in opts if k not in READ_OPTIONS[fmt]]
    if bad:
        raise _fail(user.where, f"read option(s) {bad} are not for format {fmt}; allowed: {list(READ_OPTIONS[fmt])}")
    try:
        if fmt == "csv":
            df = pd.read_csv(p, **opts)
        elif fmt == "parquet":
            df = pd.read_parquet(p)
        else:
            if "sheet" in opts:
                opts["sheet_name"] = opts.pop("sheet")
            df = pd.read_excel(p, **opts)
    except ImportError as exc:
        raise MalformedDataError(f"{user.where}: reading {p} as {fmt} needs a package that is not installed ({exc})") from exc
    except Exception as exc:  # pandas, pyarrow and openpyxl raise many types for a file of another format
        raise MalformedDataError(f"{user.where}: {p} cannot be read as {fmt} ({type(exc).__name__}: "
                                 f"{' '.join(str(exc).split())[:300]})") from exc
    if not isinstance(df, pd.DataFrame) or df.shape[1] == 0:
        raise MalformedDataError(f"{user.where}: {p} read as {fmt} holds no columns")
    return df


def _frame_sha256(df: Any) -> str:
    import pandas as pd

    h = hashlib.sha256()
    h.update(json.dumps([str(c) for c in df.columns]).encode())
    h.update(pd.util.hash_pandas_object(df, index=False).to_numpy().tobytes())
    return h.hexdigest()


def _json(value: Any) -> Any:
    """A spec's keys as given, made JSON-friendly for the provenance."""
    return json.loads(json.dumps(value, default=str))


def _spec_provenance(user: UserSpec) -> dict[str, Any]:
    out: dict[str, Any] = {"origin": user.origin, "content": _json(dict(user.raw))}
    if user.spec_file is not None:
        out["file"] = str(user.spec_file)
        out["sha256"] = hashlib.sha256(user.spec_file.read_bytes()).hexdigest()
    return out


# ---- the preprocessing -----------------------------------------------------------------------------------------


def _numeric(user: UserSpec, df: Any, file: str) -> tuple[np.ndarray, list[str], dict[str, Any]]:
    """Encode and check the kept columns; returns (values, column names, encodings provenance)."""
    import pandas as pd

    blocks, names, enc_prov = [], [], {}
    for col in df.columns:
        s = df[col]
        if col in user.encodings:
            kind, levels = user.encodings[col]
            codes = pd.Series(s).map(lambda v, lv=levels: _level(v, lv)).to_numpy(np.float64)
            unknown = pd.Series(np.isinf(codes), index=s.index)
            if unknown.any():
                bad = pd.Series(s)[unknown]
                raise MalformedDataError(f"{user.where}: column {col!r} of {file} holds value {bad.iloc[0]!r} (row "
                                         f"{bad.index[0]}; {len(bad)} row(s) in all) that is none of its declared "
                                         f"{kind} levels {list(levels)}")
            if kind == "ordinal":
                blocks.append(codes[:, None])
                names.append(str(col))
            else:
                onehot = np.stack([np.where(np.isnan(codes), np.nan, (codes == i).astype(np.float64))
                                   for i in range(len(levels))], axis=1)
                blocks.append(onehot)
                names.extend(f"{col}={lv}" for lv in levels)
            enc_prov[str(col)] = {"encoding": kind, "levels": _json(list(levels))}
            continue
        if pd.api.types.is_bool_dtype(s) or not pd.api.types.is_numeric_dtype(s):
            sample = next((v for v in s if not pd.isna(v) and not _is_number(v)), s.iloc[0] if len(s) else None)
            raise MalformedDataError(f"{user.where}: column {col!r} of {file} is not numeric (dtype {s.dtype}, e.g. "
                                     f"{sample!r}); declare an encoding (encodings: {{{col}: {{ordinal: [levels]}}}} or "
                                     "one_hot) or leave it out of columns")
        blocks.append(s.to_numpy(dtype=np.float64)[:, None])
        names.append(str(col))
    values = np.concatenate(blocks, axis=1) if blocks else np.empty((len(df), 0))
    inf = ~np.isfinite(values) & ~np.isnan(values)
    if inf.any():
        r, c = np.argwhere(inf)[0]
        raise MalformedDataError(f"{user.where}: column {names[c]!r} of {file} holds an infinite value (row {r})")
    return values, names, enc_prov


def _level(v: Any, levels: tuple[Any, ...]) -> float:
    """The index of ``v`` among ``levels`` (equal as values, 2.0 == 2, or as text); NaN for a missing value, inf
    for a value that is none of them."""
    import pandas as pd

    if pd.isna(v):
        return np.nan
    for i, lv in enumerate(levels):
        try:
            if v == lv:
                return float(i)
        except (TypeError, ValueError):
            pass
        if str(v) == str(lv):
            return float(i)
    return np.inf


def _is_number(v: Any) -> bool:
    try:
        float(v)
        return True
    except (TypeError, ValueError):
        return False


def _select(user: UserSpec, df: Any, file: str) -> tuple[Any, list[str]]:
    """The kept columns (a missing one is an error naming it); returns (frame, columns not kept)."""
    df = df.rename(columns=lambda c: str(c))
    have = list(df.columns)
    if len(set(have)) != len(have):
        raise MalformedDataError(f"{user.where}: {file} repeats column name(s) "
                                 f"{sorted({c for c in have if have.count(c) > 1})}")
    want = list(user.columns) if user.columns is not None else have
    absent = [c for c in want if c not in have]
    if absent:
        hints = [f"{c!r}" + (f" (did you mean {m[0]!r}?)" if (m := difflib.get_close_matches(c, have, n=1)) else "")
                 for c in absent]
        raise MalformedDataError(f"{user.where}: column(s) {', '.join(hints)} not in {file}; its columns: {have}")
    for key, named in (("bounds", user.bounds), ("encodings", user.encodings)):
        stray = [c for c in named if c not in want and c != "*"]
        if stray:
            raise _fail(user.where, f"{key} names column(s) {stray} that are not kept (columns: {want})")
    if isinstance(user.missing, Mapping):
        stray = [c for c in user.missing["fill"] if c not in want]
        if stray:
            raise _fail(user.where, f"missing: fill names column(s) {stray} that are not kept (columns: {want})")
    return df[want], [c for c in have if c not in want]


def _handle_missing(user: UserSpec, df: Any, file: str, notes: list, steps: list, warns: list) -> tuple[Any, int]:
    na = df.isna()
    if not na.any().any():
        return df, 0
    if isinstance(user.missing, Mapping):
        fill = user.missing["fill"]
        df = df.fillna({c: v for c, v in fill.items()})
        notes.append(f"missing values filled with the declared constants {fill}")
        na = df.isna()
        if not na.any().any():
            return df, 0
    counts = {c: int(k) for c, k in na.sum().items() if k}
    if user.missing != "drop_rows":
        first = next(iter(counts))
        row = int(np.flatnonzero(na[first].to_numpy())[0])
        raise MalformedDataError(f"{user.where}: column {first!r} of {file} has {counts[first]} missing value(s) (first "
                                 f"at row {row}; per column: {counts}); declare a policy (missing: drop_rows or "
                                 "missing: {fill: {column: value}})")
    rows = na.any(axis=1).to_numpy()
    k = int(rows.sum())
    detail = f"dropped {k} row(s) with a missing value (per column: {counts})"
    notes.append(detail)
    steps.append({"step": "drop_missing_rows", "detail": detail, "public": False, "reference": ""})
    warns.append((PrivacyLeakWarning, f"{user.name}: {detail}; which rows have a missing value depends on the private "
                                      "data and is released outside any privacy budget"))
    return df[~rows], k


def _load(user: UserSpec, *, bounds: Any, n: int | None, rng: RNGLike, verify: bool, download: bool | None,
          stacklevel: int) -> Dataset:
    import pandas as pd

    notes: list[str] = []
    steps: list[dict[str, Any]] = []
    warns: list[tuple[type[Warning], str]] = []
    if user.frame is not None:
        df, file = user.frame, f"DataFrame {user.name!r}"
        if not isinstance(df, pd.DataFrame):
            raise _fail(user.where, f"expected a pandas DataFrame; got {type(df).__name__}")
        files = [{"role": "data", "file": file, "sha256": _frame_sha256(df), "found_in": "memory", "verified": False,
                  "check": "a DataFrame in memory (its content hash)"}]
        source = "DataFrame"
    else:
        p, found = _locate(user, verify=verify, download=download)
        from dpkit.data.files import sha256_file

        sha = sha256_file(p)
        if user.sha256 is not None and sha != user.sha256:
            if verify:
                raise ChecksumError(f"{user.where}: {p} has sha256 {sha}, its spec says {user.sha256}; pass "
                                    "verify=False to load an edited copy (stated in the provenance)")
            notes.append(f"sha256 {sha} differs from its spec's {user.sha256} (verify=False)")
            warns.append((UserWarning, f"{user.where}: {p} has sha256 {sha}, not its spec's {user.sha256}; loaded "
                                       "anyway (verify=False), stated in the provenance"))
        checked = user.sha256 is not None and sha == user.sha256
        df, file = _read_file(user, p), str(p)
        files = [{"role": "data", "file": file, "sha256": sha, "found_in": found, "verified": checked,
                  "check": "sha256 matches its spec" if checked else ("NOT verified (verify=False)" if user.sha256
                                                                       else "no sha256 in its spec")}]
        source = f"files ({found})"
    raw_shape = (int(df.shape[0]), int(df.shape[1]))
    if user.rows is not None and raw_shape[0] != user.rows:
        msg = f"{user.where}: {file} has {raw_shape[0]} rows, its spec declares rows: {user.rows}"
        if verify:
            raise MalformedDataError(msg + " (a truncated or different file?); pass verify=False to load it anyway")
        warns.append((UserWarning, msg + " (verify=False: loaded anyway)"))
        notes.append(msg)
    df, excluded = _select(user, df, file)
    df, n_missing = _handle_missing(user, df, file, notes, steps, warns)
    values, columns, enc_prov = _numeric(user, df, file)
    subsample = None
    if n is not None:
        N = values.shape[0]
        if n > N:
            raise ValueError(f"n = {n} exceeds the {N} rows available for {user.name}")
        if n < N:
            gen = resolve_rng(rng)
            idx = np.sort(gen.choice(N, size=int(n), replace=False))
            values = values[idx]
            seed = rng if isinstance(rng, (int, np.integer)) and not isinstance(rng, bool) else None
            subsample = {"n": int(n), "of": int(N), "seed": seed,
                         "method": "uniform without replacement (numpy Generator.choice), original order kept"}
            notes.append(f"seeded subsample of {n} of {N} rows (seed {seed})")
    if values.shape[0] < 2:
        raise MalformedDataError(f"{user.where}: {values.shape[0]} row(s) left in {file} after preprocessing; at least "
                                 "2 are needed")
    lo, hi, by_col, ref = _resolve_bounds(user, bounds, values, columns, enc_prov)
    const = [c for c, a, b in zip(columns, values.min(axis=0), values.max(axis=0)) if a == b]
    from_data = [c for c in columns if by_col[c] == "data"]
    bad_const = [c for c in const if c in from_data]
    if bad_const:
        raise MalformedDataError(f"{user.where}: column(s) {bad_const} of {file} are constant, so bounds taken from the "
                                 "data have upper = lower; declare their public bounds or leave them out of columns")
    if const:
        warns.append((UserWarning, f"{user.name}: column(s) {const} of {file} are constant in the data; kept (their "
                                   "bounds are declared), they carry no information"))
    if from_data:
        detail = f"per-column min/max of the loaded data for column(s) {from_data} (no public bounds declared)"
        steps.append({"step": "bounds", "detail": detail, "public": False, "reference": ""})
        warns.append((PrivacyLeakWarning, f"{user.name}: rescaling bounds are the {detail}; this is a release about "
                                          "the data outside any privacy budget. Declare public bounds in its spec "
                                          "(bounds: {column: [lower, upper]}) to avoid it."))
    outside = (values < lo) | (values > hi)
    X, clipped = rescale(values, lo, hi)
    clipped_by_col = {c: int(k) for c, k in zip(columns, outside.sum(axis=0)) if k}
    if clipped:
        per = ", ".join(f"{c}: {k} ({k / X.shape[0]:.1%})" for c, k in clipped_by_col.items())
        warns.append((ClippingWarning, f"{user.name}: {clipped} of {X.size} values ({clipped / X.size:.1%}) lie outside "
                                       f"the declared bounds and were clipped to them ({per}); check the bounds"))
    X.setflags(write=False)
    B = np.column_stack([lo, hi]).astype(np.float64)
    B.setflags(write=False)
    sources = set(by_col.values())
    bsrc = "data" if "data" in sources else ("user" if "user" in sources else "public")
    prov: dict[str, Any] = {
        "dataset": user.name, "title": user.title, "uci_id": None, "page": None, "licence": "",
        "citation": user.citation, "recipe": "user data (dpkit.data.spec)", "registry": None,
        "spec": _spec_provenance(user), "files": files, "source": source,
        "rows_dropped_missing": n_missing, "subsample": subsample, "columns_dropped_constant": [],
        "columns_excluded": {c: "not in its spec's columns" for c in excluded}, "encodings": enc_prov,
        "bounds_source": bsrc, "bounds_reference": ref, "bounds_by_column": by_col, "data_dependent_steps": steps,
        "privacy_leak_warning": any(not s["public"] for s in steps), "clipped_values": clipped,
        "clipped_fraction": clipped / X.size if X.size else 0.0, "clipped_by_column": clipped_by_col,
        "raw_shape": list(raw_shape), "shape": [int(X.shape[0]), int(X.shape[1])], "expected_rows": user.rows,
        "thesis_shape": None, "notes": notes,
    }
    for category, message in warns:
        warnings.warn(message, category, stacklevel=stacklevel)
    return Dataset(name=user.name, title=user.title, X=X, columns=tuple(columns), raw_shape=raw_shape, bounds=B,
                   bounds_source=bsrc, provenance=prov, thesis_shape=None)


def _resolve_bounds(user: UserSpec, bounds: Any, values: np.ndarray, columns: list[str], enc: Mapping[str, Any]
                    ) -> tuple[np.ndarray, np.ndarray, dict[str, str], str]:
    """Per column: (lower, upper), and where each came from (public, encoding, data or user)."""
    d = values.shape[1]
    lo, hi = np.empty(d), np.empty(d)
    by_col: dict[str, str] = {}
    encoded = {}
    for col, info in enc.items():
        k = len(info["levels"])
        if info["encoding"] == "ordinal":
            encoded[col] = (0.0, float(k - 1))
        else:
            for lv in info["levels"]:
                encoded[f"{col}={lv}"] = (0.0, 1.0)
    if isinstance(bounds, str) and bounds not in ("registry", "data"):
        raise ValueError(f"bounds must be 'registry' (its spec's), 'data', a (lower, upper) pair or a dict column -> "
                         f"(lower, upper); got {bounds!r}")
    user_given: dict[str, tuple[float, float]] = {}
    if not isinstance(bounds, str):
        if isinstance(bounds, Mapping):
            user_given = _bounds(bounds, f"{user.name}: the bounds argument")
            stray = [c for c in user_given if c not in columns]
            if stray:
                raise ValueError(f"bounds argument names column(s) {stray} that are not columns of {user.name} "
                                 f"({columns})")
            missing = [c for c in columns if c not in user_given]
            if missing:
                raise ValueError(f"bounds dict lacks column(s) {missing} of {user.name}")
        else:
            try:
                a, b = bounds
                a = np.broadcast_to(np.asarray(a, dtype=np.float64), (d,))
                b = np.broadcast_to(np.asarray(b, dtype=np.float64), (d,))
            except (TypeError, ValueError):
                raise ValueError(f"bounds must be a (lower, upper) pair of numbers or per-column arrays of length "
                                 f"d = {d}; got {bounds!r}") from None
            user_given = _bounds({c: (x, y) for c, x, y in zip(columns, a, b)}, f"{user.name}: the bounds argument")
    for j, col in enumerate(columns):
        if col in user_given:
            (lo[j], hi[j]), by_col[col] = user_given[col], "user"
        elif bounds == "data":
            lo[j], hi[j], by_col[col] = values[:, j].min(), values[:, j].max(), "data"
        elif col in user.bounds:
            (lo[j], hi[j]), by_col[col] = user.bounds[col], "public"
        elif col in encoded:
            (lo[j], hi[j]), by_col[col] = encoded[col], "encoding"
        elif "*" in user.bounds:
            (lo[j], hi[j]), by_col[col] = user.bounds["*"], "public"
        else:
            lo[j], hi[j], by_col[col] = values[:, j].min(), values[:, j].max(), "data"
    parts = []
    if any(v == "public" for v in by_col.values()):
        parts.append("declared in its spec" + (f" ({user.bounds_reference})" if user.bounds_reference else ""))
    if any(v == "encoding" for v in by_col.values()):
        parts.append("encoded columns: 0 .. levels - 1 (ordinal) or 0/1 (one-hot), from the declared levels")
    if any(v == "user" for v in by_col.values()):
        parts.append("passed by the caller (treated as public)")
    if any(v == "data" for v in by_col.values()):
        parts.append("per-column min/max of the loaded data for " + str([c for c, v in by_col.items() if v == "data"]))
    return lo, hi, by_col, "; ".join(parts)


def load_user(name: str | os.PathLike, *, path: Any = None, bounds: Any = "registry", n: int | None = None,
              d: int | None = None, rng: RNGLike = 0, verify: bool = True, download: bool | None = None,
              source: str | None = None, subjects: Any = None, _stacklevel: int = 3) -> Dataset:
    """:func:`dpkit.data.load` of a spec path, a registered name or an entry point's name (same parameters).

    ``path`` overrides its spec's file; ``d``, ``source`` and ``subjects`` belong to registry data sets and are an
    error here.
    """
    user = resolve_user(name)
    if user.spec_file is not None and path is None:
        _LOADED[user.name] = str(user.spec_file)
    for key, value in (("d", d), ("source", source), ("subjects", subjects)):
        if value is not None:
            raise ValueError(f"{key} is an option of a registered data set, not of {user.where} (got {key}={value!r})")
    if n is not None:
        n = check_int_in_range(n, name="n", low=2)
    if path is not None:
        if user.frame is not None:
            raise ValueError(f"path is not an option of {user.where} (a DataFrame)")
        user = dataclasses.replace(user, path=os.fspath(Path(path).expanduser().resolve()), url=None, package=None)
    return _load(user, bounds=bounds, n=n, rng=rng, verify=verify, download=download, stacklevel=_stacklevel)


def check_board_shape(ds: Dataset, *, where: str | None = None) -> None:
    """Refuse a data set outside the board's range (:data:`MIN_BOARD_ROWS` rows, :data:`MAX_BOARD_COLUMNS` columns).

    Raises
    ------
    ValueError
        Naming the data set, its shape and the limit.
    """
    at = where or ds.name
    if ds.n < MIN_BOARD_ROWS:
        raise ValueError(f"{at}: {ds.n} rows are too few for the board (at least {MIN_BOARD_ROWS}: below that one row "
                         f"moves an ε = 1 answer by more than 2/(nε) = 0.02 and every ranking is noise)")
    if ds.d > MAX_BOARD_COLUMNS:
        raise ValueError(f"{at}: {ds.d} columns are too many for the board's methods (at most {MAX_BOARD_COLUMNS}, the "
                         "widest data set they have run, CRM); keep fewer columns in its spec")



def data_fingerprint(ds: Dataset) -> dict[str, Any]:
    """What identifies a loaded data set's content for a board: its name, shape, the sha256 of its files (a
    DataFrame's content hash) and of its spec file, and a digest of all of them (``sha256``).

    A board made on one data set and an entrant run later are paired only when their fingerprints agree.
    """
    prov = ds.provenance
    spec = prov.get("spec") or {}
    files = [{"file": f.get("file"), "sha256": f.get("sha256") or f.get("sha256_matrix")} for f in prov.get("files", [])]
    core = {"dataset": ds.name, "shape": [ds.n, ds.d], "files": [f["sha256"] for f in files],
            "spec_sha256": spec.get("sha256"), "columns": list(ds.columns),
            "bounds": np.asarray(ds.bounds).tolist(), "subsample": prov.get("subsample")}
    digest = hashlib.sha256(json.dumps(core, sort_keys=True, default=str).encode()).hexdigest()
    return {**core, "files": files, "spec_file": spec.get("file"), "sha256": digest}
