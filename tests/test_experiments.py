"""Chapter 3 experiment plumbing (dpkit.experiments) and its notebooks in QUICK mode."""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from dpkit import experiments as ex


@pytest.fixture(scope="module")
def X():
    from dpkit.data import load

    return load("mock", n=300, d=4, rng=1).X


def test_paper_values_are_the_printed_tables():
    assert ex.paper_value("CRM", 2.0, "I", "rel") == 1.796
    assert ex.paper_value("wdbc", 10.0, "II", "abs") == 0.042
    assert math.isnan(ex.paper_value("CRM", 3.0, "I", "abs"))
    assert math.isnan(ex.paper_value("XYZ", 2.0, "I", "abs"))
    assert ex.PAPER_WORST_TIME["II"]["PAM"] == 12.8


def test_registry_methods_and_validation():
    from dpkit.methods.registry import configure, get, with_budget

    with pytest.raises(KeyError, match="trig-III"):
        get("trig-III")
    with pytest.raises(ValueError, match="constants"):
        ex.table_methods(("I",), ("printed",))
    with pytest.raises(ValueError, match=r"'trig-I' .* has no parameter\(s\) \['kapa'\]"):
        get("trig-I", kapa=3.0)  # a typo is an error, never silently ignored
    with pytest.raises(ValueError, match="is ε-DP"):
        configure(get("trig-I"), delta=1e-3)  # one method's parameters are set exactly, or refused
    m = with_budget(get("trig-I"), epsilon=1.0, delta=1e-3)  # a shared budget: each method takes what its class allows
    assert m.delta == 0.0 and m.privacy == "ε-DP"
    assert get("trig-II", delta=1e-4).delta == 1e-4
    assert math.isinf(with_budget(get("lp-eps-inf"), epsilon=1.0).epsilon)  # a non-private reference keeps ε = ∞
    assert [m.delta for m in ex.table_methods(("I", "II"), epsilon=1.0, delta=1e-4).values()] == [0.0, 1e-4]
    assert get("trig-II").at_width(4.0).K == 16.0


def _methods(**kw):
    return ex.table_methods(("I", "II"), ("correct",), C=300, R=10, **kw)


def test_repetitions_reproducible_paired_and_budgeted(X):
    a = ex.run_cell(X, methods=_methods(), sigma=2.0, reps=2, n_queries=200, rng=5)
    b = ex.run_cell(X, methods=_methods(), sigma=2.0, reps=2, n_queries=200, rng=5)
    c = ex.run_cell(X, methods=_methods(), sigma=2.0, reps=2, n_queries=200, rng=6)
    assert [r.abs for r in a] == [r.abs for r in b]
    assert [r.abs for r in a] != [r.abs for r in c]
    assert [(r.rep, r.method) for r in a] == [(0, "trig-I"), (0, "trig-II"), (1, "trig-I"), (1, "trig-II")]
    for r in a:
        assert r.eps_spent <= 1.0 + 1e-12
        assert r.delta_spent <= (1e-3 if r.method == "trig-II" else 0.0) + 1e-15
        assert 0 <= r.abs <= 1  # kernel mixtures take values in [0, 1]
    # repetition 0 does not depend on how many repetitions run (spawned child streams)
    one = ex.run_cell(X, methods=_methods(), sigma=2.0, reps=1, n_queries=200, rng=5)
    assert [r.abs for r in one] == [r.abs for r in a[:2]]
    # a method's numbers depend on its name, not on the other methods: dropping trig-II leaves trig-I unchanged
    solo = ex.run_cell(X, methods={"trig-I": _methods()["trig-I"]}, sigma=2.0, reps=2, n_queries=200, rng=5)
    assert [r.abs for r in solo] == [r.abs for r in a if r.method == "trig-I"]


