"""Per-data-set parsers: raw file(s) -> the table of kept continuous attributes.

Each parser reads strictly (the documented number of fields, a number or the documented missing marker) and returns a
:class:`Table` with ``NaN`` for missing values; :mod:`dpkit.data.recipes` calls them, :mod:`dpkit.data.steps` follows.
"""
from __future__ import annotations

import gzip
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping, Sequence

import numpy as np

from dpkit.data.errors import MalformedDataError
from dpkit.data.registry import DatasetSpec

__all__ = ["Table", "read_delimited", "parse_crm", "parse_pks", "parse_wdbc", "parse_csn", "parse_ctg", "parse_pam",
           "wdbc_columns", "mock_table", "sklearn_wdbc"]


@dataclass(frozen=True)
class Table:
    """Kept columns of one raw file (before the shared Table 3.1 steps)."""

    values: np.ndarray
    columns: tuple[str, ...]
    raw_shape: tuple[int, int]
    excluded: Mapping[str, str] = field(default_factory=dict)
    notes: tuple[str, ...] = ()


def _frozen(a: np.ndarray) -> np.ndarray:
    a = np.ascontiguousarray(a, dtype=np.float64)
    a.setflags(write=False)
    return a


def _is_gzip(path: Path) -> bool:
    """A ``.gz`` name or the gzip magic bytes (a download's temporary file has no suffix)."""
    if str(path).endswith(".gz"):
        return True
    with open(path, "rb") as fh:
        return fh.read(2) == b"\x1f\x8b"


def read_delimited(
    path: Path,
    *,
    code: str,
    n_fields: int,
    header: bool = False,
    sep: str = ",",
    skipinitialspace: bool = False,
):
    """Read a delimited text file as strings, strictly; return a pandas DataFrame.

    Every line must have exactly ``n_fields`` non-empty fields; gzip (by suffix or content) is decompressed.

    Raises
    ------
    MalformedDataError
        Empty file, wrong field count (a dropped or extra column), an empty field (a short,
        truncated line), or a truncated/corrupt gzip stream; the message names file and line.
    """
    import pandas as pd

    fix = "replace the file with the original (see `python -m dpkit.data list`)"
    try:
        df = pd.read_csv(
            path,
            header=0 if header else None,
            sep=sep,
            skipinitialspace=skipinitialspace,
            dtype=str,
            na_filter=False,
            compression="gzip" if _is_gzip(path) else None,
            engine="c",
        )
    except pd.errors.EmptyDataError as exc:
        raise MalformedDataError(f"[{code}] {path} is empty; {fix}") from exc
    except pd.errors.ParserError as exc:
        what = f"is malformed: {str(exc).strip()} (expected {n_fields} fields per line)"
        raise MalformedDataError(f"[{code}] {path} {what}; {fix}") from exc
    except (EOFError, gzip.BadGzipFile, zlib.error, OSError) as exc:
        what = f"is a truncated or corrupt gzip stream ({type(exc).__name__}: {exc})"
        raise MalformedDataError(f"[{code}] {path} {what}; {fix}") from exc
    except UnicodeDecodeError as exc:
        raise MalformedDataError(f"[{code}] {path} is not a text file ({exc}); {fix}") from exc
    if df.shape[1] != n_fields:
        raise MalformedDataError(
            f"[{code}] {path} has {df.shape[1]} fields per line, expected {n_fields} "
            f"(a column is missing or extra); {fix}"
        )
    if len(df) == 0:
        raise MalformedDataError(f"[{code}] {path} has no data rows; {fix}")
    empty = (df.to_numpy() == "")
    if empty.any():
        r, c = np.argwhere(empty)[0]
        line = int(r) + 1 + (1 if header else 0)
        raise MalformedDataError(
            f"[{code}] {path} line {line}: field {int(c) + 1} of {n_fields} is empty "
            f"({int(empty.any(axis=1).sum())} line(s) affected: short/truncated lines or a dropped value); {fix}"
        )
    return df


