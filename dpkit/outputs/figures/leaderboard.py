"""Figures of the leaderboard: per table, the best private method's mean worst error on the judged repetitions with
its confidence interval against σ next to the thesis's printed number, one panel per data set; each point carries the
letter of the winning method, and the legend maps letters to methods (full names at every point overlapped where one
method wins several σ). Per data set, the board's two rankings side by side (:func:`plot_leaderboard_supremum`): the
best method by the thesis metric and the best by the class supremum, each on both metrics."""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from dpkit.outputs.figures._panels import dataset_panels, finish_sigma_panels, sigma_axis
from dpkit.outputs.plotting import new_figure

__all__ = ["plot_leaderboard", "LEADERBOARD_CAPTION", "leaderboard_caption", "plot_leaderboard_supremum",
           "LEADERBOARD_SUPREMUM_CAPTION",
           "SUPREMUM_PANELS", "SUPREMUM_TABLE_CAPTION", "DISAGREEMENTS_CAPTION"]

#: the figure's caption for a paper (``{kind}``, ``{privacy}``, ``{table}``, ``{protocol}``: filled by the assembler)
LEADERBOARD_CAPTION = ("Mean worst {kind} error of the best {privacy} method per data set and σ (solid, circles) over the "
                       "judged repetitions (the odd ones; the winner is chosen on the even ones), with its confidence "
                       "interval at the cell's Holm level (error bars), or its median with the median's distribution-free "
                       "confidence interval where resampling the cell's records showed the mean's interval missing too "
                       "often; the verdict is an exact sign test of the median; its letter at each point (keyed in the "
                       "legend), against the thesis's Table {table} (dashed, crosses); {protocol}.")

_AGAINST = " against the thesis's Table {table} (dashed, crosses)"


def leaderboard_caption(board: Sequence[dict[str, Any]], *, kind: str, privacy: str, table: str, protocol: str) -> str:
    """:data:`LEADERBOARD_CAPTION` filled in; where no cell of ``privacy`` has a printed number (your own data set),
    it says that the thesis printed none instead of naming a comparison the figure does not draw."""
    printed = any(pd.notna(r.get(f"paper_{kind}")) for r in board if r.get("privacy") == privacy)
    template = LEADERBOARD_CAPTION if printed else LEADERBOARD_CAPTION.replace(
        _AGAINST, " (the thesis printed no number for these data sets)")
    return template.format(kind="absolute" if kind == "abs" else "relative", privacy=privacy, table=table,
                           protocol=protocol)


