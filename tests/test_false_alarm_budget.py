"""The false-alarm budget (Bonferroni split, record) and the retry rule of :mod:`dpkit.evaluation.verdicts`."""
from __future__ import annotations

import pytest

from dpkit.evaluation.oracles import clopper_pearson
from dpkit.evaluation.verdicts import Check, FalseAlarmBudget, check, retry_once, with_retry


def _stat(id: str, p: float, level: float, expected: str = "PASS", attempts: int = 1) -> Check:
    c = check(id, "p-value ≥ level", p, level, relation=">=", confidence=1 - level, expected=expected)
    return with_retry(c, None) if attempts == 2 else c


def test_split_is_bonferroni() -> None:
    b = FalseAlarmBudget(1e-3, n_tests=8)
    assert b.level == pytest.approx(1.25e-4, rel=1e-15)
    assert b.confidence == pytest.approx(1 - 1.25e-4, rel=1e-15)
    assert b.level * b.n_tests == pytest.approx(b.total, rel=1e-15)


@pytest.mark.parametrize("total, n", [(0.0, 1), (1.0, 1), (-1e-3, 2), (1e-3, 0), (1e-3, 2.0), (1e-3, True)])
def test_budget_refuses_bad_parameters(total: float, n: int) -> None:
    with pytest.raises(ValueError, match="FALSE_ALARM|n_tests"):
        FalseAlarmBudget(total, n_tests=n)


def test_record_states_level_and_level_squared_for_retried_checks() -> None:
    b = FalseAlarmBudget(1e-3, n_tests=2)
    checks = [
        _stat("single", 0.5, b.level),
        _stat("retried", 0.5, b.level, attempts=2),
        _stat("control", 1e-30, b.level, expected="FAIL"),
        check("exact", "identity", 0.0, 1e-9),  # not charged
    ]
    r = b.record(checks)
    assert r["method"] == "bonferroni" and r["n_tests"] == 2 and r["level"] == b.level
    by_id = {row["id"]: row for row in r["charged"]}
    assert set(by_id) == {"single", "retried"}
    assert by_id["single"]["false_alarm"] == pytest.approx(5e-4, rel=1e-15)
    assert by_id["retried"]["false_alarm"] == pytest.approx(2.5e-7, rel=1e-15)
    assert r["bound"] == pytest.approx(5e-4 + 2.5e-7, rel=1e-15) and r["bound"] <= r["total"]
    assert [c["id"] for c in r["controls"]] == ["control"]


def test_record_refuses_an_uncharged_check_or_another_level() -> None:
    b = FalseAlarmBudget(1e-3, n_tests=1)
    with pytest.raises(ValueError, match="n_tests=1"):
        b.record([_stat("a", 0.5, b.level), _stat("b", 0.5, b.level)])
    with pytest.raises(ValueError, match="confidence = 1 − level"):
        b.record([_stat("a", 0.5, 2e-3)])
    with pytest.raises(ValueError, match="confidence = 1 − level"):  # a control at another level
        b.record([_stat("a", 0.5, b.level), _stat("c", 0.0, 2e-3, expected="FAIL")])


class _Scripted:
    """An attempt that returns scripted p-values in order and counts its calls."""

    def __init__(self, *ps: float, expected: str = "PASS") -> None:
        self.ps, self.calls, self.expected = list(ps), 0, expected

    def __call__(self, g) -> Check:
        p = self.ps[self.calls]
        self.calls += 1
        return _stat("t", p, 0.01, expected=self.expected)


@pytest.mark.parametrize("ps, verdict, calls", [((0.5,), "PASS", 1), ((0.001, 0.5), "PASS", 2), ((0.001, 0.002), "FAIL", 2)])
def test_retry_rule_fails_only_if_both_attempts_fail(ps: tuple[float, ...], verdict: str, calls: int) -> None:
    attempt = _Scripted(*ps)
    c = retry_once(attempt, 0)
    assert (c.verdict, attempt.calls, c.attempts) == (verdict, calls, 2)
    assert c.statistic == ps[0]  # the first attempt's statistic is what the run reports
    assert c.retry_statistic == (ps[1] if calls == 2 else None)


def test_negative_controls_are_never_retried() -> None:
    attempt = _Scripted(0.001, 0.5, expected="FAIL")
    c = retry_once(attempt, 0)
    assert (c.verdict, attempt.calls) == ("FAIL", 1)


def test_first_attempt_sees_the_single_test_stream() -> None:
    """Same seed ⇒ the first attempt draws exactly what the single test would draw."""
    seen = []

    def attempt(g) -> Check:
        u = float(g.random())
        seen.append(u)
        return _stat("t", u, 0.5)

    single = attempt(__import__("numpy").random.default_rng(11))
    retried = retry_once(attempt, 11)
    assert retried.statistic == single.statistic


def test_retry_rule_false_alarm_rate_is_level_squared() -> None:
    """A correct check (uniform p-value) at level 0.1 fails under the rule with probability 0.01.

    20 000 independent runs; the two-sided Clopper–Pearson interval at confidence 1 − 10⁻⁶ must
    contain 0.01. A rule that re-used the first attempt's randomness would fail at rate 0.1, one that
    failed when *either* attempt fails at 0.19: both lie far outside the interval (≈ [0.0081, 0.0124]).
    """
    level, n = 0.1, 20_000

    def attempt(g) -> Check:
        return _stat("t", float(g.random()), level)

    fails = sum(retry_once(attempt, seed).verdict == "FAIL" for seed in range(n))
    lo, hi = clopper_pearson(fails, n, 1 - 1e-6)
    assert lo <= level**2 <= hi, (fails, lo, hi)
