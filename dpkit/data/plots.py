"""Figures of the data layer: marginal histograms of the rescaled data sets (notebook 10)."""
from __future__ import annotations

from typing import Sequence

import numpy as np

__all__ = ["pick_columns", "marginal_histograms", "dataset_marginals"]


def pick_columns(d: int, k: int) -> list[int]:
    """``k`` column indices spread evenly over ``0..d-1`` (all of them if ``k >= d``)."""
    if k >= d:
        return list(range(d))
    return sorted({int(round(x)) for x in np.linspace(0, d - 1, k)})


def marginal_histograms(datasets: Sequence, *, k: int = 4, bins: int = 30):
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


def dataset_marginals(name: str, k: int = 4, bins: int = 30, rng: int = 0):
    """Load ``name`` (quietly, data-derived bounds allowed) and return :func:`marginal_histograms` for it."""
    import warnings

    from dpkit.core.exceptions import PrivacyLeakWarning
    from dpkit.data import load

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        ds = load(name, rng=rng, download=False)
    return marginal_histograms([ds], k=k, bins=bins)
