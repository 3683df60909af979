"""AboveThreshold, the sparse vector technique (Dwork–Roth §3.6, Alg. 1, Thm. 3.23/3.24).

Includes a deliberately broken variant (``variant="no-threshold-noise"``, one of the
broken SVT variants of Lyu–Su–Li 2017) that exists only as a negative control: without
noise on the threshold, every ⊥ answer leaks ``ε/4`` and the loss grows with the number
of queries.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np
from numpy.typing import ArrayLike
from scipy import integrate

from dpkit.core.accounting import Ledger
from dpkit.core.rng import RNGLike, resolve_rng
from dpkit.core.validation import (
    check_budget_fields,
    check_choice,
    check_finite_array,
    check_positive_int,
    check_probability,
    check_real_in_range,
    check_sensitivity,
)
from dpkit.mechanisms.base import Mechanism

__all__ = ["AboveThreshold", "laplace_cdf", "laplace_pdf"]

VARIANTS = ("correct", "no-threshold-noise")


def laplace_cdf(x: ArrayLike, b: float) -> np.ndarray:
    """CDF of Lap(b) at ``x`` (vectorised)."""
    x = np.asarray(x, dtype=float)
    return np.where(x < 0, 0.5 * np.exp(np.minimum(x, 0) / b), 1.0 - 0.5 * np.exp(-np.maximum(x, 0) / b))


def laplace_pdf(x: ArrayLike, b: float) -> np.ndarray:
    """Density of Lap(b) at ``x`` (vectorised)."""
    return np.exp(-np.abs(np.asarray(x, dtype=float)) / b) / (2.0 * b)


@dataclass(frozen=True, kw_only=True)
class AboveThreshold(Mechanism):
    """AboveThreshold (D–R Alg. 1): report the first query whose noisy value crosses a noisy threshold.

    Parameters
    ----------
    epsilon : float
        Privacy parameter (> 0).
    threshold : float
        The public threshold ``T``.
    sensitivity : float, default 1
        Sensitivity ``Δ`` of every query. Threshold noise ``Lap(2Δ/ε)``, query noise ``Lap(4Δ/ε)``.
    variant : {"correct", "no-threshold-noise"}
        ``"no-threshold-noise"`` compares against ``T`` itself: it is **not** ε-DP (its
        privacy loss grows like ``(k − 1)ε/4`` with the number ``k`` of queries). It exists as
        a negative control for the checks.

    Notes
    -----
    Output: the index ``j`` of the first ⊤ (the run halts there), or ``k`` when all ``k``
    answers are ⊥. Exact output law (:meth:`output_probabilities`), with ``T̂ = T + Lap(2Δ/ε)``,
    ``ν ~ Lap(4Δ/ε)``:

    ``P(j) = ∫ p_T̂(t) Π_{i<j} F_ν(t − f_i) (1 − F_ν(t − f_j)) dt``,
    ``P(k) = ∫ p_T̂(t) Π_{i<k} F_ν(t − f_i) dt``.

    Thm 3.23: ε-DP for sensitivity-Δ queries. Thm 3.24: if no query before the last is
    ≥ T − α, it is (α, β)-accurate with ``α = 8Δ(ln k + ln(2/β))/ε``.
    """

    epsilon: float
    threshold: float = 0.0
    sensitivity: float = 1.0
    variant: str = "correct"

    def __post_init__(self) -> None:
        super().__post_init__()
        check_budget_fields(self, delta=False)
        object.__setattr__(self, "sensitivity", check_sensitivity(self.sensitivity, name="sensitivity"))
        object.__setattr__(self, "variant", check_choice(self.variant, name="variant", choices=VARIANTS))
        check_real_in_range(self.threshold, name="threshold", low_inclusive=False, high_inclusive=False)  # finite

    @property
    def delta(self) -> float:
        return 0.0

    @property
    def threshold_scale(self) -> float:
        """Scale of the threshold noise, ``2Δ/ε`` (0 for the broken variant)."""
        return 0.0 if self.variant == "no-threshold-noise" else 2.0 * self.sensitivity / self.epsilon

    @property
    def query_scale(self) -> float:
        """Scale of the per-query noise, ``4Δ/ε``."""
        return 4.0 * self.sensitivity / self.epsilon

    # ------------------------------------------------------------------ sampling
    def run(
        self, values: Sequence[float], *, rng: RNGLike = None, ledger: Ledger | None = None, name: str | None = None
    ) -> int:
        """One run on the query answers ``values = (f_1(D), …, f_k(D))``; returns the halting index (``k`` = all ⊥)."""
        return int(self.sample(values, 1, rng=rng, ledger=ledger, name=name)[0])

    def sample(
        self,
        values: Sequence[float],
        n_samples: int,
        *,
        rng: RNGLike = None,
        ledger: Ledger | None = None,
        name: str | None = None,
    ) -> np.ndarray:
        """``n_samples`` independent runs (vectorised); returns halting indices in ``0..k``."""
        f = check_finite_array(values, name="values", ndim=1, min_rows=1)
        n = check_positive_int(n_samples, name="n_samples")
        self._charge(ledger, name, variant=self.variant, k=int(f.size))
        g = resolve_rng(rng)
        t_hat = self.threshold + (g.laplace(0.0, self.threshold_scale, size=n) if self.threshold_scale > 0 else np.zeros(n))
        out = np.full(n, f.size, dtype=int)
        alive = np.ones(n, dtype=bool)
        # stream the queries in blocks to keep memory at O(n * block)
        block = max(1, min(f.size, 2_000_000 // n))
        for s in range(0, f.size, block):
            nu = g.laplace(0.0, self.query_scale, size=(n, min(block, f.size - s)))
            above = (f[None, s : s + nu.shape[1]] + nu) >= t_hat[:, None]
            hit = above.any(axis=1) & alive
            out[hit] = s + np.argmax(above[hit], axis=1)
            alive &= ~hit
            if not alive.any():
                break
        return out

    # ------------------------------------------------------------------ exact law
    def output_probabilities(self, values: Sequence[float], *, epsrel: float = 1e-11) -> np.ndarray:
        """Exact ``P(output = j)`` for ``j = 0..k`` (``k`` = all ⊥) by 1-D quadrature over ``T̂``."""
        f = check_finite_array(values, name="values", ndim=1, min_rows=1)
        k = f.size
        bq = self.query_scale

        def profile(t: float) -> np.ndarray:
            below = laplace_cdf(t - f, bq)  # P(f_i + ν_i < t)
            cum = np.concatenate([[1.0], np.cumprod(below)])  # Π_{i<j}
            p = np.empty(k + 1)
            p[:k] = cum[:k] * (1.0 - below)
            p[k] = cum[k]
            return p

        if self.threshold_scale == 0.0:
            return profile(float(self.threshold))
        bt = self.threshold_scale
        lo, hi = self.threshold - 80 * bt, self.threshold + 80 * bt
        pts = np.unique(np.clip(np.concatenate([[lo, self.threshold, hi], f]), lo, hi))
        total = np.zeros(k + 1)
        for a, b in zip(pts[:-1], pts[1:]):
            if b <= a:
                continue
            val, _ = integrate.quad_vec(
                lambda t: laplace_pdf(t - self.threshold, bt) * profile(t), a, b, epsabs=0.0, epsrel=epsrel, limit=400
            )
            total += val
        return total

    def max_log_ratio(self, values: Sequence[float], neighbour_values: Sequence[float]) -> float:
        """Exact ``max_j |ln P(j | D)/P(j | D')|`` over all outputs (the ε this pair certifies)."""
        p = self.output_probabilities(values)
        q = self.output_probabilities(neighbour_values)
        mask = (p > 0) | (q > 0)
        with np.errstate(divide="ignore"):
            return float(np.max(np.abs(np.log(p[mask]) - np.log(q[mask]))))

    def accuracy_alpha(self, k: int, beta: float) -> float:
        """Thm 3.24: ``α = 8Δ(ln k + ln(2/β))/ε``."""
        k = check_positive_int(k, name="k")
        beta = check_probability(beta, name="beta")
        return 8.0 * self.sensitivity * (math.log(k) + math.log(2.0 / beta)) / self.epsilon

    def failure_probability(self, values: Sequence[float]) -> float:
        """Exact probability that the output differs from ⊥^{k−1}⊤ (halting exactly at the last query)."""
        p = self.output_probabilities(values)
        return float(max(0.0, 1.0 - p[-2]))
