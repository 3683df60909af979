"""Claims of notebook 50: the Laplace and Gauss mechanisms (thesis Def 2, Prop 1.1, Ex 1.2, Ex 1.3, Prop 1.13).

Each function checks one statement and returns :class:`~dpkit.evaluation.verdicts.Check` values (or a frozen result
holding them): the Laplace mechanism's exact ratio and audit (Ex 1.2, with the under-noised variant as negative
control), post-processing (Prop 1.1), the Gaussian calibrations' exact δ (Ex 1.3, Balle–Wang) and privacy loss law,
the accuracy of Laplace I and II (Prop 1.7, 1.13; D–R Thm 3.8) and the classic Gaussian's failure point (D–R Thm 3.22).
:func:`notebook_checks` runs them as notebook 50 does. Statistical checks follow :mod:`dpkit.claims`'s false-alarm
budget and retry rule.
"""
from __future__ import annotations

import math
from typing import Callable, Sequence

import numpy as np
import pandas as pd
from scipy import stats

from dpkit.claims.results import NotebookRecorder, NotebookRun, TableResult, retried
from dpkit.core.rng import RNGLike, resolve_rng, spawn
from dpkit.core.validation import check_seed
from dpkit.evaluation.audit import AuditResult, audit, scalar_releaser
from dpkit.evaluation.oracles import (
    clopper_pearson,
    gaussian_classic_delta,
    gaussian_classic_failure_epsilon,
    laplace_max_failure_exact,
)
from dpkit.evaluation.verdicts import Check, FalseAlarmBudget, check
from dpkit.mechanisms.gaussian import Gaussian, gaussian_exact_delta
from dpkit.mechanisms.laplace import Laplace
from dpkit.mechanisms.multiquery import LaplaceI, LaplaceII, laplace_I_error_bound, laplace_II_error_bound

__all__ = [
    "CALIBRATIONS_ORDER",
    "POST_PROCESSING_MAPS",
    "laplace_exact_ratio",
    "laplace_audit",
    "laplace_under_noised_audit",
    "post_processing_audit",
    "gaussian_calibration_table",
    "gaussian_calibrations",
    "gaussian_thesis_large_epsilon",
    "gaussian_loss_tail",
    "gaussian_loss_law",
    "gaussian_audit",
    "laplace_accuracy",
    "laplace_accuracy_exact",
    "GAUSSIAN_FAILURE_POINTS",
    "gaussian_classic_failure_point",
    "notebook_checks",
]

#: docs/science/foundations.md (Thm 3.22): the ε* where σ = Δ√(2 ln(1.25/δ))/ε stops being (ε, δ)-DP, as printed (δ → ε*).
GAUSSIAN_FAILURE_POINTS: dict[float, float] = {1e-3: 7.5, 1e-5: 8.4, 1e-8: 9.4}

#: The post-processing maps of Prop 1.1's check (name → element-wise map).
POST_PROCESSING_MAPS: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "clip to [0,1]": lambda y: np.clip(y, 0, 1),
    "round": np.round,
    "square": np.square,
    "sign": np.sign,
}

#: The order in which the checks report the calibrations of :class:`~dpkit.mechanisms.gaussian.Gaussian`.
CALIBRATIONS_ORDER: tuple[str, ...] = ("thesis", "classic", "analytic")


def laplace_exact_ratio(*, epsilon: float = 1.0, sensitivity: float = 1.0) -> Check:
    """Ex 1.2 (exact): ``max_z |ln p_D(z)/p_D'(z)| ≤ ε`` for ``Lap(S/ε)`` at shift S, on a grid of [−10, 10]."""
    lap = Laplace(epsilon=epsilon, sensitivity=sensitivity)
    z = np.linspace(-10, 10, 20001)
    ratio = np.max(np.abs(stats.laplace.logpdf(z, 0, lap.scale) - stats.laplace.logpdf(z, sensitivity, lap.scale)))
    return check("Ex 1.2 (exact)", "Laplace: max_z |ln p_D(z)/p_D'(z)| ≤ ε (grid on [−10, 10], attained outside [0, S])", ratio,
                 epsilon + 1e-12, relation="<=", note=f"attained: {ratio:.12f}")


