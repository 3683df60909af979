"""Claims of notebook 51: composition (thesis Thm 1.5/1.6, Prop 1.7, Lemma 1.8, Thm 1.11, Prop 1.12; D–R Cor 3.21, Ex 3.7).

The oracle is the exact privacy-loss distribution of k Laplace releases at worst-case shift
(:class:`~dpkit.core.pld.LaplacePLD`, a rigorous bracket on δ(ε')). The functions check basic, adaptive, advanced and
optimal composition against it (Thm 1.5/1.6, 1.11, Kairouz–Oh–Viswanath), the KL bound (Lemma 1.8), Laplace II
(Prop 1.12, an erratum), Dwork–Roth Cor 3.21 and Ex 3.7 (an erratum) and k-fold randomized response, each returning
checks with the table behind them. Statistical checks follow :mod:`dpkit.claims`'s false-alarm budget and retry rule.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np
import pandas as pd

from dpkit.claims.results import NotebookRecorder, NotebookRun, TableResult, retried
from dpkit.core.composition import (
    advanced_composition,
    optimal_composition,
    optimal_composition_delta,
    per_step_epsilon,
)
from dpkit.core.pld import LaplacePLD, laplace_privacy_loss_exact
from dpkit.core.rng import RNGLike, resolve_rng, spawn
from dpkit.core.validation import check_seed
from dpkit.evaluation.audit import audit
from dpkit.evaluation.oracles import (
    AdaptiveComposition,
    clopper_pearson,
    laplace_loss_samples,
    laplace_shift_kl,
    laplace_shift_kl_numeric,
    rr_kfold_delta,
    rr_kl,
)
from dpkit.evaluation.verdicts import Check, FalseAlarmBudget, check

__all__ = [
    "KLResult",
    "basic_composition",
    "kl_bound",
    "adaptive_composition_audit",
    "pld_monte_carlo",
    "composition_bounds",
    "laplace_ii_composition",
    "dr_cor_3_21",
    "dr_ex_3_7",
    "RR_PRINTED_EXAMPLE",
    "rr_kfold_composition",
    "laplace_ii_exact",
    "dr_cor_3_21_exact",
    "notebook_checks",
]


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


#: k-fold RR at ε = 0.1, k = 100, δ' = 10⁻⁵ has Thm 3.20's ε' = 5.850 and exact δ(ε') = 2.0·10⁻⁹
#: (docs/science/foundations.md, *Composition*).
RR_PRINTED_EXAMPLE: dict[str, float] = dict(epsilon=0.1, k=100, delta_prime=1e-5, eps_prime=5.850, delta_exact=2.0e-9)


def composition_bounds(*, plds: Sequence[LaplacePLD], delta_primes: Sequence[float] = (1e-3, 1e-6)) -> TableResult:
    """Thm 1.11 and the optimal composition (KOV) against the exact PLD of k Laplace releases.

    Three checks: the exact δ at Thm 1.11's ε' is ≤ δ' (``"Thm 1.11"``), the exact δ at KOV's ε' is
    ≤ δ' (``"KOV optimal"``), and KOV never exceeds Thm 1.11 (``"KOV ≤ Thm 1.11"``); maxima over
    ``plds × delta_primes``. Table columns: ``epsilon, k, delta_prime, eps_basic, eps_advanced,
    eps_optimal, eps_exact, delta_exact_at_advanced, delta_exact_at_optimal``.
    """
    rows = []
    for pld in plds:
        e, k = pld.epsilon, pld.k
        for dp in delta_primes:
            e_adv = advanced_composition(e, 0.0, k, dp)[0]
            e_kov = optimal_composition(e, 0.0, k, dp)[0]
            rows.append(dict(epsilon=e, k=k, delta_prime=dp, eps_basic=k * e, eps_advanced=e_adv, eps_optimal=e_kov,
                             eps_exact=pld.epsilon_for(dp), delta_exact_at_advanced=pld.delta(e_adv)[1],
                             delta_exact_at_optimal=pld.delta(e_kov)[1]))
    comp = pd.DataFrame(rows)
    checks = (
        check("Thm 1.11", "exact δ of k Laplace releases at Thm 1.11's ε' is ≤ δ' (max ratio over the grid)",
              (comp.delta_exact_at_advanced / comp.delta_prime).max(), 1.0, relation="<="),
        check("KOV optimal", "exact δ at the optimal-composition ε' (Kairouz–Oh–Viswanath) is ≤ δ'",
              (comp.delta_exact_at_optimal / comp.delta_prime).max(), 1.0 + 1e-9, relation="<="),
        check("KOV ≤ Thm 1.11", "optimal composition never exceeds advanced composition (max ε_opt/ε_adv)",
              (comp.eps_optimal / comp.eps_advanced).max(), 1.0, relation="<="),
    )
    return TableResult(checks=checks, table=comp)


def laplace_ii_composition(
    *, ks: Sequence[int] = (10, 100, 1000), epsilon: float = 1.0, delta: float = 1e-5, bins_per_step: int = 2000,
) -> TableResult:
    """Prop 1.12 (Laplace II, per-query ``ε/√(2k ln(1/δ))``): exact δ(ε) ≤ δ, but the printed derivation overshoots ε.

    Two checks: ``"Prop 1.12 (exact PLD)"`` (claim) and ``"Prop 1.12 (printed proof)"`` (negative
    control — erratum: plugging the per-query ε into Thm 1.11 gives ε' > ε, since √(1+u) − 1 ≥ u/2
    is the wrong way). Table columns: ``k, eps_query, eps_thm111, overshoot, delta_exact_at_eps``.
    """
    rows = []
    for k in ks:
        eps_q = epsilon / math.sqrt(2 * k * math.log(1 / delta))
        e_thm111 = advanced_composition(eps_q, 0.0, k, delta)[0]
        pld = laplace_privacy_loss_exact(k, eps_q, bins_per_step=bins_per_step)
        rows.append(dict(k=k, eps_query=eps_q, eps_thm111=e_thm111, overshoot=e_thm111 / epsilon - 1,
                         delta_exact_at_eps=pld.delta(epsilon)[1]))
    p112 = pd.DataFrame(rows)
    checks = (
        check("Prop 1.12 (exact PLD)", f"Laplace II at ε={epsilon}, δ={delta}: exact δ(ε) ≤ δ",
              (p112.delta_exact_at_eps / delta).max(), 1.0, relation="<="),
        check("Prop 1.12 (printed proof)", "plugging the per-query ε into Thm 1.11 gives ε' ≤ ε (the printed derivation)",
              (p112.eps_thm111 / epsilon).max(), 1.0, relation="<=", expected="FAIL",
              note="erratum: √(1+u) − 1 ≥ u/2 is the wrong way; overshoot ≈ ε²/(2 ln(1/δ))"),
    )
    return TableResult(checks=checks, table=p112)


def dr_cor_3_21(
    *, targets: Sequence[float] = (0.1, 0.5, 0.99), ks: Sequence[int] = (1, 10, 100, 10**4, 10**6),
    delta_primes: Sequence[float] = (1e-12, 1e-6, 1e-2),
) -> Check:
    """D–R Cor 3.21: ``ε = ε'/(2√(2k ln(1/δ')))`` per step gives total ≤ ε' by Thm 3.20 (max ratio over the grid)."""
    worst = 0.0
    for target in targets:
        for k in ks:
            for dp in delta_primes:
                e0 = target / (2 * math.sqrt(2 * k * math.log(1 / dp)))
                worst = max(worst, advanced_composition(e0, 0.0, k, dp)[0] / target)
    return check("D-R Cor 3.21",
                 "ε = ε'/(2√(2k ln(1/δ'))) per step gives ≤ ε' by Thm 3.20 (grid ε' < 1, k ≤ 10⁶, δ' ∈ [1e-12, 1e-2])",
                 worst, 1.0, relation="<=")


