"""The batch runner on Dask: each worker's thread share reaches its notebook kernels, and a real cluster
(``dask scheduler`` + ``dask worker`` processes on 127.0.0.1) gives the local cluster's records, survives a killed
worker, and refuses at the start a worker that does not see the batch's files.

Every process a test starts runs in its own process group; the ``processes`` fixture kills the groups and their
descendants (the notebook kernels, which run in sessions of their own) even when the test fails.
"""
from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import warnings
from collections import Counter
from pathlib import Path

import psutil
import pytest
import yaml
from batch_notebooks import make_notebook

from dpkit import batch
from dpkit.batch.cluster import check_workers, cluster_shares, probe_worker, slot_key
from dpkit.core.threads import thread_environ, thread_share

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = Path(__file__).parent / "fixtures" / "batch_fixture.ipynb"
DASK = [sys.executable, "-m", "dask"]
# a worker takes a task only when it has a free thread (no task waits behind a running one on a worker)
ENV = {**os.environ, "PYTHONPATH": str(ROOT), "MPLBACKEND": "Agg", "DASK_DISTRIBUTED__SCHEDULER__WORKER_SATURATION": "1.0"}
# the Dask configuration the batch guide gives for workers started by hand ("Several machines")
#: the batch guide's Dask configuration (its YAML block that sets the nanny's pre-spawn environment)
GUIDE_DASK_CONFIG = next(b for b in re.findall(r"```yaml\n(.*?)```", (ROOT / "docs" / "guide" / "batch.md").read_text(), re.S)
                         if "pre-spawn-environ" in b)
VARIABLES = ("DPKIT_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "XLA_FLAGS")

THREADS_PARAMETERS = """SEED: int = 0
QUICK: bool = False
INTERACTIVE: bool = True
OUTPUT_DIR: str = "out\""""

THREADS_BODY = f"""import hashlib
import os

import numpy as np
import threadpoolctl

from dpkit.outputs.report import Report
from dpkit.queries.gemm import kernel_sums, usable_cores

rng = np.random.default_rng(SEED)
n = 12_000  # 300 centres x 12 000 points: above the evaluator's serial threshold, so it uses its threads
sums, info = kernel_sums(rng.standard_normal((300, 3)), rng.standard_normal((n, 3)), np.ones(n), 1.0,
                         return_info=True)
rep = Report(OUTPUT_DIR, params={{"SEED": SEED}})
rep.row(seed=SEED, sums_sha256=hashlib.sha256(sums.tobytes()).hexdigest())
rep.extra["threads"] = {{
    "usable_cores": usable_cores(), "evaluator": info["n_threads"],
    "blas": [p["num_threads"] for p in threadpoolctl.threadpool_info() if p["user_api"] == "blas"],
    "env": {{v: os.environ.get(v) for v in {VARIABLES!r}}},
}}
rep.write()"""

HOLD_PARAMETERS = """SEED: int = 0
QUICK: bool = False
INTERACTIVE: bool = True
OUTPUT_DIR: str = "out"
LOG: str = ""
HOLD: str = \"\""""

HOLD_BODY = """import os
import time
from pathlib import Path

from dpkit.outputs.report import Report

with open(LOG, "a") as f:
    f.write(f"start {SEED}\\n")
if HOLD and not Path(HOLD).exists():  # the first attempt waits here until the test kills its worker
    Path(HOLD).write_text(str(os.getpid()))
    time.sleep(300)
rep = Report(OUTPUT_DIR, params={"SEED": SEED})
rep.row(seed=SEED)
rep.write()
with open(LOG, "a") as f:
    f.write(f"end {SEED}\\n")"""


def _cores() -> int:
    return len(os.sched_getaffinity(0))


def _write_manifest(folder: Path, runs: list[dict], output: str = "out") -> Path:
    path = folder / "m.yaml"
    path.write_text(yaml.safe_dump({"name": "c", "output": output, "defaults": {"QUICK": True}, "runs": runs}))
    return path


def _records(out: Path) -> dict[str, str]:
    """Each run's metrics.json tables, checks and parameters (as JSON text: equal means equal to the bit)."""
    found = {}
    for path in sorted(out.glob("*/*/metrics.json")):
        m = json.loads(path.read_text())
        found[f"{path.parent.parent.name}/{path.parent.name}"] = json.dumps(
            {k: m[k] for k in ("table", "checks", "params")}, sort_keys=True)
    return found


# --------------------------------------------------------------------------- processes and a cluster
def _kill_all(started: list[subprocess.Popen]) -> None:
    tree = []
    for p in started:
        try:
            tree += psutil.Process(p.pid).children(recursive=True)
        except psutil.NoSuchProcess:
            pass
    for p in started:
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    for c in tree:  # the kernels run in sessions of their own
        try:
            c.kill()
        except psutil.NoSuchProcess:
            pass
    for p in started:
        try:
            p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass


@pytest.fixture
def processes(tmp_path):
    """``start(args, name)``: a process in its own group, output in ``tmp_path/logs/<name>.log``; all killed at the end."""
    started: list[subprocess.Popen] = []
    logs = tmp_path / "logs"
    logs.mkdir()

    def start(args: list[str], name: str, cwd: Path | None = None) -> subprocess.Popen:
        with open(logs / f"{name}.log", "w") as log:
            p = subprocess.Popen(args, cwd=cwd or tmp_path, env=ENV, stdout=log, stderr=subprocess.STDOUT,
                                 start_new_session=True)
        started.append(p)
        return p

    yield start
    _kill_all(started)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _cluster(start, tmp_path: Path, n_workers: int, prefix=lambda i: []) -> tuple[str, list[subprocess.Popen]]:
    """A ``dask scheduler`` and ``n_workers`` ``dask worker --nthreads 1`` (each in a working directory of its own,
    started under ``prefix(i)``) on 127.0.0.1; returns the scheduler's address once every worker has joined."""
    from distributed import Client

    port = _free_port()
    address = f"tcp://127.0.0.1:{port}"
    start(DASK + ["scheduler", "--host", "127.0.0.1", "--port", str(port), "--no-dashboard"], "scheduler")
    workers = []
    for i in range(n_workers):
        home = tmp_path / f"worker{i}"
        home.mkdir()
        workers.append(start(prefix(i) + DASK + ["worker", address, "--nthreads", "1", "--host", "127.0.0.1",
                                                 "--no-dashboard", "--name", f"w{i}", "--local-directory", str(home)],
                             f"worker{i}", cwd=home))
    with Client(address, timeout=60) as client:
        client.wait_for_workers(n_workers, timeout=60)
    return address, workers


def _batch(args: list[str], timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "dpkit.batch", "run", *args], env=ENV, capture_output=True,
                          text=True, timeout=timeout)


