"""The level-set mechanism for linear queries (dpkit.mechanisms.linear): privacy, sampler, closed forms, errors.

Statistical margins: KS tests use p ≥ 1e-3 (a correct sampler fails with probability 1e-3 per
test); Monte-Carlo means use |z| ≤ 3.89 (two-sided 1e-4) with the standard deviation from
the closed-form second moment.
"""
from __future__ import annotations

import dataclasses
import json
import math

import numpy as np
import pytest
from scipy import stats

from dpkit.claims import linear as lc
from dpkit.claims.linear import CONFIGURATIONS
from dpkit.core.accounting import Ledger
from dpkit.core.exceptions import BudgetExceededError
from dpkit.mechanisms.linear import LevelSetDensity, build_level_sets, optimal_radius, rate_curve, rate_grid
from dpkit.mechanisms.linear import intervals as iv
from dpkit.mechanisms.linear.levelset import ladder_sets
from dpkit.mechanisms.linear.mechanism import LinearQueryMechanism, linear_query_value
from dpkit.mechanisms.linear.staircase import Staircase, optimal_gamma

V5 = CONFIGURATIONS["V5"]
V4 = CONFIGURATIONS["V4"]
Z_MAX = 3.89
P_MIN = 1e-3


# --------------------------------------------------------------------------- bad inputs
@pytest.mark.parametrize(
    "V, match",
    [
        ([], "at least one interval"),
        ([[0.0, 0.0]], "no usable interval"),
        ([[0.0, 0.0], [0.0, 0.0]], "no usable interval"),
        ([[2.0, 1.0]], "start <= end"),
        ([[0.0, np.nan]], "finite"),
        ([[0.0, 1.0, 2.0]], "shape"),
    ],
)
def test_bad_neighbour_set(V, match):
    with pytest.raises(ValueError, match=match):
        build_level_sets(V, 1.0)
    with pytest.raises(ValueError, match=match):
        LinearQueryMechanism(neighbour_set=V, epsilon=1.0, radius=1.0)
    with pytest.raises(ValueError, match=match):
        optimal_radius(V, 1.0)


@pytest.mark.parametrize("eps", [0.0, -1.0, math.nan, math.inf])
def test_bad_epsilon(eps):
    with pytest.raises(ValueError, match="epsilon"):
        LinearQueryMechanism(neighbour_set=V5, epsilon=eps, radius=1.0)
    with pytest.raises(ValueError, match="epsilon"):
        LevelSetDensity.from_query(V5, epsilon=eps, radius=1.0)
    with pytest.raises(ValueError, match="epsilon"):
        Staircase(epsilon=eps, sensitivity=1.0)
    with pytest.raises(ValueError, match="epsilon"):
        optimal_radius(V5, eps)


@pytest.mark.parametrize("radius", [0.0, -2.0, math.inf, math.nan])
def test_bad_radius(radius):
    with pytest.raises(ValueError, match="radius"):
        build_level_sets(V5, radius)
    with pytest.raises(ValueError, match="radius"):
        LinearQueryMechanism(neighbour_set=V5, epsilon=1.0, radius=radius)


def test_other_bad_inputs():
    with pytest.raises(TypeError, match="epsilon"):
        LinearQueryMechanism(neighbour_set=V5, epsilon="1", radius=1.0)
    with pytest.raises(ValueError, match="neighbouring"):
        LinearQueryMechanism(neighbour_set=V5, epsilon=1.0, radius=1.0, neighbouring="swap")
    with pytest.raises(ValueError, match="max_steps"):
        build_level_sets(V5, 1.0, max_steps=0)
    with pytest.raises(ValueError, match="gamma"):
        Staircase(epsilon=1.0, sensitivity=1.0, gamma=1.5)
    with pytest.raises(ValueError, match="sensitivity"):
        Staircase(epsilon=1.0, sensitivity=0.0)
    m = LinearQueryMechanism(neighbour_set=V5, epsilon=1.0, radius=5.0)
    with pytest.raises(ValueError, match="scalar"):
        m.release([1.0, 2.0], rng=0)
    with pytest.raises(ValueError, match="finite"):
        m.release(np.nan, rng=0)
    with pytest.raises(ValueError, match="outside the neighbour set"):
        m.release_histogram([1, 1], [0.5, 50.0], rng=0)
    with pytest.raises(ValueError, match="geometric_support"):
        m.density.sample(3, rng=0, geometric_support=2)
    with pytest.raises(ValueError, match="keep_shells"):
        LevelSetDensity(levels=build_level_sets(V5, 5.0, keep_shells=False), epsilon=1.0).pdf(0.0)


