"""Per-repetition records for the leaderboard's tests, made from summary rows: every method's repetitions have
the row's mean on each half of the split (even and odd repetitions) and a small spread, so the board's winners,
means and rankings are the rows'. The records are the leaderboard's records table
(:data:`dpkit.board.records.COLUMNS`), as notebook 45 writes it."""
from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pandas as pd

from dpkit.board.records import COLUMNS, RECORDS_NAME, check_records, write_records


def _pattern(rep: int) -> float:
    """+1, +1, −1, −1, …: zero mean over the even and over the odd repetitions of every block of four."""
    return 1.0 if (rep // 2) % 2 == 0 else -1.0


def records_for(rows: list[dict[str, Any]], *, reps: int = 16, spread: float = 1e-5) -> pd.DataFrame:
    """The records table of ``reps`` (a multiple of 4) repetitions per row, ``mean ± spread·mean`` for ``abs``,
    ``rel`` and (where the row has one) ``sup_abs``; time, spends, error bound and support size are the row's."""
    assert reps % 4 == 0
    out = []
    for r in rows:
        sup = r.get("sup_abs_mean")
        for i in range(reps):
            f = 1 + spread * _pattern(i)
            out.append({"dataset": r["dataset"], "sigma": float(r["sigma"]), "rep": i, "method": r["method"],
                        "privacy": r["privacy"], "eps_spent": float(r.get("eps_spent", 1.0)),
                        "delta_spent": float(r.get("delta_spent", 0.0)), "abs": r["abs_mean"] * f,
                        "rel": r["rel_mean"] * f,
                        "sup_abs": math.nan if sup is None or pd.isna(sup) else float(sup) * f,
                        "centre_abs": math.nan, "time_s": float(r.get("time_s", 0.1)),
                        "error_bound": float(r.get("error_bound", 1e-7)),
                        "support_size": int(r.get("support_median", 0)), "seeds": None, "run_seed": 0,
                        "n_queries": 300, "J": 10, "budget_epsilon": 1.0, "budget_delta": 1e-3})
    return check_records(pd.DataFrame(out, columns=list(COLUMNS)).astype(COLUMNS), source="records_for")


def write_run_records(folder: Path, rows: list[dict[str, Any]], **kw: Any) -> Path:
    """A run folder's ``records.parquet`` (:func:`records_for` of ``rows``), as notebook 45 writes it."""
    return write_records(records_for(rows, **kw), Path(folder) / RECORDS_NAME)
