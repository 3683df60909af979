"""AboveThreshold (D–R Alg. 1, Thm 3.23/3.24) and its broken variant."""
import numpy as np
import pytest
from scipy import stats

from dpkit.core.accounting import Ledger
from dpkit.mechanisms.sparse_vector import AboveThreshold


def test_exact_law_sums_to_one_and_matches_sampler():
    m = AboveThreshold(epsilon=1.0, threshold=0.0)
    f = np.array([-3.0, -1.0, 0.5, -2.0, 2.0])
    p = m.output_probabilities(f)
    assert abs(p.sum() - 1) < 1e-9
    s = m.sample(f, 100_000, rng=0)
    obs = np.bincount(s, minlength=f.size + 1)
    # χ² goodness of fit at level 1e-3: fails for a sampler/oracle mismatch
    assert stats.chisquare(obs, p * obs.sum()).pvalue > 1e-3


def test_privacy_exact_ratio_within_epsilon_on_adversarial_neighbours():
    m = AboveThreshold(epsilon=1.0, threshold=0.0)
    rng = np.random.default_rng(1)
    worst = 0.0
    for _ in range(10):
        f = rng.uniform(-6, 6, 8)
        for s in (np.r_[np.ones(7), -1], np.r_[-np.ones(7), 1]):
            worst = max(worst, m.max_log_ratio(f, f + s))
    assert worst <= 1.0 + 1e-8


def test_no_threshold_noise_variant_leaks_more_than_epsilon():
    bad = AboveThreshold(epsilon=1.0, threshold=0.0, variant="no-threshold-noise")
    f = np.full(10, 2.0)
    # each ⊥ on a query above T leaks exactly ε/4 (Laplace CDF ratio in its left tail): 9 of them give 2.25ε
    assert bad.max_log_ratio(f, f + np.r_[np.ones(9), -1]) >= 2.25 - 1e-9
    good = AboveThreshold(epsilon=1.0, threshold=0.0)
    assert good.max_log_ratio(f, f + np.r_[np.ones(9), -1]) <= 1.0 + 1e-8


def test_accuracy_thm324_exact():
    m = AboveThreshold(epsilon=1.0, threshold=0.0)
    k, beta = 10, 0.05
    a = m.accuracy_alpha(k, beta)
    f = np.r_[np.full(k - 1, -a - 1e-9), a + 1e-9]
    assert m.failure_probability(f) <= beta


def test_ledger_and_validation():
    led = Ledger(epsilon=1.0)
    AboveThreshold(epsilon=0.6).run([0.0, 1.0], rng=0, ledger=led)
    assert led.total()[0] == pytest.approx(0.6)
    with pytest.raises(ValueError):
        AboveThreshold(epsilon=1.0, variant="bogus")
    with pytest.raises(ValueError):
        AboveThreshold(epsilon=-1.0)
    at = AboveThreshold(epsilon=1.0)
    assert (at.sample([0.0, 1.0], 50, rng=3) == at.sample([0.0, 1.0], 50, rng=3)).all()
