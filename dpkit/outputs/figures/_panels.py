"""Panels per data set against σ, shared by the tables and leaderboard figures."""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.ticker import LogFormatterSciNotation, LogLocator, NullFormatter

from dpkit.outputs.plotting import new_figure

__all__ = ["dataset_panels", "sigma_axis", "log_ticks", "finish_sigma_panels"]


def dataset_panels(datasets: Sequence[str]) -> tuple[Figure, np.ndarray]:
    """A double-column grid with one panel per data set (up to three per row)."""
    ncols = min(3, len(datasets))
    nrows = -(-len(datasets) // ncols)
    return new_figure(nrows, ncols, width="double", aspect=0.3 * nrows if nrows > 1 else 0.36, squeeze=False)


def sigma_axis(ax: Axes, sigmas: Sequence[float], title: str) -> None:
    """Log error axis, σ ticks at the data values, the panel's title and the σ label."""
    ax.set_yscale("log")
    ax.set_xticks(list(sigmas))
    ax.set_xticklabels([f"{s:g}" for s in sigmas])
    ax.set_title(title)
    ax.set_xlabel(r"$\sigma$ ($K = \sigma^2$)")


def log_ticks(ax: Axes) -> None:
    """Labelled ticks of a log error axis that neither crowd nor vanish.

    At 1, 2 and 5 × 10^k when fewer than two powers of ten lie inside the axis (so such a panel still has two or
    more labels), at powers of ten otherwise. Minor ticks stay unlabelled (matplotlib labels several of them,
    2, 3, 4, 6 × 10^k, on a short axis, and they overlap).
    """
    lo, hi = ax.get_ylim()
    if lo > 0 and hi > lo:
        short = np.floor(np.log10(hi)) - np.ceil(np.log10(lo)) + 1 < 2  # fewer than two powers of ten inside
        ax.yaxis.set_major_locator(LogLocator(base=10.0, subs=(1.0, 2.0, 5.0) if short else (1.0,), numticks=12))
        ax.yaxis.set_major_formatter(LogFormatterSciNotation(base=10.0, labelOnlyBase=False,
                                                            minor_thresholds=(np.inf, np.inf)))  # label every major tick
        ax.yaxis.set_minor_formatter(NullFormatter())


def finish_sigma_panels(fig: Figure, axes: np.ndarray, n_used: int, *, kind: str, ncol: int,
                        ylabel: str | None = None) -> None:
    """Hide unused panels, label the error axes (:func:`log_ticks`; ``ylabel``, default the worst ``kind`` error),
    one legend (≥ 8 pt) below the panels."""
    for ax in axes.flat[n_used:]:
        ax.set_visible(False)
    for ax in axes.flat[:n_used]:
        if ax.get_yscale() == "log":
            log_ticks(ax)
    for ax in axes[:, 0]:
        ax.set_ylabel(ylabel or f"worst {'absolute' if kind == 'abs' else 'relative'} error")
    handles, labels = axes.flat[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncol=min(ncol, max(1, len(labels))), fontsize=8)
