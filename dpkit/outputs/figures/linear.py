"""Figures 1–3 of Wu, He & Xia 2017, shared by notebook 30's batch and interactive paths.

Each function receives computed results (:class:`~dpkit.mechanisms.linear.RateGrid`,
:class:`~dpkit.mechanisms.linear.RadiusSearch`, :class:`~dpkit.mechanisms.linear.LevelSetDensity`)
and returns a matplotlib Figure drawn with :func:`dpkit.outputs.plotting.new_figure`.
"""
from __future__ import annotations

import math
from typing import Mapping, Sequence

import numpy as np

from dpkit.mechanisms.laplace import Laplace
from dpkit.mechanisms.linear.density import LevelSetDensity
from dpkit.mechanisms.linear.staircase import Staircase
from dpkit.mechanisms.linear.tuning import RadiusSearch, RateGrid
from dpkit.outputs.plotting import new_figure

__all__ = ["plot_rate_heatmaps", "plot_min_rate", "plot_densities"]


def plot_rate_heatmaps(grids: Mapping[str, RateGrid], *, ncols: int | None = None, vmax: float = 1.5):
    """Figs 1–2: ``rate`` over ``(δ/Δf, ε)`` per configuration, diverging at ``rate = 1``.

    Blue (< 1): the level-set mechanism beats the optimal staircase; red (> 1): it is worse.
    The white contour marks ``rate = 1``.
    """
    from matplotlib.colors import TwoSlopeNorm

    names = list(grids)
    ncols = ncols or len(names)
    nrows = int(math.ceil(len(names) / ncols))
    fig, axes = new_figure(nrows, ncols, width="double", aspect=0.32 * nrows if nrows > 1 else 0.3, squeeze=False, sharey=True)
    lo = min(float(np.nanmin(g.rate)) for g in grids.values())
    norm = TwoSlopeNorm(vmin=min(lo, 0.999), vcenter=1.0, vmax=vmax)
    im = None
    for k, name in enumerate(names):
        ax = axes[k // ncols][k % ncols]
        g = grids[name]
        x = g.radii / g.sensitivity
        im = ax.pcolormesh(x, g.epsilons, np.clip(g.rate.T, None, vmax), cmap="RdBu_r", norm=norm, shading="nearest")
        if np.nanmin(g.rate) < 1 < np.nanmax(g.rate):
            ax.contour(x, g.epsilons, g.rate.T, levels=[1.0], colors="k", linewidths=0.6)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_title(f"{name} (Δf={g.sensitivity:g})", fontsize=8)
        ax.set_xlabel("δ / Δf")
        if k % ncols == 0:
            ax.set_ylabel("ε")
    for k in range(len(names), nrows * ncols):
        axes[k // ncols][k % ncols].set_visible(False)
    fig.colorbar(im, ax=axes, label=f"rate (clipped at {vmax})", shrink=0.9)
    return fig


def plot_min_rate(curves: Mapping[str, Sequence[RadiusSearch]], *, baseline: str = "staircase"):
    """``min_δ rate`` against ε for each configuration (docs/science/linear_queries.md, *The experiments*)."""
    fig, ax = new_figure(1, 1, width="single", aspect=0.8)
    for k, (name, res) in enumerate(curves.items()):
        eps = np.array([r.epsilon for r in res])
        val = np.array([r.rate for r in res])
        if baseline == "laplace":
            val = val * np.exp(eps / 2) * eps / np.expm1(eps)
        # distinct line styles: identical sets (V1 = V6) stay visible
        ax.plot(eps, val, marker="os^v"[k % 4], ms=2.5, lw=1, ls=["-", "--", ":", "-."][k % 4], label=name)
    ax.axhline(1.0, color="k", lw=0.6, ls="--")
    ax.set_xscale("log")
    ax.set_xlabel("ε")
    ax.set_ylabel("min over δ of rate" + (" vs Laplace" if baseline == "laplace" else " (vs staircase)"))
    ax.legend(fontsize=6, ncol=2)
    return fig


def plot_densities(density: LevelSetDensity, *, span: float = 3.0, n_points: int = 6001):
    """Fig. 3: densities of (a) Laplace, (b) staircase (γ*) and (c) the level-set mechanism,
    same ε and the same ``Δf = max|v|``, on ``[−span·Δf, span·Δf]``."""
    eps, dfs = density.epsilon, density.sensitivity
    r = np.linspace(-span * dfs, span * dfs, n_points)
    lap = Laplace(epsilon=eps, sensitivity=dfs, neighbouring="add-remove")
    st = Staircase(epsilon=eps, sensitivity=dfs)
    fig, axes = new_figure(1, 3, width="double", aspect=0.28, sharey=True)
    axes[0].plot(r, np.exp(-np.abs(r) / lap.scale) / (2 * lap.scale), lw=1)
    axes[0].set_title(f"(a) Laplace, E|Z|={lap.mean_abs_error:.3g}", fontsize=8)
    axes[1].plot(r, st.pdf(r), lw=1)
    axes[1].set_title(f"(b) staircase, E|Z|={st.mean_abs_error:.3g}", fontsize=8)
    axes[2].plot(r, density.pdf(r), lw=0.8)
    axes[2].set_title(f"(c) level sets, δ={density.levels.radius:.3g}, E|Z|={density.expected_abs_error:.3g}", fontsize=8)
    for ax in axes:
        ax.set_xlabel("z")
    axes[0].set_ylabel("density")
    return fig
