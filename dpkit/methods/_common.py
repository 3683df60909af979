"""Shared pieces of the baselines: the result record, ledgers, budget checks and the kernel-query
sensitivity (dwork-roth.md §4.3).

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
dwork-roth.md §4.3 (f ∈ [0, 1]); the gain matters at large σ and small d (σ = 10, d = 8:
Δ ≈ 0.4/n). ``sensitivity="unit"`` on the direct-answering baseline uses the generic 1/n.
For the vector of Q answers: L1 sensitivity ≤ Σ_q Δ_q, L2 ≤ (Σ_q Δ_q²)^{1/2} (one row changes;
each coordinate moves by at most its own Δ_q).
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dpkit.core.accounting import ledger_for  # noqa: F401  (re-exported for the baselines)

__all__ = [
    "BaselineResult",
    "ledger_for",
    "kernel_query_ranges",
    "kernel_values",
    "Timer",
]


@dataclass(frozen=True, eq=False)
class BaselineResult:
    """What a baseline returns.

    Attributes
    ----------
    method : str
        Short name of the baseline.
    synthetic : WeightedDatabase or None
        The synthetic database (distinct points with weights) for synthetic-data baselines.
    answers : ndarray or None
        Released answers to the workload (direct answering only).
    params : dict
        The baseline's parameters, noise scales and sensitivities.
    ledger : dict
        :meth:`dpkit.core.accounting.Ledger.to_dict` after the run.
    timings : dict
        Seconds per stage and ``"total"``.
    extra : dict
        Released intermediate quantities (noisy mean, covariance, …) for audits and diagnostics.
    """

    method: str
    synthetic: Any = None
    answers: np.ndarray | None = None
    params: dict = field(default_factory=dict)
    ledger: dict = field(default_factory=dict)
    timings: dict = field(default_factory=dict)
    extra: dict = field(default_factory=dict)


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
    p2 = np.sum(P * P, axis=1)
    out = np.empty((Q, P.shape[0]))
    s2 = 2.0 * float(sigma) ** 2
    block = max(1, int(block_entries) // max(1, J * P.shape[0]))
    for s in range(0, Q, block):
        Cb = C[s : s + block].reshape(-1, d)
        dist2 = np.maximum(np.sum(Cb * Cb, axis=1)[:, None] + p2[None, :] - 2.0 * Cb @ P.T, 0.0)
        K = np.exp(-dist2 / s2).reshape(-1, J, P.shape[0])
        out[s : s + block] = np.einsum("qj,qjm->qm", A[s : s + block], K)
    return out


class Timer:
    """Collects stage timings: ``with timer("stage"): ...``; ``timer.done()`` adds ``"total"``."""

    def __init__(self) -> None:
        self.t0 = time.perf_counter()
        self.timings: dict[str, float] = {}
        self._stage: str | None = None
        self._ts = 0.0

    def __call__(self, stage: str) -> "Timer":
        self._stage = stage
        return self

    def __enter__(self) -> "Timer":
        self._ts = time.perf_counter()
        return self

    def __exit__(self, *exc: Any) -> None:
        assert self._stage is not None
        self.timings[self._stage] = self.timings.get(self._stage, 0.0) + time.perf_counter() - self._ts

    def done(self) -> dict[str, float]:
        self.timings["total"] = time.perf_counter() - self.t0
        return dict(self.timings)


#: Below this many kernel evaluations (rows × Q × J) answers are computed directly with
#: :func:`kernel_values` — the fast evaluator's thread-pool set-up (~10 ms) dominates there.
SMALL_EVALUATION = 200_000


def _small(workload: Any, m: int) -> bool:
    return m * int(np.asarray(workload.alphas).size) <= SMALL_EVALUATION


def answer_on_data(workload: Any, X: np.ndarray) -> np.ndarray:
    """q_f(D) for every query (:func:`dpkit.queries.evaluate.answer_data`; direct formula for tiny inputs)."""
    from dpkit.queries.evaluate import answer_data

    if _small(workload, X.shape[0]):
        return kernel_values(X, workload.centres, workload.alphas, workload.sigma).mean(axis=1)
    return np.asarray(answer_data(workload, X), dtype=float)


def answer_on_synthetic(workload: Any, synthetic: Any) -> np.ndarray:
    """q_f(D̂) = Σ_j w_j f(p_j) for a weighted synthetic database (:func:`dpkit.queries.evaluate.answer_synthetic`)."""
    P, w = np.asarray(synthetic.points), np.asarray(synthetic.weights)
    from dpkit.queries.evaluate import answer_synthetic

    if _small(workload, P.shape[0]):
        return kernel_values(P, workload.centres, workload.alphas, workload.sigma) @ w
    return np.asarray(answer_synthetic(workload, P, w),
                      dtype=float)
