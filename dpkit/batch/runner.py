"""Headless notebook execution with papermill, and batch runs of manifests on Dask.

A *run* is one notebook executed with one set of parameters (``INTERACTIVE=False``, ``OUTPUT_DIR`` its folder); a
*batch* is every (notebook × parameter grid point) of a manifest (:mod:`dpkit.batch.manifest`), each run in its own
folder keyed by the notebook and a hash of its parameters. The command line is :mod:`dpkit.batch.cli`; the user guide
(``docs/guide/batch.md``) describes the commands, the manifest and the schedulers.

Guarantees
----------
1. Validated first: the manifest's keys, every parameter's name and type (against the notebook's ``parameters``
   cell, :func:`dpkit.batch.manifest.check_parameters`) and the output's writability are checked before anything
   runs.
2. Runs never overwrite each other: a run holds a lock (:mod:`dpkit.batch.locks`) while it executes into a
   temporary folder, "done" is checked again just before the rename, and a finished run is never replaced. Clean-up
   removes only the temporary folders the runner made (names holding :data:`~dpkit.batch.locks.MARKER`).
3. A run is finished only with its own results: ``run.json`` ``status: ok``, the ``metrics.json`` its attempt wrote,
   and recorded parameters whose key is the folder's. A run of a changed notebook (its fingerprint,
   :func:`~dpkit.batch.manifest.notebook_fingerprint`) or of kept repetitions from other sources is stale: the batch
   stops and names it unless ``stale`` says ``rerun``, ``keep`` or ``verify`` (:mod:`dpkit.experiments.adoption`).
   Long runs resume from their kept repetitions (:mod:`dpkit.experiments.checkpoint`) with the same numbers.
4. Every failure (a dead worker, a cell timeout, a dead kernel, an I/O error, a full disk) is recorded in the run's
   folder (``run.json`` ``status: failed``, ``error.txt``); the batch goes on and exits non-zero.
"""
from __future__ import annotations

import os
import shutil
import sys
import time
import traceback
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dpkit.batch.cluster import check_workers
from dpkit.batch.execute import (
    check_writable,
    execute_notebook,
    failure_message,
    is_done,
    is_enospc,
    kept_repetitions,
    record_checkpoint,
    refused_adoption,
    remove_checkpoint,
    unavailable_reason,
    write_json,
)
from dpkit.batch.locks import clean_stale, make_temporary, stale_folders
from dpkit.batch.manifest import (
    RunSpec,
    expand_manifest,
    load_manifest,
    manifest_output,
)
from dpkit.batch.outcome import Summary, finish_run, record_failure, run_summary, under_run_lock
from dpkit.batch.progress import TaskProgress
from dpkit.batch.repetitions import SCHEDULER_ENV, cut_off_attempts, describe_cut_off, uses_repetition_tasks
from dpkit.batch.results import UNAVAILABLE
from dpkit.batch.scheduler import batch_client, check_scheduler, probe_scheduler
from dpkit.batch.stale import STALE_POLICIES, checkpoint_folder, confirm_adopted, handle_stale
from dpkit.core.threads import thread_environ
from dpkit.core.validation import check_positive_int
from dpkit.experiments.adoption import DEFAULT_VERIFY_REPS
from dpkit.queries.gemm import usable_cores

if TYPE_CHECKING:
    from distributed import Client

__all__ = ["run_one", "run_manifest"]


