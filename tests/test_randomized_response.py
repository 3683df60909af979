"""Randomized response (D–R Claim 3.5)."""
import math

import numpy as np
import pytest

from dpkit.mechanisms.randomized_response import RandomizedResponse


def test_coin_protocol_and_tight_ratio():
    rr = RandomizedResponse()
    assert rr.response_matrix[1, 1] == pytest.approx(0.75)
    assert rr.max_log_ratio() == pytest.approx(math.log(3))


def test_estimator_unbiased_and_variance():
    rr = RandomizedResponse(epsilon=1.0)
    bits = (np.arange(1000) < 300).astype(int)
    est = np.array([rr.estimate(rr.release(bits, rng=s)) for s in range(400)])
    sd = math.sqrt(rr.estimator_variance(0.3, 1000))
    # mean of 400 replications: z-test at |z| ≤ 4 (two-sided level ≈ 6e-5)
    assert abs(est.mean() - 0.3) <= 4 * sd / 20
    # sample variance within ±35% (χ²_399 99.99% interval is about ±25%)
    assert 0.65 < est.var(ddof=1) / sd**2 < 1.35


def test_validation():
    with pytest.raises(ValueError):
        RandomizedResponse(epsilon=0.0)
    with pytest.raises(ValueError):
        RandomizedResponse().release([0, 2])
