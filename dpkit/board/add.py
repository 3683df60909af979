"""board-add: one entrant joins a stored leaderboard; only the entrant runs, on the board's own workloads.

:func:`board_add` (:func:`prepare_board_add`, then :func:`run_board_add`) is the one path of every entry point;
docs/guide/add-method.md says how to call it and what it writes.

Algorithm
---------
1. Read the stored board and its protocol (:func:`board_plan`); refuse a name already on it
   (:func:`check_new_entrant`); load the entrant at the board's budget (:func:`~dpkit.board.entrants.load_entrant`).
2. The audit gate (:func:`run_gate`, :func:`dpkit.evaluation.gate.audit_gate`); a refuted entrant is not ranked.
3. The entrant alone on every cell with the board's seeds (:func:`entrant_records`), so it answers the very queries
   the stored methods answered; a record spending nothing or beyond the budget is refused
   (:func:`check_entrant_spend`).
4. Pair its records with the stored ones (:func:`pair`), rank it and compare it with each cell's current best
   (:func:`rank_entrant`, :func:`~dpkit.board.statistics.paired_sign_comparison`).
5. Write the updated board to a copy (:func:`write_board_copy`), never to the published file.

QUICK judges :data:`QUICK_REPS` repetitions of one data set and σ: too few for a sign test, so its verdicts are ties.
"""
from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from dpkit.board import records as _records
from dpkit.board.entrants import BudgetViolationError, check_board_budget, check_spent, class_budget
from dpkit.board.records import (
    KEY,
    PROTOCOL_COLUMNS,
    RECORDS_NAME,
    BoardFileError,
    board_supremum,
    check_records,
    read_board,
    records_frame,
    write_records,
)
from dpkit.board.report import board_methods
from dpkit.board.statistics import DEFAULT_BUDGET, cell_arrays, paired_sign_comparison, sign_min_reps, split_mask
from dpkit.evaluation.gate import audit_gate
from dpkit.experiments.reference import TABLES

__all__ = ["QUICK_REPS", "EntrantRefusedError", "BoardPlan", "board_plan", "check_new_entrant", "check_entrant_spend",
           "pair", "RANK_COLUMNS", "SIGN_TEST", "too_few_note", "rank_entrant", "GateOutcome", "BoardAddResult",
           "PreparedBoardAdd", "run_gate", "entrant_records", "ranks_text", "gate_text", "files_text",
           "write_board_copy", "prepare_board_add", "run_board_add", "board_add", "outcome_text", "not_ranked_line",
           "load_board_data", "ENTRANT_RECORDS_NAME", "RANKS_NAME", "SUMMARY_NAME", "FILE_ROLES", "NOT_A_PROOF"]

#: Repetitions of a QUICK board-add, and the fewest a board-add runs on: the comparison with the current best is
#: judged on the odd ones (the even ones chose the current best), and an interval needs 2 of them.
QUICK_REPS = 4


class EntrantRefusedError(ValueError):
    """An entrant that cannot be added to this board (already on it, or the board cannot be paired with)."""


@dataclass(frozen=True)
class BoardPlan:
    """The cells and protocol of a stored board, read from its records (:func:`board_plan`)."""

    datasets: tuple[str, ...]
    sigmas: tuple[float, ...]
    reps: int
    seed: int
    n_queries: int
    J: int
    epsilon: float
    delta: float
    #: the domain of the stored board's class supremum (:func:`~dpkit.board.records.board_supremum`): the entrant's
    #: releases are searched there, so its ``sup_abs`` compares with the board's (``None``: not searched, a refresh of a
    #: board without it, :mod:`dpkit.board.refresh`)
    supremum: str | None = "cube"


