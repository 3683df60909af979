"""The leaderboard as data: one row per (data set, σ, repetition, method), written as Parquet.

:func:`records_frame` turns a run's :class:`~dpkit.experiments.records.ReleaseRecord` s into the records table
(:data:`COLUMNS` with their dtypes, then the :data:`OPTIONAL_COLUMNS`, all three or none). Besides a release's numbers
(worst errors, the class supremum and its certified upper bound, the (ε, δ) spent, the proven numerical
``error_bound``, ``support_size``) every row carries its run's protocol (``run_seed``, ``n_queries``, ``J``, the
budget), so a new method runs on the very same workloads, and its own ``seeds``. The published board is
:data:`PUBLISHED` (:func:`read_board`); docs/guide/batch.md describes how a board is assembled and published.

Guarantees: every reader and writer (:func:`read_records`, :func:`read_board`, :func:`write_records`,
:func:`records_frame`, the assembler, board-add) checks records with the one validator :func:`check_records` (the
schema, the values, one budget, spends within it, paired repetitions); a written file is never replaced unless asked.

Errors: a table that is not a valid board raises :class:`InvalidRecordsError`, one line naming the file and the
problem.
"""
from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from dpkit.core.published import PROVENANCE_NAME, PublishedFileError, TableSchema, provenance_text, write_published
from dpkit.queries.release import PRIVACY_CLASSES
from dpkit.queries.supremum import DOMAINS as SUPREMUM_DOMAINS

__all__ = ["COLUMNS", "OPTIONAL_COLUMNS", "INTERVAL_TOLERANCE", "KEY", "PROTOCOL_COLUMNS", "NULLABLE_COLUMNS",
           "BUDGET_TOLERANCE", "PUBLISHED", "BOARD_SUPREMUM", "board_supremum",
           "SCHEMA", "RECORDS_NAME", "BoardFileError", "InvalidRecordsError",
           "records_frame", "records_rows", "check_records", "write_records", "read_records", "read_board", "write_provenance",
           "provenance_line", "typed_records", "board_data_arguments"]

#: The columns of the records table and their pandas dtypes (floats may be NaN, written as null).
COLUMNS: dict[str, str] = {
    "dataset": "object",
    "sigma": "float64",
    "rep": "int64",
    "method": "object",
    "privacy": "object",
    "eps_spent": "float64",
    "delta_spent": "float64",
    "abs": "float64",
    "rel": "float64",
    "sup_abs": "float64",
    "centre_abs": "float64",
    "time_s": "float64",
    "error_bound": "float64",
    "support_size": "int64",
    "seeds": "object",
    "run_seed": "int64",
    "n_queries": "int64",
    "J": "int64",
    "budget_epsilon": "float64",
    "budget_delta": "float64",
}
#: Columns after :data:`COLUMNS` in a table that has them (all or none; NaN or null where a record has none): the
#: certified upper bound on the class supremum, the search's effort (centres evaluated, starts screened; counts as
#: floats, since a record without a search has none) and the domain the search covered (:data:`dpkit.queries.supremum.DOMAINS`).
OPTIONAL_COLUMNS: dict[str, str] = {
    "sup_upper": "float64",
    "sup_evaluations": "float64",
    "sup_starts": "float64",
    "sup_domain": "object",
}
#: The domain of the board's class supremum: every centre of R^d, the class (2.1) as defined and the domain of the
#: upper bound ``sup_upper``, so that ``[sup_abs, sup_upper]`` brackets one quantity (a released answer function is
#: searched in the cube, :func:`dpkit.experiments.records.record_release`). Notebook 45 runs the board with it; a
#: board-add searches the entrant's releases in the stored board's domain (:func:`board_supremum`).
BOARD_SUPREMUM = "space"
#: ``sup_abs`` may exceed ``sup_upper`` by at most this (the search's rounding bound on ``sup_abs``, ≤ 10⁻¹² on the
#: board, with room): a record whose interval is empty beyond it is refused.
INTERVAL_TOLERANCE = 1e-9
#: The key of a row: one record per data set, σ, repetition and method.
KEY: tuple[str, ...] = ("dataset", "sigma", "rep", "method")
#: The columns that fix the workloads of a (data set, σ, repetition): a new method paired with the board uses them.
PROTOCOL_COLUMNS: tuple[str, ...] = ("run_seed", "n_queries", "J", "budget_epsilon", "budget_delta")
#: The columns that may be missing in a record (NaN or null): the class supremum and the worst single centre where
#: a release has none, and the seeds where a record has none. Every other value is present in every record.
NULLABLE_COLUMNS: tuple[str, ...] = ("sup_abs", "centre_abs", "seeds", *OPTIONAL_COLUMNS)
#: The file name of a run's (and an assembled board's) records (the provenance beside them:
#: :data:`dpkit.core.published.PROVENANCE_NAME`).
RECORDS_NAME = "records.parquet"


