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


# ----------------------------------------------------------------------------- a grayscale copy, rendered
def _legend_keys_in_grayscale(fig, legend, dpi=200):
    """The legend's keys (the drawn line + marker samples) cut from a grayscale rendering, as ink masks:
    colour is gone, only marker, line style and fill remain."""
    from matplotlib.offsetbox import DrawingArea, OffsetBox

    fig.set_dpi(dpi)
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    gray = (np.asarray(fig.canvas.buffer_rgba())[..., :3] / 255.0) @ np.array([0.299, 0.587, 0.114])
    boxes = []

    def walk(box):
        for child in box.get_children():
            if isinstance(child, DrawingArea):
                boxes.append(child.get_window_extent(renderer))
            elif isinstance(child, OffsetBox):
                walk(child)

    walk(legend._legend_handle_box)
    height = gray.shape[0]
    keys = [gray[int(height - np.ceil(b.y1)):int(height - b.y0), int(b.x0):int(np.ceil(b.x1))] < 0.85 for b in boxes]
    h, w = min(k.shape[0] for k in keys), min(k.shape[1] for k in keys)
    return [k[:h, :w] for k in keys]


def _ink_difference(a, b, shift=2):
    """Pixels where two ink masks differ, at the best alignment within ± ``shift`` pixels (sub-pixel placement)."""
    h, w = a.shape
    return min(int((a[max(0, dy):h + min(0, dy), max(0, dx):w + min(0, dx)]
                    != b[max(0, -dy):h + min(0, -dy), max(0, -dx):w + min(0, -dx)]).sum())
               for dy in range(-shift, shift + 1) for dx in range(-shift, shift + 1))


def _colour_only_difference():
    """Negative control: two keys that differ only by colour (the palette's first two) leave this much difference."""
    from dpkit.outputs.plotting import PALETTE, new_figure

    fig, ax = new_figure()
    ax.plot([0, 1], [0, 1], color=PALETTE[0], marker="o", label="a")
    ax.plot([0, 1], [1, 0], color=PALETTE[1], marker="o", label="b")
    a, b = _legend_keys_in_grayscale(fig, ax.legend())
    return _ink_difference(a, b)


def test_tables_figure_keys_differ_in_a_grayscale_copy():
    """Rendered in grayscale, every pair of legend keys (I vs II, dpkit vs the thesis, correct vs printed constants)
    differs by far more than two keys that differ only by colour."""
    control = _colour_only_difference()
    fig = plot_errors_vs_sigma(_rows())
    keys = _legend_keys_in_grayscale(fig, fig.legends[0])
    assert len(keys) == 6
    closest = min(_ink_difference(keys[i], keys[j]) for i in range(6) for j in range(i + 1, 6))
    assert closest > 2 * control, (closest, control)


def test_grayscale_check_rejects_colour_only_curves():
    """The check above is not vacuous: the tables figure with every curve drawn alike (colour only) fails it."""
    import matplotlib.pyplot as plt

    control = _colour_only_difference()
    fig = plot_errors_vs_sigma(_rows())
    for line in fig.legends[0].legend_handles:
        for artist in (line.lines if hasattr(line, "lines") else [line]):
            if hasattr(artist, "set_marker"):
                artist.set(marker="o", linestyle="-", markerfacecolor=artist.get_color())
    keys = _legend_keys_in_grayscale(fig, fig.legends[0])
    closest = min(_ink_difference(keys[i], keys[j]) for i in range(len(keys)) for j in range(i + 1, len(keys)))
    assert closest <= 2 * control, (closest, control)
    plt.close(fig)


def _board():
    """Board rows: one method wins CSN at every σ (its name at each point overlapped), WDBC spans under a decade."""
    rows = []
    for ds, lo, hi in (("CSN", 5e-4, 1.2e-3), ("WDBC", 1.8e-2, 1.3e-1), ("CRM", 6e-4, 9e-2)):
        for i, s in enumerate((2.0, 4.0, 6.0, 8.0, 10.0)):
            v = lo * (hi / lo) ** (i / 4)
            m = "kme-synthetic-eps" if ds == "CSN" else ("rap-eps", "mst-eps")[i % 2]
            rows.append({"dataset": ds, "sigma": s, "privacy": "ε-DP", "method": m, "method_rel": m, "abs_mean": v,
                         "abs_std": 0.1 * v, "rel_mean": 2 * v, "rel_std": 0.1 * v, "paper_abs": 2 * v,
                         "paper_rel": 4 * v, "abs_est": v, "abs_ci_low": 0.9 * v, "abs_ci_high": 1.2 * v,
                         "rel_est": 2 * v, "rel_ci_low": 1.8 * v, "rel_ci_high": 2.4 * v})
    return rows


def test_leaderboard_figure_plots_the_judged_mean_and_its_interval():
    """The points are the winner's mean on the judged repetitions and the error bars its interval (what the verdicts
    are read from), not the mean ± std over all repetitions; the caption says so."""
    import matplotlib.pyplot as plt
    import pytest
    from matplotlib.collections import LineCollection

    from dpkit.outputs.figures.leaderboard import LEADERBOARD_CAPTION, plot_leaderboard

    board = [{**r, "abs_mean": 3 * r["abs_est"]} for r in _board() if r["dataset"] == "WDBC"]
    fig = plot_leaderboard(board, privacy="ε-DP", kind="abs")
    ax = fig.axes[0]
    [line] = [ln for ln in ax.get_lines() if ln.get_linestyle() == "-" and len(ln.get_xdata()) == 5]
    assert line.get_ydata().tolist() == [r["abs_est"] for r in board]
    [bars] = [c for c in ax.collections if isinstance(c, LineCollection)]
    spans = sorted(float(y) for seg in bars.get_segments() for y in (seg[0][1], seg[1][1]))
    assert spans == pytest.approx(sorted(r[k] for r in board for k in ("abs_ci_low", "abs_ci_high")))
    assert "± one standard deviation" not in LEADERBOARD_CAPTION and "confidence interval" in LEADERBOARD_CAPTION
    plt.close(fig)


def test_leaderboard_figure_letters_keyed_and_every_panel_labelled():
    from dpkit.outputs.figures.leaderboard import plot_leaderboard

    fig = plot_leaderboard(_board(), privacy="ε-DP", kind="abs")
    fig.canvas.draw()
    visible = [ax for ax in fig.axes if ax.get_visible()]
    notes = [t.get_text() for ax in visible for t in ax.texts]
    assert len(notes) == 15 and set(notes) == {"a", "b", "c"}  # a letter at each point, never a long name
    labels = [t.get_text() for t in fig.legends[0].get_texts()]
    assert {"kme-synthetic-eps", "mst-eps", "rap-eps"} <= set(labels)  # ... keyed in the legend
    for ax in visible:  # at least two labelled y ticks inside the panel, none of them a minor tick
        lo, hi = ax.get_ylim()
        shown = [t for t in ax.yaxis.get_majorticklabels() if t.get_text() and lo <= t.get_position()[1] <= hi]
        assert len(shown) >= 2, (ax.get_title(), [t.get_text() for t in shown])
        assert not any(t.get_text() for t in ax.yaxis.get_minorticklabels())
