"""The widget explorer calls the batch-path function with the controls' values; every notebook panel
maps its controls one to one onto notebook parameters, and its papermill call, manifest and figure
export are valid for the batch runner; the repetition hook never changes results and can cancel."""
from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("ipywidgets")

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"


def test_explorer_runs_function_with_control_values():
    import matplotlib.pyplot as plt

    from dpkit.outputs.widgets import explorer

    calls = []

    def fn(data, eps, name, delta, k):
        calls.append((data, eps, name, delta, k))
        fig, ax = plt.subplots()
        return fig

    panel = explorer(fn, {"eps": ((0.1, 2.0, 0.1), 1.0), "name": (["WDBC", "CRM"], "CRM"),
                          "delta": (("log", 1e-5, 1e-1), 1e-3), "k": ((1, 10, 1), 3)},
                     fixed={"data": "D"})
    assert calls == [("D", 1.0, "CRM", pytest.approx(1e-3), 3)]
    assert type(panel).__name__ == "VBox"


def test_explorer_shows_errors_instead_of_raising():
    from dpkit.outputs.widgets import explorer

    def fn(eps):
        raise ValueError("epsilon must be > 0")

    panel = explorer(fn, {"eps": ((0.1, 2.0, 0.1), 1.0)})
    html = panel.children[0].children[1].children[1].value
    assert "ValueError" in html and "epsilon" in html


def test_bad_control_spec():
    from dpkit.outputs.widgets import make_control

    with pytest.raises(ValueError, match="unsupported spec"):
        make_control("x", object(), 1)


def test_parameter_map_must_be_one_to_one_and_complete():
    from dpkit.outputs.widgets import explorer

    nb = NOTEBOOKS / "00_quickstart.ipynb"
    ctrls = {"eps": ((0.1, 2.0, 0.1), 1.0), "sigma": ([2.0, 4.0], 4.0)}
    with pytest.raises(ValueError, match=r"\['sigma'\] map onto no notebook parameter"):
        explorer(lambda eps, sigma: None, ctrls, notebook=nb, parameters={"eps": "EPSILON"}, run_on_start=False)
    with pytest.raises(ValueError, match=r"\['SIGMA'\] are set by more than one control"):
        explorer(lambda eps, sigma: None, ctrls, notebook=nb, parameters={"eps": "SIGMA", "sigma": "SIGMA"},
                 run_on_start=False)
    with pytest.raises(ValueError, match="needs the map"):
        explorer(lambda eps, sigma: None, ctrls, notebook=nb, run_on_start=False)


# ----------------------------------------------------------------------------- the notebooks' panels
def _cell(nb: str, predicate) -> str:
    import nbformat

    cells = [c.source for c in nbformat.read(NOTEBOOKS / f"{nb}.ipynb", as_version=4).cells
             if c.cell_type == "code" and predicate(c)]
    assert len(cells) == 1, f"{nb}: expected one matching cell, found {len(cells)}"
    return cells[0]


def _fake_result(**kw):
    import matplotlib.pyplot as plt
    import pandas as pd

    fig, ax = plt.subplots()
    ax.plot([0, 1], [0, 1])
    return fig, pd.DataFrame([{k: str(v) for k, v in kw.items() if not isinstance(v, np.ndarray)}])


