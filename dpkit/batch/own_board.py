"""A board of its own: every board method on your data set, with the published board's protocol and statistics.

:func:`prepare_own_board` loads the data set (:func:`dpkit.data.load`), checks it is within the board's range
(:func:`dpkit.data.spec.check_board_shape`), writes a manifest of notebook 45 with the published board's protocol,
and :func:`run_own_board` runs it with the batch runner (:func:`~dpkit.batch.runner.run_manifest`: resumable) and
assembles it with the leaderboard's assembler (:func:`~dpkit.batch.assemble.assemble_leaderboard`), all in a folder of
its own, never the published board. The board ranks the methods; it has no thesis verdicts. The user guide is
docs/guide/own-data.md ("A board of its own").

Errors: a second run on changed data (another fingerprint) is refused naming both fingerprints unless ``replace``; a
data set that does not load or lies outside the board's range is one line naming it.
"""
from __future__ import annotations

import datetime as _dt
import json
import os
import shutil
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from dpkit.batch.manifest import BatchError

__all__ = ["OwnBoardError", "OwnBoard", "prepare_own_board", "run_own_board", "SIGMAS",
           "DATA_NAME", "MANIFEST_NAME"]

#: the published board's σ's
SIGMAS = (2.0, 4.0, 6.0, 8.0, 10.0)
DATA_NAME = "data.json"
MANIFEST_NAME = "manifest.yaml"


class OwnBoardError(BatchError, ValueError):
    """A board of its own cannot start: the data set, its range, its output folder (the message names it)."""


@dataclass
class OwnBoard:
    """A prepared board of its own (:func:`prepare_own_board`), run by :func:`run_own_board`."""

    data: str
    name: str
    out: Path
    manifest: Path
    fingerprint: dict[str, Any]
    provenance: dict[str, Any]
    runs: list[dict[str, Any]] = field(default_factory=list)
    files: dict[str, str] = field(default_factory=dict)


def _notebook() -> Path:
    from dpkit.core.paths import repo_root

    root = repo_root()
    nb = None if root is None else root / "notebooks" / "45_leaderboard.ipynb"
    if nb is None or not nb.is_file():
        raise OwnBoardError(f"notebook 45_leaderboard.ipynb not found ({nb}); a board runs from a dpkit checkout")
    return nb


def _argument(data: str) -> str:
    from dpkit.data.spec import is_spec_path

    if is_spec_path(data):
        return str(Path(data).expanduser().resolve())
    return data


def _sigmas(sigmas: Sequence[float]) -> list[float]:
    out = []
    for s in sigmas:
        try:
            v = float(s)
        except (TypeError, ValueError):
            raise OwnBoardError(f"sigma {s!r} is not a number") from None
        if not (v > 0 and v < float("inf")):
            raise OwnBoardError(f"sigma must be positive and finite; got {s!r}")
        out.append(v)
    if not out or len(set(out)) != len(out):
        raise OwnBoardError(f"sigmas must be a non-empty list of distinct values; got {list(sigmas)!r}")
    return out


