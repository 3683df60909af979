"""SmallDB / net mechanism on a toy enumerable domain (baseline B2 of docs/science/baselines.md; D&R Alg 4, Alg 7;
thesis Alg 3 / Thm 1.16).

The data are snapped to the public grid ``A^d``; the net is every database of ``m`` rows over it, and the exponential
mechanism (:class:`dpkit.mechanisms.net.NetMechanism`) picks one by its worst error on the query set given to
:meth:`SmallDB.answer` (ε-DP for any public query set). Errors: a net beyond ``max_candidates`` raises
:class:`~dpkit.core.exceptions.FeasibilityError`.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from dpkit.core.accounting import Ledger, ledger_for
from dpkit.core.exceptions import FeasibilityError
from dpkit.core.rng import RNGLike
from dpkit.core.threads import one_blas_thread
from dpkit.core.validation import check_budget_fields, check_in_unit_cube, check_int_in_range, check_positive_ints
from dpkit.mechanisms.net import MAX_CANDIDATES, NetMechanism, count_databases, enumerate_databases
from dpkit.mechanisms.trig.grid import discretise_indices, grid_points
from dpkit.methods._kernels import kernel_values
from dpkit.queries.release import MethodBase, Release, Timer
from dpkit.queries.synthetic import WeightedDatabase
from dpkit.queries.workload import GaussianKernelWorkload

__all__ = ["SmallDB"]


@dataclass(frozen=True, kw_only=True)
class SmallDB(MethodBase):
    """SmallDB over the toy domain ``A^d`` with ``levels`` points per coordinate.

    Parameters
    ----------
    epsilon : float
        ε > 0 (finite).
    levels : int
        Grid points per coordinate (domain size levels^d).
    m : int
        Rows of every candidate database.
    max_candidates : int
        Largest net enumerated.
    """

    epsilon: float
    levels: int = 3
    m: int = 4
    max_candidates: int = 200_000

    def __post_init__(self) -> None:
        check_budget_fields(self, delta=False)
        check_positive_ints(self, "levels", "m")
        check_int_in_range(self.max_candidates, name="max_candidates", low=1, high=MAX_CANDIDATES)

    needs_workload = True

    @property
    def name(self) -> str:
        return "smalldb"

    @property
    def delta(self) -> float:
        return 0.0

    def domain(self, d: int) -> np.ndarray:
        """The levels^d domain points (row-major over coordinates)."""
        a = grid_points(self.levels)
        mesh = np.meshgrid(*([a] * d), indexing="ij")
        return np.stack([g.ravel() for g in mesh], axis=1)

    @one_blas_thread
    def release(self, X: ArrayLike, *, rng: RNGLike = None, ledger: Ledger | None = None,
                workload: GaussianKernelWorkload | None = None) -> Release[None]:
        """Release one candidate database of the net (selected with the workload's queries as the
        exponential mechanism's utility); ``release.synthetic`` is it as a weighted point set."""
        workload = self._require_workload(workload)
        tm = Timer()
        X = check_in_unit_cube(X, name="X")
        n, d = X.shape
        size = self.levels**d
        count = count_databases(size, self.m)
        if count > self.max_candidates:
            raise FeasibilityError(
                f"SmallDB net over {self.levels}^{d} = {size} domain points with m = {self.m} rows has "
                f"C({size}+{self.m}-1, {self.m}) = {count} databases > max_candidates = {self.max_candidates}"
            )
        led = ledger_for(ledger, self.epsilon, 0.0, self.name)
        with tm("net"):
            dom = self.domain(d)
            F = kernel_values(dom, workload.centres, workload.alphas, workload.sigma)
            cells = discretise_indices(X, self.levels)
            flat = np.ravel_multi_index(tuple(cells.T), (self.levels,) * d)
            hist = np.bincount(flat, minlength=size).astype(float)
            cands = enumerate_databases(size, self.m, max_candidates=self.max_candidates)
            mech = NetMechanism(epsilon=self.epsilon, queries=F, candidates=cands, n=n)
        with tm("select"):
            i, h = mech.release(hist, rng=rng, ledger=led, name="net")
        keep = h > 0
        synth = WeightedDatabase(points=dom[keep], weights=h[keep] / h.sum(), m=self.m)
        params = {"method": self.name, "epsilon": self.epsilon, "levels": self.levels, "m": self.m,
                  "domain_size": size, "net_size": int(count), "sensitivity": mech.sensitivity, "index": i}
        return Release(method=self.name, privacy=self.privacy, params=params, ledger=led.to_dict(), timings=tm.done(),
                       synthetic=synth)
