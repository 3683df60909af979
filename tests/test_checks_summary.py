"""The checks summary (python -m dpkit.batch.checks)."""
from dpkit.batch.checks import gather_checks, main, summarise_checks, to_latex, to_markdown, write_summary
from dpkit.outputs.report import Report


def _fake(tmp_path):
    r = Report(tmp_path / "50_a")
    r.check("A1", "claim a", 0.5, 1.0)
    r.check("A2", "broken & printed", 2.0, 1.0, expected="FAIL")
    r.write()
    r = Report(tmp_path / "51_b")
    r.check("B1", "claim b_1", 3.0, 1.0, expected="PASS")
    r.write()


def test_gather_and_render(tmp_path):
    _fake(tmp_path)
    df = gather_checks(tmp_path)
    assert list(df["id"]) == ["A1", "A2", "B1"]
    s = summarise_checks(df)
    assert s["n_claims"] == 2 and s["n_controls_fail"] == 1 and not s["all_consistent"]
    assert s["unexpected"] == ["51_b:B1"]
    md = to_markdown(df)
    assert md.count("\n") == 5 and "| 50_a | A1 |" in md
    tex = to_latex(df)
    assert r"\&" not in tex or "broken" not in tex  # claims are not in the LaTeX table by default
    assert r"51\_b" in tex and r"\toprule" in tex
    out = write_summary(tmp_path, tmp_path / "summary")
    assert (tmp_path / "summary.md").is_file() and out["n_checks"] == 3
    assert main([str(tmp_path)]) == 1


def test_batch_layout_goes_through_collect(tmp_path):
    import json

    from dpkit.batch import run_key

    # dpkit.batch layout: <out>/<notebook>/<12-hex key>/{run.json, metrics.json}, the key the hash of the parameters
    keys = []
    for seed, verdict_stat in ((1, 0.5), (2, 0.7)):
        keys.append(run_key("52_x.ipynb", {"SEED": seed}))
        folder = tmp_path / "batch" / "52_x" / keys[-1]
        r = Report(folder)
        r.check("E1", "exp claim", verdict_stat, 1.0)
        r.write()
        run = {"notebook": "notebooks/52_x.ipynb", "parameters": {"SEED": seed}, "status": "ok"}
        (folder / "run.json").write_text(json.dumps(run))
    df = gather_checks(tmp_path)
    assert len(df) == 2 and set(df["notebook"]) == {"52_x"} and set(df["run_key"]) == set(keys)
    assert summarise_checks(df)["all_consistent"]
