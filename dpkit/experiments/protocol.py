"""The one runner of the Chapter 3 protocol, for every method (thesis Sec 3.1).

Every repetition draws a fresh workload of ``n_queries`` Gaussian-kernel mixture queries (2.1), computes its exact
answers once (:func:`dpkit.queries.truth_cache.exact_truth`), runs every method configured for the width on its own
stream, and records the worst absolute and relative errors (:mod:`dpkit.queries.evaluate`).

Guarantees (seeding; ``docs/science/derivations.md`` gives the details): all methods of a repetition see the same
workload (:func:`workload_seed`, a paired comparison); a method's stream is keyed by its name (:func:`method_seed`),
and a cell by its values (:func:`cell_seed`), so no number depends on which other methods, cells or σ's run, or in
which order. A σ-independent method is released once per repetition and data set and evaluated on every σ
(:func:`run_cells`, :func:`shared_seed`). Every record carries the seeds that re-create its release
(:func:`seed_record`).
"""
from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from dpkit.core.rng import RNGLike, spawn_seeds
from dpkit.core.validation import check_int_in_range, check_name, check_positive_int, check_seed, check_sigmas
from dpkit.experiments.adoption import adoption_switch, verify_reps_switch
from dpkit.experiments.checkpoint import RepetitionCheckpoint, run_identity
from dpkit.experiments.parallel import CellsJob, RepetitionExecutor, parallel_repetitions
from dpkit.experiments.records import (
    ON_REPETITION,
    ReleaseRecord,
    RepetitionCallback,
    as_methods,
    cell_seed,
    check_supremum,
    name_words,
    record_release,
    repetitions,
    shared_seed,
    timed_release,
    width_independent,
)
from dpkit.queries.release import Method

__all__ = ["run_cell", "run_cells", "run_repetitions"]


