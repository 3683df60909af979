"""Claims on private subspace iteration (thesis Alg 6/7, Lemma 2.7, Thm 2.10–2.12).

Notebook ``56_private_pca`` calls these functions: Lemma 2.7's sensitivity bound on adversarial and random pairs
(:func:`lemma27`; with the noisy mean it fails, a negative control), the auditor on one PSI-(ε,δ) step
(:func:`one_step_audit`), the rates of Thm 2.11/2.12 on a planted spectrum (:func:`pca_rates`) and Alg 7's σ against
the data's norms (:func:`sigma_vs_norm`).
"""
from __future__ import annotations

import math
import warnings
from dataclasses import asdict, dataclass
from typing import Sequence

import numpy as np
from scipy.linalg import subspace_angles

from dpkit import data
from dpkit.claims.results import NotebookRecorder, NotebookRun, RowsResult
from dpkit.claims.streams import Streams
from dpkit.core.exceptions import PrivacyLeakWarning
from dpkit.core.quick import quick_values
from dpkit.core.rng import RNGLike, spawn
from dpkit.core.validation import check_name_list, check_positive_int, check_seed
from dpkit.evaluation.audit import audit
from dpkit.evaluation.verdicts import Check, FalseAlarmBudget, check
from dpkit.mechanisms.laplace import Laplace
from dpkit.mechanisms.pca import (
    PrivateSubspaceIteration,
    covariance,
    covariance_sensitivity,
    psi_noise_scale,
    subspace_iteration_step,
)

__all__ = [
    "PCAStreams",
    "Lemma27Row",
    "AuditRow",
    "OneStepAudit",
    "PCARateRow",
    "PCARates",
    "SigmaRow",
    "corner_pair",
    "planted_data",
    "lemma27",
    "one_step_audit",
    "pca_rates",
    "sigma_vs_norm",
    "notebook_checks",
]

RANDOM_PAIRS = 20  # random neighbour pairs per (n, d) in lemma27


@dataclass(frozen=True)
class PCAStreams(Streams):
    """The notebook's streams: Lemma 2.7 pairs, noisy means, auditor, rate data and coins."""

    lemma: np.random.Generator
    mu: np.random.Generator
    audit: np.random.Generator
    rate: np.random.Generator


@dataclass(frozen=True)
class Lemma27Row:
    """One neighbour pair: ``‖A(D) − A(D')‖₂`` and the bounds c(n, d, √d), c(n, d, ‖D̄‖)."""

    n: int
    d: int
    pair: str
    norm_dA: float
    c_bound: float
    c_true_mean: float



@dataclass(frozen=True)
class AuditRow:
    """The auditor on one PSI-(ε,δ) step: sizes, ρ, σ, and the auditor's lower bound and point estimate of ε."""

    n: int
    d: int
    sigma: float
    rho: float
    epsilon_lb: float
    epsilon_point: float


@dataclass(frozen=True)
class OneStepAudit:
    """:func:`one_step_audit`: the table row and the check."""

    row: AuditRow
    check: Check


@dataclass(frozen=True)
class PCARateRow:
    """One private fit: ``sin θ`` to the true top-k subspace, the largest eigenvalue error and the noise σ."""

    n: int
    sin_theta: float
    eig_error: float
    sigma: float


@dataclass(frozen=True, eq=False)
class PCARates:
    """Runs, the medians per n (ascending) the slopes are fitted to, and the two checks."""

    rows: tuple[PCARateRow, ...]
    ns: np.ndarray
    median_sin_theta: np.ndarray
    median_eig_error: np.ndarray
    checks: tuple[Check, Check]


@dataclass(frozen=True)
class SigmaRow:
    """One data set: size, ρ = c(n, d, √d), σ of Alg 7 (ε/3) and Alg 6 (ε/3, δ/2), and ‖A‖₂."""

    dataset: str
    n: int
    d: int
    rho: float
    sigma_alg7: float
    sigma_alg6: float
    norm_A: float



def corner_pair(n: int, d: int) -> tuple[np.ndarray, np.ndarray]:
    """``D`` = n rows at the corner (1, …, 1) and ``D'`` = D with row 0 moved to (−1, …, −1), where Lemma 2.7 is nearly tight."""
    D = np.ones((n, d))
    D2 = D.copy()
    D2[0] = -1.0
    return D, D2


def planted_data(n: int, d: int, rng: np.random.Generator) -> np.ndarray:
    """``clip(diag(s) g)`` with ``g ~ N(0, I_d)`` and ``s = (0.5, 0.3, 0.1, …)``: a well-separated top-2 subspace."""
    scales = np.r_[0.5, 0.3, np.full(d - 2, 0.1)]
    return np.clip(rng.standard_normal((n, d)) * scales, -1, 1)


