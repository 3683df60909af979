"""The widget explorer calls the batch-path function with the controls' values."""
from __future__ import annotations

import pytest

pytest.importorskip("ipywidgets")


def test_explorer_runs_function_with_control_values():
    import matplotlib.pyplot as plt

    from dpkit.outputs.widgets import explorer

    calls = []

    def fn(data, eps, name, delta, k):
        calls.append((data, eps, name, delta, k))
        fig, ax = plt.subplots()
        return fig

    panel = explorer(fn, {"eps": ((0.1, 2.0, 0.1), 1.0), "name": (["WDBC", "CRM"], "CRM"),
                          "delta": (("log", 1e-5, 1e-1), 1e-3), "k": ((1, 10, 1), 3)},
                     fixed={"data": "D"})
    assert calls == [("D", 1.0, "CRM", pytest.approx(1e-3), 3)]
    assert type(panel).__name__ == "VBox"


def test_explorer_shows_errors_instead_of_raising():
    from dpkit.outputs.widgets import explorer

    def fn(eps):
        raise ValueError("epsilon must be > 0")

    panel = explorer(fn, {"eps": ((0.1, 2.0, 0.1), 1.0)})
    html = panel.children[0].children[1].children[1].value
    assert "ValueError" in html and "epsilon" in html


def test_bad_control_spec():
    from dpkit.outputs.widgets import make_control

    with pytest.raises(ValueError, match="unsupported spec"):
        make_control("x", object(), 1)