def dr_ex_3_7(*, k: int = 10**4, delta_prime: float = math.exp(-32)) -> TableResult:
    """D–R Ex 3.7: ε₀ = 1/801 per step does **not** give ε' ≤ 1 (negative control, ε' = 1.0143); the exact inverse 1/812.3 does.

    Table (one row): ``eps_prime_at_1_801, inverse``.
    """
    e801 = advanced_composition(1 / 801, 0.0, k, delta_prime)[0]
    e_inv = per_step_epsilon(1.0, delta_prime, k, "advanced")[0]
    checks = (
        check("D-R Ex 3.7 (printed 1/801)", "ε₀ = 1/801 per step suffices for ε' = 1 (k = 10⁴, δ' = e^-32)", e801, 1.0,
              relation="<=", expected="FAIL", note="ε'(1/801) = 1.0143"),
        check("D-R Ex 3.7 (exact inverse)", "the exact inverse ε₀ = 1/812.3 gives ε' ≤ 1",
              advanced_composition(e_inv, 0.0, k, delta_prime)[0], 1.0 + 1e-9, relation="<=", note=f"1/ε₀ = {1 / e_inv:.1f}"),
    )
    return TableResult(checks=checks, table=pd.DataFrame([dict(eps_prime_at_1_801=e801, inverse=1 / e_inv)]))


