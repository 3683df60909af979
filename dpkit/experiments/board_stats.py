"""Confidence intervals and verdicts under a false-alarm budget for the leaderboard's comparisons.

.. note::
   The board's verdicts, winner sets and intervals (:func:`dpkit.experiments.leaderboard.leaderboard_rows` with the
   default split) are those of :mod:`dpkit.experiments.board_robust`: an exact sign test of the winner's median, paired
   sign tests against the winner, and the mean's interval below only where a coverage study on the cell's own records
   keeps it. Steps 2 and 3 below (the Gumbel-calibrated mean) assume a tail the records need not have: a
   per-repetition worst error is a maximum over 10⁴ strongly dependent queries, and some methods fail now and then
   by a factor of 6 to 27 (``rap-eps`` on CSN), where the upper end misses the mean in about a fifth of resamples.
   They remain for ``selection="simultaneous"`` and as the negative control of ``tests/test_board_robust.py``; the
   split (step 1) and Holm's procedure (step 4) are the board's.

The leaderboard (:mod:`dpkit.experiments.leaderboard`) compares, per *cell* (data set × σ × table, and an error kind:
``abs`` or ``rel``), the best method with the thesis's printed number, with its runner-up, and an entrant with the
current best. Every method of a cell runs on the same repetitions with the same workloads
(:func:`dpkit.experiments.protocol.run_cells`), so comparisons between methods are *paired* by repetition.

Procedure
---------
1. **Winner chosen on one half, judged on the other** (data splitting [2]_, [3]_, [4]_). The repetitions of a cell
   are split once, in advance and independently of their values, by their index: the *selection half* (even
   ``rep``) and the *evaluation half* (odd ``rep``). The repetitions are exchangeable (each draws its workload and
   every method's stream from its own child seed), so this fixed split is as good as a random one. The cell's
   winner (and runner-up) are the smallest (second smallest) mean error over the selection half; its reported
   estimate and interval use only the evaluation half, on which the selection had no influence. This removes the
   winner's curse: the best of k methods by mean is biased low, the more so the more methods compete, and an
   interval on the same repetitions that chose it is too optimistic (the naive procedure claims a win against a
   printed number equal to the true mean in almost every cell; ``tests/test_board_stats.py``). The alternative
   ``selection="simultaneous"`` picks the winner on all repetitions and widens its interval to the Bonferroni level
   ``α/k`` over the k candidates, which covers every candidate at once and so the selected one (and its
   comparison with the runner-up to ``α/(k(k − 1)/2)``, over all pairs).
2. **Interval for a mean** over the repetitions of the evaluation half (15 of 30) of a maximum-type statistic (the
   worst error over 10⁴ queries). Student's t is not enough here: a right-skewed variable makes the studentized
   mean left-skewed (a sample that misses the long right tail has both a low mean and a small spread), so the
   t-interval's upper end is too low, and at the small levels Holm's procedure asks for (γ/25) the false *better*
   rate of the t-interval is three to five times its nominal level (on maxima of Gaussian errors: the t-only
   control of ``tests/test_board_stats.py`` exceeds the budget). A bootstrap interval of 15 values cannot repair
   this (it cannot see the tail the sample missed, and its far quantiles rest on two or three resampled means).
   The upper end is
   therefore calibrated on the Gumbel law, the limit law of maxima (Fisher–Tippett–Gnedenko [7]_), under which
   the studentized mean is pivotal (it does not depend on the location and scale): its quantiles come from
   :data:`~dpkit.experiments.board_intervals.PIVOT_DRAWS` simulated samples of the same size with a fixed seed
   (:func:`~dpkit.experiments.board_intervals.gumbel_pivot`). The lower end is Student's t (under a right-skewed
   law the t-quantile is the larger on that side). This is valid for errors no more right-skewed than the Gumbel
   law (skewness 1.14); maxima of many light-tailed errors are less skewed (a maximum of 10⁴ absolute Gaussian
   errors: 0.75), a method with rare large failures can be more.
3. **Against the printed number** (a constant, the thesis's mean as printed, to ``decimals`` = 3 places). The
   printed ``p`` stands for any value in ``[p − h, p + h]``, ``h = 0.5·10^−decimals`` (0.0005). The null hypothesis
   of a cell is the whole interval: *better* needs the interval's upper end below ``p − h``, *worse* its lower end
   above ``p + h``, anything else is a *tie*. Its two-sided p-value is ``min(1, 2·min(P(G ≤ (m − (p − h))/s),
   P(T ≥ (m − (p + h))/s)))`` (G the Gumbel pivot, T Student's t; m the mean, s its standard error); an interval
   at level ``1 − α`` excludes the null interval exactly when that p-value is at most ``α``.
4. **Multiplicity: Holm's step-down** [1]_ over the cells of one family, a table (Table 3.2 or 3.3) and one error
   kind (25 cells: 5 data sets × 5 σ), at the false-alarm budget ``γ`` (default :data:`DEFAULT_BUDGET` = 0.05):
   the probability that any *better* or *worse* verdict of a family is false is at most γ, whatever the
   dependence between cells (cells of one data set share the σ-independent releases). The cells are ordered by
   p-value; the j-th (from 0) of m is tested at ``γ/(m − j)`` until the first that is not rejected (call its
   step k); every cell is given the interval at level ``1 − γ/(m − min(j, k))``, so the interval excludes the
   null interval exactly for the cells Holm rejects. (These intervals agree with Holm's decisions; they are not
   simultaneous intervals, for which see [5]_.) Directions are read from the sign; for independent statistics
   this also controls directional errors [6]_.
5. **Paired comparisons** (winner against runner-up on the board, an entrant against the current best with
   :func:`compare_paired`): the t-interval of the per-repetition differences ``a − b`` on the evaluation half
   (differences of two methods on the same workloads), zero as the null value, Holm across the cells compared.

The thesis's printed numbers are taken as constants; their own sampling error (they are means over the thesis's
repetitions) is not modelled, so *better* means: better than the number printed.

References
----------
.. [1] S. Holm, "A simple sequentially rejective multiple test procedure", Scandinavian Journal of Statistics 6(2),
   65–70, 1979.
.. [2] D. R. Cox, "A note on data-splitting for the evaluation of significance levels", Biometrika 62(2), 441–444,
   1975.
.. [3] P. A. P. Moran, "Dividing a sample into two parts: a statistical dilemma", Sankhyā A 35(3), 329–333, 1973.
.. [4] D. Rubin, S. Dudoit and M. van der Laan, "A method to increase the power of multiple testing procedures
   through sample splitting", Statistical Applications in Genetics and Molecular Biology 5(1), article 19, 2006.
.. [5] K. Strassburger and F. Bretz, "Compatible simultaneous lower confidence bounds for the Holm procedure and
   other Bonferroni-based closed tests", Statistics in Medicine 27(24), 4914–4927, 2008.
.. [6] J. P. Shaffer, "Control of directional errors with stagewise multiple test procedures", Annals of
   Statistics 8(6), 1342–1347, 1980.
.. [7] B. Gnedenko, "Sur la distribution limite du terme maximum d'une série aléatoire", Annals of Mathematics
   44(3), 423–453, 1943.
"""
from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats

