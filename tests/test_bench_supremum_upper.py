"""The upper-bound benchmark (benchmarks.supremum_upper) on a tiny in-memory data set."""
from __future__ import annotations

import json
from types import SimpleNamespace

import numpy as np
import pytest

import benchmarks.supremum_upper as bsu


def test_bench_rows_summary_and_json(tmp_path, capsys, monkeypatch):
    X = np.clip(np.random.default_rng(0).normal(0.1, 0.4, (300, 5)), -1.0, 1.0)
    monkeypatch.setattr(bsu, "load", lambda name: SimpleNamespace(X=X))
    out = tmp_path / "up.json"
    methods = ["marginals-histogram-eps", "kme-synthetic-eps", "direct-laplace_I"]
    assert bsu.main(["--datasets", "toy", "--sigmas", "2", "--reps", "2", "--n-queries", "50", "--space",
                     "--methods", *methods, "--json", str(out)]) == 0
    data = json.loads(out.read_text())
    res = data["results"][0]
    # direct answering has no synthetic database: two releases per repetition
    assert res["releases_with_database"] == 4 and res["methods"] == 3 and len(res["cost_ratio"]) == 2
    for r in res["rows"]:
        assert r["method"] != "direct-laplace_I"
        assert r["upper"] >= r["sup_abs"] and r["ratio"] >= 1.0
        assert r["upper"] >= r["sup_space"] or r["bound"] == "branch-and-bound"  # the MMD holds on R^d, the B&B on the cube
        assert r["data_side"] == "exact"
    assert [r["first"] for r in res["rows"]] == [True, False, False, False]
    assert all(r["search_starts"] > 0 and r["search_evaluations"] > 0 for r in res["rows"])
    # the bounds' time (the records' own) against the rest of the repetition, per repetition
    for i, (c, up, rep) in enumerate(zip(res["cost_ratio"], res["upper_seconds"], res["repetition_seconds"])):
        assert up == pytest.approx(sum(r["upper_seconds"] for r in res["rows"] if r["rep"] == i), rel=1e-12)
        assert up > 0 and rep > 0 and c == up / rep  # a toy repetition is too small for the 10 % goal (make bench)
    assert data["summary"]["ratio"]["n"] == 4 and set(data["summary"]["per_method"]) == set(methods[:2])
    printed = capsys.readouterr().out
    assert "upper / sup_abs over 4 releases" in printed and "toy (n = 300, d = 5) σ = 2" in printed