def _published() -> Path:
    from dpkit.core.paths import repo_root

    return (repo_root() or Path.cwd()) / "data" / "leaderboard" / RECORDS_NAME


#: The published board (``data/leaderboard/records.parquet`` of the clone).
PUBLISHED: Path = _published()


class BoardFileError(PublishedFileError):
    """A board's records file that is missing (or one that would be overwritten without ``replace``)."""


class InvalidRecordsError(ValueError):
    """A records file or table that is not a valid leaderboard records table (:func:`check_records`).

    The message is one line: the file (or table) and the problem, naming the column, the value and a record's key.
    """


#: The records' shape (:mod:`dpkit.core.published`).
SCHEMA = TableSchema(name="leaderboard records table", columns=COLUMNS, optional=OPTIONAL_COLUMNS, key=KEY,
                     row="the record", writer="write_records", invalid=InvalidRecordsError)


def _field(rec: Any, name: str) -> Any:
    if isinstance(rec, Mapping):
        return rec.get(name)
    return getattr(rec, name, None)


def _seeds_json(seeds: Any) -> str | None:
    if seeds is None:
        return None
    return json.dumps(seeds, sort_keys=True, default=lambda o: o.tolist() if hasattr(o, "tolist") else str(o))


def records_frame(records: Iterable[Any], *, dataset: str, run_seed: int, n_queries: int, J: int,
                  epsilon: float, delta: float) -> pd.DataFrame:
    """The records table (:data:`COLUMNS`) of one data set's :class:`~dpkit.experiments.records.ReleaseRecord` s.

    ``centre_abs`` and ``seeds`` are taken where the records have them (NaN and null otherwise); ``seeds`` is
    written as a JSON string. The :data:`OPTIONAL_COLUMNS` are written too (``sup_upper`` from the record, the
    effort from its ``supremum``; NaN where a record has none). ``run_seed``, ``n_queries``, ``J``, ``epsilon`` and
    ``delta`` are the run's protocol (notebook 45's ``SEED``, ``N_QUERIES``, ``J``, ``EPSILON``, ``DELTA``).

    Raises
    ------
    ValueError
        For two records of the same key (:data:`KEY`).
    """
    df = records_rows(records, dataset=dataset, run_seed=run_seed, n_queries=n_queries, J=J, epsilon=epsilon,
                      delta=delta)
    check_records(df, source=f"records of {dataset}")
    return df


def records_rows(records: Iterable[Any], *, dataset: str, run_seed: int, n_queries: int, J: int,
                 epsilon: float, delta: float) -> pd.DataFrame:
    """The rows :func:`records_frame` makes of ``records``, typed but not checked as a board: a sample of
    repetitions (e.g. those a refresh computes again, :mod:`dpkit.board.refresh`) is not a board of its own."""
    rows = []
    for r in records:
        sup, centre, upper = _field(r, "sup_abs"), _field(r, "centre_abs"), _field(r, "sup_upper")
        search = _field(r, "supremum") or {}
        applicable = bool(search.get("applicable"))
        rows.append({
            "dataset": str(dataset), "sigma": float(_field(r, "sigma")), "rep": int(_field(r, "rep")),
            "method": str(_field(r, "method")), "privacy": str(_field(r, "privacy")),
            "eps_spent": float(_field(r, "eps_spent")), "delta_spent": float(_field(r, "delta_spent")),
            "abs": float(_field(r, "abs")), "rel": float(_field(r, "rel")),
            "sup_abs": float("nan") if sup is None else float(sup),
            "centre_abs": float("nan") if centre is None else float(centre),
            "time_s": float(_field(r, "time_s")), "error_bound": float(_field(r, "error_bound")),
            "support_size": int(_field(r, "support_size")), "seeds": _seeds_json(_field(r, "seeds")),
            "run_seed": int(run_seed), "n_queries": int(n_queries), "J": int(J),
            "budget_epsilon": float(epsilon), "budget_delta": float(delta),
            "sup_upper": float("nan") if upper is None else float(upper),
            "sup_evaluations": float(search["n_evaluations"]) if applicable else float("nan"),
            "sup_starts": float(search["n_starts"]) if applicable and "n_starts" in search else float("nan"),
            "sup_domain": str(search["domain"]) if sup is not None and search.get("domain") else None,
        })
    return typed_records(pd.DataFrame(rows, columns=[*COLUMNS, *OPTIONAL_COLUMNS]))


