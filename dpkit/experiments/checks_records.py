"""Every notebook's checks as published data: one row per check of a batch's runs, written as CSV with its provenance.

:func:`checks_frame` turns the rows gathered from a batch output (:func:`dpkit.batch.checks.gather_checks`) into
the published table and :func:`write_checks` writes it as ``checks.csv`` with ``provenance.json`` (the runs, the
commit, the machine, the date, the compute: what ``publish_tables`` writes); the published copy (:data:`PUBLISHED`)
is what the documentation reads (:func:`read_checks`; publishing: docs/guide/export.md).

Every read is checked (:func:`check_checks`): exactly the :data:`COLUMNS` in their order with their dtypes, at least
one row, one row per :data:`KEY` (a notebook run on several parameter sets in one batch, ``20_tables`` or
``40_baselines``, has each check once per run: the run's key tells them apart), a notebook's name, a run key of 12
lower-case hex digits, a check id and a claim that are not empty, a verdict and an expected verdict among
:data:`~dpkit.evaluation.verdicts.VERDICTS`, ``consistent`` equal to ``verdict == expected``, a confidence level in
(0, 1] or missing (exact checks); and a provenance file beside it that names every run of the table.
"""
from __future__ import annotations

import math
import os
import re
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
    write_published,
)
from dpkit.core.published import read_provenance as read_provenance_beside
from dpkit.evaluation.verdicts import VERDICTS

__all__ = ["COLUMNS", "KEY", "SCHEMA", "CHECKS_NAME", "PUBLISHED", "ChecksFileError", "checks_frame",
           "check_checks", "write_checks", "read_checks", "read_provenance"]

#: The columns of the published checks, in their order, and their pandas dtypes (``confidence`` is NaN for an exact
#: check; ``statistic`` and ``bound`` are NaN where the notebook recorded none, ±inf where it recorded an infinity).
COLUMNS: dict[str, str] = {
    "notebook": "object", "run_key": "object", "id": "object", "claim": "object", "statistic": "float64",
    "bound": "float64", "confidence": "float64", "verdict": "object", "expected": "object", "consistent": "bool",
}
#: One row per check of one run.
KEY: tuple[str, ...] = ("notebook", "run_key", "id")
CHECKS_NAME = "checks.csv"
_RUN_KEY = re.compile(r"[0-9a-f]{12}")
_TEXT = ("notebook", "run_key", "id", "claim", "verdict", "expected")


def _published() -> Path:
    from dpkit.core.paths import repo_root

    return (repo_root() or Path.cwd()) / "data" / "checks" / CHECKS_NAME


#: The published checks (``data/checks/checks.csv`` of the clone).
PUBLISHED: Path = _published()


class ChecksFileError(PublishedFileError):
    """A checks file (or its provenance) that is missing, or one that would be overwritten without ``replace``."""


#: The published checks' shape (:mod:`dpkit.core.published`).
SCHEMA = TableSchema(name="checks table", columns=COLUMNS, key=KEY, row="the check", writer="write_checks")


