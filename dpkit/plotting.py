"""One plotting style and one exporter for every figure (PDF with embedded fonts + PNG)."""
from __future__ import annotations

import os
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import matplotlib

__all__ = ["STYLE", "use_style", "style", "export_figure", "new_figure"]

STYLE: dict[str, object] = {
    "figure.figsize": (6.4, 4.0),
    "figure.dpi": 110,
    "savefig.dpi": 200,
    "savefig.bbox": "tight",
    "font.size": 10,
    "axes.titlesize": 11,
    "axes.labelsize": 10,
    "legend.fontsize": 9,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "lines.linewidth": 1.6,
    "lines.markersize": 5,
    "axes.prop_cycle": matplotlib.cycler(
        color=["#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#F0E442", "#000000"]
    ),
    # embedded TrueType fonts (Type 42), as journals ask
    "pdf.fonttype": 42,
    "ps.fonttype": 42,
    "svg.fonttype": "none",
}


def use_style() -> None:
    """Apply dpkit's style globally (notebooks call this once)."""
    import matplotlib as mpl

    mpl.rcParams.update(STYLE)


@contextmanager
def style() -> Iterator[None]:
    """Context manager applying dpkit's style temporarily."""
    import matplotlib as mpl

    with mpl.rc_context(STYLE):
        yield


def new_figure(nrows: int = 1, ncols: int = 1, **kwargs):
    """``plt.subplots`` under dpkit's style."""
    import matplotlib.pyplot as plt

    with style():
        return plt.subplots(nrows, ncols, **kwargs)


def export_figure(fig, name: str, output_dir: str | os.PathLike, *, formats: tuple[str, ...] = ("pdf", "png")) -> list[Path]:
    """Save ``fig`` as ``output_dir/name.{pdf,png}`` (fonts embedded) and return the paths.

    Parameters
    ----------
    fig : matplotlib.figure.Figure
    name : str
        File stem, no extension (``"fig3_1_kappa_sweep"``).
    output_dir : path
        Created if missing. Run outputs go under ``results/``; paper figures to ``figures/``.
    """
    if not name or any(c in name for c in "/\\") or Path(name).suffix in {".pdf", ".png"}:
        raise ValueError(f"name must be a bare file stem without folder or extension; got {name!r}")
    out = Path(output_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    with style():
        for fmt in formats:
            p = out / f"{name}.{fmt}"
            fig.savefig(p, format=fmt, metadata={"Creator": "dpkit"} if fmt == "pdf" else None)
            paths.append(p)
    return paths