def rr_kfold_composition(
    *, epsilons: Sequence[float] = (0.01, 0.05, 0.1, 0.5, 1.0), ks: Sequence[int] = (10, 100, 1000, 10_000),
    delta_primes: Sequence[float] = (1e-3, 1e-6, 1e-9),
) -> TableResult:
    """D–R Thm 3.20 (advanced composition) against the exact δ of k-fold ε-randomized response (docs/science/foundations.md).

    k-fold RR's privacy loss is ``(k − 2l)ε`` with ``l`` binomial, so its exact δ(ε') is a finite sum
    (:func:`~dpkit.evaluation.oracles.rr_kfold_delta`, from :func:`scipy.stats.binom.logpmf`). Four exact checks:

    - ``"D-R Thm 3.20 (k-fold RR, exact)"`` — at Thm 3.20's ``ε' = √(2k ln(1/δ'))ε + kε(e^ε − 1)`` the exact
      δ(ε') ≤ δ' (max ratio over the grid);
    - ``"D-R Thm 3.20 (RR loss tail)"`` — the proof's event: ``P(L > ε') ≤ δ'`` (max ratio);
    - ``"k-fold RR: exact vs KOV accountant"`` — the binomial sum equals dpkit's
      :func:`~dpkit.core.composition.optimal_composition_delta` (KOV Thm 3.3, the same quantity by another
      code path) to relative 1e-9 (the seed protocol's tolerance; both are log-sum-exp evaluations);
    - ``"D-R E9.1 (printed example)"`` — :data:`RR_PRINTED_EXAMPLE`: ε' = 5.850 and δ(ε') = 2.0·10⁻⁹ as printed
      (statistic: the larger of the two deviations in units of the printed last digit, ≤ 0.5).

    (dpkit's PLD accountant, :mod:`dpkit.core.pld`, covers Laplace only; KOV's formula is dpkit's
    accountant for k-fold RR.) Table columns: ``epsilon, k, delta_prime, eps_prime, eps_basic,
    delta_exact, tail_exact, delta_kov``.
    """
    rows = []
    for e in epsilons:
        for k in ks:
            for dp in delta_primes:
                ep = advanced_composition(e, 0.0, k, dp)[0]
                tail = _rr_loss_tail(ep, e, k)
                rows.append(dict(epsilon=e, k=k, delta_prime=dp, eps_prime=ep, eps_basic=k * e,
                                 delta_exact=rr_kfold_delta(ep, e, k), tail_exact=tail,
                                 delta_kov=optimal_composition_delta(ep, e, 0.0, k)))
    tab = pd.DataFrame(rows)
    both = (tab.delta_exact > 0) | (tab.delta_kov > 0)
    rel = float(((tab.delta_exact - tab.delta_kov).abs() / tab[["delta_exact", "delta_kov"]].max(axis=1))[both].max()) \
        if both.any() else 0.0
    ex = RR_PRINTED_EXAMPLE
    ep_ex = advanced_composition(ex["epsilon"], 0.0, int(ex["k"]), ex["delta_prime"])[0]
    d_ex = rr_kfold_delta(ep_ex, ex["epsilon"], int(ex["k"]))
    dev = max(abs(ep_ex - ex["eps_prime"]) / 1e-3, abs(d_ex - ex["delta_exact"]) / 1e-10)
    checks = (
        check("D-R Thm 3.20 (k-fold RR, exact)",
              "k-fold ε-RR at Thm 3.20's ε' = √(2k ln(1/δ'))ε + kε(e^ε − 1): exact δ(ε') ≤ δ' (max ratio; ε ≤ 1, k ≤ 10⁴)",
              (tab.delta_exact / tab.delta_prime).max(), 1.0, relation="<="),
        check("D-R Thm 3.20 (RR loss tail)", "k-fold ε-RR: exact P(privacy loss > ε') ≤ δ' at Thm 3.20's ε' (max ratio)",
              (tab.tail_exact / tab.delta_prime).max(), 1.0, relation="<="),
        check("k-fold RR: exact vs KOV accountant",
              "binomial-sum δ(ε') of k-fold RR equals dpkit's optimal_composition_delta (KOV Thm 3.3): max relative difference",
              rel, 1e-9, relation="<="),
        check("D-R E9.1 (printed example)",
              "k-fold RR, ε = 0.1, k = 100, δ' = 1e-5: ε' = 5.850 and exact δ(ε') = 2.0e-9 as printed "
              "(max deviation in last digits)",
              dev, 0.5, relation="<=", note=f"ε' = {ep_ex:.5f}, δ(ε') = {d_ex:.4g}"),
    )
    return TableResult(checks=checks, table=tab)


