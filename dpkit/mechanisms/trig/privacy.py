"""Exact privacy quantities of the moment release (thesis Alg 4 step 4, Alg 9 step 3).

* :func:`moment_sensitivity` — the exact L1 and L2 sensitivities of the non-constant moments
  ``b_r = (1/n) Σ_x φ_r(x)`` under replace-one neighbours whose changed row ranges over a given
  finite point set (all grid points of A^d for Alg 4, the grid corners for Alg 9). With Laplace
  noise of scale ``b`` the worst-case privacy loss of the release is exactly ``l1 / b`` (attained),
  so comparing it with ε checks the noise constants of :func:`~dpkit.mechanisms.trig.mechanisms.moment_noise`
  without any bound (notebooks 55 and 58).
* :func:`moment_privacy_loss` — the privacy-loss random variable ``ln(p_{b0}(ŷ)/p_{b1}(ŷ))`` of
  one release ``ŷ`` of :func:`~dpkit.mechanisms.trig.mechanisms.release_moments`, the statistic the
  auditor (:func:`dpkit.evaluation.audit.audit`) thresholds: for Laplace noise it lies in
  ``[−‖b0 − b1‖₁/b, ‖b0 − b1‖₁/b]`` and its upper tail is where ε-DP is tight.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dpkit.core.validation import check_finite_array, check_positive_int
from dpkit.mechanisms.trig.basis import evaluate_basis
from dpkit.mechanisms.trig.mechanisms import MomentNoise

__all__ = ["MomentSensitivity", "moment_sensitivity", "moment_privacy_loss"]


@dataclass(frozen=True, eq=False)
class MomentSensitivity:
    """Exact sensitivities of the non-constant moments over all pairs of candidate rows.

    l1, l2 : float
        ``max_{x, x'} ‖φ(x) − φ(x')‖₁ / n`` and ``‖φ(x) − φ(x')‖₂ / n`` (constant moment excluded).
    worst_l1_shift : ndarray (R − 1,)
        ``|φ(x) − φ(x')| / n`` for the first pair (row-major over ``points × points``) attaining ``l1``.
    """

    l1: float
    l2: float
    worst_l1_shift: np.ndarray


def moment_sensitivity(points: np.ndarray, indices: np.ndarray, n: int) -> MomentSensitivity:
    """Exact replace-one sensitivities of the moments ``b_r = (1/n) Σ φ_r(x)``, r ≠ 0.

    Replacing one row ``x`` of a data set of ``n`` rows by ``x'`` moves the moment vector by
    ``(φ(x') − φ(x))/n``; the maximum over all pairs of ``points`` is the exact sensitivity when
    every row lies in ``points`` (thesis Alg 4: the grid A^d; the corners of [-1, 1]^d for the
    multilinear basis of Alg 9, where every |φ_r| = 1 is attained). Cost ``O(P² R)`` for ``P``
    points, one row of pairs at a time (memory ``O(P R)``).

    Parameters
    ----------
    points : array (P, d)
        The rows a data set may hold (already discretised).
    indices : int array (R, d)
        Basis index vectors; the first must be the constant ``(0, …, 0)``, which gets no noise.
    n : int
        Rows of the data set.
    """
    P = check_finite_array(points, name="points", ndim=2, min_rows=1)
    n = check_positive_int(n, name="n")
    idx = np.asarray(indices)
    if idx.ndim != 2 or idx.shape[0] < 2 or np.any(idx[0] != 0):
        raise ValueError(f"indices must be an (R, d) array with R >= 2 whose first row is the constant index 0; got {idx.shape}")
    phi = evaluate_basis(P, idx)[:, 1:]
    l1 = l2 = -np.inf
    worst = (0, 0)
    for i in range(phi.shape[0]):
        diff = phi[i][None, :] - phi
        row_l1 = np.abs(diff).sum(axis=1)
        j = int(np.argmax(row_l1))
        if row_l1[j] > l1:
            l1, worst = float(row_l1[j]), (i, j)
        l2 = max(l2, float(np.linalg.norm(diff, axis=1).max()))
    shift = np.abs(phi[worst[0]] - phi[worst[1]]) / n
    return MomentSensitivity(l1=l1 / n, l2=l2 / n, worst_l1_shift=shift)


def moment_privacy_loss(release: np.ndarray, b0: np.ndarray, b1: np.ndarray, noise: MomentNoise) -> np.ndarray:
    """Privacy loss ``ln(p_{b0}(ŷ) / p_{b1}(ŷ))`` of releases ``ŷ = b + noise`` of true moments ``b0`` vs ``b1``.

    Parameters
    ----------
    release : array (..., R)
        Outputs of :func:`~dpkit.mechanisms.trig.mechanisms.release_moments` (the constant
        coordinate 0 carries no noise and is ignored).
    b0, b1 : array (R,)
        The true moment vectors of two neighbouring data sets.
    noise : MomentNoise
        The noise the release used: Laplace of scale ``b`` gives
        ``Σ_r (|ŷ_r − b1_r| − |ŷ_r − b0_r|) / b``; Gaussian of standard deviation ``σ`` gives
        ``Σ_r ((ŷ_r − b1_r)² − (ŷ_r − b0_r)²) / (2σ²)``.

    Returns
    -------
    ndarray of shape ``release.shape[:-1]``.
    """
    if not noise.scale > 0:
        raise ValueError(f"noise.scale must be > 0 (a noiseless release has no finite privacy loss); got {noise.scale}")
    y = np.asarray(release, dtype=float)[..., 1:]
    c0, c1 = np.asarray(b0, dtype=float)[1:], np.asarray(b1, dtype=float)[1:]
    if y.shape[-1] != c0.shape[0] or c0.shape != c1.shape:
        raise ValueError(f"release (..., R), b0 and b1 (R,) must agree in R; got {release.shape}, {np.shape(b0)}, {np.shape(b1)}")
    if noise.kind == "laplace":
        return (np.abs(y - c1) - np.abs(y - c0)).sum(axis=-1) / noise.scale
    return ((y - c1) ** 2 - (y - c0) ** 2).sum(axis=-1) / (2.0 * noise.scale**2)
