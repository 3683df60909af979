"""Finished runs and kept checkpoints that no longer match their notebook, the library or the manifest.

:func:`stale_runs`, :func:`stale_checkpoints` and :func:`misplaced_runs` find them before a batch starts; the policy
(:data:`STALE_POLICIES`: ``error``, ``rerun``, ``keep``, ``verify``; docs/guide/batch.md) decides: refuse with
:class:`StaleRunsError` naming them, move them to ``.superseded/`` (:func:`supersede`) and run again, keep them, or
adopt kept repetitions proven equal (:mod:`dpkit.experiments.adoption`).
"""
from __future__ import annotations

import json
import os
import sys
import time
import uuid
from pathlib import Path

from dpkit.batch.execute import (
    checkpoint_changes,
    checkpoint_fingerprint,
    confirm_checkpoint,
    failure_message,
    is_done,
    read_record,
)
from dpkit.batch.locks import RunLock
from dpkit.batch.manifest import (
    BatchError,
    RunSpec,
    notebook_fingerprint,
)
from dpkit.batch.results import key_problem
from dpkit.core.paths import library_fingerprint

__all__ = ["STALE_POLICIES", "StaleRunsError", "stale_runs", "stale_checkpoints", "misplaced_runs", "supersede",
           "supersede_checkpoint", "checkpoint_folder", "handle_stale_checkpoint", "confirm_adopted", "move_aside",
           "handle_stale"]


def checkpoint_folder(spec: RunSpec, parent: Path) -> Path:
    """``<output>/<stem>/.<key>.checkpoint``: where run ``spec`` keeps its finished repetitions until it succeeds
    (for a notebook that declares ``CHECKPOINT_DIR``; :func:`~dpkit.batch.execute.execute_notebook`)."""
    return parent / f".{spec.key}.checkpoint"


STALE_POLICIES = ("error", "rerun", "keep", "verify")


class StaleRunsError(BatchError):
    """Finished runs of a notebook that has changed since (their ``notebook_sha256`` differs)."""


def stale_runs(specs: list[RunSpec], out: Path) -> list[tuple[RunSpec, str, str]]:
    """(spec, recorded, current) for every finished run whose notebook changed since it ran.

    A run records the fingerprint of its notebook (:func:`~dpkit.batch.manifest.notebook_fingerprint`)
    in ``run.json``; runs from before that record have none and are not judged.
    """
    out_list = []
    current: dict[Path, str] = {}
    for s in specs:
        folder = s.folder(out)
        if not is_done(folder):
            continue
        try:
            recorded = json.loads((folder / "run.json").read_text()).get("notebook_sha256")
        except (OSError, ValueError, AttributeError):
            continue
        if recorded is None:
            continue
        if s.notebook not in current:
            current[s.notebook] = notebook_fingerprint(s.notebook)
        if str(recorded) != current[s.notebook]:
            out_list.append((s, str(recorded), current[s.notebook]))
    return out_list


def stale_checkpoints(specs: list[RunSpec], out: Path) -> list[tuple[RunSpec, str]]:
    """(spec, what changed) for every unfinished run whose kept repetitions were computed by another version of
    its notebook or of dpkit (:func:`~dpkit.batch.execute.checkpoint_changes`)."""
    found = []
    current: dict[Path, str] = {}
    library = None
    for s in specs:
        keep = checkpoint_folder(s, s.folder(out).parent)
        if checkpoint_fingerprint(keep) is None or is_done(s.folder(out)):
            continue
        if s.notebook not in current:
            current[s.notebook] = notebook_fingerprint(s.notebook)
        library = library or library_fingerprint()
        changes = checkpoint_changes(keep, current[s.notebook], library)
        if changes:
            found.append((s, "; ".join(changes)))
    return found


def misplaced_runs(specs: list[RunSpec], out: Path) -> list[tuple[RunSpec, str]]:
    """(spec, why) for every run folder holding a finished record of other parameters than its key's
    (:func:`~dpkit.batch.results.key_problem`): never taken for the spec's run, never replaced in place."""
    found = []
    for s in specs:
        folder = s.folder(out)
        info = read_record(folder)
        if info is not None and info.get("status") == "ok" and (why := key_problem(folder, info)):
            found.append((s, why))
    return found


