"""Kernel-query pieces the methods share: per-point query values and the kernel-query sensitivity
(docs/science/baselines.md).

Sensitivity (replace-one, n public): a workload query (thesis (2.1)) moves by at most
``Δ_f ≤ (1/n) Σ_j α_j (1 − exp(−D_j²/(2σ²))) ≤ 1/n``, ``D_j`` the distance from its centre to the farthest corner of
the cube; the bound depends only on the public query (:func:`kernel_query_ranges`) and is attained for J = 1. The Q
answers have L1 sensitivity ≤ Σ_q Δ_q and L2 ≤ (Σ_q Δ_q²)^{1/2}. The derivation: docs/science/derivations.md.
"""
from __future__ import annotations

import numpy as np

__all__ = ["kernel_query_ranges", "kernel_values"]


def kernel_query_ranges(centres: np.ndarray, alphas: np.ndarray, sigma: float) -> np.ndarray:
    """Upper bounds on sup_X f − inf_X f for each kernel-mixture query (module docstring).

    Parameters
    ----------
    centres : array (Q, J, d)
    alphas : array (Q, J), rows on the simplex
    sigma : float

    Returns
    -------
    ndarray (Q,) with entries in (0, 1]; the replace-one sensitivity of q_f is this / n.
    """
    c = np.asarray(centres, dtype=float)
    a = np.asarray(alphas, dtype=float)
    D2 = np.sum((1.0 + np.abs(c)) ** 2, axis=-1)  # (Q, J) squared distance to the farthest corner
    r = np.sum(a * (-np.expm1(-D2 / (2.0 * float(sigma) ** 2))), axis=-1)
    return np.minimum(r, 1.0)


def kernel_values(points: np.ndarray, centres: np.ndarray, alphas: np.ndarray, sigma: float,
                  *, block_entries: int = 4_000_000) -> np.ndarray:
    """Matrix F[q, i] = f_q(points[i]) of kernel-mixture queries (Q, J, d)/(Q, J) on points (m, d).

    Used where a baseline needs the per-point values (MWEM's candidate matrix, SmallDB's query
    matrix), not just weighted sums (for those use :mod:`dpkit.queries.evaluate`). Queries are processed in
    blocks of about ``block_entries`` kernel values (memory ≈ 8·block_entries bytes).
    """
    P = np.asarray(points, dtype=float)
    C = np.asarray(centres, dtype=float)
    A = np.asarray(alphas, dtype=float)
    Q, J, d = C.shape
    m = P.shape[0]
    p2 = np.sum(P * P, axis=1)
    out = np.empty((Q, m))
    s2 = 2.0 * float(sigma) ** 2
    block = max(1, int(block_entries) // max(1, J * m))
    rows = min(block, Q) * J
    # two reused buffers for the element-wise steps of
    # exp(−max(‖c‖² + ‖p‖² − (2c)·p, 0)/s2): the same operations, in the same order, as the whole-array expression
    cross_buf, dist_buf = np.empty((rows, m)), np.empty((rows, m))
    for s in range(0, Q, block):
        Cb = C[s : s + block].reshape(-1, d)
        cross, K = cross_buf[: Cb.shape[0]], dist_buf[: Cb.shape[0]]
        np.matmul(2.0 * Cb, P.T, out=cross)
        np.add(np.sum(Cb * Cb, axis=1)[:, None], p2[None, :], out=K)
        np.subtract(K, cross, out=K)
        np.maximum(K, 0.0, out=K)
        np.negative(K, out=K)
        np.divide(K, s2, out=K)
        np.exp(K, out=K)
        out[s : s + block] = np.einsum("qj,qjm->qm", A[s : s + block], K.reshape(-1, J, m))
    return out
