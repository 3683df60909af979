"""Claims on the full-grid trigonometric mechanism: rates, LP time, size, privacy (thesis Thm 2.4/2.5, Alg 4/5).

Notebook ``55_trig_rates`` calls these functions; each returns
:class:`~dpkit.evaluation.verdicts.Check` values or typed rows for its table and figures.

* :func:`rate_runs` — mechanism I (Alg 4) on d ∈ {1, 2} and II (Alg 5) on d = 1 over a range
  of n, with the Gaussian-kernel workload (2.1) answered exactly (:func:`dpkit.queries.evaluate.answer_reference`).
* :func:`error_rate_checks` — Thm 2.4 (2) / Thm 2.5 (2): the worst-case error decays at least like
  ``n^{−K/(2d+K)}`` (I) and ``n^{−2K/(3d+2K)}`` (II); a one-sided test on the OLS slope of
  log(error) on log n: PASS iff ``slope − z_{1−γ}·se ≤ exponent``.
* :func:`supremum_fits`, :func:`supremum_rate_checks` — the same test with the error of the worst query of the
  whole class (2.1) (:mod:`dpkit.queries.supremum`, recorded by :func:`rate_runs` with ``supremum_seed``) in
  place of the workload's worst error; :func:`supremum_ratio_sentence` says how far apart the two are.
* :func:`lp_time_check` — Thm 2.4 (3): fitted LP-time slope ≤ ``(3dK + 5d)/(4d + 2K)``.
* :func:`synthetic_size_check`, :func:`vertex_support_check` — Thm 2.4 (4) ``|D̂| = m`` and the
  LP vertex's ``≤ t^d + 1`` support points.
* :func:`moment_privacy` — Thm 2.4 (1): the exact worst-case privacy loss of the moment release
  over all grid pairs (:func:`dpkit.mechanisms.trig.privacy.moment_sensitivity`) with the correct
  constants ≤ ε, and the printed ``Lap(t^d/(nε))`` above ε (negative control).
* :func:`error_terms` — the five error sources of (2.5) switched off one by one (no check).
"""
from __future__ import annotations

import math
from dataclasses import asdict
from typing import Sequence

import numpy as np
from scipy import stats

from dpkit.claims.results import NotebookRecorder, NotebookRun, RowsResult
from dpkit.claims.trig_runs import (  # noqa: F401 - re-exported
    SUPREMUM_MAX_BOXES,
    SUPREMUM_RTOL,
    ErrorTerm,
    MomentPrivacyRow,
    RateRun,
    SlopeFit,
    SupremumRow,
    TrigStreams,
    claimed_exponent,
    error_terms,
    rate_runs,
)
from dpkit.claims.trig_sensitivity import (  # noqa: F401 - re-exported
    SCAN_CONFIGS_FULL,
    SCAN_CONFIGS_QUICK,
    SensitivityScanRow,
    grid_pair_scan,
    sensitivity_scan,
)
from dpkit.core.validation import check_positive_finite, check_positive_int, check_seed
from dpkit.evaluation.verdicts import Check, FalseAlarmBudget, check
from dpkit.mechanisms.trig.basis import basis_indices
from dpkit.mechanisms.trig.grid import grid_points
from dpkit.mechanisms.trig.mechanisms import TrigonometricMechanism, moment_noise
from dpkit.mechanisms.trig.privacy import moment_sensitivity

__all__ = [
    "SCAN_CONFIGS_QUICK", "SCAN_CONFIGS_FULL", "SensitivityScanRow", "grid_pair_scan", "sensitivity_scan",
    "TrigStreams",
    "RateRun",
    "SlopeFit",
    "MomentPrivacyRow",
    "ErrorTerm",
    "rate_runs",
    "slope_fits",
    "error_rate_checks",
    "SUPREMUM_MAX_BOXES",
    "SUPREMUM_RTOL",
    "supremum_fits",
    "supremum_rate_checks",
    "supremum_ratio_sentence",
    "supremum_table",
    "SupremumRow",
    "lp_time_check",
    "synthetic_size_check",
    "vertex_support_check",
    "moment_privacy",
    "error_terms",
    "claimed_exponent",
    "notebook_checks",
]


