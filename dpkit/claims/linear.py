"""Claims of the near-optimal mechanism for 1-D linear queries (Wu, He & Xia 2017, notebook 30).

The science is on ``docs/science/linear_queries.md``; ``[3, …]`` cites the paper (``docs/science/references.md``).
Each ``*_check``/``*_checks`` function returns :class:`~dpkit.evaluation.verdicts.Check` values for the experiment
configurations :data:`CONFIGURATIONS` (V1–V7): the group ordering, "never worse than the staircase", the radius
search's steps, the closed-form error against Monte Carlo and its geometric limit; the study helpers
(:func:`rate_maps`, :func:`min_rate_curves`, :func:`densities_at_radius_star`) run the δ-tuning of Figs 1–2.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Mapping, Sequence

import numpy as np
from scipy import stats
from scipy.optimize import linprog

from dpkit.claims.results import NotebookRecorder, NotebookRun, retried
from dpkit.core.rng import RNGLike, resolve_rng, spawn
from dpkit.core.validation import check_seed
from dpkit.evaluation.audit import audit
from dpkit.evaluation.verdicts import Check, FalseAlarmBudget, check
from dpkit.mechanisms.laplace import Laplace
from dpkit.mechanisms.linear import intervals as iv
from dpkit.mechanisms.linear.density import LevelSetDensity
from dpkit.mechanisms.linear.levelset import LevelSets, build_level_sets
from dpkit.mechanisms.linear.staircase import Staircase, optimal_gamma
from dpkit.mechanisms.linear.tuning import RadiusSearch, RateGrid, optimal_radius, rate_grid

__all__ = [
    "CONFIGURATIONS",
    "MinRateRow",
    "rate_maps",
    "min_rate_curves",
    "min_rate_rows",
    "radius_star",
    "densities_at_radius_star",
    "V4",
    "DF4",
    "max_abs",
    "LevelCheck",
    "LevelRatios",
    "Theorem1LP",
    "AbsErrorZ",
    "exact_level_check",
    "monte_carlo_level_check",
    "lemma3_violation",
    "corollary1_violation",
    "theorem1_lp",
    "monte_carlo_abs_error",
    "privacy_test_set",
    "convergence_step_oracle",
    "counting_truncation_step_oracle",
    "staircase_abs_error_closed_form",
    "counting_abs_error_closed_form",
    "abs_error_rounding_tolerance",
    "group_ordering_checks",
    "never_worse_than_staircase_check",
    "StepRow",
    "StepClaims",
    "convergence_steps_checks",
    "AbsErrorOracleRow",
    "AbsErrorOracleClaims",
    "closed_form_abs_error_checks",
    "geometric_limit_check",
    "AbsErrorRow",
    "AbsErrorClaim",
    "privacy_exact_level_check",
    "privacy_monte_carlo_checks",
    "privacy_auditor_check",
    "v4_staircase_rate_check",
    "v4_never_below_1_check",
    "v4_staircase_pdf_check",
    "v6_equals_v1_check",
    "lemma3_corollary1_checks",
    "theorem1_checks",
    "mc_abs_error_check",
    "staircase_below_laplace_check",
    "sampler_ks_check",
    "sampler_ks_printed_support0_check",
    "convergence_check",
    "truncation_bound_check",
    "notebook_checks",
]


#: The experiment configurations V1–V7 of [3, §6] (V = [0, a] ∪ [b, c], see *erratum-lq-v-set*; V4 degenerate).
CONFIGURATIONS: dict[str, list[list[float]]] = {
    "V1": [[0.0, 1.0], [1000.0, 1001.0]],
    "V2": [[0.0, 100.0], [1000.0, 1001.0]],
    "V3": [[0.0, 500.0], [1000.0, 1001.0]],
    "V4": [[0.0, 1001.0]],
    "V5": [[0.0, 1.0], [100.0, 101.0]],
    "V6": [[0.0, 1.0], [1000.0, 1001.0]],
    "V7": [[0.0, 1.0], [2000.0, 2001.0]],
}


#: The configuration V4 = [0, 1001] (one interval containing 0: the staircase's case).
V4 = CONFIGURATIONS["V4"]


#: Δf of V4 (its largest absolute value, 1001).
DF4 = float(np.max(np.abs(V4)))


def max_abs(V: Sequence[Sequence[float]]) -> float:
    """``max |v|`` over the intervals of ``V``: its sensitivity ``Δf``, the unit of its radii.

    Parameters
    ----------
    V : sequence of [low, high]
        A configuration (:data:`CONFIGURATIONS`).

    Returns
    -------
    float
        The largest absolute endpoint.
    """
    return float(np.max(np.abs(V)))


# ----------------------------------------------------------------------------- studies
def rate_maps(
    configs: Mapping[str, Sequence[Sequence[float]]], rel_deltas: np.ndarray, epsilons: np.ndarray
) -> dict[str, RateGrid]:
    """Figs 1–2: the ``rate`` heat map of every configuration over ``δ = rel_deltas·max|V|`` and ε."""
    return {name: rate_grid(V, rel_deltas * max_abs(V), epsilons) for name, V in configs.items()}


def min_rate_curves(
    configs: Mapping[str, Sequence[Sequence[float]]], epsilons: Sequence[float], grids: Mapping[str, RateGrid], *, max_refine: int
) -> dict[str, list[RadiusSearch]]:
    """δ* of (9) at every ε, reusing each heat map's level sets as the grid stage."""
    return {name: optimal_radius(V, list(epsilons), grid=grids[name], max_refine=max_refine) for name, V in configs.items()}


