"""``python -m tools.false_alarms``: the notebooks' QUICK statistical checks over seeds, against the budget."""
from __future__ import annotations

import json

import pandas as pd
import pytest

import dpkit as dp
from dpkit.evaluation.verdicts import check
from tools import false_alarms as fa


def test_command_on_few_seeds(tmp_path) -> None:
    code = fa.main(["--seeds", "3", "--notebooks", "56", "57", "--out", str(tmp_path)])
    table = pd.read_csv(tmp_path / "false_alarms.csv")
    assert list(table.notebook) == ["56_private_pca", "57_ellipsoid"] and list(table.runs) == [3, 3]
    assert (table.budget == 1e-3).all() and (table.rate == table.unexpected / table.runs).all()
    # Clopper–Pearson one-sided 95 %: 0 of 3 gives 1 − 0.05^(1/3)
    clean = table[table.unexpected == 0]
    assert clean.cp_upper.to_numpy() == pytest.approx(1 - 0.05 ** (1 / 3), rel=1e-9)
    data = json.loads((tmp_path / "false_alarms.json").read_text())
    assert data["seeds"] == [0, 2] and set(data["notebooks"]) == {"56_private_pca", "57_ellipsoid"}
    assert set(data["notebooks"]["57_ellipsoid"]["check_failures"]) == {
        "Alg 8 (correct sampler)", "Alg 8 (printed radius)", "Alg 8 (printed, k = 2)", "Alg 8 (printed angles, k ≥ 3)"}
    assert code == int(table.refutes_budget.any())


def test_unknown_notebook_is_refused() -> None:
    with pytest.raises(SystemExit, match="matches no notebook"):
        fa.main(["--seeds", "1", "--notebooks", "99"])


def test_a_broken_check_is_counted_and_refutes_the_budget(monkeypatch) -> None:
    """A suite whose correct check always fails: every run is a false alarm and the budget is refuted."""

    def broken(seed: int, total: float) -> list:
        return [check("x", "always fails", 1.0, 0.0, relation="<=", confidence=1 - total)]

    monkeypatch.setitem(fa.SUITES, "57_ellipsoid", broken)
    res = fa.run(["57_ellipsoid"], range(5), 1e-3, log=lambda s: None)
    row = fa.summarise(res, 1e-3).iloc[0]
    assert (row.unexpected, row.false_alarm_runs, row.missed_control_runs) == (5, 5, 0)
    assert row.cp_lower > 1e-3 and bool(row.refutes_budget)


@pytest.mark.parametrize("name", sorted(fa.NOTEBOOK_CHECKS))
def test_the_suite_runs_the_function_the_notebook_runs(name) -> None:
    """The statistical notebooks spawn no stream and build no budget themselves: their one cell that computes checks calls
    their claims function with SEED, QUICK, FALSE_ALARM and every other parameter, and the suite calls the same
    function with the notebook's parameter defaults, so a suite's seed s is the notebook's SEED = s by construction."""
    import nbformat

    fn = fa.NOTEBOOK_CHECKS[name]
    nb = nbformat.read(fa.NOTEBOOKS / f"{name}.ipynb", as_version=4)
    code = "\n".join(c.source for c in nb.cells if c.cell_type == "code" and "parameters" not in c.metadata.get("tags", []))
    module = fn.__module__.rsplit(".", 1)[1]
    assert f"dp.{module}_checks.notebook_checks(SEED, QUICK, FALSE_ALARM, " in code
    assert dp._API[f"{module}_checks"] == fn.__module__
    for hand_made in ("spawn(", "Streams.from_seed", "FalseAlarmBudget(", "rng=g_", "rng=streams"):
        assert hand_made not in code, (name, hand_made)
    keywords = fa._keywords(name)  # every parameter of the notebook is a keyword of the function, and back
    assert code.count("notebook_checks(") == 1 and all(f"{k}=" in code for k in keywords), name


@pytest.mark.notebook
@pytest.mark.parametrize("name", ["57_ellipsoid"])
def test_suite_reproduces_the_notebook(name) -> None:
    """Seed s of a suite gives the statistical checks of the notebook run with SEED = s (QUICK): the --via-notebook path.
    (A notebook and its suite call the same claims function; this checks the parameter defaults end to end.)"""
    nb = {c.id: c for c in fa.notebook_checks(name, 1, 1e-3)}
    suite = fa.SUITES[name](1, 1e-3)
    assert sorted(nb) == sorted(c.id for c in suite)
    for c in suite:
        n = nb[c.id]
        assert (c.statistic, c.bound, c.verdict, c.confidence, c.attempts) == (n.statistic, n.bound, n.verdict, n.confidence,
                                                                               n.attempts), c.id


@pytest.mark.notebook
def test_suite_40_reproduces_the_notebook_with_the_direct_methods(tmp_path) -> None:
    """Seed s of the 40_baselines suite gives the direct-answering checks of the QUICK notebook run with SEED = s
    and METHODS = the two direct-answering methods (the other methods have their own streams, no statistical check)."""
    from dpkit.batch.execute import execute_notebook

    execute_notebook(fa.NOTEBOOKS / "40_baselines.ipynb", tmp_path, parameters=dict(
        SEED=1, QUICK=True, FALSE_ALARM=1e-3, METHODS=["direct-laplace_I", "direct-gaussian"]))
    metrics = json.loads((tmp_path / "metrics.json").read_text())
    nb = {c["id"]: c for c in metrics["checks"] if c["confidence"] is not None}
    suite = fa.SUITES["40_baselines"](1, 1e-3)
    assert sorted(nb) == sorted(c.id for c in suite) == ["direct-gaussian-theory", "direct-laplace_I-theory"]
    for c in suite:
        assert (c.statistic, c.bound, c.verdict, c.confidence) == (nb[c.id]["statistic"], nb[c.id]["bound"],
                                                                   nb[c.id]["verdict"], nb[c.id]["confidence"]), c.id
    assert metrics["false_alarm_budget"]["n_tests"] == 2 and metrics["false_alarm_budget"]["bound"] <= 1e-3


def test_a_notebook_run_records_a_budget_that_fits_its_checks() -> None:
    """NotebookRecorder.finish validates the budget as the notebooks did (FalseAlarmBudget.record), and refuses
    statistical checks without a budget."""
    from dpkit.claims.results import NotebookRecorder
    from dpkit.evaluation.verdicts import FalseAlarmBudget

    out = NotebookRecorder()
    out.add(check("s", "statistical", 0.0, 1.0, relation="<=", confidence=1 - 1e-3), check("e", "exact", 0.0, 1.0))
    out.row(part="x", value=1)
    run = out.finish({"SEED": 0}, FalseAlarmBudget(1e-3, n_tests=1))  # one charged check at level 1e-3
    assert [c.id for c in run.statistical] == ["s"] and run.rows == ({"part": "x", "value": 1},)
    assert run.budget["n_tests"] == 1 and run.budget["charged"][0]["id"] == "s"
    with pytest.raises(ValueError, match="n_tests=2"):
        out.finish({}, FalseAlarmBudget(1e-3, n_tests=2))
    with pytest.raises(ValueError, match="without a false-alarm budget"):
        out.finish({}, None)