def _fit(runs: list[RateRun], value: str) -> tuple[float, float, int]:
    fit = stats.linregress(np.log([r.n for r in runs]), np.log([getattr(r, value) for r in runs]))
    return fit.slope, fit.stderr, len(runs)


def slope_fits(runs: tuple[RateRun, ...], *, K: float) -> tuple[SlopeFit, ...]:
    """OLS slopes of log(worst error) on log n per (d, mechanism), then of log(LP time) per d for mechanism I.

    All repetitions enter the fit; groups in ascending (d, mechanism).
    """
    fits: list[SlopeFit] = []
    for d, mech in sorted({(r.d, r.mechanism) for r in runs}):
        s, se, m = _fit([r for r in runs if (r.d, r.mechanism) == (d, mech)], "worst_error")
        fits.append(SlopeFit(d=d, mechanism=mech, slope=s, se=se, claimed=claimed_exponent(d, mech, K), n_points=m))
    for d in sorted({r.d for r in runs if r.mechanism == "I"}):
        s, _, m = _fit([r for r in runs if r.mechanism == "I" and r.d == d], "lp_time")
        claimed = (3 * d * K + 5 * d) / (4 * d + 2 * K)
        fits.append(SlopeFit(d=d, mechanism="I (LP time)", slope=s, se=float("nan"), claimed=claimed, n_points=m))
    return tuple(fits)


def error_rate_checks(fits: tuple[SlopeFit, ...], *, gamma: float = 1e-3) -> tuple[Check, ...]:
    """Thm 2.4 (2) (mechanism I) and Thm 2.5 (2) (II): one check per (d, mechanism) error fit.

    PASS iff ``slope − t_{1−γ, m−2}·se ≤ claimed exponent`` — the one-sided OLS slope test at level γ
    (Student t with ``m − 2`` degrees of freedom for ``m`` points, exact under i.i.d. normal errors
    of the log-error about the line) that the error decays at least as fast as claimed (reported
    confidence ``1 − γ``). The normal quantile used before is anti-conservative for the few points
    of a run: at γ = 3.3·10⁻⁴ its real level is 17γ (m = 9) and 41γ (m = 6) in QUICK mode, 4–5γ (m = 25, 20) in full mode.
    """
    out = []
    for f in fits:
        if f.mechanism not in ("I", "II"):
            continue
        if f.n_points < 3:
            raise ValueError(f"slope fit of mechanism {f.mechanism}, d={f.d} has n_points={f.n_points}; the t test needs ≥ 3")
        q = stats.t.ppf(1 - gamma, df=f.n_points - 2)
        theorem = "2.4" if f.mechanism == "I" else "2.5"
        txt = f"mechanism {f.mechanism}: worst-case error decays at least like n^({f.claimed:.3f}) (OLS slope − t·se ≤ exponent)"
        out.append(check(f"Thm {theorem} (2), d={f.d}", txt, f.slope - q * f.se, f.claimed, relation="<=", confidence=1 - gamma,
                         note=f"slope {f.slope:.3f} ± {f.se:.3f} ({f.n_points} points, t quantile {q:.2f})"))
    return tuple(out)


def supremum_fits(runs: tuple[RateRun, ...], *, K: float) -> tuple[SlopeFit, ...]:
    """OLS slopes of log(class supremum) (:attr:`RateRun.supremum`) on log n per (d, mechanism), ascending.

    ``mechanism`` is "I" or "II" as in :func:`slope_fits`; all repetitions enter the fit.
    """
    fits: list[SlopeFit] = []
    for d, mech in sorted({(r.d, r.mechanism) for r in runs}):
        grp = [r for r in runs if (r.d, r.mechanism) == (d, mech)]
        fit = stats.linregress(np.log([r.n for r in grp]), np.log([r.supremum for r in grp]))
        fits.append(SlopeFit(d=d, mechanism=mech, slope=fit.slope, se=fit.stderr, claimed=claimed_exponent(d, mech, K),
                             n_points=len(grp)))
    return tuple(fits)