def _laplace_audit(mech_epsilon: float, sensitivity: float, n_samples: int, gamma: float, rng: RNGLike) -> AuditResult:
    mech = Laplace(epsilon=mech_epsilon, sensitivity=sensitivity)
    return audit(scalar_releaser(mech), 0.0, sensitivity, n_samples=n_samples, confidence=1 - gamma, rng=rng)


@retried
def laplace_audit(
    *, epsilon: float = 1.0, sensitivity: float = 1.0, n_samples: int = 400_000, gamma: float = 1e-3, rng: RNGLike = None,
) -> Check:
    """Def 2 / Ex 1.2 by the auditor: ``Lap(S/ε)`` has ``ε_lb ≤ ε`` (wrongly fails with probability ≤ γ)."""
    a = _laplace_audit(epsilon, sensitivity, n_samples, gamma, rng)
    return check("Def 2 / Ex 1.2 (auditor)", "auditor on Laplace(S/ε): ε_lb ≤ ε", a.epsilon_lb, epsilon, relation="<=",
                 confidence=1 - gamma, note=f"point {a.epsilon_point:.3f}")


def laplace_under_noised_audit(
    *, epsilon: float = 1.0, sensitivity: float = 1.0, n_samples: int = 400_000, gamma: float = 1e-3, rng: RNGLike = None,
) -> Check:
    """Negative control: ``Lap(S/(2ε))`` (truly 2ε-DP) claimed ε-DP; the auditor must find ``ε_lb > ε``."""
    a = _laplace_audit(2 * epsilon, sensitivity, n_samples, gamma, rng)
    return check("Laplace under-noised (S/(2ε))", "under-noised Laplace, scale S/(2ε), claimed ε-DP: auditor ε_lb ≤ ε",
                 a.epsilon_lb, epsilon, relation="<=", confidence=1 - gamma, expected="FAIL", note=f"point {a.epsilon_point:.3f}")


@retried
def post_processing_audit(
    *, epsilon: float = 1.0, sensitivity: float = 1.0, n_samples: int = 200_000, gamma: float = 1e-3, rng: RNGLike = None,
) -> TableResult:
    """Prop 1.1: the auditor on ``g∘M`` for the maps of :data:`POST_PROCESSING_MAPS` finds ``ε_lb ≤ ε``.

    The statistic is the worst ``ε_lb`` over the maps, each audited at confidence ``1 − γ/4``
    (Bonferroni). Table columns: ``g, epsilon_lb, epsilon_point``.
    """
    g = resolve_rng(rng)
    lap = Laplace(epsilon=epsilon, sensitivity=sensitivity)
    rows = []
    for name, post in POST_PROCESSING_MAPS.items():
        a = audit(scalar_releaser(lap, post), 0.0, sensitivity, n_samples=n_samples,
                  confidence=1 - gamma / len(POST_PROCESSING_MAPS), rng=g)
        rows.append(dict(g=name, epsilon_lb=a.epsilon_lb, epsilon_point=a.epsilon_point))
    worst = max([0.0] + [r["epsilon_lb"] for r in rows])
    c = check("Prop 1.1", "post-processed g∘M (clip, round, square, sign) of ε-DP Laplace: auditor ε_lb ≤ ε", worst, epsilon,
              relation="<=", confidence=1 - gamma, note="Bonferroni over the 4 maps")
    return TableResult(checks=(c,), table=pd.DataFrame(rows))


