"""Execute one notebook headlessly with papermill, and say in one line why a run failed.

:func:`execute_notebook` checks the parameters, injects ``INTERACTIVE=False`` and ``OUTPUT_DIR`` and records
``run.json``. A notebook that writes no ``metrics.json`` has failed (:class:`NoMetricsError`); :func:`is_done` and
:func:`unfinished_reason` decide whether a folder is finished; :func:`failure_message` and :func:`unavailable_reason`
turn a failure into one line.
"""
from __future__ import annotations

import errno
import json
import os
import shutil
import sys
import tempfile
import time
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from dpkit.batch.manifest import (
    BatchError,
    NotebookParameterError,
    check_parameters,
    declared_parameters,
    notebook_fingerprint,
    run_key,
)
from dpkit.batch.results import UNAVAILABLE, key_problem
from dpkit.core.paths import library_fingerprint, repetition_files, write_atomic
from dpkit.core.pysource import literal_eval

__all__ = ["execute_notebook", "failure_message", "unavailable_reason", "check_writable", "write_json", "is_done", "is_enospc",
           "StaleCheckpointError", "open_checkpoint", "checkpoint_fingerprint", "checkpoint_changes", "kept_repetitions",
           "record_checkpoint", "NoMetricsError", "unfinished_reason", "read_record", "remove_checkpoint",
           "confirm_checkpoint", "refused_adoption", "ADOPTION_PARAMETERS"]

#: files in a run's checkpoint folder naming the notebook version and the dpkit sources that wrote it
CHECKPOINT_NOTEBOOK = "notebook_sha256"
CHECKPOINT_LIBRARY = "dpkit_sha256"


class StaleCheckpointError(BatchError):
    """A run's checkpoint folder was written by another version of its notebook or of dpkit."""


class NoMetricsError(RuntimeError):
    """A notebook ran to its end without writing ``metrics.json`` into its ``OUTPUT_DIR`` (in this attempt)."""


def _recorded(folder: Path, name: str) -> str | None:
    try:
        return (folder / name).read_text().strip() or None
    except OSError:
        return None


def checkpoint_fingerprint(folder: str | os.PathLike) -> str | None:
    """The notebook fingerprint recorded in a checkpoint folder (``None``: none recorded)."""
    return _recorded(Path(folder), CHECKPOINT_NOTEBOOK)


def checkpoint_changes(folder: str | os.PathLike, notebook_sha256: str, library_sha256: str) -> list[str]:
    """What differs between the versions that wrote a checkpoint folder and the current ones ([] if nothing).

    A version the folder does not record (written before it was recorded) is not judged.
    """
    out = []
    for name, now in ((CHECKPOINT_NOTEBOOK, notebook_sha256), (CHECKPOINT_LIBRARY, library_sha256)):
        was = _recorded(Path(folder), name)
        if was is not None and was != now:
            out.append(f"{'notebook' if name == CHECKPOINT_NOTEBOOK else 'dpkit sources'}: ran {was}, now {now}")
    return out


def kept_repetitions(folder: str | os.PathLike) -> int:
    """How many finished repetitions a checkpoint folder keeps (all its data sets)."""
    return len(repetition_files(folder))


def record_checkpoint(run_dir: str | os.PathLike, folder: str | os.PathLike, resumed: int, *,
                      cut_off: list[dict[str, Any]] | None = None) -> None:
    """Add what a finished run's checkpoint says to its ``run.json``, before the checkpoint is removed.

    ``checkpoint``: ``resumed_repetitions`` (kept by earlier attempts, loaded by this one), ``repetitions``
    (all kept) and ``compute_s``, the sum of the repetitions' own wall times over all attempts (``None``
    if a repetition did not record its time), ``repetition_s``, each repetition's own wall time (in the order of
    the kept files; what :func:`dpkit.batch.projection.run_durations` projects from), ``cut_off_repetitions``, the
    repetition tasks whose worker died under them (:func:`dpkit.batch.repetitions.cut_off_attempts`), and
    ``adoptions``, the kept repetitions carried over from other dpkit sources after computing some again
    (:func:`dpkit.experiments.adoption.adoptions`: ``dataset``, ``from`` and ``to`` fingerprints, ``verified``
    indices, ``adopted`` repetitions, ``utc``), and ``machines``, how many repetitions each kind of machine computed
    (:func:`dpkit.experiments.checkpoint.kept_meta`). ``wall_time_s`` counts the last attempt only.
    """
    if kept_repetitions(folder) == 0:
        return
    from dpkit.experiments.adoption import adoptions
    from dpkit.experiments.checkpoint import kept_meta, machine_counts

    rj = Path(run_dir) / "run.json"
    info = json.loads(rj.read_text())
    meta = kept_meta(folder)  # each kept file read once
    times = [m["seconds"] for m in meta]
    total = None if None in times else sum(t for t in times if t is not None)
    info["checkpoint"] = {"resumed_repetitions": int(resumed), "repetitions": len(times), "compute_s": total,
                          "repetition_s": [None if t is None else round(t, 3) for t in times],
                          "cut_off_repetitions": list(cut_off or []), "adoptions": adoptions(folder),
                          "machines": machine_counts(meta)}
    write_json(rj, info)


