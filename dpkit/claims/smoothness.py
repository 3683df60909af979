"""Claims of notebook 54: smoothness of the Gaussian-kernel workload (thesis Prop 2.2).

With exact derivatives (:mod:`dpkit.queries.smoothness`): the Hermite inequality of the proof, the derivatives against
finite differences, the proof's chain ``√(k!)/σ^k ≤ 1``, ``‖f‖_K ≤ 1`` at ``K = ⌊σ²⌋`` on random workloads, the first
order above 1, and a single kernel at order 3σ² as negative control.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np
import pandas as pd

from dpkit.claims.results import TableResult
from dpkit.core.rng import RNGLike, resolve_rng
from dpkit.core.validation import check_sigmas
from dpkit.evaluation.verdicts import Check, check
from dpkit.queries.smoothness import (
    critical_order,
    hermite_inequality_ratio,
    hermite_sup,
    mixture_derivative,
    prop22_bound,
    smoothness_norm,
)

__all__ = [
    "CriticalOrderResult",
    "hermite_inequality",
    "hermite_derivatives",
    "proof_chain",
    "workload_norms",
    "critical_orders",
    "beyond_sigma_squared",
]


@dataclass(frozen=True, eq=False)  # holds arrays: compare fields explicitly
class CriticalOrderResult:
    """The order-margin check, its table and, per σ, the curve ``sup|∂^K e^{−x²/(2σ²)}|`` against K (for the figure).

    Attributes
    ----------
    checks : tuple of Check
    table : DataFrame
        Columns ``sigma, sigma2, critical_order, ratio``.
    orders, sup_derivative : tuple of ndarray
        For each σ (in table order): the orders ``K = 0..⌊3.2σ²⌋`` and ``hermite_sup(K)/σ^K``.
    """

    checks: tuple[Check, ...]
    table: pd.DataFrame
    orders: tuple[np.ndarray, ...]
    sup_derivative: tuple[np.ndarray, ...]


def _short_sci(x: float) -> str:
    """``1e-4`` style: the mantissa without trailing zeros, the exponent without padding."""
    mantissa, exponent = f"{x:e}".split("e")
    return f"{float(mantissa):g}e{int(exponent)}"


def hermite_inequality(*, k_max: int = 80) -> Check:
    """``|He_k(u)| ≤ √(k!) e^{u²/4}`` for ``k ≤ k_max`` on a grid of [−40, 40].

    In physicists' form this is the thesis's ``|H_k(x)| ≤ (2^k k!)^{1/2} e^{x²/2}``.
    """
    return check("Prop 2.2 (Hermite ineq.)", f"|He_k(u)| ≤ √(k!) e^(u²/4) for k ≤ {k_max} (grid on [−40, 40])",
                 hermite_inequality_ratio(k_max).max(), 1.0, relation="<=", note="tight at k = 0")


def hermite_derivatives(
    *, sigmas: Sequence[float] = (1.0, 1.5, 2.0, 3.0, 4.0), J: int = 10, n_cases: int = 20, h: float = 1e-4,
    tolerance: float = 1e-5, rng: RNGLike = None,
) -> Check:
    """The exact Hermite-formula derivatives agree with central differences of the next-lower order (error O(h²)).

    ``n_cases`` random 2-D mixtures of ``J`` kernels (σ drawn from ``sigmas``), orders ≤ 4 with at
    least one derivative in x₁, at a random point; statistic: the max relative error.
    """
    sigmas = check_sigmas(sigmas)
    g = resolve_rng(rng)
    worst = 0.0
    for _ in range(n_cases):
        d = 2
        C, w = g.uniform(-1, 1, (J, d)), g.dirichlet(np.ones(J))
        sigma = float(g.choice(sigmas))
        k = tuple(int(v) for v in g.integers(0, 4, d))
        k = (k[0] + 1, k[1])
        x = g.uniform(-1, 1, (1, d))
        e = np.array([h, 0.0])
        lower = (k[0] - 1, k[1])
        fd = (mixture_derivative(x + e, C, w, sigma, lower) - mixture_derivative(x - e, C, w, sigma, lower)) / (2 * h)
        exact = mixture_derivative(x, C, w, sigma, k)
        worst = max(worst, float(abs(fd - exact)[0]) / max(1.0, float(abs(exact)[0])))
    return check("Hermite derivatives", "exact Hermite-formula derivatives agree with central finite differences",
                 worst, tolerance, relation="<=", note=f"relative error, orders ≤ 4, h = {_short_sci(h)}")


def proof_chain(*, sigmas: Sequence[float] = (1.0, 1.5, 2.0, 3.0, 4.0)) -> Check:
    """The proof's chain: ``max_{k ≤ σ²} √(k!)/σ^k ≤ 1``, which bounds every ``|D^k f|`` with ``‖α‖₁ ≤ 1``."""
    sigmas = check_sigmas(sigmas)
    chain = max(prop22_bound(s, int(math.floor(s * s))) for s in sigmas)
    return check("Prop 2.2 (proof chain)", "max_{k ≤ σ²} √(k!)/σ^k ≤ 1 (bounds every |D^k f| with ‖α‖₁ ≤ 1)", chain, 1.0,
                 relation="<=")


