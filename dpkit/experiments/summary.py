"""Aggregation of :class:`~dpkit.experiments.protocol.RunRecord` s into table rows (mean ± spread)."""
from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pandas as pd

from dpkit.experiments.protocol import RunRecord

__all__ = ["records_frame", "spread_stats"]


def records_frame(records: Iterable[RunRecord]) -> pd.DataFrame:
    """The records as a DataFrame (one row per repetition and method)."""
    return pd.DataFrame([r.as_dict() for r in records])


def _sd(s: pd.Series) -> float:
    return float(s.std(ddof=1)) if len(s) > 1 else 0.0


def spread_stats(g: pd.DataFrame) -> dict[str, Any]:
    """Mean, std, min, max of the worst errors of one group of repetitions, with times, spends and sizes."""
    slowest = g.loc[g["time_s"].idxmax()]
    return {
        "abs_mean": float(g["abs"].mean()), "abs_std": _sd(g["abs"]),
        "abs_min": float(g["abs"].min()), "abs_max": float(g["abs"].max()),
        "rel_mean": float(g["rel"].mean()), "rel_std": _sd(g["rel"]),
        "time_s": float(g["time_s"].mean()), "time_max_s": float(g["time_s"].max()),
        "time_median_s": float(g["time_s"].median()),
        "stages_of_slowest": {k: float(v) for k, v in dict(slowest["timings"]).items()},
        "eps_spent": float(g["eps_spent"].max()), "delta_spent": float(g["delta_spent"].max()),
        "support_size_median": float(g["support_size"].median()),
        "error_bound": float(g["error_bound"].max()), "reps": int(len(g)),
    }