def _rr_loss_tail(eps_total: float, epsilon: float, k: int) -> float:
    """``P((k − 2l)ε > ε')`` for ``l ~ Binomial(k, 1/(1 + e^ε))``: the k-fold RR privacy loss's upper tail."""
    from scipy import stats

    lmax = math.ceil((k * epsilon - eps_total) / (2 * epsilon)) - 1  # (k − 2l)ε > ε'  ⇔  l < (kε − ε')/(2ε)
    return float(stats.binom.cdf(lmax, k, 1.0 / (1.0 + math.exp(epsilon)))) if lmax >= 0 else 0.0


def laplace_ii_exact(
    *, epsilon: float = 0.5, delta: float = 1e-5, ks: Sequence[int] = (10, 100, 1000), bins_per_step: int = 2000,
) -> TableResult:
    """Prop 1.12 (Laplace II, per-query ``ε₀ = ε/√(2k ln(1/δ))``) at ε = 0.5 against its exact δ(ε).

    The exact δ(ε) of k Laplace releases at ε₀ lies in the rigorous bracket ``[lower, upper]`` of the
    PLD (:func:`~dpkit.core.pld.laplace_privacy_loss_exact`, FFT with rounded-down/up losses). Two exact checks:

    - ``"Prop 1.12 (ε = 0.5, exact PLD)"`` — ``max upper/δ ≤ 1`` (the claim, with the bracket's upper end);
    - ``"Prop 1.12 (ε = 0.5) ≤ RR worst case"`` — the bracket's lower end is ≤ the exact δ of k-fold
      ε₀-RR (:func:`~dpkit.evaluation.oracles.rr_kfold_delta`), the worst case of every k-fold ε₀-DP
      composition (KOV Thm 3.3), and the bracket is ordered: ``max(lower/δ_RR, lower/upper) ≤ 1``. A PLD
      built at the wrong ε₀ (too large) breaks it.

    - ``"Prop 1.12 (printed proof, ε = 0.5)"`` — negative control, the erratum at ε = 0.5: plugging ε₀
      into Thm 1.11 gives ``ε' = ε + kε₀(e^{ε₀} − 1) > ε`` (overshoot ≈ ε²/(2 ln(1/δ)) ≈ 0.011 at δ = 10⁻⁵).

    Table columns: ``k, eps_query, delta_lower, delta_upper, delta_rr, eps_thm111``.
    """
    rows = []
    for k in ks:
        e0 = epsilon / math.sqrt(2 * k * math.log(1 / delta))
        lo, hi = laplace_privacy_loss_exact(k, e0, bins_per_step=bins_per_step).delta(epsilon)
        rows.append(dict(k=k, eps_query=e0, delta_lower=lo, delta_upper=hi, delta_rr=rr_kfold_delta(epsilon, e0, k),
                         eps_thm111=advanced_composition(e0, 0.0, k, delta)[0]))
    tab = pd.DataFrame(rows)
    order = max(_ratio(tab.delta_lower, tab.delta_rr), _ratio(tab.delta_lower, tab.delta_upper))
    checks = (
        check(f"Prop 1.12 (ε = {epsilon:g}, exact PLD)",
              f"Laplace II at ε = {epsilon:g}, δ = {delta:g}: exact δ(ε) ≤ δ (PLD upper bracket, max ratio)",
              (tab.delta_upper / delta).max(), 1.0, relation="<="),
        check(f"Prop 1.12 (ε = {epsilon:g}) ≤ RR worst case",
              "exact Laplace δ(ε) (PLD lower bracket) ≤ exact δ of k-fold ε₀-RR (KOV worst case) and ≤ the upper bracket "
              "(max ratio)",
              order, 1.0, relation="<="),
        check(f"Prop 1.12 (printed proof, ε = {epsilon:g})",
              f"at ε = {epsilon:g}: plugging the per-query ε into Thm 1.11 gives ε' ≤ ε (the printed derivation; max ε'/ε)",
              (tab.eps_thm111 / epsilon).max(), 1.0, relation="<=", expected="FAIL",
              note=f"erratum: ε' − ε = kε₀(e^ε₀ − 1) ≈ ε²/(2 ln(1/δ)) = {epsilon**2 / (2 * math.log(1 / delta)):.4f}"),
    )
    return TableResult(checks=checks, table=tab)


