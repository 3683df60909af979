"""Composition theorems (thesis Thm 1.5/1.6, Thm 1.11; Kairouz–Oh–Viswanath 2015) and exact oracles.

1. :func:`basic_composition`: ``(kε, kδ)`` (thesis Thm 1.6 / D–R Thm 3.16).
2. :func:`advanced_composition` and :func:`advanced_composition_heterogeneous`:
   ``ε' = ε√(2k ln(1/δ')) + kε(e^ε − 1)``, ``δ_total = kδ + δ'`` (thesis Thm 1.11 / D–R Thm 3.20).
3. :func:`optimal_composition`, :func:`optimal_composition_pairs`: Kairouz, Oh and Viswanath (ICML 2015, Thm 3.3),
   in log space.
4. :func:`per_step_epsilon`: the largest per-step ε meeting a target after ``k`` steps under each rule.
5. :func:`laplace_privacy_loss_exact`, :func:`laplace_composition_delta`: the exact ``δ(ε)`` of ``k`` Laplace releases
   with a rigorous bracket (:mod:`dpkit.core.pld`).

All logarithms are natural.
"""
from __future__ import annotations

import math
from typing import Iterable, Sequence

import numpy as np
from scipy.special import gammaln

from dpkit.core.validation import check_choice, check_delta, check_epsilon, check_positive_int, check_real_in_range

__all__ = [
    "basic_composition",
    "advanced_composition",
    "advanced_composition_heterogeneous",
    "optimal_composition",
    "optimal_composition_delta",
    "optimal_composition_pairs",
    "per_step_epsilon",
]

def basic_composition(epsilon: float, delta: float, k: int) -> tuple[float, float]:
    """k-fold basic composition (thesis Thm 1.6): ``(kε, kδ)``."""
    eps = check_epsilon(epsilon)
    dl = check_delta(delta)
    k = check_positive_int(k, name="k")
    return (k * eps, k * dl)


# ---------------------------------------------------------------------- advanced (Thm 1.11)
def _advanced_eps(eps_sq_sum: float, drift: float, delta_prime: float) -> float:
    return math.sqrt(2.0 * math.log(1.0 / delta_prime) * eps_sq_sum) + drift


def _drift(eps: float) -> float:
    """``ε(e^ε − 1)`` (inf on overflow)."""
    try:
        return eps * math.expm1(eps)
    except OverflowError:
        return math.inf


def advanced_composition(
    epsilon: float, delta: float, k: int, delta_prime: float, *, cap_at_basic: bool = False
) -> tuple[float, float]:
    """k-fold advanced composition (thesis Thm 1.11 = Dwork–Roth Thm 3.20).

    Parameters
    ----------
    epsilon, delta : float
        Per-step guarantee (ε > 0 finite, δ ∈ [0, 1)).
    k : int
        Number of (adaptively chosen) steps, ≥ 1.
    delta_prime : float
        The slack δ' ∈ (0, 1).
    cap_at_basic : bool, default False
        If True return ``min(ε', kε)`` (both hold, with δ ``kδ + δ'``). For few, large steps
        Thm 1.11 is worse than basic composition (D–R E9.6: ε = 1, k = 20, δ' = 0.01 gives
        ε' = 47.9 > 20). The default returns the theorem's formula as printed.

    Returns
    -------
    (epsilon_total, delta_total) : tuple of float
        ``ε' = ε√(2k ln(1/δ')) + kε(e^ε − 1)`` and ``kδ + δ'``.

    Examples
    --------
    >>> f"{advanced_composition(0.1, 0.0, 100, 1e-5)[0]:.3f}"
    '5.850'
    """
    eps = check_epsilon(epsilon)
    dl = check_delta(delta)
    k = check_positive_int(k, name="k")
    dp = check_delta(delta_prime, allow_zero=False, name="delta_prime")
    e = _advanced_eps(k * eps * eps, k * _drift(eps), dp)
    if cap_at_basic:
        e = min(e, k * eps)
    return (e, k * dl + dp)


def _check_pairs(pairs: Iterable[Sequence[float]]) -> np.ndarray:
    """Validate (ε_i, δ_i) pairs; return an (n, 2) float array.

    Vectorised fast path (the ledger calls this on every spend, with pairs it already
    validated); anything the fast path rejects is re-checked entry by entry so the error names
    the offending pair.
    """
    ps = pairs if isinstance(pairs, np.ndarray) else list(pairs)
    try:
        arr = np.asarray(ps, dtype=float).reshape(len(ps), 2) if len(ps) else np.empty((0, 2))
        if arr.dtype == float and np.all(arr[:, 0] > 0) and np.all((arr[:, 1] >= 0) & (arr[:, 1] < 1)):
            return arr
    except (TypeError, ValueError):
        pass
    out = []
    for i, p in enumerate(ps):
        if len(p) != 2:
            raise ValueError(f"pairs[{i}] must be an (epsilon, delta) pair; got {p!r}")
        out.append(
            (check_epsilon(p[0], allow_inf=True, name=f"pairs[{i}].epsilon"), check_delta(p[1], name=f"pairs[{i}].delta"))
        )
    return np.asarray(out, dtype=float).reshape(len(out), 2)


