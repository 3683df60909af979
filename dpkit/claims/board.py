"""Checks and rows of the open board's tutorial (notebook ``46_add_your_method``): a researcher's method put on a stored
board with board-add (:mod:`dpkit.board.add`), and an under-noised copy stopped by the audit gate.

From the gate's record: ``gate-correct-entrant`` (not refuted, expected PASS) and ``gate-under-noised-entrant`` (a
quarter of the noise, refuted: a negative control expected to FAIL); a correct method is refuted with probability at
most ``1 − confidence``.
"""
from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from dpkit.board.add import BoardAddResult
from dpkit.evaluation.verdicts import Check, check

__all__ = ["GATE_RECORD_KEYS", "gate_check", "tutorial_checks", "entrant_rows"]

#: The keys of a gate record the checks read.
GATE_RECORD_KEYS = ("name", "epsilon_lb", "epsilon", "delta", "confidence", "probe", "pair", "n_samples",
                    "epsilon_point")


def _record(result: BoardAddResult) -> Mapping[str, Any]:
    gate = result.gate
    if gate is None or gate.record is None:
        raise ValueError(f"board-add of {result.entrant!r} holds no audit-gate record (run it with the gate)")
    missing = [k for k in GATE_RECORD_KEYS if k not in gate.record]
    if missing:
        raise ValueError(f"the audit-gate record of {result.entrant!r} lacks {missing}")
    return gate.record


def gate_check(result: BoardAddResult, *, id: str, claim: str, expected: str) -> Check:
    """The check ``epsilon_lb ≤ epsilon`` on the audit gate's record of a board-add (the claimed ε against the
    auditor's lower bound, at the gate's confidence).

    Raises
    ------
    ValueError
        When the board-add ran without the gate or its record lacks a key of :data:`GATE_RECORD_KEYS`.
    """
    rec = _record(result)
    note = (f"{result.entrant}: board-add status {result.status}; probe {rec['probe']} on {rec['pair']}, "
            f"{rec['n_samples']} draws per side, point estimate ε ≈ {float(rec['epsilon_point']):.3g}, "
            f"claimed (ε, δ) = ({float(rec['epsilon']):g}, {float(rec['delta']):g})")
    return check(id, claim, float(rec["epsilon_lb"]), float(rec["epsilon"]), relation="<=",
                 confidence=float(rec["confidence"]), expected=expected, note=note)


def tutorial_checks(correct: BoardAddResult, under_noised: BoardAddResult) -> list[Check]:
    """The tutorial's two gate checks (module docstring): the correctly accounted entrant passes (expected PASS),
    the under-noised copy is refuted (expected FAIL)."""
    return [
        gate_check(correct, id="gate-correct-entrant", expected="PASS",
                   claim="a correctly accounted entrant is not refuted by the audit gate: the auditor's lower bound "
                         "ε_lb ≤ the claimed ε (a false refutation has probability ≤ 1 − confidence)"),
        gate_check(under_noised, id="gate-under-noised-entrant", expected="FAIL",
                   claim="negative control: the same method with a quarter of the noise, claiming the same (ε, δ), "
                         "is not (ε, δ)-DP and the audit gate refutes it (ε_lb > ε, so 'ε_lb ≤ ε' fails)"),
    ]


def entrant_rows(result: BoardAddResult) -> list[dict[str, Any]]:
    """The rows of a board-add for the notebook's table: one per ranked (data set, σ, table) with the entrant's rank
    and its paired comparison as board-add reports it (:data:`~dpkit.board.add.RANK_COLUMNS` where
    present), or one row with status ``"refuted"`` and no rank; every row carries the gate's ``epsilon_lb``."""
    rec = result.gate.record if result.gate is not None and result.gate.record is not None else {}
    head = {"entrant": result.entrant, "status": result.status,
            "gate_epsilon_lb": rec.get("epsilon_lb", math.nan), "claimed_epsilon": rec.get("epsilon", math.nan)}
    if result.ranks is None or result.ranks.empty:
        return [dict(head, rank=None)]
    return [dict(head, **r) for r in result.ranks.to_dict(orient="records")]
