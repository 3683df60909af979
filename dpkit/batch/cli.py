"""The command line of the batch layer: ``notebook``, ``run``, ``status``, ``collect`` (:mod:`dpkit.batch.runner`),
``board-add`` (:func:`dpkit.board.add.board_add`), ``board-refresh`` (:mod:`dpkit.board.refresh`) and ``board``
(:mod:`dpkit.batch.own_board`).

Every command names a failure in one line and exits non-zero: 1 when something ran and failed (a run, a verdict, a
refuted or over-spending entrant), 2 when it could not start; the statuses in full are in docs/guide/batch.md.
``notebook`` executes into a temporary folder and renames it into place; a finished run is replaced only when asked,
and then moved whole to ``.superseded/``, never deleted.
"""
from __future__ import annotations

import argparse
import os
import shutil
import sys
import time
import uuid
from pathlib import Path
from typing import Any

from dpkit.batch.execute import (
    check_writable,
    execute_notebook,
    failure_message,
    kept_repetitions,
    read_record,
    record_checkpoint,
    refused_adoption,
    remove_checkpoint,
    unavailable_reason,
)
from dpkit.batch.locks import RunLock, make_temporary, mark_temporary, stale_folders, unmark
from dpkit.batch.manifest import BatchError, check_parameters, parse_value
from dpkit.batch.results import UNAVAILABLE, collect, is_run_key
from dpkit.batch.runner import run_manifest
from dpkit.batch.stale import STALE_POLICIES, confirm_adopted, handle_stale_checkpoint, move_aside
from dpkit.board.add import QUICK_REPS
from dpkit.experiments.adoption import DEFAULT_VERIFY_REPS

__all__ = ["main", "parse_params"]


def parse_params(pairs: list[list[str]]) -> dict[str, Any]:
    """``-p NAME VALUE`` pairs as a dict (VALUE as YAML 1.2); a name given twice is an error."""
    params: dict[str, Any] = {}
    for name, text in pairs:
        if name in params:
            raise BatchError(f"-p {name} given twice ({params[name]!r} and {text!r})")
        params[name] = parse_value(text, name=name)
    return params


def _unexpected(metrics_path: Path) -> list[str]:
    from dpkit.outputs.report import read_metrics

    m = read_metrics(metrics_path)
    return [c["id"] for c in m.get("checks", []) if c["verdict"] != c["expected"]]


def _superseded(out: Path) -> Path:
    """Move the run in ``out`` whole to ``.superseded/`` (of the batch output for a batch run folder
    ``<output>/<stem>/<key>``, else of ``out``'s parent); return where it went."""
    if is_run_key(out.name):
        return move_aside(out, out.parent.parent, out.parent.name, out.name)
    return move_aside(out, out.parent, "", out.name)


def _in_place(tmp: Path, out: Path) -> Path | None:
    """Rename the attempt ``tmp`` to ``out``; a finished run there is moved to ``.superseded/`` (returned), an
    earlier failed attempt (or an empty folder) is removed."""
    unmark(tmp)
    moved = old = None
    if out.exists():
        info = read_record(out)
        if info is not None and info.get("status") == "ok":
            moved = _superseded(out)
        else:
            old = out.parent / f".{out.name}.old-{uuid.uuid4().hex[:8]}"
            os.replace(out, old)
            mark_temporary(old)
    os.replace(tmp, out)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)
    return moved


def _check_output(out: Path, replace: bool) -> None:
    """Refuse an ``--output`` folder holding files but no run, or a finished run (unless ``replace``)."""
    if not out.is_dir():
        return
    info = read_record(out)
    if info is None and any(out.iterdir()):
        raise BatchError(f"--output {out} holds files but no run (no readable run.json); choose a new or empty folder")
    if info is not None and info.get("status") == "ok" and not replace:
        raise BatchError(f"--output {out} holds a finished run; pass --replace to move it whole to .superseded/ and run "
                         "again, or choose another --output")


