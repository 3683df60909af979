"""Figures of the Chapter 3 experiments: worst error vs σ per data set (Tables 3.2/3.3) and a
sweep's error vs the swept parameter (Figs 3.1/3.2)."""
from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pandas as pd
from matplotlib.figure import Figure

from dpkit.outputs.plotting import PALETTE, new_figure

__all__ = ["plot_errors_vs_sigma", "plot_sweep"]


def plot_errors_vs_sigma(rows: Iterable[dict[str, Any]], *, kind: str = "abs", title: str = "") -> Figure:
    """Mean worst error vs σ, one panel per data set: ours (±std) next to the thesis's numbers.

    Colour = mechanism (I, II); solid = dpkit with correct constants, dotted = printed constants,
    dashed with crosses = the thesis's Table 3.2/3.3. Log scale (printed zeros are not drawn).
    """
    df = pd.DataFrame(list(rows))
    if df.empty:
        fig, ax = new_figure(width="double", aspect=0.42)
        ax.text(0.5, 0.5, "no data set available", ha="center", va="center", transform=ax.transAxes)
        return fig
    if "constants" not in df:
        df["constants"] = "correct"
    datasets = sorted(df["dataset"].unique())
    ncols = min(3, len(datasets))
    nrows = -(-len(datasets) // ncols)
    fig, axes = new_figure(nrows, ncols, width="double", aspect=0.3 * nrows if nrows > 1 else 0.36,
                           sharex=True, squeeze=False)
    colours = {"I": PALETTE[0], "II": PALETTE[1]}
    for ax, ds in zip(axes.flat, datasets):
        for (mech, constants), g in df[df.dataset == ds].groupby(["mechanism", "constants"], sort=True):
            g = g.sort_values("sigma")
            c = colours.get(mech, PALETTE[2])
            ax.errorbar(g["sigma"], g[f"{kind}_mean"], yerr=g[f"{kind}_std"], marker="o", ms=3, capsize=2, color=c,
                        ls="-" if constants == "correct" else ":", alpha=1.0 if constants == "correct" else 0.8,
                        label=f"{mech} dpkit" + ("" if constants == "correct" else " (printed constants)"))
            if constants == "correct":
                paper = g[g[f"paper_{kind}"] > 0]
                ax.plot(paper["sigma"], paper[f"paper_{kind}"], ls="--", marker="x", color=c, alpha=0.6,
                        label=f"{mech} thesis")
        ax.set_yscale("log")
        ax.set_title(ds)
    for ax in axes.flat[len(datasets):]:
        ax.set_visible(False)
    for ax in axes[-1]:
        ax.set_xlabel("σ (K = σ²)")
    for ax in axes[:, 0]:
        ax.set_ylabel(f"worst {'abs.' if kind == 'abs' else 'rel.'} error")
    handles, labels = axes.flat[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncol=min(6, len(labels)), fontsize=6)
    if title:
        fig.suptitle(title)
    return fig


def plot_sweep(rows: Iterable[dict[str, Any]], *, xlabel: str, title: str = "", logx: bool = False) -> Figure:
    """Mean worst absolute error (± std, min–max band) vs the swept parameter."""
    df = pd.DataFrame(list(rows)).sort_values("value")
    fig, ax = new_figure()
    ax.fill_between(df["value"], df["abs_min"], df["abs_max"], alpha=0.15, label="min–max over reps")
    ax.errorbar(df["value"], df["abs_mean"], yerr=df["abs_std"], marker="o", capsize=2, label="mean ± std")
    ax.set_xlabel(xlabel)
    ax.set_ylabel("worst absolute error")
    if logx:
        ax.set_xscale("log")
    ax.legend()
    if title:
        ax.set_title(title)
    return fig
