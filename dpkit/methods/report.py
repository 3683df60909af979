"""Figures and checks of the baselines notebook (``40_baselines``), kept in dpkit so tests can call them.

* :func:`plot_dataset_summary` — one summary figure per data set: worst absolute and relative
  error (mean ± std over repetitions, log scale) against σ for every method, and the
  direct-answering cross-over panel: expected worst error of direct answering as the number of
  queries Q grows (:func:`~dpkit.methods.direct_expected_max_error`) against the synthetic
  methods' measured errors, which do not depend on Q.
* :func:`baseline_checks` — the notebook's checks (each can fail): ledger totals equal the stated
  budgets; the noise-free LP is no worse than the private trig mechanism on average; the direct
  answering errors match their closed forms.
"""
from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np

from dpkit.methods.runner import PRIVATE_REFERENCE_METHODS, direct_expected_max_error, gaussian_abs_max_mean

__all__ = ["plot_dataset_summary", "baseline_checks", "pca_summary"]

_STYLE = {
    "trig-I": ("C0", "-", "o"), "trig-II": ("C0", "-", "s"), "lp-eps-inf": ("k", "--", "x"),
    "subsample": ("0.5", ":", "+"),
}


def _style(method: str, i: int) -> tuple[str, str, str]:
    if method in _STYLE:
        return _STYLE[method]
    import matplotlib

    return (matplotlib.colormaps["tab20"]((2 + i) % 20), "-", "^v<>Dph*"[i % 8])


def plot_dataset_summary(rows: Sequence[dict[str, Any]], *, dataset: str, n: int, epsilon: float, delta: float,
                         q_grid: Sequence[int] = (10, 100, 1_000, 10_000, 100_000)):
    """Summary figure of one data set (three panels; see module docstring). Returns the figure."""
    import pandas as pd

    from dpkit.outputs.plotting import new_figure

    df = pd.DataFrame([r for r in rows if r["dataset"] == dataset])
    fig, axes = new_figure(1, 3, width="double", aspect=0.36)
    methods = list(dict.fromkeys(df["method"]))
    for i, m in enumerate(methods):
        g = df[df["method"] == m].sort_values("sigma")
        c, ls, mk = _style(m, i)
        for ax, key in ((axes[0], "abs"), (axes[1], "rel")):
            ax.errorbar(g["sigma"], g[f"{key}_mean"], yerr=g[f"{key}_std"], color=c, ls=ls, marker=mk, ms=3,
                        lw=1, capsize=2, label=m)
    for ax, lab in ((axes[0], "worst abs. error"), (axes[1], "worst rel. error")):
        ax.set_yscale("log")
        ax.set_xlabel("σ (K = σ²)")
        ax.set_ylabel(lab)
    # cross-over panel: direct answering vs Q, at the unit sensitivity 1/n
    Q = np.asarray(q_grid)
    ax = axes[2]
    for noise, c in (("laplace_I", "0.2"), ("laplace_II", "0.45"), ("gaussian", "0.7")):
        if noise != "laplace_I" and delta <= 0:
            continue
        ax.plot(Q, direct_expected_max_error(Q, n=n, epsilon=epsilon, delta=delta, noise=noise), color=c,
                label=f"direct {noise}")
    best = df[df["private"] & ~df["method"].str.startswith("direct")].groupby("method")["abs_mean"].mean()
    for m in [x for x in ("trig-I", "trig-II") if x in best.index] + ([best.idxmin()] if len(best) else []):
        ax.axhline(best[m], color=_style(m, methods.index(m))[0], ls="--", lw=0.8, label=f"{m} (mean over σ)")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("number of queries Q")
    ax.set_ylabel("E worst abs. error")
    axes[0].set_title(f"{dataset} (n = {n}, ε = {epsilon:g}, δ = {delta:g})", fontsize="small")
    h, lab = axes[0].get_legend_handles_labels()
    fig.legend(h, lab, loc="outside right upper", fontsize="x-small")
    axes[2].legend(fontsize="xx-small", loc="upper left")
    return fig


