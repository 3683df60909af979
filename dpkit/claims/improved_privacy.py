"""Claims on the privacy of the improved trigonometric mechanisms (thesis Thm 2.13, Alg 9/10).

Notebook ``58_improved_privacy`` calls these functions on runs of Alg 9 and 10 with the correct and the printed
constants (:func:`improved_runs`): the ledgers spend ε/3 × 3 and δ/2 + δ/2 (:func:`ledger_check`), the exact worst-case
losses of the moments and the mean (:func:`exact_losses`) and the auditor on the moment release (:func:`moment_audits`),
the printed Alg 9 constant as negative control.
"""
from __future__ import annotations

import itertools
import math
from dataclasses import asdict, dataclass
from typing import Sequence

import numpy as np

from dpkit.claims.results import NotebookRecorder, NotebookRun, RowsResult
from dpkit.claims.streams import Streams
from dpkit.core.pld import laplace_composition_delta
from dpkit.core.rng import RNGLike
from dpkit.core.validation import check_seed
from dpkit.evaluation.audit import audit
from dpkit.evaluation.verdicts import Check, FalseAlarmBudget, check
from dpkit.mechanisms.gaussian import gaussian_exact_delta
from dpkit.mechanisms.trig.base import TrigDiagnostics
from dpkit.mechanisms.trig.basis import basis_indices, evaluate_basis
from dpkit.mechanisms.trig.grid import discretise
from dpkit.mechanisms.trig.improved import ImprovedTrigonometricMechanism
from dpkit.mechanisms.trig.moments import MomentNoise, moment_noise, release_moments
from dpkit.mechanisms.trig.privacy import moment_privacy_loss
from dpkit.mechanisms.trig.sensitivity import moment_sensitivity
from dpkit.queries.release import Release

__all__ = [
    "ImprovedStreams",
    "ImprovedRun",
    "RunRow",
    "ExactLossRow",
    "AuditRow",
    "improved_runs",
    "run_rows",
    "ledger_check",
    "exact_losses",
    "moment_audits",
    "notebook_checks",
]

CONSTANTS = ("correct", "thesis")


@dataclass(frozen=True)
class ImprovedStreams(Streams):
    """The notebook's streams: the data set, the auditor, the mechanism runs."""

    data: np.random.Generator
    audit: np.random.Generator
    fit: np.random.Generator


@dataclass(frozen=True, eq=False)
class ImprovedRun:
    """One fit of :class:`~dpkit.mechanisms.trig.improved.ImprovedTrigonometricMechanism` (δ = 0: Alg 9, δ > 0: Alg 10)."""

    delta: float
    constants: str
    R: int
    result: Release[TrigDiagnostics]


@dataclass(frozen=True)
class RunRow:
    """Parameters, noise scales and basic-composition spend of one run."""

    algorithm: str
    constants: str
    R: int
    t: int
    N: int
    moment_scale: float
    moment_kind: str
    mean_scale: float
    pca_scale: float
    spent_eps: float
    spent_delta: float


@dataclass(frozen=True, kw_only=True)
class ExactLossRow:
    """Exact sensitivities and worst-case losses of one run's releases.

    ``eps_exact`` (Alg 9: ‖Δb‖₁/b, attained) or ``delta_exact`` (Alg 10: exact δ at ε/3 of the
    Gaussian moments, or of the printed Laplace moments where the worst pair shifts all moments
    equally) is ``None`` where it does not apply.
    """

    algorithm: str
    constants: str
    R: int
    kind: str
    l1: float
    l2: float
    scale: float
    eps_exact: float | None = None
    delta_exact: float | None = None
    mean_eps_exact: float

    def as_row(self) -> dict[str, str | int | float]:
        """The table row: the fields that apply (``None`` ones left out)."""
        return {k: v for k, v in asdict(self).items() if v is not None}



@dataclass(frozen=True)
class AuditRow:
    """The auditor on one moment release: the Laplace scale and the auditor's lower bound and point estimate of ε."""

    constants: str
    scale: float
    epsilon_lb: float
    epsilon_point: float