def remove_checkpoint(folder: str | os.PathLike) -> None:
    """Remove a finished run's checkpoint folder, only if :func:`open_checkpoint` made it (it records the
    notebook's fingerprint); any other folder of that name is left alone."""
    p = Path(folder)
    if (p / CHECKPOINT_NOTEBOOK).is_file():
        shutil.rmtree(p, ignore_errors=True)


def open_checkpoint(folder: str | os.PathLike, notebook_sha256: str, *, adopt: bool = False) -> Path:
    """Create the checkpoint folder (recording the notebook's and dpkit's versions) or check that it was
    written by the same versions; :class:`StaleCheckpointError` otherwise, unless ``adopt``: then the notebook's
    ``run_cells`` decides, adopting its kept repetitions only if some computed again are equal to the bit
    (:mod:`dpkit.experiments.adoption`; the notebook gets ``CHECKPOINT_ADOPT=True``), and
    :func:`confirm_checkpoint` records the current versions afterwards."""
    p = Path(folder).resolve()
    library = library_fingerprint()
    changes = checkpoint_changes(p, notebook_sha256, library)
    if changes and not adopt:
        raise StaleCheckpointError(
            f"the checkpoint {p} holds repetitions computed by another version ({'; '.join(changes)}); "
            "re-run with --stale rerun (it is moved to <output>/.superseded/) or remove it")
    p.mkdir(parents=True, exist_ok=True)
    for name, value in ((CHECKPOINT_NOTEBOOK, notebook_sha256), (CHECKPOINT_LIBRARY, library)):
        if _recorded(p, name) is None:
            write_atomic(p / name, value + "\n")
    return p


def refused_adoption(exc: BaseException) -> bool:
    """Whether a run failed because its kernel refused kept repetitions (a
    :class:`~dpkit.experiments.checkpoint.CheckpointMismatchError`: an adoption whose numbers differ, or another
    computation's folder)."""
    return type(exc).__name__ == "PapermillExecutionError" and getattr(exc, "ename", None) == "CheckpointMismatchError"


def confirm_checkpoint(folder: str | os.PathLike, notebook_sha256: str) -> list[str]:
    """Record the current notebook and dpkit versions in a checkpoint folder whose kept repetitions all carry the
    current dpkit's identity (adopted, or computed by it); return what changed ([] if nothing was recorded).

    Called after a run under ``--stale verify`` that was not refused (:func:`refused_adoption`), so that the next
    batch sees the folder as current. A data set whose repetitions still carry another identity (its kernel did
    not reach it) leaves the folder as it was: the next batch finds it stale again.
    """
    p = Path(folder)
    library = library_fingerprint()
    changes = checkpoint_changes(p, notebook_sha256, library)
    if not changes or not p.is_dir():
        return []
    for meta in p.rglob("identity.json"):
        try:
            if json.loads(meta.read_text()).get("dpkit_sha256") != library:
                return []
        except (OSError, ValueError, AttributeError):
            return []
    for name, value in ((CHECKPOINT_NOTEBOOK, notebook_sha256), (CHECKPOINT_LIBRARY, library)):
        write_atomic(p / name, value + "\n")
    return changes


# --------------------------------------------------------------------------- small helpers
def write_json(path: Path, obj: Any) -> None:
    """Write JSON atomically (a temporary file in the same folder, then a rename)."""
    write_atomic(path, json.dumps(obj, indent=2, default=str))


