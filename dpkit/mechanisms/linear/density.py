"""The noise density of the near-optimal linear-query mechanism (Theorem 2, Algorithm 1 of [3]).

``Z`` has density ``p(r) = e^{−ℓ(r)ε}/α``, ``ℓ(r)`` the level of ``r`` and ``α`` Algorithm 1's normaliser
(steps 4–5). The experiment's quantity is ``E|Z|`` in closed form, compared with Laplace and the staircase through
``rate = E|Z|(e^ε − 1)/(Δf e^{ε/2})`` (< 1 beats the staircase); docs/science/linear_queries.md, *The expected error*,
derives it (the printed signed mean is an erratum). The tuning of Figs 1–2 is :mod:`dpkit.mechanisms.linear.tuning`.
Numbers in brackets are entries of ``docs/science/references.md`` ([3]: Wu, He & Xia 2017).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dpkit.core.rng import RNGLike, resolve_rng
from dpkit.core.validation import check_budget_fields, check_epsilon, check_int_in_range
from dpkit.mechanisms.linear.levelset import LevelSets, build_level_sets

__all__ = [
    "LevelSetDensity",
    "laplace_abs_error",
    "staircase_abs_error",
    "abs_error_curve",
    "rate_curve",
]


def laplace_abs_error(epsilon: Any, sensitivity: float) -> np.ndarray | float:
    """``E|Z| = Δf/ε`` of the Laplace mechanism ([2, Thm 3.6])."""
    e = np.asarray(epsilon, dtype=float)
    out = sensitivity / e
    return float(out) if out.ndim == 0 else out


def staircase_abs_error(epsilon: Any, sensitivity: float) -> np.ndarray | float:
    """``E|Z| = Δf e^{ε/2}/(e^ε − 1)`` of the optimal staircase mechanism ([6])."""
    e = np.asarray(epsilon, dtype=float)
    out = sensitivity * np.exp(e / 2) / np.expm1(e)
    return float(out) if out.ndim == 0 else out


def _tail_terms(levels: LevelSets, eps: np.ndarray):
    """Unnormalised tail mass and tail ∫|r| beyond level n, vectorised over ε."""
    q = np.exp(-eps)
    omq = -np.expm1(-eps)
    dfs, a = levels.sensitivity, levels.a_n
    qn1 = np.exp(-eps * (levels.n + 1))
    mass = 2 * dfs * qn1 / omq
    absint = 2 * dfs * qn1 * ((a + dfs / 2) / omq + dfs / omq**2)
    return q, mass, absint


def abs_error_curve(levels: LevelSets, epsilons: Any) -> np.ndarray:
    """Closed-form ``E|Z|`` for one set of level sets and many ε (the shells do not depend on ε)."""
    eps = np.atleast_1d(np.asarray(epsilons, dtype=float))
    i = np.arange(levels.n + 1)
    w = np.exp(-np.outer(eps, i))  # q^i, shape (len eps, n+1)
    _, tmass, tabs = _tail_terms(levels, eps)
    alpha = w @ levels.measures + tmass
    num = w @ levels.abs_integrals + tabs
    return num / alpha


def rate_curve(levels: LevelSets, epsilons: Any, *, baseline: str = "staircase") -> np.ndarray:
    """``rate`` (vs ``"staircase"``, the paper's) or ``E|Z|/(Δf/ε)`` (vs ``"laplace"``)."""
    eps = np.atleast_1d(np.asarray(epsilons, dtype=float))
    e = abs_error_curve(levels, eps)
    if baseline == "staircase":
        return e / staircase_abs_error(eps, levels.sensitivity)
    if baseline == "laplace":
        return e / laplace_abs_error(eps, levels.sensitivity)
    raise ValueError(f"baseline must be one of ('staircase', 'laplace'); got {baseline!r}")


@dataclass(frozen=True, eq=False)
class LevelSetDensity:
    """The density ``p(r) = e^{−ℓ(r)ε}/α`` of Theorem 2 for a 1-D linear query.

    Parameters
    ----------
    levels : LevelSets
        From :func:`dpkit.mechanisms.linear.levelset.build_level_sets` (with ``keep_shells=True`` for
        ``pdf``/``cdf``/``sample``).
    epsilon : float
        Privacy parameter ε > 0.

    Examples
    --------
    >>> d = LevelSetDensity.from_query([[0, 1], [100, 101]], epsilon=1.0, radius=2.0)
    >>> round(d.cdf(0.0), 12)
    0.5
    """

    levels: LevelSets
    epsilon: float
    _pieces: tuple[np.ndarray, ...] = field(init=False, repr=False)
    _by_level: tuple[np.ndarray, ...] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        check_budget_fields(self, delta=False)
        L = self.levels
        if L.shells is None:
            object.__setattr__(self, "_pieces", ())
            object.__setattr__(self, "_by_level", ())
            return
        lev = np.concatenate([np.full(s.shape[0], i) for i, s in enumerate(L.shells)])
        rows = np.vstack(L.shells)
        off = np.concatenate([[0], np.cumsum([s.shape[0] for s in L.shells])])
        object.__setattr__(self, "_by_level", (rows[:, 0].copy(), rows[:, 1].copy(), off))
        order = np.argsort(rows[:, 0], kind="stable")
        starts, ends, lev = rows[order, 0], rows[order, 1], lev[order]
        dens = np.exp(-self.epsilon * lev) / self.alpha
        cum = np.concatenate([[0.0], np.cumsum(dens * (ends - starts))])
        object.__setattr__(self, "_pieces", (starts, ends, lev, dens, cum))

    # ----------------------------------------------------------------- constructors
    @classmethod
    def from_query(
        cls,
        V: Any,
        *,
        epsilon: float,
        radius: float,
        max_steps: int = 3000,
        tail_tol: float | None = None,
    ) -> "LevelSetDensity":
        """Build the level sets for ``(V, radius)`` and the density at ``epsilon``."""
        eps = check_epsilon(epsilon, name="epsilon")
        L = build_level_sets(V, radius, max_steps=max_steps, keep_shells=True, epsilon=eps, tail_tol=tail_tol)
        return cls(levels=L, epsilon=eps)

    # ----------------------------------------------------------------- closed forms
    @property
    def q(self) -> float:
        return math.exp(-self.epsilon)

    @property
    def sensitivity(self) -> float:
        return self.levels.sensitivity

    @property
    def sum1(self) -> float:
        """``Σ_{i≤n} e^{−iε} μ(R_i)`` (Algorithm 1 step 4)."""
        i = np.arange(self.levels.n + 1)
        return float(np.exp(-self.epsilon * i) @ self.levels.measures)

    @property
    def sum2(self) -> float:
        """``2Δf e^{−ε(n+1)}/(1 − e^{−ε})`` (Algorithm 1 step 4)."""
        return float(_tail_terms(self.levels, np.array([self.epsilon]))[1][0])

    @property
    def alpha(self) -> float:
        """Normaliser ``α = sum1 + sum2`` (Algorithm 1 step 5)."""
        return self.sum1 + self.sum2

    @property
    def expected_abs_error(self) -> float:
        """Closed-form ``E|Z|`` (docs/science/linear_queries.md, *The expected error*)."""
        return float(abs_error_curve(self.levels, [self.epsilon])[0])

    mean_abs_error = expected_abs_error

    @property
    def variance(self) -> float:
        """Closed-form ``E[Z²]`` (= variance; Z is symmetric), tail via Σ j^k q^j."""
        L, eps = self.levels, self.epsilon
        q, omq = self.q, -math.expm1(-eps)
        i = np.arange(L.n + 1)
        head = float(np.exp(-eps * i) @ L.sq_integrals)
        a, d = L.a_n, L.sensitivity
        # ∫_{a+jd}^{a+(j+1)d} r² dr = d[(a² + ad + d²/3) + j(2ad + d²) + j² d²]
        s0 = q / omq
        s1 = q / omq**2
        s2 = q * (1 + q) / omq**3
        tail = 2 * math.exp(-eps * L.n) * d * ((a * a + a * d + d * d / 3) * s0 + (2 * a * d + d * d) * s1 + d * d * s2)
        return (head + tail) / self.alpha

    @property
    def mse(self) -> float:
        return self.variance

    @property
    def rate(self) -> float:
        """``E|Z|(e^ε − 1)/(Δf e^{ε/2})``: the paper's ratio to the staircase mechanism."""
        return self.expected_abs_error / float(staircase_abs_error(self.epsilon, self.sensitivity))

    @property
    def rate_vs_laplace(self) -> float:
        """``E|Z|/(Δf/ε)``: the ratio to the Laplace mechanism."""
        return self.expected_abs_error / float(laplace_abs_error(self.epsilon, self.sensitivity))

    def tail_bound(self) -> dict[str, float]:
        """What truncation may have changed (docs/science/linear_queries.md, *Convergence*).

        Returns ``{"tail_probability", "abs_error_low", "abs_error_high"}``. With ``K`` the
        last computed step, the released (closed-off) mechanism puts probability
        ``tail_probability = T'/α`` above level ``K``; the ideal construction's
        unnormalised mass and ``∫|r|`` above ``K`` lie in ``[0, T']`` and ``[0, U']``
        (``C_i ⊆ C'_i`` plus summation by parts), so its ``E|Z|`` lies in
        ``[N_K/(A_K + T'), (N_K + U')/A_K]``. For a converged construction all three
        collapse (probability 0, both bounds equal ``E|Z|``).
        """
        if self.levels.converged:
            e = self.expected_abs_error
            return {"tail_probability": 0.0, "abs_error_low": e, "abs_error_high": e}
        L, eps = self.levels, self.epsilon
        K = L.n - 1
        i = np.arange(K + 1)
        w = np.exp(-eps * i)
        A_K = float(w @ L.measures[: K + 1])
        N_K = float(w @ L.abs_integrals[: K + 1])
        _, tmass, tabs = _tail_terms(L, np.array([eps]))
        T = math.exp(-eps * L.n) * L.measures[L.n] + float(tmass[0])
        U = math.exp(-eps * L.n) * L.abs_integrals[L.n] + float(tabs[0])
        return {"tail_probability": T / (A_K + T), "abs_error_low": N_K / (A_K + T), "abs_error_high": (N_K + U) / A_K}

    # ----------------------------------------------------------------- pointwise
    def _need_shells(self) -> None:
        if not self._pieces:
            raise ValueError("pdf/cdf/level/sample need the shells; build the level sets with keep_shells=True")

    def level(self, r: Any) -> np.ndarray:
        """``ℓ(r) = min{i : r ∈ C_i}`` (closed sets; boundaries take the lower level)."""
        self._need_shells()
        starts, ends, lev, _, _ = self._pieces
        L = self.levels
        r = np.asarray(r, dtype=float)
        ar = np.abs(r)
        out = np.empty(r.shape, dtype=np.int64)
        rho = L.outer_radius
        tail = ar > rho + L.tol
        out[tail] = L.n + np.ceil((ar[tail] - L.a_n) / L.sensitivity).astype(np.int64) - 1
        x = r[~tail]
        k = np.clip(np.searchsorted(starts, x, side="right") - 1, 0, starts.size - 1)
        big = np.iinfo(np.int64).max
        best = np.full(x.shape, big, dtype=np.int64)
        for kk in (k - 1, k, k + 1):
            kk = np.clip(kk, 0, starts.size - 1)
            inside = (x >= starts[kk] - L.tol) & (x <= ends[kk] + L.tol)
            best = np.where(inside, np.minimum(best, lev[kk]), best)
        out[~tail] = best
        return out

    def pdf(self, r: Any) -> np.ndarray:
        """``p(r) = e^{−ℓ(r)ε}/α``."""
        return np.exp(self.logpdf(r))

    def logpdf(self, r: Any) -> np.ndarray:
        """``ln p(r) = −ℓ(r)ε − ln α`` (no underflow far in the tail)."""
        return -self.epsilon * self.level(r) - math.log(self.alpha)

    def cdf(self, x: Any) -> np.ndarray | float:
        """Exact piecewise-linear CDF (finite shells) with the closed-form geometric tails."""
        self._need_shells()
        starts, ends, _, dens, cum = self._pieces
        L = self.levels
        x = np.asarray(x, dtype=float)
        rho, d, q, alpha = L.outer_radius, L.sensitivity, self.q, self.alpha
        omq = -math.expm1(-self.epsilon)

        def right_mass(y: np.ndarray) -> np.ndarray:  # P(Z > y) for y ≥ ρ
            t = (y - rho) / d
            k = np.floor(t)
            theta = t - k
            return d * np.exp(-self.epsilon * (L.n + k + 1)) / alpha * ((1 - theta) + q / omq)

        left_total = d * math.exp(-self.epsilon * (L.n + 1)) / (alpha * omq)
        out = np.empty(x.shape, dtype=float)
        lo = x <= -rho
        hi = x >= rho
        mid = ~(lo | hi)
        out[lo] = right_mass(-x[lo])
        out[hi] = 1.0 - right_mass(x[hi])
        xm = x[mid]
        k = np.searchsorted(starts, xm, side="right") - 1
        kc = np.clip(k, 0, None)
        part = np.where(k >= 0, dens[kc] * np.clip(xm - starts[kc], 0.0, ends[kc] - starts[kc]), 0.0)
        out[mid] = left_total + np.where(k >= 0, cum[kc], 0.0) + part
        out = np.clip(out, 0.0, 1.0)
        return float(out) if out.ndim == 0 else out

    # ----------------------------------------------------------------- sampling
    def sample(
        self, size: int | tuple[int, ...] | None = None, *, rng: RNGLike = None, geometric_support: int = 1
    ) -> np.ndarray | float:
        """Draw ``Z`` by Algorithm 2 of [3] (corrected; docs/science/linear_queries.md, *Sampling*).

        A level ``i ≤ n`` is drawn with probability ``e^{−iε}μ(R_i)/α`` (then an interval
        of ``R_i`` with probability proportional to its length, uniform inside), or the tail with
        probability ``sum2/α``; in the tail ``j ~ Geometric(1 − e^{−ε})`` on ``{1, 2, …}``
        (numpy's convention) and ``Z`` is uniform on ``±(a_n + [jΔf, (j+1)Δf])``.

        ``geometric_support=0`` is the *wrong* reading of the printed Algorithm 2 (support
        ``{0, 1, …}``, which puts tail mass on ``R_n``'s bands; docs/science/errata.md,
        *erratum-lq-geometric-support*); it exists only
        so that tests can show the KS test catches it.
        """
        self._need_shells()
        check_int_in_range(geometric_support, name="geometric_support", low=0, high=1)
        g = resolve_rng(rng)
        L = self.levels
        lev_starts, lev_ends, lev_off = self._by_level
        m = 1 if size is None else int(np.prod(size))
        # step 1: the level (n + 1 stands for the whole tail), P(i) = e^{−iε} μ(R_i)/α
        w = np.append(np.exp(-self.epsilon * np.arange(L.n + 1)) * L.measures, self.sum2)
        cw = np.cumsum(w)
        i = np.minimum(np.searchsorted(cw, g.random(m) * cw[-1], side="right"), L.n + 1)
        out = np.empty(m, dtype=float)
        fin = i <= L.n
        # step 2: an interval of R_i with probability ∝ its length, then uniform inside
        lengths = lev_ends - lev_starts
        clen = np.concatenate([[0.0], np.cumsum(lengths)])
        lo, hi = clen[lev_off[i[fin]]], clen[lev_off[i[fin] + 1]]
        k = np.searchsorted(clen, lo + g.random(lo.size) * (hi - lo), side="right") - 1
        k = np.clip(k, lev_off[i[fin]], lev_off[i[fin] + 1] - 1)
        out[fin] = lev_starts[k] + g.random(k.size) * lengths[k]
        # step 3: the tail, j ~ Geometric(1 − e^{−ε}) on {1, 2, …}; uniform on ±(a_n + [jΔf, (j+1)Δf])
        nt = int(np.count_nonzero(~fin))
        if nt:
            j = g.geometric(-math.expm1(-self.epsilon), size=nt) - (1 - geometric_support)
            side = np.where(g.random(nt) < 0.5, -1.0, 1.0)
            out[~fin] = side * (L.a_n + (j + g.random(nt)) * L.sensitivity)
        if size is None:
            return float(out[0])
        return out.reshape(size)
