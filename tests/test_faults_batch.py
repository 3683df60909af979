"""Fault catalogue of the batch tooling: bad manifests, bad parameters (manifest and ``-p``), I/O faults,
dead workers, timeouts, locks, and the downstream ``collect`` / checks commands.

Every case asserts the error type (or the exit code) and that the message names the parameter or file.
Most cases run no notebook (validation happens before anything runs; runner faults use a fake executor);
the few that do use the tiny notebook of ``batch_notebooks.py``.
"""
from __future__ import annotations

import errno
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from batch_notebooks import make_manifest, make_notebook

from dpkit import batch
from dpkit.batch import checks as checks_cli
from dpkit.batch import runner
from dpkit.batch.locks import RunLock, clean_stale, make_temporary
from dpkit.batch.manifest import BatchError, ManifestError, NotebookParameterError, NotebookParameterTypeError

PTYPE = NotebookParameterTypeError

RUN = "runs: [{notebook: tiny.ipynb}]\n"

# id, manifest text, error type, substrings the message must contain
MANIFEST_FAULTS = [
    ("unknown-top-key", "defualts: {QUICK: true}\n" + RUN, ManifestError, ["'defualts'", "did you mean 'defaults'", "m.yaml"]),
    ("unknown-output-key", "outptu: out\n" + RUN, ManifestError, ["'outptu'", "did you mean 'output'"]),
    ("unknown-run-key", "runs: [{notebook: tiny.ipynb, paramters: {SEED: 1}}]", ManifestError,
     ["runs[0]", "'paramters'", "did you mean 'parameters'"]),
    ("yaml-syntax", "runs: [{notebook: tiny.ipynb\n", ManifestError, ["m.yaml", "not valid YAML"]),
    ("duplicate-key", "name: a\nname: b\n" + RUN, ManifestError, ["m.yaml", "duplicate key 'name'"]),
    ("no-runs", "name: t\nruns: []\n", ManifestError, ["m.yaml", "non-empty list 'runs'"]),
    ("not-a-mapping", "- just\n- a list\n", ManifestError, ["m.yaml", "mapping"]),
    ("grid-not-a-list", "runs: [{notebook: tiny.ipynb, grid: {SEED: 3}}]", ManifestError,
     ["runs[0].grid.SEED", "non-empty list"]),
    ("param-and-grid", "runs: [{notebook: tiny.ipynb, parameters: {SEED: 1}, grid: {SEED: [1, 2]}}]", ManifestError,
     ["runs[0]", "SEED", "both"]),
    ("output-not-a-string", "output: [a, b]\n" + RUN, ManifestError, ["output must be a string"]),
    ("output-empty", 'output: ""\n' + RUN, ManifestError, ["m.yaml", "output must be a non-empty"]),
    ("name-empty", 'name: ""\n' + RUN, ManifestError, ["m.yaml", "name must be a non-empty", "''"]),
    ("name-a-path", "name: ../../etc\n" + RUN, ManifestError, ["m.yaml", "name must be", "'../../etc'"]),
    ("exclude-not-a-list", "runs: [{notebook: '*.ipynb', exclude: x.ipynb}]", ManifestError, ["runs[0].exclude"]),
    ("notebook-missing", "runs: [{notebook: nope.ipynb}]", FileNotFoundError, ["nope.ipynb"]),
    ("glob-matches-nothing", "runs: [{notebook: 'zz_*.ipynb'}]", FileNotFoundError, ["zz_*.ipynb"]),
    ("unknown-parameter", "runs: [{notebook: tiny.ipynb, parameters: {SEDE: 1}}]", NotebookParameterError,
     ["runs[0].parameters.SEDE", "did you mean 'SEED'", "tiny.ipynb"]),
    ("unknown-default", "defaults: {QUIK: true}\n" + RUN, NotebookParameterError, ["defaults.QUIK", "did you mean 'QUICK'"]),
    ("bool-quoted-yes", 'defaults: {QUICK: "yes"}\n' + RUN, PTYPE, ["QUICK='yes'", "QUICK: bool"]),
    ("bool-bare-yes", "defaults: {QUICK: yes}\n" + RUN, PTYPE, ["QUICK='yes'"]),
    ("bool-as-1", "defaults: {QUICK: 1}\n" + RUN, PTYPE, ["QUICK=1", "bool"]),
    ("int-quoted", 'runs: [{notebook: tiny.ipynb, parameters: {SEED: "0"}}]', PTYPE, ["SEED='0'", "int"]),
    ("int-as-float", "runs: [{notebook: tiny.ipynb, parameters: {SEED: 1.5}}]", PTYPE, ["SEED=1.5"]),
    ("int-as-bool", "runs: [{notebook: tiny.ipynb, parameters: {SEED: true}}]", PTYPE, ["SEED=True"]),
    ("float-quoted", 'runs: [{notebook: tiny.ipynb, parameters: {X: "0.5"}}]', PTYPE, ["X='0.5'", "float"]),
    ("list-as-string", "runs: [{notebook: tiny.ipynb, parameters: {NAMES: a}}]", PTYPE, ["NAMES='a'", "list"]),
    ("dict-as-list", "runs: [{notebook: tiny.ipynb, parameters: {OPTS: [1]}}]", PTYPE, ["OPTS", "dict"]),
    ("str-as-int", "runs: [{notebook: tiny.ipynb, parameters: {LABEL: 3}}]", PTYPE, ["LABEL=3", "str"]),
    ("grid-value", "runs: [{notebook: tiny.ipynb, grid: {SEED: [0, '1']}}]", PTYPE, ["runs[0].grid.SEED[1]"]),
    ("reserved-output-dir", "runs: [{notebook: tiny.ipynb, parameters: {OUTPUT_DIR: x}}]", NotebookParameterError,
     ["OUTPUT_DIR", "set by the runner"]),
]