def is_enospc(exc: BaseException) -> bool:
    return isinstance(exc, OSError) and exc.errno == errno.ENOSPC


def failure_message(exc: BaseException, timeout: float | None = None) -> str:
    """One useful line on why a run failed (the full traceback goes to ``error.txt``)."""
    name = type(exc).__name__
    if isinstance(exc, NoMetricsError):
        return str(exc)
    if name == "PapermillExecutionError":
        return f"cell In[{getattr(exc, 'exec_count', '?')}] raised {getattr(exc, 'ename', '?')}: {getattr(exc, 'evalue', '')}"
    if name == "CellTimeoutError":
        lines = str(exc).splitlines()
        dashes = [i for i, ln in enumerate(lines) if ln and set(ln) == {"-"}]
        first = lines[dashes[0] + 1].strip() if dashes and dashes[0] + 1 < len(lines) else "?"
        if first.startswith("["):  # a source stored as a list of lines is previewed as that list's repr
            try:
                first = next((ln.strip() for ln in literal_eval(first) if ln.strip()), first)
            except (ValueError, SyntaxError, TypeError, AttributeError):
                pass
        limit = f"{timeout:g} s" if timeout else "the limit"
        return f"a cell ran longer than the per-cell timeout ({limit}; --timeout); the cell begins: {first!r}"
    if name == "DeadKernelError":
        return f"the notebook's kernel died (out of memory or killed?): {exc}"
    if name == "KilledWorker":
        return f"the Dask worker process running this notebook died (killed, out of memory or crashed): {exc}"
    if is_enospc(exc):
        where = f" writing {exc.filename}" if getattr(exc, "filename", None) else ""
        return f"disk full (no space left on device){where}; finished runs are kept: free space and re-run to resume"
    lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip("- \t")]
    return f"{name}: {lines[-1]}" if lines else name


def unavailable_reason(exc: BaseException) -> str | None:
    """The message of :class:`dpkit.data.DataUnavailableError` when ``exc`` is one (raised in this process, or in a
    notebook's kernel and reported by papermill), else ``None``: the run is then recorded as ``unavailable``."""
    from dpkit.data.errors import DataUnavailableError

    if isinstance(exc, DataUnavailableError):
        return str(exc)
    if type(exc).__name__ == "PapermillExecutionError" and getattr(exc, "ename", None) == DataUnavailableError.__name__:
        return str(getattr(exc, "evalue", "")) or DataUnavailableError.__name__
    return None


def check_writable(folder: str | os.PathLike) -> Path:
    """Create ``folder`` and write a probe file in it; raise the ``OSError`` naming the folder if that fails."""
    p = Path(folder)
    try:
        p.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=p, prefix=".write-test-"):
            pass
    except OSError as exc:
        raise type(exc)(exc.errno, f"output folder {p} is not writable: {exc.strerror or exc}", str(p)) from exc
    return p


def read_record(folder: Path) -> dict[str, Any] | None:
    """The folder's ``run.json`` as a dict (``None``: absent, unreadable or not a JSON object)."""
    try:
        info = json.loads((folder / "run.json").read_text())
    except (OSError, ValueError):
        return None
    return info if isinstance(info, dict) else None


def unfinished_reason(folder: Path, info: dict[str, Any] | None = None) -> str | None:
    """Why ``folder`` does not hold a finished run (``None``: it does).

    Finished: ``run.json`` says ``status: ok``, ``metrics.json`` is there, and the recorded parameters are those of
    the folder's key (:func:`key_problem`).
    """
    info = read_record(folder) if info is None else info
    if info is None:
        return "no readable run.json"
    if info.get("status") != "ok":
        return f"run {info.get('status')}"
    if not (folder / "metrics.json").is_file():
        return "finished run wrote no metrics.json"
    return key_problem(folder, info)


def is_done(folder: Path) -> bool:
    """Whether ``folder`` holds a finished run (:func:`unfinished_reason`); only such a run is skipped as done."""
    return unfinished_reason(folder) is None


def _metrics_id(path: Path) -> tuple[int, int, int] | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return st.st_ino, st.st_mtime_ns, st.st_size


