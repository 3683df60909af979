"""Float64 Gaussian-kernel blocks and sums with tight, proven relative error bounds.

The low-rank path (:mod:`dpkit.queries.lowrank`) certifies its answers with ``‖m_D‖²`` and the kernel means at
landmarks, which must be known to ~10⁻¹⁴ absolute; here every sum is an explicit pairwise tree:

1. Kernel values in the engine's GEMM form (:func:`~dpkit.queries.gemm.augmented_rows`), clamped and exponentiated in
   float64, each with relative error at most :func:`kernel_value_bound`.
2. Terms summed along a binary tree inside each tile (:func:`pairwise_rowsum`), the tile sums along a second tree;
   all terms are non-negative, so every sum's relative error is ``≤ (1 + ρ_k)(1 + γ_2)(1 + γ_h) − 1``.

The derivation: ``docs/science/derivations.md``.

References
----------
N. J. Higham, *Accuracy and Stability of Numerical Algorithms*, 2nd ed., SIAM 2002 (Sec 3.1,
Thm 3.5; Sec 4.2, pairwise summation).
"""
from __future__ import annotations

import math
from typing import Callable

import numpy as np

from dpkit.queries.gemm import augmented_rows, run_blocks, usable_cores
from dpkit.queries.rounding import UNIT_ROUNDOFF_F64, gamma

__all__ = [
    "EXP_ULP_F64",
    "EVAL_SLACK",
    "Augmented",
    "compound",
    "kernel_value_bound",
    "kernel_block",
    "pairwise_rowsum",
    "weighted_kernel_sums",
    "kernel_mean_norm_sq",
]

#: Assumed maximal error of numpy's float64 ``exp`` in ulp (the engine's float64 bound assumes the
#: same; ``tests/test_lowrank.py`` measures it against long double).
EXP_ULP_F64 = 4.0
#: Relative slack for evaluating a bound formula itself (a few float64 operations on
#: non-negative terms, relative error ≤ 10 u ≈ 10⁻¹⁵ ≪ this).
EVAL_SLACK = 1e-12
_TILE = 2048
_BLOCK = 128


def compound(*rhos: float) -> float:
    """An upper bound on ``Π(1 + ρ_i) − 1`` for ``ρ_i ≥ 0``: ``S·e^S`` with ``S = Σ ρ_i`` (no cancellation)."""
    S = math.fsum(rhos)
    return S * math.exp(S) * (1.0 + EVAL_SLACK)


def kernel_value_bound(d: int, sigma: float, max_norm_a: float, max_norm_b: float) -> float:
    """Relative error bound ``ρ_k`` of every float64 kernel value of :func:`kernel_block` (module docs)."""
    s = 1.0 / (2.0 * sigma * sigma)
    X = s * (max_norm_a + max_norm_b) ** 2
    if X > 700.0:
        raise ValueError(
            f"exponents down to −{X:.4g} would underflow float64 exp (σ = {sigma:g} too small for these norms); "
            "the low-rank path needs s(‖p‖ + ‖c‖)² ≤ 700"
        )
    delta = gamma(2 * d + 8, UNIT_ROUNDOFF_F64) * X
    return compound(math.expm1(delta), 2.0 * EXP_ULP_F64 * UNIT_ROUNDOFF_F64)


class Augmented:
    """Rows of one point set in both GEMM roles: ``a = [p, ‖p‖², 0, 1]`` and ``b = [2s p, −s, 1, −s‖p‖²]``.

    ``kernel_block(X.b[rows], Y.a[cols])`` gives ``exp(−s‖x − y‖²)``; ``max_norm`` feeds
    :func:`kernel_value_bound`.
    """

    def __init__(self, P: np.ndarray, sigma: float) -> None:
        P = np.ascontiguousarray(P, dtype=np.float64)
        self.s = 1.0 / (2.0 * sigma * sigma)
        sq = np.einsum("ij,ij->i", P, P)
        self.a, self.b = augmented_rows(P, sq, np.zeros(P.shape[0]), P, sq, self.s, np.float64)
        self.max_norm = float(np.sqrt(sq.max())) if P.shape[0] else 0.0
        self.n, self.d = P.shape


