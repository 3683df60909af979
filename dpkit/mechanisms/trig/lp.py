"""The L1 moment-matching LP of thesis Alg 4 step 6 / Alg 9 step 7.

    min_u ‖W u − b̂‖₁   s.t.  u ≥ 0,  1ᵀu = 1

in the standard form (2.7) with sparse identity blocks, W of shape (R, C) (R moments, C candidate points):

1. Up to :data:`CG_THRESHOLD` columns: HiGHS's dual simplex (``"highs-ds"``, no presolve) through
   :func:`scipy.optimize.linprog`, which returns a vertex, so at most R + 1 weights are non-zero.
2. Beyond it: exact **column generation**: solve on a subset of columns, add those with a negative reduced cost
   −(W_jᵀy + z) priced over all C columns, and stop when none is below −``cg_tol``, which certifies optimality for
   the full LP.

Errors: a failed or non-optimal solve raises :class:`LPError` with the solver's status and message — never a silent
fallback.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp
from scipy.optimize import OptimizeResult, linprog

from dpkit.core.exceptions import DPKitError
from dpkit.core.validation import check_choice, check_finite_array

__all__ = ["LPError", "LPSolution", "solve_l1_lp", "LP_METHODS", "CG_THRESHOLD"]

LP_METHODS = ("highs-ds", "highs-ipm", "highs")
#: Above this many columns :func:`solve_l1_lp` uses exact column generation by default.
CG_THRESHOLD = 4_000


class LPError(DPKitError):
    """The LP solver did not return an optimal solution.

    Attributes
    ----------
    status : int
        ``scipy.optimize.linprog`` status (1 iteration limit, 2 infeasible, 3 unbounded, 4 numerical).
    message : str
        The solver's message.
    """

    def __init__(self, status: int, message: str, n_vars: int, n_constraints: int) -> None:
        self.status = int(status)
        self.message = str(message)
        super().__init__(
            f"L1 moment LP (n_vars={n_vars}, n_constraints={n_constraints}) failed with HiGHS status "
            f"{status}: {message}"
        )


@dataclass(frozen=True)
class LPSolution:
    """Optimal weights and solver record.

    ``u`` is the distribution over the C candidates (clipped at 0 and renormalised; the
    clipping removes only solver round-off, ≤ the primal feasibility tolerance).
    """

    u: np.ndarray
    objective: float
    status: int
    message: str
    n_vars: int
    n_constraints: int
    support_size: int
    method: str
    seconds: float
    cg_rounds: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "message": self.message,
            "objective": self.objective,
            "support_size": self.support_size,
            "n_vars": self.n_vars,
            "n_constraints": self.n_constraints,
            "method": self.method,
            "seconds": self.seconds,
            "column_generation_rounds": self.cg_rounds,
        }


def build_standard_form(W: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, sp.csc_matrix, np.ndarray]:
    """(c, A_eq, b_eq) of (2.7) for ``W`` (R, C) and ``b`` (R,). A_eq is sparse CSC."""
    R, C = W.shape
    eye = sp.identity(R, format="csc")
    top = sp.hstack([sp.csc_matrix(W), eye, -eye], format="csc")
    bottom = sp.hstack([sp.csc_matrix(np.ones((1, C))), sp.csc_matrix((1, 2 * R))], format="csc")
    A_eq = sp.vstack([top, bottom], format="csc")
    c = np.concatenate([np.zeros(C), np.ones(2 * R)])
    b_eq = np.concatenate([b, [1.0]])
    return c, A_eq, b_eq


def solve_l1_lp(
    W: np.ndarray,
    b: np.ndarray,
    *,
    method: str = "highs-ds",
    presolve: bool = False,
    support_tol: float = 1e-12,
    column_generation: bool | None = None,
    cg_tol: float = 1e-9,
    cg_max_rounds: int = 500,
) -> LPSolution:
    """Solve min_u ‖W u − b‖₁ over the probability simplex (thesis (2.7)) with HiGHS.

    Parameters
    ----------
    W : array, shape (R, C)
        W_{r,a} = φ_r(a) for the candidate points a (optionally lattice-rounded).
    b : array, shape (R,)
        Noisy moments b̂.
    method : {"highs-ds", "highs-ipm", "highs"}
        HiGHS algorithm (dual simplex by default; see module docstring).
    presolve : bool
        Run HiGHS presolve (off by default: it costs more than it saves on this LP).
    support_tol : float
        Weights ≤ this are treated as 0 when counting the support.
    column_generation : bool, optional
        Use exact column generation (module docstring); default: when C > :data:`CG_THRESHOLD`.
    cg_tol : float
        Optimality tolerance on the reduced costs.
    cg_max_rounds : int
        Rounds before giving up (an :class:`LPError` with status 1).

    Raises
    ------
    LPError
        If HiGHS does not report an optimal solution (status ≠ 0).
    """
    W = check_finite_array(W, name="W", ndim=2)
    b = check_finite_array(b, name="b", ndim=1)
    method = check_choice(method, name="method", choices=LP_METHODS)
    R, C = W.shape
    if b.shape[0] != R:
        raise ValueError(f"b has {b.shape[0]} entries but W has R = {R} rows")
    if C < 1:
        raise ValueError("W must have at least one column (candidate point)")
    n_vars, n_cons = C + 2 * R, R + 1
    if column_generation is None:
        column_generation = C > CG_THRESHOLD
    t0 = time.perf_counter()
    rounds = 0
    if not column_generation:
        res = _linprog(W, b, method, presolve, n_vars, n_cons)
        x = res.x[:C]
    else:
        x, res, rounds = _column_generation(W, b, method, presolve, n_vars, n_cons, cg_tol, cg_max_rounds)
    secs = time.perf_counter() - t0
    u = _simplex_weights(x, support_tol, n_vars, n_cons)
    return LPSolution(
        u=u,
        objective=float(res.fun),
        status=int(res.status),
        message=str(res.message),
        n_vars=n_vars,
        n_constraints=n_cons,
        support_size=int(np.count_nonzero(u)),
        method=method + ("+column-generation" if column_generation else ""),
        seconds=secs,
        cg_rounds=rounds,
    )


def _column_generation(W: np.ndarray, b: np.ndarray, method: str, presolve: bool, n_vars: int, n_cons: int,
                       cg_tol: float, cg_max_rounds: int) -> tuple[np.ndarray, OptimizeResult, int]:
    """Exact column generation (module docstring): ``(u over all C columns, last restricted solve, rounds)``."""
    R, C = W.shape
    # initial columns: an evenly spaced (data-independent) subset
    active = np.unique(np.linspace(0, C - 1, min(C, max(8 * R, 1000))).astype(np.int64))
    in_active = np.zeros(C, dtype=bool)
    in_active[active] = True
    batch = max(8 * R, 1000)
    rounds = 0
    while True:
        rounds += 1
        res = _linprog(W[:, active], b, method, presolve, n_vars, n_cons)
        lam = np.asarray(res.eqlin.marginals)
        rc = -(lam[:R] @ W + lam[R])  # reduced costs of all u-columns
        rc[in_active] = np.inf
        new = np.flatnonzero(rc < -cg_tol)
        if new.size == 0:
            break
        if rounds >= cg_max_rounds:
            raise LPError(1, f"column generation did not converge in {cg_max_rounds} rounds", n_vars, n_cons)
        new = new[np.argsort(rc[new], kind="stable")[:batch]]
        in_active[new] = True
        active = np.flatnonzero(in_active)
    x = np.zeros(C)
    x[active] = res.x[: active.size]
    return x, res, rounds


def _simplex_weights(x: np.ndarray, support_tol: float, n_vars: int, n_cons: int) -> np.ndarray:
    """The LP's u clipped at 0, renormalised, weights ≤ ``support_tol`` zeroed, renormalised again."""
    u = np.clip(x, 0.0, None)
    s = u.sum()
    if not np.isfinite(s) or s <= 0:
        raise LPError(4, f"solution weights sum to {s}", n_vars, n_cons)
    u = u / s
    u[u <= support_tol] = 0.0
    return u / u.sum()


def _linprog(W: np.ndarray, b: np.ndarray, method: str, presolve: bool, n_vars: int, n_cons: int) -> OptimizeResult:
    c, A_eq, b_eq = build_standard_form(W, b)
    res = linprog(c, A_eq=A_eq, b_eq=b_eq, bounds=(0, None), method=method, options={"presolve": bool(presolve)})
    if res.status != 0 or res.x is None:
        raise LPError(res.status, res.message, n_vars, n_cons)
    return res
