"""Figure of notebook 56 (private PCA): median subspace angle and eigenvalue error vs n."""
from __future__ import annotations

from matplotlib.figure import Figure

from dpkit.claims.private_pca import PCARates
from dpkit.outputs.plotting import new_figure

__all__ = ["pca_rates_figure"]


def pca_rates_figure(rates: PCARates) -> Figure:
    """Log–log medians of ``sin θ`` and ``max_s |λ̂_s − λ_s|`` against n, with a ``1/n`` guide through the first angle."""
    fig, ax = new_figure()
    ns = rates.ns.astype(float)
    ax.loglog(ns, rates.median_sin_theta, "o-", label=r"median $\sin\theta$")
    ax.loglog(ns, rates.median_eig_error, "s-", label=r"median $\max_s|\hat\lambda_s-\lambda_s|$")
    ax.loglog(ns, rates.median_sin_theta[0] * ns[0] / ns, "k:", label=r"$\propto 1/n$")
    ax.set_xlabel("n")
    ax.legend()
    return fig
