"""The leaderboard: the best correctly accounted method in every cell of the thesis's Tables 3.2/3.3.

A *cell* is (data set, σ, privacy class, error kind): Table 3.2 compares ε-DP methods with mechanism I, Table 3.3
(ε, δ)-DP methods (and the ε-DP ones) with mechanism II; non-private references stay on the board, marked, and never
count. The winner, its verdict against the printed number, its winner set and its interval follow
:mod:`dpkit.board.statistics`.

The report, from :func:`leaderboard_rows`: :func:`headline`, :func:`lost_cells_text`, :func:`summary_markdown` (the
README's table), and the ranking by the class supremum (:func:`supremum_rows`, :func:`ranking_disagreements`,
:func:`supremum_summary_text`).
"""
from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from dpkit.board.records import check_records
from dpkit.board.statistics import (
    DEFAULT_BUDGET,
    SELECTIONS,
    cell_arrays,
    coverage_study,
    family_verdicts,
    mean_interval,
    median_interval,
    robust_family,
    split_mask,
    winner_tests,
)
from dpkit.experiments.reference import PRINTED_DECIMALS, SIGMAS, TABLES, paper_table

__all__ = ["BOARD_SUITES", "board_methods", "verdict", "leaderboard_rows", "method_rows", "METHOD_ROW_KEYS",
           "board_from_records", "BOARD_CAPTION", "headline", "Headline", "VERDICTS", "lost_cells_text",
           "ranking_disagreements", "summary_markdown", "SUPREMUM_COLUMNS", "supremum_rows", "supremum_summary_text",
           "THESIS_MECHANISMS", "DISAGREEMENT_COLUMNS", "SET_COLUMNS", "winner_set_rows", "COVERAGE_COLUMNS",
           "coverage_rows", "number_or_nan"]

#: The board table's caption (the protocol follows it): what its numbers and verdicts are.
BOARD_CAPTION = ("Leaderboard: per data set, σ and privacy class, the method with the smallest mean worst absolute and "
                 "relative error on the even repetitions, its estimate (est: the mean where a coverage study on its "
                 "records keeps the mean's interval, else the median; param) and interval (ci_low, ci_high) on the odd "
                 "ones, the verdict against the thesis's printed value (an exact sign test of the median: better/tie/"
                 "worse under a false-alarm budget γ, Holm across the cells of a table and error kind), the winner set "
                 "(the methods not significantly worse than the winner), the runner-up and the winner's paired "
                 "comparison with it;")
#: The registry suites the board draws its methods from; the last ("slow") only when a method of it is named.
BOARD_SUITES: tuple[str, ...] = ("baselines", "leaderboard", "slow")


def board_methods(requested: Sequence[str] = (), *, epsilon: float, delta: float) -> dict[str, Any]:
    """The board's methods ``{name: method}`` (notebook 45's ``METHODS``), the budget set suite-wide
    (:func:`dpkit.methods.registry.suite`: ε on the private methods, δ on the (ε, δ)-DP ones).

    ``requested`` empty: every method of the suites "baselines" and "leaderboard"; otherwise exactly the
    named methods, each of which must be registered in one of :data:`BOARD_SUITES` or be an *entrant*
    (:mod:`dpkit.board.entrants`): an import path ``"package.module:NAME"`` or a name a package registers in
    the entry-point group ``dpkit.methods``, at the same budget. The registered methods come in suite order,
    then catalogue order, whatever the order of ``requested``; the entrants follow them in the order given. The
    order is that of the records only: a method's random stream is keyed by its name
    (:func:`~dpkit.experiments.records.method_seed`), not by its position.

    Raises
    ------
    ValueError
        Before anything runs, for a name that is neither a method of the board's suites nor an entrant: the
        message names it, suggests the closest registered names and lists the allowed ones;
        :class:`~dpkit.board.entrants.EntrantError` (a ValueError) for an entrant that cannot be loaded, does
        not follow the method protocol or whose trial release (a small synthetic array, no real data) has no
        ledger record, naming it and what is missing.

    Examples
    --------
    >>> list(board_methods(["trig-II", "rap"], epsilon=1.0, delta=1e-3))
    ['trig-II', 'rap']
    """
    from dpkit.board.entrants import entry_point_names, is_entrant_name, load_entrants
    from dpkit.methods.registry import REGISTRY, check_names, names, suite

    allowed = list(dict.fromkeys(n for s in BOARD_SUITES for n in names(s)))
    if isinstance(requested, str):
        raise TypeError(f"METHODS must be a list of method names; got the string {requested!r}")
    plugged = entry_point_names() if any(isinstance(n, str) and n not in REGISTRY and not is_entrant_name(n)
                                         for n in requested) else []
    clash = sorted(set(plugged) & set(REGISTRY))
    if clash:
        raise ValueError(f"entry point name(s) {clash} of group 'dpkit.methods' are registered method names: "
                         "rename the entry point(s)")
    entrants = [n for n in requested if is_entrant_name(n) or (isinstance(n, str) and n in plugged)]
    check_names([n for n in requested if n not in entrants], allowed=allowed + plugged,
                what="unknown leaderboard method name(s)")
    board = [n for n in requested if n not in entrants] or ([] if entrants else
                                                             list(dict.fromkeys(names("baselines") + names("leaderboard"))))
    out = {n: m for s in BOARD_SUITES if names(s)
           for n, m in suite(s, include=[x for x in board if x in names(s)], epsilon=epsilon, delta=delta).items()}
    return {**out, **load_entrants(entrants, epsilon=epsilon, delta=delta)}


def verdict(ours: float, paper: float, *, decimals: int = PRINTED_DECIMALS) -> str:
    """``"win"``, ``"tie"`` or ``"loss"`` of ``ours`` against the printed ``paper`` at the printed precision.

    Descriptive only (no confidence, and a best-of-k mean is biased low): the board's verdicts are
    ``verdict_abs``/``verdict_rel`` of :func:`leaderboard_rows` (:mod:`dpkit.board.statistics`).

    >>> verdict(0.0114, 0.011), verdict(0.0104, 0.011), verdict(0.0099, 0.011)
    ('tie', 'win', 'win')
    """
    if math.isnan(ours) or math.isnan(paper):
        return "n/a"
    r = round(ours, decimals)
    return "win" if r < paper else ("tie" if r == paper else "loss")


