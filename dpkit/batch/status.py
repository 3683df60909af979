"""Where a batch stands: every run of a manifest, finished, failed, running or not started, with the repetitions a long
run has kept so far.

It only reads: run records (``run.json``), checkpoint folders (:mod:`dpkit.experiments.checkpoint`), the run locks
tested without waiting (held by a live process: a run in progress) and the repetition locks of Dask repetitions
(:mod:`dpkit.batch.repetitions`). Nothing is started, moved or removed.
"""
from __future__ import annotations

import json
import os
import pickle
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dpkit.batch.locks import RunLock
from dpkit.batch.manifest import RunSpec, default_parameters, expand_manifest, load_manifest, manifest_output
from dpkit.batch.results import UNAVAILABLE
from dpkit.core.paths import repetition_files

__all__ = ["RunStatus", "batch_status", "format_status", "total_repetitions"]


@dataclass(frozen=True)
class RunStatus:
    """The state of one run of a manifest.

    Attributes
    ----------
    state : {"finished", "failed", "unavailable", "running", "not started"}
        ``running``: another process holds the run's lock now. ``unavailable``: its data sets are documented as
        possibly unavailable offline and were not on this machine (``detail`` names them and says why); not a
        failure, and the next batch tries it again.
    kept : dict
        Repetitions kept in the run's checkpoint folder, per sub-folder (a data set), for a run that has not
        finished.
    last_kept : float or None
        Time (epoch seconds) of the newest kept repetition.
    seconds_per_repetition : float or None
        Median gap between consecutive kept repetitions (the run's recent pace), when there are at least two.
    running : dict
        Repetitions being computed now as Dask tasks, per data set.
    """

    spec: RunSpec
    folder: Path
    state: str
    detail: str = ""
    kept: dict[str, int] = field(default_factory=dict)
    last_kept: float | None = None
    seconds_per_repetition: float | None = None
    wall_time_s: float | None = None
    compute_s: float | None = None
    running: dict[str, int] = field(default_factory=dict)

    @property
    def total_repetitions(self) -> int | None:
        """:func:`total_repetitions` of the run."""
        return total_repetitions(self.spec)


def total_repetitions(spec: RunSpec) -> int | None:
    """``REPS`` × the number of data sets, when the run's parameters or, for those it leaves out, its notebook's
    ``parameters`` cell (:func:`~dpkit.batch.manifest.default_parameters`) give both and ``QUICK`` is false
    (``None`` otherwise)."""
    params = {**default_parameters(spec.notebook), **spec.parameters}
    reps, names = params.get("REPS"), params.get("DATASETS")
    if not isinstance(reps, int) or isinstance(reps, bool) or not isinstance(names, list) \
            or params.get("QUICK") is not False:
        return None  # QUICK runs cut REPS and the data sets down inside the notebook
    return reps * len(names)


def _held(lock_path: Path) -> str | None:
    """The holder named in the lock file if a live process holds the lock now, else ``None`` (tested without waiting)."""
    if not lock_path.is_file():
        return None
    lock = RunLock(lock_path)
    if lock.acquire(wait=False):
        lock.release()
        return None
    return lock.holder()


def _recorded_seconds(path: Path) -> float | None:
    """The compute time a kept repetition recorded (``None`` for a file from before times were recorded)."""
    try:
        with path.open("rb") as fh:
            seconds = pickle.load(fh).get("seconds")
    except (OSError, EOFError, pickle.UnpicklingError, AttributeError, ImportError):
        return None
    return None if seconds is None else float(seconds)