def typed_records(df: pd.DataFrame) -> pd.DataFrame:
    """``df`` with the dtypes of :data:`COLUMNS` (e.g. an empty records table that keeps its dtypes), and of the
    :data:`OPTIONAL_COLUMNS` it has.

    Parameters
    ----------
    df : pandas.DataFrame
        A table with the :data:`COLUMNS`.

    Returns
    -------
    pandas.DataFrame
        A copy with each column cast to its dtype.
    """
    return df.astype(SCHEMA.dtypes([str(c) for c in df.columns]))


#: Relative (and absolute) slack of the budget check: the ledger's (:meth:`dpkit.core.accounting.Ledger.can_spend`),
#: so a spend the ledger let through is within the budget here too.
BUDGET_TOLERANCE = 1e-12

#: Per column, the values a record may hold (NaN only in :data:`NULLABLE_COLUMNS`), as a test and its description.
_RANGES: dict[str, tuple[Any, str]] = {
    "sigma": (lambda v: np.isfinite(v) & (v > 0), "a finite positive kernel width"),
    "rep": (lambda v: v >= 0, "a repetition index ≥ 0"),
    "eps_spent": (lambda v: v >= 0, "a spent ε ≥ 0 (∞ for a non-private reference)"),
    "delta_spent": (lambda v: (v >= 0) & (v <= 1), "a spent δ in [0, 1]"),
    "abs": (lambda v: np.isfinite(v) & (v >= 0), "a finite non-negative error"),
    "rel": (lambda v: np.isfinite(v) & (v >= 0), "a finite non-negative error"),
    "sup_abs": (lambda v: np.isnan(v) | (np.isfinite(v) & (v >= 0)), "a finite non-negative error or missing"),
    "sup_upper": (lambda v: np.isnan(v) | (np.isfinite(v) & (v >= 0)), "a finite non-negative bound or missing"),
    "sup_evaluations": (lambda v: np.isnan(v) | ((v >= 1) & (v == np.floor(v))), "a count ≥ 1 or missing"),
    "sup_starts": (lambda v: np.isnan(v) | ((v >= 1) & (v == np.floor(v))), "a count ≥ 1 or missing"),
    "centre_abs": (lambda v: np.isnan(v) | (np.isfinite(v) & (v >= 0)), "a finite non-negative error or missing"),
    "time_s": (lambda v: np.isfinite(v) & (v >= 0), "a finite non-negative time"),
    "error_bound": (lambda v: np.isfinite(v) & (v >= 0), "a finite non-negative bound"),
    "support_size": (lambda v: v >= 0, "a size ≥ 0"),
    "run_seed": (lambda v: v >= 0, "a seed ≥ 0"),
    "n_queries": (lambda v: v >= 1, "a number of queries ≥ 1"),
    "J": (lambda v: v >= 1, "a number of mixture components ≥ 1"),
    "budget_epsilon": (lambda v: np.isfinite(v) & (v > 0), "a finite positive ε"),
    "budget_delta": (lambda v: (v >= 0) & (v < 1), "a δ in [0, 1)"),
}


def _one_line(text: object) -> str:
    """``text`` on one line (pyarrow's messages may span several)."""
    return " ".join(str(text).split())


def _plain(x: Any) -> Any:
    """A numpy scalar as the Python value (for a message)."""
    return x.item() if isinstance(x, np.generic) else x


def _records_at(df: pd.DataFrame, mask: Any) -> str:
    """The key of the first record where ``mask`` holds, and how many others it holds for."""
    rows = df.loc[np.asarray(mask, dtype=bool), list(KEY)]
    r = rows.iloc[0]
    more = f" and {len(rows) - 1} other record(s)" if len(rows) > 1 else ""
    return f"record ({r['dataset']}, σ={float(r['sigma']):g}, rep {int(r['rep'])}, {r['method']}){more}"


