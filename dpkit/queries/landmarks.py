"""Landmark selection for the low-rank kernel embedding: greedy pivoted Cholesky in two phases.

The certificate of :mod:`dpkit.queries.lowrank` bounds the error at a centre by ``‖P_W g‖ + ‖g‖·√e_W(c)``; the two
factors want different landmarks, so the greedy pivoted Cholesky on a pool (data rows and uniform points of the
cube) runs in two phases, taking pivots in batches:

1. **P-greedy prefix**: pivot on the largest residual diagonal until ``prefix_diag`` or ``max_prefix``.
2. **f-greedy** (orthogonal matching pursuit on ``m_D``): pivot on the largest decrease of ``‖P⊥ m_D‖²`` until the
   target or ``max_rank``, among candidates with a residual diagonal ``> pivot_floor``.

The selection is a heuristic: nothing in the certificate depends on how it was made (``docs/science/derivations.md``).

References
----------
S. Müller, *Komplexität und Stabilität von kernbasierten Rekonstruktionsmethoden*, PhD thesis,
Göttingen 2009 (P-greedy); G. Santin and B. Haasdonk, "Convergence rate of the data-independent
P-greedy algorithm in kernel-based approximation", Dolomites Res. Notes Approx. 10 (2017);
D. Wirtz and B. Haasdonk, "A vectorial kernel orthogonal greedy algorithm", DRNA 6 (2013) (f-greedy).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dpkit.core.threads import limit_threads
from dpkit.queries.accurate import Augmented, kernel_block

__all__ = ["GreedyResult", "greedy_landmarks"]


@dataclass(frozen=True, kw_only=True)
class GreedyResult:
    """Pivots (pool indices, in order), the Cholesky factor of their kernel matrix and diagnostics."""

    pivots: np.ndarray
    chol: np.ndarray  # (r, r) lower triangular, K_ZZ ≈ chol @ chol.T
    n_prefix: int
    prefix_residual: float  # max residual diagonal over the pool after the prefix
    g2_estimate: float  # running ‖m_D‖² − ‖P m_D‖² (float64, uncertified)
    stop_reason: str


class _Greedy:
    """State of the pivoted Cholesky on the pool: columns ``L`` (r × N), residual diagonal and residual of m_D."""

    def __init__(self, pool: Augmented, pool_means: np.ndarray, norm_sq: float, max_rank: int) -> None:
        self.pool = pool
        self.L = np.empty((max_rank, pool.n))
        self.diag = np.ones(pool.n)
        self.res = pool_means.astype(np.float64, copy=True)
        self.norm_sq = norm_sq
        self.proj = 0.0
        self.pivots: list[int] = []

    @property
    def g2(self) -> float:
        return self.norm_sq - self.proj

    def criterion(self, prefix: bool, floor: float) -> np.ndarray:
        if prefix:
            return self.diag.copy()
        ok = self.diag > floor
        return np.where(ok, self.res**2 / np.where(ok, self.diag, 1.0), 0.0)

    def batch(self, cands: np.ndarray, prefix: bool, floor: float, accept_ratio: float, room: int) -> int:
        """Try ``cands`` (best first); returns the number of pivots accepted.

        A candidate is skipped when its residual diagonal fell below ``floor`` or below a tenth
        of its value at the start of the batch (it is nearly dependent on a pivot just taken:
        the next batch re-ranks it), when its rule value fell below ``accept_ratio`` times the
        batch's best, or when its projection coefficient would remove more than the remaining
        ``‖m_D‖² − ‖P m_D‖²`` (impossible in exact arithmetic: a sign of cancellation).
        """
        t0 = len(self.pivots)
        C = kernel_block(self.pool.b[cands], self.pool.a)  # (k, N) kernel rows
        if t0:
            C -= self.L[:t0, cands].T @ self.L[:t0]
        d_start = self.diag[cands].copy()
        best = None
        taken = 0
        for a, i in enumerate(cands):
            if taken == room:
                break
            col = C[a]
            t = t0 + taken
            if taken:  # orthogonalise against the pivots accepted in this batch
                col -= self.L[t0:t, i] @ self.L[t0:t]
            d = self.diag[i]
            crit = d if prefix else (self.res[i] ** 2 / d if d > floor else 0.0)
            best = crit if best is None else best
            if d <= floor or d < 0.1 * d_start[a] or crit <= accept_ratio * best:
                continue
            col /= np.sqrt(d)
            coef = self.res[i] / col[i]
            if not prefix and coef * coef > self.g2:
                continue
            self.L[t] = col
            self.diag -= col * col
            np.maximum(self.diag, 0.0, out=self.diag)
            self.diag[i] = 0.0
            self.res -= coef * col
            self.proj += coef * coef
            self.pivots.append(int(i))
            taken += 1
        return taken


def greedy_landmarks(
    pool: Augmented,
    pool_means: np.ndarray,
    norm_sq: float,
    *,
    max_rank: int,
    max_prefix: int,
    prefix_diag: float,
    pivot_floor: float,
    tol: float | None,
    batch: int = 32,
) -> GreedyResult:
    """Two-phase greedy pivoted Cholesky on ``pool`` (module docs).

    Parameters
    ----------
    pool : Augmented
        Candidate points (GEMM rows, :class:`~dpkit.queries.accurate.Augmented`).
    pool_means : array (N,)
        ``m_D`` at the pool points (for the f-greedy rule).
    norm_sq : float
        ``‖m_D‖²`` (for the running estimate of ``‖g‖²``).
    max_rank, max_prefix : int
        Landmark budget and prefix budget.
    prefix_diag : float
        Stop the prefix once the pool's largest residual diagonal is ≤ this.
    pivot_floor : float
        Minimal residual diagonal of an accepted pivot.
    tol : float or None
        Target bound per answer: phase 2 stops once the running ``‖m_D‖² − ‖P m_D‖²`` is
        ``≤ (tol/2)² / (2·prefix residual)`` (so that ``‖g‖·√e_W ≤ tol/2`` where ``e_W`` is at
        most twice the pool's residual); None: run to ``max_rank``.
    batch : int
        Candidates per batch.
    """
    with limit_threads(1):  # many small GEMMs: BLAS threads only cost here
        st = _Greedy(pool, pool_means, norm_sq, min(max_rank, pool.n))
        return _run(st, max_prefix, prefix_diag, pivot_floor, tol, batch)


def _run(st: _Greedy, max_prefix: int, prefix_diag: float, pivot_floor: float, tol: float | None, batch: int) -> GreedyResult:
    max_rank = st.L.shape[0]
    n_prefix, prefix_residual, reason = 0, 1.0, "max_rank"
    prefix, g2_target = True, None
    while len(st.pivots) < max_rank:
        t = len(st.pivots)
        if prefix and (t >= max_prefix or float(st.diag.max()) <= prefix_diag):
            prefix, n_prefix, prefix_residual = False, t, float(st.diag.max())
            g2_target = None if tol is None else (tol / 2.0) ** 2 / (2.0 * max(prefix_residual, 1e-300))
        if g2_target is not None and st.g2 <= g2_target:
            reason = "target"
            break
        room = min(max_rank - t, max_prefix - t if prefix else batch, batch)
        crit = st.criterion(prefix, pivot_floor)
        k = min(room, int(np.count_nonzero(crit > 0)))
        if k == 0:
            reason = "no_candidates"
            break
        cands = np.argpartition(-crit, k - 1)[:k]
        cands = cands[np.argsort(-crit[cands], kind="stable")]
        if st.batch(cands, prefix, pivot_floor, 0.5 if prefix else 0.05, room) == 0:
            reason = "no_candidates"
            break
    if prefix:
        n_prefix, prefix_residual = len(st.pivots), float(st.diag.max())
    r = len(st.pivots)
    piv = np.asarray(st.pivots, dtype=np.int64)
    chol = np.tril(st.L[:r, piv].T)  # entries above the diagonal are rounding residue of zeros
    return GreedyResult(
        pivots=piv,
        chol=chol,
        n_prefix=n_prefix,
        prefix_residual=prefix_residual,
        g2_estimate=float(st.g2),
        stop_reason=reason,
    )