def gaussian_calibration_table(*, epsilons: Sequence[float], deltas: Sequence[float], sensitivity: float = 1.0) -> pd.DataFrame:
    """σ and exact δ(ε) of the three calibrations on a grid: columns ``calibration, epsilon, delta, sigma, exact_delta``."""
    rows = []
    for cal in CALIBRATIONS_ORDER:
        for e in epsilons:
            for d in deltas:
                gm = Gaussian(epsilon=e, delta=d, sensitivity=sensitivity, calibration=cal)
                rows.append(dict(calibration=cal, epsilon=e, delta=d, sigma=gm.sigma,
                                 exact_delta=gaussian_exact_delta(gm.sigma, e, sensitivity)))
    return pd.DataFrame(rows)


def gaussian_calibrations(
    *, epsilons: Sequence[float] = (0.1, 0.5, 0.9), deltas: Sequence[float] = (1e-3, 1e-6, 1e-9), sensitivity: float = 1.0,
) -> TableResult:
    """Ex 1.3: for each calibration, the exact δ(ε) at its σ is ≤ δ on the grid (ε < 1; statistic: max ratio).

    One check per calibration (``"Ex 1.3 (thesis)"``, ``"(classic)"``, ``"(analytic)"``); the table
    is :func:`gaussian_calibration_table`.
    """
    table = gaussian_calibration_table(epsilons=epsilons, deltas=deltas, sensitivity=sensitivity)
    checks = []
    for cal in CALIBRATIONS_ORDER:
        sub = table[table.calibration == cal]
        checks.append(check(f"Ex 1.3 ({cal})", f"Gaussian, {cal} calibration: exact δ(ε) at its σ ≤ δ (ε < 1; max ratio)",
                            (sub.exact_delta / sub.delta).max(), 1.0 + 1e-9, relation="<="))
    return TableResult(checks=tuple(checks), table=table)


def gaussian_thesis_large_epsilon(*, epsilon: float = 12.0, delta: float = 1e-3, sensitivity: float = 1.0) -> Check:
    """Negative control: the thesis calibration ``σ² = 2S² log(2/δ)/ε²`` at ε = 12 has exact δ(ε) > δ (valid to ε ≈ 8.5–10.3)."""
    gm = Gaussian(epsilon=epsilon, delta=delta, sensitivity=sensitivity, calibration="thesis")
    return check("Ex 1.3 (thesis, ε = 12)", "thesis calibration σ² = 2S² log(2/δ)/ε² also valid at ε = 12 (no ε < 1 stated)",
                 gaussian_exact_delta(gm.sigma, epsilon, sensitivity) / delta, 1.0, relation="<=", expected="FAIL")


def gaussian_loss_tail(
    *, epsilons: Sequence[float] = (0.1, 0.5, 0.9), deltas: Sequence[float] = (1e-3, 1e-6, 1e-9), sensitivity: float = 1.0,
) -> Check:
    """The printed proof of Ex 1.3 shows ``P(L > ε) ≤ δ`` for the privacy loss ``L ~ N(η, 2η)``, ``η = S²/(2σ²)``.

    Statistic: the max of ``P(L > ε)/δ`` over the grid for the thesis and classic σ (the analytic σ
    is tight in δ(ε), not in this tail; its max ratio goes to the note).
    """
    table = gaussian_calibration_table(epsilons=epsilons, deltas=deltas, sensitivity=sensitivity)
    ratio = []
    for e, d, sigma in zip(table.epsilon, table.delta, table.sigma):
        eta = sensitivity**2 / (2 * float(sigma) ** 2)
        ratio.append(stats.norm.sf((e - eta) / math.sqrt(2 * eta)) / d)
    ratio = pd.Series(ratio, dtype=float)
    analytic = (table.calibration == "analytic").to_numpy()
    return check("Ex 1.3 (loss tail)",
                 "thesis and classic σ: P(L > ε) ≤ δ for the Gaussian privacy loss L ~ N(η, 2η) (max ratio)",
                 ratio[~analytic].max(), 1.0, relation="<=",
                 note=f"analytic σ (tight in δ(ε), not in the tail): max ratio {ratio[analytic].max():.2f}")


