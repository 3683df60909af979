"""The trigonometric mechanism family of thesis Chapter 2 (Algorithms 4, 5, 9, 10).

* :class:`TrigonometricMechanism` — Alg 4 (I, ε-DP) and Alg 5 (II, (ε,δ)-DP) on the full grid with the full basis.
* :class:`ImprovedTrigonometricMechanism` — Alg 9 (I) and Alg 10 (II): R basis functions, a private mean, private PCA
  and C candidates from an ellipsoid, re-weighted by the LP.

Both are methods of the one protocol (:mod:`dpkit.queries.release`) whose ``diagnostics`` is a
:class:`TrigDiagnostics`; ``at_width(σ)`` sets the smoothness K = σ² of the thesis's experiments. Both assume
replace-one neighbours with public n (``neighbouring="add-remove"`` is refused).

Privacy (the moment noise's constants are an erratum; ``docs/science/trig.md`` derives them)
-------------------------------------------------------------------------------------------
1. Moments: under replace-one each non-constant moment moves by at most 2/n. Mechanism I: Laplace on the L1
   sensitivity 2(R − 1)/n; mechanism II: the analytic Gaussian mechanism on the L2 sensitivity 2√(R − 1)/n, or
   Laplace when its standard deviation is smaller (recorded in ``params["moment_noise"]``). ``constants="thesis"``
   reproduces the printed scales (under-noised by about 2 for the ε-DP ones).
2. Mean (Alg 9 step 4): Lap(6d/(nε)) per coordinate; PCA: :class:`dpkit.mechanisms.pca.PrivateSubspaceIteration`.
3. Total by composition, each step recorded in the ledger before its noise is drawn.

Errors
------
:class:`TrigonometricMechanism` raises :class:`~dpkit.core.exceptions.FeasibilityError`, naming N^d and t^d, when
N^d > :data:`~dpkit.mechanisms.trig.base.MAX_GRID_POINTS`, t^d > :data:`~dpkit.mechanisms.trig.base.MAX_BASIS_SIZE`
or t^d · N^d > :data:`~dpkit.mechanisms.trig.base.MAX_W_ENTRIES`; grids beyond
:data:`dpkit.mechanisms.trig.lp.CG_THRESHOLD` points are solved by exact column generation.
"""
from dpkit.mechanisms.trig.base import TrigDiagnostics
from dpkit.mechanisms.trig.basis import basis_indices, basis_moments, evaluate_basis, iter_basis_indices
from dpkit.mechanisms.trig.full_grid import TrigonometricMechanism
from dpkit.mechanisms.trig.grid import discretise, discretise_indices, grid_points, lattice_round
from dpkit.mechanisms.trig.improved import ImprovedTrigonometricMechanism
from dpkit.mechanisms.trig.lp import LPError, LPSolution, solve_l1_lp
from dpkit.mechanisms.trig.moments import MomentNoise, moment_noise, release_moments
from dpkit.mechanisms.trig.schedules import Schedule, schedule, schedule_I, schedule_II
from dpkit.queries.synthetic import WeightedDatabase

__all__ = [
    "ImprovedTrigonometricMechanism",
    "TrigonometricMechanism",
    "TrigDiagnostics",
    "WeightedDatabase",
    "MomentNoise",
    "moment_noise",
    "release_moments",
    "basis_indices",
    "iter_basis_indices",
    "evaluate_basis",
    "basis_moments",
    "grid_points",
    "discretise",
    "discretise_indices",
    "lattice_round",
    "solve_l1_lp",
    "LPError",
    "LPSolution",
    "Schedule",
    "schedule",
    "schedule_I",
    "schedule_II",
]
