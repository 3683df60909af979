"""Candidate sources: the finite sets of points that :class:`~dpkit.methods.MWEM` and
:class:`~dpkit.methods.CandidateLP` re-weight.

A source is a frozen parameter object a method takes as its ``candidates``; :meth:`CandidateSource.draw` returns C
points of [-1, 1]^d given the data, the budget share the method gives it, its ledger and a generator:
:class:`UniformCandidates` (free), :class:`GaussianCandidates` (a DP Gaussian fit, charged) and
:class:`MarginalCandidates` (per-attribute histograms, charged).

>>> import math
>>> from dpkit.methods import GaussianFit
>>> GaussianCandidates(fit=GaussianFit(epsilon=math.inf, method="psi", k=3)).name
'gauss-psi'
"""
from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from dataclasses import dataclass, fields, replace
from typing import Any, ClassVar

import numpy as np

from dpkit.core.accounting import Ledger
from dpkit.core.rng import spawn
from dpkit.core.validation import check_choice, check_instance
from dpkit.methods.gaussian_fit import GaussianFit, sample_gaussian
from dpkit.methods.marginals import IndependentMarginals

__all__ = ["CandidateSource", "UniformCandidates", "GaussianCandidates", "MarginalCandidates", "candidate_source",
           "deprecated_options"]


class CandidateSource:
    """Defaults of the candidate sources (module docstring).

    ``kind`` names the source in a release's ``params``; ``charged`` says whether drawing spends budget
    (a data-independent source spends none, and the method keeps its whole budget).
    """

    kind: ClassVar[str] = "source"
    charged: ClassVar[bool] = True

    @property
    def name(self) -> str:
        """The source's part of the method's name (``lp-<name>-cands``)."""
        return self.kind

    def draw(self, X: np.ndarray, C: int, *, epsilon: float, delta: float, ledger: Ledger,
             rng: np.random.Generator) -> np.ndarray:  # pragma: no cover - every source implements it
        """``C`` points of [-1, 1]^d drawn for the data ``X`` at (``epsilon``, ``delta``), spent through ``ledger``."""
        raise NotImplementedError(f"{type(self).__name__} does not implement draw")

    def check_budget(self, n: int, d: int, *, epsilon: float, delta: float) -> None:
        """Refuse, before anything is spent, a budget too small for this source on n rows in d dimensions
        (a ``ValueError``; default: every budget is usable)."""

    def audit_step(self, *, epsilon: float, delta: float) -> Callable[[np.ndarray, np.random.Generator], Any] | None:
        """The private measurement behind the candidates at (``epsilon``, ``delta``), for the audit gate
        (:mod:`dpkit.evaluation.gate`), or None where none is exposed."""
        return None


@dataclass(frozen=True, kw_only=True)
class UniformCandidates(CandidateSource):
    """C i.i.d. uniform points of [-1, 1]^d, drawn from the run's randomness: independent of the data, no privacy
    cost. In high d they cover the data poorly."""

    kind: ClassVar[str] = "uniform"
    charged: ClassVar[bool] = False

    def draw(self, X: np.ndarray, C: int, *, epsilon: float, delta: float, ledger: Ledger,
             rng: np.random.Generator) -> np.ndarray:
        """``C`` uniform points of the cube (the budget and the ledger are not used)."""
        return rng.uniform(-1.0, 1.0, size=(C, X.shape[1]))


