"""dpkit.core.accountant: the composition of a method's measurements and the calibration at (ε, δ).

Agreement with Google's dp-accounting is checked on compositions built here directly from ``dp_accounting.pld`` (every
Gaussian its own PLD, composed by dp-accounting, not through dpkit's exact combination): dpkit's δ must lie between
dp-accounting's optimistic and pessimistic estimates at a finer grid (10⁻⁴), up to the pessimistic rounding of dpkit's
own grid (10⁻³; the PLD's δ moves by less than the grid spacing times e^ε per unit of mass, asserted with 2 % relative
slack, which the pessimistic bound of a 10× coarser grid stays within at these sizes). The Gaussian-only composition
is exact (closed form), so it is compared with the analytic Gaussian to 10⁻¹⁰.
"""
from __future__ import annotations

import math

import numpy as np
import pytest
from dp_accounting.pld import common
from dp_accounting.pld import privacy_loss_distribution as pld
from scipy.stats import binom, norm

from dpkit.core import accountant as A
from dpkit.core.pld import laplace_composition_delta
from dpkit.core.zcdp import cdp_delta
from dpkit.mechanisms.gaussian import analytic_gaussian_sigma


def _dp_accounting_delta(steps, epsilon, *, pessimistic=True, h=1e-4):
    if not pessimistic and any(s.kind == "selection" for s in steps):
        return 0.0  # dp-accounting's pure-DP PLD has a pessimistic form only: no lower end here
    parts = []
    for s in steps:
        for _ in range(s.count):
            if s.kind == "gaussian":
                parts.append(pld.from_gaussian_mechanism(s.scale, value_discretization_interval=h,
                                                         pessimistic_estimate=pessimistic, use_connect_dots=pessimistic))
            elif s.kind == "laplace":
                parts.append(pld.from_laplace_mechanism(s.scale, value_discretization_interval=h,
                                                        pessimistic_estimate=pessimistic, use_connect_dots=pessimistic))
            else:
                parts.append(pld.from_privacy_parameters(common.DifferentialPrivacyParameters(s.scale, 0.0),
                                                         value_discretization_interval=h))
    total = parts[0]
    for p in parts[1:]:
        total = total.compose(p)
    return total.get_delta_for_epsilon(epsilon)


def _dpkit_pld(steps, eps):
    return A._pld_delta(tuple(steps), eps)


def _gauss_loss_delta(mu, x):
    """E[(1 − e^{x − L})₊] for the Gaussian part's loss L ~ N(μ²/2, μ²) under P (any real x; L = 0 without one)."""
    if mu == 0:
        return max(0.0, -math.expm1(x))
    return norm.cdf(-x / mu + mu / 2) - math.exp(x) * norm.cdf(-x / mu - mu / 2)


def _grr_lower(steps, eps, grid=101):
    """The exact δ(ε) of real mechanisms the accountant must cover: each selection a generalized randomized response
    with losses t and t − ε (ε-bounded range; Dong, Durfee & Rogers 2020), the same t in every round, composed with
    the steps' Gaussians (exact, their loss N(μ²/2, μ²)); the largest over a grid of t. No valid bound is below it."""
    mu = A.gaussian_mu(steps)
    sel = [s for s in steps if s.kind == "selection"]
    assert len({s.scale for s in sel}) == 1, "one selection ε per composition here"
    e, k = sel[0].scale, sum(s.count for s in sel)
    best = 0.0
    for t in np.linspace(0.0, e, grid):
        u, E = math.exp(t), math.exp(e)
        p1 = u * (E - u) / (u * (E - 1))  # P's mass on the outcome of loss t
        j = np.arange(k + 1)
        losses = j * t + (k - j) * (t - e)
        best = max(best, float(sum(binom.pmf(jj, k, p1) * _gauss_loss_delta(mu, eps - ll)
                                   for jj, ll in zip(j, losses))))
    return best


