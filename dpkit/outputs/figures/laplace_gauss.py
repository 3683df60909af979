"""Figures of notebook 50 (Laplace and Gauss mechanisms)."""
from __future__ import annotations

import pandas as pd
from matplotlib.figure import Figure

from dpkit.outputs.plotting import new_figure

__all__ = ["gaussian_calibrations_figure"]


def gaussian_calibrations_figure(table: pd.DataFrame, delta: float) -> Figure:
    """σ against ε of each Gaussian calibration at one δ (thesis Ex 1.3), log scale.

    Parameters
    ----------
    table : DataFrame
        :func:`dpkit.claims.laplace_gauss.gaussian_calibration_table` (columns ``calibration, epsilon, delta, sigma``).
    delta : float
        The δ whose rows are drawn.
    """
    fig, ax = new_figure()
    for cal, grp in table[table.delta == delta].groupby("calibration"):
        ax.plot(grp.epsilon, grp.sigma, marker="o", label=cal)
    ax.set_xlabel(r"$\varepsilon$")
    ax.set_ylabel(r"$\sigma$ (S = 1, $\delta$ = %g)" % delta)
    ax.set_yscale("log")
    ax.legend()
    return fig
