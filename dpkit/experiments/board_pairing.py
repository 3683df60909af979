"""Pair an entrant's records with a stored leaderboard and rank it: the statistics of a board-add.

:func:`board_plan` reads a stored board's cells and protocol (every data set, σ and repetition, the run seed, the
workload size and the budget) from its records, :func:`check_new_entrant` refuses a name already on it,
:func:`pair` adds the entrant's records to the board, checked paired by (data set, σ, repetition) and protocol,
and :func:`rank_entrant` ranks the entrant in every cell and compares it, paired by repetition, with the cell's
current best (:func:`~dpkit.experiments.board_robust.paired_sign_comparison`: the median paired difference, an exact
sign test, Holm across the cells of a table).
:mod:`dpkit.experiments.board_add` runs a board-add around them (the gate, the entrant's runs, the files written)
and re-exports every name.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import pandas as pd

from dpkit.experiments.board_records import KEY, PROTOCOL_COLUMNS, check_records
from dpkit.experiments.board_stats import DEFAULT_BUDGET

__all__ = ["QUICK_REPS", "EntrantRefusedError", "BoardPlan", "board_plan", "check_new_entrant", "check_entrant_spend",
           "pair", "RANK_COLUMNS", "SIGN_TEST", "too_few_note", "rank_entrant"]

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


def board_plan(stored: pd.DataFrame, *, quick: bool = False) -> BoardPlan:
    """The cells and protocol of a stored board: its data sets, σ's and repetitions ``0 … R−1`` and the
    :data:`~dpkit.experiments.board_records.PROTOCOL_COLUMNS` (one value each on the whole board).

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
                     delta=float(proto["budget_delta"]))


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
    class (:func:`dpkit.methods.entrants.check_spent` on each record's ``eps_spent``, ``delta_spent``: something
    spent, no more than the board's ε and δ, δ exactly 0 in an ε-DP release), or whose records are of several
    privacy classes. Called by :func:`pair`, so by every path that puts an entrant's records on a board
    (``board-add``, :func:`~dpkit.experiments.board_add.board_add`, notebook 45's ``ENTRANT``); ``--no-gate`` skips
    the audit gate, never this check.

    Raises
    ------
    dpkit.methods.entrants.BudgetViolationError
        Naming the entrant, the first record that violates it (data set, σ, repetition) and its spend.
    """
    from dpkit.methods.entrants import BudgetViolationError, check_spent

    classes = sorted(set(entrant["privacy"]))
    if len(classes) > 1:
        raise BudgetViolationError(f"entrant {name!r}: its records are of several privacy classes {classes}")
    for r in entrant.sort_values(["dataset", "sigma", "rep"], kind="stable").itertuples(index=False):
        check_spent(name, f"record ({r.dataset}, σ={r.sigma:g}, rep {r.rep})", privacy=str(r.privacy),
                    spent=(float(r.eps_spent), float(r.delta_spent)), epsilon=epsilon, delta=delta)


def pair(stored: pd.DataFrame, entrant: pd.DataFrame, name: str) -> pd.DataFrame:
    """The stored board with the entrant's records added, checked paired: every (data set, σ, repetition) of the
    entrant is on the board with the same protocol (:data:`~dpkit.experiments.board_records.PROTOCOL_COLUMNS`),
    and within the board's budget (:func:`check_entrant_spend`).

    The result is a board (:func:`~dpkit.experiments.board_records.check_records`): of the stored records it holds
    the repetitions the entrant ran, so a QUICK entrant's (the first
    :data:`QUICK_REPS`) give a board of those repetitions, every method with the same ones in every cell.

    Raises
    ------
    EntrantRefusedError
        For an entrant record of a cell the board does not hold, or of another protocol (naming it).
    dpkit.experiments.board_records.InvalidRecordsError
        When the result is not a valid board (e.g. the entrant lacks a repetition in a cell, or spent over the
        budget), naming the problem.
    dpkit.methods.entrants.BudgetViolationError
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
    from dpkit.experiments.board_robust import sign_min_reps

    return f"too few judged repetitions to decide (a sign test needs at least {sign_min_reps(gamma)})"


def rank_entrant(merged: pd.DataFrame, name: str, *, gamma: float = DEFAULT_BUDGET) -> pd.DataFrame:
    """The entrant's rank and its paired comparison with the current best in every (data set, σ, table) it competes
    in, over the repetitions it ran (paired with the stored methods' records of the same repetitions).

    A table (:data:`dpkit.experiments.reference.TABLES`) admits the privacy classes it lists; non-private
    references never count, and a non-private entrant is not ranked. ``rank`` is the entrant's place by mean worst
    absolute error among the ``methods`` of the cell. The cell's current best (``best_other``, with its mean
    ``best_other_abs``) is chosen as the board chooses its winners: the smallest mean over the even repetitions
    (:mod:`dpkit.experiments.board_stats`). The entrant is compared with it on the odd repetitions, paired by
    repetition, as the board judges its winners, whatever the tail of the errors
    (:func:`~dpkit.experiments.board_robust.paired_sign_comparison`): ``diff_median`` (the median of entrant minus
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
    from dpkit.experiments.board_robust import paired_sign_comparison
    from dpkit.experiments.board_stats import cell_arrays, split_mask
    from dpkit.experiments.reference import TABLES

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