def _panel_of(nb: str, monkeypatch, **overrides):
    """Run the notebook's parameters cell, then its ``if INTERACTIVE:`` cell (real widgets and parameter
    map; the computation replaced by a fake figure + table), in the notebooks folder as Jupyter does."""
    import pandas as pd
    from IPython.display import Markdown

    import dpkit as dp
    import dpkit.outputs.panels as panels
    from dpkit.methods.registry import get

    monkeypatch.setattr(panels, "explore", _fake_result)
    monkeypatch.setattr(panels, "explore_sweep", _fake_result)
    monkeypatch.chdir(NOTEBOOKS)
    ns: dict = {}
    exec(_cell(nb, lambda c: "parameters" in c.metadata.get("tags", [])), ns)
    shown = []
    X = np.zeros((20, 4))
    name = ns.get("DATASET", "CRM")  # the earlier cells' data set (ds) and its name (NAME), loaded from DATASET
    # a sweep notebook's run (dp.sweep_notebook): its data, name, method, QUICK grid and C
    run = type("SweepRun", (), {"X": X, "name": name, "method": get("trig-I"), "values": ns.get("VALUES"), "C": ns.get("C")})()
    ns.update(INTERACTIVE=True, display=shown.append, X=X, data={"CRM": type("D", (), {"X": X})()}, method=get("trig-I"),
              PARAM="kappa", XLABEL="x", LOGX=False, pd=pd, Markdown=Markdown, methods={}, dp=dp, run=run,
              ds=type("D", (), {"X": X, "name": name})(), NAME=name, **overrides)
    exec(_cell(nb, lambda c: c.source.startswith("if INTERACTIVE")), ns)
    assert len(shown) == 1
    ctl = shown[0].explorer
    assert ctl.figure is not None or "40_baselines" in nb, ctl.status.value  # the run on start worked
    return ctl


@pytest.mark.parametrize("nb", ["00_quickstart", "20_tables", "21_kappa_sweep", "22_k_sweep", "40_baselines"])
def test_notebook_panel_command_and_manifest_are_valid(nb, monkeypatch, tmp_path):
    import shlex

    from dpkit.batch import check_parameters, expand_manifest, load_manifest
    from dpkit.batch.cli import parse_params

    ctl = _panel_of(nb, monkeypatch)
    ctl.results = tmp_path
    # every control sets exactly one notebook parameter
    mapped = [ctl.parameters[c] for c in ctl.controls]
    assert len({m if isinstance(m, str) else m[0] for m in mapped}) == len(ctl.controls)
    # change a control: the command follows the current setting
    ctl.controls["reps"].value = 4
    cmd = ctl.copy_command()
    assert ctl.text.value == cmd
    argv = shlex.split(cmd)
    assert argv[:5] == ["python", "-m", "dpkit.batch", "notebook", f"notebooks/{nb}.ipynb"]
    assert argv[5] == "--output" and argv[6].startswith(f"results/{nb}-")
    pairs = [argv[i + 1:i + 3] for i in range(7, len(argv), 3)]
    assert all(argv[i] == "-p" for i in range(7, len(argv), 3))
    params = parse_params(pairs)
    assert params == ctl.notebook_parameters() and params["REPS"] == 4
    check_parameters(NOTEBOOKS / f"{nb}.ipynb", params)  # names and types fit the parameters cell
    path = ctl.save_manifest()
    assert path is not None and path.parent == tmp_path / "manifests" and path.name.startswith(f"{nb}-")
    assert str(path) in ctl.text.value
    specs = expand_manifest(load_manifest(path))
    assert len(specs) == 1 and specs[0].notebook == (NOTEBOOKS / f"{nb}.ipynb").resolve()
    assert specs[0].parameters == params
    assert ctl.save_manifest() != path  # a second save in the same second gets its own file


def test_export_figure_writes_paper_figure_named_by_parameters(monkeypatch, tmp_path):
    import dpkit.outputs.plotting as plotting
    from dpkit.outputs.widgets import parameters_hash

    monkeypatch.setattr(plotting, "paper_figures_dir", lambda: tmp_path / "figures")
    ctl = _panel_of("21_kappa_sweep", monkeypatch)
    ctl.results = tmp_path / "results"
    ctl.controls["sigma"].value = 6.0
    first = ctl.export()  # the figure of the run on start (σ = 4)
    assert any(p.parent == tmp_path / "figures" and p.suffix == ".pdf" for p in first)
    ctl.run(background=False)
    params = ctl.notebook_parameters()
    assert params["SIGMA"] == 6.0 and ctl.figure_params == params
    paths = ctl.export()
    stem = f"21_kappa_sweep__kappa_sweep_{parameters_hash(params)}"
    assert {p.name for p in paths if p.parent == tmp_path / "figures"} == {f"{stem}.pdf", f"{stem}.png",
                                                                            f"{stem}.caption.txt"}
    caption = (tmp_path / "figures" / f"{stem}.caption.txt").read_text()
    assert "σ = 6" in caption and "SIGMA=6.0" in caption
    assert "of mechanism I on CSN" in caption and "δ =" not in caption.split("\n")[0]  # ε-DP: no δ in the text
    assert all(str(p) in ctl.text.value for p in paths)


