"""The records and seeds of the Chapter 3 protocol, and the record of one release.

* :class:`RunRecord` — one method in one repetition of a table cell; :class:`Repetition` — what a
  repetition shares (its workload, the exact answers, the methods' streams).
* Seeds: :func:`cell_seed` (a table cell, from the run seed and the cell's values), :func:`shared_seed`
  (the width-independent releases of a data set), :func:`repetitions` (the repetitions of a cell),
  :func:`supremum_seed` (the search of the class supremum).
* :func:`record_release` — evaluate one release on a repetition's workload into a :class:`RunRecord`.
* :func:`on_repetitions`, :class:`Cancelled` — the progress callback and the cancellation of a run.

:mod:`dpkit.experiments.protocol` (the runner) has the protocol and re-exports every name.
"""
from __future__ import annotations

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
from dpkit.queries.evaluate import answer_synthetic
from dpkit.queries.metrics import errors_from_answers
from dpkit.queries.release import Method, Release
from dpkit.queries.truth_cache import Truth, exact_truth
from dpkit.queries.workload import GaussianKernelWorkload

__all__ = ["RunRecord", "Repetition", "Cancelled", "on_repetitions", "cell_seed", "shared_seed", "repetitions",
           "as_methods", "width_independent", "record_release", "supremum_seed", "SUPREMUM_DOMAINS"]

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