# --------------------------------------------------------------------------- sampler vs exact CDF
KS_CASES = [
    ("V5 converged", V5, 1.0, 14.6, None),
    ("counting, converged (delta>=1/2)", [[1.0, 1.0]], 0.7, 0.8, None),
    ("counting, truncated (delta<1/2)", [[1.0, 1.0]], 0.5, 0.3, 1e-12),
    ("V4 = staircase", V4, 2.0, 100.0, None),
    ("general V with a point", [[-3.0, -2.0], [0.5, 0.5], [4.0, 6.0]], 1.5, 0.4, None),
]


@pytest.mark.parametrize("label, V, eps, radius, tail_tol", KS_CASES, ids=[c[0] for c in KS_CASES])
def test_sampler_ks_against_exact_cdf(label, V, eps, radius, tail_tol):
    d = LevelSetDensity.from_query(V, epsilon=eps, radius=radius, tail_tol=tail_tol)
    x = d.sample(50_000, rng=2024)
    assert stats.kstest(x, d.cdf).pvalue >= P_MIN


def test_ks_rejects_printed_support_zero():
    """The geometric-support erratum (docs/science/errata.md): a geometric tail on {0,1,…} puts tail mass on R_n's
    bands; KS must see it."""
    d = LevelSetDensity.from_query(V4, epsilon=1.0, radius=50.0)
    assert d.sum2 / d.alpha > 0.3  # the tail carries a third of the mass here
    assert stats.kstest(d.sample(50_000, rng=7, geometric_support=0), d.cdf).pvalue < 1e-6


def test_cdf_is_the_integral_of_the_pdf():
    d = LevelSetDensity.from_query(V5, epsilon=0.7, radius=3.3)
    assert d.cdf(-1e7) == pytest.approx(0.0, abs=1e-12)
    assert d.cdf(1e7) == pytest.approx(1.0, abs=1e-12)
    assert d.cdf(0.0) == pytest.approx(0.5, abs=1e-12)
    x = np.random.default_rng(1).uniform(-900, 900, 2000)
    np.testing.assert_allclose(d.cdf(-x), 1.0 - d.cdf(x), atol=1e-12)
    # F(x + h) − F(x) = ∫ p exactly; compare with midpoint sums on sub-steps far finer than any shell
    h = 1e-4
    sub = x[:, None] + h * (np.arange(100) + 0.5)[None, :] / 100
    np.testing.assert_allclose(d.cdf(x + h) - d.cdf(x), d.pdf(sub).mean(axis=1) * h, rtol=0, atol=2e-8 * h * 100)
    assert np.all(np.diff(d.cdf(np.linspace(-2000, 2000, 20001))) >= 0)


def test_normaliser_matches_algorithm1_sums():
    d = LevelSetDensity.from_query(V5, epsilon=1.0, radius=2.0)
    L = d.levels
    q = math.exp(-1.0)
    sum1 = sum(q**i * m for i, m in enumerate(L.measures))
    sum2 = 2 * L.sensitivity * q ** (L.n + 1) / (1 - q)
    assert d.alpha == pytest.approx(sum1 + sum2, rel=1e-12)
    assert L.converged and L.n <= 2200
    # Definition 2: R_n = ±(a_n + [0, Δf])
    np.testing.assert_allclose(L.shells[L.n], [[-L.a_n - 101, -L.a_n], [L.a_n, L.a_n + 101]], atol=1e-9)


@pytest.mark.parametrize("name", ["V1", "V3", "V5"])  # V7 (the slowest build) is covered by notebook 30
def test_monte_carlo_abs_error_and_variance(name):
    V = CONFIGURATIONS[name]
    d = LevelSetDensity.from_query(V, epsilon=1.0, radius=0.05 * max(abs(np.asarray(V)).max(), 1))
    m = lc.monte_carlo_abs_error(d, 100_000, rng=11)
    assert abs(m.z) <= Z_MAX
    x = d.sample(100_000, rng=12)
    # E[Z] = 0 by symmetry (the printed 'mean'); sd of the sample mean = sqrt(E Z²/n)
    assert abs(x.mean()) <= Z_MAX * math.sqrt(d.variance / x.size)


