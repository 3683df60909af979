"""Budgets and round counts a method cannot run with are refused up front with a message naming the parameter
and the supported range (derived from where the computation breaks); legal extremes it can run with, it runs."""
from __future__ import annotations

import dataclasses
import math
import sys
import warnings

import numpy as np
import pytest

from dpkit.core.accounting import Ledger
from dpkit.core.zcdp import MAX_ZCDP_EPSILON, cdp_delta, cdp_rho
from dpkit.mechanisms.gaussian import ANALYTIC_MAX_EPSILON, Gaussian, analytic_gaussian_sigma, gaussian_exact_delta
from dpkit.mechanisms.trig import ImprovedTrigonometricMechanism, LPError
from dpkit.methods import MST, KMEAnswers, KMESynthetic, RelaxedProjection
from dpkit.methods.aim import AIM

X = np.random.default_rng(0).uniform(-1, 1, size=(300, 3))
X10 = np.random.default_rng(1).uniform(-1, 1, size=(200, 10))


# ----------------------------------------------------------------------------- AIM's rounds
@pytest.mark.parametrize("rounds", [1, 8, 9])
def test_aim_refuses_too_few_rounds_before_anything_is_spent(rounds):
    """d = 10, α = 0.9: the initialisation spends d·αρ/T, so T must exceed αd = 9 (old code: BudgetExceededError
    'one-way 8' for T ≤ 8, ZeroDivisionError in the first round for T = 9)."""
    aim = AIM(epsilon=1.0, delta=1e-3, rounds=rounds, bins=4, m=10, iters=5, final_iters=5)
    led = Ledger(1.0, 1e-3)
    with pytest.raises(ValueError, match=r"rounds must be >= 10 for d = 10 attributes at alpha = 0.9; got rounds = "
                                         rf"{rounds}\. .*alpha\*d = 9"):
        aim.release(X10, rng=0, ledger=led)
    assert led.to_dict()["entries"] == []
    with pytest.raises(ValueError, match="rounds must be >= 10"):
        aim.initialise(X10, rng=0)


@pytest.mark.parametrize("alpha, d, least", [(0.9, 10, 10), (0.9, 11, 10), (0.5, 4, 3), (0.25, 2, 1), (0.9, 101, 91)])
def test_aim_min_rounds_is_the_least_T_above_alpha_d(alpha, d, least):
    aim = AIM(epsilon=1.0, delta=1e-3, alpha=alpha)
    assert aim.min_rounds(d) == least
    rho = cdp_rho(1.0, 1e-3)
    sigma0 = math.sqrt(least / (alpha * rho))
    assert d / sigma0 ** 2 < rho  # the least T leaves budget for the rounds
    if least > 1:
        assert d * alpha >= least - 1  # one round fewer would not
    dataclasses.replace(aim, rounds=least).budget(d)


# ----------------------------------------------------------------------------- the zCDP conversion (MST, AIM)
@pytest.mark.parametrize("epsilon", [1e30, 1e50, 1e200, MAX_ZCDP_EPSILON])
def test_cdp_rho_converts_huge_budgets(epsilon):
    """Was OverflowError from ε ≈ 1e30 (exp of a large log δ)."""
    rho = cdp_rho(epsilon, 1e-3)
    assert 0 < rho <= epsilon and cdp_delta(rho, epsilon) <= 1e-3
    assert rho + 2 * math.sqrt(rho) * math.sqrt(math.log(1e3)) <= epsilon  # and by Bun & Steinke's simpler bound (Prop 1.3)
    st = MST(epsilon=epsilon, delta=1e-3, bins=4).measure(X, rng=0)
    assert np.all(np.isfinite(st.twoway))


def test_zcdp_budget_above_the_limit_is_refused_at_construction():
    assert MAX_ZCDP_EPSILON == sys.float_info.max / 2
    above = math.nextafter(MAX_ZCDP_EPSILON, math.inf)
    for make in (lambda: MST(epsilon=above, delta=1e-3), lambda: AIM(epsilon=1e308, delta=1e-3),
                 lambda: cdp_rho(above, 1e-3)):
        with pytest.raises(ValueError, match=r"epsilon must be in \(0, 8\.98847e\+307\] for the zCDP conversion at "
                                             r"delta = 0\.001"):
            make()
    MST(epsilon=1e308, delta=0.0)  # pure ε-DP: no conversion, no limit
    MST(epsilon=math.inf, delta=1e-3)  # the non-private reference