def supremum_rate_checks(fits: tuple[SlopeFit, ...], *, gamma: float = 1e-3) -> tuple[Check, ...]:
    """Thm 2.4 (2) / Thm 2.5 (2) on the class supremum: check ``rate-sup-<I|II>-d<d>`` per fit of :func:`supremum_fits`.

    The one-sided OLS slope test of :func:`error_rate_checks` (PASS iff ``slope − t_{1−γ, m−2}·se ≤ claimed``, level
    γ), with the error of the worst query of the whole class — the quantity the theorems bound — in place of the
    workload's worst error. For d ≤ 2 the fitted values are the certified *upper* ends of the supremum's intervals, so
    no point of the fit understates the error of any query of the class: a PASS cannot come from a search that missed
    the worst query (a lower bound from the search could). Where the interval closed, the upper end exceeds the
    supremum by at most the relative gap :data:`SUPREMUM_RTOL`, so each log-value moves by at most ``log(1 + rtol)``
    and the slope by at most ``log(1 + rtol)·Σ|x_i − x̄|/Σ(x_i − x̄)²`` (x = log n): about 10⁻³ at the notebook's
    sizes, far below the slope's standard error.
    """
    out = []
    for f in fits:
        if f.n_points < 3:
            raise ValueError(f"slope fit of mechanism {f.mechanism}, d={f.d} has n_points={f.n_points}; the t test needs ≥ 3")
        q = stats.t.ppf(1 - gamma, df=f.n_points - 2)
        theorem = "2.4" if f.mechanism == "I" else "2.5"
        txt = (f"Thm {theorem} (2), mechanism {f.mechanism}: the class supremum (worst query of (2.1), centres in R^d) "
               f"decays at least like n^({f.claimed:.3f}) (OLS slope − t·se ≤ exponent)")
        out.append(check(f"rate-sup-{f.mechanism}-d{f.d}", txt, f.slope - q * f.se, f.claimed, relation="<=",
                         confidence=1 - gamma,
                         note=f"slope {f.slope:.3f} ± {f.se:.3f} ({f.n_points} points, t quantile {q:.2f})"))
    return tuple(out)


def supremum_table(runs: tuple[RateRun, ...]) -> tuple[SupremumRow, ...]:
    """Per (d, mechanism, n), ascending: medians over the repetitions of the workload's worst error, of the class
    supremum's interval and of their ratio (:attr:`RateRun.supremum` / ``worst_error``)."""
    rows = []
    for d, mech, n in sorted({(r.d, r.mechanism, r.n) for r in runs}):
        grp = [r for r in runs if (r.d, r.mechanism, r.n) == (d, mech, n)]
        rows.append(SupremumRow(
            d=d, mechanism=mech, n=n, reps=len(grp), worst_error=float(np.median([r.worst_error for r in grp])),
            sup_lower=float(np.median([r.sup_lower for r in grp])), supremum=float(np.median([r.supremum for r in grp])),
            ratio=float(np.median([r.supremum / r.worst_error for r in grp])),
            all_closed=all(r.sup_closed is not False for r in grp)))
    return tuple(rows)


def supremum_ratio_sentence(runs: tuple[RateRun, ...]) -> str:
    """A markdown sentence: how much larger the class supremum is than the workload's worst error at the largest n.

    Per (d, mechanism) the ``ratio`` of :func:`supremum_table` at its largest n (the median over the repetitions of
    ``supremum / worst_error``).
    """
    table = supremum_table(runs)
    parts = []
    for d, mech in sorted({(r.d, r.mechanism) for r in table}):
        last = max((r for r in table if (r.d, r.mechanism) == (d, mech)), key=lambda r: r.n)
        parts.append(f"{last.ratio:.2g}× (mechanism {mech}, d = {d}, n = {last.n:,})")
    return ("At the largest n the class supremum is " + ", ".join(parts) + " the workload's worst error "
            "(median over the repetitions of the ratio).")


