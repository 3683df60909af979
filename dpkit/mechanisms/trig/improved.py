"""Alg 9 (mechanism I) and Alg 10 (mechanism II): R basis functions, a private mean, private PCA, C candidates
from an ellipsoid and the LP over them.

Accounting of mechanism II: ``"split"`` is the thesis's basic composition of the three measurements; ``"pld"``
(default) scales every noise by one factor t ≤ 1 (:func:`dpkit.mechanisms.vector_release.accounting_factor`) so their
exact composition meets (ε, δ) (:mod:`dpkit.core.accountant`). ``constants="thesis"`` needs ``accounting="split"``.
"""
from __future__ import annotations

import math
import time
import warnings
from dataclasses import dataclass

import numpy as np

from dpkit.core import accountant
from dpkit.core.accounting import Ledger, ledger_for
from dpkit.core.rng import RNGLike, spawn
from dpkit.core.validation import SQRT_FLOAT_MAX, budget_limit_message, check_choice, check_positive_finite, check_positive_ints
from dpkit.mechanisms.ellipsoid import sample_ellipsoid
from dpkit.mechanisms.laplace import Laplace
from dpkit.mechanisms.pca import PrivateSubspaceIteration, covariance_sensitivity, psi_noise_scale, psi_step
from dpkit.mechanisms.trig.base import TrigBase, TrigDiagnostics
from dpkit.mechanisms.trig.basis import basis_indices
from dpkit.mechanisms.trig.grid import discretise, discretise_indices
from dpkit.mechanisms.trig.moments import MomentNoise
from dpkit.mechanisms.trig.schedules import Schedule, schedule
from dpkit.mechanisms.vector_release import accounting_factor
from dpkit.queries.release import Release

__all__ = ["ImprovedTrigonometricMechanism", "MAX_PCA_NORM"]

#: The largest norm of a noisy PCA column the mechanism can use: √(largest double). The eigenvalue estimates
#: are the column norms of W = A X + G (G the PCA noise, std or scale σ per entry), computed through their
#: squares, which overflow beyond it; a column's norm is about σ√d, so σ√d must stay below it.
MAX_PCA_NORM = SQRT_FLOAT_MAX


def _unique_rows(cells: np.ndarray) -> np.ndarray:
    """Distinct rows of an int array, in order of first occurrence (a byte-view hash, faster
    than ``np.unique(axis=0)``; docs/performance_notes.md)."""
    c = np.ascontiguousarray(cells.astype(np.int32 if cells.max(initial=0) < 2**31 else np.int64))
    v = c.view(np.dtype((np.void, c.dtype.itemsize * c.shape[1]))).ravel()
    _, first = np.unique(v, return_index=True)
    return cells[np.sort(first)]