def _to_float(df, cols: Sequence, *, code: str, path: Path, header: bool, missing: tuple[str, ...] = ("?",)) -> np.ndarray:
    """Convert columns of a string frame to float64; ``missing`` markers -> NaN; anything else non-numeric is an error."""
    import pandas as pd

    out = np.empty((len(df), len(cols)), dtype=np.float64)
    for k, c in enumerate(cols):
        s = df[c].str.strip()
        v = pd.to_numeric(s, errors="coerce").to_numpy(dtype=np.float64, copy=True)
        is_missing = s.isin(missing).to_numpy()
        bad = np.isnan(v) & ~is_missing
        if bad.any():
            r = int(np.flatnonzero(bad)[0])
            marker = f" (or the missing marker {'/'.join(missing)})" if missing else ""
            raise MalformedDataError(
                f"[{code}] {path} line {r + 1 + (1 if header else 0)}: column {c!r} holds {s.iloc[r]!r}, "
                f"not a number{marker}; {int(bad.sum())} such value(s). "
                "Replace the file with the original."
            )
        v[is_missing] = np.nan
        out[:, k] = v
    return out


def _expect_rows(code: str, spec: DatasetSpec, role: str, path: Path, n: int, checked: bool) -> list[str]:
    """The registry's row count of ``role``'s file against the ``n`` rows read from ``path``.

    A file with *fewer* rows than the registry documents is refused on every path, ``verify=False`` included
    (which skips the checksum, not the structure): loading it would silently run on a part of the data set. A
    file with more rows is refused when its content is checked (``checked``) and otherwise kept with a note in
    the provenance.

    Raises
    ------
    MalformedDataError
        Naming the file, the rows read and the rows documented.
    """
    rows = spec.file(role).rows
    if rows is None or n == rows:
        return []
    msg = f"{path} has {n} data rows, the registry expects {rows}"
    if checked:
        raise MalformedDataError(f"[{code}] {msg}: the file is truncated or edited; replace it with the original.")
    if n < rows:
        raise MalformedDataError(f"[{code}] {msg} ({rows - n} fewer): the file is truncated (verify=False skips the "
                                 "checksum, not the row count); replace it with the original.")
    return [msg + " (checksum not verified)"]


# --------------------------------------------------------------------------- recipes


def parse_crm(spec: DatasetSpec, files: Mapping[str, Path], checked: Mapping[str, bool]) -> Table:
    path = files["data"]
    cols = list(spec.raw["columns"])
    df = read_delimited(path, code=spec.code, n_fields=len(cols))
    df.columns = cols
    drop = spec.raw["drop"]
    excluded = {c: "non-predictive" for c in drop["non_predictive"]}
    excluded.update({c: "LEMAS police column (1675 of 1994 values missing)" for c in drop["police_lemas"]})
    keep = [c for c in cols if c not in excluded]
    vals = _to_float(df, keep, code=spec.code, path=path, header=False)
    notes = _expect_rows(spec.code, spec, "data", path, len(df), checked["data"])
    return Table(_frozen(vals), tuple(keep), tuple(df.shape), excluded, tuple(notes))


def parse_pks(spec: DatasetSpec, files: Mapping[str, Path], checked: Mapping[str, bool]) -> Table:
    path = files["data"]
    cols = list(spec.raw["columns"])
    df = read_delimited(path, code=spec.code, n_fields=len(cols), header=True)
    got = [str(c).strip() for c in df.columns]
    if got != cols:
        missing = [c for c in cols if c not in got]
        extra = [c for c in got if c not in cols]
        raise MalformedDataError(
            f"[{spec.code}] {path}: header does not match the registry; missing column(s) {missing}, "
            f"unexpected {extra}, order {'differs' if not missing and not extra else 'n/a'}. Replace the file with the original."
        )
    df.columns = cols
    drop = spec.raw["drop"]
    excluded = {c: "identifier" for c in drop["identifier"]}
    excluded.update({c: "not continuous (binary / integer)" for c in drop["not_continuous"]})
    keep = [c for c in cols if c not in excluded]
    vals = _to_float(df, keep, code=spec.code, path=path, header=True, missing=())
    notes = _expect_rows(spec.code, spec, "data", path, len(df), checked["data"])
    return Table(_frozen(vals), tuple(keep), tuple(df.shape), excluded, tuple(notes))


def wdbc_columns(spec: DatasetSpec) -> tuple[str, ...]:
    return tuple(f"{f}_{s}" for s in spec.raw["statistics"] for f in spec.raw["features"])


