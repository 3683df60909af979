"""The one method protocol: every method that answers the workload releases a :class:`Release`.

A *method* is a frozen keyword-only dataclass whose fields are its parameters, validated on construction, with one
verb::

    release(X, *, rng=None, ledger=None, workload=None) -> Release

``X`` is the private data in [-1, 1]^d (n public); every budget is spent through ``ledger`` (a fresh one holding the
method's (ε, δ) when omitted); ``rng`` seeds every draw (same seed ⇒ same release, bit for bit); methods that answer
the queries directly need the public ``workload``. :meth:`MethodBase.at_width` configures a method for a cell's
kernel width. Privacy classes: ``"ε-DP"``, ``"(ε,δ)-DP"`` and ``"non-private"`` (ε = ∞, never counted as a win).
"""
from __future__ import annotations

import dataclasses
import math
import time
from dataclasses import dataclass
from typing import Any, ClassVar, Generic, Protocol, TypeVar, runtime_checkable

import numpy as np
from numpy.typing import ArrayLike

from dpkit.core.accounting import Ledger, ledger_for
from dpkit.core.rng import RNGLike, spawn
from dpkit.core.threads import one_blas_thread
from dpkit.queries.synthetic import WeightedDatabase
from dpkit.queries.workload import GaussianKernelWorkload

__all__ = [
    "PRIVACY_CLASSES",
    "Release",
    "Method",
    "MethodBase",
    "Timer",
    "privacy_class",
]

#: The privacy classes of the leaderboard, in the order of the thesis's tables.
PRIVACY_CLASSES: tuple[str, ...] = ("ε-DP", "(ε,δ)-DP", "non-private")

D = TypeVar("D")


def privacy_class(epsilon: float, delta: float) -> str:
    """``"non-private"`` for ε = ∞, ``"ε-DP"`` for δ = 0, ``"(ε,δ)-DP"`` otherwise."""
    if math.isinf(epsilon):
        return "non-private"
    return "ε-DP" if delta == 0 else "(ε,δ)-DP"


