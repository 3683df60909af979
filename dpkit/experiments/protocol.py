"""The one runner of the Chapter 3 protocol, for every method (thesis Sec 3.1).

For a data set, a list of methods, a kernel width σ and a number of repetitions, every
repetition draws a fresh workload of ``n_queries`` Gaussian-kernel mixture queries (2.1) with
``J`` centres, computes its exact answers on the data once
(:func:`dpkit.queries.truth_cache.exact_truth`), runs every method configured for the width
(:meth:`~dpkit.queries.release.MethodBase.at_width`) on its own child stream, and records the
worst absolute error ``max_f |q_f(D̂) − q_f(D)|`` and the worst relative error
``max_f |q_f(D̂) − q_f(D)| / q_f(D)`` with the one metric of :mod:`dpkit.queries.evaluate`.

Seeding: repetition ``i`` uses child ``i`` of one :class:`~numpy.random.SeedSequence` made from
``rng``; inside it the workload gets the first grandchild and method ``j`` the grandchild
``j + 1``, so all methods of a repetition see the *same* workload (a paired comparison) and a
method's numbers depend only on its position in the list. A table cell is seeded by
:func:`cell_seed` from the run seed and the cell's *values* (data set, σ), so a table computed in
one run and the same table split over many batch runs give identical numbers.

Shared releases (:func:`run_cells`): a method whose release does not depend on σ (its
:meth:`~dpkit.queries.release.MethodBase.at_width` returns the method itself and it does not answer the
workload directly, e.g. MST or the marginal histograms) is released *once per repetition and data set*
and that one release is evaluated on every σ's workload. Its stream is then child ``i`` (repetition) /
grandchild ``j`` (position) of :func:`shared_seed` (the run seed and the data set), so the numbers do
not depend on which σ's are run together either; the σ-dependent methods keep the streams of
:func:`run_cell` exactly. Each cell is still an average over i.i.d. releases; only the cells of one data
set share them (their errors are correlated across σ, not within a cell).

Time: ``time_s`` is the wall time of the release (not the evaluation); for methods that answer
the queries directly the exact answers are their input, and their computation time is charged
to them (``timings["truth"]``).
"""
from __future__ import annotations

import os
import time
import zlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

import numpy as np

from dpkit.core.rng import RNGLike, spawn_seeds
from dpkit.core.validation import check_positive_int, check_real_in_range
from dpkit.experiments.checkpoint import RepetitionCheckpoint, run_identity
from dpkit.queries.evaluate import answer_synthetic
from dpkit.queries.metrics import errors_from_answers
from dpkit.queries.release import Method, Release
from dpkit.queries.truth_cache import Truth, exact_truth
from dpkit.queries.workload import GaussianKernelWorkload

__all__ = ["RunRecord", "Repetition", "Cancelled", "on_repetitions", "cell_seed", "shared_seed", "repetitions", "run_cell",
           "run_cells", "as_methods", "width_independent", "record_release", "supremum_seed", "SUPREMUM_DOMAINS"]

#: ``callback(rep_index, reps)`` called after each finished repetition of :func:`run_cell`
RepetitionCallback = Callable[[int, int], None]
_ON_REPETITION: ContextVar[RepetitionCallback | None] = ContextVar("dpkit_on_repetition", default=None)


class Cancelled(Exception):
    """Raised by an ``on_repetition`` callback to stop a run between two repetitions (a panel's *Stop*)."""


@contextmanager
def on_repetitions(callback: RepetitionCallback) -> Iterator[None]:
    """Within the block, every :func:`run_cell` without its own ``on_repetition`` reports to ``callback``.

    This reaches the runs made inside library code (e.g. each value of
    :func:`dpkit.experiments.sweeps.sweep`) without threading a callback through every signature.
    The callback only observes (or raises :class:`Cancelled`); it never touches the random streams,
    so results are unchanged.
    """
    token = _ON_REPETITION.set(callback)
    try:
        yield
    finally:
        _ON_REPETITION.reset(token)