def _check_values(df: pd.DataFrame, source: str) -> None:
    """Present values of the right kind and range in every record."""
    for c, t in SCHEMA.dtypes(list(df.columns)).items():
        col = df[c]
        if t == "object":
            absent = col.isna().to_numpy()
            kind = pd.api.types.infer_dtype(col, skipna=True)
            if kind not in ("string", "empty"):
                raise InvalidRecordsError(f"{source}: column {c!r} holds {kind} values, not strings")
        else:
            absent = np.isnan(col.to_numpy(dtype=float)) if t == "float64" else np.zeros(len(col), dtype=bool)
        if c not in NULLABLE_COLUMNS and absent.any():
            raise InvalidRecordsError(f"{source}: {c} is missing (NaN or null) in {_records_at(df, absent)}")
        if c in _RANGES:
            test, what = _RANGES[c]
            v = col.to_numpy()
            bad = ~test(v) if t == "int64" else ~(test(v.astype(float)) | (absent & (c in NULLABLE_COLUMNS)))
            if bad.any():
                raise InvalidRecordsError(f"{source}: {c} = {_plain(v[bad][0])!r} in {_records_at(df, bad)}: {c} must be "
                                          f"{what}")
    for c in ("dataset", "method"):
        empty = (df[c] == "").to_numpy()
        if empty.any():
            raise InvalidRecordsError(f"{source}: {c} is empty in {_records_at(df, empty)}")
    odd = ~df["privacy"].isin(PRIVACY_CLASSES).to_numpy()
    if odd.any():
        raise InvalidRecordsError(f"{source}: privacy = {df['privacy'].to_numpy()[odd][0]!r} in {_records_at(df, odd)}: "
                                  f"the privacy classes are {list(PRIVACY_CLASSES)}")


def _check_board(df: pd.DataFrame, source: str) -> None:
    """One protocol and budget, spends within it, one privacy class per method, the same repetitions everywhere."""
    for c in PROTOCOL_COLUMNS:  # one budget (ε, δ) and one protocol: the same workloads for every record
        values = np.unique(df[c].to_numpy())
        if len(values) > 1:
            what = ("a board has one budget (one ε, one δ)" if c.startswith("budget_") else
                    "a board has one protocol (its records are paired on the same workloads)")
            raise InvalidRecordsError(f"{source}: {c} takes {len(values)} values {values.tolist()[:5]}; {what}")
    budget_eps, budget_delta = float(df["budget_epsilon"].iloc[0]), float(df["budget_delta"].iloc[0])
    private = (df["privacy"] != "non-private").to_numpy()
    eps, delta = df["eps_spent"].to_numpy(dtype=float), df["delta_spent"].to_numpy(dtype=float)
    for name, spent, budget in (("ε", eps, budget_eps), ("δ", delta, budget_delta)):
        over = private & (spent > budget * (1 + BUDGET_TOLERANCE) + BUDGET_TOLERANCE)
        if over.any():
            raise InvalidRecordsError(f"{source}: {_records_at(df, over)} spent {name} = {spent[over][0]:g}, over the "
                                      f"board's budget {name} = {budget:g}")
    pure = (df["privacy"] == "ε-DP").to_numpy() & (delta != 0)
    if pure.any():
        raise InvalidRecordsError(f"{source}: {_records_at(df, pure)}: ε-DP, but δ = {delta[pure][0]:g} spent; an "
                                  "ε-DP record spends δ = 0 exactly")
    classes = df.groupby("method", sort=True)["privacy"].nunique()
    if (classes > 1).any():
        m = classes.index[classes > 1][0]
        raise InvalidRecordsError(f"{source}: method {m!r} has the privacy classes "
                                  f"{sorted(df.loc[df['method'] == m, 'privacy'].unique())}; one per method")
    reps = np.unique(df["rep"].to_numpy())
    if reps[-1] != len(reps) - 1:
        lacking = sorted(set(range(int(reps[-1]) + 1)) - set(reps.tolist()))
        raise InvalidRecordsError(f"{source}: no record has repetition(s) {lacking[:10]}; the repetitions of a board are "
                                  f"0…R−1 (the evaluation half is the odd ones)")
    cells = ["dataset", "sigma", "method"]
    sizes = df.groupby(cells, sort=True).size()
    short = sizes[sizes != len(reps)]
    if len(short):
        ds, sigma, m = short.index[0]
        have = set(df.loc[(df["dataset"] == ds) & (df["sigma"] == sigma) & (df["method"] == m), "rep"].tolist())
        lacking = sorted(set(range(len(reps))) - have)
        more = f" (and {len(short) - 1} other cell(s) and method(s))" if len(short) > 1 else ""
        raise InvalidRecordsError(f"{source}: cell ({ds}, σ={float(sigma):g}): method {m!r} lacks repetition(s) "
                                  f"{lacking[:10]} of 0…{len(reps) - 1}{more}; every method of every cell has the same "
                                  "repetitions (the comparisons are paired)")
    with_sup = df["sup_abs"].notna().groupby([df[c] for c in cells], sort=True).sum()
    partial = with_sup[(with_sup > 0) & (with_sup < len(reps))]
    if len(partial):
        ds, sigma, m = partial.index[0]
        raise InvalidRecordsError(f"{source}: cell ({ds}, σ={float(sigma):g}): method {m!r} has a class supremum "
                                  f"(sup_abs) in {int(partial.iloc[0])} of its {len(reps)} repetitions; a method has "
                                  "one in every repetition or in none")
    if "sup_upper" in df.columns:
        _check_intervals(df, source, cells, len(reps))
        _check_domain(df, source, cells)


