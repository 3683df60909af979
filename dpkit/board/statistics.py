"""The board's statistics: intervals, tests against the printed numbers, winner sets, coverage, paired comparisons.

Per *cell* (data set × σ × table, and an error kind) every method runs on the same repetitions and workloads, so
comparisons are paired by repetition. The board's verdicts use the distribution-free procedure; the derivations,
the levels and the Gumbel-calibrated alternative are on the science page ``docs/science/board_statistics.md``.

Algorithm (the board's, distribution-free)
------------------------------------------
1. Split the repetitions by index, in advance: the winner ``w`` is the smallest mean error on the selection half
   (even ``rep``) [2]_, [3]_, [4]_; everything below is judged on the evaluation half (odd ``rep``).
2. Verdict against the printed number ``p`` (standing for ``[p − h, p + h]``): an exact sign test of the winner's
   median [8]_, Holm's step-down [1]_ across the 25 cells of a table and error kind at the budget γ (:func:`holm`).
3. The median's distribution-free interval (:func:`median_interval`) [10]_, dual to the sign test.
4. The mean's Gumbel-calibrated interval (:func:`mean_interval`, :func:`gumbel_pivot`) [7]_ only where a coverage
   study on the cell's own records keeps it (:func:`coverage_study`).
5. Winner sets: one-sided sign tests of every other method against ``w``, Holm across all of a table's comparisons
   (after Hsu [9]_); an entrant against the current best: :func:`paired_sign_comparison`.

``selection="simultaneous"`` and the Gumbel mean verdict remain as the negative control; Holm's intervals agree with
its decisions but are not simultaneous [5]_, [6]_.

Guarantees
----------
The probability of any false *better* or *worse* verdict of a table and error kind is at most γ whatever the
distribution of the per-repetition errors and the dependence between cells; with probability at least 1 − γ no method
that is not worse than ``w`` is left out of a winner set. A sign test needs :func:`sign_min_reps` judged repetitions
to reject; with fewer its verdict is a tie. The printed numbers are taken as constants.

References
----------
.. [1] S. Holm, "A simple sequentially rejective multiple test procedure", Scand. J. Statist. 6(2), 1979.
.. [2] D. R. Cox, "A note on data-splitting for the evaluation of significance levels", Biometrika 62(2), 1975.
.. [3] P. A. P. Moran, "Dividing a sample into two parts: a statistical dilemma", Sankhyā A 35(3), 1973.
.. [4] D. Rubin, S. Dudoit, M. van der Laan, sample splitting for multiple testing, SAGMB 5(1), 2006.
.. [5] K. Strassburger, F. Bretz, compatible simultaneous bounds for Holm, Statistics in Medicine 27(24), 2008.
.. [6] J. P. Shaffer, "Control of directional errors with stagewise multiple test procedures", Ann. Stat. 8(6), 1980.
.. [7] B. Gnedenko, "Sur la distribution limite du terme maximum d'une série aléatoire", Ann. Math. 44(3), 1943.
.. [8] W. J. Dixon, A. M. Mood, "The statistical sign test", JASA 41(236), 1946.
.. [9] J. C. Hsu, *Multiple Comparisons: Theory and Methods*, Chapman & Hall, 1996, chapter 4.
.. [10] H. A. David, H. N. Nagaraja, *Order Statistics*, 3rd ed., Wiley, 2003, section 7.1.
"""
from __future__ import annotations

import functools
import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats

from dpkit.core.validation import check_choice, check_probability

__all__ = ["DEFAULT_BUDGET", "KINDS", "SELECTIONS", "REPETITION_COLUMNS", "PIVOT_DRAWS", "split_mask", "gumbel_pivot",
           "mean_interval", "printed_pvalue", "holm", "MeanTest", "winner_tests", "family_verdicts", "cell_arrays",
           "compare_paired", "COVERAGE_DRAWS", "COVERAGE_SEED", "sign_pvalue", "median_interval",
           "winner_set_pvalues", "coverage_study", "robust_family", "sign_min_reps", "paired_sign_comparison"]

