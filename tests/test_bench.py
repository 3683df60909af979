"""Smoke tests of the benchmark module on a tiny configuration (mock data, small C, few queries)."""
from __future__ import annotations

import json
import math

import pytest

from benchmarks.bench import THESIS_WORST_TIME_S, main, quick_config, run_benchmark, write_outputs


def _loader(name):
    if name == "mock":
        from dpkit.data import load

        return load("mock", n=200, d=3)
    raise FileNotFoundError(f"no such data set {name!r} in this test")


@pytest.fixture(scope="module")
def tiny_result():
    cfg = quick_config(
        datasets=("mock", "MISSING"),
        sigmas=(2.0,),
        reps=2,
        method_params=(("C", 200), ("R", 4)),
        eval_queries=40,
        eval_reference_queries=2,
        eval_datasets=None,
    )
    return run_benchmark(cfg, loader=_loader)


def test_bench_json_keys(tiny_result, tmp_path):
    pj, pm = write_outputs(tiny_result, tmp_path)
    res = json.loads(pj.read_text())
    for key in ("evaluator_speedup", "evaluator_kernel_evals_per_s", "datasets", "skipped", "evaluator", "targets",
                "config", "meta"):
        assert key in res, key
    assert res["evaluator_speedup"] > 0 and res["evaluator_kernel_evals_per_s"] > 0
    mock = res["datasets"]["mock"]
    assert (mock["n"], mock["d"]) == (200, 3)
    for mech in ("I", "II"):
        m = mock[mech]
        assert m["runs"] == 2 and m["failed_runs"] == 0
        assert m["median_s"] > 0 and m["max_s"] >= m["median_s"]
        # per-stage split from res.timings, including the mechanism's own total
        assert "total" in m["stages"] and "lp" in m["stages"]
        assert math.isclose(sum(v for k, v in m["stages"].items() if k != "total"), m["stages"]["total"], rel_tol=0.5)
    assert res["evaluator"]["mock"]["dtype"] in ("float32", "float64")
    assert "parallel_comparison" in res["evaluator"]["mock"]
    # a data set that fails to load is skipped with its reason, not fatal
    assert "MISSING" in res["skipped"] and "FileNotFoundError" in res["skipped"]["MISSING"]
    md = pm.read_text()
    assert "| mock |" in md and "thesis worst" in md and "MISSING" in md


def test_bench_thesis_times_table():
    assert THESIS_WORST_TIME_S["I"]["CRM"] == 2.5 and THESIS_WORST_TIME_S["II"]["PAM"] == 12.8
    assert set(THESIS_WORST_TIME_S["I"]) == set(THESIS_WORST_TIME_S["II"]) == {"CRM", "CSN", "CTG", "PAM", "PKS", "WDBC"}


def test_bench_cli_writes_files(tmp_path, monkeypatch):
    import benchmarks.bench as bench

    monkeypatch.setattr(bench, "_default_loader", lambda name: _loader(name).X)
    real_quick = bench.quick_config
    # keep the CLI path but shrink the work (C, queries) for the test
    monkeypatch.setattr(
        bench, "quick_config",
        lambda **kw: real_quick(**{**kw, "method_params": (("C", 150), ("R", 4)), "eval_queries": 20, "sigmas": (4.0,)}),
    )
    assert main(["--quick", "--datasets", "mock", "--reps", "1", "--out", str(tmp_path)]) == 0
    res = json.loads((tmp_path / "bench.json").read_text())
    assert res["config"]["quick"] is True and res["datasets"]["mock"]["I"]["runs"] == 1
    assert (tmp_path / "bench.md").exists()