def _logsumexp(x: np.ndarray) -> float:
    """log Σ e^x (plain numpy; scipy's version has a large per-call overhead)."""
    if x.size == 0:
        return -math.inf
    m = float(np.max(x))
    if not math.isfinite(m):
        return m
    return m + math.log(float(np.sum(np.exp(x - m))))


def advanced_composition_heterogeneous(
    pairs: Iterable[Sequence[float]], delta_slack: float
) -> tuple[float, float]:
    """Advanced composition of different per-step guarantees ``(ε_i, δ_i)``.

    The heterogeneous form of thesis Thm 1.11 (same proof, Azuma with per-step ranges ε_i
    and means ε_i(e^{ε_i} − 1), D–R Lemma 3.18/3.19):

    ``ε' = √(2 ln(1/δ') Σ ε_i²) + Σ ε_i (e^{ε_i} − 1)``, ``δ_total = Σ δ_i + δ'``.

    Never reports more than basic composition: the ε returned is ``min(ε', Σ ε_i)`` (basic
    composition's ``(Σε_i, Σδ_i)`` implies ``(Σε_i, Σδ_i + δ')``). With ``delta_slack = 0``
    (no slack set aside) the result is basic composition ``(Σε_i, Σδ_i)``.

    Parameters
    ----------
    pairs : iterable of (float, float)
        The per-step ``(ε_i, δ_i)``; ε_i may be ``inf`` (then the total is ``inf``).
    delta_slack : float
        δ' ∈ [0, 1).
    """
    ps = _check_pairs(pairs)
    dp = check_delta(delta_slack, name="delta_slack")
    if not len(ps):
        return (0.0, 0.0)
    eps_basic = math.fsum(ps[:, 0])
    d_basic = math.fsum(ps[:, 1])
    if dp == 0.0 or math.isinf(eps_basic):
        return (eps_basic, d_basic)
    with np.errstate(over="ignore"):
        drift = math.fsum(ps[:, 0] * np.expm1(ps[:, 0]))
    e = _advanced_eps(math.fsum(ps[:, 0] ** 2), drift, dp)
    return (min(e, eps_basic), d_basic + dp)


# ---------------------------------------------------------------------- optimal (KOV 2015)
def _log_delta_rr(eps_total: float, epsilon: float, k: int) -> float:
    """log of the hockey-stick divergence of k-fold randomized response RR(ε) at ``eps_total``.

    ``δ_RR(ε_g) = Σ_{l=0}^{k} C(k,l) max(0, e^{(k−l)ε} − e^{ε_g + lε}) / (1 + e^ε)^k``.
    At ``ε_g = (k − 2i)ε`` only the terms ``l < i`` are positive and this is the δ_i of
    KOV Theorem 3.3. Computed as a log-sum-exp (stable for k up to ~10⁷).
    """
    # positive terms: (k - l) eps > eps_g + l eps  <=>  l < (k eps - eps_g) / (2 eps)
    lmax = math.ceil((k * epsilon - eps_total) / (2.0 * epsilon)) - 1
    lmax = min(lmax, k)
    if lmax < 0:
        return -math.inf
    # The l-th term is at most the Binomial(k, 1/(1+e^ε)) pmf at l, which is log-concave: terms
    # more than 100 sd + 100 below min(lmax, mean) are < e^{-99} of the largest one and are skipped.
    q = 1.0 / (1.0 + math.exp(epsilon))
    sd = math.sqrt(k * q * (1.0 - q))
    l_lo = max(0, int(math.floor(min(lmax, k * q) - 100.0 * sd - 100.0)))
    ell = np.arange(l_lo, lmax + 1, dtype=float)
    log_binom = gammaln(k + 1.0) - gammaln(ell + 1.0) - gammaln(k - ell + 1.0)
    expo = (k - ell) * epsilon
    # log(e^a - e^b) = a + log(-expm1(b - a)), b < a
    gap = eps_total + ell * epsilon - expo
    with np.errstate(divide="ignore"):
        log_terms = log_binom + expo + np.log(-np.expm1(np.minimum(gap, 0.0)))
    log_norm = k * np.logaddexp(0.0, epsilon)
    return float(_logsumexp(log_terms) - log_norm)


