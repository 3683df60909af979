"""Checks of the paper's findings on the near-optimal mechanism for 1-D linear queries, and of its closed forms.

The group ordering of the configurations and "never worse than the staircase" (the paper's findings), the
number of steps of the radius search (:func:`convergence_steps_checks`), the closed-form absolute error against
Monte Carlo (:func:`closed_form_abs_error_checks`) and its geometric limit (:func:`geometric_limit_check`). Each
returns :class:`~dpkit.evaluation.verdicts.Check` values; :mod:`dpkit.claims.linear` re-exports every name.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np

from dpkit.claims.linear_studies import DF4, V4, max_abs
from dpkit.evaluation.verdicts import Check, check
from dpkit.mechanisms.linear.density import LevelSetDensity
from dpkit.mechanisms.linear.levelset import build_level_sets
from dpkit.mechanisms.linear.staircase import optimal_gamma
from dpkit.mechanisms.linear.tuning import RadiusSearch

__all__ = ["group_ordering_checks", "never_worse_than_staircase_check", "StepRow", "StepClaims",
           "convergence_steps_checks", "AbsErrorOracleRow", "AbsErrorOracleClaims", "closed_form_abs_error_checks",
           "geometric_limit_check"]


# ----------------------------------------------------------------------------- the paper's findings (Sec. 6, §7)
def group_ordering_checks(
    curves: Mapping[str, Sequence[RadiusSearch]], *, min_epsilon: float = 1.0, tol: float = 1e-9
) -> tuple[Check, Check]:
    """[3, §6]: min-rate grows with μ(V) in Group 1 (V1 ≤ V2 ≤ V3 ≤ V4) and falls with Δf in Group 2
    (V5 ≥ V6 ≥ V7), at every ε ≥ ``min_epsilon`` of the curves."""
    rr = {k: {r.epsilon: r.rate for r in v} for k, v in curves.items()}
    big = [e for e in rr["V1"] if e >= min_epsilon]
    g1_ok = all(rr["V1"][e] <= rr["V2"][e] <= rr["V3"][e] <= rr["V4"][e] + tol for e in big)
    g2_ok = all(rr["V5"][e] >= rr["V6"][e] >= rr["V7"][e] for e in big)
    at = f"at every ε ≥ {min_epsilon:g} of EPS_CURVE"
    return (
        check("group1-ordering", f"Group 1: min-rate increases with μ(V) (V1 ≤ V2 ≤ V3 ≤ V4) {at}",
              float(g1_ok), 1.0, holds=g1_ok, confidence=None),
        check("group2-ordering", f"Group 2: min-rate decreases with Δf (V5 ≥ V6 ≥ V7) {at}",
              float(g2_ok), 1.0, holds=g2_ok, confidence=None),
    )


def never_worse_than_staircase_check(curves: Mapping[str, Sequence[RadiusSearch]], *, tol: float = 1e-9) -> Check:
    """Paper §7 read as 'min-rate ≤ 1 at every ε' — expected FAIL: at small ε the gaps of V1 cannot be bridged
    without making R₀ wider than the staircase optimum (Theorem 2 is only approximate optimality)."""
    worst = max(r.rate for v in curves.values() for r in v)
    return check("claim-never-worse-than-staircase",
                 "paper §7: 'generally more accurate than staircase' read as min-rate ≤ 1 at every ε",
                 worst, 1.0 + tol, relation="<=", confidence=None, expected="FAIL",
                 note="fails at small ε (e.g. V1 at ε=0.3); Theorem 2 is only approximate optimality")


# ----------------------------------------------------------------------------- closed-form oracles
@dataclass(frozen=True)
class StepRow:
    """One (variant, δ) of :func:`convergence_steps_checks`: dpkit's step count against the closed form."""

    config: str
    radius: float
    rel_radius: float
    steps_dpkit: int
    steps_oracle: int
    converged: bool


@dataclass(frozen=True)
class StepClaims:
    """:func:`convergence_steps_checks`: one check per variant and the table rows."""

    checks: tuple[Check, ...]
    rows: tuple[StepRow, ...]


