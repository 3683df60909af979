"""Shared fields, validation, release entry point and LP step of the trigonometric mechanisms
(:mod:`dpkit.mechanisms.trig` explains the family and its errata)."""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from dpkit.core.accounting import Ledger
from dpkit.core.rng import RNGLike
from dpkit.core.threads import limit_threads
from dpkit.core.validation import (
    budget_limit_message,
    check_budget_fields,
    check_choice,
    check_in_unit_cube,
    check_positive_finite,
)
from dpkit.mechanisms.base import Mechanism
from dpkit.mechanisms.trig.basis import basis_moments, evaluate_basis
from dpkit.mechanisms.trig.grid import lattice_round
from dpkit.mechanisms.trig.lp import LP_METHODS, LPError, solve_l1_lp
from dpkit.mechanisms.trig.moments import (
    CONSTANTS,
    SENSITIVITIES,
    MomentNoise,
    grid_sensitivity,
    moment_noise,
    release_moments,
    spend_moments,
)
from dpkit.mechanisms.trig.schedules import Schedule
from dpkit.queries.release import MethodBase, Release
from dpkit.queries.synthetic import WeightedDatabase
from dpkit.queries.workload import GaussianKernelWorkload

__all__ = ["TrigDiagnostics", "TrigBase", "MAX_GRID_POINTS", "MAX_BASIS_SIZE", "MAX_W_ENTRIES", "BLAS_THREADS",
           "MAX_NOISY_MOMENT", "moment_limit_message"]

#: Documented feasible sizes of the full-grid mechanism (Alg 4/5).
MAX_GRID_POINTS = 250_000
MAX_BASIS_SIZE = 5_000
MAX_W_ENTRIES = 20_000_000

#: BLAS threads inside ``release``: every matrix product here is small (≤ 10⁴ × 101), and threaded BLAS is
#: far slower than one thread on them under load (docs/performance_notes.md).
BLAS_THREADS = 1

OUTPUTS = ("sample", "weights")

#: The largest noisy moment the LP can use: 2^52. The LP's rows read W u + v − w = b̂ with |W u| ≤ 1 (|φ_r| ≤ 1,
#: u a probability vector); from |b̂_r| = 2^52 on, the doubles near b̂_r are spaced ≥ 1, so a row no longer
#: sees the weights u at all (HiGHS then reports numerical trouble, and takes |b̂_r| ≥ 10^20 as infinite).
#: The noise scale (∝ 1/ε) must stay below it: a small enough ε is refused before anything is spent, a draw
#: beyond it after; numerical trouble can start about one binary order below, where an LP failure names ε.
MAX_NOISY_MOMENT = 2.0 ** 52


def moment_limit_message(owner: str, epsilon: float, delta: float, what: str) -> str:
    """The message refusing an ε too small for the moment LP (:data:`MAX_NOISY_MOMENT`), naming ε and δ."""
    return budget_limit_message(owner, epsilon, delta, what=what, limit=f"2^52 = {MAX_NOISY_MOMENT:.4g}",
                                why="the doubles near a moment are spaced more than the weights can move it "
                                    "(|W u| <= 1), so the LP cannot fit them")


@dataclass(frozen=True, kw_only=True, eq=False)
class TrigDiagnostics:
    """Released intermediate quantities of a trigonometric mechanism run (``Release.diagnostics``).

    Attributes
    ----------
    lp : dict
        status, message, objective, support_size, n_vars, n_constraints, method, seconds.
    lp_database : WeightedDatabase
        The LP distribution u* over its support (≤ R + 1 points at a vertex); the release's
        ``synthetic`` is its realised m-row sample by default (``output="sample"``).
    noisy_moments : ndarray (R,)
        The released b̂.
    true_moments : ndarray (R,)
        The exact moments b of the discretised data — **private**, for diagnostics and tests only;
        never publish them (not part of :meth:`Release.to_dict`).
    basis : ndarray (R, d)
        The index vectors r (row order = moment order).
    candidates : ndarray (C', d)
        The distinct discretised candidate points (the LP's columns).
    noisy_mean, components, eigenvalues : ndarray or None
        The released mean and PCA (Alg 9/10 only).
    """

    lp: dict[str, Any]
    lp_database: WeightedDatabase
    noisy_moments: np.ndarray
    true_moments: np.ndarray
    basis: np.ndarray
    candidates: np.ndarray
    noisy_mean: np.ndarray | None = None
    components: np.ndarray | None = None
    eigenvalues: np.ndarray | None = None

    def to_dict(self) -> dict[str, Any]:
        """The released quantities only (no ``true_moments``): LP record, b̂, μ̃, V, λ̂."""
        out: dict[str, Any] = {"lp": self.lp, "noisy_moments": self.noisy_moments.tolist()}
        for k in ("noisy_mean", "components", "eigenvalues"):
            v = getattr(self, k)
            if v is not None:
                out[k] = np.asarray(v).tolist()
        return out