def test_a_selection_enters_by_the_bounded_range_pair_whose_profile_is_the_optimal_single_round():
    """One ε selection's δ(ε') is the largest δ of the generalized randomized responses with losses t, t − ε over
    t ∈ [0, ε] (Dong, Durfee & Rogers's optimal single round; the convex conjugate of min_t f_t), up to the grid's
    pessimistic rounding, and well below the generic ε-DP pair's (dp-accounting's from_privacy_parameters)."""
    for e in (0.1, 0.5, 1.0):
        one = [A.selection(e)]
        for eps in (0.0, e / 4, e / 2, 0.9 * e):
            ours = _dpkit_pld(one, eps)
            # max_t δ_t(ε') in closed form: δ_t = q(e^t − e^{ε'}) is largest at e^t = √(e^ε e^{ε'})
            exact = (math.exp(e / 2) - math.exp(eps / 2)) ** 2 / math.expm1(e)
            assert _grr_lower(one, eps, grid=2001) <= exact * (1 + 1e-12)
            assert exact <= ours <= exact + 2 * A.DISCRETISATION * math.exp(eps), (e, eps, exact, ours)
            generic = _dp_accounting_delta(one, eps)
            assert ours < 0.6 * generic
    # the law: P(L ≤ ℓ) on [−ε, ε], 0 and 1 outside, E_P[e^{−L}] = 1 (Q is a probability)
    e = 0.7
    ell = np.linspace(-e, e, 200_001)
    cdf = A.selection_loss_cdf(ell, e)
    assert cdf[0] == 0 and cdf[-1] == pytest.approx(1.0, abs=1e-15) and (np.diff(cdf) >= 0).all()
    mids = 0.5 * (ell[1:] + ell[:-1])
    assert float(np.sum(np.diff(cdf) * np.exp(-mids))) == pytest.approx(1.0, rel=1e-8)
    assert A.selection_loss_cdf(-2 * e, e) == 0 and A.selection_loss_cdf(2 * e, e) == 1


@pytest.mark.parametrize("k, e, mu", [(7, 0.3, 0.0), (7, 0.3, 0.4), (29, 0.126, 0.3)])
def test_composed_selections_are_never_below_a_real_mechanisms_delta(k, e, mu):
    """The refutation attempt: compositions of real bounded-range selections (one t for every round) with Gaussians,
    whose exact δ the accountant's bound must not undercut; and it is tighter than the generic pair's."""
    steps = [A.selection(e, count=k)] + ([A.gaussian(1.0 / mu)] if mu else [])
    for eps in (0.25, 0.5, 1.0):
        ours = A.composed_delta(steps, eps)
        assert _grr_lower(steps, eps) <= ours * (1 + 1e-9)
        assert _dpkit_pld(steps, eps) <= _dp_accounting_delta(steps, eps) * (1 + 1e-9)


@pytest.mark.parametrize("sigmas", [(2.0,), (2.0, 3.0), (1.5, 4.0, 6.0)])
def test_gaussian_composition_is_gaussian_dp_and_agrees_with_dp_accounting(sigmas):
    steps = [A.gaussian(s) for s in sigmas]
    mu = math.sqrt(sum(1 / s**2 for s in sigmas))
    assert A.gaussian_mu(steps) == pytest.approx(mu, rel=1e-15)
    for eps in (0.5, 1.0, 2.0):
        ours = A.composed_delta(steps, eps)
        assert ours == pytest.approx(A.composed_delta([A.gaussian(1 / mu)], eps), rel=1e-12)
        lo = _dp_accounting_delta(steps, eps, pessimistic=False)
        hi = _dp_accounting_delta(steps, eps, pessimistic=True)
        assert lo * (1 - 1e-3) <= ours <= hi * (1 + 1e-3), (lo, ours, hi)


def test_gaussian_calibration_is_the_analytic_gaussian_and_composes_as_root_k():
    for eps, dl in ((1.0, 1e-3), (0.5, 1e-5), (3.0, 1e-6)):
        one = A.calibrate([A.gaussian(1.0)], eps, dl)
        assert one == pytest.approx(analytic_gaussian_sigma(eps, dl, 1.0), rel=1e-10)
        assert A.calibrate([A.gaussian(1.0)] * 3, eps, dl) == pytest.approx(math.sqrt(3) * one, rel=1e-12)
        # the calibrated noise meets (ε, δ) and 10⁻⁶ less does not: the smallest
        assert A.composed_delta([A.gaussian(one)], eps) <= dl < A.composed_delta([A.gaussian(one * (1 - 1e-6))], eps)