def run_cell(X: np.ndarray, *, methods: Mapping[str, Method] | Sequence[Method], sigma: float, reps: int,
             n_queries: int = 10_000, J: int = 10, rng: RNGLike = 0, progress: bool = False,
             on_repetition: RepetitionCallback | None = None, supremum: str | None = "cube") -> list[ReleaseRecord]:
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
    list of ReleaseRecord
        One per (repetition, method), repetition-major.
    """
    supremum = check_supremum(supremum)
    named = as_methods(methods)
    configured = {name: m.at_width(sigma) for name, m in named.items()}
    records: list[ReleaseRecord] = []
    hook = on_repetition if on_repetition is not None else ON_REPETITION.get()
    for rep in repetitions(X, sigma=sigma, names=list(configured), reps=reps, n_queries=n_queries, J=J, rng=rng,
                           progress=progress):
        for name, method in configured.items():
            records.append(record_release(name, *timed_release(method, X, rep.generator(name), rep.workload), rep=rep,
                                          sigma=sigma, X=X, supremum=supremum))
        if hook is not None:
            hook(rep.index, int(reps))
    return records


def run_cells(X: np.ndarray, *, methods: Mapping[str, Method] | Sequence[Method], sigmas: Sequence[float], reps: int,
              seed: int, dataset: str, n_queries: int = 10_000, J: int = 10, progress: bool = False,
              on_repetition: RepetitionCallback | None = None,
              checkpoint: str | os.PathLike | None = None, workers: int | RepetitionExecutor = 1,
              supremum: str | None = "cube", adopt: bool = False,
              verify_reps: int | None = None) -> list[ReleaseRecord]:
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
        :class:`~dpkit.experiments.checkpoint.CheckpointMismatchError` (but see ``adopt``).
    workers : int or RepetitionExecutor
        Repetitions computed at once, each in its own process (``spawn``; default 1: in this process), or an
        executor that computes them elsewhere (:class:`~dpkit.experiments.parallel.RepetitionExecutor`, e.g.
        :class:`dpkit.batch.repetitions.DaskRepetitions`: one Dask task per repetition).
        Repetition ``i`` depends only on its own seeds, so the records are those of ``workers=1`` to the
        bit, whatever the order in which repetitions finish (only ``time_s`` is measured anew). Each
        finished repetition is kept in ``checkpoint`` as soon as it is done; ``on_repetition`` is called in
        repetition order. If a repetition raises (or ``on_repetition`` does), no new one starts, those
        already running finish and are kept, and the first exception is raised. The worker processes end
        with this process, even if it is killed with SIGKILL (:func:`_die_with_parent`).
    supremum : {"cube", "space"} or None
        As :func:`run_cell`.
    adopt : bool
        Adopt a ``checkpoint`` kept by other dpkit sources (:mod:`dpkit.experiments.adoption`): its lowest and
        highest kept repetitions (``verify_reps``) are computed again here, in this process, before any other work,
        and the folder is reused only if they equal the kept ones to the bit (measured times aside); else
        :class:`~dpkit.experiments.checkpoint.CheckpointMismatchError` names the difference. Default off; a notebook
        passes its ``CHECKPOINT_ADOPT`` parameter (the batch runner's ``--stale verify`` sets it).
    verify_reps : int, optional
        How many kept repetitions an adoption computes again, evenly spread from the lowest to the highest kept index
        (:func:`~dpkit.experiments.adoption.verified_indices`). Default 2 (the lowest and the highest); a notebook
        passes its ``CHECKPOINT_VERIFY_REPS`` parameter (the batch runner's ``--verify-reps``).

    Returns
    -------
    list of ReleaseRecord
        σ-major (in the order of ``sigmas``), then repetition, then method: the concatenation of the
        :func:`run_cell` records of each σ.

    Raises
    ------
    TypeError, ValueError
        Before any work, naming the parameter and its allowed range: ``seed`` not an integer ≥ 0
        (:func:`~dpkit.core.validation.check_seed`), ``sigmas`` not a non-empty list of distinct finite widths > 0
        (:func:`~dpkit.core.validation.check_sigmas`), ``dataset`` not a non-empty string, ``reps``,
        ``n_queries``, ``J``, ``workers`` or ``verify_reps`` not an integer ≥ 1.
    """
    from tqdm.auto import tqdm

    named, seed, sigmas, dataset, n_queries, J, supremum = _checked(methods, seed, sigmas, dataset, n_queries, J,
                                                                     supremum)
    reps = check_positive_int(reps, name="reps")
    if verify_reps is not None:
        verify_reps = check_positive_int(verify_reps, name="verify_reps")
    executor = workers if isinstance(workers, RepetitionExecutor) else None
    if executor is None:
        workers = check_positive_int(workers, name="workers")
    X = np.asarray(X, dtype=float)
    job = _cells_job(X, named, sigmas=sigmas, reps=reps, seed=seed, dataset=dataset, n_queries=n_queries, J=J,
                     supremum=supremum)
    hook = on_repetition if on_repetition is not None else ON_REPETITION.get()
    adopt = adoption_switch(adopt) and checkpoint is not None
    keep = None if checkpoint is None else RepetitionCheckpoint(checkpoint, run_identity(
        X, methods=named, sigmas=sigmas, seed=seed, dataset=dataset, n_queries=n_queries, J=J, supremum=supremum),
        verify=(lambda i: job.run(i)[0]) if adopt else None, verify_at=verify_reps_switch(verify_reps) if adopt else None)
    out: dict[float, list[ReleaseRecord]] = {s: [] for s in sigmas}
    bar = tqdm(total=reps, disable=not progress, desc=f"{dataset} σ={','.join(f'{s:g}' for s in sigmas)}")

    def finished(i: int, records: list[ReleaseRecord]) -> None:
        for r in records:
            out[r.sigma].append(r)
        if executor is None:  # an executor's repetitions are counted as they arrive, in any order
            bar.update(1)
        if hook is not None:
            hook(i, int(reps))

    def computed(i: int, records: list[ReleaseRecord], seconds: float) -> None:
        if keep is not None:
            keep.save(i, records, seconds=seconds)

    try:
        if executor is not None:
            executor(job, reps, keep=keep, label=dataset, finished=finished, arrived=lambda i: bar.update(1))
        elif workers == 1:
            for i in range(reps):
                kept = None if keep is None else keep.load(i)
                if kept is None:
                    kept, seconds = job.run(i)
                    computed(i, kept, seconds)
                finished(i, kept)
        else:
            parallel_repetitions(job, reps, workers=workers, keep=keep, computed=computed, finished=finished)
    finally:
        bar.close()
    return [r for s in sigmas for r in out[s]]