def _rename_in_notebook(executed: Path, tmp: str, final: str) -> None:
    """Name the run's final folder in the executed notebook (parameters cell, papermill metadata, printed paths).

    The temporary folder's name (``.<key>.tmp-<random>``) occurs nowhere else, so a plain replacement of its
    JSON-encoded form is exact. Best effort: a notebook that cannot be rewritten keeps the temporary name.
    """
    enc = (json.dumps(tmp)[1:-1], json.dumps(final)[1:-1])
    try:
        text = executed.read_text()
        if enc[0] in text:
            tmp_file = executed.with_name(f".{executed.name}.{uuid.uuid4().hex[:8]}")
            tmp_file.write_text(text.replace(enc[0], enc[1]))
            os.replace(tmp_file, executed)
    except OSError:
        pass


# --------------------------------------------------------------------------- one notebook
#: The parameters that carry a run's adoption policy to a notebook that declares ``CHECKPOINT_DIR``
#: (:func:`execute_notebook`; ``run_cells(adopt=CHECKPOINT_ADOPT, verify_reps=CHECKPOINT_VERIFY_REPS)``).
ADOPTION_PARAMETERS = ("CHECKPOINT_ADOPT", "CHECKPOINT_VERIFY_REPS")


def _adoption_parameters(nb: Path, declared: Mapping[str, Any], *, adopt: bool,
                         verify_reps: int | None) -> dict[str, Any]:
    """The values of :data:`ADOPTION_PARAMETERS` for a run of ``nb`` that keeps its repetitions (``{}`` without
    ``adopt``: the notebook's defaults, no adoption); a notebook that cannot be told is a
    :class:`~dpkit.batch.manifest.NotebookParameterError` naming it and the missing parameters."""
    from dpkit.experiments.adoption import verify_reps_switch

    reps = verify_reps_switch(verify_reps)
    if not adopt:
        return {}
    missing = [n for n in ADOPTION_PARAMETERS if n not in declared]
    if missing:
        raise NotebookParameterError(f"{nb.name} declares CHECKPOINT_DIR but not {' and '.join(missing)}, so its "
                                     "kept repetitions cannot be adopted (--stale verify); declare "
                                     "CHECKPOINT_ADOPT: bool = False and CHECKPOINT_VERIFY_REPS: int = 2 and pass "
                                     "them to run_cells(adopt=..., verify_reps=...)")
    return {"CHECKPOINT_ADOPT": True, "CHECKPOINT_VERIFY_REPS": reps}


def _kernel_manager_class(overrides: dict[str, str | None]) -> type:
    """A kernel manager class whose kernels start with this process's environment (as it is when the kernel starts)
    changed by ``overrides`` (``None``: removed), without changing this process's environment."""
    from jupyter_client.manager import AsyncKernelManager

    class KernelManager(AsyncKernelManager):
        async def start_kernel(self, **kw: Any) -> None:  # restarts reuse the environment of the first start
            if "env" not in kw:
                kw["env"] = {k: v for k, v in {**os.environ, **overrides}.items() if v is not None}
            await super().start_kernel(**kw)

    return KernelManager


