"""The repetitions of :func:`~dpkit.experiments.protocol.run_cells` in parallel worker processes.

Each worker process holds the run's job (:class:`CellsJob`), computes whole repetitions with the serial loop's streams
and its thread share (:func:`~dpkit.core.threads.thread_share`), and dies with its parent;
:func:`parallel_repetitions` collects the records in order. A :class:`RepetitionExecutor` computes them elsewhere
(:class:`dpkit.batch.repetitions.DaskRepetitions`).
"""
from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import numpy as np

from dpkit.core.threads import environ_restored, thread_environ, thread_share
from dpkit.experiments.checkpoint import RepetitionCheckpoint
from dpkit.experiments.records import ReleaseRecord, method_seed, name_words, record_release, repetition_at, timed_release
from dpkit.queries.gemm import usable_cores
from dpkit.queries.release import Method, Release


@dataclass(frozen=True, kw_only=True, eq=False)
class CellsJob:
    """Everything a repetition of :func:`run_cells` needs (picklable, sent once to each worker process).

    Attributes
    ----------
    X : numpy.ndarray
        The data.
    named : mapping of str to Method
        The methods by name.
    shared : set of str
        The methods whose release does not depend on σ (released once per repetition, from the data set's stream).
    configured : mapping of float to mapping of str to Method
        Each method at each width σ.
    sigmas : sequence of float
        The widths, in order.
    cell_reps, shared_reps : sequences of numpy.random.SeedSequence
        Each σ's repetition seeds, and the data set's (for the σ-independent methods).
    n_queries, J : int
        Workload size and centres per query, as :func:`run_cells` takes them.
    supremum : str or None
        Where the class supremum searches centres (``None``: none).
    """

    X: np.ndarray
    named: Mapping[str, Method]
    shared: set[str]
    configured: Mapping[float, Mapping[str, Method]]
    sigmas: Sequence[float]
    cell_reps: Sequence[Sequence[np.random.SeedSequence]]
    shared_reps: Sequence[np.random.SeedSequence]
    n_queries: int
    J: int
    supremum: str | None = "cube"

    def run(self, i: int) -> tuple[list[ReleaseRecord], float]:
        """Repetition ``i``'s records and the wall time it took."""
        t0 = time.perf_counter()
        records = _cells_repetition(self.X, i, named=self.named, shared=self.shared, configured=self.configured,
                                    sigmas=self.sigmas, cell_seeds=[c[i] for c in self.cell_reps],
                                    shared_seed_i=self.shared_reps[i], n_queries=self.n_queries, J=self.J,
                                    supremum=self.supremum)
        return records, time.perf_counter() - t0


@runtime_checkable
class RepetitionExecutor(Protocol):
    """Computes the repetitions of a :func:`run_cells` job somewhere else (``run_cells``'s ``workers``).

    Called once per ``run_cells`` call; it must load the repetitions ``keep`` holds, compute the others with
    ``job.run(i)`` (the same records wherever and in whatever order), keep each one in ``keep``'s folder as soon
    as it is done, call ``arrived(i)`` as each repetition is there (loaded or computed, in any order) and
    ``finished(i, records)`` for ``i = 0 … reps-1`` in order, and raise the first failure. ``label`` names the
    run (the data set) in task names.
    """

    def __call__(self, job: CellsJob, reps: int, *, keep: RepetitionCheckpoint | None, label: str,
                 finished: Callable[[int, list[ReleaseRecord]], None], arrived: Callable[[int], None]) -> None: ...


_WORKER_JOB: CellsJob | None = None


def _worker_start(job: CellsJob) -> None:
    global _WORKER_JOB
    _die_with_parent()
    _WORKER_JOB = job


def _die_with_parent() -> None:
    """End this worker process as soon as the process that started it ends, however it ends.

    A pool's workers otherwise outlive a parent killed with SIGKILL (a notebook kernel killed for memory, a
    killed batch): they wait on a queue whose ends they hold themselves, keep computing and keep their
    memory. Two guards, armed before the worker takes a repetition:

    * Linux: ``prctl(PR_SET_PDEATHSIG, SIGKILL)``. The operating system kills the worker when its parent
      dies, even while the worker is inside C code that holds the GIL, and nothing the parent leaves
      behind can hold it open. The signal is tied to the parent *thread* that started the worker; that is
      the thread calling :func:`run_cells`, which waits in the pool until every worker has ended. A parent
      that died before the signal was armed is caught by comparing ``os.getppid()`` with its pid.
    * Everywhere: a daemon thread that waits on the parent's sentinel (a pipe the parent holds open while
      it lives; :func:`multiprocessing.parent_process`) and then exits. It needs no polling and has no
      race (a pipe closed before the thread starts is seen at once), but it must get the GIL to act.

    A process group killed by the batch runner is not needed: a kernel whose batch (the process that
    started it) dies ends itself (ipykernel polls its parent), and its workers then end with it.
    """
    import multiprocessing
    import signal
    import sys
    import threading
    from multiprocessing.connection import wait

    parent = multiprocessing.parent_process()
    if parent is None:
        raise RuntimeError("_die_with_parent is for a worker process started by multiprocessing")
    if sys.platform.startswith("linux"):
        import ctypes

        pr_set_pdeathsig = 1  # <linux/prctl.h>
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(pr_set_pdeathsig, int(signal.SIGKILL), 0, 0, 0) != 0:
            err = ctypes.get_errno()
            raise OSError(err, f"prctl(PR_SET_PDEATHSIG) failed: {os.strerror(err)}")
    if os.getppid() != parent.pid:  # the parent is gone already (before the signal was armed)
        os._exit(1)

    def watch() -> None:
        wait([parent.sentinel])
        os._exit(1)

    threading.Thread(target=watch, name="dpkit-parent-watch", daemon=True).start()