def _checked(methods: Mapping[str, Method] | Sequence[Method], seed: int, sigmas: Sequence[float], dataset: str,
             n_queries: int, J: int, supremum: str | None) -> tuple[Any, ...]:
    """The arguments :func:`run_cells` and :func:`run_repetitions` share, validated (their docstrings' Raises)."""
    return (as_methods(methods), check_seed(seed), check_sigmas(sigmas), check_name(dataset, name="dataset"),
            check_positive_int(n_queries, name="n_queries"), check_positive_int(J, name="J"),
            check_supremum(supremum))


def _cells_job(X: np.ndarray, named: Mapping[str, Method], *, sigmas: Sequence[float], reps: int, seed: int,
               dataset: str, n_queries: int, J: int, supremum: str | None) -> CellsJob:
    """The job of :func:`run_cells` (validated arguments): repetition ``i``'s seeds are child ``i`` of each cell's
    and the data set's seed sequence, the same whatever ``reps`` is (``reps`` > ``i``)."""
    name_words(named)  # two names with the same stream words fail here, before any work
    shared = {name for name, m in named.items() if width_independent(m, sigmas)}
    configured = {s: {name: m.at_width(s) for name, m in named.items()} for s in sigmas}
    cell_reps = [spawn_seeds(cell_seed(seed, dataset, s), reps) for s in sigmas]
    shared_reps = spawn_seeds(shared_seed(seed, dataset), reps)
    return CellsJob(X=X, named=named, shared=shared, configured=configured, sigmas=sigmas, cell_reps=cell_reps,
                    shared_reps=shared_reps, n_queries=n_queries, J=J, supremum=supremum)


def run_repetitions(X: np.ndarray, *, methods: Mapping[str, Method] | Sequence[Method], sigmas: Sequence[float],
                    indices: Sequence[int], seed: int, dataset: str, n_queries: int = 10_000, J: int = 10,
                    supremum: str | None = "cube") -> list[ReleaseRecord]:
    """Only the repetitions ``indices`` of :func:`run_cells` (in this process, in the order given): their records
    are those of the same repetitions of a ``run_cells`` call with the same arguments and any ``reps`` above them,
    to the bit (only ``time_s`` is measured anew). This checks a few repetitions of a long run without the others
    (:mod:`dpkit.board.refresh`).

    Parameters
    ----------
    indices : sequence of int
        Repetition indices, each ≥ 0, distinct.
    X, methods, sigmas, seed, dataset, n_queries, J, supremum
        As :func:`run_cells`.

    Returns
    -------
    list of ReleaseRecord
        Per index, the repetition's records as :func:`run_cells` orders them within a repetition.

    Raises
    ------
    TypeError, ValueError
        As :func:`run_cells`; ``indices`` empty, repeated or holding a value that is not an integer ≥ 0.
    """
    named, seed, sigmas, dataset, n_queries, J, supremum = _checked(methods, seed, sigmas, dataset, n_queries, J,
                                                                     supremum)
    if isinstance(indices, (str, bytes)) or not isinstance(indices, Sequence) or not indices:
        raise ValueError(f"indices must be a non-empty list of repetition indices (integers >= 0); got {indices!r}")
    checked = [check_int_in_range(i, name="indices", low=0) for i in indices]
    if len(set(checked)) != len(checked):
        raise ValueError(f"indices must be distinct; got {list(indices)}")
    job = _cells_job(np.asarray(X, dtype=float), named, sigmas=sigmas, reps=max(checked) + 1, seed=seed,
                     dataset=dataset, n_queries=n_queries, J=J, supremum=supremum)
    return [r for i in checked for r in job.run(i)[0]]
