"""Claims of notebook 52 (dpkit.claims.exponential_net) at small sizes: claims PASS, negative controls FAIL."""
import math

import numpy as np
import pytest

from dpkit.claims import exponential_net as en


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
    ok, broken = en.above_threshold_privacy(k=6, n_instances=3, rng=0)
    assert (ok.verdict, broken.verdict, broken.expected) == ("PASS", "FAIL", "FAIL")
    assert ok.note == "7 neighbour pairs"
    assert en.above_threshold_sampler(k=6, n_samples=20_000, rng=0).verdict == "PASS"
    acc = en.above_threshold_accuracy(ks=(1, 10), betas=(0.05,))
    assert acc.checks[0].verdict == "PASS" and list(acc.table.k) == [1, 10]


def test_net_mechanism_and_net_size():
    res = en.net_mechanism(n=50, m=3, rng=0)
    assert [c.id for c in res.checks] == ["Thm 1.16 (privacy)", "D-R Thm 4.2 (net exists)", "Thm 1.16 (accuracy)"]
    assert all(c.verdict == "PASS" for c in res.checks)
    assert res.table.N[0] == math.comb(8 + 3 - 1, 3)
    assert en.net_size(m_max=10).verdict == "PASS"
    dom, Q = en.cube_queries()
    assert dom.shape == (8, 3) and Q.shape == (6, 8)