def move_aside(path: Path, out: Path, stem: str, name: str) -> Path:
    """Move ``path`` to ``<out>/.superseded/<stem>/<name>-<UTC time>`` (kept, never deleted); return where it went.

    Parameters
    ----------
    path : Path
        The folder to move aside.
    out : Path
        The output folder whose ``.superseded`` folder receives it.
    stem : str
        The sub-folder of ``.superseded`` (a notebook's stem, or ``""``).
    name : str
        The name it is kept under, before the time stamp (a suffix is added if that name is taken).

    Returns
    -------
    Path
        Its new place.
    """
    dest = out / ".superseded" / stem / f"{name}-{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}"
    dest.parent.mkdir(parents=True, exist_ok=True)
    if dest.exists():
        dest = dest.with_name(f"{dest.name}-{uuid.uuid4().hex[:6]}")
    os.replace(path, dest)
    return dest


def supersede(spec: RunSpec, out: Path) -> Path:
    """Move a finished run aside to ``<output>/.superseded/<stem>/<key>-<UTC time>`` (kept, never deleted;
    ``collect`` and ``assemble`` skip dot folders) so that it can run again; return where it went."""
    final = spec.folder(out)
    lock = RunLock(final.parent / f".{spec.key}.lock")
    if not lock.acquire(wait=False):
        raise BatchError(f"cannot move aside {final}: another batch holds its lock")
    try:
        return move_aside(final, out, spec.notebook.stem, spec.key)
    finally:
        lock.release()


def supersede_checkpoint(spec: RunSpec, out: Path) -> Path:
    """Move an unfinished run's kept repetitions aside to ``<output>/.superseded/<stem>/<key>.checkpoint-<UTC time>``."""
    final = spec.folder(out)
    lock = RunLock(final.parent / f".{spec.key}.lock")
    if not lock.acquire(wait=False):
        raise BatchError(f"cannot move aside the checkpoint of {final}: another batch holds its lock")
    try:
        return move_aside(checkpoint_folder(spec, final.parent), out, spec.notebook.stem, f"{spec.key}.checkpoint")
    finally:
        lock.release()


def _error(lines: list[str], partial: bool) -> StaleRunsError:
    """The refusal of the ``error`` policy, naming ``lines``."""
    return StaleRunsError(
        f"{len(lines)} finished run(s) or kept repetitions come from an older version of their notebook:\n"
        + "\n".join(lines)
        + "\nre-run them with --stale rerun (each old run is moved to <output>/.superseded/, not deleted), "
          "or keep them as they are with --stale keep"
        + ("; kept repetitions go on with --stale verify if those computed again are equal to the bit"
           if partial else ""))


def _keep_refused(lines: list[str]) -> StaleRunsError:
    """The refusal of ``keep`` for kept repetitions of unfinished runs (``lines``)."""
    return StaleRunsError(
        "--stale keep keeps finished runs, but an unfinished run cannot go on from repetitions of another "
        "notebook version:\n" + "\n".join(lines) + "\nuse --stale rerun (they are moved to "
        "<output>/.superseded/, not deleted) or --stale verify (they are adopted if those computed again "
        "are equal to the bit)")


def _partial_line(keep: Path, notebook: Path, what: str) -> str:
    return f"  {keep} (kept repetitions of an unfinished run of {notebook.name}; {what})"


def _continuing(final: Path, what: str) -> str:
    return (f"continuing {final} from its kept repetitions ({what}): its kernel adopts them only if "
            "those it computes again are equal to the bit (--stale verify)")


def _afresh(final: Path, what: str, dest: Path) -> str:
    return f"starting {final} afresh ({what}); its kept repetitions are in {dest}"


