"""Composition: hand-computed values, orderings (optimal ≤ advanced ≤ basic), per-step calibration, exact Laplace PLD."""
from __future__ import annotations

import math

import numpy as np
import pytest

from dpkit.core.composition import (
    advanced_composition,
    advanced_composition_heterogeneous,
    basic_composition,
    optimal_composition,
    optimal_composition_delta,
    optimal_composition_pairs,
    per_step_epsilon,
)
from dpkit.core.exceptions import FeasibilityError
from dpkit.core.pld import laplace_composition_delta, laplace_privacy_loss_exact


def test_basic():
    assert basic_composition(0.1, 1e-6, 10) == pytest.approx((1.0, 1e-5))
    with pytest.raises(ValueError, match="k"):
        basic_composition(0.1, 0.0, 0)


def test_advanced_hand_computed():
    # ε = 0.1, k = 100, δ' = 1e-5: 0.1·√(200 ln 1e5) + 100·0.1·(e^0.1 − 1)
    #   √(200 · 11.512925) = 47.98526 → 4.798526 ; 10 · 0.10517092 = 1.0517092 ; sum 5.850235
    e, d = advanced_composition(0.1, 1e-7, 100, 1e-5)
    assert e == pytest.approx(5.850235, abs=1e-6)
    assert d == pytest.approx(100 * 1e-7 + 1e-5)
    # D–R Ex 3.7 [C]: ε₀ = 1/801, k = 1e4, δ' = e^−32 gives 1.0143 > 1
    assert advanced_composition(1 / 801, 0.0, 10_000, math.exp(-32))[0] == pytest.approx(1.0143, abs=1e-4)
    # D–R E9.6: ε = 1, k = 20, δ' = 0.01 gives 47.9 > kε = 20; the capped form reports 20
    assert advanced_composition(1.0, 0.0, 20, 0.01)[0] == pytest.approx(47.9, abs=0.05)
    assert advanced_composition(1.0, 0.0, 20, 0.01, cap_at_basic=True)[0] == 20.0
    with pytest.raises(ValueError, match="delta_prime"):
        advanced_composition(0.1, 0.0, 10, 0.0)


def test_advanced_heterogeneous():
    pairs = [(0.1, 1e-7)] * 100
    assert advanced_composition_heterogeneous(pairs, 1e-5) == pytest.approx(advanced_composition(0.1, 1e-7, 100, 1e-5))
    # hand: ε = (0.1, 0.2), δ' = 0.6: √(2 ln(1/0.6) · 0.05) + 0.1(e^0.1−1) + 0.2(e^0.2−1)
    #   = 0.226013 + 0.010517 + 0.044281 = 0.280811 (< basic 0.3)
    e, d = advanced_composition_heterogeneous([(0.1, 0.0), (0.2, 1e-3)], 0.6)
    assert e == pytest.approx(math.sqrt(2 * math.log(1 / 0.6) * 0.05) + 0.1 * math.expm1(0.1) + 0.2 * math.expm1(0.2))
    assert e == pytest.approx(0.280811, abs=2e-6)
    assert d == pytest.approx(0.601)
    # never more than basic
    assert advanced_composition_heterogeneous([(1.0, 0.0)] * 20, 0.01) == pytest.approx((20.0, 0.01))
    # no slack ⇒ basic
    assert advanced_composition_heterogeneous([(0.1, 1e-6)] * 3, 0.0) == pytest.approx((0.3, 3e-6))
    assert advanced_composition_heterogeneous([(math.inf, 0.0), (0.1, 0.0)], 1e-5)[0] == math.inf
    with pytest.raises(ValueError, match=r"pairs\[1\].epsilon"):
        advanced_composition_heterogeneous([(0.1, 0.0), (-1.0, 0.0)], 1e-5)


def _kov_delta_i_direct(eps: float, k: int, i: int) -> float:
    """KOV Thm 3.3 as printed, in plain floating point (small k only)."""
    s = sum(math.comb(k, l) * (math.exp((k - l) * eps) - math.exp((k - 2 * i + l) * eps)) for l in range(i))
    return s / (1 + math.exp(eps)) ** k