@retried
def gaussian_loss_law(
    *, epsilon: float = 0.5, delta: float = 1e-3, sensitivity: float = 1.0, n_samples: int = 200_000, gamma: float = 1e-3,
    rng: RNGLike = None,
) -> Check:
    """The sampled privacy loss ``L = ((y − S)² − y²)/(2σ²)``, ``y ~ N(0, σ²)`` (thesis σ), follows ``N(η, 2η)``.

    Kolmogorov–Smirnov test; the check passes when the p-value is ≥ γ.
    """
    gl = Gaussian(epsilon=epsilon, delta=delta, sensitivity=sensitivity, calibration="thesis")
    y = gl.release(np.zeros(n_samples), rng=rng)
    L = ((y - sensitivity) ** 2 - y**2) / (2 * gl.sigma**2)
    eta = sensitivity**2 / (2 * gl.sigma**2)
    return check("Ex 1.3 (loss law)", "sampled Gaussian privacy loss follows N(η, 2η) (KS p-value ≥ γ)",
                 stats.kstest(L, stats.norm(eta, math.sqrt(2 * eta)).cdf).pvalue, gamma, relation=">=", confidence=1 - gamma)


@retried
def gaussian_audit(
    *, epsilon: float = 1.0, delta: float = 1e-3, sensitivity: float = 1.0, n_samples: int = 400_000, gamma: float = 1e-3,
    rng: RNGLike = None,
) -> Check:
    """Ex 1.3 by the auditor: the analytic Gaussian, audited with δ subtracted, has ``ε_lb ≤ ε``."""
    ga = Gaussian(epsilon=epsilon, delta=delta, sensitivity=sensitivity, calibration="analytic")
    a = audit(scalar_releaser(ga), 0.0, sensitivity, n_samples=n_samples, confidence=1 - gamma, delta=delta, rng=rng)
    return check("Ex 1.3 (auditor)", "auditor on the analytic Gaussian (δ subtracted): ε_lb ≤ ε", a.epsilon_lb, epsilon,
                 relation="<=", confidence=1 - gamma, note=f"point {a.epsilon_point:.3f}")


@retried
def laplace_accuracy(
    *, epsilon: float = 1.0, sensitivity: float = 1.0, ks: Sequence[int] = (1, 10, 100),
    betas: Sequence[float] = (0.01, 0.05, 0.2), delta: float = 1e-5, n_trials: int = 20_000, gamma: float = 1e-3,
    rng: RNGLike = None,
) -> TableResult:
    """Prop 1.7 / Prop 1.13: Laplace I and II (thesis scale) have ``P(max_i |error_i| > bound) ≤ β``.

    For every k the two mechanisms release ``n_trials`` answers to k zero queries (one spawned
    stream per trial); the failure rate's one-sided Clopper–Pearson lower bound at level
    ``1 − γ/G`` (Bonferroni over the ``G = 2·|ks|·|betas|`` cases) must be ≤ β. Statistic: the max
    of ``CP_L − β``. Table columns: ``mechanism, k, beta, bound, fail_rate, cp_lower``.
    """
    g = resolve_rng(rng)
    rows, worst = [], -1.0
    n_cases = len(ks) * len(betas) * 2
    for k in ks:
        mechs = (("I", LaplaceI(epsilon=epsilon, sensitivity=sensitivity, k=k)),
                 ("II", LaplaceII(epsilon=epsilon, delta=delta, sensitivity=sensitivity, k=k, calibration="thesis")))
        for label, mech in mechs:
            err = np.array([np.max(np.abs(mech.release(np.zeros(k), rng=gt))) for gt in spawn(g, n_trials)])
            for beta in betas:
                bound = (laplace_I_error_bound(sensitivity, k, epsilon, beta) if label == "I"
                         else laplace_II_error_bound(sensitivity, k, epsilon, delta, beta))
                x = int(np.sum(err > bound))
                cl, _ = clopper_pearson(x, n_trials, 1 - gamma / n_cases, side="lower")
                worst = max(worst, cl - beta)
                rows.append(dict(mechanism=label, k=k, beta=beta, bound=bound, fail_rate=x / n_trials, cp_lower=cl))
    c = check("Prop 1.13", "Laplace I and II: P(max error > bound) ≤ β (max of CP_L − β over k, β)", worst, 0.0, relation="<=",
              confidence=1 - gamma)
    return TableResult(checks=(c,), table=pd.DataFrame(rows))