def plot_leaderboard(board: Sequence[dict[str, Any]], *, privacy: str, kind: str = "abs") -> Figure:
    """Best private method (solid, circles: its mean, or median (``{kind}_param``), over the judged repetitions
    ``{kind}_est`` with its interval ``{kind}_ci_low`` to ``{kind}_ci_high``,
    :func:`dpkit.board.report.leaderboard_rows`) vs the thesis (dashed, crosses) per data set, for one
    table.

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
        est = g[f"{kind}_est"]
        ax.errorbar(g["sigma"], est, yerr=[est - g[f"{kind}_ci_low"], g[f"{kind}_ci_high"] - est], color="0.1", ls="-",
                    marker="o", ms=3, capsize=2, label="best private method (judged mean or median, confidence interval)")
        paper = g[g[f"paper_{kind}"] > 0]
        ax.plot(paper["sigma"], paper[f"paper_{kind}"], color="0.45", ls="--", marker="x", label="thesis")
        for _, r in g.iterrows():
            ax.annotate(letters[str(r[method_key])], (r["sigma"], r[f"{kind}_est"]), fontsize=7,
                        xytext=(3, 3), textcoords="offset points")
        sigma_axis(ax, sorted(g["sigma"].unique()), ds)
    for m, c in letters.items():  # legend entries only: a letter as the key, the method as the label
        axes.flat[0].add_line(Line2D([], [], ls="none", marker=f"${c}$", color="0.1", label=m))
    finish_sigma_panels(fig, axes, len(datasets), kind=kind, ncol=3)
    return fig


#: the caption of :func:`plot_leaderboard_supremum` (``{dataset}``, ``{protocol}``: filled by the notebook and the
#: assembler)
LEADERBOARD_SUPREMUM_CAPTION = (
    "{dataset}: the leaderboard's two rankings side by side, per table (Table 3.2: ε-DP methods; Table 3.3: (ε, δ)-DP "
    "and ε-DP methods) and σ. Circles (solid, dotted): the thesis metric, the mean worst absolute error over the "
    "workload's random queries; squares (dashed, dash-dotted): the class supremum, the mean absolute error of the worst "
    "query of the whole query class, the quantity the thesis's theorems bound. Filled, dark: the best method by the "
    "thesis metric; hollow, grey, larger: the best method by the class supremum (a ring around the filled point where "
    "the rankings agree); "
    "each winner's letter at its point, keyed in the legend; {protocol}.")

#: the caption of the board ranked by the class supremum (``{protocol}``)
SUPREMUM_TABLE_CAPTION = ("Leaderboard by the class supremum (the mean absolute error of the worst query of the whole query "
                          "class, the quantity the thesis's theorems bound): per data set, σ and table, the best method by "
                          "it (method_sup, its class supremum ± std and its thesis metric abs_of_sup) and the runner-up, "
                          "next to the best method by the thesis metric (method, abs_mean) and its class supremum "
                          "(sup_of_best); methods that answer only their workload's queries have no class supremum and "
                          "are not ranked by it; {protocol}.")
#: the caption of the cells where the two rankings differ (``{protocol}``)
DISAGREEMENTS_CAPTION = ("The cells where the best method by the thesis metric (the worst of the workload's random "
                         "queries) is not the best by the class supremum: both winners with their numbers; {protocol}.")

#: the panels of :func:`plot_leaderboard_supremum`: (privacy class of the table, panel title)
SUPREMUM_PANELS: tuple[tuple[str, str], ...] = (("ε-DP", "Table 3.2 (ε-DP)"), ("(ε,δ)-DP", "Table 3.3 ((ε, δ)-DP)"))
#: (label, board column, winner's column, line style, marker, colour, filled): the winner by each metric, on each
#: metric; told apart by marker, line style and fill, so the figure reads in grayscale.
_SUP_CURVES = (
    ("best by thesis metric: its thesis metric", "abs_mean", "method", "-", "o", "0.1", True),
    ("best by thesis metric: its class supremum", "sup_of_best", "method", "--", "s", "0.1", True),
    ("best by class supremum: its thesis metric", "abs_of_sup", "method_sup", ":", "o", "0.5", False),
    ("best by class supremum: its class supremum", "sup_abs_mean", "method_sup", "-.", "s", "0.5", False),
)


def plot_leaderboard_supremum(board: Sequence[dict[str, Any]], *, dataset: str) -> Figure:
    """The board's two rankings for one data set, side by side: per table (:data:`SUPREMUM_PANELS`) and σ, the best
    method by the thesis metric and the best by the class supremum, each on both metrics (board columns
    ``abs_mean, sup_of_best, abs_of_sup, sup_abs_mean``; :func:`dpkit.board.report.leaderboard_rows`).

    The winner's letter (a, b, … in the order of the methods' names) sits at its point on the metric it won by,
    keyed in the legend. A method without a class supremum has no point on it.

    Raises
    ------
    ValueError
        For a data set without a row on the board (the message lists the board's data sets).
    """
    df = pd.DataFrame([r for r in board if r["dataset"] == dataset])
    if df.empty:
        raise ValueError(f"dataset {dataset!r} has no row on the board; its data sets: "
                         f"{sorted({str(r['dataset']) for r in board})}")
    df = df.astype({c: float for _l, c, *_ in _SUP_CURVES})
    names = sorted({str(m) for m in pd.concat([df["method"], df["method_sup"]]).dropna()})
    letters = {m: chr(ord("a") + i) for i, m in enumerate(names)}
    fig, axes = new_figure(1, len(SUPREMUM_PANELS), width="double", aspect=0.36, squeeze=False)
    for ax, (privacy, title) in zip(axes.flat, SUPREMUM_PANELS):
        g = df[df["privacy"] == privacy].sort_values("sigma")
        # hollow (larger) first, filled on top: where both rankings pick the same method, a dot inside a ring
        for _label, col, _who, ls, mk, colour, filled in sorted(_SUP_CURVES, key=lambda c: c[-1]):
            ax.plot(g["sigma"], g[col], ls=ls, marker=mk, ms=3.5 if filled else 6, color=colour,
                    mfc=colour if filled else "white")
        for who, col, dy in (("method", "abs_mean", 3), ("method_sup", "sup_abs_mean", -9)):
            for _, r in g.iterrows():
                if r[who] is not None and not pd.isna(r[who]) and not pd.isna(r[col]):
                    ax.annotate(letters[str(r[who])], (r["sigma"], r[col]), fontsize=7, xytext=(3, dy),
                                textcoords="offset points")
        if g.empty:
            ax.text(0.5, 0.5, "no cells", ha="center", va="center", transform=ax.transAxes)
        sigma_axis(ax, sorted(df["sigma"].unique()), title)
    for label, _col, _who, ls, mk, colour, filled in _SUP_CURVES:  # legend entries: the four curves' keys
        axes.flat[0].add_line(Line2D([], [], ls=ls, marker=mk, ms=3.5 if filled else 6, color=colour,
                                     mfc=colour if filled else "white", label=label))
    for m, c in letters.items():  # ... and a letter as the key, the method as the label
        axes.flat[0].add_line(Line2D([], [], ls="none", marker=f"${c}$", color="0.1", label=m))
    finish_sigma_panels(fig, axes, len(SUPREMUM_PANELS), kind="abs", ncol=2, ylabel="mean absolute error")
    return fig
