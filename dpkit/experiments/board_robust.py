"""The leaderboard's verdicts, winner sets and intervals that hold whatever the tail of the errors.

A cell's per-repetition error is the worst error over 10⁴ strongly dependent queries: a maximum, but not a
Gumbel variable, and some methods fail now and then by a factor of 6 to 27 (``rap-eps`` on CSN). What the board
claims therefore rests on tests whose level holds for *any* distribution of the per-repetition errors.

Procedure
---------
The repetitions of a cell are split as in :mod:`dpkit.experiments.board_stats` (step 1): the winner ``w`` is the
method with the smallest mean error over the *selection half* (even ``rep``), everything below is judged on the
*evaluation half* (odd ``rep``, n = 15 of 30), on which the choice had no influence.

1. **Verdict against the printed number: an exact sign test of the median** [1]_. The parameter judged is the
   *median* of the winner's per-repetition error, not its mean (the thesis printed a mean; for a right-skewed error
   the median is the smaller, so *better* says "on most repetitions below the printed number", not "on average").
   The printed ``p`` stands for ``[p − h, p + h]`` (``h`` half its last digit). With ``b`` the repetitions below
   ``p − h`` and ``a`` those above ``p + h``, the two-sided p-value is ``min(1, 2·min(P(B ≥ b), P(B ≥ a)))``,
   ``B ~ Binomial(n, 1/2)``: if the median lies in the null interval, a repetition falls below ``p − h`` with
   probability at most 1/2 whatever the distribution (atoms included), so the level holds exactly. Holm's
   step-down across the 25 cells of a table and error kind at the false-alarm budget γ
   (:func:`~dpkit.experiments.board_stats.holm`), as before. An exact test is discrete: with n judged repetitions
   its smallest p-value is ``2^(1−n)``, so a cell needs n ≥ 6 to reject at 0.05 on its own and n ≥ 11 at γ/25
   (the board judges on 15).
2. **Interval for the median** (:func:`median_interval`): the order statistics ``[x_(l), x_(n+1−l)]`` with ``l``
   the largest index with ``P(B ≤ l − 1) ≤ α/2``; its coverage is at least ``1 − α`` for any distribution, and at
   the cell's Holm level it excludes the null interval exactly when the sign test rejects (the two are dual).
3. **The mean's interval only where its coverage is measured** (:func:`coverage_study`). The Gumbel-calibrated
   interval (:func:`~dpkit.experiments.board_intervals.mean_interval`) is kept for a cell only if, resampling the
   winner's own records of that cell (all its repetitions, the population whose mean is to be covered) into
   :data:`COVERAGE_DRAWS` samples of n, it misses that mean no more often than the nominal ``α`` allows: the
   count of misses is at most ``binom.ppf(1 − 10⁻³, draws, α)`` (a true miss rate ``α`` passes with probability
   at least 1 − 10⁻³). Otherwise the cell shows the median and its interval (step 2), and says so. The resampled
   population has no tail beyond the 30 records, so the study can only find intervals too short, never certify
   one: a kept interval is one the records do not contradict. (Half of those records chose the winner and lean
   low; they stand in for the method's law all the same, since what the study probes is the shape of its tail.)
4. **Winner sets: multiple comparisons with the chosen winner, distribution-free** (after Hsu [2]_). For every
   other method ``j`` of the cell, the one-sided exact sign test of "``j`` is worse than ``w``" on the evaluation
   half: the p-value is ``P(B ≥ c)``, ``c`` the repetitions with ``e_j > e_w``; its null ``P(e_j > e_w) ≤ 1/2``
   holds for any joint distribution of the pair. Holm across *every* such comparison of a table and error kind
   (about 25 × 14 or 25 × 15) at the budget γ. A method is left out of the set only when it is significantly
   worse than ``w`` on most repetitions; the *set* is ``w`` and every method not left out. With probability at
   least 1 − γ per table and error kind, no method is left out that is in fact not worse than ``w``: in
   particular the best method in that sense stays in. A cell has *one certain winner* when its set is ``{w}``.
   Choosing ``w`` on the other half keeps the comparisons honest about the choice: on the evaluation half ``w``
   is a fixed method.
5. **board-add: an entrant against the current best** (:func:`paired_sign_comparison`, for
   :func:`~dpkit.experiments.board_pairing.rank_entrant`). The same tests on the entrant's paired differences with
   the cell's current best ``w`` on the evaluation half: the two-sided sign test of a median difference of 0 for
   the verdict, the median difference with its interval (step 2) at the cell's Holm level across the cells of a
   table, and the one-sided test of step 4 for whether the entrant would be in the cell's winner set. A QUICK
   board-add judges 2 repetitions, fewer than the :func:`sign_min_reps` a sign test needs: its verdicts are ties.

References
----------
.. [1] W. J. Dixon and A. M. Mood, "The statistical sign test", Journal of the American Statistical Association
   41(236), 557–566, 1946.
.. [2] J. C. Hsu, *Multiple Comparisons: Theory and Methods*, Chapman & Hall, 1996, chapter 4 (multiple
   comparisons with the best).
.. [3] H. A. David and H. N. Nagaraja, *Order Statistics*, 3rd ed., Wiley, 2003, section 7.1 (distribution-free
   confidence intervals for quantiles).
"""
from __future__ import annotations