def board_plan(stored: pd.DataFrame, *, quick: bool = False) -> BoardPlan:
    """The cells and protocol of a stored board: its data sets, σ's and repetitions ``0 … R−1`` and the
    :data:`~dpkit.board.records.PROTOCOL_COLUMNS` (one value each on the whole board).

    ``quick``: one data set (WDBC when on the board, else the first), the first σ, the first :data:`QUICK_REPS`
    repetitions.

    Raises
    ------
    EntrantRefusedError
        For an empty board, a protocol column with several values, a board whose cells do not all hold the same
        σ's and repetitions 0 … R−1 (the message names what differs), or one of fewer than :data:`QUICK_REPS`
        repetitions (the entrant could not be judged against the current best).
    """
    if stored.empty:
        raise EntrantRefusedError("the stored board has no records")
    proto = {}
    for c in PROTOCOL_COLUMNS:
        vals = sorted(stored[c].unique().tolist())
        if len(vals) != 1:
            raise EntrantRefusedError(f"the stored board's {c} takes several values {vals}: one protocol per board")
        proto[c] = vals[0]
    datasets = tuple(sorted(stored["dataset"].unique()))
    sigmas = tuple(sorted(float(s) for s in stored["sigma"].unique()))
    reps = int(stored["rep"].max()) + 1
    cells = stored.groupby(["dataset", "sigma"])["rep"].apply(lambda r: sorted(set(r)))
    for (ds, s), got in cells.items():
        if got != list(range(reps)):
            raise EntrantRefusedError(f"the stored board's cell ({ds}, σ={s:g}) holds repetitions {got}, not 0…{reps - 1}")
    if len(cells) != len(datasets) * len(sigmas):
        raise EntrantRefusedError(f"the stored board does not hold every σ {list(sigmas)} for every data set "
                                  f"{list(datasets)}")
    if reps < QUICK_REPS:
        raise EntrantRefusedError(f"the stored board holds {reps} repetitions; an entrant is judged against the current "
                                  f"best on the odd ones of at least {QUICK_REPS} (an interval needs 2)")
    if quick:
        datasets = ("WDBC",) if "WDBC" in datasets else datasets[:1]
        sigmas, reps = sigmas[:1], min(reps, QUICK_REPS)
    return BoardPlan(datasets=datasets, sigmas=sigmas, reps=reps, seed=int(proto["run_seed"]),
                     n_queries=int(proto["n_queries"]), J=int(proto["J"]), epsilon=float(proto["budget_epsilon"]),
                     delta=float(proto["budget_delta"]), supremum=board_supremum(stored))


def check_new_entrant(stored: pd.DataFrame, name: str) -> None:
    """Refuse an entrant whose name is already on the stored board.

    Raises
    ------
    EntrantRefusedError
        Naming the entrant.
    """
    if name in set(stored["method"]):
        raise EntrantRefusedError(f"entrant {name!r} is already on the stored board: its records are there")


def check_entrant_spend(entrant: pd.DataFrame, name: str, *, epsilon: float, delta: float) -> None:
    """Refuse an entrant any of whose records is not within the board's budget ``(epsilon, delta)`` for its privacy
    class (:func:`dpkit.board.entrants.check_spent` on each record's ``eps_spent``, ``delta_spent``: something
    spent, no more than the board's ε and δ, δ exactly 0 in an ε-DP release), or whose records are of several
    privacy classes. Called by :func:`pair`, so by every path that puts an entrant's records on a board
    (``board-add``, :func:`~dpkit.board.add.board_add`, notebook 45's ``ENTRANT``); ``--no-gate`` skips
    the audit gate, never this check.

    Raises
    ------
    dpkit.board.entrants.BudgetViolationError
        Naming the entrant, the first record that violates it (data set, σ, repetition) and its spend.
    """
    classes = sorted(set(entrant["privacy"]))
    if len(classes) > 1:
        raise BudgetViolationError(f"entrant {name!r}: its records are of several privacy classes {classes}")
    for r in entrant.sort_values(["dataset", "sigma", "rep"], kind="stable").itertuples(index=False):
        check_spent(name, f"record ({r.dataset}, σ={r.sigma:g}, rep {r.rep})", privacy=str(r.privacy),
                    spent=(float(r.eps_spent), float(r.delta_spent)), epsilon=epsilon, delta=delta)


def pair(stored: pd.DataFrame, entrant: pd.DataFrame, name: str) -> pd.DataFrame:
    """The stored board with the entrant's records added, checked paired: every (data set, σ, repetition) of the
    entrant is on the board with the same protocol (:data:`~dpkit.board.records.PROTOCOL_COLUMNS`),
    and within the board's budget (:func:`check_entrant_spend`).

    The result is a board (:func:`~dpkit.board.records.check_records`): of the stored records it holds
    the repetitions the entrant ran, so a QUICK entrant's (the first
    :data:`QUICK_REPS`) give a board of those repetitions, every method with the same ones in every cell.

    Raises
    ------
    EntrantRefusedError
        For an entrant record of a cell the board does not hold, or of another protocol (naming it).
    dpkit.board.records.InvalidRecordsError
        When the result is not a valid board (e.g. the entrant lacks a repetition in a cell, or spent over the
        budget), naming the problem.
    dpkit.board.entrants.BudgetViolationError
        For an entrant record that spends nothing or beyond the board's budget (:func:`check_entrant_spend`).
    """
    cell = ["dataset", "sigma", "rep"]
    board_cells = stored[cell + list(PROTOCOL_COLUMNS)].drop_duplicates(cell)
    joined = entrant[cell + list(PROTOCOL_COLUMNS)].merge(board_cells, on=cell, how="left", suffixes=("", "_board"),
                                                          indicator=True)
    lone = joined[joined["_merge"] != "both"]
    if len(lone):
        raise EntrantRefusedError(f"entrant {name!r}: {len(lone)} record(s) of cells not on the stored board, e.g. "
                                  f"{lone[cell].iloc[0].to_dict()}")
    for c in PROTOCOL_COLUMNS:
        differ = joined[joined[c] != joined[f"{c}_board"]]
        if len(differ):
            raise EntrantRefusedError(f"entrant {name!r}: {c} = {differ[c].iloc[0]} but the stored board has "
                                      f"{differ[f'{c}_board'].iloc[0]} (not the board's workloads: no paired comparison)")
    check_entrant_spend(entrant, name, epsilon=float(stored["budget_epsilon"].iloc[0]),
                        delta=float(stored["budget_delta"].iloc[0]))
    kept = stored[stored["rep"].isin(entrant["rep"].unique())]
    merged = pd.concat([kept, entrant], ignore_index=True).sort_values(list(KEY), kind="stable", ignore_index=True)
    return check_records(merged, source=f"the stored board with entrant {name!r}")


