"""Exact-up-to-a-proven-bound answers of the Gaussian-kernel workload (2.1) and worst-case errors.

A query's answer on a weighted point set is ``q_f = Σ_j α_j k(c_j)`` with the kernel mean ``k(c)`` (``w_i = 1/n`` for
data, thesis Sec 3.1). :func:`~dpkit.queries.gemm.kernel_sums` evaluates ``k`` at all ``Q·J`` centres once and the
answers are one contraction with ``α``, each with the a-priori relative bound of :mod:`dpkit.queries.rounding`; the
worst absolute and relative errors are the tables' metric. The low-rank path is
:func:`dpkit.queries.exact.exact_answers`.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dpkit.core.threads import limit_threads
from dpkit.core.validation import check_finite_array, check_positive_int
from dpkit.queries.gemm import kernel_sums
from dpkit.queries.workload import GaussianKernelWorkload

__all__ = [
    "answer_weighted",
    "answer_data",
    "answer_synthetic",
    "answer_reference",
    "worst_case_errors",
    "relative_errors",
    "WorstCaseErrors",
    "kernel_evals_per_second",
]

_WEIGHT_SUM_TOL = 1e-6


# ---------------------------------------------------------------------------------------------
# answers
# ---------------------------------------------------------------------------------------------
def _check_workload(workload: Any) -> GaussianKernelWorkload:
    if not isinstance(workload, GaussianKernelWorkload):
        raise TypeError(f"workload must be a GaussianKernelWorkload; got {type(workload).__name__}")
    return workload


def _check_points(x: Any, workload: GaussianKernelWorkload, name: str) -> np.ndarray:
    P = check_finite_array(x, name=name, ndim=2, min_rows=1)
    if P.shape[1] != workload.d:
        raise ValueError(f"{name} must have d = {workload.d} columns (the workload's dimension); got shape {P.shape}")
    return P


def _check_distribution(weights: Any, n: int, name: str = "weights") -> np.ndarray:
    w = check_finite_array(weights, name=name, ndim=1)
    if w.shape[0] != n:
        raise ValueError(f"{name} has {w.shape[0]} entries but there are {n} points")
    if np.any(w < 0):
        raise ValueError(f"{name} must be non-negative")
    tot = float(w.sum())
    if abs(tot - 1.0) > _WEIGHT_SUM_TOL:
        raise ValueError(f"{name} must sum to 1 (a distribution, tolerance {_WEIGHT_SUM_TOL:g}); they sum to {tot:.12g}")
    return w


def answer_weighted(
    workload: GaussianKernelWorkload, points: Any, weights: Any, *, return_info: bool = False, **options: Any
) -> np.ndarray | tuple[np.ndarray, dict[str, Any]]:
    """``q_f = Σ_i w_i f(p_i)`` for every query, via kernel means at all ``Q·J`` centres.

    ``options`` go to :func:`kernel_sums` (precision, rtol, block sizes, n_threads, dedup).
    Weights are used as given (non-negative and not all zero, else a ValueError naming ``weights``; see
    :func:`answer_synthetic` for distributions).
    With ``return_info`` the info of :func:`kernel_sums` also holds ``"kernel_means"``: the (Q, J) kernel
    means ``k(c_{q,j})`` the answers contract (a view, no copy), each within the relative bound
    ``info["error_bound"]``.
    """
    wl = _check_workload(workload)
    P = _check_points(points, wl, "points")
    w = check_finite_array(weights, name="weights", ndim=1)
    if w.size and not np.any(w > 0):  # kernel_sums refuses negative weights; all zero would answer 0 everywhere
        raise ValueError(f"weights are all zero ({w.size} points): no point carries mass, so they answer no query")
    k, info = kernel_sums(wl.flat_centres, P, w, wl.sigma, J=wl.J, return_info=True, **options)
    means = k.reshape(wl.n_queries, wl.J)
    ans = np.einsum("qj,qj->q", wl.alphas, means)
    if return_info:
        info["kernel_means"] = means
        return ans, info
    return ans


def answer_data(
    workload: GaussianKernelWorkload, X: Any, *, return_info: bool = False, **options: Any
) -> np.ndarray | tuple[np.ndarray, dict[str, Any]]:
    """True answers ``q_f(D) = (1/n) Σ_{x∈D} f(x)`` (thesis Sec 3.1) for every query, shape (Q,).

    Duplicate rows are merged exactly (weights counts/n). See :func:`kernel_sums` for options.
    """
    wl = _check_workload(workload)
    P = _check_points(X, wl, "X")
    n = P.shape[0]
    if options.get("dedup", True):
        # exact multiplicities: weight = count / n (no floating summation of 1/n's)
        P, counts = np.unique(P, axis=0, return_counts=True)
        return answer_weighted(wl, P, counts / n, return_info=return_info, **options)
    return answer_weighted(wl, P, np.full(n, 1.0 / n), return_info=return_info, **options)


def answer_synthetic(workload: GaussianKernelWorkload, points: Any, weights: Any, **options: Any) -> np.ndarray:
    """Answers ``q_f(D̂) = Σ_i w_i f(p_i)`` on a weighted synthetic database, shape (Q,).

    ``weights`` must be a distribution (non-negative, summing to 1 within 1e-6), as in
    :class:`dpkit.mechanisms.trig.WeightedDatabase`.
    """
    wl = _check_workload(workload)
    P = _check_points(points, wl, "synthetic_points")
    w = _check_distribution(weights, P.shape[0], "synthetic_weights")
    return answer_weighted(wl, P, w, **options)


def answer_reference(workload: GaussianKernelWorkload, X: Any, weights: Any | None = None) -> np.ndarray:
    """Straightforward float64 baseline: loop over queries, broadcast over points and centres.

    ``q_f = Σ_i w_i Σ_j α_j exp(−‖x_i − c_j‖²/(2σ²))`` computed per query from the explicit
    differences (n, J, d) — no GEMM, no deduplication. BLAS runs single-threaded here: a threaded dot
    product over many points sums in another order, so the answers would depend on the machine's thread settings
    (e.g. a batch worker's thread share) in their last bits.
    Used as ground truth in the tests and as the speed baseline of the benchmark.
    """
    wl = _check_workload(workload)
    P = _check_points(X, wl, "X")
    n = P.shape[0]
    w = np.full(n, 1.0 / n) if weights is None else _check_distribution(weights, n)
    inv = 1.0 / (2.0 * wl.sigma**2)
    out = np.empty(wl.n_queries)
    with limit_threads(1):
        for q in range(wl.n_queries):
            diff = P[:, None, :] - wl.centres[q][None, :, :]  # (n, J, d)
            sq = np.einsum("njd,njd->nj", diff, diff)
            f = np.exp(-inv * sq) @ wl.alphas[q]  # (n,)
            out[q] = w @ f
    return out


# ---------------------------------------------------------------------------------------------
# errors
# ---------------------------------------------------------------------------------------------
def relative_errors(estimate: Any, truth: Any) -> np.ndarray:
    """``|estimate − truth| / truth`` (thesis Sec 3.1), elementwise.

    ``truth`` must be ≥ 0 (Gaussian-kernel answers are positive). Where ``truth == 0``
    the relative error is ``inf`` if the estimate differs and 0 if it is also 0.
    """
    est = check_finite_array(estimate, name="estimate", ndim=1)
    tru = check_finite_array(truth, name="truth", ndim=1)
    if est.shape != tru.shape:
        raise ValueError(f"estimate and truth must have the same shape; got {est.shape} and {tru.shape}")
    if np.any(tru < 0):
        raise ValueError("truth must be non-negative (answers of Gaussian-kernel queries)")
    err = np.abs(est - tru)
    with np.errstate(divide="ignore", invalid="ignore"):
        rel = np.where(tru > 0, err / np.where(tru > 0, tru, 1.0), np.where(err > 0, np.inf, 0.0))
    return rel


@dataclass(frozen=True, kw_only=True)
class WorstCaseErrors:
    """Worst-case errors of a synthetic database over a workload (thesis Sec 3.1).

    Attributes
    ----------
    abs : float
        ``max_f |q_f(D̂) − q_f(D)|``.
    rel : float
        ``max_f |q_f(D̂) − q_f(D)| / q_f(D)``.
    argmax_abs, argmax_rel : int
        Index of the query attaining each maximum (first one on ties).
    error_bound : float
        Bound on the relative numerical error of every answer (float32/float64 rounding).
    truth, estimate, abs_errors, rel_errors : ndarray (Q,) or None
        Per-query arrays, only with ``return_arrays=True``.
    """

    abs: float
    rel: float
    argmax_abs: int
    argmax_rel: int
    error_bound: float = 0.0
    truth: np.ndarray | None = field(default=None, repr=False)
    estimate: np.ndarray | None = field(default=None, repr=False)
    abs_errors: np.ndarray | None = field(default=None, repr=False)
    rel_errors: np.ndarray | None = field(default=None, repr=False)

    def as_dict(self) -> dict[str, Any]:
        return {
            "abs": self.abs,
            "rel": self.rel,
            "argmax_abs": self.argmax_abs,
            "argmax_rel": self.argmax_rel,
            "error_bound": self.error_bound,
        }


def worst_case_errors(
    workload: GaussianKernelWorkload,
    X: Any,
    synthetic_points: Any,
    synthetic_weights: Any,
    *,
    truth: Any | None = None,
    return_arrays: bool = False,
    **options: Any,
) -> WorstCaseErrors:
    """Worst absolute and relative error of ``(synthetic_points, synthetic_weights)`` against ``X``.

    Parameters
    ----------
    workload : GaussianKernelWorkload
    X : array (n, d)
        The real data D (each row weight 1/n).
    synthetic_points, synthetic_weights : arrays (s, d), (s,)
        The weighted synthetic database D̂ (weights a distribution).
    truth : array (Q,), optional
        Precomputed ``answer_data(workload, X)`` (to share it between mechanisms); ``X`` is
        then only checked for shape.
    return_arrays : bool
        Keep the per-query arrays.
    **options
        Passed to :func:`kernel_sums`.
    """
    wl = _check_workload(workload)
    P = _check_points(X, wl, "X")
    bound_t = 0.0
    if truth is None:
        tru, info_t = answer_data(wl, P, return_info=True, **options)
        bound_t = info_t["error_bound"]
    else:
        tru = check_finite_array(truth, name="truth", ndim=1)
        if tru.shape[0] != wl.n_queries:
            raise ValueError(f"truth must have one entry per query ({wl.n_queries}); got {tru.shape}")
    S = _check_points(synthetic_points, wl, "synthetic_points")
    w = _check_distribution(synthetic_weights, S.shape[0], "synthetic_weights")
    est, info_s = answer_weighted(wl, S, w, return_info=True, **options)
    err = np.abs(est - tru)
    rel = relative_errors(est, tru)
    ia, ir = int(np.argmax(err)), int(np.argmax(rel))
    return WorstCaseErrors(
        abs=float(err[ia]),
        rel=float(rel[ir]),
        argmax_abs=ia,
        argmax_rel=ir,
        error_bound=float(max(bound_t, info_s["error_bound"])),
        truth=tru if return_arrays else None,
        estimate=est if return_arrays else None,
        abs_errors=err if return_arrays else None,
        rel_errors=rel if return_arrays else None,
    )


# ---------------------------------------------------------------------------------------------
# throughput
# ---------------------------------------------------------------------------------------------
def kernel_evals_per_second(
    workload: GaussianKernelWorkload,
    X: Any,
    *,
    n_reference_queries: int = 20,
    repeats: int = 1,
    **options: Any,
) -> dict[str, Any]:
    """Measure the evaluator against :func:`answer_reference` on the same data, in one run.

    Throughput counts *logical* kernel evaluations ``Q·J·n`` (what a direct evaluation
    needs), so deduplication counts as speed. The reference is timed on the first
    ``n_reference_queries`` queries (its cost is linear in Q) and both are reported per
    evaluation; each timing is the best of ``repeats``, the two timed alternately.

    Returns
    -------
    dict with ``kernel_evals_per_s`` (dpkit), ``reference_kernel_evals_per_s``, ``speedup``,
    ``dtype``, ``error_bound``, ``n``, ``n_unique``, ``d``, ``n_queries``, ``J``, ``sigma``,
    ``seconds``, ``reference_seconds``, ``reference_queries``, ``max_abs_diff`` (dpkit vs
    reference on the shared queries), ``n_threads``, ``peak_memory_bytes``.
    """
    wl = _check_workload(workload)
    P = _check_points(X, wl, "X")
    n = P.shape[0]
    nref = min(check_positive_int(n_reference_queries, name="n_reference_queries"), wl.n_queries)
    repeats = check_positive_int(repeats, name="repeats")
    sub = wl.subset(slice(0, nref))
    best, best_ref, info, ans, ref = math.inf, math.inf, {}, None, None
    for _ in range(repeats):  # interleaved, so both see the same background load
        t0 = time.perf_counter()
        ans, info = answer_data(wl, P, return_info=True, **options)
        best = min(best, time.perf_counter() - t0)
        t0 = time.perf_counter()
        ref = answer_reference(sub, P)
        best_ref = min(best_ref, time.perf_counter() - t0)
    evals = wl.n_queries * wl.J * n
    evals_ref = nref * wl.J * n
    rate = evals / best
    rate_ref = evals_ref / best_ref
    return {
        "kernel_evals_per_s": rate,
        "reference_kernel_evals_per_s": rate_ref,
        "speedup": rate / rate_ref,
        "dtype": info["dtype"],
        "error_bound": info["error_bound"],
        "n": int(n),
        "n_unique": info["n_unique"],
        "d": wl.d,
        "n_queries": wl.n_queries,
        "J": wl.J,
        "sigma": wl.sigma,
        "seconds": best,
        "reference_seconds": best_ref,
        "reference_queries": nref,
        "max_abs_diff": float(np.max(np.abs(ans[:nref] - ref))),
        "n_threads": info["n_threads"],
        "peak_memory_bytes": info["peak_memory_bytes"],
    }
