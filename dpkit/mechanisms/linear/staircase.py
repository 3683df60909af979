"""The staircase mechanism of Geng & Viswanath (docs/science/references.md, [6]) as a peer baseline.

Its noise density is piecewise constant on steps of width ``Δ = Δf`` with ratio ``b = e^{−ε}`` and a first step of
width ``γΔ``; the optimal ``γ* = 1/(1 + e^{ε/2})`` gives ``E|Z| = Δ e^{ε/2}/(e^ε − 1)``, the denominator of the
paper's ``rate``. It equals the level-set mechanism for ``V = [0, Δ]`` with radius ``γΔ`` (the V4 identity;
docs/science/linear_queries.md, *Calibration point*).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from dpkit.core.rng import RNGLike, resolve_rng
from dpkit.core.validation import check_budget_fields, check_epsilon, check_real_in_range, check_sensitivity
from dpkit.mechanisms.base import AdditiveNoiseMechanism

__all__ = ["Staircase", "optimal_gamma"]


def optimal_gamma(epsilon: float) -> float:
    """``γ* = 1/(1 + e^{ε/2})`` (Geng–Viswanath)."""
    return 1.0 / (1.0 + math.exp(check_epsilon(epsilon, name="epsilon") / 2))


@dataclass(frozen=True, kw_only=True)
class Staircase(AdditiveNoiseMechanism):
    """Geng–Viswanath staircase mechanism ``f(x) + Z`` for a scalar query.

    Parameters
    ----------
    epsilon : float
        Privacy parameter, finite and > 0.
    sensitivity : float
        ``Δf`` under ``neighbouring`` (for a linear query with neighbour set V under
        add/remove neighbours, ``max_{v∈V}|v|``).
    gamma : float, optional
        Staircase shape in [0, 1]; default ``γ* = 1/(1 + e^{ε/2})``.
    neighbouring : {"add-remove", "replace-one"}
        Relation under which ``sensitivity`` holds (default: the papers' add/remove).

    Notes
    -----
    ``release(value)`` returns ``value + Z`` for one scalar query value (``Z`` from :meth:`sample`);
    with a ledger the spend (ε, 0) is recorded first.

    Examples
    --------
    >>> m = Staircase(epsilon=1.0, sensitivity=1.0)
    >>> round(m.mean_abs_error, 6) == round(math.exp(0.5) / math.expm1(1.0), 6)
    True
    """

    scalar_only = "the staircase mechanism releases one scalar query"

    epsilon: float
    sensitivity: float
    gamma: float | None = None
    neighbouring: str = "add-remove"

    def __post_init__(self) -> None:
        super().__post_init__()
        check_budget_fields(self, delta=False)
        object.__setattr__(self, "sensitivity", check_sensitivity(self.sensitivity, name="sensitivity"))
        if self.gamma is None:
            g = optimal_gamma(self.epsilon)
        else:
            g = check_real_in_range(self.gamma, name="gamma", low=0.0, high=1.0)
        object.__setattr__(self, "gamma", g)

    @property
    def delta(self) -> float:
        """Approximate-DP δ: 0 (pure ε-DP)."""
        return 0.0

    @property
    def b(self) -> float:
        return math.exp(-self.epsilon)

    @property
    def a(self) -> float:
        """Peak density ``a(γ)``."""
        b, g = self.b, float(self.gamma)
        return (1 - b) / (2 * self.sensitivity * (g + b * (1 - g)))

    @property
    def mean_abs_error(self) -> float:
        """Closed-form ``E|Z|`` for any γ (sum of the per-step integrals; equals
        ``Δ e^{ε/2}/(e^ε − 1)`` at ``γ*``)."""
        b, g, D = self.b, float(self.gamma), self.sensitivity
        omb = 1 - b
        s0, s1 = 1 / omb, b / omb**2  # Σ b^k, Σ k b^k
        # ∫_{kΔ}^{kΔ+γΔ} x = Δ²(kγ + γ²/2);  ∫_{kΔ+γΔ}^{(k+1)Δ} x = Δ²(1−γ)(2k + 1 + γ)/2
        inner = g * s1 + g * g / 2 * s0
        outer = (1 - g) * (s1 + (1 + g) / 2 * s0)
        return 2 * self.a * D * D * (inner + b * outer)

    @property
    def variance(self) -> float:
        """Closed-form ``E[Z²]`` (sum over steps with Σ k b^k, Σ k² b^k)."""
        b, g, D = self.b, float(self.gamma), self.sensitivity
        omb = 1 - b
        s0, s1, s2 = 1 / omb, b / omb**2, b * (1 + b) / omb**3
        # ∫_{k}^{k+γ} x² = k²γ + kγ² + γ³/3 ; ∫_{k+γ}^{k+1} x² = k²(1−γ) + k(1−γ²) + (1−γ³)/3   (units Δ³)
        inner = g * s2 + g * g * s1 + g**3 / 3 * s0
        outer = (1 - g) * s2 + (1 - g * g) * s1 + (1 - g**3) / 3 * s0
        return 2 * self.a * D**3 * (inner + b * outer)

    @property
    def mse(self) -> float:
        return self.variance

    def level(self, x: ArrayLike) -> np.ndarray:
        """Staircase level of ``x``: 0 on ``|x| < γΔ``, then ``i`` on ``[γΔ + (i−1)Δ, γΔ + iΔ)``."""
        ax = np.abs(np.asarray(x, dtype=float)) / self.sensitivity
        return np.where(ax < self.gamma, 0, np.floor(ax - self.gamma).astype(np.int64) + 1)

    def pdf(self, x: ArrayLike) -> np.ndarray:
        return self.a * np.exp(-self.epsilon * self.level(x))

    def cdf(self, x: ArrayLike) -> np.ndarray | float:
        """Exact CDF (symmetric; mass of ``[0, y]`` summed over whole steps plus a partial one)."""
        x = np.asarray(x, dtype=float)
        y = np.abs(x) / self.sensitivity
        b, g, a, D = self.b, float(self.gamma), self.a, self.sensitivity
        k = np.floor(y)
        t = y - k
        step_mass = a * D * (g + b * (1 - g))  # mass of [0, Δ) on one side
        full = step_mass * (1 - b**k) / (1 - b)
        part = a * D * b**k * np.where(t < g, t, g + b * (t - g))
        m = full + part
        out = np.where(x >= 0, 0.5 + m, 0.5 - m)
        return float(out) if out.ndim == 0 else out

    def sample(self, size: int | tuple[int, ...] | None = None, *, rng: RNGLike = None) -> np.ndarray | float:
        """Geng–Viswanath sampler: ``S·[(1−B)(G + γU) + B(G + γ + (1−γ)U)]Δ`` with sign ``S``,
        ``G ~ Geometric`` on ``{0,1,…}`` with ``P(G=k) = (1−b)b^k``, ``U ~ U[0,1]`` and
        ``P(B = 0) = γ/(γ + (1−γ)b)``."""
        g = resolve_rng(rng)
        m = 1 if size is None else int(np.prod(size))
        gam, b = float(self.gamma), self.b
        S = np.where(g.random(m) < 0.5, -1.0, 1.0)
        G = g.geometric(1 - b, size=m) - 1
        U = g.random(m)
        B = g.random(m) >= gam / (gam + (1 - gam) * b)
        X = S * np.where(B, G + gam + (1 - gam) * U, G + gam * U) * self.sensitivity
        if size is None:
            return float(X[0])
        return X.reshape(size)

    def _ledger_meta(self, x: np.ndarray) -> dict[str, Any]:
        return {"sensitivity": self.sensitivity, "gamma": self.gamma}

    def _add_noise(self, x: np.ndarray, rng: RNGLike) -> np.ndarray | float:
        """``x + Z`` with ``Z`` from :meth:`sample`."""
        return x + self.sample(x.shape if x.ndim else None, rng=rng)
