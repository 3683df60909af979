"""Gaussian mechanism: the three calibrations, the exact δ, closed-form variance."""
from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import integrate, stats

from dpkit.mechanisms import Gaussian, analytic_gaussian_sigma, gaussian_exact_delta


def _hockey_stick_quad(sigma: float, eps: float, s: float) -> float:
    """Independent oracle: ∫ max(0, φ_σ(x) − e^ε φ_σ(x − S)) dx by quadrature."""
    # the integrand is positive for x < S/2 − σ²ε/S
    x0 = s / 2 - sigma**2 * eps / s
    def f(x: float) -> float:
        return stats.norm.pdf(x, 0, sigma) - math.exp(eps) * stats.norm.pdf(x, s, sigma)

    val, _ = integrate.quad(f, -np.inf, x0, epsabs=0, epsrel=1e-12, limit=200)
    return val


@pytest.mark.parametrize("sigma, eps, s", [(1.0, 0.5, 1.0), (3.0, 1.0, 2.0), (0.7, 2.0, 1.0), (10.0, 0.1, 1.0)])
def test_exact_delta_matches_quadrature(sigma, eps, s):
    assert gaussian_exact_delta(sigma, eps, s) == pytest.approx(_hockey_stick_quad(sigma, eps, s), rel=1e-7)


def test_exact_delta_monotone_and_scale_invariant():
    d = [gaussian_exact_delta(s, 1.0, 1.0) for s in (0.5, 1, 2, 4, 8)]
    assert all(a > b for a, b in zip(d, d[1:]))
    assert gaussian_exact_delta(2.0, 0.7, 1.0) == pytest.approx(gaussian_exact_delta(6.0, 0.7, 3.0), rel=1e-12)


def test_calibration_formulas_hand_computed():
    eps, delta, s = 0.5, 1e-5, 2.0
    classic = Gaussian(epsilon=eps, delta=delta, sensitivity=s, calibration="classic")
    assert classic.sigma == pytest.approx(s * math.sqrt(2 * math.log(1.25 / delta)) / eps)
    assert classic.sigma == pytest.approx(19.379221, rel=1e-6)  # 2·√(2 ln 125000)/0.5
    thesis = Gaussian(epsilon=eps, delta=delta, sensitivity=s, calibration="thesis")
    assert thesis.variance == pytest.approx(2 * s**2 * math.log(2 / delta) / eps**2)
    assert thesis.mse == thesis.variance


@pytest.mark.parametrize("eps", [0.05, 0.5, 0.99, 1.0, 3.0, 10.0])
@pytest.mark.parametrize("delta", [1e-3, 1e-6, 1e-12])
def test_analytic_is_exactly_calibrated(eps, delta):
    g = Gaussian(epsilon=eps, delta=delta, sensitivity=1.5)
    assert g.exact_delta() <= delta
    assert g.exact_delta() == pytest.approx(delta, rel=1e-8)
    # and it is the smallest valid σ: 0.1% less noise breaks (ε, δ)
    assert gaussian_exact_delta(g.sigma * 0.999, eps, 1.5) > delta
    if eps < 1:
        classic = Gaussian(epsilon=eps, delta=delta, sensitivity=1.5, calibration="classic")
        assert g.sigma < classic.sigma
        assert classic.exact_delta() < delta  # D–R Thm 3.22 holds (with large slack)


def test_classic_known_slack_and_range():
    # the classic calibration (Dwork & Roth, Thm A.1) at δ = 1e-3, ε = 0.5: its exact δ(ε) (Balle & Wang) is 3.2e-6
    g = Gaussian(epsilon=0.5, delta=1e-3, sensitivity=1.0, calibration="classic")
    assert g.exact_delta() == pytest.approx(3.2e-6, rel=0.01)
    with pytest.raises(ValueError, match=r"epsilon must be in \(0, 1\)"):
        Gaussian(epsilon=1.5, delta=1e-3, sensitivity=1.0, calibration="classic")


def test_thesis_calibration_valid_moderate_eps_fails_large_eps():
    for eps in (0.1, 1.0, 5.0):
        assert Gaussian(epsilon=eps, delta=1e-5, sensitivity=1.0, calibration="thesis").exact_delta() < 1e-5
    # the printed calibration (docs/science/errata.md) stops being valid around ε ≈ 8.5–10.3
    assert Gaussian(epsilon=20.0, delta=1e-5, sensitivity=1.0, calibration="thesis").exact_delta() > 1e-5


def test_analytic_sigma_function_and_validation():
    assert analytic_gaussian_sigma(1.0, 1e-5, 2.0) == pytest.approx(2 * analytic_gaussian_sigma(1.0, 1e-5, 1.0), rel=1e-9)
    with pytest.raises(ValueError, match="sigma"):
        gaussian_exact_delta(0.0, 1.0, 1.0)
    with pytest.raises(ValueError, match="delta"):
        analytic_gaussian_sigma(1.0, 0.0)


def test_empirical_variance_matches_closed_form():
    # s² of n iid N(0, σ²) has Var = 2σ⁴/(n − 1); margin 5 standard errors.
    g = Gaussian(epsilon=1.0, delta=1e-5, sensitivity=1.0)
    n = 200_000
    x = g.release(np.zeros(n), rng=2)
    se = math.sqrt(2 * g.variance**2 / (n - 1))
    assert abs(x.var(ddof=1) - g.variance) < 5 * se
    assert abs(np.mean(np.abs(x)) - g.mean_abs_error) < 5 * g.sigma / math.sqrt(n)
    # Shapiro-free normality sanity: KS against N(0, σ²) at level 1e-3
    assert stats.kstest(x[:20_000], "norm", args=(0, g.sigma)).pvalue > 1e-3


def test_release_and_params():
    g = Gaussian(epsilon=1.0, delta=1e-5, sensitivity=1.0, calibration="thesis", neighbouring="add-remove")
    assert isinstance(g.release(1.0, rng=0), float)
    p = g.params()
    assert p["sigma"] == g.sigma and p["calibration"] == "thesis" and p["neighbouring"] == "add-remove"
    assert g.guarantee == (1.0, 1e-5)