@dataclass(frozen=True, kw_only=True)
class GaussianCandidates(CandidateSource):
    """C draws from a DP Gaussian fit N(μ̃, Σ̃) clipped to the cube.

    Parameters
    ----------
    fit : GaussianFit
        The fit's route and parameters (``method``, ``k``, ``n_iter``). Its budget is the share the method gives
        its candidates, set when they are drawn (:meth:`fit_at`), so the fit is given without one of its own:
        ``epsilon=math.inf`` (and δ = 0).
    """

    fit: GaussianFit = GaussianFit(epsilon=math.inf)
    kind: ClassVar[str] = "gaussian"

    def __post_init__(self) -> None:
        check_instance(self.fit, name="fit", types=(GaussianFit,))
        if not (math.isinf(self.fit.epsilon) and self.fit.delta == 0.0):
            raise ValueError("fit must be given without a budget: the method that draws the candidates sets it to "
                             "their share of its own; allowed: fit.epsilon = inf, fit.delta = 0; got "
                             f"fit.epsilon = {self.fit.epsilon:g}, fit.delta = {self.fit.delta:g}")

    @property
    def name(self) -> str:
        """The fit's name (``gauss-analyze-gauss``, ``gauss-psi``)."""
        return self.fit.name

    def fit_at(self, epsilon: float, delta: float) -> GaussianFit:
        """The fit at (``epsilon``, ``delta``)."""
        return replace(self.fit, epsilon=epsilon, delta=delta)

    def draw(self, X: np.ndarray, C: int, *, epsilon: float, delta: float, ledger: Ledger,
             rng: np.random.Generator) -> np.ndarray:
        """Fit (μ̃, Σ̃) at (``epsilon``, ``delta``) and sample ``C`` points (child streams: fit, sample)."""
        g_fit, g_smp = spawn(rng, 2)
        rel = self.fit_at(epsilon, delta).measure(X, rng=g_fit, ledger=ledger)
        return sample_gaussian(rel.mean, rel.cov, C, rng=g_smp)

    def check_budget(self, n: int, d: int, *, epsilon: float, delta: float) -> None:
        """The fit's own check at (``epsilon``, ``delta``) (:meth:`~dpkit.methods.gaussian_fit.GaussianFit.check_noise`)."""
        self.fit_at(epsilon, delta).check_noise(n, d)

    def audit_step(self, *, epsilon: float, delta: float) -> Callable[[np.ndarray, np.random.Generator], Any]:
        """The fit's released (μ̃, Σ̃) and noisy moments."""
        fit = self.fit_at(epsilon, delta)
        return lambda X, rng: fit.measure(X, rng=rng)


@dataclass(frozen=True, kw_only=True)
class MarginalCandidates(CandidateSource):
    """C draws from the independent per-attribute noisy histograms
    (:class:`~dpkit.methods.IndependentMarginals` with ``kind="histogram"`` and its default grid)."""

    kind: ClassVar[str] = "marginals"

    def draw(self, X: np.ndarray, C: int, *, epsilon: float, delta: float, ledger: Ledger,
             rng: np.random.Generator) -> np.ndarray:
        """Fit the histograms at (``epsilon``, ``delta``) and sample ``C`` rows (one child stream)."""
        (g_fit,) = spawn(rng, 1)
        res = IndependentMarginals(epsilon=epsilon, delta=delta, kind="histogram", m=C).release(X, rng=g_fit,
                                                                                              ledger=ledger)
        return np.asarray(res.synthetic.points)


def candidate_source(kind: str, *, name: str = "candidates", **fit: Any) -> CandidateSource:
    """The source of ``kind`` (one of ``"uniform"``, ``"gaussian"``, ``"marginals"``; ``name`` is the parameter that
    gave it, for the error) with ``fit`` the Gaussian fit's parameters (:class:`~dpkit.methods.GaussianFit`'s
    ``method``, ``k``, ``n_iter``; ``"gaussian"`` only). The methods' deprecated string options map through it."""
    check_choice(kind, name=name, choices=("uniform", "gaussian", "marginals"))
    if fit and kind != "gaussian":
        raise ValueError(f"the Gaussian fit's parameters ({', '.join(sorted(fit))}) apply to {name}='gaussian' only; "
                         f"got {name}={kind!r}")
    if kind == "uniform":
        return UniformCandidates()
    if kind == "marginals":
        return MarginalCandidates()
    return GaussianCandidates(fit=GaussianFit(epsilon=math.inf, **fit))


def deprecated_options(owner: str, given: dict[str, Any], *, name: str, **fit: Any) -> CandidateSource:
    """The source that the deprecated string options ``given`` of ``owner`` stand for (:func:`candidate_source` of
    ``given[name]``, default ``"gaussian"``, and ``fit``), after a ``DeprecationWarning`` that spells the new form."""
    source = candidate_source(given.get(name, "gaussian"), name=name, **fit)
    old = ", ".join(f"{k}={v!r}" for k, v in given.items())
    new = f"{type(source).__name__}()"
    if isinstance(source, GaussianCandidates) and source != GaussianCandidates():
        default = GaussianFit(epsilon=math.inf)
        changed = "".join(f", {f.name}={getattr(source.fit, f.name)!r}" for f in fields(GaussianFit)
                          if getattr(source.fit, f.name) != getattr(default, f.name))
        new = f"GaussianCandidates(fit=GaussianFit(epsilon=math.inf{changed}))"
    warnings.warn(f"{owner}({old}) is deprecated and will be removed in the next release: give candidates={new}",
                  DeprecationWarning, stacklevel=4)
    return source
