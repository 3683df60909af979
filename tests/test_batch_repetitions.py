"""run_cells's repetitions as Dask tasks (dpkit.batch.repetitions): the records of a serial run to the bit, each
repetition kept by its own task, a killed task run again alone."""
from __future__ import annotations

import math
import os
from dataclasses import asdict
from pathlib import Path

import numpy as np
import pytest

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
    """Each record without its measured times (``time_s``, ``timings``, the supremum search's ``seconds``), floats
    as their exact hex form: equal means equal to the bit."""
    out = []
    for r in records:
        d = asdict(r)
        d.pop("time_s")
        d.pop("timings")
        if isinstance(d["supremum"], dict):
            d["supremum"].pop("seconds", None)
        out.append(_canon(d))
    return out


def _local_cluster(n: int = 2):
    from distributed import LocalCluster

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
