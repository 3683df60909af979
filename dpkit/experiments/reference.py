"""The thesis's printed reference numbers (Tables 3.2 and 3.3 and their worst running times), kept
as data in ``thesis_reference.json`` beside this module."""
from __future__ import annotations

import json
import math
from pathlib import Path

__all__ = ["SIGMAS", "PAPER_TABLE_3_2", "PAPER_TABLE_3_3", "PAPER_WORST_TIME", "paper_value", "paper_table",
           "TABLES", "PRINTED_DECIMALS"]

_REF = json.loads((Path(__file__).with_name("thesis_reference.json")).read_text())

#: The kernel widths of the thesis's tables (K = σ²).
SIGMAS: tuple[float, ...] = tuple(float(s) for s in _REF["sigmas"])
#: Table 3.2 (improved mechanism I, ε-DP) and Table 3.3 (II, (ε, δ)-DP): data set → "abs"/"rel" → per σ.
PAPER_TABLE_3_2: dict[str, dict[str, tuple[float, ...]]] = {
    ds: {k: tuple(v) for k, v in kinds.items()} for ds, kinds in _REF["table_3_2"].items()}
PAPER_TABLE_3_3: dict[str, dict[str, tuple[float, ...]]] = {
    ds: {k: tuple(v) for k, v in kinds.items()} for ds, kinds in _REF["table_3_3"].items()}
#: Worst running time (s) per mechanism ("I", "II") and data set.
PAPER_WORST_TIME: dict[str, dict[str, float]] = _REF["worst_time_s"]
#: The thesis's tables by privacy class (Table 3.2 ε-DP, Table 3.3 (ε, δ)-DP): (the privacy classes that may
#: compete in the table on the leaderboard, the thesis's mechanism).
TABLES: dict[str, tuple[tuple[str, ...], str]] = {
    "ε-DP": (("ε-DP",), "I"),
    "(ε,δ)-DP": (("ε-DP", "(ε,δ)-DP"), "II"),
}
#: Decimals the thesis prints its errors with.
PRINTED_DECIMALS = 3


def paper_table(privacy: str) -> dict[str, dict[str, tuple[float, ...]]]:
    """Table 3.2 for ``"ε-DP"`` (mechanism I), Table 3.3 for ``"(ε,δ)-DP"`` (mechanism II)."""
    if privacy == "ε-DP":
        return PAPER_TABLE_3_2
    if privacy == "(ε,δ)-DP":
        return PAPER_TABLE_3_3
    raise ValueError(f"privacy must be 'ε-DP' or '(ε,δ)-DP'; got {privacy!r}")


def paper_value(dataset: str, sigma: float, mechanism: str, kind: str) -> float:
    """The thesis's printed number for (data set, σ, mechanism "I"/"II", "abs"/"rel"); NaN if none.

    >>> paper_value("CSN", 10.0, "II", "abs")
    0.003
    """
    table = PAPER_TABLE_3_2 if mechanism == "I" else PAPER_TABLE_3_3
    try:
        return float(table[dataset.upper()][kind][SIGMAS.index(float(sigma))])
    except (KeyError, ValueError):
        return math.nan