def lp_time_check(fits: tuple[SlopeFit, ...]) -> Check:
    """Thm 2.4 (3): the fitted LP-time slope minus ``(3dK + 5d)/(4d + 2K)``, maximised over d, is ≤ 0."""
    worst = -math.inf
    for f in fits:
        if f.mechanism == "I (LP time)":
            worst = max(worst, f.slope - f.claimed)
    if worst == -math.inf:
        raise ValueError("fits hold no 'I (LP time)' slope; pass the output of slope_fits")
    return check("Thm 2.4 (3)", "LP time grows no faster than n^((3dK+5d)/(4d+2K)) (max over d of fitted slope − claimed)",
                 worst, 0.0, relation="<=", note="at these sizes the LP time is mostly solver overhead")


def synthetic_size_check(runs: tuple[RateRun, ...]) -> Check:
    """Thm 2.4 (4): the synthetic database has exactly m rows in every run (statistic: share of such runs)."""
    return check("Thm 2.4 (4)", "|D̂| = m in every run", float(np.mean([r.size_ok for r in runs])), 1.0, relation=">=")


def vertex_support_check(runs: tuple[RateRun, ...]) -> Check:
    """The LP's vertex solution has at most ``t^d + 1`` support points (statistic: max of support − t^d − 1)."""
    return check("LP vertex support", "the LP solution has at most t^d + 1 support points (vertex of a (t^d + 1)-row LP)",
                 float(max(r.support - r.basis - 1 for r in runs)), 0.0, relation="<=")


def moment_privacy(*, epsilon: float, K: float, n: int, dims: tuple[int, ...] = (1, 2)) -> RowsResult[MomentPrivacyRow]:
    """Thm 2.4 (1): exact worst-case privacy loss of Alg 4's moment release, correct vs printed constants.

    For each d the exact L1 sensitivity over all pairs of grid points of A^d (the schedule's t
    and N at ``n``) divided by the Laplace scale is the exact worst-case loss. The correct
    ``Lap(2(t^d − 1)/(nε))`` stays within ε; the printed ``Lap(t^d/(nε))`` does not (negative control).
    """
    rows: list[MomentPrivacyRow] = []
    for d in dims:
        sch = TrigonometricMechanism(epsilon=epsilon, K=K).schedule(n, d)
        idx = basis_indices(sch.t, d)
        a = grid_points(sch.N)
        pts = np.stack([g.ravel() for g in np.meshgrid(*([a] * d), indexing="ij")], axis=1)
        sens = moment_sensitivity(pts, idx, n).l1
        for constants in ("correct", "thesis"):
            noise = moment_noise(n, idx.shape[0], epsilon=epsilon, constants=constants)
            rows.append(MomentPrivacyRow(d=d, t=sch.t, N=sch.N, R=idx.shape[0], constants=constants, exact_l1=sens,
                                         bound_l1=noise.l1_sensitivity, scale=noise.scale, eps_exact=sens / noise.scale))
    worst = {c: max(r.eps_exact for r in rows if r.constants == c) for c in ("correct", "thesis")}
    claim = check("Thm 2.4 (1)", "Alg 4 moments with Lap(2(t^d − 1)/(nε)): exact worst-case privacy loss over all grid pairs ≤ ε",
                  worst["correct"], epsilon * (1 + 1e-12), relation="<=")
    control = check("Alg 4 printed Lap(t^d/(nε))", "Alg 4 with the printed Lap(t^d/(nε)): exact worst-case privacy loss ≤ ε",
                    worst["thesis"], epsilon * (1 + 1e-12), relation="<=", expected="FAIL",
                    note="the exact sensitivity exceeds t^d/n (≈ 1.2 t/n for d = 1; erratum-moment-sensitivity)")
    return RowsResult(rows=tuple(rows), checks=(claim, control))


