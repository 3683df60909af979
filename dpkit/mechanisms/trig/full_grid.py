"""Alg 4 (mechanism I) and Alg 5 (mechanism II) on the full grid A^d with the full basis T_t^d."""
from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from dpkit.core.accounting import Ledger, ledger_for
from dpkit.core.exceptions import FeasibilityError
from dpkit.core.rng import RNGLike, spawn
from dpkit.core.validation import (
    check_positive_int,
)
from dpkit.mechanisms.trig.base import MAX_BASIS_SIZE, MAX_GRID_POINTS, MAX_W_ENTRIES, TrigBase, TrigDiagnostics
from dpkit.mechanisms.trig.basis import basis_indices
from dpkit.mechanisms.trig.grid import discretise, grid_points
from dpkit.mechanisms.trig.schedules import Schedule, schedule
from dpkit.queries.release import Release

__all__ = ["TrigonometricMechanism"]


@dataclass(frozen=True, kw_only=True)
class TrigonometricMechanism(TrigBase):
    """Trigonometric mechanism on the full grid: Alg 4 (``delta == 0``) / Alg 5 (``delta > 0``).

    Parameters
    ----------
    epsilon : float
        Total ε (> 0; ``math.inf`` for a noise-free reference run).
    delta : float
        0 ⇒ mechanism I (Thm 2.4 schedule); in (0, 1) ⇒ mechanism II (Thm 2.5 schedule).
    K : float
        Smoothness order (experiments use K = σ²).
    constants : {"correct", "thesis"}
        Noise calibration (module docstring).
    lattice : bool
        Round W to the value lattice {i/L} (Alg 4 step 5). Off by default (floating point).
    t, N : int, optional
        Override the schedule's basis degree bound / grid size (e.g. for error-vs-t studies).
    output : {"sample", "weights"}
        What ``release.synthetic`` is: the realised m-row sample or the LP weights.
    lp_method : str
        HiGHS method (:data:`dpkit.mechanisms.trig.lp.LP_METHODS`).

    Raises
    ------
    FeasibilityError
        At :meth:`release`, if N^d, t^d or t^d·N^d exceed the documented limits.
    """

    K: float = 1.0
    t: int | None = None
    N: int | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.t is not None:
            check_positive_int(self.t, name="t")
        if self.N is not None:
            check_positive_int(self.N, name="N")

    def schedule(self, n: int, d: int) -> Schedule:
        """t, N, m, L for this run (Thm 2.4 / 2.5, with the t and N overrides)."""
        s = schedule(n, d, self.K, self.delta)
        return Schedule(t=self.t or s.t, N=self.N or s.N, m=s.m, L=s.L)

    def _check_feasible(self, n: int, d: int, sch: Schedule) -> None:
        grid_size, basis_size = sch.N**d, sch.t**d
        if grid_size > MAX_GRID_POINTS or basis_size > MAX_BASIS_SIZE or grid_size * basis_size > MAX_W_ENTRIES:
            raise FeasibilityError(
                f"full-grid trigonometric mechanism infeasible for n={n}, d={d}, K={self.K}: grid N^d = {sch.N}^{d} = "
                f"{grid_size} points, basis t^d = {sch.t}^{d} = {basis_size} functions, W has {grid_size * basis_size} "
                f"entries (documented limits: N^d <= {MAX_GRID_POINTS}, t^d <= {MAX_BASIS_SIZE}, "
                f"t^d*N^d <= {MAX_W_ENTRIES}); use ImprovedTrigonometricMechanism"
            )

    def _release(self, X: np.ndarray, *, rng: RNGLike, ledger: Ledger | None) -> Release[TrigDiagnostics]:
        """Alg 4/5 (called by :meth:`release`)."""
        T0 = time.perf_counter()
        n, d = X.shape
        sch = self.schedule(n, d)
        self._check_feasible(n, d, sch)
        led = ledger_for(ledger, self.epsilon, self.delta, "TrigonometricMechanism")
        g_noise, g_sample = spawn(rng, 2)
        # same stage keys as Alg 9/10; Alg 4/5 have no mean or PCA step (0 s), "candidates" = the grid
        timings: dict[str, float] = {"mean": 0.0, "pca": 0.0}

        t0 = time.perf_counter()
        Xd = discretise(X, sch.N)
        timings["discretise"] = time.perf_counter() - t0

        t0 = time.perf_counter()
        idx = basis_indices(sch.t, d)
        b, b_hat, noise = self._noisy_moments(Xd, idx, epsilon=self.epsilon, delta=self.delta, led=led,
                                                 rng=g_noise, N=sch.N)
        timings["moments"] = time.perf_counter() - t0

        t0 = time.perf_counter()
        a = grid_points(sch.N)
        mesh = np.meshgrid(*([a] * d), indexing="ij")
        points = np.stack([g.ravel() for g in mesh], axis=1)
        timings["candidates"] = time.perf_counter() - t0

        params = {
            "R": int(idx.shape[0]), "grid_size": sch.N**d,
            "noise_scales": {"moments": noise.scale},
            "sensitivities": {"moments_l1": noise.l1_sensitivity, "moments_l2": noise.l2_sensitivity},
        }
        return self._finish(X=X, sch=sch, idx=idx, points=points, moments=b, b_hat=b_hat, noise=noise, led=led,
                            gen_sample=g_sample, timings=timings, t_start=T0,
                            algorithm="Alg 5 (II)" if self.delta > 0 else "Alg 4 (I)", params=params)