def _norm_dA(D: np.ndarray, D2: np.ndarray) -> float:
    return float(np.linalg.norm(covariance(D) - covariance(D2), 2))


def _pairs(n: int, d: int, rng: np.random.Generator) -> list[tuple[str, np.ndarray, np.ndarray]]:
    pairs = [("corner", *corner_pair(n, d))]
    for _ in range(RANDOM_PAIRS):
        D = rng.uniform(-1, 1, (n, d)) * rng.uniform(0, 1)
        D2 = D.copy()
        D2[rng.integers(n)] = np.sign(rng.uniform(-1, 1, d))  # (Python draws the right-hand side first)
        pairs.append(("random", D, D2))
    return pairs


def _noisy_mean_ratio(n: int, d: int, *, n_draws: int, epsilon: float, delta: float, rng: np.random.Generator) -> float:
    """Largest ``‖A(D) − A(D')‖₂ / c(n, d, ‖μ̃‖)`` over noisy means ``μ̃ = D̄ + Lap(6d/(nε))`` of the corner pair (Alg 9 step 4)."""
    D, D2 = corner_pair(n, d)
    dA = _norm_dA(D, D2)
    mu_mech = Laplace(epsilon=epsilon / 3, sensitivity=2 * d / n)
    worst = 0.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        for g in spawn(rng, n_draws):
            mu = mu_mech.release(D.mean(axis=0), rng=g)
            psi = PrivateSubspaceIteration(n_components=1, n_iter=1, epsilon=epsilon, delta=delta, sensitivity="thesis", mean=mu)
            worst = max(worst, dA / psi.fit(D, rng=g).sensitivity_)
    return worst


def lemma27(
    *, sizes: list[list[int]], n_mu_draws: int, epsilon: float, delta: float, rng: PCAStreams | RNGLike
) -> RowsResult[Lemma27Row]:
    """Lemma 2.7 on the corner pair and 20 random pairs per ``[n, d]`` in ``sizes``, and the noisy-mean variant.

    Random pairs: ``D`` uniform in ``[-1, 1]^{n×d}`` times a uniform factor, one row replaced by a
    random corner. Statistics: the largest ratio ``‖A(D) − A(D')‖₂ / c`` (PASS iff ≤ 1) for
    ``c(n, d, √d)``, ``c(n, d, ‖D̄‖)`` and — over ``n_mu_draws`` noisy means per size — ``c(n, d, ‖μ̃‖)``,
    expected to FAIL.
    """
    s = PCAStreams.resolve(rng)
    rows: list[Lemma27Row] = []
    worst_bound = worst_true = worst_thesis = 0.0
    for n, d in sizes:
        for kind, D, D2 in _pairs(n, d, s.lemma):
            dA = _norm_dA(D, D2)
            c_bound = covariance_sensitivity(n, d)
            c_true = covariance_sensitivity(n, d, float(np.linalg.norm(D.mean(axis=0))))
            worst_bound, worst_true = max(worst_bound, dA / c_bound), max(worst_true, dA / c_true)
            rows.append(Lemma27Row(n=n, d=d, pair=kind, norm_dA=dA, c_bound=c_bound, c_true_mean=c_true))
        ratio = _noisy_mean_ratio(n, d, n_draws=n_mu_draws, epsilon=epsilon, delta=delta, rng=s.mu)
        worst_thesis = max(worst_thesis, ratio)
    checks = (
        check("Lemma 2.7 (‖D̄‖ ≤ √d)", "‖A(D) − A(D')‖₂ ≤ c(n, d, √d) on corner and random neighbour pairs (max ratio)",
              worst_bound, 1.0, relation="<=", note="corner pairs nearly attain it"),
        check("Lemma 2.7 (true mean)", "‖A(D) − A(D')‖₂ ≤ c(n, d, ‖D̄‖) with the true mean norm (max ratio)", worst_true, 1.0,
              relation="<="),
        check("Lemma 2.7 (noisy mean, printed)", "c(n, d, ‖μ̃‖) with the noisy mean μ̃ bounds ‖A(D) − A(D')‖₂ (thesis Alg 9)",
              worst_thesis, 1.0, relation="<=", expected="FAIL",
              note="erratum: ‖μ̃‖ < ‖D̄‖ happens; the sensitivity is under-stated"),
    )
    return RowsResult(rows=tuple(rows), checks=checks)


