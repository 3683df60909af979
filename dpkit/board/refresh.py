"""board-refresh: named methods of a stored board run again with the current code, the others proven unchanged.

A method's records change when its own code or configuration changes (a new calibration, a fixed bug); every record's
streams are keyed by values (data set, σ, repetition, method name: :mod:`dpkit.experiments.protocol`), so the other
methods' records do not depend on it. :func:`refresh_records` re-runs only the named methods on every cell of the
stored board and keeps the others' records once the current code has reproduced a sample of them to the bit; the
result is then the board a full regeneration with the current code would give, without recomputing every method.

Algorithm
---------
1. Read the stored board and its protocol (:func:`~dpkit.board.add.board_plan`); each name must be on it, and every
   method on it must be one of the board's registered methods (:func:`~dpkit.board.report.board_methods` at the
   board's budget), so the current code can compute it again.
2. **Verify the others** (:func:`verify_unchanged`): every other method of the board on ``verify_reps`` repetitions of
   every data set (evenly spread from the first to the last, :func:`~dpkit.experiments.adoption.verified_indices`;
   default the first and the last), computed with the board's seeds (:func:`~dpkit.experiments.protocol.
   run_repetitions`); each record must equal the stored one in every column but the measured ``time_s``, floats to
   the bit. Any difference stops the refresh (:class:`RefreshRefusedError`, naming the method, the record, the column
   and both values): the board must then be regenerated whole.
3. **Re-run the named methods** on every cell with the board's seeds (:func:`~dpkit.board.add.entrant_records`, the
   path of board-add; each record within the board's budget).
4. Replace their records; the result is checked as every board is (:func:`~dpkit.board.records.check_records`).

The batch layer (:func:`dpkit.batch.board_files.refreshed_provenance`, :mod:`dpkit.batch.cli`) writes the result
with its provenance, assembles it and publishes it on request (docs/guide/batch.md, "Refreshing a board").

Errors: :class:`RefreshRefusedError` (a ``ValueError``) for a name not on the board or not registered, an unregistered
method on the board, a record the current code does not reproduce, or a re-run whose records do not cover the board's
cells.
"""
from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from dpkit.board.add import BoardPlan, board_plan, entrant_records, load_board_data
from dpkit.board.records import KEY, OPTIONAL_COLUMNS, check_records, records_rows
from dpkit.board.report import board_methods
from dpkit.core.validation import check_positive_int
from dpkit.experiments.adoption import DEFAULT_VERIFY_REPS, verified_indices
from dpkit.experiments.protocol import run_repetitions

__all__ = ["RefreshRefusedError", "Refresh", "UNCOMPARED", "refresh_plan", "verify_unchanged", "refresh_records",
           "summary_text"]

#: The columns a record computed again need not equal: the measured release time.
UNCOMPARED: tuple[str, ...] = ("time_s",)


class RefreshRefusedError(ValueError):
    """A refresh that cannot give the board a full regeneration would give (the message says why)."""


@dataclass(frozen=True)
class Refresh:
    """A refreshed board and what was done to it.

    Attributes
    ----------
    records : pandas.DataFrame
        The board with the named methods' records replaced (checked).
    methods : tuple of str
        The methods re-run on every cell.
    verified : dict
        ``{"methods": [...], "reps": [...], "records": n}``: the other methods, the repetitions of every data set
        computed again and the number of records found equal.
    changed : dict
        Per re-run method, ``{"records": n, "abs_ratio_median": r}``: how many of its records differ from the stored
        ones (any column but ``time_s``) and the median over its cells of the new mean ``abs`` over the stored one.
    compute_s : float
        The seconds the verification and the re-runs took in this process (wall time).
    """

    records: pd.DataFrame
    methods: tuple[str, ...]
    verified: dict[str, Any] = field(default_factory=dict)
    changed: dict[str, dict[str, Any]] = field(default_factory=dict)
    compute_s: float = 0.0

    def summary(self) -> dict[str, Any]:
        """The JSON-able record of this refresh (for a provenance): methods, verification, changes, compute."""
        return {"methods": list(self.methods), "verified": dict(self.verified), "changed": dict(self.changed),
                "compute_s": round(float(self.compute_s), 1)}


