"""Claims of notebook 52 (dpkit.claims.exponential_net) at small sizes: claims PASS, negative controls FAIL."""
import math

import numpy as np
import pytest

from dpkit.claims import exponential_net as en
from dpkit.claims.above_threshold import above_threshold_accuracy, above_threshold_privacy, above_threshold_sampler
from dpkit.claims.net_pmw import (
    PMW_PRINTED_EXAMPLE,
    cube_queries,
    net_mechanism,
    net_size,
    pmw_accuracy,
    pmw_alpha_example,
    pmw_printed_threshold,
)


def test_exponential_privacy_holds_and_is_tight():
    ok, tight = en.exponential_privacy(epsilon=0.8, n_instances=20, rng=0)
    assert (ok.verdict, tight.verdict) == ("PASS", "PASS")
    assert tight.statistic == pytest.approx(0.8, abs=1e-6)


def test_exponential_utility_passes_with_ties():
    res = en.exponential_utility(range_sizes=(2, 50), ts=np.linspace(0, 5, 6), rng=0)
    assert res.checks[0].verdict == "PASS" and 0 < res.checks[0].statistic <= 1
    assert len(res.table) == 12 and (res.table.P_exact <= res.table.bound).all()


def test_exponential_utility_flags_a_too_large_epsilon(monkeypatch):
    # the bound of Thm 1.15 for ε checked on a mechanism run at ε/4 (too much noise for that bound) must fail
    orig = en.Exponential
    monkeypatch.setattr(en, "Exponential", lambda epsilon, sensitivity: orig(epsilon=epsilon / 4, sensitivity=sensitivity))
    res = en.exponential_utility(range_sizes=(50,), ts=np.linspace(0, 5, 6), rng=0)
    assert res.checks[0].verdict == "FAIL"


def test_report_noisy_max_general_passes_and_monotone_misuse_fails():
    ok = en.report_noisy_max_audit(n_samples=60_000, rng=0)
    bad = en.report_noisy_max_monotone_misuse_audit(n_samples=60_000, rng=0)
    assert ok.checks[0].verdict == "PASS" and list(ok.table.variant) == ["general"]
    assert bad.checks[0].verdict == "FAIL" and bad.checks[0].expected == "FAIL"
    assert bad.table.scale[0] == pytest.approx(ok.table.scale[0] / 2)


def test_randomized_response_exact_and_estimator():
    exact = en.randomized_response_exact()
    assert exact.verdict == "PASS" and exact.statistic == pytest.approx(math.log(3))
    res = en.randomized_response_estimator(n=200, reps=200, rng=0)
    assert res.checks[0].verdict == "PASS" and len(res.table) == 4
    assert res.table.var_ratio.between(0.7, 1.3).all()


def test_randomized_response_estimator_detects_bias(monkeypatch):
    # an estimator off by 0.02 (≈ 10 standard errors here) must be refuted
    orig = en.RandomizedResponse.estimate
    monkeypatch.setattr(en.RandomizedResponse, "estimate", lambda self, y, axis=None: orig(self, y, axis) + 0.02)
    assert en.randomized_response_estimator(n=1000, reps=200, rng=0).checks[0].verdict == "FAIL"


def test_above_threshold_privacy_sampler_accuracy():
    ok, broken = above_threshold_privacy(k=6, n_instances=3, rng=0)
    assert (ok.verdict, broken.verdict, broken.expected) == ("PASS", "FAIL", "FAIL")
    assert ok.note == "7 neighbour pairs"
    assert above_threshold_sampler(k=6, n_samples=20_000, rng=0).verdict == "PASS"
    acc = above_threshold_accuracy(ks=(1, 10), betas=(0.05,))
    assert acc.checks[0].verdict == "PASS" and list(acc.table.k) == [1, 10]


def test_net_mechanism_and_net_size():
    res = net_mechanism(n=50, m=3, rng=0)
    assert [c.id for c in res.checks] == ["Thm 1.16 (privacy)", "D-R Thm 4.2 (net exists)", "Thm 1.16 (accuracy)"]
    assert all(c.verdict == "PASS" for c in res.checks)
    assert res.table.N[0] == math.comb(8 + 3 - 1, 3)
    assert net_size(m_max=10).verdict == "PASS"
    dom, Q = cube_queries()
    assert dom.shape == (8, 3) and Q.shape == (6, 8)


# ---------------------------------------------------------------------- exact oracles
def test_report_noisy_max_probabilities_against_closed_forms_and_sampler():
    from dpkit.evaluation.oracles import report_noisy_max_probabilities

    # two candidates, one-sided exponential noise (rate λ): P(argmax = 0) = ½ e^{−λ(c1 − c0)} for c1 ≥ c0
    p, err = report_noisy_max_probabilities(np.array([0.0, 3.0]), 2.0, "exponential")
    assert p[0] == pytest.approx(0.5 * math.exp(-3.0 / 2.0), rel=1e-11) and p.sum() == pytest.approx(1.0, abs=1e-12)
    # two candidates, Laplace: the difference of two Lap(b) has P(D > d) = (1 + d/(2b)) e^{−d/b}/2
    p, err = report_noisy_max_probabilities(np.array([0.0, 1.0]), 1.0, "laplace")
    assert p[0] == pytest.approx(0.5 * (1 + 0.5) * math.exp(-1.0), rel=1e-11)
    assert np.all(err < 1e-12 * np.maximum(p, 1e-300) * 10)
    # against the mechanism's sampler
    from dpkit.mechanisms.exponential import ReportNoisyMax
    u = np.array([0.0, 1.0, -1.0, 0.5])
    rnm = ReportNoisyMax(epsilon=1.0, sensitivity=1.0)
    freq = np.bincount(rnm.sample(u, 200_000, rng=0), minlength=4) / 200_000
    assert freq == pytest.approx(report_noisy_max_probabilities(u, rnm.scale)[0], abs=0.005)


