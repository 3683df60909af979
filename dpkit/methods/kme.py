"""Kernel mean embedding release (the DP-MERF idea, Harder, Adamczewski & Park, AISTATS 2021).

1. Draw D frequencies ω_k ~ N(0, I_d/σ²) (data-independent, released) for the normalised random Fourier features
   φ(x) ∈ R^{2D} (Rahimi–Recht 2007), ‖φ(x)‖₂ = 1, φ(x)·φ(c) an unbiased estimate of the Gaussian kernel.
2. Release the mean embedding μ = (1/n) Σ_x φ(x) with noise: L2 sensitivity 2/n, L1 ≤ 2√(2D)/n under replace-one
   (:func:`dpkit.mechanisms.vector_release.noisy_release`). Everything after is post-processing.
3. Answer a query f = Σ_j α_j k(·, c_j) as v_f·μ̂ (:class:`KMEAnswers`), or fit m points to μ̂
   (:class:`KMESynthetic`, :func:`dpkit.methods._fit.fit_points`).

Guarantee: an answer's noise std is at most the noise scale s (√2 b for Laplace) and its approximation error at most
√(2 ln(2Q/β)/D) over Q queries with probability ≥ 1 − β. D is ``max_features`` for Gaussian noise and
min(max_features, max(1, ⌊nε/4⌋)) for Laplace noise. The derivation: ``docs/science/derivations.md``.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from dpkit.core.accounting import Ledger, ledger_for
from dpkit.core.rng import RNGLike, spawn
from dpkit.core.threads import one_blas_thread
from dpkit.core.validation import (
    check_budget_fields,
    check_choice,
    check_in_unit_cube,
    check_int_in_range,
    check_real_in_range,
)
from dpkit.mechanisms.gaussian import analytic_gaussian_sigma, check_analytic_budget
from dpkit.mechanisms.vector_release import noisy_release
from dpkit.methods._fit import FitResult, FourierStatistic, fit_points
from dpkit.queries.release import MethodBase, Release, Timer
from dpkit.queries.synthetic import WeightedDatabase
from dpkit.queries.workload import GaussianKernelWorkload

__all__ = ["KMEStats", "KMEAnswers", "KMESynthetic", "embedding_answers"]


@dataclass(frozen=True, kw_only=True, eq=False)
class KMEStats:
    """Released quantities (``Release.diagnostics``): the frequencies Ω (D, d), the noisy mean
    embedding μ̂ (2D,) and, for :class:`KMESynthetic`, the fit (post-processing of μ̂)."""

    omega: np.ndarray
    noisy_embedding: np.ndarray
    fit: FitResult | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"n_features": int(self.omega.shape[0])}
        if self.fit is not None:
            out["fit"] = self.fit.to_dict()
        return out


#: Absolute error of numpy's float32 sin/cos on [-π, π], in units of 2⁻²⁴ (measured ≤ 1.2 on 10⁷ points;
#: tests/test_method_kme.py re-measures it on the installed numpy against half this allowance).
FLOAT32_TRIG_ULPS = 4.0
PRECISIONS = ("float32", "float64")


def embedding_answers(workload: GaussianKernelWorkload, omega: np.ndarray, embedding: np.ndarray,
                      *, block: int = 256, precision: str = "float32", chunk: int = 64) -> tuple[np.ndarray, float]:
    """q̂_f = Σ_j α_j φ(c_j)·μ̂ for every query of ``workload`` (Q,), in blocks of ``block`` queries
    (temporary memory ≈ 24·block·J·D bytes), and a bound on the answers' rounding error.

    ``precision="float64"``: cos and sin of θ = ω·c in float64 (libm; several times
    slower than float32, docs/performance_notes.md). ``"float32"`` (default, faster; the float64 product θ = C·Ωᵀ
    stays): θ is reduced to r = θ − 2π·rint(θ/2π) ∈ [−π, π] in float64, and cos/sin are taken of r
    rounded to float32; the dot products with μ̂ stay in float64. Per feature the difference from the
    float64 value is at most e = (``FLOAT32_TRIG_ULPS`` + π)·2⁻²⁴ + 2⁻⁴⁴·(1 + max|θ|)
    (the function's error, the rounding of r, the reduction), so ‖φ₃₂(c) − φ(c)‖₂ ≤ √2·e and each answer
    moves by at most √2·e·‖μ̂‖₂·Σ_j |α_j| (Cauchy–Schwarz): the returned bound (0 for float64), about
    10⁻⁶ against reported worst errors ≥ 10⁻⁴. Post-processing of μ̂: privacy is unaffected.

    The element-wise steps (reduction, rounding to float32, cos/sin, widening to float64) run on ``chunk`` rows
    of a block at a time in reused buffers, so they stay in the cache; each value gets the same operations as
    the whole-array expressions ``(cos(r₃₂).astype(float) @ μ̂_c + sin(r₃₂).astype(float) @ μ̂_s) / √D``, and
    the matrix products keep their block shapes, so ``chunk`` does not change a bit of the answers (tested).
    """
    check_choice(precision, name="precision", choices=PRECISIONS)
    check_int_in_range(block, name="block", low=1)
    check_int_in_range(chunk, name="chunk", low=1)
    C, A = np.asarray(workload.centres, dtype=float), np.asarray(workload.alphas, dtype=float)
    Q, J, d = C.shape
    D = omega.shape[0]
    mc, ms = embedding[:D], embedding[D:]
    out = np.empty(Q)
    two_pi = 2.0 * math.pi
    theta_max = 0.0
    rows = min(block, Q) * J
    Zbuf, cos_buf, sin_buf = np.empty((rows, D)), np.empty((rows, D)), np.empty((rows, D))
    Kbuf = np.empty((min(chunk, rows), D))
    for s in range(0, Q, block):
        Cb = C[s : s + block].reshape(-1, d)
        r = Cb.shape[0]
        Z, cos_z, sin_z = Zbuf[:r], cos_buf[:r], sin_buf[:r]
        np.matmul(Cb, omega.T, out=Z)
        if precision == "float64":
            np.cos(Z, out=cos_z)
            np.sin(Z, out=sin_z)
        else:
            theta_max = max(theta_max, float(np.max(Z, initial=0.0)), -float(np.min(Z, initial=0.0)))  # max |θ|
            for i in range(0, r, chunk):
                z = Z[i : i + chunk]
                K = Kbuf[: z.shape[0]]
                np.multiply(z, 1.0 / two_pi, out=K)
                np.rint(K, out=K)
                K *= two_pi
                np.subtract(z, K, out=K)
                # r rounded to float32, cos/sin in float32, widened to float64 (one buffered pass each)
                np.cos(K, out=cos_z[i : i + chunk], dtype=np.float32)
                np.sin(K, out=sin_z[i : i + chunk], dtype=np.float32)
        vals = (cos_z @ mc + sin_z @ ms) / math.sqrt(D)
        out[s : s + block] = np.sum(A[s : s + block] * vals.reshape(-1, J), axis=1)
    if precision == "float64":
        return out, 0.0
    e = (FLOAT32_TRIG_ULPS + math.pi) * 2.0**-24 + 2.0**-44 * (1.0 + theta_max)
    alpha_l1 = float(np.max(np.sum(np.abs(A), axis=1), initial=0.0))
    return out, math.sqrt(2.0) * e * float(np.linalg.norm(embedding)) * alpha_l1


@dataclass(frozen=True, kw_only=True)
class _KMEBase(MethodBase):
    """Fields, the choice of D and the embedding release shared by both variants (module docstring)."""

    epsilon: float
    delta: float = 0.0
    sigma: float = 2.0
    n_features: int | None = None
    max_features: int = 2048

    def __post_init__(self) -> None:
        check_budget_fields(self, allow_inf=True)
        if self.delta > 0:  # the analytic Gaussian calibrates at the whole (ε, δ)
            check_analytic_budget(self.epsilon, self.delta)
        object.__setattr__(self, "sigma", check_real_in_range(self.sigma, name="sigma", low=0.0, low_inclusive=False))
        if math.isinf(self.sigma):
            raise ValueError("sigma must be finite")
        if self.n_features is not None:
            check_int_in_range(self.n_features, name="n_features", low=1)
        check_int_in_range(self.max_features, name="max_features", low=1)

    def at_width(self, sigma: float) -> _KMEBase:
        """This method for kernel width σ (the features' bandwidth)."""
        return replace(self, sigma=float(sigma))

    def features(self, n: int) -> int:
        """D from the public rule of the module docstring (or ``n_features``)."""
        if self.n_features is not None:
            return self.n_features
        if self.delta > 0 or math.isinf(self.epsilon):
            return self.max_features
        return min(self.max_features, max(1, int(n * self.epsilon / 4.0)))

    def noise_std(self, n: int, D: int) -> float:
        """Per-coordinate noise std of the release (what :func:`noisy_release` draws; 0 for ε = ∞)."""
        if math.isinf(self.epsilon):
            return 0.0
        lap = math.sqrt(2.0) * 2.0 * math.sqrt(2.0 * D) / (n * self.epsilon)
        return lap if self.delta == 0 else min(lap, analytic_gaussian_sigma(self.epsilon, self.delta, 2.0 / n))

    def measure(self, X: Any, *, rng: RNGLike = None, ledger: Ledger | None = None) -> KMEStats:
        """Draw Ω, release the noisy mean embedding μ̂ through ``ledger`` (a fresh one if omitted)."""
        X = check_in_unit_cube(X, name="X")
        n, d = X.shape
        led = ledger_for(ledger, self.epsilon, self.delta, self.name)
        g_omega, g_noise = spawn(rng, 2)
        D = self.features(n)
        omega = g_omega.standard_normal((D, d)) / self.sigma
        mu = FourierStatistic(omega).mean(X)
        noisy = noisy_release(mu, epsilon=self.epsilon, delta=self.delta, l1=2.0 * math.sqrt(2.0 * D) / n,
                              l2=2.0 / n, rng=g_noise, ledger=led, name="mean_embedding", n_features=D,
                              statistics="random Fourier features, ||phi(x)||_2 = 1", kernel_sigma=self.sigma)
        return KMEStats(omega=omega, noisy_embedding=noisy)

    def _params(self, n: int, D: int) -> dict[str, Any]:
        return {**self.fields(), "method": self.name, "n": n, "n_features_used": D, "neighbouring": "replace-one",
                "l1_sensitivity": 2.0 * math.sqrt(2.0 * D) / n, "l2_sensitivity": 2.0 / n,
                "noise_std": self.noise_std(n, D), "approx_std_bound": 1.0 / math.sqrt(D)}


@dataclass(frozen=True, kw_only=True)
class KMEAnswers(_KMEBase):
    """Kernel queries answered from the noisy mean embedding: q̂_f = Σ_j α_j φ(c_j)·μ̂ (module docstring).

    Parameters
    ----------
    epsilon, delta : float
        Total budget (δ = 0: Laplace, ε-DP; δ > 0: analytic Gaussian, finite ε at most
        :data:`~dpkit.mechanisms.gaussian.ANALYTIC_MAX_EPSILON`, where its calibration overflows; ε = ∞: no noise).
    sigma : float
        Kernel width of the features; must equal the workload's σ (set by :meth:`at_width`).
    n_features : int or None
        D (None: the public rule :meth:`features`).
    max_features : int
        Cap on D (compute).
    precision : {"float32", "float64"}
        Arithmetic of the answers' cos/sin (:func:`embedding_answers`): ``"float32"`` is faster and its
        proven rounding bound (≈ 10⁻⁶) is in ``params["answer_rounding_bound"]``; ``"float64"`` is the plain
        evaluation.
    """

    label = "kme-answers"
    needs_workload = True
    precision: str = "float32"

    def __post_init__(self) -> None:
        super().__post_init__()
        check_choice(self.precision, name="precision", choices=PRECISIONS)

    @one_blas_thread
    def release(self, X: Any, *, rng: RNGLike = None, ledger: Ledger | None = None,
                workload: GaussianKernelWorkload | None = None) -> Release[KMEStats]:
        """Release μ̂ and answer every query of ``workload`` from it."""
        wl = self._require_workload(workload)
        if not math.isclose(float(wl.sigma), self.sigma, rel_tol=1e-12):
            raise ValueError(f"workload sigma = {wl.sigma} differs from the features' sigma = {self.sigma}; "
                             "use method.at_width(workload.sigma)")
        tm = Timer()
        led = ledger_for(ledger, self.epsilon, self.delta, self.name)
        with tm("release"):
            st = self.measure(X, rng=rng, ledger=led)
        with tm("answer"):
            ans, rounding = embedding_answers(wl, st.omega, st.noisy_embedding, precision=self.precision)
        n = np.shape(X)[0]
        return Release(method=self.name, privacy=self.privacy,
                       params={**self._params(n, st.omega.shape[0]), "answer_rounding_bound": rounding},
                       ledger=led.to_dict(), timings=tm.done(), answers=ans, diagnostics=st)


@dataclass(frozen=True, kw_only=True)
class KMESynthetic(_KMEBase):
    """m points fitted to the noisy mean embedding (relaxed projection; module docstring).

    Parameters
    ----------
    epsilon, delta, sigma, n_features, max_features
        As :class:`KMEAnswers`.
    m : int
        Rows of the synthetic database.
    max_iter : int
        L-BFGS-B iterations of the fit.
    """

    label = "kme-synthetic"
    max_features: int = 256
    m: int = 200
    max_iter: int = 200

    def __post_init__(self) -> None:
        super().__post_init__()
        check_int_in_range(self.m, name="m", low=1)
        check_int_in_range(self.max_iter, name="max_iter", low=1)

    def synthesize(self, st: KMEStats, X: Any, *, rng: np.random.Generator,
                   timer: Timer) -> tuple[WeightedDatabase, KMEStats]:
        """Fit ``m`` points in [-1, 1]^d to the released μ̂ (:meth:`release` is the template of
        :class:`~dpkit.queries.release.MethodBase`: measure, then synthesize)."""
        d = np.shape(X)[1]
        with timer("fit"):
            fit = fit_points(FourierStatistic(st.omega), st.noisy_embedding, m=self.m, d=d, rng=rng,
                             max_iter=self.max_iter)
        return WeightedDatabase.equally_weighted(fit.points), replace(st, fit=fit)

    def release_params(self, st: KMEStats, X: Any, ledger: Ledger) -> dict[str, Any]:
        """The release's ``params``."""
        return self._params(np.shape(X)[0], st.omega.shape[0])
