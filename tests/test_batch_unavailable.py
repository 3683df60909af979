"""A data set documented as possibly unavailable offline (PAM) gives a recorded skip, not a failure.

The batch runner records such a run as ``unavailable`` with the reason; ``run``, ``status``, ``collect``,
``python -m dpkit.batch.checks`` and the assembler name it and exit 0, ``run --require-data`` (``make ...
REQUIRE_DATA=1``) makes it a failure, and a data set that should be there and is not stays a failure.
The last test runs ``make tables`` and ``make reproduce`` end to end on small manifests with PAM absent.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from batch_notebooks import make_notebook

from dpkit import batch
from dpkit.batch import assemble
from dpkit.batch import checks as checks_cli

ROOT = Path(__file__).resolve().parents[1]

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
def test_notebook_command_records_unavailable_and_exits_0_unless_data_is_required(tmp_path, capsys):
    _manifest(tmp_path, [])
    nb, out = tmp_path / "loads.ipynb", tmp_path / "one"
    args = ["notebook", str(nb), "--output", str(out), "-p", "DATASETS", "[PAM]", "-p", "RAISE", "unavailable"]
    assert batch.main(args) == 0
    err = capsys.readouterr().err
    assert "UNAVAILABLE" in err and REASON in err and "FAILED" not in err
    assert json.loads((out / "run.json").read_text())["status"] == "unavailable"
    assert batch.main(args + ["--require-data"]) == 1
    assert "--require-data: a failure" in capsys.readouterr().err
    assert batch.main(["notebook", str(nb), "--output", str(tmp_path / "two"), "-p", "RAISE", "missing"]) == 1
    assert "FAILED" in capsys.readouterr().err


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
    [u] = assemble.unavailable_runs_in_output(str(tmp_path), "20_tables")
    assert u.datasets == ["PAM"] and u.reason == REASON and u.path == tmp_path / "20_tables" / "aaaaaaaaaaaa"
    # the same runs, once scanned: the other function, named for what it takes, finds the same one
    from dpkit.batch.results import scan_runs, unavailable_in_scanned_runs

    runs, _problems = scan_runs(tmp_path)
    assert unavailable_in_scanned_runs(runs) == [u]
    assert not hasattr(assemble, "unavailable_runs") and not hasattr(batch.results, "unavailable_runs")
    text = assemble.run_times_markdown(str(tmp_path), notebook="20_tables")
    assert "Unavailable here" in text and REASON in text


def _small_manifest(path: Path, name: str) -> Path:
    """Tables 3.2/3.3 in two runs: WDBC in QUICK mode (a few seconds) and PAM (QUICK would swap it for WDBC)."""
    nb = str(ROOT / "notebooks" / "20_tables.ipynb")
    path.write_text(yaml.safe_dump({"name": name, "defaults": {"SEED": 0, "SENSITIVITY_DATASET": "none"}, "runs": [
        {"notebook": nb, "parameters": {"QUICK": True, "DATASETS": ["WDBC"], "SIGMAS": [4.0], "N_QUERIES": 200,
                                        "C": 500}},
        {"notebook": nb, "parameters": {"QUICK": False, "DATASETS": ["PAM"]}}]}))
    return path


@pytest.mark.notebook
@pytest.mark.slow
def test_make_tables_and_reproduce_offline_without_pam(tmp_path, monkeypatch):
    """``make tables`` and ``make reproduce`` (their exact recipes, on small manifests) exit 0 with PAM absent and
    assemble the tables, which name PAM as unavailable with the registry's reason; ``REQUIRE_DATA=1`` asks the
    batch runner to fail instead."""
    if shutil.which("make") is None:
        pytest.skip("GNU make is not installed")
    (tmp_path / "shared" / "data" / "raw").mkdir(parents=True)  # no offline copies (WDBC: scikit-learn's copy)
    (tmp_path / "empty").mkdir()
    env = {"DPKIT_OFFLINE": "1", "DPKIT_SHARED_DIR": str(tmp_path / "shared"), "DPKIT_DATA_DIR": str(tmp_path / "empty"),
           "DPKIT_FIGURES_DIR": str(tmp_path / "figures"), "DPKIT_CACHE_DIR": "off",
           "PYTHONPATH": os.pathsep.join([str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])}
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    from dpkit.data import DataNotFoundError, dataset_info, load

    try:
        load("PAM", download=False)
        pytest.skip("PAM's files are in this clone's data/raw, which no variable hides")
    except DataNotFoundError:
        pass
    reason = dataset_info("PAM").unavailable_offline
    results = tmp_path / "results"
    make = ["make", "-C", str(ROOT), "-o", ".venv/.dpkit-installed", f"BIN={Path(sys.executable).parent}",
            f"RESULTS={results}"]

    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([*make, *args], capture_output=True, text=True, timeout=600, env=os.environ.copy())

    tables = run("tables", f"TABLES_MANIFEST={_small_manifest(tmp_path / 'tables.yaml', 'tables')}")
    assert tables.returncode == 0, tables.stdout + tables.stderr
    assert "1 ok, 0 skipped, 0 failed, 1 unavailable" in tables.stdout and "assembled 4 rows (WDBC)" in tables.stdout
    full_manifest = _small_manifest(tmp_path / "full.yaml", "full")
    full = run("reproduce", f"FULL_MANIFEST={full_manifest}")
    assert full.returncode == 0, full.stdout + full.stderr
    assert "tables not assembled" not in full.stdout and "assembled 4 rows (WDBC)" in full.stdout
    assert "1 run(s) recorded as unavailable (data sets documented" in full.stdout  # collect
    assert "1 run(s) unavailable here" in full.stdout  # checks
    assert "PAM" in (results / "batch" / "full" / "checks_summary.md").read_text()
    for batch_dir in (results / "batch" / "tables", results / "batch" / "full"):
        done = batch_dir / "assembled"
        assert (done / "tables_3_2_3_3.md").is_file() and (done / "tables_rows.csv").is_file()
        listed = (done / "tables_unavailable.md").read_text()
        assert "| PAM | unavailable |" in listed and reason in listed
        assert "Not available on this machine" in (done / "tables_3_2_3_3.tex").read_text()
        assert "PAM unavailable here" in (done / "tables_runs.md").read_text()
    # REQUIRE_DATA=1 passes --require-data to both batches (which then exit 1: the test above)
    for target, manifest in (("tables", "TABLES_MANIFEST=x.yaml"), ("reproduce", "FULL_MANIFEST=x.yaml")):
        dry = run("-n", target, manifest, "REQUIRE_DATA=1")
        assert dry.returncode == 0 and "dpkit.batch run x.yaml --output" in dry.stdout, dry.stdout + dry.stderr
        assert "--require-data" in dry.stdout.split("dpkit.batch run x.yaml", 1)[1].split("\n", 1)[0]
