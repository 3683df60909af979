"""A resumed batch tells a finished run of an older notebook from an up-to-date one."""
from __future__ import annotations

import json
from pathlib import Path

import nbformat
import pytest
from batch_notebooks import make_manifest, make_notebook

from dpkit import batch
from dpkit.batch.manifest import notebook_fingerprint
from dpkit.batch.stale import StaleRunsError

pytestmark = pytest.mark.notebook


def _edit(nb_path: Path, text: str) -> None:
    nb = nbformat.read(str(nb_path), as_version=4)
    nb.cells[-1].source += f"\n{text}"
    nbformat.write(nb, str(nb_path))


def test_fingerprint_ignores_outputs_and_metadata_but_not_sources(tmp_path):
    p = make_notebook(tmp_path)
    fp = notebook_fingerprint(p)
    nb = nbformat.read(str(p), as_version=4)
    nb.metadata["widgets"] = {"x": 1}
    nb.cells[-1].outputs = [nbformat.v4.new_output("stream", text="hello")]
    nb.cells[-1].execution_count = 7
    nbformat.write(nb, str(p))
    assert notebook_fingerprint(p) == fp
    _edit(p, "# changed")
    assert notebook_fingerprint(p) != fp


def test_changed_notebook_is_named_then_rerun_with_the_old_run_kept(tmp_path, capsys):
    m = make_manifest(tmp_path)
    [r] = batch.run_manifest(m, scheduler="sync")
    folder = Path(r["folder"])
    info = json.loads((folder / "run.json").read_text())
    assert r["status"] == "ok" and info["notebook_sha256"] == notebook_fingerprint(tmp_path / "tiny.ipynb")
    # unchanged: skipped as finished
    assert [x["status"] for x in batch.run_manifest(m, scheduler="sync")] == ["skipped"]
    # re-saved with outputs only: still the same computation, still skipped
    nb = nbformat.read(str(tmp_path / "tiny.ipynb"), as_version=4)
    nb.cells[-1].outputs = [nbformat.v4.new_output("stream", text="x")]
    nbformat.write(nb, str(tmp_path / "tiny.ipynb"))
    assert [x["status"] for x in batch.run_manifest(m, scheduler="sync")] == ["skipped"]
    # a changed cell: the default stops before running anything and names the run folder
    _edit(tmp_path / "tiny.ipynb", "rep.check('second', 'X <= X', X, X)\nrep.write()")
    with pytest.raises(StaleRunsError, match=str(folder)):
        batch.run_manifest(m, scheduler="sync")
    assert batch.main(["run", str(m), "--scheduler", "sync"]) == 2
    assert str(folder) in capsys.readouterr().err
    # keep: skipped, with a warning naming it
    assert [x["status"] for x in batch.run_manifest(m, scheduler="sync", on_stale="keep")] == ["skipped"]
    assert str(folder) in capsys.readouterr().err
    # rerun: the old run moves to .superseded (kept whole), the new one runs; collect sees only the new one
    old_metrics = (folder / "metrics.json").read_text()
    [r2] = batch.run_manifest(m, scheduler="sync", on_stale="rerun")
    assert r2["status"] == "ok" and r2["folder"] == str(folder)
    [kept] = list((tmp_path / "out" / ".superseded" / "tiny").iterdir())
    assert (kept / "metrics.json").read_text() == old_metrics
    new = json.loads((folder / "metrics.json").read_text())
    assert [c["id"] for c in new["checks"]] == ["tiny-bound", "second"]
    table, checks = batch.collect(tmp_path / "out")
    assert len(table) == 1 and len(checks) == 2 and not table.attrs["problems"]
    # up to date again
    assert [x["status"] for x in batch.run_manifest(m, scheduler="sync")] == ["skipped"]


def test_runs_without_a_recorded_fingerprint_are_not_judged(tmp_path):
    m = make_manifest(tmp_path)
    [r] = batch.run_manifest(m, scheduler="sync")
    rj = Path(r["folder"]) / "run.json"
    info = json.loads(rj.read_text())
    del info["notebook_sha256"]  # a run from before the record
    rj.write_text(json.dumps(info))
    _edit(tmp_path / "tiny.ipynb", "# changed")
    assert [x["status"] for x in batch.run_manifest(m, scheduler="sync")] == ["skipped"]


def test_bad_policy_is_named(tmp_path):
    with pytest.raises(ValueError, match="on_stale"):
        batch.run_manifest(make_manifest(tmp_path), scheduler="sync", on_stale="ignore")


def test_two_single_notebook_runs_into_one_folder_are_refused(tmp_path, capsys):
    """`python -m dpkit.batch notebook` (make run) holds a lock on its output folder: a second run into the same
    folder while the first writes is an error naming it (exit 2), and runs once the folder is free."""
    from dpkit.batch.locks import RunLock

    nb = make_notebook(tmp_path)
    out = tmp_path / "results" / "quick"
    out.mkdir(parents=True)
    held = RunLock(out.parent / ".quick.lock")
    assert held.acquire(wait=False)
    try:
        assert batch.main(["notebook", str(nb), "--output", str(out)]) == 2
        assert str(out) in capsys.readouterr().err
        assert not (out / "metrics.json").exists()
    finally:
        held.release()
    assert batch.main(["notebook", str(nb), "--output", str(out)]) == 0
    assert (out / "metrics.json").is_file()