def _kept(folder: Path) -> tuple[dict[str, int], float | None, float | None]:
    """Repetitions kept per data set, the time of the last one written, and the pace: the median compute time the
    kept repetitions recorded, else (files without it) the median gap between their write times. The recorded times
    come first because an adoption writes every kept file again at once (the gaps are then zero)."""
    if not folder.is_dir():
        return {}, None, None
    kept: dict[str, int] = {}
    times: list[float] = []
    seconds: list[float | None] = []
    for p in repetition_files(folder):
        name = p.parent.name if p.parent != folder else "."
        kept[name] = kept.get(name, 0) + 1
        times.append(p.stat().st_mtime)
        seconds.append(_recorded_seconds(p))
    times.sort()
    recorded = sorted(s for s in seconds if s is not None)
    if recorded and len(recorded) == len(seconds):
        pace: float | None = recorded[len(recorded) // 2]
    else:
        gaps = sorted(b - a for a, b in zip(times, times[1:]))
        pace = gaps[len(gaps) // 2] if gaps else None
    return kept, (times[-1] if times else None), pace


def batch_status(manifest: str | os.PathLike | dict[str, Any], *, output: str | os.PathLike | None = None
                 ) -> list[RunStatus]:
    """The state of every run of ``manifest`` under its output folder (or ``output``)."""
    from dpkit.batch.execute import read_record, unfinished_reason
    from dpkit.batch.repetitions import running_repetitions
    from dpkit.batch.stale import checkpoint_folder

    m = load_manifest(manifest) if not isinstance(manifest, dict) else manifest
    out = Path(output).resolve() if output else manifest_output(m)
    result = []
    for spec in expand_manifest(m):
        folder = spec.folder(out)
        info = read_record(folder)
        kept, last, pace = _kept(checkpoint_folder(spec, folder.parent))
        running = running_repetitions(checkpoint_folder(spec, folder.parent))
        holder = _held(folder.parent / f".{spec.key}.lock")
        wrong = unfinished_reason(folder, info) if info is not None and info.get("status") == "ok" else None
        if wrong is not None:  # says ok but is not this key's finished run (no metrics.json, other parameters)
            result.append(RunStatus(spec, folder, "failed", detail=f"{folder}: {wrong}"))
        elif info is not None and info.get("status") == "ok":
            ck = info.get("checkpoint")
            compute = ck.get("compute_s") if isinstance(ck, dict) else None
            wall = info.get("wall_time_s")
            result.append(RunStatus(spec, folder, "finished", wall_time_s=wall if isinstance(wall, int | float) else None,
                                    compute_s=compute if isinstance(compute, int | float) else None))
        elif holder is not None:
            result.append(RunStatus(spec, folder, "running", detail=holder, kept=kept, last_kept=last,
                                    seconds_per_repetition=pace, running=running))
        elif info is not None and info.get("status") == UNAVAILABLE:
            result.append(RunStatus(spec, folder, UNAVAILABLE, detail=str(info.get("error") or "")))
        elif info is not None:
            result.append(RunStatus(spec, folder, "failed", detail=str(info.get("error") or ""), kept=kept,
                                    last_kept=last, seconds_per_repetition=pace))
        else:
            result.append(RunStatus(spec, folder, "not started", kept=kept, last_kept=last,
                                    seconds_per_repetition=pace))
    return result


def _label(s: RunStatus, varying: list[str]) -> str:
    params = ", ".join(f"{k}={s.spec.parameters[k]!r}" for k in varying if k in s.spec.parameters)
    return f"{s.spec.notebook.stem} {s.spec.key}" + (f" ({params})" if params else "")


def format_status(statuses: list[RunStatus]) -> str:
    """One line per run, then the counts. Runs are named by notebook, key and the parameters that vary."""
    keys = sorted({k for s in statuses for k in s.spec.parameters})
    varying = [k for k in keys if len({json.dumps(s.spec.parameters.get(k), default=str) for s in statuses}) > 1]
    lines = []
    for s in statuses:
        text = f"{_label(s, varying)}: {s.state}"
        if s.state == "finished":
            if s.wall_time_s is not None:
                text += f" in {s.wall_time_s:.0f} s"
            if s.compute_s is not None:
                text += f" (repetitions' compute over all attempts {s.compute_s:.0f} s)"
        elif s.detail:
            text += f" ({s.detail})"
        if s.state != "finished" and s.kept:
            total = sum(s.kept.values())
            reps = s.spec.parameters.get("REPS")
            per = ", ".join(f"{k} {v}" + (f"/{reps}" if isinstance(reps, int) else "") for k, v in s.kept.items())
            text += f"; {total} repetition(s) kept ({per})"
            if s.last_kept is not None:
                text += f", the last at {time.strftime('%H:%M:%S', time.localtime(s.last_kept))}"
            if s.seconds_per_repetition is not None:
                text += f", about {s.seconds_per_repetition / 60:.1f} min of compute per repetition"
                if isinstance(reps, int) and s.state == "running":
                    left = sum(max(reps - v, 0) for v in s.kept.values())
                    text += f" (about {left * s.seconds_per_repetition / 60:.0f} min of compute to go for the data started)"
        if s.running:
            text += f"; {sum(s.running.values())} repetition task(s) running (" + ", ".join(
                f"{k} {v}" for k, v in s.running.items()) + ")"
        lines.append(text)
    lines.append(_repetition_counts(statuses))
    counts = {st: sum(s.state == st for s in statuses) for st in ("finished", "running", "failed", "not started")}
    if any(s.state == UNAVAILABLE for s in statuses):
        counts[UNAVAILABLE] = sum(s.state == UNAVAILABLE for s in statuses)
    lines.append(f"{len(statuses)} runs: " + ", ".join(f"{v} {k}" for k, v in counts.items()))
    return "\n".join(lines)


def _repetition_counts(statuses: list[RunStatus]) -> str:
    """The repetitions of the runs: kept, running, and their total where the runs' parameters give it."""
    done = running = total = 0
    known = True
    for s in statuses:
        if s.state == UNAVAILABLE:  # its data are not here: none of its repetitions will run
            continue
        n = s.total_repetitions
        if s.state == "finished":
            done += n or 0
        else:
            done += sum(s.kept.values())
            running += sum(s.running.values())
        known = known and n is not None
        total += n or 0
    return (f"repetitions: {done}" + (f"/{total}" if known else "") + f" done (kept or in finished runs), "
            f"{running} running")