def convergence_steps_checks(
    configs: Mapping[str, Sequence[Sequence[float]]], rel_radii: Sequence[float], *,
    truncation_radii: Sequence[float] = (0.05, 0.2, 0.45), truncation_epsilon: float = 1.0, tail_tol: float = 1e-12,
) -> StepClaims:
    """Definition 2: the step ``n`` at which :func:`build_level_sets` detects convergence equals the closed form of
    :func:`~dpkit.claims.linear_statistics.convergence_step_oracle` at every ``δ = rel_radii·Δf`` (one check per
    variant; the statistic is the number of δ with a different count, bound 0, exact integers). For the counting
    query ``V = {1}`` the grid is ``rel_radii`` ∪ ``truncation_radii``: for ``δ ≥ 1/2`` the oracle is ``n = 1``, for
    ``δ < 1/2`` (no convergence) the early-stopping step ``K`` at ``tail_tol`` must equal
    :func:`~dpkit.claims.linear_statistics.counting_truncation_step_oracle` (closed-form shells ``±[i − δ, i + δ]``)."""
    from dpkit.claims.linear_statistics import convergence_step_oracle, counting_truncation_step_oracle

    rows: list[StepRow] = []
    checks: list[Check] = []
    for name, V in configs.items():
        dfs = max_abs(V)
        mine = []
        for rel in rel_radii:
            r = float(rel) * dfs
            L = build_level_sets(V, r, keep_shells=False)
            want = convergence_step_oracle(np.asarray(V, dtype=float), r)
            mine.append(StepRow(config=name, radius=r, rel_radius=float(rel), steps_dpkit=int(L.n) if L.converged else -1,
                                steps_oracle=-1 if want is None else int(want), converged=bool(L.converged)))
        bad = sum(row.steps_dpkit != row.steps_oracle for row in mine)
        checks.append(check(f"convergence-steps-{name}",
                            f"{name}: Definition-2 step n of the level sets = closed form n(δ) at every δ/Δf of the grid "
                            "(number of δ with a different n)", bad, 0, relation="<=", confidence=None,
                            note="n(δ): " + ", ".join(f"{row.rel_radius:.3g}→{row.steps_dpkit}/{row.steps_oracle}"
                                                      for row in mine)))
        rows += mine
    count = []
    for r in sorted({*map(float, rel_radii), *map(float, truncation_radii)}):
        if r >= 0.5:
            L = build_level_sets([[1.0, 1.0]], r, keep_shells=False)
            want, got = 1, (int(L.n) if L.converged else -1)
        else:
            L = build_level_sets([[1.0, 1.0]], r, keep_shells=False, epsilon=truncation_epsilon, tail_tol=tail_tol)
            want, got = counting_truncation_step_oracle(r, truncation_epsilon, tail_tol), (-1 if L.converged else int(L.steps))
        count.append(StepRow(config="counting V={1}", radius=r, rel_radius=r, steps_dpkit=got, steps_oracle=want,
                             converged=bool(L.converged)))
    checks.append(check("convergence-steps-counting",
                        f"counting query V={{1}}: n = 1 for δ ≥ 1/2; for δ < 1/2 no convergence and the truncation step K at "
                        f"tail_tol={tail_tol:g}, ε={truncation_epsilon:g} = closed form (number of δ with a different count)",
                        sum(row.steps_dpkit != row.steps_oracle for row in count), 0, relation="<=", confidence=None,
                        note="δ→steps dpkit/oracle: " + ", ".join(f"{row.radius:.3g}→{row.steps_dpkit}/{row.steps_oracle}"
                                                                  for row in count)))
    return StepClaims(checks=tuple(checks), rows=tuple(rows + count))


@dataclass(frozen=True)
class AbsErrorOracleRow:
    """One case of :func:`closed_form_abs_error_checks`: dpkit's ``E|Z|`` against the closed form."""

    case: str
    epsilon: float
    radius: float
    dpkit: float
    closed_form: float
    abs_diff: float
    tolerance: float


def _abs_error_row(case: str, V: Sequence[Sequence[float]], epsilon: float, radius: float, closed: float, *,
                   tail_tol: float | None = None) -> AbsErrorOracleRow:
    from dpkit.claims.linear_statistics import abs_error_rounding_tolerance

    d = LevelSetDensity.from_query(V, epsilon=epsilon, radius=radius, tail_tol=tail_tol)
    tol = abs_error_rounding_tolerance(d.levels, epsilon)
    if not d.levels.converged:  # the truncated construction: its stated interval for the ideal E|Z| widens the tolerance
        tb = d.tail_bound()
        tol += float(tb["abs_error_high"] - tb["abs_error_low"])
    got = d.expected_abs_error
    return AbsErrorOracleRow(case=case, epsilon=float(epsilon), radius=float(radius), dpkit=got, closed_form=closed,
                             abs_diff=abs(got - closed), tolerance=tol)


def _worst_ratio_check(cid: str, claim: str, rows: Sequence[AbsErrorOracleRow], *, expected: str = "PASS") -> Check:
    worst = max(rows, key=lambda r: r.abs_diff / r.tolerance)
    return check(cid, claim + " (max |dpkit − closed form| / tolerance)", worst.abs_diff / worst.tolerance, 1.0,
                 relation="<=", confidence=None, expected=expected,
                 note=f"worst: {worst.case} ε={worst.epsilon:g} δ={worst.radius:.4g}: |Δ|={worst.abs_diff:.3g}, "
                      f"tol={worst.tolerance:.3g} (float64 rounding of the shell sums"
                      + (" + the truncation interval)" if "counting, δ<1/2" in worst.case else ")"))


@dataclass(frozen=True)
class AbsErrorOracleClaims:
    """:func:`closed_form_abs_error_checks`: the checks and the per-case rows."""

    checks: tuple[Check, ...]
    rows: tuple[AbsErrorOracleRow, ...]