# --------------------------------------------------------------------------- thread share
def test_thread_share_and_environment():
    assert [thread_share(c, w) for c, w in [(2, 2), (8, 2), (8, 3), (1, 4), (2, 1)]] == [1, 4, 2, 1, 2]
    one = thread_environ(1, xla_flags="--xla_cpu_multi_thread_eigen=true --xla_dump_to=/x")
    assert one["DPKIT_THREADS"] == one["OMP_NUM_THREADS"] == one["OPENBLAS_NUM_THREADS"] == one["MKL_NUM_THREADS"] == "1"
    assert one["XLA_FLAGS"] == "--xla_dump_to=/x --xla_cpu_multi_thread_eigen=false"
    assert thread_environ(4, xla_flags="")["XLA_FLAGS"] == "" and thread_environ(4)["OMP_NUM_THREADS"] == "4"


def test_usable_cores_honours_dpkit_threads(monkeypatch):
    from dpkit.queries.gemm import usable_cores

    monkeypatch.setenv("DPKIT_THREADS", "1")
    assert usable_cores() == 1
    monkeypatch.setenv("DPKIT_THREADS", str(_cores() + 5))
    assert usable_cores() == _cores()
    monkeypatch.setenv("DPKIT_THREADS", "zero")
    with pytest.raises(ValueError, match="DPKIT_THREADS must be a positive integer"):
        usable_cores()


