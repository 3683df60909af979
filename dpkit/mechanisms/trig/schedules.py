"""Parameter schedules of Thm 2.4 (mechanism I) and Thm 2.5 (mechanism II).

Mechanism I: t = ⌈n^{1/(2d+K)}⌉, N = ⌈n^{K/(2d+K)}⌉, m = ⌈n^{1+(K+1)/(2d+K)}⌉, L = ⌈n^{(d+K)/(2d+K)}⌉.
Mechanism II, with ℓ = log(1/δ) and D = 3d + 2K: t = ⌈n^{2/D} ℓ^{−1/D}⌉, N = ⌈n^{2K/D} ℓ^{−K/D}⌉,
m = ⌈n^{(4d+4K+2)/D} ℓ^{−(2d+2K+1)/D}⌉, L = ⌈n^{(2d+2K)/D} ℓ^{−(d+K)/D}⌉. Every value is at least 1; ``m`` is a
Python int.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass

from dpkit.core.exceptions import FeasibilityError
from dpkit.core.validation import check_delta, check_positive_int, check_real_in_range

__all__ = ["Schedule", "schedule_I", "schedule_II", "schedule"]


@dataclass(frozen=True)
class Schedule:
    """The four sizes: basis degree bound t, grid size N, synthetic size m, lattice L."""

    t: int
    N: int
    m: int
    L: int

    def to_dict(self) -> dict[str, int]:
        return asdict(self)


def _ceil_pow(log_value: float, name: str) -> int:
    if log_value > 700:
        raise FeasibilityError(f"schedule value {name} = exp({log_value:.1f}) overflows a float")
    return max(1, math.ceil(math.exp(log_value) - 1e-9))


def _check(n: int, d: int, K: float) -> tuple[int, int, float]:
    n = check_positive_int(n, name="n")
    d = check_positive_int(d, name="d")
    K = check_real_in_range(K, name="K", low=0.0, low_inclusive=False)
    if math.isinf(K):
        raise ValueError("K must be finite")
    return n, d, K


def schedule_I(n: int, d: int, K: float) -> Schedule:
    """Thm 2.4 sizes for the ε-DP mechanism (Alg 4 step 1, reused by Alg 9)."""
    n, d, K = _check(n, d, K)
    D = 2 * d + K
    ln = math.log(n)
    return Schedule(
        t=_ceil_pow(ln / D, "t"),
        N=_ceil_pow(ln * K / D, "N"),
        m=_ceil_pow(ln * (1 + (K + 1) / D), "m"),
        L=_ceil_pow(ln * (d + K) / D, "L"),
    )


def schedule_II(n: int, d: int, K: float, delta: float) -> Schedule:
    """Thm 2.5 sizes for the (ε,δ)-DP mechanism (Alg 5, reused by Alg 10); δ ∈ (0, 1)."""
    n, d, K = _check(n, d, K)
    delta = check_delta(delta, allow_zero=False)
    D = 3 * d + 2 * K
    ln = math.log(n)
    ll = math.log(math.log(1.0 / delta))  # log ℓ (negative when δ > 1/e; the formula still applies)
    return Schedule(
        t=_ceil_pow(2 * ln / D - ll / D, "t"),
        N=_ceil_pow(2 * K * ln / D - K * ll / D, "N"),
        m=_ceil_pow((4 * d + 4 * K + 2) * ln / D - (2 * d + 2 * K + 1) * ll / D, "m"),
        L=_ceil_pow((2 * d + 2 * K) * ln / D - (d + K) * ll / D, "L"),
    )


def schedule(n: int, d: int, K: float, delta: float = 0.0) -> Schedule:
    """Thm 2.4 sizes if ``delta == 0`` (mechanism I), else Thm 2.5 sizes (mechanism II)."""
    delta = check_delta(delta)
    return schedule_I(n, d, K) if delta == 0 else schedule_II(n, d, K, delta)
