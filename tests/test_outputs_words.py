"""Outputs explain themselves: LaTeX captions and headers in words (no ``sup note = .``, no ``parameter = kappa``),
and no exported figure carries a title that repeats its caption."""
from __future__ import annotations

import re

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402


def _kappa_sweep_rows() -> list[dict]:
    """Rows as :func:`dpkit.experiments.sweep_rows` writes them for notebook 21 (every column it writes)."""
    rows = []
    for i, v in enumerate([0.5, 1.0, 2.0, 3.0, 5.0, 7.0, 10.0, 15.0, 25.0]):
        rows.append({"dataset": "CSN", "param": "kappa", "value": v, "method": "trig-I", "mechanism": "I", "sigma": 4.0,
                     "abs_mean": 0.048 + i * 1e-4, "abs_std": 0.001, "abs_min": 0.046, "abs_max": 0.05,
                     "rel_mean": 0.2 + i * 1e-3, "time_median_s": 3.2 + i, "reps": 10, "sup_abs_mean": 0.06 + i * 1e-4,
                     "sup_abs_std": 0.002, "sup_abs_max": 0.07, "sup_witness_rel_mean": 0.3, "sup_note": "",
                     "centre_abs_mean": 0.05, "centre_abs_std": 0.001, "sup_abs_min": 0.05})
    return rows


def test_sweep_table_caption_reads_in_words():
    from dpkit.outputs.tables import to_latex

    tex = to_latex(pd.DataFrame(_kappa_sweep_rows()), caption="Worst error against κ.", label="tab:k")
    caption = tex[tex.index(r"\caption{"):].split("\n", 1)[0]
    assert "In every row:" in caption  # the one-value columns went to the caption
    assert "= ." not in caption and "note" not in caption, caption  # an empty note says nothing
    assert not re.search(r"(?<!\\)kappa", tex) and "swept parameter: ellipsoid scale $\\kappa$" in caption, caption
    assert "sup note" not in tex and "sup witness" not in tex and "centre abs" not in tex.replace("worst centre abs", "")
    assert "data set: CSN" in caption and "$\\sigma$ = 4" in caption, caption


def test_a_column_missing_everywhere_is_said_in_words():
    from dpkit.outputs.tables import to_latex

    rows = _kappa_sweep_rows()
    for r in rows:
        r["sup_witness_rel_mean"] = None
    caption = to_latex(pd.DataFrame(rows), caption="c", label="l").split(r"\caption{", 1)[1].split("\n", 1)[0]
    assert "no rel. error of the sup. witness" in caption and "= --" not in caption, caption


def test_a_captioned_figure_carries_no_title(tmp_path):
    from dpkit.outputs.figures.tables import plot_sweep
    from dpkit.outputs.plotting import export_figure

    fig = plot_sweep(_kappa_sweep_rows(), xlabel="ellipsoid scale κ", title="CSN, mechanism I, σ=4")
    try:
        with pytest.raises(ValueError, match="carries no title"):
            export_figure(fig, "sweep", tmp_path, caption="Mean worst absolute error against κ; σ = 4.")
        assert not list(tmp_path.glob("sweep.*"))
        export_figure(fig, "sweep", tmp_path)  # without a caption, on screen: the title is all it has
    finally:
        plt.close(fig)
    fig = plot_sweep(_kappa_sweep_rows(), xlabel="ellipsoid scale κ")
    try:
        assert all(not ax.get_title() for ax in fig.axes) and not (fig._suptitle and fig._suptitle.get_text())
        export_figure(fig, "sweep", tmp_path, caption="Mean worst absolute error against κ; σ = 4.")
    finally:
        plt.close(fig)


@pytest.mark.parametrize("notebook", ["21_kappa_sweep", "22_k_sweep"])
def test_sweep_notebooks_give_their_figure_no_title(notebook):
    """The notebook draws its figure through dp.sweep_notebook, which calls plot_sweep without a title (its caption
    says it all)."""
    import inspect
    import json
    from pathlib import Path

    from dpkit.outputs.sweeps import sweep_notebook

    nb = json.loads((Path(__file__).resolve().parents[1] / "notebooks" / f"{notebook}.ipynb").read_text())
    code = "".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code")
    assert f'dp.sweep_notebook("{notebook}", ' in code and "plot_sweep" not in code
    calls = inspect.getsource(sweep_notebook).split("plot_sweep(rows")[1:]
    assert len(calls) == 1
    call = calls[0].split(")", 1)[0]
    assert "title" not in call, call
