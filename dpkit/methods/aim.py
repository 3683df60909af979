"""AIM (McKenna, Mullins, Sheldon & Miklau 2022, "AIM: An Adaptive and Iterative Mechanism for
Differentially Private Synthetic Data", Alg 2) on a public grid of [-1, 1]^d, estimated with Private-PGM (``mbi``).

The workload is every two-way marginal of the attributes cut into ``bins`` public cells
(:mod:`dpkit.methods._discrete`); the candidates are its downward closure, weighted as in the paper's §4. With the
total budget ρ (module section "Privacy"), T = ``rounds`` and α = ``alpha``:

1. Initialise: measure every one-way marginal with N(0, σ₀²), σ₀ = √(T/(αρ)), and estimate p̂₀ with Private-PGM.
2. Rounds while budget is left: keep the candidates whose junction tree fits ``max_model_size``; **select** one with
   the exponential mechanism on the quality score (Eq. (2)); **measure** it with Gaussian noise; **estimate** p̂_t
   warm-started; **anneal** (σ/2, 2ε) when the estimate barely moved. The last round takes the remaining ρ.
3. Sample ``m`` rows from the last model, uniformly inside their cells (weights 1/m).

Privacy: replace-one neighbours with public n (L2 sensitivity √2 per marginal, the paper's σ's scaled by √2; a score
moves by at most 2w_r). The rounds are chosen from what was released (annealing, the last round's share), so their
composition is kept by a privacy *filter* (a :class:`~dpkit.core.zcdp.ZCDPLedger` that refuses overspending), in one
of two currencies (``accounting``):

* ``"gdp"`` (default): Gaussian DP, whose filter is valid for fully adaptive composition (Smith & Thakurta 2022):
  the budget is μ²/2 with μ the exact Gaussian-DP parameter of (ε, δ) (the analytic Gaussian's); a measurement at σ
  costs μᵢ²/2 = 1/σ², a selection of ε costs μ(ε)²/2 with μ(ε) the certified Gaussian-DP parameter of an ε-bounded-
  range selection (:func:`~dpkit.core.accountant.selection_gdp_mu`; about 0.62 ε).
* ``"zcdp"``: the paper's, ρ = :func:`~dpkit.core.zcdp.cdp_rho` of (ε, δ); a measurement costs 1/σ², a selection
  ε²/8 (bounded range; Cesar & Rogers 2021).

Either way the filter's total is the budget, so the release is (ε, δ)-DP. The caller's ledger gets one spend of the
whole (ε, δ) before any noise is drawn, the per-step costs in ``params["rho_steps"]`` (in the currency's units,
``params["budget_units"]``). ``delta`` must be positive. ``estimator="compiled"`` (default,
:mod:`dpkit.methods._compiled_pgm`) and ``"mbi"`` sum in different orders, so their releases differ.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from itertools import combinations
from typing import Any

import numpy as np

from dpkit.core import accountant
from dpkit.core.accounting import Ledger, ledger_for
from dpkit.core.rng import RNGLike, spawn
from dpkit.core.threads import one_blas_thread
from dpkit.core.validation import (
    check_budget_fields,
    check_choice,
    check_in_unit_cube,
    check_int_in_range,
    check_real_in_range,
)
from dpkit.core.zcdp import ZCDPLedger, cdp_rho, check_zcdp_budget
from dpkit.mechanisms.exponential import Exponential
from dpkit.methods._compiled_pgm import ESTIMATORS, fitter
from dpkit.methods._discrete import (
    attr_names,
    components,
    grid_codes,
    load_mbi,
    model_marginals,
    synthetic_database,
)
from dpkit.methods.mst import default_bins
from dpkit.queries.release import MethodBase, Release, Timer
from dpkit.queries.workload import GaussianKernelWorkload

__all__ = ["AIM", "AIMStats", "JunctionTreeSizes", "candidates", "jt_size_mb", "initial_scales", "AIM_ACCOUNTINGS",
           "budget_total", "selection_cost", "selection_epsilon"]

SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)


@dataclass(frozen=True, kw_only=True, eq=False)
class AIMStats:
    """The released statistics (``Release.diagnostics``): ``oneway`` (d, bins) noisy one-way counts of the
    initialisation; ``measured`` the later measurements (clique, noisy counts flattened, σ) in round order;
    ``steps`` the ledger of ρ per step (name, ρ, σ or ε); ``annealed`` the rounds after which σ was halved."""

    bins: int
    rho: float
    oneway: np.ndarray
    measured: list[tuple[tuple[int, ...], np.ndarray, float]]
    steps: list[dict[str, Any]]
    annealed: list[int] = field(default_factory=list)

    @property
    def selected(self) -> list[tuple[int, ...]]:
        return [cl for cl, _, _ in self.measured]

    def to_dict(self) -> dict[str, Any]:
        return {"bins": self.bins, "rho": self.rho, "selected": [list(c) for c in self.selected],
                "rounds": len(self.measured), "annealed": list(self.annealed)}


def candidates(d: int) -> tuple[list[tuple[int, ...]], np.ndarray]:
    """W+ of the all-pairs workload and the weights ``w_r = Σ_{s ∈ W} |r ∩ s|`` (module docstring).

    In closed form: attribute i lies in the d − 1 pairs that contain it, so ``w_(i) = d − 1``; a pair
    (i, j) meets itself twice and each of the 2(d − 2) other pairs through i or j once, so
    ``w_(i,j) = 2 + 2(d − 2) = 2(d − 1)`` (summing over all pairs is O(d⁴)).
    """
    work = list(combinations(range(d), 2))
    cands = [(i,) for i in range(d)] + work
    w = np.array([float(d - 1)] * d + [2.0 * (d - 1)] * len(work), dtype=float)
    return cands, w


def jt_size_mb(cliques: list[tuple[int, ...]], d: int, bins: int) -> float:
    """JT-SIZE of the paper (§4): megabytes of the float64 tables of the junction tree of ``cliques``, as
    ``mbi`` builds it (``junction_tree.make_junction_tree``). The reference for :class:`JunctionTreeSizes`,
    which gives the same numbers without building a junction tree per candidate."""
    mbi = load_mbi()
    names = attr_names(d)
    dom = mbi.Domain(names, [bins] * d)
    jtree, _ = mbi.junction_tree.make_junction_tree(dom, [tuple(names[i] for i in cl) for cl in cliques])
    return float(sum(bins ** len(node) for node in jtree.nodes)) * 8.0 / 2.0 ** 20


def _component_cells(edges: frozenset[tuple[int, int]], bins: int) -> int:
    """Σ bins^|C| over the maximal cliques C of the triangulation ``mbi`` makes of one connected graph.

    ``mbi.junction_tree.greedy_order`` eliminates, at each step, the attribute whose neighbourhood
    (itself and its neighbours in the elimination graph) has the fewest cells, the first in domain order
    on ties; with ``bins`` cells per attribute that is the least degree, the lowest index on ties. The
    maximal cliques of the triangulated graph are the maximal sets {v} ∪ N(v) at v's elimination (a
    perfect elimination ordering). Only an earlier-eliminated u can have {v} ∪ N(v) ⊆ {u} ∪ N(u).
    A tree (its edges are its maximal cliques, whatever leaf-first order ``mbi`` takes) is summed
    directly.
    """
    nodes = sorted({a for e in edges for a in e})
    k = len(nodes)
    if len(edges) == k - 1:
        return len(edges) * bins ** 2
    pos = {v: t for t, v in enumerate(nodes)}
    adj = [0] * k
    for a, b in edges:
        adj[pos[a]] |= 1 << pos[b]
        adj[pos[b]] |= 1 << pos[a]
    remaining = list(range(k))
    cliques: list[int] = []
    for _ in range(k):
        v = min(remaining, key=lambda u: adj[u].bit_count())  # first minimum: the lowest index on ties
        nb, gone = adj[v], ~(1 << v)
        cliques.append(nb | (1 << v))
        rest = nb
        while rest:
            low = rest & -rest
            u = low.bit_length() - 1
            adj[u] = (adj[u] | nb) & ~low & gone
            rest ^= low
        adj[v] = 0
        remaining.remove(v)
    return sum(bins ** c.bit_count() for t, c in enumerate(cliques)
               if not any(c & o == c for o in cliques[:t]))


class JunctionTreeSizes:
    """JT-SIZE (:func:`jt_size_mb`, the same numbers) of the model's cliques with one more candidate, for
    every candidate of a round (Alg 2 line 7).

    The model's cliques are attributes and pairs, i.e. a graph. ``mbi``'s greedy elimination treats
    each connected component on its own (its choice inside a component never depends on the others),
    so the size is a sum over components, and a candidate pair changes only the one or two components
    it touches. Component sizes are cached by their edge sets. ``mbi`` builds a junction tree per
    call (pure Python), far too slow over the 5,151 candidates of CRM (docs/performance_notes.md); this is exact
    and cheap where the components are small.
    """

    def __init__(self, d: int, bins: int) -> None:
        self.d, self.bins = d, bins
        self._cells: dict[frozenset[tuple[int, int]], int] = {}
        self.update([(i,) for i in range(d)])

    def _component(self, edges: frozenset[tuple[int, int]]) -> int:
        if not edges:
            return self.bins
        got = self._cells.get(edges)
        if got is None:
            got = self._cells[edges] = _component_cells(edges, self.bins)
        return got

    def update(self, cliques: list[tuple[int, ...]]) -> None:
        """Take the model's cliques (attributes and pairs)."""
        if any(len(c) > 2 for c in cliques):
            raise ValueError("JunctionTreeSizes takes cliques of one or two attributes")
        self.edges = {tuple(sorted(c)) for c in cliques if len(c) == 2}
        self._root = components(self.d, sorted(self.edges))
        comp: dict[int, set[tuple[int, int]]] = {}
        for e in self.edges:
            comp.setdefault(self._root[e[0]], set()).add(e)
        self._edges = {r: frozenset(es) for r, es in comp.items()}
        self._total = sum(self._component(self._edges.get(r, frozenset())) for r in set(self._root))

    def covered(self, r: tuple[int, ...]) -> bool:
        """Whether r lies inside a clique of the model (an attribute always does)."""
        return len(r) == 1 or tuple(sorted(r)) in self.edges

    def with_candidate(self, r: tuple[int, ...]) -> float:
        """JT-SIZE in MB of the model's cliques and r."""
        if self.covered(r):
            return float(self._total) * 8.0 / 2.0 ** 20
        a, b = sorted(r)
        ra, rb = self._root[a], self._root[b]
        ea, eb = self._edges.get(ra, frozenset()), self._edges.get(rb, frozenset())
        if ra == rb:
            total = self._total - self._component(ea) + self._component(ea | {(a, b)})
        else:
            total = self._total - self._component(ea) - self._component(eb) + self._component(ea | eb | {(a, b)})
        return float(total) * 8.0 / 2.0 ** 20


