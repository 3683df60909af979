"""Chebyshev basis of thesis Chapter 2: φ_r(x) = Π_i cos(r_i arccos x_i) = Π_i T_{r_i}(x_i).

Index sets: ``T_t^d = {0, …, t−1}^d`` (Alg 4) and its first ``R`` elements ``T_R`` (Alg 9, step 2) in ascending total
degree ‖r‖₁. Within one degree dpkit fixes the **tie order** the thesis leaves open: descending lexicographic order
of r (``itertools.combinations_with_replacement`` of the coordinates), which for ``t = 2`` gives the thesis's own
example ``1, x_1, …, x_d, x_1x_2, …``. The enumeration is lazy, so ``T_R`` for d = 101 never touches T_t^d.

Evaluation: :func:`evaluate_basis` evaluates only the (coordinate, degree) pairs the index set needs, by the
three-term recurrence T_{j+1}(x) = 2x T_j(x) − T_{j−1}(x), in blocks of rows.
"""
from __future__ import annotations

from itertools import combinations_with_replacement
from typing import Iterator

import numpy as np

from dpkit.core.exceptions import FeasibilityError
from dpkit.core.validation import check_finite_array, check_int_in_range, check_positive_int

__all__ = ["basis_indices", "iter_basis_indices", "evaluate_basis", "basis_moments", "MAX_FULL_BASIS"]

#: Largest index set ``T_t^d`` that :func:`basis_indices` enumerates in full (``R=None``).
MAX_FULL_BASIS = 200_000


def iter_basis_indices(t: int, d: int) -> Iterator[tuple[int, ...]]:
    """Yield the index vectors of ``T_t^d`` in ascending ‖r‖₁ with the module's tie order."""
    t = check_positive_int(t, name="t")
    d = check_positive_int(d, name="d")
    for s in range(0, d * (t - 1) + 1):
        for combo in combinations_with_replacement(range(d), s):
            r = [0] * d
            ok = True
            for c in combo:
                r[c] += 1
                if r[c] > t - 1:
                    ok = False
                    break
            if ok:
                yield tuple(r)


def basis_indices(t: int, d: int, R: int | None = None) -> np.ndarray:
    """The index set ``T_R`` (first ``R`` elements of ``T_t^d`` by ascending ‖r‖₁).

    Parameters
    ----------
    t : int
        Degree bound per coordinate (r_i ∈ {0, …, t−1}); thesis Alg 4 step 1.
    d : int
        Dimension.
    R : int, optional
        Number of basis functions (Alg 9 step 2). ``None`` means all of ``T_t^d``
        (refused with :class:`~dpkit.core.exceptions.FeasibilityError` beyond
        :data:`MAX_FULL_BASIS` elements).

    Returns
    -------
    ndarray of int, shape (R, d)
        Row 0 is the constant function (r = 0). Order: see the module docstring.

    Raises
    ------
    ValueError
        If ``R > t^d`` (there are not that many basis functions) or ``R < 1``.
    """
    t = check_positive_int(t, name="t")
    d = check_positive_int(d, name="d")
    size = t**d  # Python int: exact even for d = 101
    if R is None:
        if size > MAX_FULL_BASIS:
            raise FeasibilityError(
                f"the full basis T_t^d has t^d = {t}^{d} = {size} elements, beyond the documented "
                f"limit MAX_FULL_BASIS = {MAX_FULL_BASIS}; pass R"
            )
        R = int(size)
    R = check_int_in_range(R, name="R", low=1)
    if R > size:
        raise ValueError(f"R must be in [1, t^d] = [1, {t}^{d} = {size}]; got R = {R}")
    out = np.zeros((R, d), dtype=np.int64)
    for i, r in enumerate(iter_basis_indices(t, d)):
        if i >= R:
            break
        out[i] = r
    return out


