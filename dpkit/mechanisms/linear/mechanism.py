"""The near-optimal linear-query mechanism as a release object (Theorem 2 + Algorithm 2).

``M(x) = f(x) + Z`` with ``Z`` drawn by Algorithm 2 (corrected: geometric tail on
``{1, 2, …}``) from the level-set density of :mod:`dpkit.mechanisms.linear.density`. The query is a
1-D linear query ``f(x) = Σ_i x_i f(χ_i)`` on a histogram ``x``; what matters is its
neighbour set ``V = {f(y) : y ∈ χ}`` (Wu, He & Xia 2017, Sec. 2), and neighbouring is add/remove
one record (``‖x − x'‖₁ = 1``), so ``f(x') − f(x) ∈ W = V ∪ (−V)``.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from dpkit.core.accounting import Ledger
from dpkit.core.rng import RNGLike
from dpkit.core.validation import check_budget_fields, check_finite_array, check_int_in_range, check_real_in_range
from dpkit.mechanisms.base import AdditiveNoiseMechanism
from dpkit.mechanisms.linear.density import LevelSetDensity
from dpkit.mechanisms.linear.levelset import build_level_sets as _build
from dpkit.mechanisms.linear.levelset import neighbour_set as _check_neighbour_set
from dpkit.mechanisms.linear.levelset import sensitivity_of
from dpkit.mechanisms.linear.tuning import optimal_radius

__all__ = ["LinearQueryMechanism", "linear_query_value"]


def linear_query_value(counts: ArrayLike, record_values: ArrayLike) -> float:
    """``f(x) = Σ_i x_i f(χ_i)`` for a histogram ``counts`` and per-type values ``f(χ_i)``."""
    c = check_finite_array(counts, name="counts", ndim=1)
    v = check_finite_array(record_values, name="record_values", ndim=1)
    if c.shape != v.shape:
        raise ValueError(f"counts and record_values must have the same length; got {c.shape} and {v.shape}")
    if np.any(c < 0) or np.any(c != np.round(c)):
        raise ValueError("counts must be a histogram of non-negative integers")
    return float(c @ v)


@dataclass(frozen=True, kw_only=True)
class LinearQueryMechanism(AdditiveNoiseMechanism):
    """ε-DP release of a 1-D linear query by the level-set mechanism (Theorem 2).

    Parameters
    ----------
    neighbour_set : sequence of [start, end]
        ``V = {f(y) : y ∈ χ}`` as a union of closed intervals (points ``[v, v]`` allowed,
        e.g. ``[[1, 1]]`` for a counting query). Must contain some ``v ≠ 0``.
    epsilon : float
        Privacy parameter, finite and > 0.
    radius : float, optional
        Ball radius δ > 0 of ``R_0 = [−δ, δ]`` ([3, §5.1]; **not** approximate-DP δ).
        Default ``None``: δ* of (9) by :func:`dpkit.mechanisms.linear.density.optimal_radius`, which
        uses ``(V, ε)`` only and costs no privacy budget.
    max_steps : int
        Truncation point of the level-set construction (exactly ε-DP either way).
    tail_tol : float
        Early truncation once the closed-off tail's probability is ``≤ tail_tol``.
    neighbouring : {"add-remove", "replace-one"}
        Default add/remove, the paper's relation (``V`` is defined for it).

    Notes
    -----
    ``release(value)`` returns the float ``f(x) + Z`` for the scalar ``value = f(x)``, ``Z`` drawn
    by Algorithm 2; with a ledger the spend (ε, 0) is recorded first.
    Privacy: levels of ``r`` and ``r + v`` differ by at most 1 for every ``v ∈ W``
    (``C_i ⊕ W ⊆ C_{i+1}``, Lemma 4), so ``p(r − f(x)) ≤ e^ε p(r − f(x'))``.

    Examples
    --------
    >>> m = LinearQueryMechanism(neighbour_set=[[0, 1], [100, 101]], epsilon=1.0, radius=5.0)
    >>> m.rate < 1.0
    True
    """

    scalar_only = "a 1-D linear query: value is the scalar f(x)"

    neighbour_set: ArrayLike
    epsilon: float
    radius: float | None = None
    max_steps: int = 3000
    tail_tol: float = 1e-13
    neighbouring: str = "add-remove"
    _density: LevelSetDensity = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        super().__post_init__()
        V = _check_neighbour_set(self.neighbour_set)
        object.__setattr__(self, "neighbour_set", tuple((float(s), float(e)) for s, e in V))
        check_budget_fields(self, delta=False)
        eps = self.epsilon
        check_int_in_range(self.max_steps, name="max_steps", low=1)
        check_real_in_range(self.tail_tol, name="tail_tol", low=0.0, high=1.0)
        if self.radius is None:
            r = optimal_radius(V, eps, max_steps=self.max_steps).radius
        else:
            r = check_real_in_range(
                self.radius, name="radius (ball radius δ, not approximate-DP δ)", low=0.0, low_inclusive=False
            )
            if not math.isfinite(r):
                raise ValueError(f"radius (ball radius δ) must be finite; got {r}")
        object.__setattr__(self, "radius", float(r))
        L = _build(V, r, max_steps=self.max_steps, keep_shells=True, epsilon=eps, tail_tol=self.tail_tol or None)
        object.__setattr__(self, "_density", LevelSetDensity(levels=L, epsilon=eps))

    @classmethod
    def from_record_values(cls, record_values: ArrayLike, **kwargs: Any) -> "LinearQueryMechanism":
        """Build from a finite set of per-record values ``f(χ_j)`` (``V`` = those points).

        Example: a counting query has ``record_values = [1]`` (or ``[0, 1]`` when records
        outside the predicate exist; both give ``W ⊇ {−1, 1}``).
        """
        v = check_finite_array(record_values, name="record_values", ndim=1)
        return cls(neighbour_set=[[x, x] for x in np.unique(v)], **kwargs)

    @property
    def delta(self) -> float:
        """Approximate-DP δ: 0 (pure ε-DP). The ball radius is :attr:`radius`."""
        return 0.0

    @property
    def sensitivity(self) -> float:
        """``Δf = max_{v∈V}|v|``."""
        return sensitivity_of(np.asarray(self.neighbour_set))

    @property
    def density(self) -> LevelSetDensity:
        return self._density

    @property
    def mean_abs_error(self) -> float:
        """Closed-form ``E|Z|``."""
        return self._density.expected_abs_error

    @property
    def variance(self) -> float:
        return self._density.variance

    @property
    def mse(self) -> float:
        return self.variance

    @property
    def rate(self) -> float:
        """``E|Z|`` relative to the optimal staircase mechanism (< 1: better)."""
        return self._density.rate

    def sample_noise(self, size: int | tuple[int, ...] | None = None, *, rng: RNGLike = None) -> np.ndarray | float:
        """Draw ``Z`` (Algorithm 2) without releasing anything."""
        return self._density.sample(size, rng=rng)

    def _ledger_meta(self, x: np.ndarray) -> dict[str, Any]:
        return {"radius": self.radius, "sensitivity": self.sensitivity, "levels": self._density.levels.n}

    def _add_noise(self, x: np.ndarray, rng: RNGLike) -> float:
        """``f(x) + Z`` with ``Z`` drawn by Algorithm 2."""
        return x.reshape(()) + self._density.sample(None, rng=rng)

    def release_histogram(
        self,
        counts: ArrayLike,
        record_values: ArrayLike,
        *,
        rng: RNGLike = None,
        ledger: Ledger | None = None,
        name: str | None = None,
    ) -> float:
        """Release ``f(x) = Σ x_i f(χ_i)`` for histogram data; every ``f(χ_i)`` must lie in ``V``."""
        v = check_finite_array(record_values, name="record_values", ndim=1)
        Varr = np.asarray(self.neighbour_set)
        inside = np.any((v[:, None] >= Varr[None, :, 0] - 1e-12) & (v[:, None] <= Varr[None, :, 1] + 1e-12), axis=1)
        if not np.all(inside):
            raise ValueError(f"record_values {v[~inside].tolist()} are outside the neighbour set V; the guarantee would not hold")
        return float(self.release(linear_query_value(counts, v), rng=rng, ledger=ledger, name=name))

    def params(self) -> dict[str, Any]:
        L = self._density.levels
        return {
            "mechanism": type(self).__name__,
            "neighbour_set": [list(p) for p in self.neighbour_set],
            "epsilon": self.epsilon,
            "radius": self.radius,
            "sensitivity": self.sensitivity,
            "neighbouring": self.neighbouring,
            "max_steps": self.max_steps,
            "tail_tol": self.tail_tol,
            "levels_n": L.n,
            "converged": L.converged,
            "mean_abs_error": self.mean_abs_error,
        }
