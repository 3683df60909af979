"""MWEM — private multiplicative weights with the exponential mechanism (Hardt, Ligett, McSherry 2012;
baseline B4 of docs/science/baselines.md, the MW rule of D&R Alg 5 / §4.2).

The universe is a finite candidate set of C points of [-1, 1]^d (``candidates``, :mod:`dpkit.methods.candidates`:
uniform points at no privacy cost, or a DP Gaussian or marginal fit charged ``candidate_share`` of the budget). The
query class (``query_class``: fresh kernel queries or the trig basis) has values in [0, 1], replace-one sensitivity at
most 1/n, and never holds the evaluation queries. With the budget ε' split over 2T pure-DP steps, rounds t = 1..T:

1. select q_t by the exponential mechanism on |q(D) − q(A_{t−1})| at ε'/(2T);
2. measure m_t = q_t(D) + Lap(Δ/(ε'/(2T)));
3. multiplicative weights, replaying all measurements ``replays`` times.

Output: the last A (``output="last"``) or the average of the A_t (``"average"``), as ``m`` sampled rows or, with
``m=None``, the distribution over the candidates. Details: ``docs/science/derivations.md``.

Accounting (δ > 0 and charged candidates): ``"split"`` is the published calibration, the candidates at their share and
the 2T rounds by basic composition at pure ε; ``"pld"`` (default) keeps that plan's shape and scales all of its noise
by one factor t ≤ 1 (the fit's noise times t, the rounds' ε per step over t) so that the exact composition of the
fit's measurements, the T selections and the T Laplace measurements meets (ε, δ) (:func:`dpkit.core.accountant.plan_factor`,
docs/science/accounting.md), spent as one ledger entry. With δ = 0 or data-independent candidates the rounds are
pure ε-DP and basic composition is exact: both accountings are the same.
"""
from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from dpkit.core import accountant
from dpkit.core.accounting import Ledger, ledger_for
from dpkit.core.rng import RNGLike, spawn
from dpkit.core.threads import one_blas_thread
from dpkit.core.validation import (
    check_budget_fields,
    check_choice,
    check_in_unit_cube,
    check_instance,
    check_int_in_range,
    check_positive_finite,
    check_positive_ints,
    check_probability,
)
from dpkit.mechanisms.exponential import Exponential
from dpkit.mechanisms.laplace import Laplace
from dpkit.methods._kernels import kernel_query_ranges, kernel_values
from dpkit.methods.candidates import CandidateSource, UniformCandidates, deprecated_options
from dpkit.queries.evaluate import answer_data
from dpkit.queries.release import MethodBase, Release, Timer
from dpkit.queries.synthetic import WeightedDatabase
from dpkit.queries.workload import GaussianKernelWorkload

__all__ = ["MWEM", "MWEMDiagnostics", "mw_update"]


def mw_update(A: np.ndarray, f: np.ndarray, m: float) -> np.ndarray:
    """One multiplicative-weights step A(x) ← A(x) exp(f(x)(m − f(A))/2), renormalised.

    For every budget the noisy answer ``m`` is finite (the Laplace mechanism refuses an infinite scale), but
    from |m| of about 1400 on (a tiny ε) exp overflows to inf or every weight underflows to 0. The step is
    invariant to a constant added to the exponent, so where the direct form is not a finite distribution it is
    computed in log space, shifted so that the largest log-weight is 0: the direct form is kept wherever it
    is finite, and ordinary budgets give the same numbers bit for bit.
    """
    x = f * (m - f @ A) / 2.0
    with np.errstate(over="ignore", under="ignore", invalid="ignore"):
        B = A * np.exp(x)
        total = B.sum()
    if np.isfinite(total) and total > 0:
        B /= total
        return B
    with np.errstate(divide="ignore"):
        y = np.log(A) + x
    y = np.exp(y - y.max())
    return y / y.sum()


@dataclass(frozen=True, kw_only=True, eq=False)
class MWEMDiagnostics:
    """``Release.diagnostics`` of :class:`MWEM`: the released (query index, noisy answer) per round."""

    measurements: list[tuple[int, float]]