# ----------------------------------------------------------------------------- the analytic Gaussian (RAP, KME, ...)
@pytest.mark.parametrize("S", [1e-10, 2.0 / 300, 1.0, 1e6])
@pytest.mark.parametrize("delta", [1e-12, 1e-3, 0.5])
def test_analytic_gaussian_calibrates_up_to_its_limit(S, delta):
    assert ANALYTIC_MAX_EPSILON == 2.0 ** 52
    for epsilon in np.geomspace(1e6, ANALYTIC_MAX_EPSILON, 25):
        sigma = analytic_gaussian_sigma(float(epsilon), delta, S)
        assert 0 < sigma < S and gaussian_exact_delta(sigma, float(epsilon), S) <= delta
    with pytest.raises(ValueError, match=rf"epsilon must be in \(0, 4\.5036e\+15\] for the analytic Gaussian "
                                         rf"mechanism at delta = {delta:g}"):
        analytic_gaussian_sigma(ANALYTIC_MAX_EPSILON * (1 + 1e-9), delta, S)


@pytest.mark.parametrize("make", [
    lambda e: RelaxedProjection(epsilon=e, delta=1e-3),
    lambda e: KMEAnswers(epsilon=e, delta=1e-3),
    lambda e: KMESynthetic(epsilon=e, delta=1e-3),
    lambda e: Gaussian(epsilon=e, delta=1e-3, sensitivity=1.0),
], ids=["rap", "kme-answers", "kme-synthetic", "Gaussian"])
def test_analytic_gaussian_methods_refuse_a_budget_beyond_it_at_construction(make):
    """Was a scipy 'function value is NaN' at release from ε ≈ 7e153, and an unresolved exact δ from ε ≈ 2^57."""
    with pytest.raises(ValueError, match=r"epsilon must be in \(0, 4\.5036e\+15\].*delta = 0\.001; got epsilon = 1e\+200"):
        make(1e200)
    make(1e15)


def test_pure_dp_variants_have_no_analytic_limit():
    rel = RelaxedProjection(epsilon=1e300, delta=0.0, R=20, max_iter=5, m=20).release(X, rng=0)
    assert np.all(np.isfinite(rel.synthetic.points))


# ----------------------------------------------------------------------------- the improved trigonometric mechanism
def _trig(epsilon: float, delta: float) -> ImprovedTrigonometricMechanism:
    return ImprovedTrigonometricMechanism(epsilon=epsilon, delta=delta, K=4.0, C=200, R=8)


@pytest.mark.parametrize("epsilon, delta, what", [
    (1e-25, 0.0, r"the moments' noise scale .* reaches 2\^52"),       # was HiGHS status 2 (model error)
    (1e-100, 0.0, r"the moments' noise scale .* reaches 2\^52"),
    (1e-200, 0.0, r"private PCA .* noise scale .* reaches sqrt"),     # was "axes must be finite"
    (1e-200, 1e-3, r"private PCA .* noise scale .* reaches sqrt"),    # was "axes must be finite"
    (1e-300, 1e-3, r"private PCA .* noise scale .* reaches sqrt"),
])
def test_trig_refuses_a_budget_too_small_for_its_lp_or_pca_before_spending(epsilon, delta, what):
    led = Ledger(epsilon, delta)
    with pytest.raises(ValueError, match=rf"epsilon = {epsilon:g} \(delta = {delta:g}\) is too small.*{what}"):
        _trig(epsilon, delta).release(X, rng=0, ledger=led)
    assert led.to_dict()["entries"] == []


def test_trig_runs_just_inside_its_range_and_an_lp_failure_near_the_limit_names_epsilon():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rel = _trig(1e-14, 0.0).release(X, rng=0)  # noisy moments about 3e13 < 2^52
        assert np.all(np.isfinite(rel.synthetic.points))
        with pytest.raises(LPError, match=r"epsilon = 1e-16, delta = 0: largest \|noisy moment\| 3\.05e\+15"):
            _trig(1e-16, 0.0).release(X, rng=0)  # 3e15: one binary order below 2^52, HiGHS loses the weights


@pytest.mark.parametrize("source", ["UniformCandidates", "GaussianCandidates"])
def test_candidate_lp_refuses_a_budget_too_small_for_its_lp_before_spending(source):
    """Was HiGHS status 2 (model error) at ε = 1e-100 (the same LP as the improved mechanism's)."""
    import dpkit.methods
    from dpkit.methods import CandidateLP

    led = Ledger(1e-100, 0.0)
    with pytest.raises(ValueError, match=r"epsilon = 1e-100 \(delta = 0\) is too small.*noise scale .* reaches 2\^52"):
        CandidateLP(epsilon=1e-100, delta=0.0, candidates=getattr(dpkit.methods, source)(), C=200,
                    R=8).release(X, rng=0, ledger=led)
    assert led.to_dict()["entries"] == []