#: The columns of :func:`rank_entrant`.
RANK_COLUMNS = ("dataset", "sigma", "table", "rank", "methods", "mean_abs", "best_other", "best_other_abs", "reps",
                "judged_reps", "diff_median", "diff_median_ci_low", "diff_median_ci_high", "test", "sign_p", "level",
                "verdict", "worse_p", "in_winner_set", "decided", "note", "budget")
#: The ``test`` of :func:`rank_entrant`'s rows.
SIGN_TEST = "exact sign test"


def too_few_note(gamma: float = DEFAULT_BUDGET) -> str:
    """The ``note`` of a comparison on fewer judged repetitions than a sign test needs to reject at ``gamma``."""
    return f"too few judged repetitions to decide (a sign test needs at least {sign_min_reps(gamma)})"


def rank_entrant(merged: pd.DataFrame, name: str, *, gamma: float = DEFAULT_BUDGET) -> pd.DataFrame:
    """The entrant's rank and its paired comparison with the current best in every (data set, σ, table) it competes
    in, over the repetitions it ran (paired with the stored methods' records of the same repetitions).

    A table (:data:`dpkit.experiments.reference.TABLES`) admits the privacy classes it lists; non-private
    references never count, and a non-private entrant is not ranked. ``rank`` is the entrant's place by mean worst
    absolute error among the ``methods`` of the cell. The cell's current best (``best_other``, with its mean
    ``best_other_abs``) is chosen as the board chooses its winners: the smallest mean over the even repetitions
    (:mod:`dpkit.board.statistics`). The entrant is compared with it on the odd repetitions, paired by
    repetition, as the board judges its winners, whatever the tail of the errors
    (:func:`~dpkit.board.statistics.paired_sign_comparison`): ``diff_median`` (the median of entrant minus
    current best over the ``judged_reps``), its distribution-free interval ``diff_median_ci_low,
    diff_median_ci_high`` at the cell's Holm level ``level``, the ``test`` (:data:`SIGN_TEST`, two-sided) with its
    p-value ``sign_p`` and the ``verdict`` for the entrant (``"better"``, ``"tie"``, ``"worse"``; ``"n/a"`` in a cell
    without another method), with Holm's procedure across the cells of each table at the false-alarm budget
    ``gamma`` (``budget``); ``in_winner_set``: the entrant would be in the cell's winner set, i.e. the one-sided sign
    test of "worse than the current best" (p-value ``worse_p``, Holm across the table's cells) does not reject.
    With fewer judged repetitions than a sign test needs to reject at ``gamma`` (a QUICK board-add judges 2),
    ``decided`` is ``False``, the verdict ``"tie"`` and ``note`` says so (:func:`too_few_note`).

    Raises
    ------
    EntrantRefusedError
        A method of a cell lacks some of the entrant's repetitions on the stored board.
    ValueError
        Fewer than 2 odd repetitions to judge on.
    """
    own = merged[merged["method"] == name]
    out: list[dict[str, Any]] = []
    for (ds, s), mine in own.groupby(["dataset", "sigma"], sort=True):
        reps = sorted(mine["rep"])
        cell = merged[(merged["dataset"] == ds) & (merged["sigma"] == s) & merged["rep"].isin(reps)]
        privacy = mine["privacy"].iloc[0]
        for table, (allowed, _mech) in TABLES.items():
            if privacy not in allowed:
                continue
            cand = cell[cell["privacy"].isin(allowed)]
            means = cand.groupby("method")["abs"].mean()
            counts = cand.groupby("method")["rep"].nunique()
            incomplete = sorted(counts[counts != len(reps)].index)
            if incomplete:
                raise EntrantRefusedError(f"cell ({ds}, σ={s:g}): method(s) {incomplete} lack some of the repetitions "
                                          f"{reps} on the stored board: no paired ranking")
            others = means.drop(name)
            mean = float(means[name])
            chosen = cand[split_mask(cand["rep"].to_numpy()) & (cand["method"] != name)]
            best = None if others.empty else str(chosen.groupby("method", sort=True)["abs"].mean()
                                                 .sort_values(kind="stable").index[0])
            out.append({"dataset": ds, "sigma": float(s), "table": table, "rank": 1 + int((others < mean).sum()),
                        "methods": len(means), "mean_abs": mean, "best_other": best,
                        "best_other_abs": math.nan if best is None else float(others[best]), "reps": len(reps),
                        "judged_reps": 0, "diff_median": math.nan, "diff_median_ci_low": math.nan,
                        "diff_median_ci_high": math.nan, "test": SIGN_TEST, "sign_p": math.nan, "level": math.nan,
                        "verdict": "n/a", "worse_p": math.nan, "in_winner_set": True, "decided": False,
                        "note": "no other method in the cell" if best is None else "", "budget": float(gamma)})
    for table in TABLES:  # one Holm family per table, as on the board
        rows = [r for r in out if r["table"] == table and r["best_other"] is not None]
        if not rows:
            continue
        reps = sorted(own["rep"].unique())
        errors, got = cell_arrays(merged[merged["rep"].isin(reps)],
                                  {(r["dataset"], r["sigma"]): [name, r["best_other"]] for r in rows}, "abs")
        judged = ~split_mask(got)
        if judged.sum() < 2:
            raise ValueError(f"rank_entrant: {int(judged.sum())} odd repetition(s) (repetitions {got.tolist()}) to "
                             f"judge {name!r} on; at least 2 are needed")
        c = paired_sign_comparison(errors[:, 0, judged] - errors[:, 1, judged], gamma=gamma)
        for i, r in enumerate(rows):
            decided = bool(c["decided"][i])
            r.update(judged_reps=int(c["n"][i]), diff_median=float(c["median"][i]),
                     diff_median_ci_low=float(c["ci_low"][i]), diff_median_ci_high=float(c["ci_high"][i]),
                     sign_p=float(c["p"][i]), level=float(c["level"][i]), verdict=str(c["verdict"][i]),
                     worse_p=float(c["set_p"][i]), in_winner_set=bool(c["in_set"][i]), decided=decided,
                     note="" if decided else too_few_note(gamma))
    return pd.DataFrame(out, columns=list(RANK_COLUMNS))