@dataclass(frozen=True, kw_only=True)
class RunRecord:
    """One (repetition, method) result of :func:`run_cell`.

    Attributes
    ----------
    rep : int
        Repetition index.
    method : str
        The method's name in this run (registry name or label).
    privacy : str
        Its privacy class.
    sigma : float
        Kernel width of the workload.
    abs, rel : float
        Worst absolute and relative error over the workload.
    time_s : float
        Wall time of the release (plus the exact answers for direct-answering methods).
    timings : dict
        The release's stage timings.
    support_size : int
        Distinct points of the synthetic database (0 for released answers).
    eps_spent, delta_spent : float
        Totals of the release's ledger.
    error_bound : float
        Proven bound on the absolute numerical error of the answers behind ``abs`` (exact answers plus the
        synthetic database's answers); the reported worst errors are exact up to it.
    params : dict
        The release's parameters.
    ledger : dict
        The release's ledger record.
    lp_status : int or None
        HiGHS status of the LP for the LP-based methods.
    sup_abs : float or None
        The worst error over the whole query class (2.1) found for this release
        (:func:`dpkit.queries.supremum.class_supremum`: a certified lower bound, attained by the single-kernel
        query ``supremum["witness"]``); ``None`` when not computed or not defined (a release that answers only
        its workload's queries: ``supremum["reason"]`` says why).
    supremum : dict or None
        The search's record (:meth:`~dpkit.queries.supremum.ClassSupremum.as_dict`: witness centre, its signed
        and relative error, domain, numerical bound, evaluations).
    """

    rep: int
    method: str
    privacy: str
    sigma: float
    abs: float
    rel: float
    time_s: float
    timings: dict[str, float]
    support_size: int
    eps_spent: float
    delta_spent: float
    error_bound: float
    params: dict[str, Any]
    ledger: dict[str, Any]
    lp_status: int | None = None
    sup_abs: float | None = None
    supremum: dict[str, Any] | None = None

    def as_dict(self) -> dict[str, Any]:
        """A plain dict (for DataFrames and JSON)."""
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


@dataclass(frozen=True, kw_only=True, eq=False)
class Repetition:
    """One repetition's shared inputs: its workload, exact answers and one generator per method."""

    index: int
    workload: GaussianKernelWorkload
    truth: Truth
    generators: list[np.random.Generator]


def cell_seed(seed: int, dataset: str, sigma: float) -> np.random.SeedSequence:
    """The SeedSequence of one table cell, from the run seed and the cell's *values*.

    Because it does not depend on where the cell sits in a list of data sets or σ's, a table
    computed in one run and the same table split over many batch runs give identical numbers.
    """
    return np.random.SeedSequence([int(seed), zlib.crc32(str(dataset).upper().encode()), int(round(float(sigma) * 1000))])


def shared_seed(seed: int, dataset: str) -> np.random.SeedSequence:
    """The SeedSequence of the σ-independent releases of one data set in :func:`run_cells`.

    Its entropy is the run seed and a hash of ``"shared:" + dataset`` (two words), so it differs from
    every :func:`cell_seed` (three words, the second a hash of the data set's name alone) and from
    their descendants.
    """
    return np.random.SeedSequence([int(seed), zlib.crc32(("shared:" + str(dataset).upper()).encode())])


def width_independent(method: Method, sigmas: Sequence[float]) -> bool:
    """True when ``method`` releases the same way for every σ in ``sigmas``: it does not answer the
    workload directly and ``method.at_width(σ)`` is the method itself (the protocol's default for
    methods without a width)."""
    return not getattr(method, "needs_workload", False) and all(method.at_width(float(s)) is method for s in sigmas)


def repetitions(X: np.ndarray, *, sigma: float, n_streams: int, reps: int, n_queries: int = 10_000, J: int = 10,
                rng: RNGLike = 0, progress: bool = False) -> Iterator[Repetition]:
    """The repetition skeleton (module docstring): workload, exact answers and ``n_streams`` generators."""
    from tqdm.auto import tqdm

    sigma = check_real_in_range(sigma, name="sigma", low=0.0, low_inclusive=False)
    reps = check_positive_int(reps, name="reps")
    X = np.asarray(X, dtype=float)
    for i, seed in enumerate(tqdm(spawn_seeds(rng, reps), disable=not progress, desc=f"σ={sigma:g}")):
        yield _repetition(X, seed, i, sigma=sigma, n_streams=n_streams, n_queries=n_queries, J=J)


