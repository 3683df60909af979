"""Exponential mechanism (Alg 2, Thm 1.14/1.15) and Report Noisy Max."""
from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from dpkit.core.accounting import Ledger
from dpkit.mechanisms import Exponential, ReportNoisyMax


def test_probabilities_hand_computed():
    # ε = 2, Δ = 1: weights e^{u}; u = (0, 1, 3) → (1, e, e³)/(1 + e + e³)
    m = Exponential(epsilon=2.0, sensitivity=1.0)
    w = np.array([1.0, math.e, math.e**3])
    np.testing.assert_allclose(m.probabilities([0.0, 1.0, 3.0]), w / w.sum(), rtol=1e-14)
    # monotone drops the factor 2: ε = 1, Δ = 1, monotone ⇒ weights e^{u}
    mm = Exponential(epsilon=1.0, sensitivity=1.0, monotone=True)
    np.testing.assert_allclose(mm.probabilities([0.0, 1.0, 3.0]), w / w.sum(), rtol=1e-14)
    # D–R Ex 3.6 best of two: counts 0 and c ⇒ P(A) = 1/(1 + e^{cε/2})
    c, eps = 7.0, 0.8
    assert Exponential(epsilon=eps, sensitivity=1.0).probabilities([0.0, c])[0] == pytest.approx(1 / (1 + math.exp(c * eps / 2)))


def test_log_sum_exp_stability():
    m = Exponential(epsilon=1.0, sensitivity=1e-6)
    p = m.probabilities([1e3, 1e3 + 1e-6, -1e3])  # exponents ~5e8: naive exp overflows
    assert np.all(np.isfinite(p)) and p.sum() == pytest.approx(1.0)
    assert p[1] / p[0] == pytest.approx(math.exp(0.5))
    assert p[2] == 0.0


def test_exact_privacy_ratio_on_finite_range():
    # Thm 1.14: |u(D,r) − u(D',r)| ≤ Δ for all r ⇒ max_r |ln P(r)/P'(r)| ≤ ε (tight for ±Δ shifts)
    rng = np.random.default_rng(0)
    eps, delta_u = 0.9, 2.0
    m = Exponential(epsilon=eps, sensitivity=delta_u)
    worst = 0.0
    for _ in range(200):
        u = rng.normal(0, 5, size=12)
        u2 = u + rng.uniform(-delta_u, delta_u, size=12)
        worst = max(worst, np.max(np.abs(m.log_probabilities(u) - m.log_probabilities(u2))))
    assert worst <= eps + 1e-12
    # tight instance: one score up by Δ, the many others down by Δ (normaliser ratio → e^{ε/2})
    u = np.zeros(1000)
    u2 = np.full(1000, -delta_u)
    u2[0] = delta_u
    lr = np.max(np.abs(m.log_probabilities(u) - m.log_probabilities(u2)))
    assert lr > 0.99 * eps  # nearly tight
    # declaring monotone on a non-monotone pair doubles the loss (why the flag must be explicit)
    mm = Exponential(epsilon=eps, sensitivity=delta_u, monotone=True)
    assert np.max(np.abs(mm.log_probabilities(u) - mm.log_probabilities(u2))) > eps


def test_sampling_matches_probabilities_chi_square():
    # goodness of fit at level 1e-3 (fails for a wrong temperature: see the power check)
    u = np.array([0.0, 0.5, 1.0, 2.0, 2.5])
    m = Exponential(epsilon=1.5, sensitivity=1.0)
    n = 50_000
    counts = np.bincount(m.sample(u, n, rng=1), minlength=u.size)
    assert stats.chisquare(counts, n * m.probabilities(u)).pvalue > 1e-3
    wrong = Exponential(epsilon=1.5, sensitivity=1.0, monotone=True).probabilities(u)
    assert stats.chisquare(counts, n * wrong).pvalue < 1e-3


def test_utility_theorem_1_15_exact():
    # P(u* − u(M(D)) ≥ (2Δ/ε)(ln(|R|/|R*|) + t)) ≤ e^{−t}, evaluated exactly from the law
    rng = np.random.default_rng(2)
    m = Exponential(epsilon=0.5, sensitivity=1.0)
    for _ in range(50):
        u = np.round(rng.normal(0, 10, size=40))
        p = m.probabilities(u)
        n_opt = int(np.sum(u == u.max()))
        for beta in (0.5, 0.05, 1e-3):
            gap = m.utility_gap(beta, u.size, n_opt)
            assert gap == pytest.approx(2 / 0.5 * (math.log(u.size / n_opt) + math.log(1 / beta)))
            assert p[u.max() - u >= gap].sum() <= beta + 1e-15
    with pytest.raises(ValueError, match="n_optimal"):
        m.utility_gap(0.1, 3, 4)


def test_release_and_ledger():
    led = Ledger(epsilon=1.0)
    i = Exponential(epsilon=0.5, sensitivity=1.0).release([0.0, 100.0], rng=0, ledger=led, name="pick")
    assert i == 1
    assert led.entries[0].name == "pick" and led.entries[0].epsilon == 0.5
    with pytest.raises(ValueError, match="utilities must have ndim"):
        Exponential(epsilon=1.0, sensitivity=1.0).probabilities([[1.0]])


def test_rnm_scales():
    assert ReportNoisyMax(epsilon=1.0, sensitivity=1.0).scale == 2.0
    assert ReportNoisyMax(epsilon=1.0, sensitivity=1.0, monotone=True).scale == 1.0
    assert ReportNoisyMax(epsilon=0.5, sensitivity=3.0, noise="exponential").scale == 12.0


def test_rnm_gumbel_equals_exponential_mechanism():
    # D–R Remark 3.1: argmax(u + Gumbel(2Δ/ε)) has exactly the exponential mechanism's law
    u = np.array([0.0, 1.0, 1.5, 3.0])
    n = 40_000
    r = ReportNoisyMax(epsilon=1.0, sensitivity=1.0, noise="gumbel")
    counts = np.bincount(r.sample(u, n, rng=3), minlength=u.size)
    p = Exponential(epsilon=1.0, sensitivity=1.0).probabilities(u)
    assert stats.chisquare(counts, n * p).pvalue > 1e-3


@pytest.mark.parametrize("noise", ["laplace", "exponential"])
def test_rnm_exact_two_candidate_law(noise):
    # Two candidates: P(argmax = 0) = P(Z0 − Z1 > u1 − u0), known in closed form.
    u = np.array([0.0, 1.0])
    r = ReportNoisyMax(epsilon=1.0, sensitivity=1.0, noise=noise)
    b, c = r.scale, 1.0
    if noise == "laplace":  # difference of two Lap(b): P(D > c) = (2 + c/b) e^{−c/b}/4
        p0 = (2 + c / b) * math.exp(-c / b) / 4
    else:  # difference of two Exp(b) is Lap(b): P(D > c) = e^{−c/b}/2
        p0 = math.exp(-c / b) / 2
    n = 100_000
    k = int(np.sum(r.sample(u, n, rng=4) == 0))
    assert stats.binomtest(k, n, p0).pvalue > 1e-3


def test_rnm_release_charges():
    led = Ledger(epsilon=1.0)
    ReportNoisyMax(epsilon=1.0, sensitivity=1.0).release([1.0, 2.0], rng=0, ledger=led)
    assert led.total() == (1.0, 0.0)