def notebook_checks(
    seed: int, quick: bool, false_alarm: float, *, epsilon: float, delta: float, sigma: float, ns_d1: Sequence[int],
    ns_d2: Sequence[int], reps: int, n_queries: int, J: int, privacy_n: int,
) -> NotebookRun:
    """Every check and table row of notebook 55 (``55_trig_rates``) run with these parameters.

    The notebook's parameters in lower case; ``quick`` applies its QUICK sizes. The streams
    (:class:`TrigStreams`, from ``seed``) are shared by the rate runs and then the error terms, in that order. The
    class supremum of every release is searched with its own streams keyed by ``seed`` (:func:`rate_runs`), so it
    changes none of the other numbers. The one budget ``false_alarm`` is split over the six statistical checks, the
    slope tests on the workload's worst error (:func:`error_rate_checks`) and on the class supremum
    (:func:`supremum_rate_checks`), three each: each runs at level ``false_alarm/6``, and the probability of a false
    alarm in one run of the notebook is at most ``false_alarm``.
    ``parts``: ``runs``, ``fits``, ``sup_fits``, ``privacy``, ``scan``, ``terms`` (the sections' results).
    """
    seed = check_seed(seed)
    sigma = check_positive_finite(sigma, name="sigma")
    reps, n_queries, J = (check_positive_int(v, name=k) for k, v in (("reps", reps), ("n_queries", n_queries), ("J", J)))
    if quick:
        ns_d1, ns_d2, reps, n_queries = [1000, 4000, 16000], [1000, 4000], 3, 30
    K = sigma**2
    params = dict(SEED=seed, QUICK=quick, EPSILON=epsilon, DELTA=delta, SIGMA=sigma, K=K, NS_D1=ns_d1, NS_D2=ns_d2,
                  REPS=reps, N_QUERIES=n_queries, J=J, PRIVACY_N=privacy_n, FALSE_ALARM=false_alarm)
    streams = TrigStreams.from_seed(seed)  # data sets, workloads, mechanism coins: shared by the sections below, in order
    # the six slope tests of Thm 2.4/2.5: on the workload's worst error and on the class supremum, three each
    budget = FalseAlarmBudget(false_alarm, n_tests=6)
    gamma = budget.level  # the per-test level of every statistical check (negative controls too)
    out = NotebookRecorder()
    runs = rate_runs(ns_d1=ns_d1, ns_d2=ns_d2, reps=reps, n_queries=n_queries, J=J, epsilon=epsilon, delta=delta,
                     sigma=sigma, rng=streams, supremum_seed=seed)
    fits = slope_fits(runs, K=K)
    out.add(*error_rate_checks(fits, gamma=gamma))
    out.add(lp_time_check(fits))
    out.add(synthetic_size_check(runs))
    out.add(vertex_support_check(runs))
    sup_fits = supremum_fits(runs, K=K)
    out.add(*supremum_rate_checks(sup_fits, gamma=gamma))
    out.table("rates", (asdict(r) for r in runs))
    privacy = moment_privacy(epsilon=epsilon, K=K, n=privacy_n)
    out.add(*privacy.checks)
    out.table("privacy", (asdict(r) for r in privacy.rows))
    scan = sensitivity_scan(SCAN_CONFIGS_QUICK if quick else SCAN_CONFIGS_FULL, n=privacy_n)
    out.add(*scan.checks)
    out.table("sensitivity-scan", (asdict(r) for r in scan.rows))
    n = ns_d1[len(ns_d1) // 2]
    terms = error_terms(n=n, reps=reps, n_queries=n_queries, J=J, epsilon=epsilon, sigma=sigma, rng=streams)
    for r in terms:
        out.row(part="error_terms", n=n, **asdict(r))
    return out.finish(params, budget, runs=runs, fits=fits, sup_fits=sup_fits, privacy=privacy, scan=scan, terms=terms)