@dataclass(frozen=True, kw_only=True)
class MWEM(MethodBase):
    """MWEM over a candidate set (module docstring).

    Parameters
    ----------
    epsilon, delta : float
        Total budget (δ reaches only charged candidates: under ``"split"`` the rounds are pure ε, under ``"pld"``
        the whole composition spends (ε, δ); module docstring).
    sigma : float
        Kernel width of the query class (match the evaluation σ).
    T : int
        Rounds.
    C : int
        Candidate points.
    candidates : CandidateSource
        Where the C candidates come from (:mod:`dpkit.methods.candidates`; default ``UniformCandidates()``). The
        strings ``"uniform"`` and ``"gaussian"`` (``GaussianCandidates()``, Analyze Gauss) are deprecated.
    candidate_share : float
        Share of (ε, δ) charged to the candidates when drawing them spends budget (not the uniform ones).
    query_class : {"kernel", "basis"}
    n_class : int
        Kernel class size.
    J : int
        Centres per class query.
    R, t_basis : int
        Basis class: first R Chebyshev functions with degree bound ``t_basis``.
    replays : int
        MW passes over all measurements per round.
    output : {"last", "average"}
    m : int or None
        Rows of the released synthetic database, drawn from the final distribution (multinomial
        counts, post-processing); ``None`` releases the distribution over P itself.
    accounting : {"pld", "split"}
        δ > 0 with charged candidates: the whole composition calibrated jointly (default) or the published split
        (module docstring); recorded in the release's params and its ledger. The candidates must be composable
        (``candidates.composable``: Gaussian fits, uniform points) under ``"pld"`` with δ > 0.

    Raises
    ------
    ValueError
        On construction, for a parameter outside its range, naming it and the allowed values.
    """

    epsilon: float
    delta: float = 0.0
    sigma: float = 4.0
    T: int = 20
    C: int = 10_000
    candidates: CandidateSource = UniformCandidates()
    candidate_share: float = 1.0 / 3.0
    query_class: str = "kernel"
    n_class: int = 200
    J: int = 10
    R: int = 50
    t_basis: int = 3
    replays: int = 10
    output: str = "last"
    m: int | None = 1000
    accounting: str = "pld"

    def __post_init__(self) -> None:
        check_budget_fields(self, allow_inf=True)
        check_positive_ints(self, "T", "C", "n_class", "J", "R", "t_basis", "replays")
        if isinstance(self.candidates, str):  # the deprecated options (MWEM had no other sources)
            check_choice(self.candidates, name="candidates", choices=("uniform", "gaussian"))
            object.__setattr__(self, "candidates",
                               deprecated_options("MWEM", {"candidates": self.candidates}, name="candidates"))
        check_instance(self.candidates, name="candidates", types=(CandidateSource,))
        check_choice(self.query_class, name="query_class", choices=("kernel", "basis"))
        check_choice(self.output, name="output", choices=("last", "average"))
        if self.m is not None:
            check_int_in_range(self.m, name="m", low=1)
        check_probability(self.candidate_share, name="candidate_share")
        check_positive_finite(self.sigma, name="sigma")
        accountant.check_accounting(self.accounting, allowed=("pld", "split"))
        if self._composed() and not self.candidates.composable:
            raise ValueError(f"accounting='pld' with delta > 0 composes the candidates with MWEM's rounds, and "
                             f"{type(self.candidates).__name__} cannot be composed; allowed accounting for it: 'split' "
                             "(or candidates GaussianCandidates or UniformCandidates)")

    @property
    def name(self) -> str:
        src = self.candidates.name  # the Analyze Gauss candidates keep the name "gaussian" (streams are keyed by it)
        return f"mwem-{'gaussian' if src == 'gauss-analyze-gauss' else src}"

    def at_width(self, sigma: float) -> MWEM:
        """MWEM whose kernel query class has the evaluation width σ."""
        return replace(self, sigma=float(sigma))

    # ------------------------------------------------------------------ pieces
    def _composed(self) -> bool:
        """Whether ``accounting="pld"`` changes anything: δ > 0, a finite ε and charged candidates."""
        return (self.accounting == "pld" and self.delta > 0 and math.isfinite(self.epsilon)
                and self.candidates.charged)

    def _rounds_epsilon(self) -> float:
        """ε of one round's selection and of its measurement in the published split: ε'/(2T)."""
        eps_mw = self.epsilon * (1.0 - float(self.candidate_share)) if self.candidates.charged else self.epsilon
        return eps_mw / (2.0 * self.T)

    def plan_steps(self, n: int, d: int) -> list[accountant.Step]:
        """The published split's measurements as the accountant's steps: the candidates' (at their share), the T
        selections and the T Laplace measurements (noise over sensitivity 1/ε per round) at ε'/(2T) each."""
        eps_c, d_c = self._candidate_budget()
        e = self._rounds_epsilon()
        return self.candidates.steps(n, d, epsilon=eps_c, delta=d_c) + [
            accountant.selection(e, count=self.T, name="select"),
            accountant.laplace(1.0 / e if e > 0 else math.inf, count=self.T, name="measure")]

    def composition_factor(self, n: int, d: int) -> float:
        """The factor t on the whole plan's noise (module docstring): :func:`~dpkit.core.accountant.plan_factor` of
        :meth:`plan_steps` under ``"pld"``, 1 otherwise."""
        if not self._composed():
            return 1.0
        return accountant.plan_factor(self.plan_steps(n, d), self.epsilon, self.delta)

    def _candidate_budget(self) -> tuple[float, float]:
        """(ε, δ) of the candidates: ``candidate_share`` of ε and all of δ (nothing for data-independent ones)."""
        if not self.candidates.charged:
            return 0.0, 0.0
        return self.epsilon * float(self.candidate_share), self.delta

    def audit_steps(self) -> dict[str, Callable[[np.ndarray, np.random.Generator], Any]]:
        """The private measurements that :mod:`dpkit.evaluation.gate` audits: the Gaussian-fit candidates' (μ̃, Σ̃)
        and its noisy moments (:meth:`~dpkit.methods.candidates.CandidateSource.audit_step`; none for the
        data-independent uniform candidates, whose rounds the gate audits through the whole release)."""
        eps_c, d_c = self._candidate_budget()
        factor = self.composition_factor if self._composed() else None
        step = self.candidates.audit_step(epsilon=eps_c, delta=d_c, noise_factor=factor)
        return {} if step is None else {"candidate fit": step}

    def _query_class(self, X: np.ndarray, P: np.ndarray, g: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(F on candidates (Q', C), true answers (Q',), ranges (Q',))."""
        d = X.shape[1]
        if self.query_class == "kernel":
            wl = GaussianKernelWorkload.generate(self.n_class, d, J=self.J, sigma=self.sigma, rng=g)
            F = kernel_values(P, wl.centres, wl.alphas, wl.sigma)
            truth = np.asarray(answer_data(wl, X, precision="float64"), dtype=float)
            return F, truth, kernel_query_ranges(wl.centres, wl.alphas, wl.sigma)
        from dpkit.mechanisms.trig.basis import basis_indices, basis_moments, evaluate_basis

        t = self.t_basis
        R = min(self.R, t**d)
        idx = basis_indices(t, d, R)[1:]  # the constant carries no information
        F = 0.5 * (evaluate_basis(P, idx).T + 1.0)
        truth = 0.5 * (basis_moments(X, idx) + 1.0)
        return F, truth, np.ones(idx.shape[0])

    # ------------------------------------------------------------------ fit
    @one_blas_thread
    def release(self, X: ArrayLike, *, rng: RNGLike = None, ledger: Ledger | None = None,
                workload: GaussianKernelWorkload | None = None) -> Release[MWEMDiagnostics]:
        """Run MWEM on ``X`` ⊂ [-1, 1]^d; the synthetic database is the final (or average) A over P."""
        tm = Timer()
        X = check_in_unit_cube(X, name="X")
        n = X.shape[0]
        charged = self.candidates.charged
        spent_delta = self.delta if charged else 0.0
        led = ledger_for(ledger, self.epsilon, spent_delta, self.name)
        eps_c, d_c = self._candidate_budget()
        try:  # the candidates' limit on ε (before anything is spent), named by MWEM's budget
            self.candidates.check_budget(n, X.shape[1], epsilon=eps_c, delta=d_c)
        except ValueError as exc:
            raise ValueError(f"epsilon = {self.epsilon:g} (delta = {self.delta:g}) is too small for {self.name}'s "
                             f"{type(self.candidates).__name__} (candidate_share = {self.candidate_share:g} of it): "
                             f"{exc}") from None
        composed = self._composed()
        t_factor = self.composition_factor(n, X.shape[1])
        eps_step = self._rounds_epsilon() / t_factor
        if composed:  # one spend of the whole (ε, δ), before any noise is drawn (module docstring)
            led.spend(f"{self.name} (composed)", self.epsilon, self.delta, mechanism="composition (accounting=pld)",
                      neighbouring="replace-one", accounting="pld", accounting_factor=t_factor,
                      releases=self.candidates.releases(n, X.shape[1], epsilon=eps_c, delta=d_c, factor=t_factor)
                      + [{"name": "select", "mechanism": "exponential", "epsilon": eps_step, "count": self.T},
                         {"name": "measure", "mechanism": "laplace", "epsilon": eps_step, "count": self.T}])
        step_led = None if composed else led
        g_cand, g_class, g_sel, g_meas, g_out = spawn(rng, 5)
        with tm("candidates"):
            P = self.candidates.draw(X, self.C, epsilon=eps_c, delta=d_c, ledger=led, rng=g_cand,
                                     **({"noise_factor": t_factor} if composed else {}))
        with tm("query_class"):
            F, truth, ranges = self._query_class(X, P, g_class)
        sens = ranges / n
        A = np.full(P.shape[0], 1.0 / P.shape[0])
        avg = np.zeros_like(A)
        measured: list[tuple[int, float]] = []
        inf = math.isinf(eps_step)
        with tm("rounds"):
            for t in range(self.T):
                est = F @ A
                score = np.abs(truth - est)
                if inf:
                    led.spend(f"select_{t}", eps_step, mechanism="argmax (epsilon=inf)")
                    q = int(np.argmax(score))
                else:
                    q = Exponential(epsilon=eps_step, sensitivity=float(sens.max())).release(
                        score, rng=g_sel, ledger=step_led, name=f"select_{t}"
                    )
                m_q = Laplace(epsilon=eps_step, sensitivity=float(sens[q])).release(
                    truth[q], rng=g_meas, ledger=step_led, name=f"measure_{t}"
                )
                measured.append((q, float(m_q)))
                for _ in range(self.replays):
                    for qi, mi in measured:
                        A = mw_update(A, F[qi], mi)
                avg += A
        W = A if self.output == "last" else avg / self.T
        keep = W > 1e-12 * W.max()
        synth = WeightedDatabase(points=P[keep], weights=W[keep] / W[keep].sum(), m=self.m or n)
        if self.m is not None:
            synth = synth.realise(g_out)
        params = {
            "method": self.name, "epsilon": self.epsilon, "delta": self.delta, "T": self.T, "C": self.C,
            "candidates": self.candidates.kind, "candidate_share": self.candidate_share if charged else 0.0,
            "query_class": self.query_class, "n_class": int(F.shape[0]), "replays": self.replays,
            "output": self.output, "m": self.m, "epsilon_step": eps_step, "score_sensitivity": float(sens.max()),
            "data_independent_candidates": not charged,
            **({"accounting": self.accounting, "accounting_factor": t_factor} if self.delta > 0 and charged else {}),
        }
        return Release(method=self.name, privacy=self.privacy, params=params, ledger=led.to_dict(), timings=tm.done(),
                       synthetic=synth, diagnostics=MWEMDiagnostics(measurements=measured))
