"""Run the baselines side by side (notebook ``40_baselines``), summarise, and write the conclusion.

Protocol (thesis Sec 3.1, dwork-roth.md §4.3): for a data set and a kernel width σ (K = σ²),
every repetition draws a fresh workload of Q Gaussian-kernel mixture queries (2.1); every method
runs at the same (ε, δ) on the same data and the same workload (a paired comparison), and records
the worst absolute error max_f |q_f(D̂) − q_f(D)|, the worst relative error (divided by q_f(D)),
its wall time (the fit or release only, not the evaluation; for direct answering the exact
answers are its release and their computation time is charged to it) and its ledger. Repetition i uses
child stream i of one :class:`~numpy.random.SeedSequence`; inside it the workload and every
method get independent grandchildren, so adding a method never changes the others' numbers.
"""
from __future__ import annotations

import math
import time
from typing import Any, Iterable, Sequence

import numpy as np

from dpkit.core.rng import RNGLike
from dpkit.methods._common import answer_on_data, answer_on_synthetic

__all__ = [
    "cell_seed",
    "baseline_suite",
    "run_baselines",
    "summarise_baselines",
    "write_conclusion",
    "direct_expected_max_error",
    "gaussian_abs_max_mean",
    "direct_crossover_queries",
    "PRIVATE_REFERENCE_METHODS",
]

#: Methods that are not private (excluded from "best private method" statements).
PRIVATE_REFERENCE_METHODS = ("lp-eps-inf", "subsample")


def cell_seed(seed: int, dataset: str, sigma: float | None = None, *, panel: int = 0) -> np.random.SeedSequence:
    """The SeedSequence of one (data set, σ) cell (or another panel) of a grid run.

    It is the grandchild of ``SeedSequence(seed)`` with spawn key (crc32(dataset), round(1000σ))
    (``panel`` ≠ 0 for non-σ panels such as the PCA comparison), so a cell's numbers do not
    depend on which other data sets or σ the same run (or a split batch run) contains.
    """
    import zlib

    key = (zlib.crc32(str(dataset).encode()), int(round(1000 * float(sigma))) if sigma is not None else 0, int(panel))
    return np.random.SeedSequence(int(seed), spawn_key=key)


def baseline_suite(
    *,
    n: int,
    d: int,
    sigma: float,
    epsilon: float = 1.0,
    delta: float = 1e-3,
    C: int = 10_000,
    R: int = 50,
    m: int = 1000,
    T: int = 20,
    n_class: int = 200,
    k: int = 2,
    n_iter: int = 10,
    kappa: float = 7.0,
    include: Sequence[str] | None = None,
) -> list[Any]:
    """The methods compared in ``40_baselines`` at (ε, δ), for data of shape (n, d) and width σ.

    R is capped at t^d of both schedules (Thm 2.4/2.5) so every LP-based method can run.
    ``include`` keeps only the named methods (in the suite's order).
    """
    from dpkit.mechanisms.trig import ImprovedTrigonometricMechanism, schedule
    from dpkit.methods.candidate_lp import CandidateLP
    from dpkit.methods.direct import DirectAnswering
    from dpkit.methods.gaussian_fit import GaussianFit
    from dpkit.methods.marginals import IndependentMarginals
    from dpkit.methods.mwem import MWEM
    from dpkit.methods.references import SamplingFloor, TrigBaseline

    K = float(sigma) ** 2
    R_eff = int(min(R, schedule(n, d, K, 0.0).t ** d, schedule(n, d, K, delta).t ** d))
    k = min(k, d)

    def trig(eps: float, dl: float) -> Any:
        return TrigBaseline(mechanism=ImprovedTrigonometricMechanism(
            epsilon=eps, delta=dl, K=K, C=C, R=R_eff, k=k, n_iter=n_iter, kappa=kappa))

    suite = [
        trig(epsilon, 0.0),
        trig(epsilon, delta),
        trig(math.inf, delta),
        SamplingFloor(size=R_eff + 1),
        DirectAnswering(epsilon=epsilon, delta=0.0, noise="laplace_I"),
        DirectAnswering(epsilon=epsilon, delta=delta, noise="laplace_II"),
        DirectAnswering(epsilon=epsilon, delta=delta, noise="gaussian"),
        IndependentMarginals(epsilon=epsilon, delta=delta, kind="histogram", m=m),
        IndependentMarginals(epsilon=epsilon, delta=delta, kind="moments", m=m),
        GaussianFit(epsilon=epsilon, delta=delta, method="analyze_gauss", m=m),
        GaussianFit(epsilon=epsilon, delta=delta, method="psi", k=k, n_iter=n_iter, m=m),
        MWEM(epsilon=epsilon, delta=delta, sigma=sigma, T=T, C=C, candidates="uniform", n_class=n_class, m=m),
        MWEM(epsilon=epsilon, delta=delta, sigma=sigma, T=T, C=C, candidates="gaussian", n_class=n_class, m=m),
        CandidateLP(epsilon=epsilon, delta=delta, K=K, C=C, R=R_eff, source="gaussian"),
        CandidateLP(epsilon=epsilon, delta=delta, K=K, C=C, R=R_eff, source="uniform"),
    ]
    if include is not None:
        names = [s.name for s in suite]
        unknown = sorted(set(include) - set(names))
        if unknown:
            raise ValueError(f"unknown methods {unknown}; the suite has {names}")
        suite = [s for s in suite if s.name in set(include)]
    return suite


