"""Interactive controls for notebooks (ipywidgets), used only when ``INTERACTIVE=True``: a view, never a second runner.

:func:`explorer` turns the function the batch path calls into a panel of controls with *Run*, *Stop*, a progress bar
and exports of its setting (docs/guide/widgets.md). Headless runs never import ipywidgets.
"""
from __future__ import annotations

import hashlib
import json
import math
import os
import shlex
import threading
import time
from collections.abc import Callable, Mapping
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from dpkit.core.paths import repo_root, results_dir

__all__ = ["make_control", "explorer", "as_list", "as_datasets", "as_dataset", "dataset_label", "notebook_parameters",
           "parameters_hash", "papermill_command", "write_manifest", "export_panel_figure"]

ParameterMap = Mapping[str, "str | tuple[str, Callable[[Any], Any]]"]


def as_list(value: Any) -> list[Any]:
    """One value as a one-item list (a control that sets a list parameter, e.g. ``DATASETS``)."""
    return [value]


def as_datasets(value: Any) -> list[Any]:
    """A data-set choice as a ``DATASETS`` list that loads it in another process: your own data set loaded from a spec
    file by its spec file's path (:func:`dpkit.data.spec.dataset_argument`), any other by its name."""
    from dpkit.data.spec import dataset_argument

    return [dataset_argument(value) if isinstance(value, str) else value]


def as_dataset(value: Any) -> Any:
    """A data-set choice as a ``DATASET`` value that loads it in another process (:func:`as_datasets`, one value)."""
    from dpkit.data.spec import dataset_argument

    return dataset_argument(value) if isinstance(value, str) else value


def dataset_label(argument: Any) -> Any:
    """The name a caption gives the data set of a ``DATASET``/``DATASETS`` value: a spec file's ``name`` for its path
    (:func:`as_dataset` writes the path into commands), any other value as it is."""
    from dpkit.data.spec import is_spec_path, read_spec

    return read_spec(argument).name if is_spec_path(argument) else argument


def notebook_parameters(values: Mapping[str, Any], parameters: ParameterMap) -> dict[str, Any]:
    """The notebook parameters ``{NAME: value}`` of the panel's ``values`` through the map ``parameters``."""
    out: dict[str, Any] = {}
    for key, target in parameters.items():
        if key not in values:
            continue
        name, convert = (target, None) if isinstance(target, str) else target
        value = values[key] if convert is None else convert(values[key])
        out[name] = list(value) if isinstance(value, tuple) else value
    return out


def _check_map(controls: Mapping[str, Any], fixed: Mapping[str, Any], parameters: ParameterMap) -> None:
    missing = [c for c in controls if c not in parameters]
    if missing:
        raise ValueError(f"parameters: controls {missing} map onto no notebook parameter; every control must set one")
    unknown = [k for k in parameters if k not in controls and k not in fixed]
    if unknown:
        raise ValueError(f"parameters: {unknown} are neither controls nor fixed arguments")
    names = [t if isinstance(t, str) else t[0] for t in parameters.values()]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise ValueError(f"parameters: {twice} are set by more than one control (the map must be one to one)")


def parameters_hash(params: Mapping[str, Any], n: int = 8) -> str:
    """A short stable hash (``n`` hex digits) of notebook parameters (names figures and run folders)."""
    blob = json.dumps(dict(sorted(params.items())), sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:n]


def _shown_path(path: Path) -> str:
    """``path`` relative to the repository root when inside it (commands are run from the root)."""
    root = repo_root()
    p = Path(path).resolve()
    if root is not None and p.is_relative_to(root):
        return p.relative_to(root).as_posix()
    return str(p)


def papermill_command(notebook: str | os.PathLike, params: Mapping[str, Any], *, output: str | None = None) -> str:
    """The ``python -m dpkit.batch notebook`` command that runs ``notebook`` with ``params``.

    Values are written as JSON (a subset of the YAML 1.2 the ``-p`` parser reads), so types survive:
    ``-p EPSILON 0.5 -p DATASETS '["CRM"]' -p DATASET '"WDBC"'``. The default output folder is
    ``results/<notebook stem>-<hash of the parameters>``.
    """
    nb = Path(notebook)
    out = output or f"results/{nb.stem}-{parameters_hash(params)}"
    parts = ["python", "-m", "dpkit.batch", "notebook", _shown_path(nb), "--output", out]
    for name, value in params.items():
        parts += ["-p", name, json.dumps(value)]
    return " ".join(shlex.quote(p) for p in parts)


