"""Reading a batch output back: every run, every failure, every unreadable file.

:func:`scan_runs` walks ``<output>/<notebook>/<key>/`` and returns the runs it could read and a list of
:class:`Problem` (failed runs, unreadable ``run.json``/``metrics.json``, a finished run without ``metrics.json``, a
folder holding another key's run), each naming its path; :func:`collect` merges the runs' tables. The commands that
read a batch exit non-zero on any problem, so a batch with failed runs never looks complete downstream. A run
recorded as :data:`UNAVAILABLE` (data documented as possibly missing offline) is listed by
:func:`unavailable_in_scanned_runs`, not a problem.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from dpkit.batch.manifest import NOT_IN_KEY, run_key

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["UNAVAILABLE", "Problem", "Unavailable", "BatchRunRecord", "read_json", "read_metrics_json", "is_run_key",
           "key_problem", "scan_runs", "as_unavailable", "unavailable_in_scanned_runs", "collect", "write_all"]

#: ``run.json`` status of a run whose data sets are all documented as possibly unavailable offline and are not on
#: this machine (:class:`dpkit.data.DataUnavailableError` in its notebook): recorded with the reason, no rows.
UNAVAILABLE = "unavailable"


@dataclass(frozen=True)
class Problem:
    """Something downstream commands must not hide: a path and what is wrong with it."""

    path: Path
    reason: str

    def __str__(self) -> str:
        return f"{self.path}: {self.reason}"


@dataclass(frozen=True)
class Unavailable:
    """A run recorded as :data:`UNAVAILABLE`: its folder, the data sets it asked for and the reason."""

    path: Path
    datasets: list[str]
    reason: str

    def __str__(self) -> str:
        return f"{self.path}: data set(s) {', '.join(self.datasets) or '?'} unavailable here: {self.reason}"


@dataclass(frozen=True)
class BatchRunRecord:
    """One run folder as read back: its ``run.json`` and ``metrics.json`` (empty if absent)."""

    folder: Path
    info: dict[str, Any]
    metrics: dict[str, Any] = field(default_factory=dict)


def read_json(path: Path) -> tuple[Any, Problem | None]:
    """``(parsed, None)``, or ``(None, Problem)`` naming the file when it cannot be read or parsed."""
    try:
        return json.loads(path.read_text()), None
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        return None, Problem(path, f"unreadable {path.name}: {type(exc).__name__}: {exc}")


def read_metrics_json(path: Path) -> tuple[dict[str, Any], Problem | None]:
    """``(metrics, None)``, or ``({}, Problem)`` naming the file when it is unreadable or not of the metrics shape.

    The shape :mod:`dpkit.outputs.report` writes: a JSON object whose ``checks`` and ``table`` (when present) are
    lists of objects.
    """
    metrics, bad = read_json(path)
    if bad is not None:
        return {}, bad
    if not isinstance(metrics, dict):
        return {}, Problem(path, "metrics.json is not a JSON object")
    for key in ("checks", "table"):
        value = metrics.get(key)
        if value is not None and not (isinstance(value, list) and all(isinstance(r, dict) for r in value)):
            return {}, Problem(path, f"metrics.json: {key!r} must be a list of objects, got {type(value).__name__}"
                               + (" holding non-objects" if isinstance(value, list) else ""))
    return metrics, None


def is_run_key(name: str) -> bool:
    """A batch run folder's name: 12 lower-case hex digits (:func:`dpkit.batch.run_key`)."""
    return len(name) == 12 and all(ch in "0123456789abcdef" for ch in name)


def key_problem(folder: Path, info: dict[str, Any]) -> str | None:
    """Why the run recorded in ``folder/run.json`` (``info``) is not the run of that folder's key (``None``: it is).

    The key is the hash of the recorded notebook name and parameters (:func:`~dpkit.batch.manifest.run_key`); it
    must equal the ``key`` the record names (when it names one) and the folder's name when that is a run key
    (a batch run folder ``<output>/<notebook stem>/<key>``).
    """
    params = info.get("parameters")
    if not isinstance(params, dict):
        return "run.json records no parameters object, so whose run this is cannot be told"
    notebook = str(info.get("notebook") or f"{folder.parent.name}.ipynb")
    actual = run_key(notebook, params)
    claimed = [("its run.json key", str(info["key"]))] if info.get("key") is not None else []
    if is_run_key(folder.name):
        claimed.append(("its folder", folder.name))
    for what, key in claimed:
        if key != actual:
            shown = json.dumps({k: v for k, v in sorted(params.items()) if k not in NOT_IN_KEY}, default=str)
            return (f"holds a run of other parameters: run.json records {Path(notebook).name} with {shown} (key {actual}) "
                    f"but {what} is {key}; it is not that key's run (move it away, or run the batch with --stale rerun "
                    "to move it to .superseded/)")
    return None


