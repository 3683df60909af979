"""Figures of notebook 55 (full-grid trigonometric mechanism): error vs n, and the error terms of (2.5)."""
from __future__ import annotations

import numpy as np
from matplotlib.figure import Figure
from matplotlib.ticker import NullFormatter

from dpkit.claims.trig_rates import ErrorTerm, RateRun, claimed_exponent, supremum_table
from dpkit.outputs.plotting import PALETTE, new_figure

__all__ = ["error_vs_n_figure", "error_terms_figure", "supremum_vs_n_figure"]


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


def supremum_vs_n_figure(runs: tuple[RateRun, ...], *, K: float) -> Figure:
    """The workload's worst error and the class supremum vs n (medians over the repetitions), one panel per (d, mechanism).

    Log–log; the class supremum is :attr:`RateRun.supremum` (the certified upper end for d ≤ 2). The theorem's rate
    (Thm 2.4/2.5 (2), :func:`claimed_exponent`) is drawn as a dotted line through the supremum's first median. Markers
    and line styles, not only colours, tell the series apart (readable in grayscale); panels are titled by the
    mechanism (I or II) and d, with the theorem's exponent.
    """
    rows = supremum_table(runs)
    groups = sorted({(r.d, r.mechanism) for r in rows})
    fig, axs = new_figure(1, len(groups), width="double", aspect=0.36, squeeze=False, sharey=False)
    for ax, (d, mech) in zip(axs[0], groups):
        grp = [r for r in rows if (r.d, r.mechanism) == (d, mech)]
        ns = np.array([r.n for r in grp], dtype=float)
        sup = np.array([r.supremum for r in grp])
        ax.loglog(ns, sup, "s-", color=PALETTE[0], label="class supremum")
        ax.loglog(ns, [r.worst_error for r in grp], "o--", color=PALETTE[1], markerfacecolor="white", label="workload worst")
        a = claimed_exponent(d, mech, K)
        ax.loglog(ns, sup[0] * (ns / ns[0]) ** a, ":", color="black", label="theorem's rate (slope in title)")
        ax.set_title(f"{mech}, d = {d} (slope {a:.2f})")
        ax.set_xlabel("n")
        ax.set_xticks(ns, [f"{n:,.0f}" for n in ns])
        ax.xaxis.set_minor_formatter(NullFormatter())
    axs[0][0].set_ylabel("error (median over reps)")
    fig.legend(*axs[0][0].get_legend_handles_labels(), loc="outside upper center", ncols=3)
    return fig
