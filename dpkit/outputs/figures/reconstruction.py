"""Figures of notebook 53 (reconstruction attacks)."""
from __future__ import annotations

import pandas as pd
from matplotlib.figure import Figure

from dpkit.outputs.plotting import new_figure

__all__ = ["phase_transition_figure"]


def phase_transition_figure(table: pd.DataFrame) -> Figure:
    """Mean fraction of wrongly reconstructed bits against the noise ``E/√n``, one curve per n (Dinur–Nissim).

    ``table`` is :func:`dpkit.claims.reconstruction.lp_phase_transition`'s table (columns ``n, kappa, error_fraction``).
    """
    fig, ax = new_figure()
    for n, grp in table.groupby("n"):
        m = grp.groupby("kappa").error_fraction.mean()
        ax.plot(m.index, m.values, marker="o", label=f"n = {n}")
    ax.axhline(0.5, color="grey", ls=":", lw=1)
    ax.set_xscale("log")
    ax.set_xlabel(r"noise $E/\sqrt{n}$")
    ax.set_ylabel("fraction of wrong bits")
    ax.legend()
    return fig
