"""The class supremum in the user-facing outputs: the figures plot the sup columns when asked (and only then), an
unknown metric is refused by name, the leaderboard's second ranking (table, disagreements, written summary, one
figure per data set) comes from the numbers, the assembler writes it, and the sweep panel's metric dropdown changes
the plotted metric."""
from __future__ import annotations

import json

import matplotlib

matplotlib.use("Agg")
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402
from board_records import records_for, write_run_records  # noqa: E402

from dpkit.board.report import (  # noqa: E402
    leaderboard_rows,
    ranking_disagreements,
    supremum_rows,
    supremum_summary_text,
)
from dpkit.outputs.figures.leaderboard import plot_leaderboard_supremum  # noqa: E402
from dpkit.outputs.figures.tables import plot_errors_vs_sigma, plot_sweep  # noqa: E402


def _sweep_rows():
    """Sweep rows whose thesis metric and class supremum differ everywhere (the supremum is 10× larger)."""
    return [{"value": v, "abs_mean": 0.01 * v, "abs_std": 0.001, "abs_min": 0.009 * v, "abs_max": 0.011 * v,
             "sup_abs_mean": 0.1 * v, "sup_abs_std": 0.01, "sup_abs_min": 0.08 * v, "sup_abs_max": 0.12 * v,
             "sup_note": ""} for v in (1, 2, 5)]


def _plotted(ax):
    """(mean line's y, band's lowest and highest y) of a sweep figure's axes."""
    mean = np.asarray(ax.containers[0].lines[0].get_ydata(), float)
    band = ax.collections[0].get_paths()[0].vertices[:, 1]
    return mean, band.min(), band.max()


@pytest.mark.parametrize("metric, prefix, label", [("thesis", "abs", "worst absolute error"),
                                                   ("supremum", "sup_abs", "class supremum of the absolute error")])
def test_sweep_figure_plots_the_chosen_metric(metric, prefix, label):
    rows = _sweep_rows()
    ax = plot_sweep(rows, xlabel="κ", metric=metric).axes[0]
    mean, lo, hi = _plotted(ax)
    assert mean.tolist() == [r[f"{prefix}_mean"] for r in rows]
    assert lo == min(r[f"{prefix}_min"] for r in rows) and hi == max(r[f"{prefix}_max"] for r in rows)
    assert ax.get_ylabel() == label


def test_an_unknown_metric_is_refused_by_name_and_rows_without_a_supremum_too():
    from dpkit.outputs.figures.metric import check_metric

    with pytest.raises(ValueError, match=r"metric must be one of \('thesis', 'supremum'\); got 'sup'"):
        plot_sweep(_sweep_rows(), xlabel="κ", metric="sup")
    with pytest.raises(ValueError, match=r"metric must be one of"):
        plot_errors_vs_sigma(_table_rows(), metric="workload")
    with pytest.raises(ValueError, match=r"METRIC must be one of"):
        check_metric("Thesis", name="METRIC")
    with pytest.raises(ValueError, match=r"kind must be 'abs' with metric='supremum'"):
        plot_errors_vs_sigma(_table_rows(), kind="rel", metric="supremum")
    bare = [{**r, "sup_abs_mean": None, "sup_abs_std": None, "sup_abs_min": None, "sup_abs_max": None,
             "sup_note": "direct answering: no answer for any other query"} for r in _sweep_rows()]
    with pytest.raises(ValueError, match=r"metric='supremum': rows without sup_abs_mean.*direct answering"):
        plot_sweep(bare, xlabel="κ", metric="supremum")
    plot_sweep(bare, xlabel="κ")  # the thesis metric needs no supremum


def _table_rows():
    rows = []
    for s in (2.0, 4.0):
        for i, mech in enumerate(("I", "II")):
            rows.append({"dataset": "WDBC", "sigma": s, "mechanism": mech, "constants": "correct",
                         "abs_mean": 0.01 * s + i, "abs_std": 0.001, "paper_abs": 0.02 * s,
                         "sup_abs_mean": 0.1 * s + i, "sup_abs_std": 0.002, "sup_note": ""})
    return rows


def test_tables_figure_plots_the_class_supremum_without_the_thesis_numbers():
    rows = _table_rows()
    for metric, col, n_lines in (("thesis", "abs_mean", 2), ("supremum", "sup_abs_mean", 0)):
        ax = plot_errors_vs_sigma(rows, metric=metric).axes[0]
        plotted = [np.asarray(c.lines[0].get_ydata(), float).tolist() for c in ax.containers]
        assert plotted == [[r[col] for r in rows if r["mechanism"] == m] for m in ("I", "II")]
        thesis = [ln for ln in ax.get_lines() if ln.get_label().endswith("thesis")]
        assert len(thesis) == n_lines  # the printed numbers are of the thesis metric: drawn only beside it
        assert ("class supremum" in ax.get_ylabel()) == (metric == "supremum")


