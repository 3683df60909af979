"""The direct-answering checks of notebook 40 under an explicit false-alarm budget (dpkit.claims.baselines).

The tail bounds are proven (Chernoff, Gaussian concentration); the Monte-Carlo tests only confirm that they
are not violated at a coarse level, and the negative controls (a noise scale 1.5× the stated one) must fail
at the notebook's level by a wide margin.
"""
from __future__ import annotations

import math

import numpy as np
import pytest

from dpkit.claims.baselines import (
    baseline_budget,
    baseline_checks,
    gaussian_max_mean_deviation_bound,
    laplace_max_mean_deviation_bound,
)
from dpkit.evaluation.verdicts import FalseAlarmBudget
from dpkit.experiments.records import ReleaseRecord


def _max_exp(rng, q, size):
    """Max of q iid Exp(1) by inversion of its CDF (1 − e^{−x})^q."""
    return -np.log1p(-rng.random(size) ** (1.0 / q))


def test_laplace_bound_holds_by_simulation():
    rng = np.random.default_rng(0)
    q, n, level = 1000, 4, 0.1
    t = laplace_max_mean_deviation_bound([q] * n, level)
    h = math.fsum(1.0 / k for k in range(1, q + 1))
    s = _max_exp(rng, q, (20_000, n)).mean(axis=1) - h
    assert np.mean(np.abs(s) >= t) <= level
    # the bound is a tail bound, not a vacuous one: within 3× the simulated (1 − level) quantile
    assert t <= 3.0 * np.quantile(np.abs(s), 1.0 - level)


def test_gaussian_bound_holds_by_simulation():
    from dpkit.experiments.baselines import gaussian_abs_max_mean

    rng = np.random.default_rng(1)
    q, n, level = 200, 4, 0.1
    t = gaussian_max_mean_deviation_bound(n, level)
    m = np.abs(rng.standard_normal((5_000, n, q))).max(axis=2).mean(axis=1) - gaussian_abs_max_mean(q)
    assert np.mean(np.abs(m) >= t) <= level
    assert math.isclose(gaussian_max_mean_deviation_bound(1, 5e-4), math.sqrt(2 * math.log(4000)))


def test_laplace_bound_shrinks_with_runs_and_grows_with_confidence():
    b = [laplace_max_mean_deviation_bound([10_000] * n, 5e-4) for n in (1, 4, 16)]
    assert b[0] > b[1] > b[2]
    assert laplace_max_mean_deviation_bound([10_000] * 4, 5e-6) > b[1]


@pytest.mark.parametrize("bad", [dict(queries=[], level=0.1), dict(queries=[0], level=0.1),
                                 dict(queries=[10], level=0.0), dict(queries=[10], level=1.0)])
def test_laplace_bound_rejects_bad_input(bad):
    with pytest.raises(ValueError, match="queries|level"):
        laplace_max_mean_deviation_bound(**bad)


def _records(noise, scale_factor, n, q, rng):
    """Direct-answering run records whose worst errors are the worst of q noise draws at scale_factor × the
    stated scale (1: a correct implementation)."""
    b = 0.01
    name = "direct-laplace_I" if noise == "laplace_I" else "direct-gaussian"
    if noise == "laplace_I":
        z = _max_exp(rng, q, n)
    else:
        z = np.abs(rng.standard_normal((n, q))).max(axis=1)
    return [ReleaseRecord(rep=i, method=name, privacy="ε-DP", sigma=4.0, abs=float(scale_factor * b * z[i]), rel=0.0,
                      time_s=0.0, timings={}, support_size=0, eps_spent=1.0, delta_spent=0.0, error_bound=0.0,
                      params={"epsilon": 1.0, "delta": 0.0, "n_queries": q, "scale_mean": b}, ledger={})
            for i in range(n)]


@pytest.mark.parametrize("noise", ["laplace_I", "gaussian"])
def test_direct_checks_pass_when_correct_and_fail_on_a_wrong_scale(noise):
    rng = np.random.default_rng(2)
    recs = _records(noise, 1.0, 15, 10_000, rng)
    budget = baseline_budget([r.method for r in recs], 1e-3)
    assert budget.n_tests == 1 and budget.level == 1e-3
    (c,) = [c for c in baseline_checks(recs, [], budget=budget) if c.id == f"direct-{noise}-theory"]
    assert c.verdict == "PASS" and c.confidence == budget.confidence
    assert budget.record([c])["bound"] <= 1e-3
    wrong = _records(noise, 1.5, 15, 10_000, np.random.default_rng(3))  # noise 1.5× the stated scale
    (w,) = [c for c in baseline_checks(wrong, [], budget=budget) if c.id == f"direct-{noise}-theory"]
    assert w.verdict == "FAIL" and w.statistic > 1.5 * w.bound  # by a wide margin


def test_direct_checks_need_a_budget():
    recs = _records("gaussian", 1.0, 3, 100, np.random.default_rng(4))
    with pytest.raises(ValueError, match="budget is required"):
        baseline_checks(recs, [])
    assert baseline_budget(["trig-I", "mst"], 1e-3) is None
    two = baseline_budget(["direct-laplace_I", "direct-gaussian", "trig-II"], 1e-3)
    assert isinstance(two, FalseAlarmBudget) and two.n_tests == 2 and two.level == 5e-4
