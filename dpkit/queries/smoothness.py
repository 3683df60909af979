"""Exact mixed partial derivatives of Gaussian-kernel mixtures and the smoothness norm (thesis Prop 2.2).

The kernel factorises over coordinates, so a mixed derivative of the workload (2.1) is a product of one-dimensional
factors ``(−1)^k σ^{−k} He_k(u) e^{−u²/2}`` (``He_k`` the probabilists' Hermite polynomials), summed over the
mixture. This module evaluates them exactly (no finite differences) and the norm
``‖f‖_K = max_{|k| ≤ K} sup_x |D^k f(x)|`` over a set of points. Prop 2.2: for ``K ≤ σ²`` and ``‖α‖₁ ≤ 1``,
``‖f‖_K ≤ 1``; :func:`prop22_bound` returns its intermediate bound (the proof: docs/science/derivations.md).
"""
from __future__ import annotations

import itertools
import math
from typing import Any, Iterator

import numpy as np
from scipy import special

from dpkit.core.validation import check_finite_array, check_int_in_range, check_positive_int, check_real_in_range

__all__ = [
    "multi_indices",
    "kernel_derivative_1d",
    "mixture_derivative",
    "mixture_derivatives",
    "smoothness_norm",
    "prop22_bound",
    "hermite_sup",
    "grid_points",
    "hermite_inequality_ratio",
    "critical_order",
]


def multi_indices(d: int, K: int, *, exact: bool = False) -> Iterator[tuple[int, ...]]:
    """All multi-indices ``k ∈ ℕ^d`` with ``|k| ≤ K`` (or ``= K`` with ``exact=True``), in graded order."""
    d = check_positive_int(d, name="d")
    K = check_int_in_range(K, name="K", low=0)
    orders = [K] if exact else range(K + 1)
    for total in orders:
        for k in itertools.product(range(total + 1), repeat=d):
            if sum(k) == total:
                yield k


def kernel_derivative_1d(x: Any, c: Any, sigma: float, k: int) -> np.ndarray:
    """``d^k/dx^k exp(−(x − c)²/(2σ²))`` for arrays ``x`` and ``c`` (broadcast), exactly via ``He_k``."""
    sigma = check_real_in_range(sigma, name="sigma", low=0.0, low_inclusive=False)
    k = check_int_in_range(k, name="k", low=0)
    u = (np.asarray(x, dtype=float) - np.asarray(c, dtype=float)) / sigma
    return (-1.0) ** k * sigma ** (-k) * special.eval_hermitenorm(k, u) * np.exp(-0.5 * u * u)


def _factors(points: np.ndarray, centres: np.ndarray, sigma: float, K: int) -> np.ndarray:
    """``F[k, i, p, j] = ∂^k`` of the 1-D kernel in coordinate ``i`` at point ``p`` for centre ``j``."""
    diff = points[:, None, :] - centres[None, :, :]  # (P, J, d)
    u = np.moveaxis(diff, 2, 0) / sigma  # (d, P, J)
    g = np.exp(-0.5 * u * u)
    out = np.empty((K + 1,) + u.shape)
    # three-term recurrence He_{k+1}(u) = u He_k(u) − k He_{k−1}(u), scaled by (−1/σ)^k
    h_prev, h = np.zeros_like(u), np.ones_like(u)
    for k in range(K + 1):
        out[k] = (-1.0 / sigma) ** k * h * g
        h_prev, h = h, u * h - k * h_prev
    return out