def baseline_checks(report: Any, records: Sequence[dict[str, Any]], rows: Sequence[dict[str, Any]]) -> None:
    """Add the notebook's checks to ``report`` (a :class:`dpkit.outputs.report.Report`)."""
    import pandas as pd

    rec = pd.DataFrame(list(records))
    priv = rec[~rec["method"].isin(PRIVATE_REFERENCE_METHODS)]
    dev = float(np.max(np.abs(priv["eps_spent"] - priv["epsilon"]) / priv["epsilon"]))
    report.check("ledger-epsilon", "every private method's ledger spends exactly its stated ε (relative deviation)",
                 dev, 1e-9, relation="<=", note=f"{len(priv)} runs of {priv['method'].nunique()} methods")
    over = float(np.max(priv["delta_spent"] - priv["delta"]))
    report.check("ledger-delta", "no private method's ledger spends more δ than stated (δ_spent − δ)",
                 over, 0.0, relation="<=")

    df = pd.DataFrame(list(rows))
    piv = df.pivot_table(index=["dataset", "sigma"], columns="method", values="abs_mean")
    if {"lp-eps-inf", "trig-II"} <= set(piv.columns):
        diff = float((piv["lp-eps-inf"] - piv["trig-II"]).mean())
        report.check("eps-inf-floor", "the noise-free LP (ε = ∞) has mean worst abs. error ≤ trig-II's, averaged over "
                     "(data set, σ) cells: noise only adds error on average (dwork-roth §4.3 B5)", diff, 0.0,
                     relation="<=", note="statistic: mean of (lp-eps-inf − trig-II) worst abs. errors")
    for noise, name in (("laplace_I", "direct-laplace_I"), ("gaussian", "direct-gaussian")):
        sub = rec[rec["method"] == name]
        if sub.empty:
            continue
        Q = np.array([int(p["n_queries"]) for p in sub["params"]])
        s = np.array([float(p["scale_mean"]) for p in sub["params"]])
        z = sub["abs"].to_numpy() / s  # worst |noise| in units of the noise scale
        if noise == "laplace_I":
            # max of Q iid Exp(1): mean H_Q, variance Σ 1/k² ≤ π²/6
            exp_ = np.array([math.fsum(1.0 / k for k in range(1, q + 1)) for q in Q])
            sd = math.pi / math.sqrt(6.0)
            claim = "direct Laplace I: mean worst error / b = H_Q (max of Q iid |Lap(b)| ~ Exp(b))"
        else:
            exp_ = np.array([gaussian_abs_max_mean(int(q)) for q in Q])
            sd = 1.0  # Gaussian Poincaré: Var(max_q |Z_q|) ≤ 1 (a 1-Lipschitz function of N(0, I))
            claim = "direct Gaussian: mean worst error / s = E max_q |N(0,1)| over Q queries"
        stat = float(abs(np.mean(z - exp_)))
        report.check(f"direct-{noise}-theory", claim + " (|mean − theory|, 4 sd of the mean; Chebyshev ≥ 93.75%)",
                     stat, 4.0 * sd / math.sqrt(len(z)), relation="<=", confidence=0.9375,
                     note=f"{len(z)} runs")


def pca_summary(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Mean ± std of captured variance and largest angle per (dataset, method) from
    :func:`~dpkit.methods.compare_private_pca` rows tagged with ``dataset``."""
    import pandas as pd

    df = pd.DataFrame(list(rows))
    out = []
    for (ds, m), g in df.groupby(["dataset", "method"], sort=False):
        out.append({"dataset": ds, "method": m, "epsilon": float(g["epsilon"].iloc[0]), "k": int(g["k"].iloc[0]),
                    "captured_variance_mean": float(g["captured_variance"].mean()),
                    "captured_variance_std": float(g["captured_variance"].std(ddof=1)) if len(g) > 1 else 0.0,
                    "max_angle_deg_mean": float(g["max_angle_deg"].mean()),
                    "max_angle_deg_std": float(g["max_angle_deg"].std(ddof=1)) if len(g) > 1 else 0.0,
                    "time_s": float(g["time_s"].mean()), "reps": int(len(g))})
    return out
