"""Add one entrant to a stored leaderboard: only the entrant runs, on the board's own workloads.

``python -m dpkit.batch board-add package.module:NAME`` (``make board-add METHOD=...``; notebook 45 with ``ENTRANT``)
reads a stored board (:func:`~dpkit.experiments.board_records.read_board`, the published one by default), takes its
protocol from its records (:func:`~dpkit.experiments.board_pairing.board_plan`: every data set, σ and repetition, the
run seed, the workload size and the budget), refuses a name already on it, runs the audit gate on the entrant
(:func:`run_gate`; a refuted entrant is listed as refuted and not ranked), runs the entrant alone on every cell with
the board's seeds (:func:`entrant_records`: a repetition's workload does not depend on the methods run beside it, so
the entrant answers the very queries the stored methods answered), refuses it before it is ranked when a record's
ledger spends nothing or beyond the board's budget for its privacy class (:func:`check_entrant_spend`, also without
the gate; the entrant was released at the board's budget, :func:`~dpkit.methods.entrants.load_entrant`), pairs its
records with the stored ones by (data set, σ, repetition) (:func:`~dpkit.experiments.board_pairing.pair`), ranks it in
every cell by mean worst absolute error among the methods of each table it competes in and compares it, paired by
repetition, with the cell's current best (:func:`~dpkit.experiments.board_pairing.rank_entrant`:
:func:`~dpkit.experiments.board_robust.paired_sign_comparison`, the median difference with its distribution-free
interval, an exact sign test's verdict and whether the entrant is in the cell's winner set, Holm across the cells of
a table) and writes the updated board to a copy (:func:`write_board_copy`), never to the published file.

QUICK (tests, the tutorial): one data set (WDBC when on the board), the first σ, the first 4 repetitions (the
comparison is judged on the odd ones: 2, too few for a sign test to decide, so the verdict is a tie that says so); the
workloads keep the stored board's size (a paired comparison needs the same queries), so a QUICK board-add is quick
against a board made at QUICK size.
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

from dpkit.experiments import board_records as _records
from dpkit.experiments.board_pairing import (
    QUICK_REPS,
    RANK_COLUMNS,
    BoardPlan,
    EntrantRefusedError,
    board_plan,
    check_entrant_spend,
    check_new_entrant,
    pair,
    rank_entrant,
)
from dpkit.experiments.board_records import (
    RECORDS_NAME,
    BoardFileError,
    records_frame,
    write_records,
)
from dpkit.experiments.board_stats import DEFAULT_BUDGET  # noqa: F401 - re-exported
from dpkit.methods.entrants import BudgetViolationError, check_board_budget

__all__ = ["BoardPlan", "GateOutcome", "GateUnavailableError", "EntrantRefusedError", "BoardAddResult",
           "PreparedBoardAdd", "board_plan", "check_new_entrant", "run_gate", "entrant_records",
           "pair", "rank_entrant", "RANK_COLUMNS", "ranks_text", "gate_text", "files_text", "write_board_copy",
           "prepare_board_add", "run_board_add", "board_add", "QUICK_REPS", "ENTRANT_RECORDS_NAME", "RANKS_NAME",
           "SUMMARY_NAME", "FILE_ROLES", "NOT_A_PROOF"]

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


class GateUnavailableError(RuntimeError):
    """The audit gate was requested but :mod:`dpkit.evaluation.gate` is not part of this dpkit."""


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
    (a record spends nothing or beyond the board's budget: ``reason``), the ranks, the files written."""

    entrant: str
    status: str
    plan: BoardPlan
    gate: GateOutcome | None = None
    ranks: pd.DataFrame | None = None
    files: dict[str, str] = field(default_factory=dict)
    reason: str = ""


def run_gate(name: str, method: Any, *, epsilon: float | None = None, delta: float | None = None) -> GateOutcome:
    """The audit gate on an entrant, before it is ranked: the call site of
    ``dpkit.evaluation.gate.audit_gate(name, method, *, epsilon, delta)`` (imported here, when it is called), the
    claim audited being the board's budget ``epsilon``, ``delta`` for the entrant's privacy class (δ = 0 for an ε-DP
    entrant; :func:`~dpkit.methods.entrants.class_budget`), never what the entrant holds; without them, the entrant's
    own (which :func:`~dpkit.methods.entrants.load_entrant` checked to be the board's).

    The gate's result is read as refuted when it has ``refuted`` true, or a ``verdict`` (or ``status``) of
    ``"refuted"``.

    Raises
    ------
    GateUnavailableError
        When :mod:`dpkit.evaluation.gate` (or its ``audit_gate``) is not part of this dpkit; run without the gate
        (``--no-gate``, ``GATE=False``) to add an entrant unaudited.
    TypeError
        For a gate result of neither shape.
    """
    from dpkit.methods.entrants import class_budget

    if epsilon is None or delta is None:
        claim = float(method.epsilon), float(method.delta)
    else:
        claim = class_budget(method.privacy, epsilon=epsilon, delta=delta)
    result = _gate_function(name)(name, method, epsilon=claim[0], delta=claim[1])
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


