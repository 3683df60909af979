"""DP Gaussian fit: private mean and covariance, then a synthetic database sampled from N(μ̃, Σ̃)
clipped to [-1, 1]^d.

Two routes (``method``; the sensitivities are derived in docs/science/derivations.md):

1. ``"analyze_gauss"`` — Analyze Gauss (Dwork, Talwar, Thakurta, Zhang, STOC 2014): release the second-moment matrix
   XᵀX/n (upper triangle, L2 sensitivity √2·d/n) and the mean with noise; Σ̃ = M̃ − μ̃μ̃ᵀ projected onto the PSD cone.
2. ``"psi"`` — private subspace iteration (:class:`dpkit.mechanisms.pca.PrivateSubspaceIteration`) for the top-k
   directions and eigenvalues, plus the private mean and per-attribute second moments for the variance left outside.

Accounting (δ > 0): ``"pld"`` (default) scales every noise by one factor so the releases compose exactly to (ε, δ)
(:func:`dpkit.mechanisms.vector_release.release_plan`); ``"split"`` is the published calibration (equal shares under
basic composition). δ = 0 uses Laplace noise on the L1 sensitivities. ``epsilon=math.inf`` is the exact fit.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from dpkit.core.accountant import Step, check_accounting
from dpkit.core.accounting import Ledger, ledger_for
from dpkit.core.rng import RNGLike, spawn
from dpkit.core.validation import (
    SQRT_FLOAT_MAX,
    budget_limit_message,
    check_budget_fields,
    check_choice,
    check_in_unit_cube,
    check_positive_ints,
)
from dpkit.mechanisms.pca import (
    PrivateSubspaceIteration,
    check_psi_noise_scale,
    covariance_sensitivity,
    psi_noise_scale,
    psi_step,
)
from dpkit.mechanisms.vector_release import (
    Planned,
    Share,
    accounting_factor,
    planned_release,
    release_plan,
    spend_plan,
    split_plan,
)
from dpkit.queries.release import MethodBase, Timer
from dpkit.queries.synthetic import WeightedDatabase

__all__ = ["GaussianFit", "GaussianStats", "psd_project", "sample_gaussian"]


def psd_project(S: np.ndarray) -> np.ndarray:
    """Nearest PSD matrix in Frobenius norm: symmetrise, clip eigenvalues at 0."""
    S = 0.5 * (S + S.T)
    w, V = np.linalg.eigh(S)
    return (V * np.clip(w, 0.0, None)) @ V.T


@dataclass(frozen=True, kw_only=True, eq=False)
class GaussianStats:
    """The released Gaussian model (``Release.diagnostics``): μ̃ (d,), Σ̃ (d, d) PSD and, for the PSI
    route, the released directions V (k, d), eigenvalues λ̂ (k,) and the PSI noise scale. ``moments`` are the
    released noisy second moments Σ̃ is computed from (Analyze Gauss: the upper triangle of M̃, diagonal
    included; PSI: the per-attribute E[x_i²]), for audits (:mod:`dpkit.evaluation.gate`)."""

    mean: np.ndarray
    cov: np.ndarray
    components: np.ndarray | None = None
    eigenvalues: np.ndarray | None = None
    pca_noise_scale: float | None = None
    moments: np.ndarray | None = None


@dataclass(frozen=True, kw_only=True)
class GaussianFit(MethodBase):
    """Private Gaussian fit and sampler.

    Parameters
    ----------
    epsilon, delta : float
        Total budget.
    method : {"analyze_gauss", "psi"}
    k, n_iter : int
        PSI output dimension and iterations (``method="psi"``; capped at d).
    m : int
        Rows of the synthetic database.
    accounting : {"pld", "split"}
        How the vector releases share (ε, δ) (module docstring); recorded in the release's params and ledger.
    """

    epsilon: float
    delta: float = 0.0
    method: str = "analyze_gauss"
    k: int = 2
    n_iter: int = 10
    m: int = 2000
    accounting: str = "pld"

    def __post_init__(self) -> None:
        check_budget_fields(self, allow_inf=True)
        check_choice(self.method, name="method", choices=("analyze_gauss", "psi"))
        check_accounting(self.accounting, allowed=("pld", "split"))
        check_positive_ints(self, "k", "n_iter", "m")

    @property
    def name(self) -> str:
        return f"gauss-{self.method.replace('_', '-')}"

    def measure(self, X: ArrayLike, *, rng: RNGLike = None, ledger: Ledger | None = None,
                noise_factor: float | None = None) -> GaussianStats:
        """The released (μ̃, Σ̃) (no sampling), spent through ``ledger`` (a fresh one if omitted).

        ``noise_factor``: this fit is one part of a caller's composition (a method's ``accounting="pld"`` with
        Gaussian-fit candidates): every noise of :meth:`noise` times the factor, and nothing spent here (the caller
        spends the whole composition first). Needs δ > 0 and a finite ε (a ValueError otherwise).
        """
        X = check_in_unit_cube(X, name="X")
        n, d = X.shape
        # the caller of a composition spent it already: the draws go through a ledger of their own, never spent
        led = ledger_for(ledger if noise_factor is None else None, self.epsilon, self.delta, self.name)
        self.check_noise(n, d)
        g1, g2, g3 = spawn(rng, 3)
        accounting = self.accounting
        if noise_factor is None:
            plan = self.release_plan(n, d)
            pca_sigma = self.pca_noise_scale(n, d)
            extra = [] if pca_sigma is None else [self._pca_release(n, d, pca_sigma)]
            spend_plan(plan, epsilon=self.epsilon, delta=self.delta, accounting=self.accounting, ledger=led,
                       name=self.name, extra=extra)
        else:
            if not (self.delta > 0 and math.isfinite(self.epsilon)):
                raise ValueError(f"noise_factor needs delta > 0 and a finite epsilon (a part of an (epsilon, delta) "
                                 f"composition); got epsilon = {self.epsilon:g}, delta = {self.delta:g}")
            plan, pca_sigma = self.noise(n, d, noise_factor)
            accounting = "pld"  # the scaled plan is drawn as planned, without a spend of its own
        if self.method == "analyze_gauss":
            mu = planned_release(X.mean(axis=0), plan[0], rng=g1, ledger=led, accounting=accounting)
            iu = np.triu_indices(d)
            M = (X.T @ X) / n
            up = planned_release(M[iu], plan[1], rng=g2, ledger=led, accounting=accounting)
            Mn = np.zeros((d, d))
            Mn[iu] = up
            Mn = Mn + np.triu(Mn, 1).T
            S = Mn - np.outer(mu, mu)
            if not np.all(np.isfinite(S)):  # a draw far in the noise's tail (after the spend)
                raise ValueError(self._too_small("a noisy mean's square reaches"))
            cov = psd_project(S)
            return GaussianStats(mean=mu, cov=cov, moments=up)
        e3 = self.epsilon / 3.0
        mu = planned_release(X.mean(axis=0), plan[0], rng=g1, ledger=led, accounting=accounting)
        s = planned_release((X * X).mean(axis=0), plan[1], rng=g2, ledger=led, accounting=accounting)
        k = min(self.k, d)
        psi = PrivateSubspaceIteration(n_components=k, n_iter=self.n_iter, epsilon=e3, delta=self.delta / 2.0,
                                       mean=mu, noise_scale=pca_sigma).fit(X, rng=g3,
                                                                          ledger=led if pca_sigma is None else None)
        V, lam = psi.components_, psi.explained_variance_
        low = (V.T * lam) @ V
        var = np.clip(s - np.clip(mu, -1, 1) ** 2, 0.0, None)
        cov = low + np.diag(np.clip(var - np.diag(low), 0.0, None))
        return GaussianStats(mean=mu, cov=cov, components=V, eigenvalues=lam, pca_noise_scale=psi.noise_scale_,
                             moments=s)

    def shares(self, n: int, d: int) -> list[Share]:
        """The vector releases (mean, then the second-moment matrix or the second moments) with their split shares
        and sensitivities (module docstring)."""
        mean_l1, mean_l2 = 2.0 * d / n, 2.0 * math.sqrt(d) / n
        if self.method == "analyze_gauss":
            e2, d2 = self.epsilon / 2.0, self.delta / 2.0
            return [Share("mean", e2, d2, mean_l1, mean_l2),
                    Share("second_moment_matrix", e2, d2, d * (d + 1.0) / n, math.sqrt(2.0) * d / n)]
        e3, dv = self.epsilon / 3.0, self.delta / 4.0
        return [Share("mean", e3, dv, mean_l1, mean_l2), Share("second_moment", e3, dv, d / n, math.sqrt(d) / n)]

    def _pca_noise(self, n: int, d: int) -> tuple[float, Step]:
        """The PSI route's private PCA at its split share (ε/3, δ/2): Alg 6's σ and its step for the accountant."""
        k, rho = min(self.k, d), covariance_sensitivity(n, d)
        sigma = psi_noise_scale(rho, d=d, k=k, n_iter=self.n_iter, epsilon=self.epsilon / 3.0, delta=self.delta / 2.0)
        return sigma, psi_step(sigma, sensitivity=rho, k=k, n_iter=self.n_iter)

    def _composed(self) -> bool:
        return self.accounting == "pld" and self.delta > 0 and math.isfinite(self.epsilon)

    def release_plan(self, n: int, d: int) -> list[Planned]:
        """The noise of the vector releases under the method's accounting (:func:`release_plan`; under ``"pld"`` the
        PSI route's private PCA is composed with them at the whole (ε, δ))."""
        extra = [self._pca_noise(n, d)[1]] if self.method == "psi" and self._composed() else []
        return release_plan(self.shares(n, d), epsilon=self.epsilon, delta=self.delta, accounting=self.accounting,
                            extra=extra)

    def pca_noise_scale(self, n: int, d: int) -> float | None:
        """The PSI route's PCA noise σ under ``"pld"`` (Alg 6's σ times the plan's factor), ``None`` otherwise (the
        PCA calibrates itself at (ε/3, δ/2) and spends it)."""
        if self.method != "psi" or not self._composed():
            return None
        sigma, step = self._pca_noise(n, d)
        steps = [p.step() for p in split_plan(self.shares(n, d))] + [step]
        return sigma * accounting_factor(steps, epsilon=self.epsilon, delta=self.delta)

    def _pca_release(self, n: int, d: int, sigma: float) -> dict[str, Any]:
        """The PSI route's private PCA as a ledger's release record (noise σ, count)."""
        return {"name": "pca", "mechanism": "gaussian (PSI, Alg 6)", "scale": sigma,
                "sensitivity": covariance_sensitivity(n, d) * math.sqrt(min(self.k, d)), "count": self.n_iter}

    def noise(self, n: int, d: int, factor: float = 1.0) -> tuple[list[Planned], float | None]:
        """The fit's noise under its accounting, times ``factor``: the vector releases' plan and the PSI route's PCA
        σ (``None`` for Analyze Gauss). A method that composes this fit with its own measurements scales it by its
        factor (:meth:`steps`, ``measure(..., noise_factor=...)``)."""
        plan = [Planned(p.share, p.mechanism, p.scale * factor, p.sensitivity) for p in self.release_plan(n, d)]
        if self.method != "psi":
            return plan, None
        sigma = self.pca_noise_scale(n, d)
        return plan, factor * (self._pca_noise(n, d)[0] if sigma is None else sigma)

    def steps(self, n: int, d: int) -> list[Step]:
        """The fit's measurements as the accountant's steps (:mod:`dpkit.core.accountant`), at the noise of
        :meth:`noise`: the part a composing method adds to its plan."""
        plan, sigma = self.noise(n, d)
        out = [p.step() for p in plan]
        if sigma is not None:
            out.append(psi_step(sigma, sensitivity=covariance_sensitivity(n, d), k=min(self.k, d), n_iter=self.n_iter))
        return out

    def releases(self, n: int, d: int, factor: float = 1.0) -> list[dict[str, Any]]:
        """The fit's releases at :meth:`noise` times ``factor``, as a composed ledger spend names them (mechanism,
        scale, sensitivity)."""
        plan, sigma = self.noise(n, d, factor)
        out = [{"name": p.share.name, "mechanism": p.mechanism, "scale": p.scale, "sensitivity": p.sensitivity}
               for p in plan]
        return out + ([] if sigma is None else [self._pca_release(n, d, sigma)])

    def check_noise(self, n: int, d: int) -> None:
        """Refuse, before anything is spent, an ε whose noise the fit cannot compute with on n rows in d dimensions.

        Analyze Gauss forms Σ̃ = M̃ − μ̃μ̃ᵀ and its eigen-decomposition: the entries μ̃_iμ̃_j, summed over d
        and doubled when symmetrised, overflow once the mean's noise std times √(2d) reaches √(largest double)
        (:data:`~dpkit.core.validation.SQRT_FLOAT_MAX`). The PSI route's limit is its PCA's
        (:func:`~dpkit.mechanisms.pca.check_psi_noise_scale`; it clips μ̃ before squaring). The noise scales as 1/ε
        where it reaches these limits (the Laplace route: the analytic Gaussian's σ stays bounded as ε → 0).
        :meth:`measure` calls it first; a method that fits at a share of its budget
        (:class:`~dpkit.methods.candidates.GaussianCandidates`) calls it on the fit at that share up front.
        An infinite ε (no noise) always passes.

        Parameters
        ----------
        n : int
            The number of rows the fit will see.
        d : int
            Their dimension.

        Raises
        ------
        ValueError
            When the noise at this ε (and δ) reaches the limit above: the mean's noise std times √(2d) (Analyze
            Gauss), or the private PCA's noise scale times √d (PSI), at √(largest double). The message names the
            method, its budget, the limit and the least ε that passes.
        """
        if math.isinf(self.epsilon):
            return
        if self.method == "analyze_gauss":
            s = self.release_plan(n, d)[0].std
            if s * math.sqrt(2.0 * d) >= SQRT_FLOAT_MAX:
                raise ValueError(self._too_small(f"the mean's noise std {s:.3g} times sqrt(2d) reaches",
                                                 least=self.epsilon * s * math.sqrt(2.0 * d) / SQRT_FLOAT_MAX))
            return
        sigma = psi_noise_scale(covariance_sensitivity(n, d), d=d, k=min(self.k, d), n_iter=self.n_iter,
                                epsilon=self.epsilon / 3.0, delta=self.delta / 2.0)
        check_psi_noise_scale(sigma, d=d, epsilon=self.epsilon, delta=self.delta, owner=f"the private PCA of {self.name}")

    def _too_small(self, what: str, least: float | None = None) -> str:
        return budget_limit_message(self.name, self.epsilon, self.delta, what=what,
                                    limit=f"sqrt of the largest double = {SQRT_FLOAT_MAX:.4g}",
                                    why="the noisy second moments (mu mu^T) overflow", least=least)

    def synthesize(self, rel: GaussianStats, X: ArrayLike, *, rng: np.random.Generator,
                   timer: Timer) -> tuple[WeightedDatabase, GaussianStats]:
        """Sample ``m`` rows from N(μ̃, Σ̃) clipped to [-1, 1]^d (:meth:`release` is the template of
        :class:`~dpkit.queries.release.MethodBase`: measure, then synthesize)."""
        with timer("sample"):
            pts = sample_gaussian(rel.mean, rel.cov, self.m, rng=rng)
        return WeightedDatabase.equally_weighted(pts), rel

    def release_params(self, rel: GaussianStats, X: ArrayLike, ledger: Ledger) -> dict[str, Any]:
        """The release's ``params``: the method's parameters and the PCA noise scale."""
        params: dict[str, Any] = {"method": self.name, "epsilon": self.epsilon, "delta": self.delta, "k": self.k,
                                  "n_iter": self.n_iter, "m": self.m}
        if self.delta > 0:  # the (ε, δ) calibration's choice; an ε-DP fit has none (its records stay as they were)
            params["accounting"] = self.accounting
        if rel.pca_noise_scale is not None:
            params["pca_noise_scale"] = rel.pca_noise_scale
        return params


def sample_gaussian(mean: np.ndarray, cov: np.ndarray, m: int, *, rng: np.random.Generator) -> np.ndarray:
    """``m`` draws of N(mean, cov) (cov PSD, via its eigen-square-root) clipped to [-1, 1]^d."""
    w, V = np.linalg.eigh(0.5 * (cov + cov.T))
    root = V * np.sqrt(np.clip(w, 0.0, None))
    z = rng.standard_normal((m, mean.shape[0]))
    return np.clip(np.clip(mean, -1.0, 1.0) + z @ root.T, -1.0, 1.0)
