"""Kernel-query pieces the methods share: per-point query values and the kernel-query sensitivity
(docs/science/baselines.md).

Kernel-mixture query sensitivity (replace-one, n public)
--------------------------------------------------------
A workload query (thesis (2.1)) is f(x) = Σ_j α_j exp(−‖x − z_j‖²/(2σ²)) with α on the simplex,
and q_f(D) = (1/n) Σ_{x∈D} f(x). Replacing one row x by x' moves q_f by (f(x) − f(x'))/n, so the
exact sensitivity is Δ_f = (sup_X f − inf_X f)/n over X = [-1, 1]^d. Each kernel is maximal (= 1)
at its centre z_j ∈ X and minimal at the cube corner farthest from z_j, which lies at squared
distance D_j² = Σ_i (1 + |z_ji|)², so 1 ≥ exp(−‖x − z_j‖²/(2σ²)) ≥ exp(−D_j²/(2σ²)) on X. Hence

    Δ_f ≤ (1/n) Σ_j α_j (1 − exp(−D_j²/(2σ²)))  ≤  1/n,

a bound that depends only on the public query (:func:`kernel_query_ranges`). It is attained for
J = 1 (f(z_1) = 1, f(far corner) = e^{−D²/(2σ²)}) and is never larger than the generic 1/n of
D–R Ch. 4 (f ∈ [0, 1]); the gain matters at large σ and small d (σ = 10, d = 8:
Δ ≈ 0.4/n). ``sensitivity="unit"`` on the direct-answering baseline uses the generic 1/n.
For the vector of Q answers: L1 sensitivity ≤ Σ_q Δ_q, L2 ≤ (Σ_q Δ_q²)^{1/2} (one row changes;
each coordinate moves by at most its own Δ_q).
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