#: Files of a board-add's output folder besides the updated board (``records.parquet``).
ENTRANT_RECORDS_NAME = "entrant_records.parquet"
RANKS_NAME = "ranks.csv"
SUMMARY_NAME = "board_add.json"
#: One line of what each file of a board-add's output folder is (keys as in :attr:`BoardAddResult.files`).
FILE_ROLES: dict[str, str] = {
    "board": f"{RECORDS_NAME}: the updated board, a copy: the stored records plus the entrant's, the stored board "
             "unchanged",
    "entrant": f"{ENTRANT_RECORDS_NAME}: the entrant's own records, one per data set, σ and repetition",
    "ranks": f"{RANKS_NAME}: the entrant's rank and paired comparison with the current best in every cell (median "
             "difference, sign test, winner set)",
    "summary": f"{SUMMARY_NAME}: the summary: status, plan, the audit gate's record, the ranks",
}
#: What a gate's pass means, shown wherever its verdict is (CLI, ``board_add.json``, docs).
NOT_A_PROOF = ("a pass is not a proof of privacy: the auditor can only refute, and it sees a few neighbour pairs, "
               "a few statistics and a finite sample")


@dataclass(frozen=True)
class GateOutcome:
    """What the audit gate said about an entrant: ``refuted``, one line of why, and the gate's record (its
    ``as_dict()`` where it has one)."""

    refuted: bool
    detail: str
    record: dict[str, Any] | None = None


@dataclass
class BoardAddResult:
    """The outcome of :func:`board_add`: ``status`` ``"ranked"``, ``"refuted"`` (by the audit gate) or ``"refused"``
    (a record spends nothing or beyond the board's budget: ``reason``), the ranks, the files written, and the
    entrant's run records by data set (``runs``: the :class:`~dpkit.experiments.records.ReleaseRecord` s of
    :func:`~dpkit.experiments.protocol.run_cells`, for the checks of notebook 45; empty unless it ran)."""

    entrant: str
    status: str
    plan: BoardPlan
    gate: GateOutcome | None = None
    ranks: pd.DataFrame | None = None
    files: dict[str, str] = field(default_factory=dict)
    reason: str = ""
    runs: dict[str, list[Any]] = field(default_factory=dict)