def parse_wdbc(spec: DatasetSpec, files: Mapping[str, Path], checked: Mapping[str, bool]) -> Table:
    path = files["data"]
    n_fields = int(spec.raw["n_fields"])
    df = read_delimited(path, code=spec.code, n_fields=n_fields)
    diag = df[1].str.strip()
    bad = ~diag.isin(["M", "B"])
    if bad.any():
        r = int(np.flatnonzero(bad.to_numpy())[0])
        raise MalformedDataError(f"[{spec.code}] {path} line {r + 1}: diagnosis {diag.iloc[r]!r} is not M or B; "
                                 "replace the file with the original.")
    vals = _to_float(df, list(range(2, n_fields)), code=spec.code, path=path, header=False, missing=())
    notes = _expect_rows(spec.code, spec, "data", path, len(df), checked["data"])
    return Table(_frozen(vals), wdbc_columns(spec), tuple(df.shape), {"ID": "identifier", "diagnosis": "label"}, tuple(notes))


def sklearn_wdbc(spec: DatasetSpec) -> tuple[Table, str]:
    """WDBC from scikit-learn's bundled copy; returns the table and the sha256 of its matrix.

    The matrix hash must equal the registry's ``matrix_sha256`` (the hash of the UCI file's
    569 x 30 float64 features); the caller checks it.
    """
    import hashlib

    from sklearn.datasets import load_breast_cancer

    X = np.ascontiguousarray(load_breast_cancer().data, dtype=np.float64)
    sha = hashlib.sha256(X.tobytes()).hexdigest()
    return Table(_frozen(X), wdbc_columns(spec), (X.shape[0], X.shape[1] + 2), {"ID": "identifier", "diagnosis": "label"}), sha


def parse_csn(spec: DatasetSpec, files: Mapping[str, Path], checked: Mapping[str, bool]) -> Table:
    (role, path), = files.items()
    n_fields = int(spec.raw["n_fields"])
    df = read_delimited(path, code=spec.code, n_fields=n_fields, sep=",", skipinitialspace=True)
    labels = set(spec.raw["labels"])
    lab = df[n_fields - 1].str.strip()
    bad = ~lab.isin(labels)
    if bad.any():
        r = int(np.flatnonzero(bad.to_numpy())[0])
        raise MalformedDataError(
            f"[{spec.code}] {path} line {r + 1}: label {lab.iloc[r]!r} is not one of {sorted(labels)} "
            "(fields shifted: a value is missing or extra); replace the file with the original."
        )
    keep = {int(k): str(v) for k, v in spec.raw["keep"].items()}
    vals = _to_float(df, list(keep), code=spec.code, path=path, header=False)
    notes = _expect_rows(spec.code, spec, role, path, len(df), checked[role] or not spec.file(role).has_checksum)
    excluded = {f"field{j}": "nominal" for j in range(n_fields - 1) if j not in keep}
    excluded[f"field{n_fields - 1}"] = "label"
    return Table(_frozen(vals), tuple(keep.values()), tuple(df.shape), excluded, tuple(notes))


