"""The confidence interval and the p-value of a leaderboard cell's mean error against a printed number.

A cell's mean worst error, over the repetitions of its evaluation half, is a mean of maximum-type statistics:
:func:`mean_interval` gives its interval, the lower end from Student's t and the upper end calibrated on the
Gumbel law, under which the studentized mean is pivotal (:func:`gumbel_pivot`, simulated once with a fixed seed);
:func:`printed_pvalue` is the two-sided p-value of an interval null (the printed number ± half its last digit,
or zero for a paired difference, calibrated on Student's t) whose rejection at ``α`` is exactly that interval at
``1 − α`` missing the null. Steps 2 and 3 of the procedure of :mod:`dpkit.experiments.board_stats` explain both
and give the references; that module re-exports the public names.
"""
from __future__ import annotations

import functools
import math

import numpy as np
from scipy import stats

__all__ = ["PIVOT_DRAWS", "gumbel_pivot", "mean_interval", "printed_pvalue"]

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
    (:mod:`dpkit.experiments.board_stats`, step 2)."""
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
    (:mod:`dpkit.experiments.board_stats`, step 2): lower end from Student's t, upper end from the Gumbel pivot,
    ``alpha/2`` on each side."""
    alpha = np.asarray(alpha, dtype=float)
    low = mean - stats.t.ppf(1 - alpha / 2, n - 1) * se
    high = mean - _pivot_ppf(alpha / 2, n) * se
    return low, high


def printed_pvalue(mean: np.ndarray, se: np.ndarray, n: int, low: np.ndarray, high: np.ndarray, *,
                   calibration: str = "gumbel") -> np.ndarray:
    """Two-sided p-value of the interval null ``μ ∈ [low, high]`` for a mean of ``n`` repetitions
    (:mod:`dpkit.experiments.board_stats`, step 3); its rejection at ``α`` is exactly the interval of
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

