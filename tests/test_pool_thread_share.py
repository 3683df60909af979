"""run_cells(workers=w): each worker process starts with its thread share of the cores (no oversubscription), and
the caller's environment is as before afterwards. (That the records equal the serial run's to the bit is
tests/test_checkpoint.py's.)"""
from __future__ import annotations

import json
import os

from dpkit import experiments as ex
from dpkit.core.threads import BLAS_VARIABLES, thread_environ, thread_share
from dpkit.data import load
from dpkit.queries.gemm import usable_cores

RECORDER = '''import json
import os
from pathlib import Path

from dpkit.core.threads import BLAS_VARIABLES
from dpkit.methods.references import SamplingFloor

NAMES = ("DPKIT_THREADS", "XLA_FLAGS", *BLAS_VARIABLES)


class EnvFloor(SamplingFloor):
    """A subsample that first writes down this process's thread environment."""

    def release(self, X, *, rng=None, ledger=None, workload=None):
        Path(os.environ["POOL_ENV_OUT"], f"{os.getpid()}.json").write_text(
            json.dumps({k: os.environ.get(k) for k in NAMES}))
        return super().release(X, rng=rng, ledger=ledger, workload=workload)
'''

KW = dict(sigmas=[2.0], reps=4, seed=0, dataset="mock", n_queries=10)


def test_each_worker_process_gets_its_thread_share(tmp_path, monkeypatch):
    (tmp_path / "pool_env_recorder.py").write_text(RECORDER)
    monkeypatch.syspath_prepend(str(tmp_path))  # the spawned workers get this process's sys.path
    from pool_env_recorder import EnvFloor

    out = tmp_path / "seen"
    out.mkdir()
    monkeypatch.setenv("POOL_ENV_OUT", str(out))
    for var in ("DPKIT_THREADS", "XLA_FLAGS", *BLAS_VARIABLES):
        monkeypatch.delenv(var, raising=False)
    X = load("mock", n=40, d=2, rng=1).X
    ex.run_cells(X, methods={"env": EnvFloor(size=5)}, workers=2, **KW)
    seen = [json.loads(p.read_text()) for p in out.glob("*.json")]
    assert 1 <= len(seen) <= 2  # the worker processes that took a repetition (a quick one may take them all)
    share = thread_share(usable_cores(), 2)
    expected = thread_environ(share, xla_flags="")
    for env in seen:
        assert env == {k: expected[k] for k in env}
    # the caller's environment is as it was
    assert all(os.environ.get(v) is None for v in ("DPKIT_THREADS", "XLA_FLAGS", *BLAS_VARIABLES))
