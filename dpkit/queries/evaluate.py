"""Fast, exact-up-to-a-proven-bound answers of the Gaussian-kernel workload (2.1) and worst-case errors.

For a query ``f(x) = Σ_j α_j exp(−‖x − c_j‖²/(2σ²))`` the linear query on a weighted point
set ``{(p_i, w_i)}`` is ``q_f = Σ_i w_i f(p_i)`` (``w_i = 1/n`` for a data set ``D``, thesis
Sec 3.1: ``q_f(D) = (1/n) Σ_{x∈D} f(x)``; the synthetic database's own weights for ``D̂``).
The tables (3.2/3.3) need ``max_f |q_f(D̂) − q_f(D)|`` and ``max_f |q_f(D̂) − q_f(D)|/q_f(D)``
over 10⁴ queries × 10 centres × up to 10⁵ rows, 30 runs per cell; this module makes that fast:

1. **Contract late.** ``q_f = Σ_j α_j k(c_j)`` with the kernel mean
   ``k(c) = Σ_i w_i exp(−‖p_i − c‖²/(2σ²))``: :func:`kernel_sums` evaluates ``k`` at all
   ``Q·J`` centres once and the answers are one (Q, J) contraction with ``α``.
2. **Exact deduplication.** Equal rows are merged (``np.unique`` rows, weights summed:
   counts/n for data). This is exact, not an approximation; zero-weight rows are dropped.
3. **GEMM form.** With ``s = 1/(2σ²)``, ``ω_i = w_i / max_i w_i`` and augmented rows
   ``a_i = [p_i, ‖p_i‖², log ω_i, 1]``, ``b_c = [2s c, −s, 1, −s‖c‖²]`` one matrix product
   gives ``g = a_i·b_c = −s‖p_i − c‖² + log ω_i`` for a whole block. The true value satisfies
   ``g ≤ log ω_i`` (a squared distance is ≥ 0), so the block is clamped to that (the
   "negative squared distance" rounding artefact of the GEMM form), exponentiated in place,
   and summed: ``k(c) = max w · Σ_i exp(g_ic)``.
4. **Precision.** ``precision="auto"`` (default) uses float32 (GEMM, clamp, exp and first
   summation level) when the a-priori bound :func:`float32_error_bound` on the relative
   error of every answer is ≤ ``rtol`` (default 1e-5), float64 otherwise (e.g. CRM, d = 101,
   at σ = 2, whose float32 bound is 2·10⁻⁴). ``precision="mixed"`` (float64 GEMM — the
   cancellation-prone part — then float32 exp, bound ≈ 3·10⁻⁶ even for CRM) is offered but
   not chosen by "auto": on the 2-core machine it measured no faster than float64.
   Float32 blocks are summed in groups of 8 terms (float32), the partial sums in float64.
5. **Blocks and threads.** Centres are split in blocks of ``block_centres`` rows, handled by
   ``n_threads`` worker threads (numpy's matmul/exp/minimum/sum release the GIL); each worker
   loops over point blocks of ``block_points`` rows. BLAS is limited to one thread inside the
   evaluation (threadpoolctl) so the two levels do not oversubscribe the cores. Measured on
   the shared 2-core machine (``python -m dpkit.batch.bench``, CSN, 200 queries, load average 5–7
   from other users): threads 2.2·10⁸ evals/s, one thread 2.3·10⁸ (the other load already
   fills the second core), single-threaded loop with multithreaded BLAS 3.8·10⁷ — OpenBLAS's
   own threads on many small GEMMs are 5–10× slower, hence the default.

Peak memory (beyond the inputs and the (Q·J,) float64 output): the augmented copies,
``(n_unique + Q·J)·(d + 3)`` items, plus per worker one block of
``block_centres × block_points`` items and its float64 partial sums
(``block_centres × block_points / 8`` doubles) — with the defaults 256 × 2048 float32 that is
2 MiB + 0.5 MiB per worker (:func:`peak_memory_bytes`).

Error bound (float32, unit roundoff ``u = 2⁻²⁴``, ``γ_k = k u/(1 − k u)``): rounding the
augmented rows to float32 and the length-``(d+3)`` dot product give
``|ĝ − g| ≤ Δ = γ_{d+5} (s (‖p‖ + ‖c‖)² + |log ω|)`` (Higham, Thm 3.5, with
``Σ|a_k b_k| ≤ s(‖p‖+‖c‖)² + |log ω|``); clamping does not increase it; ``exp`` turns it into
a relative error ``e^Δ − 1`` and adds its own (``EXP_ULP_F32`` ulp, ≤ ``2·EXP_ULP_F32·u``
relative, checked by a test); the 8-term float32 partial sums of positive terms add ``γ_7``
relatively; the float64 tail (partial sums, blocks, the α contraction, all of non-negative
terms) adds ``γ⁽⁶⁴⁾_{n/8 + J + 2}``. Since every term is non-negative the relative bound
carries to every kernel mean and every answer:
``ρ = e^Δ (1 + 2·EXP_ULP_F32·u)(1 + γ_7)(1 + γ⁽⁶⁴⁾) − 1``. For the thesis's worst cases
(``‖p‖, ‖c‖ ≤ √d``, uniform weights) ρ ≈ 4·10⁻⁶ on CSN at σ = 2 (5·10⁻⁶ with its
duplicate-row weights), so an absolute error ``≤ ρ·q ≤ 5·10⁻⁶`` and a relative error changes
by ``≤ ρ(2 + 2·rel)``: far below the 3 decimals the tables print. The bound is worst-case;
measured float32-vs-float64 differences are ~10⁻⁷ relative (``tests/test_evaluate.py``).
"""
from __future__ import annotations