def improved_runs(
    *, n: int, d: int, rs: list[int], c: int, epsilon: float, delta: float, K: float = 4.0, k: int = 2, n_iter: int = 5,
    kappa: float = 2.0, rng: ImprovedStreams | RNGLike,
) -> tuple[ImprovedRun, ...]:
    """Alg 9 (δ = 0) and Alg 10 (``delta``), correct and printed constants, each R in ``rs``, on one data set.

    The data set ``clip(N(0, 0.4²))`` in [-1, 1]^{n×d} only sizes the runs; privacy is checked on
    the worst neighbour pair by :func:`exact_losses` and :func:`moment_audits`.
    """
    s = ImprovedStreams.resolve(rng)
    X = np.clip(s.data.normal(0.0, 0.4, (n, d)), -1, 1)
    runs: list[ImprovedRun] = []
    for dl in (0.0, delta):
        for constants in CONSTANTS:
            for R in rs:
                mech = ImprovedTrigonometricMechanism(epsilon=epsilon, delta=dl, K=K, C=c, R=R, k=k, n_iter=n_iter, kappa=kappa,
                                                      constants=constants, accounting="split")
                runs.append(ImprovedRun(delta=dl, constants=constants, R=R, result=mech.release(X, rng=s.fit)))
    return tuple(runs)


def run_rows(runs: tuple[ImprovedRun, ...]) -> tuple[RunRow, ...]:
    """The table rows of :func:`improved_runs`."""
    rows = []
    for run in runs:
        p, spent = run.result.params, run.result.ledger["spent_basic"]
        scales = p["noise_scales"]
        rows.append(RunRow(algorithm=p["algorithm"], constants=run.constants, R=run.R, t=p["t"], N=p["N"],
                           moment_scale=scales["moments"], moment_kind=scales["moments_kind"], mean_scale=scales["mean"],
                           pca_scale=scales["pca"], spent_eps=spent["epsilon"], spent_delta=spent["delta"]))
    return tuple(rows)


def ledger_check(runs: tuple[ImprovedRun, ...], *, epsilon: float) -> Check:
    """Thm 2.13: every run records three releases and spends at most (ε, δ) by basic composition."""
    ok = all(
        r.result.ledger["spent_basic"]["epsilon"] <= epsilon * (1 + 1e-12)
        and r.result.ledger["spent_basic"]["delta"] <= r.delta * (1 + 1e-12) + 1e-300
        and len(r.result.ledger["entries"]) == 3
        for r in runs
    )
    return check("Thm 2.13 (ledger)", "every run spends ε/3 × 3 (and δ/2 + δ/2 for Alg 10) within (ε, δ) by basic composition",
                 max(r.result.ledger["spent_basic"]["epsilon"] for r in runs), epsilon, holds=ok,
                 note="statistic: largest ε spent (basic)")


def _corners(d: int, N: int) -> np.ndarray:
    return discretise(np.array(list(itertools.product((-1.0, 1.0), repeat=d))), N)


def _exact_row(run: ImprovedRun, *, n: int, d: int, eps_m: float) -> ExactLossRow:
    p = run.result.params
    sens = moment_sensitivity(_corners(d, p["N"]), basis_indices(p["t"], d, run.R), n)
    scale, kind = p["noise_scales"]["moments"], p["noise_scales"]["moments_kind"]
    eps_exact = delta_exact = None
    if run.delta == 0:
        eps_exact = sens.l1 / scale  # pure Laplace: worst-case loss = ‖Δb‖₁/b, attained
    elif kind == "gaussian":
        delta_exact = gaussian_exact_delta(scale, eps_m, sens.l2)
    else:
        # Laplace on R−1 coordinates (printed Alg 10): exact when the worst pair shifts each moved moment equally
        shifts = sens.worst_l1_shift[sens.worst_l1_shift > 1e-15]
        if np.allclose(shifts, shifts[0]):
            delta_exact = laplace_composition_delta(eps_m, shifts.size, float(shifts[0] / scale), bins_per_step=400)
    return ExactLossRow(algorithm=p["algorithm"], constants=run.constants, R=run.R, kind=kind, l1=sens.l1, l2=sens.l2,
                        scale=scale, eps_exact=eps_exact, delta_exact=delta_exact,
                        mean_eps_exact=(2.0 * d / n) / p["noise_scales"]["mean"])


