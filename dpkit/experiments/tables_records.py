"""Tables 3.2/3.3 as data: one row per (data set, σ, mechanism, constants), written as CSV with its provenance.

:func:`tables_frame` and :func:`write_tables` write the assembled rows of a batch's ``20_tables`` runs as
``tables.csv`` with ``provenance.json``; the published copy (:data:`PUBLISHED`) is what the documentation reads
(:func:`read_tables`; publishing: docs/guide/export.md).

Every read is checked (:func:`check_tables`): exactly the :data:`COLUMNS` with their dtypes (then the
:data:`OPTIONAL_COLUMNS` or none), one row per :data:`KEY`, σ among the thesis's, at least one repetition, finite
non-negative errors with min ≤ mean ≤ max, no more (ε, δ) spent than the thesis's budget, the thesis's columns equal
to :mod:`dpkit.experiments.reference`'s numbers, and a provenance file beside it.
"""
from __future__ import annotations

import math
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from dpkit.core.published import (
    PROVENANCE_NAME,
    PublishedFileError,
    TableSchema,
    csv_text,
    provenance_text,
    read_provenance,
    write_published,
)
from dpkit.experiments.reference import PAPER_WORST_TIME, SIGMAS, paper_value

__all__ = ["COLUMNS", "OPTIONAL_COLUMNS", "KEY", "SCHEMA", "TABLES_NAME", "PUBLISHED", "BUDGET", "TablesFileError",
           "tables_frame", "check_tables", "write_tables", "read_tables"]

#: The columns of the published tables and their pandas dtypes (the class supremum may be missing: NaN).
COLUMNS: dict[str, str] = {
    "dataset": "object", "sigma": "float64", "mechanism": "object", "constants": "object", "method": "object",
    "reps": "int64", "abs_mean": "float64", "abs_std": "float64", "abs_min": "float64", "abs_max": "float64",
    "rel_mean": "float64", "rel_std": "float64", "time_max_s": "float64", "time_median_s": "float64",
    "support_size_median": "float64", "eps_spent": "float64", "delta_spent": "float64", "error_bound": "float64",
    "sup_abs_mean": "float64", "sup_abs_std": "float64", "sup_abs_max": "float64",
    "paper_abs": "float64", "paper_rel": "float64", "paper_time_s": "float64",
}
#: Columns after :data:`COLUMNS` in a table that has them (NaN where a row has none): the mean certified upper bound
#: on the class supremum (:func:`dpkit.queries.supremum_upper.sup_upper`) beside ``sup_abs_mean``.
OPTIONAL_COLUMNS: dict[str, str] = {"sup_upper_mean": "float64"}
#: One row per cell of the tables.
KEY: tuple[str, ...] = ("dataset", "sigma", "mechanism", "constants")
#: The budget of the thesis's tables: ε = 1 for both mechanisms, δ = 10⁻³ for mechanism II.
BUDGET: dict[str, tuple[float, float]] = {"I": (1.0, 0.0), "II": (1.0, 1e-3)}
TABLES_NAME = "tables.csv"
_MAY_BE_MISSING = ("sup_abs_mean", "sup_abs_std", "sup_abs_max", "paper_abs", "paper_rel", "paper_time_s")


def _published() -> Path:
    from dpkit.core.paths import repo_root

    return (repo_root() or Path.cwd()) / "data" / "tables" / TABLES_NAME


#: The published tables (``data/tables/tables.csv`` of the clone).
PUBLISHED: Path = _published()


class TablesFileError(PublishedFileError):
    """A tables file (or its provenance) that is missing, or one that would be overwritten without ``replace``."""


#: The published tables' shape (:mod:`dpkit.core.published`).
SCHEMA = TableSchema(name="Tables 3.2/3.3 table", columns=COLUMNS, optional=OPTIONAL_COLUMNS, key=KEY,
                     writer="write_tables")


def tables_frame(rows: Iterable[Mapping[str, Any]]) -> pd.DataFrame:
    """The rows of ``20_tables`` runs (:func:`dpkit.experiments.table_rows`) as the published table: the
    :data:`COLUMNS` with their dtypes, sorted by :data:`KEY`; a missing optional value is NaN.

    Raises
    ------
    ValueError
        When a row lacks a column that must be there (naming it and the row's key).
    """
    out = []
    schema = {**COLUMNS, **OPTIONAL_COLUMNS}
    for r in rows:
        missing = [c for c in COLUMNS if c not in r and c not in _MAY_BE_MISSING]
        if missing:
            raise ValueError(f"a Tables 3.2/3.3 row {tuple(r.get(k) for k in KEY)} lacks {missing}")
        out.append({c: (math.nan if r.get(c) is None and schema[c] == "float64" else r.get(c)) for c in schema})
    df = pd.DataFrame(out, columns=list(schema)).astype(schema)
    return df.sort_values(list(KEY), kind="stable").reset_index(drop=True)


