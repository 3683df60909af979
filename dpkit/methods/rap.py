"""RAP: relaxed adaptive projection onto noisy trigonometric moments (Aydore et al., ICML 2021).

1. **Statistics.** The first R trigonometric moments (thesis Alg 9 step 2,
   :func:`dpkit.mechanisms.trig.basis.basis_indices`) on the raw rows.
2. **Release** (one shot, the whole budget): each non-constant moment moves by ≤ 2/n under replace-one (L1 2(R−1)/n,
   L2 2√(R−1)/n); Laplace for ε-DP, the analytic Gaussian (or Laplace where smaller) for (ε, δ)
   (:func:`dpkit.mechanisms.vector_release.noisy_release`). The constant moment is public.
3. **Relaxed projection** (post-processing): m points minimising ‖(1/m) Σ_i φ(y_i) − b̂‖² by L-BFGS-B from a uniform
   start (:func:`dpkit.methods._fit.fit_points`); no candidate set, no R + 1 support limit.

The synthetic database is the m points with weights 1/m; ``epsilon=math.inf`` releases the exact moments.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from dpkit.core.accounting import Ledger, ledger_for
from dpkit.core.rng import RNGLike, spawn
from dpkit.core.validation import (
    check_budget_fields,
    check_choice,
    check_in_unit_cube,
    check_int_in_range,
    check_real_in_range,
)
from dpkit.mechanisms.gaussian import analytic_gaussian_sigma, check_analytic_budget
from dpkit.mechanisms.trig.basis import basis_indices, basis_moments
from dpkit.mechanisms.vector_release import noisy_release
from dpkit.methods._fit import ChebyshevStatistic, FitResult, fit_points
from dpkit.queries.release import MethodBase, Timer
from dpkit.queries.synthetic import WeightedDatabase

__all__ = ["RelaxedProjection", "RAPStats"]


@dataclass(frozen=True, kw_only=True, eq=False)
class RAPStats:
    """Released quantities (``Release.diagnostics``): the noisy moments b̂ (R,), the basis (R, d)
    and the projection's :class:`~dpkit.methods._fit.FitResult` (post-processing of b̂)."""

    noisy_moments: np.ndarray
    basis: np.ndarray
    fit: FitResult

    def to_dict(self) -> dict[str, Any]:
        return {"noisy_moments": self.noisy_moments.tolist(), "fit": self.fit.to_dict()}


