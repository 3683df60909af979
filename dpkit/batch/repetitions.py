"""The repetitions of :func:`~dpkit.experiments.protocol.run_cells` as Dask tasks, one task per repetition.

A notebook the batch runner executes on Dask computes its repetitions on the same cluster
(``workers=repetition_workers(REP_BACKEND, REP_WORKERS)``; the scheduler is named by :data:`SCHEDULER_ENV`).
:class:`DaskRepetitions`:

1. loads the repetitions its checkpoint folder already keeps;
2. sends the run's job (:class:`~dpkit.experiments.parallel.CellsJob`) once to every worker;
3. submits one task per remaining repetition (:func:`repetition_task`), run with the worker's thread share and kept
   in the checkpoint folder the moment it is done;
4. reports the repetitions to ``run_cells`` in repetition order.

Guarantees: the records are a serial run's to the bit, whatever the worker, the order or the number of attempts. A
repetition in progress holds a lock, so a second attempt loads the kept result; an attempt cut off by a dying worker
leaves a note (:func:`cut_off_attempts`, :func:`running_repetitions`). docs/guide/batch.md describes it in use.
"""
from __future__ import annotations

import contextlib
import json
import os
import socket
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dpkit.batch.cluster import worker_share
from dpkit.batch.locks import RunLock
from dpkit.core.paths import repetition_file, write_atomic
from dpkit.core.pysource import literal_eval
from dpkit.core.settings import setting
from dpkit.core.threads import limit_threads, thread_environ
from dpkit.core.validation import check_positive_int
from dpkit.experiments.parallel import InOrder

if TYPE_CHECKING:
    from distributed import Client

    from dpkit.experiments.checkpoint import RepetitionCheckpoint
    from dpkit.experiments.parallel import CellsJob
    from dpkit.experiments.records import ReleaseRecord

__all__ = ["SCHEDULER_ENV", "REP_BACKENDS", "DaskRepetitions", "repetition_workers", "repetition_task",
           "cut_off_attempts", "running_repetitions", "uses_repetition_tasks"]

#: The environment variable naming the Dask scheduler a run executes on (set by the batch runner for its kernels).
SCHEDULER_ENV = "DPKIT_SCHEDULER"
#: The values of a notebook's ``REP_BACKEND`` parameter (:func:`repetition_workers`).
REP_BACKENDS = ("auto", "dask", "processes")

_ATTEMPT = ".attempt-"


def repetition_workers(backend: str, workers: int = 1) -> int | DaskRepetitions:
    """``run_cells``'s ``workers`` for a notebook's ``REP_BACKEND`` and ``REP_WORKERS`` parameters.

    ``"auto"``: one Dask task per repetition when the batch runner executes the notebook on Dask
    (:data:`SCHEDULER_ENV` is set), else ``workers`` processes; ``"dask"``: Dask tasks on the scheduler of
    :data:`SCHEDULER_ENV`, or on the cluster of the current ``distributed.Client`` when it is unset;
    ``"processes"``: ``workers`` processes (:func:`~dpkit.experiments.parallel.parallel_repetitions`).
    """
    if backend not in REP_BACKENDS:
        raise ValueError(f"REP_BACKEND must be one of {', '.join(map(repr, REP_BACKENDS))}; got {backend!r}")
    workers = check_positive_int(workers, name="REP_WORKERS")
    address = setting(SCHEDULER_ENV) or None
    if backend == "dask" or (backend == "auto" and address):
        return DaskRepetitions(address)
    return workers


def uses_repetition_tasks(notebook: str | os.PathLike, parameters: Mapping[str, Any]) -> bool:
    """Whether a run of ``notebook`` with ``parameters``, executed on Dask, computes its repetitions as Dask tasks:
    the notebook declares ``REP_BACKEND`` and its value (given, else the notebook's default) is ``auto`` or ``dask``."""
    from dpkit.batch.manifest import declared_parameters

    if "REP_BACKEND" not in declared_parameters(notebook):
        return False
    value = parameters.get("REP_BACKEND")
    if value is None:
        import papermill as pm

        value = literal_eval(str(pm.inspect_notebook(str(notebook))["REP_BACKEND"]["default"]))
    return value in ("auto", "dask")


# --------------------------------------------------------------------------- files in a checkpoint folder
def _lock_path(folder: Path, index: int) -> Path:
    return folder / f".{repetition_file(folder, index).stem}.lock"


def _note_glob(index: int | None = None) -> str:
    return f".rep-{'*' if index is None else f'{int(index):05d}'}{_ATTEMPT}*.json"


def _note_index(path: Path) -> int:
    return int(path.name[len(".rep-"):].split(".", 1)[0])


def _held(lock: Path) -> bool:
    """Whether a live process holds ``lock`` now (tested without waiting)."""
    if not lock.is_file():
        return False
    probe = RunLock(lock)
    if probe.acquire(wait=False):
        probe.release()
        return False
    return True


