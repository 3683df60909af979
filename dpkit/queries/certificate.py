"""One-time certificates of the low-rank kernel embedding: ``‖g‖``, ``‖P_W g‖`` and the prefix power function.

In the notation of :mod:`dpkit.queries.lowrank` (residual ``g = m_D − Σ_l β_l k(z_l, ·)``, landmark prefix ``W``),
every bound holds for the computed float64 values, rounding included (the error terms are derived in
``docs/science/derivations.md``):

1. :func:`mmd_bound`: ``‖g‖² = ‖m_D‖² − 2βᵀb + βᵀK_ZZ β`` with its rounding bound.
2. :func:`prefix_residual_bound`: ``‖P_W g‖² ≤ ‖g(W)‖²/λ_min(K_W)``.
3. :func:`lambda_min_lower`: a proven lower bound on ``λ_min`` from a floating-point Cholesky of ``K̂ − cI`` (Rump's
   verification of positive definiteness).
4. :class:`PrefixQuadratic`: per centre, a bound on the power function ``e_W(c) ≤ 1``.

References
----------
S. M. Rump, "Verification of positive definiteness", BIT 46 (2006) 433–452.
N. J. Higham, *Accuracy and Stability of Numerical Algorithms*, 2nd ed., SIAM 2002, Ch. 3, 10.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import scipy.linalg as sla

from dpkit.queries.accurate import EVAL_SLACK, pairwise_rowsum
from dpkit.queries.rounding import UNIT_ROUNDOFF_F64, gamma

__all__ = ["mmd_bound", "prefix_residual_bound", "lambda_min_lower", "PrefixQuadratic"]

_U = UNIT_ROUNDOFF_F64


def _prime(rho: float) -> float:
    return rho / (1.0 - rho)


def mmd_bound(
    norm_sq: float, rho_norm: float, b: np.ndarray, rho_b: float, beta: np.ndarray, K: np.ndarray, rho_K: float
) -> tuple[float, float]:
    """``(estimate of ‖g‖², proven upper bound on ‖g‖)`` (module docs)."""
    P = (beta[:, None] * K) * beta[None, :]
    rows, h = pairwise_rowsum(P.copy())
    abs_sum, h_abs = pairwise_rowsum(np.abs(P))
    abs_quad = math.fsum(abs_sum) * (1.0 + gamma(h_abs + 1, _U))
    lin = -2.0 * beta * b
    est = math.fsum([norm_sq, *lin.tolist(), *rows.tolist()])
    err = (
        _prime(rho_norm) * norm_sq
        + (_prime(rho_b) + _U) * float(np.abs(lin).sum()) * (1.0 + gamma(len(b), _U))
        + (_prime(rho_K) + gamma(h + 2, _U)) * abs_quad
        + _U * abs(est)
    )
    upper = max(est + err, 0.0) * (1.0 + EVAL_SLACK)
    return est, math.sqrt(upper) * (1.0 + EVAL_SLACK)


def lambda_min_lower(K: np.ndarray, rho_K: float) -> float:
    """A proven lower bound on ``λ_min`` of the exact kernel matrix (0.0 if none could be certified)."""
    n = K.shape[0]
    if n == 0:
        return math.inf
    guess = float(np.linalg.eigvalsh(K)[0])
    slack = _prime(rho_K) * float(np.abs(K).sum(axis=1).max()) * (1.0 + gamma(n, _U))
    c = 0.5 * guess
    for _ in range(8):
        if c <= 0.0:
            return 0.0
        shifted = K - c * np.eye(n)
        try:
            np.linalg.cholesky(shifted)
        except np.linalg.LinAlgError:
            c *= 0.25
            continue
        g = gamma(2 * n + 2, _U)
        tr = float(np.trace(shifted)) * (1.0 + gamma(n, _U))
        low = (c - _U * (1.0 + c) - g / (1.0 - g) * tr - slack) * (1.0 - EVAL_SLACK)
        return max(low, 0.0)
    return 0.0


def prefix_residual_bound(
    b_W: np.ndarray, rho_b: float, K_WZ: np.ndarray, rho_K: float, beta: np.ndarray, lam_low: float
) -> tuple[np.ndarray, float]:
    """``(ρ̂_W, proven upper bound on ‖P_W g‖)``; ``inf`` when ``λ_min(K_W)`` could not be bounded away from 0."""
    if b_W.size == 0:
        return np.zeros(0), 0.0
    prods = K_WZ * beta[None, :]
    est = np.array([math.fsum([bl, *(-row).tolist()]) for bl, row in zip(b_W.tolist(), prods)])
    absrow = np.abs(prods).sum(axis=1) * (1.0 + gamma(K_WZ.shape[1], _U))
    upper = np.abs(est) * (1.0 + _U) + _prime(rho_b) * b_W + (_prime(rho_K) + _U) * absrow
    norm = math.sqrt(math.fsum((upper * upper).tolist())) * (1.0 + EVAL_SLACK)
    if lam_low <= 0.0:
        return est, math.inf
    return est, norm / math.sqrt(lam_low) * (1.0 + EVAL_SLACK)


def _norm_bound(M: np.ndarray) -> float:
    """``max(‖M‖₁, ‖M‖_∞) ≥ ‖M‖₂`` for a non-negative matrix ``M``, rounded up."""
    if M.size == 0:
        return 0.0
    return float(max(M.sum(axis=0).max(), M.sum(axis=1).max())) * (1.0 + gamma(M.shape[0], _U))


@dataclass(frozen=True)
class PrefixQuadratic:
    """``B̂ = 2A − A K̂_W A`` for ``A ≈ K̂_W⁻¹`` and the constants of the per-centre power-function bound."""

    B: np.ndarray
    eta_E: float
    eta_A: float
    eta_B: float

    @classmethod
    def build(cls, K_W: np.ndarray, rho_K: float) -> "PrefixQuadratic":
        n = K_W.shape[0]
        if n == 0:
            return cls(np.zeros((0, 0)), 0.0, 0.0, 0.0)
        try:
            A = sla.cho_solve(sla.cho_factor(K_W, lower=True), np.eye(n))
        except np.linalg.LinAlgError:  # numerically singular prefix: any A is valid, only tightness suffers
            A = np.linalg.pinv(K_W, hermitian=True)
        AKA = (A @ K_W) @ A
        B = 2.0 * A - AKA
        absA = np.abs(A)
        g = gamma(n, _U)
        E = (2.0 * g + g * g + _prime(rho_K)) * (absA @ np.abs(K_W) @ absA) * (1.0 + 2.0 * g) + _U * np.abs(B) * (1.0 + _U)
        return cls(B, _norm_bound(E), _norm_bound(absA), _norm_bound(np.abs(B)))

    @property
    def size(self) -> int:
        return int(self.B.shape[0])

    def slope(self, rho_k: float) -> float:
        """``C`` with ``e_W(c) ≤ x̂ + 2u|x̂| + C‖k̂‖²`` (``x̂ = fl(1 − k̂ᵀB̂k̂)``) for kernel values of relative error ``ρ_k``."""
        n = self.size
        return (1.0 + gamma(n + 2, _U)) * (self.eta_E + gamma(2 * n + 1, _U) * self.eta_B + 2.0 * _prime(rho_k) * self.eta_A)

    def power_bound(self, Kc: np.ndarray, rho_k: float) -> np.ndarray:
        """Upper bounds on ``e_W(c)`` for the rows ``Kc = k̂_W(c)`` (M, r'), clipped to ``[0, 1]``."""
        if self.size == 0:
            return np.ones(Kc.shape[0])
        q = np.einsum("ij,ij->i", Kc @ self.B, Kc)
        nrm = np.einsum("ij,ij->i", Kc, Kc)
        one_minus_q = 1.0 - q
        e = one_minus_q + 2.0 * _U * np.abs(one_minus_q) + nrm * self.slope(rho_k)
        return np.clip(e * (1.0 + EVAL_SLACK), 0.0, 1.0)
