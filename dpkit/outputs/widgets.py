"""Interactive controls for notebooks (ipywidgets), used only when ``INTERACTIVE=True``.

:func:`explorer` turns a plain function ``fn(**params) -> Figure | (Figure, DataFrame)``
— the same function the batch path calls — into a panel of controls plus a *Run*
button and an output area. Headless runs never import ipywidgets.

Control specs
-------------
- ``(lo, hi, step)`` floats → ``FloatSlider``; ints → ``IntSlider``
- ``("log", lo, hi)`` → ``FloatLogSlider`` (base 10, bounds given as values)
- a list → ``Dropdown``; a list passed with ``multi=True`` in a dict spec → ``SelectMultiple``
- a bool → ``Checkbox``
- ``"text"`` → ``Text`` (a free-form entry, e.g. a sweep grid parsed by the callback)
"""
from __future__ import annotations

import math
from typing import Any, Callable

__all__ = ["make_control", "explorer"]


def make_control(name: str, spec: Any, value: Any):
    """Build one ipywidgets control for ``spec`` with initial ``value``."""
    import ipywidgets as w

    style = {"description_width": "initial"}
    layout = w.Layout(width="320px")
    if isinstance(spec, bool) or isinstance(value, bool) and spec is None:
        return w.Checkbox(value=bool(value), description=name, style=style)
    if spec == "text":
        return w.Text(value=str(value), description=name, style=style, layout=layout, continuous_update=False)
    if isinstance(spec, list):
        return w.Dropdown(options=spec, value=value, description=name, style=style, layout=layout)
    if isinstance(spec, dict) and spec.get("multi"):
        return w.SelectMultiple(options=spec["options"], value=tuple(value), description=name, style=style, layout=layout)
    if isinstance(spec, tuple) and spec and spec[0] == "log":
        _, lo, hi = spec
        return w.FloatLogSlider(value=value, base=10, min=math.log10(lo), max=math.log10(hi), step=0.05,
                                description=name, style=style, layout=layout, continuous_update=False)
    if isinstance(spec, tuple) and len(spec) == 3:
        lo, hi, step = spec
        if all(isinstance(v, int) and not isinstance(v, bool) for v in spec):
            return w.IntSlider(value=int(value), min=lo, max=hi, step=step, description=name, style=style,
                               layout=layout, continuous_update=False)
        return w.FloatSlider(value=float(value), min=lo, max=hi, step=step, description=name, style=style,
                             layout=layout, continuous_update=False)
    raise ValueError(f"control {name!r}: unsupported spec {spec!r}")


def explorer(fn: Callable[..., Any], controls: dict[str, tuple[Any, Any]], *, title: str = "",
             fixed: dict[str, Any] | None = None, run_on_start: bool = True):
    """A panel of controls that re-runs ``fn(**fixed, **values)`` when *Run* is pressed.

    Parameters
    ----------
    fn : callable
        Returns a matplotlib Figure, or a tuple whose first item is a Figure and whose
        other items (e.g. a DataFrame) are displayed below it.
    controls : dict
        ``name -> (spec, initial value)``; see the module docstring for specs.
    fixed : dict, optional
        Keyword arguments passed unchanged (e.g. the data matrix).
    """
    import ipywidgets as w
    import matplotlib.pyplot as plt
    from IPython.display import display

    ctrls = {name: make_control(name, spec, value) for name, (spec, value) in controls.items()}
    button = w.Button(description="Run", button_style="primary", icon="play")
    status = w.HTML()
    out = w.Output()

    def _run(_=None):
        values = {k: (list(c.value) if isinstance(c, w.SelectMultiple) else c.value) for k, c in ctrls.items()}
        status.value = "<i>running…</i>"
        out.clear_output(wait=True)
        with out:
            try:
                result = fn(**(fixed or {}), **values)
                items = result if isinstance(result, tuple) else (result,)
                for item in items:
                    display(item)
                    if hasattr(item, "savefig"):
                        plt.close(item)
                status.value = ""
            except Exception as exc:  # show the error in the panel, keep the widgets alive
                status.value = f"<b style='color:#D55E00'>{type(exc).__name__}: {exc}</b>"

    button.on_click(_run)
    header = [w.HTML(f"<b>{title}</b>")] if title else []
    panel = w.VBox(header + [w.HBox([w.VBox(list(ctrls.values())), w.VBox([button, status])]), out])
    if run_on_start:
        _run()
    return panel