def kernel_block(b_rows: np.ndarray, a_rows: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """``exp(min(b_rows @ a_rowsᵀ, 0))`` in float64: the (rows × cols) kernel block (in ``out`` if given)."""
    E = np.matmul(b_rows, a_rows.T, out=out)
    np.minimum(E, 0.0, out=E)
    np.exp(E, out=E)
    return E


def pairwise_rowsum(E: np.ndarray) -> tuple[np.ndarray, int]:
    """Row sums of ``E`` (modified in place) along a binary tree; returns ``(sums, tree height)``.

    Each level adds the upper half of the live columns onto the lower half, so every term
    takes part in at most ``⌈log₂ L⌉`` additions (the returned height).
    """
    L = E.shape[1]
    height = 0
    while L > 1:
        h = L // 2
        E[:, :h] += E[:, L - h : L]
        L -= h
        height += 1
    return E[:, 0].copy(), height


def _row_sums(b_rows: np.ndarray, a_cols: np.ndarray, w: np.ndarray) -> tuple[np.ndarray, int]:
    """``Σ_j w_j k(x_i, p_j)`` for a block of rows; tiles of ``_TILE`` columns, two pairwise trees."""
    n = a_cols.shape[0]
    if n == 0:
        return np.zeros(b_rows.shape[0]), 0
    tiles = range(0, n, _TILE)
    T = np.empty((b_rows.shape[0], len(tiles)))
    buf = np.empty((b_rows.shape[0], min(_TILE, n)))
    h1 = 0
    for t, j0 in enumerate(tiles):
        j1 = min(j0 + _TILE, n)
        E = kernel_block(b_rows, a_cols[j0:j1], out=buf[:, : j1 - j0])
        E *= w[j0:j1]
        T[:, t], h = pairwise_rowsum(E)
        h1 = max(h1, h)
    sums, h2 = pairwise_rowsum(T)
    return sums, h1 + h2


def _threaded(n_rows: int, work: Callable[[int, int], int], n_threads: int | None) -> int:
    """Run ``work(i0, i1)`` over row blocks in threads; returns the largest tree height reported."""
    starts = list(range(0, n_rows, _BLOCK))
    heights = [0] * len(starts)
    threads = usable_cores() if n_threads is None else n_threads

    def task(i0: int) -> None:
        heights[i0 // _BLOCK] = work(i0, min(i0 + _BLOCK, n_rows))

    run_blocks(task, starts, max(1, min(threads, len(starts))))
    return max(heights, default=0)


def weighted_kernel_sums(
    rows: Augmented, cols: Augmented, w: np.ndarray, sigma: float, *, n_threads: int | None = None
) -> tuple[np.ndarray, float]:
    """``Σ_j w_j k(x_i, p_j)`` for every row ``x_i`` of ``rows`` (float64) and its relative error bound.

    ``w`` must be non-negative. The bound holds for every entry (module docs).
    """
    out = np.empty(rows.n)

    def work(i0: int, i1: int) -> int:
        out[i0:i1], h = _row_sums(rows.b[i0:i1], cols.a, w)
        return h

    height = _threaded(rows.n, work, n_threads)
    rho_k = kernel_value_bound(rows.a.shape[1] - 3, sigma, rows.max_norm, cols.max_norm)
    return out, compound(rho_k, gamma(2 + height, UNIT_ROUNDOFF_F64))


def kernel_mean_norm_sq(pts: Augmented, w: np.ndarray, sigma: float, *, n_threads: int | None = None) -> tuple[float, float]:
    """``‖m_D‖² = Σ_ij w_i w_j k(p_i, p_j)`` and its relative error bound, using the symmetry.

    Row block ``a`` contributes ``Σ_{i∈a} w_i (Σ_{j∈a} w_j k_ij + 2 Σ_{j after a} w_j k_ij)``
    (half the kernel evaluations); the per-row terms (all ≥ 0) are summed with ``math.fsum``
    (correctly rounded). Relative error ≤ ``compound(ρ_sum, γ_2)`` with ``ρ_sum`` of
    :func:`weighted_kernel_sums`.
    """
    contrib = np.empty(pts.n)

    def work(i0: int, i1: int) -> int:
        diag, h1 = _row_sums(pts.b[i0:i1], pts.a[i0:i1], w[i0:i1])
        after, h2 = _row_sums(pts.b[i0:i1], pts.a[i1:], w[i1:])
        contrib[i0:i1] = w[i0:i1] * (diag + 2.0 * after)
        return max(h1, h2)

    height = _threaded(pts.n, work, n_threads)
    rho_k = kernel_value_bound(pts.a.shape[1] - 3, sigma, pts.max_norm, pts.max_norm)
    return math.fsum(contrib), compound(rho_k, gamma(6 + height, UNIT_ROUNDOFF_F64))
