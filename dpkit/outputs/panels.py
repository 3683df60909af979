"""What the widget panels call: a few repetitions through the same runner as the batch path,
returned as ``(figure, table)`` for :func:`dpkit.outputs.widgets.explorer`."""
from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from dpkit.core.validation import check_seed
from dpkit.experiments.protocol import run_cell
from dpkit.experiments.reference import paper_value
from dpkit.experiments.sweeps import sweep, sweep_rows
from dpkit.experiments.thesis import table_methods, table_rows
from dpkit.outputs.figures.metric import METRICS, check_metric, metric_caption
from dpkit.outputs.figures.tables import plot_sweep
from dpkit.outputs.plotting import new_figure
from dpkit.outputs.tables import rows_frame
from dpkit.queries.release import Method

__all__ = ["explore", "explore_sweep", "sweep_panel"]


def explore(*, X: np.ndarray, dataset: str, epsilon: float, delta: float, sigma: float, kappa: float, k: int, C: int,
            R: int, reps: int, mechanisms: Sequence[str] = ("I", "II"), n_queries: int = 2_000, J: int = 10,
            n_iter: int = 10, constants: str = "correct", seed: int = 0) -> tuple[Figure, pd.DataFrame]:
    """One Tables 3.2/3.3 cell, few repetitions: worst absolute error per repetition and mechanism
    (the thesis's number as a line of its own style) and the summary rows. ``seed``, ``reps``, ``n_queries`` and
    ``J`` are checked by name (an integer ≥ 0, resp. ≥ 1: a fractional value is refused, not rounded).

    Mechanisms are told apart by marker and line style, not by colour alone (the figure reads in grayscale).
    """
    from matplotlib.ticker import MaxNLocator

    methods = table_methods(mechanisms, (constants,), epsilon=epsilon, delta=delta, kappa=kappa,
                            k=min(int(k), X.shape[1]), C=int(C), R=int(R), n_iter=int(n_iter))
    recs = run_cell(X, methods=methods, sigma=sigma, reps=reps, n_queries=n_queries, J=J, rng=check_seed(seed))
    rows = table_rows(recs, dataset=dataset)
    fig, ax = new_figure()
    for i, (m, label) in enumerate(zip(mechanisms, methods)):
        ours, thesis = _EXPLORE_STYLES[i % len(_EXPLORE_STYLES)]
        vals = [r.abs for r in recs if r.method == label]
        ax.plot(range(1, len(vals) + 1), vals, **ours, label=f"mechanism {m}")
        p = paper_value(dataset, sigma, m, "abs")
        if not math.isnan(p):
            ax.axhline(p, lw=1, color=ax.lines[-1].get_color(), alpha=0.8, **thesis, label=f"thesis {m}")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))  # repetitions are counted
    ax.set_xlabel("repetition")
    ax.set_ylabel("worst absolute error")
    ax.legend()
    return fig, rows_frame(rows)


#: (our curve, the thesis's line) per mechanism: marker and line style differ, so grayscale keeps them apart.
_EXPLORE_STYLES = (({"marker": "o", "ls": "-"}, {"ls": "--"}), ({"marker": "s", "ls": ":", "mfc": "white"}, {"ls": "-."}))


def explore_sweep(*, X: np.ndarray, dataset: str, method: Method, param: str, values: Sequence[float], sigma: float,
                  reps: int, xlabel: str, logx: bool = False, n_queries: int = 2_000, J: int = 10,
                  seed: int = 0, metric: str = "thesis") -> tuple[Figure, pd.DataFrame]:
    """A sweep of ``param`` over ``values`` (few repetitions): the figure of ``metric`` (the thesis metric or the
    class supremum: :func:`~dpkit.outputs.figures.tables.plot_sweep`) and the rows (both metrics). ``seed``, ``values``,
    ``reps``, ``n_queries`` and ``J`` are checked by name (:func:`~dpkit.experiments.sweeps.sweep`)."""
    check_metric(metric)  # before anything runs
    res = sweep(X, method=method, param=param, values=values, sigma=sigma, reps=reps, n_queries=n_queries, J=J,
                rng=check_seed(seed))
    rows = sweep_rows(res, dataset=dataset, param=param)
    return plot_sweep(rows, xlabel=xlabel, logx=logx, metric=metric), pd.DataFrame(rows)