def check_tables(df: pd.DataFrame, *, source: str) -> pd.DataFrame:
    """``df`` if it is a Tables 3.2/3.3 table (module docstring); else a ``ValueError`` naming ``source``, the column
    and the first offending row.

    Parameters
    ----------
    df : pandas.DataFrame
        The table.
    source : str
        Where it comes from (a path), for the messages.

    Returns
    -------
    pandas.DataFrame
        ``df`` itself.

    Raises
    ------
    ValueError
        Missing or extra columns, a wrong dtype, a duplicated key, a value out of its range, a thesis's number that is
        not the thesis's.
    """
    SCHEMA.check_columns(list(df.columns), source=source)
    SCHEMA.check_dtypes(df, source=source)
    if df.empty:
        raise ValueError(f"{source}: no rows")
    SCHEMA.check_key(df, source=source)

    def bad(mask: pd.Series, what: str) -> None:
        SCHEMA.refuse(df, mask, source=source, what=what)

    bad(~df["sigma"].isin(SIGMAS), f"σ must be one of the thesis's {list(SIGMAS)}")
    bad(~df["mechanism"].isin(list(BUDGET)), "mechanism must be I or II")
    bad(~df["constants"].isin(["correct", "thesis"]), "constants must be 'correct' or 'thesis'")
    bad(df["reps"] < 1, "reps must be at least 1")
    must = [c for c in COLUMNS if COLUMNS[c] == "float64" and c not in _MAY_BE_MISSING]
    values = df[must].to_numpy(dtype=float)
    bad(pd.Series(~np.isfinite(values).all(axis=1) | (values < 0).any(axis=1), index=df.index),
        f"the columns {must} must be finite and non-negative")
    bad((df["abs_min"] > df["abs_mean"] * (1 + 1e-12)) | (df["abs_mean"] > df["abs_max"] * (1 + 1e-12)),
        "abs_min <= abs_mean <= abs_max must hold")
    if "sup_upper_mean" in df.columns:
        up = df["sup_upper_mean"].to_numpy(dtype=float)
        bad(pd.Series(~np.isnan(up) & ~(np.isfinite(up) & (up >= df["sup_abs_mean"].to_numpy(dtype=float) - 1e-9)),
                      index=df.index), "sup_upper_mean must be finite and at least sup_abs_mean (or missing)")
    eps = df["mechanism"].map(lambda m: BUDGET[m][0])
    delta = df["mechanism"].map(lambda m: BUDGET[m][1])
    bad(df["eps_spent"] > eps * (1 + 1e-9), "more ε spent than the tables' budget ε = 1")
    bad(df["delta_spent"] > delta * (1 + 1e-9), "more δ spent than the tables' budget (mechanism I: 0, II: 10⁻³)")
    for kind in ("abs", "rel"):
        printed = [paper_value(d, s, m, kind) for d, s, m in zip(df["dataset"], df["sigma"], df["mechanism"])]
        bad(pd.Series([not (math.isnan(p) and math.isnan(v)) and p != v for p, v in zip(printed, df[f"paper_{kind}"])],
                      index=df.index), f"paper_{kind} must be the thesis's printed number (dpkit.experiments.reference)")
    times = [PAPER_WORST_TIME.get(m, {}).get(str(d).upper(), math.nan) for d, m in zip(df["dataset"], df["mechanism"])]
    bad(pd.Series([not (math.isnan(p) and math.isnan(v)) and p != v for p, v in zip(times, df["paper_time_s"])],
                  index=df.index), "paper_time_s must be the thesis's printed worst time")
    return df


def write_tables(df: pd.DataFrame, folder: str | os.PathLike, provenance: Mapping[str, Any], *,
                 replace: bool = False) -> list[Path]:
    """Write ``tables.csv`` (checked first, every float to the bit) and ``provenance.json`` into ``folder``.

    Raises
    ------
    TablesFileError
        When a file is there and ``replace`` is False: nothing is written.
    ValueError
        When ``df`` is not a tables table (:func:`check_tables`) or ``provenance`` names no runs.
    """
    folder = Path(folder)
    path, prov_path = folder / TABLES_NAME, folder / PROVENANCE_NAME
    check_tables(df, source=str(path))
    if "runs" not in provenance:
        raise ValueError(f"{prov_path}: a provenance names its runs ('runs')")
    return write_published({path: csv_text(df), prov_path: provenance_text(provenance)}, replace=replace,
                           error=TablesFileError)


def read_tables(path: str | os.PathLike | None = None) -> pd.DataFrame:
    """The Tables 3.2/3.3 rows of ``path`` (a ``tables.csv`` or the folder holding it; default :data:`PUBLISHED`),
    checked (:func:`check_tables`), with a provenance beside them.

    Raises
    ------
    TablesFileError
        When the file or the provenance beside it is missing; the message names it and how to make it.
    ValueError
        When it is not a tables table.
    """
    path = Path(path) if path is not None else PUBLISHED
    if path.is_dir():
        path = path / TABLES_NAME
    if not path.is_file():
        raise TablesFileError(f"Tables 3.2/3.3 file not found: {path} (make tables, then `python -m "
                              "dpkit.batch.assemble tables results/batch/tables --publish` publishes it)")
    read_provenance(path, error=TablesFileError)
    return check_tables(SCHEMA.read_csv(path), source=str(path))
