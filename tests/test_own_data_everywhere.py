"""Your own data everywhere a data set name goes: QUICK keeps it (notebooks 46 and 56), the labels give its
spec's name and never its path (notebooks 00/20/21/22 and their panels), ``python -m dpkit.data list`` shows it with
its source and checksum, ``make board STALE=...`` reaches the runner, and notebook 20's QUICK captions and table say
what ran (the queries actually used, no "(nan)" where the thesis printed nothing)."""
from __future__ import annotations

import hashlib
import importlib.metadata
import json
import re
import subprocess
import warnings
from pathlib import Path

import pandas as pd
import pytest
import yaml

import dpkit.data.spec as dspec
from dpkit.core.exceptions import PrivacyLeakWarning, QuickReplacementWarning

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "data" / "examples" / "diabetes.yaml"
SHA = yaml.safe_load(EXAMPLE.read_text())["sha256"]


def _cells(notebook: str) -> list[str]:
    nb = json.loads((ROOT / "notebooks" / notebook).read_text())
    return ["".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code"]


# ---- QUICK keeps your own data sets (notebooks 46 and 56, as 20/40/45 do) --------------------------------------------


def _derived_values(notebook: str, tmp_path: Path, **overrides) -> dict:
    """The notebook's parameters cell, then ``overrides`` (as papermill injects them), then its derived-values cell."""
    cells = _cells(notebook)
    ns: dict = {}
    exec(cells[0], ns)  # noqa: S102  (the parameters cell)
    ns.update(OUTPUT_DIR=str(tmp_path / "out"), **overrides)
    exec(cells[1], ns)  # noqa: S102
    return ns


def test_notebook_46_quick_keeps_your_own_data_set(tmp_path):
    ns = _derived_values("46_add_your_method.ipynb", tmp_path, QUICK=True, DATASETS=[str(EXAMPLE), "CRM"])
    assert ns["DATASETS"] == [str(EXAMPLE)] and ns["REPS"] == 4
    with pytest.warns(QuickReplacementWarning, match=r"QUICK replaces DATASETS=\['CRM'\] by \['WDBC'\]"):
        ns = _derived_values("46_add_your_method.ipynb", tmp_path, QUICK=True, DATASETS=["CRM"])
    assert ns["DATASETS"] == ["WDBC"]


class _Stop(Exception):
    pass


def _quick_pca_datasets(monkeypatch, datasets: list[str]) -> list[str]:
    """The data sets notebook 56's QUICK run keeps (:func:`notebook_checks`, stopped before its first check)."""
    import dpkit.claims.private_pca as pp

    kept: list = []
    real = pp.quick_values

    def spy(given, quick, **kw):
        out = real(given, quick, **kw)
        kept.extend(out) if kw.get("name") == "datasets" else None
        return out

    def stop(**_kw):
        raise _Stop

    monkeypatch.setattr(pp, "quick_values", spy)
    monkeypatch.setattr(pp, "lemma27", stop)
    with pytest.raises(_Stop):
        pp.notebook_checks(0, True, 0.01, epsilon=1.0, delta=1e-3, k=2, n_iter=10, lemma_sizes=[[50, 3]],
                           n_mu_draws=10, audit_samples=10, rate_ns=[100], rate_d=2, rate_reps=2, datasets=datasets)
    return kept


def test_notebook_56_quick_keeps_your_own_data_set(monkeypatch):
    assert _quick_pca_datasets(monkeypatch, ["CRM", str(EXAMPLE), "CTG"]) == [str(EXAMPLE), "CTG"]
    with pytest.warns(QuickReplacementWarning, match=r"QUICK replaces datasets=\['CRM'\] by \['WDBC', 'CTG'\]"):
        assert _quick_pca_datasets(monkeypatch, ["CRM"]) == ["WDBC", "CTG"]


def test_quick_datasets_takes_several_defaults():
    from dpkit.data import quick_datasets

    assert quick_datasets(["CTG", str(EXAMPLE), "CRM"], default=("WDBC", "CTG")) == ["CTG", str(EXAMPLE)]
    assert quick_datasets(["CRM"], default=("WDBC", "CTG")) == ["WDBC", "CTG"]
    assert quick_datasets(["CRM", "WDBC"]) == ["WDBC"]


# ---- labels: its spec's name, never its path ------------------------------------------------------------------------

# a notebook line that writes the DATASET argument (a spec file's path for your own data) into a label, a row's
# data set, a figure's parameters or a panel's data set (run.json keeps the argument)
_ARGUMENT_LABEL = re.compile(r"\{DATASET[}!:]|\{p\['DATASETS?'\](\[0\])?\}|dataset=DATASET\b|\"dataset\": \"DATASET\"")


def test_no_notebook_labels_a_data_set_with_its_argument():
    bad = [f"{nb.name}: {line.strip()}" for nb in sorted((ROOT / "notebooks").glob("*.ipynb"))
           for cell in _cells(nb.name) for line in cell.splitlines() if _ARGUMENT_LABEL.search(line)]
    assert bad == []


def test_the_panels_write_your_spec_file_into_commands_and_label_with_the_name(tmp_path):
    from dpkit.data import load
    from dpkit.outputs.widgets import as_dataset, dataset_label, notebook_parameters

    spec = tmp_path / "mine.yaml"
    spec.write_text(EXAMPLE.read_text())
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert load(str(spec)).name == "diabetes"
    assert as_dataset("diabetes") == str(spec) and as_dataset("WDBC") == "WDBC"
    assert notebook_parameters({"dataset": "diabetes"}, {"dataset": ("DATASET", as_dataset)}) == {"DATASET": str(spec)}
    # a panel's caption names the data set of a command's DATASET(S) value by its spec's name
    assert dataset_label(str(spec)) == "diabetes" and dataset_label("WDBC") == "WDBC"


@pytest.mark.slow
@pytest.mark.notebook
def test_a_quick_sweep_on_a_spec_file_is_labelled_with_the_specs_name(tmp_path):
    from dpkit.batch.cli import main

    out = tmp_path / "run"
    assert main(["notebook", str(ROOT / "notebooks" / "21_kappa_sweep.ipynb"), "--output", str(out), "-p", "QUICK",
                 "true", "-p", "DATASET", json.dumps(str(EXAMPLE)), "-p", "INTERACTIVE", "false"]) == 0
    table = pd.read_csv(out / "21_kappa_sweep.csv")
    assert set(table["dataset"]) == {"diabetes"}
    caption = (out / "21_kappa_sweep.caption.txt").read_text()  # the figure's caption and parameters
    assert "on diabetes against" in caption and "dataset=diabetes;" in caption and ".yaml" not in caption
    table_tex = (out / "21_kappa_sweep.tex").read_text()  # the table's caption
    assert "on diabetes against" in table_tex and ".yaml" not in table_tex
    assert json.loads((out / "run.json").read_text())["parameters"]["DATASET"] == str(EXAMPLE)  # what ran


# ---- python -m dpkit.data list: your own data sets with their source and checksum ----------------------------------


def test_data_list_shows_a_spec_file_with_its_source_and_checksum(capsys):
    from dpkit.data.__main__ import main

    assert main(["list", str(EXAMPLE), "WDBC"]) == 0
    out = capsys.readouterr().out
    line = next(x for x in out.splitlines() if x.startswith("diabetes"))
    assert f"spec file {EXAMPLE}" in line
    assert f"sha256 {SHA} (ok)" in out and "package sklearn.datasets.data" in out
    assert "WDBC  Breast Cancer" in out  # the registry's still listed as before
    assert main(["verify", str(EXAMPLE)]) == 0
    assert "diabetes OK" in capsys.readouterr().out


def test_data_list_names_a_file_that_is_not_the_declared_one(tmp_path, capsys):
    from dpkit.data.__main__ import main

    pd.DataFrame({"a": [1.0, 2.0, 3.0]}).to_csv(tmp_path / "a.csv", index=False)
    real = hashlib.sha256((tmp_path / "a.csv").read_bytes()).hexdigest()
    spec = tmp_path / "a.yaml"
    spec.write_text(yaml.safe_dump({"name": "a-set", "path": "a.csv", "sha256": "0" * 64, "bounds": [0, 4]}))
    assert main(["list", str(spec)]) == 1
    out = capsys.readouterr().out
    assert f"sha256 {real} (MISMATCH)" in out and "its spec says " + "0" * 64 in out
    spec.write_text(yaml.safe_dump({"name": "a-set", "path": "a.csv", "bounds": [0, 4]}))
    assert main(["list", str(spec)]) == 0
    assert f"sha256 {real} (none declared)" in capsys.readouterr().out
    assert main(["list", str(tmp_path / "nope.yaml")]) == 1
    assert "nope.yaml does not exist" in capsys.readouterr().out


def test_data_list_shows_the_installed_entry_points(tmp_path, monkeypatch, capsys):
    from dpkit.data.__main__ import main

    eps = [importlib.metadata.EntryPoint(name="pkg-diabetes", value=f"{__name__}:_EXAMPLE_PATH", group="dpkit.datasets")]
    real = importlib.metadata.entry_points
    monkeypatch.setattr(dspec.importlib.metadata, "entry_points",
                        lambda **kw: eps if kw.get("group") == "dpkit.datasets" else real(**kw))
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    line = next(x for x in out.splitlines() if x.startswith("pkg-diabetes"))
    assert "entry point 'pkg-diabetes'" in line and f"sha256 {SHA} (ok)" in out
    assert "CRM " in out  # and the registry's


_EXAMPLE_PATH = str(EXAMPLE)


# ---- make board STALE=...: the runner's policies reach it ------------------------------------------------------------


def test_the_board_command_passes_the_stale_policy_to_the_runner(tmp_path, monkeypatch, capsys):
    import dpkit.batch.runner as runner
    from dpkit.batch.cli import main
    from dpkit.batch.stale import StaleRunsError

    seen: dict = {}

    def fake_run_manifest(manifest, **kw):
        seen.update(kw)
        raise StaleRunsError("1 finished run(s) of a changed notebook: x (--stale rerun|keep)")

    monkeypatch.setattr(runner, "run_manifest", fake_run_manifest)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        assert main(["board", str(EXAMPLE), "--quick", "--out", str(tmp_path / "b"), "--scheduler", "sync",
                     "--stale", "verify", "--verify-reps", "3"]) == 2
    assert seen["on_stale"] == "verify" and seen["verify_reps"] == 3
    assert "changed notebook" in capsys.readouterr().err
    seen.clear()
    assert main(["board", str(EXAMPLE), "--quick", "--out", str(tmp_path / "b"), "--scheduler", "sync"]) == 2
    assert seen["on_stale"] == "error"  # the default: the runner names stale runs and stops


def test_make_board_passes_stale_through():
    cmd = ["make", "-s", "-n", "-o", ".venv/.dpkit-installed", "board", "DATA=x.yaml", "STALE=rerun", "VERIFY_REPS=3"]
    out = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, check=True).stdout
    assert "-m dpkit.batch board 'x.yaml'" in out and "--stale rerun --verify-reps 3" in out