def _repetition(X: np.ndarray, seed: np.random.SeedSequence, index: int, *, sigma: float, n_streams: int,
                n_queries: int, J: int) -> Repetition:
    """Repetition ``index`` from its own seed (child ``index`` of the cell's sequence): it depends on no other."""
    w_seed, *m_seeds = seed.spawn(1 + int(n_streams))
    wl = GaussianKernelWorkload.generate(n_queries, X.shape[1], J=J, sigma=sigma, rng=np.random.default_rng(w_seed))
    return Repetition(index=index, workload=wl, truth=exact_truth(wl, X),
                      generators=[np.random.default_rng(s) for s in m_seeds])


def as_methods(methods: Mapping[str, Method] | Sequence[Method]) -> dict[str, Method]:
    """``{name: method}`` from a mapping (names kept) or a sequence (each method's own name; unique)."""
    if isinstance(methods, Mapping):
        out = dict(methods)
    else:
        out = {}
        for m in methods:
            if m.name in out:
                raise ValueError(f"two methods are named {m.name!r}: pass a mapping {{name: method}} to tell them apart")
            out[m.name] = m
    if not out:
        raise ValueError("methods must not be empty")
    return out


#: the worst queries of a repetition's workload whose centres start the class-supremum search
SUPREMUM_WORKLOAD_QUERIES = 16
#: where the class supremum searches centres (:func:`run_cell`'s ``supremum``)
SUPREMUM_DOMAINS = ("cube", "space")


def _check_supremum(supremum: str | None) -> str | None:
    if supremum is not None and supremum not in SUPREMUM_DOMAINS:
        raise ValueError(f"supremum must be one of {SUPREMUM_DOMAINS} or None; got {supremum!r}")
    return supremum


def supremum_seed(name: str, rep: int, sigma: float) -> np.random.SeedSequence:
    """The stream of the class-supremum search of one record, keyed by its values (method name, repetition, σ).

    It only draws the search's random starts, never a release, so the releases do not depend on it.
    """
    return np.random.SeedSequence([zlib.crc32(b"supremum"), zlib.crc32(str(name).encode()), int(rep),
                                   int(round(float(sigma) * 1000))])


def _supremum(name: str, rel: Release[Any], X: np.ndarray, est: np.ndarray, *, rep: Repetition, sigma: float,
              domain: str) -> dict[str, Any]:
    """The class supremum of one release (:func:`~dpkit.queries.supremum.class_supremum`), started from the
    centres of the workload's worst queries among its other starts."""
    from dpkit.queries.supremum import class_supremum

    err = np.abs(est - rep.truth.answers)
    worst = np.argsort(-err, kind="stable")[:SUPREMUM_WORKLOAD_QUERIES]
    centres = rep.workload.centres[worst].reshape(-1, rep.workload.centres.shape[2])
    scores = np.repeat(err[worst], rep.workload.centres.shape[1])
    found = class_supremum(X, rel, sigma, rng=np.random.default_rng(supremum_seed(name, rep.index, sigma)),
                           domain=domain, workload_centres=centres, workload_scores=scores)
    return found.as_dict()


def record_release(name: str, rel: Release[Any], seconds: float, *, rep: Repetition, sigma: float,
                   X: np.ndarray | None = None, supremum: str | None = None) -> RunRecord:
    """Score one method's release on one repetition: the :class:`RunRecord` the runner keeps.

    The release's answers to the repetition's workload (its own answers, or the workload answered on its
    synthetic database) against the repetition's exact answers, with the error bound of both answerings,
    the privacy spent and the release's timings; :func:`run_cell` and :func:`run_cells` record every
    release with it.

    Parameters
    ----------
    name : str
        The method's name in the cell (the record's ``method``).
    rel : Release
        What ``method.release(X, rng=g, workload=rep.workload)`` returned.
    seconds : float
        Wall time of that release; the exact answers' time (``rel.timings["truth"]``) is added for
        methods that answer the workload directly.
    rep : Repetition
        The repetition the release answered (workload and exact answers).
    sigma : float
        Kernel width of the cell.
    X : array (n, d), optional
        The data (needed with ``supremum``).
    supremum : {"cube", "space"} or None
        Also record the class supremum of the release's error (:func:`~dpkit.queries.supremum.class_supremum`
        over centres in the cube, or anywhere; ``sup_abs`` and ``supremum`` of the record).

    Returns
    -------
    RunRecord
    """
    if rel.answers is not None:
        est = np.asarray(rel.answers, dtype=float)
        bound = rep.truth.error_bound
    else:
        syn = rel.synthetic
        est, info = answer_synthetic(rep.workload, syn.points, syn.weights, return_info=True)
        bound = rep.truth.error_bound + float(info["error_bound"]) * float(np.max(np.abs(est), initial=0.0))
    err = errors_from_answers(est, rep.truth.answers)
    lp = getattr(rel.diagnostics, "lp", None)
    eps, dl = rel.spent
    sup = None
    if supremum is not None:
        if X is None:
            raise ValueError("record_release: supremum needs the data X")
        sup = _supremum(name, rel, X, est, rep=rep, sigma=sigma, domain=supremum)
    return RunRecord(
        rep=rep.index, method=name, privacy=rel.privacy, sigma=float(sigma), abs=err.abs, rel=err.rel,
        time_s=seconds + float(rel.timings.get("truth", 0.0)), timings=dict(rel.timings),
        support_size=rel.support_size, eps_spent=eps, delta_spent=dl, error_bound=bound, params=dict(rel.params),
        ledger=rel.ledger, lp_status=None if lp is None else lp.get("status"),
        sup_abs=None if sup is None else sup["sup_abs"], supremum=sup,
    )


