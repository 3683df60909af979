"""Per-repetition records for the leaderboard's tests, made from summary rows: every method's repetitions have
the row's mean on each half of the split (even and odd repetitions) and a small spread, so the board's winners,
means and rankings are the rows'."""
from __future__ import annotations

import math
from typing import Any

import pandas as pd
import pytest

from dpkit.experiments.board_stats import REPETITION_COLUMNS


def _pattern(rep: int) -> float:
    """+1, +1, −1, −1, …: zero mean over the even and over the odd repetitions of every block of four."""
    return 1.0 if (rep // 2) % 2 == 0 else -1.0


def records_for(rows: list[dict[str, Any]], *, reps: int = 8, spread: float = 1e-5) -> pd.DataFrame:
    """Records of ``reps`` (a multiple of 4) repetitions per row, ``mean ± spread·mean`` for ``abs``, ``rel`` and
    (where the row has one) ``sup_abs``."""
    assert reps % 4 == 0
    out = []
    for r in rows:
        sup = r.get("sup_abs_mean")
        for i in range(reps):
            f = 1 + spread * _pattern(i)
            out.append({"dataset": r["dataset"], "sigma": float(r["sigma"]), "rep": i, "method": r["method"],
                        "privacy": r["privacy"], "abs": r["abs_mean"] * f, "rel": r["rel_mean"] * f,
                        "sup_abs": math.nan if sup is None or pd.isna(sup) else float(sup) * f})
    return pd.DataFrame(out, columns=list(REPETITION_COLUMNS))


#: The assembler and notebook 45 do not pass per-repetition records yet: the runs' ``metrics.json`` carries the
#: summary rows only, and :func:`~dpkit.experiments.leaderboard.leaderboard_rows` requires the records (a loud error,
#: exit 2 from the assembler). Strict: the tests marked with it fail as soon as the records are wired in, so the
#: mark is then removed.
NEEDS_RECORDS = pytest.mark.xfail(
    strict=True, reason="45_leaderboard runs record no per-repetition records and assemble_leaderboard / notebook 45 "
                        "pass none to leaderboard_rows, which requires them")