import math
import os
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dpkit.core.validation import check_choice, check_finite_array, check_positive_int, check_real_in_range
from dpkit.queries.workload import GaussianKernelWorkload

__all__ = [
    "kernel_sums",
    "answer_weighted",
    "answer_data",
    "answer_synthetic",
    "answer_reference",
    "worst_case_errors",
    "relative_errors",
    "WorstCaseErrors",
    "float32_error_bound",
    "choose_precision",
    "Precision",
    "deduplicate",
    "peak_memory_bytes",
    "kernel_evals_per_second",
    "UNIT_ROUNDOFF_F32",
    "EXP_ULP_F32",
    "DEFAULT_RTOL",
]

UNIT_ROUNDOFF_F32 = 2.0**-24
UNIT_ROUNDOFF_F64 = 2.0**-53
#: Assumed maximal error of numpy's float32 ``exp`` in units in the last place
#: (NumPy's SIMD float32 exp is documented well below this; ``tests/test_evaluate.py`` checks it).
EXP_ULP_F32 = 4.0
#: Default tolerance on the relative error bound for ``precision="auto"``.
DEFAULT_RTOL = 1e-5
#: Terms per float32 partial sum (then float64).
SUM_GROUP = 8
DEFAULT_BLOCK_CENTRES = 256
DEFAULT_BLOCK_POINTS = 2048
#: Below this many kernel evaluations a call runs in the calling thread.
_SERIAL_BELOW = 2_000_000
_WEIGHT_SUM_TOL = 1e-6


def _gamma(k: float, u: float) -> float:
    ku = k * u
    return ku / (1.0 - ku)


def _usable_cores() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - non-Linux
        return max(1, os.cpu_count() or 1)