def optimal_composition_delta(eps_total: float, epsilon: float, delta: float, k: int) -> float:
    """The smallest δ_total for which k-fold composition of (ε, δ)-DP mechanisms is (ε_total, δ_total)-DP.

    Kairouz–Oh–Viswanath (2015), Theorem 3.3 and its proof: the k-fold composition is
    dominated by k-fold randomized response with a δ "leak" per step, whose privacy region
    gives ``δ_total = 1 − (1 − δ)^k (1 − δ_RR(ε_total))`` with

    ``δ_RR(ε_g) = Σ_l C(k,l) max(0, e^{(k−l)ε} − e^{ε_g + lε}) / (1 + e^ε)^k``.

    This is exact (the bound is attained) for every ``ε_total ≥ 0``; the theorem states it at
    ``ε_total = (k − 2i)ε``, i = 0..⌊k/2⌋.
    """
    eps = check_epsilon(epsilon)
    dl = check_delta(delta)
    k = check_positive_int(k, name="k")
    eg = check_real_in_range(eps_total, name="eps_total", low=0.0)
    d_rr = math.exp(_log_delta_rr(eg, eps, k))
    # 1 - (1-δ)^k (1-δ_RR), computed without cancellation
    log_keep = k * math.log1p(-dl) + math.log1p(-min(d_rr, 1.0)) if d_rr < 1.0 else -math.inf
    return float(-math.expm1(log_keep))


def optimal_composition(
    epsilon: float, delta: float, k: int, delta_prime: float, *, points: str = "all"
) -> tuple[float, float]:
    """Optimal homogeneous composition (Kairouz–Oh–Viswanath 2015, Theorem 3.3).

    Returns the smallest ``ε_total`` such that the k-fold adaptive composition of
    (ε, δ)-DP mechanisms is ``(ε_total, δ_total)``-DP with
    ``δ_total = 1 − (1 − δ)^k (1 − δ')``, i.e. such that ``δ_RR(ε_total) ≤ δ'`` where

    ``δ_i = Σ_{l=0}^{i−1} C(k,l) (e^{(k−l)ε} − e^{(k−2i+l)ε}) / (1 + e^ε)^k``

    at ``ε_total = (k − 2i)ε`` (KOV Thm 3.3); see :func:`optimal_composition_delta`.

    Parameters
    ----------
    epsilon, delta : float
        Per-step guarantee.
    k : int
        Number of steps.
    delta_prime : float
        δ' ∈ [0, 1): the part of the total δ spent on the composition itself. ``0`` gives kε.
    points : {"all", "kov"}
        ``"all"`` (default) solves ``δ_RR(ε_total) = δ'`` over all real ε_total ≥ 0 (the exact
        privacy region, tighter between the theorem's points): a binary search over the
        theorem's grid, then the closed form of ``δ_RR`` between two grid points;
        ``"kov"`` restricts ε_total to the theorem's grid ``(k − 2i)ε`` as printed.

    Notes
    -----
    Always ``≤ kε`` (basic) and, for the same δ', below :func:`advanced_composition`. For
    ``k = 1`` and ``points="kov"`` (or δ' = 0) it returns ε.
    """
    eps = check_epsilon(epsilon)
    dl = check_delta(delta)
    k = check_positive_int(k, name="k")
    dp = check_delta(delta_prime, name="delta_prime")
    points = check_choice(points, name="points", choices=("all", "kov"))
    delta_total = float(-math.expm1(k * math.log1p(-dl) + math.log1p(-dp)))
    log_dp = math.log(dp) if dp > 0 else -math.inf

    def ok(eg: float) -> bool:
        return _log_delta_rr(eg, eps, k) <= log_dp

    # ε_i = (k − 2i)ε decreases in i and δ_i increases: the largest feasible i (δ_0 = 0)
    lo_i, hi_i = 0, k // 2
    while lo_i < hi_i:
        mid = (lo_i + hi_i + 1) // 2
        if ok((k - 2 * mid) * eps):
            lo_i = mid
        else:
            hi_i = mid - 1
    i = lo_i
    upper = (k - 2 * i) * eps
    if points == "kov" or upper == 0.0:
        return (upper, delta_total)
    if dp == 0.0:
        return (upper, delta_total)  # δ_RR > 0 strictly below a grid point
    # Between the grid points, for ε_g ∈ ((k − 2(i+1))ε, (k − 2i)ε] the positive terms are
    # l = 0..i, so δ_RR(ε_g) = (S1 − e^{ε_g} S2)/(1 + e^ε)^k with S1 = Σ C(k,l) e^{(k−l)ε},
    # S2 = Σ C(k,l) e^{lε}: solve δ_RR = δ' in closed form (log space).
    q = 1.0 / (1.0 + math.exp(eps))
    sd = math.sqrt(k * q * (1.0 - q))
    l_lo = max(0, int(math.floor(min(i, k * q) - 100.0 * sd - 100.0)))
    ell = np.arange(l_lo, i + 1, dtype=float)
    log_binom = gammaln(k + 1.0) - gammaln(ell + 1.0) - gammaln(k - ell + 1.0)
    log_s1 = _logsumexp(log_binom + (k - ell) * eps)
    log_s2 = _logsumexp(log_binom + ell * eps)
    log_dn = log_dp + k * math.log1p(math.exp(eps))
    if log_dn >= log_s1:  # cannot happen for a feasible grid point below; be safe
        return (upper, delta_total)
    eg = log_s1 + math.log1p(-math.exp(log_dn - log_s1)) - log_s2
    lower = max(0.0, (k - 2 * (i + 1)) * eps)
    eg = min(max(eg, lower), upper)
    # guard against round-off: step up until feasible (at most a few ulps)
    for _ in range(60):
        if ok(eg):
            break
        eg = min(upper, eg + max(abs(eg), 1.0) * 1e-14 * 4)
    return (eg, delta_total)


