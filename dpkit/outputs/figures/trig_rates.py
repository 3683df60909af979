"""Figures of notebook 55 (full-grid trigonometric mechanism): error vs n, and the error terms of (2.5)."""
from __future__ import annotations

import numpy as np
from matplotlib.figure import Figure

from dpkit.claims.trig_rates import ErrorTerm, RateRun, claimed_exponent
from dpkit.outputs.plotting import new_figure

__all__ = ["error_vs_n_figure", "error_terms_figure"]


def error_vs_n_figure(runs: tuple[RateRun, ...], *, K: float) -> Figure:
    """Median worst-case error vs n per mechanism, one panel per d, with the claimed rate (dotted) through the first median."""
    dims = sorted({r.d for r in runs})
    fig, axs = new_figure(1, len(dims), width="double", aspect=0.4, squeeze=False)
    for ax, d in zip(axs[0], dims):
        for mech in sorted({r.mechanism for r in runs if r.d == d}):
            grp = [r for r in runs if r.d == d and r.mechanism == mech]
            ns = np.array(sorted({r.n for r in grp}), dtype=float)
            med = np.array([np.median([r.worst_error for r in grp if r.n == n]) for n in ns])
            ax.loglog(ns, med, "o-", label=f"mechanism {mech}")
            ax.loglog(ns, med[0] * (ns / ns[0]) ** claimed_exponent(d, mech, K), ":", color="grey")
        ax.set_title(f"d = {d}, K = {K:g}")
        ax.set_xlabel("n")
        ax.set_ylabel("worst-case error")
        ax.legend()
    return fig


def error_terms_figure(terms: tuple[ErrorTerm, ...]) -> Figure:
    """Horizontal bars of the median worst-case error of each variant (log scale)."""
    fig, ax = new_figure(width="double", aspect=0.3)
    ax.barh([t.variant for t in terms], [t.median_worst_error for t in terms])
    ax.set_xscale("log")
    ax.set_xlabel("median worst-case error")
    return fig
