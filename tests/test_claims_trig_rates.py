"""dpkit.claims.trig_rates at small sizes: claims PASS, the printed constants FAIL, broken bounds flip verdicts."""
from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest
from scipy import stats

from dpkit.claims import trig_rates as tr
from dpkit.queries.evaluate import answer_reference

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


# ----------------------------------------------------------------------------- exact grid-pair scan
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


# ----------------------------------------------------------------------------- the class supremum beside the rates
def _sup_runs(d: int, mechanism: str, sup: list[float], worst: list[float], lower: list[float],
              upper: bool = True) -> tuple[tr.RateRun, ...]:
    ns = [1000, 1000, 4000, 4000, 16000, 16000]
    return tuple(tr.RateRun(d=d, n=n, mechanism=mechanism, rep=i % 2, t=3, N=8, m=10, worst_error=w, lp_time=0.1, support=2,
                            basis=3, size_ok=True, sup_search=lo, sup_lower=lo, sup_upper=s if upper else None,
                            sup_closed=True if upper else None, sup_boxes=1 if upper else None)
                 for i, (n, s, w, lo) in enumerate(zip(ns, sup, worst, lower)))


def test_supremum_checks_fit_the_certified_upper_end_not_the_workload():
    """The rate-sup-* statistic is slope − t·se of log(sup_upper) on log n: the certified upper end of the class supremum,
    neither the workload's worst error (here flat: it would FAIL) nor the interval's lower end (a different slope)."""
    ns = np.array([1000, 1000, 4000, 4000, 16000, 16000], dtype=float)
    sup = list(2e-2 * (ns / 1e3) ** -1.0 * np.array([1.02, 0.98, 1.01, 0.99, 1.03, 0.97]))
    worst = list(1e-3 * (ns / 1e3) ** -0.05 * np.array([1.1, 0.9, 1.0, 1.05, 0.95, 1.0]))
    lower = [s * f for s, f in zip(sup, [0.5, 0.5, 0.9, 0.9, 1.0, 1.0])]
    runs = _sup_runs(1, "I", sup, worst, lower)
    fit = stats.linregress(np.log(ns), np.log(sup))
    (f,) = tr.supremum_fits(runs, K=4.0)
    assert (f.slope, f.se, f.n_points, f.claimed) == (fit.slope, fit.stderr, 6, tr.claimed_exponent(1, "I", 4.0))
    (c,) = tr.supremum_rate_checks((f,), gamma=1e-3)
    assert c.id == "rate-sup-I-d1" and c.verdict == "PASS" and c.confidence == 1 - 1e-3
    assert c.statistic == fit.slope - stats.t.ppf(1 - 1e-3, df=4) * fit.stderr
    (on_workload,) = tr.error_rate_checks(tr.slope_fits(runs, K=4.0)[:1], gamma=1e-3)
    assert on_workload.verdict == "FAIL"  # the same test on the flat workload error fails: the statistics differ
    lo_fit = stats.linregress(np.log(ns), np.log(lower))
    assert abs(lo_fit.slope - f.slope) > 0.1
    # d > 2 (no certified interval): the search's lower bound is the supremum
    (f3,) = tr.supremum_fits(_sup_runs(3, "I", sup, worst, lower, upper=False), K=4.0)
    assert f3.slope == lo_fit.slope and f3.claimed == tr.claimed_exponent(3, "I", 4.0)


def test_supremum_of_a_run_without_it_is_refused():
    (r,) = _sup_runs(1, "I", [1.0], [1.0], [1.0])[:1]
    with pytest.raises(ValueError, match="supremum_seed"):
        _ = replace(r, sup_lower=None, sup_upper=None).supremum


@pytest.mark.parametrize("d", [1, 2])
def test_certified_interval_contains_independent_lower_bounds(d):
    """The recorded interval of a release (centres in R^d) is closed, contains the search's own lower bound, and is
    above the lower bounds that independent searches (other seeds, over R^d and over the cube) prove."""
    from dpkit.mechanisms.trig.full_grid import TrigonometricMechanism
    from dpkit.queries.supremum import class_supremum

    g = np.random.default_rng(5)
    X = tr._data(2000, d, g)
    work = tr._workload(d, 10, 4, 2.0, g)
    res = TrigonometricMechanism(epsilon=1.0, K=4.0).release(X, rng=g)
    errors = tr._errors(work, res, answer_reference(work, X))
    f = tr._supremum_fields(X, res, 2.0, errors, work, np.random.default_rng(0))
    assert f["sup_closed"] and f["sup_search"] <= f["sup_lower"] <= f["sup_upper"]
    assert f["sup_upper"] - f["sup_lower"] <= tr.SUPREMUM_RTOL * f["sup_lower"] * (1 + 1e-9)
    assert f["sup_upper"] >= errors.max()  # a mixture's error is at most the worst single kernel's
    for seed, domain in ((1, "space"), (2, "space"), (3, "cube")):
        other = class_supremum(X, res.synthetic, 2.0, rng=seed, domain=domain, n_random_starts=1024, n_ascents=64)
        assert other.sup_abs - other.numerical_bound <= f["sup_upper"], (seed, domain)


def test_supremum_search_changes_no_other_number(runs):
    """rate_runs with supremum_seed: the same runs as without (its own streams), plus the sup_* fields."""
    with_sup = tr.rate_runs(**SMALL, rng=0, supremum_seed=0)
    assert len(with_sup) == len(runs)
    for a, b in zip(with_sup, runs):
        assert replace(a, lp_time=0.0, sup_search=None, sup_lower=None, sup_upper=None, sup_closed=None,
                       sup_boxes=None) == replace(b, lp_time=0.0)
        assert a.sup_closed and a.sup_lower <= a.sup_upper
    sentence = tr.supremum_ratio_sentence(with_sup)
    table = tr.supremum_table(with_sup)
    last = [r for r in table if r.n == max(x.n for x in table if (x.d, x.mechanism) == (r.d, r.mechanism))]
    assert len(last) == 3 and all(f"{r.ratio:.2g}×" in sentence for r in last)


def test_supremum_figure_draws_both_errors_and_the_rate(runs):
    import matplotlib.pyplot as plt

    from dpkit.outputs.figures.trig_rates import supremum_vs_n_figure

    fig = supremum_vs_n_figure(_sup_runs(1, "I", [1e-3, 1e-3, 5e-4, 5e-4, 2e-4, 2e-4], [5e-4] * 6, [9e-4] * 6), K=4.0)
    (ax,) = fig.axes
    assert len(ax.lines) == 3 and list(ax.lines[0].get_ydata()) == [1e-3, 5e-4, 2e-4]
    assert list(ax.lines[1].get_ydata()) == [5e-4] * 3 and ax.lines[0].get_marker() != ax.lines[1].get_marker()
    plt.close(fig)