# ---------------------------------------------------------------------------------------------
# error bound and precision choice
# ---------------------------------------------------------------------------------------------
def float32_error_bound(
    d: int,
    sigma: float,
    *,
    max_norm_points: float | None = None,
    max_norm_centres: float | None = None,
    max_abs_log_weight: float = 0.0,
    n_points: int = 100_000,
    J: int = 10,
    distances: str = "float32",
) -> float:
    """A-priori bound ρ on the relative error of every float32 kernel mean and answer.

    See the module docstring for the derivation:
    ``ρ = exp(Δ)·(1 + 2·EXP_ULP_F32·u)(1 + γ_7)(1 + γ⁽⁶⁴⁾_{n/8+J+2}) − 1`` with ``s = 1/(2σ²)``,
    ``u = 2⁻²⁴``, ``X = s(‖p‖+‖c‖)² + |log ω|`` and ``Δ = γ_{d+5}·X`` when the distances
    (the GEMM) are float32, ``Δ = (γ⁽⁶⁴⁾_{d+5} + u)·X`` when they are float64 and only rounded
    to float32 before ``exp`` (``distances="float64"``, the "mixed" precision).

    Parameters
    ----------
    d : int
        Dimension.
    sigma : float
        Kernel width.
    max_norm_points, max_norm_centres : float, optional
        Bounds on ``‖p‖`` and ``‖c‖``; default ``√d`` (the cube ``[-1, 1]^d``).
    max_abs_log_weight : float
        Bound on ``|log(w_i / max w)|`` (0 for uniform weights).
    n_points : int
        Number of (distinct) points, for the float64 summation term.
    J : int
        Centres per query.
    distances : {"float32", "float64"}
        Precision of the GEMM.
    """
    d = check_positive_int(d, name="d")
    sigma = check_real_in_range(sigma, name="sigma", low=0.0, low_inclusive=False)
    check_choice(distances, name="distances", choices=("float32", "float64"))
    u = UNIT_ROUNDOFF_F32
    npx = math.sqrt(d) if max_norm_points is None else float(max_norm_points)
    ncx = math.sqrt(d) if max_norm_centres is None else float(max_norm_centres)
    s = 1.0 / (2.0 * sigma * sigma)
    X = _max_exponent(npx, ncx, s, abs(float(max_abs_log_weight)))
    if distances == "float32":
        delta = _gamma(d + 5, u) * X
    else:
        delta = (_gamma(d + 5, UNIT_ROUNDOFF_F64) + u) * X
    tail = _gamma(n_points / SUM_GROUP + J + 2, UNIT_ROUNDOFF_F64)
    return math.exp(delta) * (1 + 2 * EXP_ULP_F32 * u) * (1 + _gamma(SUM_GROUP - 1, u)) * (1 + tail) - 1.0


def _max_exponent(norm_p: float, norm_c: float, s: float, max_abs_log_weight: float) -> float:
    """Bound on |−s‖p − c‖² + log ω| and on the sum of the absolute GEMM terms."""
    return s * (norm_p + norm_c) ** 2 + max_abs_log_weight


@dataclass(frozen=True)
class Precision:
    """Resolved numerics of one evaluation: GEMM dtype, exp dtype and the relative error bound."""

    name: str  # "float32", "mixed" or "float64"
    gemm_dtype: Any
    exp_dtype: Any
    error_bound: float