def _budget(method: Any) -> tuple[float, float]:
    return float(getattr(method, "epsilon", math.nan)), float(getattr(method, "delta", 0.0))


def run_baselines(
    X: np.ndarray,
    *,
    sigma: float,
    methods: Sequence[Any],
    reps: int,
    n_queries: int = 10_000,
    J: int = 10,
    rng: RNGLike = 0,
    progress: bool = False,
) -> list[dict[str, Any]]:
    """Run every method ``reps`` times on ``X`` at width σ; one record per (repetition, method).

    Records: ``{rep, method, sigma, abs, rel, time_s, eps_spent, delta_spent, epsilon, delta,
    support_size, params, ledger}``.
    """
    from dpkit.experiments import iterate_workloads, worst_errors
    from dpkit.methods.direct import DirectAnswering

    records: list[dict[str, Any]] = []
    for i, wl, truth, t_truth, gens in iterate_workloads(X, sigma=sigma, n_streams=len(methods), reps=reps,
                                                          n_queries=n_queries, J=J, rng=rng, progress=progress,
                                                          answer_fn=answer_on_data):
        for meth, g in zip(methods, gens):
            t0 = time.perf_counter()
            if isinstance(meth, DirectAnswering):
                # the exact answers are computed once per repetition and charged to every
                # direct-answering method's time (they are its real cost)
                res = meth.answer(wl, X, rng=g, truth=truth)
                t_fit = time.perf_counter() - t0 + t_truth
            else:
                res = meth.answer(wl, X, rng=g) if hasattr(meth, "answer") else meth.fit(X, rng=g)
                t_fit = time.perf_counter() - t0
            est = res.answers if res.answers is not None else answer_on_synthetic(wl, res.synthetic)
            abs_err, rel_err = worst_errors(est, truth)
            spent = res.ledger.get("spent", {})
            e, dl = _budget(meth)
            records.append({
                "rep": i, "method": res.method, "sigma": float(sigma), "abs": abs_err,
                "rel": rel_err, "time_s": t_fit,
                "eps_spent": float(spent.get("epsilon", math.nan)), "delta_spent": float(spent.get("delta", math.nan)),
                "epsilon": e, "delta": dl,
                "support_size": int(res.synthetic.support_size) if res.synthetic is not None else 0,
                "params": res.params, "ledger": res.ledger,
            })
    return records


