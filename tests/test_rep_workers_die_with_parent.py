"""run_cells(workers=k): the repetition worker processes end with the process that started them.

A real run with ``workers=2`` whose repetitions sleep (so both are in progress) is killed with SIGKILL: the
process calling ``run_cells`` (a script, or a notebook's kernel under ``python -m dpkit.batch notebook``) or
the whole batch command (``notebook``, or ``run`` with its Dask worker processes). Each repetition writes its
process id into a folder when it starts; after the kill none of those processes (nor the kernel, nor any other
process the test started, found by an environment variable they inherit) may be left, beyond a short grace
period. Old code: the workers were left computing, reparented to PID 1.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest
from batch_notebooks import PARAMETERS, make_manifest, make_notebook

ROOT = Path(__file__).resolve().parents[1]
GRACE_S = 10.0  # the kernel notices a dead batch within a second (ipykernel's parent poller); the workers at once

SLOW = '''import os
import time
from pathlib import Path

from dpkit.methods.references import SamplingFloor


class SlowFloor(SamplingFloor):
    """A subsample that first records this process's id, then sleeps: a repetition that is in progress."""

    def release(self, X, *, rng=None, ledger=None, workload=None):
        Path(os.environ["ORPHANS_PIDS"], f"worker-{os.getpid()}").touch()
        time.sleep(300)
        return super().release(X, rng=rng, ledger=ledger, workload=workload)
'''

RUN = '''from dpkit import experiments as ex
from dpkit.data import load
from slow_reps import SlowFloor

X = load("mock", n=40, d=2, rng=1).X
ex.run_cells(X, methods={"slow": SlowFloor(size=5)}, sigmas=[2.0], reps=4, seed=0, dataset="mock", n_queries=10,
             workers=2)
'''

SCRIPT = "if __name__ == '__main__':  # the spawned workers import this file too\n" + "".join(
    f"    {line}\n" if line else "\n" for line in RUN.splitlines())

NOTEBOOK = '''import os
from pathlib import Path

Path(os.environ["ORPHANS_PIDS"], f"kernel-{os.getpid()}").touch()
''' + RUN


def _start(tmp_path: Path, args: list[str]) -> tuple[subprocess.Popen, Path, str]:
    (tmp_path / "slow_reps.py").write_text(SLOW)
    pids = tmp_path / "pids"
    pids.mkdir()
    marker = f"{os.getpid()}-{time.monotonic_ns()}"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(tmp_path)]), "ORPHANS_PIDS": str(pids),
           "ORPHANS_MARKER": marker}
    with open(tmp_path / "log.txt", "w") as log:  # a file, not a pipe: a pipe stays open while any worker lives
        proc = subprocess.Popen([sys.executable, *args], cwd=tmp_path, env=env, stdout=log, stderr=subprocess.STDOUT)
    return proc, pids, marker


def _recorded(pids: Path, kind: str) -> list[int]:
    return sorted(int(p.name.split("-")[1]) for p in pids.glob(f"{kind}-*"))


def _wait_for_workers(proc: subprocess.Popen, pids: Path, n: int = 2, timeout: float = 300.0) -> list[int]:
    t0 = time.monotonic()
    while len(_recorded(pids, "worker")) < n:
        if proc.poll() is not None:
            log = (pids.parent / "log.txt").read_text()
            pytest.fail(f"the run ended before {n} repetitions were in progress:\n{log}")
        if time.monotonic() - t0 > timeout:
            pytest.fail(f"fewer than {n} repetitions in progress after {timeout:.0f} s")
        time.sleep(0.2)
    return _recorded(pids, "worker")


def _alive(pid: int, marker: str) -> bool:
    """Whether ``pid`` is still a running process of this test (a zombie holds no memory: it is gone)."""
    try:
        p = psutil.Process(pid)
        return p.status() != psutil.STATUS_ZOMBIE and p.environ().get("ORPHANS_MARKER") == marker
    except (psutil.NoSuchProcess, psutil.ZombieProcess):
        return False


def _marked(marker: str) -> list[str]:
    """Every running process started by this test (they inherit ``ORPHANS_MARKER``), as ``pid command``."""
    found = []
    for p in psutil.process_iter(["pid", "cmdline"]):
        try:
            if p.environ().get("ORPHANS_MARKER") == marker and p.status() != psutil.STATUS_ZOMBIE:
                found.append(f"{p.pid} {' '.join(p.info['cmdline'] or [])[:120]}")
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            pass
    return found


def _left_after_grace(pids: list[int], marker: str) -> list[str]:
    """The recorded processes still running after :data:`GRACE_S`, and any other process of this test."""
    t0 = time.monotonic()
    while True:
        left = [str(p) for p in pids if _alive(p, marker)] + _marked(marker)
        if not left or time.monotonic() - t0 > GRACE_S:
            return left
        time.sleep(0.2)


def _clean_up(proc: subprocess.Popen, pids: Path, marker: str) -> None:
    """Kill whatever this test started and is still running (so a failing test leaves no orphans)."""
    for pid in _recorded(pids, "worker") + _recorded(pids, "kernel") + [int(p.split()[0]) for p in _marked(marker)]:
        if _alive(pid, marker):
            os.kill(pid, signal.SIGKILL)
    if proc.poll() is None:
        proc.kill()
    proc.wait()


def test_workers_end_when_the_process_running_run_cells_is_killed(tmp_path):
    (tmp_path / "run.py").write_text(SCRIPT)
    proc, pids, marker = _start(tmp_path, ["run.py"])
    try:
        workers = _wait_for_workers(proc, pids)
        assert psutil.Process(workers[0]).ppid() == proc.pid  # the workers are the script's children
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        left = _left_after_grace(workers, marker)
        assert not left, f"repetition workers {left} outlived their parent by {GRACE_S:g} s"
    finally:
        _clean_up(proc, pids, marker)


@pytest.mark.parametrize("victim", ["kernel", "batch", "batch run"])
def test_workers_end_when_a_batch_or_its_kernel_is_killed(tmp_path, victim):
    """A batch runs a notebook that calls run_cells(workers=2); SIGKILL its kernel (the workers' parent) or the batch
    command (``notebook``: the kernel's parent; ``run``: the Dask cluster's): neither the kernel nor a worker is left."""
    make_notebook(tmp_path, parameters=PARAMETERS, body=NOTEBOOK)
    if victim == "batch run":
        make_manifest(tmp_path)
        cmd = ["-m", "dpkit.batch", "run", "m.yaml", "--workers", "1"]
    else:
        cmd = ["-m", "dpkit.batch", "notebook", "tiny.ipynb", "--output", "out"]
    proc, pids, marker = _start(tmp_path, cmd)
    try:
        workers = _wait_for_workers(proc, pids)
        (kernel,) = _recorded(pids, "kernel")
        assert {psutil.Process(w).ppid() for w in workers} == {kernel}
        os.kill(kernel if victim == "kernel" else proc.pid, signal.SIGKILL)
        if victim == "kernel":  # the batch sees a dead kernel and fails (exit 1), naming it
            assert proc.wait(timeout=60) == 1
            out = (tmp_path / "log.txt").read_text()
            assert "kernel died" in out, out
        left = _left_after_grace([kernel, *workers], marker)
        assert not left, f"processes {left} (kernel {kernel}, workers {workers}) outlived the killed {victim}"
    finally:
        _clean_up(proc, pids, marker)