@dataclass(frozen=True, kw_only=True)
class ImprovedTrigonometricMechanism(TrigBase):
    """Improved trigonometric mechanism: Alg 9 (I, ε-DP, ``delta == 0``) / Alg 10 (II, (ε,δ)-DP).

    Parameters
    ----------
    epsilon : float
        Total ε, split ε/3 (moments) + ε/3 (mean) + ε/3 (PCA). ``math.inf`` = noise-free reference.
    delta : float
        0 ⇒ mechanism I; in (0, 1) ⇒ mechanism II with δ/2 to the moments and δ/2 to the PCA.
    K : float
        Smoothness order (schedules of Thm 2.4/2.5; experiments use K = σ², :meth:`at_width`).
    C : int
        Number of candidate points drawn from the ellipsoid (≥ 1).
    R : int
        Number of basis functions T_R (≤ t^d; the constant one included).
    k : int
        PCA output dimension (≤ d).
    n_iter : int
        PSI iterations L.
    kappa : float
        Ellipsoid scale κ: semi-axes κ√λ̂.
    constants : {"correct", "thesis"}
        Moment-noise calibration (module docstring).
    sampler : {"uniform", "thesis"}
        Ellipsoid sampler (:func:`dpkit.mechanisms.ellipsoid.sample_ellipsoid`).
    pca_sensitivity : {"bound", "thesis"}
        Covariance sensitivity (:class:`dpkit.mechanisms.pca.PrivateSubspaceIteration`).
    lattice : bool
        Round W to the lattice {i/L}.
    output : {"sample", "weights"}
        What ``release.synthetic`` is.
    lp_method : str
        HiGHS method.
    accounting : {"pld", "split"}
        Mechanism II's calibration (module docstring): the exact composition (default; needs ``constants="correct"``
        and ``pca_sensitivity="bound"``) or the thesis's split; recorded in the release's params and ledger.

    Notes
    -----
    The thesis does not state R, k, L or κ for Tables 3.2/3.3; the defaults are the values of its
    own sweeps (R = 50, k = 2, L = 10, κ = 7).
    """

    C: int = 10_000
    R: int = 50
    k: int = 2
    n_iter: int = 10
    kappa: float = 7.0
    sampler: str = "uniform"
    pca_sensitivity: str = "bound"
    accounting: str = "pld"

    def __post_init__(self) -> None:
        super().__post_init__()
        check_positive_ints(self, "C", "R", "k", "n_iter")
        object.__setattr__(self, "kappa", check_positive_finite(self.kappa, name="kappa"))
        check_choice(self.sampler, name="sampler", choices=("uniform", "thesis"))
        check_choice(self.pca_sensitivity, name="pca_sensitivity", choices=("bound", "thesis"))
        accountant.check_accounting(self.accounting, allowed=("pld", "split"))
        if self.accounting == "pld" and self.delta > 0 and (self.constants != "correct" or self.pca_sensitivity != "bound"):
            raise ValueError(f"accounting='pld' needs constants='correct' and pca_sensitivity='bound' (a valid calibration "
                             f"to compose); got constants={self.constants!r}, pca_sensitivity={self.pca_sensitivity!r}: "
                             "allowed accounting for the printed calibration: 'split'")

    def _composed(self) -> bool:
        return self.accounting == "pld" and self.delta > 0 and math.isfinite(self.epsilon)

    def composition_factor(self, moments: MomentNoise, n: int, d: int) -> float:
        """t of the ``"pld"`` accounting (module docstring): the factor on the split's three noises."""
        eps3, d_m = self.epsilon / 3.0, self.delta / 2.0
        if moments.kind == "gaussian":
            m_step = accountant.gaussian(moments.scale / moments.l2_sensitivity, name="moments")
        else:
            m_step = accountant.laplace(moments.scale / moments.l1_sensitivity, name="moments")
        rho = covariance_sensitivity(n, d)
        sigma = psi_noise_scale(rho, d=d, k=self.k, n_iter=self.n_iter, epsilon=eps3, delta=d_m)
        steps = [m_step, accountant.laplace(1.0 / eps3, name="mean"),
                 psi_step(sigma, sensitivity=rho, k=self.k, n_iter=self.n_iter)]
        return accounting_factor(steps, epsilon=self.epsilon, delta=self.delta)

    def schedule(self, n: int, d: int) -> Schedule:
        """t, N, m, L of Thm 2.4 (δ = 0) or Thm 2.5 (δ > 0)."""
        return schedule(n, d, self.K, self.delta)

    def _check_shapes(self, n: int, d: int, sch: Schedule) -> None:
        if self.k > d:
            raise ValueError(f"k must be in [1, d] = [1, {d}]; got k = {self.k}")
        if self.R > sch.t**d:
            raise ValueError(
                f"R must be in [1, t^d] = [1, {sch.t}^{d} = {sch.t**d}] for n={n}, d={d}, K={self.K}, "
                f"delta={self.delta:g} (t from Thm {'2.5' if self.delta > 0 else '2.4'}, smaller for a smaller delta); "
                f"got R = {self.R}"
            )
        # fail before anything is spent if PSI-(ε,δ)'s printed σ is outside its proven range
        psi_noise_scale(1.0, d=d, k=self.k, n_iter=self.n_iter, epsilon=self.epsilon / 3.0, delta=self.delta / 2.0)
        if self.pca_sensitivity == "bound":  # and if the PCA's noise is too large to take its norms (MAX_PCA_NORM)
            sigma = psi_noise_scale(covariance_sensitivity(n, d), d=d, k=self.k, n_iter=self.n_iter,
                                    epsilon=self.epsilon / 3.0, delta=self.delta / 2.0)
            if sigma * math.sqrt(d) >= MAX_PCA_NORM:
                raise ValueError(self._pca_too_small(f"the PCA's noise scale {sigma:.3g} times sqrt(d) reaches"))

    def _pca_too_small(self, what: str) -> str:
        return budget_limit_message(f"the private PCA of {type(self).__name__}", self.epsilon, self.delta, what=what,
                                    limit=f"sqrt of the largest double = {MAX_PCA_NORM:.4g}",
                                    why="the squared norms of its noisy columns (the eigenvalue estimates) overflow")

    def _candidates(self, mu: np.ndarray, psi: PrivateSubspaceIteration, N: int, g: np.random.Generator) -> np.ndarray:
        """Alg 9 step 6: C points of the ellipsoid around μ̃ in the PCA subspace, clipped, discretised, distinct."""
        axes = self.kappa * np.sqrt(psi.explained_variance_)
        Z = sample_ellipsoid(self.C, axes, rng=g, method=self.sampler)
        G = np.clip(mu + Z @ psi.components_, -1.0, 1.0)
        cells = _unique_rows(discretise_indices(G, N))
        if cells.shape[0] == 1 and self.C > 1:
            warnings.warn(f"kappa = {self.kappa:g} collapses the C = {self.C} candidates to one grid point: the synthetic "
                          "database is that single point (increase kappa)", RuntimeWarning, stacklevel=4)
        return (2.0 * cells + 1.0 - N) / N

    def _release(self, X: np.ndarray, *, rng: RNGLike, ledger: Ledger | None) -> Release[TrigDiagnostics]:
        """Alg 9/10 (called by :meth:`release`).

        ``rng`` seeds five independent child streams (moments, mean, PCA, candidates, sample),
        so the same seed gives a bit-identical release.
        """
        T0 = time.perf_counter()
        n, d = X.shape
        sch = self.schedule(n, d)
        self._check_shapes(n, d, sch)
        eps3, d_m = self.epsilon / 3.0, self.delta / 2.0
        led = ledger_for(ledger, self.epsilon, self.delta, "ImprovedTrigonometricMechanism")
        g_mom, g_mean, g_pca, g_cand, g_sample = spawn(rng, 5)
        timings: dict[str, float] = {}

        t0 = time.perf_counter()  # 1. discretise
        Xd = discretise(X, sch.N)
        timings["discretise"] = time.perf_counter() - t0
        t0 = time.perf_counter()  # 2-3. basis T_R and noisy moments (ε/3, δ/2)
        idx = basis_indices(sch.t, d, self.R)
        t_factor, step_led, pca_sigma, m_noise = 1.0, led, None, None
        if self._composed():  # one spend of the whole (ε, δ), the three noises scaled by t (module docstring)
            split = self._moment_noise(Xd, idx, epsilon=eps3, delta=d_m, N=sch.N)
            t_factor = self.composition_factor(split, n, d)
            m_noise = MomentNoise(split.kind, split.scale * t_factor, split.l1_sensitivity, split.l2_sensitivity,
                                  split.epsilon, split.delta, split.constants, f"{split.rule} x t (accounting=pld)")
            pca_sigma = t_factor * psi_noise_scale(covariance_sensitivity(n, d), d=d, k=self.k, n_iter=self.n_iter,
                                                   epsilon=eps3, delta=d_m)
            led.spend("mechanism II (composed)", self.epsilon, self.delta, mechanism="composition (accounting=pld)",
                      neighbouring="replace-one", accounting="pld", accounting_factor=t_factor,
                      releases=[{"name": "moments", "mechanism": m_noise.kind, "scale": m_noise.scale},
                                {"name": "mean", "mechanism": "laplace", "scale": t_factor * 2.0 * d / (n * eps3)},
                                {"name": "pca", "mechanism": "gaussian (PSI, Alg 6)", "scale": pca_sigma,
                                 "count": self.n_iter}])
            step_led = None
        b, b_hat, noise = self._noisy_moments(Xd, idx, epsilon=eps3, delta=d_m, led=step_led, rng=g_mom,
                                                 N=sch.N, noise=m_noise)
        timings["moments"] = time.perf_counter() - t0
        t0 = time.perf_counter()  # 4. noisy mean, Lap(6d/(nε)) = L1 sensitivity 2d/n at ε/3 (times t under pld)
        mean_mech = Laplace(epsilon=eps3 / t_factor, sensitivity=2.0 * d / n, neighbouring="replace-one")
        mu = np.asarray(mean_mech.release(X.mean(axis=0), rng=g_mean, ledger=step_led, name="mean"), dtype=float)
        timings["mean"] = time.perf_counter() - t0
        t0 = time.perf_counter()  # 5. private PCA (ε/3[, δ/2])
        psi = PrivateSubspaceIteration(
            n_components=self.k, n_iter=self.n_iter, epsilon=eps3, delta=d_m, sensitivity=self.pca_sensitivity, mean=mu,
            noise_scale=pca_sigma,
        ).fit(X, rng=g_pca, ledger=step_led)
        if not np.all(np.isfinite(psi.explained_variance_)):  # a draw far in the noise's tail
            raise ValueError(self._pca_too_small(f"a noisy column's norm (noise scale {psi.noise_scale_:.3g}) reaches"))
        timings["pca"] = time.perf_counter() - t0
        t0 = time.perf_counter()  # 6. candidates
        points = self._candidates(mu, psi, sch.N, g_cand)
        timings["candidates"] = time.perf_counter() - t0
        params = {
            "R": self.R, "C": self.C, "n_candidates_distinct": int(points.shape[0]), "k": self.k,
            "n_iter": self.n_iter, "kappa": self.kappa, "sampler": self.sampler,
            "pca_sensitivity": self.pca_sensitivity,
            **({"accounting": self.accounting, "accounting_factor": t_factor} if self.delta > 0 else {}),
            "budget_split": {"moments": (eps3, d_m), "mean": (eps3, 0.0), "pca": (eps3, d_m)},
            "noise_scales": {"moments": noise.scale, "moments_kind": noise.kind, "mean": mean_mech.scale,
                             "pca": psi.noise_scale_, "pca_kind": psi.noise_},
            "sensitivities": {"moments_l1": noise.l1_sensitivity, "moments_l2": noise.l2_sensitivity,
                              "mean_l1": 2.0 * d / n, "pca_spectral": psi.sensitivity_},
        }
        # 7-8. LP and sampling
        return self._finish(X=X, sch=sch, idx=idx, points=points, moments=b, b_hat=b_hat, noise=noise, led=led,
                            gen_sample=g_sample, timings=timings, t_start=T0,
                            algorithm="Alg 10 (II)" if self.delta > 0 else "Alg 9 (I)", params=params,
                            noisy_mean=mu, components=psi.components_, eigenvalues=psi.explained_variance_)