def cut_off_attempts(folder: str | os.PathLike) -> list[dict[str, Any]]:
    """The attempts at a repetition below ``folder`` (all its data sets) that were cut off: their note is still
    there and no process holds the repetition's lock. Each: ``dataset`` (the sub-folder), ``rep``, ``worker``,
    ``host``, ``pid``, ``started`` (epoch seconds) and ``kept`` (whether the repetition is kept since)."""
    base = Path(folder)
    if not base.is_dir():
        return []
    out = []
    for note in sorted(base.rglob(_note_glob())):
        i = _note_index(note)
        if _held(_lock_path(note.parent, i)):
            continue  # still in progress
        try:
            info = json.loads(note.read_text())
        except (OSError, ValueError):
            info = {}
        out.append({"dataset": note.parent.name if note.parent != base else ".", "rep": i,
                    "worker": info.get("worker"), "host": info.get("host"), "pid": info.get("pid"),
                    "started": info.get("started"), "kept": repetition_file(note.parent, i).is_file()})
    return out


def running_repetitions(folder: str | os.PathLike) -> dict[str, int]:
    """Repetitions being computed now below ``folder``, per sub-folder (a data set): their lock is held."""
    base = Path(folder)
    out: dict[str, int] = {}
    if not base.is_dir():
        return out
    for lock in sorted(base.rglob(".rep-*.lock")):
        if _held(lock):
            name = lock.parent.name if lock.parent != base else "."
            out[name] = out.get(name, 0) + 1
    return out


def describe_cut_off(attempts: list[dict[str, Any]]) -> str:
    """One sentence naming the cut-off attempts (``""`` for none)."""
    if not attempts:
        return ""
    named = ", ".join(f"{a['dataset']} {a['rep']} (on {a['worker'] or a['host'] or 'an unknown worker'})"
                      for a in attempts[:8]) + (" …" if len(attempts) > 8 else "")
    return (f"{len(attempts)} repetition task(s) were cut off (their worker died) and ran again on another worker: "
            f"{named}")


# --------------------------------------------------------------------------- one task
@contextlib.contextmanager
def _thread_limits(threads: int) -> Iterator[None]:
    """Hold this task to ``threads`` threads: the evaluator (``DPKIT_THREADS``, read per call), BLAS (threadpoolctl:
    the libraries are loaded already, their environment variables no longer count) and JAX (``XLA_FLAGS``, read
    when JAX starts in this process). A worker's share is the same for all its tasks, so the environment it sets
    is the same for each."""
    os.environ.update(thread_environ(threads))
    with limit_threads(int(threads), user_api=None):
        yield


def prepare_task(job: CellsJob, sigma: float, *, shares: Mapping[str, int]) -> bool:
    """On a Dask worker: fit (or load) the exact answers' embedding of ``job``'s data at ``sigma`` into the disk cache
    (:func:`dpkit.queries.exact.prepare_embedding`), once per run and σ, before its repetitions start."""
    from distributed import get_worker

    from dpkit.queries.exact import prepare_embedding

    threads = worker_share(dict(shares), get_worker())
    with _thread_limits(threads):
        return prepare_embedding(job.X, sigma, n_queries=job.n_queries, J=job.J, n_threads=threads)


def repetition_task(i: int, job: CellsJob, *, folder: str | None, identity: Mapping[str, Any] | None,
                    shares: Mapping[str, int]) -> tuple[list[ReleaseRecord], float | None]:
    """On a Dask worker: repetition ``i`` of ``job``, kept in the checkpoint ``folder`` (if any) before it returns.

    Returns the records and the wall time of their computation (``None``: loaded, an earlier attempt kept it).
    """
    from distributed import get_worker

    from dpkit.core.paths import library_fingerprint
    from dpkit.experiments.checkpoint import RepetitionCheckpoint

    worker = get_worker()
    threads = worker_share(dict(shares), worker)
    if identity is not None and identity.get("dpkit_sha256") != library_fingerprint():
        raise RuntimeError(f"Dask worker {worker.address} runs other dpkit sources ({library_fingerprint()}) than the "
                           f"notebook that submitted repetition {i} ({identity.get('dpkit_sha256')}); every worker "
                           "must import the same dpkit")
    with _thread_limits(threads):
        if folder is None or identity is None:
            return job.run(i)
        keep = RepetitionCheckpoint(folder, identity)
        lock = RunLock(_lock_path(keep.folder, i))
        lock.acquire(wait=True)  # another attempt at this repetition (Dask ran it twice): wait, then load it
        try:
            kept = keep.load(i)
            if kept is not None:
                return kept, None
            note = keep.folder / f".rep-{int(i):05d}{_ATTEMPT}{uuid.uuid4().hex[:8]}.json"
            write_atomic(note, json.dumps({"worker": worker.address, "host": socket.gethostname(), "pid": os.getpid(),
                                           "started": time.time(), "threads": threads}))
            try:
                records, seconds = job.run(i)
                keep.save(i, records, seconds=seconds)
            finally:  # ended here (done or raised): not cut off
                note.unlink(missing_ok=True)
            return records, seconds
        finally:
            lock.release()


#: Dask priority of the prepare tasks (:func:`_prepare`); repetitions have Dask's default, 0
PREPARE_PRIORITY = 1