def _max(values: list[float | None], what: str) -> float:
    defined = [v for v in values if v is not None]
    if not defined:
        raise ValueError(f"no run yields {what}; runs must include it")
    return max(defined)


def exact_losses(runs: tuple[ImprovedRun, ...], *, n: int, d: int, epsilon: float, delta: float) -> RowsResult[ExactLossRow]:
    """Exact worst-case losses on the corner pairs (the L1 and L2 moment changes of T_R are maximal at corners for t = 2).

    Checks: Alg 9 moments with ``Lap(2(R−1)/(n ε/3))`` within ε/3; with the printed ``Lap(3R/(nε))``
    above ε/3 (negative control); Alg 10 moments (analytic Gaussian) exact δ(ε/3) ≤ δ/2; the mean
    ``Lap(6d/(nε))`` within ε/3.
    """
    eps_m = epsilon / 3
    rows = tuple(_exact_row(r, n=n, d=d, eps_m=eps_m) for r in runs)
    pick = {(alg9, c): [row for run, row in zip(runs, rows) if (run.delta == 0) == alg9 and run.constants == c]
            for alg9 in (True, False) for c in CONSTANTS}
    checks = (
        check("Thm 2.13 (Alg 9 moments)", "Alg 9 moments, Lap(2(R−1)/(n ε/3)): exact worst-case loss ≤ ε/3",
              _max([r.eps_exact for r in pick[True, "correct"]], "an Alg 9 loss"), eps_m * (1 + 1e-12), relation="<="),
        check("Alg 9 moments, printed 3R/(nε)", "Alg 9 moments with the printed Lap(3R/(nε)): exact worst-case loss ≤ ε/3",
              _max([r.eps_exact for r in pick[True, "thesis"]], "a printed Alg 9 loss"), eps_m * (1 + 1e-12), relation="<=",
              expected="FAIL", note="the sensitivity is 2(R−1)/n, not R/n"),
        check("Thm 2.13 (Alg 10 moments)",
              "Alg 10 moments (analytic Gaussian at (ε/3, δ/2)): exact δ(ε/3) on the worst pair ≤ δ/2",
              _max([r.delta_exact for r in pick[False, "correct"]], "an Alg 10 δ"), delta / 2 * (1 + 1e-9), relation="<="),
        check("Thm 2.13 (mean)", "noisy mean Lap(6d/(nε)): exact worst-case loss ≤ ε/3", max(r.mean_eps_exact for r in rows),
              eps_m * (1 + 1e-12), relation="<="),
    )
    return RowsResult(rows=rows, checks=checks)