from dpkit.core.validation import check_choice, check_probability
from dpkit.experiments.board_intervals import PIVOT_DRAWS, gumbel_pivot, mean_interval, printed_pvalue

__all__ = ["DEFAULT_BUDGET", "KINDS", "SELECTIONS", "REPETITION_COLUMNS", "PIVOT_DRAWS", "split_mask", "gumbel_pivot",
           "mean_interval", "printed_pvalue", "holm", "MeanTest", "winner_tests",
           "family_verdicts", "cell_arrays", "compare_paired"]

#: The default false-alarm budget γ: family-wise, per table and error kind.
DEFAULT_BUDGET = 0.05
#: Error kinds with a per-repetition column in the records.
KINDS = ("abs", "rel", "sup_abs")
#: How a cell's winner is chosen and judged (module docstring, step 1).
SELECTIONS = ("split", "simultaneous")
#: The columns of the records the functions here need: a subset of the leaderboard's records table
#: (:data:`dpkit.experiments.board_records.COLUMNS`, :func:`dpkit.experiments.board_records.records_frame`), which
#: they take as it is.
REPETITION_COLUMNS = ("dataset", "sigma", "rep", "method", "privacy", "abs", "rel", "sup_abs")


def split_mask(reps: np.ndarray) -> np.ndarray:
    """``True`` for the repetitions of the selection half (even index), ``False`` for the evaluation half (odd).

    >>> split_mask(np.arange(5)).tolist()
    [True, False, True, False, True]
    """
    return np.asarray(reps) % 2 == 0