def workload_norms(
    *, sigmas: Sequence[float] = (1.0, 1.5, 2.0, 3.0, 4.0), dims: Sequence[int] = (1, 2), J: int = 10, n_workloads: int = 20,
    per_dim_1d: int = 801, per_dim_2d: int = 61, rng: RNGLike = None,
) -> TableResult:
    """Prop 2.2: ``‖f‖_K ≤ 1`` for ``K = ⌊σ²⌋`` on random workloads (2.1) (centres uniform in the cube, Dirichlet weights).

    The norm is a maximum over a grid plus the centres — a lower bound of the sup, so a violation
    would be real. Table columns: ``sigma, K, d, workload, norm_K, argmax, max_derivative_order_ge1``.
    """
    sigmas = check_sigmas(sigmas)
    g = resolve_rng(rng)
    rows = []
    for sigma in sigmas:
        K = int(math.floor(sigma**2))
        for d in dims:
            per_dim = per_dim_1d if d == 1 else per_dim_2d
            for t in range(n_workloads):
                C, w = g.uniform(-1, 1, (J, d)), g.dirichlet(np.ones(J))
                norm, arg, per_order = smoothness_norm(C, w, sigma, K, per_dim=per_dim)
                rows.append(dict(sigma=sigma, K=K, d=d, workload=t, norm_K=norm, argmax=str(arg),
                                 max_derivative_order_ge1=float(per_order[1:].max()) if K >= 1 else 0.0))
    wk = pd.DataFrame(rows)
    c = check("Prop 2.2", "‖f‖_K ≤ 1 for K = ⌊σ²⌋ on random workloads (2.1), d ∈ {1, 2}", wk.norm_K.max(), 1.0, relation="<=",
              note=f"{len(wk)} workloads; max over orders ≥ 1 alone: {wk.max_derivative_order_ge1.max():.3g}")
    return TableResult(checks=(c,), table=wk)


def critical_orders(*, sigmas: Sequence[float] = (1.0, 1.5, 2.0, 3.0, 4.0)) -> CriticalOrderResult:
    """The first order with a single-kernel derivative above 1 lies beyond σ² (min over σ of critical order − σ² > 0).

    Prop 2.2 is conservative by a factor ≈ 2.7 (column ``ratio``).
    """
    sigmas = check_sigmas(sigmas)
    rows, orders, sups = [], [], []
    for sigma in sigmas:
        kc = critical_order(sigma)
        rows.append(dict(sigma=sigma, sigma2=sigma**2, critical_order=kc, ratio=kc / sigma**2))
        ks = np.arange(0, int(3.2 * sigma**2) + 1)
        orders.append(ks)
        sups.append(np.array([hermite_sup(int(k)) / sigma**k for k in ks]))
    crit = pd.DataFrame(rows)
    c = check("Prop 2.2 (order margin)",
              "the first order with a derivative > 1 lies beyond σ² (min over σ of critical order − σ²)",
              float((crit.critical_order - crit.sigma2).min()), 0.0, relation=">")
    return CriticalOrderResult(checks=(c,), table=crit, orders=tuple(orders), sup_derivative=tuple(sups))


def beyond_sigma_squared(*, sigmas: Sequence[float] = (1.0, 1.5, 2.0, 3.0, 4.0), per_dim: int = 801) -> TableResult:
    """Negative control: Prop 2.2 extended to ``K = ⌈3σ²⌉`` fails for one kernel centred in the cube (a valid workload, α = e₁).

    Table columns: ``sigma, K, norm_K, argmax``.
    """
    sigmas = check_sigmas(sigmas)
    worst_beyond, rows = 0.0, []
    for sigma in sigmas:
        Kb = int(math.ceil(3 * sigma**2))
        nb, arg, _ = smoothness_norm(np.zeros((1, 1)), [1.0], sigma, Kb, per_dim=per_dim)
        worst_beyond = max(worst_beyond, nb)
        rows.append(dict(sigma=sigma, K=Kb, norm_K=nb, argmax=str(arg)))
    c = check("Prop 2.2 beyond σ² (K = 3σ²)", "‖f‖_K ≤ 1 also at K = 3σ² (outside the proposition)", worst_beyond, 1.0,
              relation="<=", expected="FAIL")
    return TableResult(checks=(c,), table=pd.DataFrame(rows))