#: Simulated samples behind the Gumbel-calibrated upper end of a mean's interval (:func:`gumbel_pivot`): a tail
#: probability P is estimated with standard error about √(P/PIVOT_DRAWS).
PIVOT_DRAWS = 1_000_000
_PIVOT_SEED = 20_260_101
_PIVOT_CHUNK = 100_000


@functools.lru_cache(maxsize=8)
def gumbel_pivot(n: int) -> np.ndarray:
    """The sorted studentized means ``(x̄ − μ)/(s/√n)`` of :data:`PIVOT_DRAWS` samples of ``n`` standard Gumbel
    draws (mean μ = Euler's γ), the same numbers in every call (fixed seed). The statistic is pivotal in the Gumbel
    location-scale family, so these are its quantiles for any location and scale
    (docs/science/board_statistics.md, Gumbel step 2)."""
    if n < 2:
        raise ValueError(f"a mean's interval needs at least 2 repetitions; got {n}")
    rng = np.random.default_rng(_PIVOT_SEED)
    parts = []
    for _ in range(PIVOT_DRAWS // _PIVOT_CHUNK):
        g = rng.gumbel(size=(_PIVOT_CHUNK, n))
        parts.append((g.mean(axis=1) - np.euler_gamma) / (g.std(axis=1, ddof=1) / math.sqrt(n)))
    out = np.sort(np.concatenate(parts))
    out.setflags(write=False)
    return out


def _pivot_cdf(x: np.ndarray, n: int) -> np.ndarray:
    """P(T ≤ x) under the Gumbel pivot, the Monte Carlo p-value ``(count + 1)/(draws + 1)`` (never 0)."""
    x = np.asarray(x, dtype=float)
    piv = gumbel_pivot(n)
    c = np.searchsorted(piv, np.where(np.isnan(x), 0.0, x).ravel(), side="right").reshape(x.shape)
    return np.where(np.isnan(x), np.nan, (c + 1) / (len(piv) + 1))


def _pivot_ppf(a: np.ndarray, n: int) -> np.ndarray:
    """The ``a``-quantile of the Gumbel pivot (``nan`` for ``nan``)."""
    a = np.asarray(a, dtype=float)
    q = np.quantile(gumbel_pivot(n), np.clip(np.where(np.isnan(a), 0.5, a), 0, 1).ravel()).reshape(a.shape)
    return np.where(np.isnan(a), np.nan, q)


def mean_interval(mean: np.ndarray, se: np.ndarray, n: int, alpha: np.ndarray | float
                  ) -> tuple[np.ndarray, np.ndarray]:
    """The interval at level ``1 − alpha`` for the mean of a maximum-type error
    (docs/science/board_statistics.md, Gumbel step 2): lower end from Student's t, upper end from the Gumbel pivot,
    ``alpha/2`` on each side."""
    alpha = np.asarray(alpha, dtype=float)
    low = mean - stats.t.ppf(1 - alpha / 2, n - 1) * se
    high = mean - _pivot_ppf(alpha / 2, n) * se
    return low, high


def printed_pvalue(mean: np.ndarray, se: np.ndarray, n: int, low: np.ndarray, high: np.ndarray, *,
                   calibration: str = "gumbel") -> np.ndarray:
    """Two-sided p-value of the interval null ``μ ∈ [low, high]`` for a mean of ``n`` repetitions
    (docs/science/board_statistics.md, Gumbel step 3); its rejection at ``α`` is exactly the interval of
    :func:`mean_interval` (``calibration="gumbel"``, for a mean error) or the t-interval (``"t"``, for paired
    differences) at ``1 − α`` missing ``[low, high]``. ``1`` for a mean inside with zero spread; ``nan`` where
    ``mean`` or ``low`` is ``nan``."""
    mean, se = np.asarray(mean, dtype=float), np.asarray(se, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        t_low, t_high = (mean - low) / se, (mean - high) / se
        below = _pivot_cdf(t_low, n) if calibration == "gumbel" else stats.t.cdf(t_low, n - 1)
        above = stats.t.sf(t_high, n - 1)
    p = np.minimum(1.0, 2 * np.minimum(below, above))
    p = np.where(np.isnan(p) & ~np.isnan(mean), 1.0, p)  # zero spread exactly on a bound
    return np.where(np.isnan(np.asarray(low, dtype=float)) | np.isnan(mean), np.nan, p)


#: The default false-alarm budget γ: family-wise, per table and error kind.
DEFAULT_BUDGET = 0.05
#: Error kinds with a per-repetition column in the records.
KINDS = ("abs", "rel", "sup_abs")
#: How a cell's winner is chosen and judged (docs/science/board_statistics.md, Gumbel step 1).
SELECTIONS = ("split", "simultaneous")
#: The columns of the records the functions here need: a subset of the leaderboard's records table
#: (:data:`dpkit.board.records.COLUMNS`, :func:`dpkit.board.records.records_frame`), which
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
        step k at which the procedure stopped (docs/science/board_statistics.md, Gumbel step 4); ``nan`` outside the family.

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
    """Choose each cell's winner and runner-up and give the statistics they are judged by (docs/science/board_statistics.md).

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
        The false-alarm budget, family-wise (docs/science/board_statistics.md, Gumbel step 4).
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
                        f"(dpkit.board.records.records_frame); got {type(records).__name__}")
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
        :func:`dpkit.board.records.records_frame`; at least :data:`REPETITION_COLUMNS`).
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


#: Resampled samples per cell in the coverage study of the mean's interval (:func:`coverage_study`).
COVERAGE_DRAWS = 20_000
#: The study's seed: the same records give the same table, bit for bit.
COVERAGE_SEED = 20_261_206
#: The probability that the study rejects an interval whose true miss rate is its nominal one.
COVERAGE_FALSE_REJECT = 1e-3


def _binom_sf(c: np.ndarray, n: int) -> np.ndarray:
    """``P(B ≥ c)`` for ``B ~ Binomial(n, 1/2)``."""
    return stats.binom.sf(np.asarray(c) - 1, n, 0.5)


def sign_pvalue(x: np.ndarray, low: np.ndarray, high: np.ndarray) -> np.ndarray:
    """Two-sided exact sign-test p-value of the interval null "the median of ``x`` lies in ``[low, high]``", along
    the last axis (docs/science/board_statistics.md, step D1).

    Parameters
    ----------
    x : array (..., n)
        Independent repetitions of one variable per leading index; ``nan`` rows give ``nan``.
    low, high : arrays broadcastable to ``x.shape[:-1]``
        The null interval; ``nan`` gives ``nan`` (no printed number).

    Examples
    --------
    >>> float(sign_pvalue(np.arange(1.0, 11.0), 20.0, 20.0))  # all 10 below: 2 · 2⁻¹⁰
    0.001953125
    """
    x = np.asarray(x, dtype=float)
    low, high = np.asarray(low, dtype=float), np.asarray(high, dtype=float)
    n = x.shape[-1]
    below = (x < low[..., None]).sum(axis=-1)
    above = (x > high[..., None]).sum(axis=-1)
    p = np.minimum(1.0, 2 * np.minimum(_binom_sf(below, n), _binom_sf(above, n)))
    return np.where(np.isnan(x).any(axis=-1) | np.isnan(low) | np.isnan(high), np.nan, p)


def _order_index(n: int, alpha: np.ndarray) -> np.ndarray:
    """The largest ``l`` (0 … n//2) with ``P(B ≤ l − 1) ≤ alpha/2``; 0 when even the extremes do not reach it."""
    alpha = np.asarray(alpha, dtype=float)
    cdf = stats.binom.cdf(np.arange(n + 1), n, 0.5)  # cdf[l − 1] = P(B ≤ l − 1)
    idx = np.searchsorted(cdf, np.where(np.isnan(alpha), -1.0, alpha / 2), side="right")  # count of cdf ≤ alpha/2
    return np.minimum(idx, n // 2)


def median_interval(x: np.ndarray, alpha: np.ndarray | float) -> tuple[np.ndarray, np.ndarray]:
    """The distribution-free interval ``[x_(l), x_(n+1−l)]`` for the median at level ``1 − alpha``, along the last
    axis (docs/science/board_statistics.md, step D2; David and Nagaraja [10]_); ``(−inf, inf)`` where ``n`` is too
    small for the level, ``nan`` where ``alpha`` is ``nan``.

    Examples
    --------
    >>> low, high = median_interval(np.arange(1.0, 16.0), 0.01)  # n = 15: P(B ≤ 2) = 0.0037 ≤ 0.005
    >>> float(low), float(high)
    (3.0, 13.0)
    """
    x = np.sort(np.asarray(x, dtype=float), axis=-1)
    n = x.shape[-1]
    idx = np.broadcast_to(_order_index(n, alpha), x.shape[:-1])
    lo_i, hi_i = np.maximum(idx - 1, 0), np.minimum(n - idx, n - 1)
    low = np.take_along_axis(x, lo_i[..., None], axis=-1)[..., 0]
    high = np.take_along_axis(x, hi_i[..., None], axis=-1)[..., 0]
    a = np.broadcast_to(np.asarray(alpha, dtype=float), idx.shape)
    low, high = np.where(idx == 0, -np.inf, low), np.where(idx == 0, np.inf, high)
    return np.where(np.isnan(a), np.nan, low), np.where(np.isnan(a), np.nan, high)


def winner_set_pvalues(judge: np.ndarray, winner: np.ndarray) -> np.ndarray:
    """One-sided exact sign-test p-values of "method j is worse than the winner" on paired repetitions (module
    docstring, step D4).

    Parameters
    ----------
    judge : array (..., k, n)
        The cells' errors on the evaluation repetitions; ``nan`` rows are absent methods.
    winner : int array (...)
        The index of each cell's winner.

    Returns
    -------
    array (..., k)
        ``P(B ≥ c_j)`` with ``c_j`` the repetitions on which method j errs more than the winner; ``nan`` for the
        winner itself and for absent methods.
    """
    judge = np.asarray(judge, dtype=float)
    n = judge.shape[-1]
    w = np.take_along_axis(judge, np.asarray(winner)[..., None, None], axis=-2)
    worse = (judge > w).sum(axis=-1)
    p = _binom_sf(worse, n)
    k = judge.shape[-2]
    is_winner = np.arange(k) == np.asarray(winner)[..., None]
    return np.where(is_winner | np.isnan(judge).any(axis=-1), np.nan, p)


def coverage_study(population: np.ndarray, n: int, alpha: np.ndarray | float, *, draws: int = COVERAGE_DRAWS,
                   seed: int = COVERAGE_SEED) -> dict[str, np.ndarray]:
    """The measured coverage of the mean's interval and of the median's, resampling each cell's own records
    (docs/science/board_statistics.md, step D3).

    Parameters
    ----------
    population : array (cells, R)
        Per cell, the records resampled (the winner's errors on all repetitions); their mean and median are the
        values to cover.
    n : int
        The sample size of the intervals (the evaluation half's repetitions).
    alpha : float or array (cells,)
        The nominal miss rate of each cell's interval (its Holm level).
    draws : int
        Resampled samples per cell.
    seed : int
        The resampling's seed (one stream per cell, keyed by its index).

    Returns
    -------
    dict of arrays (..., cells)
        ``mean_miss_low`` (the upper end below the mean), ``mean_miss_high`` (the lower end above it),
        ``mean_miss`` (their sum), ``median_miss`` (the median's interval missing the median), ``nominal``
        (``alpha``), ``limit`` (the most misses, as a rate, a true rate ``alpha`` reaches with probability
        1 − 10⁻³), ``keep_mean`` (the mean's misses within ``limit``) and ``skewness`` (the records' sample
        skewness, for reference).

    Raises
    ------
    ValueError
        For fewer than 2 records in a cell, ``n < 2`` or ``draws < 1``.
    """
    population = np.asarray(population, dtype=float)
    if population.ndim != 2 or population.shape[1] < 2:
        raise ValueError(f"coverage_study: population must be (cells, records ≥ 2); got shape {population.shape}")
    if n < 2 or draws < 1:
        raise ValueError(f"coverage_study: n must be ≥ 2 and draws ≥ 1; got n = {n}, draws = {draws}")
    cells, size = population.shape
    alpha = np.broadcast_to(np.asarray(alpha, dtype=float), (cells,))
    out = {k: np.full(cells, np.nan) for k in ("mean_miss_low", "mean_miss_high", "mean_miss", "median_miss")}
    for c in range(cells):
        if np.isnan(alpha[c]) or np.isnan(population[c]).any():
            continue
        rng = np.random.default_rng([seed, c])
        sample = population[c][rng.integers(0, size, size=(draws, n))]
        m = sample.mean(axis=1)
        se = sample.std(axis=1, ddof=1) / math.sqrt(n)
        low, high = mean_interval(m, se, n, alpha[c])
        mu = population[c].mean()
        out["mean_miss_low"][c] = np.mean(high < mu)
        out["mean_miss_high"][c] = np.mean(low > mu)
        out["mean_miss"][c] = out["mean_miss_low"][c] + out["mean_miss_high"][c]
        mlow, mhigh = median_interval(sample, alpha[c])
        med = np.median(population[c])
        out["median_miss"][c] = np.mean((mlow > med) | (mhigh < med))
    limit = np.where(np.isnan(alpha), np.nan,
                     stats.binom.ppf(1 - COVERAGE_FALSE_REJECT, draws, np.nan_to_num(alpha)) / draws)
    keep = ~np.isnan(out["mean_miss"]) & (out["mean_miss"] <= limit)
    d = population - population.mean(axis=1, keepdims=True)
    m2, m3 = (d ** 2).mean(axis=1), (d ** 3).mean(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):  # the adjusted Fisher–Pearson skewness; nan without spread
        skew = np.where(m2 > 0, m3 / m2 ** 1.5 * math.sqrt(size * (size - 1)) / max(size - 2, 1), np.nan)
    return {**out, "nominal": alpha.copy(), "limit": limit, "keep_mean": keep, "skewness": skew}


def robust_family(errors: np.ndarray, reps: np.ndarray, printed: np.ndarray, *, gamma: float = DEFAULT_BUDGET,
                  decimals: int | None = 3, coverage: bool = True, draws: int = COVERAGE_DRAWS
                  ) -> dict[str, np.ndarray]:
    """The verdicts, winner sets and intervals of one family (a table and error kind; module docstring).

    Parameters
    ----------
    errors : array (..., m, k, R)
        The cells' errors (:func:`cell_arrays`); leading axes are independent
        families (e.g. simulated boards).
    reps : int array (R,)
        The repetitions' indices (even: selection half, odd: evaluation half).
    printed : array (m,) or (..., m)
        The thesis's printed numbers (``nan``: no number, verdict ``"n/a"``; the winner set is still formed).
    gamma : float
        The false-alarm budget, family-wise, for the verdicts and (separately) for the winner sets.
    decimals : int or None
        Decimals of the printed numbers (null interval ``printed ± 0.5·10^−decimals``); ``None``: exact.
    coverage : bool
        Run the coverage study (step D3) and choose the interval shown by it; ``False`` shows the median's
        interval everywhere (for simulated boards, where the study is not needed).
    draws : int
        The coverage study's resampled samples per cell.

    Returns
    -------
    dict of arrays over the cells
        ``winner, runner_up, mean, median, p, level, verdict`` (the sign test against the printed number at the
        cell's Holm level), ``median_ci_low, median_ci_high`` (step D2), ``mean_ci_low, mean_ci_high`` (the Gumbel
        interval at the same level), ``keep_mean`` (step D3), ``param`` (``"mean"`` or ``"median"``: the interval
        shown), ``est, ci_low, ci_high`` (the shown parameter's estimate and interval), the coverage study's
        arrays prefixed ``coverage_`` (with ``coverage``), and over the methods (..., m, k): ``set_p``,
        ``in_set`` (the winner set), with ``set_size`` and ``certain`` (a set of one) over the cells.
    """
    check_probability(gamma, name="gamma")
    errors = np.asarray(errors, dtype=float)
    reps = np.asarray(reps)
    t = winner_tests(errors, reps, selection="split")
    judge = errors[..., ~split_mask(reps)]
    n = judge.shape[-1]
    w = np.take_along_axis(judge, t.winner[..., None, None], axis=-2)[..., 0, :]
    h = 0.0 if decimals is None else 0.5 * 10.0 ** (-int(decimals))
    printed = np.broadcast_to(np.asarray(printed, dtype=float), t.mean.shape)
    p = sign_pvalue(w, printed - h, printed + h)
    reject, level = holm(p, gamma)
    median = np.median(w, axis=-1)
    verdict = np.where(np.isnan(p), "n/a", np.where(reject & (median < printed - h), "better",
                                                     np.where(reject & (median > printed + h), "worse", "tie")))
    # without a printed number the cell is outside the family: its intervals at the budget's Bonferroni level
    m = np.maximum((~np.isnan(printed)).sum(axis=-1, keepdims=True), 1)
    level_shown = np.where(np.isnan(level), gamma / m, level)
    mlow, mhigh = median_interval(w, level_shown)
    low, high = mean_interval(t.mean, t.se, n, level_shown)
    set_p = winner_set_pvalues(judge, t.winner)
    shape = set_p.shape
    flat = set_p.reshape(*shape[:-2], shape[-2] * shape[-1])
    out_of_set = holm(flat, gamma)[0].reshape(shape)
    present = ~np.isnan(errors).any(axis=-1)
    in_set = present & ~out_of_set
    result = {"winner": t.winner, "runner_up": t.runner_up, "mean": t.mean, "median": median, "n": n, "p": p,
              "level": level_shown, "verdict": verdict, "median_ci_low": mlow, "median_ci_high": mhigh,
              "mean_ci_low": low, "mean_ci_high": high, "set_p": set_p, "in_set": in_set,
              "set_size": in_set.sum(axis=-1), "certain": in_set.sum(axis=-1) == 1}
    if coverage:
        population = np.take_along_axis(errors, t.winner[..., None, None], axis=-2)[..., 0, :]
        study = coverage_study(population.reshape(-1, population.shape[-1]), n, level_shown.reshape(-1), draws=draws)
        keep = study["keep_mean"].reshape(t.mean.shape)
        result.update({f"coverage_{k}": v.reshape(t.mean.shape) for k, v in study.items()})
    else:
        keep = np.zeros(t.mean.shape, dtype=bool)
    result["keep_mean"] = keep
    result["param"] = np.where(keep, "mean", "median")
    result["est"] = np.where(keep, t.mean, median)
    result["ci_low"] = np.where(keep, low, mlow)
    result["ci_high"] = np.where(keep, high, mhigh)
    return result


def sign_min_reps(alpha: float) -> int:
    """The fewest repetitions with which a two-sided exact sign test can reject at level ``alpha``: the smallest
    ``n`` with ``2^(1−n) ≤ alpha`` (6 at 0.05; docs/science/board_statistics.md, step D1).

    >>> sign_min_reps(0.05), sign_min_reps(0.05 / 25)
    (6, 10)
    """
    check_probability(alpha, name="alpha")
    return 1 + math.ceil(math.log2(1 / alpha) - 1e-12)


def paired_sign_comparison(d: np.ndarray, *, gamma: float = DEFAULT_BUDGET) -> dict[str, np.ndarray]:
    """An entrant against a cell's current best, distribution-free: the exact sign test of the median paired
    difference, its order-statistic interval and the entrant's place in the winner set, over a family of cells
    (docs/science/board_statistics.md, step D5).

    Parameters
    ----------
    d : array (..., cells, n)
        The paired differences entrant − current best on the judged repetitions, one row per cell of the family
        (e.g. the cells of a table); ``n ≥ 1``; leading axes are independent families (e.g. simulated boards).
    gamma : float
        The family-wise false-alarm budget, for the verdicts and (separately) for the winner set.

    Returns
    -------
    dict of arrays (..., cells)
        ``n``, ``median`` (the median difference), ``p`` (two-sided), ``level`` (the cell's Holm level),
        ``ci_low, ci_high`` (the median's interval at ``level``; infinite where ``n`` is too small for it),
        ``verdict``, ``set_p`` (one-sided, "worse"), ``in_set`` and ``decided`` (``n ≥ sign_min_reps(gamma)``).

    Raises
    ------
    ValueError
        For ``d`` not of shape (..., cells, n ≥ 1), a ``nan`` difference, or ``gamma`` outside (0, 1).

    Notes
    -----
    The verdict is the two-sided exact sign test of "the median difference is 0" (Dixon and Mood [8]_):
    :func:`sign_pvalue` with the null interval ``[0, 0]``; a difference of exactly 0 counts on neither side, so the
    level holds for any joint law of the pair, atoms included. Holm's step-down runs across the family's cells at
    the budget ``gamma``: ``"better"`` (rejected, median below 0), ``"worse"`` (rejected, median above 0) or
    ``"tie"``. The interval is :func:`median_interval` of the differences at the cell's Holm level (dual to the
    test). The entrant is in the cell's winner set unless the one-sided exact sign test of "the entrant is worse
    than the current best", ``P(B ≥ c)`` with ``c`` the repetitions on which it errs more (as in step D4), rejects
    under Holm across the family's cells at ``gamma``. With fewer than :func:`sign_min_reps` ``(gamma)`` judged
    repetitions no test can reject: every verdict is ``"tie"``, the entrant is in the set, and ``decided`` is
    ``False``.
    """
    check_probability(gamma, name="gamma")
    d = np.asarray(d, dtype=float)
    if d.ndim < 2 or d.shape[-1] < 1:
        raise ValueError(f"paired_sign_comparison: d must be (..., cells, repetitions ≥ 1); got shape {d.shape}")
    if np.isnan(d).any():
        raise ValueError("paired_sign_comparison: a paired difference is nan (a missing error)")
    n = d.shape[-1]
    zero = np.zeros(d.shape[:-1])
    p = sign_pvalue(d, zero, zero)
    reject, level = holm(p, gamma)
    median = np.median(d, axis=-1)
    verdict = np.where(reject & (median < 0), "better", np.where(reject & (median > 0), "worse", "tie"))
    low, high = median_interval(d, level)
    set_p = _binom_sf((d > 0).sum(axis=-1), n)
    out_of_set = holm(set_p, gamma)[0]
    return {"n": np.full(zero.shape, n), "median": median, "p": p, "level": level, "ci_low": low, "ci_high": high,
            "verdict": verdict, "set_p": set_p, "in_set": ~out_of_set,
            "decided": np.full(zero.shape, n >= sign_min_reps(gamma))}