def holm(p: np.ndarray, gamma: float) -> tuple[np.ndarray, np.ndarray]:
    """Holm's step-down procedure [1]_ along the last axis; ``nan`` entries are not in the family.

    Returns
    -------
    reject : bool array
        The hypotheses rejected at family-wise level ``gamma``.
    level : array
        The level each hypothesis was tested at, ``gamma/(m − min(j, k))`` for the j-th smallest p-value and the
        step k at which the procedure stopped (module docstring, step 4); ``nan`` outside the family.

    Examples
    --------
    >>> reject, level = holm(np.array([0.01, 0.04, 0.03]), 0.05)
    >>> reject.tolist(), np.round(level, 4).tolist()
    ([True, False, False], [0.0167, 0.025, 0.025])
    """
    check_probability(gamma, name="gamma")
    p = np.asarray(p, dtype=float)
    flat = p.reshape(-1, p.shape[-1]) if p.ndim else p.reshape(1, 1)
    order = np.argsort(np.where(np.isnan(flat), np.inf, flat), axis=-1, kind="stable")
    ps = np.take_along_axis(flat, order, axis=-1)
    m = (~np.isnan(flat)).sum(axis=-1, keepdims=True)
    j = np.arange(flat.shape[-1])[None, :]
    with np.errstate(divide="ignore"):
        thr = np.where(j < m, gamma / np.maximum(m - j, 1), np.nan)
    ok = np.cumprod(np.where(np.isnan(ps), 0, ps <= thr), axis=-1).astype(bool)
    k = ok.sum(axis=-1, keepdims=True)
    level_sorted = np.where(j < m, gamma / np.maximum(m - np.minimum(j, k), 1), np.nan)
    reject, level = np.empty_like(ok), np.empty_like(level_sorted)
    np.put_along_axis(reject, order, ok, axis=-1)
    np.put_along_axis(level, order, level_sorted, axis=-1)
    return reject.reshape(p.shape), level.reshape(p.shape)


@dataclass(frozen=True)
class MeanTest:
    """The winners of a family's cells and their evaluation statistics (arrays over the cells; :func:`winner_tests`).

    Attributes
    ----------
    winner, runner_up : int arrays
        Index of the winner and the runner-up among the cell's methods (−1 for no runner-up).
    mean, se : arrays
        The winner's mean error and its standard error on the evaluation repetitions.
    n : int
        The number of evaluation repetitions.
    multiplicity : int array
        The factor the cell's p-value is multiplied by for the selection (1 for the split, k for the simultaneous
        choice; its runner-up comparison uses k(k − 1)/2).
    diff_mean, diff_se : arrays
        Winner minus runner-up: mean paired difference and its standard error on the evaluation repetitions.
    """

    winner: np.ndarray
    runner_up: np.ndarray
    mean: np.ndarray
    se: np.ndarray
    n: int
    multiplicity: np.ndarray
    diff_mean: np.ndarray
    diff_se: np.ndarray