def execute_notebook(
    notebook: str | os.PathLike,
    output_dir: str | os.PathLike,
    *,
    parameters: dict[str, Any] | None = None,
    kernel_name: str | None = None,
    timeout: int | None = 3600,
    progress: bool = False,
    final_dir: str | os.PathLike | None = None,
    checkpoint_dir: str | os.PathLike | None = None,
    adopt: bool = False,
    verify_reps: int | None = None,
    environ: Mapping[str, str | None] | None = None,
) -> Path:
    """Execute ``notebook`` headlessly into ``output_dir`` and return the executed copy's path.

    ``parameters`` are checked against the notebook's parameters cell (raises
    :class:`~dpkit.batch.manifest.NotebookParameterError` before anything runs), then injected
    with ``INTERACTIVE=False`` (unless given) and ``OUTPUT_DIR=output_dir``. Raises
    :class:`papermill.PapermillExecutionError` (naming the failing cell) if a cell fails;
    ``run.json`` in ``output_dir`` records the status either way (``unavailable``, with the reason as ``error``,
    when the cell raised :class:`dpkit.data.DataUnavailableError`: :func:`unavailable_reason`), with ``OUTPUT_DIR`` =
    ``final_dir`` when the run executes into a temporary folder that is renamed afterwards.

    ``checkpoint_dir`` is injected as ``CHECKPOINT_DIR`` when the notebook declares that parameter: a folder
    outside the run's temporary one where the notebook keeps its finished repetitions
    (:mod:`dpkit.experiments.checkpoint`), so that a run interrupted by a timeout, a dead kernel or a
    killed machine resumes there. The folder records the fingerprints of the notebook and of dpkit's sources;
    one written by another version of either raises :class:`StaleCheckpointError` before anything runs, unless
    ``adopt`` (:func:`open_checkpoint`).

    With ``adopt``, the notebook gets ``CHECKPOINT_ADOPT=True`` and ``CHECKPOINT_VERIFY_REPS=verify_reps`` (default
    2, the lowest and the highest: :func:`~dpkit.experiments.adoption.verify_reps_switch`), parameters like its
    folder, which it passes to ``run_cells``; they are not part of the run's recorded parameters (its key). The
    kernel's environment is this process's, changed by ``environ`` (variables to set, ``None``: to remove; the
    batch runner's thread share, :func:`~dpkit.core.threads.thread_environ`) for this kernel only: this process's
    environment is not changed, so that runs executed in this process at the same time or later are not affected.
    """
    import papermill as pm

    nb = Path(notebook)
    if not nb.is_file():
        raise FileNotFoundError(f"notebook not found: {nb}")
    check_parameters(nb, dict(parameters or {}), source=f"parameters of {nb.name}")
    fingerprint = notebook_fingerprint(nb)
    out = Path(output_dir).resolve()
    out.mkdir(parents=True, exist_ok=True)
    params = {"INTERACTIVE": False, **dict(parameters or {}), "OUTPUT_DIR": str(out)}
    policy: dict[str, Any] = {}  # the run's adoption policy: injected, not recorded (not what the run computes)
    declared = declared_parameters(nb)
    if checkpoint_dir is not None and "CHECKPOINT_DIR" in declared:
        policy = _adoption_parameters(nb, declared, adopt=adopt, verify_reps=verify_reps)
        params["CHECKPOINT_DIR"] = str(open_checkpoint(checkpoint_dir, fingerprint, adopt=adopt))
    executed = out / nb.name
    metrics = out / "metrics.json"
    earlier = _metrics_id(metrics)  # a metrics.json already in the folder is an earlier run's, not this attempt's
    t0 = time.perf_counter()
    os.environ.setdefault("MPLBACKEND", "Agg")
    status, error = "running", None
    try:
        # the kernel runs on loopback only; its "running over TCP without encryption" log line is silenced
        # (kernel log level ERROR), errors and tracebacks still come through
        pm.execute_notebook(str(nb), str(executed), parameters={**params, **policy}, kernel_name=kernel_name or "python3",
                            cwd=str(nb.resolve().parent), progress_bar=progress, execution_timeout=timeout, log_output=False,
                            extra_arguments=["--IPKernelApp.log_level=ERROR"],
                            kernel_manager_class=_kernel_manager_class(dict(environ or {})))
        written = _metrics_id(metrics)
        if written is None or written == earlier:
            raise NoMetricsError("the notebook ran to its end but wrote no metrics.json into its OUTPUT_DIR"
                                 + (f" ({Path(final_dir or out) / 'metrics.json'} is an earlier run's)" if written else ""))
        status = "ok"
    except BaseException as exc:
        unavailable = unavailable_reason(exc)
        status, error = (UNAVAILABLE, unavailable) if unavailable else ("failed", failure_message(exc, timeout))
        raise
    finally:
        recorded = {**params, "OUTPUT_DIR": str(Path(final_dir).resolve()) if final_dir else str(out)}
        if recorded["OUTPUT_DIR"] != str(out):
            _rename_in_notebook(executed, str(out), recorded["OUTPUT_DIR"])
        try:
            write_json(out / "run.json", {"notebook": str(nb), "parameters": recorded, "key": run_key(nb, recorded),
                                          "status": status, "error": error,
                                          "wall_time_s": time.perf_counter() - t0, "python": sys.executable,
                                          "notebook_sha256": fingerprint})
        except OSError:
            if status == "ok":  # a run without its record is not finished; a failing run keeps its own error
                raise
    return executed
