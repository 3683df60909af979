"""Figures of notebook 54 (smoothness of the Gaussian-kernel workload)."""
from __future__ import annotations

from typing import Sequence

import numpy as np
from matplotlib.figure import Figure

from dpkit.outputs.plotting import new_figure

__all__ = ["derivative_growth_figure"]


def derivative_growth_figure(
    sigmas: Sequence[float], orders: Sequence[np.ndarray], sup_derivative: Sequence[np.ndarray]
) -> Figure:
    """``sup|∂^K e^{−x²/(2σ²)}|`` against ``K/σ²``, one curve per σ, with the level 1 and Prop 2.2's ``K = σ²``.

    The inputs are :func:`dpkit.claims.smoothness.critical_orders`'s ``table.sigma``, ``orders`` and ``sup_derivative``.
    """
    fig, ax = new_figure()
    for sigma, ks, sup in zip(sigmas, orders, sup_derivative):
        ax.semilogy(ks / sigma**2, sup, label=rf"$\sigma={sigma:g}$")
    ax.axhline(1, color="grey", ls=":")
    ax.axvline(1, color="grey", ls="--")
    ax.set_xlabel(r"order $K/\sigma^2$")
    ax.set_ylabel(r"$\sup|\partial^K e^{-x^2/2\sigma^2}|$")
    ax.legend()
    return fig