def _check_domain(df: pd.DataFrame, source: str, cells: list[str]) -> None:
    """``sup_domain`` only beside a ``sup_abs``, one of :data:`dpkit.queries.supremum.DOMAINS`, and one domain for
    every repetition of a method in a cell (a missing one is the cube: the records written before the column).

    Every record's ``sup_abs`` is a certified lower bound on the supremum over all of R^d, whichever domain its
    search covered (the cube is part of R^d); a board searches a weighted database's releases over R^d and a
    released answer function's in the cube (its search over R^d is not localised)."""
    dom, has_sup = df["sup_domain"], df["sup_abs"].notna().to_numpy()
    alone = ~has_sup & dom.notna().to_numpy()
    if alone.any():
        raise InvalidRecordsError(f"{source}: {_records_at(df, alone)} has a sup_domain but no sup_abs")
    odd = dom.notna().to_numpy() & ~dom.isin(SUPREMUM_DOMAINS).to_numpy()
    if odd.any():
        raise InvalidRecordsError(f"{source}: sup_domain = {dom.to_numpy()[odd][0]!r} in {_records_at(df, odd)}: the "
                                  f"domains are {list(SUPREMUM_DOMAINS)}")
    read = dom.where(~has_sup, dom.fillna("cube"))
    several = read[has_sup].groupby([df.loc[has_sup, c] for c in cells], sort=True).nunique()
    if (several > 1).any():
        ds, sigma, m = several.index[several > 1][0]
        raise InvalidRecordsError(f"{source}: cell ({ds}, σ={float(sigma):g}): method {m!r} has its class supremum "
                                  "searched in several domains (sup_domain; a missing one is the cube); one domain "
                                  "in every repetition")


def board_supremum(stored: pd.DataFrame) -> str:
    """The domain a stored board searched its class supremum in (notebook 45's ``supremum``): ``"space"`` when any
    record's ``sup_domain`` is (a weighted database's search over R^d), else ``"cube"`` (the boards written before
    the column searched the cube).

    Parameters
    ----------
    stored : pandas.DataFrame
        A valid records table.

    Returns
    -------
    str
        One of :data:`dpkit.queries.supremum.DOMAINS`.
    """
    if "sup_domain" not in stored.columns:
        return "cube"
    return "space" if (stored["sup_domain"] == "space").any() else "cube"


