"""Notebook 30_linear_queries in QUICK mode: every check consistent, the expected ids present."""
from __future__ import annotations

import pytest

EXPECTED_IDS = {
    "privacy-exact-level",
    "privacy-mc-ratio",
    "privacy-tight",
    "privacy-auditor",
    "V4-staircase-rate",
    "V4-never-below-1",
    "V4-staircase-pdf",
    "V6-equals-V1",
    "lemma3-monotone",
    "corollary1",
    "theorem1-lp-value",
    "theorem1-lp-profile",
    "mc-abs-error",
    "staircase-below-laplace",
    "sampler-ks",
    "sampler-ks-printed-support0",
    "convergence-2200",
    "truncation-bound",
    "group1-ordering",
    "group2-ordering",
    "claim-never-worse-than-staircase",
    *(f"convergence-steps-V{i}" for i in range(1, 8)),
    "convergence-steps-counting",
    "EZ-V4-staircase",
    "EZ-counting-converged",
    "EZ-counting-truncated",
    "EZ-geometric-limit",
}


@pytest.mark.notebook
def test_linear_queries_notebook_quick(run_notebook):
    m = run_notebook("30_linear_queries.ipynb", SEED=0)
    checks = {c["id"]: c for c in m["checks"]}
    assert EXPECTED_IDS <= set(checks)
    bad = {k: (c["verdict"], c["expected"]) for k, c in checks.items() if c["verdict"] != c["expected"]}
    assert not bad, bad
    assert m["all_consistent"] is True
    # the deliberately broken readings must be caught, the privacy checks must pass
    assert checks["sampler-ks-printed-support0"]["verdict"] == "FAIL"
    budget = m["false_alarm_budget"]  # privacy-auditor, mc-abs-error, sampler-ks share FALSE_ALARM (Bonferroni)
    assert budget["n_tests"] == 3 and budget["level"] == pytest.approx(m["params"]["FALSE_ALARM"] / 3, rel=1e-12)
    assert {r["id"]: r["attempts"] for r in budget["charged"]} == {"privacy-auditor": 2, "mc-abs-error": 1, "sampler-ks": 2}
    assert checks["claim-never-worse-than-staircase"]["verdict"] == "FAIL"
    for k in ("privacy-exact-level", "privacy-mc-ratio", "privacy-auditor", "convergence-2200"):
        assert checks[k]["verdict"] == "PASS", k
    assert checks["privacy-auditor"]["statistic"] <= 1.0
    rows = [r for r in m["table"] if "radius_star" in r and "rate" in r]
    assert {r["config"] for r in rows} == {f"V{i}" for i in range(1, 8)}