def optimal_composition_pairs(pairs: Iterable[Sequence[float]], delta_slack: float) -> tuple[float, float]:
    """The ledger's ``"optimal"`` rule.

    Homogeneous spends (all ``(ε_i, δ_i)`` equal up to 1e-12 relative) are composed with
    :func:`optimal_composition` (KOV Thm 3.3, δ' = ``delta_slack``). **Heterogeneous spends
    fall back to** :func:`advanced_composition_heterogeneous` (KOV's heterogeneous optimum is
    #P-hard in general; no approximation is attempted here). With ``delta_slack = 0`` the
    result is basic composition. Never exceeds basic composition.
    """
    ps = _check_pairs(pairs)
    dp = check_delta(delta_slack, name="delta_slack")
    if not len(ps):
        return (0.0, 0.0)
    e0, d0 = float(ps[0, 0]), float(ps[0, 1])
    homogeneous = bool(
        np.all(np.abs(ps[:, 0] - e0) <= 1e-12 * e0) and np.all(np.abs(ps[:, 1] - d0) <= 1e-12 * d0 + 1e-300)
    )
    eps_basic = math.fsum(ps[:, 0])
    if dp == 0.0 or math.isinf(eps_basic):
        return (eps_basic, math.fsum(ps[:, 1]))
    if not homogeneous:
        return advanced_composition_heterogeneous(ps, dp)
    e, d = optimal_composition(e0, d0, len(ps), dp)
    return (min(e, eps_basic), d)


# ---------------------------------------------------------------------- per-step calibration
def per_step_epsilon(
    target_epsilon: float,
    target_delta: float,
    k: int,
    rule: str = "basic",
    *,
    delta_slack: float | None = None,
) -> tuple[float, float]:
    """The largest per-step ``(ε, δ)`` whose k-fold composition meets ``(target_epsilon, target_delta)``.

    Parameters
    ----------
    target_epsilon, target_delta : float
        The total budget.
    k : int
        Number of steps.
    rule : {"basic", "advanced", "optimal"}
        ``"basic"`` (Thm 1.6): ``(ε/k, δ/k)``. ``"advanced"`` (Thm 1.11, capped at basic) and
        ``"optimal"`` (KOV Thm 3.3): the slack δ' is set aside from ``target_delta`` and the
        rest ``target_delta − δ'`` is split evenly, ``δ_step = (target_delta − δ')/k``; the
        per-step ε is the largest one (bisection, 1e-12 relative) whose composition is ≤
        ``target_epsilon``. With ``target_delta = 0`` both reduce to basic.
    delta_slack : float, optional
        δ' for advanced/optimal; default: all of ``target_delta`` (pure-DP steps, δ_step = 0).

    Returns
    -------
    (epsilon_step, delta_step) : tuple of float

    Examples
    --------
    >>> e, d = per_step_epsilon(1.0, 0.0, 10)
    >>> round(e, 12), d
    (0.1, 0.0)
    """
    te = check_epsilon(target_epsilon, name="target_epsilon")
    td = check_delta(target_delta, name="target_delta")
    k = check_positive_int(k, name="k")
    rule = check_choice(rule, name="rule", choices=("basic", "advanced", "optimal"))
    if rule == "basic" or td == 0.0:
        return (te / k, td / k)
    dp = td if delta_slack is None else check_delta(delta_slack, allow_zero=False, name="delta_slack")
    if dp > td:
        raise ValueError(f"delta_slack must be in (0, target_delta={td}]; got {dp}")
    d_step = (td - dp) / k

    def total(e: float) -> float:
        if rule == "advanced":
            return advanced_composition(e, d_step, k, dp, cap_at_basic=True)[0]
        return optimal_composition(e, d_step, k, dp)[0]

    lo, hi = te / k, te  # basic is always feasible; a single step can never exceed te
    if total(hi) <= te:
        return (hi, d_step)
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if total(mid) <= te:
            lo = mid
        else:
            hi = mid
        if hi - lo <= 1e-12 * lo:
            break
    return (lo, d_step)
