"""Claims of notebook 51 (dpkit.claims.composition) at small sizes: claims PASS, negative controls FAIL."""
import dataclasses

import numpy as np
import pytest

from dpkit.claims import composition as cc
from dpkit.core.composition import laplace_privacy_loss_exact
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