def test_errors_shrink_when_privacy_is_relaxed(X):
    """ε = ∞ (no noise) isolates discretisation/truncation; with ε = 0.05 the noise dominates.

    The noise in the moments scales as 1/(nε): at n = 300, ε = 0.05 it is ~100× the ε = 5 noise, so the
    mean worst error over 3 repetitions must be larger — a broken noise calibration (e.g. noise independent
    of ε) makes this fail.
    """
    def mean_abs(eps):
        m = ex.table_methods(("I",), ("correct",), epsilon=eps, C=300, R=10)
        return np.mean([r.abs for r in ex.run_cell(X, methods=m, sigma=2.0, reps=3, n_queries=200, rng=0)])

    assert mean_abs(0.05) > mean_abs(5.0)


def test_summarise_and_tables(X, tmp_path):
    from dpkit.outputs.tables import export_table, paper_comparison_table

    recs = []
    for s in (2.0, 4.0):
        recs += ex.run_cell(X, methods=_methods(), sigma=s, reps=2, n_queries=100, rng=0)
    rows = ex.table_rows(recs, dataset="WDBC")
    assert len(rows) == 4
    r = next(r for r in rows if r["mechanism"] == "I" and r["sigma"] == 2.0)
    vals = [x.abs for x in recs if x.method == "trig-I" and x.sigma == 2.0]
    assert r["abs_mean"] == pytest.approx(np.mean(vals)) and r["paper_abs"] == 0.049
    assert r["ratio_abs"] == pytest.approx(r["abs_mean"] / 0.049)
    for key in ("dataset", "sigma", "mechanism", "abs_mean", "rel_mean", "time_max_s", "paper_abs", "paper_rel"):
        assert key in r
    comp = paper_comparison_table(rows)
    assert len(comp) == 4 and "(0.049)" in comp.iloc[0]["σ=2"]
    paths = export_table(comp, "t", tmp_path)
    assert [p.suffix for p in paths] == [".csv", ".md", ".tex"] and "\\begin{tabular}" in paths[2].read_text()


def test_sweep_uses_common_workloads(X):
    from dpkit.methods.registry import get

    base = get("trig-I", C=200, R=10)
    res = ex.sweep(X, method=base, param="kappa", values=[1.0, 7.0], sigma=2.0, reps=2, n_queries=100, rng=0)
    assert list(res) == [1.0, 7.0]
    rows = ex.sweep_rows(res, dataset="mock", param="kappa")
    assert [r["value"] for r in rows] == [1.0, 7.0]
    with pytest.raises(ValueError, match="param"):
        ex.sweep(X, method=base, param="gamma", values=[1], sigma=2.0, reps=1)
    with pytest.raises(ValueError, match="entry 2"):
        ex.parse_values("1.0, seven")


@pytest.mark.notebook
@pytest.mark.parametrize("name", ["00_quickstart.ipynb", "20_tables.ipynb", "21_kappa_sweep.ipynb", "22_k_sweep.ipynb"])
def test_chapter3_notebooks_quick(run_notebook, name, monkeypatch, tmp_path):
    sweep = name in ("21_kappa_sweep.ipynb", "22_k_sweep.ipynb")
    if sweep:  # Figs 3.1/3.2 with the paper-figure switch (as make reproduce sets it), into a scratch figures/
        monkeypatch.setenv("DPKIT_FIGURES_DIR", str(tmp_path / "figures"))
    m = run_notebook(name, **({"PAPER_FIGURES": True} if sweep else {}))
    if sweep:
        stem = tmp_path / "figures" / f"{name[:-6]}__{name[:-6]}"
        assert all(Path(f"{stem}.{ext}").is_file() for ext in ("pdf", "png", "caption.txt"))
        assert "repetitions" in Path(f"{stem}.caption.txt").read_text()
    assert m["all_consistent"], [c for c in m["checks"] if c["verdict"] != c["expected"]]
    assert m["checks"], "a notebook without checks"
    if name == "20_tables.ipynb":
        row = m["table"][0]
        for key in ("dataset", "sigma", "mechanism", "abs_mean", "rel_mean", "time_max_s", "paper_abs", "paper_rel"):
            assert key in row
        assert {r["mechanism"] for r in m["table"]} == {"I", "II"}
        # correct and printed constants run side by side on the same workloads
        assert {r["constants"] for r in m["table"]} == {"correct", "thesis"}