# --------------------------------------------------------------------------- one run of a batch
def _execute_locked(spec: RunSpec, final: Path, *, timeout: int | None, threads: int | None,
                    adopt: bool = False, verify_reps: int | None = None) -> Summary:
    if is_done(final):  # finished by another process while we waited for the lock
        return run_summary(spec, final, "skipped")
    interrupted = stale_folders(final.parent, spec.key)  # left by an interrupted attempt (we hold the lock)
    for p in interrupted:
        shutil.rmtree(p, ignore_errors=True)
    try:
        tmp = make_temporary(final.parent, spec.key)
    except OSError as exc:
        return run_summary(spec, final, "failed", error=f"cannot make a temporary folder in {final.parent}: "
                        f"{failure_message(exc)}", disk_full=is_enospc(exc))
    keep = checkpoint_folder(spec, final.parent)
    resumed = kept_repetitions(keep)
    t0 = time.perf_counter()
    cut_off: list[dict[str, Any]] = []
    refused = False
    try:
        execute_notebook(spec.notebook, tmp, parameters=spec.parameters, timeout=timeout, final_dir=final,
                         checkpoint_dir=keep, adopt=adopt, verify_reps=verify_reps,
                         environ=thread_environ(threads) if threads else None)
        cut_off = cut_off_attempts(keep)
        record_checkpoint(tmp, keep, resumed, cut_off=cut_off)
    except Exception as exc:  # a failing run is recorded in its folder, the batch goes on
        refused = refused_adoption(exc)
        tb = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
        unavailable = unavailable_reason(exc)
        if unavailable:  # its data sets are documented as possibly unavailable offline: recorded, not a failure
            return finish_run(spec, final, tmp, UNAVAILABLE, error=unavailable, tb=tb, wall=time.perf_counter() - t0)
        kept = kept_repetitions(keep)
        error = failure_message(exc, timeout) + (
            f" ({kept} finished repetition(s) are kept in {keep}; re-running the batch resumes from them)" if kept else "")
        return _note_interrupted(finish_run(spec, final, tmp, "failed", error=error, tb=tb, wall=time.perf_counter() - t0,
                                         disk_full=is_enospc(exc)), interrupted, cut_off_attempts(keep))
    finally:
        if adopt and not refused:  # the kernel did not refuse the kept repetitions: they count as current now
            confirm_adopted(spec.notebook, keep)
    done = finish_run(spec, final, tmp, "ok", wall=time.perf_counter() - t0)
    if is_done(final):  # the results are in place: the kept repetitions have served
        remove_checkpoint(keep)
    return _note_interrupted(done, interrupted, cut_off)


def _note_interrupted(summary: Summary, interrupted: list[Path], cut_off: list[dict[str, Any]] | None = None) -> Summary:
    """Say in ``summary`` (``interrupted``) that an earlier attempt of this run was cut off: the batch removed the
    temporary folders of interrupted attempts when it started, so these were left during it (a worker died); and
    (``cut_off``, :func:`~dpkit.batch.repetitions.cut_off_attempts`) that repetition tasks were cut off and ran
    again."""
    said = []
    if interrupted:
        said.append(f"{len(interrupted)} earlier attempt(s) of this run were cut off (their worker or "
                    "kernel died); it started again (from its kept repetitions, if any)")
    if cut_off:
        said.append(describe_cut_off(cut_off))
        summary["cut_off_repetitions"] = cut_off
    if said:
        summary["interrupted"] = "; ".join(said)
    return summary


def _run_task(spec: RunSpec, output: str, shares: dict[str, int], **kwargs: Any) -> Summary:
    """:func:`run_one` on a Dask worker, with the worker's thread share (:func:`~dpkit.batch.cluster.worker_share`);
    the summary names the worker and the share."""
    from distributed import get_worker, rejoin, secede

    from dpkit.batch.cluster import worker_share

    worker = get_worker()
    threads = worker_share(shares, worker)
    # the kernel submits its repetitions to this cluster (dpkit.batch.repetitions); while it runs, this task only
    # waits for it: it leaves the worker's thread pool, so that its slot computes repetitions too
    os.environ[SCHEDULER_ENV] = worker.scheduler.address
    tasks = uses_repetition_tasks(spec.notebook, spec.parameters)
    if tasks:
        secede()
    try:
        summary = run_one(spec, output, threads=threads, **kwargs)
    finally:
        if tasks:
            rejoin()
    return {**summary, "worker": worker.address, "threads": threads}


