"""A run's outcome, recorded in the run's own folder under the run's lock.

:func:`under_run_lock` runs a body holding the run's lock; :func:`finish_run` writes ``run.json``, ``log.txt`` (and
``error.txt``) and installs the folder (:func:`install_run`), never over a finished run; :func:`record_failure`
records a run that failed outside its notebook. Each returns the run's :data:`Summary` (:func:`run_summary`).
"""
from __future__ import annotations

import json
import os
import shutil
import sys
import uuid
from pathlib import Path
from typing import Any, Callable

from dpkit.batch.execute import failure_message, is_done, is_enospc, kept_repetitions, read_record, write_json
from dpkit.batch.locks import RunLock, mark_temporary, stale_folders, unmark
from dpkit.batch.manifest import RunSpec
from dpkit.batch.results import key_problem
from dpkit.batch.stale import checkpoint_folder, move_aside

__all__ = ["run_summary", "install_run", "finish_run", "under_run_lock", "record_failure"]

#: A run's summary in a batch: ``notebook``, ``key``, ``folder``, ``status``, ``wall_time_s``, ``error``, and what
#: else the run reports.
Summary = dict[str, Any]


def run_summary(spec: RunSpec, final: Path, status: str, **extra: Any) -> Summary:
    """The summary of run ``spec`` in a batch: no wall time and no error unless ``extra`` says otherwise.

    Parameters
    ----------
    spec : RunSpec
        The run.
    final : Path
        The run's folder.
    status : str
        Its status (``ok``, ``failed``, ``skipped``, ``busy``, ...).
    **extra
        Further entries, which replace the defaults (``wall_time_s``, ``error``) of the same name.

    Returns
    -------
    Summary
        ``notebook`` (its file name), ``key``, ``folder``, ``status``, ``wall_time_s``, ``error`` and ``extra``.
    """
    return {"notebook": spec.notebook.name, "key": spec.key, "folder": str(final), "status": status,
            "wall_time_s": 0.0, "error": None, **extra}


def install_run(tmp: Path, final: Path, key: str) -> bool:
    """Rename ``tmp`` to ``final``; ``False`` (and ``tmp`` removed) if ``final`` is a finished run.

    What ``final`` held before is removed when it was an unfinished attempt of this run; a record of another
    run (other parameters, :func:`~dpkit.batch.results.key_problem`) is moved whole to ``.superseded/``, never
    deleted.

    Parameters
    ----------
    tmp : Path
        The run's temporary folder, holding its records.
    final : Path
        The run's folder.
    key : str
        The run's key (names what is moved aside).

    Returns
    -------
    bool
        Whether ``tmp`` is now ``final``.
    """
    if is_done(final):  # checked again just before the rename: a finished run is never replaced
        shutil.rmtree(tmp, ignore_errors=True)
        return False
    unmark(tmp)
    info = read_record(final)
    if info is not None and info.get("status") == "ok" and key_problem(final, info):
        dest = move_aside(final, final.parent.parent, final.parent.name, key)
        print(f"{final} held a run of other parameters: moved to {dest}", file=sys.stderr)
    if final.exists():  # an earlier failed attempt: moved aside, replaced, then removed
        old = final.parent / f".{key}.old-{uuid.uuid4().hex[:8]}"
        os.replace(final, old)
        mark_temporary(old)
        os.replace(tmp, final)
        shutil.rmtree(old, ignore_errors=True)
    else:
        os.replace(tmp, final)
    return True


