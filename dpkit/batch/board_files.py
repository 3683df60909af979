"""The leaderboard's records and provenance gathered from a batch output folder.

:func:`gather_records` collects the per-repetition records table
(:mod:`dpkit.board.records`) of every finished ``45_leaderboard`` run of a batch output, and
:func:`board_provenance` says where a board came from (:func:`refreshed_provenance`: after a refresh). Both read
the runner's run folders (:func:`dpkit.batch.execute.read_record`), hence they live in the batch layer.
"""
from __future__ import annotations

import datetime as _dt
import json
import os
import platform
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from dpkit.board.records import COLUMNS, KEY, RECORDS_NAME, check_records, read_records, typed_records

__all__ = ["gather_records", "run_commit", "board_provenance", "refreshed_provenance"]


def _finished_runs(output: str | os.PathLike, notebook: str) -> list[tuple[Path, dict[str, Any]]]:
    from dpkit.batch.execute import read_record

    found = []
    for rj in sorted(Path(output).glob(f"{notebook}/*/run.json")):
        if rj.parent.name.startswith("."):
            continue
        info = read_record(rj.parent)
        if info is not None and info.get("status") == "ok":
            found.append((rj.parent, info))
    return found


def gather_records(output: str | os.PathLike, *, notebook: str = "45_leaderboard",
                   folders: Iterable[str | os.PathLike] | None = None) -> tuple[pd.DataFrame, list[str]]:
    """The records of every finished ``notebook`` run of a batch output (each run's ``records.parquet``), as one
    table sorted by :data:`KEY`, and the finished runs without a records file (one line each, naming the folder).
    ``folders``: only these run folders (the runs the caller found finished and readable).

    Raises
    ------
    ValueError
        When two runs hold a record of the same key (naming both folders) or a run's file is not a records table.
    """
    frames, missing, seen = [], [], {}
    runs = ([folder for folder, _info in _finished_runs(output, notebook)] if folders is None
            else [Path(f) for f in folders])
    for folder in runs:
        f = folder / RECORDS_NAME
        if not f.is_file():
            missing.append(f"{folder}: finished run wrote no {RECORDS_NAME}")
            continue
        df = read_records(f)
        for k in df[list(KEY)].itertuples(index=False, name=None):
            if k in seen:
                raise ValueError(f"record {dict(zip(KEY, k))} in two runs: {seen[k]} and {folder}")
            seen[k] = folder
        frames.append(df)
    if not frames:
        return typed_records(pd.DataFrame(columns=list(COLUMNS))), missing
    out = pd.concat(frames, ignore_index=True).sort_values(list(KEY), kind="stable", ignore_index=True)
    return check_records(out, source=f"records of {output}"), missing


def run_commit(folder: str | os.PathLike) -> dict[str, Any]:
    """The commit a run's kernel ran at and whether its tree had uncommitted changes, as its ``metrics.json``
    recorded them (``meta.provenance.git``, where :class:`dpkit.outputs.report.Report` writes
    :func:`dpkit.outputs.provenance.provenance`; a top-level ``provenance.git`` is read too):
    ``{"commit", "dirty"}``, both ``None`` where the run recorded no commit (an unreadable ``metrics.json``, one
    without a provenance, or a kernel outside a git checkout)."""
    try:
        metrics = json.loads((Path(folder) / "metrics.json").read_text())
        meta = metrics.get("meta") if isinstance(metrics.get("meta"), dict) else {}
        prov = meta.get("provenance") or metrics.get("provenance") or {}
        git = prov.get("git") if isinstance(prov, dict) else None
    except (OSError, ValueError, AttributeError):
        git = None
    if not isinstance(git, dict) or not git.get("commit"):
        return {"commit": None, "dirty": None}
    return {"commit": str(git["commit"]), "dirty": None if git.get("dirty") is None else bool(git["dirty"])}


def board_provenance(output: str | os.PathLike | None = None, *, notebook: str = "45_leaderboard",
                     runs: Sequence[Mapping[str, Any]] | None = None) -> dict[str, Any]:
    """Where a board came from: dpkit's version and commit, the library fingerprint
    (:func:`~dpkit.core.paths.library_fingerprint`), the machine (CPU count, platform), the date, and the runs that
    produced it (each finished run's folder, key, notebook fingerprint, parameters, wall time, what its checkpoint
    recorded and, as ``git``, the commit its kernel ran at and whether its tree was clean, :func:`run_commit`), from the
    batch output ``output`` (or the given ``runs``).

    ``compute_s`` is what the board cost: per run, the summed wall times of its repetitions over every attempt
    (``checkpoint.compute_s``, which counts a run resumed across sittings in full) where the run kept repetitions,
    else its wall time; ``None`` when a run records neither. ``wall_time_s`` of a resumed run counts its last attempt
    only. ``projection`` is the wall time the board's repetitions would take on 2, 8 and 64 workers
    (:func:`dpkit.batch.projection.project` of every run's recorded repetition times), ``None`` where a run did not
    record them."""
    import dpkit
    from dpkit.core.paths import library_fingerprint
    from dpkit.outputs.provenance import provenance

    prov = provenance()
    if runs is None:
        runs = []
        for folder, info in _finished_runs(output, notebook) if output is not None else []:
            commit = run_commit(folder)
            runs.append({"folder": folder.name, "key": info.get("key"), "notebook": Path(str(info.get("notebook"))).name,
                         "notebook_sha256": info.get("notebook_sha256"), "wall_time_s": info.get("wall_time_s"),
                         "parameters": {k: v for k, v in (info.get("parameters") or {}).items() if k != "OUTPUT_DIR"
                                        and k != "CHECKPOINT_DIR"},
                         "checkpoint": info.get("checkpoint"), "git": commit})
    return {
        "dpkit_version": dpkit.__version__, "git": prov["git"], "library_fingerprint": library_fingerprint(),
        "machine": {"cpu_count": os.cpu_count(), "platform": platform.platform(), "python": platform.python_version(),
                    "cpu": prov["cpu"]},
        "packages": prov["packages"],
        "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "runs": list(runs),
        "compute_s": _compute_seconds(runs),
        "projection": _projection(runs),
    }


def _projection(runs: Sequence[Mapping[str, Any]]) -> list[dict[str, float]] | None:
    from dpkit.batch.projection import project, run_durations

    durations = run_durations(runs)
    return project(durations) if durations else None


def _compute_seconds(runs: Sequence[Mapping[str, Any]]) -> float | None:
    total = 0.0
    for run in runs:
        kept = run.get("checkpoint") or {}
        seconds = kept.get("compute_s") if kept.get("repetitions") else run.get("wall_time_s")
        if seconds is None:
            return None
        total += float(seconds)
    return round(total, 1)


def refreshed_provenance(stored: Mapping[str, Any], refresh: Mapping[str, Any]) -> dict[str, Any]:
    """The provenance of a refreshed board (:mod:`dpkit.board.refresh`): the stored board's, its runs and compute
    unchanged, with ``refresh`` (:meth:`dpkit.board.refresh.Refresh.summary`: the methods re-run, the verification,
    what changed, its compute) appended to its list ``refreshes`` together with where the refresh ran (dpkit's version
    and commit, the library fingerprint, the machine, the packages, the date); the earlier refreshes are kept."""
    now = board_provenance(runs=[])
    entry = {**dict(refresh), **{k: now[k] for k in ("dpkit_version", "git", "library_fingerprint", "machine",
                                                      "packages", "date")}}
    out = dict(stored)
    out["refreshes"] = [*list(stored.get("refreshes") or []), entry]
    return out