def run_gate(name: str, method: Any, *, epsilon: float | None = None, delta: float | None = None) -> GateOutcome:
    """The audit gate on an entrant, before it is ranked: the call site of
    :func:`dpkit.evaluation.gate.audit_gate` ``(name, method, *, epsilon, delta)``, the
    claim audited being the board's budget ``epsilon``, ``delta`` for the entrant's privacy class (δ = 0 for an ε-DP
    entrant; :func:`~dpkit.board.entrants.class_budget`), never what the entrant holds; without them, the entrant's
    own (which :func:`~dpkit.board.entrants.load_entrant` checked to be the board's).

    The gate's result is read as refuted when it has ``refuted`` true, or a ``verdict`` (or ``status``) of
    ``"refuted"``.

    Raises
    ------
    TypeError
        For a gate result of neither shape.
    """
    if epsilon is None or delta is None:
        claim = float(method.epsilon), float(method.delta)
    else:
        claim = class_budget(method.privacy, epsilon=epsilon, delta=delta)
    result = audit_gate(name, method, epsilon=claim[0], delta=claim[1])
    refuted = getattr(result, "refuted", None)
    if refuted is None:
        verdict = getattr(result, "verdict", getattr(result, "status", None))
        if not isinstance(verdict, str):
            raise TypeError(f"audit_gate({name!r}) returned {type(result).__name__} with neither 'refuted' nor a "
                            "'verdict'/'status' string")
        refuted = verdict.lower() == "refuted"
    as_dict = getattr(result, "as_dict", None)
    lb, claimed = getattr(result, "epsilon_lb", None), getattr(result, "epsilon", None)
    detail = (f"audited lower bound ε ≥ {float(lb):.3g} against the claimed ε = {float(claimed):g}"
              if isinstance(lb, (int, float)) and isinstance(claimed, (int, float)) else str(result))
    power = getattr(result, "power_note", None)
    if isinstance(power, str) and power:
        detail += f" ({power})"
    return GateOutcome(refuted=bool(refuted), detail=detail, record=as_dict() if callable(as_dict) else None)


def entrant_records(name: str, method: Any, plan: BoardPlan, data: Mapping[str, np.ndarray], *,
                    workers: Any = 1, progress: bool = False) -> pd.DataFrame:
    """The entrant's records table on every cell of ``plan``: :func:`~dpkit.experiments.protocol.run_cells` with
    the board's seed, workload size and σ's on each data set of ``data`` (the data set's name: the board's);
    ``workers`` as there (a number of processes or a repetition executor).

    Raises
    ------
    dpkit.board.entrants.BudgetViolationError
        For a record that spends nothing or beyond the board's budget (:func:`check_entrant_spend`)."""
    return _entrant_runs(name, method, plan, data, workers=workers, progress=progress)[0]


def _entrant_runs(name: str, method: Any, plan: BoardPlan, data: Mapping[str, np.ndarray], *, workers: Any,
                  progress: bool) -> tuple[pd.DataFrame, dict[str, list[Any]]]:
    """:func:`entrant_records` and the run records it was made from, by data set."""
    from dpkit.experiments.protocol import run_cells

    frames, runs = [], {}
    for ds in plan.datasets:
        recs = run_cells(data[ds], methods={name: method}, sigmas=list(plan.sigmas), reps=plan.reps,
                         n_queries=plan.n_queries, J=plan.J, seed=plan.seed, dataset=ds, progress=progress,
                         workers=workers, supremum=plan.supremum)
        # the board's budget first, naming the record and its spend (records_frame's validator would refuse it too,
        # as an invalid records table)
        spends = pd.DataFrame([{"dataset": ds, "sigma": float(r.sigma), "rep": int(r.rep), "privacy": str(r.privacy),
                                "eps_spent": float(r.eps_spent), "delta_spent": float(r.delta_spent)} for r in recs])
        check_entrant_spend(spends, name, epsilon=plan.epsilon, delta=plan.delta)
        frames.append(records_frame(recs, dataset=ds, run_seed=plan.seed, n_queries=plan.n_queries, J=plan.J,
                                    epsilon=plan.epsilon, delta=plan.delta))
        runs[ds] = list(recs)
    return pd.concat(frames, ignore_index=True), runs


