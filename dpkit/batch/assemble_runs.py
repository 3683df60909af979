"""The runs of a batch output as the assembler reads them: which finished, which failed, which were unavailable,
their rows and their run times.

The batch runner writes one folder per run (``<output>/<notebook>/<key>/``, with ``run.json`` and, for a finished
run, ``metrics.json``). :func:`rows_from_runs` gathers the rows of every finished run (one cell computed by two runs
is an error), :func:`failed_runs` names the runs that did not finish or cannot be read, :func:`unavailable_runs` the
runs recorded as unavailable (their data sets are documented as possibly unavailable offline), and
:func:`run_times_markdown` tabulates the finished runs' wall times and fingerprints and projects their repetitions on
more workers. :mod:`dpkit.batch.assemble`
builds the assembled tables and the leaderboard on them and re-exports these names.
"""
from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from dpkit.batch.projection import projection_markdown, run_durations
from dpkit.batch.results import UNAVAILABLE, Unavailable, as_unavailable

__all__ = ["rows_from_runs", "failed_runs", "unavailable_runs", "run_times_markdown", "run_files", "run_state"]


def _table_key(r: dict[str, Any]) -> tuple[Any, ...]:
    return (r["dataset"], r["sigma"], r["mechanism"], r.get("constants", "correct"))


def run_files(output: str, notebook: str) -> list[Path]:
    """``run.json`` of every run folder of ``notebook`` (temporary ``.<key>.tmp-*`` folders excluded).

    Parameters
    ----------
    output : str
        A batch's output folder.
    notebook : str
        A notebook's stem (its runs are ``<output>/<notebook>/<key>/``).

    Returns
    -------
    list of Path
        The ``run.json`` files, sorted.
    """
    return sorted(p for p in Path(output).glob(f"{notebook}/*/run.json") if not p.parent.name.startswith("."))


def _read(path: Path) -> tuple[Any, str | None]:
    """``(parsed JSON, None)`` or ``(None, "<path>: unreadable <name>: <error>")``."""
    try:
        return json.loads(path.read_text()), None
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        return None, f"{path}: unreadable {path.name}: {type(exc).__name__}: {exc}"


def run_state(rj: Path) -> tuple[dict[str, Any] | None, str | None]:
    """``(metrics, None)`` for a finished run with a readable ``metrics.json``, else ``(None, why)`` naming the path.

    Parameters
    ----------
    rj : Path
        A run's ``run.json`` (:func:`run_files`).

    Returns
    -------
    tuple
        ``(metrics, None)``, or ``(None, why)`` for a run not finished ok, without ``metrics.json``, recorded for
        another key, or with a file that cannot be read.
    """
    info, bad = _read(rj)
    if bad is not None or not isinstance(info, dict):
        return None, bad or f"{rj}: run.json is not a JSON object"
    if info.get("status") != "ok":
        return None, f"{rj.parent}: run {info.get('status')}"
    mj = rj.parent / "metrics.json"
    if not mj.is_file():
        return None, f"{rj.parent}: finished run wrote no metrics.json"
    from dpkit.batch.results import key_problem, read_metrics_json

    wrong = key_problem(rj.parent, info)
    if wrong is not None:
        return None, f"{rj.parent}: {wrong}"
    metrics, problem = read_metrics_json(mj)
    if problem is not None:
        return None, str(problem)
    return metrics, None


def failed_runs(output: str, notebook: str) -> list[str]:
    """The runs of ``notebook`` that did not finish ok, lack ``metrics.json`` or whose files cannot be read: one line
    each, naming the folder or the unreadable file. Runs recorded as unavailable are not failures (:func:`unavailable_runs`)."""
    return [why for rj in run_files(output, notebook) if (why := run_state(rj)[1]) is not None
            and not why.endswith(f": run {UNAVAILABLE}")]


