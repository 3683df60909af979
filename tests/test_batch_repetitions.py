"""run_cells's repetitions as Dask tasks (dpkit.batch.repetitions): the records of a serial run to the bit, each
repetition kept by its own task, a killed task run again alone."""
from __future__ import annotations

import json
import math
import os
import signal
import time
from dataclasses import asdict
from pathlib import Path

import numpy as np
import pytest
from test_batch_cluster import processes  # noqa: F401 - the fixture that starts and kills cluster processes

from dpkit import experiments as ex
from dpkit.batch.repetitions import (
    DaskRepetitions,
    cut_off_attempts,
    repetition_workers,
    running_repetitions,
    uses_repetition_tasks,
)
from dpkit.experiments.checkpoint import RepetitionCheckpoint, run_identity
from dpkit.methods.references import SamplingFloor
from dpkit.methods.registry import get

ROOT = Path(__file__).resolve().parents[1]
SIGMAS = (2.0, 6.0)
KW = dict(sigmas=SIGMAS, reps=4, seed=3, dataset="mock", n_queries=120)


@pytest.fixture(scope="module")
def X():
    from dpkit.data import load

    return load("mock", n=250, d=3, rng=1).X


def _methods():
    # σ-dependent (trig-II, kme-answers) and σ-independent (histogram, floor: shared across σ) methods
    return {"trig-II": get("trig-II", C=200, R=8), "marginals-histogram": get("marginals-histogram"),
            "kme-answers": get("kme-answers", max_features=32), "floor": SamplingFloor(size=15)}


def _canon(x):
    """``x`` with every float as its exact hex form and every array as its dtype, shape and bytes."""
    if isinstance(x, dict):
        return tuple(sorted((str(k), _canon(v)) for k, v in x.items()))
    if isinstance(x, (list, tuple)):
        return tuple(_canon(v) for v in x)
    if isinstance(x, np.ndarray):
        return (str(x.dtype), x.shape, x.tobytes())
    if isinstance(x, (float, np.floating)):
        return float(x).hex()
    return repr(x)


def _bits(records) -> list[tuple]:
    """Each record without its measured times (``time_s``, ``timings``, the supremum search's and its upper bound's
    ``seconds``), floats as their exact hex form: equal means equal to the bit."""
    out = []
    for r in records:
        d = asdict(r)
        d.pop("time_s")
        d.pop("timings")
        for nested in ("supremum", "supremum_upper"):  # the search's and the upper bound's measured seconds
            if isinstance(d.get(nested), dict):
                d[nested].pop("seconds", None)
        out.append(_canon(d))
    return out


def _local_cluster(n: int = 2):
    """Worker processes as the batch's local cluster starts them (without ``MALLOC_TRIM_THRESHOLD_``, of which
    :func:`~dpkit.batch.cluster.cluster_shares` warns)."""
    import dask
    from distributed import LocalCluster

    from dpkit.batch.scheduler import LOCAL_WORKER_CONFIG

    with dask.config.set(LOCAL_WORKER_CONFIG):
        return LocalCluster(n_workers=n, threads_per_worker=1, processes=True, dashboard_address=None,
                            worker_dashboard_address=None)


def test_repetition_workers_resolves_the_notebook_parameters(monkeypatch):
    monkeypatch.delenv("DPKIT_SCHEDULER", raising=False)
    assert repetition_workers("auto", 2) == 2 and repetition_workers("processes", 3) == 3
    assert repetition_workers("dask", 1) == DaskRepetitions(None)
    monkeypatch.setenv("DPKIT_SCHEDULER", "tcp://127.0.0.1:1")
    assert repetition_workers("auto", 2) == DaskRepetitions("tcp://127.0.0.1:1")
    assert repetition_workers("processes", 2) == 2
    with pytest.raises(ValueError, match="REP_BACKEND must be one of 'auto', 'dask', 'processes'; got 'threads'"):
        repetition_workers("threads", 1)
    with pytest.raises(ValueError, match="REP_WORKERS"):
        repetition_workers("auto", 0)


def test_notebooks_20_and_45_compute_their_repetitions_as_tasks():
    for nb in ("20_tables.ipynb", "45_leaderboard.ipynb"):
        assert uses_repetition_tasks(ROOT / "notebooks" / nb, {})
        assert not uses_repetition_tasks(ROOT / "notebooks" / nb, {"REP_BACKEND": "processes"})
    assert not uses_repetition_tasks(ROOT / "notebooks" / "00_quickstart.ipynb", {})


