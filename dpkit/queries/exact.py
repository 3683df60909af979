"""One entry point for exact data answers ``q_f(D)`` with a proven absolute error bound per answer.

:func:`exact_answers` answers a Gaussian-kernel workload with a bound ``|q̂ − q_f(D)| ≤ bound ≤ tol`` on every answer:

1. ``method="exact"``: the GEMM evaluator (:func:`dpkit.queries.evaluate.answer_data`) with ``rtol = tol/2``.
2. ``method="lowrank"``: the low-rank embedding's certified bound (:mod:`dpkit.queries.lowrank`); answers whose bound
   exceeds ``tol`` are recomputed by the exact path.
3. ``method="auto"`` (default): low-rank when it pays by sizes alone (at least 4,000 rows, a one-time fit cheaper than
   the workload, a per-centre cost :func:`lowrank_cost` below ``n``), never by what is cached, so a call gives the
   same bits cold and warm.

Fitted embeddings are cached per (data content, σ, fit options) in memory (:func:`clear_cache`, :func:`cache_info`)
and on disk (:mod:`dpkit.queries.disk_cache`).
"""
from __future__ import annotations

import hashlib
import math
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dpkit.core.validation import check_choice, check_finite_array, check_real_in_range
from dpkit.queries import disk_cache
from dpkit.queries.accurate import compound
from dpkit.queries.evaluate import answer_data
from dpkit.queries.lowrank import FitOptions, KernelEmbedding
from dpkit.queries.rounding import UNIT_ROUNDOFF_F64, gamma
from dpkit.queries.workload import GaussianKernelWorkload

__all__ = [
    "ExactAnswers",
    "exact_answers",
    "data_hash",
    "embedding_for",
    "lowrank_cost",
    "clear_cache",
    "cache_info",
    "DEFAULT_TOL",
]

#: Default absolute error bound per answer.
DEFAULT_TOL = 1e-6
_CACHE_SIZE = 16
_CACHE: OrderedDict[tuple, KernelEmbedding] = OrderedDict()
_LOCK = threading.Lock()
#: Cost of one landmark kernel value (float64, with its share of the bounds) relative to one
#: evaluator kernel value, and of one prefix multiply-add: rounded up from a measurement on CSN
#: (docs/performance_notes.md).
_LANDMARK_COST = 3.0
_PREFIX_COST = 0.05
#: "auto" never fits an embedding for fewer distinct rows (cheaper to evaluate exactly).
_MIN_ROWS_AUTO = 4000


@dataclass(frozen=True, kw_only=True, eq=False)
class ExactAnswers:
    """Answers ``q_f(D)`` (Q,) with per-answer proven absolute bounds and how they were computed.

    Attributes
    ----------
    answers, bounds : ndarray (Q,)
        ``|answers − q_f(D)| ≤ bounds`` for every query, and ``bounds ≤ tol``.
    method : {"lowrank", "exact"}
        The path that produced the answers (fallback answers of "lowrank" are exact-path).
    rank, n_prefix : int
        Landmarks ``r`` and prefix ``r'`` of the embedding (0 for "exact").
    n_fallback : int
        Answers recomputed by the exact path because their low-rank bound exceeded ``tol``.
    seconds : dict
        ``fit`` (0 when the embedding came from the cache), ``answer``, ``fallback``, ``total``.
    means, mean_bounds : ndarray (Q, J)
        The kernel means ``K̄_D(c_{q,j})`` at every centre that the answers contract with ``α``, and
        ``|means − K̄_D(c)| ≤ mean_bounds`` (of the path that answered the centre's query).
    """

    answers: np.ndarray
    bounds: np.ndarray
    method: str
    tol: float
    rank: int = 0
    n_prefix: int = 0
    n_fallback: int = 0
    cached: bool = False
    seconds: dict[str, float] = field(default_factory=dict)
    means: np.ndarray | None = field(default=None, repr=False)
    mean_bounds: np.ndarray | None = field(default=None, repr=False)

    @property
    def max_bound(self) -> float:
        return float(self.bounds.max(initial=0.0))

    def as_dict(self) -> dict[str, Any]:
        """Scalar summary (for run records)."""
        return {
            "method": self.method,
            "tol": self.tol,
            "max_bound": self.max_bound,
            "rank": self.rank,
            "n_prefix": self.n_prefix,
            "n_fallback": self.n_fallback,
            "cached": self.cached,
            "seconds": dict(self.seconds),
        }


def data_hash(X: Any) -> str:
    """sha256 of the shape and the C-contiguous float64 bytes of ``X`` (the cache key of the data)."""
    A = np.ascontiguousarray(np.asarray(X, dtype=np.float64))
    h = hashlib.sha256(repr(A.shape).encode())
    h.update(A.tobytes())
    return h.hexdigest()


def clear_cache() -> None:
    """Forget every embedding cached in memory (the disk cache: ``disk_cache.clear("embeddings")``)."""
    with _LOCK:
        _CACHE.clear()


