"""Level sets of the near-optimal mechanism for a 1-D linear query (Wu, He & Xia [3, §5–§6];
docs/science/linear_queries.md; numbers in brackets are entries of docs/science/references.md).

For a neighbour set ``V`` (a finite union of closed intervals) and ball radius ``δ > 0`` (the paper's δ, ``radius``
in code, not approximate DP's), the noise has density ``e^{−iε}/α`` on the shell ``R_i``, with ``W = V ∪ (−V)``:

    C_0 = [−δ, δ],   C_i = C_{i−1} ∪ (C_{i−1} ⊕ W),   R_i = C_i ∖ C_{i−1}.

1. **Convergence** (Definition 2): detected when ``C_{n−1}`` is one interval and the next shells are pairs of bands
   (both halves verified); the tail is then Algorithm 1's ``sum2``.
2. **Truncation**: without convergence after ``K`` steps, the family is closed off with
   ``C'_{K+1} = hull(C_K) ⊕ [−Δf, Δf]`` and bands beyond; the released mechanism stays **exactly ε-DP** and the
   ideal one's tail is bounded by :meth:`dpkit.mechanisms.linear.density.LevelSetDensity.tail_bound`
   (docs/science/linear_queries.md, *The level sets*, *Convergence*).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from dpkit.core.validation import check_int_in_range, check_real_in_range
from dpkit.mechanisms.linear import intervals as iv

__all__ = ["LevelSets", "neighbour_set", "build_level_sets", "ladder_sets", "algorithm1_shells", "sensitivity_of"]


def neighbour_set(values: ArrayLike, *, name: str = "V") -> np.ndarray:
    """Validate a query's neighbour set ``V`` (union of closed intervals; points allowed).

    Raises
    ------
    ValueError
        If ``V`` is empty, malformed (``start > end``, non-finite) or has no usable
        interval, i.e. ``V ⊆ {0}``: then ``Δf = max|v| = 0`` and the query is constant
        (no noise is needed and the level sets are undefined).
    """
    V = iv.as_union(values, name=name, allow_empty=True)
    if V.shape[0] == 0:
        raise ValueError(f"{name} (the query's neighbour set) must contain at least one interval; got an empty set")
    if float(np.max(np.abs(V))) == 0.0:
        raise ValueError(
            f"{name} contains no usable interval: every value is 0, so the sensitivity max|v| is 0 "
            "(the query is constant on neighbours and needs no noise); give intervals with some v != 0"
        )
    return V


def sensitivity_of(V: np.ndarray) -> float:
    """Add/remove sensitivity ``Δf = max_{v ∈ V} |v|`` ([3, §2]; docs/science/errata.md, *erratum-lq-sensitivity*)."""
    return float(np.max(np.abs(np.asarray(V, dtype=float))))


@dataclass(frozen=True, eq=False)
class LevelSets:
    """The shells ``R_0..R_n`` of the construction plus the geometric tail.

    Attributes
    ----------
    V, W : numpy.ndarray
        Neighbour set and ``W = V ∪ (−V)``.
    radius : float
        Ball radius δ ([3, §5.1]).
    sensitivity : float
        ``Δf = max|v|``.
    n : int
        Index of the last explicit shell; levels ``n + j`` (``j ≥ 1``) are the bands
        ``±(a_n + [jΔf, (j+1)Δf])``.
    a_n : float
        Inner radius of ``R_n``'s outer bands (Definition 2 / Algorithm 2).
    converged : bool
        Definition 2 reached (otherwise the construction was closed off, see module doc).
    steps : int
        Number of Minkowski steps computed (``= n`` when converged, ``K`` when truncated).
    measures, abs_integrals, sq_integrals : numpy.ndarray
        ``μ(R_i)``, ``∫_{R_i}|r|dr`` and ``∫_{R_i} r² dr`` for ``i = 0..n`` (the ``b_i``,
        ``a_i`` of [3, §3]).
    shells : tuple of numpy.ndarray or None
        The shells themselves (``keep_shells=True``).
    tol : float
        Absolute tolerance of the interval arithmetic.
    """

    V: np.ndarray
    W: np.ndarray
    radius: float
    sensitivity: float
    n: int
    a_n: float
    converged: bool
    steps: int
    measures: np.ndarray
    abs_integrals: np.ndarray
    sq_integrals: np.ndarray
    shells: tuple[np.ndarray, ...] | None = field(default=None, repr=False)
    tol: float = 0.0

    @property
    def truncated(self) -> bool:
        return not self.converged

    @property
    def outer_radius(self) -> float:
        """``ρ = a_n + Δf``: the explicit shells cover ``[−ρ, ρ]``."""
        return self.a_n + self.sensitivity

    def cumulative(self, t: int) -> np.ndarray:
        """``C_t = R_0 ∪ … ∪ R_t`` for ``t ≤ n`` (needs ``keep_shells=True``)."""
        if self.shells is None:
            raise ValueError("cumulative() needs the shells; build with keep_shells=True")
        t = check_int_in_range(t, name="t", low=0, high=self.n)
        return iv.union(*self.shells[: t + 1], tol=self.tol)

    def summary(self) -> dict[str, Any]:
        return {
            "radius": self.radius,
            "sensitivity": self.sensitivity,
            "n": self.n,
            "a_n": self.a_n,
            "converged": self.converged,
            "steps": self.steps,
        }


def _sq_integral(A: np.ndarray) -> float:
    A = np.asarray(A, dtype=float).reshape(-1, 2)
    s, e = A[:, 0], A[:, 1]
    return float(np.sum(e * e * e - s * s * s) / 3.0)


def _dilate(C: np.ndarray, Ws: np.ndarray, We: np.ndarray, tol: float) -> np.ndarray:
    """``C ⊕ W`` merged: :func:`intervals.minkowski_sum` fused into few numpy calls (the
    level-set loop is dominated by per-call overhead, ~2 000 steps for V7)."""
    s = (C[:, 0, None] + Ws[None, :]).ravel()
    e = (C[:, 1, None] + We[None, :]).ravel()
    order = np.argsort(s, kind="stable")
    s, e = s[order], e[order]
    run = np.maximum.accumulate(e)
    brk = np.flatnonzero(s[1:] > run[:-1] + tol)
    out = np.empty((brk.size + 1, 2))
    out[0, 0] = s[0]
    out[1:, 0] = s[brk + 1]
    out[:-1, 1] = run[brk]
    out[-1, 1] = run[-1]
    return out


def _cumulative_integrals(C: np.ndarray) -> tuple[float, float, float]:
    """``(μ(C), ∫_C|r|, ∫_C r²)`` for a normalised union."""
    s, e = C[:, 0], C[:, 1]
    s2, e2 = s * s, e * e
    return (
        float(np.sum(e - s)),
        float(np.sum(np.copysign(e2, e) - np.copysign(s2, s)) / 2.0),
        float(np.sum(e2 * e - s2 * s) / 3.0),
    )


def build_level_sets(
    V: ArrayLike,
    radius: float,
    *,
    max_steps: int = 3000,
    keep_shells: bool = True,
    tol: float | None = None,
    epsilon: float | None = None,
    tail_tol: float | None = None,
) -> LevelSets:
    """Build the shells ``R_i`` for neighbour set ``V`` and ball radius ``δ`` ([3, Thm 2, §6]).

    Parameters
    ----------
    V : array_like
        The query's neighbour set as ``[[s, e], ...]`` (points ``[v, v]`` allowed).
    radius : float
        Ball radius ``δ > 0`` of ``R_0 = [−δ, δ]`` (not approximate-DP δ).
    max_steps : int
        Truncation point ``K``: if Definition 2 is not met after ``K`` steps, the sets are
        closed off (exactly ε-DP, see module docstring).
    keep_shells : bool
        Keep the shells (needed for pdf, cdf, sampler); the heat maps only need the
        per-shell integrals.
    tol : float, optional
        Interval-arithmetic tolerance; default ``1e-9·Δf``.
    epsilon, tail_tol : float, optional
        If both are given, stop early (truncate) as soon as the closed-off tail's
        probability bound ``T'/A_K`` (see :meth:`LevelSetDensity.tail_bound`) is
        ``≤ tail_tol``. The result is still exactly ε-DP.

    Returns
    -------
    LevelSets

    Raises
    ------
    ValueError
        For an empty/unusable ``V``, ``radius ≤ 0`` or ``max_steps < 1``.
    """
    V = neighbour_set(V)
    delta = check_real_in_range(radius, name="radius (ball radius δ, not approximate-DP δ)", low=0.0, low_inclusive=False)
    if not math.isfinite(delta):
        raise ValueError(f"radius must be finite; got {delta}")
    max_steps = check_int_in_range(max_steps, name="max_steps", low=1)
    dfs = sensitivity_of(V)
    tol = 1e-9 * dfs if tol is None else float(tol)
    W = iv.symmetric_closure(V, tol)
    q = math.exp(-epsilon) if (epsilon is not None and tail_tol is not None) else None

    C = np.array([[-delta, delta]])
    stats = _ShellStats(C, keep_shells)
    mass_K = 2.0 * delta  # Σ q^i μ(R_i) (only used for early stopping)
    converged = False
    n = 0
    a_n = 0.0
    step = 0
    zero_in_W = bool(iv.contains(W, 0.0))  # then C ⊕ W ⊇ C and the union is not needed
    Ws, We = W[:, 0].copy(), W[:, 1].copy()
    for step in range(1, max_steps + 1):
        Cn = _dilate(C, Ws, We, tol) if zero_in_W else iv.union(C, iv.minkowski_sum(C, W, tol), tol=tol)
        stats.grow(C, Cn, tol)
        A = _converged_at(C, Cn, W, dfs, tol, step)
        C = Cn
        if A is not None:
            converged, n, a_n = True, step, A
            break
        if q is not None:
            mass_K += q**step * stats.mus[-1]
            rho = float(np.max(np.abs(C)))
            tail = q ** (step + 1) * (2 * (rho + dfs) - iv.measure(C)) + 2 * dfs * q ** (step + 2) / (1 - q)
            if tail / mass_K <= tail_tol:
                break
    if not converged:
        # close off: R_{K+1} = hull(C_K) ⊕ [−Δf, Δf] ∖ C_K
        K = step
        rho = float(np.max(np.abs(C)))
        closing = np.array([[-rho - dfs, rho + dfs]])
        stats.add_shell(iv.difference(closing, C, tol))
        n, a_n = K + 1, rho
    return LevelSets(V=V, W=W, radius=delta, sensitivity=dfs, n=n, a_n=a_n, converged=converged, steps=step,
                     measures=np.asarray(stats.mus), abs_integrals=np.asarray(stats.gs), sq_integrals=np.asarray(stats.hs),
                     shells=tuple(stats.shells) if keep_shells else None, tol=tol)


class _ShellStats:
    """``μ(R_i)``, ``∫_{R_i}|r|``, ``∫_{R_i} r²`` (and the shells ``R_i`` themselves with ``keep_shells``)."""

    def __init__(self, C0: np.ndarray, keep_shells: bool) -> None:
        delta = float(C0[0, 1])
        self.keep_shells = keep_shells
        self.shells: list[np.ndarray] = [C0.copy()]
        self.mus = [2.0 * delta]
        self.gs = [delta * delta]
        self.hs = [2.0 * delta**3 / 3.0]
        self.cum = (2.0 * delta, delta * delta, 2.0 * delta**3 / 3.0)

    def add_shell(self, R: np.ndarray) -> None:
        self.shells.append(R)
        self.mus.append(iv.measure(R))
        self.gs.append(iv.abs_integral(R))
        self.hs.append(_sq_integral(R))

    def grow(self, C: np.ndarray, Cn: np.ndarray, tol: float) -> None:
        """The shell ``R = C_n ∖ C`` of one step."""
        if self.keep_shells:
            self.add_shell(iv.difference(Cn, C, tol))
            return
        # stats only (heat maps): shell integrals as differences of cumulative ones
        # (C_{i−1} ⊆ C_i); rounding ~1e-16·(max|C_i|)^k, negligible for E|Z|
        cum_new = _cumulative_integrals(Cn)
        self.mus.append(cum_new[0] - self.cum[0])
        self.gs.append(cum_new[1] - self.cum[1])
        self.hs.append(cum_new[2] - self.cum[2])
        self.cum = cum_new


def _converged_at(C: np.ndarray, Cn: np.ndarray, W: np.ndarray, dfs: float, tol: float, step: int) -> float | None:
    """``a_n`` if Definition 2 holds at this step (``C = [−a_n, a_n]``, ``C_n = [−a_n − Δf, a_n + Δf]`` and
    ``R_{n+1} = ±(a_n + [Δf, 2Δf])``), else None."""
    if C.shape[0] != 1 or Cn.shape[0] != 1:
        return None
    A = float(C[0, 1])
    eq_tol = tol + 1e-12 * (A + dfs)
    if not (
        abs(C[0, 0] + A) <= eq_tol
        and abs(Cn[0, 1] - (A + dfs)) <= eq_tol
        and abs(Cn[0, 0] + (A + dfs)) <= eq_tol
    ):
        return None
    # Definition 2, second half: R_{n+1} = ±(a_n + [Δf, 2Δf])
    Cnn = iv.union(Cn, iv.minkowski_sum(Cn, W, tol), tol=tol)
    Rn1 = iv.difference(Cnn, Cn, tol)
    want = np.array([[-A - 2 * dfs, -A - dfs], [A + dfs, A + 2 * dfs]])
    if not iv.equal(Rn1, want, 2 * eq_tol):  # pragma: no cover - impossible by the argument above
        raise AssertionError(f"Definition 2 half-check failed at step {step}: {Rn1.tolist()}")
    return A


def ladder_sets(V: ArrayLike, steps: int, *, tol: float | None = None) -> list[np.ndarray]:
    """The ladder shells ``I_0 = {0}, I_1, …, I_steps`` of [3, §4] (δ = 0, points kept).

    ``I_t`` holds the values ``f(x') − f(x)`` reachable in exactly ``t`` add/remove steps
    and not fewer (Lemma 1). Used for the Lemma-1 and Lemma-3 checks on the un-dilated
    construction.
    """
    V = neighbour_set(V)
    steps = check_int_in_range(steps, name="steps", low=0)
    tol = 1e-9 * sensitivity_of(V) if tol is None else float(tol)
    W = iv.symmetric_closure(V, tol)
    C = np.array([[0.0, 0.0]])
    out = [C.copy()]
    for _ in range(steps):
        Cn = iv.union(C, iv.minkowski_sum(C, W, tol), tol=tol)
        out.append(iv.difference(Cn, C, tol))
        C = Cn
    return out


def algorithm1_shells(V: ArrayLike, radius: float, steps: int, *, tol: float | None = None) -> list[np.ndarray]:
    """The literal Algorithm 1 of [3, §6] (corrected): ladder shells ``I_i`` first, then
    ``R_i = (I_i ⊕ [−δ, δ]) ∖ ⋃_{j<i} R_j``. Cost O(n²N²) in the paper's accounting; kept
    only as a cross-check of :func:`build_level_sets` (they agree because dilation
    distributes over union)."""
    delta = check_real_in_range(radius, name="radius (ball radius δ, not approximate-DP δ)", low=0.0, low_inclusive=False)
    V = neighbour_set(V)
    tol = 1e-9 * sensitivity_of(V) if tol is None else float(tol)
    ball = np.array([[-delta, delta]])
    out: list[np.ndarray] = []
    covered = iv.EMPTY.copy()
    for ladder in ladder_sets(V, steps, tol=tol):
        grown = iv.minkowski_sum(ladder, ball, tol)
        R = iv.difference(grown, covered, tol) if covered.size else grown
        out.append(R)
        covered = iv.union(covered, R, tol=tol)
    return out