def entrant_records(name: str, method: Any, plan: BoardPlan, data: Mapping[str, np.ndarray], *, workers: int = 1,
                    progress: bool = False) -> pd.DataFrame:
    """The entrant's records table on every cell of ``plan``: :func:`~dpkit.experiments.protocol.run_cells` with
    the board's seed, workload size and σ's on each data set of ``data`` (the data set's name: the board's)."""
    from dpkit.experiments.protocol import run_cells

    frames = []
    for ds in plan.datasets:
        recs = run_cells(data[ds], methods={name: method}, sigmas=list(plan.sigmas), reps=plan.reps,
                         n_queries=plan.n_queries, J=plan.J, seed=plan.seed, dataset=ds, progress=progress,
                         workers=workers)
        # the board's budget first, naming the record and its spend (records_frame's validator would refuse it too,
        # as an invalid records table)
        spends = pd.DataFrame([{"dataset": ds, "sigma": float(r.sigma), "rep": int(r.rep), "privacy": str(r.privacy),
                                "eps_spent": float(r.eps_spent), "delta_spent": float(r.delta_spent)} for r in recs])
        check_entrant_spend(spends, name, epsilon=plan.epsilon, delta=plan.delta)
        frames.append(records_frame(recs, dataset=ds, run_seed=plan.seed, n_queries=plan.n_queries, J=plan.J,
                                    epsilon=plan.epsilon, delta=plan.delta))
    return pd.concat(frames, ignore_index=True)


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
        file (:data:`~dpkit.experiments.board_records.PUBLISHED`): it is never overwritten here.
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


def _gate_function(name: str) -> Any:
    """``dpkit.evaluation.gate.audit_gate``, imported when the gate is requested.

    Raises
    ------
    GateUnavailableError
        When it is not part of this dpkit.
    """
    try:
        from dpkit.evaluation.gate import audit_gate
    except ImportError as exc:
        raise GateUnavailableError("the audit gate was requested, but dpkit.evaluation.gate.audit_gate is not part of "
                                   f"this dpkit ({exc}); run without the gate (--no-gate, GATE=False) to add {name!r} "
                                   "unaudited") from exc
    return audit_gate


def _load_data(plan: BoardPlan) -> dict[str, np.ndarray]:
    import warnings

    from dpkit.data import load_available

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
    the board; loaded and checked, :func:`~dpkit.experiments.leaderboard.board_methods`), the output folder, the
    gate's presence and the data sets.

    Parameters
    ----------
    name : str
        A method name of :func:`~dpkit.experiments.leaderboard.board_methods`: ``"package.module:NAME"``, an
        entry-point name or a registered name not on the board.
    board : path, optional
        The stored board's records (default: the published board).
    out : path
        Folder of the updated copy (``records.parquet``), the entrant's records, ``ranks.csv`` and ``board_add.json``.
    quick : bool
        One data set, one σ, :data:`~dpkit.experiments.board_pairing.QUICK_REPS` repetitions
        (:func:`~dpkit.experiments.board_pairing.board_plan`).
    gate : bool
        Run the audit gate first (:func:`run_gate`); a refuted entrant is not run and not ranked.
    replace : bool
        Overwrite the files of an earlier board-add in ``out``.
    data : mapping, optional
        The data sets ``{name: X}`` (default: loaded by name, :func:`dpkit.data.load_available`).

    Raises
    ------
    BoardFileError, EntrantRefusedError, dpkit.methods.entrants.EntrantError, GateUnavailableError
        Before anything runs (the message names the file, the entrant or what is missing).
    """
    from dpkit.experiments.board_records import read_board
    from dpkit.experiments.leaderboard import board_methods

    stored = read_board(board)
    check_new_entrant(stored, name)
    plan = board_plan(stored, quick=quick)
    method = board_methods([name], epsilon=plan.epsilon, delta=plan.delta)[name]
    for s in plan.sigmas:  # the method the board releases at each width holds the board's budget too
        check_board_budget(f"{name} at width {s:g}", method.at_width(s), epsilon=plan.epsilon, delta=plan.delta)
    _check_out(out, replace=replace)  # before hours of runs, not after
    if gate:
        _gate_function(name)
    data = dict(data) if data is not None else _load_data(plan)
    absent = [d for d in plan.datasets if d not in data]
    if absent:
        raise EntrantRefusedError(f"no data given for the stored board's data set(s) {absent}")
    return PreparedBoardAdd(name=name, board=str(board or _records.PUBLISHED), stored=stored, plan=plan,
                            method=method, out=Path(out), gate=gate, replace=replace, data=data)


def run_board_add(prep: PreparedBoardAdd, *, workers: int = 1, progress: bool = False) -> BoardAddResult:
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
        mine = entrant_records(name, prep.method, plan, prep.data, workers=workers, progress=progress)
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
    return BoardAddResult(entrant=name, status="ranked", plan=plan, gate=outcome, ranks=ranks, files=files)


def board_add(name: str, *, board: str | os.PathLike | None = None, out: str | os.PathLike, quick: bool = False,
              gate: bool = True, workers: int = 1, replace: bool = False, progress: bool = False,
              data: Mapping[str, np.ndarray] | None = None) -> BoardAddResult:
    """:func:`prepare_board_add`, then :func:`run_board_add` (parameters: see there)."""
    return run_board_add(prepare_board_add(name, board=board, out=out, quick=quick, gate=gate, replace=replace,
                                           data=data), workers=workers, progress=progress)
