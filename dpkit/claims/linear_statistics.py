"""The statistics behind the level-set mechanism's claims (docs/science/linear_queries.md; used by :mod:`dpkit.claims.linear`).

Every function returns numbers (a statistic to compare with a bound, in a small frozen
dataclass where there are several); :mod:`dpkit.claims.linear` compares them with the bounds
and builds the :class:`~dpkit.evaluation.verdicts.Check` values.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.optimize import linprog

from dpkit.core.rng import RNGLike, resolve_rng
from dpkit.mechanisms.linear import intervals as iv
from dpkit.mechanisms.linear.density import LevelSetDensity
from dpkit.mechanisms.linear.levelset import LevelSets

__all__ = [
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
]

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