def _notebook(args: argparse.Namespace) -> int:
    from dpkit.data.spec import absolute_spec_paths

    params = absolute_spec_paths(parse_params(args.param), Path.cwd())  # the notebook runs in its own folder
    check_parameters(args.notebook, params, source=f"-p for {Path(args.notebook).name}")
    out = Path(args.output).resolve()
    if out.exists() and not out.is_dir():
        raise BatchError(f"--output {out} is a file, not a folder")
    check_writable(out.parent)  # the run executes into a temporary folder beside it, then is renamed into place
    lock = RunLock(out.parent / f".{out.name}.lock")  # two runs into one folder would mix their files
    if not lock.acquire(wait=False):
        holder = lock.path.read_text(errors="replace").strip() if lock.path.is_file() else "another process"
        print(f"error: {out} is being written by another run ({holder}); wait for it or choose another --output",
              file=sys.stderr)
        return 2
    keep = out.parent / f".{out.name}.checkpoint"  # finished repetitions, for a notebook that declares CHECKPOINT_DIR
    adopt = args.stale == "verify"
    try:
        _check_output(out, args.replace)
        handle_stale_checkpoint(out, keep, Path(args.notebook), args.stale)  # before anything runs, as for `run`
        for p in stale_folders(out.parent, out.name):  # left by an interrupted attempt (we hold the lock)
            shutil.rmtree(p, ignore_errors=True)
        tmp = make_temporary(out.parent, out.name)
        resumed = kept_repetitions(keep)
        failure: Exception | None = None
        try:
            execute_notebook(args.notebook, tmp, parameters=params, progress=args.progress, timeout=args.timeout,
                             final_dir=out, checkpoint_dir=keep, adopt=adopt,
                             verify_reps=args.verify_reps or DEFAULT_VERIFY_REPS)
            record_checkpoint(tmp, keep, resumed)
        except BatchError:  # could not start (a stale checkpoint): nothing ran
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        except Exception as exc:  # the notebook failed: its record is put in place all the same
            failure = exc
        if adopt and not (failure is not None and refused_adoption(failure)):
            confirm_adopted(Path(args.notebook), keep)  # as `run` does: they count as current now
        moved = _in_place(tmp, out)
        if failure is None:
            remove_checkpoint(keep)  # the run finished: its results are in the output
    finally:
        lock.release()
    if moved is not None:
        print(f"the finished run that was in {out} is now in {moved}", file=sys.stderr)
    unavailable = unavailable_reason(failure) if failure is not None else None
    if unavailable:  # recorded as unavailable: not a failure unless --require-data
        print(f"UNAVAILABLE {args.notebook}: {unavailable} (recorded in {out / 'run.json'}; "
              + ("--require-data: a failure)" if args.require_data else "not a failure; --require-data makes it one)"),
              file=sys.stderr)
        return 1 if args.require_data else 0
    if failure is not None:  # say why, where the record is, exit 1
        kept = kept_repetitions(keep)
        print(f"FAILED {args.notebook}: {failure_message(failure, args.timeout)} (see {out / 'run.json'})"
              + (f"; {kept} finished repetition(s) are kept in {keep} and the same command resumes from them" if kept else ""),
              file=sys.stderr)
        return 1
    print(f"executed: {out / Path(args.notebook).name}")
    metrics = out / "metrics.json"
    if metrics.exists():
        try:
            bad = _unexpected(metrics)
        except (OSError, ValueError, KeyError, TypeError) as exc:
            print(f"FAILED {args.notebook}: unreadable {metrics}: {type(exc).__name__}: {exc}", file=sys.stderr)
            return 1
        print(f"metrics: {metrics} ({len(bad)} unexpected verdicts)")
        if bad:
            print("unexpected verdicts: " + ", ".join(bad))
            return 1
    return 0


