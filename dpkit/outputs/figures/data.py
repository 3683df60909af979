"""Figures of the data sets: marginal histograms of the rescaled data (notebook 10).

Each function receives loaded :class:`~dpkit.data.Dataset` objects and returns a matplotlib Figure.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Mapping, Sequence

import numpy as np

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from dpkit.data import Dataset

__all__ = ["pick_columns", "marginal_histograms", "dataset_marginals"]


def pick_columns(d: int, k: int) -> list[int]:
    """``k`` column indices spread evenly over ``0..d-1`` (all of them if ``k >= d``)."""
    if k >= d:
        return list(range(d))
    return sorted({int(round(x)) for x in np.linspace(0, d - 1, k)})


def marginal_histograms(datasets: Sequence[Dataset], *, k: int = 4, bins: int = 30) -> Figure:
    """One row per data set, ``k`` marginal histograms of its rescaled columns in [-1, 1].

    Parameters
    ----------
    datasets : sequence of :class:`dpkit.data.Dataset`
    k : int
        Histograms per data set (columns spread evenly over the d columns).
    bins : int
        Equal-width bins on [-1, 1].

    Returns
    -------
    matplotlib.figure.Figure
    """
    from dpkit.outputs.plotting import new_figure

    if not datasets:
        raise ValueError("datasets must hold at least one Dataset")
    if k < 1 or bins < 1:
        raise ValueError(f"k and bins must be >= 1; got k={k}, bins={bins}")
    rows = len(datasets)
    fig, axes = new_figure(rows, k, width="double", aspect=0.16 * rows, squeeze=False)
    edges = np.linspace(-1.0, 1.0, bins + 1)
    for i, ds in enumerate(datasets):
        cols = pick_columns(ds.d, k)
        for j in range(k):
            ax = axes[i, j]
            if j >= len(cols):
                ax.set_axis_off()
                continue
            c = cols[j]
            ax.hist(ds.X[:, c], bins=edges, color=f"C{i % 8}", alpha=0.85)
            ax.set_xlim(-1, 1)
            ax.set_yticks([])
            ax.set_title(f"{ds.name}: {ds.columns[c]}", fontsize=7)
            if i < rows - 1:
                ax.set_xticklabels([])
        axes[i, 0].set_ylabel(f"{ds.name}\n(n={ds.n}, d={ds.d})", fontsize=7)
    return fig


def dataset_marginals(datasets: Mapping[str, Dataset], name: str, k: int = 4, bins: int = 30) -> Figure:
    """:func:`marginal_histograms` of one of the loaded ``datasets`` (the notebook's interactive explorer)."""
    if name not in datasets:
        raise ValueError(f"name must be one of the loaded data sets {sorted(datasets)}; got {name!r}")
    return marginal_histograms([datasets[name]], k=k, bins=bins)
