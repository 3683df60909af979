"""dpkit.claims.trig_rates at small sizes: claims PASS, the printed constants FAIL, broken bounds flip verdicts."""
from __future__ import annotations

import math
from dataclasses import replace

import pytest
from scipy import stats

from dpkit.claims import trig_rates as tr

SMALL = dict(ns_d1=[300, 1200, 4800], ns_d2=[300, 1200], reps=2, n_queries=8, J=4, epsilon=1.0, delta=1e-3, sigma=2.0)


@pytest.fixture(scope="module")
def runs():
    return tr.rate_runs(**SMALL, rng=0)


def test_rate_runs_cover_every_cell_and_are_reproducible(runs):
    assert len(runs) == 3 * 2 * 2 + 2 * 2  # d = 1: I and II; d = 2: I only
    assert {(r.d, r.mechanism) for r in runs} == {(1, "I"), (1, "II"), (2, "I")}
    again = tr.rate_runs(**SMALL, rng=tr.TrigStreams.from_seed(0))
    assert [r.worst_error for r in again] == [r.worst_error for r in runs]


def test_rate_claims_pass(runs):
    fits = tr.slope_fits(runs, K=4.0)
    checks = [*tr.error_rate_checks(fits), tr.lp_time_check(fits), tr.synthetic_size_check(runs), tr.vertex_support_check(runs)]
    assert [c.id for c in checks] == ["Thm 2.4 (2), d=1", "Thm 2.5 (2), d=1", "Thm 2.4 (2), d=2", "Thm 2.4 (3)", "Thm 2.4 (4)",
                                      "LP vertex support"]
    for c in checks:
        assert c.verdict == c.expected == "PASS", c
    assert checks[0].confidence == pytest.approx(1 - 1e-3)


def test_error_rate_check_flips_with_a_wrong_exponent(runs):
    """Claiming a decay far faster than the data show (n^{-20}) must FAIL.

    With the exact t test the d = 2 fit of these tiny runs (4 points, 2 degrees of freedom, t quantile
    22.3 at γ = 10⁻³) has lower confidence bound ≈ −10.6 on its slope, so the wrong exponent must lie
    beyond that (n^{-5} did only under the anti-conservative normal quantile)."""
    fits = tr.slope_fits(runs, K=4.0)
    wrong = tuple(replace(f, claimed=-20.0) if f.mechanism in ("I", "II") else f for f in fits)
    assert all(c.verdict == "FAIL" for c in tr.error_rate_checks(wrong))


def test_error_rate_check_uses_gamma():
    """A steeper-than-claimed slope with a large standard error passes only thanks to t_{1−γ, m−2}·se."""
    fit = tr.SlopeFit(d=1, mechanism="I", slope=-0.5, se=0.1, claimed=-0.6, n_points=12)
    assert tr.error_rate_checks((fit,), gamma=1e-3)[0].verdict == "PASS"  # −0.5 − t₁₀(0.999)·0.1 = −0.5 − 4.14·0.1 ≤ −0.6
    assert tr.error_rate_checks((fit,), gamma=0.4)[0].verdict == "FAIL"  # −0.5 − t₁₀(0.6)·0.1 = −0.5 − 0.26·0.1 > −0.6
    assert tr.error_rate_checks((fit,), gamma=1e-3)[0].statistic == pytest.approx(-0.5 - stats.t.ppf(0.999, 10) * 0.1, rel=1e-12)


def test_lp_time_and_support_checks_fail_when_violated(runs):
    fast = (tr.SlopeFit(d=1, mechanism="I (LP time)", slope=3.0, se=math.nan, claimed=1.0, n_points=9),)
    assert tr.lp_time_check(fast).verdict == "FAIL"
    with pytest.raises(ValueError, match="LP time"):
        tr.lp_time_check(())
    too_big = (replace(runs[0], support=runs[0].basis + 2),)
    assert tr.vertex_support_check(too_big).verdict == "FAIL"
    assert tr.synthetic_size_check((replace(runs[0], size_ok=False),)).verdict == "FAIL"


