"""Exact arithmetic on finite unions of closed real intervals (the 1-D level-set mechanism,
docs/science/linear_queries.md).

A union is an ``(m, 2)`` float array of rows ``[start, end]``; a normalised one is sorted, disjoint and non-touching.
Zero-length intervals are kept (Algorithm 1's ``I_0 = {0}``, a counting query's ``V = {1}``). Every function takes an
absolute tolerance ``tol`` (gaps and slivers of length ``<= tol`` are closed or dropped).
"""
from __future__ import annotations

from typing import Any

import numpy as np

__all__ = [
    "EMPTY",
    "as_union",
    "merge",
    "negate",
    "symmetric_closure",
    "minkowski_sum",
    "intersection",
    "difference",
    "union",
    "measure",
    "abs_integral",
    "hull",
    "contains",
    "equal",
]

EMPTY = np.empty((0, 2), dtype=float)


def as_union(intervals: Any, *, name: str = "intervals", allow_empty: bool = True) -> np.ndarray:
    """Validate and normalise a union of closed intervals.

    Parameters
    ----------
    intervals : array_like
        ``[[s0, e0], [s1, e1], ...]``; a single pair ``[s, e]`` or a bare number ``v``
        (the point ``[v, v]``) is accepted too.
    name : str
        Name used in error messages.
    allow_empty : bool
        Whether the empty union is admissible.

    Returns
    -------
    numpy.ndarray
        The merged ``(m, 2)`` union (zero-length rows kept).

    Raises
    ------
    TypeError
        If the input is not numeric.
    ValueError
        If a row has ``start > end``, an endpoint is not finite, the shape is not
        ``(m, 2)``, or the union is empty and ``allow_empty`` is False.
    """
    try:
        arr = np.asarray(intervals, dtype=float)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{name} must be a numeric array of [start, end] pairs; {exc}") from None
    if arr.ndim == 0:
        arr = np.array([[float(arr), float(arr)]])
    elif arr.ndim == 1 and arr.size == 2:
        arr = arr.reshape(1, 2)
    elif arr.ndim == 1 and arr.size == 0:
        arr = EMPTY.copy()
    if arr.ndim != 2 or arr.shape[1] != 2:
        raise ValueError(f"{name} must be a list of [start, end] pairs (shape (m, 2)); got shape {arr.shape}")
    if arr.size and not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must have finite endpoints; got {arr[~np.isfinite(arr).all(axis=1)].tolist()}")
    bad = arr[:, 0] > arr[:, 1]
    if np.any(bad):
        raise ValueError(f"{name}: every interval needs start <= end; got {arr[bad].tolist()}")
    if arr.shape[0] == 0 and not allow_empty:
        raise ValueError(f"{name} must contain at least one interval; got an empty union")
    return merge(arr)


def merge(iv: np.ndarray, tol: float = 0.0) -> np.ndarray:
    """Sort and merge overlapping or touching intervals (gaps ``<= tol`` are closed).

    Zero-length rows survive unless they lie inside (or within ``tol`` of) another row.
    """
    iv = np.asarray(iv, dtype=float).reshape(-1, 2)
    if iv.shape[0] <= 1:
        return iv.copy()
    order = np.argsort(iv[:, 0], kind="stable")  # ties need no order: ends are max-accumulated
    s = iv[order, 0]
    e = iv[order, 1]
    run_end = np.maximum.accumulate(e)
    # a new block starts where the start exceeds every earlier end by more than tol
    new = np.empty(s.shape[0], dtype=bool)
    new[0] = True
    new[1:] = s[1:] > run_end[:-1] + tol
    idx = np.flatnonzero(new)
    starts = s[idx]
    ends = np.maximum.reduceat(e, idx)
    return np.column_stack([starts, ends])


def negate(iv: np.ndarray) -> np.ndarray:
    """``−A = {−x : x ∈ A}`` (normalised)."""
    iv = np.asarray(iv, dtype=float).reshape(-1, 2)
    return iv[::-1, ::-1] * -1.0


def symmetric_closure(V: np.ndarray, tol: float = 0.0) -> np.ndarray:
    """``W = V ∪ (−V)``, the set of shifts ``f(x') − f(x)`` between add/remove neighbours ([3, §2])."""
    V = np.asarray(V, dtype=float).reshape(-1, 2)
    return merge(np.vstack([V, negate(V)]), tol)


def minkowski_sum(A: np.ndarray, B: np.ndarray, tol: float = 0.0) -> np.ndarray:
    """``A ⊕ B = {a + b}``: all pairwise sums ``[a_s + b_s, a_e + b_e]``, merged."""
    A = np.asarray(A, dtype=float).reshape(-1, 2)
    B = np.asarray(B, dtype=float).reshape(-1, 2)
    if A.shape[0] == 0 or B.shape[0] == 0:
        return EMPTY.copy()
    s = (A[:, None, 0] + B[None, :, 0]).ravel()
    e = (A[:, None, 1] + B[None, :, 1]).ravel()
    return merge(np.column_stack([s, e]), tol)


def union(*unions: np.ndarray, tol: float = 0.0) -> np.ndarray:
    """Union of several unions (normalised)."""
    parts = [np.asarray(u, dtype=float).reshape(-1, 2) for u in unions]
    return merge(np.vstack(parts) if parts else EMPTY, tol)


