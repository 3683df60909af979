"""Tuning the ball radius δ of the level-set mechanism: the heat maps of Figs 1–2 and δ* of (9).

Both depend on the neighbour set ``V`` and ε only, never on data, so tuning costs no privacy
budget (docs/science/linear_queries.md, *Choosing the radius*). One level-set build per δ serves every ε
(the shells do not depend on ε);
``E|Z|`` and ``rate`` come from the closed forms of :mod:`dpkit.mechanisms.linear.density`.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np
from scipy.optimize import minimize_scalar

from dpkit.core.validation import check_epsilon, check_int_in_range, check_real_in_range
from dpkit.mechanisms.linear.density import abs_error_curve, staircase_abs_error
from dpkit.mechanisms.linear.levelset import LevelSets, build_level_sets, neighbour_set, sensitivity_of

__all__ = ["RateGrid", "rate_grid", "RadiusSearch", "optimal_radius"]


@dataclass(frozen=True)
class RateGrid:
    """``rate[i, j]`` at ``radii[i]``, ``epsilons[j]`` plus per-radius convergence info."""

    radii: np.ndarray
    epsilons: np.ndarray
    rate: np.ndarray
    abs_error: np.ndarray
    steps: np.ndarray
    converged: np.ndarray
    sensitivity: float
    levels: tuple[LevelSets, ...] = field(default=(), repr=False)


def rate_grid(V: Any, radii: Sequence[float], epsilons: Sequence[float], *, max_steps: int = 3000) -> RateGrid:
    """The heat map of Figs 1–2: ``rate`` over a ``(δ, ε)`` grid (one level-set build per δ)."""
    V = neighbour_set(V)
    radii = np.asarray(radii, dtype=float)
    eps = np.asarray([check_epsilon(e, name="epsilons") for e in np.atleast_1d(epsilons)])
    E = np.empty((radii.size, eps.size))
    steps = np.empty(radii.size, dtype=int)
    conv = np.empty(radii.size, dtype=bool)
    kept = []
    for a, d in enumerate(radii):
        L = build_level_sets(V, float(d), max_steps=max_steps, keep_shells=False)
        E[a] = abs_error_curve(L, eps)
        steps[a], conv[a] = L.n, L.converged
        kept.append(L)
    dfs = sensitivity_of(V)
    return RateGrid(radii, eps, E / staircase_abs_error(eps, dfs)[None, :], E, steps, conv, dfs, tuple(kept))


@dataclass(frozen=True)
class RadiusSearch:
    """Result of the δ* search of (9) for one ε."""

    epsilon: float
    radius: float
    abs_error: float
    rate: float
    grid_radius: float
    grid_rate: float
    n_evaluations: int


def optimal_radius(
    V: Any,
    epsilon: float | Sequence[float],
    *,
    radii: Sequence[float] | None = None,
    grid: RateGrid | None = None,
    n_grid: int = 25,
    refine: bool = True,
    max_refine: int = 20,
    xatol: float = 1e-3,
    max_steps: int = 3000,
) -> RadiusSearch | list[RadiusSearch]:
    """δ* of (9): grid search over ``radii`` plus bounded refinement around the best point.

    The objective ``δ ↦ E|Z|`` is 1-D, piecewise smooth and non-convex (kinks where gaps of
    the level sets close), so a log-spaced grid over ``[10⁻³Δf, Δf]`` (``n_grid`` points)
    is searched first and ``scipy.optimize.minimize_scalar(method="bounded")`` then
    refines ``log δ`` between the best grid point's neighbours (at most ``max_refine``
    evaluations, tolerance ``xatol`` in ``log δ``); the better of the two is returned. Depends on ``(V, ε)`` only, so it is
    data-independent and costs no privacy budget. With a sequence of ε the grid
    evaluations are shared (the shells do not depend on ε). Passing the heat map's
    :class:`RateGrid` as ``grid`` reuses its level sets as the grid stage (no rebuild).
    """
    V = neighbour_set(V)
    dfs = sensitivity_of(V)
    scalar = np.ndim(epsilon) == 0
    eps_list = [check_epsilon(e, name="epsilon") for e in np.atleast_1d(epsilon)]
    eps_arr = np.asarray(eps_list)
    if grid is not None:
        if not grid.levels or not np.array_equal(grid.levels[0].V, V):
            raise ValueError("grid must be a RateGrid built by rate_grid for the same neighbour set V")
        order = np.argsort(grid.radii)
        radii = np.asarray(grid.radii, dtype=float)[order]
        grid_E = np.vstack([abs_error_curve(grid.levels[k], eps_arr) for k in order])
    else:
        if radii is None:
            n_grid = check_int_in_range(n_grid, name="n_grid", low=3)
            radii = np.geomspace(1e-3 * dfs, dfs, n_grid)
        radii = np.sort(np.asarray([check_real_in_range(r, name="radii", low=0.0, low_inclusive=False) for r in radii]))
        grid_E = np.empty((radii.size, eps_arr.size))
        for a, d in enumerate(radii):
            grid_E[a] = abs_error_curve(build_level_sets(V, float(d), max_steps=max_steps, keep_shells=False), eps_arr)
    out = []
    for j, eps in enumerate(eps_list):
        b = int(np.argmin(grid_E[:, j]))
        best_d, best_E, nev = float(radii[b]), float(grid_E[b, j]), radii.size
        if refine and radii.size >= 2:
            lo = math.log(radii[max(b - 1, 0)])
            hi = math.log(radii[min(b + 1, radii.size - 1)])

            def objective(t: float, _eps: float = eps) -> float:  # E|Z| at δ = e^t
                return float(abs_error_curve(build_level_sets(V, math.exp(t), max_steps=max_steps, keep_shells=False), [_eps])[0])

            res = minimize_scalar(
                objective,
                bounds=(lo, hi),
                method="bounded",
                options={"maxiter": check_int_in_range(max_refine, name="max_refine", low=1), "xatol": float(xatol)},
            )
            nev += int(res.nfev)
            if float(res.fun) < best_E:
                best_d, best_E = math.exp(float(res.x)), float(res.fun)
        sc = float(staircase_abs_error(eps, dfs))
        out.append(RadiusSearch(eps, best_d, best_E, best_E / sc, float(radii[b]), float(grid_E[b, j]) / sc, nev))
    return out[0] if scalar else out
