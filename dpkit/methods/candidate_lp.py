"""Candidate-set variants of the improved trigonometric mechanism (thesis Alg 9/10 steps 6–8).

:class:`CandidateLP` keeps everything of Alg 9/10 — schedule (Thm 2.4/2.5), discretisation, the first R basis
functions, the moment noise with the correct constants, the LP (:func:`dpkit.mechanisms.trig.solve_l1_lp`) and the
sampling — and swaps the ellipsoid's candidates for a source of :mod:`dpkit.methods.candidates` (``candidates``):

1. :class:`~dpkit.methods.candidates.GaussianCandidates`: draws from a DP Gaussian fit, charged 2ε/3 and δ/2;
2. :class:`~dpkit.methods.candidates.MarginalCandidates`: draws from per-attribute histograms, charged the same;
3. :class:`~dpkit.methods.candidates.UniformCandidates`: uniform points of the cube, free.

With a charged source the moments spend (ε/3, δ/2), as in Alg 9/10, so the comparison isolates the candidate set
(the PSI noise often dominates the covariance: docs/science/trig.md).

Accounting (δ > 0 and a charged source): ``"split"`` is that published split under basic composition; ``"pld"``
(default) keeps its shape and scales the moments' and the candidates' noise by one factor t ≤ 1 so that their exact
composition meets (ε, δ) (:func:`dpkit.core.accountant.plan_factor`, as mechanism II does for its moments and private
PCA; docs/science/accounting.md), spent as one ledger entry. With δ = 0 or free candidates the moments are the one
release and both accountings are the same.
"""
from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import InitVar, dataclass, replace
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from dpkit.core import accountant
from dpkit.core.accounting import Ledger, ledger_for
from dpkit.core.rng import RNGLike, resolve_rng, spawn
from dpkit.core.threads import one_blas_thread
from dpkit.core.validation import (
    check_budget_fields,
    check_choice,
    check_in_unit_cube,
    check_instance,
    check_positive_finite,
    check_positive_ints,
)
from dpkit.mechanisms.trig import (
    MomentNoise,
    basis_indices,
    basis_moments,
    discretise,
    evaluate_basis,
    moment_noise,
    release_moments,
    schedule,
)
from dpkit.mechanisms.trig.base import MAX_NOISY_MOMENT, moment_limit_message
from dpkit.mechanisms.trig.grid import discretise_indices
from dpkit.mechanisms.trig.lp import solve_l1_lp
from dpkit.mechanisms.trig.moments import spend_moments
from dpkit.mechanisms.trig.schedules import Schedule
from dpkit.methods.candidates import CandidateSource, GaussianCandidates, deprecated_options
from dpkit.queries.release import MethodBase, Release, Timer
from dpkit.queries.synthetic import WeightedDatabase
from dpkit.queries.workload import GaussianKernelWorkload

__all__ = ["CandidateLP", "CandidateDiagnostics", "NoisyMoments"]


@dataclass(frozen=True, kw_only=True, eq=False)
class NoisyMoments:
    """Alg 9 steps 1–3 at a variant's share of the budget: b̂, the basis indices, the schedule, the noise."""

    b_hat: np.ndarray
    indices: np.ndarray
    schedule: Schedule
    noise: MomentNoise


@dataclass(frozen=True, kw_only=True, eq=False)
class CandidateDiagnostics:
    """``Release.diagnostics`` of :class:`CandidateLP`: the LP record and the released moments b̂."""

    lp: dict[str, Any]
    noisy_moments: np.ndarray