def unavailable_runs(output: str, notebook: str) -> list[Unavailable]:
    """The runs of ``notebook`` recorded as unavailable: folder, data sets and the reason (from ``run.json``)."""
    found = []
    for rj in run_files(output, notebook):
        info, _ = _read(rj)
        u = as_unavailable(rj.parent, info) if isinstance(info, dict) else None
        if u is not None:
            found.append(u)
    return found


def rows_from_runs(output: str, *, notebook: str = "20_tables", field: str = "table",
                   key: Callable[[dict[str, Any]], tuple[Any, ...]] = _table_key) -> list[dict[str, Any]]:
    """Rows (``metrics.json[field]``) of every finished ``notebook`` run under a batch output folder.

    Runs that failed or whose files cannot be read are left out (:func:`failed_runs` names them). Rows of the
    same cell (``key``) from several runs are an error (two runs computed the same cell): nothing is silently
    overwritten.
    """
    rows, seen = [], {}
    for rj in run_files(output, notebook):
        metrics, _ = run_state(rj)
        if metrics is None:
            continue
        found = metrics.get(field) or []
        if not isinstance(found, list) or not all(isinstance(r, dict) for r in found):
            raise ValueError(f"{rj.parent / 'metrics.json'}: {field!r} must be a list of objects")
        for r in found:
            try:
                k = key(r)
            except KeyError as exc:
                raise ValueError(f"{rj.parent / 'metrics.json'}: a {field!r} row has no {exc}") from None
            if k in seen:
                raise ValueError(f"cell {k} computed by two runs: {seen[k]} and {rj.parent.name}")
            seen[k] = rj.parent.name
            rows.append(r)
    return rows


def _minutes(seconds: Any) -> str:
    return "–" if seconds is None else f"{float(seconds) / 60:.0f} min ({float(seconds):,.0f} s)"


def run_times_markdown(output: str, *, notebook: str) -> str:
    """A Markdown table of the finished runs of ``notebook``: their data sets, wall time and fingerprints.

    Columns: the run's ``DATASETS`` (and its ``METHODS`` when it names them), its wall time (the attempt that
    finished), its compute time over all attempts and the repetitions it resumed (``run.json`` ``checkpoint``, for a
    run that kept repetitions), and the notebook fingerprint it ran with; then the wall time projected on 2, 8 and
    64 workers from the repetitions' recorded times (:func:`dpkit.batch.projection.projection_markdown`), and one line
    per run that did not finish.
    Read from the run folders, so the README's run times are not copied by hand.
    """
    lines = ["| data sets | wall time | compute over all attempts | resumed repetitions | notebook |",
             "|---|---|---|---|---|"]
    finished: list[dict[str, Any]] = []
    for rj in run_files(output, notebook):
        info, bad = _read(rj)
        if bad is not None or not isinstance(info, dict) or info.get("status") != "ok":
            continue
        finished.append(info)
        params, ckpt = info.get("parameters") or {}, info.get("checkpoint") or {}
        named = f" (methods: {', '.join(params['METHODS'])})" if params.get("METHODS") else ""
        lines.append(f"| {', '.join(params.get('DATASETS') or ['?'])}{named} | {_minutes(info.get('wall_time_s'))} | "
                     f"{_minutes(ckpt.get('compute_s')) if ckpt else '–'} | "
                     f"{ckpt.get('resumed_repetitions', 0) if ckpt else '–'} | {info.get('notebook_sha256', '?')} |")
    text = ("\n".join(lines) + "\n\n" + projection_markdown(run_durations(finished)) if finished
            else f"no finished {notebook} run under {output}")
    bad_runs = failed_runs(output, notebook)
    missing = unavailable_runs(output, notebook)
    return (text + ("\n\nNot finished:\n" + "\n".join(f"- {b}" for b in bad_runs) if bad_runs else "")
            + ("\n\nUnavailable here (data sets documented as possibly unavailable offline; no rows):\n"
               + "\n".join(f"- {u}" for u in missing) if missing else ""))