# ----------------------------------------------------------------------------- progress and cancel
@pytest.fixture(scope="module")
def X():
    from dpkit.data import load

    return load("mock", n=300, d=4, rng=1).X


def _methods():
    from dpkit.experiments import table_methods

    return table_methods(("I",), ("correct",), C=300, R=10)


def test_repetition_hook_sees_every_repetition_and_changes_no_result(X):
    from dpkit.experiments.protocol import run_cell
    from dpkit.experiments.records import on_repetitions

    plain = run_cell(X, methods=_methods(), sigma=2.0, reps=3, n_queries=100, rng=7)
    seen, ctx = [], []
    hooked = run_cell(X, methods=_methods(), sigma=2.0, reps=3, n_queries=100, rng=7,
                      on_repetition=lambda i, n: seen.append((i, n)))
    with on_repetitions(lambda i, n: ctx.append(i)):
        in_ctx = run_cell(X, methods=_methods(), sigma=2.0, reps=3, n_queries=100, rng=7)
    assert seen == [(0, 3), (1, 3), (2, 3)] and ctx == [0, 1, 2]
    for a, b, c in zip(plain, hooked, in_ctx):
        assert a.abs == b.abs == c.abs and a.rel == b.rel == c.rel  # bit for bit


def test_stop_cancels_between_repetitions(X):
    from dpkit.experiments.protocol import run_cell
    from dpkit.outputs.widgets import explorer

    started, release = threading.Event(), threading.Event()

    def fn(reps):
        started.set()
        assert release.wait(60)
        # no callback passed: the panel's hook reaches this run through on_repetitions
        return run_cell(X, methods=_methods(), sigma=2.0, reps=reps, n_queries=50, rng=0)

    panel = explorer(fn, {"reps": ((1, 10, 1), 5)}, run_on_start=False)
    ctl = panel.explorer
    ctl.run()  # in a worker thread
    assert started.wait(60)
    assert ctl.run_button.disabled and not ctl.stop_button.disabled
    ctl.stop_button.click()
    release.set()
    ctl.thread.join(120)
    assert not ctl.thread.is_alive()
    assert "stopped after 1 repetitions" in ctl.status.value
    assert (ctl.progress.value, ctl.progress.max) == (1, 5)
    assert not ctl.run_button.disabled and ctl.stop_button.disabled
    assert ctl.figure is None  # nothing shown from a cancelled run


# ----------------------------------------------------------------------------- the setting is the whole run
_NOT_SETTINGS = {"QUICK", "INTERACTIVE", "OUTPUT_DIR", "PAPER_FIGURES", "FALSE_ALARM"}  # how to run and check, not what
# to compute


@pytest.mark.parametrize("nb", ["00_quickstart", "21_kappa_sweep", "22_k_sweep"])
def test_panel_command_sets_every_parameter_of_the_computation(nb, monkeypatch):
    """The papermill call / manifest spells out every notebook parameter the computation reads, so the batch run
    computes with the panel's setting even when the notebook was opened with non-default values (e.g. KAPPA)."""
    import ast

    ctl = _panel_of(nb, monkeypatch)
    names = {node.target.id for node in ast.parse(_cell(nb, lambda c: "parameters" in c.metadata.get("tags", []))).body
             if isinstance(node, ast.AnnAssign)}
    assert sorted(names - _NOT_SETTINGS - set(ctl.notebook_parameters())) == []