def prepare_own_board(data: str, *, out: str | os.PathLike | None = None, sigmas: Sequence[float] = SIGMAS,
                      reps: int = 30, n_queries: int = 10000, aim: bool = False, quick: bool = False,
                      replace: bool = False) -> OwnBoard:
    """Everything checked before anything runs: the data set loads, is within the board's range, the output folder
    holds no runs of other data; the manifest is written.

    Parameters
    ----------
    data : str
        A spec file's path, an entry point's name (group ``dpkit.datasets``) or a registry code.
    out : path, optional
        The board's folder (default ``results/board-<name>``, ``results/board-<name>-quick`` with ``quick``).
    sigmas : sequence of float
        The kernel widths (default the published board's five).
    reps, n_queries : int
        Repetitions per cell (default 30) and queries per repetition (default 10⁴), as the published board.
    aim : bool
        Also AIM (registered ``"aim"``, suite ``"slow"``), in a run of its own as ``leaderboard_aim.yaml``.
    quick : bool
        Notebook 45's QUICK mode (the first σ, 4 repetitions, 300 queries): tests and a first look.
    replace : bool
        Runs of other data in ``out`` are moved to ``out/.superseded/`` instead of refused.

    Raises
    ------
    OwnBoardError
        The data set does not load (the loader's message), is outside the board's range, or ``out`` holds runs of
        other data.
    """
    from dpkit.core.paths import results_dir
    from dpkit.core.validation import check_int_in_range
    from dpkit.data import load
    from dpkit.data.errors import DataError
    from dpkit.data.spec import check_board_shape, data_fingerprint

    reps = check_int_in_range(reps, name="reps", low=2)
    n_queries = check_int_in_range(n_queries, name="n_queries", low=1)
    sig = _sigmas(sigmas)
    arg = _argument(data)
    notebook = _notebook()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            ds = load(arg)
        except (DataError, ValueError, TypeError, OSError) as exc:
            raise OwnBoardError(f"data set {data}: {type(exc).__name__}: {exc}") from exc
    try:
        check_board_shape(ds, where=f"data set {data}")
    except ValueError as exc:
        raise OwnBoardError(str(exc)) from None
    folder = Path(out) if out else results_dir() / (f"board-{ds.name}" + ("-quick" if quick else ""))
    folder = folder.resolve()
    fp = data_fingerprint(ds)
    prov = {"argument": arg, "fingerprint": fp, "provenance": json.loads(json.dumps(dict(ds.provenance), default=str)),
            "load_warnings": [f"{w.category.__name__}: {w.message}" for w in caught]}
    old = folder / DATA_NAME
    if old.is_file():
        try:
            before = json.loads(old.read_text()).get("fingerprint", {}).get("sha256")
        except (OSError, ValueError, AttributeError) as exc:
            raise OwnBoardError(f"{old} is unreadable ({exc}); remove it or pass --replace") from exc
        if before != fp["sha256"]:
            if not replace:
                raise OwnBoardError(f"{folder} holds a board of other data (fingerprint {before}, now {fp['sha256']}: "
                                    "another file, spec or bounds); its runs would be mixed with new ones. Pass "
                                    "--replace (REPLACE=1) to move them to .superseded/ and start afresh")
            stamp = _dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
            aside = folder / ".superseded" / stamp
            aside.mkdir(parents=True)
            for item in folder.iterdir():
                if item.name != ".superseded":
                    shutil.move(str(item), str(aside / item.name))
    folder.mkdir(parents=True, exist_ok=True)
    defaults = {"QUICK": bool(quick), "SEED": 0, "REPS": reps, "N_QUERIES": n_queries}
    runs: list[dict[str, Any]] = [{"notebook": str(notebook), "grid": {"DATASETS": [[arg]], "SIGMAS": [sig]}}]
    if aim:
        runs.append({"notebook": str(notebook), "parameters": {"METHODS": ["aim"], "REP_WORKERS": 2},
                     "grid": {"DATASETS": [[arg]], "SIGMAS": [sig]}})
    manifest = {"name": f"board-{ds.name}", "output": "batch", "defaults": defaults, "runs": runs}
    head = (f"# A board of its own on {ds.name} ({data}), written by `python -m dpkit.batch board`; run again with the\n"
            "# same command (finished runs and kept repetitions are reused while the data's fingerprint is the same).\n")
    (folder / MANIFEST_NAME).write_text(head + yaml.safe_dump(manifest, sort_keys=False, allow_unicode=True))
    (folder / DATA_NAME).write_text(json.dumps(prov, indent=2, sort_keys=True, default=str) + "\n")
    return OwnBoard(data=data, name=ds.name, out=folder, manifest=folder / MANIFEST_NAME, fingerprint=fp,
                    provenance=prov)


def run_own_board(board: OwnBoard, *, scheduler: str = "local", workers: int | None = None, timeout: int = 7200,
                  progress: bool | None = None, on_stale: str = "error", verify_reps: int | None = None) -> OwnBoard:
    """Run the prepared board's manifest, assemble it and write ``records.parquet`` and ``provenance.json`` (with the
    data set's fingerprint and provenance under ``data``) into the board's folder.

    ``on_stale`` and ``verify_reps`` are the runner's (:func:`~dpkit.batch.runner.run_manifest`): what becomes of the
    finished runs and kept repetitions of a board made by an older notebook or dpkit (``"error"``, the default: the
    runner's :class:`~dpkit.batch.runner.StaleRunsError` naming them, before anything runs; ``"rerun"``, ``"keep"``,
    ``"verify"``).

    Raises
    ------
    OwnBoardError
        A run failed (each named, with its folder): nothing is assembled.
    """
    from dpkit.batch.assemble import assemble_leaderboard
    from dpkit.batch.runner import run_manifest
    from dpkit.board.records import RECORDS_NAME, BoardFileError, read_records, write_provenance, write_records
    from dpkit.core.published import PROVENANCE_NAME, read_provenance

    results = run_manifest(board.manifest, scheduler=scheduler, workers=workers, timeout=timeout, progress=progress,
                           on_stale=on_stale, **({"verify_reps": verify_reps} if verify_reps is not None else {}))
    board.runs = [{k: r.get(k) for k in ("status", "key", "folder", "error")} for r in results]
    bad = [r for r in results if r["status"] not in ("ok", "skipped")]
    if bad:
        raise OwnBoardError("run(s) did not finish, nothing assembled: " + "; ".join(
            f"{r['status']} {r.get('key')}: {r.get('error')} ({r.get('folder')})" for r in bad))
    batch = board.out / "batch"
    info = assemble_leaderboard(str(batch), out=str(board.out / "assembled"))
    if info["records_missing"]:
        raise OwnBoardError("run(s) without records, not assembled: " + "; ".join(map(str, info["records_missing"])))
    assembled = Path(info["out"])
    records = read_records(assembled / RECORDS_NAME)
    prov = read_provenance(assembled / RECORDS_NAME, what="the board", error=BoardFileError)
    prov["data"] = {board.name: board.provenance}
    write_records(records, board.out / RECORDS_NAME, replace=True)
    write_provenance(prov, board.out / PROVENANCE_NAME, replace=True)
    board.files = {"records": str(board.out / RECORDS_NAME), "provenance": str(board.out / PROVENANCE_NAME),
                   "assembled": str(assembled), "headline": info["headline"]}
    return board
