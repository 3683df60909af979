"""The baselines comparison (notebook ``40_baselines``): table rows, the cross-over of direct
answering, and the generated written conclusion.

Every method of the ``baselines`` suite of :mod:`dpkit.methods.registry` runs through the one runner
(:func:`dpkit.experiments.protocol.run_cell`) at the same (ε, δ) on the same data and workloads (a
paired comparison); a cell is seeded by :func:`~dpkit.experiments.records.cell_seed`. Non-private
references (privacy class ``"non-private"``) stay in the tables, marked, and are never "best".
"""
from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import pandas as pd

from dpkit.experiments.records import ReleaseRecord
from dpkit.experiments.summary import SUP_KEYS, records_frame, spread_stats

__all__ = [
    "toy_methods",
    "baseline_rows",
    "direct_expected_max_error",
    "gaussian_abs_max_mean",
    "direct_crossover_queries",
    "write_conclusion",
]


def toy_methods(*, epsilon: float, delta: float, levels: int, m: int, m_rows: int, T: int, C: int, n_class: int,
                R: int) -> dict[str, Any]:
    """The methods of notebook 40's 2-d toy panel (SmallDB is exponential in the domain, so it runs only there),
    with the notebook's parameters: ``{name: method}`` in the order the panel runs and reports them."""
    from dpkit.methods.registry import get

    return {
        "smalldb": get("smalldb", epsilon=epsilon, levels=levels, m=m),
        "direct-laplace_I": get("direct-laplace_I", epsilon=epsilon),
        "marginals-histogram": get("marginals-histogram", epsilon=epsilon, delta=delta, m=m_rows),
        "mwem-uniform": get("mwem-uniform", epsilon=epsilon, T=T, C=C, n_class=n_class, m=m_rows),
        "trig-I": get("trig-I", epsilon=epsilon, C=C, R=min(R, 4), k=2),
    }


def baseline_rows(records: Iterable[ReleaseRecord], *, dataset: str) -> list[dict[str, Any]]:
    """Table rows per (σ, method) in the order the methods ran: ``dataset, sigma, method, privacy,
    private, abs_mean, abs_std, abs_min, abs_max, rel_mean, rel_std, time_s`` (mean release time),
    ``time_max_s``, the stated budget ``epsilon, delta``, the ledger totals ``eps_spent, delta_spent``,
    ``support_median`` and ``reps``."""
    df = records_frame(records)
    rows: list[dict[str, Any]] = []
    if df.empty:
        return rows
    order = list(dict.fromkeys(df["method"]))
    for (sigma, method), g in sorted(df.groupby(["sigma", "method"]), key=lambda kv: (kv[0][0], order.index(kv[0][1]))):
        st = spread_stats(g)
        params = g["params"].iloc[0]
        privacy = str(g["privacy"].iloc[0])
        rows.append({
            "dataset": dataset, "sigma": float(sigma), "method": method, "privacy": privacy,
            "private": privacy != "non-private",
            **{k: st[k] for k in ("abs_mean", "abs_std", "abs_min", "abs_max", "rel_mean", "rel_std", "time_s",
                                  "time_max_s", "eps_spent", "delta_spent", "error_bound", "reps", *SUP_KEYS)},
            "epsilon": float(params.get("epsilon", math.nan)), "delta": float(params.get("delta", 0.0)),
            "support_median": st["support_size_median"],
        })
    return rows


def direct_expected_max_error(Q: Any, *, n: int, epsilon: float, delta: float, noise: str,
                              accounting: str = "pld") -> np.ndarray:
    """E[max_q |noise_q|] of direct answering Q queries with per-query sensitivity 1/n.

    Laplace I: |Lap(b)| ~ Exp(b) with b = Q/(nε), so E max = b·H_Q (H_Q the harmonic number,
    exact). Laplace II: b = 1/(nε₀) with the method's ε₀
    (:func:`~dpkit.methods.direct.laplace_II_query_epsilon` at ``accounting``: the exact composition by default,
    ``"split"`` for advanced composition), same formula. Gaussian: s from the analytic Gaussian on √Q/n,
    E max = s ∫₀^∞ 1 − (2Φ(x) − 1)^Q dx (quadrature).
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
            from dpkit.methods.direct import laplace_II_query_epsilon

            out[i] = H / (n * laplace_II_query_epsilon(epsilon, delta, q, accounting=accounting))
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
