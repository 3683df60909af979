"""The general projector onto ``{x : M x = b}`` (Cai et al. 2021, Thm. 1, eq. 7).

``f_{M,b}(x) = x + M^†(b − M x)`` is the Euclidean projection onto the affine set, computed by ``"pinv"`` (the paper's
baseline), ``"cholesky"`` of ``MMᵀ``, ``"splu"`` (sparse LU of ``MMᵀ``) or ``"lsqr"`` (matrix-free, the
high-accuracy reference); ``"auto"`` picks ``pinv`` for small systems and ``splu`` for large ones, ``lsqr`` where
``MMᵀ`` is singular.
"""
from __future__ import annotations

import time
import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.linalg as sla
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from dpkit.core.exceptions import FeasibilityError
from dpkit.core.validation import check_choice
from dpkit.mechanisms.consistency.constraints import ConstraintSystem

__all__ = ["GeneralProjector", "project_general", "METHODS", "DENSE_LIMIT"]

METHODS = ("auto", "pinv", "cholesky", "splu", "lsqr")
#: largest ``m·n`` for which the dense methods are allowed (8·10⁷ doubles ≈ 640 MB)
DENSE_LIMIT = 80_000_000
#: ``m·n`` up to which ``"auto"`` uses the dense pseudo-inverse
AUTO_DENSE = 250_000


@dataclass(frozen=True, kw_only=True, eq=False)
class GeneralProjector:
    """Exact projector ``f_{M,b}`` of eq. (7), factorised once, applied many times.

    Parameters
    ----------
    system : ConstraintSystem
        The consistent system ``M x = b``.
    method : {"auto", "pinv", "cholesky", "splu", "lsqr"}
        How ``M^†(b − Mx)`` is computed (see module docstring).
    lsqr_tol : float
        ``atol = btol`` of LSQR (default 1e-14: a high-accuracy reference).
    lsqr_maxiter : int or None
        LSQR iteration limit (default ``10·(m + n)``).

    Attributes
    ----------
    build_seconds : float
        Wall time of the factorisation (pinv / Cholesky / LU); 0 for LSQR.
    method_used : str
        The method actually used (resolves ``"auto"``).

    Notes
    -----
    ``project`` is idempotent (Thm. 2) and returns a point with ``M y = b``. For LSQR the
    result is exact up to ``lsqr_tol``; the number of LSQR iterations of the last call is in
    ``last_info``.
    """

    system: ConstraintSystem
    method: str = "auto"
    lsqr_tol: float = 1e-14
    lsqr_maxiter: int | None = None
    build_seconds: float = field(default=0.0, init=False)
    method_used: str = field(default="", init=False)
    last_info: dict = field(default_factory=dict, init=False, repr=False, compare=False)
    _fac: Any = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not isinstance(self.system, ConstraintSystem):
            raise TypeError(f"system must be a ConstraintSystem; got {type(self.system).__name__}")
        check_choice(self.method, name="method", choices=METHODS)
        A = self.system.M
        m, n = A.shape
        method = self.method
        if method == "auto":
            method = "pinv" if m * n <= AUTO_DENSE else "splu"
        if method in ("pinv", "cholesky") and m * n > DENSE_LIMIT:
            raise FeasibilityError(
                f"method={method!r} needs a dense {m}×{n} matrix (m·n = {m * n:.3g} > {DENSE_LIMIT:.0e}); "
                "use method='splu' or 'lsqr'"
            )
        t0 = time.perf_counter()
        fac: Any = None
        if method == "pinv":
            fac = np.linalg.pinv(A.toarray())
        elif method == "cholesky":
            G = (A @ A.T).toarray()
            try:
                fac = sla.cho_factor(G, lower=True, check_finite=False)
            except np.linalg.LinAlgError:
                raise np.linalg.LinAlgError(
                    "method='cholesky' needs M of full row rank (M Mᵀ positive definite); "
                    "use method='pinv' or 'lsqr' for rank-deficient M"
                ) from None
        elif method == "splu":
            G = sp.csc_matrix(A @ A.T)
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("error", spla.MatrixRankWarning)
                    fac = spla.splu(G, permc_spec="MMD_AT_PLUS_A", options={"SymmetricMode": True})
                # a numerically singular pivot means M is rank deficient
                d = np.abs(fac.U.diagonal())
                if d.size and d.min() <= 1e-12 * d.max():
                    raise RuntimeError("singular")
            except (RuntimeError, spla.MatrixRankWarning):
                if self.method == "auto":
                    method, fac = "lsqr", None
                else:
                    raise np.linalg.LinAlgError(
                        "method='splu' needs M of full row rank (M Mᵀ nonsingular); use 'pinv' or 'lsqr'"
                    ) from None
        object.__setattr__(self, "_fac", fac)
        object.__setattr__(self, "method_used", method)
        object.__setattr__(self, "build_seconds", time.perf_counter() - t0)

    @property
    def n(self) -> int:
        return self.system.n

    def correction(self, r: np.ndarray) -> np.ndarray:
        """``M^† r`` for a residual ``r = b − M x`` (eq. 7)."""
        A, fac, method = self.system.M, self._fac, self.method_used
        if method == "pinv":
            return fac @ r
        if method == "cholesky":
            return A.T @ sla.cho_solve(fac, r, check_finite=False)
        if method == "splu":
            return A.T @ fac.solve(r)
        m, n = A.shape
        out = spla.lsqr(A, r, atol=self.lsqr_tol, btol=self.lsqr_tol, iter_lim=self.lsqr_maxiter or 10 * (m + n))
        self.last_info.update(istop=int(out[1]), iterations=int(out[2]))
        return out[0]

    def project(self, x: Any) -> np.ndarray:
        """``f_{M,b}(x) = x + M^†(b − M x)`` (eq. 7)."""
        x = self.system.check_x(x)
        return x + self.correction(self.system.b - self.system.M @ x)

    __call__ = project


def project_general(system: ConstraintSystem, x: Any, *, method: str = "auto", **kwargs: Any) -> np.ndarray:
    """One-shot ``f_{M,b}(x)`` of eq. (7) (see :class:`GeneralProjector`)."""
    return GeneralProjector(system=system, method=method, **kwargs).project(x)