def winner_tests(errors: np.ndarray, reps: np.ndarray, *, selection: str = "split") -> MeanTest:
    """Choose each cell's winner and runner-up and give the statistics they are judged by (module docstring).

    Parameters
    ----------
    errors : array (..., k, R)
        Per cell (leading axes), the errors of its k methods on its R repetitions (paired: column r is repetition
        ``reps[r]`` for every method); ``nan`` rows are methods absent from the cell (never chosen).
    reps : int array (R,)
        The repetitions' indices (:func:`split_mask`).
    selection : {"split", "simultaneous"}
        Choose on the selection half and judge on the evaluation half, or choose and judge on all repetitions with
        the Bonferroni factor k.
    """
    check_choice(selection, name="selection", choices=SELECTIONS)
    errors = np.asarray(errors, dtype=float)
    present = ~np.isnan(errors).any(axis=-1)
    if selection == "split":
        sel = split_mask(reps)
        choose, judge = errors[..., sel], errors[..., ~sel]
    else:
        choose = judge = errors
    if choose.shape[-1] < 1 or judge.shape[-1] < 2:
        raise ValueError(f"repetitions: the {selection} selection needs at least 1 to choose on and 2 to judge on; "
                         f"got {len(reps)} repetitions")
    key = np.where(present, choose.mean(axis=-1) if choose.shape[-1] else 0.0, np.inf)
    order = np.argsort(key, axis=-1, kind="stable")
    k = present.sum(axis=-1)
    winner = order[..., 0]
    runner = np.where(k > 1, order[..., 1] if order.shape[-1] > 1 else -1, -1)
    pick = lambda idx: np.take_along_axis(judge, np.maximum(idx, 0)[..., None, None], axis=-2)[..., 0, :]  # noqa: E731
    w = pick(winner)
    n = judge.shape[-1]
    mean, se = w.mean(axis=-1), w.std(axis=-1, ddof=1) / math.sqrt(n)
    d = w - pick(runner)
    diff_mean = np.where(runner >= 0, d.mean(axis=-1), np.nan)
    diff_se = np.where(runner >= 0, d.std(axis=-1, ddof=1) / math.sqrt(n), np.nan)
    mult = np.ones_like(k) if selection == "split" else np.maximum(k, 1)
    return MeanTest(winner=winner, runner_up=runner, mean=mean, se=se, n=n, multiplicity=mult,
                    diff_mean=diff_mean, diff_se=diff_se)


