"""Exact oracles and confidence bounds of dpkit.evaluation.oracles."""
import math

import numpy as np
import pytest
from scipy import stats

from dpkit.evaluation.oracles import (
    clopper_pearson,
    hoeffding_upper,
    laplace_loss_samples,
    laplace_shift_kl,
    laplace_shift_kl_numeric,
    rr_kl,
)


def test_clopper_pearson_matches_scipy_exact_interval():
    ci = stats.binomtest(7, 80).proportion_ci(confidence_level=0.99, method="exact")
    lo, hi = clopper_pearson(7, 80, 0.99)
    assert lo == pytest.approx(ci.low, rel=1e-9) and hi == pytest.approx(ci.high, rel=1e-9)
    assert clopper_pearson(0, 50, 0.95, side="lower")[0] == 0.0
    assert clopper_pearson(50, 50, 0.95, side="upper")[1] == 1.0


@pytest.mark.parametrize("eps", [0.01, 0.5, 2.0, 6.0])
def test_kl_closed_forms_and_lemma_18(eps):
    assert laplace_shift_kl(eps) == pytest.approx(laplace_shift_kl_numeric(eps), rel=1e-9, abs=1e-14)
    assert rr_kl(eps) == pytest.approx(eps * math.expm1(eps) / (math.exp(eps) + 1), rel=1e-12)
    assert max(laplace_shift_kl(eps), rr_kl(eps)) <= eps * math.expm1(eps)


def test_loss_samples_mean_is_kl():
    # E[privacy loss] = KL per release; 10 releases, 2e5 draws: std of the mean ≤ √10·ε/√2e5 — 5 std margin
    k, eps, n = 10, 0.5, 200_000
    L = laplace_loss_samples(k, eps, n, rng=0)
    assert abs(L.mean() - k * laplace_shift_kl(eps)) <= 5 * math.sqrt(k) * eps / math.sqrt(n)
    assert np.all(np.abs(L) <= k * eps + 1e-12)


def test_hoeffding_upper():
    assert hoeffding_upper(np.zeros(100), 0.05) == pytest.approx(math.sqrt(math.log(20) / 200))
    with pytest.raises(ValueError):
        hoeffding_upper(np.array([2.0]), 0.05)
