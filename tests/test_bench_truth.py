"""The exact-answer benchmark (dpkit.batch.bench_truth) on a tiny in-memory data set."""
from __future__ import annotations

import numpy as np

from dpkit.batch.bench_truth import main, render_markdown, truth_stage
from dpkit.queries.exact import clear_cache
from dpkit.queries.lowrank import FitOptions


def test_truth_stage_rows_and_table():
    rng = np.random.default_rng(0)
    X = np.clip(np.round(rng.normal(0, 0.4, (1500, 3)) * 10) / 10, -1, 1)
    opts = FitOptions(pool_data=400, pool_cube=400, max_rank=600, max_prefix=64)
    clear_cache()
    rows = truth_stage({"toy": X}, (2.0, 6.0), n_queries=40, options=opts, repeats=2)
    assert [(r["dataset"], r["sigma"]) for r in rows] == [("toy", 2.0), ("toy", 6.0)]
    for r in rows:
        assert r["agree"] and r["new_bound"] <= 1e-6 and r["ratio"] > 0 and r["fit_s"] > 0
        assert r["n_unique"] == len(np.unique(X, axis=0)) and r["queries"] == 40
        assert r["ratio_amortised"] < r["ratio"]
    table = render_markdown(rows)
    lines = table.splitlines()
    assert len(lines) == 4 and all(line.count("|") == lines[0].count("|") for line in lines)
    clear_cache()


def test_main_prints_a_table(capsys, monkeypatch):
    import dpkit.batch.bench_truth as bt

    X = np.random.default_rng(1).uniform(-1, 1, (300, 2))
    monkeypatch.setattr(bt, "_load", lambda name: X)
    assert main(["--datasets", "toy", "--sigmas", "4", "--queries", "10"]) == 0
    out = capsys.readouterr().out
    assert "| toy | 300 | 2 | 4 |" in out
    clear_cache()