def ranks_text(ranks: pd.DataFrame, name: str) -> str:
    """One line per ranked cell: ``<data set> σ=<σ> <table>: rank r of n (mean abs … over R reps); against the
    current best …: median difference d [low, high] on J judged reps, sign test p = …, <verdict>; in the winner set``
    (with too few judged repetitions: the median difference, that they are too few to decide, ``tie``) and a last
    line naming the procedure and the budget."""
    if ranks.empty:
        return f"{name}: not ranked in any cell (a non-private entrant never counts)"
    lines = []
    for r in ranks.itertuples(index=False):
        head = (f"{r.dataset} σ={r.sigma:g} {r.table}: rank {r.rank} of {r.methods} "
                f"(mean abs {r.mean_abs:.4g} over {r.reps} reps)")
        if r.best_other is None or (isinstance(r.best_other, float) and math.isnan(r.best_other)):
            lines.append(head + "; no other method in the cell")
            continue
        against = (f"; against the current best {r.best_other} ({r.best_other_abs:.4g}): median difference "
                   f"{r.diff_median:+.3g}")
        if not r.decided:
            lines.append(head + against + f" on {r.judged_reps} judged reps: {r.note}, {r.verdict}")
            continue
        member = "in the winner set" if r.in_winner_set else "not in the winner set (significantly worse)"
        lines.append(head + against + f" [{r.diff_median_ci_low:+.3g}, {r.diff_median_ci_high:+.3g}] on "
                     f"{r.judged_reps} judged reps, sign test p = {r.sign_p:.2g}, {r.verdict}; {member}")
    lines.append("Current best: chosen on the even repetitions; entrant − current best on the odd ones, paired by "
                 "repetition: the median difference with its distribution-free interval at the cell's Holm level, "
                 "verdicts by a two-sided exact sign test at false-alarm budget "
                 f"γ = {float(ranks['budget'].iloc[0]):g} per table (Holm across its cells); in the winner set: not "
                 "significantly worse than the current best (one-sided sign test, Holm across the table's cells).")
    return "\n".join(lines)


def gate_text(name: str, gate: GateOutcome | None) -> str:
    """One line of the audit gate's verdict on ``name`` (with :data:`NOT_A_PROOF` for a pass), or that it did not
    run."""
    if gate is None:
        return (f"audit gate: not run (--no-gate, GATE=0): {name} is unaudited; its ledger was still checked against "
                "the board's budget")
    if gate.refuted:
        return f"audit gate: REFUTED {name}: {gate.detail}"
    return f"audit gate: passed {name}: {gate.detail}; {NOT_A_PROOF}"


def files_text(files: Mapping[str, str]) -> str:
    """One line per file written: its path and what it is (:data:`FILE_ROLES`)."""
    return "\n".join(["files written:"] + [f"  {path}  ({FILE_ROLES.get(k, k).split(': ', 1)[1]})"
                                           for k, path in files.items()])


def _same_file(a: Path, b: Path) -> bool:
    return os.path.abspath(os.path.realpath(a)) == os.path.abspath(os.path.realpath(b))


def _out_paths(out: Path, *, ranked: bool = True) -> dict[str, Path]:
    paths = {"summary": out / SUMMARY_NAME}
    if ranked:
        paths.update(board=out / RECORDS_NAME, entrant=out / ENTRANT_RECORDS_NAME, ranks=out / RANKS_NAME)
    return paths


def _check_out(out: str | os.PathLike, *, replace: bool, ranked: bool = True) -> None:
    """Refuse an output folder whose board is the published file, or whose files exist (without ``replace``)."""
    paths = _out_paths(Path(out), ranked=ranked)
    if _same_file(paths["summary"].with_name(RECORDS_NAME), _records.PUBLISHED):
        raise BoardFileError(f"{Path(out) / RECORDS_NAME} is the published board: board-add writes a copy, never the "
                             "published file (choose another --out)")
    existing = [str(p) for p in paths.values() if p.exists()]
    if existing and not replace:
        raise BoardFileError(f"not overwritten (pass --replace, make board-add … REPLACE=1): {', '.join(existing)}")


def write_board_copy(out: str | os.PathLike, *, merged: pd.DataFrame | None, entrant: pd.DataFrame | None,
                     ranks: pd.DataFrame | None, summary: Mapping[str, Any], replace: bool = False) -> dict[str, str]:
    """Write the updated board (``records.parquet``), the entrant's records, its ranks and a summary into ``out``.

    Raises
    ------
    BoardFileError
        When a file of ``out`` exists and ``replace`` is False, or when ``out``'s board would be the published
        file (:data:`~dpkit.board.records.PUBLISHED`): it is never overwritten here.
    """
    from dpkit.core.paths import write_atomic

    out = Path(out)
    paths = _out_paths(out, ranked=merged is not None)
    _check_out(out, replace=replace, ranked=merged is not None)
    out.mkdir(parents=True, exist_ok=True)
    if merged is not None and entrant is not None and ranks is not None:
        write_records(entrant, paths["entrant"], replace=True)
        write_records(merged, paths["board"], replace=True)
        write_atomic(paths["ranks"], ranks.to_csv(index=False))
    write_atomic(paths["summary"], json.dumps(dict(summary), indent=2, default=str) + "\n")
    return {k: str(v) for k, v in paths.items()}