@pytest.mark.notebook
@pytest.mark.slow
def test_each_workers_kernel_gets_its_thread_share_and_the_same_numbers(tmp_path):
    """Two local workers: each kernel's evaluator, BLAS and environment hold cores // 2 threads (old code: the
    evaluator took every core); in-process (``sync``) a run takes every core. The numbers are the same."""
    make_notebook(tmp_path, "threads.ipynb", parameters=THREADS_PARAMETERS, body=THREADS_BODY)
    m = _write_manifest(tmp_path, [{"notebook": "threads.ipynb", "grid": {"SEED": [0, 1]}}])
    start = dict(os.environ)
    runs = {"local": (batch.run_manifest(m, scheduler="local", workers=2, output=tmp_path / "local"), thread_share(_cores(), 2))}
    # a LocalCluster's nannies set OMP_NUM_THREADS=1 etc. in this process too: the runner puts the environment back
    assert dict(os.environ) == start
    before = {v: os.environ.get(v) for v in VARIABLES}
    runs["sync"] = (batch.run_manifest(m, scheduler="sync", output=tmp_path / "sync"), _cores())
    assert {v: os.environ.get(v) for v in VARIABLES} == before  # in-process runs leave the caller's environment alone
    for name, (results, share) in runs.items():
        assert [r["status"] for r in results] == ["ok", "ok"], results
        for path in (tmp_path / name).glob("threads/*/metrics.json"):
            seen = json.loads(path.read_text())["threads"]
            assert seen["usable_cores"] == seen["evaluator"] == share, (name, seen)
            assert seen["blas"] and set(seen["blas"]) == {share}, (name, seen)
            env = seen["env"]
            assert env["DPKIT_THREADS"] == env["OMP_NUM_THREADS"] == env["OPENBLAS_NUM_THREADS"] == str(share), (name, env)
            assert ("--xla_cpu_multi_thread_eigen=false" in (env["XLA_FLAGS"] or "")) == (share == 1), (name, env)
    assert all(r.get("threads") == runs["local"][1] and r.get("worker") for r in runs["local"][0])
    assert _records(tmp_path / "local") == _records(tmp_path / "sync") and len(_records(tmp_path / "sync")) == 2