def _timed_release(method: Method, X: np.ndarray, g: np.random.Generator,
                   workload: GaussianKernelWorkload | None = None) -> tuple[Release[Any], float]:
    """``method.release`` and its wall time (the ``time_s`` of a record)."""
    t0 = time.perf_counter()
    rel = method.release(X, rng=g, workload=workload)
    return rel, time.perf_counter() - t0


def run_cell(X: np.ndarray, *, methods: Mapping[str, Method] | Sequence[Method], sigma: float, reps: int,
             n_queries: int = 10_000, J: int = 10, rng: RNGLike = 0, progress: bool = False,
             on_repetition: RepetitionCallback | None = None, supremum: str | None = "cube") -> list[RunRecord]:
    """Run ``reps`` repetitions of every method at kernel width σ on data ``X`` (module docstring).

    Parameters
    ----------
    X : array (n, d)
        The private data in [-1, 1]^d.
    methods : mapping name → method, or sequence of methods
        Each is configured for the cell with ``method.at_width(sigma)``.
    sigma : float
        Kernel width of the workloads (the trigonometric mechanisms use K = σ²).
    reps : int
        Repetitions, each with a fresh workload.
    n_queries, J : int
        Workload size and centres per query (thesis: 10⁴ and 10).
    rng : int, SeedSequence or Generator
        Root of the repetitions' streams (:func:`cell_seed` for a table cell).
    progress : bool
        Show a progress bar.
    on_repetition : callable, optional
        ``on_repetition(rep_index, reps)`` after each finished repetition (default: the callback of an
        enclosing :func:`on_repetitions`, if any). It may raise :class:`Cancelled` to stop the run; the
        streams and hence the results are the same with or without it.
    supremum : {"cube", "space"} or None
        Also record each release's class supremum (``sup_abs``; :func:`~dpkit.queries.supremum.class_supremum`)
        over single-kernel queries with centres in the cube (default: where the workload draws its centres) or
        anywhere (``"space"``: the class (2.1) as defined; synthetic databases only); ``None``: not computed.
        Its search has streams of its own (:func:`supremum_seed`), so the releases and the thesis metric do not
        depend on it.

    Returns
    -------
    list of RunRecord
        One per (repetition, method), repetition-major.
    """
    supremum = _check_supremum(supremum)
    named = as_methods(methods)
    configured = {name: m.at_width(sigma) for name, m in named.items()}
    records: list[RunRecord] = []
    hook = on_repetition if on_repetition is not None else _ON_REPETITION.get()
    for rep in repetitions(X, sigma=sigma, n_streams=len(configured), reps=reps, n_queries=n_queries, J=J, rng=rng,
                           progress=progress):
        for (name, method), g in zip(configured.items(), rep.generators):
            records.append(record_release(name, *_timed_release(method, X, g, rep.workload), rep=rep, sigma=sigma, X=X,
                                          supremum=supremum))
        if hook is not None:
            hook(rep.index, int(reps))
    return records


