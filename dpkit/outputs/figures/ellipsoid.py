"""Figure of notebook 57 (Alg 8): the two ellipsoid samplers side by side."""
from __future__ import annotations

from matplotlib.figure import Figure

from dpkit.claims.ellipsoid import SamplerScatter
from dpkit.outputs.plotting import new_figure

__all__ = ["samplers_figure"]


def samplers_figure(scatter: SamplerScatter) -> Figure:
    """Scatter of the first two coordinates of each sampler's points (uniform directions vs the printed uniform angles)."""
    fig, axs = new_figure(1, 2, width="double", aspect=0.4)
    for ax, (method, x) in zip(axs, (("uniform", scatter.uniform), ("thesis", scatter.thesis))):
        ax.scatter(x[:, 0], x[:, 1], s=1, alpha=0.4, rasterized=True)  # thousands of points: raster inside the PDF
        ax.set_aspect("equal")
        ax.set_title(f"{method} sampler, k = {scatter.k} (x₁, x₂)")
    return fig
