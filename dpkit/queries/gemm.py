"""The GEMM kernel-sum engine: kernel means ``k(c) = Σ_i w_i exp(−‖p_i − c‖²/(2σ²))`` at many centres.

:mod:`dpkit.queries.evaluate` contracts the kernel means computed here with a query's ``α``. The engine:

1. **Exact deduplication.** Equal rows are merged, weights summed; zero-weight rows are dropped.
2. **GEMM form.** Augmented rows give ``−s‖p_i − c‖² + log ω_i`` for a whole block in one matrix product, clamped to
   ``log ω_i`` (the true bound), exponentiated in place and summed.
3. **Precision** and its proven relative error bound: :mod:`dpkit.queries.rounding`.
4. **Blocks and threads.** Blocks of centres on ``n_threads`` worker threads, BLAS held to one thread inside; the
   sums run in a fixed order, so the thread count never changes a number (memory: :func:`peak_memory_bytes`).
"""
from __future__ import annotations

import math
import os
import warnings
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable

import numpy as np

from dpkit.core.settings import setting
from dpkit.core.threads import limit_threads
from dpkit.core.validation import check_choice, check_finite_array, check_positive_int, check_real_in_range
from dpkit.queries.rounding import DEFAULT_RTOL, SUM_GROUP, choose_precision

__all__ = [
    "kernel_sums",
    "deduplicate",
    "peak_memory_bytes",
    "augmented_rows",
    "run_blocks",
    "usable_cores",
    "check_centres_points_weights",
    "DEFAULT_BLOCK_CENTRES",
    "DEFAULT_BLOCK_POINTS",
]

DEFAULT_BLOCK_CENTRES = 256
DEFAULT_BLOCK_POINTS = 2048
#: Below this many kernel evaluations a call runs in the calling thread.
_SERIAL_BELOW = 2_000_000


def usable_cores() -> int:
    """Cores this process may use: its CPU affinity mask, at most ``$DPKIT_THREADS`` when that is set.

    The batch runner sets ``DPKIT_THREADS`` to each Dask worker's share of the cores
    (:mod:`dpkit.batch.cluster`) so that concurrent runs do not oversubscribe the machine.

    Raises
    ------
    ValueError
        ``DPKIT_THREADS`` is set but is not a positive integer.
    """
    try:
        cores = max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - non-Linux
        cores = max(1, os.cpu_count() or 1)
    text = (setting("DPKIT_THREADS") or "").strip()
    if not text:
        return cores
    try:
        cap = int(text)
    except ValueError:
        cap = 0
    if cap < 1:
        raise ValueError(f"DPKIT_THREADS must be a positive integer (a thread count ≥ 1); got {text!r}")
    return min(cores, cap)