def refresh_plan(stored: pd.DataFrame, names: Sequence[str]) -> tuple[BoardPlan, dict[str, Any], list[str]]:
    """The stored board's plan (its class supremum's domain; none where no record has one), its methods at its
    budget ``{name: method}`` (every method on the board, in :func:`~dpkit.board.report.board_methods` order) and the
    other methods (those not named).

    Raises
    ------
    RefreshRefusedError
        For no names, a repeated name, a name not on the board, or a method of the board that is not registered
        (naming them).
    """
    if isinstance(names, str) or not names:
        raise RefreshRefusedError(f"name the methods to re-run (a non-empty list of names on the board); got {names!r}")
    names = [str(n) for n in names]
    if len(set(names)) != len(names):
        raise RefreshRefusedError(f"each method once; got {names}")
    on_board = sorted(set(stored["method"]))
    absent = [n for n in names if n not in on_board]
    if absent:
        raise RefreshRefusedError(f"not on the stored board: {absent} (its methods: {on_board}); a new method joins "
                                  "with board-add")
    plan = board_plan(stored)
    if stored["sup_abs"].isna().all():  # a board without the class supremum: none is searched (as it was made)
        plan = dataclasses.replace(plan, supremum=None)
    try:
        methods = board_methods([m for m in on_board if ":" not in m], epsilon=plan.epsilon, delta=plan.delta)
    except ValueError as exc:
        raise RefreshRefusedError(f"the stored board holds a method that is not registered, which the current code "
                                  f"cannot compute again: {exc}") from None
    unregistered = [m for m in on_board if m not in methods]
    if unregistered:
        raise RefreshRefusedError(f"the stored board holds methods that are not registered, which the current code "
                                  f"cannot compute again: {unregistered}")
    return plan, methods, [m for m in methods if m not in names]


def _first_difference(stored: pd.DataFrame, new: pd.DataFrame) -> tuple[dict[str, Any], str, Any, Any] | None:
    """The first record of ``new`` (key order) differing from ``stored`` outside :data:`UNCOMPARED`, as
    ``(key, column, stored value, new value)``; a record of ``new`` missing from ``stored`` gives column ``"(record)"``."""
    key = list(KEY)
    joined = new.merge(stored, on=key, how="left", suffixes=("", "_stored"), indicator=True)
    joined = joined.sort_values(key, kind="stable", ignore_index=True)
    lone = joined[joined["_merge"] != "both"]
    if len(lone):
        return lone[key].iloc[0].to_dict(), "(record)", None, "not on the stored board"
    columns = [c for c in new.columns if c not in key and c not in UNCOMPARED and f"{c}_stored" in joined]
    for i in range(len(joined)):
        row = joined.iloc[i]
        for c in columns:
            a, b = row[f"{c}_stored"], row[c]
            if not _same(a, b):
                return row[key].to_dict(), c, a, b
    return None


def _same(a: Any, b: Any) -> bool:
    """Equal values: floats to the bit (NaN equals NaN; -0.0 differs from 0.0), missing equals missing."""
    a_missing = a is None or (isinstance(a, float) and math.isnan(a))
    b_missing = b is None or (isinstance(b, float) and math.isnan(b))
    if a_missing or b_missing:
        return a_missing and b_missing
    if isinstance(a, (float, np.floating)) or isinstance(b, (float, np.floating)):
        return bool(np.float64(a).tobytes() == np.float64(b).tobytes())
    if isinstance(a, (int, np.integer)) and isinstance(b, (int, np.integer)):
        return int(a) == int(b)
    return bool(a == b)


def _frame(recs: Sequence[Any], ds: str, plan: BoardPlan, stored: pd.DataFrame) -> pd.DataFrame:
    """:func:`~dpkit.board.records.records_rows` of one data set's records at the board's protocol, with the stored
    board's columns (a board written before the optional columns existed compares without them)."""
    df = records_rows(recs, dataset=ds, run_seed=plan.seed, n_queries=plan.n_queries, J=plan.J,
                       epsilon=plan.epsilon, delta=plan.delta)
    if not set(OPTIONAL_COLUMNS) & set(stored.columns):
        df = df.drop(columns=[c for c in OPTIONAL_COLUMNS if c in df.columns])
    return df


def verify_unchanged(stored: pd.DataFrame, methods: Mapping[str, Any], plan: BoardPlan,
                     data: Mapping[str, np.ndarray], *, verify_reps: int = DEFAULT_VERIFY_REPS,
                     progress: bool = False) -> dict[str, Any]:
    """Compute ``methods`` again on ``verify_reps`` repetitions of every data set of ``plan`` (evenly spread from
    the first to the last) and compare each record with the stored one (module docstring, step 2); ``progress``: a
    bar over the data sets.

    Returns
    -------
    dict
        ``{"methods": [...], "reps": [...], "records": n}``.

    Raises
    ------
    RefreshRefusedError
        At the first record that differs: the method, the data set, σ and repetition, the column, both values.
    ValueError
        For ``verify_reps`` not an integer ≥ 1.
    """
    verify_reps = check_positive_int(verify_reps, name="verify_reps")
    reps = verified_indices(list(range(plan.reps)), verify_reps)
    if not methods:
        return {"methods": [], "reps": reps, "records": 0}
    from tqdm.auto import tqdm

    n = 0
    for ds in tqdm(plan.datasets, disable=not progress, desc=f"verify {len(methods)} methods on reps {reps}"):
        recs = run_repetitions(data[ds], methods=dict(methods), sigmas=list(plan.sigmas), indices=reps,
                               seed=plan.seed, dataset=ds, n_queries=plan.n_queries, J=plan.J,
                               supremum=plan.supremum)
        new = _frame(recs, ds, plan, stored)
        found = _first_difference(stored, new)
        if found is not None:
            where, column, was, now = found
            was, now = (x.item() if isinstance(x, np.generic) else x for x in (was, now))
            raise RefreshRefusedError(
                f"method {where['method']!r} on {where['dataset']} σ={where['sigma']:g} rep {where['rep']}: {column} "
                f"is {now!r} with the current code, {was!r} on the stored board; its records are not the current "
                "code's, so refreshing only the named methods would mix two codes: regenerate the whole board "
                "(make leaderboard) or name this method too")
        n += len(new)
    return {"methods": list(methods), "reps": reps, "records": n}


