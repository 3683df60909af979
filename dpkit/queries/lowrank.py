"""Low-rank (Nyström) kernel mean embedding of a data set, with a proven bound on every answer.

A Gaussian-kernel query sees the data only through the kernel mean embedding ``m_D`` (thesis Sec 3.1).

1. :meth:`KernelEmbedding.fit` chooses ``r`` landmarks once per (data set, σ) (:mod:`dpkit.queries.landmarks`) and
   coefficients ``β`` by the Nyström projection, so a centre costs ``r`` kernel values instead of ``n``.
2. With ``g`` the exact residual of the stored ``β``, every answer satisfies
   ``|g(c)| ≤ ‖P_W g‖ + ‖g‖·√e_W(c)`` (the power function of a landmark prefix, :mod:`dpkit.queries.certificate`).
3. The bound adds the rounding of the kernel values (:func:`~dpkit.queries.accurate.kernel_value_bound`) and of the
   sums, so it holds for the computed float64 answers.

The derivation: ``docs/science/derivations.md``; measured ranks and speed-ups: ``docs/performance_notes.md``.
"""
from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.linalg as sla

from dpkit.core.rng import RNGLike, resolve_rng
from dpkit.core.threads import one_blas_thread
from dpkit.core.validation import check_finite_array, check_positive_int, check_real_in_range
from dpkit.queries.accurate import (
    EVAL_SLACK,
    Augmented,
    kernel_block,
    kernel_mean_norm_sq,
    kernel_value_bound,
    weighted_kernel_sums,
)
from dpkit.queries.certificate import PrefixQuadratic, lambda_min_lower, mmd_bound, prefix_residual_bound
from dpkit.queries.gemm import deduplicate, run_blocks, usable_cores
from dpkit.queries.landmarks import greedy_landmarks
from dpkit.queries.rounding import UNIT_ROUNDOFF_F64, gamma
from dpkit.queries.workload import GaussianKernelWorkload

__all__ = ["KernelEmbedding", "FitOptions"]

_BLOCK = 256


@dataclass(frozen=True, kw_only=True)
class FitOptions:
    """Parameters of :meth:`KernelEmbedding.fit` (frozen, hashable: part of the cache key).

    Attributes
    ----------
    tol : float
        Target absolute bound per answer; phase 2 of the greedy stops once
        ``‖g‖² ≤ (tol/2)² / (2·prefix residual)``.
    max_rank, max_prefix : int
        Landmark and prefix budgets (the rank is also capped at half the distinct rows: beyond
        that the evaluator is cheaper per centre).
    prefix_diag : float
        Largest pool residual diagonal at which the P-greedy prefix stops.
    pivot_floor : float
        Smallest residual diagonal of a pivot (conditioning of ``K_ZZ``).
    pool_data, pool_cube : int
        Pool: that many distinct data rows (all if fewer) and uniform points of ``[-1, 1]^d``.
    seed : int
        Seed of the pool draw (same seed ⇒ same landmarks ⇒ same answers, bit for bit).
    """

    tol: float = 1e-6
    max_rank: int = 4000
    max_prefix: int = 256
    prefix_diag: float = 0.02
    pivot_floor: float = 1e-9
    pool_data: int = 6000
    pool_cube: int = 6000
    seed: int = 0

    def __post_init__(self) -> None:
        check_real_in_range(self.tol, name="tol", low=0.0, low_inclusive=False)
        for name in ("max_rank", "max_prefix", "pool_data"):
            check_positive_int(getattr(self, name), name=name)
        if not isinstance(self.pool_cube, int) or self.pool_cube < 0:
            raise ValueError(f"pool_cube must be a non-negative int; got {self.pool_cube!r}")
        check_real_in_range(self.prefix_diag, name="prefix_diag", low=0.0, high=1.0, low_inclusive=False)
        check_real_in_range(self.pivot_floor, name="pivot_floor", low=0.0, high=1.0, low_inclusive=False)
        if not isinstance(self.seed, int) or self.seed < 0:
            raise ValueError(f"seed must be a non-negative int; got {self.seed!r}")


def _unique_weighted(X: Any, weights: Any | None) -> tuple[np.ndarray, np.ndarray]:
    P = check_finite_array(X, name="X", ndim=2, min_rows=1)
    if weights is None:
        P, counts = np.unique(P, axis=0, return_counts=True)
        return P, counts / float(counts.sum())
    w = check_finite_array(weights, name="weights", ndim=1)
    if w.shape[0] != P.shape[0] or np.any(w < 0):
        raise ValueError(f"weights must be non-negative with one entry per row of X ({P.shape[0]}); got shape {w.shape}")
    return deduplicate(P, w)