def _method_row(method, privacy, abs_mean, sup, sigma=2.0, dataset="WDBC"):
    return {"dataset": dataset, "sigma": sigma, "method": method, "privacy": privacy, "abs_mean": abs_mean,
            "abs_std": 0.001, "rel_mean": 10 * abs_mean, "rel_std": 0.01, "time_s": 0.1, "eps_spent": 1.0,
            "delta_spent": 0.0, "reps": 2, "sup_abs_mean": sup, "sup_abs_std": None if sup is None else 0.001,
            "sup_note": "" if sup is not None else "direct answering: no answer for any other query"}


def _rows(scale=1.0):
    """Per σ: direct answering wins the thesis metric (no supremum), trig-I the class supremum in Table 3.2; in Table
    3.3 rap wins both."""
    rows = []
    for s in (2.0, 4.0):
        rows += [_method_row("trig-I", "ε-DP", 0.02 * s, 0.05 * s * scale, s),
                 _method_row("direct-laplace_I", "ε-DP", 0.01 * s, None, s),
                 _method_row("mst-eps", "ε-DP", 0.03 * s, 0.5 * s, s),
                 _method_row("trig-II", "(ε,δ)-DP", 0.04 * s, 0.2 * s * scale, s),
                 _method_row("rap", "(ε,δ)-DP", 0.001 * s, 0.01 * s, s)]
    return rows


def _board(rows):
    return leaderboard_rows(rows, records=records_for(rows))


def test_leaderboard_supremum_figure_plots_both_winners_on_both_metrics():
    board = _board(_rows())
    fig = plot_leaderboard_supremum(board, dataset="WDBC")
    for ax, privacy in zip(fig.axes, ("ε-DP", "(ε,δ)-DP")):
        cells = sorted((b for b in board if b["privacy"] == privacy), key=lambda b: b["sigma"])
        drawn = {(ln.get_marker(), ln.get_linestyle()): np.asarray(ln.get_ydata(), float) for ln in ax.get_lines()
                 if len(ln.get_xdata())}
        styles = {("o", "-"): "abs_mean", ("s", "--"): "sup_of_best", ("o", ":"): "abs_of_sup", ("s", "-."): "sup_abs_mean"}
        assert set(drawn) == set(styles)  # four curves, told apart by marker and line style
        for style, col in styles.items():
            np.testing.assert_array_equal(drawn[style], [b[col] for b in cells])
        notes = [t.get_text() for t in ax.texts]
        assert len(notes) == 2 * len(cells)  # each σ: the letters of both winners
    keyed = {t.get_text() for t in fig.legends[0].get_texts()}
    assert {"direct-laplace_I", "trig-I", "rap"} <= keyed and "best by class supremum: its class supremum" in keyed
    with pytest.raises(ValueError, match=r"dataset 'CRM' has no row on the board; its data sets: \['WDBC'\]"):
        plot_leaderboard_supremum(board, dataset="CRM")


def test_the_supremum_summary_is_written_from_the_numbers():
    rows = _rows()
    board = _board(rows)
    text = supremum_summary_text(board, rows)
    # trig-I: sup/abs = 0.05/0.02 = 2.5, trig-II: 0.2/0.04 = 5
    assert "errs 2.5 to 5 times as much as on the thesis metric" in text
    assert "trig-I (Table 3.2, 2 cells): a mean class supremum of 0.1 to 0.2 against a thesis metric of 0.04 to 0.08" in text
    assert "ranked 1 of the 2 methods with a class supremum (by the thesis metric 2 of 3)" in text
    assert "the best method by the class supremum in 2 of 2 cells, by the thesis metric in 0." in text
    assert "trig-II (Table 3.3, 2 cells)" in text and "ranked 3 of the 4 methods" in text
    assert "The two rankings name different best methods in 2 of the 4 cells ranked by both." in text
    other = _rows(scale=3.0)
    assert supremum_summary_text(_board(other), other) != text  # other numbers, other words
    assert "7.5 to 15 times" in supremum_summary_text(_board(other), other)
    # without the thesis's mechanism, and without any supremum
    rest = [r for r in rows if not r["method"].startswith("trig")]
    assert "has no class supremum on this board" in supremum_summary_text(_board(rest), rest)
    none = [{**r, "sup_abs_mean": None} for r in rows]
    assert supremum_summary_text(_board(none), none).startswith("No method on this board has a class supremum")