def parse_ctg(spec: DatasetSpec, files: Mapping[str, Path], checked: Mapping[str, bool]) -> Table:
    import xlrd

    path = files["data"]
    fix = "replace it with the original CTG.xls"
    try:
        book = xlrd.open_workbook(str(path), on_demand=True)
    except Exception as exc:  # xlrd raises XLRDError, struct.error, AssertionError, ... on damaged files
        what = f"is not a readable Excel 97 workbook ({type(exc).__name__}: {exc})"
        raise MalformedDataError(f"[{spec.code}] {path} {what}; {fix}") from exc
    sheet_name = spec.raw["sheet"]
    try:
        sh = book.sheet_by_name(sheet_name)
    except xlrd.XLRDError as exc:
        what = f"has no sheet {sheet_name!r} (sheets: {book.sheet_names()})"
        raise MalformedDataError(f"[{spec.code}] {path} {what}; {fix}") from exc
    mcols = {int(k): str(v) for k, v in spec.raw["measurement_columns"].items()}
    header = sh.row_values(1) if sh.nrows > 1 else []
    for j, name in mcols.items():
        want = name.removesuffix("_count")
        got = str(header[j]).strip() if j < len(header) else None
        if got != want:
            raise MalformedDataError(
                f"[{spec.code}] {path} sheet {sheet_name!r}: column {want!r} missing "
                f"(header cell {j + 1} of row 2 is {got!r}); {fix}"
            )
    rows = []
    r = 2
    while r < sh.nrows and sh.cell_value(r, 0) != "":
        rows.append(r)
        r += 1
    if not rows:
        raise MalformedDataError(f"[{spec.code}] {path} sheet {sheet_name!r} has no data rows; {fix}")
    vals = np.empty((len(rows), len(mcols)), dtype=np.float64)
    for k, j in enumerate(mcols):
        col = sh.col_values(j, rows[0], rows[-1] + 1)
        for i, v in enumerate(col):
            if not isinstance(v, float):
                raise MalformedDataError(
                    f"[{spec.code}] {path} sheet {sheet_name!r} row {rows[0] + i + 1}: {mcols[j]!r} holds {v!r}, "
                    f"not a number; {fix}"
                )
        vals[:, k] = col
    excl = dict(spec.raw.get("exclude") or {})
    names = list(mcols.values())
    keep_idx = [k for k, nm in enumerate(names) if nm not in excl]
    notes = _expect_rows(spec.code, spec, "data", path, len(rows), checked["data"])
    excluded = {c: " ".join(str(why).split()) for c, why in excl.items()}
    excluded.update({"FileName/Date/SegFile": "identifiers", "A..SUSP, CLASS, NSP": "labels"})
    return Table(
        _frozen(vals[:, keep_idx]), tuple(names[k] for k in keep_idx), (len(rows), sh.ncols), excluded, tuple(notes)
    )


def parse_pam(spec: DatasetSpec, files: Mapping[str, Path], checked: Mapping[str, bool]) -> Table:
    import pandas as pd

    n_fields = int(spec.raw["n_fields"])
    keep = {int(k): str(v) for k, v in spec.raw["keep"].items()}
    parts = []
    raw_rows = 0
    notes = []
    # all 54 fields are read (with usecols pandas would silently accept lines with extra fields);
    # one file at a time, keeping only the 28 columns of the non-transient rows
    for role, path in files.items():
        with open(path, "rb") as fh:
            first = fh.readline().split()
        if len(first) != n_fields:
            raise MalformedDataError(f"[{spec.code}] {path} line 1 has {len(first)} fields, expected {n_fields}; "
                                     "replace it with the original.")
        try:
            df = pd.read_csv(path, sep=" ", header=None, names=range(n_fields), dtype=np.float64, engine="c")
        except (ValueError, pd.errors.ParserError) as exc:
            raise MalformedDataError(f"[{spec.code}] {path} is malformed ({exc}); "
                                     "replace it with the original from the PAMAP2 zip.") from exc
        # timestamp, activityID and the last field are never missing in a complete line
        short = df[0].isna().to_numpy() | df[1].isna().to_numpy() | df[n_fields - 1].isna().to_numpy()
        if short.any():
            raise MalformedDataError(
                f"[{spec.code}] {path} line {int(np.flatnonzero(short)[0]) + 1}: truncated line (missing timestamp, "
                "activityID or last field); replace the file with the original."
            )
        raw_rows += len(df)
        keep_rows = (df[1] != 0).to_numpy()  # activityID 0 = transient, as the readme advises
        parts.append(df.loc[keep_rows, list(keep)].to_numpy(dtype=np.float64))
        notes.append(f"{role}: {len(df)} lines, {int(keep_rows.sum())} with activityID != 0")
    vals = np.concatenate(parts, axis=0)
    excluded = {"timestamp": "time", "activityID": "label (rows with 0 dropped)",
                "temperature, acc6, orientation": "see registry"}
    return Table(_frozen(vals), tuple(keep.values()), (raw_rows, n_fields), excluded, tuple(notes))


def mock_table(n: int, d: int, rng: np.random.Generator) -> Table:
    """Seeded synthetic data: a 3-component Gaussian mixture in [-1, 1]^d (clipped)."""
    k = 3
    centres = rng.uniform(-0.6, 0.6, size=(k, d))
    comp = rng.integers(0, k, size=n)
    X = np.clip(centres[comp] + 0.25 * rng.standard_normal((n, d)), -1.0, 1.0)
    return Table(_frozen(X), tuple(f"x{j}" for j in range(d)), (n, d), {}, ())