@dataclass(frozen=True, kw_only=True, eq=False)
class Release(Generic[D]):
    """What every method returns.

    Attributes
    ----------
    method : str
        The method's name (:attr:`MethodBase.name`).
    privacy : str
        Its privacy class (:data:`PRIVACY_CLASSES`) under ``params["neighbouring"]``.
    params : dict
        The method's parameters (its dataclass fields) and the values derived from them during the
        run (schedules, noise scales, sensitivities, sizes); JSON-ready.
    ledger : dict
        :meth:`dpkit.core.accounting.Ledger.to_dict` after the run: every spend with its (ε, δ).
    timings : dict
        Seconds per stage and ``"total"``.
    synthetic : WeightedDatabase or None
        The synthetic database (distinct points with weights), for synthetic-data methods.
    answers : ndarray (Q,) or None
        The released answers to the workload, for methods that answer it directly.
    diagnostics : method-specific, typed
        Released intermediate quantities (noisy moments, noisy mean, LP status, …) for audits and
        diagnostics; quantities computed from the private data without noise are marked private
        in the diagnostics class's docstring and never enter :meth:`to_dict` (which takes the
        diagnostics' own ``to_dict()``, the released quantities only, where it has one).
    """

    method: str
    privacy: str
    params: dict[str, Any]
    ledger: dict[str, Any]
    timings: dict[str, float]
    synthetic: WeightedDatabase | None = None
    answers: np.ndarray | None = None
    diagnostics: D | None = None

    def __post_init__(self) -> None:
        if (self.synthetic is None) == (self.answers is None):
            raise ValueError("a Release carries exactly one of synthetic (a database) or answers (to a workload)")

    @property
    def support_size(self) -> int:
        """Distinct points of the synthetic database (0 for released answers)."""
        return 0 if self.synthetic is None else int(self.synthetic.support_size)

    @property
    def spent(self) -> tuple[float, float]:
        """(ε, δ) spent through the ledger."""
        s = self.ledger.get("spent", {})
        return float(s.get("epsilon", math.nan)), float(s.get("delta", math.nan))

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready record without private quantities: method, privacy, params, ledger, timings, sizes."""
        out: dict[str, Any] = {"method": self.method, "privacy": self.privacy, "params": self.params,
                               "ledger": self.ledger, "timings": self.timings}
        if self.synthetic is not None:
            out["synthetic"] = self.synthetic.to_dict()
        else:
            out["n_answers"] = int(np.asarray(self.answers).shape[0])
        to_dict = getattr(self.diagnostics, "to_dict", None)
        if to_dict is not None:
            out["diagnostics"] = to_dict()
        return out


@runtime_checkable
class Method(Protocol):
    """Structural type of a method (see the module docstring)."""

    epsilon: float
    delta: float

    @property
    def name(self) -> str: ...

    @property
    def privacy(self) -> str: ...

    def at_width(self, sigma: float) -> Method: ...

    def release(self, X: ArrayLike, *, rng: RNGLike = None, ledger: Ledger | None = None,
                workload: GaussianKernelWorkload | None = None) -> Release[Any]: ...


@dataclass(frozen=True, kw_only=True)
class MethodBase:
    """Defaults of the protocol for the methods' dataclasses.

    Subclasses declare ``epsilon`` and ``delta`` fields (or properties), set :attr:`label` and
    either implement :meth:`release` or use its template for methods that release a synthetic
    database: they implement the hooks :meth:`measure` (the private statistics, spent through the
    ledger), :meth:`synthesize` (post-processing them into the synthetic database) and
    :meth:`release_params`. :attr:`needs_workload` is True for methods that answer the queries directly.
    """

    label: ClassVar[str] = "method"
    needs_workload: ClassVar[bool] = False
    #: The timing stage of :meth:`measure` in the template :meth:`release`.
    measure_stage: ClassVar[str] = "release"

    @property
    def name(self) -> str:
        """Display name (tables, figures); the registry may register the method under another name."""
        return self.label

    @property
    def privacy(self) -> str:
        """:func:`privacy_class` of the method's (ε, δ)."""
        return privacy_class(float(getattr(self, "epsilon")), float(getattr(self, "delta", 0.0)))

    def at_width(self, sigma: float) -> MethodBase:
        """This method for workloads of kernel width σ (default: unchanged)."""
        return self

    def fields(self) -> dict[str, Any]:
        """The method's parameters (its dataclass fields) as a plain dict."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}

    @one_blas_thread
    def release(self, X: ArrayLike, *, rng: RNGLike = None, ledger: Ledger | None = None,
                workload: GaussianKernelWorkload | None = None) -> Release[Any]:
        """Measure privately, then synthesize an equally weighted database (the template).

        ``rng`` is split into two streams (:func:`~dpkit.core.rng.spawn`): the first for
        :meth:`measure`, the second for :meth:`synthesize`; every spend goes through ``ledger``
        (a fresh one holding exactly the method's (ε, δ) when omitted).
        """
        tm = Timer()
        g_measure, g_synth = spawn(rng, 2)
        led = ledger_for(ledger, getattr(self, "epsilon"), getattr(self, "delta"), self.name)
        with tm(self.measure_stage):
            stats = self.measure(X, rng=g_measure, ledger=led)
        synth, diagnostics = self.synthesize(stats, X, rng=g_synth, timer=tm)
        return Release(method=self.name, privacy=self.privacy, params=self.release_params(stats, X, led),
                       ledger=led.to_dict(), timings=tm.done(), synthetic=synth, diagnostics=diagnostics)

    def measure(self, X: ArrayLike, *, rng: RNGLike = None, ledger: Ledger | None = None) -> Any:  # pragma: no cover
        """The released statistics (hook of the template :meth:`release`)."""
        raise NotImplementedError(f"{type(self).__name__} implements neither release nor measure")

    def synthesize(self, stats: Any, X: ArrayLike, *, rng: np.random.Generator,
                   timer: Timer) -> tuple[WeightedDatabase, Any]:  # pragma: no cover
        """The synthetic database and the release's diagnostics from the statistics ``stats`` alone (and
        the public shape of ``X``), timing its stages with ``timer`` (hook of the template :meth:`release`)."""
        raise NotImplementedError(f"{type(self).__name__} implements neither release nor synthesize")

    def release_params(self, stats: Any, X: ArrayLike, ledger: Ledger) -> dict[str, Any]:  # pragma: no cover
        """The release's ``params`` (hook of the template :meth:`release`)."""
        raise NotImplementedError(f"{type(self).__name__} implements neither release nor release_params")

    def _require_workload(self, workload: GaussianKernelWorkload | None) -> GaussianKernelWorkload:
        if workload is None:
            raise ValueError(f"{self.name} answers the queries directly: pass workload=<GaussianKernelWorkload>")
        return workload


class Timer:
    """Stage timings: ``with timer("stage"): ...``; :meth:`done` adds ``"total"`` since construction."""

    def __init__(self) -> None:
        self.t0 = time.perf_counter()
        self.timings: dict[str, float] = {}
        self._stage: str | None = None
        self._ts = 0.0

    def __call__(self, stage: str) -> Timer:
        self._stage = stage
        return self

    def __enter__(self) -> Timer:
        self._ts = time.perf_counter()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._stage is None:
            raise RuntimeError("Timer used as a context manager without a stage name: use `with timer('stage'):`")
        self.timings[self._stage] = self.timings.get(self._stage, 0.0) + time.perf_counter() - self._ts

    def done(self) -> dict[str, float]:
        """The stage timings plus ``"total"``."""
        self.timings["total"] = time.perf_counter() - self.t0
        return dict(self.timings)