def laplace_accuracy_exact(
    accuracy: TableResult, *, epsilon: float = 1.0, sensitivity: float = 1.0, delta: float = 1e-5, n_trials: int,
    gamma: float = 1e-3,
) -> TableResult:
    """D–R Thm 3.8 with its exact oracle, beside the Monte Carlo of :func:`laplace_accuracy`.

    For every row of ``accuracy.table`` (mechanism I or II, k, β, bound) the exact failure
    probability is ``p = P(max_i |Lap_i(b)| > bound) = 1 − (1 − e^{−t})^k`` with ``t = bound/b`` and
    ``b`` the mechanism's scale (:func:`~dpkit.evaluation.oracles.laplace_max_failure_exact`; at
    ``t = ln(k/β)`` it is ``1 − (1 − β/k)^k``). Two checks:

    - ``"D-R Thm 3.8 (exact)"`` — the theorem: ``max p/β ≤ 1`` (exact; tolerance 1e-12 for float64
      rounding, since ``p = β`` exactly at k = 1);
    - ``"D-R Thm 3.8 (MC vs exact)"`` — the Monte-Carlo failure counts (``n_trials`` trials per row,
      the same draws as ``accuracy``) agree with ``p``: two-sided exact binomial test
      (:func:`scipy.stats.binomtest`) per row at level ``γ/G`` (Bonferroni over the G rows); the
      statistic is the smallest p-value, the bound ``γ/G``. A correct sampler fails it with probability ≤ γ.

    ``epsilon``, ``sensitivity``, ``delta`` must be those ``accuracy`` was run with. Table columns:
    the accuracy table's plus ``scale, t, p_exact, slack`` (β/p) and ``p_value``.
    """
    t_in = accuracy.table
    n_trials = int(n_trials)
    rows, ratio, p_min = [], 0.0, 1.0
    for r in t_in.to_dict("records"):
        k = int(r["k"])
        mech = (LaplaceI(epsilon=epsilon, sensitivity=sensitivity, k=k) if r["mechanism"] == "I"
                else LaplaceII(epsilon=epsilon, delta=delta, sensitivity=sensitivity, k=k, calibration="thesis"))
        t = float(r["bound"]) / mech.scale
        p = laplace_max_failure_exact(t, k)
        x = int(round(float(r["fail_rate"]) * n_trials))
        pv = float(stats.binomtest(x, n_trials, p, alternative="two-sided").pvalue)
        ratio, p_min = max(ratio, p / float(r["beta"])), min(p_min, pv)
        rows.append(dict(r, scale=mech.scale, t=t, p_exact=p, slack=float(r["beta"]) / p, p_value=pv))
    G = len(rows)
    checks = (
        check("D-R Thm 3.8 (exact)", "Laplace, k queries: exact P(max error > ln(k/β)·b) = 1 − (1 − β/k)^k ≤ β (max ratio to β)",
              ratio, 1.0 + 1e-12, relation="<=", note="tolerance: float64 rounding (equality at k = 1)"),
        check("D-R Thm 3.8 (MC vs exact)",
              "Monte-Carlo failure counts of Prop 1.13 agree with the exact 1 − (1 − e^-t)^k "
              f"(binomial test, min p-value ≥ γ/{G})",
              p_min, gamma / G, relation=">=", confidence=1 - gamma,
              note=f"{n_trials} trials per case, Bonferroni over {G} cases"),
    )
    return TableResult(checks=checks, table=pd.DataFrame(rows))


