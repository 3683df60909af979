"""The wall time a batch would take on W workers, projected from its measured task durations.

For the repetitions' durations ``t_1 … t_m`` (:func:`run_durations`, from their checkpoint files) on W workers:

1. the lower bound ``max(max_i t_i, Σ_i t_i / W)``;
2. the greedy longest-first list schedule, at most 4/3 of the optimum [1];
3. Graham's bound ``Σ_i t_i / W + max_i t_i (1 − 1/W)`` [2], which any list order stays within.

Kernel start-up, data loading and the scheduler's overhead are not in the projection.

References
----------
1. R. L. Graham, "Bounds on multiprocessing timing anomalies", SIAM J. Appl. Math. 17(2), 1969.
2. R. L. Graham, "Bounds for certain multiprocessing anomalies", Bell System Technical Journal 45(9), 1966.
"""
from __future__ import annotations

import heapq
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

__all__ = ["PROJECTED_WORKERS", "list_schedule", "project", "run_durations", "projection_markdown"]

#: The worker counts a board's projection is given for.
PROJECTED_WORKERS: tuple[int, ...] = (2, 8, 64)


def list_schedule(durations: Sequence[float], workers: int) -> float:
    """The makespan of the greedy longest-first list schedule of ``durations`` on ``workers`` identical workers.

    Raises
    ------
    ValueError
        For ``workers`` < 1.
    """
    if int(workers) < 1:
        raise ValueError(f"workers must be an integer ≥ 1; got {workers!r}")
    loads = [0.0] * int(workers)
    heapq.heapify(loads)
    for d in sorted(durations, reverse=True):
        heapq.heapreplace(loads, loads[0] + float(d))
    return max(loads) if durations else 0.0


def project(durations: Sequence[float], workers: Iterable[int] = PROJECTED_WORKERS) -> list[dict[str, float]]:
    """Per worker count W: ``workers``, ``lower_bound_s``, ``list_schedule_s`` and ``graham_bound_s`` (module
    docstring) of the task ``durations`` in seconds."""
    total, longest = float(sum(durations)), float(max(durations, default=0.0))
    return [{"workers": int(w), "lower_bound_s": max(longest, total / w), "list_schedule_s": list_schedule(durations, w),
             "graham_bound_s": total / w + longest * (1 - 1 / w)} for w in workers]


def run_durations(runs: Iterable[Mapping[str, Any]]) -> list[float] | None:
    """Every repetition's wall time of the finished runs ``runs`` (``run.json`` records or a board provenance's
    ``runs``), from their ``checkpoint.repetition_s``; ``None`` if a run that kept repetitions did not record them
    (a run from before they were recorded, or a repetition file without its time). A run that kept no repetitions
    counts as one task of its wall time."""
    out: list[float] = []
    for run in runs:
        kept = run.get("checkpoint") or {}
        if kept.get("repetitions"):
            times = kept.get("repetition_s")
            if not isinstance(times, list) or len(times) != int(kept["repetitions"]) or None in times:
                return None
            out += [float(t) for t in times]
        elif run.get("wall_time_s") is not None:
            out.append(float(run["wall_time_s"]))
        else:
            return None
    return out


def projection_markdown(durations: Sequence[float] | None, workers: Iterable[int] = PROJECTED_WORKERS) -> str:
    """A Markdown table of :func:`project` (minutes), or a sentence saying why there is none."""
    if not durations:
        return "No projection: a run did not record its repetitions' times."
    lines = [f"Projected wall time from {len(durations)} measured tasks ({sum(durations) / 3600:.1f} h of compute, "
             f"the longest {max(durations) / 60:.1f} min; start-up and assembly not included):", "",
             "| workers | lower bound | longest-first schedule | any list order at most |", "|---|---|---|---|"]
    for p in project(durations, workers):
        lines.append(f"| {p['workers']} | {p['lower_bound_s'] / 60:.0f} min | {p['list_schedule_s'] / 60:.0f} min | "
                     f"{p['graham_bound_s'] / 60:.0f} min |")
    return "\n".join(lines)
