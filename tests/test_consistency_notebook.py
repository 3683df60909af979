"""notebooks/35_consistency.ipynb in QUICK mode: every check's verdict matches its expectation."""
from __future__ import annotations

import pytest


@pytest.mark.notebook
def test_consistency_notebook_quick(run_notebook):
    m = run_notebook("35_consistency.ipynb")
    ids = {c["id"]: c for c in m["checks"]}
    bad = [(c["id"], c["verdict"], c["expected"], c["statistic"]) for c in m["checks"] if c["verdict"] != c["expected"]]
    assert m["all_consistent"], bad
    for cid in (
        "prop1", "prop2", "prop3-idempotent", "prop3-norm-dist01", "thm1-solver-gap", "thm1-objective", "thm2-idempotence",
        "cor1-fixed-point", "thm3-identity", "thm4-pythagoras", "thm5-inner", "sec6-rel-dist", "sec6-fejer-increase",
        "sec6-telescope", "sec6-inner-drift", "boosting-eq7", "closed-form-vs-splu", "closed-form-vs-pinv",
        "closed-form-vs-lsqr", "fig1-monotone", "fig2-converges-to-optimum", "fig3-stop-rule-accuracy",
        "fig3-splu-beats-alg1", "fig4-closed-form-exact-large-T", "contraction-closed-form", "contraction-observed",
        "contraction-spec-2T-1",
    ):
        assert cid in ids, cid
    # the deliberately false readings are caught
    assert ids["fixed-100-reaches-optimum"]["expected"] == "FAIL"
    assert ids["fig3-iterations-bounded"]["expected"] == "FAIL"
    assert ids["contraction-spec-2T-1-padded"]["verdict"] == "FAIL"
    assert m["ledger"]["entries"][0]["neighbouring"] == "add-remove"
    figs = {r["figure"] for r in m["table"]}
    assert {"fig1-2", "fig3", "fig3-ratios", "fig4", "contraction"} <= figs