@dataclass(frozen=True, kw_only=True)
class TrigBase(Mechanism, MethodBase):
    """Shared fields, validation and entry point of the trigonometric mechanisms.

    :meth:`release` runs the subclass's ``_release`` with single-threaded BLAS.
    """

    epsilon: float
    delta: float = 0.0
    K: float = 4.0
    constants: str = "correct"
    lattice: bool = False
    output: str = "sample"
    lp_method: str = "highs-ds"
    sensitivity: str = "bound"

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.neighbouring != "replace-one":
            raise ValueError(
                f"neighbouring must be 'replace-one' for {type(self).__name__} (its calibration assumes replace-one "
                f"neighbours with public n; add-remove would reveal n); got {self.neighbouring!r}")
        check_budget_fields(self, allow_inf=True)
        object.__setattr__(self, "K", check_positive_finite(self.K, name="K"))
        check_choice(self.constants, name="constants", choices=CONSTANTS)
        check_choice(self.output, name="output", choices=OUTPUTS)
        check_choice(self.lp_method, name="lp_method", choices=LP_METHODS)
        check_choice(self.sensitivity, name="sensitivity", choices=SENSITIVITIES)
        if self.sensitivity == "exact" and self.constants != "correct":
            raise ValueError("sensitivity='exact' needs constants='correct' (the printed constants use no sensitivity)")
        if not isinstance(self.lattice, bool):
            raise TypeError("lattice must be a bool")

    @property
    def name(self) -> str:
        """``trig-I`` (ε-DP), ``trig-II`` ((ε, δ)-DP) or ``lp-eps-inf`` (ε = ∞: no noise, the LP floor)."""
        if math.isinf(self.epsilon):
            return "lp-eps-inf"
        return "trig-II" if self.delta > 0 else "trig-I"

    def at_width(self, sigma: float) -> TrigBase:
        """This mechanism for kernel width σ: smoothness K = σ² (thesis Sec 3.1, Prop 2.2)."""
        return replace(self, K=float(sigma) ** 2)

    def release(self, X: ArrayLike, *, rng: RNGLike = None, ledger: Ledger | None = None,
                workload: GaussianKernelWorkload | None = None) -> Release[TrigDiagnostics]:
        """Run the mechanism on ``X`` ⊂ [-1, 1]^d (n rows) and release a synthetic database.

        Parameters
        ----------
        X : array (n, d)
            The private data in [-1, 1]^d (finite).
        rng : int, Generator, SeedSequence or None
            Seed; the same seed gives a bit-identical release.
        ledger : Ledger, optional
            Charged with every step (refused up front if the total does not fit); a fresh
            ledger with exactly (ε, δ) when omitted.
        workload : ignored
            The release does not depend on the queries.

        Returns
        -------
        Release
            ``synthetic`` (see ``output``), ``params``, ``ledger``, stage ``timings`` and
            :class:`TrigDiagnostics`.
        """
        with limit_threads(BLAS_THREADS):
            return self._release(check_in_unit_cube(X, name="X"), rng=rng, ledger=ledger)

    def _release(self, X: np.ndarray, *, rng: RNGLike, ledger: Ledger | None) -> Release[TrigDiagnostics]:
        raise NotImplementedError  # pragma: no cover

    def _moment_noise(self, Xd: np.ndarray, idx: np.ndarray, *, epsilon: float, delta: float,
                      N: int | None = None) -> MomentNoise:
        """The moments' noise at (``epsilon``, ``delta``) (:func:`~dpkit.mechanisms.trig.moments.moment_noise`).

        ``sensitivity="exact"`` calibrates the noise on :func:`~dpkit.mechanisms.trig.moments.grid_sensitivity`
        of the rows' grid A^d (``N`` cells per coordinate; the rows ``Xd`` lie on it) instead of the
        bounds 2(R−1)/n and 2√(R−1)/n.
        """
        exact = None
        if self.sensitivity == "exact" and idx.shape[0] > 1:
            if N is None:
                raise ValueError("sensitivity='exact' needs the grid size N of the discretised rows")
            exact = grid_sensitivity(idx, N, Xd.shape[0])
        return moment_noise(Xd.shape[0], idx.shape[0], epsilon=epsilon, delta=delta, constants=self.constants,
                            thesis_delta=self.delta or None, sensitivity=exact)

    def _noisy_moments(self, Xd: np.ndarray, idx: np.ndarray, *, epsilon: float, delta: float, led: Ledger | None,
                       rng: np.random.Generator, N: int | None = None,
                       noise: MomentNoise | None = None) -> tuple[np.ndarray, np.ndarray, MomentNoise]:
        """Exact moments b of the discretised data and their release b̂ (spent through ``led``).

        The noise is :meth:`_moment_noise`'s unless ``noise`` is given by a caller that accounts the moments inside
        a larger composition; ``led=None`` spends nothing (that caller spends the composition).
        """
        b = basis_moments(Xd, idx)
        if noise is None:
            noise = self._moment_noise(Xd, idx, epsilon=epsilon, delta=delta, N=N)
        if noise.scale >= MAX_NOISY_MOMENT:  # before anything is spent
            raise ValueError(self._too_small(f"the moments' noise scale {noise.scale:.3g} (n = {Xd.shape[0]}, "
                                             f"R = {idx.shape[0]}) reaches"))
        if led is not None:
            spend_moments(led, noise, idx.shape[0])
        b_hat = release_moments(b, noise, rng=rng)
        top = float(np.max(np.abs(b_hat))) if b_hat.size else 0.0
        if not top < MAX_NOISY_MOMENT:  # a draw far in the noise's tail
            raise ValueError(self._too_small(f"a noisy moment of {top:.3g} (noise scale {noise.scale:.3g}) reaches"))
        return b, b_hat, noise

    def _too_small(self, what: str) -> str:
        return moment_limit_message(type(self).__name__, self.epsilon, self.delta, what)

    def _finish(self, *, X: np.ndarray, sch: Schedule, idx: np.ndarray, points: np.ndarray, moments: np.ndarray,
                b_hat: np.ndarray, noise: MomentNoise, led: Ledger, gen_sample: np.random.Generator,
                timings: dict[str, float], t_start: float, algorithm: str, params: dict[str, Any],
                **released: np.ndarray) -> Release[TrigDiagnostics]:
        """The LP over the candidate columns (Alg 4 step 7 / Alg 9 step 7), the m-row sample and the release.

        ``params`` are the mechanism-specific parameters (after the common ones), ``released`` the
        extra :class:`TrigDiagnostics` fields (noisy mean, PCA) of Alg 9/10.
        """
        W = np.ascontiguousarray(evaluate_basis(points, idx).T)
        if self.lattice:
            W = lattice_round(W, sch.L)
        t0 = time.perf_counter()
        try:
            sol = solve_l1_lp(W, b_hat, method=self.lp_method)
        except LPError as exc:  # name the budget: near MAX_NOISY_MOMENT the noise, not the data, breaks the LP
            top = float(np.max(np.abs(b_hat))) if b_hat.size else 0.0
            raise LPError(exc.status, f"{exc.message} (epsilon = {self.epsilon:g}, delta = {self.delta:g}: largest "
                          f"|noisy moment| {top:.3g}, noise scale {noise.scale:.3g}; the LP loses the weights as the "
                          f"moments near 2^52 = {MAX_NOISY_MOMENT:.4g})", W.shape[1] + 2 * W.shape[0],
                          W.shape[0] + 1) from exc
        timings["lp"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        keep = sol.u > 0
        lp_db = WeightedDatabase(points=points[keep], weights=sol.u[keep], m=sch.m)
        synth = lp_db.realise(gen_sample) if self.output == "sample" else lp_db
        timings["sample"] = time.perf_counter() - t0
        timings["total"] = time.perf_counter() - t_start
        n, d = X.shape
        params = {"algorithm": algorithm, **self._common_params(noise, sch, n, d), **params}
        diag = TrigDiagnostics(lp=sol.to_dict(), lp_database=lp_db, noisy_moments=b_hat, true_moments=moments, basis=idx,
                               candidates=points, **released)
        return Release(method=self.name, privacy=self.privacy, params=params, ledger=led.to_dict(), timings=timings,
                       synthetic=synth, diagnostics=diag)

    def _common_params(self, noise: MomentNoise, sch: Schedule, n: int, d: int) -> dict[str, Any]:
        return {
            "method": self.name, "n": n, "d": d, "t": sch.t, "N": sch.N, "m": sch.m, "L": sch.L, "K": self.K,
            "epsilon": self.epsilon,
            "delta": self.delta, "constants": self.constants, "lattice": self.lattice, "output": self.output,
            "moment_noise": noise.to_dict(), "neighbouring": self.neighbouring, "sensitivity": self.sensitivity,
        }


