"""Claims of the near-optimal mechanism for 1-D linear queries (Wu, He & Xia 2017, notebook 30).

The science behind each check is on the docs page *The science › Level-set mechanism* (``docs/science/linear_queries.md``);
``[3, …]`` cites the paper (``docs/science/references.md``), whose own sections are also written ``Sec. n``. Each public
``*_check``/``*_checks`` function checks one statement (or a pair measured on the same draws) and returns
:class:`~dpkit.evaluation.verdicts.Check` values; the statistics themselves are in
:mod:`dpkit.claims.linear_statistics`. The study helpers (:func:`rate_maps`, :func:`min_rate_curves`,
:func:`densities_at_radius_star`) run the δ-tuning of Figs 1–2 and (9) that the checks and figures share.

The configurations and studies are :mod:`dpkit.claims.linear_studies`, the checks of the paper's findings and
closed forms :mod:`dpkit.claims.linear_findings`; every name is importable from here.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Mapping, Sequence

import numpy as np
from scipy import stats

from dpkit.claims.linear_findings import (
    AbsErrorOracleClaims,
    AbsErrorOracleRow,
    StepClaims,
    StepRow,
    closed_form_abs_error_checks,
    convergence_steps_checks,
    geometric_limit_check,
    group_ordering_checks,
    never_worse_than_staircase_check,
)
from dpkit.claims.linear_statistics import (
    corollary1_violation,
    exact_level_check,
    lemma3_violation,
    monte_carlo_abs_error,
    monte_carlo_level_check,
    theorem1_lp,
)
from dpkit.claims.linear_studies import (
    CONFIGURATIONS,
    DF4,
    V4,
    MinRateRow,
    densities_at_radius_star,
    min_rate_curves,
    min_rate_rows,
    radius_star,
    rate_maps,
)
from dpkit.claims.results import NotebookRecorder, NotebookRun, retried
from dpkit.core.rng import RNGLike, resolve_rng, spawn
from dpkit.core.validation import check_seed
from dpkit.evaluation.audit import audit
from dpkit.evaluation.verdicts import Check, FalseAlarmBudget, check
from dpkit.mechanisms.laplace import Laplace
from dpkit.mechanisms.linear.density import LevelSetDensity
from dpkit.mechanisms.linear.levelset import LevelSets
from dpkit.mechanisms.linear.staircase import Staircase, optimal_gamma
from dpkit.mechanisms.linear.tuning import RadiusSearch, RateGrid

__all__ = [
    "CONFIGURATIONS", "MinRateRow", "AbsErrorRow", "AbsErrorClaim", "rate_maps", "min_rate_curves", "min_rate_rows",
    "radius_star", "densities_at_radius_star", "privacy_exact_level_check", "privacy_monte_carlo_checks",
    "privacy_auditor_check", "v4_staircase_rate_check", "v4_never_below_1_check", "v4_staircase_pdf_check",
    "v6_equals_v1_check", "lemma3_corollary1_checks", "theorem1_checks", "mc_abs_error_check",
    "staircase_below_laplace_check", "sampler_ks_check", "sampler_ks_printed_support0_check", "convergence_check",
    "truncation_bound_check", "group_ordering_checks", "never_worse_than_staircase_check",
    "StepRow", "StepClaims", "convergence_steps_checks", "AbsErrorOracleRow", "AbsErrorOracleClaims",
    "closed_form_abs_error_checks", "geometric_limit_check", "notebook_checks",
]


# ----------------------------------------------------------------------------- privacy
def privacy_exact_level_check(levels: Mapping[str, LevelSets]) -> Check:
    """Lemma 4 / Theorem 2: ``C_t ⊕ W ⊆ C_{t+1}`` for every t, by interval arithmetic on the stored shells."""
    exact = [exact_level_check(L) for L in levels.values()]
    return check("privacy-exact-level", "Lemma 4/Thm 2: C_t ⊕ W ⊆ C_{t+1} for all t (pieces of (C_t⊕W)∖C_{t+1}, V1–V7 at δ*)",
                 sum(c.violating_pieces for c in exact), 0, relation="<=", confidence=None,
                 note=f"levels checked: {sum(c.levels_checked for c in exact)}")


def privacy_monte_carlo_checks(
    densities: Mapping[str, LevelSetDensity], *, n_samples: int, rng: RNGLike, tol: float = 1e-9
) -> tuple[Check, Check]:
    """``p(r) ≤ e^ε p(r+v)`` at random ``r`` and ``v ∈ W`` (one spawned stream per configuration),
    and the bound is attained (the level sets make the DP inequality tight; docs/science/linear_queries.md)."""
    mc = [monte_carlo_level_check(d, n_samples, rng=g) for d, g in zip(densities.values(), spawn(rng, len(densities)))]
    ratios = [m.max_log_ratio_over_eps for m in mc]
    return (
        check("privacy-mc-ratio", "p(r) ≤ e^ε p(r+v) for random r and v ∈ W: max ln(p(r)/p(r+v))/ε over V1–V7",
              max(ratios), 1.0 + tol, relation="<=", confidence=None),
        check("privacy-tight", "the DP inequality is attained (Thm 2 of [3]): max ln(p(r)/p(r+v))/ε = 1",
              min(ratios), 1.0 - tol, relation=">=", confidence=None),
    )


@retried
def privacy_auditor_check(
    density: LevelSetDensity, *, n_samples: int, rng: RNGLike, confidence: float = 0.95, config: str = "V1"
) -> Check:
    """The empirical auditor (:func:`dpkit.evaluation.audit.audit`) on the sampler: neighbours ``f(x) = 0`` and
    ``f(x') = v = Δf``, threshold events on ``s(y) = ℓ(y − v) − ℓ(y)``; its lower bound must not exceed ε."""
    v_shift = density.sensitivity

    def mech(db: float, rng: np.random.Generator, size: int | None = None) -> np.ndarray | float:
        return db + density.sample(size, rng=rng)

    def level_step(y: np.ndarray) -> np.ndarray:
        y = np.asarray(y, dtype=float)
        return (density.level(y - v_shift) - density.level(y)).astype(float)

    aud = audit(mech, 0.0, v_shift, statistic=level_step, n_samples=n_samples, confidence=confidence, rng=rng)
    return check("privacy-auditor", f"auditor: ε_lb ≤ ε for the sampler ({config} at δ*, shift v = Δf)",
                 aud.epsilon_lb, density.epsilon, relation="<=", confidence=confidence,
                 note=f"plug-in ε = {aud.epsilon_point:.4f}; event {aud.event}")


# ----------------------------------------------------------------------------- exact identities
def v4_staircase_rate_check(epsilons: Sequence[float], *, tol: float = 1e-12) -> Check:
    """V4 = [0, Δf] at δ = γ*Δf is the optimal staircase: ``rate = 1`` at every ε
    (docs/science/linear_queries.md, *Calibration point*)."""
    dev = max(abs(LevelSetDensity.from_query(V4, epsilon=e, radius=optimal_gamma(e) * DF4).rate - 1.0) for e in epsilons)
    return check("V4-staircase-rate", "V4 = [0, Δf] at δ = γ*Δf, γ* = 1/(1+e^{ε/2}): rate = 1 (max |rate − 1| over EPS_CURVE)",
                 dev, tol, relation="<=", confidence=None)


def v4_never_below_1_check(grid: RateGrid, curve: Sequence[RadiusSearch], *, tol: float = 1e-12) -> Check:
    """V4: no δ beats the staircase, on the heat map nor in the δ* searches (which land on γ*Δf)."""
    off = ", ".join(f"{r.radius / (optimal_gamma(r.epsilon) * DF4) - 1:+.2e}" for r in curve)
    return check("V4-never-below-1", "V4: no δ beats the staircase (min of rate over the heat map and the δ* searches)",
                 min(float(np.min(grid.rate)), min(r.rate for r in curve)), 1.0 - tol, relation=">=", confidence=None,
                 note="search δ*/(γ*Δf) − 1: " + off)


def v4_staircase_pdf_check(epsilon: float, *, rng: RNGLike, n_points: int = 20_000, tol: float = 1e-9) -> Check:
    """V4 at δ = γ*Δf: the level-set pdf equals the staircase pdf at uniform points of ``[−6000, 6000]`` (≈ ±6Δf)."""
    d4 = LevelSetDensity.from_query(V4, epsilon=epsilon, radius=optimal_gamma(epsilon) * DF4)
    st4 = Staircase(epsilon=epsilon, sensitivity=DF4)
    zz = resolve_rng(rng).uniform(-6000, 6000, n_points)
    return check("V4-staircase-pdf", "V4 at δ = γ*Δf: level-set pdf = staircase pdf (max relative difference)",
                 float(np.max(np.abs(d4.pdf(zz) / st4.pdf(zz) - 1.0))), tol, relation="<=", confidence=None)


def v6_equals_v1_check(grid_v6: RateGrid, grid_v1: RateGrid, *, tol: float = 1e-12) -> Check:
    """V6 is the set V1 ([3, §6]), so the two heat maps must coincide."""
    return check("V6-equals-V1", "V6 is the set V1: identical rate heat maps (max |difference|)",
                 float(np.max(np.abs(grid_v6.rate - grid_v1.rate))), tol, relation="<=", confidence=None)


def lemma3_corollary1_checks(
    levels: Mapping[str, LevelSets], grids: Mapping[str, RateGrid], *, epsilon: float,
    grid_epsilons: Sequence[float] = (0.3, 1.0, 3.0), tol: float = 1e-9,
) -> tuple[Check, Check]:
    """Lemma 3 (``a_i/b_i`` non-decreasing) and Corollary 1 (discounted running mean ≤ ``a_t/b_t``) on the
    level sets at δ* (at ``epsilon``) and on every build of the heat maps (at ``grid_epsilons``)."""
    lem = [lemma3_violation(L) for L in levels.values()]
    cor = [corollary1_violation(L, epsilon) for L in levels.values()]
    for g in grids.values():
        for Ls in g.levels:
            lem.append(lemma3_violation(Ls))
            cor += [corollary1_violation(Ls, e) for e in grid_epsilons]
    return (
        check("lemma3-monotone", "Lemma 3: a_i/b_i non-decreasing in i (max decrease / Δf over V1–V7 and δ grid)",
              max(lem), tol, relation="<=", confidence=None),
        check("corollary1", "Corollary 1: Σ_{i<t} q^i a_i / Σ_{i<t} q^i b_i ≤ a_t/b_t (max excess / Δf)",
              max(cor), tol, relation="<=", confidence=None),
    )


def theorem1_checks(
    levels: Mapping[str, LevelSets], *, epsilons: Sequence[float], gap_tol: float = 1e-7, profile_tol: float = 1e-6
) -> tuple[Check, Check]:
    """Theorem 1: with the shells fixed, the Charnes–Cooper LP of (5) is solved by ``y_i ∝ e^{−εi}``."""
    lps = [theorem1_lp(L, e) for L in levels.values() for e in epsilons]
    return (
        check("theorem1-lp-value", "Theorem 1: LP optimum of (5) = value at z_i = −i (max relative gap, HiGHS)",
              max(x.relative_gap for x in lps), gap_tol, relation="<=", confidence=None),
        check("theorem1-lp-profile", "Theorem 1: LP solution y_i/y_0 = e^{−εi} (max abs deviation)",
              max(x.max_profile_error for x in lps), profile_tol, relation="<=", confidence=None),
    )


def staircase_below_laplace_check(epsilons: Sequence[float]) -> Check:
    """The staircase beats Laplace at every ε: ``E|Z|_stair/E|Z|_Lap = ε e^{ε/2}/(e^ε − 1) < 1`` (2 sinh(ε/2) > ε)."""
    return check("staircase-below-laplace", "staircase E|Z| < Laplace E|Z| (2 sinh(ε/2) > ε) on the ε grid: max ratio",
                 float(np.max([Staircase(epsilon=e, sensitivity=1.0).mean_abs_error * e for e in epsilons])), 1.0,
                 relation="<", confidence=None)


# ----------------------------------------------------------------------------- samplers
@dataclass(frozen=True)
class AbsErrorRow:
    """Monte-Carlo against closed-form ``E|Z|`` for one configuration at its δ*."""

    config: str
    epsilon: float
    radius_star: float
    mc_abs_error: float
    closed_form_abs_error: float
    z: float


@dataclass(frozen=True)
class AbsErrorClaim:
    """:func:`mc_abs_error_check`: the check and the per-configuration rows of the table."""

    check: Check
    rows: tuple[AbsErrorRow, ...]


def mc_abs_error_check(
    densities: Mapping[str, LevelSetDensity], *, n_samples: int, rng: RNGLike, baseline_rng: RNGLike,
    baseline_sensitivity: float = 101.0, level: float = 9e-4,
) -> AbsErrorClaim:
    """Monte-Carlo ``E|Z|`` = closed form (docs/science/linear_queries.md, *The expected error*) for Algorithm 2
    (one spawned stream of ``rng`` per
    configuration) and for the staircase and Laplace samplers (two spawned streams of ``baseline_rng``, at the
    densities' ε and ``baseline_sensitivity``). ``z = (mean|Z| − E|Z|)/(sd|Z|/√n)``, sd from the closed-form second
    moment; the bound is the two-sided normal critical value at ``level/r`` per run (Bonferroni over the ``r``
    runs: 9 for V1–V7), so a correct sampler fails with probability ≤ ``level`` (CLT; ``confidence = 1 − level``).
    (The default 9·10⁻⁴ is the historical fixed bound 3.89.)"""
    rows, zs = [], []
    for (name, d), g in zip(densities.items(), spawn(rng, len(densities))):
        m = monte_carlo_abs_error(d, n_samples, rng=g)
        zs.append(abs(m.z))
        rows.append(AbsErrorRow(config=name, epsilon=d.epsilon, radius_star=d.levels.radius, mc_abs_error=m.mc,
                                closed_form_abs_error=m.closed_form, z=m.z))
    eps = next(iter(densities.values())).epsilon
    if any(d.epsilon != eps for d in densities.values()):
        raise ValueError(f"densities must share one epsilon; got {sorted({d.epsilon for d in densities.values()})}")
    g1, g2 = spawn(baseline_rng, 2)
    st = Staircase(epsilon=eps, sensitivity=baseline_sensitivity)
    xs = np.abs(st.sample(n_samples, rng=g1))
    zs.append(abs((xs.mean() - st.mean_abs_error) / math.sqrt((st.variance - st.mean_abs_error**2) / n_samples)))
    lap = Laplace(epsilon=eps, sensitivity=baseline_sensitivity, neighbouring="add-remove")
    xl = np.abs(lap.release(np.zeros(n_samples), rng=g2))
    zs.append(abs((xl.mean() - lap.mean_abs_error) / (lap.scale / math.sqrt(n_samples))))  # sd|Z| = b for Laplace
    c = check("mc-abs-error", "Monte-Carlo E|Z| = closed form (max |z| over V1–V7, staircase, Laplace)",
              max(zs), float(stats.norm.isf(level / (2 * len(zs)))), relation="<=", confidence=1.0 - level)
    return AbsErrorClaim(check=c, rows=tuple(rows))


@retried
def sampler_ks_check(density: LevelSetDensity, *, n_samples: int, rng: RNGLike, level: float = 1e-3) -> Check:
    """Algorithm 2 (geometric tail on {1, 2, …}) against the exact CDF: KS p-value ≥ ``level``."""
    p = stats.kstest(density.sample(n_samples, rng=rng), density.cdf).pvalue
    return check("sampler-ks", "Algorithm 2 (tail on {1,2,…}) matches the exact CDF: KS p-value (V5 at δ*)", p, level,
                 relation=">=", confidence=1.0 - level)


def sampler_ks_printed_support0_check(epsilon: float, *, n_samples: int, rng: RNGLike, level: float = 1e-3) -> Check:
    """Negative control (docs/science/errata.md, *erratum-lq-geometric-support*): the printed Algorithm 2 read with a
    geometric on {0, 1, …}, on V4 at δ = 50
    where the tail carries ≈ 1/3 of the mass, must be rejected by the same KS test (expected FAIL)."""
    d4k = LevelSetDensity.from_query(V4, epsilon=epsilon, radius=50.0)
    p = stats.kstest(d4k.sample(n_samples, rng=rng, geometric_support=0), d4k.cdf).pvalue
    return check("sampler-ks-printed-support0",
                 "printed Algorithm 2 read with a geometric on {0,1,…} matches the CDF (KS p-value, V4, δ=50)",
                 p, level, relation=">=", confidence=1.0 - level, expected="FAIL",
                 note="erratum-lq-geometric-support: support {0,…} double-counts R_n's bands")


# ----------------------------------------------------------------------------- construction
def convergence_check(grids: Mapping[str, RateGrid], *, max_steps: int = 2200) -> Check:
    """Definition 2 is reached within ``max_steps`` ([3, §6]: 2 200) for every build of the heat maps."""
    steps = {k: int(np.max(g.steps)) for k, g in grids.items()}
    allconv = all(bool(np.all(g.converged)) for g in grids.values())
    worst = max(steps.values())
    within = f"{max_steps:,}".replace(",", " ")  # 2200 -> "2 200"
    return check("convergence-2200", f"Definition 2 reached within {within} steps for V1–V7 on the whole δ grid (max n)",
                 worst, max_steps, holds=allconv and worst <= max_steps, confidence=None, note=str(steps))


def truncation_bound_check() -> Check:
    """Truncation (docs/science/linear_queries.md, *Convergence*): the counting query V = {1} with δ = 0.3 < 1/2
    never converges; the interval that
    :meth:`LevelSetDensity.tail_bound` states at K = 150 must contain ``E|Z|`` of a 4× longer construction."""
    short = LevelSetDensity.from_query([[1.0, 1.0]], epsilon=0.1, radius=0.3, max_steps=150)
    long = LevelSetDensity.from_query([[1.0, 1.0]], epsilon=0.1, radius=0.3, max_steps=600)
    tb = short.tail_bound()
    e_long = long.expected_abs_error
    outside = max(tb["abs_error_low"] - e_long, e_long - tb["abs_error_high"], 0.0)
    return check("truncation-bound",
                 "counting query V={1}, δ=0.3: truncated at K=150 (no convergence); the stated interval contains E|Z| at K=600",
                 outside, 0.0, holds=(not short.levels.converged) and outside == 0.0, confidence=None,
                 note=f"tail probability {tb['tail_probability']:.3g}, interval [{tb['abs_error_low']:.6g}, "
                      f"{tb['abs_error_high']:.6g}], K=600 value {e_long:.6g}")


def notebook_checks(
    seed: int, quick: bool, false_alarm: float, *, n_delta: int, n_eps: int, max_refine: int, eps_curve: Sequence[float],
    eps_check: float, eps_density: float, mc_samples: int, audit_samples: int, ks_samples: int,
) -> NotebookRun:
    """Every check and table row of notebook 30 (``30_linear_queries``) run with these parameters.

    The notebook's parameters in lower case; ``quick`` applies its QUICK grids and sizes. Five streams are spawned
    from ``seed`` (accuracy Monte Carlo, auditor, sampler KS, level Monte Carlo, the rest); the budget
    ``false_alarm`` is split over the three statistical checks expected to pass. ``parts``: ``grids`` (Figs 1–2),
    ``curves``, ``min_rate`` (the min-rate rows as a table), ``density_v5`` (the V5 density at δ* for
    ``eps_density``), ``dens`` (the densities at δ* for ``eps_check``), ``sections`` (each section's checks by name).
    """
    seed = check_seed(seed)
    import pandas as pd

    if quick:
        n_delta, n_eps, max_refine = 7, 6, 6
        eps_curve = [0.3, 1.0, 5.0]
        mc_samples, audit_samples, ks_samples = 60_000, 60_000, 40_000
    mc_level_samples = 20_000 if quick else 100_000  # random (r, v) pairs per configuration for the Monte-Carlo level check
    configs = CONFIGURATIONS
    rel_deltas = np.geomspace(1e-3, 1.0, n_delta)
    eps_grid = np.geomspace(0.1, 5.0, n_eps)
    g_mc, g_audit, g_ks, g_lvl, g_misc = spawn(seed, 5)
    params = {
        "SEED": seed, "QUICK": quick, "N_DELTA": n_delta, "N_EPS": n_eps, "MAX_REFINE": max_refine, "EPS_CURVE": eps_curve,
        "EPS_CHECK": eps_check, "EPS_DENSITY": eps_density, "MC_SAMPLES": mc_samples, "AUDIT_SAMPLES": audit_samples,
        "KS_SAMPLES": ks_samples, "delta_over_sensitivity_grid": [1e-3, 1.0, n_delta], "epsilon_grid": [0.1, 5.0, n_eps],
        "configurations": configs, "FALSE_ALARM": false_alarm,
    }
    budget = FalseAlarmBudget(false_alarm, n_tests=3)  # privacy-auditor, mc-abs-error, sampler-ks
    out = NotebookRecorder()
    sections: dict[str, tuple[Check, ...]] = {}
    grids = rate_maps(configs, rel_deltas, eps_grid)
    curves = min_rate_curves(configs, eps_curve, grids, max_refine=max_refine)
    min_rate = [asdict(row) for row in min_rate_rows(curves)]
    for row in min_rate:
        out.row(**row)
    rad5 = radius_star(configs["V5"], eps_density, curve=curves["V5"], grid=grids["V5"], max_refine=max_refine)
    density_v5 = LevelSetDensity.from_query(configs["V5"], epsilon=eps_density, radius=rad5)
    dens = densities_at_radius_star(configs, eps_check, curves=curves, grids=grids, max_refine=max_refine)
    sets = {name: d.levels for name, d in dens.items()}
    n0 = len(out.checks)
    out.add(privacy_exact_level_check(sets))
    out.add(*privacy_monte_carlo_checks(dens, n_samples=mc_level_samples, rng=g_lvl))
    audit_cfg = "V1"
    out.add(privacy_auditor_check(dens[audit_cfg], n_samples=audit_samples, rng=g_audit, config=audit_cfg,
                                  confidence=budget.confidence))
    sections["privacy"], n0 = tuple(out.checks[n0:]), len(out.checks)
    out.add(v4_staircase_rate_check(eps_curve))
    out.add(v4_never_below_1_check(grids["V4"], curves["V4"]))
    out.add(v4_staircase_pdf_check(eps_check, rng=g_misc))
    out.add(v6_equals_v1_check(grids["V6"], grids["V1"]))
    out.add(*lemma3_corollary1_checks(sets, grids, epsilon=eps_check))
    out.add(*theorem1_checks(sets, epsilons=(0.5, eps_check, 2.0)))
    sections["printed"], n0 = tuple(out.checks[n0:]), len(out.checks)
    mc = mc_abs_error_check(dens, n_samples=mc_samples, rng=g_mc, baseline_rng=g_misc, level=budget.level)
    for row in mc.rows:
        out.row(**asdict(row))
    out.add(mc.check)
    out.add(staircase_below_laplace_check(eps_grid))
    out.add(sampler_ks_check(dens["V5"], n_samples=ks_samples, rng=g_ks, level=budget.level))
    out.add(sampler_ks_printed_support0_check(eps_check, n_samples=ks_samples, rng=g_ks, level=budget.level))
    out.add(convergence_check(grids))
    out.add(truncation_bound_check())
    out.add(*group_ordering_checks(curves))
    out.add(never_worse_than_staircase_check(curves))
    sections["accuracy"], n0 = tuple(out.checks[n0:]), len(out.checks)
    steps = convergence_steps_checks(configs, rel_deltas)
    for row in steps.rows:
        out.row(**asdict(row))
    out.add(*steps.checks)
    ez = closed_form_abs_error_checks(eps_curve)
    for row in ez.rows:
        out.row(**asdict(row))
    out.add(*ez.checks)
    out.add(geometric_limit_check(eps_check))
    sections["oracles"] = tuple(out.checks[n0:])
    return out.finish(params, budget, grids=grids, curves=curves, min_rate=pd.DataFrame(min_rate), density_v5=density_v5,
                      dens=dens, sections=sections)