def _verdicts(p: np.ndarray, gamma: float, mean: np.ndarray, se: np.ndarray, n: int, low_null: np.ndarray,
              high_null: np.ndarray, *, calibration: str, multiplicity: np.ndarray | int = 1
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Holm across the last axis: the intervals at the Holm step levels (divided by ``multiplicity``), the
    levels and the verdicts."""
    reject, level = holm(p, gamma)
    a = level / multiplicity
    if calibration == "gumbel":
        low, high = mean_interval(mean, se, n, a)
    else:
        q = stats.t.ppf(1 - a / 2, n - 1)
        low, high = mean - q * se, mean + q * se
    verdict = np.where(np.isnan(p), "n/a", np.where(reject & (mean < low_null), "better",
                                                     np.where(reject & (mean > high_null), "worse", "tie")))
    return low, high, level, verdict


def family_verdicts(errors: np.ndarray, reps: np.ndarray, printed: np.ndarray, *, gamma: float = DEFAULT_BUDGET,
                    decimals: int | None = 3, selection: str = "split") -> dict[str, np.ndarray]:
    """The verdicts of one family (the cells along the second-to-last-but-one axis) against the printed numbers.

    Parameters
    ----------
    errors : array (..., m, k, R)
        The cells' errors (:func:`winner_tests`); leading axes are independent families (e.g. simulated boards).
    reps : int array (R,)
        The repetitions' indices.
    printed : array (m,) or (..., m)
        The thesis's printed numbers (``nan``: no number, the cell is not in the family; verdict ``"n/a"``).
    gamma : float
        The false-alarm budget, family-wise (module docstring, step 4).
    decimals : int or None
        Decimals the numbers are printed to (the null interval's half-width ``0.5·10^−decimals``); ``None``: the
        printed numbers are exact.
    selection : {"split", "simultaneous"}
        :func:`winner_tests`.

    Returns
    -------
    dict of arrays over the cells
        ``winner, runner_up, mean, se, p, level, ci_low, ci_high, verdict`` (against the printed number) and
        ``diff_mean, diff_p, diff_level, diff_ci_low, diff_ci_high, diff_verdict`` (winner against runner-up:
        ``"better"`` when the winner is significantly better).
    """
    check_probability(gamma, name="gamma")
    t = winner_tests(errors, reps, selection=selection)
    h = 0.0 if decimals is None else 0.5 * 10.0 ** (-int(decimals))
    printed = np.broadcast_to(np.asarray(printed, dtype=float), t.mean.shape)
    p = np.minimum(1.0, printed_pvalue(t.mean, t.se, t.n, printed - h, printed + h) * t.multiplicity)
    # the simultaneous choice's Bonferroni factor: the winner's interval at its Holm level divided by k
    low, high, level, verdict = _verdicts(p, gamma, t.mean, t.se, t.n, printed - h, printed + h,
                                          calibration="gumbel", multiplicity=t.multiplicity)
    zero = np.zeros_like(t.diff_mean)
    # chosen on the repetitions it is judged on, the pair is one of the k(k − 1)/2 (Bonferroni over all pairs)
    pairs = np.ones_like(t.multiplicity) if selection == "split" else np.maximum(t.multiplicity * (t.multiplicity - 1) // 2, 1)
    dp = np.minimum(1.0, printed_pvalue(t.diff_mean, t.diff_se, t.n, zero, zero, calibration="t") * pairs)
    dlow, dhigh, dlevel, dverdict = _verdicts(dp, gamma, t.diff_mean, t.diff_se, t.n, zero, zero, calibration="t",
                                              multiplicity=pairs)
    return {"winner": t.winner, "runner_up": t.runner_up, "mean": t.mean, "se": t.se, "p": p, "level": level,
            "ci_low": low, "ci_high": high, "verdict": verdict, "diff_mean": t.diff_mean, "diff_p": dp,
            "diff_level": dlevel, "diff_ci_low": dlow, "diff_ci_high": dhigh, "diff_verdict": dverdict}


def _check_frame(records: pd.DataFrame, kind: str) -> None:
    if not isinstance(records, pd.DataFrame):
        raise TypeError(f"records must be a pandas DataFrame with columns {list(REPETITION_COLUMNS)} "
                        f"(dpkit.experiments.board_records.records_frame); got {type(records).__name__}")
    missing = [c for c in ("dataset", "sigma", "rep", "method", kind) if c not in records.columns]
    if missing:
        raise ValueError(f"records: missing column(s) {missing}; needed: dataset, sigma, rep, method and the error "
                         f"kind {kind!r}")
    dup = records.duplicated(["dataset", "sigma", "method", "rep"])
    if dup.any():
        r = records[dup].iloc[0]
        raise ValueError(f"records: repetition {r['rep']} of {r['method']!r} at {r['dataset']}, σ = {r['sigma']:g} "
                         "appears more than once")


def cell_arrays(records: pd.DataFrame, cell_methods: Mapping[tuple[str, float], list[str]], kind: str
                ) -> tuple[np.ndarray, np.ndarray]:
    """The errors of ``kind`` of the cells' methods as an array (cells, k, R) for :func:`family_verdicts`.

    ``cell_methods`` maps (data set, σ) to the cell's methods in order (ties in the mean go to the first);
    shorter lists are padded with absent (``nan``) methods.

    Raises
    ------
    ValueError
        A method of a cell has no records, its repetitions differ from the other methods' (the comparison is
        paired), a value is missing, or the cells have different repetitions: the message names the cell and
        method.
    """
    _check_frame(records, kind)
    cells = list(cell_methods)
    if not cells:
        return np.empty((0, 0, 0)), np.empty(0, dtype=int)
    k = max(len(v) for v in cell_methods.values())
    groups = {key: g for key, g in records.groupby(["dataset", "sigma", "method"], sort=False)}
    reps: np.ndarray | None = None
    out: np.ndarray | None = None
    for c, (ds, sigma) in enumerate(cells):
        for i, method in enumerate(cell_methods[(ds, sigma)]):
            g = groups.get((ds, float(sigma), method))
            if g is None:
                raise ValueError(f"records: no repetitions of {method!r} at {ds}, σ = {float(sigma):g}")
            g = g.sort_values("rep")
            these = g["rep"].to_numpy(dtype=int)
            if reps is None:
                reps = these
                out = np.full((len(cells), k, len(reps)), np.nan)
            elif not np.array_equal(these, reps):
                raise ValueError(f"records: {method!r} at {ds}, σ = {float(sigma):g} has repetitions "
                                 f"{these.tolist()}, the other methods {reps.tolist()}: the comparison is paired")
            vals = g[kind].to_numpy(dtype=float)
            if np.isnan(vals).any():
                raise ValueError(f"records: {method!r} at {ds}, σ = {float(sigma):g} lacks {kind!r} in repetition(s) "
                                 f"{these[np.isnan(vals)].tolist()}")
            assert out is not None
            out[c, i] = vals
    assert out is not None and reps is not None
    return out, reps


@dataclass(frozen=True)
class _Pair:
    dataset: str
    sigma: float
    b: str


def compare_paired(records: pd.DataFrame, a: str, b: str | Mapping[tuple[str, float], str], *, kind: str = "abs",
                   gamma: float = DEFAULT_BUDGET, half: str = "evaluation") -> pd.DataFrame:
    """Method ``a`` (an entrant) against ``b`` (the current best) in every cell where both ran, paired by repetition.

    Per (data set, σ): the t-interval of the differences ``a − b`` of ``kind`` over the repetitions, the two-sided
    p-value of zero difference, Holm [1]_ across the cells compared at family-wise level ``gamma``, the interval at
    the cell's Holm level and the verdict for ``a``: ``"better"`` (the whole interval below 0), ``"worse"`` (above)
    or ``"tie"``.

    Parameters
    ----------
    records : DataFrame
        Per-repetition records (the leaderboard's records table,
        :func:`dpkit.experiments.board_records.records_frame`; at least :data:`REPETITION_COLUMNS`).
    a : str
        The entrant.
    b : str or mapping (data set, σ) → str
        The method to compare with, one for all cells or one per cell (the cells compared are then those named).
    kind : {"abs", "rel", "sup_abs"}
        The error compared.
    gamma : float
        The false-alarm budget over the cells compared.
    half : {"evaluation", "all"}
        Compare on the evaluation half only (the default: the current best was chosen on the selection half, so its
        errors there are biased low) or on all repetitions (for two methods neither of which was chosen on them).

    Returns
    -------
    DataFrame
        ``dataset, sigma, a, b, kind, n, diff_mean, ci_low, ci_high, p, level, verdict``, one row per cell.

    Raises
    ------
    ValueError
        No cell has both methods, their repetitions differ (named), or fewer than 2 repetitions are compared (an
        interval needs 2: with ``half="evaluation"``, at least 4 repetitions).
    """
    check_choice(kind, name="kind", choices=KINDS)
    check_choice(half, name="half", choices=("evaluation", "all"))
    check_probability(gamma, name="gamma")
    _check_frame(records, kind)
    have = records.groupby(["dataset", "sigma"], sort=True)["method"].agg(set)
    if isinstance(b, str):
        pairs = [_Pair(str(ds), float(s), b) for (ds, s), ms in have.items() if a in ms and b in ms]
    else:
        pairs = [_Pair(str(ds), float(s), m) for (ds, s), m in b.items()]
    if not pairs:
        raise ValueError(f"compare_paired: no cell where both {a!r} and {b!r} ran")
    errors, reps = cell_arrays(records, {(p.dataset, p.sigma): [a, p.b] for p in pairs}, kind)
    if half == "evaluation":
        keep = ~split_mask(reps)
        errors, reps = errors[..., keep], reps[keep]
    d = errors[:, 0, :] - errors[:, 1, :]
    n = d.shape[-1]
    if n < 2:
        raise ValueError(f"compare_paired: {n} repetition(s) of the {half} half (repetitions {reps.tolist()}) to "
                         f"compare {a!r} on; an interval needs at least 2")
    mean, se = d.mean(axis=-1), d.std(axis=-1, ddof=1) / math.sqrt(n)
    zero = np.zeros_like(mean)
    p = printed_pvalue(mean, se, n, zero, zero, calibration="t")
    low, high, level, verdict = _verdicts(p, gamma, mean, se, n, zero, zero, calibration="t")
    return pd.DataFrame({"dataset": [x.dataset for x in pairs], "sigma": [x.sigma for x in pairs], "a": a,
                         "b": [x.b for x in pairs], "kind": kind, "n": d.shape[-1], "diff_mean": mean,
                         "ci_low": low, "ci_high": high, "p": p, "level": level, "verdict": verdict})
