"""dpkit.claims.consistency: every claim of notebook 35 on small sizes (seconds), with the verdict the theory predicts.

Wall-time comparisons (Sec. 8.2 speed claims) depend on the machine, so only their presence is tested
here; the exact identities, the convergence claims and the negative controls are asserted, and
broken inputs (an identity in place of Boosting or of the closed form, too few cycles) must flip them.
"""
from __future__ import annotations

import math

import numpy as np
import pytest

from dpkit.claims import consistency as cc

SUITE_IDS = [
    "prop1", "prop2", "prop3-idempotent", "prop3-norm-dist01", "thm1-solver-gap", "thm1-feasibility", "thm2-idempotence",
    "cor1-fixed-point", "thm3-identity", "thm4-pythagoras", "thm5-inner", "sec6-rel-dist", "sec6-fejer-increase",
    "sec6-telescope", "sec6-inner-drift", "thm1-objective",
]
TIMING_IDS = {"fig3-alg1-slower-small-T", "fig3-alg1-faster-large-T", "fig3-splu-beats-alg1", "fig3-closed-form-beats-alg1"}


def _consistent(checks):
    bad = [(c.id, c.verdict, c.expected, c.statistic, c.bound) for c in checks if not c.consistent]
    assert not bad, bad


def test_random_system_checks_pass_and_a_wrong_bound_flips_them():
    res = cc.random_system_checks(4, rng=0)
    assert [c.id for c in res.checks] == SUITE_IDS
    _consistent(res.checks)
    assert all(c.verdict == "PASS" for c in res.checks)
    assert res.sec6_converged_fraction == 1.0 and res.sec6_max_rel_dist == res.checks[11].statistic
    assert "hence 1e-6" in res.checks[11].note and res.checks[11].bound == 1e-6
    broken = cc.random_system_checks(4, rng=0, tol=-1.0, objective_tol=math.inf)  # residuals are ≥ 0, margins finite
    assert [c.verdict for c in broken.checks if c.id != "sec6-rel-dist"] == ["FAIL"] * 15


def test_boosting_equals_eq7_and_no_boosting_does_not(monkeypatch):
    c = cc.boosting_eq7_check(rng=0, cases=((2, 8), (3, 9), (2, 7)))
    assert c.id == "boosting-eq7" and c.verdict == "PASS" and c.statistic < 1e-9
    monkeypatch.setattr(cc, "boost", lambda X, k: X)  # the noisy input is not consistent
    assert cc.boosting_eq7_check(rng=0, cases=((2, 8),)).verdict == "FAIL"


def test_closed_form_equals_the_exact_projection_and_a_broken_one_does_not(monkeypatch):
    checks = cc.closed_form_checks(epsilon=1.0, rng=0, cases=((2, 8), (3, 7)))
    assert [c.id for c in checks] == ["closed-form-vs-splu", "closed-form-vs-pinv", "closed-form-vs-lsqr"]
    assert all(c.verdict == "PASS" for c in checks) and checks[2].bound == 1e-8
    assert checks[0].note.endswith("in {(2,8),(3,7)}")
    monkeypatch.setattr(cc, "closed_form", lambda X, B, k: X)
    assert all(c.verdict == "FAIL" for c in cc.closed_form_checks(epsilon=1.0, rng=0, cases=((2, 8),)))


def test_convergence_claims_and_too_few_cycles():
    res = cc.convergence_checks([32, 64], n_iter=100, repeats=1, epsilon=1.0, rng=0)
    _consistent(res.checks)
    by = {c.id: c for c in res.checks}
    assert by["fixed-100-reaches-optimum"].expected == "FAIL" and by["fixed-100-reaches-optimum"].verdict == "FAIL"
    assert [r.T for r in res.traces] == [32, 64] and res.traces[0].mse.shape == (101,)
    assert res.rows[1].mse_50 == res.traces[1].mse[50] and res.rows[0].dist_inf_last == res.traces[0].dist_inf[-1]
    short = {c.id: c for c in cc.convergence_checks([32], n_iter=2, repeats=1, epsilon=1.0, rng=0).checks}
    assert short["fig1-near-zero-by-50"].verdict == "FAIL" and short["fig2-converges-to-optimum"].verdict == "FAIL"
    assert short["fixed-100-reaches-optimum"].claim.startswith("2 cycles reach")


