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

from dpkit.core.accountant import Step
from dpkit.core.accounting import Ledger
from dpkit.core.rng import spawn
from dpkit.core.validation import check_choice, check_instance
from dpkit.methods.gaussian_fit import GaussianFit, sample_gaussian
from dpkit.methods.marginals import IndependentMarginals
from dpkit.queries.release import Timer

__all__ = ["CandidateSource", "UniformCandidates", "GaussianCandidates", "MarginalCandidates", "candidate_source",
           "deprecated_options"]


class CandidateSource:
    """Defaults of the candidate sources (module docstring).

    ``kind`` names the source in a release's ``params``; ``charged`` says whether drawing spends budget
    (a data-independent source spends none, and the method keeps its whole budget); ``composable`` whether a
    method's ``accounting="pld"`` can compose it with the method's own measurements (:meth:`steps`, and
    :meth:`draw` with a ``noise_factor``).
    """

    kind: ClassVar[str] = "source"
    charged: ClassVar[bool] = True
    composable: ClassVar[bool] = False

    @property
    def name(self) -> str:
        """The source's part of the method's name (``lp-<name>-cands``)."""
        return self.kind

    def draw(self, X: np.ndarray, C: int, *, epsilon: float, delta: float, ledger: Ledger,
             rng: np.random.Generator, noise_factor: float | None = None) -> np.ndarray:  # pragma: no cover
        """``C`` points of [-1, 1]^d drawn for the data ``X`` at (``epsilon``, ``delta``), spent through ``ledger``;
        with a ``noise_factor`` (a composable source only), every noise of :meth:`steps` times it and nothing spent
        (the method spends its whole composition)."""
        raise NotImplementedError(f"{type(self).__name__} does not implement draw")

    def steps(self, n: int, d: int, *, epsilon: float, delta: float) -> list[Step]:
        """The source's measurements at (``epsilon``, ``delta``) on n rows in d dimensions as the accountant's steps
        (:mod:`dpkit.core.accountant`), for a method that composes them with its own (a composable source)."""
        raise NotImplementedError(f"{type(self).__name__} cannot be composed by a method's accounting='pld'")

    def releases(self, n: int, d: int, *, epsilon: float, delta: float, factor: float) -> list[dict[str, Any]]:
        """The source's releases at :meth:`steps`' noise times ``factor``, as a composed ledger spend names them."""
        raise NotImplementedError(f"{type(self).__name__} cannot be composed by a method's accounting='pld'")

    def check_budget(self, n: int, d: int, *, epsilon: float, delta: float) -> None:
        """Refuse, before anything is spent, a budget too small for this source on n rows in d dimensions
        (a ``ValueError``; default: every budget is usable)."""

    def audit_step(self, *, epsilon: float, delta: float, noise_factor: Callable[[int, int], float] | None = None
                   ) -> Callable[[np.ndarray, np.random.Generator], Any] | None:
        """The private measurement behind the candidates at (``epsilon``, ``delta``), for the audit gate
        (:mod:`dpkit.evaluation.gate`), or None where none is exposed; ``noise_factor(n, d)``: the composing method's
        factor on its noise (as :meth:`draw`'s)."""
        return None