def failure_reason(info: dict[str, Any]) -> str:
    """The one-line reason a run failed, from its ``run.json``."""
    err = str(info.get("error") or "").strip().splitlines()
    return f"run {info.get('status')}" + (f": {err[-1]}" if err else "")


def _read_run(folder: Path, problems: list[Problem]) -> BatchRunRecord | None:
    info, bad = read_json(folder / "run.json")
    if bad is not None or not isinstance(info, dict):
        problems.append(bad or Problem(folder / "run.json", "run.json is not a JSON object"))
        return None
    if not isinstance(info.get("parameters") or {}, dict):
        problems.append(Problem(folder / "run.json", "run.json: 'parameters' must be an object"))
        return None
    if info.get("status") not in ("ok", UNAVAILABLE):
        problems.append(Problem(folder, failure_reason(info)))
    mj = folder / "metrics.json"
    metrics: Any = {}
    if mj.is_file():
        metrics, bad = read_metrics_json(mj)
        if bad is not None:
            problems.append(bad)
    elif info.get("status") == "ok":
        problems.append(Problem(folder, "finished run wrote no metrics.json"))
    if info.get("status") == "ok":
        wrong = key_problem(folder, info)
        if wrong is not None:  # another key's run: its rows are not this folder's
            problems.append(Problem(folder, wrong))
            return None
    return BatchRunRecord(folder, info, metrics)


def scan_runs(output: str | os.PathLike) -> tuple[list[BatchRunRecord], list[Problem]]:
    """Every run below a batch output folder and every problem found on the way.

    Raises :class:`FileNotFoundError` if ``output`` is not a folder. Temporary folders (``.*``)
    are skipped; a run folder (12-hex name) without ``run.json`` is a problem, and so is a folder
    holding no run at all, and every run the last batch listed in ``batch.json`` that has no
    folder (it failed before it had one, or was not started on a full disk).
    """
    root = Path(output)
    if not root.is_dir():
        raise FileNotFoundError(f"results folder not found (or not a folder): {root}")
    runs: list[BatchRunRecord] = []
    problems: list[Problem] = []
    for folder in sorted(p for p in root.glob("*/*") if p.is_dir()):
        if folder.name.startswith(".") or folder.parent.name.startswith("."):
            continue
        if not (folder / "run.json").is_file():
            if is_run_key(folder.name):
                problems.append(Problem(folder, "run folder without run.json"))
            continue
        rec = _read_run(folder, problems)
        if rec is not None:
            runs.append(rec)
    problems.extend(_lost_runs(root))
    if not runs and not problems:
        problems.append(Problem(root, "no batch runs found (expected <notebook>/<key>/run.json)"))
    return runs, problems


def as_unavailable(folder: Path, info: dict[str, Any]) -> Unavailable | None:
    """The :class:`Unavailable` record of a run whose ``run.json`` (``info``) says :data:`UNAVAILABLE`, else ``None``."""
    if info.get("status") != UNAVAILABLE:
        return None
    names = (info.get("parameters") or {}).get("DATASETS")
    datasets = [str(x) for x in names] if isinstance(names, list) else []
    return Unavailable(folder, datasets, str(info.get("error") or "").strip() or "no reason recorded")


def unavailable_in_scanned_runs(runs: list[BatchRunRecord]) -> list[Unavailable]:
    """The runs of ``runs``, already scanned (:func:`scan_runs`), recorded as :data:`UNAVAILABLE`, with their data sets
    and reasons (:func:`dpkit.batch.assemble.unavailable_runs_in_output` reads a batch output folder's runs)."""
    return [u for rec in runs if (u := as_unavailable(rec.folder, rec.info)) is not None]


def _lost_runs(root: Path) -> list[Problem]:
    """Runs the last batch (``batch.json``) recorded that have no folder: failed before they had one, not started.

    A run whose folder exists is judged by its own ``run.json`` instead (finished, failed or missing).
    """
    bj = root / "batch.json"
    if not bj.is_file():
        return []
    info, bad = read_json(bj)
    if bad is not None:
        return [bad]
    entries = info.get("runs") if isinstance(info, dict) else None
    if not isinstance(entries, list):
        return [Problem(bj, "batch.json has no list 'runs'")]
    lost = []
    for r in entries:
        if not isinstance(r, dict) or not is_run_key(str(r.get("key", ""))):
            lost.append(Problem(bj, f"batch.json lists a run without a valid key: {r!r}"))
            continue
        folder = root / Path(str(r.get("notebook", ""))).stem / str(r["key"])
        if not folder.exists():
            err = str(r.get("error") or "").strip().splitlines()
            lost.append(Problem(folder, f"run listed in batch.json as {r.get('status')} has no folder"
                                + (f": {err[-1]}" if err else "")))
    return lost