def test_cell_seed_depends_on_values_not_positions():
    a = ex.cell_seed(0, "CSN", 4.0).generate_state(4)
    assert (a == ex.cell_seed(0, "csn", 4.0).generate_state(4)).all()
    assert not (a == ex.cell_seed(0, "CSN", 6.0).generate_state(4)).all()
    assert not (a == ex.cell_seed(1, "CSN", 4.0).generate_state(4)).all()
    assert not (a == ex.cell_seed(0, "CRM", 4.0).generate_state(4)).all()


def _fake_run(root, key, rows, status="ok"):
    import json

    d = root / "20_tables" / key
    d.mkdir(parents=True)
    (d / "run.json").write_text(json.dumps({"status": status, "parameters": {}}))
    (d / "metrics.json").write_text(json.dumps({"checks": [], "table": rows}))


def test_assemble_tables_from_split_runs(tmp_path):
    base = {"abs_std": 0.01, "rel_mean": 0.2, "rel_std": 0.02, "time_max_s": 0.1, "paper_time_s": 0.7,
            "constants": "correct"}
    rows_a = [{"dataset": "WDBC", "sigma": 2.0, "mechanism": m, "abs_mean": 0.05, "paper_abs": 0.049,
               "paper_rel": 0.355, **base} for m in ("I", "II")]
    rows_b = [{"dataset": "WDBC", "sigma": 4.0, "mechanism": m, "abs_mean": 0.1, "paper_abs": 0.167,
               "paper_rel": 0.28, **base} for m in ("I", "II")]
    _fake_run(tmp_path, "aaa", rows_a)
    _fake_run(tmp_path, "bbb", rows_b)
    _fake_run(tmp_path, "ccc", rows_b, status="failed")  # failed runs are not assembled
    from dpkit.batch.assemble import assemble_tables, rows_from_runs

    info = assemble_tables(str(tmp_path))
    assert info["rows"] == 4 and info["datasets"] == ["WDBC"]
    md = (tmp_path / "assembled" / "tables_3_2_3_3.md").read_text()
    assert "(0.049)" in md and "(0.167)" in md
    assert (tmp_path / "assembled" / "tables_abs_vs_sigma.pdf").is_file()
    _fake_run(tmp_path, "ddd", rows_b)  # the same cell twice is an error, never a silent overwrite
    with pytest.raises(ValueError, match="computed by two runs"):
        rows_from_runs(str(tmp_path))


def _budget_run(root, key, rows, **params):
    import json

    d = root / "20_tables" / key
    d.mkdir(parents=True)
    (d / "run.json").write_text(json.dumps({"status": "ok", "parameters": {}}))
    (d / "metrics.json").write_text(json.dumps({"checks": [], "table": rows, "params": params}))


def _budget_rows(sigma, eps, delta, dataset="WDBC"):
    return [{"dataset": dataset, "sigma": sigma, "mechanism": m, "constants": "correct", "abs_mean": 0.05,
             "abs_std": 0.01, "rel_mean": 0.2, "rel_std": 0.02, "time_max_s": 0.1, "paper_time_s": 0.7,
             "paper_abs": 0.049, "paper_rel": 0.355, "reps": 3, "eps_spent": eps,
             "delta_spent": delta if m == "II" else 0.0} for m in ("I", "II")]