@dataclass
class PreparedBoardAdd:
    """A board-add checked and ready to run (:func:`prepare_board_add`)."""

    name: str
    board: str
    stored: pd.DataFrame
    plan: BoardPlan
    method: Any
    out: Path
    gate: bool
    replace: bool
    data: dict[str, np.ndarray]


def load_board_data(plan: BoardPlan, board: str | os.PathLike | None) -> dict[str, np.ndarray]:
    """The stored board's data sets ``{name: X}``: a board of one's own data (``make board``) by what its provenance
    names (:func:`~dpkit.board.records.board_data_arguments`), each checked to have the fingerprint the board was
    made with; any other board by name (:func:`dpkit.data.load_available`).

    Raises
    ------
    EntrantRefusedError
        For a data set that is not available here, or one that has changed since the board was made (naming both
        fingerprints): an entrant would not answer the stored methods' queries on the same data.
    """
    import warnings

    from dpkit.data import load, load_available
    from dpkit.data.spec import data_fingerprint

    named = {} if board is None else _records.board_data_arguments(board)
    if named:
        data = {}
        for name, info in named.items():
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # recorded in the board's provenance when it was made
                ds = load(str(info.get("argument")))
            want = (info.get("fingerprint") or {}).get("sha256")
            got = data_fingerprint(ds)["sha256"]
            if ds.name != name or got != want:
                raise EntrantRefusedError(
                    f"data set {name} of board {board} ({info.get('argument')}) has changed since the board was made "
                    f"(fingerprint {want}, now {got}); an entrant would not answer the stored methods' queries on the "
                    "same data. Make the board again (make board DATA=...)")
            data[name] = ds.X
        return data
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        datasets, missing = load_available(list(plan.datasets))
    if missing:
        raise EntrantRefusedError("data set(s) of the stored board not available here: "
                                  + "; ".join(f"{k}: {v}" for k, v in missing.items()))
    return {name: ds.X for name, ds in datasets.items()}


def prepare_board_add(name: str, *, board: str | os.PathLike | None = None, out: str | os.PathLike,
                      quick: bool = False, gate: bool = True, replace: bool = False,
                      data: Mapping[str, np.ndarray] | None = None) -> PreparedBoardAdd:
    """Everything a board-add checks before anything runs (module docstring): the stored board, the entrant (not on
    the board; loaded and checked, :func:`~dpkit.board.report.board_methods`), the output folder and the data
    sets.

    Parameters
    ----------
    name : str
        A method name of :func:`~dpkit.board.report.board_methods`: ``"package.module:NAME"``, an
        entry-point name or a registered name not on the board.
    board : path, optional
        The stored board's records (default: the published board).
    out : path
        Folder of the updated copy (``records.parquet``), the entrant's records, ``ranks.csv`` and ``board_add.json``.
    quick : bool
        One data set, one σ, :data:`~dpkit.board.add.QUICK_REPS` repetitions
        (:func:`~dpkit.board.add.board_plan`).
    gate : bool
        Run the audit gate first (:func:`run_gate`); a refuted entrant is not run and not ranked.
    replace : bool
        Overwrite the files of an earlier board-add in ``out``.
    data : mapping, optional
        The data sets ``{name: X}`` (default: :func:`load_board_data`).

    Raises
    ------
    BoardFileError, EntrantRefusedError, dpkit.board.entrants.EntrantError, dpkit.board.records.InvalidRecordsError
        Before anything runs (the message names the file, the entrant or what is missing).
    """
    stored = read_board(board)
    check_new_entrant(stored, name)
    plan = board_plan(stored, quick=quick)
    method = board_methods([name], epsilon=plan.epsilon, delta=plan.delta)[name]
    for s in plan.sigmas:  # the method the board releases at each width holds the board's budget too
        check_board_budget(f"{name} at width {s:g}", method.at_width(s), epsilon=plan.epsilon, delta=plan.delta)
    _check_out(out, replace=replace)  # before hours of runs, not after
    data = dict(data) if data is not None else load_board_data(plan, board)
    absent = [d for d in plan.datasets if d not in data]
    if absent:
        raise EntrantRefusedError(f"no data given for the stored board's data set(s) {absent}")
    return PreparedBoardAdd(name=name, board=str(board or _records.PUBLISHED), stored=stored, plan=plan,
                            method=method, out=Path(out), gate=gate, replace=replace, data=data)


