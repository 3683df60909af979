"""The record types of the Chapter 3 protocol: :class:`RunRecord` and :class:`Repetition`.

* :class:`RunRecord` — one method in one repetition of a table cell: its errors, time, spends, the class
  supremum of its error and the seeds that re-create its release;
* :class:`Repetition` — what a repetition shares: its workload, the exact answers, the methods' streams.

:mod:`dpkit.experiments.records` makes them (its seeds, :func:`~dpkit.experiments.records.repetitions`,
:func:`~dpkit.experiments.records.record_release`) and re-exports both names, as does
:mod:`dpkit.experiments.protocol`.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from dpkit.queries.truth_cache import Truth
from dpkit.queries.workload import GaussianKernelWorkload

__all__ = ["RunRecord", "Repetition"]


@dataclass(frozen=True, kw_only=True)
class RunRecord:
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
