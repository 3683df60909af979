"""Which methods are *certified* better than which on the whole query class, per cell of the board.

Every record of a release with a class supremum carries an interval for it: ``sup_abs``, a certified lower bound
(:func:`dpkit.queries.supremum.class_supremum`), and ``sup_upper``, a certified upper bound
(:func:`dpkit.queries.supremum_upper.sup_upper`). This module says what the intervals *prove*.

1. Per repetition: A is *certified better* than B when ``sup_upper_A[r] + tol < sup_abs_B[r]`` (``tol`` =
   :data:`~dpkit.board.records.INTERVAL_TOLERANCE`). A method without ``sup_upper`` can be certified worse, never
   better.
2. Per cell (``rule``): ``"every"`` (default) asks it of every repetition, no statistics; ``"sign"`` is an exact
   one-sided sign test [2] of the certified wins, Bonferroni over the ordered pairs. Valid whatever the
   distributions, since a certified win is a true win.
3. *May still be best*: the methods no other is certified better than [1]; a *certified best* is a set of one
   certified better than every other.

Cells are the board's (:data:`dpkit.experiments.reference.TABLES`); records without ``sup_upper`` prove nothing.

References
----------
[1] J. C. Hsu, *Multiple Comparisons: Theory and Methods*, Chapman & Hall, 1996 (the set of methods that may be the
    best).
[2] W. J. Conover, *Practical Nonparametric Statistics*, 3rd ed., Wiley, 1999, Sec 3.4 (the sign test).
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
from scipy.stats import binom

from dpkit.board.records import INTERVAL_TOLERANCE
from dpkit.core.validation import check_choice
from dpkit.experiments.reference import TABLES

__all__ = ["RULES", "CELL_COLUMNS", "PAIR_COLUMNS", "certified_better", "certified_cells", "certified_pairs",
           "certified_sentence", "interval_ratios"]

#: ``rule`` choices (module docs).
RULES = ("every", "sign")
#: The keys of :func:`certified_cells`' rows.
CELL_COLUMNS = ("dataset", "sigma", "table", "rule", "reps", "methods", "with_upper", "may_be_best", "n_may_be_best",
                "certified_best", "certified_pairs", "best_by_mean_sup", "best_by_mean_sup_may_lose")
#: The keys of :func:`certified_pairs`' rows.
PAIR_COLUMNS = ("dataset", "sigma", "table", "better", "worse", "reps_certified", "reps", "p_value")


def _check_gamma(gamma: float) -> float:
    g = float(gamma)
    if not (0.0 < g < 1.0):
        raise ValueError(f"gamma must be a level in (0, 1); got {gamma!r}")
    return g


def certified_better(upper: np.ndarray, lower: np.ndarray, *, rule: str = "every",
                     gamma: float = 0.05) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The certified-better relation of one cell's methods.

    Parameters
    ----------
    upper, lower : array (k, R)
        Per method and repetition ``sup_upper`` (``inf`` or NaN where a method has none) and ``sup_abs``.
    rule : {"every", "sign"}
        The rule over the repetitions (module docs).
    gamma : float
        The sign test's family-wise level over the cell's ordered pairs (``rule="sign"``).

    Returns
    -------
    better : bool array (k, k)
        ``better[a, b]``: method ``a`` is certified better than method ``b`` in the cell.
    wins : int array (k, k)
        Repetitions in which ``a`` is certified better than ``b``.
    p : float array (k, k)
        The sign test's one-sided p-value ``P(Bin(R, 1/2) ≥ wins)`` (NaN on the diagonal).

    Raises
    ------
    ValueError
        For arrays of different shapes, a missing ``sup_abs``, an unknown ``rule`` or a ``gamma`` outside (0, 1).
    """
    check_choice(rule, name="rule", choices=RULES)
    gamma = _check_gamma(gamma)
    up = np.asarray(upper, dtype=float)
    low = np.asarray(lower, dtype=float)
    if up.shape != low.shape or up.ndim != 2:
        raise ValueError(f"upper and lower must be (methods, repetitions) arrays of one shape; got {up.shape} and "
                         f"{low.shape}")
    if np.isnan(low).any():
        raise ValueError("lower (sup_abs) is missing for some method and repetition: the intervals need it everywhere")
    up = np.where(np.isnan(up), np.inf, up)
    k, R = up.shape
    wins = (up[:, None, :] + INTERVAL_TOLERANCE < low[None, :, :]).sum(axis=2)
    np.fill_diagonal(wins, 0)
    p = binom.sf(wins - 1, R, 0.5) if R else np.ones((k, k))
    p = np.asarray(p, dtype=float)
    np.fill_diagonal(p, np.nan)
    if rule == "every":
        better = (wins == R) & (R > 0)
    else:
        m = max(k * (k - 1), 1)
        better = np.nan_to_num(p, nan=1.0) <= gamma / m
    np.fill_diagonal(better, False)
    return better, wins, p