def cache_info() -> list[dict[str, Any]]:
    """One entry per cached embedding: data hash prefix, σ, rank, prefix, fit seconds."""
    with _LOCK:
        return [
            {"data": k[0][:12], "sigma": k[1], "rank": e.rank, "n_prefix": e.n_prefix, "fit_seconds": e.info["seconds"]["total"]}
            for k, e in _CACHE.items()
        ]


def embedding_for(
    X: Any, sigma: float, *, options: FitOptions | None = None, cache: bool = True, n_threads: int | None = None
) -> tuple[KernelEmbedding, bool]:
    """The embedding of ``(X, sigma)``: from the memory or disk cache if present (``(emb, True)``), else
    fitted (and cached in memory and on disk, :mod:`dpkit.queries.disk_cache`)."""
    opts = options or FitOptions()
    key = _key(X, sigma, opts)
    if cache:
        hit = _cached(key)
        if hit is not None:
            return hit, True
    emb = KernelEmbedding.fit(X, sigma, options=opts, n_threads=n_threads)
    if cache:
        _remember(key, emb)
        arrays, meta = emb.to_arrays()
        disk_cache.save("embeddings", _disk_key(key), arrays, meta)
    return emb, False


def _key(X: Any, sigma: float, options: FitOptions) -> tuple:
    return (data_hash(X), float(sigma), options)


def _disk_key(key: tuple) -> str:
    h, sigma, opts = key
    # "fit": embeddings fitted before BLAS was held to one thread (bits that followed the cores) are not reused
    return disk_cache.entry_key("embedding", {"data": h, "sigma": float(sigma).hex(), "options": repr(opts),
                                              "fit": "blas-single"})


def _remember(key: tuple, emb: KernelEmbedding) -> None:
    with _LOCK:
        _CACHE[key] = emb
        _CACHE.move_to_end(key)
        while len(_CACHE) > _CACHE_SIZE:
            _CACHE.popitem(last=False)


def _cached(key: tuple) -> KernelEmbedding | None:
    """The embedding of ``key`` from memory, else from the disk cache (then kept in memory), else None."""
    with _LOCK:
        if key in _CACHE:
            _CACHE.move_to_end(key)
            return _CACHE[key]
    entry = disk_cache.load("embeddings", _disk_key(key))
    if entry is None:
        return None
    emb = KernelEmbedding.from_arrays(*entry)
    emb.info["from_disk"] = True
    _remember(key, emb)
    return emb


def lowrank_worth(n_rows: int, n_centres: int, options: FitOptions) -> bool:
    """Whether :func:`exact_answers` (``method="auto"``) fits an embedding for ``n_rows`` data rows and a workload of
    ``n_centres`` centres (``n_queries · J``): decided by these sizes alone, never by what is cached."""
    return n_rows >= _MIN_ROWS_AUTO and n_rows / 2 + options.pool_data + options.pool_cube <= n_centres


def prepare_embedding(X: Any, sigma: float, *, n_queries: int, J: int, tol: float = DEFAULT_TOL,
                      n_threads: int | None = None) -> bool:
    """Fit (or load) the embedding that :func:`exact_answers` with ``method="auto"`` uses for the workloads of
    ``n_queries`` queries of ``J`` centres at width ``sigma`` on ``X``, so that every later call finds it in the
    memory and disk caches (:func:`embedding_for`) instead of fitting it again; the answers are the same either way.
    The batch runner calls it once per (data set, σ) before a run's repetitions start on several Dask workers,
    which otherwise would each fit the same embedding at once.

    Returns
    -------
    bool
        True when the low-rank path applies to these sizes (:func:`lowrank_worth`) and the embedding is now cached.
    """
    P = check_finite_array(X, name="X", ndim=2, min_rows=1)
    opts = FitOptions(tol=check_real_in_range(tol, name="tol", low=0.0, low_inclusive=False))
    if not lowrank_worth(P.shape[0], int(n_queries) * int(J), opts):
        return False
    embedding_for(P, float(sigma), options=opts, n_threads=n_threads)
    return True


def lowrank_cost(emb: KernelEmbedding) -> float:
    """Per-centre cost of the low-rank path in units of one evaluator kernel value (compare with ``n``)."""
    return _LANDMARK_COST * emb.rank + _PREFIX_COST * 2 * emb.n_prefix**2