def check_centres_points_weights(centres: Any, points: Any, weights: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Validate ``(centres (M, d), points (n ≥ 1, d), weights (n,) ≥ 0)``; return float64 arrays."""
    C = check_finite_array(centres, name="centres", ndim=2)
    P = check_finite_array(points, name="points", ndim=2, min_rows=1)
    w = check_finite_array(weights, name="weights", ndim=1)
    if C.shape[1] != P.shape[1]:
        raise ValueError(f"centres have d = {C.shape[1]} columns but points have {P.shape[1]}")
    if w.shape[0] != P.shape[0]:
        raise ValueError(f"weights has {w.shape[0]} entries but points has {P.shape[0]} rows")
    if np.any(w < 0):
        raise ValueError("weights must be non-negative")
    return C, P, w


def augmented_rows(
    P: np.ndarray, sqp: np.ndarray, logw: np.ndarray, C: np.ndarray, sqc: np.ndarray, s: float, dtype: Any
) -> tuple[np.ndarray, np.ndarray]:
    """The GEMM form's rows ``a_i = [p_i, ‖p_i‖², log ω_i, 1]`` and ``b_c = [2s c, −s, 1, −s‖c‖²]``.

    ``A @ B.T`` is ``−s‖p_i − c‖² + log ω_i`` (up to rounding, bounded in
    :mod:`dpkit.queries.rounding`); ``sqp``/``sqc`` are the squared row norms.
    """
    return _point_rows(P, sqp, logw, dtype), _centre_rows(C, sqc, s, dtype)


def _point_rows(P: np.ndarray, sqp: np.ndarray, logw: np.ndarray, dtype: Any) -> np.ndarray:
    n, d = P.shape
    A = np.empty((n, d + 3), dtype=dtype)
    A[:, :d] = P
    A[:, d] = sqp
    A[:, d + 1] = logw
    A[:, d + 2] = 1.0
    return A


def _centre_rows(C: np.ndarray, sqc: np.ndarray, s: float, dtype: Any) -> np.ndarray:
    """Rows ``b_c`` of :func:`augmented_rows`; each row from its centre alone, so any slice of centres gives those
    rows of the whole, bit for bit."""
    m, d = C.shape
    B = np.empty((m, d + 3), dtype=dtype)
    B[:, :d] = (2.0 * s) * C
    B[:, d] = -s
    B[:, d + 1] = 1.0
    B[:, d + 2] = -s * sqc
    return B


def run_blocks(task: Callable[[int], None], starts: list[int], work_threads: int, *, blas_single: bool = True) -> None:
    """Run ``task(i0)`` for every block start, in ``work_threads`` threads (1: in the caller).

    With ``blas_single`` BLAS is limited to one thread meanwhile (threadpoolctl), so the
    Python threads and BLAS's own do not oversubscribe the cores. Blocks must be independent.
    """
    from contextlib import nullcontext

    limit = limit_threads(1) if blas_single else nullcontext()
    with limit:
        if work_threads == 1:
            for i0 in starts:
                task(i0)
        else:
            with ThreadPoolExecutor(max_workers=work_threads) as ex:
                for _ in ex.map(task, starts):
                    pass



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

    The augmented copy of the points, ``n_points (d + 3)`` items of ``dtype`` (the GEMM's), plus per worker
    thread the augmented rows of its block of centres (``block_centres (d + 3)`` items), one
    ``block_centres × min(block_points, n_points)`` block of ``exp_dtype`` (and one of ``dtype`` if they differ) and
    its float64 partial sums.
    """
    item = np.dtype(dtype).itemsize
    exp_item = item if exp_dtype is None else np.dtype(exp_dtype).itemsize
    threads = usable_cores() if n_threads is None else int(n_threads)
    nb = min(block_points, n_points)
    mb = min(block_centres, n_centres)
    per_worker = mb * (d + 3) * item + mb * nb * exp_item + mb * (-(-nb // SUM_GROUP)) * 8
    if exp_item != item:  # "mixed": a float64 GEMM block next to the float32 one
        per_worker += mb * nb * item
    return int(n_points * (d + 3) * item + threads * per_worker)


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
    C, P, w = check_centres_points_weights(centres, points, weights)
    sigma = check_real_in_range(sigma, name="sigma", low=0.0, low_inclusive=False)
    block_centres = check_positive_int(block_centres, name="block_centres")
    block_points = check_positive_int(block_points, name="block_points")
    threads = usable_cores() if n_threads is None else check_positive_int(n_threads, name="n_threads")
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
    if not math.isfinite(prec.error_bound):
        warnings.warn(f"no a-priori error bound for these kernel sums (error_bound = inf): a point or centre lies far "
                      f"outside the cube [-1, 1]^d (max |p| = {math.sqrt(float(sqp.max())):.3g}, max |c| = "
                      f"{math.sqrt(float(sqc.max())):.3g} at sigma = {sigma:g}); kernel values at such distances are 0",
                      RuntimeWarning, stacklevel=2)
    A = _point_rows(P, sqp, logw, prec.gemm_dtype)  # the centres' rows are built per block, in the worker threads
    L = np.ascontiguousarray(A[:, d + 1])
    starts = list(range(0, M, block_centres))
    work_threads = 1 if (M * n < _SERIAL_BELOW or len(starts) == 1) else min(threads, len(starts))
    if parallel == "blas":
        work_threads = 1

    def task(i0: int) -> None:
        i1 = min(i0 + block_centres, M)
        _block_sums(_centre_rows(C[i0:i1], sqc[i0:i1], s, prec.gemm_dtype), A, L, block_points, out[i0:i1],
                    prec.exp_dtype)

    run_blocks(task, starts, work_threads, blas_single=parallel == "threads")
    out *= wmax
    mem = peak_memory_bytes(
        n, M, d, dtype=prec.gemm_dtype, exp_dtype=prec.exp_dtype, block_centres=block_centres,
        block_points=block_points, n_threads=work_threads,
    )
    info.update(dtype=prec.name, error_bound=float(prec.error_bound), n_threads=int(work_threads), peak_memory_bytes=mem)
    return (out, info) if return_info else out

