"""Paper figures: curves told apart in grayscale (marker and line style, not colour alone), σ ticks at the data
values, legends of at least 8 pt, no suptitle, every panel keeps its x tick labels, dense scatters rasterised."""
from __future__ import annotations

import io

import matplotlib

matplotlib.use("Agg")
import numpy as np  # noqa: E402

from dpkit.outputs.figures.tables import plot_errors_vs_sigma, plot_sweep  # noqa: E402


def _rows():
    rows = []
    for ds in ("CRM", "CSN", "CTG", "PKS", "WDBC"):
        for s in (2.0, 4.0, 6.0, 8.0, 10.0):
            for mech in ("I", "II"):
                for c in ("correct", "thesis"):
                    rows.append({"dataset": ds, "sigma": s, "mechanism": mech, "constants": c, "abs_mean": 0.01 * s,
                                 "abs_std": 0.001, "paper_abs": 0.02 * s})
    return rows


def _legend_styles(fig):
    handles, _ = fig.axes[0].get_legend_handles_labels()
    out = []
    for h in handles:
        line = h.lines[0] if hasattr(h, "lines") else h  # an errorbar container holds its data line first
        out.append((line.get_marker(), line.get_linestyle(), str(line.get_markerfacecolor())[:5]))
    return out


def test_tables_figure_reads_in_grayscale():
    fig = plot_errors_vs_sigma(_rows())
    styles = _legend_styles(fig)
    # grayscale drops the colour: (marker, line style, filled/hollow) must still tell every curve apart
    assert len(styles) == len({(m, ls, "white" in fc or fc.startswith("w")) for m, ls, fc in styles}) == 6
    assert fig._suptitle is None
    assert min(t.get_fontsize() for t in fig.legends[0].get_texts()) >= 8
    visible = [ax for ax in fig.axes if ax.get_visible()]
    assert len(visible) == 5
    for ax in visible:  # every panel (also the one above the empty slot, CTG) keeps σ ticks at the data values
        assert list(ax.get_xticks()) == [2.0, 4.0, 6.0, 8.0, 10.0]
        assert [t.get_text() for t in ax.get_xticklabels()] == ["2", "4", "6", "8", "10"]
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=60)
    img = matplotlib.image.imread(io.BytesIO(buf.getvalue()))
    gray = img[..., :3] @ np.array([0.299, 0.587, 0.114])
    assert gray.std() > 0.05  # something is drawn in grayscale


def test_sweep_figure_ticks_and_legend_outside():
    rows = [{"value": v, "abs_mean": 0.01 * v, "abs_std": 0.001, "abs_min": 0.009 * v, "abs_max": 0.011 * v}
            for v in (1, 2, 3, 5, 8)]
    fig = plot_sweep(rows, xlabel="PCA output dimension k")
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["1", "2", "3", "5", "8"]  # integers as integers
    assert fig.legends and not ax.get_legend()  # the legend is outside the axes, never over the band
    assert min(t.get_fontsize() for t in fig.legends[0].get_texts()) >= 8