@dataclass(frozen=True)
class MinRateRow:
    """One row of the min-over-δ table (docs/science/linear_queries.md, *The experiments*)."""

    config: str
    epsilon: float
    radius_star: float
    rate: float
    rate_vs_laplace: float
    abs_error: float
    rate_at_least_1: bool
    evaluations: int


def min_rate_rows(curves: Mapping[str, Sequence[RadiusSearch]]) -> list[MinRateRow]:
    """The table rows of the δ* searches; ``rate_at_least_1`` flags ε where the staircase is not beaten."""
    return [
        MinRateRow(config=name, epsilon=r.epsilon, radius_star=r.radius, rate=r.rate,
                   rate_vs_laplace=r.rate * math.exp(r.epsilon / 2) * r.epsilon / math.expm1(r.epsilon),
                   abs_error=r.abs_error, rate_at_least_1=bool(r.rate >= 1.0), evaluations=r.n_evaluations)
        for name, res in curves.items() for r in res
    ]


def radius_star(
    V: Sequence[Sequence[float]], epsilon: float, *, curve: Sequence[RadiusSearch], grid: RateGrid, max_refine: int
) -> float:
    """δ* at ``epsilon``: taken from ``curve`` when it was searched there, otherwise searched on ``grid``."""
    hit = [r for r in curve if r.epsilon == epsilon]
    return hit[0].radius if hit else optimal_radius(V, epsilon, grid=grid, max_refine=max_refine).radius


def densities_at_radius_star(
    configs: Mapping[str, Sequence[Sequence[float]]], epsilon: float, *, curves: Mapping[str, Sequence[RadiusSearch]],
    grids: Mapping[str, RateGrid], max_refine: int,
) -> dict[str, LevelSetDensity]:
    """The density of every configuration at its δ* for ``epsilon``, with the shells kept (for pdf, cdf, sampler)."""
    return {
        name: LevelSetDensity(levels=build_level_sets(V, radius_star(V, epsilon, curve=curves[name], grid=grids[name],
                                                                      max_refine=max_refine)), epsilon=epsilon)
        for name, V in configs.items()
    }


@dataclass(frozen=True)
class LevelCheck:
    """Result of :func:`exact_level_check`: pieces of ``(C_t ⊕ W) ∖ C_{t+1}`` found (should be 0)."""

    violating_pieces: int
    violating_measure: float
    levels_checked: int