@pytest.mark.parametrize("steps", [
    (A.laplace(4.0), A.laplace(8.0, count=3)),
    (A.gaussian(3.0), A.laplace(5.0, count=2)),
    (A.gaussian(4.0), A.selection(0.05, count=5), A.gaussian(6.0)),
])
def test_mixed_compositions_agree_with_dp_accounting(steps):
    for eps in (0.5, 1.0):
        ours = A.composed_delta(steps, eps)
        lo = _dp_accounting_delta(steps, eps, pessimistic=False)
        hi = _dp_accounting_delta(steps, eps, pessimistic=True)
        if any(s.kind == "selection" for s in steps):  # the minimum with the zCDP bound (module docstring)
            rho = sum(s.rho for s in steps)
            assert ours <= min(hi * 1.02, cdp_delta(rho, eps)) + 1e-15
            assert ours == pytest.approx(min(A.composed_delta(steps, eps, rule="zcdp"), _dpkit_pld(steps, eps)),
                                         rel=1e-12)
            # the bounded-range pair is tighter than dp-accounting's generic ε-DP pair, and never below the exact δ
            # of a real bounded-range mechanism composed with the same Gaussians
            assert _dpkit_pld(steps, eps) < hi and _grr_lower(steps, eps) <= ours * (1 + 1e-9)
        else:
            assert lo * (1 - 1e-3) - 1e-12 <= ours <= hi * 1.02 + 1e-12, (lo, ours, hi)  # 1e-12: FFT round-off


def test_laplace_composition_agrees_with_core_pld_bracket():
    """dpkit's own Laplace PLD (core.pld) brackets the exact δ; dp-accounting's pessimistic δ lies above its lower end
    and within the bracket's width of its upper end: core.pld is equal to it and stays (the thesis's oracle)."""
    k, eps_step, eps_total = 20, 0.1, 1.0
    lo = laplace_composition_delta(eps_total, k, eps_step, bound="lower")
    hi = laplace_composition_delta(eps_total, k, eps_step, bound="upper")
    ours = A.composed_delta([A.laplace(1.0 / eps_step, count=k)], eps_total)
    assert lo <= ours * (1 + 1e-9)
    assert ours <= hi + 2 * (hi - lo) + 1e-4 * hi, (lo, ours, hi)


def test_selections_are_never_accounted_looser_than_zcdp():
    steps = [A.gaussian(20.0 / 4), A.selection(0.3, count=7), A.gaussian(20.0 / 4)]
    for eps in (0.5, 1.0, 2.0):
        rho = sum(s.rho for s in steps)
        assert A.composed_delta(steps, eps) <= cdp_delta(rho, eps) + 1e-15
        assert A.composed_delta(steps, eps, rule="zcdp") == pytest.approx(cdp_delta(rho, eps), rel=1e-15)
    assert A.calibrate(steps, 1.0, 1e-3) <= A.calibrate(steps, 1.0, 1e-3, rule="zcdp") * (1 + 1e-9)


def test_negative_controls_are_refuted_by_the_exact_composition():
    """Too tight calibrations: composing Gaussians with μ = max μᵢ, and forgetting the selections' loss. At the noise
    they calibrate, the exact composition's δ(ε) is far above δ (asserted > 2δ; μ = max loses √k in μ)."""
    eps, dl = 1.0, 1e-3
    gauss = [A.gaussian(1.0), A.gaussian(1.0), A.gaussian(1.0)]
    t_max = A.calibrate(gauss, eps, dl, rule="max-gaussian")
    assert t_max == pytest.approx(A.calibrate(gauss, eps, dl) / math.sqrt(3), rel=1e-6)
    assert A.composed_delta([s.scaled(t_max) for s in gauss], eps) > 2 * dl
    mst = [A.gaussian(1.0), A.selection(1.0, count=7), A.gaussian(1.0)]
    t_forget = A.calibrate([mst[0], mst[2]], eps, dl)  # the accountant that forgets the selections
    assert A.composed_delta([s.scaled(t_forget) for s in mst], eps) > 2 * dl
    t_right = A.calibrate(mst, eps, dl)
    assert A.composed_delta([s.scaled(t_right) for s in mst], eps) <= dl


