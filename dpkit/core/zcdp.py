"""zCDP accounting: the tight ρ-zCDP → (ε, δ) conversion and a ledger of ρ (used by MST and AIM).

Concentrated DP (Bun & Steinke 2016) composes by adding ρ. :func:`cdp_delta` converts with Canonne, Kamath & Steinke
(2020, Prop 12 / Cor 13), ``δ(ρ, ε) = inf_{α > 1} exp((α − 1)(αρ − ε)) / (α − 1) · (1 − 1/α)^α``, at the root of the
convex exponent's derivative (any α is valid, so an inexact root only makes δ larger); :func:`cdp_rho` inverts it
by bisection, returning the feasible end. :class:`ZCDPLedger` records ρ per step and refuses a step beyond the total.
"""
from __future__ import annotations

import functools
import math
import sys
from typing import Any

from scipy.optimize import brentq

from dpkit.core.exceptions import BudgetExceededError
from dpkit.core.validation import check_delta, check_epsilon, check_real_in_range

__all__ = ["cdp_delta", "cdp_rho", "MAX_ZCDP_EPSILON", "check_zcdp_budget", "ZCDPLedger"]


def _log_delta_at(alpha: float, rho: float, epsilon: float) -> float:
    return (alpha - 1.0) * (alpha * rho - epsilon) + alpha * math.log1p(-1.0 / alpha) - math.log(alpha - 1.0)


def cdp_delta(rho: float, epsilon: float) -> float:
    """δ such that ρ-zCDP implies (ε, δ)-DP (Canonne, Kamath & Steinke 2020, Prop 12 / Cor 13; module docstring).

    Parameters
    ----------
    rho : float
        ρ ≥ 0 (ρ = 0 gives δ = 0).
    epsilon : float
        ε ≥ 0, finite.

    Examples
    --------
    >>> round(cdp_delta(0.5, 3.0), 6) < math.exp(-(3.0 - 0.5) ** 2 / (4 * 0.5))  # tighter than Bun-Steinke's bound
    True
    """
    rho = check_real_in_range(rho, name="rho", low=0.0)
    epsilon = check_real_in_range(epsilon, name="epsilon", low=0.0)
    if math.isinf(rho) or math.isinf(epsilon):
        raise ValueError(f"rho and epsilon must be finite; got rho={rho}, epsilon={epsilon}")
    if rho == 0.0:
        return 0.0

    def slope(alpha: float) -> float:
        return (2.0 * alpha - 1.0) * rho - epsilon + math.log1p(-1.0 / alpha)

    lo, hi = 1.0 + 1e-12, (epsilon + 1.0) / (2.0 * rho) + 2.0
    while slope(hi) < 0.0:  # pragma: no cover - the bracket above always has slope(hi) > 0
        hi *= 2.0
    alpha = lo if slope(lo) >= 0.0 else brentq(slope, lo, hi, xtol=1e-14, rtol=1e-14, maxiter=500)
    log_delta = _log_delta_at(max(alpha, 1.0 + 1e-12), rho, epsilon)
    return 1.0 if log_delta >= 0.0 else math.exp(log_delta)  # δ ≤ 1; exp of a large log δ would overflow


#: The largest ε :func:`cdp_rho` converts: half the largest double. Its bisection on ρ ∈ [0, ε] takes
#: midpoints ``0.5 * (lo + hi)`` with both ends near ε (ρ → ε as ε grows), and ``lo + hi`` overflows to ∞
#: beyond this (any δ).
MAX_ZCDP_EPSILON = sys.float_info.max / 2.0


def check_zcdp_budget(epsilon: float, delta: float) -> None:
    """Refuse, naming ε and δ, a budget the zCDP conversion (δ > 0) cannot take: a finite ε above
    :data:`MAX_ZCDP_EPSILON`, or an (ε, δ) whose ρ (:func:`cdp_rho`) is below the smallest normal double."""
    _check_zcdp_epsilon(epsilon, delta)
    if delta > 0 and math.isfinite(epsilon):
        cdp_rho(epsilon, delta)


def _check_zcdp_epsilon(epsilon: float, delta: float) -> None:
    if delta > 0 and math.isfinite(epsilon) and epsilon > MAX_ZCDP_EPSILON:
        raise ValueError(f"epsilon must be in (0, {MAX_ZCDP_EPSILON:.6g}] for the zCDP conversion at "
                         f"delta = {delta:g}; got epsilon = {epsilon:g}: the conversion's bisection on rho in "
                         "[0, epsilon] adds its bracket ends, which overflows beyond half the largest double")


@functools.lru_cache(maxsize=256)
def cdp_rho(epsilon: float, delta: float) -> float:
    """The largest ρ whose zCDP guarantee implies (ε, δ)-DP under :func:`cdp_delta` (bisection on ρ).

    ε must be at most :data:`MAX_ZCDP_EPSILON`, and ρ at least the smallest normal double (a ValueError
    naming ε and δ otherwise).

    Examples
    --------
    >>> rho = cdp_rho(1.0, 1e-3)
    >>> cdp_delta(rho, 1.0) <= 1e-3
    True
    """
    epsilon = check_epsilon(epsilon)
    delta = check_delta(delta, allow_zero=False)
    _check_zcdp_epsilon(epsilon, delta)
    lo, hi = 0.0, max(epsilon, 1.0)
    while cdp_delta(hi, epsilon) <= delta:
        lo, hi = hi, 2.0 * hi
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if cdp_delta(mid, epsilon) <= delta:
            lo = mid
        else:
            hi = mid
        if hi - lo <= 1e-15 * hi:
            break
    if lo < sys.float_info.min:  # ρ ≈ ε²/(4 log(1/δ)) underflows: the noise std √(1/ρ) would be infinite
        raise ValueError(f"epsilon = {epsilon:g} with delta = {delta:g} is too small for the zCDP conversion: rho = "
                         f"{lo:g} is below the smallest normal double {sys.float_info.min:.4g} (the noise std "
                         "sqrt(1/rho) would be infinite); use a larger epsilon or delta")
    return lo


class ZCDPLedger:
    """ρ spent per step of a zCDP mechanism (Bun & Steinke 2016, Lemma 1.7: ρ adds up under composition).

    A step that would take the total beyond ``rho`` (relative tolerance 10⁻¹²) is refused with
    :class:`~dpkit.core.exceptions.BudgetExceededError` before anything is recorded.

    >>> led = ZCDPLedger(0.5)
    >>> led.charge("one-way", 0.2, sigma=3.0)
    0.2
    >>> round(led.remaining, 12)
    0.3
    """

    def __init__(self, rho: float) -> None:
        self.rho = check_real_in_range(rho, name="rho", low=0.0, low_inclusive=False)
        self.steps: list[dict[str, Any]] = []

    @property
    def spent(self) -> float:
        return math.fsum(s["rho"] for s in self.steps)

    @property
    def remaining(self) -> float:
        return max(self.rho - self.spent, 0.0)

    def charge(self, name: str, rho: float, **meta: Any) -> float:
        """Record ``rho`` for the step ``name``; refuse it if the total would exceed the budget."""
        rho = check_real_in_range(rho, name="rho", low=0.0)
        if self.spent + rho > self.rho * (1.0 + 1e-12):
            raise BudgetExceededError(f"zCDP step {name!r} of rho={rho:.6g} would exceed the budget rho={self.rho:.6g} "
                                      f"(spent {self.spent:.6g})")
        self.steps.append({"name": name, "rho": float(rho), **meta})
        return float(rho)

    def to_list(self) -> list[dict[str, Any]]:
        return [dict(s) for s in self.steps]