def _prepare(client: Client, job: CellsJob, shipped: Any, *, shares: Mapping[str, int], label: str,
             tag: str) -> list[Any]:
    """One :func:`prepare_task` per σ whose exact answers use a fitted embedding, when the workers share a disk cache
    (:func:`dpkit.queries.disk_cache.cache_dir`): the run's repetitions are submitted once they are done, so each
    embedding is fitted once (the σ's in parallel) instead of once per worker that happens to start a repetition
    first. They run before the repetitions of other runs that wait in the scheduler's queue
    (:data:`PREPARE_PRIORITY`).

    Why the repetitions are submitted after the fits instead of depending on them in Dask: a task whose task group
    depends on five or more tasks (the fits and the shipped jobs; ``distributed.scheduler.rootish-taskgroup-dependencies``)
    is not *root-ish* to Dask's scheduler, so it is assigned to a worker the moment its dependencies are done, and
    a worker holding such a backlog takes no task from the scheduler's queue, whatever its priority. In the scaling
    benchmark another run's fit (CSN, σ = 2) then waited behind 60 repetitions of two other runs and started at
    49 s; submitted after the fits, the repetitions are queued like any other run's and all five fits ran first."""
    from dpkit.queries import disk_cache
    from dpkit.queries.exact import DEFAULT_TOL, lowrank_worth
    from dpkit.queries.lowrank import FitOptions

    if disk_cache.cache_dir() is None:
        return []
    n_centres = int(job.n_queries) * int(job.J)
    sigmas = [s for s in job.sigmas if lowrank_worth(job.X.shape[0], n_centres, FitOptions(tol=DEFAULT_TOL))]
    # before any queued repetition (Dask's default priority is 0): a fit gates all of its run's repetitions, while
    # another run's repetitions can fill the workers around it
    return [client.submit(prepare_task, shipped, s, shares=shares, pure=False, key=f"fit-{label}-{s:g}-{tag}",
                          priority=PREPARE_PRIORITY) for s in sigmas]


# --------------------------------------------------------------------------- the notebook's side
@dataclass(frozen=True)
class DaskRepetitions:
    """``run_cells(..., workers=DaskRepetitions(address))``: one Dask task per repetition (module docstring).

    Parameters
    ----------
    address : str, optional
        The scheduler's address; ``None``: the cluster of the current client (``distributed.get_client()``).
    """

    address: str | None = None

    @contextlib.contextmanager
    def _client(self) -> Iterator[Client]:
        from distributed import Client, get_client

        if self.address:
            from dpkit.batch.scheduler import CONNECT_TIMEOUT, probe_scheduler

            # one line naming the variable and the address within CONNECT_TIMEOUT, not a hang on a wrong address
            probe_scheduler(self.address, what=SCHEDULER_ENV)
            with Client(self.address, set_as_default=False, timeout=max(CONNECT_TIMEOUT, 60)) as client:
                yield client
            return
        try:
            client = get_client()
        except ValueError as exc:
            raise RuntimeError(f"repetitions as Dask tasks need a Dask cluster: set {SCHEDULER_ENV} to a scheduler "
                               "address or create a distributed.Client first") from exc
        yield client

    def __call__(self, job: CellsJob, reps: int, *, keep: RepetitionCheckpoint | None, label: str,
                 finished: Callable[[int, list[ReleaseRecord]], None], arrived: Callable[[int], None]) -> None:
        """Compute ``job``'s repetitions ``0 … reps-1`` (loading the kept ones), calling ``arrived(i)`` as each one
        arrives and ``finished(i, records)`` in repetition order. On the first failure the tasks not yet started
        are cancelled (those running finish and are kept) and the exception propagates."""
        from distributed import as_completed

        from dpkit.batch.cluster import cluster_shares

        order = InOrder(reps, keep=keep, finished=finished, arrived=arrived)
        todo, ready, report = order.todo, order.ready, order.report
        report()
        if not todo:
            return
        with self._client() as client:
            shares = cluster_shares(client)
            [shipped] = client.scatter([job], broadcast=True, hash=False)
            tag = uuid.uuid4().hex[:6]
            prepared = _prepare(client, job, shipped, shares=shares, label=label, tag=tag)
            futures: list[Any] = []
            try:
                for fit in prepared:  # the repetitions read the fitted embeddings from the disk cache (_prepare)
                    fit.result()  # a fit's exception is raised here, before any repetition is submitted
                futures = client.map(repetition_task, todo, job=shipped, pure=False,
                                     folder=None if keep is None else str(keep.folder),
                                     identity=None if keep is None else keep.identity, shares=shares,
                                     key=[f"rep-{label}-{i:05d}-{tag}" for i in todo])
                index = {f.key: i for f, i in zip(futures, todo)}
                for fut in as_completed(futures, loop=client.loop):  # (not the default client: there may be none)
                    records, _ = fut.result()  # a task's exception is raised here
                    i = index[fut.key]
                    fut.release()
                    ready[i] = records
                    arrived(i)
                    report()
            finally:
                client.cancel([f for f in futures if not f.done()])
                client.cancel([shipped, *prepared])
        report()