def _ratio(num: pd.Series, den: pd.Series) -> float:
    """``max num/den`` with ``0/0 = 0`` (both exactly zero, e.g. δ = 0 below basic composition's kε) and ``x/0 = ∞``."""
    n, d = num.to_numpy(dtype=float), den.to_numpy(dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        r = np.where(d > 0, n / np.where(d > 0, d, 1.0), np.where(n > 0, np.inf, 0.0))
    return float(r.max()) if r.size else 0.0


def dr_cor_3_21_exact(
    *, targets: Sequence[float] = (0.1, 0.5, 0.99), ks: Sequence[int] = (1, 10, 100, 10**4, 10**6),
    delta_primes: Sequence[float] = (1e-12, 1e-6, 1e-2),
) -> TableResult:
    """D–R Cor 3.21 against an exact oracle: k steps at ``ε₀ = ε'/(2√(2k ln(1/δ')))`` have exact δ(ε') ≤ δ'.

    By KOV Thm 3.3 the k-fold composition of ε₀-DP mechanisms is dominated by k-fold ε₀-randomized
    response, so its exact worst-case δ(ε') is :func:`~dpkit.evaluation.oracles.rr_kfold_delta`.
    Check ``"D-R Cor 3.21 (exact)"``: the max of ``δ_exact(ε')/δ'`` over the grid is ≤ 1; the table
    also gives the exact ε' reached (``ε_exact = min{ε : δ(ε) ≤ δ'}``, by brentq) next to the target.
    Table columns: ``target, k, delta_prime, eps_step, delta_exact, eps_exact``.
    """
    from scipy.optimize import brentq

    rows = []
    for target in targets:
        for k in ks:
            for dp in delta_primes:
                e0 = target / (2 * math.sqrt(2 * k * math.log(1 / dp)))
                d = rr_kfold_delta(target, e0, k)
                f = lambda e, e0=e0, k=k, dp=dp: rr_kfold_delta(e, e0, k) - dp  # noqa: E731
                e_ex = 0.0 if f(0.0) <= 0 else brentq(f, 0.0, k * e0 + 1e-12, xtol=1e-12)
                rows.append(dict(target=target, k=k, delta_prime=dp, eps_step=e0, delta_exact=d, eps_exact=e_ex))
    tab = pd.DataFrame(rows)
    c = check("D-R Cor 3.21 (exact)",
              "ε₀ = ε'/(2√(2k ln(1/δ'))) per step: exact worst-case δ(ε') (k-fold RR, KOV) ≤ δ' (max ratio; ε' < 1, k ≤ 10⁶)",
              (tab.delta_exact / tab.delta_prime).max(), 1.0, relation="<=",
              note=f"largest exact ε'/target: {(tab.eps_exact / tab.target).max():.3f}")
    return TableResult(checks=(c,), table=tab)


def notebook_checks(
    seed: int, quick: bool, false_alarm: float, *, epsilons: Sequence[float], ks: Sequence[int],
    delta_primes: Sequence[float], bins_per_step: int, mc_samples: int, prop112_epsilon: float, prop112_delta: float,
) -> NotebookRun:
    """Every check and table row of notebook 51 (``51_composition``) run with these parameters.

    The notebook's parameters in lower case; ``quick`` applies its QUICK grids. One stream is spawned from
    ``seed`` (the composition auditor, then the PLD Monte Carlo); the budget ``false_alarm`` is split over the two
    statistical checks. ``parts``: ``plds`` (the exact k-fold PLDs of the grid ε × k), ``kl``, ``adaptive``, ``bounds``,
    ``p112`` (the sections' results).
    """
    seed = check_seed(seed)
    if quick:
        epsilons, ks, bins_per_step, mc_samples = [0.1, 0.5], [10, 100], 200, 50000
    cor321_ks = [1, 10, 100, 10**4] if quick else [1, 10, 100, 10**4, 10**6]  # steps of the exact Cor 3.21 grid
    rr_ks = [10, 100, 1000] if quick else [10, 100, 1000, 10**4]  # steps of the exact k-fold RR grid
    params = dict(SEED=seed, QUICK=quick, EPSILONS=epsilons, KS=ks, DELTA_PRIMES=delta_primes, BINS_PER_STEP=bins_per_step,
                  MC_SAMPLES=mc_samples, PROP112_EPSILON=prop112_epsilon, PROP112_DELTA=prop112_delta,
                  FALSE_ALARM=false_alarm)
    (g_mc,) = spawn(seed, 1)
    # the exact k-fold privacy-loss distributions of the grid ε × k (shared by the checks below)
    plds = [laplace_privacy_loss_exact(k, e, bins_per_step=bins_per_step) for e in epsilons for k in ks]
    budget = FalseAlarmBudget(false_alarm, n_tests=2)  # the composition auditor, PLD vs Monte Carlo
    gamma = budget.level  # the per-test level of every statistical check (negative controls too)
    out = NotebookRecorder()
    basic = basic_composition(ks=ks, total_epsilon=1.0, bins_per_step=bins_per_step)
    out.table("basic", basic.table.to_dict("records"))
    out.add(*basic.checks)
    kl = kl_bound()
    out.add(kl.check)
    adaptive = adaptive_composition_audit(composition=AdaptiveComposition(epsilons=(0.3, 0.3, 0.4)), n_samples=mc_samples * 4,
                                          gamma=gamma, rng=g_mc)
    out.add(*adaptive.checks)
    out.table("composition_audit", adaptive.table.to_dict("records"))
    bounds = composition_bounds(plds=plds, delta_primes=delta_primes)
    out.table("advanced", bounds.table.to_dict("records"))
    out.add(*bounds.checks)
    mc = pld_monte_carlo(plds=plds[:2], n_samples=mc_samples, gamma=gamma, rng=g_mc)
    out.table("pld_mc", mc.table.to_dict("records"))
    out.add(*mc.checks)
    p112 = laplace_ii_composition(ks=ks, epsilon=prop112_epsilon, delta=prop112_delta, bins_per_step=bins_per_step)
    out.table("prop112", p112.table.to_dict("records"))
    out.add(*p112.checks)
    p112_half = laplace_ii_exact(epsilon=0.5, delta=prop112_delta, ks=ks, bins_per_step=bins_per_step)
    out.table("prop112_eps05", p112_half.table.to_dict("records"))
    out.add(*p112_half.checks)
    out.add(dr_cor_3_21())
    cor_exact = dr_cor_3_21_exact(ks=cor321_ks)
    out.table("cor321_exact", cor_exact.table.to_dict("records"))
    out.add(*cor_exact.checks)
    rr = rr_kfold_composition(ks=rr_ks)
    out.table("rr_kfold", rr.table.to_dict("records"))
    out.add(*rr.checks)
    ex37 = dr_ex_3_7()
    out.add(*ex37.checks)
    out.table("ex37", ex37.table.to_dict("records"))
    return out.finish(params, budget, plds=plds, kl=kl, adaptive=adaptive, bounds=bounds, p112=p112)