def run_cells(X: np.ndarray, *, methods: Mapping[str, Method] | Sequence[Method], sigmas: Sequence[float], reps: int,
              seed: int, dataset: str, n_queries: int = 10_000, J: int = 10, progress: bool = False,
              on_repetition: RepetitionCallback | None = None,
              checkpoint: str | os.PathLike | None = None, workers: int = 1,
              supremum: str | None = "cube") -> list[RunRecord]:
    """The cells (``dataset``, σ) for every σ in ``sigmas``, sharing the σ-independent releases.

    Every σ-dependent method gets exactly the records of ``run_cell(X, ..., sigma=σ,
    rng=cell_seed(seed, dataset, σ))``; every method for which :func:`width_independent` holds is
    released once per repetition from :func:`shared_seed` and evaluated on each σ's workload (module
    docstring), with its release time on every one of its records. Work: the σ-independent releases
    cost ``reps`` instead of ``reps × len(sigmas)``.

    Parameters
    ----------
    X : array (n, d)
        The private data in [-1, 1]^d.
    methods : mapping name → method, or sequence of methods
        As :func:`run_cell`.
    sigmas : sequence of float
        Kernel widths (distinct).
    reps : int
        Repetitions per cell.
    seed : int
        Run seed (:func:`cell_seed`, :func:`shared_seed`).
    dataset : str
        The data set's name (part of the seeds).
    n_queries, J : int
        Workload size and centres per query.
    progress : bool
        Show a progress bar over the repetitions.
    on_repetition : callable, optional
        ``on_repetition(rep_index, reps)`` after each repetition of all cells (as :func:`run_cell`), also
        for a repetition loaded from ``checkpoint``.
    checkpoint : path, optional
        A folder that keeps each finished repetition (:class:`~dpkit.experiments.checkpoint.RepetitionCheckpoint`):
        repetitions found there are loaded instead of computed, so a run interrupted after k repetitions
        resumes at k with the records of an uninterrupted run. A folder of a different computation raises
        :class:`~dpkit.experiments.checkpoint.CheckpointMismatchError`.
    workers : int
        Repetitions computed at once, each in its own process (``spawn``; default 1: in this process).
        Repetition ``i`` depends only on its own seeds, so the records are those of ``workers=1`` to the
        bit, whatever the order in which repetitions finish (only ``time_s`` is measured anew). Each
        finished repetition is kept in ``checkpoint`` as soon as it is done; ``on_repetition`` is called in
        repetition order. If a repetition raises (or ``on_repetition`` does), no new one starts, those
        already running finish and are kept, and the first exception is raised. The worker processes end
        with this process, even if it is killed with SIGKILL (:func:`_die_with_parent`).
    supremum : {"cube", "space"} or None
        As :func:`run_cell`.

    Returns
    -------
    list of RunRecord
        σ-major (in the order of ``sigmas``), then repetition, then method: the concatenation of the
        :func:`run_cell` records of each σ.
    """
    from tqdm.auto import tqdm

    named = as_methods(methods)
    sigmas = [check_real_in_range(s, name="sigmas", low=0.0, low_inclusive=False) for s in sigmas]
    if not sigmas:
        raise ValueError("sigmas must not be empty")
    if len(set(sigmas)) != len(sigmas):
        raise ValueError(f"sigmas must be distinct; got {sigmas}")
    reps = check_positive_int(reps, name="reps")
    workers = check_positive_int(workers, name="workers")
    supremum = _check_supremum(supremum)
    shared = {name for name, m in named.items() if width_independent(m, sigmas)}
    configured = {s: {name: m.at_width(s) for name, m in named.items()} for s in sigmas}
    X = np.asarray(X, dtype=float)
    cell_reps = [spawn_seeds(cell_seed(seed, dataset, s), reps) for s in sigmas]
    shared_reps = spawn_seeds(shared_seed(seed, dataset), reps)
    hook = on_repetition if on_repetition is not None else _ON_REPETITION.get()
    keep = None if checkpoint is None else RepetitionCheckpoint(checkpoint, run_identity(
        X, methods=named, sigmas=sigmas, seed=seed, dataset=dataset, n_queries=n_queries, J=J, supremum=supremum))
    job = _CellsJob(X=X, named=named, shared=shared, configured=configured, sigmas=sigmas, cell_reps=cell_reps,
                    shared_reps=shared_reps, n_queries=n_queries, J=J, supremum=supremum)
    out: dict[float, list[RunRecord]] = {s: [] for s in sigmas}
    bar = tqdm(total=reps, disable=not progress, desc=f"{dataset} σ={','.join(f'{s:g}' for s in sigmas)}")

    def finished(i: int, records: list[RunRecord]) -> None:
        for r in records:
            out[r.sigma].append(r)
        bar.update(1)
        if hook is not None:
            hook(i, int(reps))

    def computed(i: int, records: list[RunRecord], seconds: float) -> None:
        if keep is not None:
            keep.save(i, records, seconds=seconds)

    try:
        if workers == 1:
            for i in range(reps):
                kept = None if keep is None else keep.load(i)
                if kept is None:
                    kept, seconds = job.run(i)
                    computed(i, kept, seconds)
                finished(i, kept)
        else:
            _parallel_repetitions(job, reps, workers=workers, keep=keep, computed=computed, finished=finished)
    finally:
        bar.close()
    return [r for s in sigmas for r in out[s]]