def handle_stale_checkpoint(final: Path, keep: Path, notebook: Path, on_stale: str) -> None:
    """Apply ``on_stale`` to the kept repetitions ``keep`` of one run outside a batch (``python -m dpkit.batch
    notebook``, output ``final``) as :func:`handle_stale` does to a batch's: nothing if they are current; else
    ``error`` and ``keep`` refuse (:class:`StaleRunsError` naming them), ``rerun`` moves them aside to
    ``.superseded/`` beside ``final`` and ``verify`` keeps them for the kernel to adopt. The caller holds the run's
    lock. A finished run in ``final`` is not judged: ``notebook`` always runs again (``--replace``)."""
    if on_stale not in STALE_POLICIES:
        raise ValueError(f"on_stale must be one of {STALE_POLICIES}; got {on_stale!r}")
    if checkpoint_fingerprint(keep) is None:
        return
    changes = checkpoint_changes(keep, notebook_fingerprint(notebook), library_fingerprint())
    if not changes:
        return
    what = "; ".join(changes)
    if on_stale == "verify":
        print(_continuing(final, what), file=sys.stderr)
    elif on_stale == "error":
        raise _error([_partial_line(keep, notebook, what)], partial=True)
    elif on_stale == "keep":
        raise _keep_refused([_partial_line(keep, notebook, what)])
    else:
        dest = move_aside(keep, final.parent, "", f"{final.name}.checkpoint")
        print(_afresh(final, what, dest), file=sys.stderr)


def confirm_adopted(notebook: Path, keep: Path) -> None:
    """After a run under ``--stale verify`` that its kernel did not refuse: record the current versions in its
    checkpoint folder once every kept repetition carries the current identity
    (:func:`~dpkit.batch.execute.confirm_checkpoint`)."""
    try:
        changes = confirm_checkpoint(keep, notebook_fingerprint(notebook))
    except OSError as exc:  # the run's own outcome stands; the next attempt finds the folder stale and says so
        print(f"warning: could not record the current versions in {keep}: {failure_message(exc)}", file=sys.stderr)
        return
    if changes:
        print(f"{keep}: its kept repetitions now count as current ({'; '.join(changes)}; --stale verify)",
              file=sys.stderr)


def handle_stale(specs: list[RunSpec], out: Path, on_stale: str) -> None:
    """Apply ``on_stale`` to the finished runs of changed notebooks (those moved aside then count as not done), and to
    run folders that hold another key's run (:func:`misplaced_runs`: an error unless ``rerun`` moves them aside).

    Parameters
    ----------
    specs : list of RunSpec
        The batch's runs.
    out : Path
        The batch's output folder.
    on_stale : str
        One of :data:`STALE_POLICIES`.

    Raises
    ------
    StaleRunsError
        When ``on_stale`` refuses stale or misplaced runs.
    """
    misplaced = misplaced_runs(specs, out)
    if misplaced and on_stale != "rerun":
        raise StaleRunsError(
            f"{len(misplaced)} run folder(s) hold a finished run of other parameters than their key's, which is never "
            "taken for the key's run:\n" + "\n".join(f"  {s.folder(out)} {why}" for s, why in misplaced)
            + "\nmove them away, or re-run with --stale rerun (each is moved to <output>/.superseded/, not deleted)")
    for s, _why in misplaced:
        dest = supersede(s, out)
        print(f"running {s.folder(out)} again: it held a run of other parameters, now in {dest}", file=sys.stderr)
    stale = stale_runs(specs, out)
    partial = stale_checkpoints(specs, out)
    if not stale and not partial:
        return
    lines = [f"  {s.folder(out)} ({s.notebook.name}: ran {old}, now {new})" for s, old, new in stale]
    lines += [_partial_line(checkpoint_folder(s, s.folder(out).parent), s.notebook, what) for s, what in partial]
    if on_stale == "verify" and stale:
        raise StaleRunsError(
            f"{len(stale)} finished run(s) come from an older version of their notebook:\n" + "\n".join(lines[:len(stale)])
            + "\n--stale verify applies to kept repetitions of unfinished runs, not to finished runs: re-run them with "
              "--stale rerun (each old run is moved to <output>/.superseded/, not deleted), or keep them as they are "
              "with --stale keep")
    if on_stale == "verify":
        for s, what in partial:
            print(_continuing(s.folder(out), what), file=sys.stderr)
        return
    if on_stale == "error":
        raise _error(lines, partial=bool(partial))
    if on_stale == "keep":
        if partial:
            raise _keep_refused(lines[len(stale):])
        print(f"warning: keeping {len(stale)} finished run(s) of notebooks that changed since (--stale keep):\n"
              + "\n".join(lines), file=sys.stderr)
        return
    for s, _old, _new in stale:
        dest = supersede(s, out)
        print(f"re-running {s.folder(out)}: its notebook changed; the old run is in {dest}", file=sys.stderr)
    for s, what in partial:
        dest = supersede_checkpoint(s, out)
        print(_afresh(s.folder(out), what, dest), file=sys.stderr)