def test_moment_privacy_claim_and_printed_control():
    res = tr.moment_privacy(epsilon=1.0, K=4.0, n=1000)
    claim, control = res.checks
    assert (claim.id, claim.verdict) == ("Thm 2.4 (1)", "PASS")
    assert (control.id, control.verdict, control.expected) == ("Alg 4 printed Lap(t^d/(nε))", "FAIL", "FAIL")
    # the exact sensitivity never exceeds the bound 2(t^d − 1)/n; for d = 1 it exceeds the printed t^d/n
    for r in res.rows:
        assert r.exact_l1 <= r.bound_l1
        assert r.eps_exact == pytest.approx(r.exact_l1 / r.scale)
    (d1,) = {r.exact_l1 for r in res.rows if r.d == 1}
    assert d1 > 4 / 1000  # t = 4 at n = 1000
    assert control.statistic == max(r.eps_exact for r in res.rows if r.constants == "thesis") > 1.0
    assert claim.statistic == max(r.eps_exact for r in res.rows if r.constants == "correct") <= 1.0


def test_error_terms_are_reproducible_and_noise_dominates():
    kw = dict(n=1000, reps=2, n_queries=8, J=4, epsilon=1.0, sigma=2.0)
    a, b = tr.error_terms(**kw, rng=1), tr.error_terms(**kw, rng=1)
    assert a == b
    assert [t.variant for t in a][:3] == ["all sources", "no noise (ε = ∞)", "no noise, no sampling"]
    errs = {t.variant: t.median_worst_error for t in a}
    assert errs["no noise, no sampling"] <= errs["all sources"]


def test_figures_draw_from_the_results(runs):
    import matplotlib.pyplot as plt

    from dpkit.outputs.figures.trig_rates import error_terms_figure, error_vs_n_figure

    fig = error_vs_n_figure(runs, K=4.0)
    assert len(fig.axes) == 2 and len(fig.axes[0].lines) == 4  # d = 1: I and II, each with its claimed-rate guide
    terms = (tr.ErrorTerm("all sources", 1e-2), tr.ErrorTerm("no noise (ε = ∞)", 1e-3))
    fig2 = error_terms_figure(terms)
    assert len(fig2.axes[0].patches) == 2
    plt.close(fig)
    plt.close(fig2)


# ----------------------------------------------------------------------------- exact grid-pair scan (issue #17)
def test_sensitivity_scan_checks_and_a_wrong_value_is_rejected(monkeypatch):
    import itertools

    import numpy as np

    from dpkit.claims import trig_rates as tr
    from dpkit.mechanisms.trig.basis import basis_indices, evaluate_basis

    res = tr.sensitivity_scan([(1, 3, 2, None), (1, 6, 1100, None), (2, 3, 8, 5)], n=10)
    ids = {c.id: c for c in res.checks}
    assert all(c.consistent for c in res.checks), [(c.id, c.verdict, c.expected) for c in res.checks]
    assert ids["trig-scan-printed-constant"].verdict == "FAIL" and ids["trig-scan-printed-constant"].statistic > 1.1
    # the scan against a brute force through dpkit's own basis evaluation
    idx = basis_indices(3, 2, 5)
    a = (2.0 * np.arange(8) + 1.0 - 8) / 8
    phi = evaluate_basis(np.array(list(itertools.product(a, repeat=2))), idx)[:, 1:]
    brute = max(np.abs(p - q).sum() for p in phi for q in phi) / 10
    assert res.rows[2].scan_l1 == pytest.approx(brute, abs=1e-13)
    # a switch that returns the printed R/n (under-stating the scan) is rejected
    from dpkit.mechanisms.trig import moments

    monkeypatch.setattr(moments, "grid_sensitivity",
                        lambda idx, N, n: moments.GridSensitivity(l1=idx.shape[0] / n, l2=idx.shape[0] / n, method="exact"))
    bad = tr.sensitivity_scan([(1, 4, 16, None)], n=10)
    assert {c.id: c.verdict for c in bad.checks}["trig-switch-equals-scan"] == "FAIL"
