"""A certified upper bound on the class supremum of a weighted database, in any dimension: the kernel MMD.

:func:`sup_upper` bounds ``sup_c |E(c)|`` from above for every weighted database (synthetic data), in closed form,
over every centre of ``R^d`` (the class (2.1) as defined [1], not only the cube); :mod:`dpkit.queries.supremum`
gives the certified lower bound. The derivation, the rounding analysis and how loose the bound is on real releases
are on the page ``docs/class_supremum.md`` (section 6).

Algorithm
---------
1. In the RKHS of the positive-definite kernel ``k`` (``k(c, c) = 1``), ``E(c) = ⟨μ_D̂ − μ_D, k_c⟩``, so
   ``|E(c)| ≤ MMD(D̂, D)`` for every ``c`` by Cauchy–Schwarz [2, 3].
2. ``MMD² = A − 2B + C`` from sums of non-negative terms with proven relative bounds (:mod:`dpkit.queries.accurate`)
   [4]; the bound is ``√max(0, est + err)`` rounded up, never below the MMD.
3. Above ``lowrank_above`` rows the data side is the low-rank embedding (:mod:`dpkit.queries.lowrank`), at most
   ``2·mmd`` over the exact MMD; the self-term ``C`` is cached (:mod:`dpkit.queries.disk_cache`).
4. ``certify="auto"`` (d ≤ 8, :data:`CERTIFY_BUDGET`): the branch and bound replaces the MMD when smaller.

A release that only answers its workload, or a released answer function (random features), gives
``applicable=False`` with the reason.

References
----------
[1] J. Huang, *An Efficient Private Mechanism for Smooth Queries with Synthetic Database
    Output*, master's thesis, Peking University, 2014, (2.1).
[2] A. Gretton, K. M. Borgwardt, M. J. Rasch, B. Schölkopf, A. Smola, "A kernel two-sample test",
    JMLR 13, 2012 (the MMD as the supremum over the RKHS unit ball).
[3] A. Berlinet, C. Thomas-Agnan, *Reproducing Kernel Hilbert Spaces in Probability and Statistics*,
    Kluwer, 2004.
[4] N. J. Higham, *Accuracy and Stability of Numerical Algorithms*, 2nd ed., SIAM, 2002 (Sec 3.1, 4.2).
"""
from __future__ import annotations

import math
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

import numpy as np

from dpkit.core.threads import limit_threads
from dpkit.core.validation import check_choice, check_int_in_range
from dpkit.queries import disk_cache
from dpkit.queries.accurate import (
    EVAL_SLACK,
    Augmented,
    compound,
    kernel_block,
    kernel_mean_norm_sq,
    kernel_value_bound,
    weighted_kernel_sums,
)
from dpkit.queries.certificate import mmd_bound
from dpkit.queries.exact import DEFAULT_TOL, data_hash, embedding_for
from dpkit.queries.lowrank import FitOptions
from dpkit.queries.rounding import UNIT_ROUNDOFF_F64
from dpkit.queries.supremum import (
    LOWRANK_ABOVE,
    AnswerFunction,
    ClassSupremum,
    certify_supremum,
    check_supremum_inputs,
    resolve_released,
)

__all__ = ["SupremumUpper", "sup_upper", "mmd_upper", "data_self_term", "clear_self_term_cache", "CERTIFY_BUDGET",
           "CERTIFY_MODES"]

_U = UNIT_ROUNDOFF_F64
#: ``certify`` choices of :func:`sup_upper`.
CERTIFY_MODES = ("auto", "always", "never")
#: ``certify="auto"`` runs the branch and bound when ``max_boxes · (n + s)`` kernel values (with gradients) stay
#: below this (about a second of one core; CSN's 10⁵ rows exceed it at any useful budget).
CERTIFY_BUDGET = 20_000_000
_SELF_CACHE: OrderedDict[tuple[str, float], tuple[float, float]] = OrderedDict()
_SELF_CACHE_SIZE = 64
_SELF_LOCK = threading.Lock()


