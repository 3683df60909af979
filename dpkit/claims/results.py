"""Result types shared by the claim modules: the checks plus the numbers behind them, and the retry rule for claims."""
from __future__ import annotations

import functools
import inspect
from dataclasses import dataclass, replace
from typing import Any, Callable, Generic, Iterable, Mapping, TypeVar

import numpy as np
import pandas as pd

from dpkit.core.rng import RNGLike
from dpkit.evaluation.verdicts import Check, FalseAlarmBudget, retry_once

__all__ = ["RowsResult", "TableResult", "retried", "NotebookRun", "NotebookRecorder"]


class _Checks:
    """Mixin of the result types: ``.check`` for a result that holds exactly one check."""

    checks: tuple[Check, ...]

    @property
    def check(self) -> Check:
        """The only check (raises ``ValueError`` when the result holds several: use ``.checks``)."""
        if len(self.checks) != 1:
            raise ValueError(f"this result has {len(self.checks)} checks; use .checks")
        return self.checks[0]


@dataclass(frozen=True, eq=False)  # holds arrays: compare fields explicitly
class TableResult(_Checks):
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


Row = TypeVar("Row")


@dataclass(frozen=True)
class RowsResult(_Checks, Generic[Row]):
    """Checks plus the rows behind them: one frozen dataclass per case (``asdict(row)`` is a ``metrics.json`` row).

    Attributes
    ----------
    rows : tuple of Row
        One per case, in table order.
    checks : tuple of Check
        In the order a notebook reports them.
    """

    rows: tuple[Row, ...]
    checks: tuple[Check, ...]


R = TypeVar("R", Check, TableResult)


def retried(claim: Callable[..., R]) -> Callable[..., R]:
    """Run a statistical claim under the retry rule of :func:`~dpkit.evaluation.verdicts.retry_once`.

    ``claim(..., rng=g)`` must draw all its randomness from ``rng`` and return a :class:`Check` or a
    :class:`TableResult` with exactly one check. The first attempt gets the caller's ``rng`` as a
    single test would (same seed ⇒ same statistic and table); a failed attempt is re-run once on a
    fresh stream spawned from it, and the check fails only if both fail (false-alarm probability
    ``level²``). The result keeps the first attempt's statistic and table.
    """

    rng_param = inspect.signature(claim).parameters.get("rng")
    if rng_param is None:
        raise TypeError(f"{claim.__name__}: the retry rule needs an `rng` keyword")
    default = rng_param.default

    @functools.wraps(claim)
    def run(*args: object, rng: RNGLike = default, **kwargs: object) -> R:
        if rng is inspect.Parameter.empty:
            raise TypeError(f"{claim.__name__}() missing required keyword argument: 'rng'")
        results: list[R] = []

        def attempt(g: np.random.Generator) -> Check:
            r = claim(*args, rng=g, **kwargs)
            results.append(r)
            if isinstance(r, Check):
                return r
            if len(r.checks) != 1:
                raise ValueError(f"{claim.__name__}: the retry rule needs exactly one check; got {len(r.checks)}")
            return r.checks[0]

        c = retry_once(attempt, rng)
        return c if isinstance(results[0], Check) else replace(results[0], checks=(c,))

    run.__doc__ = (claim.__doc__ or "") + "\n\n    Runs under the retry rule (:func:`dpkit.claims.results.retried`).\n"
    return run


@dataclass(frozen=True, eq=False)  # holds result objects with arrays
class NotebookRun:
    """Everything a theorem-check notebook computes, in the order it reports it (a topic's ``notebook_checks``).

    The notebook hands ``checks`` and ``rows`` to its :class:`~dpkit.outputs.report.Report` and draws its
    figures from ``parts``; the false-alarm suite (``tools/false_alarms.py``) runs the same function over seeds.

    Attributes
    ----------
    params : dict
        The notebook's parameters as it records them (``SEED``, ``QUICK``, the values after QUICK, ...).
    checks : tuple of Check
        Every check, in report order.
    rows : tuple of dict
        The ``metrics.json`` table rows, in report order.
    budget : dict or None
        The false-alarm budget's record (:meth:`~dpkit.evaluation.verdicts.FalseAlarmBudget.record`), already
        validated against ``checks``; None for a run without statistical checks.
    parts : dict
        The sections' results by name (tables and data behind the figures).
    """

    params: dict[str, Any]
    checks: tuple[Check, ...]
    rows: tuple[dict[str, Any], ...]
    budget: dict[str, Any] | None
    parts: dict[str, Any]

    @property
    def statistical(self) -> list[Check]:
        """The checks with a confidence (the ones a false alarm can come from)."""
        return [c for c in self.checks if c.confidence is not None]


class NotebookRecorder:
    """Collects a notebook's checks and table rows in report order; :meth:`finish` makes the :class:`NotebookRun`."""

    def __init__(self) -> None:
        self.checks: list[Check] = []
        self.rows: list[dict[str, Any]] = []

    def add(self, *checks: Check) -> None:
        """Append checks, in order."""
        self.checks.extend(checks)

    def row(self, **values: Any) -> None:
        """Append one table row."""
        self.rows.append(values)

    def table(self, part: str, records: Iterable[Mapping[str, Any]]) -> None:
        """Append one row ``dict(part=part, **record)`` per record."""
        for r in records:
            self.row(part=part, **r)

    def finish(self, params: dict[str, Any], budget: FalseAlarmBudget | None, **parts: Any) -> NotebookRun:
        """The run, with ``budget`` recorded against the collected checks (raises if it does not fit them).

        ``budget`` None: a run without statistical checks (then ``NotebookRun.budget`` is None)."""
        if budget is None and any(c.confidence is not None for c in self.checks):
            raise ValueError(f"statistical checks without a false-alarm budget: {[c.id for c in self.checks if c.confidence]}")
        return NotebookRun(params=params, checks=tuple(self.checks), rows=tuple(self.rows),
                           budget=None if budget is None else budget.record(self.checks), parts=parts)
