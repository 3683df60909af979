"""Figures of the Chapter 3 experiments: worst error vs σ per data set (Tables 3.2/3.3) and a
sweep's error vs the swept parameter (Figs 3.1/3.2)."""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import pandas as pd
from matplotlib.figure import Figure

from dpkit.outputs.figures._panels import dataset_panels, finish_sigma_panels, sigma_axis
from dpkit.outputs.figures.metric import check_metric, metric_column, metric_label
from dpkit.outputs.plotting import PALETTE, new_figure

__all__ = ["plot_errors_vs_sigma", "plot_sweep", "TABLES_CAPTION", "tables_caption", "power_of_ten"]

#: the figure's caption for a paper (``{kind}``: absolute or relative; the assembler fills the rest)
TABLES_CAPTION = ("Mean worst {kind} error over the repetitions (error bars: ± one standard deviation) of the improved "
                  "trigonometric mechanisms I (ε-DP, circles) and II ((ε, δ)-DP, squares) against the kernel width σ "
                  "(K = σ²), ε = 1, δ = 10⁻³, 10⁴ queries per repetition; solid: correct constants, dotted: printed "
                  "constants, dashed with crosses (I) and dash-dotted with pluses (II): the thesis's Tables 3.2/3.3.")


_THESIS_LINES = ", dashed with crosses (I) and dash-dotted with pluses (II): the thesis's Tables 3.2/3.3."


#: the protocol :data:`TABLES_CAPTION` states (the thesis's, the published figures')
_PROTOCOL = "ε = 1, δ = 10⁻³, 10⁴ queries per repetition"


