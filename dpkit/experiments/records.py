"""The records and seeds of the Chapter 3 protocol, and the record of one release.

* :class:`ReleaseRecord` (one method in one repetition of a table cell) and :class:`Repetition` (what a repetition
  shares: its workload, the exact answers, the methods' streams).
* Seeds: :func:`cell_seed`, :func:`shared_seed`, :func:`repetitions`, :func:`workload_seed`, :func:`method_seed`,
  :func:`seed_record`, :func:`supremum_seed`; the scheme is :data:`SEEDING`.
* :func:`record_release`, :func:`repetition_at`, :func:`timed_release`; :func:`on_repetitions` and :class:`Cancelled`.

Guarantee: a method's stream is keyed by the values of its cell, repetition and *name*, not by its position, so
adding, removing or reordering methods leaves every other method's numbers unchanged.
"""
from __future__ import annotations

import hashlib
import time
import zlib
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

import numpy as np

from dpkit.core.rng import RNGLike, spawn_seeds
from dpkit.core.threads import one_blas_thread
from dpkit.core.validation import check_positive_finite, check_positive_int, check_seed
from dpkit.queries.evaluate import answer_synthetic
from dpkit.queries.metrics import errors_from_answers
from dpkit.queries.release import Method, Release
from dpkit.queries.supremum import DOMAINS, ClassSupremum
from dpkit.queries.synthetic import check_released_database
from dpkit.queries.truth_cache import Truth, exact_truth
from dpkit.queries.workload import GaussianKernelWorkload

__all__ = [
    "ReleaseRecord",
    "Repetition",
    "Cancelled",
    "on_repetitions",
    "cell_seed",
    "shared_seed",
    "repetitions",
    "as_methods",
    "width_independent",
    "record_release",
    "supremum_seed",
    "method_seed",
    "workload_seed",
    "name_words",
    "seed_record",
    "SEEDING",
    "repetition_at",
    "timed_release",
    "ON_REPETITION",
    "check_supremum",
]


