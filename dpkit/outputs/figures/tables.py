"""Figures of the Chapter 3 experiments: worst error vs σ per data set (Tables 3.2/3.3) and a
sweep's error vs the swept parameter (Figs 3.1/3.2)."""
from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pandas as pd
from matplotlib.figure import Figure

from dpkit.outputs.figures._panels import dataset_panels, finish_sigma_panels, sigma_axis
from dpkit.outputs.plotting import PALETTE, new_figure

__all__ = ["plot_errors_vs_sigma", "plot_sweep", "TABLES_CAPTION"]

#: the figure's caption for a paper (``{kind}``: absolute or relative; the assembler fills the rest)
TABLES_CAPTION = ("Mean worst {kind} error over the repetitions (error bars: ± one standard deviation) of the improved "
                  "trigonometric mechanisms I (ε-DP, circles) and II ((ε, δ)-DP, squares) against the kernel width σ "
                  "(K = σ²), ε = 1, δ = 10⁻³, 10⁴ queries per repetition; solid: correct constants, dotted: printed "
                  "constants, dashed with crosses (I) and dash-dotted with pluses (II): the thesis's Tables 3.2/3.3.")


#: Mechanism I vs II: colour *and* marker; correct constants solid, printed dotted, the thesis dashed with crosses —
#: so every curve is told apart in grayscale.
MECH_STYLE = {"I": (PALETTE[0], "o"), "II": (PALETTE[1], "s")}
#: The thesis's curves: I dashed with crosses, II dash-dotted with pluses.
THESIS_STYLE = {"I": ("--", "x"), "II": ("-.", "+")}


def plot_errors_vs_sigma(rows: Iterable[dict[str, Any]], *, kind: str = "abs", title: str = "") -> Figure:
    """Mean worst error vs σ, one panel per data set: ours (± std over repetitions) next to the thesis's numbers.

    Mechanism I: circles, II: squares (and two colours); solid = dpkit with correct constants, dotted = printed
    constants, dashed with crosses (I) and dash-dotted with pluses (II) = the thesis's Tables 3.2/3.3.
    Log scale (printed zeros are not drawn). σ ticks
    at the data values. ``title`` is for interactive use; exported paper figures carry none (the caption does).
    """
    df = pd.DataFrame(list(rows))
    if df.empty:
        fig, ax = new_figure(width="double", aspect=0.42)
        ax.text(0.5, 0.5, "no data set available", ha="center", va="center", transform=ax.transAxes)
        return fig
    if "constants" not in df:
        df["constants"] = "correct"
    datasets = sorted(df["dataset"].unique())
    fig, axes = dataset_panels(datasets)
    sigmas = sorted(df["sigma"].unique())
    for ax, ds in zip(axes.flat, datasets):
        for (mech, constants), g in df[df.dataset == ds].groupby(["mechanism", "constants"], sort=True):
            g = g.sort_values("sigma")
            c, mk = MECH_STYLE.get(mech, (PALETTE[2], "^"))
            printed = constants != "correct"
            ax.errorbar(g["sigma"], g[f"{kind}_mean"], yerr=g[f"{kind}_std"], marker=mk, ms=3.5, capsize=2, color=c,
                        ls=":" if printed else "-", mfc="white" if printed else c,
                        label=f"{mech} dpkit" + (" (printed constants)" if printed else "") + " ± std over reps")
            if not printed:
                paper = g[g[f"paper_{kind}"] > 0]
                tls, tmk = THESIS_STYLE.get(mech, ("--", "x"))
                ax.plot(paper["sigma"], paper[f"paper_{kind}"], ls=tls, marker=tmk, color=c, alpha=0.7,
                        label=f"{mech} thesis")
        sigma_axis(ax, sigmas, ds)
    finish_sigma_panels(fig, axes, len(datasets), kind=kind, ncol=3)
    if title:
        fig.suptitle(title)
    return fig


def plot_sweep(rows: Iterable[dict[str, Any]], *, xlabel: str, title: str = "", logx: bool = False) -> Figure:
    """Mean worst absolute error (± std over repetitions, min–max band) vs the swept parameter.

    Ticks at the swept values (integers as integers); the legend sits outside the axes so it never covers the band.
    """
    df = pd.DataFrame(list(rows)).sort_values("value")
    fig, ax = new_figure(aspect=0.85)
    ax.fill_between(df["value"], df["abs_min"], df["abs_max"], color="0.8", alpha=0.6, label="min–max over repetitions")
    ax.errorbar(df["value"], df["abs_mean"], yerr=df["abs_std"], color="0.1", marker="o", ms=3.5, capsize=2,
                label="mean ± std over repetitions")
    ax.set_xlabel(xlabel)
    ax.set_ylabel("worst absolute error")
    if logx:
        ax.set_xscale("log")
    values = list(df["value"])
    ax.set_xticks(values)
    ax.set_xticklabels([f"{v:g}" for v in values], rotation=45 if len(values) > 6 else 0)
    ax.minorticks_off()
    fig.legend(loc="outside lower center", ncol=2, fontsize=8)
    if title:
        ax.set_title(title)
    return fig