# ---- notebook 20: the caption says the queries used; no "(nan)" where the thesis printed nothing ---------------------


def test_the_tables_caption_states_the_runs_queries_and_budget():
    from dpkit.outputs.figures.tables import TABLES_CAPTION, tables_caption

    rows = [{"dataset": "WDBC", "paper_abs": 0.05, "paper_rel": 0.1}]
    published = TABLES_CAPTION.format(kind="absolute")
    assert tables_caption(rows, kind="abs") == published
    assert tables_caption(rows, kind="abs", n_queries=10000, epsilon=1.0, delta=1e-3) == published
    quick = tables_caption(rows, kind="abs", n_queries=1000, epsilon=1.0, delta=1e-3)
    assert "10³ queries per repetition" in quick and "10⁴" not in quick
    other = tables_caption(rows, kind="abs", n_queries=300, epsilon=0.5, delta=2e-5)
    assert "ε = 0.5, δ = 2e-05, 300 queries per repetition" in other
    runs = tables_caption(rows, kind="abs", n_queries=[10000, 200, 10000], epsilon=1.0, delta=1e-3)
    assert "ε = 1, δ = 10⁻³, 200–10⁴ queries per repetition" in runs  # runs of several sizes: their range
    assert tables_caption(rows, kind="abs", n_queries=[10000], epsilon=1.0, delta=1e-3) == published