def test_steps_and_accounting_are_validated_naming_the_parameter():
    with pytest.raises(ValueError, match="kind"):
        A.Step("exponential", 1.0)
    with pytest.raises(ValueError, match="scale"):
        A.gaussian(0.0)
    with pytest.raises(ValueError, match="count"):
        A.laplace(1.0, count=0)
    with pytest.raises(ValueError, match=r"accounting must be one of \('pld', 'split'\); got 'exact'"):
        A.check_accounting("exact", allowed=("pld", "split"))
    with pytest.raises(ValueError, match="rule"):
        A.composed_delta([A.gaussian(1.0)], 1.0, rule="basic")
    with pytest.raises(ValueError, match="delta"):
        A.calibrate([A.gaussian(1.0)], 1.0, 0.0)


def test_a_step_that_reveals_nothing_costs_nothing():
    assert A.composed_delta([A.gaussian(math.inf), A.selection(0.0)], 0.1) == 0.0
    assert A.calibrate([A.gaussian(math.inf)], 1.0, 1e-3) == 0.0


def test_an_extreme_budget_keeps_the_published_plan_instead_of_overflowing():
    """At ε = 10²⁰⁰ a Laplace step's ρ overflows a double: it is infinite (the zCDP bound vacuous), never an
    OverflowError; where no factor in [2⁻⁶⁰, 2⁶⁰] is certified, calibrate says so by name and a method's plan factor is
    1 (its published split, valid by its own accounting); at an ordinary budget plan_factor is min(1, t)."""
    tiny = A.laplace(1e-217, count=20)
    assert tiny.rho == math.inf
    with pytest.raises(A.CalibrationError, match="no noise up to 2\\^60"):
        A.calibrate([tiny], 1e200, 1e-3)
    assert A.plan_factor([tiny], 1e200, 1e-3) == 1.0
    steps = [A.gaussian(6.0), A.laplace(4.0)]
    assert A.plan_factor(steps, 1.0, 1e-3) == min(1.0, A.calibrate(steps, 1.0, 1e-3)) < 1.0


def test_a_pld_grid_that_cannot_be_built_leaves_the_zcdp_bound():
    """A Gaussian of almost no noise (an extreme budget's bisection) makes dp-accounting's grid too large to build:
    the δ is then the zCDP bound of the whole composition (valid), not an error."""
    steps = [A.gaussian(1e-12), A.laplace(1.0)]
    assert A.composed_delta(steps, 1.0) == 1.0
    assert 0.0 < A.composed_delta([A.gaussian(3.0), A.laplace(2.0)], 1.0) < 1.0


def test_a_nearly_noiseless_gaussian_is_not_discretised_but_bounded_by_zcdp():
    """The Gaussian part's loss, N(μ²/2, μ²), counts ±10 μ in the width the PLD would discretise: at μ = 10 with a
    Laplace step (width 201 > MAX_PLD_RANGE) the zCDP bound is used (valid, looser: the PLD gives 0.475 there), while
    an ordinary composition (μ = 1, width 21) keeps the PLD, far below the zCDP bound."""
    huge = [A.gaussian(0.1), A.laplace(1.0)]
    assert A._pld_range(tuple(huge)) == pytest.approx(201.0) and 201.0 > A.MAX_PLD_RANGE
    assert A.composed_delta(huge, 50.0) == A.composed_delta(huge, 50.0, rule="zcdp")
    assert A.composed_delta(huge, 50.0) > A._pld_delta(tuple(huge), 50.0) + 0.4
    ordinary = [A.gaussian(1.0), A.laplace(1.0)]
    assert A._pld_range(tuple(ordinary)) == pytest.approx(21.0) and 21.0 < A.MAX_PLD_RANGE
    assert A.composed_delta(ordinary, 1.0) < 0.6 * A.composed_delta(ordinary, 1.0, rule="zcdp")
    # a Gaussian whose 1/σ² overflows: an infinite width, no OverflowError
    assert math.isinf(A._pld_range((A.gaussian(1e-200), A.laplace(1.0))))