import math

import numpy as np
from scipy import stats

from dpkit.core.validation import check_probability
from dpkit.experiments.board_intervals import mean_interval
from dpkit.experiments.board_stats import DEFAULT_BUDGET, holm, split_mask, winner_tests

__all__ = ["COVERAGE_DRAWS", "COVERAGE_SEED", "sign_pvalue", "median_interval", "winner_set_pvalues",
           "coverage_study", "robust_family", "sign_min_reps", "paired_sign_comparison"]

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
    the last axis (module docstring, step 1).

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
    axis (module docstring, step 2; David and Nagaraja [3]_); ``(−inf, inf)`` where ``n`` is too small for the level,
    ``nan`` where ``alpha`` is ``nan``.

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
    docstring, step 4).

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
    (module docstring, step 3).

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
        The cells' errors (:func:`~dpkit.experiments.board_stats.cell_arrays`); leading axes are independent
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
        Run the coverage study (step 3) and choose the interval shown by it; ``False`` shows the median's
        interval everywhere (for simulated boards, where the study is not needed).
    draws : int
        The coverage study's resampled samples per cell.

    Returns
    -------
    dict of arrays over the cells
        ``winner, runner_up, mean, median, p, level, verdict`` (the sign test against the printed number at the
        cell's Holm level), ``median_ci_low, median_ci_high`` (step 2), ``mean_ci_low, mean_ci_high`` (the Gumbel
        interval at the same level), ``keep_mean`` (step 3), ``param`` (``"mean"`` or ``"median"``: the interval
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
    ``n`` with ``2^(1−n) ≤ alpha`` (6 at 0.05; module docstring, step 1).

    >>> sign_min_reps(0.05), sign_min_reps(0.05 / 25)
    (6, 10)
    """
    check_probability(alpha, name="alpha")
    return 1 + math.ceil(math.log2(1 / alpha) - 1e-12)


def paired_sign_comparison(d: np.ndarray, *, gamma: float = DEFAULT_BUDGET) -> dict[str, np.ndarray]:
    """An entrant against a cell's current best, distribution-free: the exact sign test of the median paired
    difference, its order-statistic interval and the entrant's place in the winner set, over a family of cells
    (module docstring, step 5).

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
    The verdict is the two-sided exact sign test of "the median difference is 0" (Dixon and Mood [1]_):
    :func:`sign_pvalue` with the null interval ``[0, 0]``; a difference of exactly 0 counts on neither side, so the
    level holds for any joint law of the pair, atoms included. Holm's step-down runs across the family's cells at
    the budget ``gamma``: ``"better"`` (rejected, median below 0), ``"worse"`` (rejected, median above 0) or
    ``"tie"``. The interval is :func:`median_interval` of the differences at the cell's Holm level (dual to the
    test). The entrant is in the cell's winner set unless the one-sided exact sign test of "the entrant is worse
    than the current best", ``P(B ≥ c)`` with ``c`` the repetitions on which it errs more (as in step 4), rejects
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