def test_the_comparison_table_prints_no_nan_where_the_thesis_printed_nothing():
    from dpkit.outputs.tables import paper_comparison_table

    base = {"sigma": 2.0, "mechanism": "I", "constants": "correct", "abs_mean": 0.05, "abs_std": 0.01,
            "rel_mean": 0.1, "rel_std": 0.02, "time_max_s": 0.3}
    own = dict(base, dataset="diabetes", paper_abs=float("nan"), paper_rel=float("nan"), paper_time_s=float("nan"))
    thesis = dict(base, dataset="WDBC", paper_abs=0.06, paper_rel=0.2, paper_time_s=1.5)
    table = paper_comparison_table([own, thesis])
    cells = table.astype(str).to_numpy().ravel().tolist()
    assert not any("nan" in c for c in cells)
    mine = table[table["dataset"] == "diabetes"].set_index("error")
    assert mine.loc["abs", "σ=2"] == "0.050 ± 0.010" and mine.loc["abs", "worst time (s)"] == "0.30"
    theirs = table[table["dataset"] == "WDBC"].set_index("error")
    assert theirs.loc["abs", "σ=2"] == "0.050 ± 0.010 (0.060)" and theirs.loc["abs", "worst time (s)"] == "0.30 (1.5)"


def test_data_fetch_of_a_spec_files_url_is_offline_when_asked(tmp_path, monkeypatch, capsys):
    from dpkit.data.__main__ import main

    monkeypatch.setenv("DPKIT_OFFLINE", "1")
    monkeypatch.setenv("DPKIT_DATA_DIR", str(tmp_path))
    spec = tmp_path / "r.yaml"
    spec.write_text(yaml.safe_dump({"name": "remote-a", "url": "https://example.invalid/a.csv", "sha256": "0" * 64,
                                    "bounds": [0, 4]}))
    assert main(["fetch", str(spec)]) == 1
    out = capsys.readouterr().out
    assert "remote-a: could not fetch" in out and "downloads are off" in out
    assert main(["fetch", str(EXAMPLE)]) == 0 and "diabetes: all files present" in capsys.readouterr().out
