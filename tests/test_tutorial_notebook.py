"""The board tutorial (46_add_your_method) in QUICK mode: a method written into a scratch module is put on a small
stored board by board-add (ranked, with its paired comparison), and its under-noised copy is refuted by the audit
gate and not ranked; metrics.json holds both gate verdicts as checks.

The gate runs at board-add's defaults (confidence 0.95, fixed seed), so the correct entrant's PASS is a fixed outcome
of a test whose false-refutation probability is at most 5 %; the under-noised copy releases its histograms with a
quarter of the Gaussian noise, an exact ε of about 4.7 at δ = 10⁻³ where ε = 1 is claimed.
"""
from __future__ import annotations

import json

import pytest

from dpkit.experiments.board_records import read_records


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
