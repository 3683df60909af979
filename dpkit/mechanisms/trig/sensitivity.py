"""Exact replace-one sensitivities of the trigonometric moments (thesis Alg 4 step 4, Alg 9 step 3).

:func:`moment_sensitivity` is used by the calibration (:func:`dpkit.mechanisms.trig.moments.grid_sensitivity`)
and by the privacy checks (:mod:`dpkit.mechanisms.trig.privacy`, notebooks 55 and 58).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dpkit.core.validation import check_finite_array, check_positive_int
from dpkit.mechanisms.trig.basis import evaluate_basis

__all__ = ["MomentSensitivity", "moment_sensitivity"]


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
