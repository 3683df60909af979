"""MST (McKenna, Miklau & Sheldon 2021, "Winning the NIST Contest: A scalable and general approach to
differentially private synthetic data", Alg 1) on a public grid of [-1, 1]^d.

Steps (each attribute cut into ``bins`` public cells, :mod:`dpkit.methods._discrete`):

1. **Measure** every one-way marginal with noise.
2. **Select** d − 1 two-way marginals as a maximum spanning tree, each round's edge chosen by the exponential
   mechanism on the L1 error of the independence estimate (paper §4).
3. **Measure** the selected two-way marginals with noise.
4. **Estimate** a graphical model with Private-PGM (``mbi``) and **sample** ``m`` rows, uniformly inside their cells.

Privacy (replace-one, public n: a marginal moves by L1 2, L2 √2; a score by at most 2): δ > 0 composes the Gaussian
measurements and the selections exactly (``accounting="pld"``, :func:`dpkit.core.accountant.calibrate`) or by the
paper's zCDP split (``accounting="zcdp"``), one ledger spend of the total (ε, δ); δ = 0 uses Laplace noise and the
exponential mechanism with basic composition (d + 1 spends); ``epsilon = math.inf`` is the non-private reference.

Errors: a noise std of the counts at or beyond n·√(largest double) (only reached by the ε-DP variant at tiny ε)
is refused before anything is spent.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dpkit.core import accountant
from dpkit.core.accounting import Ledger, ledger_for
from dpkit.core.rng import RNGLike, spawn
from dpkit.core.validation import (
    SQRT_FLOAT_MAX,
    budget_limit_message,
    check_budget_fields,
    check_choice,
    check_in_unit_cube,
    check_int_in_range,
    check_real_in_range,
)
from dpkit.core.zcdp import cdp_rho, check_zcdp_budget
from dpkit.mechanisms.exponential import Exponential
from dpkit.methods._compiled_pgm import ESTIMATORS, fitter
from dpkit.methods._discrete import (
    grid_codes,
    pair_counts,
    project_simplex,
    synthetic_database,
)
from dpkit.queries.release import MethodBase, Timer
from dpkit.queries.synthetic import WeightedDatabase

__all__ = ["MST", "MSTStats", "default_bins", "noise_plan"]


@dataclass(frozen=True, kw_only=True, eq=False)
class MSTStats:
    """The released statistics (``Release.diagnostics``): noisy one-way counts ``oneway`` (d, bins), the
    selected ``edges`` (pairs of attribute indices, in selection order) and their noisy counts
    ``twoway`` (d − 1, bins, bins); ``scale`` holds the noise standard deviations per step."""

    bins: int
    oneway: np.ndarray
    edges: list[tuple[int, int]]
    twoway: np.ndarray
    scale: dict[str, float] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"bins": self.bins, "edges": [list(e) for e in self.edges], "scale": dict(self.scale)}


def noise_plan(epsilon: float, delta: float, d: int, split: tuple[float, float, float],
               accounting: str = "zcdp") -> dict[str, float]:
    """Noise of each step (module docstring): std of the one-/two-way noise, the selection's ε per round, ρ per step
    (``accounting="zcdp"``), or the zCDP plan's noise times the accountant's factor ``t`` (``"pld"``, δ > 0)."""
    if math.isinf(epsilon):
        return {"std1": 0.0, "std3": 0.0, "eps_round": math.inf}
    s1, s2, s3 = (f / sum(split) for f in split)
    if delta > 0:
        rho = cdp_rho(epsilon, delta)
        plan = {"rho": rho, "rho1": s1 * rho, "rho2": s2 * rho, "rho3": s3 * rho,
                "std1": math.sqrt(d / (s1 * rho)), "std3": math.sqrt((d - 1) / (s3 * rho)),
                "eps_round": math.sqrt(8.0 * s2 * rho / (d - 1))}
        if accounting == "zcdp":
            return plan
        t = accountant.plan_factor(plan_steps(plan, d), epsilon, delta)
        return {"accounting_factor": t, "std1": plan["std1"] * t, "std3": plan["std3"] * t,
                "eps_round": plan["eps_round"] / t}
    b1, b3 = 2.0 * d / (s1 * epsilon), 2.0 * (d - 1) / (s3 * epsilon)
    return {"eps1": s1 * epsilon, "eps2": s2 * epsilon, "eps3": s3 * epsilon, "laplace1": b1, "laplace3": b3,
            "std1": math.sqrt(2.0) * b1, "std3": math.sqrt(2.0) * b3, "eps_round": s2 * epsilon / (d - 1)}


def plan_steps(plan: dict[str, float], d: int) -> list[accountant.Step]:
    """MST's measurements as the accountant's steps: the one-way Gaussian (L2 sensitivity √(2d)), the d − 1
    selections (ε per round) and the two-way Gaussian (L2 √(2(d − 1)))."""
    return [accountant.gaussian(plan["std1"] / math.sqrt(2.0 * d), name="one-way"),
            accountant.selection(plan["eps_round"], count=d - 1, name="select"),
            accountant.gaussian(plan["std3"] / math.sqrt(2.0 * (d - 1)), name="two-way")]


def default_bins(n: int, std3: float) -> int:
    """The public grid: b = round(√(n/std₃)) clipped to [2, 32] (32 without noise), i.e. the two-way marginals'
    total noise b²·std₃ is about n. Chosen on one repetition (2000 queries) of PKS, CTG and WDBC at ε = 1,
    δ = 10⁻³: the error fell with b up to about this size (discretisation dominated) and rose at twice it
    (noise dominated) — PKS σ = 2: b = 13 → 0.0094, b = 27 → 0.0128; WDBC σ = 2: b = 3/4 → 0.024/0.022,
    b = 7 → 0.034. The same rule serves every σ (a coarser grid for wide kernels did not help)."""
    return 32 if std3 == 0 else int(max(2, min(32, round(math.sqrt(n / std3)))))


@dataclass(frozen=True, kw_only=True)
class MST(MethodBase):
    """MST synthetic data on a public grid (module docstring).

    Parameters
    ----------
    epsilon, delta : float
        Total budget; δ > 0 accounts in zCDP (Gaussian noise), δ = 0 is pure ε-DP (Laplace noise);
        ``epsilon=math.inf`` is the non-private reference. With δ > 0 a finite ε is at most
        :data:`~dpkit.core.zcdp.MAX_ZCDP_EPSILON` (where the zCDP conversion overflows).
    bins : int or None
        Public cells per attribute; ``None``: :func:`default_bins` (from n, d and the budget).
    split : tuple of 3 floats
        Budget fractions of the one-way measurement, the selection and the two-way measurement
        (normalised; the paper's 1/3 each).
    m : int
        Rows of the synthetic database.
    iters : int
        Mirror-descent iterations of the estimation.
    accounting : {"pld", "zcdp"}
        δ > 0 only: the calibration at the exact composition (default) or the paper's zCDP accounting (module
        docstring); recorded in the release's params and its ledger entry.
    estimator : {"compiled", "mbi"}
        Whose implementation of Private-PGM's mirror descent estimates the model: dpkit's, compiled once per
        padded problem size (default; :func:`~dpkit.methods._compiled_pgm.fit_model_compiled`), or ``mbi``'s,
        compiled anew for every tree. The same algorithm in float32 with other summation orders: the fitted
        marginals differ by about 10⁻⁴, so the synthetic rows differ.
    """

    label = "mst"
    measure_stage = "measure"

    epsilon: float
    delta: float = 0.0
    bins: int | None = None
    split: tuple[float, float, float] = (1.0 / 3, 1.0 / 3, 1.0 / 3)
    m: int = 5000
    iters: int = 1000
    estimator: str = "compiled"
    accounting: str = "pld"

    def __post_init__(self) -> None:
        check_budget_fields(self, allow_inf=True)
        check_zcdp_budget(self.epsilon, self.delta)
        if self.bins is not None:
            check_int_in_range(self.bins, name="bins", low=2, high=64)
        if len(self.split) != 3:
            raise ValueError(f"split must have 3 fractions (one-way, select, two-way); got {self.split!r}")
        for i, f in enumerate(self.split):
            check_real_in_range(f, name=f"split[{i}]", low=0.0, low_inclusive=False)
        check_int_in_range(self.m, name="m", low=1)
        check_int_in_range(self.iters, name="iters", low=1)
        check_choice(self.estimator, name="estimator", choices=ESTIMATORS)
        accountant.check_accounting(self.accounting, allowed=("pld", "zcdp"))

    def noise_plan(self, d: int) -> dict[str, float]:
        """:func:`noise_plan` of this configuration in d dimensions."""
        return noise_plan(self.epsilon, self.delta, d, self.split, self.accounting if self.delta > 0 else "zcdp")

    def grid(self, n: int, d: int) -> int:
        """Cells per attribute for n rows in d dimensions."""
        return self.bins if self.bins is not None else default_bins(n, self.noise_plan(d)["std3"])

    def measure(self, X: Any, *, rng: RNGLike = None, ledger: Ledger | None = None) -> MSTStats:
        """Steps 1–3: the released statistics (no estimation, no sampling), spent through ``ledger``."""
        X = check_in_unit_cube(X, name="X")
        n, d = X.shape
        if d < 2:
            raise ValueError(f"MST needs d >= 2 attributes (a tree of two-way marginals); got d={d}")
        led = ledger_for(ledger, self.epsilon, self.delta, self.name)
        plan = self.noise_plan(d)
        top = max(plan["std1"], plan["std3"]) / n
        if top >= SQRT_FLOAT_MAX:  # before anything is spent (module docstring, "Least ε")
            raise ValueError(budget_limit_message(
                self.name, self.epsilon, self.delta, what=f"the counts' noise std over n = {n}, {top:.3g}, reaches",
                limit=f"sqrt of the largest double = {SQRT_FLOAT_MAX:.4g}",
                why="Private-PGM's measurement weights (1/std^2) overflow", least=self.epsilon * top / SQRT_FLOAT_MAX))
        bins = self.grid(n, d)
        g1, g2, g3 = spawn(rng, 3)
        C = pair_counts(grid_codes(X, bins), bins)
        ones = np.stack([C[i, :, i, :].diagonal() for i in range(d)])
        meta = {"neighbouring": "replace-one", "bins": bins}
        if math.isinf(self.epsilon):
            led.spend("mst (non-private)", math.inf, 0.0, mechanism="none (epsilon=inf)", **meta)
        elif self.delta > 0:
            if self.accounting == "zcdp":
                led.spend("mst (zCDP total)", self.epsilon, self.delta,
                          mechanism="gaussian + exponential (zCDP, CKS20 Prop 12)",
                          **meta, **{k: plan[k] for k in ("rho", "rho1", "rho2", "rho3", "std1", "std3", "eps_round")})
            else:
                led.spend("mst (composed)", self.epsilon, self.delta,
                          mechanism="gaussian + exponential (composition accounting=pld)", accounting="pld",
                          **meta, **{k: plan[k] for k in ("accounting_factor", "std1", "std3", "eps_round")})
        else:
            led.spend("mst one-way", plan["eps1"], 0.0, mechanism="laplace", scale=plan["laplace1"], l1_sensitivity=2 * d,
                      **meta)
        y1 = ones + self._noise(g1, plan["std1"], ones.shape)
        edges = self._select(C, y1, n, plan, g2, led)
        if self.delta == 0 and not math.isinf(self.epsilon):
            led.spend("mst two-way", plan["eps3"], 0.0, mechanism="laplace", scale=plan["laplace3"],
                      l1_sensitivity=2 * (d - 1), **meta)
        two = np.stack([C[i, :, j, :] for i, j in edges])
        y2 = two + self._noise(g3, plan["std3"], two.shape)
        scale = {"std1": plan["std1"], "std3": plan["std3"], "eps_round": plan["eps_round"]}
        return MSTStats(bins=bins, oneway=y1, edges=edges, twoway=y2, scale=scale)

    def _noise(self, g: np.random.Generator, std: float, shape: tuple[int, ...]) -> np.ndarray:
        if std == 0.0:
            return np.zeros(shape)
        if self.delta > 0:
            return g.normal(0.0, std, size=shape)
        return g.laplace(0.0, std / math.sqrt(2.0), size=shape)

    @staticmethod
    def pair_scores(C: np.ndarray, y1: np.ndarray, n: int) -> tuple[list[tuple[int, int]], np.ndarray]:
        """The pairs (i < j) and their scores ``w_ij = ‖C_ij − P_i P_jᵀ/n‖₁``: the two-way counts against the
        product of the noisy one-way counts ``y1`` (projected onto the scaled simplex, post-processing)."""
        d = y1.shape[0]
        P = project_simplex(y1 / n) * n
        pairs = [(i, j) for i in range(d) for j in range(i + 1, d)]
        return pairs, np.array([np.abs(C[i, :, j, :] - np.outer(P[i], P[j]) / n).sum() for i, j in pairs])

    @staticmethod
    def selection(epsilon: float) -> Exponential:
        """The exponential mechanism of one tree edge (McKenna et al. 2021, Alg 1): replace-one moves one record
        between two cells of C_ij, so ``w_ij`` changes by at most 2 (``P`` is fixed: the one-way counts
        are already released)."""
        return Exponential(epsilon=epsilon, sensitivity=2.0)

    def _select(self, C: np.ndarray, y1: np.ndarray, n: int, plan: dict[str, float], g: np.random.Generator,
                led: Ledger) -> list[tuple[int, int]]:
        """Step 2: Kruskal's maximum spanning tree with the exponential mechanism (sensitivity 2) per round."""
        d = y1.shape[0]
        pairs, w = self.pair_scores(C, y1, n)
        comp = list(range(d))

        def root(a: int) -> int:
            while comp[a] != a:
                comp[a] = comp[comp[a]]
                a = comp[a]
            return a

        edges: list[tuple[int, int]] = []
        for t in range(d - 1):
            live = [k for k, (i, j) in enumerate(pairs) if root(i) != root(j)]
            if math.isinf(plan["eps_round"]):
                k = live[int(np.argmax(w[live]))]
            elif self.delta > 0:
                k = live[int(self.selection(plan["eps_round"]).sample(w[live], 1, rng=g)[0])]
            else:
                k = live[self.selection(plan["eps_round"]).release(w[live], rng=g, ledger=led, name=f"mst select {t + 1}")]
            i, j = pairs[k]
            comp[root(i)] = root(j)
            edges.append((i, j))
        return edges

    def synthesize(self, st: MSTStats, X: Any, *, rng: np.random.Generator,
                   timer: Timer) -> tuple[WeightedDatabase, MSTStats]:
        """Estimate with Private-PGM and sample ``m`` rows (module docstring; :meth:`release` is the template
        of :class:`~dpkit.queries.release.MethodBase`: measure, select, measure, then synthesize)."""
        n, d = np.asarray(X).shape
        std1 = max(st.scale["std1"], 1.0)  # equal weights for the noise-free reference
        std3 = max(st.scale["std3"], 1.0)
        meas = [((i,), st.oneway[i], std1) for i in range(d)]
        meas += [((i, j), st.twoway[k].ravel(), std3) for k, (i, j) in enumerate(st.edges)]
        with timer("estimate"):
            model = fitter(self.estimator)(meas, d=d, bins=st.bins, n=n, iters=self.iters)
        with timer("sample"):
            synth = synthetic_database(model, self.m, st.bins, rng)
        return synth, st

    def release_params(self, st: MSTStats, X: Any, ledger: Ledger) -> dict[str, Any]:
        """The release's ``params``: the method's, the grid and the noise plan."""
        d = np.asarray(X).shape[1]
        return {"method": self.name, "epsilon": self.epsilon, "delta": self.delta, "bins": st.bins,
                "split": list(self.split), "m": self.m, "iters": self.iters, "estimator": self.estimator,
                "neighbouring": "replace-one", **({"accounting": self.accounting} if self.delta > 0 else {}),
                **self.noise_plan(d)}
