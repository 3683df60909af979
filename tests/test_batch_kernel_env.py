"""A run's policy reaches its own notebook and no other: the adoption switch travels as the run's parameters.

Two batches with different ``--stale`` policies may share one Dask cluster, and so one worker process: each run's
notebook gets its policy as parameters (``CHECKPOINT_ADOPT``, ``CHECKPOINT_VERIFY_REPS``, beside its
``CHECKPOINT_DIR``; :func:`dpkit.batch.execute.execute_notebook`), never through an environment variable, and the
worker's environment is left as it was.
"""
from __future__ import annotations

import json
import os
import threading
from pathlib import Path

import pytest
from batch_notebooks import PARAMETERS, make_notebook

from dpkit.batch.manifest import NotebookParameterError, RunSpec
from dpkit.batch.runner import run_one

pytestmark = pytest.mark.notebook

POLICY_PARAMETERS = """SEED: int = 0
QUICK: bool = False
INTERACTIVE: bool = True
OUTPUT_DIR: str = "out"
CHECKPOINT_DIR: str = ""
CHECKPOINT_ADOPT: bool = False
CHECKPOINT_VERIFY_REPS: int = 2"""

BODY = """import os

from dpkit.outputs.report import Report

rep = Report(OUTPUT_DIR, params={"SEED": SEED})
rep.row(seed=SEED, adopt=CHECKPOINT_ADOPT, reps=CHECKPOINT_VERIFY_REPS,
        env=sorted(k for k in os.environ if k.startswith("DPKIT_CHECKPOINT")))
rep.write()"""


def _seen(summary, what: str = "adopt"):
    """What the run's notebook was given (``adopt``: the switch, ``reps``: the verified count, ``env``: the
    ``DPKIT_CHECKPOINT*`` variables in its kernel's environment)."""
    assert summary["status"] == "ok", summary
    [row] = json.loads((Path(summary["folder"]) / "metrics.json").read_text())["table"]
    return row[what]


@pytest.fixture
def spec(tmp_path):
    nb = make_notebook(tmp_path, "env.ipynb", parameters=POLICY_PARAMETERS, body=BODY)
    return lambda seed: RunSpec(nb, {"SEED": seed})


def test_each_run_gets_its_own_policy_as_parameters(tmp_path, spec, monkeypatch):
    # variables of the retired names in this worker process's environment are no policy
    monkeypatch.setenv("DPKIT_CHECKPOINT_ADOPT", "verify")
    monkeypatch.setenv("DPKIT_CHECKPOINT_VERIFY_REPS", "5")
    r = run_one(spec(1), tmp_path / "out", threads=None, adopt=False)
    assert (_seen(r), _seen(r, "reps")) == (False, 2)
    monkeypatch.delenv("DPKIT_CHECKPOINT_ADOPT")
    monkeypatch.delenv("DPKIT_CHECKPOINT_VERIFY_REPS")
    r = run_one(spec(2), tmp_path / "out", threads=None, adopt=True, verify_reps=3)
    assert (_seen(r), _seen(r, "reps"), _seen(r, "env")) == (True, 3, [])
    assert not [k for k in os.environ if k.startswith("DPKIT_CHECKPOINT")]
    # the policy is not what the run computes: it is not among the run's recorded parameters (nor in its key)
    recorded = json.loads((Path(r["folder"]) / "run.json").read_text())["parameters"]
    assert "CHECKPOINT_ADOPT" not in recorded and "CHECKPOINT_VERIFY_REPS" not in recorded


def test_runs_of_two_policies_at_once_in_one_process(tmp_path, spec):
    seen: dict[bool, bool] = {}
    start = threading.Barrier(2)

    def task(adopt: bool, seed: int) -> None:
        start.wait()
        seen[adopt] = _seen(run_one(spec(seed), tmp_path / "out", threads=None, adopt=adopt))

    threads = [threading.Thread(target=task, args=(adopt, seed)) for adopt, seed in ((True, 3), (False, 4))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    assert seen == {True: True, False: False}


def test_a_checkpointing_notebook_that_cannot_take_the_policy_is_refused_by_name(tmp_path):
    from dpkit.batch.execute import execute_notebook

    nb = make_notebook(tmp_path, "old.ipynb", parameters=POLICY_PARAMETERS.rsplit("\nCHECKPOINT_ADOPT", 1)[0],
                       body="pass")
    with pytest.raises(NotebookParameterError, match="old.ipynb declares CHECKPOINT_DIR but not CHECKPOINT_ADOPT and "
                                                     "CHECKPOINT_VERIFY_REPS"):
        execute_notebook(nb, tmp_path / "out", checkpoint_dir=tmp_path / "keep", adopt=True)
    current = make_notebook(tmp_path, "env.ipynb", parameters=POLICY_PARAMETERS, body=BODY)
    for name in ("CHECKPOINT_ADOPT", "CHECKPOINT_VERIFY_REPS"):  # set by the runner only
        with pytest.raises(NotebookParameterError, match=f"{name} is set by the runner"):
            execute_notebook(current, tmp_path / "out2", parameters={name: True})


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
