"""Tables 3.2/3.3 of the thesis: the improved trigonometric mechanisms at every (data set, σ) cell,
correct and printed constants on the same workloads, next to the printed numbers.

The methods are the registry's ``trig-I`` and ``trig-II`` and their ``constants="thesis"`` variants, each on its own
stream keyed by its name (:mod:`dpkit.experiments.protocol`).
"""
from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from dpkit.core.validation import check_name
from dpkit.experiments.protocol import run_cell
from dpkit.experiments.records import ReleaseRecord, cell_seed
from dpkit.experiments.reference import PAPER_WORST_TIME, paper_value
from dpkit.experiments.summary import SUP_KEYS, records_frame, spread_stats
from dpkit.methods.registry import get, with_budget
from dpkit.queries.release import Method

__all__ = ["table_methods", "run_table_cell", "table_rows", "mechanism_of"]


def table_methods(mechanisms: Sequence[str] = ("I", "II"), constants: Sequence[str] = ("correct",),
                  **params: Any) -> dict[str, Method]:
    """``{label: method}`` of one table cell: ``trig-<mechanism>`` with ``params`` and each constants variant.

    Labels are ``trig-I``, ``trig-II`` for the correct constants and ``trig-I (printed)``, … for
    ``constants="thesis"`` (with the printed split of the budget, ``accounting="split"``; the correct variants take the
    registry's accounting unless ``params`` names one). ``epsilon`` and ``delta`` are the table's budget
    (:func:`~dpkit.methods.registry.with_budget`: mechanism I is ε-DP and keeps δ = 0); every other parameter must be
    one of the mechanisms'.
    """
    budget = {k: params.pop(k) for k in ("epsilon", "delta") if k in params}
    out: dict[str, Method] = {}
    for c in constants:
        for m in mechanisms:
            printed = {"accounting": "split"} if c == "thesis" else {}  # the printed constants' own calibration
            method = dataclasses.replace(with_budget(get(f"trig-{m}", **params), **budget), constants=c, **printed)
            out[f"trig-{m}" + ("" if c == "correct" else " (printed)")] = method
    return out


def run_table_cell(X: np.ndarray, *, dataset: str, sigma: float, methods: dict[str, Method], reps: int, seed: int,
                   n_queries: int = 10_000, J: int = 10, progress: bool = False) -> list[ReleaseRecord]:
    """One (data set, σ) cell of Tables 3.2/3.3, seeded by :func:`cell_seed` from the cell's values.

    ``seed`` must be an integer ≥ 0 and ``dataset`` a non-empty string (else a TypeError or ValueError naming
    them); ``sigma``, ``reps``, ``n_queries`` and ``J`` are checked by :func:`run_cell`.
    """
    dataset = check_name(dataset, name="dataset")
    return run_cell(X, methods=methods, sigma=sigma, reps=reps, n_queries=n_queries, J=J,
                    rng=cell_seed(seed, dataset, sigma), progress=progress)


def mechanism_of(params: dict[str, Any]) -> str:
    """``"I"`` (δ = 0) or ``"II"`` (δ > 0) from a trigonometric release's parameters."""
    return "II" if float(params["delta"]) > 0 else "I"


def table_rows(records: Iterable[ReleaseRecord], *, dataset: str) -> list[dict[str, Any]]:
    """Rows per (mechanism, constants, σ): mean ± std, min, max of the worst errors, the worst and
    median time, the stage split of the slowest run, and the thesis's numbers and ratios.

    Keys: ``dataset, sigma, mechanism, constants, abs_mean, abs_std, abs_min, abs_max, rel_mean, rel_std,
    time_max_s, time_median_s, stages_of_slowest, support_size_median, reps, paper_abs, paper_rel,
    ratio_abs, ratio_rel, paper_time_s`` (plus ``method``, ``error_bound``, spends).
    """
    df = records_frame(records)
    if df.empty:
        return []
    df["mechanism"] = [mechanism_of(p) for p in df["params"]]
    df["constants"] = [p["constants"] for p in df["params"]]
    rows: list[dict[str, Any]] = []
    for (mech, constants, sigma), g in df.groupby(["mechanism", "constants", "sigma"], sort=True):
        st = spread_stats(g)
        pa, pr = paper_value(dataset, sigma, mech, "abs"), paper_value(dataset, sigma, mech, "rel")
        rows.append({
            "dataset": dataset, "sigma": float(sigma), "mechanism": mech, "constants": constants,
            "method": str(g["method"].iloc[0]), **{k: st[k] for k in (
                "abs_mean", "abs_std", "abs_min", "abs_max", "rel_mean", "rel_std", "time_max_s", "time_median_s",
                "stages_of_slowest", "support_size_median", "reps", "eps_spent", "delta_spent", "error_bound", *SUP_KEYS)},
            "paper_abs": pa, "paper_rel": pr,
            "ratio_abs": st["abs_mean"] / pa if pa and not math.isnan(pa) else math.nan,
            "ratio_rel": st["rel_mean"] / pr if pr and not math.isnan(pr) else math.nan,
            "paper_time_s": PAPER_WORST_TIME.get(mech, {}).get(dataset.upper(), math.nan),
        })
    return rows