def summarise_baselines(records: Iterable[dict[str, Any]], *, dataset: str) -> list[dict[str, Any]]:
    """Table rows per (σ, method): the contract keys ``dataset, sigma, method, abs_mean, rel_mean,
    time_s`` (mean fit time) plus spreads (std, min, max), the worst time, the ledger totals and
    the stated budget."""
    import pandas as pd

    df = pd.DataFrame(list(records))
    rows: list[dict[str, Any]] = []
    if df.empty:
        return rows
    order = list(dict.fromkeys(df["method"]))
    for (sigma, method), g in sorted(df.groupby(["sigma", "method"]), key=lambda kv: (kv[0][0], order.index(kv[0][1]))):
        sd = (lambda s: float(s.std(ddof=1)) if len(s) > 1 else 0.0)
        rows.append({
            "dataset": dataset, "sigma": float(sigma), "method": method,
            "abs_mean": float(g["abs"].mean()), "abs_std": sd(g["abs"]),
            "abs_min": float(g["abs"].min()), "abs_max": float(g["abs"].max()),
            "rel_mean": float(g["rel"].mean()), "rel_std": sd(g["rel"]),
            "time_s": float(g["time_s"].mean()), "time_max_s": float(g["time_s"].max()),
            "epsilon": float(g["epsilon"].iloc[0]), "delta": float(g["delta"].iloc[0]),
            "eps_spent": float(g["eps_spent"].max()), "delta_spent": float(g["delta_spent"].max()),
            "support_median": float(g["support_size"].median()), "reps": int(len(g)),
            "private": method not in PRIVATE_REFERENCE_METHODS,
        })
    return rows


def direct_expected_max_error(Q: Any, *, n: int, epsilon: float, delta: float, noise: str) -> np.ndarray:
    """E[max_q |noise_q|] of direct answering Q queries with per-query sensitivity 1/n.

    Laplace I: |Lap(b)| ~ Exp(b) with b = Q/(nε), so E max = b·H_Q (H_Q the harmonic number,
    exact). Laplace II: b = 1/(nε₀) with ε₀ from advanced composition, same formula. Gaussian:
    s from the analytic Gaussian on √Q/n, E max = s ∫₀^∞ 1 − (2Φ(x) − 1)^Q dx (quadrature).
    """
    from scipy.special import digamma

    Qs = np.atleast_1d(np.asarray(Q, dtype=np.int64))
    out = np.empty(Qs.shape, dtype=float)
    for i, q in enumerate(Qs):
        q = int(q)
        H = float(digamma(q + 1) + np.euler_gamma)
        if noise == "laplace_I":
            out[i] = q / (n * epsilon) * H
        elif noise == "laplace_II":
            from dpkit.core.composition import per_step_epsilon

            out[i] = H / (n * per_step_epsilon(epsilon, delta, q, rule="advanced")[0])
        elif noise == "gaussian":
            from dpkit.mechanisms.gaussian import analytic_gaussian_sigma

            out[i] = analytic_gaussian_sigma(epsilon, delta, math.sqrt(q) / n) * gaussian_abs_max_mean(q)
        else:
            raise ValueError(f"noise must be laplace_I, laplace_II or gaussian; got {noise!r}")
    return out


def gaussian_abs_max_mean(q: int) -> float:
    """E max of q iid |N(0, 1)| = ∫₀^∞ 1 − (2Φ(x) − 1)^q dx (quadrature)."""
    from scipy import integrate
    from scipy.special import ndtr

    val, _ = integrate.quad(lambda x: -np.expm1(q * np.log(np.clip(2 * ndtr(x) - 1, 1e-300, 1))), 0, 40, limit=200)
    return float(val)


def direct_crossover_queries(error: float, *, n: int, epsilon: float, delta: float, noise: str,
                             q_max: int = 10**9) -> int | None:
    """Smallest Q at which direct answering's expected worst error (sensitivity 1/n,
    :func:`direct_expected_max_error`) reaches ``error``; ``None`` if not below ``q_max``.
    The expected error is increasing in Q, so this is a bisection."""
    f = lambda q: float(direct_expected_max_error(q, n=n, epsilon=epsilon, delta=delta, noise=noise)[0])  # noqa: E731
    if f(1) >= error:
        return 1
    if f(q_max) < error:
        return None
    lo, hi = 1, q_max
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if f(mid) >= error else (mid, hi)
    return hi