def _check_intervals(df: pd.DataFrame, source: str, cells: list[str], reps: int) -> None:
    """``sup_upper`` in every repetition of a method in a cell or in none, only beside a ``sup_abs``, and never below
    it (beyond :data:`INTERVAL_TOLERANCE`): ``[sup_abs, sup_upper]`` holds the class supremum."""
    upper, lower = df["sup_upper"].to_numpy(dtype=float), df["sup_abs"].to_numpy(dtype=float)
    alone = ~np.isnan(upper) & np.isnan(lower)
    if alone.any():
        raise InvalidRecordsError(f"{source}: {_records_at(df, alone)} has a sup_upper but no sup_abs; the upper bound "
                                  "is recorded with the search")
    empty = upper < lower - INTERVAL_TOLERANCE
    if empty.any():
        raise InvalidRecordsError(f"{source}: sup_upper = {float(upper[empty][0])!r} < sup_abs = {float(lower[empty][0])!r} in "
                                  f"{_records_at(df, empty)}: a certified upper bound below the witness's error")
    with_up = df["sup_upper"].notna().groupby([df[c] for c in cells], sort=True).sum()
    partial = with_up[(with_up > 0) & (with_up < reps)]
    if len(partial):
        ds, sigma, m = partial.index[0]
        raise InvalidRecordsError(f"{source}: cell ({ds}, σ={float(sigma):g}): method {m!r} has a sup_upper in "
                                  f"{int(partial.iloc[0])} of its {reps} repetitions; a method has one in every "
                                  "repetition or in none")


def check_records(df: pd.DataFrame, *, source: str) -> pd.DataFrame:
    """``df`` if it is a valid leaderboard records table; the one check every reader and writer of records makes.

    A valid table has

    * exactly the :data:`COLUMNS`, in their order, with their dtypes (a table in another column order is refused,
      not reordered: a file in another order was not written by :func:`write_records`, and a reader by position
      would misread it), strings in the string columns; then all the :data:`OPTIONAL_COLUMNS` in their order, or
      none;
    * every value present except in :data:`NULLABLE_COLUMNS`; finite non-negative errors (``abs``, ``rel``, and
      ``sup_abs``, ``centre_abs`` where present), times and bounds; σ > 0, repetitions ≥ 0, a privacy class of
      :data:`~dpkit.queries.release.PRIVACY_CLASSES`; non-empty data set and method names;
    * a unique key (:data:`KEY`);
    * one value of each :data:`PROTOCOL_COLUMNS` over the table: one budget (ε, δ), one run seed, workload size and
      J (the records of a cell are paired on the same workloads);
    * every private record's spent (ε, δ) within that budget (up to :data:`BUDGET_TOLERANCE`, the ledger's
      slack), and δ = 0 exactly for an ε-DP record; non-private references (ε = ∞) are not held to it;
    * one privacy class per method;
    * the repetitions 0 … R−1, all of them for every method of every (data set, σ) (the board's comparisons are
      paired by repetition and split into even and odd ones: :mod:`dpkit.board.statistics`);
    * a class supremum (``sup_abs``) in every repetition of a method in a cell or in none (the ranking by it uses
      only the methods with one in every repetition);
    * where the table has ``sup_upper``: likewise in every repetition or none, only beside a ``sup_abs``, and never
      below it (beyond :data:`INTERVAL_TOLERANCE`); ``sup_domain`` only beside a ``sup_abs``, one of
      :data:`dpkit.queries.supremum.DOMAINS`, one domain per method and cell (a missing one is the cube).

    An empty table (no records) is valid. The check is vectorised (the published board's 23,250 records take a few
    hundredths of a second).

    Parameters
    ----------
    df : pandas.DataFrame
        The records.
    source : str
        What to name in an error (the file, or the table's origin).

    Returns
    -------
    pandas.DataFrame
        ``df`` itself.

    Raises
    ------
    InvalidRecordsError
        A :class:`ValueError` whose one-line message names ``source`` and the first problem found (the column, the
        value and a record's key).
    TypeError
        ``df`` is not a DataFrame.
    """
    if not isinstance(df, pd.DataFrame):
        raise TypeError(f"{source}: a records table is a pandas DataFrame; got {type(df).__name__}")
    SCHEMA.check_columns(list(df.columns), source=source)
    SCHEMA.check_dtypes(df, source=source, hint="read a records file with read_records")
    if df.empty:
        return df
    _check_values(df, source)
    dup = df.duplicated(list(KEY), keep=False).to_numpy()
    if dup.any():
        raise InvalidRecordsError(f"{source}: {int(dup.sum())} rows share a key {KEY}, e.g. {_records_at(df, dup)}")
    _check_board(df, source)
    return df