def power_of_ten(x: float, plain: str) -> str:
    """``10⁴``, ``10⁻³`` for an exact power of ten (as the published caption writes them), else ``plain``."""
    import math

    k = round(math.log10(x)) if x > 0 else None
    if k is None or 10.0 ** k != x:
        return plain
    return "10" + str(k).translate(str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹"))


def tables_caption(rows: Sequence[dict[str, Any]], *, kind: str, n_queries: int | Sequence[int] | None = None,
                   epsilon: float | None = None, delta: float | None = None) -> str:
    """:data:`TABLES_CAPTION` filled in; where no row has a printed number (your own data sets) it says that the
    thesis printed none instead of naming lines the figure does not draw.

    Parameters
    ----------
    rows : sequence of dict
        The figure's rows (:func:`~dpkit.experiments.thesis.table_rows`).
    kind : {"abs", "rel"}
        The error plotted.
    n_queries, epsilon, delta : optional
        The run's queries per repetition (or the runs', several numbers stated as their range) and budget, stated in
        the caption (a QUICK run's fewer queries, another ε); ``None``: the thesis's (10⁴ queries, ε = 1, δ = 10⁻³),
        the published caption.
    """
    import math

    text = TABLES_CAPTION.format(kind="absolute" if kind == "abs" else "relative")
    if (n_queries, epsilon, delta) != (None, None, None):
        ns = sorted({10_000} if n_queries is None else {int(n_queries)} if isinstance(n_queries, (int, float))
                    else {int(n) for n in n_queries})
        eps = 1.0 if epsilon is None else float(epsilon)
        dlt = 1e-3 if delta is None else float(delta)
        n = power_of_ten(ns[0], str(ns[0])) + (f"–{power_of_ten(ns[-1], str(ns[-1]))}" if len(ns) > 1 else "")
        text = text.replace(_PROTOCOL, f"ε = {eps:g}, δ = {power_of_ten(dlt, f'{dlt:g}')}, {n} queries per repetition")
    printed = any(isinstance(v, (int, float)) and not math.isnan(v) for v in (r.get(f"paper_{kind}") for r in rows))
    return text if printed else text.replace(_THESIS_LINES, " (the thesis printed no number for these data sets).")


#: Mechanism I vs II: colour *and* marker; correct constants solid, printed dotted, the thesis dashed with crosses —
#: so every curve is told apart in grayscale.
MECH_STYLE = {"I": (PALETTE[0], "o"), "II": (PALETTE[1], "s")}
#: The thesis's curves: I dashed with crosses, II dash-dotted with pluses.
THESIS_STYLE = {"I": ("--", "x"), "II": ("-.", "+")}


def plot_errors_vs_sigma(rows: Iterable[dict[str, Any]], *, kind: str = "abs", title: str = "",
                         metric: str = "thesis") -> Figure:
    """Mean worst error vs σ, one panel per data set: ours (± std over repetitions) next to the thesis's numbers.

    Mechanism I: circles, II: squares (and two colours); solid = dpkit with correct constants, dotted = printed
    constants, dashed with crosses (I) and dash-dotted with pluses (II) = the thesis's Tables 3.2/3.3.
    Log scale (printed zeros are not drawn). σ ticks
    at the data values. ``title`` is for interactive use; exported paper figures carry none (the caption does).

    ``metric="supremum"`` (:mod:`~dpkit.outputs.figures.metric`) plots the class supremum instead of the thesis metric
    (``sup_abs_mean ± sup_abs_std``; absolute error only), without the thesis's printed numbers (they are of the
    thesis metric); an unknown metric, ``kind="rel"`` with it, or rows without a supremum are refused by name.
    """
    check_metric(metric)
    if metric != "thesis" and kind != "abs":
        raise ValueError(f"kind must be 'abs' with metric={metric!r} (the class supremum is of the absolute error); "
                         f"got {kind!r}")
    col = kind if metric == "thesis" else metric_column(metric)
    df = pd.DataFrame(list(rows))
    if not df.empty and metric != "thesis":
        df = _metric_columns(df, metric, ("mean", "std"))
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
            ax.errorbar(g["sigma"], g[f"{col}_mean"], yerr=g[f"{col}_std"], marker=mk, ms=3.5, capsize=2, color=c,
                        ls=":" if printed else "-", mfc="white" if printed else c,
                        label=f"{mech} dpkit" + (" (printed constants)" if printed else "")
                        + (", class supremum" if metric != "thesis" else "") + " ± std over reps")
            if not printed and metric == "thesis":
                paper = g[g[f"paper_{kind}"] > 0]
                tls, tmk = THESIS_STYLE.get(mech, ("--", "x"))
                ax.plot(paper["sigma"], paper[f"paper_{kind}"], ls=tls, marker=tmk, color=c, alpha=0.7,
                        label=f"{mech} thesis")
        sigma_axis(ax, sigmas, ds)
    finish_sigma_panels(fig, axes, len(datasets), kind=kind, ncol=3,
                        ylabel=None if metric == "thesis" else metric_label(metric))
    if title:
        fig.suptitle(title)
    return fig


def _metric_columns(df: pd.DataFrame, metric: str, stats: tuple[str, ...]) -> pd.DataFrame:
    """``df`` with ``metric``'s columns (``<prefix>_<stat>``) as floats; refused, naming the columns and the rows'
    ``sup_note``, when a row lacks them (a method without a class supremum, or rows made before it was recorded)."""
    cols = [f"{metric_column(metric)}_{s}" for s in stats]
    missing = [c for c in cols if c not in df or df[c].isna().any()]
    if missing:
        notes = sorted({str(n) for n in df.get("sup_note", pd.Series(dtype=object)).dropna() if n})
        raise ValueError(f"metric={metric!r}: rows without {', '.join(missing)}"
                         + (f" ({'; '.join(notes)})" if notes else " (no class supremum recorded)"))
    return df.astype({c: float for c in cols})


def plot_sweep(rows: Iterable[dict[str, Any]], *, xlabel: str, title: str = "", logx: bool = False,
               metric: str = "thesis") -> Figure:
    """Mean worst absolute error (± std over repetitions, min–max band) vs the swept parameter.

    ``metric`` (:mod:`~dpkit.outputs.figures.metric`): ``"thesis"`` (default) plots the thesis metric
    (``abs_mean, abs_std, abs_min, abs_max``), ``"supremum"`` the class supremum (``sup_abs_*``); the error axis's
    label names it. An unknown metric, or rows without the supremum, are refused by name.
    Ticks at the swept values (integers as integers); the legend sits outside the axes so it never covers the band.
    """
    col = metric_column(metric)
    df = pd.DataFrame(list(rows)).sort_values("value")
    if metric != "thesis":
        df = _metric_columns(df, metric, ("mean", "std", "min", "max"))
    fig, ax = new_figure(aspect=0.85)
    ax.fill_between(df["value"], df[f"{col}_min"], df[f"{col}_max"], color="0.8", alpha=0.6,
                    label="min–max over repetitions")
    ax.errorbar(df["value"], df[f"{col}_mean"], yerr=df[f"{col}_std"], color="0.1", marker="o", ms=3.5, capsize=2,
                label="mean ± std over repetitions")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(metric_label(metric))
    if logx:
        ax.set_xscale("log")
    values = list(df["value"])
    ax.set_xticks(values)
    ax.set_xticklabels([f"{v:g}" for v in values], rotation=45 if len(values) > 6 else 0)
    ax.minorticks_off()
    fig.legend(loc="outside lower center", ncol=2, fontsize=8)
    if title:
        fig.suptitle(title)  # interactive use only: a figure exported with a caption carries no title
    return fig