# --------------------------------------------------------------------------- privacy
@pytest.mark.parametrize("name", ["V1", "V2", "V3", "V4", "V5"])  # V6 = V1; V7 runs in notebook 30
def test_exact_level_check_configurations(name):
    V = CONFIGURATIONS[name]
    L = build_level_sets(V, 0.02 * max(abs(np.asarray(V)).max(), 1))
    assert L.converged and L.n <= 2200
    res = lc.exact_level_check(L)
    assert res.violating_pieces == 0 and res.violating_measure == 0.0


def test_exact_level_check_catches_a_broken_shell():
    L = build_level_sets(V5, 3.0)
    shells = list(L.shells)
    k = L.n // 2
    shells[k] = shells[k][1:]  # drop one piece of a middle shell: its points jump two levels
    broken = dataclasses.replace(L, shells=tuple(shells))
    assert lc.exact_level_check(broken).violating_pieces > 0


def test_monte_carlo_level_check_is_tight():
    d = LevelSetDensity.from_query(CONFIGURATIONS["V2"], epsilon=1.3, radius=40.0)
    r = lc.monte_carlo_level_check(d, 40_000, rng=3)
    assert r.max_level_jump == 1.0
    assert r.max_log_ratio_over_eps == pytest.approx(1.0, abs=1e-9)


def test_truncated_construction_is_exactly_private_with_valid_tail_bound():
    short = LevelSetDensity.from_query([[1.0, 1.0]], epsilon=0.2, radius=0.3, max_steps=60)
    long = LevelSetDensity.from_query([[1.0, 1.0]], epsilon=0.2, radius=0.3, max_steps=400)
    assert not short.levels.converged and not long.levels.converged
    assert lc.exact_level_check(short.levels).violating_pieces == 0
    tb = short.tail_bound()
    assert 0 < tb["tail_probability"] < 1e-3
    assert tb["abs_error_low"] <= long.expected_abs_error <= tb["abs_error_high"]
    assert tb["abs_error_low"] <= short.expected_abs_error <= tb["abs_error_high"]


def test_counting_query_tends_to_the_geometric_mechanism():
    """[derived] V = {1}, δ → 0: Z concentrates on ℤ with P(k) ∝ e^{−ε|k|}; E|K| = 2q/(1−q²)."""
    eps, q = 1.0, math.exp(-1.0)
    d = LevelSetDensity.from_query([[1.0, 1.0]], epsilon=eps, radius=1e-4, tail_tol=1e-14)
    # |E|Z| − E|K|| ≤ δ (each atom is spread over [k − δ, k + δ]) plus the truncated tail
    assert d.expected_abs_error == pytest.approx(2 * q / (1 - q * q), abs=1e-4 + 1e-10)


def test_auditor_does_not_flag_the_sampler():
    audit = pytest.importorskip("dpkit.evaluation.audit").audit
    d = LevelSetDensity.from_query(V5, epsilon=1.0, radius=14.6)
    v = d.sensitivity

    def mech(db, rng, size=None):
        return db + d.sample(size, rng=rng)

    res = audit(mech, 0.0, v, statistic=lambda y: (d.level(np.asarray(y) - v) - d.level(y)).astype(float),
                n_samples=40_000, confidence=0.95, rng=5)
    assert res.epsilon_lb <= 1.0
    assert res.epsilon_point > 0.8  # the event {ℓ(y−v) − ℓ(y) = 1} has ratio exactly e^ε


