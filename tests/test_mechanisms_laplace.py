"""Laplace mechanism, Laplace I/II (Props 1.7, 1.12) and the accuracy bound of Prop 1.13."""
from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from dpkit.core.composition import advanced_composition
from dpkit.core.pld import laplace_composition_delta
from dpkit.mechanisms import (
    Laplace,
    LaplaceI,
    LaplaceII,
    laplace_I,
    laplace_I_error_bound,
    laplace_II_error_bound,
    laplace_max_error_bound,
)


def test_scale_variance_closed_form():
    m = Laplace(epsilon=0.5, sensitivity=2.0)
    assert m.scale == 4.0 and m.variance == 32.0 and m.mse == 32.0
    assert Laplace(epsilon=math.inf, sensitivity=1.0).release(3.0, rng=0) == 3.0
    assert LaplaceI(epsilon=2.0, sensitivity=0.5, k=8).scale == pytest.approx(2.0)  # Δk/ε
    assert laplace_I(2.0, 0.5, 8).scale == pytest.approx(2.0)
    t = LaplaceII(epsilon=1.0, delta=1e-5, sensitivity=1.0, k=100, calibration="thesis")
    assert t.scale == pytest.approx(math.sqrt(200 * math.log(1e5)))  # Δ√(2k ln(1/δ))/ε


@pytest.mark.parametrize("mech", [Laplace(epsilon=0.7, sensitivity=1.3), LaplaceI(epsilon=1.0, sensitivity=0.1, k=20)])
def test_empirical_variance_matches_closed_form(mech):
    # Sample variance s² of n iid Laplace(b): Var(s²) ≈ (μ4 − σ⁴)/n = (24b⁴ − 4b⁴)/n = 20b⁴/n.
    # Margin: 5 standard errors (the normal approximation of s² is excellent at n = 2e5).
    n = 200_000
    k = getattr(mech, "k", 1)
    if k > 1:
        x = np.concatenate([np.atleast_1d(mech.release(np.zeros(k), rng=s)) for s in range(n // k)])
    else:
        x = mech.release(np.zeros(n), rng=1)
    b = mech.scale
    se = math.sqrt(20.0 * b**4 / x.size)
    assert abs(x.var(ddof=1) - mech.variance) < 5 * se
    assert abs(x.mean()) < 5 * math.sqrt(mech.variance / x.size)


def test_wrong_scale_is_detected_by_variance_check():
    # power: a scale 10% off changes the variance by 21%, ≫ 5 SE (≈ 5·sqrt(20/2e5) ≈ 5%)
    x = np.random.default_rng(0).laplace(0.0, 1.1, size=200_000)
    assert abs(x.var(ddof=1) - 2.0) > 5 * math.sqrt(20.0 / x.size)


def test_prop_1_13_formulas():
    assert laplace_I_error_bound(1.0, 10, 1.0, 0.05) == pytest.approx(10 * math.log(10 / 0.05))
    assert laplace_II_error_bound(1.0, 10, 1.0, 1e-5, 0.05) == pytest.approx(
        math.sqrt(20 * math.log(1e5)) * math.log(10 / 0.05)
    )
    assert LaplaceI(epsilon=1.0, sensitivity=1.0, k=10).max_error_bound(0.05) == pytest.approx(
        laplace_max_error_bound(10.0, 10, 0.05)
    )


def _max_errors(mech, k: int, reps: int, seed: int) -> np.ndarray:
    g = np.random.default_rng(seed)
    return np.array([np.max(np.abs(mech.release(np.zeros(k), rng=g))) for _ in range(reps)])


@pytest.mark.parametrize(
    "mech",
    [
        LaplaceI(epsilon=1.0, sensitivity=1.0, k=5),
        LaplaceI(epsilon=0.5, sensitivity=0.01, k=50),
        LaplaceII(epsilon=1.0, delta=1e-5, sensitivity=1.0, k=50, calibration="thesis"),
        LaplaceII(epsilon=1.0, delta=1e-5, sensitivity=1.0, k=50),
    ],
    ids=["I-k5", "I-k50", "II-thesis", "II-advanced"],
)
@pytest.mark.parametrize("beta", [0.05, 0.2])
def test_prop_1_13_empirical_quantile(mech, beta):
    # Prop 1.13: P(max_i |Z_i| > b ln(k/β)) ≤ β, exactly 1 − (1 − β/k)^k. The union bound is
    # nearly tight, so the empirical (1−β)-quantile sits right at the bound and can exceed it
    # by sampling noise alone. Statistically honest form: the empirical (1−q)-quantile with
    # q = x*/R ≤ bound, where x* = binom.ppf(1 − 1e-3, R, β) is the largest exceedance count
    # consistent with P ≤ β at level 1e-3 — i.e. the exceedance count is ≤ x*.
    reps = 4000
    k = mech.k
    bound = mech.max_error_bound(beta)
    if isinstance(mech, LaplaceI):
        assert bound == pytest.approx(laplace_I_error_bound(mech.sensitivity, k, mech.epsilon, beta))
    elif mech.calibration == "thesis":
        assert bound == pytest.approx(laplace_II_error_bound(mech.sensitivity, k, mech.epsilon, mech.delta, beta))
    err = _max_errors(mech, k, reps, seed=3)
    x_star = stats.binom.ppf(1 - 1e-3, reps, beta)
    assert np.sum(err > bound) <= x_star
    assert np.quantile(err, 1 - x_star / reps) <= bound
    # exact exceedance probability of the bound is ≤ β
    assert 1 - (1 - beta / k) ** k <= beta


def test_prop_1_13_check_has_power():
    # the same check with the bound halved (what a wrong constant would give) must fail
    mech = LaplaceI(epsilon=1.0, sensitivity=1.0, k=20)
    err = _max_errors(mech, 20, 2000, seed=4)
    x_star = stats.binom.ppf(1 - 1e-3, 2000, 0.05)
    assert np.sum(err > 0.5 * mech.max_error_bound(0.05)) > x_star


def test_laplace_II_calibrations_and_erratum():
    eps, delta, k = 1.0, 1e-5, 100
    thesis = LaplaceII(epsilon=eps, delta=delta, sensitivity=1.0, k=k, calibration="thesis")
    adv = LaplaceII(epsilon=eps, delta=delta, sensitivity=1.0, k=k)
    # advanced calibration meets Thm 1.11 exactly; the printed one overshoots it (erratum)
    assert advanced_composition(adv.per_query_epsilon, 0.0, k, delta)[0] == pytest.approx(eps, rel=1e-9)
    e_thesis = advanced_composition(thesis.per_query_epsilon, 0.0, k, delta)[0]
    assert e_thesis > eps
    assert e_thesis - eps == pytest.approx(eps**2 / (2 * math.log(1 / delta)), rel=0.1)
    # ... but exact privacy-loss accounting still certifies (ε, δ) with room to spare
    d_exact = laplace_composition_delta(eps, k, thesis.per_query_epsilon)
    assert d_exact < delta / 100
    assert adv.scale > thesis.scale


def test_release_shape_checks():
    with pytest.raises(ValueError, match="k=3"):
        LaplaceI(epsilon=1.0, sensitivity=1.0, k=3).release(np.zeros(4), rng=0)
    out = Laplace(epsilon=1.0, sensitivity=1.0).release(np.zeros((2, 3)), rng=0)
    assert out.shape == (2, 3)
    assert isinstance(Laplace(epsilon=1.0, sensitivity=1.0).release(0.0, rng=0), float)