@dataclass(frozen=True, kw_only=True)
class ReleaseRecord:
    """One (repetition, method) result of :func:`~dpkit.experiments.protocol.run_cell`.

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
        and relative error, domain, numerical bound, and its effort: ``n_evaluations``, ``n_starts``,
        ``n_ascended``).
    sup_upper : float or None
        A certified *upper* bound on the class supremum of this release (:func:`dpkit.queries.supremum_upper.sup_upper`:
        the kernel MMD between the data and the synthetic database with its rounding bound, or the branch and
        bound's where d ≤ 8 and it is smaller), so ``sup_abs ≤ sup_c |E(c)| ≤ sup_upper`` up to ``sup_abs``'s
        numerical bound; recorded with ``sup_abs`` and ``None`` where that is, or where the argument does not hold
        (a released answer function: ``supremum_upper["reason"]`` says why).
    supremum_upper : dict or None
        The bound's record (:meth:`~dpkit.queries.supremum_upper.SupremumUpper.as_dict`: which bound, the MMD's
        estimate and rounding bound, the data side, the self-term's cache).
    centre_abs : float or None
        The worst single centre of the workload: ``max |K̄_D̂(c) − K̄_D(c)|`` over its ``Q·J`` centres ``c``
        (the kernel means of the synthetic database and of the data that the answers contract with ``α``);
        ``None`` for a release of answers only (``centre_note`` says why).
    centre_bound : float or None
        Proven bound on the numerical error of ``centre_abs`` (both kernel means' bounds).
    centre_note : str
        Why ``centre_abs`` is ``None`` (empty otherwise).
    seeds : dict
        The streams that produced the record, so that a reader can re-create the release: ``"workload"``
        (the repetition's workload) and ``"method"`` (the stream given to ``method.release``), each
        ``{"entropy": [...], "spawn_key": [...], "pool_size": int}`` with the entropy and spawn key as
        32-bit words; ``numpy.random.SeedSequence(**seeds["method"])`` is the method's stream
        (``"method"`` is ``None`` for a release recorded without its stream). ``"seeding"`` names the
        scheme (:data:`~dpkit.experiments.records.SEEDING`).
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
    centre_abs: float | None = None
    centre_bound: float | None = None
    centre_note: str = ""
    seeds: dict[str, Any] | None = None
    sup_upper: float | None = None
    supremum_upper: dict[str, Any] | None = None

    def as_dict(self) -> dict[str, Any]:
        """A plain dict (for DataFrames and JSON)."""
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


@dataclass(frozen=True, kw_only=True, eq=False)
class Repetition:
    """One repetition's shared inputs: its workload (drawn from ``workload_seed``), the exact answers and
    the stream of each method by name (:func:`~dpkit.experiments.records.method_seed`)."""

    index: int
    workload: GaussianKernelWorkload
    truth: Truth
    workload_seed: np.random.SeedSequence
    streams: dict[str, np.random.SeedSequence]

    def generator(self, name: str) -> np.random.Generator:
        """A fresh generator on the stream of the method named ``name``."""
        return np.random.default_rng(self.streams[name])


#: the seeding scheme of the runner (a checkpoint's identity: repetitions of another scheme are never reused)
SEEDING = "name-keyed-1"

#: ``callback(rep_index, reps)`` called after each finished repetition of :func:`run_cell`
RepetitionCallback = Callable[[int, int], None]
#: the callback :func:`on_repetitions` installs for the runs made within its block (``None`` outside one)
ON_REPETITION: ContextVar[RepetitionCallback | None] = ContextVar("dpkit_on_repetition", default=None)


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
    token = ON_REPETITION.set(callback)
    try:
        yield
    finally:
        ON_REPETITION.reset(token)


def cell_seed(seed: int, dataset: str, sigma: float) -> np.random.SeedSequence:
    """The SeedSequence of one table cell, from the run seed and the cell's *values*.

    Because it does not depend on where the cell sits in a list of data sets or σ's, a table
    computed in one run and the same table split over many batch runs give identical numbers.
    """
    seed = check_seed(seed)
    return np.random.SeedSequence([seed, zlib.crc32(str(dataset).upper().encode()), int(round(float(sigma) * 1000))])


def shared_seed(seed: int, dataset: str) -> np.random.SeedSequence:
    """The SeedSequence of the σ-independent releases of one data set in :func:`run_cells`.

    Its entropy is the run seed and a hash of ``"shared:" + dataset`` (two words), so it differs from
    every :func:`cell_seed` (three words, the second a hash of the data set's name alone) and from
    their descendants.
    """
    return np.random.SeedSequence([check_seed(seed), zlib.crc32(("shared:" + str(dataset).upper()).encode())])


def width_independent(method: Method, sigmas: Sequence[float]) -> bool:
    """True when ``method`` releases the same way for every σ in ``sigmas``: it does not answer the
    workload directly and ``method.at_width(σ)`` is the method itself (the protocol's default for
    methods without a width)."""
    return not getattr(method, "needs_workload", False) and all(method.at_width(float(s)) is method for s in sigmas)


#: the spawn-key word after a repetition's key that starts the methods' streams (the workload's is ``0``)
_METHOD_BRANCH = 1


def _name_digest(name: str) -> bytes:
    """The 16 bytes of a method name that key its stream (the first half of its SHA-256)."""
    return hashlib.sha256(name.encode("utf-8")).digest()[:16]


def name_words(names: Iterable[str]) -> dict[str, tuple[int, ...]]:
    """The stream words of each method name: the first 128 bits of the SHA-256 of its UTF-8 bytes, as four
    32-bit words.

    Raises
    ------
    ValueError
        If two names get the same words (naming both), so that two methods never share a stream.
    """
    out: dict[str, tuple[int, ...]] = {}
    seen: dict[tuple[int, ...], str] = {}
    for name in names:
        digest = _name_digest(str(name))
        words = tuple(int.from_bytes(digest[k:k + 4], "little") for k in range(0, 16, 4))
        if words in seen and seen[words] != name:
            raise ValueError(f"methods {seen[words]!r} and {name!r} hash to the same stream words {words}; "
                             "rename one of them")
        seen[words] = str(name)
        out[str(name)] = words
    return out


def workload_seed(rep_seed: np.random.SeedSequence) -> np.random.SeedSequence:
    """The workload's stream of a repetition: the first child of ``rep_seed`` (spawn-key word ``0``).

    Made without :meth:`~numpy.random.SeedSequence.spawn` (which counts the children it hands out), so the
    same repetition seed gives the same workload however often it is asked for; for a fresh ``rep_seed`` it
    is ``rep_seed.spawn(1)[0]`` (the workload of every earlier version of the runner).
    """
    return np.random.SeedSequence(rep_seed.entropy, spawn_key=(*rep_seed.spawn_key, 0), pool_size=rep_seed.pool_size)


def method_seed(rep_seed: np.random.SeedSequence, name: str, words: tuple[int, ...] | None = None) -> np.random.SeedSequence:
    """The stream of the method named ``name`` in the repetition seeded by ``rep_seed``, keyed by *values*.

    Its entropy is ``rep_seed``'s (the run seed and the cell's values for a table cell, :func:`cell_seed` /
    :func:`shared_seed`; whatever :func:`run_cell`'s ``rng`` gave otherwise) and its spawn key is
    ``rep_seed``'s followed by ``1`` and the four :func:`name_words` of the name (``words``, if already
    computed). So a method's stream depends on the run seed, the data set, σ (for the width-dependent
    methods), the repetition and its own name, never on which other methods run or in which order; it
    differs from the workload's stream (spawn-key word ``0``) and from every child ``rep_seed.spawn`` gives.
    """
    if words is None:
        words = name_words([name])[str(name)]
    return np.random.SeedSequence(rep_seed.entropy, spawn_key=(*rep_seed.spawn_key, _METHOD_BRANCH, *words),
                                  pool_size=rep_seed.pool_size)


def _uint32_words(value: Any) -> list[int]:
    """An entropy or spawn key as the 32-bit words :class:`~numpy.random.SeedSequence` mixes (little-endian
    words of each integer, concatenated); the sequence made from the words has the same state."""
    if isinstance(value, (int, np.integer)):
        n = int(value)
        if n < 0:
            raise ValueError(f"seed words must be non-negative; got {n}")
        out = [n & 0xFFFFFFFF]
        n >>= 32
        while n:
            out.append(n & 0xFFFFFFFF)
            n >>= 32
        return out
    return [w for v in value for w in _uint32_words(v)]


def seed_record(ss: np.random.SeedSequence) -> dict[str, Any]:
    """``ss`` as plain ints (JSON-able): ``numpy.random.SeedSequence(**seed_record(ss))`` has the same state."""
    return {"entropy": _uint32_words(ss.entropy), "spawn_key": _uint32_words(ss.spawn_key), "pool_size": int(ss.pool_size)}


def repetitions(X: np.ndarray, *, sigma: float, names: Sequence[str], reps: int, n_queries: int = 10_000, J: int = 10,
                rng: RNGLike = 0, progress: bool = False) -> Iterator[Repetition]:
    """The repetition skeleton (module docstring): workload, exact answers and the streams of the methods
    ``names``."""
    from tqdm.auto import tqdm

    sigma = check_positive_finite(sigma, name="sigma")
    reps = check_positive_int(reps, name="reps")
    n_queries = check_positive_int(n_queries, name="n_queries")
    J = check_positive_int(J, name="J")
    X = np.asarray(X, dtype=float)
    words = name_words(names)
    for i, seed in enumerate(tqdm(spawn_seeds(rng, reps), disable=not progress, desc=f"σ={sigma:g}")):
        yield repetition_at(X, seed, i, sigma=sigma, names=words, n_queries=n_queries, J=J)


def repetition_at(X: np.ndarray, seed: np.random.SeedSequence, index: int, *, sigma: float,
                  names: Mapping[str, tuple[int, ...]], n_queries: int, J: int) -> Repetition:
    """Repetition ``index`` from its own seed (child ``index`` of the cell's sequence): it depends on no other.

    ``names`` maps each method's name to its :func:`name_words`.
    """
    w_seed = workload_seed(seed)
    wl = GaussianKernelWorkload.generate(n_queries, X.shape[1], J=J, sigma=sigma, rng=np.random.default_rng(w_seed))
    return Repetition(index=index, workload=wl, truth=exact_truth(wl, X), workload_seed=w_seed,
                      streams={name: method_seed(seed, name, words) for name, words in names.items()})


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


def check_supremum(supremum: str | None) -> str | None:
    """``supremum`` if it is one of :data:`dpkit.queries.supremum.DOMAINS` (where the class supremum searches
    centres) or ``None`` (no class supremum).

    Parameters
    ----------
    supremum : str or None
        Where the class supremum searches centres.

    Returns
    -------
    str or None
        ``supremum``.

    Raises
    ------
    ValueError
        Naming ``supremum`` and the allowed values.
    """
    if supremum is not None and supremum not in DOMAINS:
        raise ValueError(f"supremum must be one of {DOMAINS} or None; got {supremum!r}")
    return supremum


def supremum_seed(name: str, rep: int, sigma: float) -> np.random.SeedSequence:
    """The stream of the class-supremum search of one record, keyed by its values (method name, repetition, σ).

    It only draws the search's random starts, never a release, so the releases do not depend on it.
    """
    return np.random.SeedSequence([zlib.crc32(b"supremum"), zlib.crc32(str(name).encode()), int(rep),
                                   int(round(float(sigma) * 1000))])


def _largest_first(values: np.ndarray, k: int) -> np.ndarray:
    """The indices of the ``k`` largest ``values``, largest first, ties in index order: the first ``k`` of
    ``np.argsort(-values, kind="stable")``, without sorting the whole array."""
    neg = -values
    if k >= neg.size:
        return np.argsort(neg, kind="stable")[:k]
    kth = np.partition(neg, k - 1)[k - 1]
    if not np.isfinite(kth):  # NaNs (or infinities) among the first k: sort everything, as argsort orders them
        return np.argsort(neg, kind="stable")[:k]
    candidates = np.flatnonzero(neg <= kth)  # every value up to the k-th, ties included, in index order
    return candidates[np.argsort(neg[candidates], kind="stable")][:k]


def _supremum(name: str, rel: Release[Any], X: np.ndarray, est: np.ndarray, *, rep: Repetition, sigma: float,
              domain: str, centre_errors: np.ndarray | None = None) -> ClassSupremum:
    """The class supremum of one release (:func:`~dpkit.queries.supremum.class_supremum`), started from the
    workload's worst single centres (``centre_errors``, (Q, J): ``|K̄_D̂(c) − K̄_D(c)|``, for a synthetic
    database; so its result is at least the record's ``centre_abs``, up to the numerical bounds, and on the
    search's low-rank path up to its surrogate's bound) or else from the centres of the workload's worst
    queries, among its other starts.

    With ``domain="space"`` a released answer function is searched in the cube: it need not decay outside it, so
    its search over all of R^d is not localised (:func:`~dpkit.queries.supremum.class_supremum`). Its witness is
    still a certified lower bound on the supremum over R^d (the cube is part of it), and the record names the domain
    searched (``ClassSupremum.domain``)."""
    from dpkit.queries.supremum import AnswerFunction, class_supremum, resolve_released

    J, d = rep.workload.centres.shape[1:]
    if domain == "space" and isinstance(resolve_released(rel, d), AnswerFunction):
        domain = "cube"
    if centre_errors is not None:
        flat = centre_errors.ravel()
        worst = _largest_first(flat, SUPREMUM_WORKLOAD_QUERIES * J)
        centres, scores = rep.workload.centres.reshape(-1, d)[worst], flat[worst]
    else:
        err = np.abs(est - rep.truth.answers)
        worst = _largest_first(err, SUPREMUM_WORKLOAD_QUERIES)
        centres = rep.workload.centres[worst].reshape(-1, d)
        scores = np.repeat(err[worst], J)
    return class_supremum(X, rel, sigma, rng=np.random.default_rng(supremum_seed(name, rep.index, sigma)),
                          domain=domain, workload_centres=centres, workload_scores=scores)


def _supremum_upper(rel: Release[Any], X: np.ndarray, *, sigma: float, found: ClassSupremum) -> dict[str, Any]:
    """The certified upper bound on the class supremum of one release (:func:`~dpkit.queries.supremum_upper.sup_upper`:
    the MMD with its rounding bound, the data's self-term from its cache, the low-rank embedding above
    :data:`~dpkit.queries.supremum.LOWRANK_ABOVE` rows, the branch and bound's bound where d ≤ 8 and cheap), over
    the search's domain; not applicable where the search is not, with the search's reason. It draws no random
    number: the release, the thesis metric and the search do not depend on it. What depends on the caches' state
    (whether the self-term was computed here, the kernel values that took) is left out, so a record is the same
    whichever ran first."""
    from dpkit.queries.supremum_upper import sup_upper

    if not found.applicable:
        return {"applicable": False, "reason": found.reason, "upper": None}
    out = sup_upper(X, rel, sigma, domain=found.domain, initial=found).as_dict()
    for k in ("self_cached", "n_kernel_values"):
        out.pop(k)
    return out


def record_release(name: str, rel: Release[Any], seconds: float, *, rep: Repetition, sigma: float,
                   X: np.ndarray | None = None, supremum: str | None = None,
                   stream: np.random.SeedSequence | None = None) -> ReleaseRecord:
    """Score one method's release on one repetition: the :class:`~dpkit.experiments.records.ReleaseRecord` the
    runner keeps.

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
        over centres in the cube, or anywhere; ``sup_abs`` and ``supremum`` of the record) and its certified upper
        bound (:func:`~dpkit.queries.supremum_upper.sup_upper`; ``sup_upper`` and ``supremum_upper``), which draws
        no random number.
    stream : SeedSequence, optional
        The stream the release was made with (the record's ``seeds["method"]``); default
        ``rep.streams[name]`` when the repetition has a stream of that name.

    Returns
    -------
    ReleaseRecord
    """
    centre_abs = centre_bound = centre_errors = None
    if rel.answers is not None:
        est = np.asarray(rel.answers, dtype=float)
        bound = rep.truth.error_bound
        centre_note = "released answers to the workload only: no kernel mean at a single centre"
    else:
        syn = check_released_database(rel.synthetic, name=f"{name}'s release.synthetic")
        est, info = answer_synthetic(rep.workload, syn.points, syn.weights, return_info=True)
        bound = rep.truth.error_bound + float(info["error_bound"]) * float(np.max(np.abs(est), initial=0.0))
        centre_errors, centre_bound = _centre_errors(info["kernel_means"], float(info["error_bound"]), rep.truth)
        centre_abs = float(np.max(centre_errors, initial=0.0))
        centre_note = ""
    err = errors_from_answers(est, rep.truth.answers)
    lp = getattr(rel.diagnostics, "lp", None)
    eps, dl = rel.spent
    sup = upper = None
    if supremum is not None:
        if X is None:
            raise ValueError("record_release: supremum needs the data X")
        found = _supremum(name, rel, X, est, rep=rep, sigma=sigma, domain=supremum, centre_errors=centre_errors)
        sup = found.as_dict()
        upper = _supremum_upper(rel, X, sigma=sigma, found=found)
    return ReleaseRecord(
        rep=rep.index, method=name, privacy=rel.privacy, sigma=float(sigma), abs=err.abs, rel=err.rel,
        time_s=seconds + float(rel.timings.get("truth", 0.0)), timings=dict(rel.timings),
        support_size=rel.support_size, eps_spent=eps, delta_spent=dl, error_bound=bound, params=dict(rel.params),
        ledger=rel.ledger, lp_status=None if lp is None else lp.get("status"),
        sup_abs=None if sup is None else sup["sup_abs"], supremum=sup,
        centre_abs=centre_abs, centre_bound=centre_bound, centre_note=centre_note,
        seeds=_record_seeds(rep, stream if stream is not None else rep.streams.get(name)),
        sup_upper=None if upper is None else upper["upper"], supremum_upper=upper,
    )


def _centre_errors(synthetic_means: np.ndarray, synthetic_rel_bound: float, truth: Truth) -> tuple[np.ndarray, float]:
    """``|K̄_D̂(c) − K̄_D(c)|`` at the workload's centres, (Q, J), and a bound on the numerical error of each,
    from the kernel means the answers were contracted from (the synthetic side's relative bound times its
    largest mean, plus the data side's absolute bound); the record's ``centre_abs`` is their maximum.

    The thesis metric's worst query error is at most this: a query's error ``Σ_j α_j E(c_j)`` is an average
    of its centres' errors (``α`` on the simplex). The class supremum over the cube is at least this (every
    workload centre lies in the cube), up to both numerical bounds.
    """
    diff = np.abs(synthetic_means - truth.centre_means)
    bound = truth.centre_bound + synthetic_rel_bound * float(np.max(np.abs(synthetic_means), initial=0.0))
    return diff, float(bound)


def _record_seeds(rep: Repetition, stream: np.random.SeedSequence | None) -> dict[str, Any]:
    """The record's ``seeds`` (:class:`~dpkit.experiments.records.ReleaseRecord`)."""
    return {"seeding": SEEDING, "workload": seed_record(rep.workload_seed),
            "method": None if stream is None else seed_record(stream)}


def timed_release(method: Method, X: np.ndarray, g: np.random.Generator,
                  workload: GaussianKernelWorkload | None = None) -> tuple[Release[Any], float]:
    """``method.release`` and its wall time (the ``time_s`` of a record).

    BLAS and LAPACK run on one thread meanwhile (:func:`~dpkit.core.threads.one_blas_thread`), as in a batch task's
    thread share of one, also for an entrant whose own ``release`` does not hold them: a threaded BLAS splits its sums
    by its thread count, so a notebook using every core would otherwise release other bits than the batch.
    """
    t0 = time.perf_counter()
    rel = one_blas_thread(method.release)(X, rng=g, workload=workload)
    return rel, time.perf_counter() - t0