def _worker_run(i: int) -> tuple[list[ReleaseRecord], float]:
    assert _WORKER_JOB is not None, "worker process not initialised"
    return _WORKER_JOB.run(i)


class InOrder:
    """The repetitions of a run as they arrive, handed on in repetition order.

    On construction the repetitions ``checkpoint`` already keeps are loaded into :attr:`ready` (``arrived(i)`` for
    each) and the others listed in :attr:`todo`; an executor puts each computed repetition into :attr:`ready` and
    calls :meth:`report`, which calls ``finished(i, records)`` for every repetition whose predecessors are done.
    """

    def __init__(self, reps: int, *, keep: RepetitionCheckpoint | None,
                 finished: Callable[[int, list[ReleaseRecord]], None], arrived: Callable[[int], None] | None = None) -> None:
        self.ready: dict[int, list[ReleaseRecord]] = {}
        self.todo: list[int] = []
        self._finished, self._next = finished, 0
        for i in range(reps):
            kept = None if keep is None else keep.load(i)
            if kept is None:
                self.todo.append(i)
            else:
                self.ready[i] = kept
                if arrived is not None:
                    arrived(i)

    def report(self) -> None:
        """``finished(i, records)`` for each next repetition in order that is ready."""
        while self._next in self.ready:
            self._finished(self._next, self.ready.pop(self._next))
            self._next += 1


def parallel_repetitions(job: CellsJob, reps: int, *, workers: int, keep: RepetitionCheckpoint | None,
                         computed: Callable[[int, list[ReleaseRecord], float], None],
                         finished: Callable[[int, list[ReleaseRecord]], None]) -> None:
    """:func:`run_cells`'s repetitions in ``workers`` processes (its ``workers`` parameter).

    Kept repetitions are loaded here; the others are computed in a process pool (``spawn``, so nothing of
    this process's state, e.g. JAX's, is inherited) whose processes start with their thread share's environment
    (module docstring; this process's environment is as before once the pool has ended). Each result is kept as
    soon as it arrives, and the repetitions are reported to ``finished`` in index order. On the first failure no
    new repetition starts, the running ones finish and are kept, and the exception propagates.

    Parameters
    ----------
    job : CellsJob
        The run's job, sent once to each worker process.
    reps : int
        The number of repetitions.
    workers : int
        The number of worker processes (at most one per repetition still to compute).
    keep : RepetitionCheckpoint or None
        Where finished repetitions are kept and loaded from.
    computed : callable
        ``computed(i, records, seconds)`` as each repetition arrives (any order).
    finished : callable
        ``finished(i, records)`` for each repetition, in index order.
    """
    import multiprocessing
    from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait

    order = InOrder(reps, keep=keep, finished=finished)
    todo, ready, report = order.todo, order.ready, order.report
    report()
    if not todo:
        return
    error: BaseException | None = None
    n_workers = min(workers, len(todo))
    share = thread_share(usable_cores(), n_workers)
    with environ_restored(**thread_environ(share)), ProcessPoolExecutor(
            max_workers=n_workers, mp_context=multiprocessing.get_context("spawn"), initializer=_worker_start,
            initargs=(job,)) as pool:  # the processes start (and inherit the environment) as the tasks are submitted
        running: dict[Future[tuple[list[ReleaseRecord], float]], int] = {pool.submit(_worker_run, i): i for i in todo}
        while running:
            done, _ = wait(running, return_when=FIRST_COMPLETED)
            for fut in sorted(done, key=running.__getitem__):
                i = running.pop(fut)
                if fut.cancelled():
                    continue
                exc = fut.exception()
                if exc is not None:
                    error = error or exc
                else:
                    records, seconds = fut.result()
                    computed(i, records, seconds)
                    ready[i] = records
            if error is None:
                try:
                    report()
                except BaseException as exc:  # e.g. Cancelled from on_repetition: stop, keep what is running
                    error = exc
            if error is not None:
                for fut in running:
                    fut.cancel()
    if error is not None:
        raise error
    report()


def _cells_repetition(X: np.ndarray, i: int, *, named: Mapping[str, Method], shared: set[str],
                      configured: Mapping[float, Mapping[str, Method]], sigmas: Sequence[float],
                      cell_seeds: Sequence[np.random.SeedSequence], shared_seed_i: np.random.SeedSequence,
                      n_queries: int, J: int, supremum: str | None = "cube") -> list[ReleaseRecord]:
    """Repetition ``i`` of :func:`run_cells` at every σ: σ-major, then method.

    A σ-dependent method's stream is :func:`method_seed` of the cell's repetition seed, a σ-independent one's
    that of ``shared_seed_i`` (the data set's): keyed by name, so no method's numbers depend on the others.
    """
    words = name_words(named)
    streams = {name: method_seed(shared_seed_i, name, words[name]) for name in shared}
    memo: dict[str, tuple[Release[Any], float]] = {}
    records: list[ReleaseRecord] = []
    for s, cseed in zip(sigmas, cell_seeds):
        rep = repetition_at(X, cseed, i, sigma=s, names={n: w for n, w in words.items() if n not in shared},
                            n_queries=n_queries, J=J)
        for name, method in configured[s].items():
            if name not in shared:
                done = timed_release(method, X, rep.generator(name), rep.workload)
            elif name in memo:
                done = memo[name]
            else:  # σ-independent: its own stream, released at the first σ and reused at the others
                done = memo[name] = timed_release(method, X, np.random.default_rng(streams[name]))
            records.append(record_release(name, *done, rep=rep, sigma=s, X=X, supremum=supremum,
                                          stream=streams.get(name)))
    return records
