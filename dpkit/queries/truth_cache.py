"""Exact answers on the data, computed once per (data, workload) and shared by every consumer.

The answers come from :func:`dpkit.queries.exact.exact_answers` (``method="auto"``), each with a proven absolute error
bound ≤ :data:`~dpkit.queries.exact.DEFAULT_TOL`, together with the kernel means at the workload's centres. Every
method of a repetition is evaluated against them, and the direct-answering methods read them from here.

Entries are keyed by the *contents* of the data and the workload (SHA-256 of their float64 bytes and shapes), so a
regenerated workload hits and a different array never does; in memory an LRU of :data:`MAX_ENTRIES` workloads, on
disk :mod:`dpkit.queries.disk_cache` (kind ``truth``).
"""
from __future__ import annotations

import hashlib
import time
from collections import OrderedDict
from dataclasses import dataclass

import numpy as np

from dpkit.queries import disk_cache
from dpkit.queries.exact import DEFAULT_TOL, exact_answers, lowrank_worth
from dpkit.queries.lowrank import FitOptions
from dpkit.queries.workload import GaussianKernelWorkload

__all__ = ["Truth", "exact_truth", "content_hash", "clear_truth_cache", "MAX_ENTRIES"]

#: Workloads kept in memory (each holds a (Q,) float64 vector).
MAX_ENTRIES = 64


@dataclass(frozen=True, kw_only=True, eq=False)
class Truth:
    """True answers of one workload on one data set.

    Attributes
    ----------
    answers : ndarray (Q,)
        ``q_f(D)`` for every query (thesis Sec 3.1).
    error_bound : float
        Proven bound on the absolute error of every answer (max over the queries).
    seconds : float
        Wall time their computation took (charged to the direct-answering methods, whose release
        they are the input of, even when they come from the cache).
    method : str
        How they were computed (``"exact"`` or ``"lowrank"`` with its rank and fallbacks).
    centre_means : ndarray (Q, J)
        The kernel means ``K̄_D(c_{q,j})`` at every centre of the workload, which the answers contract
        with ``α`` (kept from the same evaluation, not computed again).
    centre_bound : float
        Proven bound on the absolute error of every kernel mean (max over the centres).
    """

    answers: np.ndarray
    error_bound: float
    seconds: float
    method: str
    centre_means: np.ndarray
    centre_bound: float


def content_hash(a: np.ndarray) -> str:
    """SHA-256 of an array's float64 contents and shape (the cache key of data and workloads)."""
    b = np.ascontiguousarray(a, dtype=np.float64)
    h = hashlib.sha256(repr(b.shape).encode())
    h.update(b.data)
    return h.hexdigest()


def _workload_key(wl: GaussianKernelWorkload) -> str:
    h = hashlib.sha256(repr((wl.sigma, wl.n_queries, wl.J, wl.d)).encode())
    h.update(content_hash(wl.centres).encode())
    h.update(content_hash(wl.alphas).encode())
    return h.hexdigest()


_CACHE: OrderedDict[tuple[str, str, str, float], Truth] = OrderedDict()


def exact_truth(workload: GaussianKernelWorkload, X: np.ndarray, *, method: str = "auto",
                tol: float = DEFAULT_TOL) -> Truth:
    """The true answers of ``workload`` on ``X`` (cached by content; see the module docstring).

    ``method`` and ``tol`` go to :func:`dpkit.queries.exact.exact_answers` (``"exact"``: the GEMM evaluator only).
    """
    X = np.asarray(X, dtype=float)
    key = (content_hash(X), _workload_key(workload), method, float(tol))
    hit = _CACHE.get(key)
    if hit is not None:
        _CACHE.move_to_end(key)
        return hit
    fields = {"data": key[0], "workload": key[1], "method": method, "tol": float(tol).hex()}
    if method == "auto":  # entries from before auto's choice stopped depending on the embedding cache are not reused
        fields["auto"] = "sizes-only"
    fields["centres"] = "kept"  # entries from before the kernel means were kept are not reused
    if method == "lowrank" or (method == "auto" and lowrank_worth(X.shape[0], workload.n_queries * workload.J,
                                                                  FitOptions(tol=float(tol)))):
        fields["fit"] = "blas-single"  # low-rank entries from before the fit's BLAS was held to one thread: not reused
    dkey = disk_cache.entry_key("truth", fields)
    entry = disk_cache.load("truth", dkey)
    shape = (workload.n_queries, workload.J)
    if entry is not None and entry[0]["answers"].shape == shape[:1] and entry[0]["centre_means"].shape == shape:
        arrays, meta = entry
        out = Truth(answers=np.ascontiguousarray(arrays["answers"], dtype=float),
                    error_bound=float.fromhex(meta["error_bound"]), seconds=float(meta["seconds"]), method=meta["method"],
                    centre_means=np.ascontiguousarray(arrays["centre_means"], dtype=float),
                    centre_bound=float.fromhex(meta["centre_bound"]))
    else:
        t0 = time.perf_counter()
        res = exact_answers(workload, X, tol=tol, method=method)
        how = res.method if res.method == "exact" else f"lowrank (rank {res.rank}, {res.n_fallback} fallbacks)"
        assert res.means is not None and res.mean_bounds is not None
        out = Truth(answers=np.asarray(res.answers, dtype=float), error_bound=res.max_bound,
                    seconds=time.perf_counter() - t0, method=how,
                    centre_means=np.ascontiguousarray(res.means, dtype=float),
                    centre_bound=float(res.mean_bounds.max(initial=0.0)))
        disk_cache.save("truth", dkey, {"answers": out.answers, "centre_means": out.centre_means},
                        {"error_bound": float(out.error_bound).hex(), "seconds": out.seconds, "method": out.method,
                         "centre_bound": float(out.centre_bound).hex()})
    out.answers.setflags(write=False)
    out.centre_means.setflags(write=False)
    _CACHE[key] = out
    while len(_CACHE) > MAX_ENTRIES:
        _CACHE.popitem(last=False)
    return out


def clear_truth_cache() -> None:
    """Forget every answer vector cached in memory (the disk cache: ``disk_cache.clear("truth")``)."""
    _CACHE.clear()