def _prepare(points: Any, centres: Any, weights: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    X = check_finite_array(points, name="points", ndim=(1, 2))
    C = check_finite_array(centres, name="centres", ndim=(1, 2), min_rows=1)
    if X.ndim == 1:
        X = X[:, None]
    if C.ndim == 1:
        C = C[:, None]
    if X.shape[1] != C.shape[1]:
        raise ValueError(f"points and centres must have the same dimension; got {X.shape[1]} and {C.shape[1]}")
    w = check_finite_array(weights, name="weights", ndim=1)
    if w.size != C.shape[0]:
        raise ValueError(f"weights must have one entry per centre ({C.shape[0]}); got {w.size}")
    return X, C, w


def mixture_derivative(points: Any, centres: Any, weights: Any, sigma: float, k: tuple[int, ...]) -> np.ndarray:
    """``D^k f`` at each point for ``f = Σ_j w_j exp(−‖x − c_j‖²/(2σ²))``; ``k`` a multi-index of length d."""
    X, C, w = _prepare(points, centres, weights)
    k = tuple(int(v) for v in k)
    if len(k) != X.shape[1] or min(k) < 0:
        raise ValueError(f"k must be a multi-index of {X.shape[1]} non-negative integers; got {k}")
    F = _factors(X, C, float(sigma), max(k))
    prod = np.ones((X.shape[0], C.shape[0]))
    for i, ki in enumerate(k):
        prod = prod * F[ki, i]
    return prod @ w


def mixture_derivatives(
    points: Any, centres: Any, weights: Any, sigma: float, K: int
) -> dict[tuple[int, ...], np.ndarray]:
    """All mixed derivatives ``D^k f`` with ``|k| ≤ K`` at each point (one pass over the Hermite factors)."""
    X, C, w = _prepare(points, centres, weights)
    K = check_int_in_range(K, name="K", low=0)
    F = _factors(X, C, check_real_in_range(sigma, name="sigma", low=0.0, low_inclusive=False), K)
    out: dict[tuple[int, ...], np.ndarray] = {}
    for k in multi_indices(X.shape[1], K):
        prod = F[k[0], 0].copy()
        for i in range(1, len(k)):
            prod *= F[k[i], i]
        out[k] = prod @ w
    return out


def grid_points(d: int, per_dim: int, *, low: float = -1.0, high: float = 1.0) -> np.ndarray:
    """A regular grid of ``per_dim^d`` points on ``[low, high]^d`` (end points included)."""
    d = check_positive_int(d, name="d")
    g = np.linspace(low, high, check_positive_int(per_dim, name="per_dim"))
    return np.stack(np.meshgrid(*([g] * d), indexing="ij"), axis=-1).reshape(-1, d)


def smoothness_norm(
    centres: Any, weights: Any, sigma: float, K: int, *, points: Any = None, per_dim: int = 41, include_centres: bool = True
) -> tuple[float, tuple[int, ...], np.ndarray]:
    """``‖f‖_K = max_{|k| ≤ K} max_x |D^k f(x)|`` over a grid on ``[-1,1]^d`` (plus the centres).

    The maximum over finitely many points is a lower bound on the supremum, so a value
    above a claimed bound refutes the claim; the centres are included because a single
    kernel's even derivatives peak there.

    Returns
    -------
    norm : float
    argmax_index : tuple
        The multi-index attaining it.
    per_order : (K + 1,) array
        ``max_{|k| = j} max_x |D^k f(x)|`` for ``j = 0..K``.
    """
    C = check_finite_array(centres, name="centres", ndim=(1, 2), min_rows=1)
    C = C[:, None] if C.ndim == 1 else C
    X = grid_points(C.shape[1], per_dim) if points is None else check_finite_array(points, name="points", ndim=2)
    if include_centres:
        X = np.vstack([X, np.clip(C, -1.0, 1.0)])
    derivs = mixture_derivatives(X, C, weights, sigma, K)
    per_order = np.zeros(K + 1)
    best, arg = -1.0, (0,) * C.shape[1]
    for k, v in derivs.items():
        m = float(np.max(np.abs(v)))
        per_order[sum(k)] = max(per_order[sum(k)], m)
        if m > best:
            best, arg = m, k
    return best, arg, per_order


def hermite_sup(k: int, *, n_grid: int = 20001, width: float = 12.0) -> float:
    """``sup_u |He_k(u) e^{−u²/2}|`` on a fine grid of ``[−width, width]`` (the 1-D kernel's k-th derivative at σ = 1)."""
    k = check_int_in_range(k, name="k", low=0)
    u = np.linspace(-width - math.sqrt(k), width + math.sqrt(k), n_grid)
    return float(np.max(np.abs(special.eval_hermitenorm(k, u) * np.exp(-0.5 * u * u))))


def prop22_bound(sigma: float, K: int) -> float:
    """The bound behind Prop 2.2: ``max_{0 ≤ k ≤ K} √(k!)/σ^k`` (≤ 1 whenever ``K ≤ σ²``).

    It bounds ``|D^k f|`` for every ``|k| ≤ K`` and every mixture with ``‖α‖₁ ≤ 1``.
    """
    sigma = check_real_in_range(sigma, name="sigma", low=0.0, low_inclusive=False)
    K = check_int_in_range(K, name="K", low=0)
    ks = np.arange(K + 1)
    return float(np.max(np.exp(0.5 * special.gammaln(ks + 1) - ks * math.log(sigma))))


def hermite_inequality_ratio(k_max: int, *, n_grid: int = 40001, width: float = 40.0) -> np.ndarray:
    """``max_u |He_k(u)| e^{−u²/4} / √(k!)`` for ``k = 0..k_max`` on a fine grid (≤ 1 is the inequality Prop 2.2 uses).

    In physicists' form this is the thesis's ``|H_k(x)| ≤ (2^k k!)^{1/2} e^{x²/2}`` (Indritz/Cramér:
    normalised Hermite functions are bounded by ``π^{−1/4}``).
    """
    k_max = check_int_in_range(k_max, name="k_max", low=0)
    u = np.linspace(-width, width, n_grid)
    return np.array([
        float(np.max(np.abs(special.eval_hermitenorm(k, u)) * np.exp(-0.25 * u * u - 0.5 * special.gammaln(k + 1))))
        for k in range(k_max + 1)
    ])


def critical_order(sigma: float, *, k_max: int = 400) -> int:
    """The smallest order ``K`` at which a single kernel's ``K``-th derivative exceeds 1 in sup norm.

    Exact in the sense of :func:`hermite_sup` (``sup |He_K(u) e^{−u²/2}| / σ^K``); Prop 2.2
    guarantees ``critical_order(σ) > σ²``.
    """
    sigma = check_real_in_range(sigma, name="sigma", low=0.0, low_inclusive=False)
    for K in range(1, k_max + 1):
        if hermite_sup(K) / sigma**K > 1.0:
            return K
    raise ValueError(f"no order up to k_max={k_max} exceeds 1 for sigma={sigma}")
