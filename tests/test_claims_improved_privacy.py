"""dpkit.claims.improved_privacy at small sizes: Thm 2.13 PASSes, the printed Alg 9 constant FAILs, wrong budgets flip."""
from __future__ import annotations

import pytest

from dpkit.claims import improved_privacy as ip

N, D, R = 1000, 5, 6  # R = d + 1: the linear moments, whose corner change is maximal


@pytest.fixture(scope="module")
def runs():
    return ip.improved_runs(n=N, d=D, rs=[R], c=200, epsilon=1.0, delta=1e-3, rng=0)


def test_runs_and_ledger(runs):
    assert [(r.delta, r.constants) for r in runs] == [(0.0, "correct"), (0.0, "thesis"), (1e-3, "correct"), (1e-3, "thesis")]
    assert ip.ledger_check(runs, epsilon=1.0).verdict == "PASS"
    rows = ip.run_rows(runs)
    assert [r.algorithm for r in rows] == ["Alg 9 (I)", "Alg 9 (I)", "Alg 10 (II)", "Alg 10 (II)"]
    # the runs spent ε = 1: a claim of ε = 1/2 must fail
    assert ip.ledger_check(runs, epsilon=0.5).verdict == "FAIL"


def test_exact_losses(runs):
    res = ip.exact_losses(runs, n=N, d=D, epsilon=1.0, delta=1e-3)
    assert [(c.id, c.verdict) for c in res.checks] == [
        ("Thm 2.13 (Alg 9 moments)", "PASS"), ("Alg 9 moments, printed 3R/(nε)", "FAIL"),
        ("Thm 2.13 (Alg 10 moments)", "PASS"), ("Thm 2.13 (mean)", "PASS")]
    alg9 = res.rows[0]
    # discretised corners ±(1 − 1/N_grid): ‖Δb‖₁ = 2(R − 1)(1 − 1/N_grid)/n exactly
    grid = runs[0].result.params["N"]
    assert alg9.l1 == pytest.approx(2 * (R - 1) * (1 - 1 / grid) / N, rel=1e-12)
    assert alg9.eps_exact == pytest.approx(alg9.l1 / alg9.scale) and alg9.delta_exact is None
    assert "eps_exact" not in res.rows[2].as_row() and "delta_exact" in res.rows[2].as_row()


def test_exact_losses_fail_against_a_smaller_budget(runs):
    """The runs were calibrated for ε = 1; checked against ε = 1/2 their exact losses exceed the budget."""
    res = ip.exact_losses(runs, n=N, d=D, epsilon=0.5, delta=1e-3)
    assert res.checks[0].verdict == "FAIL" and res.checks[3].verdict == "FAIL"


def test_moment_audits(runs):
    res = ip.moment_audits(runs, n=N, d=D, R=R, epsilon=1.0, audit_samples=200_000, rng=0)
    ok, bad = res.checks
    assert (ok.verdict, bad.verdict, bad.expected) == ("PASS", "FAIL", "FAIL")
    assert ok.confidence == pytest.approx(1 - 1e-3)
    assert [r.constants for r in res.rows] == ["correct", "thesis"]


def test_moment_audits_need_the_alg9_runs(runs):
    with pytest.raises(ValueError, match="R = 7"):
        ip.moment_audits(runs, n=N, d=D, R=7, epsilon=1.0, audit_samples=1000, rng=0)