def run_board_add(prep: PreparedBoardAdd, *, workers: Any = 1, progress: bool = False) -> BoardAddResult:
    """The gate, the entrant's runs, the check of their spend, the pairing, the ranks and the copy of a prepared
    board-add (:func:`prepare_board_add`); ``workers`` and ``progress`` as :func:`~dpkit.experiments.protocol.run_cells`.

    A refuted entrant (the gate) or a refused one (a record spends nothing or beyond the board's budget,
    :func:`check_entrant_spend`) is not ranked: only the summary is written, with ``status`` and the reason."""
    name, plan = prep.name, prep.plan
    outcome = run_gate(name, prep.method, epsilon=plan.epsilon, delta=plan.delta) if prep.gate else None
    gate_summary = None if outcome is None else {**asdict(outcome), "note": NOT_A_PROOF}
    summary: dict[str, Any] = {"entrant": name, "board": prep.board, "plan": asdict(plan), "gate": gate_summary}
    if outcome is not None and outcome.refuted:
        summary["status"] = "refuted"
        files = write_board_copy(prep.out, merged=None, entrant=None, ranks=None, summary=summary,
                                 replace=prep.replace)
        return BoardAddResult(entrant=name, status="refuted", plan=plan, gate=outcome, files=files)
    try:
        mine, runs = _entrant_runs(name, prep.method, plan, prep.data, workers=workers, progress=progress)
    except BudgetViolationError as exc:  # refused before it is ranked, with or without the gate
        summary.update(status="refused", reason=str(exc))
        files = write_board_copy(prep.out, merged=None, entrant=None, ranks=None, summary=summary,
                                 replace=prep.replace)
        return BoardAddResult(entrant=name, status="refused", plan=plan, gate=outcome, files=files, reason=str(exc))
    merged = pair(prep.stored, mine, name)
    ranks = rank_entrant(merged, name)
    summary.update(status="ranked", ranks=ranks.to_dict(orient="records"))
    files = write_board_copy(prep.out, merged=merged, entrant=mine, ranks=ranks, summary=summary,
                             replace=prep.replace)
    return BoardAddResult(entrant=name, status="ranked", plan=plan, gate=outcome, ranks=ranks, files=files, runs=runs)


def board_add(name: str, *, board: str | os.PathLike | None = None, out: str | os.PathLike, quick: bool = False,
              gate: bool = True, workers: Any = 1, replace: bool = False, progress: bool = False,
              data: Mapping[str, np.ndarray] | None = None) -> BoardAddResult:
    """Add ``name`` to the stored board: :func:`prepare_board_add`, then :func:`run_board_add` (parameters: see
    there). The one board-add of ``python -m dpkit.batch board-add``, ``make board-add`` and notebook 45's
    ``ENTRANT``: the same checks, the same files in ``out``, the same failures.

    Returns
    -------
    BoardAddResult
        ``status`` ``"ranked"``, ``"refuted"`` or ``"refused"`` (:func:`outcome_text` says which, and why).

    Raises
    ------
    BoardFileError, EntrantRefusedError, dpkit.board.entrants.EntrantError, dpkit.board.records.InvalidRecordsError
        Before anything runs (:func:`prepare_board_add`).
    """
    return run_board_add(prepare_board_add(name, board=board, out=out, quick=quick, gate=gate, replace=replace,
                                           data=data), workers=workers, progress=progress)


def outcome_text(result: BoardAddResult) -> str:
    """What a board-add did, as every entry point prints it: the gate's verdict (:func:`gate_text`; for a refuted
    entrant only when the gate ran), then for a ranked entrant its ranks (:func:`ranks_text`), the updated board and
    the files written (:func:`files_text`); for a refuted or refused one the line that says so, with the summary's
    path. A caller that must fail on an entrant that is not ranked fails with :func:`not_ranked_line`."""
    name = result.entrant
    lines = []
    if result.gate is not None or result.status != "refuted":
        lines.append(gate_text(name, result.gate))
    if result.status != "ranked":
        lines.append(not_ranked_line(result))
        return "\n".join(lines)
    lines += [ranks_text(result.ranks, name),
              f"updated board (a copy; the stored board is unchanged): {result.files['board']}",
              files_text(result.files)]
    return "\n".join(lines)


def not_ranked_line(result: BoardAddResult) -> str:
    """One line for an entrant that was not ranked (refuted by the gate, or refused for its spend), naming it, why,
    and the summary written; ``""`` for a ranked one."""
    if result.status == "refuted":
        detail = "" if result.gate is None else f": {result.gate.detail}"
        return f"{result.entrant}: refuted by the audit gate, not ranked{detail} ({result.files['summary']})"
    if result.status == "refused":
        return f"{result.entrant}: refused, not ranked: {result.reason} ({result.files['summary']})"
    return ""