def _plan(indices: np.ndarray) -> tuple[list[tuple[int, int]], list[list[int]]]:
    """(coordinate, max degree) per used coordinate and, per basis function, its factor slots."""
    pairs: dict[tuple[int, int], int] = {}
    factors: list[list[int]] = []
    for r in indices:
        slots = []
        for c in np.flatnonzero(r):
            key = (int(c), int(r[c]))
            if key not in pairs:
                pairs[key] = len(pairs)
            slots.append(pairs[key])
        factors.append(slots)
    return list(pairs), factors


def _check_indices(indices: np.ndarray, d: int | None = None) -> np.ndarray:
    idx = np.asarray(indices)
    if idx.ndim != 2 or not np.issubdtype(idx.dtype, np.integer) or (idx.size and idx.min() < 0):
        raise ValueError("indices must be a 2-d array of non-negative integers (one index vector r per row)")
    if d is not None and idx.shape[1] != d:
        raise ValueError(f"indices have {idx.shape[1]} columns but the points have d = {d}")
    return idx


def _block_values(Xb: np.ndarray, pairs: list[tuple[int, int]], factors: list[list[int]]) -> np.ndarray:
    nb = Xb.shape[0]
    # Chebyshev values for every needed (coordinate, degree) pair, by the recurrence
    maxdeg: dict[int, int] = {}
    for c, k in pairs:
        maxdeg[c] = max(maxdeg.get(c, 0), k)
    P = np.empty((len(pairs), nb))
    where = {p: i for i, p in enumerate(pairs)}
    for c, kmax in maxdeg.items():
        x = Xb[:, c]
        tm1, t0 = np.ones(nb), x.copy()
        if (c, 1) in where:
            P[where[(c, 1)]] = t0
        for k in range(2, kmax + 1):
            tm1, t0 = t0, 2.0 * x * t0 - tm1
            if (c, k) in where:
                P[where[(c, k)]] = t0
    out = np.empty((nb, len(factors)))
    for j, slots in enumerate(factors):
        if not slots:
            out[:, j] = 1.0
        elif len(slots) == 1:
            out[:, j] = P[slots[0]]
        else:
            v = P[slots[0]] * P[slots[1]]
            for s in slots[2:]:
                v *= P[s]
            out[:, j] = v
    return out


def evaluate_basis(X: np.ndarray, indices: np.ndarray, *, block_rows: int = 32_768) -> np.ndarray:
    """Values φ_r(x) for every row x of ``X`` and every index vector r.

    Parameters
    ----------
    X : array, shape (n, d)
        Points in [-1, 1]^d (not checked here beyond finiteness; |T_k| ≤ 1 holds on [-1, 1]).
    indices : int array, shape (R, d)
        Index vectors (e.g. from :func:`basis_indices`).
    block_rows : int
        Rows per block (bounds the temporary memory).

    Returns
    -------
    ndarray, shape (n, R)
    """
    X = check_finite_array(X, name="X", ndim=2)
    idx = _check_indices(indices, X.shape[1])
    pairs, factors = _plan(idx)
    out = np.empty((X.shape[0], idx.shape[0]))
    for s in range(0, X.shape[0], block_rows):
        out[s : s + block_rows] = _block_values(X[s : s + block_rows], pairs, factors)
    return out


def basis_moments(X: np.ndarray, indices: np.ndarray, *, block_rows: int = 32_768) -> np.ndarray:
    """Moments b_r = (1/n) Σ_x φ_r(x) (thesis Alg 4 step 3 / Alg 9 step 3), shape (R,).

    Computed blockwise; never holds the full (n, R) matrix.
    """
    X = check_finite_array(X, name="X", ndim=2, min_rows=1)
    idx = _check_indices(indices, X.shape[1])
    pairs, factors = _plan(idx)
    acc = np.zeros(idx.shape[0])
    for s in range(0, X.shape[0], block_rows):
        acc += _block_values(X[s : s + block_rows], pairs, factors).sum(axis=0)
    return acc / X.shape[0]