def run_one(spec: RunSpec, output: str | os.PathLike, *, timeout: int | None = 7200, threads: int | None = 1,
            wait: bool = True, adopt: bool = False, verify_reps: int | None = None) -> Summary:
    """Execute one run into ``<output>/<stem>/<key>/`` (under the run's lock, via a temporary folder).

    Returns a summary ``{notebook, key, folder, status, wall_time_s, error}`` with status ``ok``,
    ``skipped`` (finished already), ``failed`` (recorded in the folder, ``error`` says why), ``unavailable``
    (its data sets are documented as possibly unavailable offline and are not here; ``error`` says which and why;
    tried again by the next batch) or
    ``busy`` (another process holds the run and ``wait`` is false); ``disk_full`` is true when
    the disk ran full. Never raises for a failing notebook or an I/O error. ``adopt`` (``--stale verify``): kept
    repetitions of other versions are adopted if those computed again are equal to the bit
    (:func:`~dpkit.batch.execute.open_checkpoint`), ``verify_reps`` of them (default 2, the lowest and the highest).
    """
    final = spec.folder(Path(output))
    if is_done(final):
        return run_summary(spec, final, "skipped")
    return under_run_lock(spec, final, wait, lambda: _execute_locked(spec, final, timeout=timeout, threads=threads,
                                                                  adopt=adopt, verify_reps=verify_reps))


# --------------------------------------------------------------------------- batches
#: Seconds between two counts of the repetitions kept by the runs in progress (the batch's progress bar,
#: :class:`~dpkit.batch.progress.TaskProgress`).
PROGRESS_POLL_S = 5.0


def _not_started(spec: RunSpec, out: Path, cause: Summary) -> Summary:
    return run_summary(spec, spec.folder(out), "failed", error=f"not started: {cause['error']}")


def _run_all(client: Client | None, specs: list[RunSpec], out: Path, *, timeout: int | None, wait: bool,
             progress: TaskProgress, shares: dict[str, int] | None = None, adopt: bool = False,
             verify_reps: int | None = None) -> list[Summary]:
    """Run ``specs`` in this process (``client is None``, all usable cores) or on Dask (each worker with its thread
    share of ``shares``, :func:`~dpkit.batch.cluster.check_workers`); stop starting runs when the disk is full."""
    results: list[Summary] = []
    if client is None:
        threads = usable_cores()  # for each kernel's environment (run_one), not this process's
        for i, s in enumerate(specs):
            results.append(run_one(s, out, timeout=timeout, wait=wait, threads=threads, adopt=adopt,
                                   verify_reps=verify_reps))
            if results[-1]["status"] != "busy":
                progress.finished(s, out)
            if results[-1].get("disk_full"):
                return results + [_not_started(x, out, results[-1]) for x in specs[i + 1:]]
        return results
    from dask.distributed import as_completed

    tag = uuid.uuid4().hex[:6]
    futures = {client.submit(_run_task, s, str(out), shares or {}, timeout=timeout, wait=wait, adopt=adopt,
                             verify_reps=verify_reps, pure=False, key=f"run-{s.notebook.stem}-{s.key}-{tag}"): s
               for s in specs}
    pending = dict(futures)
    for fut in as_completed(list(futures)):
        s = pending.pop(fut)
        try:
            r = fut.result()
        except (KeyboardInterrupt, SystemExit):
            raise
        except BaseException as exc:  # the worker died (KilledWorker), the task was cancelled, ...: into the run's folder
            r = record_failure(s, out, failure_message(exc, timeout))
        results.append(r)
        if r["status"] != "busy":
            progress.finished(s, out)
        if r.get("disk_full"):
            client.cancel(list(pending))
            return results + [_not_started(x, out, r) for x in pending.values()]
    return results


