"""The value every claim returns: a :class:`Check` with its statistic, bound and verdict.

``expected`` is the verdict the theory predicts: ``"FAIL"`` for a deliberately broken variant
(a negative control such as the thesis's printed constants), so a run can *show* an erratum and
still be consistent. Claims (:mod:`dpkit.claims`) build checks; :mod:`dpkit.outputs.report`
writes them to ``metrics.json``.
"""
from __future__ import annotations

from dataclasses import dataclass

__all__ = ["VERDICTS", "Check", "check"]

VERDICTS = ("PASS", "FAIL")


@dataclass
class Check:
    """One claim checked by simulation or exact computation.

    Parameters
    ----------
    id : str
        Stable identifier, e.g. ``"Ex1.2-auditor"``.
    claim : str
        What the theory says, in words (with the thesis equation number).
    statistic : float
        What was measured.
    bound : float
        What the claim allows.
    confidence : float or None
        Confidence level of the statistic's bound (e.g. 0.95), ``None`` for exact checks.
    verdict : {"PASS", "FAIL"}
        Whether the measured statistic satisfied the claim.
    expected : {"PASS", "FAIL"}
        The verdict the theory predicts.
    """

    id: str
    claim: str
    statistic: float
    bound: float
    confidence: float | None
    verdict: str
    expected: str = "PASS"
    note: str = ""

    def __post_init__(self) -> None:
        for k in ("verdict", "expected"):
            v = getattr(self, k)
            if v not in VERDICTS:
                raise ValueError(f"{k} must be one of {VERDICTS}; got {v!r}")

    @property
    def consistent(self) -> bool:
        return self.verdict == self.expected


def check(
    id: str,
    claim: str,
    statistic: float,
    bound: float,
    *,
    holds: bool | None = None,
    relation: str = "<=",
    confidence: float | None = None,
    expected: str = "PASS",
    note: str = "",
) -> Check:
    """Build a :class:`Check`; the verdict is ``statistic <relation> bound`` unless ``holds`` is given."""
    if holds is None:
        ops = {"<=": lambda a, b: a <= b, "<": lambda a, b: a < b, ">=": lambda a, b: a >= b, ">": lambda a, b: a > b}
        if relation not in ops:
            raise ValueError(f"relation must be one of {tuple(ops)}; got {relation!r}")
        holds = bool(ops[relation](float(statistic), float(bound)))
    return Check(
        id=id,
        claim=claim,
        statistic=float(statistic),
        bound=float(bound),
        confidence=None if confidence is None else float(confidence),
        verdict="PASS" if holds else "FAIL",
        expected=expected,
        note=note,
    )