def _number(value: Any) -> float:
    """A metrics.json number as a float: ``None`` (a NaN written as JSON) is NaN, ``"inf"``/``"-inf"`` infinities."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return math.nan
    return float(value)


def checks_frame(rows: Iterable[Mapping[str, Any]]) -> pd.DataFrame:
    """The checks of a batch's runs as the published table: the :data:`COLUMNS` in their order with their dtypes,
    sorted by :data:`KEY`; ``consistent`` is computed (``verdict == expected``), not copied.

    Parameters
    ----------
    rows : iterable of mapping
        One mapping per check with ``notebook``, ``run_key``, ``id``, ``claim``, ``statistic``, ``bound``,
        ``confidence``, ``verdict`` and ``expected`` (the rows of :func:`dpkit.batch.checks.gather_checks`; other
        keys are dropped).

    Returns
    -------
    pandas.DataFrame
        The table, not yet checked (:func:`check_checks` does).

    Raises
    ------
    ValueError
        When a row lacks a column, or a number is not a number (naming the column, the value and the row's key).
    """
    out = []
    for r in rows:
        key = tuple(r.get(k) for k in KEY)
        missing = [c for c in COLUMNS if c != "consistent" and c not in r]
        if missing:
            raise ValueError(f"the check {key} lacks {missing}")
        row = {c: r[c] for c in COLUMNS if c != "consistent"}
        for c in ("statistic", "bound", "confidence"):
            try:
                row[c] = _number(r[c])
            except (TypeError, ValueError):
                raise ValueError(f"the check {key}: {c} {r[c]!r} is not a number") from None
        row["consistent"] = r["verdict"] == r["expected"]
        out.append(row)
    df = pd.DataFrame(out, columns=list(COLUMNS)).astype(COLUMNS)
    return df.sort_values(list(KEY), kind="stable").reset_index(drop=True)


def check_checks(df: pd.DataFrame, *, source: str) -> pd.DataFrame:
    """``df`` if it is a published checks table (module docstring); else a one-line ``ValueError`` naming ``source``,
    the column, the value and the check's key (notebook, run_key, id).

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
        Missing, extra or reordered columns, a wrong dtype, no rows, a duplicated key, an empty or malformed text, a
        verdict outside PASS/FAIL, a ``consistent`` that is not ``verdict == expected``, a confidence outside (0, 1].
    """
    SCHEMA.check_columns(list(df.columns), source=source)
    SCHEMA.check_dtypes(df, source=source)
    if df.empty:
        raise ValueError(f"{source}: no checks (no rows)")

    def bad(mask: Any, column: str, what: str) -> None:
        SCHEMA.refuse(df, mask, source=source, column=column, what=what)

    for c in _TEXT:
        bad([not isinstance(v, str) or not v.strip() for v in df[c]], c, "must be a non-empty text")
    bad([_RUN_KEY.fullmatch(v) is None for v in df["run_key"]], "run_key",
        "must be a batch run's key (12 lower-case hex digits)")
    for c in ("verdict", "expected"):
        bad(~df[c].isin(VERDICTS), c, f"must be one of {list(VERDICTS)}")
    bad(df.duplicated(list(KEY), keep="first"), "id", f"a second row with the same key {KEY}: one row per check of "
        "a run")
    bad(df["consistent"] != (df["verdict"] == df["expected"]), "consistent", "must be verdict == expected")
    conf = df["confidence"].to_numpy(dtype=float)
    bad(~np.isnan(conf) & ~((conf > 0) & (conf <= 1)), "confidence", "must be in (0, 1] or missing (an exact check)")
    return df


def read_provenance(path: str | os.PathLike) -> dict[str, Any]:
    """The ``provenance.json`` beside the checks file ``path``, a JSON object with its ``runs`` (a list).

    Raises
    ------
    ChecksFileError
        When it is missing; the message names it.
    ValueError
        When it is unreadable, not a JSON object or has no list of ``runs``.
    """
    return read_provenance_beside(path, what="the checks", error=ChecksFileError)


def _check_runs(df: pd.DataFrame, prov: Mapping[str, Any], *, source: str) -> None:
    """Every run of ``df`` is one of the provenance's runs (by its folder, the run key)."""
    listed = {str(r.get("folder")) for r in prov["runs"] if isinstance(r, Mapping)}
    SCHEMA.refuse(df, ~df["run_key"].isin(listed), source=source, column="run_key",
                  what=f"not a run of its {PROVENANCE_NAME}")


def write_checks(df: pd.DataFrame, folder: str | os.PathLike, provenance: Mapping[str, Any], *,
                 replace: bool = False) -> list[Path]:
    """Write ``checks.csv`` (checked first, every float to the bit) and ``provenance.json`` into ``folder``.

    Parameters
    ----------
    df : pandas.DataFrame
        The checks (:func:`checks_frame`).
    folder : path-like
        Where to write them (made if missing).
    provenance : mapping
        Where they came from (:func:`dpkit.batch.board_files.board_provenance`): it names every run of ``df``.
    replace : bool
        Replace files that are there (else nothing is written).

    Returns
    -------
    list of Path
        The two files written.

    Raises
    ------
    ChecksFileError
        When a file is there and ``replace`` is False: nothing is written.
    ValueError
        When ``df`` is not a checks table (:func:`check_checks`) or ``provenance`` does not name its runs.
    """
    folder = Path(folder)
    path, prov_path = folder / CHECKS_NAME, folder / PROVENANCE_NAME
    check_checks(df, source=str(path))
    if not isinstance(provenance.get("runs"), list):
        raise ValueError(f"{prov_path}: a provenance names its runs ('runs', a list)")
    _check_runs(df, provenance, source=str(path))
    return write_published({path: csv_text(df), prov_path: provenance_text(provenance)}, replace=replace,
                           error=ChecksFileError)


def read_checks(path: str | os.PathLike | None = None) -> pd.DataFrame:
    """The checks of ``path`` (a ``checks.csv`` or the folder holding it; default :data:`PUBLISHED`), checked
    (:func:`check_checks`), with a provenance beside them that names their runs.

    Parameters
    ----------
    path : path-like, optional
        The file or its folder.

    Returns
    -------
    pandas.DataFrame
        The :data:`COLUMNS` with their dtypes.

    Raises
    ------
    ChecksFileError
        When the file or the provenance beside it is missing; the message names it and how to make it.
    ValueError
        When it is not a checks table, or a row's run is not in the provenance.
    """
    path = Path(path) if path is not None else PUBLISHED
    if path.is_dir():
        path = path / CHECKS_NAME
    if not path.is_file():
        raise ChecksFileError(f"checks file not found: {path} (make reproduce, then `make checks-publish` publishes "
                              "its checks)")
    prov = read_provenance(path)
    df = SCHEMA.read_csv(path)
    check_checks(df, source=str(path))
    _check_runs(df, prov, source=str(path))
    return df