# --------------------------------------------------------------------------- theory checks
def test_lemma3_and_corollary1_on_random_neighbour_sets():
    rng = np.random.default_rng(0)
    worst_l, worst_c = -np.inf, -np.inf
    for _ in range(40):
        k = int(rng.integers(1, 4))
        V = np.sort(rng.uniform(0, 20, 2 * k)).reshape(-1, 2)
        if rng.random() < 0.4:
            V[0, 0] = 0.0
        if rng.random() < 0.3:
            V[-1, 0] = V[-1, 1]  # a point
        L = build_level_sets(V, float(rng.uniform(0.05, 4.0)), max_steps=400)
        worst_l = max(worst_l, lc.lemma3_violation(L))
        worst_c = max(worst_c, lc.corollary1_violation(L, float(rng.uniform(0.2, 3.0))))
    assert worst_l <= 1e-9 and worst_c <= 1e-9


def test_lemma1_ladder_sets():
    """Lemma 1 on the un-dilated ladder shells: I_t ⊕ W meets only I_{t−1}, I_t, I_{t+1}."""
    I = ladder_sets([[0.0, 1.0], [7.0, 8.0]], 12)
    np.testing.assert_array_equal(I[0], [[0.0, 0.0]])
    W = iv.symmetric_closure(iv.as_union([[0.0, 1.0], [7.0, 8.0]]))
    for t in range(len(I) - 1):
        reach = iv.minkowski_sum(I[t], W)
        for s in range(len(I)):
            if abs(s - t) > 1:
                assert iv.measure(iv.intersection(reach, I[s])) == 0.0


@pytest.mark.parametrize("eps", [0.5, 1.0, 2.5])
def test_theorem1_lp(eps):
    L = build_level_sets(CONFIGURATIONS["V2"], 30.0)
    r = lc.theorem1_lp(L, eps)
    assert r.relative_gap <= 1e-7 and r.max_profile_error <= 1e-6


def test_v4_is_the_staircase():
    for eps in (0.3, 1.0, 4.0):
        for gamma in (optimal_gamma(eps), 0.3):
            d = LevelSetDensity.from_query(V4, epsilon=eps, radius=gamma * 1001.0)
            st = Staircase(epsilon=eps, sensitivity=1001.0, gamma=gamma)
            z = np.random.default_rng(0).uniform(-8000, 8000, 5000)
            np.testing.assert_allclose(d.pdf(z), st.pdf(z), rtol=1e-9)
            assert d.expected_abs_error == pytest.approx(st.mean_abs_error, rel=1e-10)
            assert d.variance == pytest.approx(st.variance, rel=1e-10)
        d_star = LevelSetDensity.from_query(V4, epsilon=eps, radius=optimal_gamma(eps) * 1001.0)
        assert d_star.rate == pytest.approx(1.0, abs=1e-12)
    res = optimal_radius(V4, [0.5, 2.0])
    for r in res:
        assert 1.0 - 1e-12 <= r.rate <= 1.0 + 1e-6
        assert r.radius == pytest.approx(optimal_gamma(r.epsilon) * 1001.0, rel=2e-2)


def test_convergence_within_2200_steps():
    for name, V in CONFIGURATIONS.items():
        L = build_level_sets(V, 1e-3 * max(abs(np.asarray(V)).max(), 1), keep_shells=False)
        assert L.converged and L.n <= 2200, name


def test_rate_grid_and_curves():
    g = rate_grid(V5, [1.0, 10.0, 50.0], [0.5, 1.0, 3.0])
    assert g.rate.shape == (3, 3) and np.all(g.converged)
    L = build_level_sets(V5, 10.0, keep_shells=False)
    np.testing.assert_allclose(rate_curve(L, [0.5, 1.0, 3.0]), g.rate[1])
    lap = rate_curve(L, [1.0], baseline="laplace")[0]
    assert lap == pytest.approx(g.rate[1, 1] * math.exp(0.5) / math.expm1(1.0))
    with pytest.raises(ValueError, match="baseline"):
        rate_curve(L, [1.0], baseline="gauss")