def exact_level_check(levels: LevelSets) -> LevelCheck:
    """Exact privacy check ([3, Lemma 4, Thm 2]): ``C_t ⊕ W ⊆ C_{t+1}`` for all t.

    ``C_t`` is rebuilt from the *stored shells* (the sets the pdf and sampler use) and the
    inclusion is tested with interval arithmetic, including ``t = n`` against the first
    tail band. Equivalent to ``|ℓ(r + v) − ℓ(r)| ≤ 1`` for all ``r`` and ``v ∈ W``, i.e.
    to ``p(r) ≤ e^ε p(r + v)``.
    """
    if levels.shells is None:
        raise ValueError("exact_level_check needs the shells; build with keep_shells=True")
    W, tol = levels.W, levels.tol
    C = levels.shells[0]
    pieces, meas = 0, 0.0
    for t in range(levels.n + 1):
        if t < levels.n:
            Cn = iv.union(C, levels.shells[t + 1], tol=tol)
        else:
            rho = levels.outer_radius
            Cn = np.array([[-rho - levels.sensitivity, rho + levels.sensitivity]])
        bad = iv.difference(iv.minkowski_sum(C, W, tol), Cn, tol)
        pieces += int(bad.shape[0])
        meas += iv.measure(bad)
        C = Cn
    return LevelCheck(pieces, meas, levels.n + 1)


def privacy_test_set(W: np.ndarray, n_inner: int = 3) -> np.ndarray:
    """Shifts ``v ∈ W`` to test: every endpoint of ``W`` plus ``n_inner`` interior points per interval."""
    pts = [W[:, 0], W[:, 1]]
    for k in range(1, n_inner + 1):
        pts.append(W[:, 0] + (W[:, 1] - W[:, 0]) * k / (n_inner + 1))
    v = np.unique(np.concatenate(pts))
    return v[v != 0.0] if np.any(v != 0.0) else v


@dataclass(frozen=True)
class LevelRatios:
    """Result of :func:`monte_carlo_level_check`: the largest level jump and log-density ratio seen."""

    max_level_jump: float
    max_log_ratio_over_eps: float


