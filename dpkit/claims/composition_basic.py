"""Claims of notebook 51 on basic composition and the privacy loss (thesis Thm 1.5/1.6, Prop 1.7, Lemma 1.8).

- :func:`basic_composition` — Thm 1.6 / Prop 1.7: k releases at ε/k each have δ(ε) = 0;
- :func:`kl_bound` — Lemma 1.8: exact KL of shifted Laplace and of randomized response ≤ ε(e^ε − 1);
- :func:`adaptive_composition_audit` — Thm 1.5/1.6 by the auditor on an adaptive composition of three mechanisms;
- :func:`pld_monte_carlo` — the exact privacy-loss distribution's bracket against sampled privacy losses.

Statistical checks: per-test levels, the false-alarm budget and the retry rule as in :mod:`dpkit.claims`;
:mod:`dpkit.claims.composition` re-exports every name.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np
import pandas as pd

from dpkit.claims.results import TableResult, retried
from dpkit.core.composition import (
    LaplacePLD,
    laplace_privacy_loss_exact,
)
from dpkit.core.rng import RNGLike, resolve_rng
from dpkit.evaluation.audit import audit
from dpkit.evaluation.oracles import (
    AdaptiveComposition,
    clopper_pearson,
    laplace_loss_samples,
    laplace_shift_kl,
    laplace_shift_kl_numeric,
    rr_kl,
)
from dpkit.evaluation.verdicts import Check, check

__all__ = ["KLResult", "basic_composition", "kl_bound", "adaptive_composition_audit", "pld_monte_carlo"]


@dataclass(frozen=True, eq=False)  # holds arrays: compare fields explicitly
class KLResult:
    """Lemma 1.8's check and the curves of its figure (KL against ε)."""

    check: Check
    epsilons: np.ndarray
    kl_laplace: np.ndarray
    kl_rr: np.ndarray
    bound: np.ndarray


def basic_composition(
    *, ks: Sequence[int] = (10, 100, 1000), total_epsilon: float = 1.0, bins_per_step: int = 2000,
) -> TableResult:
    """Thm 1.6 / Prop 1.7: k Laplace releases at ``ε/k`` each have exact δ(ε) = 0 (upper bracket ≤ 1e-12).

    Table columns: ``k, eps_step, delta_upper_at_total``.
    """
    worst, rows = 0.0, []
    for k in ks:
        pld = laplace_privacy_loss_exact(k, total_epsilon / k, bins_per_step=bins_per_step)
        hi = pld.delta(total_epsilon)[1]
        worst = max(worst, hi)
        rows.append(dict(k=k, eps_step=total_epsilon / k, delta_upper_at_total=hi))
    c = check("Thm 1.6 / Prop 1.7", "k Laplace releases at ε/k each (Lap(kΔ/ε)): exact δ(ε) = 0 (basic composition)",
              worst, 1e-12, relation="<=")
    return TableResult(checks=(c,), table=pd.DataFrame(rows))


def kl_bound(*, epsilons: np.ndarray | None = None) -> KLResult:
    """Lemma 1.8: ``KL ≤ ε(e^ε − 1)`` for shifted Laplace (quadrature) and randomized response, on a grid of ε.

    Default grid: 40 points log-spaced on [0.01, 5]. Statistic: the max ratio KL/bound; the note
    gives the distance between the quadrature and the closed form ``ε + e^{−ε} − 1``.
    """
    eps_grid = np.geomspace(0.01, 5, 40) if epsilons is None else np.asarray(epsilons, dtype=float)
    kl_lap = np.array([laplace_shift_kl_numeric(e) for e in eps_grid])
    kl_rr = np.array([rr_kl(e) for e in eps_grid])
    bound = eps_grid * np.expm1(eps_grid)
    closed = np.max(np.abs(kl_lap - [laplace_shift_kl(e) for e in eps_grid]))
    c = check("Lemma 1.8", "KL(shifted Laplace) and KL(randomized response) ≤ ε(e^ε − 1), ε ∈ [0.01, 5] (quadrature)",
              float(max((kl_lap / bound).max(), (kl_rr / bound).max())), 1.0, relation="<=",
              note=f"closed form ε + e^-ε − 1 matches quadrature to {closed:.1e}")
    return KLResult(check=c, epsilons=eps_grid, kl_laplace=kl_lap, kl_rr=kl_rr, bound=bound)