@dataclass(frozen=True, kw_only=True, eq=False)
class _CellsJob:
    """Everything a repetition of :func:`run_cells` needs (picklable, sent once to each worker process)."""

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

    def run(self, i: int) -> tuple[list[RunRecord], float]:
        """Repetition ``i``'s records and the wall time it took."""
        t0 = time.perf_counter()
        records = _cells_repetition(self.X, i, named=self.named, shared=self.shared, configured=self.configured,
                                    sigmas=self.sigmas, cell_seeds=[c[i] for c in self.cell_reps],
                                    shared_seed_i=self.shared_reps[i], n_queries=self.n_queries, J=self.J,
                                    supremum=self.supremum)
        return records, time.perf_counter() - t0


_WORKER_JOB: _CellsJob | None = None


def _worker_start(job: _CellsJob) -> None:
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


def _worker_run(i: int) -> tuple[list[RunRecord], float]:
    assert _WORKER_JOB is not None, "worker process not initialised"
    return _WORKER_JOB.run(i)


def _parallel_repetitions(job: _CellsJob, reps: int, *, workers: int, keep: RepetitionCheckpoint | None,
                          computed: Callable[[int, list[RunRecord], float], None],
                          finished: Callable[[int, list[RunRecord]], None]) -> None:
    """:func:`run_cells`'s repetitions in ``workers`` processes (its ``workers`` parameter).

    Kept repetitions are loaded here; the others are computed in a process pool (``spawn``, so nothing of
    this process's state, e.g. JAX's, is inherited). Each result is kept as soon as it arrives, and the
    repetitions are reported to ``finished`` in index order. On the first failure no new repetition
    starts, the running ones finish and are kept, and the exception propagates.
    """
    import multiprocessing
    from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait

    ready: dict[int, list[RunRecord]] = {}
    todo = []
    for i in range(reps):
        kept = None if keep is None else keep.load(i)
        if kept is None:
            todo.append(i)
        else:
            ready[i] = kept
    nxt = 0

    def report() -> None:
        nonlocal nxt
        while nxt in ready:
            finished(nxt, ready.pop(nxt))
            nxt += 1

    report()
    if not todo:
        return
    error: BaseException | None = None
    with ProcessPoolExecutor(max_workers=min(workers, len(todo)), mp_context=multiprocessing.get_context("spawn"),
                             initializer=_worker_start, initargs=(job,)) as pool:
        running: dict[Future[tuple[list[RunRecord], float]], int] = {pool.submit(_worker_run, i): i for i in todo}
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
                      n_queries: int, J: int, supremum: str | None = "cube") -> list[RunRecord]:
    """Repetition ``i`` of :func:`run_cells` at every σ: σ-major, then method."""
    streams = shared_seed_i.spawn(len(named))
    memo: dict[str, tuple[Release[Any], float]] = {}
    records: list[RunRecord] = []
    for s, cseed in zip(sigmas, cell_seeds):
        rep = _repetition(X, cseed, i, sigma=s, n_streams=len(named), n_queries=n_queries, J=J)
        for j, ((name, method), g) in enumerate(zip(configured[s].items(), rep.generators)):
            if name not in shared:
                done = _timed_release(method, X, g, rep.workload)
            elif name in memo:
                done = memo[name]
            else:  # σ-independent: its own stream, released at the first σ and reused at the others
                done = memo[name] = _timed_release(method, X, np.random.default_rng(streams[j]))
            records.append(record_release(name, *done, rep=rep, sigma=s, X=X, supremum=supremum))
    return records
