"""The metrics.json contract and the one exporter."""
from __future__ import annotations

import json
import math

import pytest

from dpkit.evaluation.verdicts import check
from dpkit.outputs.plotting import export_figure, new_figure, rc_params
from dpkit.outputs.report import Report, read_metrics, to_jsonable


def test_check_verdicts_follow_relation():
    assert check("a", "x<=1", 0.5, 1.0).verdict == "PASS"
    assert check("a", "x<=1", 1.5, 1.0).verdict == "FAIL"
    assert check("a", "x>=1", 1.5, 1.0, relation=">=").verdict == "PASS"
    c = check("neg", "broken variant is caught", 2.0, 1.0, expected="FAIL")
    assert c.verdict == "FAIL" and c.consistent
    with pytest.raises(ValueError, match="relation"):
        check("a", "", 0, 0, relation="~")
    with pytest.raises(ValueError, match="verdict"):
        check("a", "", 0, 0, holds=True).__class__(id="a", claim="", statistic=0, bound=0, confidence=None, verdict="OK")


def test_report_writes_contract(tmp_path):
    rep = Report(tmp_path / "run", params={"SEED": 3, "EPS": math.inf})
    rep.check("c1", "claim", 0.1, 0.2, confidence=0.95)
    rep.check("c2", "negative control", 0.3, 0.2, expected="FAIL")
    rep.row(dataset="WDBC", sigma=2.0, abs_mean=float("nan"))
    with pytest.raises(ValueError, match="duplicate"):
        rep.check("c1", "again", 0, 1)
    path = rep.write()
    m = read_metrics(path.parent)
    assert m["all_consistent"] is True
    assert [c["id"] for c in m["checks"]] == ["c1", "c2"]
    assert set(m["checks"][0]) >= {"id", "claim", "statistic", "bound", "confidence", "verdict", "expected"}
    assert m["table"][0]["abs_mean"] is None  # NaN is not valid JSON
    assert m["params"]["EPS"] == "inf"
    json.loads(path.read_text())  # strict JSON


def test_inconsistent_report_is_flagged(tmp_path):
    rep = Report(tmp_path)
    rep.check("c", "claim", 2.0, 1.0)  # expected PASS, measured FAIL
    assert not rep.all_consistent
    assert "UNEXPECTED" in rep.summary()


def test_to_jsonable_numpy():
    import numpy as np

    assert to_jsonable({"a": np.float32(1.5), "b": np.arange(3)}) == {"a": 1.5, "b": [0, 1, 2]}


def test_exporter_writes_pdf_with_embedded_truetype_and_png(tmp_path):
    fig, ax = new_figure(width="double")
    ax.plot([0, 1], [0, 1], label="x")
    ax.set_xlabel("n")
    paths = export_figure(fig, "fig_a", tmp_path)
    assert [p.suffix for p in paths] == [".pdf", ".png"]
    pdf = paths[0].read_bytes()
    assert pdf.startswith(b"%PDF")
    assert b"/FontFile2" in pdf  # TrueType font program embedded (pdf.fonttype 42)
    assert paths[1].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert rc_params()["pdf.fonttype"] == 42
    with pytest.raises(ValueError, match="bare file stem"):
        export_figure(fig, "a/b.pdf", tmp_path)
    with pytest.raises(ValueError, match="notebook"):
        export_figure(fig, "a", tmp_path, paper=True)
    with pytest.raises(ValueError, match="width"):
        new_figure(width="triple")


def test_exporter_writes_the_same_bytes_twice(tmp_path):
    """A re-run of the same figure is byte-identical (no creation date in the PDF), so a repeated
    ``make reproduce`` does not show every paper figure as changed; a changed figure still differs."""
    import hashlib
    import time

    def digests(ys, folder):
        fig, ax = new_figure()
        ax.plot([1, 2, 3], ys, label="$q_f(D)$")
        ax.legend()
        paths = export_figure(fig, "fig", folder, caption="c", parameters={"SEED": 0})
        return {p.suffix: hashlib.sha256(p.read_bytes()).hexdigest() for p in paths}

    first = digests([1, 4, 9], tmp_path / "a")
    time.sleep(1.1)  # PDF dates have a resolution of one second
    assert digests([1, 4, 9], tmp_path / "b") == first
    assert digests([1, 4, 8], tmp_path / "c")[".pdf"] != first[".pdf"]  # the comparison can fail


def test_paper_figure_refuses_a_suptitle(tmp_path, monkeypatch):
    import dpkit.outputs.plotting as plotting
    from dpkit.outputs.plotting import export_figure, new_figure

    monkeypatch.setattr(plotting, "paper_figures_dir", lambda: tmp_path / "figures")
    fig, ax = new_figure()
    ax.plot([0, 1], [0, 1])
    fig.suptitle("CSN, mechanism I")
    export_figure(fig, "run_copy", tmp_path / "run")  # a run's own copy may keep it
    with pytest.raises(ValueError, match="carries no title"):
        export_figure(fig, "paper", tmp_path / "run", notebook="nb", paper=True)
    assert not (tmp_path / "figures").exists()
    fig.suptitle("")
    assert export_figure(fig, "paper", tmp_path / "run", notebook="nb", paper=True)


def test_record_writes_a_notebooks_checks_into_its_report(tmp_path):
    """Report.record takes a topic's NotebookRun (parameters, checks, rows and false-alarm budget), a result with
    ``checks`` or an iterable of checks, in order; anything else is refused by type, a repeated id by name."""
    from dpkit.claims.results import NotebookRun, TableResult
    from dpkit.evaluation.verdicts import FalseAlarmBudget

    a, b = check("a", "x<=1", 0.5, 1.0, confidence=0.999), check("b", "x<=1", 0.2, 1.0)
    budget = FalseAlarmBudget(1e-3, n_tests=1)
    run = NotebookRun(params={"SEED": 1}, checks=(a, b), rows=({"part": "p", "v": 1.0},),
                      budget=budget.record([a, b]), parts={})
    rep = Report(tmp_path, params={"QUICK": True})
    rep.record(run)
    assert rep.params == {"QUICK": True, "SEED": 1} and rep.checks == [a, b] and rep.table == [{"part": "p", "v": 1.0}]
    assert rep.extra["false_alarm_budget"] == run.budget
    c, d = check("c", "x<=1", 0.1, 1.0), check("d", "x<=1", 0.1, 1.0)
    rep.record(TableResult(checks=(c,), table=None))  # a result: its checks
    rep.record(x for x in [d])  # an iterable
    assert [x.id for x in rep.checks] == ["a", "b", "c", "d"] and len(rep.table) == 1
    with pytest.raises(ValueError, match="duplicate check id 'a'"):
        rep.record([a])
    with pytest.raises(TypeError, match="takes checks; got dict"):
        rep.record([{"id": "e"}])
    plain = Report(tmp_path / "plain")
    plain.record(NotebookRun(params={}, checks=(b,), rows=(), budget=None, parts={}))  # no statistical check: no budget
    assert "false_alarm_budget" not in plain.extra