@pytest.mark.slow
def test_dask_tasks_give_the_serial_records_and_keep_each_repetition(X, tmp_path):
    """A LocalCluster of two single-threaded workers: the records of ``workers=1`` to the bit (``time_s`` aside),
    each repetition kept in the checkpoint by its task; a second call loads them all and computes nothing."""
    from distributed import Client

    serial = ex.run_cells(X, methods=_methods(), **KW)
    arrived = []
    with _local_cluster() as cluster, Client(cluster) as client:
        tasks = ex.run_cells(X, methods=_methods(), checkpoint=tmp_path / "keep", workers=DaskRepetitions(), **KW)
        seen = client.run(lambda: os.environ.get("DPKIT_THREADS"))
        assert _bits(tasks) == _bits(serial) and len(serial) == 4 * 4 * len(SIGMAS)
        assert set(seen.values()) == {str(max(1, len(os.sched_getaffinity(0)) // 2))}  # the workers' thread share
        keep = RepetitionCheckpoint(tmp_path / "keep", run_identity(X, methods=_methods(), sigmas=SIGMAS, seed=3,
                                                                     dataset="mock", n_queries=120, J=10))
        assert keep.done() == [0, 1, 2, 3]
        stamps = {p: p.stat().st_mtime_ns for p in (tmp_path / "keep").glob("rep-*.pkl")}
        again = ex.run_cells(X, methods=_methods(), checkpoint=tmp_path / "keep", workers=DaskRepetitions(),
                             on_repetition=lambda i, n: arrived.append(i), **KW)
    assert _bits(again) == _bits(serial) and arrived == [0, 1, 2, 3]
    assert {p: p.stat().st_mtime_ns for p in stamps} == stamps  # loaded, not computed again
    assert cut_off_attempts(tmp_path / "keep") == [] and running_repetitions(tmp_path / "keep") == {}
    assert not any(math.isnan(r.abs) for r in tasks)


def test_dask_repetitions_without_a_cluster_say_so(X, monkeypatch):
    monkeypatch.delenv("DPKIT_SCHEDULER", raising=False)
    with pytest.raises(RuntimeError, match="need a Dask cluster: set DPKIT_SCHEDULER"):
        ex.run_cells(X, methods=_methods(), workers=DaskRepetitions(), **KW)


# --------------------------------------------------------------------------- status counts repetition tasks
def test_status_counts_kept_and_running_repetitions(tmp_path):
    """A running run whose checkpoint keeps 2 of WDBC's repetitions while a task holds the lock of a third:
    ``status`` says so per run and counts the repetitions of the batch (kept/total, running)."""
    from test_batch_cluster import _write_manifest

    from dpkit.batch import expand_manifest, load_manifest
    from dpkit.batch.locks import RunLock
    from dpkit.batch.stale import checkpoint_folder
    from dpkit.batch.status import batch_status, format_status

    (tmp_path / "45_leaderboard.ipynb").write_bytes((ROOT / "notebooks" / "45_leaderboard.ipynb").read_bytes())
    m = _write_manifest(tmp_path, [{"notebook": "45_leaderboard.ipynb", "parameters": {"QUICK": False, "REPS": 4},
                                    "grid": {"DATASETS": [["WDBC"], ["PKS", "CTG"]]}}])
    specs = expand_manifest(load_manifest(m))
    out = tmp_path / "out"
    keep = checkpoint_folder(specs[0], specs[0].folder(out).parent) / "WDBC"
    keep.mkdir(parents=True)
    for i in (0, 1):
        (keep / f"rep-{i:05d}.pkl").write_bytes(b"")
    run, task = RunLock(specs[0].folder(out).parent / f".{specs[0].key}.lock"), RunLock(keep / ".rep-00002.lock")
    assert run.acquire(wait=False) and task.acquire(wait=False)
    try:
        text = format_status(batch_status(m))
    finally:
        task.release()
        run.release()
    lines = text.splitlines()
    assert "running" in lines[0] and "2 repetition(s) kept (WDBC 2/4)" in lines[0], text
    assert "1 repetition task(s) running (WDBC 1)" in lines[0], text
    assert "repetitions: 2/12 done (kept or in finished runs), 1 running" in lines, text
    assert "repetition task(s) running" not in format_status(batch_status(m))  # released: none running


def test_status_pace_is_the_recorded_compute_time_not_the_gaps_an_adoption_wrote(tmp_path):
    """An adoption writes every kept repetition again at once, so their file times no longer say how long a
    repetition takes (the median gap is then 0): the pace is the median compute time the files record."""
    import os

    from dpkit.batch.status import _kept
    from dpkit.experiments.checkpoint import RepetitionCheckpoint

    ck = RepetitionCheckpoint(tmp_path / "WDBC", {"dataset": "WDBC"})
    for i, seconds in enumerate((290.0, 300.0, 310.0)):
        ck.save(i, [], seconds=seconds)
    for p in (tmp_path / "WDBC").glob("rep-*.pkl"):
        os.utime(p, (1_000_000.0, 1_000_000.0))  # written in the same second, as by an adoption
    kept, last, pace = _kept(tmp_path)
    assert kept == {"WDBC": 3} and last == 1_000_000.0 and pace == 300.0


# --------------------------------------------------------------------------- a real cluster
LEADERBOARD = {"QUICK": False, "SEED": 0, "REPS": 4, "N_QUERIES": 300, "SIGMAS": [2.0, 4.0],
               "METHODS": ["trig-I", "marginals-histogram", "direct-gaussian"]}


class _Watch:
    """Polls a batch output's checkpoint folders while a batch runs: every repetition lock seen (and the command
    line of the process holding it), every kept repetition's bytes and each version of its file (inode, mtime)."""

    def __init__(self, out: Path):
        import threading

        self.out, self.locks, self.kept, self.versions, self.seen_at = out, {}, {}, {}, {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        import psutil

        while not self._stop.is_set():
            for p in self.out.glob("*/.*.checkpoint/*/.rep-*.lock"):
                key = (p.parent.name, int(p.name[5:10]))
                if key not in self.locks:
                    try:
                        pid = int(p.read_text().split()[1])
                        self.locks[key] = (pid, " ".join(psutil.Process(pid).cmdline()))
                        self.seen_at[key] = time.monotonic()
                    except (OSError, IndexError, ValueError, psutil.Error):
                        continue
            for p in self.out.glob("*/.*.checkpoint/*/rep-*.pkl"):
                key = (p.parent.name, int(p.stem[4:]))
                try:
                    st = p.stat()
                    self.versions.setdefault(key, set()).add((st.st_ino, st.st_mtime_ns))
                    if key not in self.kept:
                        self.kept[key] = p.read_bytes()
                except OSError:
                    continue
            time.sleep(0.03)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()

    def records(self, dataset: str) -> list:
        import pickle

        reps = sorted(i for d, i in self.kept if d == dataset)
        return [r for i in reps for r in pickle.loads(self.kept[(dataset, i)])["records"]]


def _serial(dataset: str, params: dict) -> list:
    """The records of the notebook's ``run_cells`` for one data set, computed here in one process, serially."""
    import warnings

    from dpkit.board.records import BOARD_SUPREMUM
    from dpkit.board.report import board_methods
    from dpkit.data import load_available

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        X = load_available([dataset])[0][dataset].X
    recs = ex.run_cells(X, methods=board_methods(params["METHODS"], epsilon=1.0, delta=1e-3), sigmas=params["SIGMAS"],
                        reps=params["REPS"], n_queries=params["N_QUERIES"], J=10, seed=params["SEED"], dataset=dataset,
                        supremum=BOARD_SUPREMUM)
    # run_cells returns σ-major; the checkpoint keeps repetition-major: compare per (rep, σ, method)
    return sorted(recs, key=lambda r: (r.rep, params["SIGMAS"].index(r.sigma)))


def _leaderboard_manifest(tmp_path: Path, datasets: tuple[str, ...] = ("WDBC", "PKS"), **params) -> Path:
    import yaml

    path = tmp_path / "lb.yaml"
    path.write_text(yaml.safe_dump({"name": "lb", "output": "out", "defaults": {**LEADERBOARD, **params},
                                    "runs": [{"notebook": str(ROOT / "notebooks" / "45_leaderboard.ipynb"),
                                              "parameters": {"DATASETS": list(datasets)}}]}))
    return path


def _worker_processes(workers) -> set[int]:
    import psutil

    return {c.pid for w in workers for c in psutil.Process(w.pid).children(recursive=True)} | {w.pid for w in workers}


@pytest.mark.notebook
@pytest.mark.slow
def test_a_leaderboard_run_on_a_cluster_computes_one_task_per_repetition(tmp_path, processes):  # noqa: F811
    """``dask scheduler`` + two ``dask worker`` processes: notebook 45 run by the batch with ``--scheduler`` computes
    each (data set × repetition) in a task of a worker process (not in its kernel), keeps each in the checkpoint,
    and its records are those of a serial run to the bit."""
    from test_batch_cluster import _batch, _cluster

    address, workers = _cluster(processes, tmp_path, 2)
    m = _leaderboard_manifest(tmp_path)
    watch = _Watch(tmp_path / "out")
    try:
        res = _batch([str(m), "--scheduler", address, "--output", str(tmp_path / "out")], timeout=180)
    finally:
        watch.stop()
    assert res.returncode == 0, res.stdout + res.stderr
    every = {(d, i) for d in ("WDBC", "PKS") for i in range(LEADERBOARD["REPS"])}
    assert set(watch.locks) == every and set(watch.kept) == every, (watch.locks, sorted(watch.kept))
    pool = _worker_processes(workers)
    for key, (pid, cmd) in watch.locks.items():  # each repetition computed in a Dask worker process, not a kernel
        assert pid in pool and "ipykernel" not in cmd, (key, pid, cmd)
    assert all(len(v) == 1 for v in watch.versions.values())  # each kept once
    for d in ("WDBC", "PKS"):
        assert _bits(watch.records(d)) == _bits(_serial(d, LEADERBOARD)), d
    run = json.loads(next((tmp_path / "out").glob("45_leaderboard/*/run.json")).read_text())
    assert run["checkpoint"]["repetitions"] == len(every) and run["checkpoint"]["cut_off_repetitions"] == []


@pytest.mark.notebook
@pytest.mark.slow
def test_a_repetition_task_whose_worker_dies_reruns_alone(tmp_path, processes):  # noqa: F811
    """The worker process computing a repetition is SIGKILLed (its nanny starts a new one): Dask runs that task again,
    the repetitions kept before are not computed again (each kept file has one version), the batch exits 0 and says
    which repetition was cut off (RERUN, run.json), and the records are those of a serial run to the bit."""
    from test_batch_cluster import DASK, _cluster

    from dpkit.batch.repetitions import _held

    params = {"REPS": 4, "N_QUERIES": 3000}  # 4: the board judges on 2 odd repetitions; each takes seconds
    address, workers = _cluster(processes, tmp_path, 2)
    m = _leaderboard_manifest(tmp_path, datasets=("WDBC",), **params)
    out = tmp_path / "out"
    watch = _Watch(out)
    run = processes(DASK[:1] + ["-m", "dpkit.batch", "run", str(m), "--scheduler", address, "--output", str(out)], "batch")
    killed, t0 = None, time.monotonic()
    try:
        while killed is None:
            assert run.poll() is None and time.monotonic() - t0 < 120, (tmp_path / "logs" / "batch.log").read_text()
            pool = _worker_processes(workers)
            for lock in out.glob("45_leaderboard/.*.checkpoint/*/.rep-*.lock"):
                key = (lock.parent.name, int(lock.name[5:10]))
                kept = {k for k in watch.kept}
                pid = watch.locks.get(key, (None, ""))[0]
                just = time.monotonic() - watch.seen_at.get(key, -1e9) < 1.0  # started just now: far from its end
                if kept and key not in kept and pid in pool and just and _held(lock):
                    os.kill(pid, signal.SIGKILL)
                    killed, before = key, dict(watch.versions)
                    break
            time.sleep(0.05)
        assert run.wait(timeout=150) == 0, (tmp_path / "logs" / "batch.log").read_text()
    finally:
        watch.stop()
    report = (tmp_path / "logs" / "batch.log").read_text()
    assert "1 ok" in report and "RERUN 45_leaderboard.ipynb" in report and "cut off" in report, report
    assert f"{killed[0]} {killed[1]} (on tcp://127.0.0.1:" in report, (killed, report)
    assert before and all(len(v) == 1 for v in watch.versions.values()), watch.versions  # nothing kept was redone
    assert {k: v for k, v in watch.versions.items() if k in before} == before
    info = json.loads(next(out.glob("45_leaderboard/*/run.json")).read_text())["checkpoint"]
    assert [(c["dataset"], c["rep"], c["kept"]) for c in info["cut_off_repetitions"]] == [(*killed, True)], info
    assert _bits(watch.records("WDBC")) == _bits(_serial("WDBC", {**LEADERBOARD, **params}))


def test_the_scaling_benchmarks_projection():
    """The projection (dpkit.batch.projection, which benchmarks/dask_scaling.py prints): longest-first list schedule,
    lower bound and Graham's bound."""
    from dpkit.batch.projection import list_schedule, project

    assert list_schedule([3, 3, 2, 2, 2], 2) == 7  # longest-first is not optimal here (6: 3+3 | 2+2+2)
    assert list_schedule([5, 1, 1], 8) == 5 and list_schedule([], 4) == 0
    [p2, p64] = project([3, 3, 2, 2, 2], [2, 64])
    assert p2 == {"workers": 2, "lower_bound_s": 6.0, "list_schedule_s": 7.0, "graham_bound_s": 6.0 + 3 * 0.5}
    assert p64["lower_bound_s"] == p64["list_schedule_s"] == 3.0  # the longest task is the critical path
    with pytest.raises(ValueError, match="workers must be an integer ≥ 1"):
        list_schedule([1.0], 0)


def test_run_durations_and_the_projection_table():
    """Every kept repetition's recorded time is a task; a run without kept repetitions is one task of its wall
    time; a run that kept repetitions without recording their times gives no projection (never a partial one)."""
    from dpkit.batch.projection import projection_markdown, run_durations

    runs = [{"checkpoint": {"repetitions": 2, "repetition_s": [60.0, 120.0]}, "wall_time_s": 200.0},
            {"checkpoint": None, "wall_time_s": 30.0}]
    assert run_durations(runs) == [60.0, 120.0, 30.0]
    assert run_durations([{"checkpoint": {"repetitions": 2, "compute_s": 180.0}}]) is None  # older run.json
    assert run_durations([{"checkpoint": {"repetitions": 2, "repetition_s": [60.0, None]}}]) is None
    text = projection_markdown(run_durations(runs))
    assert "from 3 measured tasks" in text and "| 2 | 2 min | 2 min | 3 min |" in text, text
    assert projection_markdown(None).startswith("No projection")


def test_the_scaling_benchmark_runs_the_tables_manifests_groups():
    """benchmarks/dask_scaling.py's jobs are the tables manifest's runs (expanded by the batch), restricted to the
    data sets and σ's asked for; a data set the manifest does not run gets every σ in one job."""
    import benchmarks.dask_scaling as bench

    assert bench.manifest_groups(["WDBC", "CSN"], [2, 4, 6, 8, 10]) == [
        ("CSN", (4.0, 6.0)), ("CSN", (8.0, 10.0)), ("CSN", (2.0,)), ("WDBC", (2.0, 4.0, 6.0, 8.0, 10.0))]
    assert bench.manifest_groups(["CSN"], [2, 6]) == [("CSN", (6.0,)), ("CSN", (2.0,))]
    assert bench.manifest_groups(["NEW"], [4]) == [("NEW", (4.0,))]
    assert bench.job_label("CSN", (4.0, 6.0)) == "CSN σ 4,6"


def test_one_helper_sets_and_restores_environment_variables_for_the_runner_and_the_benchmark(monkeypatch):
    """dpkit.core.threads.environ_restored: set for the block (None: unset), put back on exit, also after an
    exception; the scaling benchmark uses it instead of a copy of its own."""
    import benchmarks.dask_scaling as bench
    from dpkit.core.threads import environ_restored

    monkeypatch.setenv("DPKIT_T_SET", "before")
    monkeypatch.setenv("DPKIT_T_GONE", "there")
    monkeypatch.delenv("DPKIT_T_NEW", raising=False)
    monkeypatch.delenv("DPKIT_T_NAMED", raising=False)
    with pytest.raises(RuntimeError, match="inside"):
        with environ_restored(["DPKIT_T_NAMED"], DPKIT_T_SET="during", DPKIT_T_NEW="new", DPKIT_T_GONE=None):
            assert (os.environ["DPKIT_T_SET"], os.environ["DPKIT_T_NEW"]) == ("during", "new")
            assert "DPKIT_T_GONE" not in os.environ
            os.environ["DPKIT_T_NAMED"] = "set inside"
            raise RuntimeError("inside")
    assert (os.environ["DPKIT_T_SET"], os.environ["DPKIT_T_GONE"]) == ("before", "there")
    assert "DPKIT_T_NEW" not in os.environ and "DPKIT_T_NAMED" not in os.environ
    assert not hasattr(bench, "_environ") and "environ_restored(DPKIT_CACHE_DIR=" in Path(bench.__file__).read_text()


def test_each_embedding_is_fitted_once_per_sigma_before_the_repetitions_start(tmp_path, monkeypatch):
    """Data large enough for the exact answers' low-rank path: with a disk cache shared by the workers, the run fits
    each σ's embedding once (a prepare task per σ) and every repetition task finds it cached, instead of every worker
    that starts a repetition fitting its own copy; the records are a serial run's to the bit."""
    from distributed import Client, LocalCluster

    from dpkit.core.threads import environ_restored, thread_environ
    from dpkit.queries import exact, lowrank
    from dpkit.queries.truth_cache import clear_truth_cache

    monkeypatch.setenv("DPKIT_CACHE_DIR", str(tmp_path / "cache"))
    fits: list[float] = []
    real = lowrank.KernelEmbedding.fit.__func__

    def counting_fit(cls, X, sigma, **kw):
        fits.append(float(sigma))
        return real(cls, X, sigma, **kw)

    monkeypatch.setattr(lowrank.KernelEmbedding, "fit", classmethod(counting_fit))
    big = np.random.default_rng(5).uniform(-1.0, 1.0, size=(4000, 2))
    kw = dict(sigmas=SIGMAS, reps=4, seed=3, dataset="big", n_queries=1400)
    assert exact.lowrank_worth(4000, 1400 * 10, lowrank.FitOptions())  # the sizes take the low-rank path
    methods = {"marginals-histogram": get("marginals-histogram"), "floor": SamplingFloor(size=15)}
    exact.clear_cache()
    clear_truth_cache()
    # in-process workers: their tasks set the thread variables (their share) in this process; put them back after
    with environ_restored(list(thread_environ(1))), \
            LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None) as c, \
            Client(c, set_as_default=False):
        dask = ex.run_cells(big, methods=methods, workers=DaskRepetitions(c.scheduler_address), **kw)
    assert sorted(fits) == sorted(SIGMAS), fits  # once per σ, by the prepare tasks
    exact.clear_cache()
    clear_truth_cache()
    monkeypatch.setenv("DPKIT_CACHE_DIR", str(tmp_path / "cache-serial"))
    serial = ex.run_cells(big, methods=methods, workers=1, **kw)
    assert _bits(dask) == _bits(serial)


def test_the_scaling_benchmark_holds_a_whole_process_to_one_core():
    """benchmarks/dask_scaling.pin_process holds every thread of a process to the first CPUs of its mask (the
    baseline worker on one core, whose thread share is then 1); a thread started earlier is held too. Run in a
    child process, so the test's own process keeps its mask."""
    import subprocess
    import sys

    code = """
import os, threading
from benchmarks.dask_scaling import pin_process
from dpkit.batch.cluster import slot_key
from dpkit.core.threads import thread_share
stop = threading.Event()
t = threading.Thread(target=stop.wait); t.start()
first = min(os.sched_getaffinity(0))
assert pin_process(1) == [first]
masks = {tid: sorted(os.sched_getaffinity(int(tid))) for tid in os.listdir('/proc/self/task')}
stop.set(); t.join()
assert len(masks) >= 2 and all(m == [first] for m in masks.values()), masks
assert slot_key().endswith(f':{first}') and thread_share(len(os.sched_getaffinity(0)), 1) == 1
for bad in (0, len(os.sched_getaffinity(0)) + 1):
    try:
        pin_process(bad)
    except ValueError as exc:
        assert 'cores must be between 1 and' in str(exc)
    else:
        raise AssertionError(bad)
print('ok')
"""
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr
