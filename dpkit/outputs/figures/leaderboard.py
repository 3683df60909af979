"""Figures of the leaderboard: per table, the best private method's mean worst error against σ next to the
thesis's printed number, one panel per data set; each point is labelled with the winning method."""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd
from matplotlib.figure import Figure

from dpkit.outputs.plotting import new_figure

__all__ = ["plot_leaderboard"]


def plot_leaderboard(board: Sequence[dict[str, Any]], *, privacy: str, kind: str = "abs") -> Figure:
    """Best private method (solid, circles; ± std) vs the thesis (dashed, crosses) per data set, for one table.

    Told apart by line style and marker, so the figure reads in grayscale; the winner's name is written at
    each point.
    """
    df = pd.DataFrame([r for r in board if r["privacy"] == privacy])
    if df.empty:
        fig, ax = new_figure()
        ax.text(0.5, 0.5, "no cells", ha="center", va="center", transform=ax.transAxes)
        return fig
    datasets = sorted(df["dataset"].unique())
    ncols = min(3, len(datasets))
    nrows = -(-len(datasets) // ncols)
    fig, axes = new_figure(nrows, ncols, width="double", aspect=0.3 * nrows if nrows > 1 else 0.36, squeeze=False)
    method_key = "method" if kind == "abs" else "method_rel"
    for ax, ds in zip(axes.flat, datasets):
        g = df[df["dataset"] == ds].sort_values("sigma")
        ax.errorbar(g["sigma"], g[f"{kind}_mean"], yerr=g[f"{kind}_std"], color="0.1", ls="-", marker="o", ms=3,
                    capsize=2, label="best private method (± std over repetitions)")
        paper = g[g[f"paper_{kind}"] > 0]
        ax.plot(paper["sigma"], paper[f"paper_{kind}"], color="0.45", ls="--", marker="x", label="thesis")
        for _, r in g.iterrows():
            ax.annotate(str(r[method_key]), (r["sigma"], r[f"{kind}_mean"]), fontsize=5, rotation=30,
                        xytext=(2, 2), textcoords="offset points")
        ax.set_yscale("log")
        ax.set_xticks(sorted(g["sigma"].unique()))
        ax.set_title(ds)
        ax.set_xlabel(r"$\sigma$ ($K = \sigma^2$)")
    for ax in axes.flat[len(datasets):]:
        ax.set_visible(False)
    for ax in axes[:, 0]:
        ax.set_ylabel(f"worst {'abs.' if kind == 'abs' else 'rel.'} error")
    h, lab = axes.flat[0].get_legend_handles_labels()
    fig.legend(h, lab, loc="outside lower center", ncol=2, fontsize=8)
    return fig
