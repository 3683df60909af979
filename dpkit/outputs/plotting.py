"""One paper style and one exporter for every figure.

The style is seaborn's ``paper`` context with a colour-blind-safe palette and embedded TrueType fonts, sized for one or
two columns; :func:`export_figure` writes PDF + PNG (docs/guide/export.md).
"""
from __future__ import annotations

import os
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from dpkit.core.paths import figures_dir

__all__ = [
    "SINGLE_COLUMN",
    "DOUBLE_COLUMN",
    "PALETTE",
    "rc_params",
    "use_style",
    "style",
    "new_figure",
    "export_figure",
    "paper_figures_dir",
    "show_figure",
]

SINGLE_COLUMN = 3.4  # inches, one column of a two-column paper
DOUBLE_COLUMN = 7.0  # inches, full width
PALETTE = ["#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#F0E442", "#000000"]  # Okabe–Ito

_EXTRA_RC: dict[str, object] = {
    "figure.dpi": 110,
    "savefig.dpi": 200,
    "savefig.bbox": "tight",
    "axes.spines.top": False,
    "axes.spines.right": False,
    "grid.alpha": 0.35,
    "lines.linewidth": 1.4,
    "lines.markersize": 4,
    "legend.frameon": False,
    # embedded TrueType fonts (Type 42), as publishers ask
    "pdf.fonttype": 42,
    "ps.fonttype": 42,
    "svg.fonttype": "none",
}


def rc_params(context: str = "paper") -> dict[str, object]:
    """The full matplotlib rcParams of dpkit's style (seaborn whitegrid + paper context)."""
    import seaborn as sns

    rc: dict[str, object] = {}
    rc.update(sns.axes_style("whitegrid"))
    rc.update(sns.plotting_context(context))
    from matplotlib import cycler

    rc["axes.prop_cycle"] = cycler(color=PALETTE)
    rc.update(_EXTRA_RC)
    return rc


def use_style(context: str = "paper") -> None:
    """Apply dpkit's style globally (notebooks call this once, in their derived-values cell)."""
    import matplotlib as mpl

    mpl.rcParams.update(rc_params(context))


@contextmanager
def style(context: str = "paper") -> Iterator[None]:
    """Context manager applying dpkit's style temporarily."""
    import matplotlib as mpl

    with mpl.rc_context(rc_params(context)):
        yield


def new_figure(nrows: int = 1, ncols: int = 1, *, width: str | float = "single", aspect: float = 0.75, **kwargs):
    """``plt.subplots`` under dpkit's style, sized for a paper.

    Parameters
    ----------
    width : {"single", "double"} or float
        Single column (3.4 in), double column (7.0 in), or a width in inches.
    aspect : float
        Height / width of the whole figure (before ``nrows`` scaling).
    """
    import matplotlib.pyplot as plt

    if isinstance(width, str):
        if width not in ("single", "double"):
            raise ValueError(f"width must be 'single', 'double' or inches; got {width!r}")
        w = SINGLE_COLUMN if width == "single" else DOUBLE_COLUMN
    else:
        w = float(width)
        if not w > 0:
            raise ValueError(f"width must be > 0 inches; got {width}")
    kwargs.setdefault("figsize", (w, w * aspect * max(1.0, nrows / max(ncols, 1))))
    kwargs.setdefault("layout", "constrained")
    with style():
        return plt.subplots(nrows, ncols, **kwargs)


def show_figure(fig) -> None:
    """Show ``fig`` in the notebook once, as a PNG image, whatever matplotlib's backend, and close it.

    A notebook's figure cell ends with ``show_figure(fig)`` rather than ``fig``: under the batch runner's ``Agg``
    backend a bare ``fig`` prints ``<Figure size ...>``, and under JupyterLab's inline backend it shows the figure
    twice (the cell's value, then the inline backend's own display of every open figure). Closing the figure leaves
    the inline backend nothing to show again.

    Parameters
    ----------
    fig : matplotlib.figure.Figure
        The figure (already exported with :func:`export_figure`, if it is to be kept).
    """
    import io

    import matplotlib.pyplot as plt
    from IPython.display import Image, display

    buf = io.BytesIO()
    with style():
        fig.savefig(buf, format="png", bbox_inches="tight")
    plt.close(fig)
    display(Image(data=buf.getvalue(), format="png"))


