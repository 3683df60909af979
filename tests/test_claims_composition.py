"""Claims of notebook 51 (dpkit.claims.composition) at small sizes: claims PASS, negative controls FAIL."""
import dataclasses

import numpy as np
import pytest

from dpkit.claims import composition as cc
from dpkit.core.pld import laplace_privacy_loss_exact
from dpkit.evaluation.oracles import AdaptiveComposition


@pytest.fixture(scope="module")
def plds():
    return [laplace_privacy_loss_exact(k, e, bins_per_step=50) for e in (0.1, 0.5) for k in (10, 30)]


def test_basic_composition_has_zero_delta():
    res = cc.basic_composition(ks=(10, 30), bins_per_step=50)
    assert [c.verdict for c in res.checks] == ["PASS"]
    assert list(res.table.k) == [10, 30] and (res.table.delta_upper_at_total <= 1e-12).all()


def test_kl_bound_passes_and_matches_closed_form():
    res = cc.kl_bound(epsilons=np.array([0.01, 0.5, 3.0]))
    assert res.check.verdict == "PASS" and res.check.statistic < 1.0
    assert res.kl_laplace == pytest.approx(res.epsilons + np.expm1(-res.epsilons), rel=1e-8)
    assert np.all(res.kl_rr <= res.bound)


def test_adaptive_composition_loss_is_bounded_by_the_sum_and_audit_passes():
    comp = AdaptiveComposition()
    loss = comp.privacy_loss(0, np.random.default_rng(0), size=50_000)
    assert np.abs(loss).max() <= sum(comp.epsilons) + 1e-9
    assert loss.max() > comp.epsilons[0] + comp.epsilons[1]  # the adaptive third step adds loss
    res = cc.adaptive_composition_audit(n_samples=40_000, rng=0)
    assert res.checks[0].verdict == "PASS" and res.checks[0].bound == pytest.approx(1.0)
    assert list(res.table.columns) == ["epsilon_lb", "epsilon_point", "bound"]


def test_adaptive_composition_refuses_bad_input():
    with pytest.raises(ValueError, match="epsilons"):
        AdaptiveComposition(epsilons=(0.3, 0.3))
    u = (np.zeros(3), np.zeros(3))
    with pytest.raises(ValueError, match="sensitivity"):
        AdaptiveComposition(utilities=(u, (np.full(3, 2.0), np.zeros(3))))
    with pytest.raises(ValueError, match="db"):
        AdaptiveComposition().privacy_loss(2, np.random.default_rng(0), size=3)


def test_composition_bounds_pass(plds):
    res = cc.composition_bounds(plds=plds, delta_primes=(1e-3, 1e-6))
    assert [c.id for c in res.checks] == ["Thm 1.11", "KOV optimal", "KOV ≤ Thm 1.11"]
    assert all(c.verdict == "PASS" for c in res.checks)
    assert len(res.table) == len(plds) * 2
    assert (res.table.eps_exact <= res.table.eps_optimal + 1e-9).all()


def test_composition_bounds_flag_a_too_small_advanced_bound(plds, monkeypatch):
    # a broken Thm 1.11 (ε' halved) must be refuted by the exact PLD
    orig = cc.advanced_composition
    monkeypatch.setattr(cc, "advanced_composition", lambda *a: (orig(*a)[0] / 2, orig(*a)[1]))
    res = cc.composition_bounds(plds=plds, delta_primes=(1e-6,))
    assert res.checks[0].verdict == "FAIL"


def test_pld_monte_carlo_agrees_and_detects_a_wrong_pld(plds):
    ok = cc.pld_monte_carlo(plds=plds[:2], n_samples=20_000, rng=0)
    assert ok.checks[0].verdict == "PASS" and len(ok.table) == 6
    # a PLD labelled with the wrong ε: samples are drawn at 0.15, the bracket is that of 0.1
    wrong = dataclasses.replace(plds[0], epsilon=0.15)
    bad = cc.pld_monte_carlo(plds=[wrong], n_samples=20_000, rng=0)
    assert bad.checks[0].verdict == "FAIL"


def test_laplace_ii_exact_holds_and_printed_proof_fails():
    res = cc.laplace_ii_composition(ks=(10, 100), bins_per_step=50)
    exact, printed = res.checks
    assert (exact.verdict, printed.verdict, printed.expected) == ("PASS", "FAIL", "FAIL")
    assert (res.table.overshoot > 0).all()


def test_dwork_roth_cor_3_21_and_ex_3_7():
    assert cc.dr_cor_3_21().verdict == "PASS"
    res = cc.dr_ex_3_7()
    printed, inverse = res.checks
    assert printed.verdict == "FAIL" and printed.statistic == pytest.approx(1.0143, abs=1e-4)
    assert inverse.verdict == "PASS" and res.table.inverse[0] == pytest.approx(812.3, abs=0.05)


