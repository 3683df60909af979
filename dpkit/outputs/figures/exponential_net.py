"""Figures of notebook 52 (exponential mechanism and friends)."""
from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from dpkit.outputs.plotting import new_figure

__all__ = ["exponential_tail_figure"]


def exponential_tail_figure(table: pd.DataFrame) -> Figure:
    """Exact utility tails of the exponential mechanism per range size against ``e^{−t}`` (thesis Thm 1.15).

    ``table`` is :func:`dpkit.claims.exponential_net.exponential_utility`'s table (columns ``R, t, P_exact``).
    """
    fig, ax = new_figure()
    for R, grp in table.groupby("R"):
        ax.semilogy(grp.t, grp.P_exact.clip(lower=1e-300), label=f"|R| = {R}")
    ts = np.unique(table.t)
    ax.semilogy(ts, np.exp(-ts), "k--", label=r"$e^{-t}$")
    ax.set_ylim(1e-12, 1.5)
    ax.set_xlabel("t")
    ax.set_ylabel("exact tail probability")
    ax.legend()
    return fig
