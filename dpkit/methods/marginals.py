"""Independent per-attribute DP fit, sampled independently (the first synthetic database a reviewer tries).

Two variants (``kind``), each under replace-one with public n:

1. ``"histogram"``: per attribute a histogram on a public grid of ``bins`` cells (L1 sensitivity 2d/n, L2 √(2d)/n);
   Laplace (ε-DP) or the analytic Gaussian; negative cells set to 0 and renormalised; rows drawn cell by cell,
   uniformly inside.
2. ``"moments"``: per attribute a private mean and second moment; rows x_i ~ N(μ_i, v_i) clipped to [-1, 1].
   ``accounting="pld"`` (default) calibrates the two releases jointly (:mod:`dpkit.core.accountant`), ``"split"``
   gives each (ε/2, δ/2).

The synthetic database has ``m`` i.i.d. rows (weights 1/m). An independent-product model misses every correlation,
so its error on kernel queries shows what dependence is worth.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from dpkit.core.accountant import Step, check_accounting
from dpkit.core.accounting import Ledger, ledger_for
from dpkit.core.rng import RNGLike, spawn
from dpkit.core.validation import check_budget_fields, check_choice, check_in_unit_cube, check_positive_ints
from dpkit.mechanisms.vector_release import (
    Planned,
    Share,
    noisy_release,
    planned_release,
    release_plan,
    spend_plan,
    split_plan,
)
from dpkit.methods._discrete import cell_cdf, grid_codes, uniform_in_cells
from dpkit.queries.release import MethodBase, Timer
from dpkit.queries.synthetic import WeightedDatabase

__all__ = ["IndependentMarginals", "MarginalStats"]


@dataclass(frozen=True, kw_only=True, eq=False)
class MarginalStats:
    """The released statistics (``Release.diagnostics``): noisy histograms ``hist`` (d, bins), or
    noisy means and second moments (``mean``, ``second``, each (d,))."""

    hist: np.ndarray | None = None
    mean: np.ndarray | None = None
    second: np.ndarray | None = None


@dataclass(frozen=True, kw_only=True)
class IndependentMarginals(MethodBase):
    """Per-attribute DP fit, attributes sampled independently.

    Parameters
    ----------
    epsilon, delta : float
        Total budget (``epsilon=math.inf``: the exact marginals, a reference).
    kind : {"histogram", "moments"}
    bins : int
        Public cells per attribute (histogram variant).
    m : int
        Rows of the synthetic database.
    accounting : {"pld", "split"}
        How the moments' two releases share (ε, δ) (module docstring); recorded in the release's params and ledger.
    """

    epsilon: float
    delta: float = 0.0
    kind: str = "histogram"
    bins: int = 16
    m: int = 2000
    accounting: str = "pld"

    def __post_init__(self) -> None:
        check_budget_fields(self, allow_inf=True)
        check_choice(self.kind, name="kind", choices=("histogram", "moments"))
        check_accounting(self.accounting, allowed=("pld", "split"))
        check_positive_ints(self, "bins", "m")

    @property
    def name(self) -> str:
        return f"marginals-{self.kind}"

    def measure(self, X: np.ndarray, *, rng: RNGLike = None, ledger: Ledger | None = None,
                noise_factor: float | None = None) -> MarginalStats:
        """The released statistics only (no sampling), spent through ``ledger`` (a fresh one if omitted).

        ``noise_factor``: these marginals are one part of a caller's composition (a method's ``accounting="pld"``
        with marginal candidates): every noise of :meth:`noise` times the factor, and nothing spent here (the caller
        spends the whole composition first). Needs δ > 0 and a finite ε (a ValueError otherwise).
        """
        X = check_in_unit_cube(X, name="X")
        n, d = X.shape
        if noise_factor is not None and not (self.delta > 0 and math.isfinite(self.epsilon)):
            raise ValueError(f"noise_factor needs delta > 0 and a finite epsilon (a part of an (epsilon, delta) "
                             f"composition); got epsilon = {self.epsilon:g}, delta = {self.delta:g}")
        # the caller of a composition spent it already: the draws go through a ledger of their own, never spent
        led = ledger_for(ledger if noise_factor is None else None, self.epsilon, self.delta, self.name)
        g1, g2 = spawn(rng, 2)
        if self.kind == "histogram":
            k = grid_codes(X, self.bins)
            H = np.zeros((d, self.bins))
            for i in range(d):
                H[i] = np.bincount(k[:, i], minlength=self.bins) / n
            if noise_factor is not None:
                return MarginalStats(hist=planned_release(H, self.noise(n, d, noise_factor)[0], rng=g1, ledger=led,
                                                          accounting="pld"))
            Hn = noisy_release(H, epsilon=self.epsilon, delta=self.delta, l1=2.0 * d / n,
                               l2=math.sqrt(2.0 * d) / n, rng=g1, ledger=led, name="histograms", bins=self.bins)
            return MarginalStats(hist=Hn)
        accounting = self.accounting
        if noise_factor is None:
            plan = release_plan(self.moment_shares(n, d), epsilon=self.epsilon, delta=self.delta,
                                accounting=self.accounting)
            spend_plan(plan, epsilon=self.epsilon, delta=self.delta, accounting=self.accounting, ledger=led,
                       name=self.name)
        else:
            plan, accounting = self.noise(n, d, noise_factor), "pld"
        mu = planned_release(X.mean(axis=0), plan[0], rng=g1, ledger=led, accounting=accounting)
        s = planned_release((X * X).mean(axis=0), plan[1], rng=g2, ledger=led, accounting=accounting)
        return MarginalStats(mean=mu, second=s)

    def noise(self, n: int, d: int, factor: float = 1.0) -> list[Planned]:
        """The releases' noise under the method's accounting, times ``factor``: the histograms (one release at
        (ε, δ), Laplace or the analytic Gaussian as :func:`~dpkit.mechanisms.vector_release.noisy_release` chooses)
        or the moments' plan. A method that composes these marginals with its own measurements scales them by its
        factor (:meth:`steps`, ``measure(..., noise_factor=...)``)."""
        if self.kind == "histogram":
            plan = split_plan([Share("histograms", self.epsilon, self.delta, 2.0 * d / n, math.sqrt(2.0 * d) / n)])
        else:
            plan = release_plan(self.moment_shares(n, d), epsilon=self.epsilon, delta=self.delta,
                                accounting=self.accounting)
        return [Planned(p.share, p.mechanism, p.scale * factor, p.sensitivity) for p in plan]

    def steps(self, n: int, d: int) -> list[Step]:
        """The releases as the accountant's steps (:mod:`dpkit.core.accountant`), at the noise of :meth:`noise`."""
        return [p.step() for p in self.noise(n, d)]

    def releases(self, n: int, d: int, factor: float = 1.0) -> list[dict[str, Any]]:
        """The releases at :meth:`noise` times ``factor``, as a composed ledger spend names them."""
        return [{"name": p.share.name, "mechanism": p.mechanism, "scale": p.scale, "sensitivity": p.sensitivity}
                for p in self.noise(n, d, factor)]

    def moment_shares(self, n: int, d: int) -> list[Share]:
        """The moments' two releases (mean, second moment) with their split shares and sensitivities."""
        e2, d2 = self.epsilon / 2.0, self.delta / 2.0
        return [Share("mean", e2, d2, 2.0 * d / n, 2.0 * math.sqrt(d) / n),
                Share("second_moment", e2, d2, d / n, math.sqrt(d) / n)]

    def synthesize(self, rel: MarginalStats, X: ArrayLike, *, rng: np.random.Generator,
                   timer: Timer) -> tuple[WeightedDatabase, MarginalStats]:
        """Sample an ``m``-row synthetic database from the fitted marginals (:meth:`release` is the
        template of :class:`~dpkit.queries.release.MethodBase`: measure, then synthesize)."""
        d = np.asarray(X).shape[1]
        with timer("sample"):
            if self.kind == "histogram":
                cdf = cell_cdf(np.clip(rel.hist, 0.0, None))
                u = rng.random((self.m, d))
                cells = np.stack([np.searchsorted(cdf[i], u[:, i], side="right") for i in range(d)], axis=1)
                cells = np.minimum(cells, self.bins - 1)
                pts = uniform_in_cells(cells, self.bins, rng)
            else:
                mu = np.clip(rel.mean, -1.0, 1.0)
                var = np.maximum(rel.second - mu**2, 1e-6)
                pts = np.clip(mu + rng.standard_normal((self.m, d)) * np.sqrt(var), -1.0, 1.0)
        return WeightedDatabase.equally_weighted(pts), rel

    def release_params(self, stats: MarginalStats, X: ArrayLike, ledger: Ledger) -> dict[str, Any]:
        """The release's ``params``: the method's parameters."""
        return {"method": self.name, "epsilon": self.epsilon, "delta": self.delta, "kind": self.kind,
                "bins": self.bins, "m": self.m,
                **({"accounting": self.accounting} if self.kind == "moments" and self.delta > 0 else {})}
