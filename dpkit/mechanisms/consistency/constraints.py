"""Sparse linear constraint model ``M x = b`` and row-block partitions (Cai et al. 2021, eqs. 4–5, Sec. 4).

The consistent releases of Cai et al. 2021 are the solutions of ``M x = b`` (eq. 5); the optimal
consistent release is the Euclidean projection of the noisy vector onto that affine set
(eq. 6). This module holds the validated constraint system and the row partitions
``M = [M_1; …; M_k]`` used by the alternating-projection method of eq. (8).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from dpkit.core.exceptions import DPKitError
from dpkit.core.rng import RNGLike, resolve_rng
from dpkit.core.validation import check_positive_int

__all__ = [
    "InconsistentConstraintsError",
    "ConstraintSystem",
    "random_partition",
    "contiguous_partition",
    "random_consistent_system",
]

#: above this many dense entries ``m·n`` the consistency check uses LSQR instead of a dense solve
DENSE_CHECK_LIMIT = 4_000_000


class InconsistentConstraintsError(DPKitError, ValueError):
    """``M x = b`` has no solution (Cai et al. 2021 assumes a consistent system, Sec. 3.1)."""


def _as_csr(M: Any) -> sp.csr_matrix:
    if sp.issparse(M):
        A = sp.csr_matrix(M, dtype=float)
    else:
        try:
            arr = np.asarray(M, dtype=float)
        except (TypeError, ValueError) as exc:
            raise TypeError(f"M must be a numeric matrix (array-like or scipy.sparse); {exc}") from None
        if arr.ndim != 2:
            raise ValueError(f"M must be 2-dimensional (m constraints × n variables); got shape {arr.shape}")
        A = sp.csr_matrix(arr)
    if A.data.size and not np.all(np.isfinite(A.data)):
        bad = int(A.data.size - np.count_nonzero(np.isfinite(A.data)))
        raise ValueError(f"M must be finite; it has {bad} non-finite entries (nan or inf)")
    A.eliminate_zeros()
    return A


@dataclass(frozen=True, kw_only=True, eq=False)
class ConstraintSystem:
    """A validated linear system ``M x = b`` (Cai et al. 2021, eq. 5).

    Parameters
    ----------
    M : array-like or scipy.sparse matrix, shape (m, n)
        Constraint matrix (stored as CSR). Finite entries, ``m ≥ 1`` rows, ``n ≥ 1`` columns.
    b : array-like, shape (m,), optional
        Right-hand side (default 0). Finite.
    check_consistency : bool
        Verify that the system has a solution (default True). Skipped automatically when
        ``b = 0`` (always consistent). The check solves the least-squares problem
        ``min ‖Mx − b‖`` (dense for ``m·n ≤ 4·10⁶``, LSQR otherwise) and requires the residual
        to be at most ``rtol·(‖M‖_F‖x‖ + ‖b‖)``.
    rtol : float
        Relative tolerance of the consistency check (default 1e-8).

    Raises
    ------
    ValueError
        Wrong shapes, empty systems, non-finite values.
    InconsistentConstraintsError
        ``M x = b`` has no solution.
    """

    M: Any
    b: Any = None
    check_consistency: bool = True
    rtol: float = 1e-8
    consistency_residual: float = field(default=0.0, init=False)

    def __post_init__(self) -> None:
        A = _as_csr(self.M)
        m, n = A.shape
        if m < 1 or n < 1:
            raise ValueError(f"M must have at least one row and one column; got shape {A.shape}")
        if self.b is None:
            b = np.zeros(m)
        else:
            try:
                b = np.asarray(self.b, dtype=float)
            except (TypeError, ValueError) as exc:
                raise TypeError(f"b must be a numeric vector; {exc}") from None
            if b.ndim == 2 and b.shape[1] == 1:
                b = b[:, 0]
            if b.ndim != 1 or b.shape[0] != m:
                raise ValueError(f"b must have shape ({m},) to match M with {m} rows; got shape {b.shape}")
            if not np.all(np.isfinite(b)):
                raise ValueError(f"b must be finite; it has {int(b.size - np.count_nonzero(np.isfinite(b)))} non-finite entries")
        if not (np.isfinite(self.rtol) and 0 < self.rtol < 1):
            raise ValueError(f"rtol must be in (0, 1); got {self.rtol!r}")
        object.__setattr__(self, "M", A)
        object.__setattr__(self, "b", b)
        if self.check_consistency and np.any(b != 0):
            res, scale = self._lstsq_residual()
            object.__setattr__(self, "consistency_residual", res)
            if res > self.rtol * scale:
                raise InconsistentConstraintsError(
                    f"the constraints M x = b are inconsistent: the least-squares residual ‖Mx − b‖ = {res:.3g} "
                    f"exceeds rtol·(‖M‖_F‖x‖ + ‖b‖) = {self.rtol * scale:.3g}; Cai et al. 2021 need a consistent system (eq. 5)"
                )

    # ------------------------------------------------------------------ helpers
    def _lstsq_residual(self) -> tuple[float, float]:
        A, b = self.M, self.b
        m, n = A.shape
        if m * n <= DENSE_CHECK_LIMIT:
            x = np.linalg.lstsq(A.toarray(), b, rcond=None)[0]
        else:
            x = spla.lsqr(A, b, atol=1e-14, btol=1e-14, iter_lim=20 * (m + n))[0]
        res = float(np.linalg.norm(A @ x - b))
        scale = float(spla.norm(A) * np.linalg.norm(x) + np.linalg.norm(b))
        return res, max(scale, np.finfo(float).tiny)

    @property
    def shape(self) -> tuple[int, int]:
        return self.M.shape

    @property
    def m(self) -> int:
        """Number of constraints (rows)."""
        return self.M.shape[0]

    @property
    def n(self) -> int:
        """Number of variables (columns)."""
        return self.M.shape[1]

    def check_x(self, x: Any, name: str = "x") -> np.ndarray:
        """Validate a point of ℝⁿ (finite, shape (n,)) and return it as a float array."""
        try:
            arr = np.asarray(x, dtype=float)
        except (TypeError, ValueError) as exc:
            raise TypeError(f"{name} must be a numeric vector; {exc}") from None
        if arr.shape != (self.n,):
            raise ValueError(f"{name} must have shape ({self.n},) to match M with {self.n} columns; got shape {arr.shape}")
        if not np.all(np.isfinite(arr)):
            bad = int(arr.size - np.count_nonzero(np.isfinite(arr)))
            raise ValueError(f"{name} must be finite; it has {bad} non-finite entries")
        return arr

    def residual(self, x: np.ndarray) -> np.ndarray:
        """The consistency deviation ``ψ = M x − b`` (eq. 14)."""
        return self.M @ np.asarray(x, dtype=float) - self.b

    def block(self, rows: Sequence[int] | np.ndarray) -> "ConstraintSystem":
        """The sub-system ``(M_i, b_i)`` on the given rows (consistent if the whole system is)."""
        idx = np.asarray(rows, dtype=np.intp)
        if idx.ndim != 1 or idx.size == 0:
            raise ValueError("rows must be a non-empty 1-d sequence of row indices")
        if idx.min() < 0 or idx.max() >= self.m:
            raise ValueError(f"row indices must lie in [0, {self.m - 1}]")
        return ConstraintSystem(M=self.M[idx], b=self.b[idx], check_consistency=False)

    def partition(self, blocks: Sequence[Sequence[int]]) -> list["ConstraintSystem"]:
        """Split into the blocks ``(M_1, b_1), …, (M_k, b_k)`` of eq. (8).

        ``blocks`` must be a partition of ``range(m)``: disjoint, non-empty, covering every row.
        """
        blocks = [np.asarray(bl, dtype=np.intp) for bl in blocks]
        if not blocks:
            raise ValueError("blocks must contain at least one block")
        allrows = np.concatenate(blocks)
        if allrows.size != self.m or not np.array_equal(np.sort(allrows), np.arange(self.m)):
            raise ValueError(
                f"blocks must partition the {self.m} rows exactly once each (disjoint, covering); "
                f"got {allrows.size} indices, {np.unique(allrows).size} distinct"
            )
        return [self.block(bl) for bl in blocks]

    def __repr__(self) -> str:
        return f"ConstraintSystem(m={self.m}, n={self.n}, nnz={self.M.nnz})"


def contiguous_partition(m: int, k: int) -> list[np.ndarray]:
    """Split rows ``0..m-1`` into ``k`` contiguous, nearly equal blocks."""
    m = check_positive_int(m, name="m")
    k = check_positive_int(k, name="k")
    if k > m:
        raise ValueError(f"k must be at most m = {m}; got {k}")
    return [np.asarray(a, dtype=np.intp) for a in np.array_split(np.arange(m), k)]


def random_partition(m: int, k: int, *, rng: RNGLike = None) -> list[np.ndarray]:
    """A uniformly random assignment of the ``m`` rows to ``k`` non-empty blocks, in random order.

    Cai et al. 2021 (Sec. 6) claims convergence for *any* partition; this draws test partitions.
    """
    m = check_positive_int(m, name="m")
    k = check_positive_int(k, name="k")
    if k > m:
        raise ValueError(f"k must be at most m = {m}; got {k}")
    g = resolve_rng(rng)
    perm = g.permutation(m)
    # first k rows seed the k blocks (so none is empty), the rest go to random blocks
    labels = np.empty(m, dtype=np.intp)
    labels[perm[:k]] = np.arange(k)
    labels[perm[k:]] = g.integers(0, k, size=m - k)
    return [np.sort(np.flatnonzero(labels == j)) for j in range(k)]


def random_consistent_system(
    m: int,
    n: int,
    *,
    rank: int | None = None,
    density: float | None = None,
    rng: RNGLike = None,
) -> tuple[ConstraintSystem, np.ndarray]:
    """A random consistent system ``(M, b = M p)`` and the consistent point ``p``.

    Parameters
    ----------
    m, n : int
        Rows and columns.
    rank : int, optional
        Rank of ``M`` (default ``min(m, n)``); ``rank < min(m, n)`` gives a rank-deficient M
        (the case where ``M Mᵀ`` is singular and only the pseudo-inverse form of eq. 7 applies).
    density : float, optional
        If given, M is a sparse random matrix with this density (full-rank case only).
    rng : seed or Generator
    """
    m = check_positive_int(m, name="m")
    n = check_positive_int(n, name="n")
    g = resolve_rng(rng)
    r = min(m, n) if rank is None else check_positive_int(rank, name="rank")
    if r > min(m, n):
        raise ValueError(f"rank must be at most min(m, n) = {min(m, n)}; got {r}")
    if density is not None:
        M = sp.random(m, n, density=density, random_state=g, data_rvs=g.standard_normal, format="csr")
    elif r == min(m, n):
        M = g.standard_normal((m, n))
    else:
        M = g.standard_normal((m, r)) @ g.standard_normal((r, n))
    p = g.standard_normal(n)
    b = np.asarray(M @ p).ravel()
    return ConstraintSystem(M=M, b=b), p