# ---------------------------------------------------------------------- exact oracles
def test_rr_kfold_delta_matches_brute_force_and_the_kov_accountant():
    from itertools import product

    from dpkit.core.composition import optimal_composition_delta
    from dpkit.evaluation.oracles import rr_kfold_delta

    # brute force over all 2^k output sequences of k = 6 ε-RR steps
    k, eps, ep = 6, 0.4, 0.9
    p = np.exp(eps) / (1 + np.exp(eps))
    brute = 0.0
    for out in product((0, 1), repeat=k):
        P = np.prod([p if o == 0 else 1 - p for o in out])
        Q = np.prod([1 - p if o == 0 else p for o in out])
        brute += max(0.0, P - np.exp(ep) * Q)
    assert rr_kfold_delta(ep, eps, k) == pytest.approx(brute, rel=1e-12)
    assert rr_kfold_delta(ep, eps, k) == pytest.approx(optimal_composition_delta(ep, eps, 0.0, k), rel=1e-12)
    assert rr_kfold_delta(k * eps, eps, k) == 0.0  # basic composition


def test_rr_kfold_composition_passes_and_flags_a_too_small_advanced_bound(monkeypatch):
    res = cc.rr_kfold_composition(epsilons=(0.1, 0.5), ks=(10, 100), delta_primes=(1e-3, 1e-6))
    assert [c.id for c in res.checks] == ["D-R Thm 3.20 (k-fold RR, exact)", "D-R Thm 3.20 (RR loss tail)",
                                          "k-fold RR: exact vs KOV accountant", "D-R E9.1 (printed example)"]
    assert all(c.verdict == "PASS" and c.confidence is None for c in res.checks)
    assert (res.table.delta_exact <= res.table.tail_exact).all()  # δ(ε') ≤ P(L > ε')
    # a broken Thm 3.20 (ε' halved) must be refuted by the exact RR δ
    orig = cc.advanced_composition
    monkeypatch.setattr(cc, "advanced_composition", lambda *a: (orig(*a)[0] / 2, orig(*a)[1]))
    bad = cc.rr_kfold_composition(epsilons=(0.1,), ks=(100,), delta_primes=(1e-6,))
    assert bad.checks[0].verdict == "FAIL" and bad.checks[3].verdict == "FAIL"  # and the printed ε' = 5.850 is missed


def test_rr_kfold_composition_rejects_a_wrong_printed_example(monkeypatch):
    monkeypatch.setitem(cc.RR_PRINTED_EXAMPLE, "delta_exact", 3.0e-9)
    assert cc.rr_kfold_composition(epsilons=(0.1,), ks=(10,), delta_primes=(1e-3,)).checks[3].verdict == "FAIL"


def test_laplace_ii_exact_at_half_and_a_wrong_pld_breaks_the_rr_bound(monkeypatch):
    res = cc.laplace_ii_exact(ks=(10, 100), bins_per_step=50)
    assert [c.id for c in res.checks] == ["Prop 1.12 (ε = 0.5, exact PLD)", "Prop 1.12 (ε = 0.5) ≤ RR worst case",
                                          "Prop 1.12 (printed proof, ε = 0.5)"]
    assert [(c.verdict, c.expected) for c in res.checks] == [("PASS", "PASS"), ("PASS", "PASS"), ("FAIL", "FAIL")]
    # the overshoot of the printed derivation is exactly kε₀(e^ε₀ − 1)
    e0 = res.table.eps_query
    assert (res.table.eps_thm111 - 0.5).to_numpy() == pytest.approx((res.table.k * e0 * np.expm1(e0)).to_numpy(), rel=1e-9)
    assert res.table.delta_upper[0] == 0.0  # k = 10: kε₀ < 0.5, basic composition
    assert res.table.delta_upper[1] == pytest.approx(1.1e-8, rel=0.01)
    assert (res.table.eps_thm111 > 0.5).all()  # the printed derivation overshoots here too (erratum, ≈ +2 %)
    # a PLD built at 1.05·ε₀ exceeds the KOV worst case of ε₀-DP steps
    orig = cc.laplace_privacy_loss_exact
    monkeypatch.setattr(cc, "laplace_privacy_loss_exact", lambda k, e, **kw: orig(k, 1.05 * e, **kw))
    assert cc.laplace_ii_exact(ks=(100,), bins_per_step=50).checks[1].verdict == "FAIL"


def test_dr_cor_3_21_exact_passes_and_rejects_a_doubled_step():
    res = cc.dr_cor_3_21_exact(ks=(1, 10, 100, 10**4))
    (c,) = res.checks
    assert c.verdict == "PASS" and c.confidence is None and len(res.table) == 3 * 4 * 3
    assert (res.table.eps_exact <= res.table.target).all()
    # the printed (garbled) Cor 3.21 "ε = ε'/(2k ln(1/δ'))" is smaller; a per-step ε 20x too large fails
    big = cc.dr_cor_3_21_exact(targets=(0.99,), ks=(10**4,), delta_primes=(1e-12,))
    e0 = big.table.eps_step[0]
    from dpkit.evaluation.oracles import rr_kfold_delta
    assert rr_kfold_delta(0.99, 20 * e0, 10**4) > 1e-12