#: The accountings of AIM's filter (module docstring): Gaussian DP (default) or the paper's zCDP.
AIM_ACCOUNTINGS = ("gdp", "zcdp")


def budget_total(epsilon: float, delta: float, accounting: str) -> float:
    """The filter's total for (ε, δ): μ²/2 with μ the exact Gaussian-DP parameter of (ε, δ) (``"gdp"``), or zCDP's ρ
    (``"zcdp"``, Canonne–Kamath–Steinke)."""
    if accounting == "gdp":
        sigma = accountant.calibrate([accountant.gaussian(1.0)], epsilon, delta)
        try:
            total = 0.5 / sigma ** 2
        except OverflowError:  # σ beyond 10¹⁵⁴: μ² underflows
            total = 0.0
        if not (total > 0.0 and math.isfinite(total)):
            raise ValueError(f"the budget epsilon={epsilon!r}, delta={delta!r} gives AIM's Gaussian-DP filter no "
                             f"representable total mu^2/2 (sigma = {sigma!r}); use a larger epsilon or delta")
        return total
    return cdp_rho(epsilon, delta)


def selection_cost(epsilon: float, accounting: str) -> float:
    """A selection's charge to the filter: μ(ε)²/2 (``"gdp"``, :func:`~dpkit.core.accountant.selection_gdp_mu`) or
    ε²/8 (``"zcdp"``)."""
    if accounting == "gdp":
        return 0.0 if epsilon == 0.0 else 0.5 * accountant.selection_gdp_mu(epsilon) ** 2
    return epsilon ** 2 / 8.0