@pytest.fixture(scope="module")
def fig3():
    return cc.fig3_checks([32, 64], tol=1e-6, epsilon=1.0, pinv_max_T=64, repeats=1, blas_threads=1, rng=0)


def test_fig3_claims(fig3):
    ids = [c.id for c in fig3.checks]
    assert set(ids) >= TIMING_IDS and len(ids) == 7
    _consistent([c for c in fig3.checks if c.id not in TIMING_IDS])  # wall times depend on the machine
    assert all(math.isfinite(c.statistic) and c.statistic > 0 for c in fig3.checks if c.id in TIMING_IDS)
    by = {c.id: c for c in fig3.checks}
    assert by["fig3-stop-rule-accuracy"].verdict == "FAIL" and by["fig3-iterations-bounded"].verdict == "FAIL"
    assert by["fig3-accuracy-parity"].verdict == "PASS"
    assert fig3.ratios.general_1024_extrapolated and fig3.ratios.alg1_at_T == 64
    assert set(fig3.ratios.general_over_alg1) == {32, 64}
    assert {(r.T, r.method) for r in fig3.rows} == {(T, m) for T in (32, 64) for m in cc.FIG3_METHODS}
    with pytest.raises(ValueError, match="missing \\['splu'\\]"):
        cc.fig3_checks([8], tol=1e-6, epsilon=1.0, pinv_max_T=8, repeats=1, blas_threads=1, rng=0,
                       methods=("algorithm1", "pinv", "closed-form"))


def test_fig4_claims(fig3):
    res = cc.fig4_checks([64, 128], tol=1e-6, epsilon=1.0, time_budget=30.0, blas_threads=1, rng=1, fig3_rows=fig3.rows)
    _consistent(res.checks)
    by = {c.id: c for c in res.checks}
    assert by["fig4-closed-form-exact-large-T"].verdict == "PASS"
    assert by["fig4-alg1-100-accuracy"].verdict == "FAIL"  # negative control: 100 cycles are far from x* at T = 128
    assert by["fig4-stop-rule-degrades"].verdict == "PASS"
    assert res.largest_T == {m: 128 for m in cc.FIG4_METHODS}
    assert np.all([r.T in (64, 128) for r in res.rows])


# ----------------------------------------------------------------------------- exact contraction factor
def test_contraction_exact_factor_and_a_wrong_factor_is_rejected():
    from dpkit.claims import consistency as cc

    res = cc.contraction_checks([(4, 2), (6, 2), (4, 3)], n_iter=300, epsilon=1.0, rng=0)
    ids = {c.id: c for c in res.checks}
    assert set(ids) == {"contraction-closed-form", "contraction-observed", "contraction-spec-2T-1",
                        "contraction-spec-2T-1-padded"}
    assert all(c.consistent for c in res.checks), [(c.id, c.verdict, c.expected) for c in res.checks]
    assert ids["contraction-spec-2T-1-padded"].verdict == "FAIL"
    r4 = res.rows[0]
    assert r4.factor_exact == pytest.approx(1 - 1 / 7, abs=1e-12) and r4.fixed_dim == 4 * 3  # leaves free in null(B)
    assert r4.rho_observed <= r4.factor_exact + r4.rounding
    # the printed 1 − 1/(2T − 1) as the factor on a padded tree (T = 6: 7 real days in 8 leaves) is rejected
    bad = cc.contraction_checks([(6, 2)], n_iter=300, epsilon=1.0, rng=0, factor_formula=lambda tr: 1 - 1 / (2 * tr.T - 1))
    assert {c.id: c.verdict for c in bad.checks}["contraction-observed"] == "FAIL"
    assert {c.id: c.verdict for c in bad.checks}["contraction-closed-form"] == "FAIL"
