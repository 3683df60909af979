"""What the sweep notebooks (``21_kappa_sweep``, ``22_k_sweep``: thesis Figs 3.1 and 3.2) share: one parameter of
the registry's trigonometric mechanism swept on one data set, its table, figure and report.

Each notebook is a view: its parameters, its claim (an interior optimum of κ, no clear trend in k:
:mod:`dpkit.claims.sweeps`) and its prose; :func:`sweep_notebook` does the rest, in the order the notebooks did.
"""
from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from dpkit.core.quick import quick_values
from dpkit.data.api import load
from dpkit.experiments.records import ReleaseRecord
from dpkit.experiments.sweeps import sweep, sweep_rows
from dpkit.methods.registry import get, with_budget
from dpkit.outputs.figures.metric import check_metric, metric_caption
from dpkit.outputs.figures.tables import plot_sweep
from dpkit.outputs.plotting import export_figure, use_style
from dpkit.outputs.report import Report
from dpkit.outputs.tables import export_table
from dpkit.queries.release import Method

__all__ = ["SweepRun", "sweep_notebook", "SHOWN_COLUMNS"]

#: the table's columns a sweep notebook shows (the exported table has them all)
SHOWN_COLUMNS = ("value", "abs_mean", "abs_std", "abs_min", "abs_max", "sup_abs_mean", "sup_abs_max", "rel_mean",
                 "time_median_s")

#: a larger data set is subsampled to this many rows in QUICK mode (seeded; stated in the provenance)
QUICK_ROWS = 3000


@dataclass(frozen=True, eq=False)  # holds arrays and a figure
class SweepRun:
    """A sweep notebook's run: what it shows and what its claim and panel need.

    Attributes
    ----------
    X : ndarray
        The data (a QUICK subsample of a large data set).
    name : str
        The data set's name for the labels (a spec file's ``name``, not its path).
    method : Method
        The registry's ``trig-I``/``trig-II`` with the notebook's parameters and budget.
    values : list
        The grid after QUICK (the panel's initial grid).
    results : dict
        ``value -> records`` (:func:`~dpkit.experiments.sweeps.sweep`), the claims' input.
    rows : list of dict
        The summary rows (:func:`~dpkit.experiments.sweeps.sweep_rows`), also the report's table.
    table : pandas.DataFrame
        ``rows`` as a frame, exported as ``<notebook>.csv``/``.tex``.
    figure : matplotlib.figure.Figure
        The exported figure.
    report : Report
        The notebook's report, with its parameters and rows; the notebook adds its checks and writes it.
    reps, n_queries, C : int
        The sizes the run used (after QUICK).
    """

    X: np.ndarray
    name: str
    method: Method
    values: list[Any]
    results: dict[Any, list[ReleaseRecord]]
    rows: list[dict[str, Any]]
    table: pd.DataFrame
    figure: Figure
    report: Report
    reps: int
    n_queries: int
    C: int

    @property
    def shown(self) -> pd.DataFrame:
        """The table's :data:`SHOWN_COLUMNS`."""
        return self.table[list(SHOWN_COLUMNS)]