def _paper(dataset: str, sigma: float, privacy: str, kind: str) -> float:
    try:
        return float(paper_table(privacy)[dataset.upper()][kind][SIGMAS.index(float(sigma))])
    except (KeyError, ValueError):
        return math.nan


def _method_row(cand: pd.DataFrame, method: str) -> pd.Series:
    return cand[cand["method"] == method].iloc[0]


def leaderboard_rows(rows: Iterable[dict[str, Any]], *, records: pd.DataFrame | None = None,
                     budget: float = DEFAULT_BUDGET, selection: str = "split",
                     decimals: int | None = PRINTED_DECIMALS) -> list[dict[str, Any]]:
    """One row per (data set, σ, table) from :func:`dpkit.experiments.baselines.baseline_rows` rows and the
    per-repetition ``records`` they were made from, with confidence intervals and verdicts under the false-alarm
    budget ``budget`` (:mod:`dpkit.board.statistics`).

    Parameters
    ----------
    rows : iterable of dict
        The methods' summary rows (mean and spread over the repetitions, time, spends, privacy class).
    records : DataFrame
        The per-repetition records of every method of ``rows``: the leaderboard's records table
        (:func:`dpkit.board.records.records_frame`; at least the columns ``dataset, sigma, rep, method,
        privacy, abs, rel, sup_abs``). Required: the intervals and verdicts come from them and have no substitute in
        the summary rows (:func:`board_from_records` makes both from the records alone).
    budget : float
        The false-alarm budget γ, family-wise per table and error kind (Holm across the table's cells).
    selection : {"split", "simultaneous"}
        How a cell's winner is chosen and judged (:func:`dpkit.board.statistics.winner_tests`): chosen on the
        even repetitions and judged on the odd ones (default), or chosen and judged on all with a Bonferroni factor.
    decimals : int or None
        Decimals of the thesis's printed numbers (the null interval ``printed ± 0.5·10^−decimals``).

    Returns
    -------
    list of dict
        Keys: ``dataset, sigma, privacy`` (the table's class), ``method`` (the winner by the worst absolute error,
        chosen per ``selection``) with its ``abs_mean, abs_std, time_s, eps_spent, delta_spent`` (of its summary row,
        all repetitions); per error kind ``k`` (``abs``; ``rel`` for ``method_rel``, the winner by the relative error,
        with ``rel_mean, rel_std``), on the judged repetitions (:mod:`dpkit.board.statistics`): ``k_judged_mean,
        k_median``; ``verdict_k`` (``"better"``, ``"tie"``, ``"worse"``: the exact sign test of the winner's *median*
        error against ``paper_k``, Holm across the table's cells; ``"n/a"`` without a printed number) with its p-value
        ``k_p`` and Holm level ``k_level``; ``k_median_ci_low, k_median_ci_high`` (the median's distribution-free
        interval at that level, dual to the verdict), ``k_mean_ci_low, k_mean_ci_high`` (the Gumbel-calibrated interval
        of the mean at that level), ``k_coverage_miss`` and ``k_coverage_limit`` (the mean interval's miss rate measured
        by resampling the winner's records of the cell, and the most allowed; ``k_coverage_miss_low``: the misses of its
        upper end), ``k_coverage_median_miss`` (the median interval's, measured alike), ``k_skewness`` (of those
        records); ``k_param`` (``"mean"`` where the measured coverage keeps the mean's interval, else ``"median"``) with
        ``k_est, k_ci_low, k_ci_high`` (the shown parameter's estimate and interval; lower ends at least 0); ``k_set``
        (the winner set: the winner and every method not significantly worse than it on most judged repetitions, by
        selection-half mean), ``k_set_size`` and ``k_certain`` (a set of one). ``runner_up`` (by the absolute error)
        with its ``runner_up_abs`` (summary mean) and the winner's paired comparison with it: ``abs_vs_runner_up``
        (median paired difference, winner minus runner-up), ``abs_vs_runner_up_ci_low, abs_vs_runner_up_ci_high`` (its
        distribution-free interval at the Bonferroni level of the family's set comparisons) and ``verdict_runner_up``
        (``"better"``: the runner-up is out of the winner set); ``paper_abs, paper_rel``; ``win_abs, win_rel`` (the
        winner's summary mean against the printed number at the printed precision, :func:`verdict`: descriptive, without
        confidence); ``reference_abs`` (the best non-private reference); ``budget``, ``selection`` and ``judged_reps``;
        and the ranking by the class supremum (:mod:`dpkit.queries.supremum`; the quantity the thesis's theorems bound)
        among the methods that have one on every repetition, chosen the same way: no printed number, so a rank and an
        interval only: ``method_sup`` with its ``sup_abs_mean, sup_abs_std`` and the mean of its certified upper bound
        ``sup_upper_mean`` (NaN without one), ``sup_est, sup_ci_low, sup_ci_high``
        (level ``1 − budget``, no multiplicity; the mean's interval where its coverage study keeps it, else the
        median's, ``sup_param``) and its thesis metric ``abs_of_sup``, ``runner_up_sup`` with its
        ``runner_up_sup_abs``, ``sup_of_best`` (the class supremum of ``method``) and ``rankings_agree`` (``method_sup
        == method``; ``None`` where no method has a supremum).

    Raises
    ------
    ValueError
        ``records`` is not given, or lacks a method, repetition or value of a cell (named; see
        :func:`dpkit.board.statistics.cell_arrays`).
    """
    from dpkit.core.validation import check_choice, check_probability

    if records is None:
        raise ValueError("leaderboard_rows: records= (the per-repetition records of the rows' methods, "
                         "dpkit.board.records.records_frame) is required: the board's confidence "
                         "intervals and verdicts are computed from the repetitions, not from the summary rows")
    check_probability(budget, name="budget")
    check_choice(selection, name="selection", choices=SELECTIONS)
    df = pd.DataFrame(list(rows))
    if df.empty:
        return []
    cells: list[tuple[str, float, str, pd.DataFrame, pd.DataFrame]] = []
    for (ds, sigma), g in df.groupby(["dataset", "sigma"], sort=True):
        refs = g[g["privacy"] == "non-private"]
        for table, (allowed, _mech) in TABLES.items():
            cand = g[g["privacy"].isin(allowed)]
            if len(cand):
                cells.append((str(ds), float(sigma), table, cand, refs))
    stat = {(table, kind): _family(records, [c for c in cells if c[2] == table], kind, budget=budget,
                                   selection=selection, decimals=decimals)
            for table in TABLES for kind in ("abs", "rel")}
    out: list[dict[str, Any]] = []
    for ds, sigma, table, cand, refs in cells:
        a, r = stat[(table, "abs")][(ds, sigma)], stat[(table, "rel")][(ds, sigma)]
        best, best_rel = _method_row(cand, a["method"]), _method_row(cand, r["method"])
        second = None if a["runner_up"] is None else _method_row(cand, a["runner_up"])
        pa, pr = a["printed"], r["printed"]
        out.append({
            "dataset": ds, "sigma": sigma, "privacy": table, "method": best["method"],
            "abs_mean": float(best["abs_mean"]), "abs_std": float(best["abs_std"]),
            "rel_mean": float(best_rel["rel_mean"]), "rel_std": float(best_rel["rel_std"]),
            "method_rel": best_rel["method"], "time_s": float(best["time_s"]),
            "eps_spent": float(best["eps_spent"]), "delta_spent": float(best["delta_spent"]),
            "runner_up": None if second is None else second["method"],
            "runner_up_abs": math.nan if second is None else float(second["abs_mean"]),
            "reference_abs": float(refs["abs_mean"].min()) if len(refs) else math.nan,
            "paper_abs": pa, "paper_rel": pr,
            "win_abs": verdict(float(best["abs_mean"]), pa), "win_rel": verdict(float(best_rel["rel_mean"]), pr),
            **{f"abs_{k}": a[k] for k in _FAMILY_KEYS}, "verdict_abs": a["verdict"],
            **{f"rel_{k}": r[k] for k in _FAMILY_KEYS}, "verdict_rel": r["verdict"],
            "abs_vs_runner_up": a["diff"], "abs_vs_runner_up_ci_low": a["diff_ci_low"],
            "abs_vs_runner_up_ci_high": a["diff_ci_high"], "verdict_runner_up": a["diff_verdict"],
            "budget": float(budget), "selection": selection, "judged_reps": a["n"],
            **_sup_ranking(records, ds, sigma, cand, best, budget=budget, selection=selection),
        })
    return out