@pytest.mark.parametrize("text, exc, needles", [c[1:] for c in MANIFEST_FAULTS], ids=[c[0] for c in MANIFEST_FAULTS])
def test_manifest_fault_is_an_error_before_anything_runs(tmp_path, capsys, text, exc, needles):
    m = make_manifest(tmp_path, text=text)
    with pytest.raises(exc) as info:
        batch.expand_manifest(batch.load_manifest(m))
    for needle in needles:
        assert needle in str(info.value)
    # the CLI: exit 2, one line naming the same thing, and no run started (no output folder)
    assert batch.main(["run", str(m), "--scheduler", "sync"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and needles[0] in err
    assert not (tmp_path / "out").exists()


def test_type_errors_are_also_type_errors_and_all_are_listed(tmp_path):
    m = make_manifest(tmp_path, text='defaults: {QUICK: "yes", SEED: "0"}\n' + RUN)
    with pytest.raises(TypeError) as info:
        batch.expand_manifest(batch.load_manifest(m))
    assert "QUICK='yes'" in str(info.value) and "SEED='0'" in str(info.value)


def test_well_typed_values_pass(tmp_path):
    """An int for a float, 1e-3 (YAML 1.2 float), lists and dicts: accepted."""
    m = make_manifest(tmp_path, text="defaults: {QUICK: true, X: 2}\nruns: [{notebook: tiny.ipynb, "
                                     "parameters: {OPTS: {a: 1}, NAMES: [b]}, grid: {X: [1e-3, 4]}}]")
    specs = batch.expand_manifest(batch.load_manifest(m))
    assert [s.parameters["X"] for s in specs] == [0.001, 4]


def test_notebook_without_parameters_cell(tmp_path):
    make_notebook(tmp_path, "bare.ipynb", parameters=None, body="x = 1")
    m = make_manifest(tmp_path, text="runs: [{notebook: bare.ipynb, parameters: {SEED: 1}}]")
    with pytest.raises(NotebookParameterError, match=r"bare\.ipynb has no cell tagged 'parameters'"):
        batch.expand_manifest(batch.load_manifest(m))


def test_corrupt_notebook_names_the_file(tmp_path):
    (tmp_path / "broken.ipynb").write_text("{ not json")
    m = make_manifest(tmp_path, text="runs: [{notebook: broken.ipynb, parameters: {SEED: 1}}]")
    with pytest.raises(BatchError, match=r"broken\.ipynb"):
        batch.expand_manifest(batch.load_manifest(m))


# --------------------------------------------------------------------------- -p injection
P_FAULTS = [
    ("unknown-name", ["-p", "SEDE", "1"], "SEDE"),
    ("misspelt-float", ["-p", "EPSLION", "1.0"], "EPSLION"),
    ("bool-yes", ["-p", "QUICK", "yes"], "QUICK='yes'"),
    ("bool-zero", ["-p", "QUICK", "0"], "QUICK=0"),
    ("int-quoted", ["-p", "SEED", '"0"'], "SEED='0'"),
    ("given-twice", ["-p", "SEED", "1", "-p", "SEED", "2"], "-p SEED given twice"),
    ("bad-yaml", ["-p", "NAMES", "[a, b"], "-p NAMES"),
    ("output-dir", ["-p", "OUTPUT_DIR", "x"], "OUTPUT_DIR"),
]


@pytest.mark.parametrize("args, needle", [c[1:] for c in P_FAULTS], ids=[c[0] for c in P_FAULTS])
def test_p_fault_exits_2_before_running(tmp_path, capsys, args, needle):
    nb = make_notebook(tmp_path)
    out = tmp_path / "nb_out"
    assert batch.main(["notebook", str(nb), "--output", str(out), *args]) == 2
    assert needle in capsys.readouterr().err
    assert not out.exists()


def test_notebook_cli_missing_notebook_and_unwritable_output(tmp_path, capsys):
    assert batch.main(["notebook", str(tmp_path / "nope.ipynb"), "--output", str(tmp_path / "o")]) == 2
    assert "nope.ipynb" in capsys.readouterr().err
    nb = make_notebook(tmp_path)
    (tmp_path / "afile").write_text("")
    assert batch.main(["notebook", str(nb), "--output", str(tmp_path / "afile" / "o")]) == 2
    assert "afile" in capsys.readouterr().err


def test_execute_notebook_checks_parameters(tmp_path):
    nb = make_notebook(tmp_path)
    with pytest.raises(NotebookParameterTypeError, match="SEED='1'"):
        batch.execute_notebook(nb, tmp_path / "o", parameters={"SEED": "1"})
    assert not (tmp_path / "o").exists()


# --------------------------------------------------------------------------- the runner (fake executor: no kernels)
def _fake_execute(fail_seeds=(), enospc_seeds=(), during=None):
    """Stands in for execute_notebook: writes run.json/metrics.json like a finished run, or raises."""

    def fake(notebook, output_dir, *, parameters=None, timeout=None, final_dir=None, **kw):
        out = Path(output_dir)
        out.mkdir(parents=True, exist_ok=True)
        seed = (parameters or {}).get("SEED", 0)
        if during is not None:
            during(Path(final_dir))
        if seed in enospc_seeds:
            raise OSError(errno.ENOSPC, "No space left on device", str(out / "tiny.ipynb"))
        if seed in fail_seeds:
            raise RuntimeError(f"fake failure of seed {seed}")
        (out / "metrics.json").write_text(json.dumps({"checks": [], "table": [{"seed": seed}]}))
        (out / "run.json").write_text(json.dumps({"status": "ok", "notebook": str(notebook),
                                                  "parameters": {**(parameters or {}), "OUTPUT_DIR": str(final_dir)}}))
        return out / Path(notebook).name

    return fake


def _seeds_manifest(tmp_path, seeds=(0, 1, 2)):
    return make_manifest(tmp_path, [{"notebook": "tiny.ipynb", "grid": {"SEED": list(seeds)}}])


def test_output_not_writable_is_checked_up_front(tmp_path, monkeypatch):
    calls = []
    monkeypatch.setattr(runner, "execute_notebook", lambda *a, **k: calls.append(a))
    (tmp_path / "afile").write_text("")
    m = _seeds_manifest(tmp_path)
    with pytest.raises(OSError, match="afile"):
        batch.run_manifest(m, scheduler="sync", output=tmp_path / "afile" / "out")
    assert calls == []


def test_io_error_is_recorded_not_raised(tmp_path, monkeypatch):
    """The notebook's folder cannot be created (a file is in the way): a failed summary naming it, no exception."""
    monkeypatch.setattr(runner, "execute_notebook", _fake_execute())
    m = _seeds_manifest(tmp_path, seeds=(0,))
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "tiny").write_text("in the way")
    [r] = batch.run_manifest(m, scheduler="sync")
    assert r["status"] == "failed" and str(tmp_path / "out" / "tiny") in r["error"]


def test_disk_full_stops_new_runs_and_keeps_finished_ones(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(runner, "execute_notebook", _fake_execute(enospc_seeds=(1,)))
    m = _seeds_manifest(tmp_path)
    assert batch.main(["run", str(m), "--scheduler", "sync"]) == 1
    out = capsys.readouterr()
    assert "disk full" in out.out and "not started" in out.out and "disk is full" in out.err
    first = tmp_path / "out" / "tiny" / batch.run_key("tiny.ipynb", {"SEED": 0})
    assert json.loads((first / "run.json").read_text())["status"] == "ok"
    assert not list((tmp_path / "out" / "tiny").glob(".*tmp*"))


def test_a_finished_run_is_never_replaced_by_a_failed_one(tmp_path, monkeypatch):
    """A writer without the lock finishes the run while ours fails: the OK run stays."""

    def finish_meanwhile(final: Path) -> None:
        final.mkdir(parents=True)
        (final / "metrics.json").write_text(json.dumps({"checks": [], "table": []}))
        (final / "run.json").write_text(json.dumps({"status": "ok", "parameters": {"SEED": 0}}))

    monkeypatch.setattr(runner, "execute_notebook", _fake_execute(fail_seeds=(0,), during=finish_meanwhile))
    [r] = batch.run_manifest(_seeds_manifest(tmp_path, seeds=(0,)), scheduler="sync")
    assert r["status"] == "skipped" and "another process" in r["error"]
    assert json.loads((Path(r["folder"]) / "run.json").read_text())["status"] == "ok"
    assert not list((tmp_path / "out" / "tiny").glob(".*tmp*"))


def test_failed_run_is_replaced_by_a_later_success(tmp_path, monkeypatch):
    m = _seeds_manifest(tmp_path, seeds=(0,))
    monkeypatch.setattr(runner, "execute_notebook", _fake_execute(fail_seeds=(0,)))
    [r] = batch.run_manifest(m, scheduler="sync")
    assert r["status"] == "failed" and "fake failure of seed 0" in r["error"]
    assert "fake failure" in (Path(r["folder"]) / "error.txt").read_text()
    monkeypatch.setattr(runner, "execute_notebook", _fake_execute())
    [r] = batch.run_manifest(m, scheduler="sync")
    assert r["status"] == "ok" and not (Path(r["folder"]) / "error.txt").exists()
    assert not list((tmp_path / "out" / "tiny").glob(".*old*"))


def test_stale_temporary_folders_are_removed_unless_their_run_is_locked(tmp_path, monkeypatch):
    monkeypatch.setattr(runner, "execute_notebook", _fake_execute())
    parent = tmp_path / "out" / "tiny"
    dead = make_temporary(parent, "aaaaaaaaaaaa")
    live_tmp = make_temporary(parent, "bbbbbbbbbbbb")
    live = RunLock(parent / ".bbbbbbbbbbbb.lock")
    assert live.acquire(wait=False)
    try:
        assert clean_stale(tmp_path / "out") == [dead]
        assert live_tmp.is_dir()
    finally:
        live.release()


_HOLD = ("import sys, time; from dpkit.batch.locks import RunLock; RunLock(sys.argv[1]).acquire(); "
         "print('held', flush=True); time.sleep(60)")


def _holder(path: Path) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(Path(batch.__file__).resolve().parents[2])}
    proc = subprocess.Popen([sys.executable, "-c", _HOLD, str(path)], stdout=subprocess.PIPE, text=True, env=env)
    assert proc.stdout.readline().strip() == "held"
    return proc


def test_lock_of_a_live_process_makes_the_run_busy_and_a_dead_one_frees_it(tmp_path, monkeypatch):
    monkeypatch.setattr(runner, "execute_notebook", _fake_execute())
    make_notebook(tmp_path)
    spec = batch.RunSpec((tmp_path / "tiny.ipynb").resolve(), {"SEED": 0})
    lock_path = tmp_path / "out" / "tiny" / f".{spec.key}.lock"
    lock_path.parent.mkdir(parents=True)
    proc = _holder(lock_path)
    try:
        r = batch.run_one(spec, tmp_path / "out", wait=False)
        assert r["status"] == "busy" and f"pid {proc.pid}" in r["error"]
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    # the holder was killed: its lock does not block (the lock file stays)
    assert batch.run_one(spec, tmp_path / "out", wait=False)["status"] == "ok" and lock_path.exists()


def test_dead_worker_is_recorded_in_the_runs_folder(tmp_path, capsys):
    from distributed.scheduler import KilledWorker

    make_notebook(tmp_path)
    spec = batch.RunSpec((tmp_path / "tiny.ipynb").resolve(), {"SEED": 3})
    from types import SimpleNamespace

    msg = batch.failure_message(KilledWorker("run-tiny-x", SimpleNamespace(address="tcp://127.0.0.1:1"), 0))
    r = batch.record_failure(spec, tmp_path / "out", msg)
    info = json.loads((Path(r["folder"]) / "run.json").read_text())
    assert r["status"] == "failed" and info["status"] == "failed" and "Dask worker" in info["error"]
    assert info["parameters"]["OUTPUT_DIR"] == r["folder"]
    assert batch.main(["collect", str(tmp_path / "out")]) == 1
    assert r["folder"] in capsys.readouterr().err


def test_failure_messages_are_useful():
    from nbclient.exceptions import CellTimeoutError, DeadKernelError

    timeout = CellTimeoutError("A cell timed out while it was being executed, after 5 seconds.\nThe message was: x.\n"
                               "Here is a preview of the cell contents:\n-------------------\nslow_call()\n-------------------\n")
    msg = batch.failure_message(timeout, 5)
    assert "timeout (5 s" in msg and "slow_call()" in msg and "-----" not in msg
    # nbclient previews a cell whose source is a list of lines as that list's repr: the first line is named instead
    listed = CellTimeoutError("A cell timed out while it was being executed, after 5 seconds.\nHere is a preview of the "
                              "cell contents:\n-------------------\n['', 'import os', 'slow_call()']\n...\n"
                              "-------------------\n")
    assert batch.failure_message(listed, 5).endswith("the cell begins: 'import os'")
    assert "kernel died" in batch.failure_message(DeadKernelError("Kernel died"))
    assert "disk full" in batch.failure_message(OSError(errno.ENOSPC, "No space left on device", "/x/y"))
    assert batch.failure_message(ValueError("boom\n")) == "ValueError: boom"


@pytest.mark.notebook
def test_cell_timeout_is_recorded_with_its_cell(tmp_path):
    m = make_manifest(tmp_path, [{"notebook": "tiny.ipynb", "parameters": {"SLEEP": 60.0}}])
    [r] = batch.run_manifest(m, scheduler="sync", timeout=3)
    info = json.loads((Path(r["folder"]) / "run.json").read_text())
    assert r["status"] == "failed" and "timeout (3 s" in info["error"] and "import os" in info["error"]
    assert (Path(r["folder"]) / "error.txt").is_file()


@pytest.mark.notebook
def test_notebook_cli_failure_exits_1_and_names_the_cell(tmp_path, capsys):
    nb = make_notebook(tmp_path)
    assert batch.main(["notebook", str(nb), "--output", str(tmp_path / "o"), "-p", "FAIL", "true"]) == 1
    assert "deliberate failure" in capsys.readouterr().err
    assert json.loads((tmp_path / "o" / "run.json").read_text())["status"] == "failed"


@pytest.mark.notebook
def test_notebook_cli_unreadable_metrics_exits_1_naming_the_file(tmp_path, capsys):
    body = ('from pathlib import Path\nPath(OUTPUT_DIR).mkdir(parents=True, exist_ok=True)\n'
            '(Path(OUTPUT_DIR) / "metrics.json").write_text("{")')
    nb = make_notebook(tmp_path, body=body)
    assert batch.main(["notebook", str(nb), "--output", str(tmp_path / "o")]) == 1
    assert str(tmp_path / "o" / "metrics.json") in capsys.readouterr().err


# --------------------------------------------------------------------------- collect and the checks CLI
def _fake_run(root: Path, seed: int, status: str = "ok", metrics: str | None = None, run_json: str | None = None) -> Path:
    """The folder of a run of nb.ipynb with SEED=seed (its key the hash of those parameters)."""
    folder = root / "nb" / batch.run_key("nb.ipynb", {"SEED": seed})
    folder.mkdir(parents=True)
    (folder / "run.json").write_text(run_json if run_json is not None else json.dumps(
        {"notebook": "nb.ipynb", "parameters": {"SEED": seed}, "status": status, "error": "cell In[3] raised X: y"}))
    if metrics is not None:
        (folder / "metrics.json").write_text(metrics)
    return folder


_GOOD = json.dumps({"checks": [{"id": "c1", "claim": "c", "statistic": 0.1, "bound": 1.0, "confidence": None,
                                "verdict": "PASS", "expected": "PASS"}], "table": [{"v": 1}]})


def test_collect_missing_folder_is_an_error_and_creates_nothing(tmp_path, capsys):
    with pytest.raises(FileNotFoundError, match="nowhere"):
        batch.collect(tmp_path / "nowhere")
    assert batch.main(["collect", str(tmp_path / "nowhere")]) == 2
    assert "nowhere" in capsys.readouterr().err and not (tmp_path / "nowhere").exists()


@pytest.mark.parametrize("kind", ["failed-run", "corrupt-metrics", "corrupt-run-json", "run-json-bad-parameters",
                                  "ok-without-metrics",
                                  "key-without-run-json"])
def test_collect_and_checks_list_problems_by_path(tmp_path, capsys, kind):
    root = tmp_path / "batch"
    _fake_run(root, 0, metrics=_GOOD)
    bad = {"failed-run": lambda: _fake_run(root, 1, status="failed"),
           "corrupt-metrics": lambda: _fake_run(root, 1, metrics="{oops") / "metrics.json",
           "corrupt-run-json": lambda: _fake_run(root, 1, run_json="{") / "run.json",
           "run-json-bad-parameters": lambda: _fake_run(root, 1, run_json='{"status": "ok", "parameters": [1]}',
                                                        metrics=_GOOD) / "run.json",
           "ok-without-metrics": lambda: _fake_run(root, 1),
           "key-without-run-json": lambda: (root / "nb" / "ba9876543210").mkdir() or root / "nb" / "ba9876543210"}[kind]()
    assert batch.main(["collect", str(root)]) == 1
    assert str(bad) in capsys.readouterr().err
    assert checks_cli.main([str(root)]) == 1
    captured = capsys.readouterr()
    assert str(bad) in captured.err and "PROBLEM" in captured.out
    df = checks_cli.gather_checks(root)
    assert len(df) == 1 and [str(p.path) for p in df.attrs["problems"]] == [str(bad)]


def test_collect_of_a_folder_without_runs_fails(tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    assert batch.main(["collect", str(tmp_path / "empty")]) == 1
    assert "no batch runs found" in capsys.readouterr().err


def test_checks_cli_plain_runs(tmp_path, capsys):
    good = tmp_path / "50_a"
    good.mkdir()
    (good / "metrics.json").write_text(_GOOD)
    assert checks_cli.main([str(tmp_path)]) == 0
    (tmp_path / "51_b").mkdir()
    (tmp_path / "51_b" / "metrics.json").write_text("[truncated")
    assert checks_cli.main([str(tmp_path)]) == 1
    assert str(tmp_path / "51_b" / "metrics.json") in capsys.readouterr().err
    (tmp_path / "51_b" / "metrics.json").unlink()
    (tmp_path / "51_b" / "run.json").write_text(json.dumps({"status": "failed", "error": "cell In[2] raised KeyError: 'x'"}))
    assert checks_cli.main([str(tmp_path)]) == 1
    assert "KeyError" in capsys.readouterr().err
    assert checks_cli.main([str(tmp_path / "missing")]) == 2
    assert "missing" in capsys.readouterr().err


# --------------------------------------------------------------------------- CLI options
@pytest.mark.parametrize("argv, needle", [
    (["--datasets", "XYZ"], "--datasets"),
    (["--datasets", "wdbc"], "did you mean 'WDBC'"),
    (["--reps", "0"], "--reps"),
])
def test_bench_options(capsys, argv, needle):
    from benchmarks.bench import main as bench_main

    with pytest.raises(SystemExit) as info:
        bench_main(argv)
    assert info.value.code == 2 and needle in capsys.readouterr().err


@pytest.mark.parametrize("argv, needle", [
    (["--datasets", "XYZ"], "--datasets"),
    (["--datasets", "wdbc"], "did you mean 'WDBC'"),
    (["--queries", "0"], "--queries"),
    (["--repeats", "0"], "--repeats"),
    (["--tables", "--probe-reps", "0"], "--probe-reps"),
    (["--tables", "--workers", "0"], "--workers"),
    (["--sigmas", "2", "-1"], "--sigmas"),
    (["--tol", "0"], "--tol"),
])
def test_bench_truth_options_are_checked_before_anything_runs(capsys, monkeypatch, argv, needle):
    from benchmarks import bench_truth

    monkeypatch.setattr(bench_truth, "truth_stage", lambda *a, **k: pytest.fail("the truth stage ran"))
    monkeypatch.setattr(bench_truth, "table_costs", lambda *a, **k: pytest.fail("the table stage ran"))
    with pytest.raises(SystemExit) as info:
        bench_truth.main(argv)
    assert info.value.code == 2 and needle in capsys.readouterr().err


@pytest.mark.parametrize("opt", ["--workers", "--timeout"])
def test_run_options_must_be_positive(tmp_path, capsys, opt):
    with pytest.raises(SystemExit) as info:
        batch.main(["run", str(_seeds_manifest(tmp_path)), opt, "0"])
    assert info.value.code == 2 and opt in capsys.readouterr().err


@pytest.mark.slow
def test_local_cluster_starts_no_dashboard():
    import psutil

    from dpkit.batch.scheduler import _local_cluster

    cluster = _local_cluster(1)
    try:
        time.sleep(0.2)
        listening = {c.laddr.port for c in psutil.Process().net_connections(kind="tcp") if c.status == psutil.CONN_LISTEN}
        comms = {int(cluster.scheduler.address.rsplit(":", 1)[1])} | {int(n.address.rsplit(":", 1)[1])
                                                                     for n in cluster.workers.values()}
        assert listening <= comms and cluster.dashboard_link == ""
    finally:
        cluster.close()


def test_collect_and_checks_list_runs_the_batch_recorded_as_failed_without_a_folder(tmp_path, monkeypatch, capsys):
    """A run that failed before it had a folder (its lock could not be taken; on a full disk, not started): batch.json
    names it, and collect / checks list it by its folder and exit 1 instead of reporting the finished runs as all."""
    monkeypatch.setattr(runner, "execute_notebook", _fake_execute())
    m = _seeds_manifest(tmp_path, seeds=(0, 1))
    lost = tmp_path / "out" / "tiny" / batch.run_key("tiny.ipynb", {"SEED": 1})
    (lost.parent / f".{lost.name}.lock").mkdir(parents=True)  # a directory in the way of the lock file
    assert batch.main(["run", str(m), "--scheduler", "sync"]) == 1
    assert not lost.exists() and "cannot lock" in capsys.readouterr().out
    out = tmp_path / "out"
    assert batch.main(["collect", str(out)]) == 1
    err = capsys.readouterr().err
    assert str(lost) in err and "batch.json" in err and "cannot lock" in err
    assert checks_cli.main([str(out)]) == 1
    assert str(lost) in capsys.readouterr().err
    (lost.parent / f".{lost.name}.lock").rmdir()  # resumed: the batch finishes the lost run, nothing is left to report
    assert batch.main(["run", str(m), "--scheduler", "sync"]) == 0
    capsys.readouterr()
    assert batch.main(["collect", str(out)]) == 0


def test_collect_names_an_unreadable_batch_json(tmp_path, capsys):
    root = tmp_path / "batch"
    _fake_run(root, 0, metrics=_GOOD)
    (root / "batch.json").write_text("{")
    assert batch.main(["collect", str(root)]) == 1
    assert str(root / "batch.json") in capsys.readouterr().err


def test_checks_of_a_batch_whose_every_run_was_lost_fails(tmp_path, capsys):
    """No run of the batch left a run.json (lock failures, not started on a full disk): checks still finds the batch
    (by batch.json and its run folders) and lists every lost run, exit 1 — not "0 checks" and exit 0."""
    root = tmp_path / "lost"
    (root / "nb" / "0123456789ab").mkdir(parents=True)
    (root / "batch.json").write_text(json.dumps({"runs": [
        {"notebook": "nb.ipynb", "key": "0123456789ab", "status": "failed", "error": "boom"},
        {"notebook": "nb.ipynb", "key": "ba9876543210", "status": "failed", "error": "not started: disk full"}]}))
    assert checks_cli.main([str(root)]) == 1
    err = capsys.readouterr().err
    assert str(root / "nb" / "0123456789ab") in err and str(root / "nb" / "ba9876543210") in err


def test_checks_of_a_folder_without_any_run_or_metrics_fails(tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    assert checks_cli.main([str(tmp_path / "empty")]) == 1
    assert "no metrics.json" in capsys.readouterr().err


@pytest.mark.parametrize("scheduler, needle", [("lcoal", "did you mean 'local'"), ("snyc", "did you mean 'sync'"),
                                               ("", "--scheduler")])
def test_misspelt_scheduler_is_an_error_before_anything_runs(tmp_path, monkeypatch, capsys, scheduler, needle):
    monkeypatch.setattr(runner, "execute_notebook", lambda *a, **k: pytest.fail("a run started"))
    m = _seeds_manifest(tmp_path)
    assert batch.main(["run", str(m), "--scheduler", scheduler]) == 2
    err = capsys.readouterr().err
    assert needle in err and "tcp://host:8786" in err and not (tmp_path / "out").exists()


@pytest.mark.parametrize("metrics, needle", [
    ('{"checks": {"a": 1}}', "'checks' must be a list of objects"),
    ('{"checks": [1, 2]}', "'checks' must be a list of objects"),
    ('{"checks": [], "table": {"x": 1}}', "'table' must be a list of objects"),
    ('[1, 2]', "not a JSON object"),
])
@pytest.mark.parametrize("layout", ["batch", "plain"])
def test_metrics_json_of_the_wrong_shape_is_named_not_a_traceback(tmp_path, capsys, metrics, needle, layout):
    root = tmp_path / "res"
    if layout == "batch":
        bad = _fake_run(root, 0, metrics=metrics) / "metrics.json"
        assert batch.main(["collect", str(root)]) == 1
        err = capsys.readouterr().err
        assert str(bad) in err and needle in err
    else:
        (root / "50_x").mkdir(parents=True)
        bad = root / "50_x" / "metrics.json"
        bad.write_text(metrics)
    assert checks_cli.main([str(root)]) == 1
    err = capsys.readouterr().err
    assert str(bad) in err and needle in err


def test_a_failing_run_that_left_a_corrupt_run_json_is_still_recorded(tmp_path, monkeypatch):
    """run_one never raises: a notebook that fails after leaving an unparsable run.json in its folder is recorded
    as failed with its own error (the corrupt record is replaced)."""

    def fake(notebook, output_dir, *, parameters=None, timeout=None, final_dir=None, **kw):
        Path(output_dir).mkdir(parents=True, exist_ok=True)
        (Path(output_dir) / "run.json").write_text('{"status": "ok"')
        raise RuntimeError("the notebook failed after writing a corrupt run.json")

    monkeypatch.setattr(runner, "execute_notebook", fake)
    [r] = batch.run_manifest(_seeds_manifest(tmp_path, seeds=(0,)), scheduler="sync")
    assert r["status"] == "failed" and "corrupt run.json" in r["error"]
    info = json.loads((Path(r["folder"]) / "run.json").read_text())
    assert info["status"] == "failed" and info["parameters"]["SEED"] == 0


def test_two_notebooks_with_one_name_in_one_batch_is_an_error(tmp_path):
    """Runs live in <output>/<notebook stem>/<key>, the key hashing the file name: two notebooks named alike in
    different folders would share run folders (the second 'finished' by the first). An error naming both."""
    make_notebook(tmp_path)
    (tmp_path / "other").mkdir()
    make_notebook(tmp_path / "other")
    m = make_manifest(tmp_path, [{"notebook": "tiny.ipynb"}, {"notebook": "other/tiny.ipynb"}])
    with pytest.raises(ManifestError, match="tiny") as info:
        batch.run_manifest(m, scheduler="sync")
    assert str(tmp_path / "tiny.ipynb") in str(info.value) and str(tmp_path / "other" / "tiny.ipynb") in str(info.value)
    assert not (tmp_path / "out").exists()
