"""Batch runner: keys, resume, failure capture, collect, and a two-worker local Dask cluster."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from dpkit import batch

FIXTURE = Path(__file__).parent / "fixtures" / "batch_fixture.ipynb"


def _manifest(tmp_path: Path, grid: dict, parameters: dict | None = None) -> Path:
    nb = tmp_path / "batch_fixture.ipynb"
    shutil.copy(FIXTURE, nb)
    import yaml

    m = {"name": "t", "output": "out", "defaults": {"QUICK": True},
         "runs": [{"notebook": "batch_fixture.ipynb", "parameters": parameters or {}, "grid": grid}]}
    p = tmp_path / "m.yaml"
    p.write_text(yaml.safe_dump(m))
    return p


def test_run_key_ignores_output_dir_and_depends_on_params():
    a = batch.run_key("x.ipynb", {"SEED": 1, "OUTPUT_DIR": "a"})
    assert a == batch.run_key("x.ipynb", {"SEED": 1, "OUTPUT_DIR": "b", "INTERACTIVE": False})
    assert a == batch.run_key("x.ipynb", {"SEED": 1, "REP_WORKERS": 2})  # same records (tests/test_checkpoint.py)
    assert a != batch.run_key("x.ipynb", {"SEED": 2})
    assert a != batch.run_key("y.ipynb", {"SEED": 1})


def test_expand_grid_is_cartesian(tmp_path):
    m = batch.load_manifest(_manifest(tmp_path, {"SEED": [0, 1, 2], "X": [1.0, 2.0]}))
    specs = batch.expand_manifest(m)
    assert len(specs) == 6
    assert len({s.key for s in specs}) == 6
    assert all(s.parameters["QUICK"] is True for s in specs)


@pytest.mark.parametrize("bad, msg", [
    ({"runs": []}, "non-empty list 'runs'"),
    ({"runs": [{"parameters": {}}]}, "'notebook' key"),
    ({"runs": [{"notebook": "a.ipynb", "grid": {"SEED": []}}]}, "non-empty list"),
    ({"runs": [{"notebook": "a.ipynb", "grdi": {}}]}, "unknown keys"),
])
def test_bad_manifests(tmp_path, bad, msg):
    import yaml

    p = tmp_path / "bad.yaml"
    p.write_text(yaml.safe_dump(bad))
    with pytest.raises(ValueError, match=msg):
        batch.load_manifest(p)


@pytest.mark.notebook
def test_sync_resume_failure_and_collect(tmp_path):
    mpath = _manifest(tmp_path, {"SEED": [0, 1], "FAIL": [False, True]})
    res = batch.run_manifest(mpath, scheduler="sync")
    status = sorted(r["status"] for r in res)
    assert status == ["failed", "failed", "ok", "ok"]
    out = tmp_path / "out"
    failed = [r for r in res if r["status"] == "failed"]
    for r in failed:
        folder = Path(r["folder"])
        assert "deliberate failure" in (folder / "error.txt").read_text()
        assert json.loads((folder / "run.json").read_text())["status"] == "failed"
    # run.json names the run's final folder, not the temporary one it executed in
    for r in res:
        assert json.loads((Path(r["folder"]) / "run.json").read_text())["parameters"]["OUTPUT_DIR"] == r["folder"]
        # and so does the executed notebook (its injected parameters cell and papermill's metadata)
        [executed] = [p.read_text() for p in Path(r["folder"]).glob("*.ipynb")]
        assert ".tmp-" not in executed and json.dumps(r["folder"]) in executed
    # no temporary folders are left behind
    assert not list(out.glob("*/.*tmp*"))
    # second run: the finished runs are skipped, the failed ones are tried again
    res2 = batch.run_manifest(mpath, scheduler="sync")
    assert sorted(r["status"] for r in res2) == ["failed", "failed", "skipped", "skipped"]
    table, checks = batch.collect(out)
    assert len(table) == 2 and set(table["param_SEED"]) == {0, 1}
    # the two failed runs are not hidden: listed by folder
    assert sorted(str(p.path) for p in table.attrs["problems"]) == sorted(r["folder"] for r in failed)
    assert (checks["verdict"] == "PASS").all()
    assert (out / "collected.csv").is_file()


@pytest.mark.notebook
def test_cli_exit_code_nonzero_on_failure(tmp_path):
    mpath = _manifest(tmp_path, {"FAIL": [True]})
    assert batch.main(["run", str(mpath), "--scheduler", "sync"]) == 1
    mpath2 = _manifest(tmp_path / "b" if (tmp_path / "b").mkdir() is None else tmp_path, {"FAIL": [False]})
    assert batch.main(["run", str(mpath2), "--scheduler", "sync"]) == 0


@pytest.mark.notebook
@pytest.mark.slow
def test_two_worker_local_dask_cluster(tmp_path):
    mpath = _manifest(tmp_path, {"SEED": [0, 1, 2]})
    res = batch.run_manifest(mpath, scheduler="local", workers=2)
    assert sorted(r["status"] for r in res) == ["ok", "ok", "ok"]
    again = batch.run_manifest(mpath, scheduler="local", workers=2)
    assert all(r["status"] == "skipped" for r in again)


def test_glob_notebooks_and_shipped_manifests(tmp_path):
    import yaml

    for name in ("a_1.ipynb", "a_2.ipynb", "b.ipynb"):
        shutil.copy(FIXTURE, tmp_path / name)
    p = tmp_path / "g.yaml"
    p.write_text(yaml.safe_dump({"runs": [{"notebook": "a_*.ipynb", "grid": {"SEED": [0, 1]}}]}))
    specs = batch.expand_manifest(batch.load_manifest(p))
    assert sorted({s.notebook.name for s in specs}) == ["a_1.ipynb", "a_2.ipynb"] and len(specs) == 4
    p.write_text(yaml.safe_dump({"runs": [{"notebook": "a_*.ipynb", "exclude": ["a_2*"]}]}))
    assert [s.notebook.name for s in batch.expand_manifest(batch.load_manifest(p))] == ["a_1.ipynb"]
    p.write_text(yaml.safe_dump({"runs": [{"notebook": "zzz_*.ipynb"}]}))
    with pytest.raises(FileNotFoundError, match="no notebook matches"):
        batch.expand_manifest(batch.load_manifest(p))
    # the shipped manifests parse, and the smoke manifest covers every numbered notebook
    root = Path(__file__).resolve().parents[1] / "notebooks"
    smoke = batch.expand_manifest(batch.load_manifest(root / "manifests" / "smoke.yaml"))
    assert {s.notebook.name for s in smoke} == {p.name for p in root.glob("[0-9][0-9]_*.ipynb")} - {"59_checks_summary.ipynb"}
    assert all(s.parameters["QUICK"] is True for s in smoke)
    full = batch.expand_manifest(batch.load_manifest(root / "manifests" / "full.yaml"))
    assert all(s.parameters["QUICK"] is False for s in full)
    # every parameter of every shipped manifest fits its notebook's parameters cell (expand validates)
    tables = batch.expand_manifest(batch.load_manifest(root / "manifests" / "tables.yaml"))
    assert {s.notebook.name for s in tables} == {"20_tables.ipynb"} and len(tables) == 14
    assert sum(s.parameters.get("SENSITIVITY_DATASET") == "WDBC" for s in tables) == 1  # the sweep runs once
    # the leaderboard: one run per data set with all five σ (σ-independent releases shared within a run)
    board = batch.expand_manifest(batch.load_manifest(root / "manifests" / "leaderboard.yaml"))
    assert sorted(tuple(s.parameters["DATASETS"]) for s in board) == [("CRM",), ("CSN",), ("CTG",), ("PKS",), ("WDBC",)]
    assert all(s.parameters["SIGMAS"] == [2.0, 4.0, 6.0, 8.0, 10.0] and s.parameters["REPS"] == 30 for s in board)
    # AIM (suite "slow") apart, into the same output folder: its run keys differ from the board's, so no cell twice
    aim = batch.expand_manifest(batch.load_manifest(root / "manifests" / "leaderboard_aim.yaml"))
    assert sorted(tuple(s.parameters["DATASETS"]) for s in aim) == [("CRM",), ("CSN",), ("CTG",), ("PKS",), ("WDBC",)]
    assert all(s.parameters["METHODS"] == ["aim"] and s.parameters["REPS"] == 30 for s in aim)
    assert not {s.key for s in aim} & {s.key for s in board}
    assert batch.load_manifest(root / "manifests" / "leaderboard_aim.yaml")["output"] == \
        batch.load_manifest(root / "manifests" / "leaderboard.yaml")["output"]
    # one make target runs every method: the board, then AIM's runs, then the assembler over both
    recipe = (root.parent / "Makefile").read_text().split("\nleaderboard:", 1)[1].split("\n\n", 1)[0]
    steps = [line.strip() for line in recipe.splitlines()[1:]]
    assert [("leaderboard.yaml" in x, "leaderboard_aim.yaml" in x, "assemble leaderboard" in x) for x in steps] == [
        (True, False, False), (False, True, False), (False, False, True)]


def test_reproduce_exports_the_paper_figures():
    """make reproduce leaves Figs 3.1/3.2 and the table figures in figures/: full.yaml sets the paper-figure switch
    of 21 and 22, the Makefile assembles the tables with --paper-figures, and QUICK runs (smoke) never export."""
    root = Path(__file__).resolve().parents[1]
    full = batch.expand_manifest(batch.load_manifest(root / "notebooks" / "manifests" / "full.yaml"))
    paper = {s.notebook.name for s in full if s.parameters.get("PAPER_FIGURES") is True}
    assert {"21_kappa_sweep.ipynb", "22_k_sweep.ipynb"} <= paper
    smoke = batch.expand_manifest(batch.load_manifest(root / "notebooks" / "manifests" / "smoke.yaml"))
    assert not any(s.parameters.get("PAPER_FIGURES") for s in smoke)
    recipe = (root / "Makefile").read_text().split("\nreproduce:", 1)[1].split("\n\n", 1)[0]
    assert "run $(FULL_MANIFEST) " in recipe
    assert "\nFULL_MANIFEST ?= notebooks/manifests/full.yaml\n" in (root / "Makefile").read_text()
    assert "dpkit.batch.assemble tables $(RESULTS)/batch/full --paper-figures" in recipe