def sweep_notebook(notebook: str, *, param: str, xlabel: str, logx: bool, quick: Sequence[Any], what: str,
                   SEED: int, QUICK: bool, INTERACTIVE: bool, OUTPUT_DIR: str, PAPER_FIGURES: bool, DATASET: str,
                   MECHANISM: str, VALUES: Sequence[Any], SIGMA: float, METRIC: str, REPS: int, FALSE_ALARM: float,
                   N_QUERIES: int, J: int, EPSILON: float, DELTA: float, C: int, R: int, K_PCA: int, N_ITER: int,
                   KAPPA: float) -> SweepRun:
    """Run a sweep notebook: mechanism ``MECHANISM`` of the registry with ``param`` set to each of ``VALUES``.

    Algorithm: check ``METRIC``; under ``QUICK`` keep the values of ``quick`` among ``VALUES``
    (:func:`~dpkit.core.quick.quick_values`), 2 repetitions, at most 1000 queries and C ≤ 2000; load ``DATASET``
    (a seeded subsample of :data:`QUICK_ROWS` rows under QUICK); configure ``trig-I``/``trig-II`` with ``C``, ``R``,
    ``k = min(K_PCA, d)``, ``N_ITER``, ``KAPPA`` and the budget; sweep ``param`` over the values (``k`` only up to d)
    with common random numbers seeded by ``SEED``; export the table and the figure of ``METRIC`` named after
    ``notebook`` (the class supremum's figure gets the suffix ``_supremum``); record the rows in the report.

    Parameters
    ----------
    notebook : str
        The notebook's name (``"21_kappa_sweep"``): the table's and the figure's name.
    param : str
        The method's field swept (``"kappa"``, ``"k"``).
    xlabel : str
        The swept parameter in words, for the axis and the captions.
    logx : bool
        Log-spaced x axis.
    quick : sequence
        The values a QUICK run keeps; ``what`` names them for its warning (``"values of κ"``).
    SEED, QUICK, INTERACTIVE, OUTPUT_DIR, PAPER_FIGURES, DATASET, MECHANISM, VALUES, SIGMA, METRIC, REPS
        The notebook's parameters, as its ``parameters`` cell names them (and the ones below).
    FALSE_ALARM, N_QUERIES, J, EPSILON, DELTA, C, R, K_PCA, N_ITER, KAPPA
        The notebook's parameters (``FALSE_ALARM`` is recorded only: the notebook's claim spends it).

    Returns
    -------
    SweepRun

    Raises
    ------
    ValueError, TypeError
        ``METRIC`` unknown (before anything runs); a parameter the method or the sweep refuses, naming it.
    """
    check_metric(METRIC, name="METRIC")  # before anything runs
    if QUICK:
        # the quick values among yours; none of them given: those, with a warning naming what they replace
        VALUES = quick_values(VALUES, list(quick), name="VALUES", what=what)
        REPS, N_QUERIES, C = 2, min(N_QUERIES, 1000), min(C, 2000)
    Path(OUTPUT_DIR).mkdir(parents=True, exist_ok=True)
    use_style()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # data-derived bounds: recorded in ds.provenance
        ds = load(DATASET)
        if QUICK and ds.X.shape[0] > QUICK_ROWS:
            ds = load(DATASET, n=QUICK_ROWS)  # QUICK: a seeded subsample (stated in ds.provenance)
    X = ds.X
    name = ds.name  # the labels' name (a spec file's `name`, not its path; a registry code itself)
    # the registry's trig-I / trig-II (Alg 9/10) with this notebook's parameters
    # mechanism II at the thesis's calibration (accounting="split"): the sweeps reproduce its Figures 3.x
    printed = {"accounting": "split"} if MECHANISM == "II" else {}
    method = with_budget(get(f"trig-{MECHANISM}", C=C, R=R, k=min(K_PCA, X.shape[1]), n_iter=N_ITER, kappa=KAPPA,
                             **printed), epsilon=EPSILON, delta=DELTA)  # the budget: mechanism I is ε-DP, δ = 0
    report = Report(OUTPUT_DIR, params=dict(SEED=SEED, QUICK=QUICK, DATASET=DATASET, MECHANISM=MECHANISM, VALUES=VALUES,
                                            SIGMA=SIGMA, REPS=REPS, N_QUERIES=N_QUERIES, J=J, EPSILON=EPSILON,
                                            DELTA=DELTA, C=C, R=R, K_PCA=K_PCA, N_ITER=N_ITER, KAPPA=KAPPA,
                                            METRIC=METRIC, FALSE_ALARM=FALSE_ALARM))
    print(f"{name}: n = {X.shape[0]}, d = {X.shape[1]}")

    values = [v for v in VALUES if param != "k" or v <= X.shape[1]]
    results = sweep(X, method=method, param=param, values=values, sigma=SIGMA, reps=REPS, n_queries=N_QUERIES, J=J,
                    rng=SEED, progress=INTERACTIVE)
    rows = sweep_rows(results, dataset=name, param=param)
    df = pd.DataFrame(rows)
    budget = f", δ = {DELTA:g}" if MECHANISM == "II" else ""
    export_table(df, notebook, OUTPUT_DIR,
                 caption=f"Worst absolute and relative error of mechanism {MECHANISM} on {name} against {xlabel} "
                         f"(mean, standard deviation, minimum, maximum over {REPS} repetitions of {N_QUERIES} queries) "
                         f"and the class supremum of the absolute error (sup_abs_*: the worst query of the whole class); "
                         f"σ = {SIGMA:g}, ε = {EPSILON:g}" + budget + f", C = {C}, R = {R}.")
    for r in rows:
        report.row(**r)
    fig = plot_sweep(rows, xlabel=xlabel, logx=logx, metric=METRIC)  # no title: the caption says it
    figure = notebook if METRIC == "thesis" else f"{notebook}_{METRIC}"  # the thesis's figure keeps its name
    export_figure(fig, figure, OUTPUT_DIR, notebook=notebook, paper=PAPER_FIGURES,
                  caption=f"{metric_caption(METRIC)} (± one standard deviation, min–max band over {REPS} repetitions) "
                          f"of mechanism {MECHANISM} on {name} against {xlabel}; σ = {SIGMA:g}, ε = {EPSILON:g}, "
                          f"{N_QUERIES} queries per repetition.",
                  parameters=dict(dataset=name, mechanism=MECHANISM, sigma=SIGMA, epsilon=EPSILON, delta=DELTA,
                                  reps=REPS, n_queries=N_QUERIES, C=C, R=R, metric=METRIC))
    return SweepRun(X=X, name=name, method=method, values=list(VALUES), results=results, rows=rows, table=df,
                    figure=fig, report=report, reps=REPS, n_queries=N_QUERIES, C=C)