def write_manifest(notebook: str | os.PathLike, params: Mapping[str, Any], *, folder: str | os.PathLike | None = None,
                   when: datetime | None = None) -> Path:
    """Write a one-run batch manifest (:mod:`dpkit.batch.runner` format) for ``notebook`` with ``params``.

    The file is ``<folder>/<notebook stem>-<UTC timestamp>.yaml`` (``folder`` defaults to
    ``results/manifests``); the notebook path and the output folder (``results/batch/<manifest
    name>``) are relative to it, as the runner reads them. Returns the path.
    """
    import yaml

    nb = Path(notebook).resolve()
    if not nb.is_file():
        raise FileNotFoundError(f"notebook not found: {nb}")
    folder = Path(folder) if folder is not None else results_dir() / "manifests"
    folder.mkdir(parents=True, exist_ok=True)
    stamp = (when or datetime.now(timezone.utc)).strftime("%Y%m%dT%H%M%SZ")
    path, i = folder / f"{nb.stem}-{stamp}.yaml", 1
    while path.exists():  # two saves within a second
        path, i = folder / f"{nb.stem}-{stamp}-{i}.yaml", i + 1
    doc = {"name": path.stem, "output": Path(os.path.relpath(folder.resolve().parent / "batch" / path.stem,
                                                             folder.resolve())).as_posix(),
           "runs": [{"notebook": Path(os.path.relpath(nb, folder.resolve())).as_posix(), "parameters": dict(params)}]}
    header = f"# saved from the {nb.stem} panel; run it with: python -m dpkit.batch run {_shown_path(path)}\n"
    path.write_text(header + yaml.safe_dump(doc, sort_keys=False, allow_unicode=True))
    return path


def export_panel_figure(fig: Any, *, notebook: str, panel: str, params: Mapping[str, Any], caption: str,
                        output_dir: str | os.PathLike) -> list[Path]:
    """Export a panel's figure in the paper style as ``figures/<notebook>__<panel>_<hash>.{pdf,png}``.

    Goes through :func:`dpkit.outputs.plotting.export_figure` with ``paper=True`` (also written to
    ``output_dir``; the caption file and the PDF/PNG metadata carry ``caption`` and ``params``).
    """
    from dpkit.outputs.plotting import export_figure

    return export_figure(fig, f"{panel}_{parameters_hash(params)}", output_dir, notebook=notebook, paper=True,
                         caption=caption, parameters=dict(params))


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


def _display_data(item: Any) -> dict[str, Any]:
    """``item`` as a ``display_data`` output, safe from any thread: a figure as PNG (whatever the
    backend registered), anything else through the kernel's formatters (plain text without a kernel)."""
    import base64
    import io

    from IPython import get_ipython

    if hasattr(item, "savefig"):
        buf = io.BytesIO()
        item.savefig(buf, format="png", bbox_inches="tight")
        data, meta = {"image/png": base64.b64encode(buf.getvalue()).decode("ascii"), "text/plain": repr(item)}, {}
    elif (ip := get_ipython()) is None:
        data, meta = {"text/plain": repr(item)}, {}
    else:
        data, meta = ip.display_formatter.format(item)
    return {"output_type": "display_data", "data": data, "metadata": meta}