def run_manifest(
    manifest: str | os.PathLike | dict[str, Any],
    *,
    scheduler: str = "local",
    workers: int | None = None,
    output: str | os.PathLike | None = None,
    progress: bool | None = None,
    timeout: int | None = 7200,
    on_stale: str = "error",
    verify_reps: int = DEFAULT_VERIFY_REPS,
) -> list[Summary]:
    """Execute a manifest; return one summary per run (status ``ok``, ``skipped``, ``failed`` or ``unavailable``).

    The manifest and every run's parameters are validated and the output is checked to be
    writable before any run starts; temporary folders of interrupted runs are removed. Runs held
    by another batch on the same output are done last: waited for, then skipped if finished.

    Parameters
    ----------
    scheduler : {"local", "sync"} or str
        ``"local"``: a Dask LocalCluster with ``workers`` single-threaded worker processes
        (default: one per core); ``"sync"``: in this process, sequentially; anything else is
        the address of an existing Dask scheduler (``tcp://host:8786``).
    on_stale : {"error", "rerun", "keep", "verify"}
        What to do with finished runs whose notebook changed since they ran (:func:`stale_runs`) and with kept
        repetitions of unfinished runs computed by another notebook or dpkit version (:func:`stale_checkpoints`):
        ``"error"`` raises :class:`StaleRunsError` naming them before anything runs; ``"rerun"`` moves
        each aside (:func:`supersede`) and runs it again; ``"keep"`` keeps finished runs, with a warning;
        ``"verify"`` refuses changed finished runs as ``"error"`` does, and lets each unfinished run adopt its kept
        repetitions if those its kernel computes again are equal to the bit (:mod:`dpkit.experiments.adoption`;
        a run whose numbers differ fails, naming the difference).
    verify_reps : int
        Under ``"verify"``: how many kept repetitions each adoption computes again, evenly spread from the lowest to
        the highest kept index (default 2: those two; :func:`~dpkit.experiments.adoption.verified_indices`).
    """
    check_scheduler(scheduler)
    if scheduler not in ("local", "sync"):
        probe_scheduler(scheduler)  # before anything is written: an address where no Dask scheduler answers stops here
    if on_stale not in STALE_POLICIES:
        raise ValueError(f"on_stale must be one of {STALE_POLICIES}; got {on_stale!r}")
    verify_reps = check_positive_int(verify_reps, name="verify_reps")
    m = load_manifest(manifest) if not isinstance(manifest, dict) else manifest
    out = Path(output).resolve() if output else manifest_output(m)
    specs = expand_manifest(m)
    check_writable(out)
    clean_stale(out)
    handle_stale(specs, out, on_stale)
    todo = [s for s in specs if not is_done(s.folder(out))]
    results = [run_summary(s, s.folder(out), "skipped") for s in specs if s not in todo]
    if progress is None:
        progress = sys.stderr.isatty() and not os.environ.get("CI")
    from tqdm.auto import tqdm

    tasks = TaskProgress(todo, out)  # a run that keeps its repetitions counts each: its bar moves as they finish
    with tqdm(total=tasks.total, desc=f"batch {m.get('name', '')} tasks", unit="task", disable=not progress) as bar, \
            tasks.shown_on(bar, poll_s=PROGRESS_POLL_S):
        if todo:
            with batch_client(scheduler, workers) as client:
                # every worker reads the notebooks and writes the output at our paths (else one line naming it)
                shares = None if client is None else check_workers(client, [s.notebook for s in todo], out)
                first = _run_all(client, todo, out, timeout=timeout, wait=False, progress=tasks,
                                 shares=shares, adopt=on_stale == "verify", verify_reps=verify_reps)
                held = {(r["notebook"], r["key"]) for r in first if r["status"] == "busy"}
                busy = [s for s in todo if (s.notebook.name, s.key) in held]
                results += [r for r in first if r["status"] != "busy"]
                if busy:  # held by another batch: wait for each, then skip it if finished or run it
                    results += _run_all(client, busy, out, timeout=timeout, wait=True, progress=tasks,
                                        shares=shares, adopt=on_stale == "verify", verify_reps=verify_reps)
    try:
        write_json(out / "batch.json", {"manifest": m.get("_path"), "runs": results})
    except OSError as exc:
        print(f"warning: could not write {out / 'batch.json'}: {failure_message(exc)}", file=sys.stderr)
    return results