def choose_precision(
    precision: str,
    *,
    d: int,
    sigma: float,
    max_norm_points: float,
    max_norm_centres: float,
    max_abs_log_weight: float,
    n_points: int,
    J: int = 10,
    rtol: float = DEFAULT_RTOL,
) -> Precision:
    """Resolve ``precision`` ("auto", "float32", "mixed", "float64") and its error bound.

    "auto" takes float32 (float32 GEMM and exp) when its bound (:func:`float32_error_bound`)
    is ≤ ``rtol`` and no exponent can fall below −80 (float32 ``exp`` underflows near −87,
    which would make relative errors of tiny answers meaningless), else float64. "mixed"
    (float64 GEMM, float32 exp) is only used when asked for (it measured no faster than
    float64 on the development machine). The float64 bound has
    the same structure with ``u = 2⁻⁵³`` (≈ 10⁻¹³ in the thesis's settings).
    """
    check_choice(precision, name="precision", choices=("auto", "float32", "mixed", "float64"))
    rtol = check_real_in_range(rtol, name="rtol", low=0.0, low_inclusive=False)
    kw = dict(
        max_norm_points=max_norm_points,
        max_norm_centres=max_norm_centres,
        max_abs_log_weight=max_abs_log_weight,
        n_points=n_points,
        J=J,
    )
    rho32 = float32_error_bound(d, sigma, distances="float32", **kw)
    rho_mixed = float32_error_bound(d, sigma, distances="float64", **kw)
    s = 1.0 / (2.0 * sigma * sigma)
    X = _max_exponent(max_norm_points, max_norm_centres, s, max_abs_log_weight)
    underflow_safe = X < 80.0
    if precision == "float32" or (precision == "auto" and rho32 <= rtol and underflow_safe):
        return Precision("float32", np.float32, np.float32, rho32)
    if precision == "mixed":
        return Precision("mixed", np.float64, np.float32, rho_mixed)
    u = UNIT_ROUNDOFF_F64
    rho64 = math.exp(_gamma(d + 5, u) * X) * (1 + 8 * u) * (1 + _gamma(SUM_GROUP - 1, u)) * (
        1 + _gamma(n_points / SUM_GROUP + J + 2, u)
    ) - 1.0
    return Precision("float64", np.float64, np.float64, rho64)


