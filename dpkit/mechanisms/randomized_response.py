"""Randomized response (Warner 1965; Dwork–Roth §2.3, §3.2 Claim 3.5).

Each respondent reports their true bit with probability ``p = e^ε/(1 + e^ε)`` and the
flipped bit otherwise. With ``ε = ln 3`` this is Dwork–Roth's two-coin protocol:
``P(Yes | Yes) = 3/4``, ``P(Yes | No) = 1/4`` (Claim 3.5: (ln 3, 0)-DP).
"""
from __future__ import annotations

import math
import sys
from dataclasses import dataclass
from typing import Any

import numpy as np

from dpkit.core.accounting import Ledger
from dpkit.core.rng import RNGLike, resolve_rng
from dpkit.core.validation import check_budget_fields, check_finite_array, check_real_in_range
from dpkit.mechanisms.base import Mechanism

__all__ = ["RandomizedResponse"]


@dataclass(frozen=True, kw_only=True)
class RandomizedResponse(Mechanism):
    """Binary randomized response, ε-DP per respondent (local model).

    Parameters
    ----------
    epsilon : float, default ``ln 3``
        Privacy parameter (> 0, finite). The truth is kept with probability
        ``e^ε/(1 + e^ε)``; ``ln 3`` gives Dwork–Roth's coin protocol.
    neighbouring : {"replace-one", "add-remove"}
        Per respondent, changing one bit is the only neighbouring relation that matters.

    Notes
    -----
    The 2×2 response matrix has likelihood ratios ``p/(1−p) = e^ε`` exactly, so the
    guarantee is tight (D–R Claim 3.5). The unbiased estimator of the population share
    ``π`` of Yes is ``π̂ = (ȳ − (1 − p))/(2p − 1)`` (for ``ε = ln 3``: ``2ȳ − 1/2``),
    with variance ``q(1 − q)/(n (2p − 1)²)``, ``q = (1 − p) + (2p − 1)π``.
    """

    epsilon: float = math.log(3.0)

    def __post_init__(self) -> None:
        super().__post_init__()
        check_budget_fields(self, delta=False)

    @property
    def delta(self) -> float:
        return 0.0

    @property
    def p_truth(self) -> float:
        """Probability of reporting the true bit, ``e^ε/(1 + e^ε)``."""
        return 1.0 / (1.0 + math.exp(-self.epsilon))

    @property
    def bias(self) -> float:
        """``2p − 1 = tanh(ε/2)``, the estimator's divisor. Computed as ``2p − 1``; below ε ≈ 2^-53 p rounds to
        exactly 1/2 and that is 0, so there the exact ``tanh(ε/2)`` is used (> 0 but for the smallest subnormal ε)."""
        p = self.p_truth
        return (2 * p - 1) or math.tanh(self.epsilon / 2.0)

    @property
    def response_matrix(self) -> np.ndarray:
        """``M[b, y] = P(report y | truth b)`` for b, y ∈ {0, 1}."""
        p = self.p_truth
        return np.array([[p, 1 - p], [1 - p, p]])

    def max_log_ratio(self) -> float:
        """Exact ``max_y |ln M[0, y]/M[1, y]|`` (equals ε: the guarantee is tight)."""
        m = self.response_matrix
        return float(np.max(np.abs(np.log(m[0] / m[1]))))

    def release(
        self, value: Any, *, rng: RNGLike = None, ledger: Ledger | None = None, name: str | None = None
    ) -> np.ndarray:
        """Randomize an array of bits (0/1); returns an int array of the same shape."""
        bits = check_finite_array(value, name="value")
        if bits.size and not np.all((bits == 0) | (bits == 1)):
            raise ValueError("value must contain only bits 0 and 1")
        self._charge(ledger, name, size=int(bits.size))
        keep = resolve_rng(rng).random(bits.shape) < self.p_truth
        return np.where(keep, bits, 1 - bits).astype(int)

    def expected_yes(self, share: float) -> float:
        """``q = P(report 1)`` for a population share ``share`` of true 1s."""
        share = check_real_in_range(share, name="share", low=0.0, high=1.0)
        p = self.p_truth
        return (1 - p) + (2 * p - 1) * share

    def estimate(self, responses: Any, axis: int | None = None) -> np.ndarray | float:
        """Unbiased estimate of the share of true 1s from randomized responses."""
        y = np.asarray(responses, dtype=float)
        p = self.p_truth
        return (np.mean(y, axis=axis) - (1 - p)) / self.bias

    def estimator_variance(self, share: float, n: int) -> float:
        """Exact variance of :meth:`estimate` for ``n`` respondents and true share ``share``."""
        q = self.expected_yes(share)
        den = n * self.bias ** 2
        if q * (1 - q) >= den * sys.float_info.max:  # (a tiny ε) the variance exceeds the doubles
            least = 2.0 * math.sqrt(q * (1 - q) / (n * sys.float_info.max))
            raise ValueError(f"epsilon = {self.epsilon:g} is too small for the variance of RandomizedResponse's "
                             f"estimate with n = {n}: q(1 - q)/(n tanh(epsilon/2)^2) exceeds the largest double "
                             f"(supported here: epsilon >= about {least:.3g})")
        return q * (1 - q) / den