def finish_run(spec: RunSpec, final: Path, tmp: Path, status: str, *, error: str | None = None, tb: str | None = None,
               wall: float = 0.0, disk_full: bool = False) -> Summary:
    """Write the run's records into ``tmp`` and rename it into place (under the run's lock, :func:`install_run`).

    Parameters
    ----------
    spec : RunSpec
        The run.
    final : Path
        The run's folder.
    tmp : Path
        Its temporary folder (made if missing; removed if the records cannot be written).
    status : str
        The run's status; any other than ``ok`` also writes ``error.txt`` and the status into ``run.json``.
    error, tb : str or None
        The failure's one-line message and traceback.
    wall : float
        The run's wall time in seconds.
    disk_full : bool
        Whether the run failed because the disk was full.

    Returns
    -------
    Summary
        The run's summary: ``status``, or ``failed`` if the records could not be written, or ``skipped`` if another
        process finished the run meanwhile.
    """
    try:
        tmp.mkdir(parents=True, exist_ok=True)
        mark_temporary(tmp)
        if status != "ok":
            (tmp / "error.txt").write_text(tb or error or "")
            rj = tmp / "run.json"
            info = {"notebook": str(spec.notebook), "parameters": {**spec.parameters, "OUTPUT_DIR": str(final)}}
            try:  # the record execute_notebook wrote (an unparsable one is replaced)
                found = json.loads(rj.read_text()) if rj.is_file() else None
            except (ValueError, UnicodeDecodeError):
                found = None
            if isinstance(found, dict):
                info = found
            info.update(status=status, error=error, traceback=(tb or "")[-4000:], key=spec.key)
            write_json(rj, info)
        (tmp / "log.txt").write_text(
            f"notebook: {spec.notebook}\nkey: {spec.key}\nparameters: {json.dumps(spec.parameters, default=str)}\n"
            f"status: {status}\nwall_time_s: {wall:.3f}\n" + (f"error: {error}\n\n{tb or ''}" if error else ""))
        installed = install_run(tmp, final, spec.key)
    except OSError as exc:
        shutil.rmtree(tmp, ignore_errors=True)  # frees what it took; the finished runs stay
        msg = f"could not record the run in {final}: {failure_message(exc)}" + (f" (the run: {error})" if error else "")
        return run_summary(spec, final, "failed", error=msg, disk_full=disk_full or is_enospc(exc))
    if not installed:
        return run_summary(spec, final, "skipped", error="finished meanwhile by another process; this attempt was discarded")
    return run_summary(spec, final, status, error=error, wall_time_s=wall, disk_full=disk_full)


def under_run_lock(spec: RunSpec, final: Path, wait: bool, body: Callable[[], Summary]) -> Summary:
    """Run ``body`` holding the run's lock; ``busy`` if another process holds it and ``wait`` is false.

    Parameters
    ----------
    spec : RunSpec
        The run.
    final : Path
        The run's folder (its lock is ``.<key>.lock`` beside it).
    wait : bool
        Wait for the lock instead of returning ``busy``.
    body : callable
        What to run holding the lock.

    Returns
    -------
    Summary
        ``body``'s summary, or ``busy``, or ``failed`` when the lock could not be made.
    """
    try:
        final.parent.mkdir(parents=True, exist_ok=True)
        lock = RunLock(final.parent / f".{spec.key}.lock")
        if not lock.acquire(wait=wait):
            return run_summary(spec, final, "busy", error=f"running in another process ({lock.holder()})")
    except OSError as exc:
        return run_summary(spec, final, "failed", error=f"cannot lock the run in {final.parent}: {failure_message(exc)}",
                           disk_full=is_enospc(exc))
    try:
        return body()
    finally:
        lock.release()


def record_failure(spec: RunSpec, output: str | os.PathLike, error: str) -> Summary:
    """Record a run that failed outside its notebook (its worker died) in the run's own folder.

    A finished run is left alone (status ``ok``): only an unfinished one gets ``run.json``
    (``status: failed``, ``error``), ``error.txt`` and ``log.txt``.
    """
    final = spec.folder(Path(output))

    def body() -> Summary:
        if is_done(final):
            return run_summary(spec, final, "ok")
        for p in stale_folders(final.parent, spec.key):
            shutil.rmtree(p, ignore_errors=True)
        kept = kept_repetitions(checkpoint_folder(spec, final.parent))
        why = error + (f" ({kept} finished repetition(s) are kept in {checkpoint_folder(spec, final.parent)}; "
                       "re-running the batch resumes from them)" if kept else "")
        return finish_run(spec, final, final.parent / f".{spec.key}.tmp-{uuid.uuid4().hex[:8]}", "failed", error=why, tb=why)

    return under_run_lock(spec, final, True, body)