def closed_form_abs_error_checks(
    epsilons: Sequence[float], *, gammas: Sequence[float] = (0.1, 0.5, 0.9), counting_radii: Sequence[float] = (0.5, 0.8, 1.7),
    truncated_radii: Sequence[float] = (0.3, 0.1, 0.01), tail_tol: float = 1e-15,
) -> AbsErrorOracleClaims:
    """The closed-form ``E|Z|`` cases (docs/science/linear_queries.md; formulas in :mod:`dpkit.claims.linear_statistics`), each a
    check of :attr:`LevelSetDensity.expected_abs_error` (the shell sums) against the closed form, with a
    tolerance from float64 rounding of those sums (plus, for the truncated construction, the width of its stated
    interval for the ideal ``E|Z|``):

    * ``EZ-V4-staircase``: V4 = [0, Δf] at ``δ = γΔf`` (γ* and ``gammas``) is the staircase of parameter γ;
    * ``EZ-counting-converged``: ``V = {1}`` at ``δ ≥ 1/2`` (converges at n = 1), the same band formula with Δf = 1;
    * ``EZ-counting-truncated``: ``V = {1}`` at ``δ < 1/2`` (never converges): ``1/sinh ε + (δ/2) tanh(ε/2)``.
    """
    from dpkit.claims.linear_statistics import counting_abs_error_closed_form, staircase_abs_error_closed_form

    v4, cnt, trunc = [], [], []
    for e in epsilons:
        for g in (optimal_gamma(e), *gammas):
            v4.append(_abs_error_row(f"V4 γ={g:.4g}", V4, e, g * DF4, staircase_abs_error_closed_form(g, e, DF4)))
        for r in counting_radii:
            cnt.append(_abs_error_row("counting, δ≥1/2", [[1.0, 1.0]], e, r, staircase_abs_error_closed_form(r, e)))
        for r in truncated_radii:
            trunc.append(_abs_error_row("counting, δ<1/2", [[1.0, 1.0]], e, r, counting_abs_error_closed_form(r, e),
                                        tail_tol=tail_tol))
    checks = (
        _worst_ratio_check("EZ-V4-staircase", "V4 = [0, Δf] at δ = γΔf: E|Z| = the staircase closed form "
                           "Δf[γ² + (2γ−1)q/(1−q) + 2q/(1−q)²]/(2[γ + q/(1−q)])", v4),
        _worst_ratio_check("EZ-counting-converged", "counting query V={1} at δ ≥ 1/2: E|Z| = the band closed form with "
                           "Δf = 1, γ = δ", cnt),
        _worst_ratio_check("EZ-counting-truncated", "counting query V={1} at δ < 1/2: E|Z| = 1/sinh ε + (δ/2)tanh(ε/2)",
                           trunc),
    )
    return AbsErrorOracleClaims(checks=checks, rows=tuple(v4 + cnt + trunc))


def geometric_limit_check(epsilon: float, radii: Sequence[float] = (0.4, 0.1, 0.03, 0.01, 0.003, 0.001), *,
                          tail_tol: float = 1e-15) -> Check:
    """For the counting query ``V = {1}``, ``E|Z| → 1/sinh ε`` (the geometric mechanism; docs/science/linear_queries.md) as
    ``δ → 0``. Along the decreasing ``radii`` the error ``|E|Z| − 1/sinh ε|`` must decrease strictly, and the last one
    must be below the derived tolerance ``(δ_min/2) tanh(ε/2)`` (the exact remaining gap, see
    :func:`~dpkit.claims.linear_statistics.counting_abs_error_closed_form`) plus the rounding/truncation tolerance."""
    from dpkit.claims.linear_statistics import abs_error_rounding_tolerance

    radii = [float(r) for r in radii]
    if any(b >= a for a, b in zip(radii, radii[1:])) or radii[0] >= 0.5:
        raise ValueError(f"radii must decrease strictly inside (0, 1/2); got {radii}")
    limit = 1.0 / math.sinh(epsilon)
    errs, tol = [], 0.0
    for r in radii:
        d = LevelSetDensity.from_query([[1.0, 1.0]], epsilon=epsilon, radius=r, tail_tol=tail_tol)
        errs.append(abs(d.expected_abs_error - limit))
        tb = d.tail_bound()
        tol = abs_error_rounding_tolerance(d.levels, epsilon) + float(tb["abs_error_high"] - tb["abs_error_low"])
    bound = radii[-1] / 2 * math.tanh(epsilon / 2) + tol
    decreasing = all(b < a for a, b in zip(errs, errs[1:]))
    return check("EZ-geometric-limit",
                 f"counting query V={{1}}: E|Z| → 1/sinh ε as δ → 0 (ε={epsilon:g}; error decreasing along δ = "
                 f"{radii[0]:g}…{radii[-1]:g}, last error ≤ (δ/2)tanh(ε/2) + rounding)",
                 errs[-1], bound, holds=decreasing and errs[-1] <= bound, confidence=None,
                 note="errors: " + ", ".join(f"{e:.3g}" for e in errs) + f"; decreasing={decreasing}")