#: The per-kind keys of a board row (``abs_…``, ``rel_…``) from its family (:func:`leaderboard_rows`).
_FAMILY_KEYS = ("est", "param", "ci_low", "ci_high", "level", "p", "judged_mean", "median", "median_ci_low",
                "median_ci_high", "mean_ci_low", "mean_ci_high", "coverage_miss", "coverage_miss_low",
                "coverage_median_miss", "coverage_limit", "skewness", "set", "set_size", "certain")

#: The keys of :func:`method_rows`: the summary of a method's repetitions that the records table holds.
METHOD_ROW_KEYS = ("dataset", "sigma", "method", "privacy", "private", "abs_mean", "abs_std", "abs_min", "abs_max",
                   "rel_mean", "rel_std", "time_s", "time_max_s", "eps_spent", "delta_spent", "error_bound",
                   "support_median", "reps", "sup_abs_mean", "sup_abs_std", "sup_abs_max", "sup_upper_mean",
                   "sup_upper_max")


def _sd(s: pd.Series) -> float:
    return float(s.std(ddof=1)) if len(s) > 1 else 0.0


def method_rows(records: pd.DataFrame) -> list[dict[str, Any]]:
    """The per-method summary rows of a records table (:mod:`dpkit.board.records`): one row per
    (data set, σ, method) in that order (methods by name) with the :data:`METHOD_ROW_KEYS`, computed as
    :func:`dpkit.experiments.baselines.baseline_rows` computes them from the run's records (the same numbers from
    the same repetitions): mean, standard deviation, minimum and maximum of the worst absolute and relative errors,
    mean and worst release time, the largest ledger spends, the largest proven numerical error bound of the worst
    errors (``error_bound``), the median support size of the synthetic databases (``support_median``; 0 for
    released answers), the repetitions, and the class supremum's mean, standard
    deviation and maximum over the repetitions that have one (``None`` where none has), with the mean and maximum of
    its certified upper bound beside them (``sup_upper_mean``, ``sup_upper_max``: ``None`` where no repetition has
    one, as in records without the column).

    Raises
    ------
    ValueError
        For a records table without a needed column, or a method with two privacy classes in one cell (named).
    """
    need = ["dataset", "sigma", "rep", "method", "privacy", "abs", "rel", "sup_abs", "time_s", "eps_spent",
            "delta_spent", "error_bound", "support_size"]
    missing = [c for c in need if c not in records.columns]
    if missing:
        raise ValueError(f"records: missing column(s) {missing} (a leaderboard records table, "
                         "dpkit.board.records.records_frame, has them)")
    df = records.sort_values(["dataset", "sigma", "method", "rep"], kind="stable")
    out: list[dict[str, Any]] = []
    for (ds, sigma, method), g in df.groupby(["dataset", "sigma", "method"], sort=True):
        privacy = g["privacy"].unique()
        if len(privacy) != 1:
            raise ValueError(f"records: {method!r} at {ds}, σ = {float(sigma):g} has the privacy classes "
                             f"{sorted(map(str, privacy))}; one per method")
        sup = g["sup_abs"][g["sup_abs"].notna()].astype(float)
        up = g["sup_upper"][g["sup_upper"].notna()].astype(float) if "sup_upper" in g else pd.Series(dtype=float)
        out.append({
            "dataset": str(ds), "sigma": float(sigma), "method": str(method), "privacy": str(privacy[0]),
            "private": str(privacy[0]) != "non-private",
            "abs_mean": float(g["abs"].mean()), "abs_std": _sd(g["abs"]),
            "abs_min": float(g["abs"].min()), "abs_max": float(g["abs"].max()),
            "rel_mean": float(g["rel"].mean()), "rel_std": _sd(g["rel"]),
            "time_s": float(g["time_s"].mean()), "time_max_s": float(g["time_s"].max()),
            "eps_spent": float(g["eps_spent"].max()), "delta_spent": float(g["delta_spent"].max()),
            "error_bound": float(g["error_bound"].max()), "support_median": float(g["support_size"].median()),
            "reps": int(len(g)),
            "sup_abs_mean": float(sup.mean()) if len(sup) else None, "sup_abs_std": _sd(sup) if len(sup) else None,
            "sup_abs_max": float(sup.max()) if len(sup) else None,
            "sup_upper_mean": float(up.mean()) if len(up) else None, "sup_upper_max": float(up.max()) if len(up) else None,
        })
    return out