def sweep_panel(*, X: np.ndarray, dataset: str, method: Method, param: str, values: Sequence[float], sigma: float,
                epsilon: float, xlabel: str, logx: bool, title: str, seed: int = 0, J: int = 10, n_queries: int = 2_000,
                reps: int = 3, notebook: str | None = None, constants: dict[str, object] | None = None,
                note: str | None = None, metric: str = "thesis"):
    """The sweep notebooks' widget: the grid is typed as text (parsed by :func:`parse_values`, a bad
    entry is reported in the panel), σ, ε, the repetitions and the plotted metric (a dropdown: the thesis metric or
    the class supremum, :mod:`~dpkit.outputs.figures.metric`; ``metric`` its initial value) are controls, *Run*
    re-runs the sweep.

    Each control sets one notebook parameter (``values_text`` → ``VALUES``, ``sigma`` → ``SIGMA``,
    ``epsilon`` → ``EPSILON``, ``reps`` → ``REPS``, ``metric`` → ``METRIC``; the fixed ``seed``, ``J``, ``n_queries`` and
    ``dataset`` → ``SEED``, ``J``, ``N_QUERIES``, ``DATASET``; ``dataset`` is the data set's name, for the labels,
    and the commands load it by :func:`~dpkit.outputs.widgets.as_dataset`: your own by its spec file); ``notebook``
    and ``constants`` (other notebook parameters the panel holds, e.g. ``MECHANISM``) enable the
    papermill/manifest/export buttons;
    ``note`` is shown with the command and the manifest (:func:`~dpkit.outputs.widgets.explorer`).
    """
    from dpkit.experiments.sweeps import parse_values
    from dpkit.methods.registry import configure
    from dpkit.outputs.widgets import as_dataset, explorer

    kind = type(values[0])

    def parse(text: str) -> list[float]:
        return parse_values(text, kind=kind, name="values")

    def one_sweep(values_text: str, sigma: float, epsilon: float, reps: int, metric: str, *, seed: int, J: int,
                  n_queries: int, dataset: str) -> tuple[Figure, pd.DataFrame]:
        return explore_sweep(X=X, dataset=dataset, method=configure(method, epsilon=epsilon), param=param,
                             values=parse(values_text), sigma=sigma, reps=reps, xlabel=xlabel, logx=logx, J=J, seed=seed,
                             n_queries=n_queries, metric=metric)

    def caption(p: dict[str, object]) -> str:
        mech = f" of mechanism {p['MECHANISM']}" if "MECHANISM" in p else ""
        delta = f", δ = {p['DELTA']:g}" if p.get("MECHANISM") != "I" and "DELTA" in p else ""
        return (f"{metric_caption(str(p.get('METRIC', 'thesis')))} (± one standard deviation, min–max band over "
                f"{p['REPS']} repetitions){mech} "
                f"on {dataset} against {xlabel}; σ = {p['SIGMA']:g}, ε = {p['EPSILON']:g}{delta}, {n_queries} queries per "
                "repetition.")

    text = ", ".join(map(str, values))
    check_metric(metric, name="METRIC")
    return explorer(one_sweep, {"values_text": ("text", text), "sigma": ([2.0, 4.0, 6.0, 8.0, 10.0], sigma),
                                "epsilon": (("log", 0.05, 20.0), epsilon), "reps": ((1, 10, 1), reps),
                                "metric": (list(METRICS), metric)}, title=title,
                    fixed=dict(seed=seed, J=J, n_queries=n_queries, dataset=dataset), notebook=notebook,
                    parameters={"values_text": ("VALUES", parse), "sigma": "SIGMA", "epsilon": "EPSILON", "reps": "REPS",
                                "metric": "METRIC", "seed": "SEED", "J": "J", "n_queries": "N_QUERIES",
                                "dataset": ("DATASET", as_dataset)},
                    constants=constants, name=f"{param}_sweep", caption=caption, note=note,
                    total=lambda v: int(v["reps"]) * len(parse(v["values_text"])))
