"""Reconstruction attacks on noisy subset-sum answers (thesis Thm 1.4; Dinur–Nissim 2003).

A secret ``d ∈ {0,1}^n`` is queried with subset sums answered with noise:

1. :func:`exhaustive_attack` (Thm 1.4): if all ``2^n`` sums are within ``α``, every consistent candidate is within
   Hamming distance ``4α`` of ``d`` (deterministic; ``n ≲ 14``).
2. :func:`lp_decode` (Dinur–Nissim): an LP over ``[0,1]^n`` fitting the answers (HiGHS), rounded at 1/2: fewer than
   ``8α`` wrong bits with all subsets; ``o(n)`` w.h.p. with ``O(n)`` random subsets and noise ``o(√n)``.

:func:`dp_guess_error_bound` is the contrast: against an ε-DP answer vector no attacker's expected error fraction is
below ``1/(1+e^ε)``.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy import optimize, sparse

from dpkit.core.exceptions import FeasibilityError
from dpkit.core.rng import RNGLike, resolve_rng
from dpkit.core.validation import check_choice, check_finite_array, check_int_in_range, check_positive_int, check_real_in_range

__all__ = [
    "random_secret",
    "random_subsets",
    "all_subsets",
    "subset_sums",
    "noisy_answers",
    "adversarial_answers",
    "lp_decode",
    "exhaustive_attack",
    "hamming",
    "ReconstructionResult",
    "reconstruct",
    "dp_guess_error_bound",
]

NOISES = ("uniform", "laplace", "none")
OBJECTIVES = ("l1", "linf", "feasibility")


def random_secret(n: int, *, rng: RNGLike = None) -> np.ndarray:
    """A uniformly random secret ``d ∈ {0,1}^n``."""
    n = check_positive_int(n, name="n")
    return resolve_rng(rng).integers(0, 2, size=n)


def random_subsets(n: int, m: int, *, rng: RNGLike = None) -> np.ndarray:
    """``m`` random subsets of ``{0..n-1}`` (each element in with probability 1/2) as an ``(m, n)`` 0/1 matrix."""
    n = check_positive_int(n, name="n")
    m = check_positive_int(m, name="m")
    return resolve_rng(rng).integers(0, 2, size=(m, n)).astype(np.int8)


def all_subsets(n: int, *, max_n: int = 16) -> np.ndarray:
    """All ``2^n`` subsets as a ``(2^n, n)`` 0/1 matrix (row ``s`` is the binary expansion of ``s``)."""
    n = check_int_in_range(n, name="n", low=1, high=max_n)
    s = np.arange(2**n)[:, None]
    return ((s >> np.arange(n)[None, :]) & 1).astype(np.int8)


def subset_sums(queries: np.ndarray, secret: np.ndarray) -> np.ndarray:
    """Exact answers ``q_S(d) = Σ_{i∈S} d_i`` for every row ``S`` of ``queries``."""
    return np.asarray(queries, dtype=float) @ np.asarray(secret, dtype=float)


def noisy_answers(
    queries: np.ndarray, secret: np.ndarray, *, noise: str = "uniform", scale: float = 0.0, rng: RNGLike = None
) -> np.ndarray:
    """Subset sums plus noise.

    Parameters
    ----------
    noise : {"uniform", "laplace", "none"}
        ``"uniform"``: ``U[−scale, scale]`` per answer (every answer within ``α = scale``,
        the hypothesis of Thm 1.4); ``"laplace"``: ``Lap(scale)`` per answer (e.g.
        ``scale = m/ε`` makes the whole answer vector ε-DP by Prop 1.7, since changing one
        bit moves each of the ``m`` sums by at most 1).
    """
    noise = check_choice(noise, name="noise", choices=NOISES)
    scale = check_real_in_range(scale, name="scale", low=0.0)
    exact = subset_sums(queries, secret)
    g = resolve_rng(rng)
    if noise == "none" or scale == 0.0:
        return exact
    if noise == "uniform":
        return exact + g.uniform(-scale, scale, size=exact.shape)
    return exact + g.laplace(0.0, scale, size=exact.shape)


def adversarial_answers(
    secret: np.ndarray, alpha: float, *, rng: RNGLike = None, n_subsets: str = "all"
) -> tuple[np.ndarray, np.ndarray]:
    """Worst-case answers within ``α`` for Thm 1.4: the exact subset sums of a decoy ``c'``.

    ``c'`` flips ``⌊α⌋`` random zeros of the secret to one and ``⌊α⌋`` random ones to zero,
    so ``max_S |q_S(c') − q_S(d)| = ⌊α⌋ ≤ α``; candidates consistent with these answers
    within ``α`` include points ``4⌊α⌋`` bits away from the secret, so Thm 1.4's ``4α``
    is attained for integer ``α``. Returns ``(answers over all subsets, decoy)``.
    """
    d = np.asarray(secret).astype(int)
    h = int(math.floor(check_real_in_range(alpha, name="alpha", low=0.0)))
    g = resolve_rng(rng)
    zeros, ones = np.flatnonzero(d == 0), np.flatnonzero(d == 1)
    h = min(h, zeros.size, ones.size)
    decoy = d.copy()
    decoy[g.choice(zeros, h, replace=False)] = 1
    decoy[g.choice(ones, h, replace=False)] = 0
    return subset_sums(all_subsets(d.size), decoy), decoy


def lp_decode(
    queries: np.ndarray,
    answers: np.ndarray,
    *,
    objective: str = "l1",
    alpha: float | None = None,
    method: str = "highs-ipm",
    max_size: int = 50_000_000,
) -> np.ndarray:
    """LP decoding: a fractional candidate ``c ∈ [0,1]^n`` fitting the noisy answers (HiGHS).

    Parameters
    ----------
    objective : {"l1", "linf", "feasibility"}
        ``"l1"``: minimise ``‖Qc − a‖₁`` (robust to a few large errors);
        ``"linf"``: minimise ``‖Qc − a‖∞``; ``"feasibility"``: any ``c`` with
        ``‖Qc − a‖∞ ≤ alpha`` (Dinur–Nissim's LP; ``alpha`` required).
    method : {"highs-ipm", "highs-ds", "highs"}
        HiGHS solver. The interior-point method is the default: it is the faster one on the
        dense random-subset LPs (m = 4n; docs/performance_notes.md).

    Returns
    -------
    numpy.ndarray
        The fractional solution ``c`` (round with ``c > 1/2``).
    """
    Q = check_finite_array(queries, name="queries", ndim=2)
    a = check_finite_array(answers, name="answers", ndim=1)
    objective = check_choice(objective, name="objective", choices=OBJECTIVES)
    m, n = Q.shape
    if a.size != m:
        raise ValueError(f"answers must have one entry per query row ({m}); got {a.size}")
    if m * n > max_size:
        raise FeasibilityError(f"LP with {m} x {n} constraint matrix exceeds max_size={max_size}")
    Qs = sparse.csr_matrix(Q)
    eye = sparse.identity(m, format="csr")
    if objective == "l1":
        # variables (c, e) with −e ≤ Qc − a ≤ e; minimise Σe
        A = sparse.vstack([sparse.hstack([Qs, -eye]), sparse.hstack([-Qs, -eye])], format="csr")
        b = np.concatenate([a, -a])
        cost = np.concatenate([np.zeros(n), np.ones(m)])
        bounds = [(0, 1)] * n + [(0, None)] * m
    elif objective == "linf":
        ones = sparse.csr_matrix(np.ones((m, 1)))
        A = sparse.vstack([sparse.hstack([Qs, -ones]), sparse.hstack([-Qs, -ones])], format="csr")
        b = np.concatenate([a, -a])
        cost = np.concatenate([np.zeros(n), [1.0]])
        bounds = [(0, 1)] * n + [(0, None)]
    else:
        if alpha is None:
            raise ValueError("alpha is required for objective='feasibility'")
        alpha = check_real_in_range(alpha, name="alpha", low=0.0)
        A = sparse.vstack([Qs, -Qs], format="csr")
        b = np.concatenate([a + alpha, -(a - alpha)])
        cost = np.zeros(n)
        bounds = [(0, 1)] * n
    method = check_choice(method, name="method", choices=("highs-ipm", "highs-ds", "highs"))
    res = optimize.linprog(cost, A_ub=A, b_ub=b, bounds=bounds, method=method)
    if res.status != 0:
        raise FeasibilityError(f"LP decoding failed: {res.message}")
    return np.clip(res.x[:n], 0.0, 1.0)


def hamming(a: np.ndarray, b: np.ndarray) -> int:
    """Number of positions where ``a`` and ``b`` differ."""
    return int(np.sum(np.asarray(a) != np.asarray(b)))


def exhaustive_attack(answers: np.ndarray, alpha: float, *, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Thm 1.4's attack: every ``c ∈ {0,1}^n`` whose subset sums are all within ``α`` of the answers.

    ``answers`` must list all ``2^n`` subset sums in the order of :func:`all_subsets`.

    Returns
    -------
    candidates : (M, n) int array
        All consistent candidates (the truth among them when the noise is within α).
    max_residual : (2^n,) float array
        ``max_S |q_S(c) − a_S|`` for every candidate ``c`` (row order of :func:`all_subsets`).
    """
    S = all_subsets(n, max_n=14).astype(float)
    a = check_finite_array(answers, name="answers", ndim=1)
    if a.size != S.shape[0]:
        raise ValueError(f"answers must hold all 2^n = {S.shape[0]} subset sums; got {a.size}")
    C = all_subsets(n, max_n=14).astype(float)  # candidates, same enumeration
    resid = np.abs(C @ S.T - a[None, :]).max(axis=1)
    ok = resid <= alpha + 1e-12
    return C[ok].astype(int), resid


@dataclass(frozen=True)
class ReconstructionResult:
    """One attack run: the secret, the guess and its errors."""

    n: int
    m: int
    noise: str
    scale: float
    objective: str
    errors: int
    error_fraction: float
    max_abs_noise: float
    params: dict[str, Any] = field(default_factory=dict)


def reconstruct(
    n: int,
    m: int | None = None,
    *,
    noise: str = "uniform",
    scale: float = 0.0,
    objective: str = "l1",
    subsets: str = "random",
    rng: RNGLike = None,
) -> ReconstructionResult:
    """Draw a secret, answer ``m`` subset-sum queries with noise, attack by LP decoding, count errors.

    Parameters
    ----------
    m : int, optional
        Number of random subsets (default ``4n``). Ignored when ``subsets="all"``.
    subsets : {"random", "all"}
        ``"all"`` uses all ``2^n`` subsets (small ``n`` only).
    """
    n = check_positive_int(n, name="n")
    subsets = check_choice(subsets, name="subsets", choices=("random", "all"))
    g = resolve_rng(rng)
    secret = random_secret(n, rng=g)
    Q = all_subsets(n) if subsets == "all" else random_subsets(n, 4 * n if m is None else m, rng=g)
    a = noisy_answers(Q, secret, noise=noise, scale=scale, rng=g)
    c = lp_decode(Q, a, objective=objective, alpha=scale if objective == "feasibility" else None)
    guess = (c > 0.5).astype(int)
    err = hamming(guess, secret)
    return ReconstructionResult(
        n=n, m=int(Q.shape[0]), noise=noise, scale=float(scale), objective=objective, errors=err,
        error_fraction=err / n, max_abs_noise=float(np.max(np.abs(a - subset_sums(Q, secret)))),
        params={"subsets": subsets},
    )


def dp_guess_error_bound(epsilon: float) -> float:
    """Lower bound ``1/(1 + e^ε)`` on the expected fraction of wrongly guessed bits.

    For a uniformly random secret and an ε-DP release (neighbours differ in one bit), any
    guess of bit ``i`` is correct with probability at most ``e^ε/(1 + e^ε)``.
    """
    eps = float(epsilon)
    if not eps > 0:
        raise ValueError(f"epsilon must be > 0; got {epsilon}")
    return 1.0 / (1.0 + math.exp(eps))