def _run(args: argparse.Namespace) -> int:
    t0 = time.perf_counter()
    results = run_manifest(args.manifest, scheduler=args.scheduler, workers=args.workers, output=args.output,
                           timeout=args.timeout, progress=None, on_stale=args.stale,
                           verify_reps=args.verify_reps or DEFAULT_VERIFY_REPS)
    counts = {s: sum(r["status"] == s for r in results) for s in ("ok", "skipped", "failed", UNAVAILABLE)}
    print(f"batch: {len(results)} runs: {counts['ok']} ok, {counts['skipped']} skipped, {counts['failed']} failed"
          + (f", {counts[UNAVAILABLE]} unavailable" if counts[UNAVAILABLE] else "")
          + f" in {time.perf_counter() - t0:.1f} s")
    for r in results:
        if r["status"] == "failed":
            print(f"  FAILED {r['notebook']} {r['key']}: {r.get('error')}  ({r.get('folder')})")
        elif r["status"] == UNAVAILABLE:
            print(f"  UNAVAILABLE {r['notebook']} {r['key']}: {r.get('error')}  ({r.get('folder')})")
    if counts[UNAVAILABLE]:
        print(f"{counts[UNAVAILABLE]} run(s) recorded as unavailable: their data sets are documented as possibly "
              "unavailable offline and are not on this machine"
              + (" (--require-data: a failure)" if args.require_data else " (not a failure; --require-data makes it one)"))
    for r in results:  # a worker died under a run and Dask ran it again elsewhere: say so
        if r.get("interrupted"):
            print(f"  RERUN {r['notebook']} {r['key']}: {r['interrupted']}; this attempt: {r['status']}"
                  + (f" on {r['worker']}" if r.get("worker") else "") + f"  ({r.get('folder')})")
    shares = sorted({r["threads"] for r in results if r.get("threads")})
    if shares:
        print(f"threads per run (each Dask worker's share of its cores): {', '.join(map(str, shares))}")
    if any(r.get("disk_full") for r in results):
        print("the disk is full: no further runs were started; finished runs are kept. Free space and re-run to resume.",
              file=sys.stderr)
    return 1 if counts["failed"] or (args.require_data and counts[UNAVAILABLE]) else 0


def _collect(args: argparse.Namespace) -> int:
    table, checks = collect(args.output, out=args.out)
    problems = table.attrs.get("problems", [])
    print(f"collected {len(table)} table rows and {len(checks)} checks from {args.output}")
    unavailable = table.attrs.get("unavailable", [])
    if unavailable:
        print(f"{len(unavailable)} run(s) recorded as unavailable (data sets documented as possibly unavailable offline, "
              "not on this machine; no rows):")
        for u in unavailable:
            print(f"  {u}")
    if problems:
        print(f"{len(problems)} problem(s): failed runs and unreadable files (rows missing or marked failed):", file=sys.stderr)
        for p in problems:
            print(f"  {p}", file=sys.stderr)
        return 1
    return 0


def _status(args: argparse.Namespace) -> int:
    from dpkit.batch.status import batch_status, format_status

    statuses = batch_status(args.manifest, output=args.output)
    print(format_status(statuses))
    return 1 if any(s.state == "failed" for s in statuses) else 0