@dataclass(frozen=True, kw_only=True)
class RelaxedProjection(MethodBase):
    """Relaxed projection onto noisy trigonometric moments (module docstring).

    Parameters
    ----------
    epsilon, delta : float
        Total budget (δ = 0: Laplace, ε-DP; δ > 0: analytic Gaussian, (ε, δ)-DP, finite ε at most
        :data:`~dpkit.mechanisms.gaussian.ANALYTIC_MAX_EPSILON`, where its calibration overflows; ε = ∞: no noise).
    R : int
        Number of basis functions T_R (the constant included; ≥ 2 and ≤ t^d).
    t : int
        Degree bound per coordinate of the basis (r_i < t; ≥ 2).
    m : int
        Rows of the synthetic database (the fitted points).
    max_iter : int
        L-BFGS-B iterations of the projection.
    max_noise_std : float
        Public cap on the per-moment noise standard deviation: ``statistics="trig"`` releases the
        largest R' ≤ R (at least 2) whose noise std (:meth:`noise_std`, a function of R', n, ε, δ
        only) is at most this (``math.inf``: always R).
    """

    label = "rap"

    epsilon: float
    delta: float = 0.0
    statistics: str = "trig"
    R: int = 50
    t: int = 3
    m: int = 200
    max_iter: int = 200
    max_noise_std: float = math.inf

    def __post_init__(self) -> None:
        check_budget_fields(self, allow_inf=True)
        if self.delta > 0:  # the analytic Gaussian calibrates at the whole (ε, δ)
            check_analytic_budget(self.epsilon, self.delta)
        check_choice(self.statistics, name="statistics", choices=("trig", "marginal-pairs"))
        check_int_in_range(self.R, name="R", low=2)
        check_int_in_range(self.t, name="t", low=2)
        check_int_in_range(self.m, name="m", low=1)
        check_int_in_range(self.max_iter, name="max_iter", low=1)
        check_real_in_range(self.max_noise_std, name="max_noise_std", low=0.0, low_inclusive=False)

    def noise_std(self, R: int, n: int) -> float:
        """Per-moment noise std of releasing R − 1 moments of n rows (what :func:`noisy_release` draws):
        √2·2(R−1)/(nε) (Laplace) or, for δ > 0, the smaller of that and the analytic Gaussian σ on 2√(R−1)/n."""
        if math.isinf(self.epsilon):
            return 0.0
        lap = math.sqrt(2.0) * 2.0 * (R - 1) / (n * self.epsilon)
        if self.delta == 0:
            return lap
        return min(lap, analytic_gaussian_sigma(self.epsilon, self.delta, 2.0 * math.sqrt(R - 1) / n))

    def n_moments(self, n: int) -> int:
        """R' = the largest R' ≤ R (≥ 2) with :meth:`noise_std` ≤ ``max_noise_std`` (public: n, ε, δ only)."""
        R = self.R
        while R > 2 and self.noise_std(R, n) > self.max_noise_std:
            R -= 1
        return R

    def indices(self, d: int, n: int | None = None) -> np.ndarray:
        """The released index set (R, d), constant first.

        ``statistics="trig"``: T_R', the first R' elements of T_t^d by total degree (thesis Alg 9),
        R' = :meth:`n_moments` for n rows (R when ``n`` is omitted).
        ``statistics="marginal-pairs"``: the univariate T_k(x_i) for k = 1, …, t − 1 and every
        attribute i (the per-attribute marginal shape), then the products x_i x_j, i < j (the
        correlations); R = 1 + d(t − 1) + d(d − 1)/2 and the field ``R`` is ignored.
        """
        if self.statistics == "trig":
            if self.R > self.t**d:
                raise ValueError(f"R must be in [2, t^d] = [2, {self.t}^{d} = {self.t**d}]; got R = {self.R}")
            return basis_indices(self.t, d, self.R if n is None else self.n_moments(n))
        uni = [k * np.eye(d, dtype=np.int64)[i] for i in range(d) for k in range(1, self.t)]
        iu, ju = np.triu_indices(d, 1)
        pairs = np.zeros((iu.size, d), dtype=np.int64)
        pairs[np.arange(iu.size), iu] = 1
        pairs[np.arange(iu.size), ju] = 1
        return np.concatenate([np.zeros((1, d), dtype=np.int64), np.asarray(uni).reshape(-1, d), pairs])

    def measure(self, X: Any, *, rng: RNGLike = None, ledger: Ledger | None = None) -> tuple[np.ndarray, np.ndarray]:
        """The basis T_R (R, d) and the released moments b̂ (R,), spent through ``ledger``.

        Raises
        ------
        ValueError
            If R > t^d (before anything is spent).
        """
        X = check_in_unit_cube(X, name="X")
        n, d = X.shape
        idx = self.indices(d, n)
        led = ledger_for(ledger, self.epsilon, self.delta, self.name)
        b = basis_moments(X, idx)
        r1 = idx.shape[0] - 1
        noisy = noisy_release(b[1:], epsilon=self.epsilon, delta=self.delta, l1=2.0 * r1 / n,
                              l2=2.0 * math.sqrt(r1) / n, rng=spawn(rng, 1)[0], ledger=led, name="moments",
                              n_moments=r1, statistics="trigonometric moments T_R (|phi_r| <= 1)")
        return idx, np.concatenate([[1.0], noisy])

    def synthesize(self, stats: tuple[np.ndarray, np.ndarray], X: Any, *, rng: np.random.Generator,
                   timer: Timer) -> tuple[WeightedDatabase, RAPStats]:
        """Fit ``m`` points to the noisy moments (module docstring; :meth:`release` is the template of
        :class:`~dpkit.queries.release.MethodBase`: measure, then synthesize)."""
        idx, b_hat = stats
        d = np.shape(X)[1]
        with timer("fit"):
            fit = fit_points(ChebyshevStatistic(idx), b_hat, m=self.m, d=d, rng=rng, max_iter=self.max_iter)
        return WeightedDatabase.equally_weighted(fit.points), RAPStats(noisy_moments=b_hat, basis=idx, fit=fit)

    def release_params(self, stats: tuple[np.ndarray, np.ndarray], X: Any, ledger: Ledger) -> dict[str, Any]:
        """The release's ``params``: the method's, the sensitivities and the noise that was added."""
        idx = stats[0]
        n, d = np.shape(X)
        spend = ledger.to_dict()["entries"][-1]
        return {**self.fields(), "method": self.name, "n": n, "d": d, "neighbouring": "replace-one",
                "n_statistics": int(idx.shape[0]),
                "l1_sensitivity": 2.0 * (idx.shape[0] - 1) / n, "l2_sensitivity": 2.0 * math.sqrt(idx.shape[0] - 1) / n,
                "noise": spend.get("mechanism"), "noise_scale": spend.get("meta", {}).get("scale", 0.0)}
