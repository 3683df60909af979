"""A long run killed half-way resumes from its finished repetitions, with the numbers of an uninterrupted run."""
from __future__ import annotations

import json
from pathlib import Path

import nbformat
import pytest
from batch_notebooks import make_checkpoint_notebook, make_manifest, make_notebook, stop_after

from dpkit import batch
from dpkit.batch.manifest import expand_manifest, load_manifest
from dpkit.batch.stale import StaleRunsError, checkpoint_folder

pytestmark = pytest.mark.notebook

def _setup(tmp_path: Path, marker: bool = True) -> tuple[Path, Path]:
    tmp_path.mkdir(parents=True, exist_ok=True)
    make_checkpoint_notebook(tmp_path)
    params = {"STOP": str(tmp_path / "stop")} if marker else {}
    if marker:  # the first attempt dies after two repetitions
        stop_after(tmp_path / "stop", 1)
    m = make_manifest(tmp_path, [{"notebook": "long.ipynb", "parameters": params}])
    [spec] = expand_manifest(load_manifest(m))
    return m, checkpoint_folder(spec, spec.folder(tmp_path / "out").parent)


def _table(folder: str) -> list:
    return json.loads((Path(folder) / "metrics.json").read_text())["table"]


def test_a_failed_run_keeps_its_repetitions_and_the_next_batch_resumes(tmp_path):
    m, keep = _setup(tmp_path)
    [r] = batch.run_manifest(m, scheduler="sync")
    assert r["status"] == "failed"
    assert "deliberate failure" in r["error"] and f"2 finished repetition(s) are kept in {keep}" in r["error"]
    assert sorted(p.name for p in (keep / "mock").glob("rep-*.pkl")) == ["rep-00000.pkl", "rep-00001.pkl"]
    run_json = json.loads((Path(r["folder"]) / "run.json").read_text())
    assert run_json["status"] == "failed" and str(keep) in run_json["error"]
    [r2] = batch.run_manifest(m, scheduler="sync")
    assert r2["status"] == "ok"
    assert not keep.exists()  # removed once the results are in place
    ck = json.loads((Path(r2["folder"]) / "run.json").read_text())["checkpoint"]
    assert ck["resumed_repetitions"] == 2 and ck["repetitions"] == 4 and ck["compute_s"] > 0
    assert len(ck["repetition_s"]) == 4 and abs(sum(ck["repetition_s"]) - ck["compute_s"]) < 1e-2  # rounded to ms
    from dpkit.core.machine import numerics_machine

    assert ck["machines"] == {numerics_machine(): 4}  # every repetition computed on this machine
    # the same numbers as one uninterrupted run (no marker: never fails, no checkpoint needed)
    ref_m, _ = _setup(tmp_path / "ref", marker=False)
    [ref] = batch.run_manifest(ref_m, scheduler="sync")
    assert _table(r2["folder"]) == _table(ref["folder"]) and len(_table(ref["folder"])) == 4 * 2 * 2


def test_kept_repetitions_of_another_notebook_version_are_stale(tmp_path, capsys):
    m, keep = _setup(tmp_path)
    [r] = batch.run_manifest(m, scheduler="sync")
    assert r["status"] == "failed" and keep.is_dir()
    nb_path = tmp_path / "long.ipynb"
    nb = nbformat.read(str(nb_path), as_version=4)
    nb.cells[-1].source += "\n# changed"
    nbformat.write(nb, str(nb_path))
    with pytest.raises(StaleRunsError, match=str(keep)):
        batch.run_manifest(m, scheduler="sync")
    with pytest.raises(StaleRunsError, match="keep keeps finished runs"):
        batch.run_manifest(m, scheduler="sync", on_stale="keep")
    assert keep.is_dir()
    [r2] = batch.run_manifest(m, scheduler="sync", on_stale="rerun")
    assert r2["status"] == "ok" and not keep.exists()
    moved = list((tmp_path / "out" / ".superseded" / "long").glob("*.checkpoint-*"))
    assert len(moved) == 1 and len(list((moved[0] / "mock").glob("rep-*.pkl"))) == 2
    assert "kept repetitions are in" in capsys.readouterr().err


def test_the_runner_owns_checkpoint_dir(tmp_path):
    m, _ = _setup(tmp_path)
    text = m.read_text().replace("STOP", "CHECKPOINT_DIR")
    m.write_text(text)
    with pytest.raises(Exception, match="CHECKPOINT_DIR is set by the runner"):
        batch.run_manifest(m, scheduler="sync")


def test_kept_repetitions_of_other_dpkit_sources_are_stale(tmp_path, monkeypatch):
    from dpkit.batch import execute, stale

    m, keep = _setup(tmp_path)
    [r] = batch.run_manifest(m, scheduler="sync")
    assert r["status"] == "failed" and (keep / "dpkit_sha256").read_text().strip() == execute.library_fingerprint()
    for mod in (execute, stale):
        monkeypatch.setattr(mod, "library_fingerprint", lambda: "0" * 16)
    with pytest.raises(StaleRunsError, match="dpkit sources: ran"):
        batch.run_manifest(m, scheduler="sync")
    with pytest.raises(execute.StaleCheckpointError, match="dpkit sources"):
        execute.open_checkpoint(keep, (keep / "notebook_sha256").read_text().strip())
    # a folder that does not record the sources' version (written before it was recorded) is not judged on them
    (keep / "dpkit_sha256").unlink()
    [r2] = batch.run_manifest(m, scheduler="sync")
    assert r2["status"] == "ok"