def _board_add(args: argparse.Namespace) -> int:
    """Run one entrant on the stored board's cells, rank it, write the updated copy (:func:`dpkit.board.add.board_add`;
    exit status: module docstring)."""
    from dpkit.board.add import outcome_text, prepare_board_add, run_board_add
    from dpkit.core.paths import results_dir

    out = args.out or results_dir() / "board"
    try:
        prep = prepare_board_add(args.method, board=args.board, out=out, quick=args.quick, gate=not args.no_gate,
                                 replace=args.replace)
    except (ValueError, FileNotFoundError) as exc:
        print(f"error: board-add {args.method}: {exc}", file=sys.stderr)
        return 2
    try:
        result = run_board_add(prep, workers=args.workers or 1, progress=args.progress)
    except Exception as exc:
        print(f"error: board-add {args.method} failed: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    print(outcome_text(result))
    return 0 if result.status == "ranked" else 1


def _board_refresh(args: argparse.Namespace) -> int:
    """Re-run named methods of a stored board with the current code, the others verified (:mod:`dpkit.board.refresh`);
    write the refreshed board with its provenance to ``--out``, assemble it, publish it with ``--publish``. Exit 2
    before any work (a name not on the board, existing files), 1 when the refresh is refused or fails."""
    from dpkit.batch.assemble import assemble_board_folder, check_publish, publish_board
    from dpkit.batch.board_files import refreshed_provenance
    from dpkit.board.records import PUBLISHED, RECORDS_NAME, BoardFileError, read_board, write_provenance, write_records
    from dpkit.board.refresh import RefreshRefusedError, refresh_plan, refresh_records, summary_text
    from dpkit.core.paths import results_dir
    from dpkit.core.published import PROVENANCE_NAME, read_provenance, refuse_overwrite

    label = f"board-refresh {' '.join(args.methods)}"
    board = Path(args.board) if args.board else PUBLISHED
    out = Path(args.out) if args.out else results_dir() / "board-refresh"
    targets = [out / RECORDS_NAME, out / PROVENANCE_NAME]
    try:
        if out.resolve() == board.parent.resolve():
            raise BoardFileError(f"--out {out} is the stored board's folder: a refresh writes a copy (publish it with "
                                 "--publish)")
        refuse_overwrite(targets, replace=args.replace, what="a refreshed board", error=BoardFileError)
        if args.publish is not None:
            check_publish(args.publish or None, replace=args.replace)
        stored = read_board(board)
        prov = read_provenance(board, what="the board", error=BoardFileError)
        refresh_plan(stored, args.methods)  # names and methods checked before any work
    except (ValueError, FileNotFoundError) as exc:
        print(f"error: {label}: {exc}", file=sys.stderr)
        return 2
    try:
        refreshed = refresh_records(args.methods, stored, board=None if board == PUBLISHED else board,
                                    verify_reps=args.verify_reps, workers=args.workers or 1, progress=args.progress)
    except RefreshRefusedError as exc:
        print(f"error: {label}: refused: {exc}", file=sys.stderr)
        return 1
    except Exception as exc:
        print(f"error: {label} failed: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    print(summary_text(refreshed))
    out.mkdir(parents=True, exist_ok=True)
    write_records(refreshed.records, targets[0], replace=args.replace)
    write_provenance(refreshed_provenance(prov, refreshed.summary()), targets[1], replace=args.replace)
    print(f"refreshed board: {targets[0]} and {targets[1]}")
    info = assemble_board_folder(out, paper_figures=args.paper_figures)
    print(f"assembled {info['rows']} leaderboard rows into {info['out']}: {info['headline']}")
    if args.publish is not None:
        for path in publish_board(out, args.publish or None, replace=args.replace):
            print(f"published {path}")
    return 0


def _board(args: argparse.Namespace) -> int:
    """A board of its own on one data set (:mod:`dpkit.batch.own_board`; exit status: its docstring)."""
    from dpkit.batch.own_board import OwnBoardError, prepare_own_board, run_own_board

    try:
        sigmas = [float(x) for x in args.sigmas.split(",")] if args.sigmas else None
    except ValueError:
        print(f"error: board {args.data}: --sigmas must be comma-separated numbers, got {args.sigmas!r}", file=sys.stderr)
        return 2
    try:
        board = prepare_own_board(args.data, out=args.out, reps=args.reps, n_queries=args.n_queries, aim=args.aim,
                                  quick=args.quick, replace=args.replace,
                                  **({"sigmas": sigmas} if sigmas is not None else {}))
    except (OwnBoardError, ValueError, TypeError) as exc:
        print(f"error: board {args.data}: {exc}", file=sys.stderr)
        return 2
    print(f"board of {board.name} ({args.data}) in {board.out}: manifest {board.manifest}")
    t0 = time.perf_counter()
    try:
        run_own_board(board, scheduler=args.scheduler, workers=args.workers, timeout=args.timeout,
                      progress=args.progress or None, on_stale=args.stale, verify_reps=args.verify_reps)
    except (OwnBoardError, ValueError) as exc:  # a failed run, or records the assembler refuses (named)
        print(f"error: board {args.data}: {exc}", file=sys.stderr)
        return 1
    print(f"{board.files['headline']}")
    print(f"board of {board.name}: {board.files['records']} and {board.files['provenance']} "
          f"(tables and figures: {board.files['assembled']}) in {time.perf_counter() - t0:.1f} s")
    return 0


def _stale_options(parser: argparse.ArgumentParser, stale_help: str) -> None:
    """``--stale`` and ``--verify-reps``, the same for ``run`` and ``notebook`` (checked in :func:`main`)."""
    parser.add_argument("--stale", choices=STALE_POLICIES, default="error", help=stale_help)
    parser.add_argument("--verify-reps", type=int, default=None, metavar="N",
                        help=f"with --stale verify: kept repetitions computed again to adopt a checkpoint, evenly spread "
                             f"from the lowest to the highest kept one (default {DEFAULT_VERIFY_REPS}: those two; at least 1)")


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="python -m dpkit.batch",
                                 description="Headless notebook runs (papermill) and batches (Dask).")
    sub = ap.add_subparsers(dest="cmd", required=True)
    one = sub.add_parser("notebook", help="execute one notebook headless")
    one.add_argument("notebook")
    one.add_argument("--output", required=True, help="output folder (executed notebook, metrics.json, figures)")
    one.add_argument("-p", "--param", nargs=2, action="append", default=[], metavar=("NAME", "VALUE"),
                     help="parameter override; VALUE is parsed as YAML 1.2 (e.g. -p QUICK true -p SIGMAS '[2, 4]')")
    one.add_argument("--timeout", type=int, default=3600, help="per-cell timeout in seconds")
    one.add_argument("--progress", action="store_true")
    one.add_argument("--require-data", action="store_true",
                     help="a notebook whose data sets are documented as possibly unavailable offline and are not here "
                          "fails (exit 1) instead of being recorded as unavailable (exit 0)")
    one.add_argument("--replace", action="store_true",
                     help="replace a finished run in --output (it is moved whole to .superseded/, never deleted)")
    _stale_options(one, "kept repetitions of an earlier attempt (in .OUTPUT.checkpoint beside --output) whose notebook "
                        "or dpkit changed since: error (default: name them and stop), rerun (move them to "
                        ".superseded/ beside --output and start afresh), keep (refused: it keeps finished runs, which "
                        "notebook always runs again) or verify (adopted if those computed again are equal to the bit, "
                        "else the run fails naming the difference)")
    run = sub.add_parser("run", help="execute a manifest (notebooks x parameter grids)")
    run.add_argument("manifest")
    run.add_argument("--scheduler", default="local", help="local (default), sync, or a Dask scheduler address")
    run.add_argument("--workers", type=int, default=None, help="LocalCluster workers (default: cores)")
    run.add_argument("--output", default=None, help="override the manifest's output folder")
    run.add_argument("--timeout", type=int, default=7200, help="per-cell timeout in seconds")
    _stale_options(run, "finished runs and kept repetitions whose notebook or dpkit changed since: error (default: "
                        "name them and stop), rerun (move each to OUTPUT/.superseded/ and run it again), keep "
                        "(finished runs only) or verify (kept repetitions only: adopted if those computed again "
                        "are equal to the bit, else the run fails naming the difference)")
    run.add_argument("--require-data", action="store_true",
                     help="a run whose data sets are unavailable here (documented as possibly unavailable offline in "
                          "data/registry.yaml, e.g. PAM) fails the batch (exit 1) instead of being recorded and listed")
    st = sub.add_parser("status", help="where a manifest's runs stand (finished, failed, running, kept repetitions)")
    st.add_argument("manifest")
    st.add_argument("--output", default=None, help="override the manifest's output folder")
    col = sub.add_parser("collect", help="merge every run's metrics into one table")
    col.add_argument("output")
    col.add_argument("--out", default=None, help="file stem of the merged tables (default OUTPUT/collected)")
    own = sub.add_parser("board", help="a board of its own: every board method on one data set (a spec file, an "
                                       "entry point's name or a registry code), into results/board-<name>/")
    own.add_argument("data", help="a spec file's path (.yaml), an entry point's name (group dpkit.datasets) or a code")
    own.add_argument("--out", default=None, help="the board's folder (default results/board-<name>[-quick])")
    own.add_argument("--sigmas", default=None, help="comma-separated kernel widths (default 2,4,6,8,10)")
    own.add_argument("--reps", type=int, default=30, help="repetitions per cell (default 30)")
    own.add_argument("--n-queries", type=int, default=10000, help="queries per repetition (default 10000)")
    own.add_argument("--aim", action="store_true", help="also AIM (suite slow), in a run of its own")
    own.add_argument("--quick", action="store_true", help="notebook 45's QUICK mode: the first sigma, 4 repetitions, "
                                                          "300 queries")
    own.add_argument("--replace", action="store_true", help="runs of other data in the folder are moved to .superseded/")
    own.add_argument("--scheduler", default="local", help="local (default), sync, or a Dask scheduler address")
    own.add_argument("--workers", type=int, default=None, help="LocalCluster workers (default: cores)")
    own.add_argument("--timeout", type=int, default=7200, help="per-cell timeout in seconds")
    own.add_argument("--progress", action="store_true")
    _stale_options(own, "finished runs and kept repetitions of the board's folder whose notebook or dpkit changed "
                        "since (a board kept from an older dpkit): as for run (error, the default: name them and stop; "
                        "rerun; keep; verify)")
    add = sub.add_parser("board-add", help="run one entrant on the stored leaderboard's cells with its seeds and rank it")
    add.add_argument("method", help="package.module:NAME, an entry-point name (group dpkit.methods) or a registered name")
    add.add_argument("--board", default=None, help="the stored board's records (default: data/leaderboard/records.parquet)")
    add.add_argument("--out", default=None, help="folder of the updated copy of the board (default: results/board)")
    add.add_argument("--quick", action="store_true",
                     help=f"one data set, one sigma, {QUICK_REPS} repetitions (tests, tutorial)")
    add.add_argument("--no-gate", action="store_true", help="do not run the audit gate (the entrant is unaudited)")
    add.add_argument("--workers", type=int, default=None, help="repetitions computed at once (default 1)")
    add.add_argument("--replace", action="store_true", help="overwrite the files of an earlier board-add in --out")
    add.add_argument("--progress", action="store_true")
    ref = sub.add_parser("board-refresh", help="run named methods of a stored board again with the current code, "
                                               "the others verified equal on a few repetitions")
    ref.add_argument("methods", nargs="+", help="registered methods on the board to run again on every cell")
    ref.add_argument("--board", default=None, help="the stored board's records (default: data/leaderboard/records.parquet)")
    ref.add_argument("--out", default=None, help="folder of the refreshed board (default: results/board-refresh)")
    ref.add_argument("--verify-reps", type=int, default=DEFAULT_VERIFY_REPS, metavar="N",
                     help=f"repetitions of every data set on which the other methods are computed again and compared "
                          f"to the bit, evenly spread from the first to the last (default {DEFAULT_VERIFY_REPS})")
    ref.add_argument("--workers", type=int, default=None, help="repetitions of the re-runs computed at once (default 1)")
    ref.add_argument("--paper-figures", action="store_true", help="also export the figures into figures/")
    ref.add_argument("--publish", nargs="?", const="", default=None, metavar="DIR",
                     help="also publish records.parquet and provenance.json to data/leaderboard/ (or DIR)")
    ref.add_argument("--replace", action="store_true", help="replace the files of an earlier refresh in --out and, with "
                                                            "--publish, the published board")
    ref.add_argument("--progress", action="store_true")
    return ap


def main(argv: list[str] | None = None) -> int:
    """Command line entry point; returns the exit status (see the module docstring)."""
    ap = _parser()
    args = ap.parse_args(argv)
    for name in ("workers", "timeout", "verify_reps"):
        value = getattr(args, name, None)
        if value is not None and value < 1:
            ap.error(f"--{name.replace('_', '-')} must be a positive integer, got {value}")
    if getattr(args, "verify_reps", None) is not None and getattr(args, "stale", "verify") != "verify":
        ap.error(f"--verify-reps applies to --stale verify only (got --stale {args.stale})")
    try:
        return {"notebook": _notebook, "run": _run, "collect": _collect, "status": _status,
                "board-add": _board_add, "board-refresh": _board_refresh, "board": _board}[args.cmd](args)
    except (BatchError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
