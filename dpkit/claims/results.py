"""Result types shared by the claim modules: the checks plus the numbers behind them."""
from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from dpkit.evaluation.verdicts import Check

__all__ = ["TableResult"]


@dataclass(frozen=True, eq=False)  # holds arrays: compare fields explicitly
class TableResult:
    """Checks plus the table of the numbers behind them (one row per case, as written to ``metrics.json``).

    Attributes
    ----------
    checks : tuple of Check
        In the order a notebook reports them.
    table : DataFrame
        One row per case; ``table.to_dict("records")`` are the ``metrics.json`` table rows.
    """

    checks: tuple[Check, ...]
    table: pd.DataFrame
