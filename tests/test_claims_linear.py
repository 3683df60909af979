"""dpkit.claims.linear: every claim of notebook 30 on small sizes (seconds), with the verdict the theory predicts.

Statistical margins are the notebook's (KS p ≥ 1e-3, |z| ≤ 3.89, auditor at 95 %) with fixed seeds; the
negative controls and the deliberately wrong inputs/bounds show that each check can fail.
"""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from scipy import stats

from dpkit.claims import linear as cl
from dpkit.mechanisms.linear import LevelSetDensity, RadiusSearch, build_level_sets, optimal_radius, rate_grid

V5 = cl.CONFIGURATIONS["V5"]


@pytest.fixture(scope="module")
def dens5() -> LevelSetDensity:
    return LevelSetDensity.from_query(V5, epsilon=1.0, radius=14.6)


@pytest.fixture(scope="module")
def small_grids() -> dict:
    rel, eps = np.array([0.05, 0.3]), np.array([0.5, 2.0])
    return cl.rate_maps({k: cl.CONFIGURATIONS[k] for k in ("V1", "V2", "V5", "V6")}, rel, eps)


def _verdict(c):
    assert c.consistent, (c.id, c.verdict, c.expected, c.statistic, c.bound)
    return c.verdict


def test_exact_level_check_passes_and_catches_a_broken_shell(dens5):
    assert _verdict(cl.privacy_exact_level_check({"V5": dens5.levels})) == "PASS"
    L = build_level_sets(V5, 3.0)
    shells = list(L.shells)
    shells[L.n // 2] = shells[L.n // 2][1:]  # drop a piece of a middle shell: its points jump two levels
    broken = cl.privacy_exact_level_check({"V5": dataclasses.replace(L, shells=tuple(shells))})
    assert broken.verdict == "FAIL" and broken.statistic > 0


def test_monte_carlo_privacy_and_tightness(dens5):
    ratio, tight = cl.privacy_monte_carlo_checks({"V5": dens5}, n_samples=4000, rng=1)
    assert (_verdict(ratio), _verdict(tight)) == ("PASS", "PASS")
    assert ratio.statistic == pytest.approx(1.0, abs=1e-9)


def test_auditor_does_not_flag_the_sampler(dens5):
    c = cl.privacy_auditor_check(dens5, n_samples=20_000, rng=5, config="V5")
    assert _verdict(c) == "PASS" and c.confidence == 0.95 and c.bound == 1.0


def test_v4_is_the_staircase():
    assert _verdict(cl.v4_staircase_rate_check([0.5, 2.0])) == "PASS"
    assert _verdict(cl.v4_staircase_pdf_check(1.0, rng=0, n_points=2000)) == "PASS"
    grid = rate_grid(cl.CONFIGURATIONS["V4"], [100.0, 400.0], [0.5, 2.0])
    curve = optimal_radius(cl.CONFIGURATIONS["V4"], [0.5, 2.0], grid=grid, max_refine=6)
    assert _verdict(cl.v4_never_below_1_check(grid, curve)) == "PASS"


def test_v6_equals_v1_and_a_different_set_does_not(small_grids):
    assert _verdict(cl.v6_equals_v1_check(small_grids["V6"], small_grids["V1"])) == "PASS"
    assert cl.v6_equals_v1_check(small_grids["V2"], small_grids["V1"]).verdict == "FAIL"


def test_lemma3_corollary1_and_theorem1(dens5, small_grids):
    levels = {"V5": dens5.levels}
    lem, cor = cl.lemma3_corollary1_checks(levels, small_grids, epsilon=1.0)
    assert (_verdict(lem), _verdict(cor)) == ("PASS", "PASS")
    gap, prof = cl.theorem1_checks(levels, epsilons=(0.5, 1.0, 2.0))
    assert (_verdict(gap), _verdict(prof)) == ("PASS", "PASS")
    assert cl.theorem1_checks(levels, epsilons=(1.0,), gap_tol=-1.0)[0].verdict == "FAIL"  # a wrong bound flips it


def test_mc_abs_error_and_a_wrong_bound(dens5):
    res = cl.mc_abs_error_check({"V5": dens5}, n_samples=20_000, rng=11, baseline_rng=12)
    assert _verdict(res.check) == "PASS" and res.check.confidence == pytest.approx(1 - 9e-4)  # the historical default
    assert res.check.bound == pytest.approx(stats.norm.isf(9e-4 / (2 * 3)))  # two-sided, Bonferroni over V5 + 2 baselines
    assert [r.config for r in res.rows] == ["V5"] and res.rows[0].radius_star == 14.6
    assert abs(res.rows[0].z) <= res.check.statistic <= res.check.bound
    loose = cl.mc_abs_error_check({"V5": dens5}, n_samples=20_000, rng=11, baseline_rng=12, level=0.9).check
    assert loose.statistic == res.check.statistic and loose.bound < loose.statistic and loose.verdict == "FAIL"
    other = LevelSetDensity(levels=dens5.levels, epsilon=2.0)
    with pytest.raises(ValueError, match="one epsilon"):
        cl.mc_abs_error_check({"a": dens5, "b": other}, n_samples=100, rng=0, baseline_rng=0)


def test_sampler_ks_and_the_printed_support_negative_control(dens5):
    g = np.random.default_rng(3)
    ok = cl.sampler_ks_check(dens5, n_samples=20_000, rng=g)
    bad = cl.sampler_ks_printed_support0_check(1.0, n_samples=20_000, rng=g)
    assert _verdict(ok) == "PASS" and ok.confidence == pytest.approx(0.999)
    assert bad.expected == "FAIL" and _verdict(bad) == "FAIL"


def test_staircase_below_laplace_convergence_and_truncation(small_grids):
    assert _verdict(cl.staircase_below_laplace_check(np.geomspace(0.1, 5.0, 6))) == "PASS"
    assert _verdict(cl.convergence_check(small_grids)) == "PASS"
    assert cl.convergence_check(small_grids, max_steps=5).verdict == "FAIL"
    assert _verdict(cl.truncation_bound_check()) == "PASS"


def _curves(rates: dict[str, list[float]], eps=(0.3, 1.0, 5.0)) -> dict[str, list[RadiusSearch]]:
    return {k: [RadiusSearch(e, 1.0, 1.0, r, 1.0, r, 1) for e, r in zip(eps, v)] for k, v in rates.items()}


def test_group_orderings_logic():
    good = {"V1": [2.0, 0.5, 0.5], "V2": [0.1, 0.6, 0.6], "V3": [0.1, 0.7, 0.7], "V4": [0.1, 1.0, 1.0],
            "V5": [0.1, 0.9, 0.9], "V6": [0.1, 0.8, 0.8], "V7": [0.1, 0.7, 0.7]}
    g1, g2 = cl.group_ordering_checks(_curves(good))  # ε = 0.3 (below min_epsilon) is ignored
    assert (_verdict(g1), _verdict(g2)) == ("PASS", "PASS")
    swapped = dict(good, V2=[0.1, 0.8, 0.6], V6=[0.1, 0.95, 0.8])
    g1, g2 = cl.group_ordering_checks(_curves(swapped))
    assert (g1.verdict, g2.verdict) == ("FAIL", "FAIL")


def test_never_worse_than_staircase_is_refuted_at_small_epsilon():
    assert cl.never_worse_than_staircase_check(_curves({"V1": [0.9, 0.5, 0.5]})).verdict == "PASS"
    curve = optimal_radius(cl.CONFIGURATIONS["V1"], [0.3], n_grid=7, max_refine=4)
    c = cl.never_worse_than_staircase_check({"V1": curve})
    assert c.expected == "FAIL" and _verdict(c) == "FAIL"


def test_study_helpers(small_grids):
    curves = cl.min_rate_curves({"V5": V5}, [0.5, 2.0], {"V5": small_grids["V5"]}, max_refine=4)
    rows = cl.min_rate_rows(curves)
    assert [(r.config, r.epsilon) for r in rows] == [("V5", 0.5), ("V5", 2.0)]
    assert all(r.rate_at_least_1 == (r.rate >= 1.0) for r in rows)
    r_hit = cl.radius_star(V5, 2.0, curve=curves["V5"], grid=small_grids["V5"], max_refine=4)
    assert r_hit == curves["V5"][1].radius  # taken from the curve, no new search
    dens = cl.densities_at_radius_star({"V5": V5}, 2.0, curves=curves, grids={"V5": small_grids["V5"]}, max_refine=4)
    assert dens["V5"].levels.radius == r_hit and dens["V5"].epsilon == 2.0


# ----------------------------------------------------------------------------- closed-form oracles
def test_convergence_steps_equal_the_closed_form_and_a_wrong_count_is_caught(monkeypatch):
    configs = {k: cl.CONFIGURATIONS[k] for k in ("V1", "V4", "V5")}
    res = cl.convergence_steps_checks(configs, [1e-3, 0.1, 0.5], truncation_radii=(0.2,))
    assert [c.id for c in res.checks] == ["convergence-steps-V1", "convergence-steps-V4", "convergence-steps-V5",
                                          "convergence-steps-counting"]
    assert all(_verdict(c) == "PASS" for c in res.checks)
    v5 = {r.rel_radius: r.steps_oracle for r in res.rows if r.config == "V5"}
    assert v5 == {1e-3: 101, 0.1: 81, 0.5: 1}  # V5 = [0,1]∪[100,101]: ⌈((200−2−4δ)/1 + 1)/2⌉ + 1
    assert cl.convergence_step_oracle(np.array([[1.0, 1.0]]), 0.3) is None  # the counting query never converges
    # an oracle off by one step on every δ is rejected
    monkeypatch.setattr(cl, "convergence_step_oracle", lambda V, r, _f=cl.convergence_step_oracle: _f(V, r) + 1)
    bad = cl.convergence_steps_checks({"V5": V5}, [1e-3, 0.1], truncation_radii=())
    assert bad.checks[0].verdict == "FAIL" and bad.checks[0].statistic == 2


def test_closed_form_abs_error_cases_and_a_wrong_formula_is_rejected():
    res = cl.closed_form_abs_error_checks([0.5, 2.0], gammas=(0.3,), counting_radii=(0.6,), truncated_radii=(0.2, 0.02))
    assert [c.id for c in res.checks] == ["EZ-V4-staircase", "EZ-counting-converged", "EZ-counting-truncated"]
    assert all(_verdict(c) == "PASS" for c in res.checks)
    for e in (0.5, 2.0):  # at γ* the band formula is the staircase value Δf e^{ε/2}/(e^ε − 1)
        g = 1 / (1 + np.exp(e / 2))
        assert cl.staircase_abs_error_closed_form(g, e) == pytest.approx(np.exp(e / 2) / np.expm1(e), rel=1e-14)
    # the Laplace value Δf/ε in place of the staircase closed form is far outside the tolerance
    row = cl._abs_error_row("V4 wrong", cl.CONFIGURATIONS["V4"], 1.0, 300.0, 1001.0 / 1.0)
    assert cl._worst_ratio_check("x", "wrong formula", [row]).verdict == "FAIL"
    assert row.abs_diff / row.tolerance > 1e6


def test_geometric_limit_and_a_wrong_limit_is_rejected(monkeypatch):
    c = cl.geometric_limit_check(1.0, radii=(0.3, 0.03, 0.003))
    assert _verdict(c) == "PASS" and c.statistic <= c.bound
    assert c.bound == pytest.approx(0.003 / 2 * np.tanh(0.5), rel=1e-6)
    with pytest.raises(ValueError, match="decrease"):
        cl.geometric_limit_check(1.0, radii=(0.03, 0.3))
    # the Laplace limit 1/ε instead of 1/sinh ε: the error no longer vanishes
    monkeypatch.setattr(cl.math, "sinh", lambda x: x)
    assert cl.geometric_limit_check(1.0, radii=(0.3, 0.03, 0.003)).verdict == "FAIL"