def test_assembler_writes_the_ranking_by_the_class_supremum(tmp_path, capsys):
    from dpkit.batch.assemble import main
    from dpkit.board.report import board_from_records

    for key, sigma in (("aaa", 2.0), ("bbb", 4.0)):
        d = tmp_path / "45_leaderboard" / key
        d.mkdir(parents=True)
        (d / "run.json").write_text(json.dumps({"status": "ok", "parameters": {}}))
        (d / "metrics.json").write_text(json.dumps({"checks": [], "table": []}))
        write_run_records(d, [r for r in _rows() if r["sigma"] == sigma])
    assert main(["leaderboard", str(tmp_path)]) == 0, capsys.readouterr().err
    out = tmp_path / "assembled"
    rows, board = board_from_records(records_for(_rows()))  # the runs' records, in memory
    table = pd.read_csv(out / "leaderboard_supremum.csv")
    assert table["method_sup"].tolist() == [b["method_sup"] for b in supremum_rows(board)]
    assert table["sup_abs_mean"].tolist() == pytest.approx([b["sup_abs_mean"] for b in board])
    assert (out / "leaderboard_supremum.md").read_text().count("trig-I") >= 2
    differ = pd.read_csv(out / "leaderboard_disagreements.csv")
    assert len(differ) == len(ranking_disagreements(board)) == 2
    assert set(differ["best_by_workload"]) == {"direct-laplace_I"} and set(differ["best_by_supremum"]) == {"trig-I"}
    assert (out / "leaderboard_supremum_summary.md").read_text() == supremum_summary_text(board, rows) + "\n"
    assert all((out / f"leaderboard_supremum_WDBC.{ext}").is_file() for ext in ("pdf", "png"))
    caption = (out / "leaderboard_supremum_WDBC.caption.txt").read_text()
    assert caption.startswith("WDBC: the leaderboard's two rankings") and "class supremum" in caption


def test_sweep_panel_metric_dropdown_changes_the_plotted_metric(monkeypatch):
    pytest.importorskip("ipywidgets")
    import dpkit.outputs.panels as panels
    from dpkit.methods.registry import get

    rows = _sweep_rows()
    monkeypatch.setattr(panels, "sweep", lambda *a, **k: {})
    monkeypatch.setattr(panels, "sweep_rows", lambda *a, **k: rows)
    panel = panels.sweep_panel(X=np.zeros((10, 2)), dataset="WDBC", method=get("trig-I"), param="kappa",
                               values=[1.0, 2.0, 5.0], sigma=4.0, epsilon=1.0, xlabel="κ", logx=False, title="t")
    ctl = panel.explorer
    assert type(ctl.controls["metric"]).__name__ == "Dropdown" and ctl.parameters["metric"] == "METRIC"
    assert list(ctl.controls["metric"].options) == ["thesis", "supremum"]
    mean, *_ = _plotted(ctl.figure.axes[0])
    assert mean.tolist() == [r["abs_mean"] for r in rows]  # the default: the thesis metric
    ctl.controls["metric"].value = "supremum"
    ctl.run(background=False)
    ax = ctl.figure.axes[0]
    assert _plotted(ax)[0].tolist() == [r["sup_abs_mean"] for r in rows], ctl.status.value
    assert ax.get_ylabel() == "class supremum of the absolute error"
    assert ctl.caption({"REPS": 3, "SIGMA": 4.0, "EPSILON": 1.0, "METRIC": "supremum"}).startswith(
        "Mean class supremum of the absolute error")
    with pytest.raises(ValueError, match="METRIC must be one of"):
        panels.sweep_panel(X=np.zeros((10, 2)), dataset="WDBC", method=get("trig-I"), param="kappa", values=[1.0],
                           sigma=4.0, epsilon=1.0, xlabel="κ", logx=False, title="t", metric="sup")


@pytest.mark.notebook
def test_sweep_notebook_plots_the_class_supremum_when_asked(run_notebook, tmp_path):
    """Notebook 21 in QUICK mode with METRIC = "supremum": its figure (a name of its own, the thesis's figure keeps
    its name) and caption are the class supremum's; the rows carry both metrics."""
    m = run_notebook("21_kappa_sweep.ipynb", METRIC="supremum")
    out = tmp_path / "21_kappa_sweep"
    assert m["params"]["METRIC"] == "supremum" and m["all_consistent"]
    assert (out / "21_kappa_sweep_supremum.pdf").is_file() and not (out / "21_kappa_sweep.pdf").exists()
    assert (out / "21_kappa_sweep_supremum.caption.txt").read_text().startswith("Mean class supremum")
    assert all(r["sup_abs_min"] <= r["sup_abs_mean"] <= r["sup_abs_max"] and r["sup_abs_mean"] >= r["abs_mean"]
               for r in m["table"])


@pytest.mark.notebook
def test_sweep_notebook_refuses_an_unknown_metric_by_name(run_notebook):
    import papermill as pm

    with pytest.raises(pm.PapermillExecutionError, match="METRIC must be one of"):
        run_notebook("22_k_sweep.ipynb", METRIC="sup")
