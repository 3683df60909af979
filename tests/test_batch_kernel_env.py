"""A run's policy reaches its own kernel and no other: the adoption switch travels with the task.

Two batches with different ``--stale`` policies may share one Dask cluster, and so one worker process: each run's
kernel gets its policy in its own environment (:func:`dpkit.batch.execute.kernel_environ`), and the worker's
environment is left as it was.
"""
from __future__ import annotations

import json
import os
import threading
from pathlib import Path

import pytest
from batch_notebooks import PARAMETERS, make_notebook

from dpkit.batch.manifest import RunSpec
from dpkit.batch.runner import run_one
from dpkit.experiments.adoption import ADOPT_ENV, VERIFY_REPS_ENV

pytestmark = pytest.mark.notebook

BODY = f"""import os

from dpkit.outputs.report import Report

rep = Report(OUTPUT_DIR, params={{"SEED": SEED}})
rep.row(seed=SEED, adopt=os.environ.get({ADOPT_ENV!r}, "unset"), reps=os.environ.get({VERIFY_REPS_ENV!r}, "unset"))
rep.write()"""


def _seen(summary, what: str = "adopt") -> str:
    """What the run's kernel found in its environment (``adopt``: the switch, ``reps``: the verified count)."""
    assert summary["status"] == "ok", summary
    [row] = json.loads((Path(summary["folder"]) / "metrics.json").read_text())["table"]
    return row[what]


@pytest.fixture
def spec(tmp_path):
    nb = make_notebook(tmp_path, "env.ipynb", parameters=PARAMETERS, body=BODY)
    return lambda seed: RunSpec(nb, {"SEED": seed})


def test_each_run_sees_its_own_policy_and_leaves_the_workers_environment_alone(tmp_path, spec, monkeypatch):
    # another batch's verify run left (or is holding) the switch in this worker process's environment
    monkeypatch.setenv(ADOPT_ENV, "verify")
    monkeypatch.setenv(VERIFY_REPS_ENV, "5")
    r = run_one(spec(1), tmp_path / "out", threads=None, adopt=False)
    assert (_seen(r), _seen(r, "reps")) == ("unset", "unset")
    assert (os.environ[ADOPT_ENV], os.environ[VERIFY_REPS_ENV]) == ("verify", "5")
    monkeypatch.delenv(ADOPT_ENV)
    monkeypatch.delenv(VERIFY_REPS_ENV)
    r = run_one(spec(2), tmp_path / "out", threads=None, adopt=True, verify_reps=3)
    assert (_seen(r), _seen(r, "reps")) == ("verify", "3")
    assert ADOPT_ENV not in os.environ and VERIFY_REPS_ENV not in os.environ


def test_runs_of_two_policies_at_once_in_one_process(tmp_path, spec, monkeypatch):
    monkeypatch.delenv(ADOPT_ENV, raising=False)
    seen: dict[bool, str] = {}
    start = threading.Barrier(2)

    def task(adopt: bool, seed: int) -> None:
        start.wait()
        seen[adopt] = _seen(run_one(spec(seed), tmp_path / "out", threads=None, adopt=adopt))

    threads = [threading.Thread(target=task, args=(adopt, seed)) for adopt, seed in ((True, 3), (False, 4))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    assert seen == {True: "verify", False: "unset"}
    assert ADOPT_ENV not in os.environ


THREADS_BODY = """import os

from dpkit.outputs.report import Report

rep = Report(OUTPUT_DIR, params={"SEED": SEED})
rep.row(seed=SEED, threads=os.environ.get("DPKIT_THREADS", "unset"), omp=os.environ.get("OMP_NUM_THREADS", "unset"))
rep.write()"""


def test_a_runs_thread_share_reaches_its_kernel_and_not_the_workers_environment(tmp_path, monkeypatch):
    """The runner's thread share (``threads``) is the kernel's environment only: the process that ran it (a Dask
    worker, which also computes repetition tasks with its own limits) keeps its own values."""
    nb = make_notebook(tmp_path, "threads.ipynb", parameters=PARAMETERS, body=THREADS_BODY)
    monkeypatch.setenv("DPKIT_THREADS", "7")
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    r = run_one(RunSpec(nb, {"SEED": 5}), tmp_path / "out", threads=1)
    assert (_seen(r, "threads"), _seen(r, "omp")) == ("1", "1")
    assert os.environ["DPKIT_THREADS"] == "7" and "OMP_NUM_THREADS" not in os.environ
