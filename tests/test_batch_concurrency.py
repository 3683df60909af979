"""Two batches on one output at once, and a Dask worker killed mid-run: nothing lost, nothing run twice."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from batch_notebooks import make_manifest

from dpkit import batch

ROOT = Path(batch.__file__).resolve().parents[2]


def _log(path: Path) -> Counter:
    return Counter(path.read_text().splitlines()) if path.exists() else Counter()


def _run_folders(out: Path) -> dict[str, dict]:
    return {p.parent.name: json.loads(p.read_text()) for p in out.glob("tiny/*/run.json")}


@pytest.mark.notebook
@pytest.mark.slow
def test_two_batches_on_one_output_run_every_notebook_once(tmp_path):
    log = tmp_path / "executions.log"
    seeds = [0, 1, 2, 3]
    m = make_manifest(tmp_path, [{"notebook": "tiny.ipynb", "parameters": {"LOG": str(log), "SLEEP": 1.0},
                                  "grid": {"SEED": seeds}}])
    env = {**os.environ, "PYTHONPATH": str(ROOT), "MPLBACKEND": "Agg"}
    cmd = [sys.executable, "-m", "dpkit.batch", "run", str(m), "--scheduler", "sync"]
    procs = [subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env) for _ in range(2)]
    outs = [p.communicate(timeout=300) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    # every run executed exactly once, across both batches
    assert _log(log) == Counter({f"{w} {s}": 1 for s in seeds for w in ("start", "end")})
    runs = _run_folders(tmp_path / "out")
    assert len(runs) == len(seeds) and all(info["status"] == "ok" for info in runs.values())
    assert all(info["parameters"]["OUTPUT_DIR"] == str(tmp_path / "out" / "tiny" / key) for key, info in runs.items())
    # the two summaries: 4 ok in total, the rest skipped; no temporary folders left
    ok = sum(int(o.split(" ok,")[0].rsplit(" ", 1)[1]) for o, _ in outs)
    assert ok == len(seeds), outs
    assert not list((tmp_path / "out" / "tiny").glob(".*-*"))
    # a third batch finds everything done
    assert all(r["status"] == "skipped" for r in batch.run_manifest(m, scheduler="sync"))


@pytest.mark.notebook
@pytest.mark.slow
def test_worker_killed_mid_run_is_recorded_and_resumed(tmp_path):
    """A notebook kills the Dask worker running it (once). With no retries allowed, the run is recorded as
    failed in its own folder (not as notebook "?"); the other runs finish; re-running the batch runs only
    that one. Every run ends up finished exactly once, and no temporary folder is left behind."""
    import dask
    import distributed  # noqa: F401 - its config defaults must be loaded before dask.config.set (else its exit drops them)

    log, marker = tmp_path / "executions.log", tmp_path / "killed.marker"
    seeds = [0, 1, 2]
    m = make_manifest(tmp_path, [
        {"notebook": "tiny.ipynb", "parameters": {"LOG": str(log)}, "grid": {"SEED": seeds[:2]}},
        {"notebook": "tiny.ipynb", "parameters": {"LOG": str(log), "KILL_MARKER": str(marker), "SEED": seeds[2]}},
    ])
    config = {"distributed.scheduler.allowed-failures": 0, "distributed.scheduler.worker-saturation": 1.0}
    with dask.config.set(config):
        first = batch.run_manifest(m, scheduler="local", workers=2)
    assert marker.exists()  # the worker was killed
    by_seed = {r["key"]: r for r in first}
    killed = next(r for r in first if r["status"] == "failed")
    assert sorted(r["status"] for r in first) == ["failed", "ok", "ok"], first
    assert killed["notebook"] == "tiny.ipynb" and "Dask worker" in killed["error"]
    info = json.loads((Path(killed["folder"]) / "run.json").read_text())
    assert info["status"] == "failed" and "Dask worker" in info["error"] and info["parameters"]["SEED"] == seeds[2]
    assert batch.main(["collect", str(tmp_path / "out")]) == 1  # the failure is visible downstream
    # resume (in-process, to spare a second cluster start): only the killed run executes again
    second = batch.run_manifest(m, scheduler="sync")
    assert {r["key"]: r["status"] for r in second} == {k: ("ok" if k == killed["key"] else "skipped") for k in by_seed}
    runs = _run_folders(tmp_path / "out")
    assert len(runs) == 3 and all(i["status"] == "ok" for i in runs.values())
    assert _log(log) == Counter({**{f"start {s}": 1 for s in seeds}, f"start {seeds[2]}": 2, **{f"end {s}": 1 for s in seeds}})
    assert not list((tmp_path / "out" / "tiny").glob(".*-*"))
    assert batch.main(["collect", str(tmp_path / "out")]) == 0
