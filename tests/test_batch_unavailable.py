"""A data set documented as possibly unavailable offline (PAM) gives a recorded skip, not a failure.

The batch runner records such a run as ``unavailable`` with the reason; ``run``, ``status``, ``collect``,
``python -m dpkit.batch.checks`` and the assembler name it and exit 0, ``run --require-data`` (``make ...
REQUIRE_DATA=1``) makes it a failure, and a data set that should be there and is not stays a failure.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from batch_notebooks import make_notebook

from dpkit import batch
from dpkit.batch import checks as checks_cli
from dpkit.outputs import assemble

PARAMETERS = """SEED: int = 0
QUICK: bool = False
INTERACTIVE: bool = True
OUTPUT_DIR: str = "out"
DATASETS: list = ["WDBC"]
RAISE: str = \"\""""

# raises what dpkit.data.load_available raises: DataUnavailableError when every data set asked for is documented
# as possibly unavailable offline and absent, DataNotFoundError for one that should be there
BODY = """from dpkit.data import DataNotFoundError, DataUnavailableError
from dpkit.outputs.report import Report

if RAISE == "unavailable":
    raise DataUnavailableError(f"none of DATASETS = {DATASETS} is available here: PAM: the offline test's reason")
if RAISE == "missing":
    raise DataNotFoundError("[CRM] Communities and Crime: required file(s) not found: communities.data.")
rep = Report(OUTPUT_DIR, params={"SEED": SEED})
rep.check("tiny-bound", "1 <= 2", 1.0, 2.0)
rep.row(dataset=DATASETS[0], x=1.0)
rep.write()"""

REASON = "none of DATASETS = ['PAM'] is available here: PAM: the offline test's reason"


def _manifest(folder: Path, runs: list[dict]) -> Path:
    make_notebook(folder, "loads.ipynb", parameters=PARAMETERS, body=BODY)
    path = folder / "m.yaml"
    path.write_text(yaml.safe_dump({"name": "t", "output": "out", "runs": runs}))
    return path


OK_RUN = {"notebook": "loads.ipynb", "parameters": {"DATASETS": ["WDBC"]}}
PAM_RUN = {"notebook": "loads.ipynb", "parameters": {"DATASETS": ["PAM"], "RAISE": "unavailable"}}
CRM_RUN = {"notebook": "loads.ipynb", "parameters": {"DATASETS": ["CRM"], "RAISE": "missing"}}


@pytest.mark.notebook
def test_unavailable_run_is_recorded_and_shown_not_failed(tmp_path, capsys):
    m = _manifest(tmp_path, [OK_RUN, PAM_RUN])
    out = tmp_path / "out"
    assert batch.main(["run", str(m), "--scheduler", "sync"]) == 0
    text = capsys.readouterr().out
    assert "1 ok, 0 skipped, 0 failed, 1 unavailable" in text and "UNAVAILABLE loads.ipynb" in text and REASON in text
    [folder] = [p.parent for p in out.glob("loads/*/run.json") if json.loads(p.read_text())["status"] != "ok"]
    info = json.loads((folder / "run.json").read_text())
    assert info["status"] == "unavailable" and info["error"] == REASON and info["parameters"]["DATASETS"] == ["PAM"]
    assert not (folder / "metrics.json").exists()  # no rows

    assert batch.main(["status", str(m)]) == 0
    text = capsys.readouterr().out
    assert f"unavailable ({REASON})" in text and "0 failed, 0 not started, 1 unavailable" in text

    assert batch.main(["collect", str(out)]) == 0
    text = capsys.readouterr().out
    assert "1 run(s) recorded as unavailable" in text and f"{folder}: data set(s) PAM unavailable here: {REASON}" in text
    rows = (out / "collected_unavailable.csv").read_text()
    assert "PAM" in rows and "the offline test's reason" in rows

    assert checks_cli.main([str(out), "--out", str(tmp_path / "checks")]) == 0
    text = capsys.readouterr().out
    assert "1/1 claims PASS" in text and f"unavailable: {folder}: data set(s) PAM unavailable here: {REASON}" in text
    assert f"{folder}: data set(s) PAM unavailable here" in (tmp_path / "checks.md").read_text()

    # --require-data: the same batch fails; the unavailable run is tried again (the data may have arrived since)
    assert batch.main(["run", str(m), "--scheduler", "sync", "--require-data"]) == 1
    text = capsys.readouterr().out
    assert "0 ok, 1 skipped, 0 failed, 1 unavailable" in text and "--require-data: a failure" in text


@pytest.mark.notebook
def test_missing_data_not_documented_as_unavailable_stays_a_failure(tmp_path, capsys):
    m = _manifest(tmp_path, [PAM_RUN, CRM_RUN])
    out = tmp_path / "out"
    assert batch.main(["run", str(m), "--scheduler", "sync"]) == 1
    text = capsys.readouterr().out
    assert "0 ok, 0 skipped, 1 failed, 1 unavailable" in text and "FAILED loads.ipynb" in text
    assert "raised DataNotFoundError: [CRM]" in text
    assert batch.main(["status", str(m)]) == 1
    assert batch.main(["collect", str(out)]) == 1
    assert "raised DataNotFoundError: [CRM]" in capsys.readouterr().err
    assert checks_cli.main([str(out)]) == 1


def test_assembler_lists_unavailable_runs_apart_from_failed_ones(tmp_path):
    for key, status, error in (("aaaaaaaaaaaa", "unavailable", REASON), ("bbbbbbbbbbbb", "failed", "cell In[3] raised X")):
        folder = tmp_path / "20_tables" / key
        folder.mkdir(parents=True)
        (folder / "run.json").write_text(json.dumps({"notebook": "20_tables.ipynb", "status": status, "error": error,
                                                     "parameters": {"DATASETS": ["PAM" if status != "failed" else "CRM"]}}))
    assert assemble.failed_runs(str(tmp_path), "20_tables") == [f"{tmp_path / '20_tables' / 'bbbbbbbbbbbb'}: run failed"]
    [u] = assemble.unavailable_runs(str(tmp_path), "20_tables")
    assert u.datasets == ["PAM"] and u.reason == REASON and u.path == tmp_path / "20_tables" / "aaaaaaaaaaaa"
    text = assemble.run_times_markdown(str(tmp_path), notebook="20_tables")
    assert "Unavailable here" in text and REASON in text