def test_quickstart_panel_figure_reads_in_grayscale(X):
    """The quickstart panel's figure tells mechanism I from II, and ours from the thesis's, by marker and line
    style (a grayscale copy drops the colour); repetitions are integer ticks."""
    import io

    import matplotlib.image

    from dpkit.outputs.panels import explore

    fig, table = explore(X=X, dataset="WDBC", epsilon=1.0, delta=1e-3, sigma=4.0, kappa=7.0, k=2, C=300, R=10, reps=3,
                         n_queries=100)
    ax = fig.axes[0]
    styles = [(line.get_marker(), line.get_linestyle(), str(line.get_markerfacecolor())) for line in ax.lines]
    assert len(styles) == 4 and len(set(styles)) == 4, styles  # I, thesis I, II, thesis II
    assert all(float(t).is_integer() for t in ax.get_xticks())
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=60)
    gray = matplotlib.image.imread(io.BytesIO(buf.getvalue()))[..., :3] @ np.array([0.299, 0.587, 0.114])
    assert gray.std() > 0.05
    assert list(table["method"]) == ["trig-I", "trig-II"]


def test_figures_and_results_folders_follow_the_environment(monkeypatch, tmp_path):
    """``$DPKIT_FIGURES_DIR`` / ``$DPKIT_RESULTS_DIR`` redirect the panels' exports and manifests (the browser tests
    point them at scratch folders, so pressing the buttons never writes into the repository)."""
    from dpkit.core.paths import figures_dir, repo_root, results_dir

    monkeypatch.delenv("DPKIT_FIGURES_DIR", raising=False)
    monkeypatch.delenv("DPKIT_RESULTS_DIR", raising=False)
    assert figures_dir() == repo_root() / "figures" and results_dir() == repo_root() / "results"
    monkeypatch.setenv("DPKIT_FIGURES_DIR", str(tmp_path / "f"))
    monkeypatch.setenv("DPKIT_RESULTS_DIR", str(tmp_path / "r"))
    assert figures_dir() == tmp_path / "f" and results_dir() == tmp_path / "r"


@pytest.mark.parametrize("nb", ["00_quickstart", "20_tables", "21_kappa_sweep", "22_k_sweep"])
def test_every_panel_exports_its_figure_with_caption_and_parameters(nb, monkeypatch, tmp_path):
    import dpkit.outputs.plotting as plotting

    monkeypatch.setattr(plotting, "paper_figures_dir", lambda: tmp_path / "figures")
    ctl = _panel_of(nb, monkeypatch)
    ctl.results = tmp_path / "results"
    paths = ctl.export()
    assert "figure exported" in ctl.info.value, ctl.info.value
    captions = [p for p in paths if p.parent == tmp_path / "figures" and p.name.endswith(".caption.txt")]
    assert len(captions) == 1
    text = captions[0].read_text()
    assert "Parameters:" in text and "ε" in text.split("Parameters:")[0] and "σ" in text.split("Parameters:")[0], text


@pytest.mark.parametrize("nb", ["21_kappa_sweep", "22_k_sweep"])
def test_quick_session_says_the_batch_run_uses_the_whole_data_set(nb, monkeypatch, tmp_path):
    """A QUICK session's sweep panel runs on a subsample, which no notebook parameter expresses: the command and the
    manifest say so next to them (and say nothing in a full session)."""
    ctl = _panel_of(nb, monkeypatch, QUICK=True)
    ctl.results = tmp_path
    ctl.copy_command()
    assert "QUICK session" in ctl.info.value and "whole data set" in ctl.info.value
    ctl.save_manifest()
    assert "QUICK session" in ctl.info.value
    full = _panel_of(nb, monkeypatch)
    full.results = tmp_path
    full.copy_command()
    assert "QUICK" not in full.info.value