def _rows(runs: list[BatchRunRecord], section: str) -> list[dict[str, Any]]:
    rows = []
    for rec in runs:
        params = {f"param_{k}": (json.dumps(v) if isinstance(v, (list, dict)) else v)
                  for k, v in (rec.info.get("parameters") or {}).items() if k != "OUTPUT_DIR"}
        ident = {"run_notebook": Path(str(rec.info.get("notebook", ""))).stem, "run_key": rec.folder.name,
                 "run_status": rec.info.get("status"), **params}
        rows.extend({**ident, **r} for r in (rec.metrics.get(section) or []))
    return rows


def write_all(files: list[tuple[Path, Callable[[Path], None]]]) -> None:
    """Write each ``(path, write)`` through ``write(temporary sibling path)``, then rename them all into place.

    An unwritable folder, a full disk, a folder in the way of a file or a failing writer leaves none of the files
    half-written: an ``OSError`` naming the folder (or the path in the way) is raised before any rename.
    """
    import uuid

    written: list[tuple[Path, Path]] = []
    where = files[0][0].parent if files else Path(".")
    try:
        for final, write in files:
            where = final.parent
            final.parent.mkdir(parents=True, exist_ok=True)
            written.append((final.with_name(f".{final.name}.{uuid.uuid4().hex[:8]}"), final))
            write(written[-1][0])
        for _tmp, final in written:  # a folder in the way would fail half-way through the renames: checked first
            if final.is_dir():
                where = final
                raise IsADirectoryError(21, "a folder is in the way", str(final))
        for tmp, final in written:
            os.replace(tmp, final)
    except OSError as exc:
        raise OSError(exc.errno, f"cannot write {', '.join(f.name for f, _ in files)} into {where}: "
                                 f"{exc.strerror or exc}; nothing was written", str(where)) from exc
    finally:
        for tmp, _final in written:
            tmp.unlink(missing_ok=True)


def _write_tables(stem: Path, table: pd.DataFrame, checks_df: pd.DataFrame, unavailable: pd.DataFrame) -> None:
    """``<stem>.csv``/``<stem>_checks.csv``/``<stem>_unavailable.csv`` (and parquet when pyarrow is there), all or
    none (:func:`write_all`)."""
    files: list[tuple[Path, Callable[[Path], None]]] = [
        (Path(f"{stem}.csv"), lambda p: table.to_csv(p, index=False)),
        (Path(f"{stem}_checks.csv"), lambda p: checks_df.to_csv(p, index=False)),
        (Path(f"{stem}_unavailable.csv"), lambda p: unavailable.to_csv(p, index=False))]
    try:
        import pyarrow  # noqa: F401

        for df, suffix in ((table, ""), (checks_df, "_checks")):
            files.append((Path(f"{stem}{suffix}.parquet"), lambda p, df=df: df.astype(
                {c: str for c in df.columns if df[c].dtype == object}).to_parquet(p, index=False)))
    except ImportError:
        pass
    write_all(files)


def collect(output: str | os.PathLike, *, out: str | os.PathLike | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Merge every run's ``metrics.json`` table rows (and checks) into two DataFrames.

    Writes ``<out>.csv`` / ``<out>_checks.csv`` (and ``.parquet`` when pyarrow is there),
    default ``<output>/collected``. Each row carries ``run_notebook``, ``run_key``,
    ``run_status`` and the run's parameters as ``param_<NAME>``. Both frames carry the
    :class:`Problem` list of :func:`scan_runs` in ``.attrs["problems"]`` and the runs recorded as
    unavailable (:func:`unavailable_in_scanned_runs`, also written to ``<out>_unavailable.csv``) in
    ``.attrs["unavailable"]``; raises
    :class:`FileNotFoundError` when ``output`` is not a folder.
    """
    import pandas as pd

    runs, problems = scan_runs(output)
    table, checks_df = pd.DataFrame(_rows(runs, "table")), pd.DataFrame(_rows(runs, "checks"))
    stem = Path(out) if out else Path(output) / "collected"
    unavailable = unavailable_in_scanned_runs(runs)
    _write_tables(stem, table, checks_df, pd.DataFrame(
        [{"run_folder": str(u.path), "datasets": ",".join(u.datasets), "reason": u.reason} for u in unavailable],
        columns=["run_folder", "datasets", "reason"]))
    for df in (table, checks_df):
        df.attrs["problems"] = list(problems)
        df.attrs["unavailable"] = list(unavailable)
    return table, checks_df