def _exact(wl: GaussianKernelWorkload, X: np.ndarray, tol: float,
           n_threads: int | None) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The evaluator with ``rtol = tol/2`` (float64 where that does not give ``≤ tol``); absolute bounds ``ρ'·q̂``.

    Returns the answers and their bounds, and the (Q, J) kernel means they contract with their bounds
    (the same relative bound ``ρ'``: the means are sums of the same kind as the answers).

    The evaluator's float64 bound takes the exponent error as ``γ_{d+5}·X`` like its float32
    one, where in float64 the augmented entries' own rounding (``≤ γ_{d+4}`` relative, see
    :mod:`dpkit.queries.accurate`) is of the same order as the dot product's; that term,
    ``γ_{d+4}·X`` with ``X ≤ s(max‖p‖ + max‖c‖)² + log n``, is added here (≈ 10⁻¹⁴; in float32
    it is below the slack of ``γ_{d+5}``).
    """
    s = 1.0 / (2.0 * wl.sigma**2)
    norm_p = float(np.sqrt(np.einsum("ij,ij->i", X, X).max()))
    norm_c = float(np.sqrt(np.einsum("ij,ij->i", wl.flat_centres, wl.flat_centres).max()))
    extra = math.expm1(gamma(wl.d + 4, UNIT_ROUNDOFF_F64) * (s * (norm_p + norm_c) ** 2 + math.log(X.shape[0])))
    for options in ({"rtol": tol / 2.0}, {"precision": "float64"}):
        ans, info = answer_data(wl, X, n_threads=n_threads, return_info=True, **options)
        rho = compound(float(info["error_bound"]), extra)
        bounds = rho / (1.0 - rho) * np.abs(ans)
        if np.all(bounds <= tol):
            means = info["kernel_means"]
            return ans, bounds, means, rho / (1.0 - rho) * np.abs(means)
    raise RuntimeError(f"the exact evaluator's bound {bounds.max():.3g} exceeds tol = {tol:g} even in float64")


def exact_answers(
    workload: GaussianKernelWorkload,
    X: Any,
    *,
    tol: float = DEFAULT_TOL,
    method: str = "auto",
    options: FitOptions | None = None,
    cache: bool = True,
    embedding: KernelEmbedding | None = None,
    n_threads: int | None = None,
) -> ExactAnswers:
    """True answers ``q_f(D) = (1/n) Σ_{x∈D} f(x)`` (thesis Sec 3.1) with a proven bound ``≤ tol`` each.

    Parameters
    ----------
    workload : GaussianKernelWorkload
    X : array (n, d)
        The data set (rows weighted by multiplicity).
    tol : float
        Required absolute error bound per answer (default 1e-6).
    method : {"auto", "lowrank", "exact"}
        See the module docs.
    options : FitOptions, optional
        Low-rank fit parameters (default :class:`~dpkit.queries.lowrank.FitOptions` with ``tol``).
    cache : bool
        Reuse / store the fitted embedding.
    embedding : KernelEmbedding, optional
        Use this embedding (fitted on ``X`` at the workload's σ) instead of the cache or a fit;
        implies the low-rank path (its bounds are still checked against ``tol``).
    n_threads : int, optional
        Worker threads (default: the usable cores).
    """
    if not isinstance(workload, GaussianKernelWorkload):
        raise TypeError(f"workload must be a GaussianKernelWorkload; got {type(workload).__name__}")
    check_choice(method, name="method", choices=("auto", "lowrank", "exact"))
    tol = check_real_in_range(tol, name="tol", low=0.0, low_inclusive=False)
    P = check_finite_array(X, name="X", ndim=2, min_rows=1)
    if P.shape[1] != workload.d:
        raise ValueError(f"X must have d = {workload.d} columns (the workload's dimension); got shape {P.shape}")
    opts = options or FitOptions(tol=tol)
    t0 = time.perf_counter()
    emb, cached, t_fit = embedding, False, 0.0
    if embedding is not None:
        if method == "exact" or embedding.sigma != workload.sigma or embedding.d != workload.d:
            raise ValueError("embedding needs method 'auto' or 'lowrank' and the workload's sigma and dimension")
    elif method != "exact":
        n, M = P.shape[0], workload.n_queries * workload.J
        worth = lowrank_worth(n, M, opts)
        if method == "lowrank" or worth:  # auto: decided by sizes alone, never by what happens to be cached
            emb, cached = embedding_for(P, workload.sigma, options=opts, cache=cache, n_threads=n_threads)
            if not cached:
                t_fit = time.perf_counter() - t0
    if method == "auto" and embedding is None and emb is not None and lowrank_cost(emb) >= emb.n_unique:
        emb = None
    if emb is None:
        t1 = time.perf_counter()
        ans, bounds, means, mean_bounds = _exact(workload, P, tol, n_threads)
        secs = _secs(t0, t_fit, time.perf_counter() - t1)
        return ExactAnswers(answers=ans, bounds=bounds, method="exact", tol=tol, seconds=secs, means=means,
                            mean_bounds=mean_bounds)
    t1 = time.perf_counter()
    ans, bounds, means, mean_bounds = emb.answer(workload, n_threads=n_threads, return_means=True)
    t_ans = time.perf_counter() - t1
    bad = np.flatnonzero(bounds > tol)
    if bad.size:
        ans[bad], bounds[bad], means[bad], mean_bounds[bad] = _exact(workload.subset(bad), P, tol, n_threads)
    return ExactAnswers(
        answers=ans,
        bounds=bounds,
        means=means,
        mean_bounds=mean_bounds,
        method="lowrank",
        tol=tol,
        rank=emb.rank,
        n_prefix=emb.n_prefix,
        n_fallback=int(bad.size),
        cached=cached,
        seconds=_secs(t0, t_fit, t_ans),
    )


def _secs(t0: float, fit: float, answer: float) -> dict[str, float]:
    """Timings; "fallback" is what remains of the total (the exact recomputation of failed answers, checks)."""
    total = time.perf_counter() - t0
    return {"fit": fit, "answer": answer, "fallback": max(total - fit - answer, 0.0), "total": total}