@dataclass(frozen=True, kw_only=True)
class CandidateLP(MethodBase):
    """Alg 9/10 with another candidate source (module docstring).

    Parameters
    ----------
    epsilon, delta : float
        Total budget; δ = 0 ⇒ Thm 2.4 schedule (mechanism I), δ > 0 ⇒ Thm 2.5 (II).
    K : float
        Smoothness order (K = σ²).
    C, R : int
        Candidates and basis functions.
    candidates : CandidateSource
        Where the C candidates come from (:mod:`dpkit.methods.candidates`; default: Analyze Gauss,
        ``GaussianCandidates()``).
    source, fit_method, k, n_iter
        Deprecated: ``source="gaussian"`` with ``fit_method``, ``k``, ``n_iter`` is
        ``candidates=GaussianCandidates(fit=GaussianFit(epsilon=math.inf, method=fit_method, k=k, n_iter=n_iter))``,
        ``source="marginals"`` is ``MarginalCandidates()``, ``source="uniform"`` is ``UniformCandidates()``.
    accounting : {"pld", "split"}
        δ > 0 with a charged source: the moments and the candidates calibrated jointly (default) or the published
        split (module docstring); recorded in the release's params and its ledger. The source must be composable
        (``candidates.composable``) under ``"pld"`` with δ > 0.

    Raises
    ------
    ValueError
        On construction, for a parameter outside its range, naming it and the allowed values.
    """

    epsilon: float
    delta: float = 0.0
    K: float = 4.0
    C: int = 10_000
    R: int = 50
    candidates: CandidateSource = GaussianCandidates()
    accounting: str = "pld"
    source: InitVar[str | None] = None
    fit_method: InitVar[str | None] = None
    k: InitVar[int | None] = None
    n_iter: InitVar[int | None] = None

    def __post_init__(self, source: str | None, fit_method: str | None, k: int | None, n_iter: int | None) -> None:
        check_budget_fields(self, allow_inf=True)
        check_positive_ints(self, "C", "R")
        check_positive_finite(self.K, name="K")
        old = {n: v for n, v in (("source", source), ("fit_method", fit_method), ("k", k), ("n_iter", n_iter))
               if v is not None}
        if old:
            if fit_method is not None:
                check_choice(fit_method, name="fit_method", choices=("analyze_gauss", "psi"))
            fit = {}
            if old.get("source", "gaussian") == "gaussian":  # the other sources ignored the fit's parameters
                fit = {("method" if n == "fit_method" else n): v for n, v in old.items() if n != "source"}
            object.__setattr__(self, "candidates", deprecated_options("CandidateLP", old, name="source", **fit))
        check_instance(self.candidates, name="candidates", types=(CandidateSource,))
        accountant.check_accounting(self.accounting, allowed=("pld", "split"))
        if self._composed() and not self.candidates.composable:
            raise ValueError(f"accounting='pld' with delta > 0 composes the candidates with the moments, and "
                             f"{type(self.candidates).__name__} cannot be composed; allowed accounting for it: 'split' "
                             "(or candidates GaussianCandidates or UniformCandidates)")

    def at_width(self, sigma: float) -> CandidateLP:
        """This variant for kernel width σ: smoothness K = σ² (as the trigonometric mechanisms)."""
        return replace(self, K=float(sigma) ** 2)

    @property
    def name(self) -> str:
        return f"lp-{self.candidates.name}-cands"

    def audit_steps(self) -> dict[str, Callable[[np.ndarray, np.random.Generator], Any]]:
        """The private measurements that :mod:`dpkit.evaluation.gate` audits: the noisy moments b̂ and, for the
        Gaussian candidates, their fit (μ̃, Σ̃ and its noisy moments) at its share of the budget
        (:meth:`~dpkit.methods.candidates.CandidateSource.audit_step`; the LP and the sampling are post-processing)."""
        steps: dict[str, Callable[[np.ndarray, np.random.Generator], Any]] = {
            "moments": lambda X, rng: self.noisy_moments(X, rng=rng).b_hat}
        _, _, eps_c, d_c = self._split()
        factor = self.composition_factor if self._composed() else None
        step = self.candidates.audit_step(epsilon=eps_c, delta=d_c, noise_factor=factor)
        if step is not None:
            steps["candidate fit"] = step
        return steps

    def _split(self) -> tuple[float, float, float, float]:
        """(ε, δ) of the moments and of the candidates."""
        if not self.candidates.charged:
            return self.epsilon, self.delta, 0.0, 0.0
        return self.epsilon / 3.0, self.delta / 2.0, 2.0 * self.epsilon / 3.0, self.delta - self.delta / 2.0

    def _composed(self) -> bool:
        """Whether ``accounting="pld"`` changes anything: δ > 0, a finite ε and a charged source."""
        return (self.accounting == "pld" and self.delta > 0 and math.isfinite(self.epsilon)
                and self.candidates.charged)

    def _moment_noise(self, n: int) -> MomentNoise:
        """The moments' noise at their split share (ε_m, δ_m) (the published calibration)."""
        eps_m, d_m, _, _ = self._split()
        return moment_noise(n, self.R, epsilon=eps_m, delta=d_m)

    def plan_steps(self, n: int, d: int) -> list[accountant.Step]:
        """The published split's measurements as the accountant's steps: the moments at (ε/3, δ/2) and the
        candidates' at (2ε/3, δ/2)."""
        m = self._moment_noise(n)
        if m.kind == "gaussian":
            step = accountant.gaussian(m.scale / m.l2_sensitivity, name="moments")
        else:
            step = accountant.laplace(m.scale / m.l1_sensitivity, name="moments")
        _, _, eps_c, d_c = self._split()
        return [step] + self.candidates.steps(n, d, epsilon=eps_c, delta=d_c)

    def composition_factor(self, n: int, d: int) -> float:
        """The factor t on the moments' and the candidates' noise (module docstring): 1 unless ``"pld"`` composes."""
        if not self._composed():
            return 1.0
        return accountant.plan_factor(self.plan_steps(n, d), self.epsilon, self.delta)

    def _spend_composed(self, ledger: Ledger, n: int, d: int, t: float, noise: MomentNoise) -> None:
        """The one spend of the whole (ε, δ) under ``"pld"``, naming every release."""
        _, _, eps_c, d_c = self._split()
        ledger.spend(f"{self.name} (composed)", self.epsilon, self.delta, mechanism="composition (accounting=pld)",
                     neighbouring="replace-one", accounting="pld", accounting_factor=t,
                     releases=[{"name": "moments", "mechanism": noise.kind, "scale": noise.scale,
                                "l1_sensitivity": noise.l1_sensitivity, "l2_sensitivity": noise.l2_sensitivity}]
                     + self.candidates.releases(n, d, epsilon=eps_c, delta=d_c, factor=t))

    def noisy_moments(self, X: ArrayLike, *, rng: RNGLike = None, ledger: Ledger | None = None) -> NoisyMoments:
        """Release the noisy moments b̂ (Alg 9 steps 1–3 at this variant's share of the budget), spent
        through ``ledger`` (a fresh one holding the method's budget if omitted). Under ``"pld"`` (δ > 0, a charged
        source) the moments are one part of the composition: their noise is the split's times
        :meth:`composition_factor`, and the spend is the whole composition's (ε, δ)."""
        X = check_in_unit_cube(X, name="X")
        n, d = X.shape
        sch = schedule(n, d, float(self.K), self.delta)
        if self.R > sch.t**d:
            raise ValueError(f"R must be in [1, t^d] = [1, {sch.t}^{d}] for n={n}, d={d}, K={self.K}, "
                             f"delta={self.delta:g} (t from Thm {'2.5' if self.delta > 0 else '2.4'}, smaller for a "
                             f"smaller delta); got R = {self.R}")
        idx = basis_indices(sch.t, d, self.R)
        b = basis_moments(discretise(X, sch.N), idx)
        noise = self._moment_noise(n)
        if noise.scale >= MAX_NOISY_MOMENT:  # before anything is spent: the LP could not use the moments
            raise ValueError(moment_limit_message(self.name, self.epsilon, self.delta,
                                                  f"the moments' noise scale {noise.scale:.3g} (n = {n}, R = {self.R}) reaches"))
        if self._composed():
            t = self.composition_factor(n, d)
            noise = replace(noise, scale=noise.scale * t, rule=f"{noise.rule} x t (accounting=pld)")
            self._spend_composed(ledger_for(ledger, self.epsilon, self.delta, self.name), n, d, t, noise)
        else:
            spend_moments(ledger_for(ledger, self.epsilon, self.delta, self.name), noise, self.R)
        b_hat = release_moments(b, noise, rng=resolve_rng(rng))
        top = float(np.max(np.abs(b_hat)))
        if not top < MAX_NOISY_MOMENT:  # a draw far in the noise's tail
            raise ValueError(moment_limit_message(self.name, self.epsilon, self.delta,
                                                  f"a noisy moment of {top:.3g} (noise scale {noise.scale:.3g}) reaches"))
        return NoisyMoments(b_hat=b_hat, indices=idx, schedule=sch, noise=noise)

    @one_blas_thread
    def release(self, X: ArrayLike, *, rng: RNGLike = None, ledger: Ledger | None = None,
                workload: GaussianKernelWorkload | None = None) -> Release[CandidateDiagnostics]:
        """Run the variant on ``X`` ⊂ [-1, 1]^d (child streams: moments, candidates, sample)."""
        tm = Timer()
        X = check_in_unit_cube(X, name="X")
        g_mom, g_cand, g_smp = spawn(rng, 3)
        eps_m, d_m, eps_c, d_c = self._split()
        led = ledger_for(ledger, self.epsilon, self.delta, self.name)
        composed = self._composed()
        t_factor = self.composition_factor(*X.shape)
        with tm("moments"):  # under "pld" this spends the whole composition, before any noise is drawn
            mom = self.noisy_moments(X, rng=g_mom, ledger=led)
        idx, b_hat, noise = mom.indices, mom.b_hat, mom.noise
        t, N, m = mom.schedule.t, mom.schedule.N, mom.schedule.m
        with tm("candidates"):
            G = self.candidates.draw(X, self.C, epsilon=eps_c, delta=d_c, ledger=led, rng=g_cand,
                                     **({"noise_factor": t_factor} if composed else {}))
            cells = np.unique(discretise_indices(np.clip(G, -1.0, 1.0), N), axis=0)
            points = (2.0 * cells + 1.0 - N) / N
            W = np.ascontiguousarray(evaluate_basis(points, idx).T)
        with tm("lp"):
            sol = solve_l1_lp(W, b_hat)
        with tm("sample"):
            keep = sol.u > 0
            lp_db = WeightedDatabase(points=points[keep], weights=sol.u[keep], m=m)
            synth = lp_db.realise(g_smp)
        params = {
            "method": self.name, "epsilon": self.epsilon, "delta": self.delta, "K": float(self.K), "t": t, "N": N,
            "m": m, "R": self.R, "C": self.C, "n_candidates_distinct": int(points.shape[0]),
            "source": self.candidates.kind,
            "fit_method": self.candidates.fit.method if isinstance(self.candidates, GaussianCandidates) else None,
            "budget_split": {"moments": (eps_m, d_m), "candidates": (eps_c, d_c)},
            **({"accounting": self.accounting, "accounting_factor": t_factor}
               if self.delta > 0 and self.candidates.charged else {}),
            "moment_noise": noise.to_dict(), "support_size": sol.support_size,
        }
        return Release(method=self.name, privacy=self.privacy, params=params, ledger=led.to_dict(), timings=tm.done(),
                       synthetic=synth, diagnostics=CandidateDiagnostics(lp=sol.to_dict(), noisy_moments=b_hat))
