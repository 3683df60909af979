"""The exact-answer benchmark (benchmarks.bench_truth) on a tiny in-memory data set."""
from __future__ import annotations

import numpy as np

from benchmarks.bench_truth import main, render_markdown, truth_stage
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
    import benchmarks.bench_truth as bt

    X = np.random.default_rng(1).uniform(-1, 1, (300, 2))
    monkeypatch.setattr(bt, "_load", lambda name: X)
    monkeypatch.setattr("dpkit.data.list_datasets", lambda: ["toy"])  # --datasets is checked against the registry
    assert main(["--datasets", "toy", "--sigmas", "4", "--queries", "10"]) == 0
    out = capsys.readouterr().out
    assert "| toy | 300 | 2 | 4 |" in out
    clear_cache()


def test_table_costs_and_projection_fields():
    """The full-table projection on a toy cell: stage fields, cold ≥ warm, ratios only (no absolute times)."""
    from benchmarks.bench_truth import manifest_runs, project_tables, render_projection, table_costs

    rng = np.random.default_rng(2)
    X = np.clip(np.round(rng.normal(0, 0.4, (300, 3)) * 10) / 10, -1, 1)
    params = dict(epsilon=1.0, delta=1e-3, C=200, R=6, k=2, n_iter=3, kappa=7.0)
    costs = table_costs({"toy": X}, (4.0,), probe_reps=2, n_queries=30, params=params, notebook_overhead=1.0)
    (cell,) = costs["cells"]
    assert cell["dataset"] == "toy" and cell["sigma"] == 4.0 and set(cell["release_s"]) == {"trig-I", "trig-II"}
    assert set(cell["answer_s"]) == {"trig-I", "trig-II"} and cell["truth_method"] == "exact" and cell["fit_s"] == 0.0
    assert all(v > 0 for v in (cell["workload_s"], cell["truth_s"], *cell["release_s"].values()))
    assert costs["load_s"]["toy"] >= 0 and costs["probe_reps"] == 2
    runs = [(["toy"], [4.0]), (["toy"], [2.0]), (["PAM"], [4.0])]  # σ = 2 unmeasured, PAM absent: notebook start only
    proj = project_tables(costs, reps=30, workers=2, cores=2, runs=runs)
    cold, warm = proj["cold"], proj["warm"]
    assert proj["n_runs"] == 3 and len(cold["run_core_s"]) == 3
    assert cold["run_core_s"][1] == cold["run_core_s"][2] == 1.0  # one notebook start each
    st = cold["stages_core_s"]
    assert st["notebook"] == 3.0 and abs(st["truth"] / (30 * 2 * cell["truth_s"]) - 1) < 1e-12
    assert abs(st["release"] / (30 * sum(cell["release_s"].values())) - 1) < 1e-12
    assert abs(sum(st.values()) / cold["core_s"] - 1) < 1e-12
    assert warm["stages_core_s"]["truth"] == 0.0 and warm["core_s"] < cold["core_s"] and warm["wall_s"] <= cold["wall_s"]
    for p in (cold, warm):
        assert p["wall_s"] >= p["core_s"] / 2 and p["wall_s"] >= p["makespan_s"] >= max(p["run_core_s"])
    text = render_projection(proj, measured_s=2.0 * cold["wall_s"])
    assert "projected" in text and "cold" in text and "warm" in text and "measured/projected 2.00" in text
    # the shipped manifest: every (data set, σ) cell of the five local data sets exactly once (+ PAM)
    cells = [(d, s) for ds, ss in manifest_runs() for d in ds for s in ss]
    assert sorted(c for c in cells if c[0] != "PAM") == sorted(
        (d, s) for d in ("CRM", "CSN", "CTG", "PKS", "WDBC") for s in (2.0, 4.0, 6.0, 8.0, 10.0))
    clear_cache()


def test_main_tables_prints_the_projection(capsys, monkeypatch, tmp_path):
    import benchmarks.bench_truth as bt

    X = np.clip(np.random.default_rng(3).normal(0, 0.4, (300, 3)), -1, 1)
    monkeypatch.setattr(bt, "_load", lambda name: X)
    monkeypatch.setattr("dpkit.data.list_datasets", lambda: ["toy"])  # --datasets is checked against the registry
    monkeypatch.setattr(bt, "_notebook_overhead", lambda: 1.0)  # (a papermill start: seconds, not for the unit test)
    monkeypatch.setattr(bt, "TABLE_PARAMS", dict(epsilon=1.0, delta=1e-3, C=200, R=6, k=2, n_iter=3, kappa=7.0))
    out_json = tmp_path / "b.json"
    assert main(["--datasets", "toy", "--sigmas", "4", "--queries", "20", "--skip-truth", "--tables",
                 "--probe-reps", "2", "--out", str(out_json)]) == 0
    out = capsys.readouterr().out
    assert "toy σ=4" in out and "projected" in out and "| cold" in out and "| warm" in out
    import json

    rep = json.loads(out_json.read_text())
    assert set(rep) == {"table_costs", "projection"} and rep["projection"]["cold"]["core_s"] > 0
    clear_cache()


def _private_dpkit_names(paths) -> list[str]:
    """Every ``_name`` (a private name or module) that the files ``paths`` import from dpkit."""
    import ast

    private = []
    for path in sorted(paths):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("dpkit"):
                private += [f"{path.name}: {node.module}.{a.name}" for a in node.names if a.name.startswith("_")]
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                mods = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
                private += [f"{path.name}: {m}" for m in mods if m.startswith("dpkit") and any(
                    part.startswith("_") for part in m.split("."))]
    return private


def test_process_tooling_uses_only_public_dpkit_names():
    """benchmarks/ and tools/ live outside the package: they import dpkit's public API only (no ``_name``)."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    assert _private_dpkit_names([*root.glob("benchmarks/*.py"), *root.glob("tools/*.py")]) == []


def test_the_repetition_workers_use_only_public_names_of_the_records():
    """dpkit.experiments.parallel computes repetitions in other processes from the records module's public
    functions (repetition_at, timed_release), not from its private helpers."""
    from pathlib import Path

    import dpkit.experiments.parallel as parallel

    assert _private_dpkit_names([Path(parallel.__file__)]) == []