@pytest.mark.parametrize("k, eps", [(2, 0.5), (5, 0.3), (10, 1.0), (30, 0.1)])
def test_kov_delta_matches_theorem(k, eps):
    for i in range(k // 2 + 1):
        dl = 1e-4
        got = optimal_composition_delta((k - 2 * i) * eps, eps, dl, k)
        want = 1 - (1 - dl) ** k * (1 - _kov_delta_i_direct(eps, k, i))
        assert got == pytest.approx(want, rel=1e-9, abs=1e-15)


def test_kov_hand_computed_k2():
    # k = 2, ε = 0.5, ε_total = 0 (i = 1): δ_1 = (e^1 − e^0)/(1 + e^0.5)^2
    assert optimal_composition_delta(0.0, 0.5, 0.0, 2) == pytest.approx((math.e - 1) / (1 + math.exp(0.5)) ** 2)
    assert optimal_composition_delta(1.0, 0.5, 0.0, 2) == 0.0


def test_kov_k1_is_epsilon():
    for eps in (0.1, 1.0, 3.0):
        assert optimal_composition(eps, 0.0, 1, 1e-5, points="kov")[0] == pytest.approx(eps)
        assert optimal_composition(eps, 0.0, 1, 0.0)[0] == pytest.approx(eps)
        # with δ' > 0 the exact region lets ε_total dip just below ε (δ_RR(ε_g) = (e^ε − e^ε_g)/(1 + e^ε))
        e = optimal_composition(eps, 0.0, 1, 1e-5)[0]
        assert eps - 1e-4 < e <= eps
        assert (math.exp(eps) - math.exp(e)) / (1 + math.exp(eps)) == pytest.approx(1e-5, rel=1e-6)


@pytest.mark.parametrize("eps", [0.01, 0.1, 0.5, 1.0])
@pytest.mark.parametrize("k", [1, 10, 100, 1000])
@pytest.mark.parametrize("dp", [1e-3, 1e-6, 1e-9])
def test_ordering_optimal_le_advanced_le_basic(eps, k, dp):
    opt, d_opt = optimal_composition(eps, 1e-8, k, dp)
    adv, d_adv = advanced_composition(eps, 1e-8, k, dp, cap_at_basic=True)
    assert opt <= adv + 1e-12 <= k * eps + 1e-9
    assert d_opt <= d_adv  # 1 − (1−δ)^k(1−δ') ≤ kδ + δ'
    assert optimal_composition(eps, 1e-8, k, dp, points="kov")[0] >= opt - 1e-12
    # the returned point is feasible and (for the continuous solve) tight
    if opt > 0:
        assert optimal_composition_delta(opt, eps, 1e-8, k) <= d_opt * (1 + 1e-9)
        assert optimal_composition_delta(opt * (1 - 1e-6), eps, 1e-8, k) > d_opt  # smallest such ε


def test_optimal_pairs():
    h = [(0.1, 0.0)] * 50
    assert optimal_composition_pairs(h, 1e-6) == pytest.approx(optimal_composition(0.1, 0.0, 50, 1e-6))
    het = [(0.1, 0.0)] * 49 + [(0.2, 0.0)]
    assert optimal_composition_pairs(het, 1e-6) == pytest.approx(advanced_composition_heterogeneous(het, 1e-6))
    assert optimal_composition_pairs(h, 0.0) == pytest.approx((5.0, 0.0))


def test_per_step_epsilon():
    assert per_step_epsilon(1.0, 1e-5, 10) == pytest.approx((0.1, 1e-6))
    target, td, k = 1.0, 1e-5, 100
    e_b = per_step_epsilon(target, td, k, "basic")[0]
    e_a, d_a = per_step_epsilon(target, td, k, "advanced")
    e_o, d_o = per_step_epsilon(target, td, k, "optimal")
    assert e_b <= e_a <= e_o
    assert d_a == 0.0 and d_o == 0.0  # all of δ went to the slack (pure steps)
    assert advanced_composition(e_a, 0.0, k, td)[0] == pytest.approx(target, rel=1e-9)
    assert advanced_composition(e_a * 1.001, 0.0, k, td)[0] > target
    assert optimal_composition(e_o, 0.0, k, td)[0] == pytest.approx(target, rel=1e-9)
    assert optimal_composition(e_o * 1.001, 0.0, k, td)[0] > target
    # D–R Ex 3.7: the exact inverse of Thm 3.20 at k = 1e4, δ' = e^−32 is 1/812.3
    e = per_step_epsilon(1.0, math.exp(-32), 10_000, "advanced")[0]
    assert 1 / e == pytest.approx(812.3, abs=0.1)
    # δ split: slack 4e-6, per step (1e-5 − 4e-6)/k
    assert per_step_epsilon(1.0, 1e-5, 10, "advanced", delta_slack=4e-6)[1] == pytest.approx(6e-7)
    with pytest.raises(ValueError, match="delta_slack"):
        per_step_epsilon(1.0, 1e-5, 10, "advanced", delta_slack=1e-4)
    with pytest.raises(ValueError, match="rule"):
        per_step_epsilon(1.0, 1e-5, 10, "renyi")
    # no δ ⇒ every rule is basic
    assert per_step_epsilon(1.0, 0.0, 10, "optimal") == pytest.approx((0.1, 0.0))


def test_laplace_pld_single_step_closed_form():
    # one Laplace release: δ(ε') = 1 − e^{(ε' − ε)/2} for 0 ≤ ε' ≤ ε
    pld = laplace_privacy_loss_exact(1, 1.0)
    for ep in (0.0, 0.3, 0.9):
        lo, hi = pld.delta(ep)
        exact = 1 - math.exp((ep - 1.0) / 2)
        assert lo <= exact <= hi
        assert hi - lo < 2e-3
    assert pld.delta(1.0) == (0.0, 0.0)
    assert pld.pmf_upper.sum() == pytest.approx(1.0)


def test_laplace_pld_against_monte_carlo():
    # k = 3, ε_step = 0.5: sample the loss sum exactly and estimate E[(1 − e^{ε'−L})_+];
    # margin 5 standard errors of the Monte Carlo mean.
    k, eps, ep = 3, 0.5, 0.6
    rng = np.random.default_rng(0)
    n = 400_000
    y = rng.laplace(0.0, 1.0 / eps, size=(n, k))  # under P: Lap(0, b), b = 1/ε, shift S = 1
    loss = (np.abs(y - 1.0) - np.abs(y)) * eps
    v = np.clip(-np.expm1(ep - loss.sum(axis=1)), 0.0, None)
    lo, hi = laplace_privacy_loss_exact(k, eps).delta(ep)
    se = v.std() / math.sqrt(n)
    assert lo - 5 * se <= v.mean() <= hi + 5 * se


def test_laplace_pld_bracket_and_bounds():
    k, eps = 50, 0.1
    coarse = laplace_privacy_loss_exact(k, eps, bins_per_step=20)
    fine = laplace_privacy_loss_exact(k, eps, bins_per_step=400)
    lc, hc = coarse.delta(2.0)
    lf, hf = fine.delta(2.0)
    assert lc <= lf <= hf <= hc  # refinement tightens the bracket
    assert (hf - lf) < (hc - lc) / 10
    # exact Laplace δ ≤ KOV optimal δ (KOV is worst case over all ε-DP mechanisms) ≤ Thm 1.11's δ'
    for ep in (0.5, 1.0, 1.5, 2.0):
        assert fine.delta(ep)[1] <= optimal_composition_delta(ep, eps, 0.0, k) + 1e-12
    e_adv = advanced_composition(eps, 0.0, k, 1e-6)[0]
    assert fine.delta(e_adv)[1] <= 1e-6
    assert fine.epsilon_for(1e-6) <= optimal_composition(eps, 0.0, k, 1e-6)[0] + 1e-9


def test_laplace_II_exact_delta_known_value():
    # the thesis's Laplace II (docs/science/foundations.md) at ε = 1, δ = 1e-5: exact δ ≈ 3e-8 (k = 100), 5e-8 (k = 1000)
    for k, want in ((100, 3e-8), (1000, 5e-8)):
        e0 = 1.0 / math.sqrt(2 * k * math.log(1e5))
        pld = laplace_privacy_loss_exact(k, e0, bins_per_step=400)
        lo, hi = pld.delta(1.0)
        assert laplace_composition_delta(1.0, k, e0, bins_per_step=400) == hi
        assert lo <= hi < 1e-5
        assert hi == pytest.approx(want, rel=0.15)


def test_pld_feasibility():
    with pytest.raises(FeasibilityError, match="documented maximum"):
        laplace_privacy_loss_exact(10_000, 0.1, bins_per_step=1000)
