"""The notebook contract: checks with verdicts, result tables and ``metrics.json``.

Every notebook writes ``OUTPUT_DIR/metrics.json`` with ``checks`` (rows ``{id, claim, statistic, bound, confidence,
verdict, expected}``; ``expected`` is ``"FAIL"`` for a deliberately broken variant), ``table``, ``params``,
``ledger`` and ``meta``. A run is *consistent* when every check's verdict equals its expected verdict.
"""
from __future__ import annotations

import json
import math
import os
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Iterable

import numpy as np

from dpkit.claims.results import NotebookRun
from dpkit.evaluation.verdicts import Check, check
from dpkit.outputs.provenance import provenance

__all__ = ["Report", "write_metrics", "read_metrics", "to_jsonable"]

def to_jsonable(x: Any) -> Any:
    """Convert numpy scalars/arrays, dataclasses, paths and non-finite floats for JSON."""
    if isinstance(x, dict):
        return {str(k): to_jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [to_jsonable(v) for v in x]
    if isinstance(x, np.ndarray):
        return to_jsonable(x.tolist())
    if isinstance(x, np.generic):
        return to_jsonable(x.item())
    if isinstance(x, float):
        if math.isnan(x):
            return None
        if math.isinf(x):
            return "inf" if x > 0 else "-inf"
        return x
    if isinstance(x, Path):
        return str(x)
    if hasattr(x, "to_dict"):
        return to_jsonable(x.to_dict())
    if hasattr(x, "__dataclass_fields__"):
        return to_jsonable(asdict(x))
    return x


@dataclass
class Report:
    """Collects checks and table rows during a notebook run and writes ``metrics.json``."""

    output_dir: str | os.PathLike
    params: dict[str, Any] = field(default_factory=dict)
    checks: list[Check] = field(default_factory=list)
    table: list[dict[str, Any]] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)
    _t0: float = field(default_factory=time.perf_counter, repr=False)

    def __post_init__(self) -> None:
        self.output_dir = Path(self.output_dir)
        self.output_dir.mkdir(parents=True, exist_ok=True)

    def add(self, c: Check) -> Check:
        if any(existing.id == c.id for existing in self.checks):
            raise ValueError(f"duplicate check id {c.id!r}")
        self.checks.append(c)
        return c

    def check(self, *args: Any, **kwargs: Any) -> Check:
        """Shortcut for ``report.add(check(...))``."""
        return self.add(check(*args, **kwargs))

    def row(self, **values: Any) -> None:
        self.table.append(values)

    def record(self, checks: NotebookRun | Iterable[Check] | Any) -> None:
        """Write a notebook's checks into this report, in their order: the one way a notebook hands them over.

        Parameters
        ----------
        checks : NotebookRun, iterable of Check, or a result with a ``checks`` attribute
            A topic's :class:`~dpkit.claims.results.NotebookRun` brings its parameters (merged into
            :attr:`params`), its checks, its table rows and its false-alarm budget's record
            (``extra["false_alarm_budget"]``, when it has statistical checks); any other result gives its
            ``checks`` (a :class:`~dpkit.claims.results.TableResult`, say), an iterable its items.

        Raises
        ------
        TypeError
            For an item that is not a :class:`~dpkit.evaluation.verdicts.Check`, naming its type.
        ValueError
            For a check id already in the report (:meth:`add`).
        """
        run = checks if isinstance(checks, NotebookRun) else None
        items = list(getattr(checks, "checks", checks))
        for c in items:
            if not isinstance(c, Check):
                raise TypeError(f"Report.record takes checks; got {type(c).__name__} {c!r:.80}")
        if run is not None:
            self.params.update(run.params)
        for c in items:
            self.add(c)
        if run is not None:
            for r in run.rows:
                self.row(**r)
            if run.budget is not None:
                self.extra["false_alarm_budget"] = run.budget

    @property
    def all_consistent(self) -> bool:
        return all(c.consistent for c in self.checks)

    def summary(self) -> str:
        lines = [f"{'id':32s} {'verdict':7s} {'expected':8s} statistic / bound"]
        for c in self.checks:
            flag = "" if c.consistent else "   <-- UNEXPECTED"
            lines.append(f"{c.id:32s} {c.verdict:7s} {c.expected:8s} {c.statistic:.6g} / {c.bound:.6g}{flag}")
        return "\n".join(lines)

    def write(self, filename: str = "metrics.json") -> Path:
        from dpkit import __version__

        path = Path(self.output_dir) / filename
        payload = {
            "checks": [asdict(c) for c in self.checks],
            "table": self.table,
            "params": self.params,
            "all_consistent": self.all_consistent,
            "meta": {
                "dpkit_version": __version__,
                "written_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                "wall_time_s": time.perf_counter() - self._t0,
                "provenance": provenance(),
            },
            **self.extra,
        }
        path.write_text(json.dumps(to_jsonable(payload), indent=2, allow_nan=False))
        return path


def write_metrics(
    output_dir: str | os.PathLike,
    checks: Iterable[Check] = (),
    table: Iterable[dict[str, Any]] = (),
    params: dict[str, Any] | None = None,
    **extra: Any,
) -> Path:
    """Write ``metrics.json`` in one call (see :class:`Report`)."""
    rep = Report(output_dir, params=dict(params or {}), checks=list(checks), table=list(table), extra=extra)
    return rep.write()


def read_metrics(path: str | os.PathLike) -> dict[str, Any]:
    """Read a ``metrics.json`` (a file or the folder holding one)."""
    p = Path(path)
    if p.is_dir():
        p = p / "metrics.json"
    return json.loads(p.read_text())
