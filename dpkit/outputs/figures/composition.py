"""Figures of notebook 51 (composition)."""
from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from dpkit.outputs.plotting import new_figure

__all__ = ["kl_bound_figure", "composition_bounds_figure"]

_BOUNDS = (("eps_basic", "basic (Thm 1.6)", "C0"), ("eps_advanced", "advanced (Thm 1.11)", "C1"),
           ("eps_optimal", "optimal (KOV)", "C2"), ("eps_exact", "exact PLD", "C3"))


def kl_bound_figure(epsilons: np.ndarray, kl_laplace: np.ndarray, kl_rr: np.ndarray, bound: np.ndarray) -> Figure:
    """KL divergences of shifted Laplace and randomized response against Lemma 1.8's ``ε(e^ε − 1)`` (log–log)."""
    fig, ax = new_figure()
    ax.loglog(epsilons, bound, "k--", label=r"$\varepsilon(e^\varepsilon-1)$")
    ax.loglog(epsilons, kl_laplace, label="Laplace (exact)")
    ax.loglog(epsilons, kl_rr, label="randomized response")
    ax.set_xlabel(r"$\varepsilon$")
    ax.set_ylabel("KL divergence")
    ax.legend()
    return fig


def composition_bounds_figure(table: pd.DataFrame, delta_prime: float) -> Figure:
    """Total ε' of k releases at one δ': basic, advanced (Thm 1.11), optimal (KOV) and the exact PLD, per per-step ε.

    ``table`` is :func:`dpkit.claims.composition.composition_bounds`'s table.
    """
    fig, ax = new_figure()
    sub = table[table.delta_prime == delta_prime]
    for col, lab, color in _BOUNDS:
        for e, grp in sub.groupby("epsilon"):
            ax.loglog(grp.k, grp[col], marker="o", label=lab if e == sub.epsilon.min() else None, color=color)
    ax.set_xlabel("k")
    ax.set_ylabel(r"total $\varepsilon'$")
    ax.legend()
    return fig