def test_library_fingerprint_follows_the_sources(tmp_path):
    from dpkit.core.paths import library_fingerprint

    fp = library_fingerprint()
    assert fp == library_fingerprint() and len(fp) == 16
    (tmp_path / "__init__.py").write_text("x = 1\n")
    one = library_fingerprint(tmp_path)
    (tmp_path / "__init__.py").write_text("x = 2\n")
    assert library_fingerprint(tmp_path) not in (one, fp)


REPS_PARAMETERS = """SEED: int = 0
QUICK: bool = False
INTERACTIVE: bool = True
OUTPUT_DIR: str = "out"
CHECKPOINT_DIR: str = ""
REPS: int = 2
DATASETS: list = ["a"]"""

REPS_BODY = """import pickle
import time
from pathlib import Path

from dpkit.outputs.report import Report

for name in DATASETS:  # keeps its repetitions one by one, as a long run does
    folder = Path(CHECKPOINT_DIR) / name
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(REPS):
        time.sleep(0.5)
        (folder / f"rep-{i:05d}.pkl").write_bytes(pickle.dumps({"records": [], "seconds": 0.0}))
time.sleep(0.5)
rep = Report(OUTPUT_DIR, params={"SEED": SEED})
rep.check("kept", "repetitions kept >= 0", float(REPS), 0.0, relation=">=")
rep.write()"""


def test_the_batch_bar_counts_repetitions_as_they_are_kept(tmp_path, monkeypatch):
    """A run that keeps its 2 × 2 repetitions is 4 tasks of the bar, and the bar moves as they are kept, before
    the run finishes; a run without a checkpoint is one task, and so is a QUICK run (its repetitions unknown)."""
    from tqdm.auto import tqdm

    from dpkit.batch import runner

    make_notebook(tmp_path, "reps.ipynb", parameters=REPS_PARAMETERS, body=REPS_BODY)
    m = make_manifest(tmp_path, [{"notebook": "reps.ipynb", "parameters": {"QUICK": False, "REPS": 2, "DATASETS": ["a", "b"]}},
                                 {"notebook": "tiny.ipynb"},
                                 {"notebook": "reps.ipynb", "parameters": {"QUICK": True, "REPS": 2, "DATASETS": ["a"]}}])
    first = expand_manifest(load_manifest(m))[0].folder(tmp_path / "out")
    bars = []

    class Recorder(tqdm):
        def __init__(self, *args, **kwargs):
            self.seen: list[tuple[int, bool]] = []  # (count shown, whether the first run had finished)
            super().__init__(*args, **kwargs)
            bars.append(self)

        def update(self, n=1):
            out = super().update(n)
            self.seen.append((self.n, first.is_dir()))
            return out

    monkeypatch.setattr("tqdm.auto.tqdm", Recorder)
    monkeypatch.setattr(runner, "PROGRESS_POLL_S", 0.05, raising=False)
    results = batch.run_manifest(m, scheduler="sync", progress=True)
    assert [r["status"] for r in results] == ["ok", "ok", "ok"]
    [bar] = bars
    assert bar.total == 2 * 2 + 1 + 1 and "tasks" in bar.desc
    assert bar.n == bar.total and [n for n, _ in bar.seen] == sorted({n for n, _ in bar.seen})
    assert {1, 2, 3} <= {n for n, finished in bar.seen if not finished}, bar.seen  # kept before the run finished


def test_the_repetitions_a_manifest_leaves_out_are_the_notebooks_defaults(tmp_path):
    """REPS, DATASETS and QUICK that the manifest does not set come from the notebook's parameters cell (REPS_PARAMETERS:
    2 × ["a"], QUICK false), for the bar and for ``status``; the manifest's values override them."""
    from dpkit.batch.progress import TaskProgress
    from dpkit.batch.status import batch_status, total_repetitions

    make_notebook(tmp_path, "reps.ipynb", parameters=REPS_PARAMETERS.replace('["a"]', '["a", "b", "c"]'), body=REPS_BODY)
    m = make_manifest(tmp_path, [{"notebook": "reps.ipynb", "grid": {"SEED": [0, 1]}},
                                 {"notebook": "reps.ipynb", "parameters": {"REPS": 5, "SEED": 2}},
                                 {"notebook": "reps.ipynb", "parameters": {"QUICK": True, "SEED": 3}}])
    specs = expand_manifest(load_manifest(m))
    assert [total_repetitions(s) for s in specs] == [6, 6, 15, None]  # QUICK: cut down inside the notebook
    assert TaskProgress(specs, tmp_path / "out").total == 6 + 6 + 15 + 1
    assert [s.total_repetitions for s in batch_status(m)] == [6, 6, 15, None]
