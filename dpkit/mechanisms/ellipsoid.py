"""Points in an ellipsoid (thesis Alg 8, ``ellrnd``), correct and as printed.

``method="uniform"`` (default): x = a ⊙ (g/‖g‖) · U^{1/k} with g ~ N(0, I_k): a uniform direction and the radius law
of the ball, carried to the ellipsoid by a linear map. ``method="thesis"``: the printed Beta(k, 1) radius (right) and
uniform hyperspherical angles, which are **[erratum]** not uniform directions for k ≥ 3; for k = 2, the thesis's case,
it is exactly uniform (docs/science/derivations.md, "Uniform sampling in an ellipsoid: the samplers").
"""
from __future__ import annotations

import numpy as np

from dpkit.core.rng import RNGLike, resolve_rng
from dpkit.core.validation import check_choice, check_finite_array, check_int_in_range

__all__ = ["sample_ellipsoid", "hyperspherical_to_cartesian"]


def hyperspherical_to_cartesian(r: np.ndarray, angles: np.ndarray) -> np.ndarray:
    """Inverse polar transform: radii (n,) and angles (n, k−1) → points (n, k)."""
    n, km1 = angles.shape
    k = km1 + 1
    out = np.empty((n, k))
    sin_prod = np.ones(n)
    for j in range(km1):
        out[:, j] = sin_prod * np.cos(angles[:, j])
        sin_prod = sin_prod * np.sin(angles[:, j])
    out[:, k - 1] = sin_prod
    return out * r[:, None]


def sample_ellipsoid(n: int, axes, *, rng: RNGLike = None, method: str = "uniform") -> np.ndarray:
    """``n`` points in the axis-aligned ellipsoid {x : Σ (x_i/a_i)² ≤ 1} (thesis Alg 8).

    Parameters
    ----------
    n : int
        Number of points (≥ 0).
    axes : array, shape (k,)
        Semi-axes a_i ≥ 0 (Alg 9 uses κ√λ̂ from the private PCA).
    rng : seed or Generator
    method : {"uniform", "thesis"}
        ``"uniform"``: correct uniform sampler (default). ``"thesis"``: the printed angle
        sampler, not uniform for k ≥ 3 (see module docstring).

    Returns
    -------
    ndarray, shape (n, k)
    """
    n = check_int_in_range(n, name="n", low=0)
    a = check_finite_array(axes, name="axes", ndim=1)
    if a.shape[0] < 1:
        raise ValueError("axes must have at least one entry (k ≥ 1)")
    if np.any(a < 0):
        raise ValueError("axes must be non-negative")
    method = check_choice(method, name="method", choices=("uniform", "thesis"))
    gen = resolve_rng(rng)
    k = a.shape[0]
    if method == "uniform":
        g = gen.standard_normal((n, k))
        norms = np.linalg.norm(g, axis=1, keepdims=True)
        norms[norms == 0] = 1.0  # probability 0; keeps the output finite
        r = gen.random(n) ** (1.0 / k)
        return a * (g / norms) * r[:, None]
    r = gen.beta(k, 1.0, size=n)
    if k == 1:
        sign = np.where(gen.random(n) < 0.5, -1.0, 1.0)
        return a * (r * sign)[:, None]
    angles = np.empty((n, k - 1))
    if k > 2:
        angles[:, : k - 2] = gen.uniform(0.0, np.pi, size=(n, k - 2))
    angles[:, k - 2] = gen.uniform(0.0, 2 * np.pi, size=n)
    return a * hyperspherical_to_cartesian(r, angles)
