"""The configurations and δ-tuning studies of the near-optimal mechanism for 1-D linear queries (notebook 30).

:data:`CONFIGURATIONS` are the experiment configurations V1–V7; the study helpers (:func:`rate_maps`,
:func:`min_rate_curves`, :func:`min_rate_rows`, :func:`radius_star`, :func:`densities_at_radius_star`) run the
δ-tuning of Figs 1–2 and (9) that the checks of :mod:`dpkit.claims.linear` and the figures share.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np

from dpkit.mechanisms.linear.density import LevelSetDensity
from dpkit.mechanisms.linear.levelset import build_level_sets
from dpkit.mechanisms.linear.tuning import RadiusSearch, RateGrid, optimal_radius, rate_grid

__all__ = ["CONFIGURATIONS", "MinRateRow", "rate_maps", "min_rate_curves", "min_rate_rows", "radius_star",
           "densities_at_radius_star", "V4", "DF4", "max_abs"]


#: The experiment configurations V1–V7 of [3, §6] (V = [0, a] ∪ [b, c], see *erratum-lq-v-set*; V4 degenerate).
CONFIGURATIONS: dict[str, list[list[float]]] = {
    "V1": [[0.0, 1.0], [1000.0, 1001.0]],
    "V2": [[0.0, 100.0], [1000.0, 1001.0]],
    "V3": [[0.0, 500.0], [1000.0, 1001.0]],
    "V4": [[0.0, 1001.0]],
    "V5": [[0.0, 1.0], [100.0, 101.0]],
    "V6": [[0.0, 1.0], [1000.0, 1001.0]],
    "V7": [[0.0, 1.0], [2000.0, 2001.0]],
}


#: The configuration V4 = [0, 1001] (one interval containing 0: the staircase's case).
V4 = CONFIGURATIONS["V4"]


#: Δf of V4 (its largest absolute value, 1001).
DF4 = float(np.max(np.abs(V4)))


def max_abs(V: Sequence[Sequence[float]]) -> float:
    """``max |v|`` over the intervals of ``V``: its sensitivity ``Δf``, the unit of its radii.

    Parameters
    ----------
    V : sequence of [low, high]
        A configuration (:data:`CONFIGURATIONS`).

    Returns
    -------
    float
        The largest absolute endpoint.
    """
    return float(np.max(np.abs(V)))


# ----------------------------------------------------------------------------- studies
def rate_maps(
    configs: Mapping[str, Sequence[Sequence[float]]], rel_deltas: np.ndarray, epsilons: np.ndarray
) -> dict[str, RateGrid]:
    """Figs 1–2: the ``rate`` heat map of every configuration over ``δ = rel_deltas·max|V|`` and ε."""
    return {name: rate_grid(V, rel_deltas * max_abs(V), epsilons) for name, V in configs.items()}


def min_rate_curves(
    configs: Mapping[str, Sequence[Sequence[float]]], epsilons: Sequence[float], grids: Mapping[str, RateGrid], *, max_refine: int
) -> dict[str, list[RadiusSearch]]:
    """δ* of (9) at every ε, reusing each heat map's level sets as the grid stage."""
    return {name: optimal_radius(V, list(epsilons), grid=grids[name], max_refine=max_refine) for name, V in configs.items()}


@dataclass(frozen=True)
class MinRateRow:
    """One row of the min-over-δ table (docs/science/linear_queries.md, *The experiments*)."""

    config: str
    epsilon: float
    radius_star: float
    rate: float
    rate_vs_laplace: float
    abs_error: float
    rate_at_least_1: bool
    evaluations: int


def min_rate_rows(curves: Mapping[str, Sequence[RadiusSearch]]) -> list[MinRateRow]:
    """The table rows of the δ* searches; ``rate_at_least_1`` flags ε where the staircase is not beaten."""
    return [
        MinRateRow(config=name, epsilon=r.epsilon, radius_star=r.radius, rate=r.rate,
                   rate_vs_laplace=r.rate * math.exp(r.epsilon / 2) * r.epsilon / math.expm1(r.epsilon),
                   abs_error=r.abs_error, rate_at_least_1=bool(r.rate >= 1.0), evaluations=r.n_evaluations)
        for name, res in curves.items() for r in res
    ]


def radius_star(
    V: Sequence[Sequence[float]], epsilon: float, *, curve: Sequence[RadiusSearch], grid: RateGrid, max_refine: int
) -> float:
    """δ* at ``epsilon``: taken from ``curve`` when it was searched there, otherwise searched on ``grid``."""
    hit = [r for r in curve if r.epsilon == epsilon]
    return hit[0].radius if hit else optimal_radius(V, epsilon, grid=grid, max_refine=max_refine).radius


def densities_at_radius_star(
    configs: Mapping[str, Sequence[Sequence[float]]], epsilon: float, *, curves: Mapping[str, Sequence[RadiusSearch]],
    grids: Mapping[str, RateGrid], max_refine: int,
) -> dict[str, LevelSetDensity]:
    """The density of every configuration at its δ* for ``epsilon``, with the shells kept (for pdf, cdf, sampler)."""
    return {
        name: LevelSetDensity(levels=build_level_sets(V, radius_star(V, epsilon, curve=curves[name], grid=grids[name],
                                                                      max_refine=max_refine)), epsilon=epsilon)
        for name, V in configs.items()
    }