def test_a_selection_is_mu_gdp_at_the_certified_mu():
    """selection_gdp_mu certifies μ-GDP of one bounded-range selection: its trade-off g lies above G_μ on a fine grid
    of α (and its profile below μ-GDP's), while 1 % less μ is refuted there; μ/ε is about 0.624 at ε = 1 and tends to
    √(π/8) as ε → 0 (the accounting page's numbers)."""
    from scipy.stats import norm

    alpha = np.concatenate([np.logspace(-12, -1, 4000), np.linspace(0.1, 1.0 - 1e-12, 40_000)])
    for e in (0.05, 0.3, 1.0, 2.0):
        mu = A.selection_gdp_mu(e)
        g = (1.0 - alpha) / (1.0 + math.expm1(e) * alpha)

        def gaussian_tradeoff(m):
            return norm.cdf(norm.ppf(1.0 - alpha) - m)

        assert (gaussian_tradeoff(mu) <= g + 1e-12).all()
        assert (gaussian_tradeoff(0.99 * mu) > g + 1e-6).any()
        for x in np.linspace(0.0, e, 101):
            assert A.selection_delta(e, x) <= A._gdp_delta(mu, x) * (1 + 1e-9)
    assert A.selection_gdp_mu(1.0) == pytest.approx(0.624, abs=1e-3)
    assert A.selection_gdp_mu(0.01) / 0.01 == pytest.approx(math.sqrt(math.pi / 8), rel=1e-3)
    assert A.selection_delta(1.0, 0.0) == pytest.approx(math.tanh(0.25), rel=1e-12) and A.selection_delta(1.0, 1.0) == 0


def test_extreme_budgets_never_calibrate_to_no_noise():
    """Noise multipliers beyond 10¹⁵⁰ (ε = δ = 10⁻³⁰⁰) squared underflow, and the analytic Gaussian's profile cancels
    for μ below 10⁻⁶: μ was computed as 0 and the factor with it, so a composed release had no noise. μ is now
    scaled before squaring, a tiny μ's δ is bounded by μ/√(2π), and a factor that is 0 or infinite is never
    returned (CalibrationError: the published plan stands)."""
    big = [A.gaussian(1e200), A.gaussian(1e200)]
    assert A.gaussian_mu(big) == pytest.approx(math.sqrt(2) * 1e-200, rel=1e-12)
    for eps, dl in ((1e-300, 1e-300), (1e-12, 1e-12), (1e-300, 1e-3)):
        t = A.calibrate(big, eps, dl)
        assert 0 < t < math.inf and A.composed_delta([s.scaled(t) for s in big], eps) <= dl
        sigma = A.calibrate([A.gaussian(1.0)], eps, dl)
        assert math.isfinite(sigma) and sigma > 0
        # the exact δ(0) of that σ, computed without cancellation (erf of a small argument), meets δ
        assert math.erf(1.0 / (2.0 * sigma * math.sqrt(2.0))) <= dl
    mu = 1e-9
    assert A._gdp_delta(mu, 0.0) >= math.erf(mu / (2.0 * math.sqrt(2.0)))  # an upper bound of the exact δ(0)
    # and not a needlessly loose one: at a tiny δ the calibration is the analytic Gaussian mechanism's (an independent
    # implementation, dpkit.mechanisms.gaussian), not the σ of the bound μ/√(2π) ≤ δ (10²⁹⁹ at δ = 10⁻³⁰⁰)
    for dl in (1e-300, 1e-100, 1e-12):
        assert A.calibrate([A.gaussian(1.0)], 1.0, dl) == pytest.approx(analytic_gaussian_sigma(1.0, dl, 1.0),
                                                                          rel=1e-6)
    # a mixed composition whose every ρ underflows: its zCDP bound was δ = 0 (so the bisection took the least noise,
    # 2⁻⁶⁰ times the plan's); now no bound, the calibration refused, the published plan kept
    mixed = [A.gaussian(1e200), A.laplace(1e300), A.selection(1e-300, count=3)]
    assert A.composed_delta(mixed, 1e-300) == A.composed_delta(mixed, 1e-300, rule="zcdp") == 1.0
    with pytest.raises(A.CalibrationError):
        A.calibrate(mixed, 1e-300, 1e-300)
    assert A.plan_factor(mixed, 1e-300, 1e-300) == 1.0



def test_a_factor_of_zero_or_infinity_is_never_a_calibration(monkeypatch):
    """Whatever the inner computation returns, calibrate refuses a factor that is 0 (no noise) or not finite, and
    plan_factor then keeps the published plan (factor 1)."""
    for bad in (0.0, math.inf, math.nan):
        monkeypatch.setattr(A, "_calibrate", lambda *a, bad=bad: bad)
        with pytest.raises(A.CalibrationError, match="no positive finite factor"):
            A.calibrate([A.gaussian(2.0)], 1.0, 1e-3)
        assert A.plan_factor([A.gaussian(2.0)], 1.0, 1e-3) == 1.0