@dataclass(frozen=True, kw_only=True)
class UniformCandidates(CandidateSource):
    """C i.i.d. uniform points of [-1, 1]^d, drawn from the run's randomness: independent of the data, no privacy
    cost. In high d they cover the data poorly."""

    kind: ClassVar[str] = "uniform"
    charged: ClassVar[bool] = False
    composable: ClassVar[bool] = True

    def draw(self, X: np.ndarray, C: int, *, epsilon: float, delta: float, ledger: Ledger,
             rng: np.random.Generator, noise_factor: float | None = None) -> np.ndarray:
        """``C`` uniform points of the cube (the budget, the ledger and the factor are not used)."""
        return rng.uniform(-1.0, 1.0, size=(C, X.shape[1]))

    def steps(self, n: int, d: int, *, epsilon: float, delta: float) -> list[Step]:
        """None: the points are independent of the data."""
        return []

    def releases(self, n: int, d: int, *, epsilon: float, delta: float, factor: float) -> list[dict[str, Any]]:
        """None: the points are independent of the data."""
        return []


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
    composable: ClassVar[bool] = True

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
             rng: np.random.Generator, noise_factor: float | None = None) -> np.ndarray:
        """Fit (μ̃, Σ̃) at (``epsilon``, ``delta``) and sample ``C`` points (child streams: fit, sample); a
        ``noise_factor`` goes to the fit's ``measure`` (:meth:`~dpkit.methods.gaussian_fit.GaussianFit.measure`)."""
        g_fit, g_smp = spawn(rng, 2)
        rel = self.fit_at(epsilon, delta).measure(X, rng=g_fit, ledger=ledger, noise_factor=noise_factor)
        return sample_gaussian(rel.mean, rel.cov, C, rng=g_smp)

    def steps(self, n: int, d: int, *, epsilon: float, delta: float) -> list[Step]:
        """The fit's measurements at (``epsilon``, ``delta``) (:meth:`~dpkit.methods.gaussian_fit.GaussianFit.steps`)."""
        return self.fit_at(epsilon, delta).steps(n, d)

    def releases(self, n: int, d: int, *, epsilon: float, delta: float, factor: float) -> list[dict[str, Any]]:
        """The fit's releases (:meth:`~dpkit.methods.gaussian_fit.GaussianFit.releases`)."""
        return self.fit_at(epsilon, delta).releases(n, d, factor)

    def check_budget(self, n: int, d: int, *, epsilon: float, delta: float) -> None:
        """The fit's own check at (``epsilon``, ``delta``) (:meth:`~dpkit.methods.gaussian_fit.GaussianFit.check_noise`)."""
        self.fit_at(epsilon, delta).check_noise(n, d)

    def audit_step(self, *, epsilon: float, delta: float, noise_factor: Callable[[int, int], float] | None = None
                   ) -> Callable[[np.ndarray, np.random.Generator], Any]:
        """The fit's released (μ̃, Σ̃) and noisy moments (at the composing method's factor, if given)."""
        fit = self.fit_at(epsilon, delta)
        if noise_factor is None:
            return lambda X, rng: fit.measure(X, rng=rng)
        return lambda X, rng: fit.measure(X, rng=rng, noise_factor=noise_factor(*np.shape(X)))


@dataclass(frozen=True, kw_only=True)
class MarginalCandidates(CandidateSource):
    """C draws from the independent per-attribute noisy histograms
    (:class:`~dpkit.methods.IndependentMarginals` with ``kind="histogram"`` and its default grid)."""

    kind: ClassVar[str] = "marginals"
    composable: ClassVar[bool] = True

    @staticmethod
    def marginals_at(epsilon: float, delta: float, C: int = 2000) -> IndependentMarginals:
        """The histograms at (``epsilon``, ``delta``), sampling ``C`` rows."""
        return IndependentMarginals(epsilon=epsilon, delta=delta, kind="histogram", m=C)

    def draw(self, X: np.ndarray, C: int, *, epsilon: float, delta: float, ledger: Ledger,
             rng: np.random.Generator, noise_factor: float | None = None) -> np.ndarray:
        """Fit the histograms at (``epsilon``, ``delta``) and sample ``C`` rows (one child stream, split as
        ``release`` splits it: measure, sample); a ``noise_factor`` goes to their ``measure``
        (:meth:`~dpkit.methods.marginals.IndependentMarginals.measure`)."""
        (g_fit,) = spawn(rng, 1)
        marg = self.marginals_at(epsilon, delta, C)
        if noise_factor is None:
            return np.asarray(marg.release(X, rng=g_fit, ledger=ledger).synthetic.points)
        g_measure, g_synth = spawn(g_fit, 2)
        stats = marg.measure(X, rng=g_measure, noise_factor=noise_factor)
        synth, _ = marg.synthesize(stats, X, rng=g_synth, timer=Timer())
        return np.asarray(synth.points)

    def steps(self, n: int, d: int, *, epsilon: float, delta: float) -> list[Step]:
        """The histograms' release at (``epsilon``, ``delta``) (:meth:`~dpkit.methods.marginals.IndependentMarginals.steps`)."""
        return self.marginals_at(epsilon, delta).steps(n, d)

    def releases(self, n: int, d: int, *, epsilon: float, delta: float, factor: float) -> list[dict[str, Any]]:
        """The histograms' release (:meth:`~dpkit.methods.marginals.IndependentMarginals.releases`)."""
        return self.marginals_at(epsilon, delta).releases(n, d, factor)


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