# --------------------------------------------------------------------------- mechanism objects
def test_mechanism_release_ledger_and_reproducibility():
    m = LinearQueryMechanism(neighbour_set=V5, epsilon=0.5, radius=5.0)
    assert m.neighbouring == "add-remove" and m.delta == 0.0 and m.guarantee == (0.5, 0.0)
    led = Ledger(1.0)
    a = m.release(10.0, rng=3, ledger=led, name="q")
    b = m.release(10.0, rng=3, ledger=led, name="q")
    assert a == b
    assert led.entries[0].neighbouring == "add-remove" and led.entries[0].epsilon == 0.5
    with pytest.raises(BudgetExceededError):
        m.release(10.0, rng=3, ledger=led)
    with pytest.raises(dataclasses.FrozenInstanceError):
        m.epsilon = 2.0  # type: ignore[misc]
    json.dumps(m.params())
    assert m.release_histogram([2, 0, 1], [1.0, 0.5, 100.0], rng=3) == pytest.approx(
        linear_query_value([2, 0, 1], [1.0, 0.5, 100.0]) + m.sample_noise(rng=3)
    )


def test_mechanism_default_radius_is_the_search_optimum():
    m = LinearQueryMechanism(neighbour_set=V5, epsilon=1.0)
    ref = optimal_radius(V5, 1.0)
    assert m.radius == pytest.approx(ref.radius)
    assert m.rate == pytest.approx(ref.rate, rel=1e-9) and m.rate < 1.0


def test_staircase_sampler_and_closed_forms():
    for eps, gamma in ((0.5, None), (2.0, 0.2)):
        st = Staircase(epsilon=eps, sensitivity=3.0, gamma=gamma)
        x = st.sample(50_000, rng=9)
        assert stats.kstest(x, st.cdf).pvalue >= P_MIN
        z = (np.abs(x).mean() - st.mean_abs_error) / math.sqrt((st.variance - st.mean_abs_error**2) / x.size)
        assert abs(z) <= Z_MAX
    st = Staircase(epsilon=1.0, sensitivity=3.0)
    assert st.mean_abs_error == pytest.approx(3.0 * math.exp(0.5) / math.expm1(1.0), rel=1e-12)
    led = Ledger(1.0)
    st.release(0.0, rng=1, ledger=led)
    assert led.entries[0].epsilon == 1.0


@pytest.mark.parametrize("V, radius", [(V5, 3.3), ([[0.0, 2.0], [9.0, 9.5]], 0.7), ([[1.0, 1.0]], 0.3)])
def test_recursion_matches_literal_algorithm1(V, radius):
    """[derived] (docs/science/linear_queries.md): the cumulative recursion and the literal Algorithm 1 give the same shells."""
    from dpkit.mechanisms.linear.levelset import algorithm1_shells

    L = build_level_sets(V, radius, max_steps=40)
    lit = algorithm1_shells(V, radius, min(L.n - 1, 40) if not L.converged else L.n)
    for i, R in enumerate(lit):
        assert iv.measure(R) == pytest.approx(L.measures[i], abs=1e-9)
        assert iv.abs_integral(R) == pytest.approx(L.abs_integrals[i], rel=1e-12, abs=1e-9)


def test_counting_query_from_record_values():
    m = LinearQueryMechanism.from_record_values([0, 1, 1], epsilon=1.0, radius=0.6)
    assert m.neighbour_set == ((0.0, 0.0), (1.0, 1.0)) and m.sensitivity == 1.0
    assert m.density.levels.converged  # δ ≥ 1/2 closes the gaps of W = {−1, 0, 1}
    with pytest.raises(ValueError, match="no usable interval"):
        LinearQueryMechanism.from_record_values([0.0], epsilon=1.0, radius=0.6)


def test_privacy_on_random_neighbour_sets():
    """General V (negative values, points, no 0): exact inclusion C_t ⊕ W ⊆ C_{t+1} and the
    pointwise ratio bound through the pdf, including truncated constructions."""
    rng = np.random.default_rng(42)
    for _ in range(12):
        k = int(rng.integers(1, 4))
        V = np.sort(rng.uniform(-15, 15, 2 * k)).reshape(-1, 2)
        if rng.random() < 0.4:
            V[-1, 0] = V[-1, 1]
        eps, radius = float(rng.uniform(0.3, 2.0)), float(rng.uniform(0.05, 3.0))
        d = LevelSetDensity.from_query(V, epsilon=eps, radius=radius, max_steps=150)
        assert lc.exact_level_check(d.levels).violating_pieces == 0
        r = lc.monte_carlo_level_check(d, 4000, rng=rng)
        assert r.max_level_jump <= 1 and r.max_log_ratio_over_eps <= 1 + 1e-9
