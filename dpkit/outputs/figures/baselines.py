"""Figures of the baselines comparison (notebook ``40_baselines``).

:func:`plot_dataset_summary` — one summary figure per data set: worst absolute and relative error
(mean ± std over repetitions, log scale) against σ for every method, and the direct-answering
cross-over panel: expected worst error of direct answering as the number of queries Q grows
(:func:`~dpkit.experiments.baselines.direct_expected_max_error`) against the synthetic methods'
measured errors, which do not depend on Q.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import matplotlib
import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from dpkit.experiments.baselines import direct_expected_max_error
from dpkit.outputs.plotting import new_figure

__all__ = ["plot_dataset_summary"]

_STYLE = {
    "trig-I": ("C0", "-", "o"), "trig-II": ("C0", "-", "s"), "lp-eps-inf": ("k", "--", "x"),
    "subsample": ("0.5", ":", "+"),
}


def _style(method: str, i: int) -> tuple[str, str, str]:
    if method in _STYLE:
        return _STYLE[method]
    return (matplotlib.colormaps["tab20"]((2 + i) % 20), "-", "^v<>Dph*"[i % 8])


def plot_dataset_summary(rows: Sequence[dict[str, Any]], *, dataset: str, n: int, epsilon: float, delta: float,
                         q_grid: Sequence[int] = (10, 100, 1_000, 10_000, 100_000)) -> Figure:
    """Summary figure of one data set (three panels; see module docstring)."""
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
