"""Figures of the leaderboard: per table, the best private method's mean worst error against σ next to the
thesis's printed number, one panel per data set; each point carries the letter of the winning method, and the
legend maps letters to methods (full names at every point overlapped where one method wins several σ)."""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from dpkit.outputs.figures._panels import dataset_panels, finish_sigma_panels, sigma_axis
from dpkit.outputs.plotting import new_figure

__all__ = ["plot_leaderboard", "LEADERBOARD_CAPTION"]

#: the figure's caption for a paper (``{kind}``, ``{privacy}``, ``{table}``, ``{protocol}``: filled by the assembler)
LEADERBOARD_CAPTION = ("Mean worst {kind} error (± one standard deviation over the repetitions; solid, circles) of the best "
                       "{privacy} method per data set and σ, its letter at each point (keyed in the legend), against the "
                       "thesis's Table {table} (dashed, crosses); {protocol}.")


def plot_leaderboard(board: Sequence[dict[str, Any]], *, privacy: str, kind: str = "abs") -> Figure:
    """Best private method (solid, circles; ± std) vs the thesis (dashed, crosses) per data set, for one table.

    Told apart by line style and marker, so the figure reads in grayscale. The winner at each point is a letter
    (a, b, … in the order of the methods' names), keyed in the legend.
    """
    df = pd.DataFrame([r for r in board if r["privacy"] == privacy])
    if df.empty:
        fig, ax = new_figure()
        ax.text(0.5, 0.5, "no cells", ha="center", va="center", transform=ax.transAxes)
        return fig
    datasets = sorted(df["dataset"].unique())
    fig, axes = dataset_panels(datasets)
    method_key = "method" if kind == "abs" else "method_rel"
    letters = {m: chr(ord("a") + i) for i, m in enumerate(sorted(df[method_key].astype(str).unique()))}
    for ax, ds in zip(axes.flat, datasets):
        g = df[df["dataset"] == ds].sort_values("sigma")
        ax.errorbar(g["sigma"], g[f"{kind}_mean"], yerr=g[f"{kind}_std"], color="0.1", ls="-", marker="o", ms=3,
                    capsize=2, label="best private method (± std over repetitions)")
        paper = g[g[f"paper_{kind}"] > 0]
        ax.plot(paper["sigma"], paper[f"paper_{kind}"], color="0.45", ls="--", marker="x", label="thesis")
        for _, r in g.iterrows():
            ax.annotate(letters[str(r[method_key])], (r["sigma"], r[f"{kind}_mean"]), fontsize=7,
                        xytext=(3, 3), textcoords="offset points")
        sigma_axis(ax, sorted(g["sigma"].unique()), ds)
    for m, c in letters.items():  # legend entries only: a letter as the key, the method as the label
        axes.flat[0].add_line(Line2D([], [], ls="none", marker=f"${c}$", color="0.1", label=m))
    finish_sigma_panels(fig, axes, len(datasets), kind=kind, ncol=3)
    return fig