def _pool(P: np.ndarray, opts: FitOptions, rng: RNGLike) -> np.ndarray:
    g = resolve_rng(rng)
    n, d = P.shape
    rows = P if n <= opts.pool_data else P[np.sort(g.choice(n, opts.pool_data, replace=False))]
    return np.vstack([rows, g.uniform(-1.0, 1.0, size=(opts.pool_cube, d))])


def _project(K: np.ndarray, b: np.ndarray, chol: np.ndarray | None) -> np.ndarray:
    """Nyström coefficients ``K β = b`` by Cholesky (given, or of ``K``; least squares if ``K`` is numerically
    singular) with two steps of iterative refinement (smaller residuals, smaller ``‖P_W g‖``)."""
    try:
        factor = (chol, True) if chol is not None else sla.cho_factor(K, lower=True)
    except np.linalg.LinAlgError:
        return np.linalg.lstsq(K, b, rcond=None)[0]
    beta = sla.cho_solve(factor, b)
    for _ in range(2):
        beta = beta + sla.cho_solve(factor, b - K @ beta)
    return beta


@dataclass(frozen=True, kw_only=True, eq=False)
class KernelEmbedding:
    """Landmarks, coefficients and certificates of ``m_D`` for one (data set, σ); answers any workload of that σ.

    Build with :meth:`fit`. Attributes ``landmarks`` (r, d), ``beta`` (r,), ``n_prefix`` = r',
    ``mmd`` ≥ ‖g‖, ``eps_prefix`` ≥ ‖P_W g‖ and ``info`` (timings, selection diagnostics).
    The landmarks include data rows: an evaluation object, never a release.
    """

    sigma: float
    landmarks: np.ndarray
    beta: np.ndarray
    n_prefix: int
    prefix: PrefixQuadratic
    mmd: float
    eps_prefix: float
    n_unique: int
    info: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @property
    def rank(self) -> int:
        return int(self.landmarks.shape[0])

    @property
    def d(self) -> int:
        return int(self.landmarks.shape[1])

    # ------------------------------------------------------------------ construction
    @classmethod
    @one_blas_thread
    def fit(
        cls,
        X: Any,
        sigma: float,
        *,
        weights: Any | None = None,
        options: FitOptions | None = None,
        n_threads: int | None = None,
    ) -> "KernelEmbedding":
        """Fit the embedding of ``X`` (rows weighted by multiplicity, or by ``weights``) at width ``sigma``.

        Cost: ``n²/2`` float64 kernel values for ``‖m_D‖²``, ``N·n`` for ``m_D`` on the pool
        (``N = pool_data + pool_cube``), ``O(N r²)`` for the greedy, ``O(r³)`` for the solve.

        BLAS and LAPACK run on one thread throughout (the kernel sums still use ``n_threads`` evaluator threads, whose
        blocks are summed in a fixed order), so the embedding is the same bits whatever the number of cores.
        """
        opts = options or FitOptions()
        sigma = check_real_in_range(sigma, name="sigma", low=0.0, low_inclusive=False)
        t0 = time.perf_counter()
        P, w = _unique_weighted(X, weights)
        data = Augmented(P, sigma)
        norm_sq, rho_norm = kernel_mean_norm_sq(data, w, sigma, n_threads=n_threads)
        t_norm = time.perf_counter()
        pool = Augmented(_pool(P, opts, opts.seed), sigma)
        pool_means, rho_b = weighted_kernel_sums(pool, data, w, sigma, n_threads=n_threads)
        t_pool = time.perf_counter()
        sel = greedy_landmarks(
            pool,
            pool_means,
            norm_sq,
            max_rank=min(opts.max_rank, max(P.shape[0] // 2, 1)),  # beyond n/2 the evaluator is cheaper
            max_prefix=opts.max_prefix,
            prefix_diag=opts.prefix_diag,
            pivot_floor=opts.pivot_floor,
            tol=opts.tol,
        )
        t_sel = time.perf_counter()
        piv = sel.pivots
        emb = cls.from_landmarks(
            P,
            sigma,
            pool.a[piv, : P.shape[1]],
            weights=w,
            n_prefix=sel.n_prefix,
            norm_sq=(norm_sq, rho_norm),
            means=(pool_means[piv], rho_b),
            chol=sel.chol,
            n_threads=n_threads,
        )
        t_end = time.perf_counter()
        emb.info.update(
            pool=int(pool.n),
            stop_reason=sel.stop_reason,
            g2_greedy=sel.g2_estimate,
            prefix_residual=sel.prefix_residual,
            seconds={
                "norm_sq": t_norm - t0,
                "pool_means": t_pool - t_norm,
                "select": t_sel - t_pool,
                "certify": t_end - t_sel,
                "total": t_end - t0,
            },
        )
        return emb

    @classmethod
    @one_blas_thread
    def from_landmarks(
        cls,
        X: Any,
        sigma: float,
        landmarks: Any,
        *,
        n_prefix: int,
        weights: Any | None = None,
        beta: Any | None = None,
        norm_sq: tuple[float, float] | None = None,
        means: tuple[np.ndarray, float] | None = None,
        chol: np.ndarray | None = None,
        n_threads: int | None = None,
    ) -> "KernelEmbedding":
        """Certify given landmarks (the first ``n_prefix`` form ``W``) and coefficients for the data ``X``.

        ``beta`` defaults to the Nyström projection ``K_ZZ β = b`` (Cholesky ``chol`` of ``K_ZZ``
        if given, two steps of iterative refinement). ``norm_sq = (‖m_D‖², relative bound)`` and
        ``means = (m_D(Z), relative bound)`` are computed when not given (the fit passes them).
        Any ``beta`` is certified correctly — a poor one just gets a large bound.
        """
        sigma = check_real_in_range(sigma, name="sigma", low=0.0, low_inclusive=False)
        P, w = _unique_weighted(X, weights)
        Z = Augmented(check_finite_array(landmarks, name="landmarks", ndim=2, min_rows=1), sigma)
        if Z.d != P.shape[1] or not 0 <= n_prefix <= Z.n:
            raise ValueError(f"landmarks must have d = {P.shape[1]} columns and 0 <= n_prefix <= {Z.n}; got {Z.d}, {n_prefix}")
        if norm_sq is None:
            norm_sq = kernel_mean_norm_sq(Augmented(P, sigma), w, sigma, n_threads=n_threads)
        b, rho_b = means if means is not None else weighted_kernel_sums(Z, Augmented(P, sigma), w, sigma, n_threads=n_threads)
        K = kernel_block(Z.b, Z.a)
        rho_K = kernel_value_bound(Z.d, sigma, Z.max_norm, Z.max_norm)
        if beta is None:
            beta = _project(K, b, chol)
        beta = check_finite_array(beta, name="beta", ndim=1)
        g2_est, mmd = mmd_bound(norm_sq[0], norm_sq[1], b, rho_b, beta, K, rho_K)
        rp = int(n_prefix)
        lam = lambda_min_lower(K[:rp, :rp], rho_K)
        rho_W, eps = prefix_residual_bound(b[:rp], rho_b, K[:rp], rho_K, beta, lam)
        emb = cls(
            sigma=sigma,
            landmarks=np.ascontiguousarray(Z.a[:, : Z.d]),
            beta=np.ascontiguousarray(beta),
            n_prefix=rp,
            prefix=PrefixQuadratic.build(K[:rp, :rp], rho_K),
            mmd=mmd,
            eps_prefix=eps,
            n_unique=int(P.shape[0]),
        )
        emb.info.update(
            n_unique=int(P.shape[0]),
            norm_sq=float(norm_sq[0]),
            g2_estimate=g2_est,
            lambda_min_prefix=lam,
            max_prefix_residual=float(np.abs(rho_W).max(initial=0.0)),
        )
        return emb

    # ------------------------------------------------------------------ persistence
    def to_arrays(self) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        """``(arrays, meta)`` that :meth:`from_arrays` turns back into an equal embedding (bit for bit)."""
        arrays = {"landmarks": self.landmarks, "beta": self.beta, "prefix_B": self.prefix.B}
        meta = {
            "sigma": float(self.sigma).hex(), "n_prefix": int(self.n_prefix), "mmd": float(self.mmd).hex(),
            "eps_prefix": float(self.eps_prefix).hex(), "n_unique": int(self.n_unique),
            "eta": [float(v).hex() for v in (self.prefix.eta_E, self.prefix.eta_A, self.prefix.eta_B)],
            "info": json.loads(json.dumps(self.info, default=float)),
        }
        return arrays, meta

    @classmethod
    def from_arrays(cls, arrays: dict[str, np.ndarray], meta: dict[str, Any]) -> "KernelEmbedding":
        """The embedding stored by :meth:`to_arrays` (floats travel as hex strings: exact)."""
        eta_E, eta_A, eta_B = (float.fromhex(v) for v in meta["eta"])
        emb = cls(
            sigma=float.fromhex(meta["sigma"]),
            landmarks=np.ascontiguousarray(arrays["landmarks"], dtype=np.float64),
            beta=np.ascontiguousarray(arrays["beta"], dtype=np.float64),
            n_prefix=int(meta["n_prefix"]),
            prefix=PrefixQuadratic(np.ascontiguousarray(arrays["prefix_B"], dtype=np.float64), eta_E, eta_A, eta_B),
            mmd=float.fromhex(meta["mmd"]),
            eps_prefix=float.fromhex(meta["eps_prefix"]),
            n_unique=int(meta["n_unique"]),
        )
        emb.info.update(meta.get("info") or {})
        return emb

    # ------------------------------------------------------------------ evaluation
    def kernel_means(self, centres: Any, *, n_threads: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        """``(m̂(c), bound)`` for every centre: ``|m_D(c) − m̂(c)| ≤ bound`` (module docs), shape (M,) each."""
        C = check_finite_array(centres, name="centres", ndim=2)
        if C.shape[1] != self.d:
            raise ValueError(f"centres must have d = {self.d} columns (the embedding's dimension); got shape {C.shape}")
        Z = Augmented(self.landmarks, self.sigma)
        cen = Augmented(C, self.sigma)
        rho_k = kernel_value_bound(self.d, self.sigma, Z.max_norm, cen.max_norm)
        coef = np.stack([self.beta, np.abs(self.beta)], axis=1)
        M, rp = C.shape[0], self.n_prefix
        means, absmeans, power = np.empty(M), np.empty(M), np.empty(M)

        def task(i0: int) -> None:
            i1 = min(i0 + _BLOCK, M)
            E = kernel_block(cen.b[i0:i1], Z.a)
            mt = E @ coef
            means[i0:i1], absmeans[i0:i1] = mt[:, 0], mt[:, 1]
            power[i0:i1] = self.prefix.power_bound(E[:, :rp], rho_k)

        starts = list(range(0, M, _BLOCK))
        threads = usable_cores() if n_threads is None else check_positive_int(n_threads, name="n_threads")
        run_blocks(task, starts, max(1, min(threads, len(starts))))
        g_r = gamma(self.rank, UNIT_ROUNDOFF_F64)
        nu = (rho_k / (1.0 - rho_k) + g_r) * absmeans / (1.0 - g_r)
        bound = (self.eps_prefix + self.mmd * np.sqrt(power) + nu) * (1.0 + EVAL_SLACK)
        return means, bound

    def answer(self, workload: GaussianKernelWorkload, *, n_threads: int | None = None,
               return_means: bool = False) -> tuple[np.ndarray, ...]:
        """``(q̂, bound)`` per query: ``q̂ = Σ_j α_j m̂(c_j)`` and ``|q̂ − q_f(D)| ≤ bound`` (shape (Q,) each).

        With ``return_means`` also the (Q, J) kernel means ``m̂(c_{q,j})`` and their bounds
        ``|m̂(c) − K̄_D(c)|`` (the answers are the same bits either way)."""
        if not isinstance(workload, GaussianKernelWorkload):
            raise TypeError(f"workload must be a GaussianKernelWorkload; got {type(workload).__name__}")
        if workload.sigma != self.sigma:
            raise ValueError(f"workload has sigma = {workload.sigma:g} but the embedding was fitted at sigma = {self.sigma:g}")
        m, bc = self.kernel_means(workload.flat_centres, n_threads=n_threads)
        m, bc = m.reshape(workload.n_queries, workload.J), bc.reshape(workload.n_queries, workload.J)
        ans = np.einsum("qj,qj->q", workload.alphas, m)
        g_J = gamma(workload.J, UNIT_ROUNDOFF_F64)
        bound = (np.einsum("qj,qj->q", workload.alphas, bc) + g_J * np.einsum("qj,qj->q", workload.alphas, np.abs(m)))
        if return_means:
            return ans, bound * (1.0 + EVAL_SLACK), m, bc
        return ans, bound * (1.0 + EVAL_SLACK)