def _cells(records: pd.DataFrame) -> list[tuple[str, float, str, list[str]]]:
    """(data set, σ, table, methods with a ``sup_abs`` in every repetition), in the board's order."""
    need = ["dataset", "sigma", "rep", "method", "privacy", "sup_abs"]
    missing = [c for c in need if c not in records.columns]
    if missing:
        raise ValueError(f"records: missing column(s) {missing} (a leaderboard records table has them)")
    complete = records.groupby(["dataset", "sigma", "method"], sort=True)["sup_abs"].apply(
        lambda s: bool(s.notna().all()))
    privacy = records.drop_duplicates(["dataset", "sigma", "method"]).set_index(["dataset", "sigma", "method"])["privacy"]
    out = []
    for (ds, sigma), _ in records.groupby(["dataset", "sigma"], sort=True):
        for table, (allowed, _mech) in TABLES.items():
            methods = sorted(m for (d, s, m), ok in complete.items()
                             if d == ds and s == sigma and ok and privacy[(d, s, m)] in allowed)
            out.append((str(ds), float(sigma), table, methods))
    return out


def _arrays(records: pd.DataFrame, ds: str, sigma: float, methods: Sequence[str]
            ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    here = records[(records["dataset"] == ds) & (records["sigma"] == sigma) & records["method"].isin(methods)]
    if "sup_upper" not in here.columns:
        here = here.assign(sup_upper=np.nan)
    low = here.pivot(index="method", columns="rep", values="sup_abs").reindex(list(methods))
    up = here.pivot(index="method", columns="rep", values="sup_upper").reindex(list(methods))
    if low.isna().to_numpy().any():
        raise ValueError(f"records: at {ds}, σ = {sigma:g} the methods {list(methods)} do not share their repetitions "
                         "(the comparison is paired)")
    return up.to_numpy(dtype=float), low.to_numpy(dtype=float), low.columns.to_numpy()


def certified_pairs(records: pd.DataFrame, *, rule: str = "every", gamma: float = 0.05) -> list[dict[str, Any]]:
    """Every (cell, A, B) with A certified better than B on the class (:data:`PAIR_COLUMNS`; module docs).

    Parameters
    ----------
    records : pandas.DataFrame
        A leaderboard records table (:mod:`dpkit.board.records`), with or without ``sup_upper``.
    rule : {"every", "sign"}
        The rule over the repetitions (:func:`certified_better`).
    gamma : float
        The sign test's family-wise level per cell (``rule="sign"``).

    Returns
    -------
    list of dict
        Per cell (data set, σ, table in the board's order), the pairs, the better method's name first, by name.
    """
    out = []
    for ds, sigma, table, methods in _cells(records):
        if len(methods) < 2:
            continue
        up, low, reps = _arrays(records, ds, sigma, methods)
        better, wins, p = certified_better(up, low, rule=rule, gamma=gamma)
        for a, b in zip(*np.nonzero(better)):
            out.append({"dataset": ds, "sigma": sigma, "table": table, "better": methods[a], "worse": methods[b],
                        "reps_certified": int(wins[a, b]), "reps": int(len(reps)), "p_value": float(p[a, b])})
    return out


def certified_cells(records: pd.DataFrame, *, rule: str = "every", gamma: float = 0.05) -> list[dict[str, Any]]:
    """Per cell (data set, σ, table) what the intervals prove (:data:`CELL_COLUMNS`).

    Parameters
    ----------
    records : pandas.DataFrame
        A leaderboard records table, with or without ``sup_upper``.
    rule : {"every", "sign"}
        The rule over the repetitions (:func:`certified_better`).
    gamma : float
        The sign test's family-wise level per cell (``rule="sign"``).

    Returns
    -------
    list of dict
        ``methods`` (ranked: a ``sup_abs`` in every repetition), ``with_upper`` (of them, with a ``sup_upper`` in
        every repetition), ``may_be_best`` (the methods no other is certified better than, by mean ``sup_upper``
        then name), ``certified_best`` (the one method certified better than every other, else None),
        ``certified_pairs`` (ordered pairs certified), ``best_by_mean_sup`` (the smallest mean ``sup_abs``: the
        board's ranking's statistic) and ``best_by_mean_sup_may_lose`` (some method is certified better than it).
    """
    check_choice(rule, name="rule", choices=RULES)
    gamma = _check_gamma(gamma)
    out = []
    for ds, sigma, table, methods in _cells(records):
        row: dict[str, Any] = {"dataset": ds, "sigma": sigma, "table": table, "rule": rule, "reps": 0,
                               "methods": len(methods), "with_upper": 0, "may_be_best": (), "n_may_be_best": 0,
                               "certified_best": None, "certified_pairs": 0, "best_by_mean_sup": None,
                               "best_by_mean_sup_may_lose": None}
        if methods:
            up, low, reps = _arrays(records, ds, sigma, methods)
            better, _, _ = certified_better(up, low, rule=rule, gamma=gamma)
            beaten = better.any(axis=0)
            mean_up = np.where(np.isnan(up).any(axis=1), np.inf, up.mean(axis=1))
            open_ = [i for i in np.lexsort((np.array(methods), mean_up)) if not beaten[i]]
            best_mean = int(np.lexsort((np.array(methods), low.mean(axis=1)))[0])
            single = len(open_) == 1 and bool(better[open_[0]].sum() == len(methods) - 1)
            row.update({"reps": int(len(reps)), "with_upper": int((~np.isnan(up).any(axis=1)).sum()),
                        "may_be_best": tuple(methods[i] for i in open_), "n_may_be_best": len(open_),
                        "certified_best": methods[open_[0]] if single else None,
                        "certified_pairs": int(better.sum()), "best_by_mean_sup": methods[best_mean],
                        "best_by_mean_sup_may_lose": bool(beaten[best_mean])})
        out.append(row)
    return out


def certified_sentence(cells: Sequence[dict[str, Any]]) -> str:
    """One sentence for the README and the results page: in how many cells a best method is certified on the class,
    per table, and the median size of the set that may still be best."""
    if not cells:
        return "No cell has a class supremum."
    rule = cells[0]["rule"]
    parts = []
    for table in TABLES:
        mine = [c for c in cells if c["table"] == table and c["methods"]]
        parts.append(f"{sum(c['certified_best'] is not None for c in mine)}/{len(mine)} ({table})")
    sizes = [c["n_may_be_best"] for c in cells if c["methods"]]
    how = ("in every repetition" if rule == "every" else "by an exact sign test over the repetitions")
    if not any(c["with_upper"] for c in cells):
        return ("No certified comparison on the class: the records carry no certified upper bound (sup_upper) yet; "
                "the ranking by the class supremum compares the search's lower bounds.")
    return (f"A best method on the whole query class is certified in {' and '.join(parts)} cells (its certified upper "
            f"bound below every other method's witness {how}); a median of {float(np.median(sizes)):g} methods per "
            "cell may still be best.")


def interval_ratios(records: pd.DataFrame) -> dict[str, Any]:
    """The distribution of ``sup_upper / sup_abs`` over the records that have both (how loose the interval is).

    Returns
    -------
    dict
        ``n``, ``median``, ``q90``, ``max``, ``above_3`` (records with a ratio above 3), ``share_at_most_1_5``,
        and ``per_dataset`` (the same per data set); NaN statistics (and ``n`` = 0) without any interval.
    """
    if "sup_upper" not in records.columns:
        return {"n": 0, "median": math.nan, "q90": math.nan, "max": math.nan, "above_3": 0,
                "share_at_most_1_5": math.nan, "per_dataset": {}}

    def stats(df: pd.DataFrame) -> dict[str, Any]:
        both = df["sup_upper"].notna() & df["sup_abs"].notna() & (df["sup_abs"] > 0)
        r = (df.loc[both, "sup_upper"] / df.loc[both, "sup_abs"]).to_numpy(dtype=float)
        if not r.size:
            return {"n": 0, "median": math.nan, "q90": math.nan, "max": math.nan, "above_3": 0,
                    "share_at_most_1_5": math.nan}
        return {"n": int(r.size), "median": float(np.median(r)), "q90": float(np.quantile(r, 0.9)),
                "max": float(r.max()), "above_3": int((r > 3).sum()), "share_at_most_1_5": float((r <= 1.5).mean())}

    out = stats(records)
    out["per_dataset"] = {str(ds): stats(g) for ds, g in records.groupby("dataset", sort=True)}
    return out