def _changes(stored: pd.DataFrame, new: pd.DataFrame, name: str) -> dict[str, Any]:
    """How the re-run method's records differ from its stored ones (:class:`Refresh` ``changed``)."""
    old = stored[stored["method"] == name]
    key = list(KEY)
    joined = new.merge(old, on=key, suffixes=("", "_stored"))
    columns = [c for c in new.columns if c not in key and c not in UNCOMPARED and f"{c}_stored" in joined]
    differ = sum(any(not _same(r[f"{c}_stored"], r[c]) for c in columns) for _, r in joined.iterrows())
    cells = ["dataset", "sigma"]
    ratio = new.groupby(cells)["abs"].mean() / old.groupby(cells)["abs"].mean()
    return {"records": int(differ), "abs_ratio_median": float(np.median(ratio.to_numpy()))}


def refresh_records(names: Sequence[str], stored: pd.DataFrame, *, board: Any = None,
                    verify_reps: int = DEFAULT_VERIFY_REPS, workers: Any = 1, progress: bool = False,
                    data: Mapping[str, np.ndarray] | None = None) -> Refresh:
    """The stored board with the methods ``names`` computed again with the current code (module docstring).

    Parameters
    ----------
    names : sequence of str
        Methods on the board to re-run on every cell.
    stored : pandas.DataFrame
        The stored board's records (:func:`~dpkit.board.records.read_board`).
    board : path-like, optional
        Its file, for a board of one's own data (its provenance names the data: :func:`~dpkit.board.add.
        load_board_data`); ``None``: the data sets by name.
    verify_reps : int
        Repetitions of every data set on which the other methods are computed again (default 2: the first and the
        last); at least 1.
    workers : int or RepetitionExecutor
        Repetitions of the re-runs computed at once (:func:`~dpkit.experiments.protocol.run_cells`).
    progress : bool
        Progress bars for the verification and the re-runs.
    data : mapping, optional
        The data sets ``{name: X}`` (default: loaded as board-add loads them).

    Returns
    -------
    Refresh

    Raises
    ------
    RefreshRefusedError
        As the module docstring says.
    dpkit.board.entrants.BudgetViolationError
        For a re-run record spending nothing or beyond the board's budget.
    """
    t0 = time.perf_counter()
    plan, methods, others = refresh_plan(stored, names)
    data = dict(data) if data is not None else load_board_data(plan, board)
    verified = verify_unchanged(stored, {m: methods[m] for m in others}, plan, data, verify_reps=verify_reps,
                                progress=progress)
    kept = stored[~stored["method"].isin(names)]
    frames, changed = [kept], {}
    for name in names:
        new = entrant_records(name, methods[name], plan, data, workers=workers, progress=progress)
        new = new[[c for c in stored.columns]]
        cells = new[["dataset", "sigma", "rep"]].drop_duplicates()
        if len(cells) != len(stored[["dataset", "sigma", "rep"]].drop_duplicates()):
            raise RefreshRefusedError(f"method {name!r}: its re-run covers {len(cells)} cells x repetitions, the board "
                                      f"{len(stored[['dataset', 'sigma', 'rep']].drop_duplicates())}")
        changed[name] = _changes(stored, new, name)
        frames.append(new)
    merged = pd.concat(frames, ignore_index=True).sort_values(list(KEY), kind="stable", ignore_index=True)
    merged = check_records(merged, source=f"the stored board with {', '.join(names)} re-run")
    return Refresh(records=merged, methods=tuple(names), verified=verified, changed=changed,
                   compute_s=time.perf_counter() - t0)


def summary_text(refresh: Refresh) -> str:
    """One paragraph: what was re-run, what was verified, what changed (for the command line)."""
    v = refresh.verified
    lines = [f"verified: {len(v.get('methods', []))} other method(s) on repetitions {v.get('reps')} of every data set: "
             f"{v.get('records', 0)} records equal to the stored ones (time_s aside)"]
    for name, c in refresh.changed.items():
        lines.append(f"re-run: {name}: {c['records']} record(s) changed; mean abs new / stored, median over the cells: "
                     f"{c['abs_ratio_median']:.4g}")
    lines.append(f"in {refresh.compute_s:.0f} s")
    return "\n".join(lines)