def gaussian_classic_failure_point(
    *, printed: dict[float, float] | None = None, epsilons: Sequence[float] | None = None,
) -> TableResult:
    """D–R Thm 3.22 with its exact oracle: σ = Δ√(2 ln(1.25/δ))/ε against the exact δ(ε) (Balle–Wang).

    For each δ of ``printed`` (default :data:`GAUSSIAN_FAILURE_POINTS`): ε* solves
    ``δ_exact(ε*) = δ`` (:func:`~dpkit.evaluation.oracles.gaussian_classic_failure_epsilon`, brentq,
    xtol 1e-12). Three exact checks:

    - ``"D-R Thm 3.22 (classic, ε < 1)"`` — the theorem's range: ``max δ_exact(ε)/δ ≤ 1`` on ``epsilons``
      (default 199 points of (0, 1): 0.005, 0.01, …, 0.995);
    - ``"D-R Thm 3.22 (ε* as printed)"`` — ``max |ε* − printed| ≤ 0.05`` (the printed values have one decimal);
    - ``"D-R Thm 3.22 (δ(ε*) = δ)"`` — the root is one: ``max |δ_exact(ε*)/δ − 1| ≤ 1e-9`` (the seed
      protocol's relative tolerance on probabilities; the solver's own error is ~1e-14 here).

    Table columns: ``delta, eps_star, printed, delta_ratio_at_star, max_ratio_below_1``.
    """
    printed = GAUSSIAN_FAILURE_POINTS if printed is None else dict(printed)
    grid = np.arange(1, 200) / 200 if epsilons is None else np.asarray(epsilons, dtype=float)
    rows = []
    for d, e_pr in printed.items():
        e_star = gaussian_classic_failure_epsilon(d)
        rows.append(dict(delta=d, eps_star=e_star, printed=e_pr, delta_ratio_at_star=gaussian_classic_delta(e_star, d) / d,
                         max_ratio_below_1=max(gaussian_classic_delta(float(e), d) / d for e in grid)))
    tab = pd.DataFrame(rows)
    checks = (
        check("D-R Thm 3.22 (classic, ε < 1)", "σ = Δ√(2 ln(1.25/δ))/ε: exact δ(ε) ≤ δ for ε ∈ (0, 1) (max ratio on a grid)",
              tab.max_ratio_below_1.max(), 1.0, relation="<=", note=f"δ ∈ {list(printed)}, {len(grid)} values of ε"),
        check("D-R Thm 3.22 (ε* as printed)",
              "the classic σ stops being (ε, δ)-DP at ε* ≈ " + " / ".join(f"{v:g}" for v in printed.values())
              + " (δ = " + " / ".join(f"{d:g}" for d in printed) + "): max |ε* − printed|",
              (tab.eps_star - tab.printed).abs().max(), 0.05, relation="<=",
              note="ε* = " + ", ".join(f"{e:.4f}" for e in tab.eps_star)),
        check("D-R Thm 3.22 (δ(ε*) = δ)", "brentq's ε* solves δ_exact(ε*) = δ: max |δ_exact(ε*)/δ − 1|",
              (tab.delta_ratio_at_star - 1).abs().max(), 1e-9, relation="<="),
    )
    return TableResult(checks=checks, table=tab)


