"""Every run's commit and tree state in a board's provenance: the assembler reads them where a
run's ``metrics.json`` holds them (``meta.provenance.git``, written by ``dpkit.outputs.report.Report``), records
``None`` for a run that did not record them, and the provenance's line says which (the published board's runs did not
record theirs: "Runs' commits not recorded.")."""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

from dpkit.batch.board_files import board_provenance, run_commit
from dpkit.board.records import provenance_line, write_provenance
from dpkit.outputs.report import Report

ROOT = Path(__file__).resolve().parents[1]


def _run(root: Path, key: str, *, metrics: bool) -> Path:
    d = root / "45_leaderboard" / key
    d.mkdir(parents=True)
    (d / "run.json").write_text(json.dumps({"status": "ok", "parameters": {}, "notebook": "45_leaderboard.ipynb"}))
    if metrics:
        Report(d).write()  # what notebook 45 writes: the provenance under meta
    return d


def test_the_assembler_records_each_runs_commit_and_tree_state(tmp_path):
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=True)
    _run(tmp_path, "aaa", metrics=True)
    _run(tmp_path, "bbb", metrics=False)
    prov = board_provenance(tmp_path)
    runs = {r["folder"]: r["git"] for r in prov["runs"]}
    assert runs["aaa"]["commit"] == head.stdout.strip() and isinstance(runs["aaa"]["dirty"], bool)
    assert runs["bbb"] == {"commit": None, "dirty": None}
    assert run_commit(tmp_path / "nowhere") == {"commit": None, "dirty": None}
    write_provenance(prov, tmp_path / "provenance.json")
    line = provenance_line(tmp_path / "records.parquet")
    state = "uncommitted changes" if runs["aaa"]["dirty"] else "clean"
    assert f"The runs' commits: {head.stdout.strip()[:12]} (1 run(s), {state}); not recorded for 1 run(s)." in line


def test_the_published_provenance_names_the_runs_commit():
    """The regenerated board's runs recorded their commit, clean, and the provenance line says so."""
    prov = json.loads((ROOT / "data" / "leaderboard" / "provenance.json").read_text())
    commits = {r["git"]["commit"] for r in prov["runs"]}
    assert len(commits) == 1 and None not in commits and all(r["git"]["dirty"] is False for r in prov["runs"])
    line = provenance_line(ROOT / "data" / "leaderboard" / "records.parquet")
    assert f"The runs' commits: {next(iter(commits))[:12]} ({len(prov['runs'])} run(s), clean)." in line
