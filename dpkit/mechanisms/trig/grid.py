"""The cell-centre grid A and the value lattice L of thesis Chapter 2.

A = {(2k + 1 − N)/N : k = 0, …, N−1}, the centres of N equal cells of [-1, 1]; discretising takes the centre of the
cell containing z (boundary points to the upper cell). The value lattice L = {i/L} only makes the LP finitely
encodable; :func:`lattice_round` is optional everywhere.
"""
from __future__ import annotations

import numpy as np

from dpkit.core.validation import check_finite_array, check_positive_int

__all__ = ["grid_points", "discretise_indices", "discretise", "lattice_round"]


def grid_points(N: int) -> np.ndarray:
    """The N cell centres a_k = (2k + 1 − N)/N, ascending, shape (N,)."""
    N = check_positive_int(N, name="N")
    return (2.0 * np.arange(N) + 1.0 - N) / N


def discretise_indices(X: np.ndarray, N: int) -> np.ndarray:
    """Cell index k ∈ {0, …, N−1} of every entry of ``X`` (values outside [-1, 1] are clipped)."""
    N = check_positive_int(N, name="N")
    X = check_finite_array(X, name="X")
    k = np.floor((np.clip(X, -1.0, 1.0) + 1.0) * (N / 2.0))
    return np.clip(k, 0, N - 1).astype(np.int64)


def discretise(X: np.ndarray, N: int) -> np.ndarray:
    """``X`` with every entry moved to the nearest grid value of A (same shape, float64)."""
    N = check_positive_int(N, name="N")
    k = discretise_indices(X, N)
    return (2.0 * k + 1.0 - N) / N


def lattice_round(V: np.ndarray, L: int) -> np.ndarray:
    """Round entries to the nearest element of the lattice {i/L : i = −L, …, L} (clipped to [-1, 1])."""
    L = check_positive_int(L, name="L")
    V = check_finite_array(V, name="V")
    return np.clip(np.rint(V * L), -L, L) / L
