"""The leaderboard: the best correctly accounted method in every cell of the thesis's Tables 3.2/3.3.

A *cell* is (data set, σ, privacy class, error kind): Table 3.2 compares ε-DP methods with the
improved mechanism I, Table 3.3 (ε, δ)-DP methods with mechanism II (an ε-DP method is also
(ε, δ)-DP, so it competes in Table 3.3 too). Non-private references (the noise-free LP, a subsample
of the data) stay on the board, marked, and never count. A cell's winner is chosen on one half of the
repetitions (the even ones) and judged on the other (the odd ones), which removes the winner's curse; it is
*better* than the thesis when an exact sign test says its *median* error lies below the printed number (less half its
last digit), *worse* when above, a *tie* otherwise, with Holm's procedure across the cells of a table and error kind at
the false-alarm budget γ (default 0.05); every cell also names its *winner set* (the methods not significantly worse
than the winner), and shows the mean's interval only where a coverage study on its own records keeps it, else the
median's: :mod:`dpkit.experiments.board_robust` has the procedure (valid whatever the tail of the errors) and
:mod:`dpkit.experiments.board_stats` the split and Holm's procedure, with their
references. The board's headline, written accounts and supremum tables are in :mod:`dpkit.experiments.board_report`
(re-exported here).
"""
from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import pandas as pd

from dpkit.experiments.board_records import check_records
from dpkit.experiments.board_report import (
    DISAGREEMENT_COLUMNS,
    SUPREMUM_COLUMNS,
    THESIS_MECHANISMS,
    VERDICTS,
    Headline,
    headline,
    lost_cells_text,
    number_or_nan,
    ranking_disagreements,
    summary_markdown,
    supremum_rows,
    supremum_summary_text,
)
from dpkit.experiments.board_robust import coverage_study, median_interval, robust_family
from dpkit.experiments.board_stats import (
    DEFAULT_BUDGET,
    SELECTIONS,
    cell_arrays,
    family_verdicts,
    mean_interval,
    split_mask,
    winner_tests,
)
from dpkit.experiments.reference import PRINTED_DECIMALS, SIGMAS, TABLES, paper_table

__all__ = ["TABLES", "PRINTED_DECIMALS", "BOARD_SUITES", "board_methods", "verdict", "leaderboard_rows", "method_rows",
           "METHOD_ROW_KEYS", "board_from_records", "BOARD_CAPTION", "headline",
           "Headline", "VERDICTS", "lost_cells_text", "ranking_disagreements", "summary_markdown", "SUPREMUM_COLUMNS",
           "supremum_rows", "supremum_summary_text", "THESIS_MECHANISMS", "DISAGREEMENT_COLUMNS"]

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
    (:mod:`dpkit.methods.entrants`): an import path ``"package.module:NAME"`` or a name a package registers in
    the entry-point group ``dpkit.methods``, at the same budget. The registered methods come in suite order,
    then catalogue order, whatever the order of ``requested``; the entrants follow them in the order given. The
    order is that of the records only: a method's random stream is keyed by its name
    (:func:`~dpkit.experiments.records.method_seed`), not by its position.

    Raises
    ------
    ValueError
        Before anything runs, for a name that is neither a method of the board's suites nor an entrant: the
        message names it, suggests the closest registered names and lists the allowed ones;
        :class:`~dpkit.methods.entrants.EntrantError` (a ValueError) for an entrant that cannot be loaded, does
        not follow the method protocol or whose trial release (a small synthetic array, no real data) has no
        ledger record, naming it and what is missing.

    Examples
    --------
    >>> list(board_methods(["trig-II", "rap"], epsilon=1.0, delta=1e-3))
    ['trig-II', 'rap']
    """
    from dpkit.methods.entrants import entry_point_names, is_entrant_name, load_entrants
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
    ``verdict_abs``/``verdict_rel`` of :func:`leaderboard_rows` (:mod:`dpkit.experiments.board_stats`).

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
    budget ``budget`` (:mod:`dpkit.experiments.board_stats`).

    Parameters
    ----------
    rows : iterable of dict
        The methods' summary rows (mean and spread over the repetitions, time, spends, privacy class).
    records : DataFrame
        The per-repetition records of every method of ``rows``: the leaderboard's records table
        (:func:`dpkit.experiments.board_records.records_frame`; at least the columns ``dataset, sigma, rep, method,
        privacy, abs, rel, sup_abs``). Required: the intervals and verdicts come from them and have no substitute in
        the summary rows (:func:`board_from_records` makes both from the records alone).
    budget : float
        The false-alarm budget γ, family-wise per table and error kind (Holm across the table's cells).
    selection : {"split", "simultaneous"}
        How a cell's winner is chosen and judged (:func:`dpkit.experiments.board_stats.winner_tests`): chosen on the
        even repetitions and judged on the odd ones (default), or chosen and judged on all with a Bonferroni factor.
    decimals : int or None
        Decimals of the thesis's printed numbers (the null interval ``printed ± 0.5·10^−decimals``).

    Returns
    -------
    list of dict
        Keys: ``dataset, sigma, privacy`` (the table's class), ``method`` (the winner by the worst absolute error,
        chosen per ``selection``) with its ``abs_mean, abs_std, time_s, eps_spent, delta_spent`` (of its summary row,
        all repetitions); per error kind ``k`` (``abs``; ``rel`` for ``method_rel``, the winner by the relative error,
        with ``rel_mean, rel_std``), on the judged repetitions (:mod:`dpkit.experiments.board_robust`): ``k_judged_mean,
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
        :func:`dpkit.experiments.board_stats.cell_arrays`).
    """
    from dpkit.core.validation import check_choice, check_probability

    if records is None:
        raise ValueError("leaderboard_rows: records= (the per-repetition records of the rows' methods, "
                         "dpkit.experiments.board_records.records_frame) is required: the board's confidence "
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
    """The per-method summary rows of a records table (:mod:`dpkit.experiments.board_records`): one row per
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
                         "dpkit.experiments.board_records.records_frame, has them)")
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
    (:func:`~dpkit.experiments.board_records.check_records`: what the board's statistics assume).

    Raises
    ------
    dpkit.experiments.board_records.InvalidRecordsError
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
    :func:`dpkit.experiments.board_robust.robust_family` with the split, the Gumbel and t procedure of
    :func:`dpkit.experiments.board_stats.family_verdicts` with ``selection="simultaneous"``."""
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
    :func:`dpkit.experiments.board_stats.family_verdicts` (tail-dependent; no winner sets, no coverage study)."""
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
