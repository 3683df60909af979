"""Claims of notebook 50 (dpkit.claims.laplace_gauss) at small sizes: claims PASS, negative controls FAIL."""
import numpy as np
import pytest

from dpkit.claims import laplace_gauss as lg


def test_laplace_exact_ratio_attains_epsilon():
    c = lg.laplace_exact_ratio(epsilon=0.7, sensitivity=2.0)
    assert c.verdict == "PASS" and c.id == "Ex 1.2 (exact)"
    assert c.statistic == pytest.approx(0.7, abs=1e-9)  # attained outside [0, S]


def test_laplace_audit_and_under_noised_control():
    ok = lg.laplace_audit(epsilon=1.0, n_samples=40_000, rng=1)
    bad = lg.laplace_under_noised_audit(epsilon=1.0, n_samples=40_000, rng=1)
    assert (ok.verdict, ok.expected, ok.confidence) == ("PASS", "PASS", 1 - 1e-3)
    assert (bad.verdict, bad.expected) == ("FAIL", "FAIL")
    assert bad.statistic > 1.5  # the true privacy of Lap(S/(2ε)) is 2ε


def test_same_seed_same_check_and_generator_streams_advance():
    a = lg.laplace_audit(n_samples=20_000, rng=3)
    assert lg.laplace_audit(n_samples=20_000, rng=3) == a
    g = np.random.default_rng(3)
    first, second = lg.laplace_audit(n_samples=20_000, rng=g), lg.laplace_audit(n_samples=20_000, rng=g)
    assert first.statistic != second.statistic  # one generator: the second call continues its stream


def test_post_processing_audit_passes_with_one_row_per_map():
    res = lg.post_processing_audit(n_samples=20_000, rng=2)
    (c,) = res.checks
    assert c.verdict == "PASS" and c.id == "Prop 1.1"
    assert list(res.table.g) == list(lg.POST_PROCESSING_MAPS)
    assert c.statistic == max(0.0, res.table.epsilon_lb.max())


def test_gaussian_calibrations_pass_and_thesis_fails_at_large_epsilon():
    res = lg.gaussian_calibrations(epsilons=(0.1, 0.9), deltas=(1e-3, 1e-6))
    assert [c.id for c in res.checks] == ["Ex 1.3 (thesis)", "Ex 1.3 (classic)", "Ex 1.3 (analytic)"]
    assert all(c.verdict == "PASS" for c in res.checks)
    assert res.checks[2].statistic == pytest.approx(1.0, rel=1e-6)  # the analytic σ is tight
    assert len(res.table) == 3 * 2 * 2
    control = lg.gaussian_thesis_large_epsilon()
    assert (control.verdict, control.expected) == ("FAIL", "FAIL")
    # the statistic is the real exact δ: at ε = 5 the thesis calibration is still valid
    assert lg.gaussian_thesis_large_epsilon(epsilon=5.0).verdict == "PASS"


def test_gaussian_loss_tail_law_and_audit():
    assert lg.gaussian_loss_tail(epsilons=(0.5,), deltas=(1e-3,)).verdict == "PASS"
    law = lg.gaussian_loss_law(n_samples=20_000, rng=0)
    assert law.verdict == "PASS" and law.bound == 1e-3
    assert lg.gaussian_loss_law(n_samples=20_000, gamma=0.5, rng=0).bound == 0.5
    assert lg.gaussian_audit(n_samples=40_000, rng=0).verdict == "PASS"


def test_laplace_accuracy_passes_and_its_statistic_is_cp_lower_minus_beta():
    res = lg.laplace_accuracy(ks=(1, 10), betas=(0.05, 0.2), n_trials=2000, rng=0)
    (c,) = res.checks
    assert c.verdict == "PASS"
    assert c.statistic == pytest.approx((res.table.cp_lower - res.table.beta).max())
    # the bound is met at about rate β for k = 1 (Laplace I: P(|Lap(b)| > b ln(1/β)) = β exactly)
    row = res.table[(res.table.mechanism == "I") & (res.table.k == 1) & (res.table.beta == 0.2)].iloc[0]
    assert row.fail_rate == pytest.approx(0.2, abs=0.04)


def test_laplace_accuracy_flags_a_bound_that_is_too_small(monkeypatch):
    # a wrong (halved) error bound must flip the verdict: with bound/2 about √β of the trials fail for k = 1
    orig = lg.laplace_I_error_bound
    monkeypatch.setattr(lg, "laplace_I_error_bound", lambda *a: orig(*a) / 2)
    res = lg.laplace_accuracy(ks=(1,), betas=(0.05,), n_trials=2000, rng=0)
    assert res.checks[0].verdict == "FAIL"