def write_records(df: pd.DataFrame, path: str | os.PathLike, *, replace: bool = False) -> Path:
    """Write a records table to ``path`` (Parquet, atomically), checked first (:func:`check_records`).

    Raises
    ------
    BoardFileError
        When ``path`` exists and ``replace`` is False: nothing is overwritten.
    """
    path = Path(path)
    check_records(df, source=str(path))
    import io

    buf = io.BytesIO()
    df.to_parquet(buf, index=False, engine="pyarrow", compression="zstd")
    return write_published({path: buf.getvalue()}, replace=replace, error=BoardFileError)[0]


#: The Parquet types of the :data:`COLUMNS`' dtypes (a string column of nulls only is written as ``null``).
_ARROW_TYPES = {"object": ("string", "large_string", "string_view", "null"), "float64": ("double",), "int64": ("int64",)}


def read_records(path: str | os.PathLike) -> pd.DataFrame:
    """A records table from ``path``, checked (:func:`check_records`): the file's schema (its columns, their order
    and Parquet types) first, then its records.

    Raises
    ------
    BoardFileError
        When the file is missing (the message names it).
    InvalidRecordsError
        When it is not a Parquet file or not a valid records table (one line naming the file and the problem).
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = Path(path)
    if not path.is_file():
        raise BoardFileError(f"leaderboard records file not found: {path}")
    try:
        table = pq.read_table(path)
    except (pa.ArrowException, OSError) as exc:
        raise InvalidRecordsError(f"{path}: not a readable Parquet file ({_one_line(exc)})") from exc
    schema = table.schema
    names = [n for n in schema.names if not n.startswith("__index_level_")]  # a pandas index written beside
    SCHEMA.check_columns(names, source=str(path))
    columns = SCHEMA.dtypes(names)
    wrong = {c: str(schema.field(c).type) for c, t in columns.items() if str(schema.field(c).type) not in _ARROW_TYPES[t]}
    if wrong:
        raise InvalidRecordsError(f"{path}: column type(s) {wrong}; expected "
                                  f"{({c: _ARROW_TYPES[columns[c]][0] for c in wrong})}")
    nulls = {c: table.column(c).null_count for c, t in COLUMNS.items() if t == "int64"}
    if any(nulls.values()):
        raise InvalidRecordsError(f"{path}: null values in integer column(s) "
                                  f"{({c: n for c, n in nulls.items() if n})}")
    df = table.select(list(columns)).to_pandas()
    df = df.astype({c: t for c, t in columns.items() if t == "object"})
    return check_records(df, source=str(path))


def read_board(path: str | os.PathLike | None = None) -> pd.DataFrame:
    """The board's records (default: the published board :data:`PUBLISHED`) as a DataFrame (:data:`COLUMNS`).

    Raises
    ------
    BoardFileError
        When the file is missing; the message names it (the published board is written by
        ``python -m dpkit.batch.assemble leaderboard <batch folder> --publish``).
    """
    path = Path(path) if path is not None else PUBLISHED
    if not path.is_file():
        how = (" (publish a board with `python -m dpkit.batch.assemble leaderboard <batch folder> --publish`)"
               if path == PUBLISHED else "")
        raise BoardFileError(f"leaderboard records file not found: {path}{how}")
    return read_records(path)


def write_provenance(prov: Mapping[str, Any], path: str | os.PathLike, *, replace: bool = False) -> Path:
    """Write a board's provenance as JSON (atomically); refuses to overwrite unless ``replace``.

    Raises
    ------
    BoardFileError
        When ``path`` exists and ``replace`` is False.
    """
    return write_published({Path(path): provenance_text(prov)}, replace=replace, error=BoardFileError)[0]


def _runs_commits_text(runs: Any) -> str:
    """The runs' commits and whether their trees were clean (each run's ``git``: ``{commit, dirty}``), or how many
    runs did not record theirs."""
    seen: dict[tuple[str, bool | None], int] = {}
    unknown = 0
    for run in runs if isinstance(runs, list) else []:
        git = run.get("git") if isinstance(run, dict) else None
        if not isinstance(git, dict) or not git.get("commit"):
            unknown += 1
            continue
        key = (str(git["commit"])[:12], git.get("dirty"))
        seen[key] = seen.get(key, 0) + 1
    state = {False: "clean", True: "uncommitted changes", None: "tree state not recorded"}
    parts = [f"{c} ({n} run(s), {state[d if d is None else bool(d)]})" for (c, d), n in sorted(seen.items(),
                                                                                               key=str)]
    if unknown and not parts:
        return "Runs' commits not recorded."
    if unknown:
        parts.append(f"not recorded for {unknown} run(s)")
    return "The runs' commits: " + "; ".join(parts) + "." if parts else "No runs recorded."


def _refresh_text(refresh: Any) -> str:
    """One sentence on a refresh recorded in a provenance (:func:`dpkit.batch.board_files.refreshed_provenance`)."""
    if not isinstance(refresh, dict):
        return "A refresh is recorded unreadably."
    git = refresh.get("git") or {}
    commit = str(git.get("commit") or "an unrecorded commit")[:12] + (" (uncommitted changes)" if git.get("dirty")
                                                                      else "")
    verified = refresh.get("verified") or {}
    reps = verified.get("reps")
    compute = refresh.get("compute_s")
    return (f"Refreshed {str(refresh.get('date', 'on an unrecorded date'))[:10]} at {commit}: "
            f"{', '.join(map(str, refresh.get('methods') or [])) or 'no method'} rerun; the "
            f"{len(verified.get('methods') or [])} others reproduced to the bit on repetitions "
            f"{', '.join(map(str, reps)) if isinstance(reps, list) else '?'} ({verified.get('records', '?')} records"
            + (f"; {float(compute) / 60:.0f} min)." if compute is not None else ")."))


def provenance_line(records_path: str | os.PathLike) -> str:
    """One sentence on where the board of ``records_path`` came from, read from the ``provenance.json`` beside it
    (:func:`write_provenance`): the date, dpkit's version and commit, the runs, their compute and the machine, each
    run's commit and whether its tree was clean (or that a run did not record it), and (where the runs recorded
    their repetitions' times) the wall time projected on more workers; then one sentence per refresh
    (:mod:`dpkit.board.refresh`): its date and commit, the methods run again, the records verified.

    Raises
    ------
    BoardFileError
        When there is no provenance file beside the records, or it is not the JSON object the assembler writes.
    """
    path = Path(records_path).parent / PROVENANCE_NAME
    try:
        prov = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise BoardFileError(f"{path}: no readable provenance beside the records ({exc})") from exc
    if not isinstance(prov, dict) or "runs" not in prov:
        raise BoardFileError(f"{path}: not a board provenance (no 'runs')")
    git = prov.get("git") or {}
    commit = str(git.get("commit") or "unknown commit")[:12] + (" (uncommitted changes)" if git.get("dirty") else "")
    machine = prov.get("machine") or {}
    compute = prov.get("compute_s")
    cost = f"{float(compute) / 3600:.1f} h of compute" if compute is not None else "compute not recorded"
    line = (f"Assembled {str(prov.get('date', 'on an unrecorded date'))[:10]} by dpkit {prov.get('dpkit_version', '?')} "
            f"at {commit} from {len(prov['runs'])} run(s): {cost} on {machine.get('cpu_count', '?')} CPU(s) "
            f"({machine.get('platform', 'unknown platform')}).")
    line += " " + _runs_commits_text(prov["runs"])
    projection = prov.get("projection")
    if isinstance(projection, list) and projection:
        line += (" Its repetitions, scheduled longest first on " + "/".join(str(p["workers"]) for p in projection)
                 + " workers: " + "/".join(f"{float(p['list_schedule_s']) / 60:.0f}" for p in projection)
                 + " min of wall time (start-up and assembly not included).")
    for r in prov.get("refreshes") or []:
        line += " " + _refresh_text(r)
    return line


def board_data_arguments(records: str | os.PathLike) -> dict[str, Mapping[str, Any]]:
    """The data sets a board of its own was made on, from the ``provenance.json`` beside its ``records``: name ->
    ``{"argument": what to load it by, "fingerprint": ...}``; ``{}`` for a board without them (the published one).

    Raises
    ------
    InvalidRecordsError
        For a ``provenance.json`` that cannot be read, naming it."""
    prov_path = Path(records).parent / PROVENANCE_NAME
    if not prov_path.is_file():
        return {}
    try:
        prov = json.loads(prov_path.read_text())
    except (OSError, ValueError) as exc:
        raise InvalidRecordsError(f"{prov_path} is unreadable ({exc})") from exc
    data = prov.get("data") if isinstance(prov, dict) else None
    return dict(data) if isinstance(data, dict) else {}
