"""Claims of notebook 50 (dpkit.claims.laplace_gauss) at small sizes: claims PASS, negative controls FAIL."""
import dataclasses
import math

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


# ---------------------------------------------------------------------- exact oracles
def test_laplace_max_failure_exact_matches_the_closed_form_and_simulation():
    from dpkit.evaluation.oracles import laplace_max_failure_exact

    assert laplace_max_failure_exact(math.log(100 / 0.05), 100) == pytest.approx(1 - (1 - 0.05 / 100) ** 100, rel=1e-12)
    assert laplace_max_failure_exact(math.log(1 / 0.2), 1) == pytest.approx(0.2, rel=1e-14)  # Fact 3.7
    y = np.random.default_rng(0).laplace(0, 1, size=(200_000, 3))
    assert (np.abs(y).max(axis=1) > 1.5).mean() == pytest.approx(laplace_max_failure_exact(1.5, 3), abs=0.005)
    with pytest.raises(ValueError, match="t must be"):
        laplace_max_failure_exact(-1.0, 3)


def test_laplace_accuracy_exact_passes_and_rejects_a_wrong_exact_value(monkeypatch):
    acc = lg.laplace_accuracy(ks=(1, 10), betas=(0.05, 0.2), n_trials=2000, rng=0)
    res = lg.laplace_accuracy_exact(acc, n_trials=2000)
    exact, mc = res.checks
    assert (exact.id, mc.id) == ("D-R Thm 3.8 (exact)", "D-R Thm 3.8 (MC vs exact)")
    assert exact.verdict == mc.verdict == "PASS" and exact.confidence is None and mc.confidence == pytest.approx(0.999)
    assert exact.statistic == pytest.approx(1.0, abs=1e-12)  # equality at k = 1
    assert mc.bound == pytest.approx(1e-3 / len(res.table))
    k10 = res.table[res.table.k == 10]
    assert np.allclose(k10.p_exact, 1 - (1 - k10.beta / 10) ** 10, rtol=1e-12)  # Laplace I and II: t = ln(k/β)
    # a wrong oracle (the probability that *no* query fails) is refuted by the binomial test and breaks "≤ β"
    monkeypatch.setattr(lg, "laplace_max_failure_exact", lambda t, k: (1 - math.exp(-t)) ** k)
    bad = lg.laplace_accuracy_exact(acc, n_trials=2000)
    assert [c.verdict for c in bad.checks] == ["FAIL", "FAIL"]


def test_laplace_accuracy_exact_detects_miscounted_failures():
    acc = lg.laplace_accuracy(ks=(1,), betas=(0.2,), n_trials=2000, rng=0)
    wrong = dataclasses.replace(acc, table=acc.table.assign(fail_rate=acc.table.fail_rate * 1.3))
    assert lg.laplace_accuracy_exact(wrong, n_trials=2000).checks[1].verdict == "FAIL"


def test_gaussian_classic_failure_point_matches_the_printed_values():
    res = lg.gaussian_classic_failure_point()
    assert [c.verdict for c in res.checks] == ["PASS"] * 3
    assert list(res.table.eps_star.round(1)) == [7.5, 8.4, 9.4]
    assert (res.table.max_ratio_below_1 < 0.01).all()  # very conservative for ε < 1 (δ_exact ≈ 10⁻⁴–10⁻² of δ)
    # just above ε* the calibration fails, just below it holds (ε* is the failure point)
    from dpkit.evaluation.oracles import gaussian_classic_delta
    e = res.table.eps_star[0]
    assert gaussian_classic_delta(e * (1 + 1e-6), 1e-3) > 1e-3 > gaussian_classic_delta(e * (1 - 1e-6), 1e-3)
    # a wrong printed value (8.5 at δ = 10⁻³) is rejected
    bad = lg.gaussian_classic_failure_point(printed={1e-3: 8.5})
    assert bad.checks[1].verdict == "FAIL" and bad.checks[1].statistic == pytest.approx(8.5 - e)