def peak_memory_bytes(
    n_points: int,
    n_centres: int,
    d: int,
    *,
    dtype: Any = np.float32,
    exp_dtype: Any | None = None,
    block_centres: int = DEFAULT_BLOCK_CENTRES,
    block_points: int = DEFAULT_BLOCK_POINTS,
    n_threads: int | None = None,
) -> int:
    """Working memory of :func:`kernel_sums` beyond its inputs and float64 output (bytes).

    Augmented copies ``(n_points + n_centres)(d + 3)`` items of ``dtype`` (the GEMM's), plus
    per worker thread one ``block_centres × min(block_points, n_points)`` block of
    ``exp_dtype`` (and one of ``dtype`` if they differ) and its float64 partial sums.
    """
    item = np.dtype(dtype).itemsize
    exp_item = item if exp_dtype is None else np.dtype(exp_dtype).itemsize
    threads = _usable_cores() if n_threads is None else int(n_threads)
    nb = min(block_points, n_points)
    mb = min(block_centres, n_centres)
    per_worker = mb * nb * exp_item + mb * (-(-nb // SUM_GROUP)) * 8
    if exp_item != item:  # "mixed": a float64 GEMM block next to the float32 one
        per_worker += mb * nb * item
    return int((n_points + n_centres) * (d + 3) * item + threads * per_worker)


# ---------------------------------------------------------------------------------------------
# core kernel
# ---------------------------------------------------------------------------------------------
def deduplicate(points: np.ndarray, weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Merge equal rows of ``points`` (exact equality), summing their weights; drop zero weights.

    Returns ``(unique_points, merged_weights)``; ``Σ_i w_i f(p_i)`` is unchanged for every ``f``.
    """
    keep = weights > 0
    if not np.all(keep):
        points, weights = points[keep], weights[keep]
    if points.shape[0] <= 1:
        return points, weights
    uniq, inverse = np.unique(points, axis=0, return_inverse=True)
    if uniq.shape[0] == points.shape[0]:
        return points, weights
    merged = np.bincount(inverse.ravel(), weights=weights, minlength=uniq.shape[0])
    return uniq, merged


def _block_sums(
    B: np.ndarray, A: np.ndarray, L: np.ndarray, block_points: int, out: np.ndarray, exp_dtype: Any
) -> None:
    """out[:] = Σ_i exp(min(B·A_iᵀ, L_i)) over all point rows, blockwise (see module docs).

    The product is formed in ``A.dtype``; clamp, ``exp`` and the first summation level run in
    ``exp_dtype`` (float32 for "float32" and "mixed", float64 for "float64").
    """
    mb = B.shape[0]
    n = A.shape[0]
    nb = min(block_points, n)
    buf = np.empty((mb, nb), dtype=exp_dtype)
    gbuf = buf if A.dtype == exp_dtype else np.empty((mb, nb), dtype=A.dtype)
    acc = np.zeros(mb, dtype=np.float64)
    for j0 in range(0, n, nb):
        j1 = min(j0 + nb, n)
        w = j1 - j0
        E = buf[:, :w]
        G = gbuf[:, :w]
        np.matmul(B, A[j0:j1].T, out=G)
        np.minimum(G, L[j0:j1], out=E)  # clamp: −s‖p − c‖² + log ω ≤ log ω (and cast for "mixed")
        np.exp(E, out=E)
        if E.dtype == np.float32:
            full = (w // SUM_GROUP) * SUM_GROUP
            if full:
                # groups of SUM_GROUP terms summed in float32 (vectorised across the block), then float64
                acc += E[:, :full].reshape(mb, SUM_GROUP, full // SUM_GROUP).sum(axis=1).sum(axis=1, dtype=np.float64)
            if full < w:
                acc += E[:, full:].sum(axis=1, dtype=np.float64)
        else:
            acc += E.sum(axis=1)
    out[:] = acc


def kernel_sums(
    centres: Any,
    points: Any,
    weights: Any,
    sigma: float,
    *,
    precision: str = "auto",
    rtol: float = DEFAULT_RTOL,
    block_centres: int = DEFAULT_BLOCK_CENTRES,
    block_points: int = DEFAULT_BLOCK_POINTS,
    n_threads: int | None = None,
    parallel: str = "threads",
    dedup: bool = True,
    J: int = 10,
    return_info: bool = False,
) -> np.ndarray | tuple[np.ndarray, dict[str, Any]]:
    """Kernel means ``k(c) = Σ_i w_i exp(−‖p_i − c‖²/(2σ²))`` at every centre (float64 result).

    Parameters
    ----------
    centres : array (M, d)
    points : array (n, d)
    weights : array (n,), non-negative (not required to sum to 1 here)
    sigma : float
    precision : {"auto", "float32", "mixed", "float64"}
    rtol : float
        Tolerance on the float32 relative error bound for ``"auto"``.
    block_centres, block_points : int
        Block sizes (memory: :func:`peak_memory_bytes`). They only change the order of
        floating-point operations (GEMM kernel edges, summation), so results agree within the
        error bound; the number of threads changes nothing (centre blocks are independent).
    n_threads : int, optional
        Worker threads (default: the usable cores).
    parallel : {"threads", "blas"}
        "threads" (default): ``n_threads`` Python threads over centre blocks, BLAS limited to
        one thread. "blas": blocks in the calling thread, BLAS with its own thread pool (and
        numpy's elementwise passes single-threaded) — kept for the benchmark's comparison.
    dedup : bool
        Merge equal rows first (exact).
    return_info : bool
        Also return ``{"dtype", "error_bound", "n_unique", "n_threads", "peak_memory_bytes"}``.
    """
    C = check_finite_array(centres, name="centres", ndim=2)
    P = check_finite_array(points, name="points", ndim=2, min_rows=1)
    w = check_finite_array(weights, name="weights", ndim=1)
    if C.shape[1] != P.shape[1]:
        raise ValueError(f"centres have d = {C.shape[1]} columns but points have {P.shape[1]}")
    if w.shape[0] != P.shape[0]:
        raise ValueError(f"weights has {w.shape[0]} entries but points has {P.shape[0]} rows")
    if np.any(w < 0):
        raise ValueError("weights must be non-negative")
    sigma = check_real_in_range(sigma, name="sigma", low=0.0, low_inclusive=False)
    block_centres = check_positive_int(block_centres, name="block_centres")
    block_points = check_positive_int(block_points, name="block_points")
    threads = _usable_cores() if n_threads is None else check_positive_int(n_threads, name="n_threads")
    check_choice(parallel, name="parallel", choices=("threads", "blas"))
    M, d = C.shape
    if dedup:
        P, w = deduplicate(P, w)
    else:
        keep = w > 0
        P, w = P[keep], w[keep]
    out = np.zeros(M, dtype=np.float64)
    n = P.shape[0]
    info: dict[str, Any] = {"n_unique": int(n), "parallel": parallel}
    if n == 0 or M == 0:
        info.update(dtype="float64", error_bound=0.0, n_threads=0, peak_memory_bytes=0)
        return (out, info) if return_info else out
    wmax = float(w.max())
    logw = np.log(w / wmax)  # ≤ 0
    s = 1.0 / (2.0 * sigma * sigma)
    sqp = np.einsum("ij,ij->i", P, P)
    sqc = np.einsum("ij,ij->i", C, C)
    prec = choose_precision(
        precision,
        d=d,
        sigma=sigma,
        max_norm_points=float(np.sqrt(sqp.max())),
        max_norm_centres=float(np.sqrt(sqc.max())) if M else 0.0,
        max_abs_log_weight=float(-logw.min()),
        n_points=n,
        J=J,
        rtol=rtol,
    )
    dtype = prec.gemm_dtype
    A = np.empty((n, d + 3), dtype=dtype)
    A[:, :d] = P
    A[:, d] = sqp
    A[:, d + 1] = logw
    A[:, d + 2] = 1.0
    B = np.empty((M, d + 3), dtype=dtype)
    B[:, :d] = (2.0 * s) * C
    B[:, d] = -s
    B[:, d + 1] = 1.0
    B[:, d + 2] = -s * sqc
    L = np.ascontiguousarray(A[:, d + 1])
    starts = list(range(0, M, block_centres))
    work_threads = 1 if (M * n < _SERIAL_BELOW or len(starts) == 1) else min(threads, len(starts))
    if parallel == "blas":
        work_threads = 1

    def task(i0: int) -> None:
        i1 = min(i0 + block_centres, M)
        _block_sums(B[i0:i1], A, L, block_points, out[i0:i1], prec.exp_dtype)

    from contextlib import nullcontext

    from threadpoolctl import threadpool_limits

    limit = threadpool_limits(limits=1, user_api="blas") if parallel == "threads" else nullcontext()
    with limit:
        if work_threads == 1:
            for i0 in starts:
                task(i0)
        else:
            with ThreadPoolExecutor(max_workers=work_threads) as ex:
                for _ in ex.map(task, starts):
                    pass
    out *= wmax
    info.update(
        dtype=prec.name,
        error_bound=float(prec.error_bound),
        n_threads=int(work_threads),
        peak_memory_bytes=peak_memory_bytes(
            n,
            M,
            d,
            dtype=prec.gemm_dtype,
            exp_dtype=prec.exp_dtype,
            block_centres=block_centres,
            block_points=block_points,
            n_threads=work_threads,
        ),
    )
    return (out, info) if return_info else out


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
    Weights are used as given (non-negative; see :func:`answer_synthetic` for distributions).
    """
    wl = _check_workload(workload)
    P = _check_points(points, wl, "points")
    w = check_finite_array(weights, name="weights", ndim=1)
    k, info = kernel_sums(wl.flat_centres, P, w, wl.sigma, J=wl.J, return_info=True, **options)
    ans = np.einsum("qj,qj->q", wl.alphas, k.reshape(wl.n_queries, wl.J))
    return (ans, info) if return_info else ans


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
    differences (n, J, d) — no GEMM, no deduplication, no threads beyond numpy's defaults.
    Used as ground truth in the tests and as the speed baseline of the benchmark.
    """
    wl = _check_workload(workload)
    P = _check_points(X, wl, "X")
    n = P.shape[0]
    w = np.full(n, 1.0 / n) if weights is None else _check_distribution(weights, n)
    inv = 1.0 / (2.0 * wl.sigma**2)
    out = np.empty(wl.n_queries)
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