@retried
def adaptive_composition_audit(
    *, composition: AdaptiveComposition | None = None, n_samples: int = 800_000, gamma: float = 1e-3, rng: RNGLike = None,
) -> TableResult:
    """Thm 1.5/1.6 by the auditor: the adaptive Laplace → RR → exponential composition has ``ε_lb ≤ ε₁ + ε₂ + ε₃``.

    The audited statistic is the exact privacy loss of the joint output
    (:meth:`~dpkit.evaluation.oracles.AdaptiveComposition.privacy_loss`, a post-processing of the
    output, so every event on it is a legal DP event). Table columns: ``epsilon_lb, epsilon_point, bound``.
    """
    comp = AdaptiveComposition() if composition is None else composition
    e1, e2, e3 = comp.epsilons
    a = audit(comp.privacy_loss, 0, 1, n_samples=n_samples, confidence=1 - gamma, rng=rng)
    c = check("Thm 1.5/1.6 (auditor)",
              f"adaptive Laplace(ε₁) → RR(ε₂) → exponential(ε₃): auditor ε_lb ≤ ε₁ + ε₂ + ε₃ = {e1 + e2 + e3:g}",
              a.epsilon_lb, e1 + e2 + e3, relation="<=", confidence=1 - gamma, note=f"point {a.epsilon_point:.3f}")
    row = dict(epsilon_lb=a.epsilon_lb, epsilon_point=a.epsilon_point, bound=e1 + e2 + e3)
    return TableResult(checks=(c,), table=pd.DataFrame([row]))


@retried
def pld_monte_carlo(
    *, plds: Sequence[LaplacePLD], n_samples: int = 200_000, quantiles: Sequence[float] = (0.5, 0.9, 0.99), gamma: float = 1e-3,
    rng: RNGLike = None,
) -> TableResult:
    """The exact PLD's tails ``P(L > t)`` against sampled k-fold Laplace privacy losses.

    For every PLD, ``n_samples`` losses are drawn (:func:`~dpkit.evaluation.oracles.laplace_loss_samples`)
    and at thresholds ``t`` near their ``quantiles`` — put half-way between grid points, since the
    k-fold loss has atoms on the grid — the two-sided Clopper–Pearson interval (level
    ``1 − γ/n_tests``, Bonferroni) must meet the PLD's ``[lower, upper]`` bracket of the tail.
    Statistic: the largest gap between interval and bracket (0 when they all overlap). Table
    columns: ``epsilon, k, threshold, mc_tail, cp_low, cp_high, exact_low, exact_high``.
    """
    g = resolve_rng(rng)
    n_tests, dist, rows = len(quantiles) * len(plds), 0.0, []
    for pld in plds:
        L = laplace_loss_samples(pld.k, pld.epsilon, n_samples, rng=g)
        for q in quantiles:
            t = (math.floor(np.quantile(L, q) / pld.step) + 0.5) * pld.step
            lo_t, hi_t = pld.pmf_lower[pld.losses > t].sum(), pld.pmf_upper[pld.losses > t].sum()
            cl, cu = clopper_pearson(int((L > t).sum()), L.size, 1 - gamma / n_tests)
            dist = max(dist, max(0.0, cl - hi_t, lo_t - cu))
            rows.append(dict(epsilon=pld.epsilon, k=pld.k, threshold=t, mc_tail=float((L > t).mean()), cp_low=cl, cp_high=cu,
                             exact_low=lo_t, exact_high=hi_t))
    c = check("PLD vs Monte Carlo",
              "sampled k-fold Laplace privacy-loss tails agree with the exact PLD bracket (gap between CP interval and bracket)",
              dist, 0.0, relation="<=", confidence=1 - gamma)
    return TableResult(checks=(c,), table=pd.DataFrame(rows))
