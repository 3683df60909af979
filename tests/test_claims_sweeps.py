"""The sweep claims of Figs 3.1/3.2 as budgeted statistical checks: they pass on data that satisfy the claim,
fail on data that refute it by a wide margin (negative controls), and cannot fail on too little data."""
from __future__ import annotations

import numpy as np
import pytest

from dpkit.claims.sweeps import interior_optimum, no_clear_trend, paired_errors
from dpkit.evaluation.verdicts import FalseAlarmBudget
from dpkit.experiments.records import ReleaseRecord

BUDGET = FalseAlarmBudget(1e-2, n_tests=1)


def _results(E: np.ndarray, values) -> dict:
    """Paired records: E[i, r] is value i's worst error in repetition r."""
    def rec(v, r, e):
        return ReleaseRecord(rep=r, method="m", privacy="ε-DP", sigma=4.0, abs=float(e), rel=0.0, time_s=0.0, timings={},
                         support_size=1, eps_spent=1.0, delta_spent=0.0, error_bound=0.0, params={}, ledger={})
    return {v: [rec(v, r, e) for r, e in enumerate(row)] for v, row in zip(values, E)}


VALUES = [0.5, 1.0, 2.0, 5.0, 10.0, 25.0]


def test_paired_errors_need_the_same_repetitions():
    res = _results(np.ones((3, 4)), [1, 2, 3])
    res[2] = res[2][:3]
    with pytest.raises(ValueError, match="same repetitions"):
        paired_errors(res)


def test_interior_optimum_passes_on_a_u_shape_and_is_refuted_by_a_monotone_curve():
    rng = np.random.default_rng(0)
    workload = rng.normal(0, 0.01, size=10)  # common random numbers: one shift per repetition, shared by all values
    u = np.array([0.06, 0.055, 0.05, 0.052, 0.056, 0.06])[:, None] + workload + rng.normal(0, 1e-3, (6, 10))
    c, best, interior = interior_optimum(_results(u, VALUES), budget=BUDGET)
    assert c.verdict == "PASS" and interior and best == 2.0 and c.confidence == BUDGET.confidence
    # negative control: the error grows with κ, so the smallest κ beats every interior value in every repetition
    mono = np.linspace(0.05, 0.07, 6)[:, None] + workload + rng.normal(0, 1e-4, (6, 10))
    c, best, interior = interior_optimum(_results(mono, VALUES), budget=BUDGET)
    assert c.verdict == "FAIL" and not interior and best == 0.5
    assert c.statistic == pytest.approx(2 * 2.0 ** -10) and c.statistic < BUDGET.level / 5  # by a wide margin


def test_interior_optimum_cannot_be_refuted_by_two_repetitions():
    """The smallest p-value with 2 repetitions is 2·2⁻² = 0.5: the notebook does not add the check in QUICK mode."""
    mono = np.linspace(0.05, 0.07, 3)[:, None] + np.zeros((3, 2))
    c, _, _ = interior_optimum(_results(mono, [1.0, 7.0, 25.0]), budget=BUDGET)
    assert c.statistic == 0.5 and c.verdict == "PASS"


def test_no_clear_trend_passes_on_noise_and_is_refuted_by_a_trend():
    rng = np.random.default_rng(1)
    values = [1, 2, 3, 5, 8, 12, 20, 30, 50]
    flat = 0.066 + rng.normal(0, 0.002, (9, 10))
    c, rho = no_clear_trend(_results(flat, values), budget=BUDGET)
    assert c.verdict == "PASS" and c.statistic > BUDGET.level and -1 <= rho <= 1
    # negative controls in both directions: a steady trend under the same noise
    for sign in (1, -1):
        trend = 0.066 + sign * np.linspace(0, 0.01, 9)[:, None] + rng.normal(0, 0.002, (9, 10))
        c, rho = no_clear_trend(_results(trend, values), budget=BUDGET)
        assert c.verdict == "FAIL" and c.statistic < BUDGET.level / 100 and np.sign(rho) == sign


def test_no_clear_trend_false_alarm_rate_within_the_level():
    """Under the claim (no difference between the values) the check fails at most at its level: 400 null data sets."""
    rng = np.random.default_rng(2)
    values = [1, 2, 3, 5, 8]
    fails = sum(no_clear_trend(_results(rng.normal(0, 1, (5, 10)), values), budget=BUDGET)[0].verdict == "FAIL"
                for _ in range(400))
    # Binomial(400, ≤ 0.01): P(≥ 12) < 0.001
    assert fails < 12, fails