def notebook_checks(
    seed: int, quick: bool, false_alarm: float, *, epsilon: float, sensitivity: float, audit_samples: int,
    gauss_epsilons: Sequence[float], gauss_deltas: Sequence[float], ks: Sequence[int], betas: Sequence[float],
    acc_trials: int, lii_delta: float,
) -> NotebookRun:
    """Every check and table row of notebook 50 (``50_laplace_gauss``) run with these parameters.

    The notebook's parameters in lower case; ``quick`` applies its QUICK sizes (10⁵ audit draws, ``ks = [1, 10]``,
    4000 accuracy trials). The streams are spawned from ``seed`` (auditors, post-processing, Gaussian, accuracy) and
    the budget ``false_alarm`` is split over the six statistical checks. ``parts``: ``laplace`` (the three
    Laplace checks), ``post``, ``gauss``, ``classic``, ``acc``, ``acc_exact`` (the sections' results).
    """
    seed = check_seed(seed)
    if quick:
        audit_samples, ks, acc_trials = 100000, [1, 10], 4000
    loss_samples = 20000 if quick else 200000  # draws of the Gaussian privacy loss (KS test)
    params = dict(SEED=seed, QUICK=quick, EPSILON=epsilon, SENSITIVITY=sensitivity, AUDIT_SAMPLES=audit_samples,
                  GAUSS_EPSILONS=gauss_epsilons, GAUSS_DELTAS=gauss_deltas, KS=ks, BETAS=betas, ACC_TRIALS=acc_trials,
                  LII_DELTA=lii_delta, FALSE_ALARM=false_alarm)
    g_aud, g_post, g_gauss, g_acc = spawn(seed, 4)
    budget = FalseAlarmBudget(false_alarm, n_tests=6)  # the two auditors, Prop 1.1, the loss law, Prop 1.13, Thm 3.8
    gamma = budget.level  # the per-test level of every statistical check (negative controls too)
    out = NotebookRecorder()
    laplace = (laplace_exact_ratio(epsilon=epsilon, sensitivity=sensitivity),
               laplace_audit(epsilon=epsilon, sensitivity=sensitivity, n_samples=audit_samples, gamma=gamma, rng=g_aud),
               laplace_under_noised_audit(epsilon=epsilon, sensitivity=sensitivity, n_samples=audit_samples, gamma=gamma,
                                          rng=g_aud))
    out.add(*laplace)
    post = post_processing_audit(epsilon=epsilon, sensitivity=sensitivity, n_samples=audit_samples // 2, gamma=gamma,
                                 rng=g_post)
    out.table("post_processing", post.table.to_dict("records"))
    out.add(*post.checks)
    gauss = gaussian_calibrations(epsilons=gauss_epsilons, deltas=gauss_deltas, sensitivity=sensitivity)
    out.table("gauss", gauss.table.to_dict("records"))
    out.add(*gauss.checks)
    out.add(gaussian_thesis_large_epsilon(epsilon=12.0, delta=1e-3, sensitivity=sensitivity))
    classic = gaussian_classic_failure_point()  # D–R Thm 3.22: exact δ for ε < 1, and the failure point ε* (brentq)
    out.table("gauss_failure_point", classic.table.to_dict("records"))
    out.add(*classic.checks)
    out.add(gaussian_loss_tail(epsilons=gauss_epsilons, deltas=gauss_deltas, sensitivity=sensitivity))
    out.add(gaussian_loss_law(epsilon=0.5, delta=1e-3, sensitivity=sensitivity, n_samples=loss_samples, gamma=gamma,
                              rng=g_gauss))
    out.add(gaussian_audit(epsilon=epsilon, delta=1e-3, sensitivity=sensitivity, n_samples=audit_samples, gamma=gamma,
                           rng=g_gauss))
    acc = laplace_accuracy(epsilon=epsilon, sensitivity=sensitivity, ks=ks, betas=betas, delta=lii_delta, n_trials=acc_trials,
                           gamma=gamma, rng=g_acc)
    out.table("accuracy", acc.table.to_dict("records"))
    out.add(*acc.checks)
    acc_exact = laplace_accuracy_exact(acc, epsilon=epsilon, sensitivity=sensitivity, delta=lii_delta, n_trials=acc_trials,
                                       gamma=gamma)  # D–R Thm 3.8: exact failure probability vs the Monte Carlo above
    out.table("accuracy_exact", acc_exact.table.to_dict("records"))
    out.add(*acc_exact.checks)
    return out.finish(params, budget, laplace=laplace, post=post, gauss=gauss, classic=classic, acc=acc, acc_exact=acc_exact)