def test_the_tables_captions_state_the_runs_budget_not_the_thesis_s(tmp_path):
    """A batch at ε = 0.5, δ = 10⁻⁵, 300 queries is captioned so (every table and figure); at the thesis's protocol
    the captions are the published ones, byte for byte; runs at two budgets are refused, naming them."""
    from dpkit.batch.assemble import assemble_tables

    _budget_run(tmp_path / "other", "aaa", _budget_rows(2.0, 0.5, 1e-5), EPSILON=0.5, DELTA=1e-5, N_QUERIES=300)
    _budget_run(tmp_path / "other", "bbb", _budget_rows(4.0, 0.5, 1e-5), EPSILON=0.5, DELTA=1e-5, N_QUERIES=300)
    assemble_tables(str(tmp_path / "other"))
    out = tmp_path / "other" / "assembled"
    for name in ("tables_3_2_3_3.tex", "tables_rows.tex", "worst_times.tex"):
        text = (out / name).read_text()
        assert r"$\varepsilon$ = 0.5, $\delta$ = 10$^{-5}$ (mechanism II)" in text, name
        assert r"$\varepsilon$ = 1," not in text and "10$^{-3}$" not in text, name
    for name in ("tables_abs_vs_sigma.caption.txt", "tables_rel_vs_sigma.caption.txt"):
        text = (out / name).read_text()
        assert "ε = 0.5, δ = 10⁻⁵" in text and "ε = 1" not in text and "10⁻³" not in text, name
    assert "300 queries per repetition" in (out / "tables_abs_vs_sigma.caption.txt").read_text()
    assert "epsilon=0.5; delta=1e-05" in (out / "tables_abs_vs_sigma.caption.txt").read_text()

    # a run that recorded no budget in its params: the one its rows spent
    _budget_run(tmp_path / "spent", "aaa", _budget_rows(2.0, 0.25, 1e-6))
    assemble_tables(str(tmp_path / "spent"))
    tex = (tmp_path / "spent" / "assembled" / "tables_3_2_3_3.tex").read_text()
    assert r"$\varepsilon$ = 0.25, $\delta$ = 10$^{-6}$ (mechanism II)" in tex

    # the thesis's protocol: the published captions
    datasets = ("CRM", "CSN", "CTG", "PKS", "WDBC")
    for i, ds in enumerate(datasets):
        rows = [{**r, "reps": 30} for r in _budget_rows(2.0, 1.0, 1e-3, dataset=ds)]
        _budget_run(tmp_path / "thesis", f"r{i}", rows, EPSILON=1.0, DELTA=0.001, N_QUERIES=10000)
    assemble_tables(str(tmp_path / "thesis"))
    out = tmp_path / "thesis" / "assembled"
    published = Path(__file__).resolve().parents[1] / "figures" / "20_tables__tables_abs_vs_sigma.caption.txt"
    assert (out / "tables_abs_vs_sigma.caption.txt").read_bytes() == published.read_bytes()
    for name in ("tables_3_2_3_3.tex", "tables_rows.tex", "worst_times.tex"):  # as the hard-coded budget wrote them
        assert (r"$\varepsilon$ = 1, $\delta$ = 10$^{-3}$ (mechanism II); 30 repetitions, each a fresh workload of "
                "Gaussian-kernel mixture queries") in (out / name).read_text(), name

    _budget_run(tmp_path / "thesis", "zzz", _budget_rows(6.0, 0.5, 1e-3), EPSILON=0.5, DELTA=0.001, N_QUERIES=10000)
    with pytest.raises(ValueError, match=r"different budgets \(ε, δ\): \(1.0, 0.001\) \(r0\) and \(0.5, 0.001\) \(zzz\)"):
        assemble_tables(str(tmp_path / "thesis"), out=str(tmp_path / "never"))
    assert not (tmp_path / "never").exists()


@pytest.mark.notebook
@pytest.mark.parametrize("name, values", [("21_kappa_sweep.ipynb", [1.0, 7.0, 25.0]), ("22_k_sweep.ipynb", [1, 2, 3])])
def test_sweep_notebooks_charge_their_claim_to_the_budget(run_notebook, name, values):
    """The full-mode path (QUICK off, a tiny grid on WDBC): the thesis's shape claim is a statistical check at the
    notebook's FALSE_ALARM level, recorded in the budget (QUICK mode leaves it out: it could not fail)."""
    m = run_notebook(name, QUICK=False, DATASET="WDBC", VALUES=values, REPS=3, N_QUERIES=200, C=300, R=8)
    [claim] = [c for c in m["checks"] if c["id"].startswith("thesis-")]
    level = m["params"]["FALSE_ALARM"]
    assert claim["confidence"] == pytest.approx(1 - level) and claim["bound"] == level
    b = m["false_alarm_budget"]
    assert b["n_tests"] == 1 and [r["id"] for r in b["charged"]] == [claim["id"]]
