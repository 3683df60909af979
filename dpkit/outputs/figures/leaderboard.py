"""Figures of the leaderboard: per table, the best private method's mean worst error against σ next to the
thesis's printed number, one panel per data set; each point is labelled with the winning method."""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd
from matplotlib.figure import Figure

from dpkit.outputs.figures._panels import dataset_panels, finish_sigma_panels, sigma_axis
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
    fig, axes = dataset_panels(datasets)
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
        sigma_axis(ax, sorted(g["sigma"].unique()), ds)
    finish_sigma_panels(fig, axes, len(datasets), kind=kind, ncol=2)
    return fig