@dataclass(frozen=True, kw_only=True, eq=False)
class SupremumUpper:
    """A certified upper bound on ``sup_c |E(c)|`` for one release (:func:`sup_upper`).

    Attributes
    ----------
    applicable : bool
        False for a release without a weighted database (then every number is None).
    reason : str
        Why not applicable ("" when applicable).
    upper : float or None
        The bound: ``|E(c)| ≤ upper`` for every centre of ``domain`` (exact arithmetic on the stored
        data and release), the smaller of ``mmd_upper`` and ``certified_upper``.
    bound : str
        Which gave ``upper``: ``"mmd"`` or ``"branch-and-bound"``.
    mmd_upper : float or None
        ``≥ ‖μ_D̂ − μ_D‖`` with its rounding (and, on the low-rank side, plus ``surrogate_bound``); valid on all
        of ``R^d``.
    mmd_estimate : float or None
        ``√max(0, est)``: the computed MMD (on the low-rank side ``‖μ_D̂ − μ̃‖``) without the rounding bound.
    rounding_bound : float or None
        ``err``: the proven bound on ``|est − MMD²|`` (module docs; on the low-rank side that of
        ``‖μ_D̂ − μ̃‖²``).
    data_side : str
        ``"exact"`` (the data's self-term) or ``"lowrank"`` (the embedding and the triangle inequality).
    rank : int
        Landmarks of the embedding (0 for ``"exact"``).
    surrogate_bound : float or None
        ``≥ ‖μ_D − μ̃‖`` on the low-rank side (the embedding's ``mmd``), None for ``"exact"``.
    self_cached : bool
        The self-term ``C`` (or the embedding) came from the memory or disk cache.
    terms : tuple of float or None
        ``(Â, B̂, Ĉ)`` of the data side ``"exact"`` (``MMD² ≈ Â − 2B̂ + Ĉ``; None on the low-rank side).
    certified_upper : float or None
        The branch and bound's upper bound over ``domain`` (None when it did not run).
    certified_finished : bool
        The branch and bound closed its gap within its budget.
    domain : str
        ``"space"`` (every centre of ``R^d``) or ``"cube"``: the class ``upper`` is claimed for.
    sigma : float or None
    n_kernel_values : int
        Kernel values the MMD took (the self-term's ``n²/2`` only when it was computed here; an embedding fitted
        here is not counted: its fit is the exact answers' and the search's too).
    seconds : float
    """

    applicable: bool
    reason: str = ""
    upper: float | None = None
    bound: str = ""
    mmd_upper: float | None = None
    mmd_estimate: float | None = None
    rounding_bound: float | None = None
    data_side: str = "exact"
    rank: int = 0
    surrogate_bound: float | None = None
    self_cached: bool = False
    terms: tuple[float, float, float] | None = None
    certified_upper: float | None = None
    certified_finished: bool = False
    domain: str = "space"
    sigma: float | None = None
    n_kernel_values: int = 0
    seconds: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        """Scalars for run records."""
        return {k: getattr(self, k) for k in ("applicable", "reason", "upper", "bound", "mmd_upper", "mmd_estimate",
                                              "rounding_bound", "data_side", "rank", "surrogate_bound", "self_cached",
                                              "terms", "certified_upper", "certified_finished", "domain", "sigma",
                                              "n_kernel_values", "seconds")}


def _prime(rho: float) -> float:
    return rho / (1.0 - rho)


def _check_exponents(d: int, sigma: float, norm_a: float, norm_b: float) -> None:
    """The GEMM-form kernel values keep their relative bound while ``s(‖p‖ + ‖c‖)² ≤ 700`` (no underflow)."""
    x = (norm_a + norm_b) ** 2 / (2.0 * sigma * sigma)
    if x > 700.0:
        raise ValueError(f"sigma = {sigma:g} is too small for the MMD bound in d = {d}: exponents down to −{x:.4g} "
                         "underflow float64 exp, where the kernel values' relative rounding bound fails "
                         "(needs (‖p‖ + ‖c‖)²/(2σ²) ≤ 700)")