def moment_audits(
    runs: tuple[ImprovedRun, ...], *, n: int, d: int, R: int, epsilon: float, audit_samples: int, gamma: float = 1e-3,
    rng: ImprovedStreams | RNGLike,
) -> RowsResult[AuditRow]:
    """The auditor (confidence ``1 − γ``) on Alg 9's moment release with R moments, correct then printed constants.

    Neighbours: all n rows at the corner (1, …, 1) vs one row moved to (−1, …, −1); statistic: the
    privacy loss of the output. PASS iff ``ε_lb ≤ ε/3``; the printed constants are expected to FAIL.
    """
    s = ImprovedStreams.resolve(rng)
    eps_m = epsilon / 3
    alg9 = {r.constants: r.result for r in runs if r.delta == 0 and r.R == R}
    if set(alg9) != set(CONSTANTS):
        raise ValueError(f"runs must hold the Alg 9 runs (delta = 0) with R = {R} for both constants")
    p = alg9["correct"].params
    idx = basis_indices(p["t"], d, R)
    b0 = evaluate_basis(discretise(np.ones((1, d)), p["N"]), idx)[0]  # all n rows at the corner
    b1 = b0 + (evaluate_basis(discretise(-np.ones((1, d)), p["N"]), idx)[0] - b0) / n  # one row moved to the opposite corner
    rows = []
    for constants in CONSTANTS:
        noise = moment_noise(n, R, epsilon=eps_m, constants=constants)
        if not math.isclose(noise.scale, alg9[constants].params["noise_scales"]["moments"]):
            raise ValueError(f"moment_noise gives scale {noise.scale} but the {constants} run used "
                             f"{alg9[constants].params['noise_scales']['moments']}")

        def loss(db: np.ndarray, rng: np.random.Generator, size: int | None = None, noise: MomentNoise = noise) -> np.ndarray:
            return moment_privacy_loss(release_moments(db, noise, rng=rng, size=size or 1), b0, b1, noise)

        a = audit(loss, b0, b1, n_samples=audit_samples, confidence=1 - gamma, rng=s.audit)
        rows.append(AuditRow(constants=constants, scale=noise.scale, epsilon_lb=a.epsilon_lb, epsilon_point=a.epsilon_point))
    ok, bad = rows
    checks = (
        check("Thm 2.13 (moments auditor)", "auditor on Alg 9's moment release (correct constants): ε_lb ≤ ε/3",
              ok.epsilon_lb, eps_m, relation="<=", confidence=1 - gamma, note=f"point {ok.epsilon_point:.3f}"),
        check("Alg 9 moments auditor, printed", "auditor on the printed Lap(3R/(nε)) moment release: ε_lb ≤ ε/3",
              bad.epsilon_lb, eps_m, relation="<=", confidence=1 - gamma, expected="FAIL", note=f"point {bad.epsilon_point:.3f}"),
    )
    return RowsResult(rows=tuple(rows), checks=checks)


def notebook_checks(
    seed: int, quick: bool, false_alarm: float, *, epsilon: float, delta: float, N: int, D: int, rs: Sequence[int],
    audit_samples: int, C: int,
) -> NotebookRun:
    """Every check and table row of notebook 58 (``58_improved_privacy``) run with these parameters.

    The notebook's parameters in lower case (``N``, ``D``, ``C`` as printed); ``quick`` applies its QUICK sizes.
    The streams (:class:`ImprovedStreams`, from ``seed``: data set, auditor, mechanism runs) are shared by the
    sections in order; the budget ``false_alarm`` is charged to the one statistical check (the moments auditor).
    ``parts``: ``runs``, ``exact``, ``audits`` (the sections' results).
    """
    seed = check_seed(seed)
    if quick:
        # 6·10⁵ audit draws keep the printed-constants control powerful (2·10⁵ missed it in 30 % of seeds)
        audit_samples, C = 600000, 500
    params = dict(SEED=seed, QUICK=quick, EPSILON=epsilon, DELTA=delta, N=N, D=D, RS=rs, AUDIT_SAMPLES=audit_samples, C=C,
                  FALSE_ALARM=false_alarm)
    streams = ImprovedStreams.from_seed(seed)  # data set, auditor, mechanism runs
    budget = FalseAlarmBudget(false_alarm, n_tests=1)  # the moments auditor
    gamma = budget.level  # the per-test level of every statistical check (negative controls too)
    out = NotebookRecorder()
    runs = improved_runs(n=N, d=D, rs=rs, c=C, epsilon=epsilon, delta=delta, rng=streams)
    out.add(ledger_check(runs, epsilon=epsilon))
    out.table("runs", (asdict(r) for r in run_rows(runs)))
    exact = exact_losses(runs, n=N, d=D, epsilon=epsilon, delta=delta)
    out.table("exact", (r.as_row() for r in exact.rows))
    out.add(*exact.checks)
    audits = moment_audits(runs, n=N, d=D, R=rs[0], epsilon=epsilon, audit_samples=audit_samples, gamma=gamma, rng=streams)
    out.table("audit", (asdict(r) for r in audits.rows))
    out.add(*audits.checks)
    return out.finish(params, budget, runs=runs, exact=exact, audits=audits)