def test_the_dask_nanny_sets_blas_threads_to_one_unless_set_before(monkeypatch):
    """What distributed's nanny does to a worker's environment (``distributed.nanny.pre-spawn-environ``): BLAS
    variables 1 and ``MALLOC_TRIM_THRESHOLD_``, a value already in the nanny's environment winning; ``DPKIT_THREADS``
    and ``XLA_FLAGS`` untouched. The runner's share replaces them in the kernels' environment."""
    import distributed  # noqa: F401 - loads its configuration defaults
    from distributed.nanny import _get_env_variables

    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MALLOC_TRIM_THRESHOLD_"):
        monkeypatch.delenv(var, raising=False)
    env = _get_env_variables("distributed.nanny.pre-spawn-environ")
    assert {k: env[k] for k in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")} == dict.fromkeys(
        ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"), "1")
    assert "MALLOC_TRIM_THRESHOLD_" in env and "DPKIT_THREADS" not in env and "XLA_FLAGS" not in env
    monkeypatch.setenv("OMP_NUM_THREADS", "3")
    assert _get_env_variables("distributed.nanny.pre-spawn-environ")["OMP_NUM_THREADS"] == "3"


# --------------------------------------------------------------------------- the start-of-batch check
class _InProcessClient:
    """``Client.run`` of one pretend worker: the function runs in this process."""

    scheduler = type("S", (), {"address": "tcp://pretend:1"})()

    def run(self, func, *args):
        return {"tcp://pretend:2": func(*args)}


def test_check_workers_names_the_worker_and_the_path(tmp_path, monkeypatch):
    nb = make_notebook(tmp_path, "threads.ipynb", parameters=THREADS_PARAMETERS, body=THREADS_BODY)
    out = tmp_path / "out"
    out.mkdir()
    shares = check_workers(_InProcessClient(), [nb], out)
    assert list(shares.values()) == [_cores()]  # one worker of one thread: every core
    # a worker that sees another folder at the output's path (the token the batch wrote is not there)
    info = probe_worker(str(out), ".worker-check-x", "token", {})
    assert "does not see the output folder" in info["problem"] and str(out) in info["problem"]
    # a notebook that differs from the submitting process's, and one that is missing
    (out / ".t").write_text("token")
    assert "another version of the notebook" in probe_worker(str(out), ".t", "token", {str(nb): "0" * 16})["problem"]
    assert "cannot read the notebook" in probe_worker(str(out), ".t", "token", {str(tmp_path / "no.ipynb"): "x"})["problem"]
    monkeypatch.setattr("dpkit.batch.cluster.probe_worker", lambda *a, **k: {**probe_worker(*a, **k),
                                                                              "problem": f"cannot write to {out}"})
    with pytest.raises(batch.BatchError, match=r"Dask worker tcp://pretend:2 \(working directory .*\) cannot write to"):
        check_workers(_InProcessClient(), [nb], out)
    assert not list(out.glob(".worker-check-*"))  # the token is removed either way


def test_the_local_clusters_workers_start_without_malloc_trim_threshold(monkeypatch):
    """distributed's nannies set ``MALLOC_TRIM_THRESHOLD_=65536``, which turns off glibc's dynamic mmap threshold
    (every array above 128 KiB mapped and faulted in anew: a CRM table repetition 1.4x slower); the local cluster's
    do not, and the caller's environment is as it was afterwards."""
    from dpkit.batch.scheduler import batch_client

    monkeypatch.delenv("MALLOC_TRIM_THRESHOLD_", raising=False)
    with batch_client("local", 1) as client:
        seen = client.run(os.environ.get, "MALLOC_TRIM_THRESHOLD_")
    assert list(seen.values()) == [None]
    assert "MALLOC_TRIM_THRESHOLD_" not in os.environ


def test_check_workers_warns_of_a_worker_with_malloc_trim_threshold(tmp_path, monkeypatch):
    nb = make_notebook(tmp_path, "threads.ipynb", parameters=THREADS_PARAMETERS, body=THREADS_BODY)
    out = tmp_path / "out"
    out.mkdir()
    monkeypatch.delenv("MALLOC_TRIM_THRESHOLD_", raising=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_workers(_InProcessClient(), [nb], out)
        assert cluster_shares(_InProcessClient()) == {slot_key(): _cores()}
    monkeypatch.setenv("MALLOC_TRIM_THRESHOLD_", "65536")
    with pytest.warns(RuntimeWarning, match=r"1 of 1 Dask workers \(first: tcp://pretend:2\) run with "
                                            r"MALLOC_TRIM_THRESHOLD_=65536"):
        check_workers(_InProcessClient(), [nb], out)
    with pytest.warns(RuntimeWarning, match=r"MALLOC_TRIM_THRESHOLD_=65536 .* dask\.config\.set"):
        cluster_shares(_InProcessClient())  # the notebook's own check, for a cluster it did not start


# --------------------------------------------------------------------------- a real cluster
@pytest.mark.notebook
@pytest.mark.slow
def test_a_dask_cluster_gives_the_local_clusters_records(tmp_path, processes):
    """``dask scheduler`` + two ``dask worker`` processes (in other working directories): the same records, to
    the bit, as the local cluster."""
    # worker 1 is started as the batch guide says (a Dask configuration without MALLOC_TRIM_THRESHOLD_), worker 0
    # as distributed does by default: the batch warns of that one
    config = tmp_path / "dask-config"
    config.mkdir()
    (config / "dpkit.yaml").write_text(GUIDE_DASK_CONFIG)
    address, _ = _cluster(processes, tmp_path, 2, prefix=lambda i: ["env", f"DASK_CONFIG={config}"] if i else [])
    (tmp_path / "batch_fixture.ipynb").write_bytes(FIXTURE.read_bytes())
    m = _write_manifest(tmp_path, [{"notebook": "batch_fixture.ipynb", "grid": {"SEED": [0, 1, 2]}}])
    remote = _batch([str(m), "--scheduler", address, "--output", str(tmp_path / "remote")])
    assert remote.returncode == 0, remote.stdout + remote.stderr
    assert "1 of 2 Dask workers" in remote.stderr and "MALLOC_TRIM_THRESHOLD_=65536" in remote.stderr, remote.stderr
    assert "3 ok" in remote.stdout and f"threads per run (each Dask worker's share of its cores): {thread_share(_cores(), 2)}" \
        in remote.stdout, remote.stdout
    local = batch.run_manifest(m, scheduler="local", workers=2, output=tmp_path / "local")
    assert [r["status"] for r in local] == ["ok"] * 3
    assert _records(tmp_path / "remote") == _records(tmp_path / "local") and len(_records(tmp_path / "local")) == 3


@pytest.mark.notebook
@pytest.mark.slow
def test_a_killed_worker_loses_nothing_and_its_run_reruns_elsewhere(tmp_path, processes):
    """One worker (its nanny, worker process and kernel: a lost machine) is SIGKILLed while its run is in progress
    and the other runs have finished. The run executes again on the other worker, the batch exits 0 and says so
    (RERUN), the finished runs are untouched, and nothing is left behind."""
    address, workers = _cluster(processes, tmp_path, 2)
    make_notebook(tmp_path, "hold.ipynb", parameters=HOLD_PARAMETERS, body=HOLD_BODY)
    log, hold = tmp_path / "executions.log", tmp_path / "hold.pid"
    m = _write_manifest(tmp_path, [{"notebook": "hold.ipynb", "parameters": {"LOG": str(log)}, "grid": {"SEED": [0, 1, 2]}},
                                   {"notebook": "hold.ipynb", "parameters": {"LOG": str(log), "HOLD": str(hold), "SEED": 3}}])
    out = tmp_path / "out"
    run = processes(DASK[:1] + ["-m", "dpkit.batch", "run", str(m), "--scheduler", address], "batch")
    t0 = time.monotonic()
    while not (hold.exists() and len(list(out.glob("hold/*/metrics.json"))) == 3):
        assert run.poll() is None and time.monotonic() - t0 < 90, (tmp_path / "logs" / "batch.log").read_text()
        time.sleep(0.2)
    finished = {p: p.read_bytes() for p in out.glob("hold/[!.]*/*") if p.is_file()}  # the run folders, not temporary ones
    kernel = psutil.Process(int(hold.read_text()))
    victim = next(w for w in workers if w.pid in {p.pid for p in kernel.parents()})
    os.killpg(victim.pid, signal.SIGKILL)
    kernel.kill()
    assert run.wait(timeout=60) == 0, (tmp_path / "logs" / "batch.log").read_text()
    report = (tmp_path / "logs" / "batch.log").read_text()
    assert "4 ok" in report and "RERUN hold.ipynb" in report and "cut off" in report, report
    assert all(p.read_bytes() == data for p, data in finished.items())  # nothing finished is lost or rewritten
    assert Counter(log.read_text().splitlines()) == Counter({"start 0": 1, "start 1": 1, "start 2": 1, "start 3": 2,
                                                             "end 0": 1, "end 1": 1, "end 2": 1, "end 3": 1})
    summary = {r["key"]: r for r in json.loads((out / "batch.json").read_text())["runs"]}
    rerun = [r for r in summary.values() if r.get("interrupted")]
    assert len(rerun) == 1 and rerun[0]["status"] == "ok" and len(summary) == 4
    assert not list((out / "hold").glob(".*tmp*")) and len(_records(out)) == 4


def _unshare_works() -> bool:
    try:
        return subprocess.run(["unshare", "-rm", "true"], capture_output=True, timeout=10).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


@pytest.mark.notebook
@pytest.mark.slow
@pytest.mark.parametrize("hidden", ["output", "notebooks"])
def test_a_worker_that_does_not_see_the_files_stops_the_batch_naming_it(tmp_path, processes, hidden):
    """A worker with a file system view of its own (a mount namespace with an empty tmpfs over the output folder,
    or over the notebooks' folder): the batch exits 2 at the start with one line naming the worker and the path;
    nothing runs."""
    if not _unshare_works():
        pytest.skip("unshare -rm (user and mount namespaces) is not permitted here")
    nbs, out = tmp_path / "notebooks", tmp_path / "out"
    nbs.mkdir()
    out.mkdir()
    make_notebook(nbs, "hold.ipynb", parameters=HOLD_PARAMETERS, body=HOLD_BODY)
    m = _write_manifest(nbs, [{"notebook": "hold.ipynb", "parameters": {"LOG": str(tmp_path / "log")}}], output=str(out))
    covered = out if hidden == "output" else nbs
    prefix = ["unshare", "-rm", "sh", "-c", f'mount -t tmpfs none "{covered}" && exec "$@"', "sh"]
    address, _ = _cluster(processes, tmp_path, 1, prefix=lambda i: prefix)
    res = _batch([str(m), "--scheduler", address])
    errors = [line for line in res.stderr.splitlines() if line.startswith("error:")]
    assert res.returncode == 2 and len(errors) == 1, res.stdout + res.stderr
    assert "Dask worker tcp://127.0.0.1:" in errors[0] and str(covered) in errors[0], errors
    assert ("does not see the output folder" if hidden == "output" else "cannot read the notebook") in errors[0]
    assert not (tmp_path / "log").exists() and not list(out.glob("hold/*"))