def _pairs(a_lo: np.ndarray, a_hi: np.ndarray, b_lo: np.ndarray, b_hi: np.ndarray, strict: bool):
    """Index pairs (i, j) of sorted disjoint rows that may intersect.

    For closed A and B (``strict=False``) row j of B meets row i of A iff
    ``b_lo[j] <= a_hi[i]`` and ``b_hi[j] >= a_lo[i]``; with ``strict=True`` (B open) the
    inequalities are strict.
    """
    if strict:
        j0 = np.searchsorted(b_hi, a_lo, side="right")
        j1 = np.searchsorted(b_lo, a_hi, side="left")
    else:
        j0 = np.searchsorted(b_hi, a_lo, side="left")
        j1 = np.searchsorted(b_lo, a_hi, side="right")
    cnt = np.maximum(j1 - j0, 0)
    i = np.repeat(np.arange(a_lo.shape[0]), cnt)
    offs = np.arange(cnt.sum()) - np.repeat(np.cumsum(cnt) - cnt, cnt)
    j = np.repeat(j0, cnt) + offs
    return i, j


def intersection(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """``A ∩ B`` of two normalised unions of closed intervals (points kept)."""
    A = np.asarray(A, dtype=float).reshape(-1, 2)
    B = np.asarray(B, dtype=float).reshape(-1, 2)
    if A.shape[0] == 0 or B.shape[0] == 0:
        return EMPTY.copy()
    i, j = _pairs(A[:, 0], A[:, 1], B[:, 0], B[:, 1], strict=False)
    lo = np.maximum(A[i, 0], B[j, 0])
    hi = np.minimum(A[i, 1], B[j, 1])
    keep = lo <= hi
    return merge(np.column_stack([lo[keep], hi[keep]]))


def difference(A: np.ndarray, B: np.ndarray, tol: float = 0.0) -> np.ndarray:
    """``A ∖ B`` for normalised unions, returned as closed intervals (same measure).

    ``A ∖ B`` is ``A`` intersected with the *open* gaps of ``B``. A resulting piece of
    length ``<= tol`` is dropped unless it is a zero-length row of ``A`` lying strictly
    inside a gap of ``B`` (a genuine point of ``A ∖ B``).
    """
    A = np.asarray(A, dtype=float).reshape(-1, 2)
    B = np.asarray(B, dtype=float).reshape(-1, 2)
    if A.shape[0] == 0 or B.shape[0] == 0:
        return A.copy()
    g_lo = np.concatenate([[-np.inf], B[:, 1]])
    g_hi = np.concatenate([B[:, 0], [np.inf]])
    i, j = _pairs(A[:, 0], A[:, 1], g_lo, g_hi, strict=True)
    lo = np.maximum(A[i, 0], g_lo[j])
    hi = np.minimum(A[i, 1], g_hi[j])
    length = hi - lo
    point_of_a = (A[i, 0] == A[i, 1]) & (g_lo[j] + tol < A[i, 0]) & (A[i, 0] < g_hi[j] - tol)
    keep = (length > tol) | point_of_a
    return np.column_stack([lo[keep], hi[keep]])


def measure(A: np.ndarray) -> float:
    """Lebesgue measure ``μ(A)`` of a normalised union."""
    A = np.asarray(A, dtype=float).reshape(-1, 2)
    return float(np.sum(A[:, 1] - A[:, 0]))


def abs_integral(A: np.ndarray) -> float:
    """``∫_A |r| dr`` of a normalised union (the per-shell ``a_i`` of [3, §3] for n = 1, p = 1)."""
    A = np.asarray(A, dtype=float).reshape(-1, 2)
    s, e = A[:, 0], A[:, 1]
    # ∫_s^e |r| dr = (sign(e) e² − sign(s) s²)/2
    return float(np.sum(np.sign(e) * e * e - np.sign(s) * s * s) / 2.0)


def hull(A: np.ndarray) -> np.ndarray:
    """Smallest interval containing ``A`` (as a one-row union; empty for empty ``A``)."""
    A = np.asarray(A, dtype=float).reshape(-1, 2)
    if A.shape[0] == 0:
        return EMPTY.copy()
    return np.array([[A[:, 0].min(), A[:, 1].max()]])


def contains(A: np.ndarray, x: Any) -> np.ndarray:
    """Boolean array: ``x ∈ A`` (closed intervals) for a normalised union ``A``."""
    A = np.asarray(A, dtype=float).reshape(-1, 2)
    x = np.asarray(x, dtype=float)
    if A.shape[0] == 0:
        return np.zeros(x.shape, dtype=bool)
    k = np.searchsorted(A[:, 0], x, side="right") - 1
    ok = k >= 0
    kk = np.clip(k, 0, None)
    return ok & (x <= A[kk, 1])


def equal(A: np.ndarray, B: np.ndarray, tol: float = 0.0) -> bool:
    """Whether two normalised unions have the same rows up to ``tol``."""
    A = np.asarray(A, dtype=float).reshape(-1, 2)
    B = np.asarray(B, dtype=float).reshape(-1, 2)
    return A.shape == B.shape and bool(np.all(np.abs(A - B) <= tol))