def one_step_audit(
    *, n: int, d: int, epsilon: float, delta: float, audit_samples: int, gamma: float = 1e-3, rng: PCAStreams | RNGLike
) -> OneStepAudit:
    """Thm 2.10: auditor bound ε_lb (confidence ``1 − γ``) on one PSI-(ε,δ) step ``W = A x + G`` between the corner neighbours.

    ``x = 1/√d`` (k = 1, L = 1, so σ = ρ√(4 log(1/δ))/ε); the statistic is the projection of ``W``
    on the direction in which ``A(D) x`` and ``A(D') x`` differ. PASS iff ``ε_lb ≤ ε``.
    """
    s = PCAStreams.resolve(rng)
    D, D2 = corner_pair(n, d)
    rho = covariance_sensitivity(n, d)
    sigma1 = psi_noise_scale(rho, d=d, k=1, n_iter=1, epsilon=epsilon, delta=delta)
    x = np.ones((d, 1)) / math.sqrt(d)
    u = ((covariance(D) - covariance(D2)) @ x)[:, 0]
    u /= np.linalg.norm(u)

    def one_iteration(db: np.ndarray, rng: np.random.Generator, size: int | None = None) -> np.ndarray:
        W = subspace_iteration_step(covariance(db), np.repeat(x, size or 1, axis=1), sigma1, noise="gaussian", rng=rng)
        return u @ W  # the projection onto the direction the neighbours differ in

    a = audit(one_iteration, D, D2, n_samples=audit_samples, confidence=1 - gamma, delta=delta, rng=s.audit)
    c = check("Thm 2.10 (auditor, one step)", f"one PSI-(ε,δ) iteration, σ = ρ√(4kL log(1/δ))/ε: auditor ε_lb ≤ ε (δ = {delta})",
              a.epsilon_lb, epsilon, relation="<=", confidence=1 - gamma, note=f"point {a.epsilon_point:.3f}")
    row = AuditRow(n=n, d=d, sigma=sigma1, rho=rho, epsilon_lb=a.epsilon_lb, epsilon_point=a.epsilon_point)
    return OneStepAudit(row=row, check=c)


def pca_rates(
    *, ns: list[int], d: int, reps: int, k: int, n_iter: int, epsilon: float, delta: float, rng: PCAStreams | RNGLike
) -> PCARates:
    """Thm 2.11/2.12: ``sin θ`` between private and true top-k subspaces and ``max_s |λ̂_s − λ_s|`` vs n.

    ``reps`` planted-spectrum data sets per n (:func:`planted_data`, one spawned stream each for the
    data and the mechanism); the log–log slope of the medians in n must be ≤ −1/2 (theory: −1).
    """
    s = PCAStreams.resolve(rng)
    rows: list[PCARateRow] = []
    for n in ns:
        for g in spawn(s.rate, reps):
            X = planted_data(n, d, g)
            lam, V = np.linalg.eigh(covariance(X))
            lam, V = lam[::-1][:k], V[:, ::-1][:, :k]
            psi = PrivateSubspaceIteration(n_components=k, n_iter=n_iter, epsilon=epsilon, delta=delta).fit(X, rng=g)
            sin_theta = float(np.sin(subspace_angles(V, psi.components_.T)).max())
            eig_error = float(np.max(np.abs(np.sort(psi.explained_variance_)[::-1] - lam)))
            rows.append(PCARateRow(n=n, sin_theta=sin_theta, eig_error=eig_error, sigma=psi.noise_scale_))
    grid = np.array(sorted({r.n for r in rows}))
    med_sin = np.array([np.median([r.sin_theta for r in rows if r.n == n]) for n in grid])
    med_eig = np.array([np.median([r.eig_error for r in rows if r.n == n]) for n in grid])
    slope_angle = float(np.polyfit(np.log(grid), np.log(med_sin), 1)[0])
    slope_eig = float(np.polyfit(np.log(grid), np.log(med_eig), 1)[0])
    checks = (
        check("Thm 2.11 (angle rate)", "sin θ(private, true top-k subspace) falls like 1/(nε): fitted log–log slope in n ≤ −1/2",
              slope_angle, -0.5, relation="<=", note=f"median sin θ at largest n: {med_sin[-1]:.3g}"),
        check("Thm 2.12 (eigenvalue rate)", "max |λ̂_s − λ_s| falls like 1/(nε): fitted log–log slope ≤ −1/2", slope_eig, -0.5,
              relation="<="),
    )
    return PCARates(rows=tuple(rows), ns=grid, median_sin_theta=med_sin, median_eig_error=med_eig, checks=checks)


