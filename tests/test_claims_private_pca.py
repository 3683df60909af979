"""dpkit.claims.private_pca at small sizes: claims PASS, the noisy-mean erratum FAILs, broken bounds flip verdicts."""
from __future__ import annotations

import math

import numpy as np
import pytest

import dpkit.claims.private_pca as pp
from dpkit.mechanisms.gaussian import gaussian_exact_delta


def test_lemma27_claims_and_noisy_mean_control():
    res = pp.lemma27(sizes=[[20, 2], [50, 3]], n_mu_draws=30, epsilon=1.0, delta=1e-3, rng=0)
    bound, true_mean, printed = res.checks
    assert (bound.verdict, true_mean.verdict) == ("PASS", "PASS")
    assert (printed.id, printed.verdict, printed.expected) == ("Lemma 2.7 (noisy mean, printed)", "FAIL", "FAIL")
    assert len(res.rows) == 2 * (1 + pp.RANDOM_PAIRS)
    corner = [r for r in res.rows if r.pair == "corner"]
    assert all(0.9 < r.norm_dA / r.c_bound <= 1 for r in corner)  # nearly tight at the corner pair
    assert bound.statistic == max(r.norm_dA / r.c_bound for r in res.rows)


def test_lemma27_fails_with_a_halved_bound(monkeypatch):
    """The check compares with c(n, d, M): a bound half as large is violated at the corner pairs."""
    orig = pp.covariance_sensitivity
    monkeypatch.setattr(pp, "covariance_sensitivity", lambda *a: orig(*a) / 2)
    res = pp.lemma27(sizes=[[20, 2]], n_mu_draws=2, epsilon=1.0, delta=1e-3, rng=0)
    assert [c.verdict for c in res.checks[:2]] == ["FAIL", "FAIL"]


def test_lemma27_streams_match_a_seed():
    a = pp.lemma27(sizes=[[20, 2]], n_mu_draws=3, epsilon=1.0, delta=1e-3, rng=5)
    b = pp.lemma27(sizes=[[20, 2]], n_mu_draws=3, epsilon=1.0, delta=1e-3, rng=pp.PCAStreams.from_seed(5))
    assert a == b


def test_one_step_audit_passes():
    res = pp.one_step_audit(n=50, d=3, epsilon=1.0, delta=1e-3, audit_samples=20_000, rng=0)
    assert res.check.verdict == "PASS" and res.check.confidence == pytest.approx(1 - 1e-3)
    assert res.row.epsilon_lb == res.check.statistic


def test_one_step_audit_flags_six_times_too_little_noise(monkeypatch):
    """σ/6 on the corner pair: the exact δ at ε = 1 is ≈ 0.16 ≫ δ = 1e-3, so the auditor must flag it."""
    n, d, delta = 50, 3, 1e-3
    D, D2 = pp.corner_pair(n, d)
    x = np.ones((d, 1)) / math.sqrt(d)
    shift = float(np.linalg.norm((pp.covariance(D) - pp.covariance(D2)) @ x))
    sigma = pp.psi_noise_scale(pp.covariance_sensitivity(n, d), d=d, k=1, n_iter=1, epsilon=1.0, delta=delta)
    assert gaussian_exact_delta(sigma, 1.0, shift) <= delta
    assert gaussian_exact_delta(sigma / 6, 1.0, shift) > 100 * delta
    orig = pp.psi_noise_scale
    monkeypatch.setattr(pp, "psi_noise_scale", lambda *a, **k: orig(*a, **k) / 6)
    assert pp.one_step_audit(n=n, d=d, epsilon=1.0, delta=delta, audit_samples=20_000, rng=0).check.verdict == "FAIL"


def test_pca_rates_pass_in_the_signal_regime():
    res = pp.pca_rates(ns=[10_000, 40_000, 160_000], d=5, reps=2, k=2, n_iter=10, epsilon=1.0, delta=1e-3, rng=0)
    assert [c.verdict for c in res.checks] == ["PASS", "PASS"]
    np.testing.assert_array_equal(res.ns, [10_000, 40_000, 160_000])
    assert res.median_sin_theta[-1] < res.median_sin_theta[0]
    assert len(res.rows) == 6


def test_pca_rates_fail_without_signal():
    """ε so small that σ swamps ‖A‖ at every n: the angle stays near its random level and the slope is flat."""
    res = pp.pca_rates(ns=[2_000, 4_000, 8_000], d=5, reps=2, k=2, n_iter=10, epsilon=1e-3, delta=1e-3, rng=0)
    assert res.checks[0].verdict == "FAIL"


def test_sigma_vs_norm_remark_and_its_failure():
    ok = pp.sigma_vs_norm(datasets=["WDBC"], k=2, n_iter=10, epsilon=1.0, delta=1e-3)
    assert ok.check.verdict == "PASS" and ok.rows[0].sigma_alg7 > 1
    # one component, one iteration and a large budget: σ < 1 on WDBC too, contradicting "σ > 1 on every data set but CSN"
    bad = pp.sigma_vs_norm(datasets=["WDBC"], k=1, n_iter=1, epsilon=50.0, delta=1e-6)
    assert bad.rows[0].sigma_alg7 < 1 and bad.check.verdict == "FAIL"


def test_pca_rates_figure():
    import matplotlib.pyplot as plt

    from dpkit.outputs.figures.private_pca import pca_rates_figure

    res = pp.pca_rates(ns=[10_000, 40_000], d=4, reps=1, k=2, n_iter=5, epsilon=1.0, delta=1e-3, rng=0)
    fig = pca_rates_figure(res)
    np.testing.assert_array_equal(fig.axes[0].lines[0].get_ydata(), res.median_sin_theta)
    plt.close(fig)
