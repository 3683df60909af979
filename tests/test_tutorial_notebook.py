"""The board tutorial (46_add_your_method) in QUICK mode: a method written into a scratch module is put on a small
stored board by board-add (ranked, with its paired comparison), and its under-noised copy is refuted by the audit
gate and not ranked; metrics.json holds both gate verdicts as checks.

The gate runs at board-add's defaults (confidence 0.95, fixed seed), so the correct entrant's PASS is a fixed outcome
of a test whose false-refutation probability is at most 5 %; the under-noised copy releases its histograms with a
quarter of the Gaussian noise: four times the calibrated shift-to-noise ratio, an exact ε of about 5.5 at δ = 10⁻³ where
ε = 1 is claimed (the auditor's bound at its sample size is about half of that).
"""
from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd
import pytest

from dpkit.board.add import BoardAddResult, BoardPlan, GateOutcome
from dpkit.board.records import read_records
from dpkit.claims.board import entrant_rows, tutorial_checks

PLAN = BoardPlan(datasets=("WDBC",), sigmas=(2.0,), reps=4, seed=0, n_queries=300, J=10, epsilon=1.0, delta=1e-3)


def _result(name, epsilon_lb, *, ranks=None):
    record = {"name": name, "epsilon_lb": epsilon_lb, "epsilon": 1.0, "delta": 1e-3, "confidence": 0.95,
              "probe": "measure", "pair": "replace-one: opposite corners", "n_samples": 4000, "epsilon_point": 1.0}
    return BoardAddResult(entrant=name, status="ranked" if ranks is not None else "refuted", plan=PLAN,
                          gate=GateOutcome(refuted=epsilon_lb > 1.0, detail="", record=record), ranks=ranks)


def test_tutorial_checks_compare_the_audited_lower_bound_with_the_claimed_epsilon():
    ranks = pd.DataFrame([{"dataset": "WDBC", "sigma": 2.0, "table": "(ε,δ)-DP", "rank": 2}])
    good, bad = _result("m:Good", 0.4, ranks=ranks), _result("m:Bad", 2.4)
    passed, refuted = tutorial_checks(good, bad)
    assert (passed.id, passed.verdict, passed.expected, passed.statistic, passed.bound) == (
        "gate-correct-entrant", "PASS", "PASS", 0.4, 1.0)
    assert (refuted.id, refuted.verdict, refuted.expected, refuted.statistic) == (
        "gate-under-noised-entrant", "FAIL", "FAIL", 2.4)
    assert passed.confidence == refuted.confidence == 0.95 and passed.consistent and refuted.consistent
    # a correct entrant refuted, or a broken one passing, is an inconsistent run
    wrong = tutorial_checks(_result("m:Good", 1.2, ranks=ranks), _result("m:Bad", 0.8))
    assert not any(c.consistent for c in wrong)
    assert entrant_rows(bad) == [{"entrant": "m:Bad", "status": "refuted", "gate_epsilon_lb": 2.4,
                                  "claimed_epsilon": 1.0, "rank": None}]
    assert [r["rank"] for r in entrant_rows(good)] == [2]


def test_tutorial_checks_refuse_a_board_add_without_the_gate():
    ungated = BoardAddResult(entrant="m:Good", status="ranked", plan=PLAN, gate=None, ranks=pd.DataFrame())
    with pytest.raises(ValueError, match="m:Good.*no audit-gate record"):
        tutorial_checks(ungated, _result("m:Bad", 2.4))
    partial = _result("m:Bad", 2.4)
    del partial.gate.record["confidence"]
    with pytest.raises(ValueError, match=r"m:Bad.*lacks \['confidence'\]"):
        tutorial_checks(_result("m:Good", 0.4), partial)
    assert math.isnan(entrant_rows(ungated)[0]["gate_epsilon_lb"])


def test_the_tutorial_method_uses_only_the_facade():
    """The method a user copies from notebook 46 imports dpkit as the notebooks do, ``import dpkit as dp``, and each
    dpkit name it uses is on the façade (``dpkit.__all__``)."""
    import ast

    import dpkit

    nb = json.loads((Path(__file__).resolve().parents[1] / "notebooks" / "46_add_your_method.ipynb").read_text())
    [source] = [ast.literal_eval(node.value) for c in nb["cells"] if c["cell_type"] == "code"
                for node in ast.parse("".join(c["source"])).body
                if isinstance(node, ast.Assign) and [getattr(t, "id", None) for t in node.targets] == ["MY_METHODS"]]
    tree = ast.parse(source)
    dpkit_imports = [ast.unparse(n) for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom))
                     and any(a.name.split(".")[0] == "dpkit" for a in n.names) or isinstance(n, ast.ImportFrom)
                     and (n.module or "").split(".")[0] == "dpkit"]
    assert dpkit_imports == ["import dpkit as dp"]
    used = {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name)
            and n.value.id == "dp"}
    assert used and used <= set(dpkit.__all__), used - set(dpkit.__all__)


@pytest.mark.notebook
def test_tutorial_notebook_adds_a_method_and_the_gate_refutes_its_under_noised_copy(run_notebook, tmp_path):
    m = run_notebook("46_add_your_method.ipynb")
    out = tmp_path / "46_add_your_method"
    checks = {c["id"]: c for c in m["checks"]}
    assert set(checks) == {"gate-correct-entrant", "gate-under-noised-entrant"}
    assert m["all_consistent"], m["checks"]
    good, bad = checks["gate-correct-entrant"], checks["gate-under-noised-entrant"]
    assert good["expected"] == good["verdict"] == "PASS" and good["statistic"] <= good["bound"] == 1.0
    assert bad["expected"] == bad["verdict"] == "FAIL" and bad["statistic"] > bad["bound"] == 1.0
    assert good["confidence"] == bad["confidence"] == 0.95

    rows = m["table"]
    ranked = [r for r in rows if r["entrant"] == "my_methods:MyMethod"]
    refuted = [r for r in rows if r["entrant"] == "my_methods:UnderNoised"]
    assert ranked and all(r["status"] == "ranked" and r["rank"] >= 1 and r["dataset"] == "WDBC" for r in ranked)
    assert [r["table"] for r in ranked] == ["(ε,δ)-DP"]  # an (ε, δ)-DP entrant competes in Table 3.3 only
    assert len(refuted) == 1 and refuted[0]["status"] == "refuted" and refuted[0]["rank"] is None
    assert refuted[0]["gate_epsilon_lb"] == bad["statistic"]

    # the stored board is read, never written; the updated copy holds it plus the entrant's paired records
    stored = read_records(out / "stored_board" / "records.parquet")
    assert len(stored) == 6 * 4  # six registered methods, WDBC, one σ, 4 repetitions
    board = read_records(out / "board_add" / "MyMethod" / "records.parquet")
    mine = board[board["method"] == "my_methods:MyMethod"]
    assert len(board) == len(stored) + len(mine) and len(mine) == ranked[0]["reps"]
    assert sorted(mine["rep"]) == list(range(len(mine)))
    # the refuted copy: only the summary, nothing run
    assert sorted(p.name for p in (out / "board_add" / "UnderNoised").iterdir()) == ["board_add.json"]
    assert json.loads((out / "board_add" / "UnderNoised" / "board_add.json").read_text())["status"] == "refuted"