def write_conclusion(rows: Sequence[dict[str, Any]], *, focus: Sequence[str] = ("trig-I", "trig-II"),
                     n_by_dataset: dict[str, int] | None = None, epsilon: float | None = None,
                     delta: float | None = None) -> str:
    """A short written conclusion generated from the summary rows (which method wins where).

    For every (data set, σ) cell: the best *private* method by mean worst absolute error, the
    rank of the trig mechanisms among private methods, and the ε = ∞ LP floor; then totals.
    With ``n_by_dataset``, ``epsilon`` and ``delta`` it also states, per data set, from how many
    queries Q on a synthetic database (trig-II's error, mean over σ) beats direct answering with
    the analytic Gaussian (:func:`direct_crossover_queries`).
    """
    import pandas as pd

    df = pd.DataFrame(list(rows))
    if df.empty:
        return "No results."
    lines: list[str] = []
    wins: dict[str, int] = {}
    trig_beaten: list[str] = []
    cells = 0
    for (ds, sigma), g in df.groupby(["dataset", "sigma"], sort=True):
        cells += 1
        priv = g[g["private"]].sort_values("abs_mean")
        best = priv.iloc[0]
        wins[best["method"]] = wins.get(best["method"], 0) + 1
        ranks = {m: int(np.flatnonzero(priv["method"].to_numpy() == m)[0]) + 1 for m in focus if m in set(priv["method"])}
        floor = g.loc[g["method"] == "lp-eps-inf", "abs_mean"]
        fl = f"; the noise-free LP reaches {float(floor.iloc[0]):.3g}" if len(floor) else ""
        rk = ", ".join(f"{m} ranks {r}/{len(priv)} ({float(priv.loc[priv['method'] == m, 'abs_mean'].iloc[0]):.3g})"
                       for m, r in ranks.items())
        lines.append(f"- {ds}, σ = {sigma:g}: best private method **{best['method']}** "
                     f"(worst abs. error {best['abs_mean']:.3g} ± {best['abs_std']:.2g}); {rk}{fl}.")
        if ranks and min(ranks.values()) > 1:
            trig_beaten.append(f"{ds}/σ={sigma:g} (by {best['method']})")
    summary = ", ".join(f"{m} in {c}" for m, c in sorted(wins.items(), key=lambda kv: -kv[1]))
    head = [f"Across {cells} (data set, σ) cells the best private method by mean worst absolute error is: {summary}."]
    if trig_beaten:
        head.append(f"The trigonometric mechanisms are beaten in {len(trig_beaten)} of {cells} cells: "
                    + "; ".join(trig_beaten) + ".")
    else:
        head.append(f"A trigonometric mechanism is the best private method in all {cells} cells.")
    slow = df[df["private"]].groupby("method")["time_s"].mean().sort_values()
    head.append("Mean fit time (s), fastest to slowest: "
                + ", ".join(f"{m} {t:.2g}" for m, t in slow.items()) + ".")
    if n_by_dataset and epsilon is not None and delta:
        for ds, g in df.groupby("dataset", sort=True):
            if ds not in n_by_dataset or "trig-II" not in set(g["method"]):
                continue
            err = float(g.loc[g["method"] == "trig-II", "abs_mean"].mean())
            q = direct_crossover_queries(err, n=int(n_by_dataset[ds]), epsilon=epsilon, delta=delta, noise="gaussian")
            head.append(f"{ds}: trig-II (mean worst error {err:.3g} over σ) beats direct Gaussian answering "
                        + (f"from Q ≈ {q} queries on." if q else "for no Q up to 10⁹."))
    return "\n".join(head + [""] + lines)