def _unique_data(P: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    Xu, counts = np.unique(P, axis=0, return_counts=True)
    return Xu, counts / float(P.shape[0])


def clear_self_term_cache() -> None:
    """Forget the self-terms kept in memory (the disk cache: ``disk_cache.clear("mmd_self")``)."""
    with _SELF_LOCK:
        _SELF_CACHE.clear()


def _self_disk_key(h: str, sigma: float) -> str:
    return disk_cache.entry_key("mmd_self", {"data": h, "sigma": float(sigma).hex(), "sum": "pairwise-fsum",
                                             "blas": "single"})


def data_self_term(X: Any, sigma: float, *, cache: bool = True,
                   n_threads: int | None = None) -> tuple[float, float, bool]:
    """``C = (1/n²) Σ_ij k(x_i, x_j) = ‖μ_D‖²`` of the data at width ``sigma``, its relative bound, and whether it
    came from a cache.

    Computed once per (data, σ) with :func:`~dpkit.queries.accurate.kernel_mean_norm_sq` on the distinct rows
    (weights = multiplicities / n; ``n_u²/2`` kernel values, BLAS on one thread, so the same bits on any machine)
    and kept in memory and in the disk cache (kind ``mmd_self``, keyed by the data's content and σ).

    Returns
    -------
    tuple of float, float, bool
        ``(Ĉ, ρ_C, cached)`` with ``|Ĉ − C| ≤ ρ_C·C``.
    """
    P, sigma = check_supremum_inputs(X, sigma, "space")
    h = data_hash(P)
    key = (h, float(sigma))
    if cache:
        with _SELF_LOCK:
            if key in _SELF_CACHE:
                _SELF_CACHE.move_to_end(key)
                return (*_SELF_CACHE[key], True)
        entry = disk_cache.load("mmd_self", _self_disk_key(h, sigma))
        if entry is not None:
            meta = entry[1]
            val = (float.fromhex(meta["value"]), float.fromhex(meta["rho"]))
            _remember_self(key, val)
            return (*val, True)
    Xu, wx = _unique_data(P)
    xa = Augmented(Xu, sigma)
    _check_exponents(P.shape[1], sigma, xa.max_norm, xa.max_norm)
    with limit_threads(1):
        C, rho_C = kernel_mean_norm_sq(xa, wx, sigma, n_threads=n_threads)
    if cache:
        _remember_self(key, (C, rho_C))
        disk_cache.save("mmd_self", _self_disk_key(h, sigma), {},
                        {"value": float(C).hex(), "rho": float(rho_C).hex(), "n_unique": int(Xu.shape[0])})
    return C, rho_C, False


def _remember_self(key: tuple[str, float], val: tuple[float, float]) -> None:
    with _SELF_LOCK:
        _SELF_CACHE[key] = val
        _SELF_CACHE.move_to_end(key)
        while len(_SELF_CACHE) > _SELF_CACHE_SIZE:
            _SELF_CACHE.popitem(last=False)


def mmd_upper(A: float, rho_A: float, B: float, rho_B: float, C: float, rho_C: float) -> tuple[float, float, float]:
    """``(est, err, upper)``: ``est = fsum(A, −2B, C)``, the proven ``err ≥ |est − (A − 2B + C)|`` where ``A, B, C``
    are the exact values of the computed non-negative ``Â, B̂, Ĉ`` (``|Â − A| ≤ ρ_A·A``, …), and
    ``upper = √max(0, est + err)`` rounded up (module docs)."""
    est = math.fsum([A, -2.0 * B, C])
    err = (_prime(rho_A) * A + 2.0 * _prime(rho_B) * B + _prime(rho_C) * C + _U * abs(est)) * (1.0 + EVAL_SLACK)
    upper = math.sqrt(max(est + err, 0.0) * (1.0 + EVAL_SLACK)) * (1.0 + EVAL_SLACK)
    return est, err, upper


def sup_upper(
    X: Any,
    released: Any,
    sigma: float,
    *,
    domain: str = "space",
    lowrank_above: int | None = LOWRANK_ABOVE,
    certify: str = "auto",
    max_boxes: int = 2000,
    initial: ClassSupremum | None = None,
    cache: bool = True,
    n_threads: int | None = None,
) -> SupremumUpper:
    """A certified upper bound on ``sup_c |E(c)|`` over the single-kernel queries (hence the class (2.1)).

    Parameters
    ----------
    X : array (n, d)
        The data ``D`` in ``[-1, 1]^d`` (rows weighted ``1/n``).
    released : WeightedDatabase, AnswerFunction or Release
        As :func:`~dpkit.queries.supremum.class_supremum`; only a weighted database has the bound
        (otherwise ``applicable=False`` with the reason).
    sigma : float
        Kernel width σ (the kernel ``exp(−‖x − c‖²/(2σ²))``).
    domain : {"space", "cube"}
        The centres the bound is claimed for: all of ``R^d`` (default; the MMD bound) or the cube
        (the same MMD bound; a branch and bound over the cube may be tighter).
    lowrank_above : int or None
        Data with more rows than this (default :data:`~dpkit.queries.supremum.LOWRANK_ABOVE`) use the low-rank
        embedding of ``(X, σ)`` and the triangle inequality instead of the ``n²/2`` self-term (module docs).
        None: always the self-term.
    certify : {"auto", "always", "never"}
        Also run :func:`~dpkit.queries.supremum.certify_supremum` (d ≤ 8) and keep the smaller bound:
        ``"auto"`` where it is cheap (``max_boxes·(n + s) ≤`` :data:`CERTIFY_BUDGET`), ``"always"`` (an error for
        d > 8), ``"never"``.
    max_boxes : int
        The branch and bound's budget (default 2,000).
    initial : ClassSupremum, optional
        A :func:`~dpkit.queries.supremum.class_supremum` result of the same inputs and domain: seeds the branch and
        bound's lower bound.
    cache : bool
        Reuse and store the self-term (and the embedding) in the memory and disk caches.
    n_threads : int, optional
        Threads of the kernel sums (default: the usable cores; the result's bits do not depend on it).

    Returns
    -------
    SupremumUpper

    Raises
    ------
    ValueError
        Naming the parameter out of its range; for ``certify="always"`` with d > 8; for a σ so small that
        kernel values underflow (``(‖p‖ + ‖c‖)²/(2σ²) > 700``).

    Notes
    -----
    Cost (kernel values): ``s²/2 + n_u·s`` and, once per (data, σ), ``n_u²/2`` for the self-term (``n_u``
    distinct rows, ``s`` released points); on the low-rank side ``s²/2 + r·s + r²`` (the embedding is the
    exact answers' and the search's, cached). ``benchmarks/supremum_upper.py`` measures it against a board
    repetition.
    """
    t0 = time.perf_counter()
    P, sigma = check_supremum_inputs(X, sigma, domain)
    n, d = P.shape
    check_choice(certify, name="certify", choices=CERTIFY_MODES)
    max_boxes = check_int_in_range(max_boxes, name="max_boxes", low=1)
    if lowrank_above is not None:
        lowrank_above = check_int_in_range(lowrank_above, name="lowrank_above", low=0)
    if certify == "always" and d > 8:
        raise ValueError(f"certify='always' needs d <= 8 (the branch and bound's boxes); the data have d = {d}")
    rel = resolve_released(released, d)
    if isinstance(rel, str) or isinstance(rel, AnswerFunction):
        reason = rel if isinstance(rel, str) else (
            f"{rel.name} is an answer function, not the kernel mean of a weighted point set in the Gaussian "
            "kernel's RKHS: the MMD bound does not apply to it")
        return SupremumUpper(applicable=False, reason=reason, domain=domain, sigma=sigma,
                             seconds=time.perf_counter() - t0)
    keep = rel.weights > 0
    Y = np.ascontiguousarray(rel.points[keep], dtype=np.float64)
    w = np.asarray(rel.weights[keep], dtype=np.float64)
    s = Y.shape[0]
    ya = Augmented(Y, sigma)
    _check_exponents(d, sigma, ya.max_norm, ya.max_norm)
    with limit_threads(1):
        A, rho_A = kernel_mean_norm_sq(ya, w, sigma, n_threads=n_threads)
    kv = s * (s + 1) // 2
    side: dict[str, Any] = {}
    if lowrank_above is not None and n > lowrank_above:
        emb, cached = embedding_for(P, sigma, options=FitOptions(tol=DEFAULT_TOL), cache=cache, n_threads=n_threads)
        za = Augmented(emb.landmarks, sigma)
        _check_exponents(d, sigma, za.max_norm, max(ya.max_norm, za.max_norm))
        with limit_threads(1):
            b, rho_b = weighted_kernel_sums(za, ya, w, sigma, n_threads=n_threads)
            K = kernel_block(za.b, za.a)
        rho_K = kernel_value_bound(d, sigma, za.max_norm, za.max_norm)
        # ‖μ_D̂ − μ̃‖² = A − 2βᵀμ_D̂(Z) + βᵀK_ZZβ: the embedding's certificate with μ_D̂ in place of μ_D
        est, near = mmd_bound(A, rho_A, b, rho_b, emb.beta, K, rho_K)
        mmd = (near + float(emb.mmd)) * (1.0 + EVAL_SLACK)
        err = max(near * near - est, 0.0)
        kv += emb.rank * s + emb.rank * emb.rank
        side = {"data_side": "lowrank", "rank": emb.rank, "surrogate_bound": float(emb.mmd), "self_cached": cached}
    else:
        C, rho_C, cached = data_self_term(P, sigma, cache=cache, n_threads=n_threads)
        Xu, wx = _unique_data(P)
        xa = Augmented(Xu, sigma)
        _check_exponents(d, sigma, ya.max_norm, xa.max_norm)
        with limit_threads(1):
            bvals, rho_b = weighted_kernel_sums(ya, xa, wx, sigma, n_threads=n_threads)
        B = math.fsum((w * bvals).tolist())
        est, err, mmd = mmd_upper(A, rho_A, B, compound(rho_b, 2.0 * _U), C, rho_C)
        kv += s * Xu.shape[0] + (0 if cached else Xu.shape[0] * (Xu.shape[0] + 1) // 2)
        side = {"data_side": "exact", "self_cached": cached, "terms": (A, B, C)}

    certified, finished = None, False
    if certify == "always" or (certify == "auto" and d <= 8 and max_boxes * (n + s) <= CERTIFY_BUDGET):
        iv = certify_supremum(P, rel, sigma, initial=initial, domain=domain, max_boxes=max_boxes)
        certified, finished = float(iv.upper if iv.finished else iv.unfinished_upper), bool(iv.finished)
    upper, which = mmd, "mmd"
    if certified is not None and certified < mmd:
        upper, which = certified, "branch-and-bound"
    return SupremumUpper(
        applicable=True, upper=upper, bound=which, mmd_upper=mmd, mmd_estimate=math.sqrt(max(est, 0.0)),
        rounding_bound=err, certified_upper=certified, certified_finished=finished, domain=domain, sigma=sigma,
        n_kernel_values=int(kv), seconds=time.perf_counter() - t0, **side,
    )