def monte_carlo_level_check(density: LevelSetDensity, n: int = 20000, *, rng: RNGLike = None) -> LevelRatios:
    """[3, Lemma 4] (b): random ``r`` (half from the density, half uniform over the
    explicit region plus a band of tail) and ``v ∈ W`` (endpoints, interior points and
    uniform draws): returns ``max |ℓ(r+v) − ℓ(r)|`` (must be ≤ 1) and
    ``max ln(p(r)/p(r+v))/ε`` (must be ≤ 1, and = 1 shows the bound is tight)."""
    g = resolve_rng(rng)
    L = density.levels
    rho = L.outer_radius + 2 * L.sensitivity
    r = np.concatenate([density.sample(n // 2, rng=g), g.uniform(-rho, rho, n - n // 2)])
    fixed = privacy_test_set(L.W)
    widths = L.W[:, 1] - L.W[:, 0]
    pick = g.choice(L.W.shape[0], size=n, p=(widths + 1e-12) / (widths + 1e-12).sum())
    v_rand = L.W[pick, 0] + g.random(n) * widths[pick]
    v = np.where(g.random(n) < 0.5, fixed[g.integers(0, fixed.size, n)], v_rand)
    l0, l1 = density.level(r), density.level(r + v)
    ratio = (density.logpdf(r) - density.logpdf(r + v)) / density.epsilon
    return LevelRatios(max_level_jump=float(np.max(np.abs(l1 - l0))), max_log_ratio_over_eps=float(np.max(ratio)))


def _construction(levels: LevelSets) -> tuple[np.ndarray, np.ndarray]:
    """``(a_i, b_i)`` of the genuine shells: a truncated build's closing shell (which also
    holds the remaining holes of ``C_K``) is not part of the paper's construction."""
    m = levels.n + 1 if levels.converged else levels.n
    return levels.abs_integrals[:m], levels.measures[:m]


def _ratios(levels: LevelSets) -> tuple[np.ndarray, np.ndarray]:
    a, b = _construction(levels)
    ok = b > 0
    return a[ok] / b[ok], ok


def lemma3_violation(levels: LevelSets) -> float:
    """Lemma 3: ``a_i/b_i`` (mean ``|r|`` on shell ``R_i``) is non-decreasing in ``i``.

    Returns ``max_i (a_i/b_i − a_{i+1}/b_{i+1})`` relative to ``Δf`` over shells of positive
    measure (≤ 0 when the lemma holds). For a truncated build the closing shell is left out."""
    r, _ = _ratios(levels)
    if r.size < 2:
        return -math.inf
    return float(np.max(r[:-1] - r[1:]) / levels.sensitivity)


def corollary1_violation(levels: LevelSets, epsilon: float) -> float:
    """Corollary 1: ``Σ_{i<t} q^i a_i / Σ_{i<t} q^i b_i ≤ a_t/b_t`` for every ``t ≥ 1``.

    Returns ``max_t (lhs − rhs)/Δf`` (≤ 0 when it holds), computed in a scaled form
    (``q^{i−t}``) so that large ``t`` does not underflow."""
    a, b = _construction(levels)
    worst = -math.inf
    num = den = 0.0
    q = math.exp(-epsilon)
    for t in range(1, a.size):
        num = num * q + a[t - 1]  # running Σ q^{t-1-i} a_i
        den = den * q + b[t - 1]
        if b[t] > 0 and den > 0:
            worst = max(worst, (num / den - a[t] / b[t]) / levels.sensitivity)
    return float(worst)


@dataclass(frozen=True)
class Theorem1LP:
    """Result of :func:`theorem1_lp` (values in the units of ``a_i/b_i``)."""

    levels: int
    lp_value: float
    theory_value: float
    relative_gap: float
    max_profile_error: float


def theorem1_lp(levels: LevelSets, epsilon: float, *, max_levels: int | None = None) -> Theorem1LP:
    """Theorem 1 via the Charnes–Cooper LP (docs/science/linear_queries.md, *Levels*; HiGHS).

    With fixed shells ``R_0..R_K`` (``a_i = ∫_{R_i}|r|``, ``b_i = μ(R_i)``), problem (5)
    in ``u_i = e^{ε z_i}`` becomes: minimise ``Σ a_i y_i`` s.t. ``Σ b_i y_i = 1``,
    ``y_i ≤ e^ε y_{i+1}``, ``y_{i+1} ≤ e^ε y_i``, ``y_i ≤ y_0``, ``y ≥ 0``. Theorem 1
    predicts ``y_i ∝ e^{−εi}``. ``K`` defaults to ``min(n, ⌈18/ε⌉)`` so that ``e^{−εK}``
    stays above the solver tolerance; ``a`` and ``b`` are rescaled to O(1).

    Returns the LP optimum, the value at ``y ∝ e^{−εi}``, their relative gap and
    ``max_i |y_i/y_0 − e^{−εi}|``.
    """
    a_all, b_all = _construction(levels)
    top = a_all.size - 1
    K = min(top, int(math.ceil(18.0 / epsilon))) if max_levels is None else min(top, int(max_levels))
    a = a_all[: K + 1].astype(float)
    b = b_all[: K + 1].astype(float)
    keep = b > 0
    idx = np.flatnonzero(keep)
    a, b = a[keep], b[keep]
    m = a.size
    sa, sb = a.max(), b.sum()
    a_s, b_s = a / sa, b / sb
    E = math.exp(epsilon)
    rows = []
    for i in range(m - 1):
        if idx[i + 1] - idx[i] != 1:
            continue  # a zero-measure shell in between: no adjacent-level constraint
        r1 = np.zeros(m)
        r1[i], r1[i + 1] = 1.0, -E  # y_i ≤ e^ε y_{i+1}
        r2 = np.zeros(m)
        r2[i + 1], r2[i] = 1.0, -E  # y_{i+1} ≤ e^ε y_i
        rows += [r1, r2]
    for i in range(1, m):
        r3 = np.zeros(m)
        r3[i], r3[0] = 1.0, -1.0  # y_i ≤ y_0 (Assumption 1)
        rows.append(r3)
    res = linprog(
        a_s,
        A_ub=np.array(rows) if rows else None,
        b_ub=np.zeros(len(rows)) if rows else None,
        A_eq=b_s[None, :],
        b_eq=[1.0],
        bounds=[(0, None)] * m,
        method="highs",
    )
    if not res.success:  # pragma: no cover - the LP is always feasible and bounded
        raise RuntimeError(f"Theorem-1 LP failed: {res.message}")
    y = res.x
    theo = np.exp(-epsilon * idx)
    theo_val = float(a_s @ theo / (b_s @ theo))
    lp_val = float(res.fun)
    return Theorem1LP(
        levels=int(m),
        lp_value=lp_val * sa / sb,
        theory_value=theo_val * sa / sb,
        relative_gap=abs(lp_val - theo_val) / theo_val,
        max_profile_error=float(np.max(np.abs(y / y[0] - theo))),
    )


@dataclass(frozen=True)
class AbsErrorZ:
    """Result of :func:`monte_carlo_abs_error`: the Monte-Carlo and closed-form ``E|Z|`` and their z-score."""

    mc: float
    closed_form: float
    z: float


def monte_carlo_abs_error(density: LevelSetDensity, n: int, *, rng: RNGLike = None) -> AbsErrorZ:
    """Monte-Carlo ``E|Z|`` from Algorithm 2 against the closed form.

    ``z = (mean|Z| − E|Z|)/(sd|Z|/√n)`` with ``sd|Z|² = E[Z²] − (E|Z|)²`` from the closed
    forms, so ``|z|`` is asymptotically standard normal under a correct sampler."""
    x = np.abs(density.sample(n, rng=rng))
    e = density.expected_abs_error
    sd = math.sqrt(max(density.variance - e * e, 0.0))
    return AbsErrorZ(mc=float(x.mean()), closed_form=e, z=float((x.mean() - e) / (sd / math.sqrt(n))))



# ----------------------------------------------------------------------------- closed-form oracles
def convergence_step_oracle(V: np.ndarray, radius: float) -> int | None:
    """Definition-2 step count ``n`` from the closed form of ``C_i`` (no interval arithmetic) *[derived]*.

    * ``V = [0, Δf]`` (one interval containing 0, e.g. V4): ``W = [−Δf, Δf]`` and ``C_1 = [−δ−Δf, δ+Δf]``, so
      ``n = 1`` for every δ.
    * ``V = {Δf}`` (the counting query, a single point): ``C_i = ⋃_{|k|≤i} [kΔf − δ, kΔf + δ]`` is one interval
      iff ``2δ ≥ Δf``; so ``n = 1`` for ``δ ≥ Δf/2`` and **no** convergence (``None``) for ``δ < Δf/2``.
    * ``V = [0, a] ∪ [b, c]`` with ``0 < a < b < c``: since ``0 ∈ W``, ``C_i = [−δ, δ] ⊕ W^{⊕i}``. A sum of ``j``
      terms from ``[b, c]``, ``k`` from ``[−c, −b]`` and ``i − j − k`` from ``[−a, a]`` is the interval of centre
      ``(j − k)m`` (``m = (b + c)/2``) and half-width ``δ + (j + k)(c − b)/2 + (i − j − k)a``, so ``C_i`` is a union
      of intervals centred at ``dm``, ``|d| ≤ i``. Neighbouring centres overlap iff the two half-widths add up to
      ``≥ m``; the tightest pair gives: ``C_i`` is one interval iff ``2δ + a + (2i − 1)(c − b)/2 ≥ m``, i.e.
      ``i ≥ i* = ⌈((b + c − 2a − 4δ)/(c − b) + 1)/2⌉``. Definition 2 needs ``C_{n−1}`` and ``C_n`` to be single
      intervals, hence ``n = 1`` if ``i* ≤ 1`` (``a + 2δ ≥ b``) and ``n = i* + 1`` otherwise.

    Returns ``None`` when the construction never converges; raises for other shapes of ``V``.
    """
    V = np.asarray(V, dtype=float).reshape(-1, 2)
    delta = float(radius)
    if V.shape[0] == 1 and V[0, 0] == 0.0 and V[0, 1] > 0:
        return 1
    if V.shape[0] == 1 and V[0, 0] == V[0, 1] > 0:
        return 1 if 2 * delta >= V[0, 0] else None
    if V.shape[0] == 2 and V[0, 0] == 0.0 and 0 < V[0, 1] < V[1, 0] < V[1, 1]:
        a, b, c = V[0, 1], V[1, 0], V[1, 1]
        if a + 2 * delta >= b:
            return 1
        return int(math.ceil(((b + c - 2 * a - 4 * delta) / (c - b) + 1) / 2)) + 1
    raise ValueError(f"no closed form for V = {V.tolist()}: give [0, Δf], a point {{Δf}} or [0, a] ∪ [b, c] with 0 < a < b < c")


def counting_truncation_step_oracle(radius: float, epsilon: float, tail_tol: float, *, max_steps: int = 100_000) -> int:
    """Steps ``K`` after which :func:`~dpkit.mechanisms.linear.levelset.build_level_sets` stops early on the counting
    query ``V = {1}`` with ``δ < 1/2`` (never converges), from the closed-form shells *[derived]*:
    ``R_i = ±[i − δ, i + δ]`` (``μ = 4δ``, ``i ≥ 1``), ``μ(C_K) = 2δ(2K + 1)``, ``ρ_K = K + δ``; the rule stops at the
    first ``K`` with ``T'_K / A_K ≤ tail_tol``, ``A_K = 2δ + 4δ Σ_{i=1}^K q^i`` and
    ``T'_K = q^{K+1}(2(ρ_K + 1) − μ(C_K)) + 2q^{K+2}/(1 − q)`` (the closed-off tail of the module docstring)."""
    delta, q = float(radius), math.exp(-float(epsilon))
    if not 0 < delta < 0.5:
        raise ValueError(f"radius must lie in (0, 1/2) (the non-converging counting query); got {radius}")
    mass = 2.0 * delta
    for K in range(1, max_steps + 1):
        mass += q**K * 4.0 * delta
        tail = q ** (K + 1) * (2 * (K + delta + 1) - 2 * delta * (2 * K + 1)) + 2 * q ** (K + 2) / (1 - q)
        if tail / mass <= tail_tol:
            return K
    return max_steps


def staircase_abs_error_closed_form(gamma: float, epsilon: float, sensitivity: float = 1.0) -> float:
    """``E|Z|`` of the level-set density when every shell is a band of width Δf: ``V = [0, Δf]`` with ``δ = γΔf``
    (the staircase of parameter γ), or the counting query ``V = {Δf}`` with ``δ = γΔf ≥ Δf/2`` *[derived]*.
    ``R_0 = [−γΔf, γΔf]``, ``R_i = ±[(γ+i−1)Δf, (γ+i)Δf]``; summing the geometric series,

        E|Z| = Δf [γ² + (2γ − 1) q/(1 − q) + 2q/(1 − q)²] / (2[γ + q/(1 − q)]),   q = e^{−ε},

    which at γ* = 1/(1 + e^{ε/2}) is the staircase value Δf e^{ε/2}/(e^ε − 1) ([6])."""
    q = math.exp(-epsilon)
    s = q / (1 - q)
    return sensitivity * (gamma * gamma + (2 * gamma - 1) * s + 2 * q / (1 - q) ** 2) / (2 * (gamma + s))


def counting_abs_error_closed_form(radius: float, epsilon: float) -> float:
    """``E|Z|`` of the ideal (infinite) construction for the counting query ``V = {1}`` with ``δ < 1/2``
    *[derived]*: ``R_0 = [−δ, δ]``, ``R_i = ±[i − δ, i + δ]`` (``μ = 4δ``, ``∫|r| = 4iδ``), so with ``q = e^{−ε}``

        E|Z| = 2q/(1 − q²) + δ(1 − q)/(2(1 + q)) = 1/sinh ε + (δ/2) tanh(ε/2),

    which tends to the geometric mechanism's ``E|K| = 1/sinh ε`` as ``δ → 0`` (docs/science/linear_queries.md, *Convergence*)."""
    q = math.exp(-epsilon)
    return 2 * q / (1 - q * q) + radius * (1 - q) / (2 * (1 + q))


def abs_error_rounding_tolerance(levels: LevelSets, epsilon: float, *, factor: float = 8.0) -> float:
    """Float64 rounding bound for the closed-form sums of :attr:`LevelSetDensity.expected_abs_error`: each
    shell integral ``∫_{R_i}|r|`` is a difference of squares of endpoints ``≤ ρ_i`` (error ``≤ u ρ_i²`` per endpoint
    pair), weighted by ``q^i`` and divided by ``α``; ``factor·u·(Σ_i q^i (ρ_i + 1)² · pieces_i + E|Z|·α)/α``."""
    u = np.finfo(float).eps
    q = math.exp(-epsilon)
    d = LevelSetDensity(levels=levels, epsilon=epsilon)
    acc = 0.0
    hull = np.array([[-levels.outer_radius, levels.outer_radius]])
    shells = levels.shells if levels.shells is not None else [hull] * (levels.n + 1)
    for i, R in enumerate(shells):
        rho = float(np.max(np.abs(R))) if R.size else 0.0
        acc += q**i * (rho + levels.sensitivity) ** 2 * max(1, R.shape[0])
    return factor * u * (acc + d.expected_abs_error * d.alpha) / d.alpha


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
    :func:`~dpkit.claims.linear.convergence_step_oracle` at every ``δ = rel_radii·Δf`` (one check per
    variant; the statistic is the number of δ with a different count, bound 0, exact integers). For the counting
    query ``V = {1}`` the grid is ``rel_radii`` ∪ ``truncation_radii``: for ``δ ≥ 1/2`` the oracle is ``n = 1``, for
    ``δ < 1/2`` (no convergence) the early-stopping step ``K`` at ``tail_tol`` must equal
    :func:`~dpkit.claims.linear.counting_truncation_step_oracle` (closed-form shells ``±[i − δ, i + δ]``)."""

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
    """The closed-form ``E|Z|`` cases (docs/science/linear_queries.md; formulas in this module), each a
    check of :attr:`LevelSetDensity.expected_abs_error` (the shell sums) against the closed form, with a
    tolerance from float64 rounding of those sums (plus, for the truncated construction, the width of its stated
    interval for the ideal ``E|Z|``):

    * ``EZ-V4-staircase``: V4 = [0, Δf] at ``δ = γΔf`` (γ* and ``gammas``) is the staircase of parameter γ;
    * ``EZ-counting-converged``: ``V = {1}`` at ``δ ≥ 1/2`` (converges at n = 1), the same band formula with Δf = 1;
    * ``EZ-counting-truncated``: ``V = {1}`` at ``δ < 1/2`` (never converges): ``1/sinh ε + (δ/2) tanh(ε/2)``.
    """

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
    :func:`~dpkit.claims.linear.counting_abs_error_closed_form`) plus the rounding/truncation tolerance."""

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