def paper_figures_dir() -> Path:
    """The repository's ``figures/`` folder (exported paper figures)."""
    return figures_dir()


def export_figure(
    fig,
    name: str,
    output_dir: str | os.PathLike,
    *,
    notebook: str | None = None,
    paper: bool = False,
    formats: tuple[str, ...] = ("pdf", "png"),
    caption: str | None = None,
    parameters: dict[str, object] | None = None,
) -> list[Path]:
    """Save ``fig`` as ``output_dir/name.{pdf,png}`` (fonts embedded); return the paths.

    With ``caption`` and/or ``parameters`` the figure carries them: in the PDF/PNG metadata (``Subject``:
    the caption, ``Keywords``: ``NAME=value; …``) and in a caption file ``name.caption.txt`` beside it. A figure
    exported with a caption or as a paper figure carries no title (``suptitle``): the caption says what it shows, and
    a title would repeat it.

    Parameters
    ----------
    fig : matplotlib.figure.Figure
    name : str
        File stem without folder or extension, e.g. ``"fig3_1_kappa_sweep"``.
    output_dir : path
        The run's output folder (created if missing).
    notebook : str, optional
        The notebook's stem, used to name paper figures.
    paper : bool
        Also write ``figures/<notebook>__<name>.{pdf,png}`` in the repository.
    caption : str, optional
        What the figure shows (protocol, what the bars are).
    parameters : dict, optional
        The parameters that made it (σ, ε, δ, data set, repetitions …).

    Raises
    ------
    ValueError
        A name with a folder or an extension; ``paper=True`` without ``notebook``; a titled figure (``suptitle``)
        exported with a caption or as a paper figure.
    """
    if not isinstance(name, str) or not name or any(c in name for c in "/\\") or Path(name).suffix in {".pdf", ".png"}:
        raise ValueError(f"name must be a bare file stem without folder or extension; got {name!r}")
    targets = [(Path(output_dir), name)]
    suptitle = getattr(fig, "_suptitle", None)
    if (paper or caption) and suptitle is not None and suptitle.get_text():
        raise ValueError(f"{name}: a figure exported {'as a paper figure' if paper else 'with a caption'} carries no "
                         f"title ({suptitle.get_text()!r}); the caption says what it shows")
    if paper:
        if not notebook:
            raise ValueError("notebook must name the notebook when paper=True (figures are named <notebook>__<name>)")
        targets.append((paper_figures_dir(), f"{notebook}__{name}"))
    keywords = "; ".join(f"{k}={v}" for k, v in (parameters or {}).items())
    # no CreationDate: the same run writes the same bytes (a re-run does not show up as a changed figure)
    meta: dict[str, str | None] = {"Creator": "dpkit", "CreationDate": None}
    if caption:
        meta["Subject"] = caption
    if keywords:
        meta["Keywords"] = keywords
    paths: list[Path] = []
    for folder, stem in targets:
        folder.mkdir(parents=True, exist_ok=True)
        for fmt in formats:
            p = folder / f"{stem}.{fmt}"
            tmp = folder / f".{stem}.tmp.{fmt}"
            md = meta if fmt == "pdf" else ({"Software": "dpkit", **{k: v for k, v in meta.items()
                                                                     if k not in ("Creator", "CreationDate")}}
                                            if fmt == "png" else None)
            with style():
                fig.savefig(tmp, format=fmt, metadata=md)
            os.replace(tmp, p)  # never leave a half-written figure
            paths.append(p)
        if caption or keywords:
            cap = folder / f"{stem}.caption.txt"
            cap.write_text((caption or "") + ("\n\nParameters: " + keywords if keywords else "") + "\n")
            paths.append(cap)
    return paths
