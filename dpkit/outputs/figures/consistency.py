"""Figures for Cai et al. 2021 (Figs. 1–4 analogues); used by notebook 35's batch and interactive paths.

Each function receives the rows of :mod:`dpkit.claims.consistency_study` and returns a matplotlib
Figure drawn with :func:`dpkit.outputs.plotting.new_figure`.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from dpkit.claims.consistency_study import ConvergenceTrace, TimingRow
from dpkit.outputs.plotting import new_figure

__all__ = ["plot_convergence", "plot_timing", "METHOD_LABELS"]

METHOD_LABELS = {
    "algorithm1": "Algorithm 1 (mean |Δx| < tol)",
    "algorithm1-100": "Algorithm 1 (100 cycles)",
    "pinv": "general solution (dense pinv)",
    "cholesky": "dense Cholesky of MMᵀ",
    "splu": "sparse LU of MMᵀ (scipy splu)",
    "lsqr": "LSQR (scipy)",
    "closed-form": "closed form Boost(X̃)·Π",
}


def plot_convergence(rows: Sequence[ConvergenceTrace], key: str = "mse", *, optimum: bool = True, logy: bool = True):
    """One curve per T of the trace ``key`` (``"mse"`` = Fig. 1, ``"err"`` = Fig. 2) against the cycle s.

    With ``key="err"`` and ``optimum=True`` the exact optimum's all-node RMSE is drawn dashed
    (the "general solution" line of Fig. 2).
    """
    if key not in ("mse", "err", "err_leaf", "dist", "dist_inf"):
        raise ValueError(f"key must be one of ('mse', 'err', 'err_leaf', 'dist', 'dist_inf'); got {key!r}")
    fig, ax = new_figure()
    for r in rows:
        y = np.asarray(getattr(r, key))
        s = np.arange(y.size)
        start = 1 if (logy and key == "mse") else 0
        (line,) = ax.plot(s[start:], y[start:], label=f"T = {r.T}")
        if key == "err" and optimum:
            ax.axhline(r.err_opt, ls="--", lw=0.8, color=line.get_color())
    ax.set_xlabel("iteration s (full cycles)")
    ax.set_ylabel({"mse": "mse_s (eq. 14)", "err": "err_s, all-node RMSE (eq. 15)"}.get(key, key))
    if logy:
        ax.set_yscale("log")
    ax.legend(fontsize="small", ncol=2)
    return fig


def plot_timing(rows: Sequence[TimingRow], methods: Sequence[str] | None = None, *, column: str = "total_s"):
    """Wall time (build + solve) against T on log–log axes, one line per method (Figs. 3/4)."""
    fig, ax = new_figure()
    if column not in ("build_s", "solve_s", "total_s"):
        raise ValueError(f"column must be one of ('build_s', 'solve_s', 'total_s'); got {column!r}")
    methods = methods or list(dict.fromkeys(r.method for r in rows))
    for mth in methods:
        pts = sorted((r.T, getattr(r, column)) for r in rows if r.method == mth)
        if pts:
            T, t = zip(*pts)
            ax.plot(T, t, marker="o", ms=3, label=METHOD_LABELS.get(mth, mth))
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("T (days)")
    ax.set_ylabel("wall time [s], one run")
    ax.legend(fontsize="x-small", framealpha=0.8)
    return fig
