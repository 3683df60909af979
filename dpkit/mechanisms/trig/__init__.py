"""The trigonometric mechanism family of thesis Chapter 2 (Algorithms 4, 5, 9, 10).

Public API::

    from dpkit.mechanisms.trig import ImprovedTrigonometricMechanism, TrigonometricMechanism, TrigDiagnostics
    rel = ImprovedTrigonometricMechanism(epsilon=1.0, delta=0.0, K=4.0).release(X, rng=0)
    rel.synthetic, rel.ledger, rel.diagnostics.lp
"""
from dpkit.mechanisms.trig.basis import basis_indices, basis_moments, evaluate_basis, iter_basis_indices
from dpkit.mechanisms.trig.grid import discretise, discretise_indices, grid_points, lattice_round
from dpkit.mechanisms.trig.lp import LPError, LPSolution, solve_l1_lp
from dpkit.mechanisms.trig.mechanisms import (
    ImprovedTrigonometricMechanism,
    MomentNoise,
    TrigDiagnostics,
    TrigonometricMechanism,
    moment_noise,
    release_moments,
)
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