def selection_epsilon(cost: float, accounting: str) -> float:
    """The selection ε whose charge (:func:`selection_cost`) is at most ``cost`` (``"zcdp"``: √(8·cost); ``"gdp"``:
    :func:`~dpkit.core.accountant.selection_epsilon_for_gdp` of √(2·cost), the largest that holds)."""
    if accounting == "gdp":
        return accountant.selection_epsilon_for_gdp(math.sqrt(2.0 * cost))
    return math.sqrt(8.0 * cost)


def _last_selection_epsilon(cost: float) -> float:
    """The last round's selection ε under Gaussian DP (:func:`selection_epsilon`), 0 (a free uniform choice) where the
    share is below the least certified selection's, and at most the largest certified one."""
    if cost <= 0.0 or math.sqrt(2.0 * cost) < accountant.selection_gdp_mu(accountant.MIN_CERTIFIED_SELECTION):
        return 0.0
    if math.sqrt(2.0 * cost) >= accountant.selection_gdp_mu(accountant.MAX_CERTIFIED_SELECTION):
        return accountant.MAX_CERTIFIED_SELECTION
    return selection_epsilon(cost, "gdp")


def _rounds_leave_budget(rho: float, rounds: int, alpha: float, d: int) -> bool:
    """Whether the initialisation's d one-way measurements at σ₀ (ρ = 1/σ₀² each, charged as
    :meth:`AIM.release` charges them) leave a positive ρ for the rounds: T > αd, checked in floating point."""
    if rounds <= alpha * d:
        return False
    sigma0 = math.sqrt(rounds / (alpha * rho))  # σ₀ of initial_scales (the plan as stated, not as a test may patch it)
    return rho - math.fsum([1.0 / sigma0 ** 2] * d) > 0.0