def test_report_noisy_max_exact_claims_pass_controls_fail_and_tight():
    res = en.report_noisy_max_exact(ms=(2, 4), gaps=(0.0, 20.0), n_random=3, rng=0)
    got = {c.id: (c.verdict, c.expected) for c in res.checks}
    assert all(v == e for v, e in got.values()) and len(got) == 7
    assert got["RNM Lap(Δ/ε) on non-monotone (exact)"] == ("FAIL", "FAIL")
    worst = dict(zip(res.table.variant, res.table.worst))
    assert worst["RNM Lap(Δ/ε) on non-monotone (exact)"] == pytest.approx(2.0, abs=1e-3)  # 2ε
    assert worst["D-R Claim 3.9 (exact)"] == pytest.approx(1.0, abs=1e-3)  # attained
    # the auditor's pair: its exact loss bounds what the auditor may find
    assert 0.5 < res.table.audit_pair[1] <= 1.0 + 1e-9


def test_report_noisy_max_exact_rejects_a_halved_scale(monkeypatch):
    # the claimed scales halved (Lap(Δ/(2ε)) etc.): every "claim" check must fail
    variants = tuple((cid, claim, noise, f / 2, kind, exp) for cid, claim, noise, f, kind, exp in en.RNM_EXACT_VARIANTS)
    monkeypatch.setattr(en, "RNM_EXACT_VARIANTS", variants)
    res = en.report_noisy_max_exact(ms=(2,), gaps=(20.0,), n_random=0, rng=0)
    assert all(c.verdict == "FAIL" for c in res.checks if c.id != "RNM exact (tight)")


def test_pmw_alpha_fixed_point_and_printed_example():
    from dpkit.mechanisms.pmw import PrivateMultiplicativeWeights, pmw_alpha

    a = pmw_alpha(domain_size=441, n_queries=200, epsilon=1.0, beta=0.05, n=10**7)
    L = math.log(441)
    assert a**3 == pytest.approx(36 * L * (math.log(400) + math.log(16 * L / (a * a * 0.05))) / 1e7, rel=1e-12)
    c = pmw_alpha_example()
    assert c.verdict == "PASS" and "c = 4404" in c.note
    bad = pmw_alpha_example(example=dict(PMW_PRINTED_EXAMPLE, alpha=0.0750))  # a wrong printed α
    assert bad.verdict == "FAIL"
    m = PrivateMultiplicativeWeights(epsilon=1.0, beta=0.05, n=10**7, domain_size=441, n_queries=200)
    assert m.cutoff == 4404 and m.alpha >= a and m.alpha == pytest.approx(a, rel=1e-3)
    with pytest.raises(ValueError, match="variant"):
        PrivateMultiplicativeWeights(epsilon=1.0, beta=0.05, n=10, domain_size=4, n_queries=2, variant="x")
    with pytest.raises(ValueError, match="domain_size"):
        pmw_alpha(domain_size=1, n_queries=2, epsilon=1.0, beta=0.05, n=10)


def test_pmw_run_is_accurate_reproducible_and_the_printed_threshold_fails():
    ok = pmw_accuracy(gamma=1e-3, rng=3)
    (c,) = ok.checks
    assert c.verdict == "PASS" and c.confidence == pytest.approx(0.999) and c.bound == pytest.approx(3 * ok.table.alpha[0])
    assert 0 < ok.table.updates[0] <= ok.table.cutoff[0] and not ok.table.halted[0]
    assert pmw_accuracy(gamma=1e-3, rng=3).checks[0].statistic == c.statistic  # same seed, same run
    bad = pmw_printed_threshold(gamma=1e-3, rng=3)
    assert (bad.checks[0].verdict, bad.checks[0].expected) == ("FAIL", "FAIL") and bad.table.updates[0] == 0
    assert bad.checks[0].statistic > 2 * bad.checks[0].bound  # a wide margin


def test_pmw_accuracy_flags_a_too_small_alpha(monkeypatch):
    # a wrong accuracy claim (α 100x too small, so 3α is far below the errors NumericSparse allows) must fail
    from dpkit.mechanisms import pmw

    orig = pmw.PrivateMultiplicativeWeights.alpha
    monkeypatch.setattr(pmw.PrivateMultiplicativeWeights, "alpha", property(lambda self: orig.fget(self) / 100))
    assert pmw_accuracy(gamma=1e-3, rng=3).checks[0].verdict == "FAIL"


def test_pmw_refuses_bad_input_and_charges_the_ledger():
    from dpkit.core.accounting import Ledger
    from dpkit.mechanisms.pmw import PrivateMultiplicativeWeights

    m = PrivateMultiplicativeWeights(epsilon=0.5, beta=0.05, n=1000, domain_size=4, n_queries=3)
    x, F = np.full(4, 0.25), np.full((3, 4), 0.5)
    with pytest.raises(ValueError, match="order"):
        m.run(x, F, order=[0, 0, 1])
    with pytest.raises(ValueError, match="distribution"):
        m.run(np.ones(4), F)
    with pytest.raises(ValueError, match="queries"):
        m.run(x, np.full((4, 4), 0.5))
    led = Ledger(1.0)
    run = m.run(x, F, order=[2, 0, 1], rng=0, ledger=led)
    assert list(run.query_index) == [2, 0, 1] and np.allclose(run.answers, 0.5) and run.n_updates == 0  # x = x⁰: nothing to learn
    assert len(led.entries) == 1 and led.entries[0].epsilon == 0.5
