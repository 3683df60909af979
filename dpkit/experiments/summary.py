"""Aggregation of :class:`~dpkit.experiments.records.ReleaseRecord` s into table rows (mean ± spread)."""
from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pandas as pd

from dpkit.experiments.records import ReleaseRecord

__all__ = ["records_frame", "spread_stats", "supremum_stats", "SUP_KEYS"]


def records_frame(records: Iterable[ReleaseRecord]) -> pd.DataFrame:
    """The records as a DataFrame (one row per repetition and method)."""
    return pd.DataFrame([r.as_dict() for r in records])


def _sd(s: pd.Series) -> float:
    return float(s.std(ddof=1)) if len(s) > 1 else 0.0


#: the class-supremum columns of every table row (the search's witness ``sup_abs`` and the certified upper bound
#: ``sup_upper`` beside it, with the search's mean effort), and those of the workload's worst single centre
#: (``centre_abs``; :func:`supremum_stats`)
SUP_KEYS = ("sup_abs_mean", "sup_abs_std", "sup_abs_max", "sup_upper_mean", "sup_upper_max", "sup_upper_note",
            "sup_witness_rel_mean", "sup_evaluations_mean", "sup_note", "centre_abs_mean", "centre_abs_std")


def _centre_stats(g: pd.DataFrame) -> dict[str, Any]:
    """Mean and std of the worst single centre (``centre_abs``) over the repetitions that have it (``None``
    for released answers and for records without it)."""
    vals = g["centre_abs"].dropna().astype(float) if "centre_abs" in g else pd.Series(dtype=float)
    if vals.empty:
        return {"centre_abs_mean": None, "centre_abs_std": None}
    return {"centre_abs_mean": float(vals.mean()), "centre_abs_std": _sd(vals)}


def _upper_stats(g: pd.DataFrame) -> dict[str, Any]:
    """Mean and max of the certified upper bound (``sup_upper``) over the repetitions, or ``None`` with the reason
    (``sup_upper_note``: the bound's own, e.g. a released answer function, or "not computed")."""
    up = g["sup_upper"] if "sup_upper" in g else pd.Series([None] * len(g), index=g.index)
    have = up.notna()
    if not have.any():
        notes = [r.get("reason") for r in g.get("supremum_upper", pd.Series(dtype=object)) if isinstance(r, dict)]
        return {"sup_upper_mean": None, "sup_upper_max": None,
                "sup_upper_note": next((n for n in notes if n), "not computed")}
    vals = up[have].astype(float)
    return {"sup_upper_mean": float(vals.mean()), "sup_upper_max": float(vals.max()),
            "sup_upper_note": "" if have.all() else f"{int((~have).sum())} of {len(g)} repetitions without an upper "
                                                    "bound"}


def supremum_stats(g: pd.DataFrame) -> dict[str, Any]:
    """Mean, std and max of the class supremum (``sup_abs``) over one group of repetitions, the mean and max of its
    certified upper bound (``sup_upper_mean``, ``sup_upper_max``), the mean relative error of its witnesses and the
    search's mean effort (``sup_evaluations_mean``: centres evaluated); ``None`` with the reason (``sup_note``,
    ``sup_upper_note``) where it was not computed or is not defined; and the mean and std of the workload's worst
    single centre (``centre_abs_mean``, ``centre_abs_std``)."""
    sup = g["sup_abs"] if "sup_abs" in g else pd.Series([None] * len(g), index=g.index)
    have = sup.notna()
    if not have.any():
        notes = [r.get("reason") for r in g.get("supremum", pd.Series(dtype=object)) if isinstance(r, dict)]
        return {"sup_abs_mean": None, "sup_abs_std": None, "sup_abs_max": None, **_upper_stats(g),
                "sup_witness_rel_mean": None, "sup_evaluations_mean": None,
                "sup_note": next((n for n in notes if n), "not computed"), **_centre_stats(g)}
    vals = sup[have].astype(float)
    searches = [r for r in g.loc[have, "supremum"] if isinstance(r, dict)] if "supremum" in g else []
    rel = [r.get("witness_rel") for r in searches if r.get("witness_rel") is not None]
    evals = [r.get("n_evaluations") for r in searches if r.get("n_evaluations") is not None]
    return {"sup_abs_mean": float(vals.mean()), "sup_abs_std": _sd(vals), "sup_abs_max": float(vals.max()),
            **_upper_stats(g),
            "sup_witness_rel_mean": float(sum(rel) / len(rel)) if rel else None,
            "sup_evaluations_mean": float(sum(evals) / len(evals)) if evals else None,
            "sup_note": "" if have.all() else f"{int((~have).sum())} of {len(g)} repetitions without a supremum",
            **_centre_stats(g)}


def spread_stats(g: pd.DataFrame) -> dict[str, Any]:
    """Mean, std, min, max of the worst errors of one group of repetitions, with times, spends and sizes, and the
    class supremum's (:func:`supremum_stats`)."""
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
        **supremum_stats(g),
    }