def board_from_records(records: pd.DataFrame, *, budget: float = DEFAULT_BUDGET, selection: str = "split",
                       decimals: int | None = PRINTED_DECIMALS) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The board from its records table alone: the per-method rows (:func:`method_rows`) and the board
    (:func:`leaderboard_rows` of those rows with these records; ``budget``, ``selection`` and ``decimals`` as
    there). Notebook 45 and the assembler both make the board this way, so the published
    ``data/leaderboard/records.parquet`` regenerates it. The records are checked first
    (:func:`~dpkit.board.records.check_records`: what the board's statistics assume).

    Raises
    ------
    dpkit.board.records.InvalidRecordsError
        ``records`` is not a valid records table (one line naming the problem).
    ValueError
        As :func:`method_rows` and :func:`leaderboard_rows`.
    """
    check_records(records, source="the board's records")
    rows = method_rows(records)
    return rows, leaderboard_rows(rows, records=records, budget=budget, selection=selection, decimals=decimals)


def _family(records: pd.DataFrame, cells: list[tuple[str, float, str, pd.DataFrame, pd.DataFrame]], kind: str, *,
            budget: float, selection: str, decimals: int | None) -> dict[tuple[str, float], dict[str, Any]]:
    """The verdicts, winner sets and intervals of one table and error kind (a family) per cell (data set, σ):
    :func:`dpkit.board.statistics.robust_family` with the split, the Gumbel and t procedure of
    :func:`dpkit.board.statistics.family_verdicts` with ``selection="simultaneous"``."""
    if not cells:
        return {}
    table = cells[0][2]
    methods = {(ds, sigma): list(cand["method"]) for ds, sigma, _t, cand, _r in cells}
    errors, reps = cell_arrays(records, methods, kind)
    printed = np.array([_paper(ds, sigma, table, kind) for ds, sigma, *_ in cells])
    if selection == "simultaneous":
        return _family_simultaneous(methods, errors, reps, printed, budget=budget, decimals=decimals)
    v = robust_family(errors, reps, printed, gamma=budget, decimals=decimals)
    judged = ~split_mask(reps)
    chosen_on = np.where(np.isnan(errors[..., ~judged]).any(axis=-1), np.inf, errors[..., ~judged].mean(axis=-1))
    n_cmp = int((~np.isnan(v["set_p"])).sum())
    out = {}
    for i, key in enumerate(methods):
        ms = methods[key]
        w, runner = int(v["winner"][i]), int(v["runner_up"][i])
        members = [ms[j] for j in np.argsort(chosen_on[i], kind="stable") if v["in_set"][i, j]]
        if runner >= 0:  # the winner minus the runner-up, paired, on the judged repetitions: median and its interval
            d = errors[i, w, judged] - errors[i, runner, judged]
            d_low, d_high = median_interval(d, budget / max(n_cmp, 1))
            diff, diff_low, diff_high = float(np.median(d)), float(d_low), float(d_high)
            diff_verdict = "tie" if v["in_set"][i, runner] else "better"
        else:
            diff = diff_low = diff_high = math.nan
            diff_verdict = "n/a"
        out[key] = {"method": ms[w], "runner_up": ms[runner] if runner >= 0 else None,
                    "printed": float(printed[i]), "est": float(v["est"][i]), "param": str(v["param"][i]),
                    "ci_low": max(0.0, float(v["ci_low"][i])),  # errors are non-negative: no verdict changes
                    "ci_high": float(v["ci_high"][i]), "level": float(v["level"][i]), "verdict": str(v["verdict"][i]),
                    "judged_mean": float(v["mean"][i]), "median": float(v["median"][i]),
                    "median_ci_low": max(0.0, float(v["median_ci_low"][i])),
                    "median_ci_high": float(v["median_ci_high"][i]),
                    "mean_ci_low": max(0.0, float(v["mean_ci_low"][i])), "mean_ci_high": float(v["mean_ci_high"][i]),
                    "p": float(v["p"][i]), "coverage_miss": float(v["coverage_mean_miss"][i]),
                    "coverage_miss_low": float(v["coverage_mean_miss_low"][i]),
                    "coverage_median_miss": float(v["coverage_median_miss"][i]),
                    "coverage_limit": float(v["coverage_limit"][i]), "skewness": float(v["coverage_skewness"][i]),
                    "set": members, "set_size": len(members), "certain": bool(v["certain"][i]),
                    "diff": diff, "diff_ci_low": diff_low, "diff_ci_high": diff_high, "diff_verdict": diff_verdict,
                    "n": int(v["n"])}
    return out


def _family_simultaneous(methods: dict[tuple[str, float], list[str]], errors: np.ndarray, reps: np.ndarray,
                         printed: np.ndarray, *, budget: float, decimals: int | None
                         ) -> dict[tuple[str, float], dict[str, Any]]:
    """The ``selection="simultaneous"`` family: the Gumbel-calibrated mean and Bonferroni factors of
    :func:`dpkit.board.statistics.family_verdicts` (tail-dependent; no winner sets, no coverage study)."""
    v = family_verdicts(errors, reps, printed, gamma=budget, decimals=decimals, selection="simultaneous")
    out = {}
    for i, key in enumerate(methods):
        ms = methods[key]
        runner = int(v["runner_up"][i])
        mean, low, high = float(v["mean"][i]), max(0.0, float(v["ci_low"][i])), float(v["ci_high"][i])
        out[key] = {"method": ms[int(v["winner"][i])], "runner_up": ms[runner] if runner >= 0 else None,
                    "printed": float(printed[i]), "est": mean, "param": "mean", "ci_low": low, "ci_high": high,
                    "level": float(v["level"][i]), "verdict": str(v["verdict"][i]), "judged_mean": mean,
                    "median": math.nan, "median_ci_low": math.nan, "median_ci_high": math.nan, "mean_ci_low": low,
                    "mean_ci_high": high, "p": float(v["p"][i]), "coverage_miss": math.nan,
                    "coverage_miss_low": math.nan, "coverage_median_miss": math.nan,
                    "coverage_limit": math.nan, "skewness": math.nan, "set": None, "set_size": math.nan,
                    "certain": None, "diff": float(v["diff_mean"][i]), "diff_ci_low": float(v["diff_ci_low"][i]),
                    "diff_ci_high": float(v["diff_ci_high"][i]), "diff_verdict": str(v["diff_verdict"][i]),
                    "n": len(reps)}
    return out


def _sup_ranking(records: pd.DataFrame, ds: str, sigma: float, cand: pd.DataFrame, best: pd.Series, *,
                 budget: float, selection: str) -> dict[str, Any]:
    """The cell's ranking by the class supremum among the methods with one on every repetition, chosen as the
    board's winners are, with the winner's interval at level ``1 − budget`` (no verdict: no printed number)."""
    none = {"method_sup": None, "sup_abs_mean": math.nan, "sup_abs_std": math.nan, "sup_upper_mean": math.nan,
            "sup_est": math.nan, "sup_param": None,
            "sup_ci_low": math.nan, "sup_ci_high": math.nan, "abs_of_sup": math.nan, "runner_up_sup": None,
            "runner_up_sup_abs": math.nan, "sup_of_best": math.nan, "rankings_agree": None}
    sup_of_best = best.get("sup_abs_mean") if "sup_abs_mean" in best else None
    none["sup_of_best"] = math.nan if sup_of_best is None or pd.isna(sup_of_best) else float(sup_of_best)
    if "sup_abs" not in records.columns:
        return none
    here = records[(records["dataset"] == ds) & (records["sigma"] == sigma) & records["method"].isin(cand["method"])]
    complete = here.groupby("method", sort=False)["sup_abs"].apply(lambda s: bool(s.notna().all()))
    has = [m for m in cand["method"] if complete.get(m, False)]
    if not has:
        return none
    errors, reps = cell_arrays(records, {(ds, sigma): has}, "sup_abs")
    t = winner_tests(errors, reps, selection=selection)
    alpha = budget / t.multiplicity
    low, high = mean_interval(t.mean, t.se, t.n, alpha)
    est, param = float(t.mean[0]), "mean"
    if selection == "split":  # as the board's cells: the mean's interval only where its measured coverage keeps it
        population = errors[0, int(t.winner[0])]
        judged = population[~split_mask(reps)]
        if not coverage_study(population[None, :], t.n, alpha[0])["keep_mean"][0]:
            (low, high), est, param = median_interval(judged[None, :], alpha), float(np.median(judged)), "median"
    top = _method_row(cand, has[int(t.winner[0])])
    second = _method_row(cand, has[int(t.runner_up[0])]) if t.runner_up[0] >= 0 else None
    return {
        "method_sup": top["method"], "sup_abs_mean": number_or_nan(top.get("sup_abs_mean")),
        "sup_abs_std": number_or_nan(top.get("sup_abs_std")), "sup_upper_mean": number_or_nan(top.get("sup_upper_mean")),
        "sup_est": est, "sup_param": param,
        "sup_ci_low": max(0.0, float(low[0])), "sup_ci_high": float(high[0]), "abs_of_sup": float(top["abs_mean"]),
        "runner_up_sup": None if second is None else second["method"],
        "runner_up_sup_abs": math.nan if second is None else number_or_nan(second.get("sup_abs_mean")),
        "sup_of_best": none["sup_of_best"], "rankings_agree": bool(top["method"] == best["method"]),
    }


#: The columns of :func:`winner_set_rows`.
SET_COLUMNS = ("table", "kind", "dataset", "sigma", "winner", "set_size", "members")


def winner_set_rows(board: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every cell's winner set (:mod:`dpkit.board.statistics`, step 4), one row per table, error kind and
    cell with the :data:`SET_COLUMNS` (``members``: the set's methods, the winner first, comma-separated); cells of
    a board without winner sets (``selection="simultaneous"``) are left out."""
    out = []
    for kind in ("abs", "rel"):
        for b in board:
            members = b.get(f"{kind}_set")
            if members is None:
                continue
            out.append({"table": f"Table {_TABLE_NAMES[b['privacy']]}", "kind": kind, "dataset": b["dataset"],
                        "sigma": b["sigma"], "winner": b["method"] if kind == "abs" else b["method_rel"],
                        "set_size": len(members), "members": ", ".join(members)})
    return sorted(out, key=lambda r: (r["table"], r["kind"], r["dataset"], r["sigma"]))


#: The columns of :func:`coverage_rows`.
COVERAGE_COLUMNS = ("table", "kind", "dataset", "sigma", "winner", "skewness", "nominal_miss", "mean_ci_miss",
                    "upper_end_misses", "miss_limit", "median_ci_miss", "shown")


def coverage_rows(board: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The coverage study of the board's intervals (:func:`dpkit.board.statistics.coverage_study`), one row
    per table, error kind and cell with the :data:`COVERAGE_COLUMNS`: the winner, the skewness of its records, the
    nominal miss rate (the cell's Holm level), the measured miss rate of the mean's interval (and of its upper end
    alone), the most misses allowed, the measured miss rate of the median's interval and the interval shown
    (``mean`` or ``median``). Cells without a study are left out."""
    out = []
    for kind in ("abs", "rel"):
        for b in board:
            miss = b.get(f"{kind}_coverage_miss")
            if miss is None or math.isnan(miss):
                continue
            out.append({"table": f"Table {_TABLE_NAMES[b['privacy']]}", "kind": kind, "dataset": b["dataset"],
                        "sigma": b["sigma"], "winner": b["method"] if kind == "abs" else b["method_rel"],
                        "skewness": b[f"{kind}_skewness"], "nominal_miss": b[f"{kind}_level"], "mean_ci_miss": miss,
                        "upper_end_misses": b[f"{kind}_coverage_miss_low"],
                        "miss_limit": b[f"{kind}_coverage_limit"], "median_ci_miss": b[f"{kind}_coverage_median_miss"],
                        "shown": b[f"{kind}_param"]})
    return sorted(out, key=lambda r: (r["table"], r["kind"], r["dataset"], r["sigma"]))


#: The columns of :func:`ranking_disagreements` (a table of them has these columns even when it is empty).
DISAGREEMENT_COLUMNS = ("dataset", "sigma", "privacy", "best_by_workload", "its_abs_mean", "its_sup_abs_mean",
                        "best_by_supremum", "its_sup")


def ranking_disagreements(board: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The cells whose best method by the thesis metric (worst of the workload) is not the best by the class
    supremum: data set, σ, table, both winners and their numbers on both metrics."""
    return [{"dataset": b["dataset"], "sigma": b["sigma"], "privacy": b["privacy"],
             "best_by_workload": b["method"], "its_abs_mean": b["abs_mean"], "its_sup_abs_mean": b["sup_of_best"],
             "best_by_supremum": b["method_sup"], "its_sup": b["sup_abs_mean"]}
            for b in board if b.get("rankings_agree") is False]


#: The columns of the board's ranking by the class supremum (:func:`supremum_rows`): the best method by the class
#: supremum (with the mean of its certified upper bound) and its runner-up, next to the best by the thesis metric with
#: its own class supremum.
SUPREMUM_COLUMNS = ("dataset", "sigma", "privacy", "method_sup", "sup_abs_mean", "sup_abs_std", "sup_upper_mean",
                    "abs_of_sup", "runner_up_sup", "runner_up_sup_abs", "method", "abs_mean", "sup_of_best", "rankings_agree")
#: The thesis's own mechanism per table (its Table 3.2 is mechanism I, its Table 3.3 mechanism II).
THESIS_MECHANISMS: dict[str, str] = {table: f"trig-{mech}" for table, (_allowed, mech) in TABLES.items()}


def supremum_rows(board: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The board ranked by the class supremum: per cell the :data:`SUPREMUM_COLUMNS` (the best method by the mean
    class supremum, its runner-up, and the thesis metric's winner with its class supremum)."""
    return [{k: b.get(k) for k in SUPREMUM_COLUMNS} for b in board]


def number_or_nan(x: Any) -> float:
    """``x`` as a float, NaN for ``None`` (a record's value that is null, e.g. a method without a class supremum).

    Parameters
    ----------
    x : float, int or None
        A value of a record.

    Returns
    -------
    float
        ``float(x)``, or NaN when ``x`` is ``None``.
    """
    return math.nan if x is None else float(x)


def _span(values: Sequence[float], fmt: str = ".3g") -> str:
    lo, hi = format(min(values), fmt), format(max(values), fmt)
    return lo if lo == hi else f"{lo} to {hi}"


def _rank(value: float, others: Sequence[float]) -> int:
    return 1 + sum(o < value for o in others)


def supremum_summary_text(board: Sequence[dict[str, Any]], rows: Sequence[dict[str, Any]]) -> str:
    """In plain words, from the numbers: what the thesis's own mechanism (:data:`THESIS_MECHANISMS`) looks like on
    the quantity its theorems bound, the class supremum, next to the thesis metric (the worst of the workload),
    how it ranks by each, and in how many cells the two rankings name different best methods.

    ``board`` are :func:`~dpkit.board.report.leaderboard_rows`, ``rows`` the method rows they were made
    from (:func:`dpkit.experiments.baselines.baseline_rows`).
    """
    seen: dict[str, list[dict[str, Any]]] = {t: [] for t in TABLES}  # per table, per cell of its own mechanism
    for b in board:
        allowed, _mech = TABLES[b["privacy"]]
        name = THESIS_MECHANISMS[b["privacy"]]
        cand = [r for r in rows if r["dataset"] == b["dataset"] and float(r["sigma"]) == float(b["sigma"])
                and r["privacy"] in allowed]
        own = [r for r in cand if r["method"] == name]
        if not own or math.isnan(sup := number_or_nan(own[0].get("sup_abs_mean"))):
            continue
        sups = [x for r in cand if not math.isnan(x := number_or_nan(r.get("sup_abs_mean")))]
        abss = [float(r["abs_mean"]) for r in cand]
        ab = float(own[0]["abs_mean"])
        seen[b["privacy"]].append({"sup": sup, "abs": ab, "ratio": sup / ab if ab > 0 else math.inf,
                                   "rank_sup": _rank(sup, sups), "n_sup": len(sups), "rank_abs": _rank(ab, abss),
                                   "n_abs": len(abss), "won_sup": b.get("method_sup") == name,
                                   "won_abs": b["method"] == name})
    ranked = [b for b in board if b.get("rankings_agree") is not None]
    differ = sum(b["rankings_agree"] is False for b in ranked)
    if not ranked:
        return ("No method on this board has a class supremum (the worst query of the whole class, the quantity the "
                "thesis's theorems bound), so no cell is ranked by it.")
    cells = [c for t in TABLES for c in seen[t]]
    if cells:
        parts = ["On the quantity the thesis's theorems bound, the error of the worst query of the whole query class "
                 "(the class supremum), the thesis's own mechanism errs "
                 f"{_span([c['ratio'] for c in cells], '.2g')} times as much as on the thesis metric (the worst of the "
                 "workload's random queries)."]
        for table, cs in seen.items():
            if not cs:
                continue
            n = len(cs)
            cells_n = "1 cell" if n == 1 else f"{n} cells"
            parts.append(
                f"{THESIS_MECHANISMS[table]} (Table {'3.2' if table == 'ε-DP' else '3.3'}, {cells_n}): a mean class "
                f"supremum of {_span([c['sup'] for c in cs])} against a thesis metric of {_span([c['abs'] for c in cs])}; "
                f"ranked {_span([c['rank_sup'] for c in cs], 'd')} of the {_span([c['n_sup'] for c in cs], 'd')} "
                f"methods with a class supremum (by the thesis metric {_span([c['rank_abs'] for c in cs], 'd')} of "
                f"{_span([c['n_abs'] for c in cs], 'd')}); the best method by the class supremum in "
                f"{sum(c['won_sup'] for c in cs)} of {cells_n}, by the thesis metric in {sum(c['won_abs'] for c in cs)}.")
    else:
        parts = ["The thesis's own mechanism (trig-I, trig-II) has no class supremum on this board (it did not run)."]
    where = "the one cell" if len(ranked) == 1 else f"all {len(ranked)} cells"
    parts.append(f"The two rankings name the same best method in {where} ranked by both." if not differ
                 else f"The two rankings name different best methods in {differ} of the {len(ranked)} cells ranked by "
                      "both.")
    return " ".join(parts)


_TABLE_NAMES = {"ε-DP": "3.2", "(ε,δ)-DP": "3.3"}
#: The verdicts a cell can have against the thesis's printed number (:mod:`dpkit.board.statistics`).
VERDICTS = ("better", "tie", "worse")


@dataclass(frozen=True)
class Headline:
    """Cells (data set × σ × error kind, abs and rel) better than, tied with and worse than the thesis, per table,
    at the false-alarm budget ``budget``, and the cells with one certain winner (a winner set of one;
    :mod:`dpkit.board.statistics`; ``None`` for a board without winner sets)."""

    better: dict[str, int]
    ties: dict[str, int]
    worse: dict[str, int]
    cells: dict[str, int]
    budget: float
    certain: dict[str, int] | None = None
    ranked: dict[str, int] | None = None

    def text(self) -> str:
        """``better than the thesis in X/50 (Table 3.2) and Y/50 (Table 3.3) cells at false-alarm budget γ = 0.05
        (family-wise per table and error kind); Z ties; W worse; one certain winner in A/50 and B/50`` (the cells
        of Table 3.2 and 3.3 whose winner set is the winner alone; left out for a board without winner sets); a
        board without a printed number (your own data set) says so instead of counting against the thesis."""
        if not any(self.cells.values()):
            return ("no comparison with the thesis: it printed no number for these data sets (the board ranks the "
                    "methods only)")
        parts = [f"{self.better[t]}/{self.cells[t]} (Table {_TABLE_NAMES[t]})" for t in TABLES]
        text = (f"better than the thesis in {' and '.join(parts)} cells at false-alarm budget γ = {self.budget:g} "
                f"(family-wise per table and error kind); {sum(self.ties.values())} ties; "
                f"{sum(self.worse.values())} worse")
        if self.certain is None or self.ranked is None:
            return text
        return f"{text}; one certain winner in {' and '.join(f'{self.certain[t]}/{self.ranked[t]}' for t in TABLES)}"


def headline(board: Sequence[dict[str, Any]]) -> Headline:
    """Count the cells (abs and rel per row) better than, tied with and worse than the thesis's printed number
    (``verdict_abs``, ``verdict_rel`` of :func:`~dpkit.board.report.leaderboard_rows`), per table; cells
    without a printed number are skipped. The cells with one certain winner (``abs_certain``, ``rel_certain``) are
    counted among all cells of a table, printed number or not, when every row has them.

    Raises
    ------
    ValueError
        The board's rows were made at different budgets, or a row has no verdicts (not from
        :func:`~dpkit.board.report.leaderboard_rows`).
    """
    counts = {v: {t: 0 for t in TABLES} for v in VERDICTS}
    cells = {t: 0 for t in TABLES}
    certain: dict[str, int] | None = {t: 0 for t in TABLES}
    ranked = {t: 0 for t in TABLES}
    budgets = {r.get("budget") for r in board}
    if None in budgets or len(budgets) > 1:
        raise ValueError(f"headline: the board's rows carry the budgets {sorted(map(str, budgets))}; one budget "
                         "(leaderboard_rows) is needed")
    for r in board:
        for kind in ("abs", "rel"):
            one = r.get(f"{kind}_certain")
            if one is None:
                certain = None
            elif certain is not None:
                ranked[r["privacy"]] += 1
                certain[r["privacy"]] += bool(one)
            if r[f"verdict_{kind}"] == "n/a":
                continue
            cells[r["privacy"]] += 1
            counts[r[f"verdict_{kind}"]][r["privacy"]] += 1
    return Headline(better=counts["better"], ties=counts["tie"], worse=counts["worse"], cells=cells,
                    budget=float(budgets.pop()) if budgets else DEFAULT_BUDGET,
                    certain=certain if board else None, ranked=ranked if certain is not None and board else None)


def lost_cells_text(board: Sequence[dict[str, Any]], rows: Sequence[dict[str, Any]]) -> str:
    """A written account of the cells lost (verdict ``"worse"``: the median significantly above the printed number,
    at the board's budget): which method came closest, its estimate (mean or median, as shown) and interval, by how
    much, whether even
    the non-private references reach the printed number (if they do not, the gap is not the noise), and what
    the thesis's own mechanism gets with the correct constants (if it loses too, the printed number is not
    reproduced by the method that printed it)."""
    lines: list[str] = []
    for r in board:
        table = "3.2" if r["privacy"] == "ε-DP" else "3.3"
        for kind in ("abs", "rel"):
            if r[f"verdict_{kind}"] != "worse":
                continue
            method = r["method"] if kind == "abs" else r["method_rel"]
            ours, paper = r[f"{kind}_est"], r[f"paper_{kind}"]
            ref = [x for x in rows if x["dataset"] == r["dataset"] and x["sigma"] == r["sigma"]
                   and x["privacy"] == "non-private"]
            ref_best = min((x[f"{kind}_mean"] for x in ref), default=math.nan)
            why = ("even the non-private references do not reach the printed number "
                   f"(best {ref_best:.3g}): the gap is not the privacy noise" if ref_best >= paper else
                   f"a non-private reference reaches {ref_best:.3g}: the private methods lose it to their noise")
            if math.isnan(ref_best):
                why = "no non-private reference ran"
            mech = "trig-I" if table == "3.2" else "trig-II"
            own = [x[f"{kind}_mean"] for x in rows if x["dataset"] == r["dataset"] and x["sigma"] == r["sigma"]
                   and x["method"] == mech]
            if own:
                why += (f"; the thesis's own mechanism ({mech}) with the correct noise constants gets {own[0]:.3g}"
                        + (", so it does not reach the printed number either" if own[0] > paper
                           and round(own[0], PRINTED_DECIMALS) > paper else ""))
            param = r.get(f"{kind}_param", "mean")
            lines.append(f"- {r['dataset']}, σ = {r['sigma']:g}, Table {table} ({kind}): closest {method} at a "
                         f"{param} of {ours:.3g} on the judged repetitions (interval {r[f'{kind}_ci_low']:.3g} to "
                         f"{r[f'{kind}_ci_high']:.3g}) against the printed {paper:.3g} ({_ratio(ours, paper)}); {why}.")
    if not lines and all(r["verdict_abs"] == "n/a" and r["verdict_rel"] == "n/a" for r in board):
        return "The thesis printed no number for these data sets: no cell is compared with it."
    if not lines:
        return "No cell with a printed number is worse than the thesis."
    return (f"{len(lines)} cell stays lost:" if len(lines) == 1 else f"{len(lines)} cells stay lost:") + "\n" + "\n".join(lines)


def _ratio(ours: float, paper: float) -> str:
    return f"×{ours / paper:.2g}" if paper > 0 else "printed 0"


def _set_text(r: dict[str, Any], kind: str, names: int) -> str:
    """`` (+2: `b`, `c`)`` after the winner's name for a winner set of more than one, the other members named when
    there are at most ``names`` of them, else `` +k`` (:func:`summary_markdown`)."""
    members = r.get(f"{kind}_set")
    if not members or len(members) < 2:
        return ""
    winner = r["method"] if kind == "abs" else r["method_rel"]
    others = [m for m in members if m != winner]
    if len(others) <= names:
        return f" (+{len(others)}: " + ", ".join(f"`{m}`" for m in others) + ")"
    return f" +{len(others)}"


def summary_markdown(board: Sequence[dict[str, Any]], *, kinds: Sequence[str] = ("abs", "rel"), names: int = 2) -> str:
    """The board as one compact Markdown table (the README's form): a line per (data set, σ), and for each
    table and error kind the winning method, its winner set where it has more than one member (``+2``: two more
    methods not significantly worse; ``(+2: `b`, `c`)`` names them when there are at most ``names``), its estimate
    on the judged repetitions (the mean, or ``median`` where the coverage study did not keep the mean's interval)
    with its interval, the thesis's printed value in parentheses
    and the verdict (``better``, ``tie``, **worse**); a last line states the procedure and the budget. Numbers are
    shown to the thesis's printed precision (three significant digits below 0.01). ``kinds``: the error kinds
    shown, ``"abs"`` and/or ``"rel"`` (the README shows ``abs``).

    Raises
    ------
    ValueError
        For ``kinds`` empty or naming another kind.
    """
    kinds = tuple(kinds)
    if not kinds or any(k not in ("abs", "rel") for k in kinds):
        raise ValueError(f"kinds must be a non-empty selection of 'abs' and 'rel'; got {kinds!r}")
    def fmt(x: float) -> str:
        return "n/a" if math.isnan(x) else (f"{x:.3f}" if abs(x) >= 0.01 or x == 0 else f"{x:.2g}")

    cells: dict[tuple[str, float], dict[str, str]] = {}
    printed = any(r[f"verdict_{k}"] != "n/a" for r in board for k in ("abs", "rel"))
    for r in board:
        tag = _TABLE_NAMES[r["privacy"]]
        for kind in ("abs", "rel"):
            method = r["method"] if kind == "abs" else r["method_rel"]
            v = r[f"verdict_{kind}"]
            param = "median " if r.get(f"{kind}_param") == "median" else ""
            text = (f"`{method}`{_set_text(r, kind, names)} {param}{fmt(r[f'{kind}_est'])} [{fmt(r[f'{kind}_ci_low'])}, "
                    f"{fmt(r[f'{kind}_ci_high'])}]")
            if printed:  # a board of your own data has no printed number: no thesis column, no verdict
                text += f" ({fmt(r[f'paper_{kind}'])}) " + ("**worse**" if v == "worse" else v)
            cells.setdefault((str(r["dataset"]), float(r["sigma"])), {})[f"{tag}-{kind}"] = text
    columns = [(tag, kind) for tag in ("3.2", "3.3") for kind in ("abs", "rel") if kind in kinds]
    titles = {"3.2": "Table 3.2 (ε-DP)", "3.3": "Table 3.3 ((ε, δ)-DP)"}
    names = [f"{titles[tag]}: {kind}" if kind == kinds[0] or len(kinds) == 1 else kind for tag, kind in columns]
    head = "| data | σ | " + " | ".join(names) + " |\n" + "|---" * (2 + len(columns)) + "|"
    lines = [f"| {ds} | {sigma:g} | " + " | ".join(c.get(f"{tag}-{kind}", "") for tag, kind in columns)
             + " |" for (ds, sigma), c in sorted(cells.items())]
    if not board:
        return head
    b = board[0]
    if b["selection"] == "split":
        note = (f"Chosen on the even repetitions, judged on the odd {b['judged_reps']}; +k: k more not significantly "
                "worse; verdict: sign test of the median vs printed ± half its last digit; median: the mean's "
                "interval failed coverage.")
    else:
        note = ("Winner chosen and judged on all repetitions, its interval widened for the choice (Bonferroni) "
                f"({b['judged_reps']} repetitions); intervals at the Holm level of their cell; verdicts against the "
                f"printed number ± half its last digit at false-alarm budget γ = {b['budget']:g} per table and "
                "error kind.")
    if not printed:
        note = (f"Winner chosen on the even repetitions, judged on the odd {b['judged_reps']}" if b["selection"] == "split"
                else f"Winner chosen and judged on all {b['judged_reps']} repetitions")
        note += (f"; intervals at level 1 − γ = {1 - b['budget']:g}; +k: k more not significantly worse; the thesis "
                 "printed no number for these data sets, so there is no verdict.")
    return "\n".join([head, *lines, "", note])