class _Explorer:
    """The state and callbacks of one :func:`explorer` panel (``panel.explorer``)."""

    def __init__(self, fn: Callable[..., Any], controls: dict[str, tuple[Any, Any]], *, title: str,
                 fixed: dict[str, Any], notebook: str | os.PathLike | None, parameters: ParameterMap | None,
                 name: str, caption: str | Callable[[dict[str, Any]], str] | None, results: str | os.PathLike | None,
                 total: Callable[[dict[str, Any]], int] | None, constants: Mapping[str, Any] | None = None,
                 note: str | None = None):
        import ipywidgets as w

        self.fn, self.fixed, self.title, self.name, self.caption, self.total = fn, fixed, title, name, caption, total
        self.notebook = None if notebook is None else Path(notebook).resolve()
        self.parameters, self.constants = dict(parameters or {}), dict(constants or {})
        self.note = note
        if self.notebook is not None:
            _check_map(controls, fixed, self.parameters)
        self.results = Path(results) if results is not None else results_dir()
        self.controls = {k: make_control(k, spec, value) for k, (spec, value) in controls.items()}
        self.run_button = w.Button(description="Run", button_style="primary", icon="play")
        self.stop_button = w.Button(description="Stop", button_style="warning", icon="stop", disabled=True)
        self.status = w.HTML()
        self.progress = w.IntProgress(value=0, min=0, max=1, description="repetitions", style={"description_width": "initial"})
        self.out = w.Output()
        self.text = w.Textarea(layout=w.Layout(width="100%", height="4em"), disabled=False)
        self.info = w.HTML()
        self.figure: Any = None
        self.figure_params: dict[str, Any] = {}
        self.thread: threading.Thread | None = None
        self.cancel = threading.Event()
        self.done = 0
        self.run_button.on_click(lambda _: self.run())
        self.stop_button.on_click(lambda _: self.cancel.set())

    def values(self) -> dict[str, Any]:
        import ipywidgets as w

        return {k: (list(c.value) if isinstance(c, w.SelectMultiple) else c.value) for k, c in self.controls.items()}

    def notebook_parameters(self, values: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """The current setting (or ``values``) as notebook parameters, fixed entries included."""
        vals = {**self.fixed, **(self.values() if values is None else values)}
        return {**self.constants, **notebook_parameters(vals, self.parameters)}

    def run(self, background: bool = True) -> None:
        """Run ``fn`` with the controls' values (in a worker thread unless ``background=False``)."""
        if self.thread is not None and self.thread.is_alive():
            self.status.value = "<i>still running: press Stop first</i>"
            return
        values = self.values()
        self.cancel.clear()
        self.done = 0
        self.progress.value = 0
        try:
            total = int(self.total(values)) if self.total else int(values.get("reps", 1))
        except (ValueError, TypeError, KeyError):  # e.g. a bad sweep grid: the run below reports it in the panel
            total = 1
        self.progress.max = max(1, total)
        self.run_button.disabled, self.stop_button.disabled = True, False
        self.status.value = "<i>running…</i>"
        if background:
            self.thread = threading.Thread(target=self._work, args=(values,), daemon=True, name="dpkit-explorer")
            self.thread.start()
        else:
            self._work(values)

    def _tick(self, rep_index: int, reps: int) -> None:
        from dpkit.experiments.records import Cancelled

        self.done += 1
        self.progress.max = max(self.progress.max, self.done)
        self.progress.value = self.done
        if self.cancel.is_set():
            raise Cancelled(f"stopped after {self.done} repetitions")

    def _work(self, values: dict[str, Any]) -> None:
        from dpkit.experiments.records import Cancelled, on_repetitions

        t0 = time.perf_counter()
        try:
            with on_repetitions(self._tick):
                result = self.fn(**self.fixed, **values)
            self._show(result if isinstance(result, tuple) else (result,), values)
            self.status.value = f"<span class='dpkit-status'>done in {time.perf_counter() - t0:.1f} s</span>"
        except Cancelled as exc:
            self.status.value = f"<b style='color:#E69F00'>{exc}</b> (the output above is from the previous run)"
        except Exception as exc:  # show the error in the panel, keep the widgets alive
            self.status.value = f"<b style='color:#D55E00'>{type(exc).__name__}: {exc}</b>"
        finally:
            self.run_button.disabled, self.stop_button.disabled = False, True

    def _show(self, items: tuple[Any, ...], values: dict[str, Any]) -> None:
        import matplotlib.pyplot as plt

        outputs = []
        for item in items:
            outputs.append(_display_data(item))
            if hasattr(item, "savefig"):
                self.figure, self.figure_params = item, self.notebook_parameters(values) if self.notebook else dict(values)
                plt.close(item)
        self.out.outputs = tuple(outputs)

    # --- from exploring to the paper -------------------------------------------------------------
    def copy_command(self, _=None) -> str:
        """Show (and return) the papermill call of the current setting."""
        cmd = papermill_command(self.notebook, self.notebook_parameters())
        self.text.value, self.info.value = cmd, ("the papermill call of the current setting (run it from the repository "
                                                 "root)" + self._note())
        return cmd

    def save_manifest(self, _=None) -> Path | None:
        """Write the current setting as a batch manifest and show its path."""
        try:
            path = write_manifest(self.notebook, self.notebook_parameters(), folder=self.results / "manifests")
        except (OSError, ValueError) as exc:
            self.info.value = f"<b style='color:#D55E00'>{type(exc).__name__}: {exc}</b>"
            return None
        self.text.value, self.info.value = str(path), ("manifest saved; run it with <code>python -m dpkit.batch run</code>"
                                                       + self._note())
        return path

    def _note(self) -> str:
        return f"<br><b style='color:#E69F00'>{self.note}</b>" if self.note else ""

    def export(self, _=None) -> list[Path]:
        """Export the last figure in the paper style and show the paths."""
        if self.figure is None:
            self.info.value = "<b style='color:#D55E00'>no figure yet: press Run first</b>"
            return []
        params = self.figure_params
        cap = self.caption(params) if callable(self.caption) else (self.caption or self.title or self.name)
        paths = export_panel_figure(self.figure, notebook=self.notebook.stem, panel=self.name, params=params,
                                    caption=cap, output_dir=self.results / self.notebook.stem / "panels")
        self.text.value, self.info.value = "\n".join(map(str, paths)), "figure exported"
        return paths

    def widget(self):
        import ipywidgets as w

        header = [w.HTML(f"<b>{self.title}</b>")] if self.title else []
        side = w.VBox([self.run_button, self.status, self.stop_button, self.progress])
        rows = header + [w.HBox([w.VBox(list(self.controls.values())), side]), self.out]
        if self.notebook is not None:
            buttons = []
            for label, icon, cb in (("Copy as papermill call", "terminal", self.copy_command),
                                    ("Save as manifest", "save", self.save_manifest), ("Export figure", "image", self.export)):
                b = w.Button(description=label, icon=icon, layout=w.Layout(width="auto"))
                b.on_click(cb)
                buttons.append(b)
            rows += [w.HBox(buttons), self.text, self.info]
        return w.VBox(rows)


def explorer(fn: Callable[..., Any], controls: dict[str, tuple[Any, Any]], *, title: str = "",
             fixed: dict[str, Any] | None = None, run_on_start: bool = True, notebook: str | os.PathLike | None = None,
             parameters: ParameterMap | None = None, name: str = "panel",
             caption: str | Callable[[dict[str, Any]], str] | None = None, results: str | os.PathLike | None = None,
             total: Callable[[dict[str, Any]], int] | None = None, constants: Mapping[str, Any] | None = None,
             note: str | None = None):
    """A panel of controls that re-runs ``fn(**fixed, **values)`` when *Run* is pressed.

    Parameters
    ----------
    fn : callable
        Returns a matplotlib Figure, or a tuple whose first item is a Figure and whose
        other items (e.g. a DataFrame) are displayed below it. Its :func:`~dpkit.experiments.protocol.run_cell`
        repetitions drive the progress bar; *Stop* cancels between two repetitions.
    controls : dict
        ``name -> (spec, initial value)``. A spec: ``(lo, hi, step)``, a ``FloatSlider`` for floats or an
        ``IntSlider`` for ints; ``("log", lo, hi)``, a ``FloatLogSlider`` (base 10, bounds given as values); a list,
        a ``Dropdown`` (``SelectMultiple`` for a list passed with ``multi=True`` in a dict spec); a bool, a
        ``Checkbox``; ``"text"``, a ``Text`` (a free-form entry, e.g. a sweep grid parsed by the callback).
    fixed : dict, optional
        Keyword arguments passed unchanged (e.g. the data matrix).
    run_on_start : bool
        Run once when the panel is built (in the calling thread, so *Run all* shows the output).
    notebook : path, optional
        The notebook the panel belongs to (relative to the working directory, i.e. the notebook's
        folder in Jupyter); enables the papermill, manifest and export buttons.
    parameters : mapping, optional
        Control (or ``fixed`` keyword) → the notebook parameter it sets: a name (``"epsilon": "EPSILON"``) or
        ``(name, convert)`` when the value needs converting (``"dataset": ("DATASETS", as_datasets)``: your own data
        set by its spec file, :func:`as_datasets`). Required with ``notebook``; then every control must be mapped,
        and no two entries may set the same parameter. The commands leave ``QUICK`` unset (a QUICK run overrides
        repetitions and sizes), so they spell the panel's setting out in full.
    name : str
        The panel's name in exported figure files ``<notebook>__<name>_<hash>``.
    caption : str or callable, optional
        Caption of exported figures (a callable gets the notebook parameters); default the title.
    results : path, optional
        Root of saved manifests (``<results>/manifests``) and run copies of figures (default ``results/``).
    total : callable, optional
        Repetitions of one run from the controls' values (default ``values["reps"]``), for the progress bar.
    constants : mapping, optional
        Notebook parameters the panel holds fixed without a keyword of ``fn`` (e.g. ``MECHANISM``),
        added to the commands and manifests.
    note : str, optional
        Shown with the papermill call and the saved manifest: what the batch run does differently from the
        panel (e.g. a QUICK session's panel runs on a subsample, the batch run on the whole data set).

    Returns
    -------
    ipywidgets.VBox
        The panel; its controller is ``panel.explorer``.
    """
    if notebook is not None and parameters is None:
        raise ValueError("parameters: a panel with a notebook needs the map control -> notebook parameter")
    ctl = _Explorer(fn, controls, title=title, fixed=dict(fixed or {}), notebook=notebook, parameters=parameters,
                    name=name, caption=caption, results=results, total=total, constants=constants, note=note)
    panel = ctl.widget()
    panel.explorer = ctl
    if run_on_start:
        ctl.run(background=False)
    return panel
