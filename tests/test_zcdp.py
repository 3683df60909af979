"""zCDP accounting (dpkit.core.zcdp): the ρ → (ε, δ) conversion against reference values and the exact
Gaussian δ, its inverse, named errors, and the ρ ledger's refusal of overspending."""
from __future__ import annotations

import math

import pytest

from dpkit.core.exceptions import BudgetExceededError
from dpkit.core.zcdp import ZCDPLedger, cdp_delta, cdp_rho
from dpkit.mechanisms.gaussian import gaussian_exact_delta


@pytest.mark.parametrize("rho,eps,ref", [(0.01, 1.0, 1.6641139773879933e-13), (0.1, 1.0, 0.008933245771818366),
                                         (0.5, 3.0, 0.005143184063862147), (1.0, 5.0, 0.0026120345066204856)])
def test_cdp_delta_matches_reference(rho, eps, ref):
    assert cdp_delta(rho, eps) == pytest.approx(ref, rel=1e-9)
    assert cdp_delta(rho, eps) <= math.exp(-((eps - rho) ** 2) / (4 * rho))  # Bun–Steinke Prop 1.3 is looser


@pytest.mark.parametrize("eps,delta,ref", [(1.0, 1e-3, 0.0593902000500055), (1.0, 1e-9, 0.014973057673588523),
                                           (0.5, 1e-5, 0.008505530591181911), (10.0, 1e-6, 1.5392787638667285)])
def test_cdp_rho_matches_reference_and_is_feasible(eps, delta, ref):
    rho = cdp_rho(eps, delta)
    assert rho == pytest.approx(ref, rel=1e-9)
    assert cdp_delta(rho, eps) <= delta < cdp_delta(rho * (1 + 1e-9), eps)


@pytest.mark.parametrize("rho,eps", [(0.05, 1.0), (0.5, 2.0), (2.0, 4.0)])
def test_cdp_delta_covers_the_gaussian_mechanism(rho, eps):
    # N(0, σ²) on sensitivity 1 is exactly 1/(2σ²)-zCDP; its exact δ(ε) (Balle–Wang) cannot exceed the conversion
    exact = gaussian_exact_delta(1.0 / math.sqrt(2 * rho), eps, 1.0)
    assert exact <= cdp_delta(rho, eps)


def test_cdp_bad_arguments_are_named():
    with pytest.raises(ValueError, match="rho"):
        cdp_delta(-0.1, 1.0)
    with pytest.raises(ValueError, match="delta"):
        cdp_rho(1.0, 0.0)
    assert cdp_delta(0.0, 1.0) == 0.0


def test_rho_ledger_refuses_overspending():
    led = ZCDPLedger(0.1)
    led.charge("a", 0.06)
    with pytest.raises(BudgetExceededError):
        led.charge("b", 0.05)
    assert len(led.steps) == 1 and led.remaining == pytest.approx(0.04)