def initial_scales(rho: float, rounds: int, alpha: float, accounting: str = "zcdp") -> tuple[float, float]:
    """(σ₀, ε₀) of Alg 2 line 2 under replace-one: σ₀ = √(T/(αρ)) (a measurement costs 1/σ² = αρ/T), ε₀ the
    selection whose charge is (1 − α)ρ/T (:func:`selection_epsilon`; zCDP: ε₀ = √(8(1 − α)ρ/T))."""
    if accounting == "zcdp":  # the published expression, to the bit
        return math.sqrt(rounds / (alpha * rho)), math.sqrt(8.0 * (1.0 - alpha) * rho / rounds)
    return math.sqrt(rounds / (alpha * rho)), selection_epsilon((1.0 - alpha) * rho / rounds, accounting)


@dataclass(frozen=True, kw_only=True)
class AIM(MethodBase):
    """AIM synthetic data on a public grid (module docstring).

    Parameters
    ----------
    epsilon, delta : float
        Total (ε, δ) budget, δ > 0; ε at most :data:`~dpkit.core.zcdp.MAX_ZCDP_EPSILON` (where the zCDP conversion
        overflows).
    bins : int or None
        Public cells per attribute; ``None``: :func:`~dpkit.methods.mst.default_bins` at the noise of a
        first-round two-way measurement, σ₀ (from n, d and the budget only).
    rounds : int or None
        T of Alg 2 (the initial per-round share is ρ/T); ``None``: the paper's 16d. At least
        :meth:`min_rounds` (T > αd: the initialisation spends d·αρ/T), checked when d is known (at release,
        before anything is spent).
    alpha : float
        Share of a round's ρ spent on the measurement (the rest on the selection); paper: 0.9.
    max_model_size : float
        MAX-SIZE in megabytes of the junction tree's float64 tables; paper: 80.
    m : int
        Rows of the synthetic database.
    iters, final_iters : int
        Mirror-descent iterations of each round's (warm-started) estimate and of the last one.
    estimator : {"compiled", "mbi"}
        Whose implementation of Private-PGM's mirror descent estimates the model (module docstring):
        dpkit's, compiled once per padded size (default), or ``mbi``'s, compiled once per round.
    accounting : {"gdp", "zcdp"}
        The filter's currency (module docstring): Gaussian DP (default) or the paper's zCDP (its releases as
        published).
    """

    label = "aim"

    epsilon: float
    delta: float = 1e-3
    bins: int | None = None
    rounds: int | None = None
    alpha: float = 0.9
    max_model_size: float = 80.0
    m: int = 5000
    iters: int = 1000
    final_iters: int = 1000
    estimator: str = "compiled"
    accounting: str = "gdp"

    def __post_init__(self) -> None:
        check_budget_fields(self, allow_zero_delta=False)
        check_zcdp_budget(self.epsilon, self.delta)
        if self.bins is not None:
            check_int_in_range(self.bins, name="bins", low=2, high=64)
        if self.rounds is not None:
            check_int_in_range(self.rounds, name="rounds", low=1)
        check_real_in_range(self.alpha, name="alpha", low=0.0, high=1.0, low_inclusive=False, high_inclusive=False)
        check_real_in_range(self.max_model_size, name="max_model_size", low=0.0, low_inclusive=False)
        check_int_in_range(self.m, name="m", low=1)
        check_int_in_range(self.iters, name="iters", low=1)
        check_int_in_range(self.final_iters, name="final_iters", low=1)
        check_choice(self.estimator, name="estimator", choices=ESTIMATORS)
        accountant.check_accounting(self.accounting, allowed=AIM_ACCOUNTINGS)

    def budget(self, d: int) -> tuple[float, int]:
        """(ρ, T) for d attributes: ρ the filter's total (:func:`budget_total`).

        Raises
        ------
        ValueError
            If ``rounds`` is below :meth:`min_rounds` for d attributes (before anything is spent).
        """
        rho = budget_total(self.epsilon, self.delta, self.accounting)
        T = self.rounds if self.rounds is not None else 16 * d
        if not _rounds_leave_budget(rho, T, self.alpha, d):
            least = self.min_rounds(d)
            raise ValueError(
                f"rounds must be >= {least} for d = {d} attributes at alpha = {self.alpha:g}; got rounds = {T}. "
                f"AIM's initialisation measures all d one-way marginals at the per-round measurement share "
                f"alpha*rho/rounds each, i.e. d*alpha/rounds of the budget rho; rounds <= alpha*d = "
                f"{self.alpha * d:g} leaves nothing for the selection rounds")
        return rho, T

    def min_rounds(self, d: int) -> int:
        """The least ``rounds`` T for d attributes: the initialisation spends d·αρ/T (d one-way measurements at the
        per-round measurement share αρ/T), which must leave a positive remainder for the rounds, so T > αd."""
        rho = budget_total(self.epsilon, self.delta, self.accounting)
        T = max(1, math.floor(self.alpha * d) + 1)
        while not _rounds_leave_budget(rho, T, self.alpha, d):  # only where α·d rounds to within an ulp of T
            T += 1
        return T

    def grid(self, n: int, d: int) -> int:
        """Cells per attribute for n rows in d dimensions (public)."""
        if self.bins is not None:
            return self.bins
        rho, T = self.budget(d)
        return default_bins(n, initial_scales(rho, T, self.alpha, self.accounting)[0])

    # ------------------------------------------------------------------ steps
    def initialise(self, X: Any, *, rng: RNGLike = None) -> tuple[np.ndarray, float, int]:
        """Step 1's measurement alone (for audits): the noisy one-way counts (d, bins), σ₀ and the grid."""
        X = check_in_unit_cube(X, name="X")
        n, d = X.shape
        rho, T = self.budget(d)
        bins = self.grid(n, d)
        sigma0, _ = initial_scales(rho, T, self.alpha, self.accounting)
        codes = grid_codes(X, bins)
        ones = np.stack([np.bincount(codes[:, i], minlength=bins) for i in range(d)]).astype(float)
        g = spawn(rng, 1)[0]
        return ones + g.normal(0.0, sigma0, size=ones.shape), sigma0, bins

    def audit_steps(self) -> dict[str, Any]:
        """The measurement :mod:`dpkit.evaluation.gate` audits at any size: the initialisation's noisy one-way
        counts (:meth:`initialise`). The rounds' measurements need whole releases (an estimate per round), so the
        gate audits them with ``steps="release"`` at a small size and few rounds only."""
        return {"initialise": lambda X, rng: self.initialise(X, rng=rng)[0]}

    @staticmethod
    def selection(epsilon: float, weights: np.ndarray) -> Exponential:
        """The exponential mechanism of one selection (§4, Alg 2 line 8) at the round's ε, with the score
        sensitivity under replace-one: moving one record between two cells changes ‖M_r(D) − M_r(p̂)‖₁ by
        at most 2, so ``q_r`` by at most ``2 w_r`` (the paper's add/remove neighbours give ``max w_r``)."""
        return Exponential(epsilon=epsilon, sensitivity=2.0 * float(np.max(weights)))

    @staticmethod
    def scores(exact: list[np.ndarray], model: list[np.ndarray], weights: np.ndarray, sigma: float,
               n: int) -> np.ndarray:
        """Quality scores q_r = w_r(‖M_r(D) − M_r(p̂)‖₁ − √(2/π)σ n_r) (§4 Eq. (2)); ``model`` as probabilities."""
        return np.array([w * (np.abs(x - n * p).sum() - SQRT_2_OVER_PI * sigma * x.size)
                         for x, p, w in zip(exact, model, weights)])

    @one_blas_thread
    def release(self, X: Any, *, rng: RNGLike = None, ledger: Ledger | None = None,
                workload: GaussianKernelWorkload | None = None) -> Release[AIMStats]:
        """Alg 2 (module docstring): initialise, select/measure/estimate until ρ is spent, sample ``m`` rows."""
        tm = Timer()
        X = check_in_unit_cube(X, name="X")
        n, d = X.shape
        if d < 2:
            raise ValueError(f"AIM needs d >= 2 attributes (a workload of two-way marginals); got d={d}")
        led = ledger_for(ledger, self.epsilon, self.delta, self.name)
        rho, T = self.budget(d)
        alpha = self.alpha
        bins = self.grid(n, d)
        g_init, g_rounds, g_smp = spawn(rng, 3)
        fit = fitter(self.estimator)
        acc = self.accounting
        sigma, eps = initial_scales(rho, T, alpha, acc)  # before any spend: a budget it cannot plan is refused here
        if acc == "gdp":
            led.spend("aim (Gaussian DP filter total)", self.epsilon, self.delta,
                      mechanism="gaussian + exponential (Gaussian DP filter, Smith & Thakurta 2022)",
                      neighbouring="replace-one", bins=bins, mu=math.sqrt(2.0 * rho), rounds=T, alpha=alpha,
                      accounting=acc)
        else:
            led.spend("aim (zCDP total)", self.epsilon, self.delta,
                      mechanism="gaussian + exponential (zCDP, CKS20 Prop 12)",
                      neighbouring="replace-one", bins=bins, rho=rho, rounds=T, alpha=alpha)
        zled = ZCDPLedger(rho)
        with tm("measure"):
            oneway, sigma0, _ = self.initialise(X, rng=g_init)
            for i in range(d):
                zled.charge(f"one-way {i}", 1.0 / sigma0 ** 2, sigma=sigma0)
            codes = grid_codes(X, bins)
            cands, weights = candidates(d)
            exact = [np.bincount(codes[:, r[0]], minlength=bins).astype(float) if len(r) == 1 else
                     np.bincount(codes[:, r[0]] * bins + codes[:, r[1]], minlength=bins * bins).astype(float)
                     .reshape(bins, bins) for r in cands]
        meas: list[tuple[tuple[int, ...], np.ndarray, float]] = [((i,), oneway[i], sigma0) for i in range(d)]
        with tm("estimate"):
            model = fit(meas, d=d, bins=bins, n=n, iters=self.iters)
        measured: list[tuple[tuple[int, ...], np.ndarray, float]] = []
        annealed: list[int] = []
        cliques = [(i,) for i in range(d)]
        sizer = JunctionTreeSizes(d, bins)
        t, last = 0, False
        while not last:
            t += 1
            remaining = zled.remaining
            if remaining < 2.0 * (1.0 / sigma ** 2 + selection_cost(eps, acc)):  # Alg 2 lines 14-15: the last round
                sigma, last = math.sqrt(1.0 / (alpha * remaining)), True
                eps = (math.sqrt(8.0 * (1.0 - alpha) * remaining) if acc == "zcdp"  # the published expression
                       else _last_selection_epsilon((1.0 - alpha) * remaining))
            used = zled.spent + 1.0 / sigma ** 2 + selection_cost(eps, acc)
            with tm("select"):
                limit = self.max_model_size * min(used / rho, 1.0)
                ok = []
                for k, r in enumerate(cands):
                    if sizer.covered(r) or sizer.with_candidate(r) <= limit:
                        ok.append(k)
                p_hat = model_marginals(model, [cands[k] for k in ok])
                q = self.scores([exact[k] for k in ok], p_hat, weights[ok], sigma, n)
                if eps > 0.0:
                    mech = self.selection(eps, weights[ok])
                    zled.charge(f"select {t}", selection_cost(eps, acc), epsilon=eps, sensitivity=mech.sensitivity,
                                candidates=len(ok))
                    j = int(mech.sample(q, 1, rng=g_rounds)[0])
                else:  # a share too small to certify (extreme budgets, Gaussian DP): a uniform choice, free
                    zled.charge(f"select {t}", 0.0, epsilon=0.0, candidates=len(ok))
                    j = int(g_rounds.integers(len(ok)))
                r = cands[ok[j]]
                before = p_hat[j]
            zled.charge(f"measure {t} {list(r)}", 1.0 / sigma ** 2, sigma=sigma)
            y = exact[ok[j]] + g_rounds.normal(0.0, sigma, size=exact[ok[j]].shape)
            measured.append((r, y.ravel(), sigma))
            if r not in cliques:
                cliques.append(r)
                sizer.update(cliques)  # the junction tree changed
            with tm("estimate"):
                model = fit(meas + measured, d=d, bins=bins, n=n, iters=self.iters, warm_start=model)
            after = model_marginals(model, [r])[0]
            if n * np.abs(after - before).sum() <= SQRT_2_OVER_PI * sigma * y.size and not last:
                sigma, eps = sigma / 2.0, eps * 2.0  # Alg 2 lines 12-13: anneal
                if acc == "gdp":  # beyond it no Gaussian-DP parameter is certified: a smaller ε spends less
                    eps = min(eps, accountant.MAX_CERTIFIED_SELECTION)
                annealed.append(t)
        with tm("estimate"):
            model = fit(meas + measured, d=d, bins=bins, n=n, iters=self.final_iters, warm_start=model)
        with tm("sample"):
            synth = synthetic_database(model, self.m, bins, g_smp)
        st = AIMStats(bins=bins, rho=rho, oneway=oneway, measured=measured, steps=zled.to_list(), annealed=annealed)
        params = {"method": self.name, "epsilon": self.epsilon, "delta": self.delta, "bins": bins, "rho": rho,
                  "rounds_max": T, "rounds": len(measured), "alpha": alpha, "max_model_size": self.max_model_size,
                  "m": self.m, "iters": self.iters, "final_iters": self.final_iters, "estimator": self.estimator,
                  "neighbouring": "replace-one", "accounting": acc,
                  "budget_units": "mu^2/2 (Gaussian DP)" if acc == "gdp" else "rho (zCDP)",
                  "rho_spent": zled.spent, "rho_steps": [s["rho"] for s in zled.steps]}
        return Release(method=self.name, privacy=self.privacy, params=params, ledger=led.to_dict(), timings=tm.done(),
                       synthetic=synth, diagnostics=st)