def sigma_vs_norm(*, datasets: list[str], k: int, n_iter: int, epsilon: float, delta: float) -> RowsResult[SigmaRow]:
    """Alg 7's σ (budget ε/3, as in Alg 9) next to ‖A‖ on the thesis's data sets; Alg 6's σ at δ/2 for comparison.

    The thesis remarks that σ > 1 on every data set but CSN: PASS iff exactly the non-CSN data
    sets have σ > 1 (statistic: the smallest σ among them, 0 if there are none).
    """
    rows: list[SigmaRow] = []
    thesis: set[str] = set()  # the remark is about the thesis's data sets; your own data sets are listed, not judged
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        for name in datasets:
            ds = data.load(name)
            X, name = ds.X, (name if ds.thesis_shape is not None else ds.name)
            if ds.thesis_shape is not None:
                thesis.add(name)
            n, d = X.shape
            rho = covariance_sensitivity(n, d)
            rows.append(SigmaRow(dataset=name, n=n, d=d, rho=rho,
                                 sigma_alg7=psi_noise_scale(rho, d=d, k=k, n_iter=n_iter, epsilon=epsilon / 3, delta=0.0),
                                 sigma_alg6=psi_noise_scale(rho, d=d, k=k, n_iter=n_iter, epsilon=epsilon / 3, delta=delta / 2),
                                 norm_A=float(np.linalg.norm(covariance(X), 2))))
    holds = all((r.sigma_alg7 > 1) == (r.dataset != "CSN") for r in rows if r.dataset in thesis)
    others = [r.sigma_alg7 for r in rows if r.dataset != "CSN" and r.dataset in thesis]
    c = check("Alg 7 σ vs ‖A‖ (thesis remark)",
              "Alg 7's σ exceeds 1 on every data set but CSN (so the private PCA is mostly noise there)",
              float(min(others)) if others else 0.0, 1.0, holds=holds, note="statistic: smallest σ among the non-CSN data sets")
    return RowsResult(rows=tuple(rows), checks=(c,))


def notebook_checks(
    seed: int, quick: bool, false_alarm: float, *, epsilon: float, delta: float, k: int, n_iter: int,
    lemma_sizes: Sequence[Sequence[int]], n_mu_draws: int, audit_samples: int, rate_ns: Sequence[int], rate_d: int,
    rate_reps: int, datasets: Sequence[str],
) -> NotebookRun:
    """Every check and table row of notebook 56 (``56_private_pca``) run with these parameters.

    The notebook's parameters in lower case; ``quick`` applies its QUICK sizes. The streams (:class:`PCAStreams`,
    from ``seed``: Lemma 2.7 pairs, noisy means, auditor, rate runs) are shared by the sections in order; the budget
    ``false_alarm`` is charged to the one statistical check (the one-step auditor). ``parts``: ``lemma``, ``audit``,
    ``rates``, ``sigma`` (the sections' results).
    """
    seed = check_seed(seed)
    datasets = check_name_list(datasets, name="datasets")
    rate_reps = check_positive_int(rate_reps, name="rate_reps")
    if quick:  # a part of the user's data sets, or a QuickReplacementWarning naming the replacement
        lemma_sizes, n_mu_draws, audit_samples = [[50, 3], [200, 5]], 50, 100000
        rate_ns, rate_reps = [10000, 40000, 160000], 4
        # WDBC, CTG and your own data sets (spec files, registered names) among them; if none, WDBC and CTG
        datasets = quick_values(datasets, data.quick_datasets(datasets, default=("WDBC", "CTG")), name="datasets",
                                what="data sets")
    params = dict(SEED=seed, QUICK=quick, EPSILON=epsilon, DELTA=delta, K=k, N_ITER=n_iter, LEMMA_SIZES=lemma_sizes,
                  N_MU_DRAWS=n_mu_draws, AUDIT_SAMPLES=audit_samples, RATE_NS=rate_ns, RATE_D=rate_d, RATE_REPS=rate_reps,
                  DATASETS=datasets, FALSE_ALARM=false_alarm)
    streams = PCAStreams.from_seed(seed)  # Lemma 2.7 pairs, noisy means, auditor, rate runs
    budget = FalseAlarmBudget(false_alarm, n_tests=1)  # the one-step auditor
    gamma = budget.level  # the per-test level of every statistical check (negative controls too)
    out = NotebookRecorder()
    lemma = lemma27(sizes=lemma_sizes, n_mu_draws=n_mu_draws, epsilon=epsilon, delta=delta, rng=streams)
    out.add(*lemma.checks)
    out.table("lemma27", (asdict(r) for r in lemma.rows))
    n, d = lemma_sizes[-1]
    aud = one_step_audit(n=n, d=d, epsilon=epsilon, delta=delta, audit_samples=audit_samples, gamma=gamma, rng=streams)
    out.add(aud.check)
    out.row(part="audit", **asdict(aud.row))
    rates = pca_rates(ns=rate_ns, d=rate_d, reps=rate_reps, k=k, n_iter=n_iter, epsilon=epsilon, delta=delta, rng=streams)
    out.add(*rates.checks)
    out.table("rates", (asdict(r) for r in rates.rows))
    sig = sigma_vs_norm(datasets=datasets, k=k, n_iter=n_iter, epsilon=epsilon, delta=delta)
    out.add(sig.check)
    out.table("sigma_vs_norm", (asdict(r) for r in sig.rows))
    return out.finish(params, budget, lemma=lemma, audit=aud, rates=rates, sigma=sig)
