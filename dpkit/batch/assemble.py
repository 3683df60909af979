"""Assemble Tables 3.2/3.3 (``20_tables`` runs) or the leaderboard (``45_leaderboard`` runs) from a batch output split
per cell (its command, outputs and exit statuses: docs/guide/batch.md, "Assembling a batch").

1. Read the run folders: :func:`rows_from_runs` (one cell computed by two runs is an error), :func:`failed_runs`,
   :func:`unavailable_runs_in_output`, :func:`run_times_markdown`.
2. The leaderboard comes from the runs' per-repetition records alone, gathered into one ``records.parquet`` with its
   provenance (:mod:`dpkit.board.records`, :func:`~dpkit.board.report.board_from_records`), so the published records
   regenerate the board.
3. Every output is written into a temporary folder and moved into place once all are written: a failure leaves
   nothing half-written.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import asdict
from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt

from dpkit.batch.board_files import board_provenance, gather_records
from dpkit.batch.projection import projection_markdown, run_durations
from dpkit.batch.results import UNAVAILABLE, Unavailable, as_unavailable
from dpkit.board.records import (
    RECORDS_NAME,
    BoardFileError,
    read_records,
    write_provenance,
    write_records,
)
from dpkit.board.report import (
    BOARD_CAPTION,
    DISAGREEMENT_COLUMNS,
    SUPREMUM_COLUMNS,
    board_from_records,
    headline,
    lost_cells_text,
    ranking_disagreements,
    summary_markdown,
    supremum_rows,
    supremum_summary_text,
)
from dpkit.claims.tables import table_checks
from dpkit.core.published import PROVENANCE_NAME, read_provenance, refuse_overwrite
from dpkit.experiments.tables_records import TablesFileError, tables_frame, write_tables
from dpkit.outputs.figures.leaderboard import (
    DISAGREEMENTS_CAPTION,
    LEADERBOARD_SUPREMUM_CAPTION,
    SUPREMUM_TABLE_CAPTION,
    leaderboard_caption,
    plot_leaderboard,
    plot_leaderboard_supremum,
)
from dpkit.outputs.figures.tables import plot_errors_vs_sigma, power_of_ten, tables_caption
from dpkit.outputs.plotting import export_figure, paper_figures_dir
from dpkit.outputs.tables import export_table, paper_comparison_table, rows_frame

__all__ = [
    "rows_from_runs",
    "runs_budget",
    "budget_text",
    "failed_runs",
    "unavailable_runs_in_output",
    "run_times_markdown",
    "run_files",
    "run_state",
    "assemble_tables",
    "RecordsMissingError",
    "assemble_leaderboard",
    "assemble_board_folder",
    "publish_targets",
    "check_publish",
    "publish_board",
    "publish_tables",
    "check_publish_tables",
    "main",
]


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
    each, naming the folder or the unreadable file. Runs recorded as unavailable are not failures
    (:func:`unavailable_runs_in_output`)."""
    return [why for rj in run_files(output, notebook) if (why := run_state(rj)[1]) is not None
            and not why.endswith(f": run {UNAVAILABLE}")]


def unavailable_runs_in_output(output: str, notebook: str) -> list[Unavailable]:
    """The runs of ``notebook`` in the batch output folder ``output`` recorded as unavailable: folder, data sets and
    the reason, read from each run's ``run.json`` (:func:`dpkit.batch.results.unavailable_in_scanned_runs` takes the
    runs already scanned)."""
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
    missing = unavailable_runs_in_output(output, notebook)
    return (text + ("\n\nNot finished:\n" + "\n".join(f"- {b}" for b in bad_runs) if bad_runs else "")
            + ("\n\nUnavailable here (data sets documented as possibly unavailable offline; no rows):\n"
               + "\n".join(f"- {u}" for u in missing) if missing else ""))


#: Caption of the Tables 3.2/3.3 figures.



def _unavailable_text(unavailable: list[Unavailable]) -> str:
    """One sentence naming the unavailable data sets for a caption (``""`` if there are none)."""
    names = sorted({d for u in unavailable for d in u.datasets})
    return (f" Not available on this machine (documented as possibly unavailable offline; no rows; reasons in "
            f"tables_unavailable.md): {', '.join(names)}.") if names else ""


def _export_unavailable(unavailable: list[Unavailable], dest: Path, name: str) -> None:
    """``<name>.{csv,md}``: one line per unavailable run (data sets, reason, folder); written even when empty."""
    import pandas as pd

    dest.mkdir(parents=True, exist_ok=True)
    df = pd.DataFrame([{"datasets": ", ".join(u.datasets), "status": UNAVAILABLE, "reason": u.reason,
                        "run_folder": str(u.path)} for u in unavailable],
                      columns=["datasets", "status", "reason", "run_folder"])
    df.to_csv(dest / f"{name}.csv", index=False)
    lines = ["| data sets | status | reason | run folder |", "|---|---|---|---|"]
    lines += [f"| {r.datasets} | {r.status} | {r.reason.replace('|', '/')} | {r.run_folder} |" for r in df.itertuples()]
    (dest / f"{name}.md").write_text("\n".join(lines) + "\n" if unavailable else "no run was unavailable\n")


def _reps_text(rows: list[dict[str, Any]]) -> str:
    """``"30 repetitions"`` (or ``"10–30 repetitions"`` when the runs differ) for a table caption."""
    reps = sorted({int(r["reps"]) for r in rows if r.get("reps") is not None})
    if not reps:
        return "repetitions"
    return f"{reps[0]} repetitions" if len(reps) == 1 else f"{reps[0]}–{reps[-1]} repetitions"


@contextlib.contextmanager
def _staged(dest: Path, paper_figures: bool) -> Iterator[tuple[Path, Path | None]]:
    """Temporary folders for the outputs of ``dest`` (and the paper figures), moved into place on success.

    Each target folder is created and checked writable first; on any error the temporary folders are removed and
    a folder this created is removed again, so nothing half-written is left.
    """
    targets = [dest] + ([paper_figures_dir()] if paper_figures else [])
    created = [t for t in targets if not t.exists()]
    stages: list[Path] = []
    try:
        for t in targets:
            if t.exists() and not t.is_dir():
                raise NotADirectoryError(20, "not a folder", str(t))
            t.mkdir(parents=True, exist_ok=True)
            stages.append(Path(tempfile.mkdtemp(prefix=".assemble-", dir=t)))
        yield stages[0], (stages[1] if paper_figures else None)
        moves = [(f, t / f.name) for t, stage in zip(targets, stages) for f in sorted(stage.iterdir())]
        for _f, final in moves:  # a folder in the way would fail half-way through the renames: checked first
            if final.is_dir():
                raise IsADirectoryError(21, "a folder is in the way of an output file", str(final))
        for f, final in moves:
            os.replace(f, final)
    except BaseException:
        for t in reversed(created):
            shutil.rmtree(t, ignore_errors=True)
        raise
    finally:
        for stage in stages:
            shutil.rmtree(stage, ignore_errors=True)


def _figure(fig: Any, name: str, stage: Path, paper_stage: Path | None, *, notebook: str, caption: str,
            parameters: dict[str, Any]) -> None:
    """Export ``fig`` into ``stage`` and, for the paper figures, as ``<notebook>__<name>`` into ``paper_stage``
    (the files :func:`~dpkit.outputs.plotting.export_figure` writes with ``paper=True``)."""
    suptitle = getattr(fig, "_suptitle", None)
    if paper_stage is not None and suptitle is not None and suptitle.get_text():
        raise ValueError(f"paper figure {name}: a paper figure carries no suptitle ({suptitle.get_text()!r})")
    for path in export_figure(fig, name, stage, notebook=notebook, caption=caption, parameters=parameters):
        if paper_stage is not None:
            shutil.copyfile(path, paper_stage / f"{notebook}__{path.name}")
    plt.close(fig)


def assemble_tables(output: str, *, out: str | None = None, paper_figures: bool = False) -> dict[str, Any]:
    """Tables 3.2/3.3 (ours ± std next to the thesis), figures and worst times from a batch output.

    Writes ``tables_3_2_3_3.{csv,md,tex}``, ``tables_rows.csv`` and ``tables_{abs,rel}_vs_sigma.{pdf,png}``
    into ``out`` (default ``<output>/assembled``) and, with ``paper_figures``, the figures into ``figures/``;
    ``tables_unavailable.{csv,md}`` lists the runs recorded as unavailable (data sets, reason), which the
    tables' captions name too.
    """
    rows = rows_from_runs(output)
    if not rows:
        raise FileNotFoundError(f"no finished 20_tables runs with rows under {output}")
    dest = Path(out) if out else Path(output) / "assembled"
    unavailable = unavailable_runs_in_output(output, "20_tables")
    with _staged(dest, paper_figures) as (stage, paper_stage):
        _write_tables(output, rows, unavailable, stage, paper_stage)
    return {"rows": len(rows), "out": str(dest), "datasets": sorted({r["dataset"] for r in rows}),
            "unavailable": [str(u) for u in unavailable], "claims": tables_claims(rows, unavailable)}


def runs_budget(output: str, notebook: str = "20_tables") -> tuple[float | None, float | None, list[int] | None]:
    """The budget (ε, δ) and the queries per repetition the finished runs of ``notebook`` ran with.

    Each run's ``EPSILON``, ``DELTA`` and ``N_QUERIES`` are the ``params`` its ``metrics.json`` records (the values
    the notebook used, after QUICK mode); a run that records no budget there gives the one its rows spent (the
    largest ``eps_spent``, and the largest ``delta_spent`` of mechanism II: the tables' mechanisms spend their whole
    budget). ``None`` where no run records a value.

    Parameters
    ----------
    output : str
        A batch's output folder.
    notebook : str
        The notebook whose runs are read.

    Returns
    -------
    tuple
        ``(epsilon, delta, n_queries)``, the queries as the sorted numbers the runs used.

    Raises
    ------
    ValueError
        When two runs ran at different budgets (their tables cannot share a caption), naming them.
    """
    budgets: dict[tuple[float | None, float | None], str] = {}
    queries: set[int] = set()
    for rj in run_files(output, notebook):
        metrics, _ = run_state(rj)
        if metrics is None:
            continue
        params = metrics.get("params") if isinstance(metrics.get("params"), dict) else {}
        rows = [r for r in metrics.get("table") or [] if isinstance(r, dict)]
        eps, delta = params.get("EPSILON"), params.get("DELTA")
        if eps is None:
            spent = [float(r["eps_spent"]) for r in rows if r.get("eps_spent") is not None]
            eps = max(spent) if spent else None
        if delta is None:
            spent = [float(r["delta_spent"]) for r in rows if r.get("mechanism") == "II" and r.get("delta_spent") is not None]
            delta = max(spent) if spent else None
        budget = (None if eps is None else float(eps), None if delta is None else float(delta))
        if budget != (None, None):
            budgets.setdefault(budget, rj.parent.name)
        if params.get("N_QUERIES") is not None:
            queries.add(int(params["N_QUERIES"]))
    if len(budgets) > 1:
        (b1, r1), (b2, r2) = list(budgets.items())[:2]
        raise ValueError(f"{output}/{notebook}: the runs ran at different budgets (ε, δ): {b1} ({r1}) and {b2} ({r2}); "
                         "assemble runs of one budget together")
    eps, delta = next(iter(budgets), (None, None))
    return eps, delta, (sorted(queries) or None)


def budget_text(epsilon: float | None, delta: float | None) -> str:
    """The budget for a caption of Tables 3.2/3.3: ``ε = 1, δ = 10⁻³ (mechanism II)``, or what the runs did not
    record."""
    if epsilon is None and delta is None:
        return "the runs recorded no budget (ε, δ)"
    eps = "ε not recorded" if epsilon is None else f"ε = {epsilon:g}"
    dlt = "δ not recorded" if delta is None else f"δ = {power_of_ten(delta, f'{delta:g}')}"
    return f"{eps}, {dlt} (mechanism II)"


def _write_tables(output: str, rows: list[dict[str, Any]], unavailable: list[Unavailable], dest: Path,
                  paper_stage: Path | None) -> None:
    _export_unavailable(unavailable, dest, "tables_unavailable")
    comparison = paper_comparison_table(rows)
    epsilon, delta, n_queries = runs_budget(output, "20_tables")
    protocol = (f"{budget_text(epsilon, delta)}; {_reps_text(rows)}, each a fresh workload of Gaussian-kernel mixture "
                "queries")
    absent = _unavailable_text(unavailable)
    export_table(comparison, "tables_3_2_3_3", dest,
                 caption="Tables 3.2/3.3: mean worst absolute (abs) and relative (rel) error ± one standard deviation, the "
                         "thesis's value in parentheses, of the improved trigonometric mechanisms I (ε-DP) and II "
                         f"((ε, δ)-DP); {protocol}. Worst time: the slowest release in seconds (the thesis's).{absent}")
    export_table(rows_frame(rows), "tables_rows", dest,
                 caption="Every cell of Tables 3.2/3.3: worst absolute and relative error over the repetitions (mean, "
                         f"standard deviation, minimum, maximum), the thesis's values and the worst time in seconds; "
                         f"{protocol}.{absent}")
    budget = {k: v for k, v in (("epsilon", epsilon), ("delta", delta)) if v is not None}
    for kind in ("abs", "rel"):
        fig = plot_errors_vs_sigma(rows, kind=kind)
        _figure(fig, f"tables_{kind}_vs_sigma", dest, paper_stage, notebook="20_tables",
                caption=tables_caption(rows, kind=kind, n_queries=n_queries, **budget),
                parameters={"datasets": ",".join(sorted({r["dataset"] for r in rows})), **budget,
                            "reps": max(int(r.get("reps", 0)) for r in rows)})
    df = rows_frame(rows)
    worst = df.groupby(["dataset", "mechanism", "constants"])["time_max_s"].max().reset_index()
    export_table(worst, "worst_times", dest, caption=f"Worst time (seconds) of one release over every σ and repetition, "
                                                     f"per data set, mechanism and constants; {protocol}.")
    (dest / "tables_runs.md").write_text(run_times_markdown(output, notebook="20_tables") + "\n")
    (dest / "tables_claims.md").write_text(claims_markdown(df, unavailable) + "\n")


def tables_claims(rows: list[dict[str, Any]], unavailable: list[Unavailable]) -> list[dict[str, Any]]:
    """The thesis's claims about its whole Tables 3.2/3.3 (:func:`dpkit.claims.tables.table_checks`) on the assembled
    rows, the data sets of the runs recorded as unavailable aside: the checks as dicts (none if cells are missing)."""
    skip = {d for u in unavailable for d in u.datasets}
    return [asdict(c) for c in table_checks(rows_frame(rows), unavailable=skip).checks]


def claims_markdown(df: Any, unavailable: list[Unavailable]) -> str:
    """``tables_claims.md``: the whole table's claims as a markdown table, or the note saying why none was checked."""
    result = table_checks(df, unavailable={d for u in unavailable for d in u.datasets})
    if not result.checks:
        return result.note
    lines = ["| id | claim | statistic | bound | verdict | expected |", "|---|---|---|---|---|---|"]
    lines += [f"| {c.id} | {c.claim} | {c.statistic:.4g} | {c.bound:.4g} | {c.verdict} | {c.expected} |"
              for c in result.checks]
    return "\n".join(lines)


class RecordsMissingError(ValueError):
    """No finished run of a batch output has per-repetition records: the board cannot be computed."""


def assemble_leaderboard(output: str, *, out: str | None = None, paper_figures: bool = False) -> dict[str, Any]:
    """The leaderboard from the per-repetition records of the ``45_leaderboard`` runs of a batch output (split per
    cell): the board and every method's rows (:func:`~dpkit.board.report.board_from_records`), the
    headline and one figure per table and error kind; and the ranking by the class supremum:
    ``leaderboard_supremum.{csv,md,tex}`` (best method and runner-up per cell by it),
    ``leaderboard_disagreements.{csv,md,tex}`` (the cells where the two rankings differ),
    ``leaderboard_supremum_summary.md`` (the written summary) and ``leaderboard_supremum_<data set>.{pdf,png}``
    (the two rankings side by side, one figure per data set). ``records.parquet`` and ``provenance.json`` are written
    when every finished run has its records; ``records_missing`` names the runs without (not on the board).

    Raises
    ------
    FileNotFoundError
        No finished run.
    RecordsMissingError
        No finished run has records (naming the runs).
    """
    runs = [rj.parent for rj in run_files(output, "45_leaderboard") if run_state(rj)[0] is not None]
    if not runs:
        raise FileNotFoundError(f"no finished 45_leaderboard runs under {output}")
    records, missing = gather_records(output, folders=runs)
    if records.empty:
        raise RecordsMissingError(f"no finished 45_leaderboard run under {output} has per-repetition records "
                                  f"({RECORDS_NAME}); the board's intervals and verdicts cannot be computed without "
                                  f"them (re-run these with the current notebook 45): "
                                  + "; ".join(str(r) for r in runs))
    rows, board = board_from_records(records)
    dest = Path(out) if out else Path(output) / "assembled"
    with _staged(dest, paper_figures) as (stage, paper_stage):
        head = _write_leaderboard(run_times_markdown(output, notebook="45_leaderboard"), rows, board, stage,
                                  paper_stage)
        if not missing:
            write_records(records, stage / RECORDS_NAME)
            write_provenance(board_provenance(output), stage / PROVENANCE_NAME)
    return {"rows": len(board), "out": str(dest), "headline": head, "records": len(records) if not missing else 0,
            "records_missing": missing}


def assemble_board_folder(folder: str | os.PathLike, *, out: str | None = None,
                          paper_figures: bool = False) -> dict[str, Any]:
    """The assembled outputs of :func:`assemble_leaderboard` (tables, headline, summary, figures; ``paper_figures``:
    also into figures/) from a folder holding a board's ``records.parquet`` and ``provenance.json`` (a refreshed
    board, ``python -m dpkit.batch board-refresh``) instead of a batch output; ``leaderboard_runs.md`` is the
    provenance's sentence (:func:`~dpkit.board.records.provenance_line`). Default ``out``: ``folder/assembled``.

    Raises
    ------
    BoardFileError
        For a folder without records or provenance.
    dpkit.board.records.InvalidRecordsError
        For records that are not a board.
    """
    from dpkit.board.records import provenance_line

    src = Path(folder) / RECORDS_NAME
    if not src.is_file():
        raise BoardFileError(f"{src}: no board records in {folder}")
    records = read_records(src)
    runs_text = provenance_line(src)
    rows, board = board_from_records(records)
    dest = Path(out) if out else Path(folder) / "assembled"
    with _staged(dest, paper_figures) as (stage, paper_stage):
        head = _write_leaderboard(runs_text, rows, board, stage, paper_stage)
    return {"rows": len(board), "out": str(dest), "headline": head, "records": len(records)}


def publish_tables(output: str | os.PathLike, publish: str | os.PathLike | None = None, *,
                   replace: bool = False) -> list[Path]:
    """Write the rows of a batch output's finished ``20_tables`` runs as ``tables.csv`` with its ``provenance.json``
    (the runs, the commit, the machine, the compute) into ``publish`` (default ``data/tables/``), checked first
    (:func:`~dpkit.experiments.tables_records.check_tables`); existing published files are replaced only with
    ``replace``.

    Raises
    ------
    TablesFileError
        When a published file is there and ``replace`` is False.
    ValueError
        When the rows are not a Tables 3.2/3.3 table (naming the offending row).
    """
    from dpkit.experiments import tables_records

    df = tables_frame(rows_from_runs(str(output)))
    folder = Path(publish) if publish else tables_records.PUBLISHED.parent
    return write_tables(df, folder, board_provenance(output, notebook="20_tables"), replace=replace)


def check_publish_tables(publish: str | os.PathLike | None = None, *, replace: bool = False) -> None:
    """Refuse to publish over existing published tables unless ``replace`` (before anything is assembled)."""
    from dpkit.experiments import tables_records

    folder = Path(publish) if publish else tables_records.PUBLISHED.parent
    refuse_overwrite([folder / tables_records.TABLES_NAME, folder / PROVENANCE_NAME], replace=replace,
                     what="published tables", error=TablesFileError)


def publish_targets(publish: str | os.PathLike | None = None) -> tuple[Path, Path]:
    """The published board's records and provenance files (in ``publish``, default ``data/leaderboard/``)."""
    from dpkit.board import records as board_records

    folder = Path(publish) if publish else board_records.PUBLISHED.parent
    return folder / RECORDS_NAME, folder / PROVENANCE_NAME


def check_publish(publish: str | os.PathLike | None = None, *, replace: bool = False) -> None:
    """Refuse to publish over an existing published board unless ``replace``.

    Raises
    ------
    BoardFileError
        Naming the existing files.
    """
    refuse_overwrite(publish_targets(publish), replace=replace, what="a published board", error=BoardFileError)


def publish_board(assembled: str | os.PathLike, publish: str | os.PathLike | None = None, *,
                  replace: bool = False) -> list[Path]:
    """Copy an assembled ``records.parquet`` and ``provenance.json`` to the published place (:func:`publish_targets`),
    refusing to overwrite unless ``replace`` (:func:`check_publish`); the records are checked first."""
    check_publish(publish, replace=replace)
    src = Path(assembled)
    records = read_records(src / RECORDS_NAME)
    prov = read_provenance(src / RECORDS_NAME, what="the board", error=BoardFileError)
    rec_path, prov_path = publish_targets(publish)
    write_records(records, rec_path, replace=True)
    write_provenance(prov, prov_path, replace=True)
    return [rec_path, prov_path]


def _write_leaderboard(runs_text: str, rows: list[dict[str, Any]], board: list[dict[str, Any]], dest: Path,
                       paper_stage: Path | None) -> str:
    protocol = f"{_reps_text(rows)} of Gaussian-kernel mixture queries per cell"
    export_table(rows_frame(board), "leaderboard", dest,
                 caption=f"{BOARD_CAPTION} {protocol}.")
    export_table(rows_frame(rows), "leaderboard_all_methods", dest,
                 caption=f"Every method's mean worst absolute and relative error per data set and σ; {protocol}.")
    head = headline(board)
    (dest / "leaderboard_headline.md").write_text(head.text() + "\n\n" + lost_cells_text(board, rows) + "\n")
    (dest / "leaderboard_summary.md").write_text(summary_markdown(board) + "\n")
    (dest / "leaderboard_runs.md").write_text(runs_text + "\n")
    for privacy, tag in (("ε-DP", "3_2"), ("(ε,δ)-DP", "3_3")):
        for kind in ("abs", "rel"):
            fig = plot_leaderboard(board, privacy=privacy, kind=kind)
            _figure(fig, f"leaderboard_table_{tag}_{kind}", dest, paper_stage, notebook="45_leaderboard",
                    caption=leaderboard_caption(board, kind=kind, privacy=privacy, table=tag.replace("_", "."),
                                                protocol=protocol),
                    parameters={"datasets": ",".join(sorted({r["dataset"] for r in rows})), "privacy": privacy,
                                "reps": max(int(r.get("reps") or 0) for r in rows)})
    _write_leaderboard_supremum(rows, board, dest, paper_stage, protocol)
    return head.text()


def _write_leaderboard_supremum(rows: list[dict[str, Any]], board: list[dict[str, Any]], dest: Path,
                                paper_stage: Path | None, protocol: str) -> None:
    """The board's ranking by the class supremum: its table, the cells where it differs, the summary, the figures."""
    import pandas as pd

    export_table(pd.DataFrame(supremum_rows(board), columns=list(SUPREMUM_COLUMNS)), "leaderboard_supremum", dest,
                 caption=SUPREMUM_TABLE_CAPTION.format(protocol=protocol))
    export_table(pd.DataFrame(ranking_disagreements(board), columns=list(DISAGREEMENT_COLUMNS)),
                 "leaderboard_disagreements", dest, caption=DISAGREEMENTS_CAPTION.format(protocol=protocol))
    (dest / "leaderboard_supremum_summary.md").write_text(supremum_summary_text(board, rows) + "\n")
    reps = max(int(r.get("reps") or 0) for r in rows)
    for ds in sorted({str(b["dataset"]) for b in board}):
        _figure(plot_leaderboard_supremum(board, dataset=ds), f"leaderboard_supremum_{ds}", dest, paper_stage,
                notebook="45_leaderboard", caption=LEADERBOARD_SUPREMUM_CAPTION.format(dataset=ds, protocol=protocol),
                parameters={"dataset": ds, "reps": reps})


def main(argv: list[str] | None = None) -> int:
    """``python -m dpkit.batch.assemble {tables,leaderboard} OUTPUT [--out DIR] [--paper-figures]``."""
    ap = argparse.ArgumentParser(prog="python -m dpkit.batch.assemble")
    sub = ap.add_subparsers(dest="cmd", required=True)
    t = sub.add_parser("tables", help="assemble Tables 3.2/3.3 from the 20_tables runs of a batch output")
    t.add_argument("output")
    t.add_argument("--out", default=None)
    t.add_argument("--paper-figures", action="store_true", help="also export the figures into figures/")
    t.add_argument("--publish", nargs="?", const="", default=None, metavar="DIR",
                   help="also publish tables.csv and provenance.json to data/tables/ (or DIR)")
    t.add_argument("--replace", action="store_true", help="with --publish: replace the published tables")
    lb = sub.add_parser("leaderboard", help="assemble the leaderboard from the 45_leaderboard runs of a batch output")
    lb.add_argument("output")
    lb.add_argument("--out", default=None)
    lb.add_argument("--paper-figures", action="store_true", help="also export the figures into figures/")
    lb.add_argument("--publish", nargs="?", const="", default=None, metavar="DIR",
                    help="also publish records.parquet and provenance.json to data/leaderboard/ (or DIR)")
    lb.add_argument("--replace", action="store_true", help="with --publish: replace an existing published board")
    args = ap.parse_args(argv)
    notebook = "45_leaderboard" if args.cmd == "leaderboard" else "20_tables"
    if not Path(args.output).is_dir():
        print(f"error: batch output folder not found (or not a folder): {args.output}", file=sys.stderr)
        return 2
    publish = getattr(args, "publish", None)
    if publish is not None:
        try:
            if args.cmd == "leaderboard":
                check_publish(publish or None, replace=args.replace)
            else:
                check_publish_tables(publish or None, replace=args.replace)
        except (BoardFileError, TablesFileError) as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
    bad = failed_runs(args.output, notebook)
    for u in unavailable_runs_in_output(args.output, notebook):
        print(f"unavailable (documented as possibly unavailable offline; no rows): {u}")
    try:
        if args.cmd == "leaderboard":
            info = assemble_leaderboard(args.output, out=args.out, paper_figures=args.paper_figures)
            print(f"assembled {info['rows']} leaderboard rows into {info['out']}: {info['headline']}")
            if info["records_missing"]:
                bad = bad + [f"{m}: its cells are not on the board (no per-repetition records, no intervals); no "
                             f"{RECORDS_NAME} assembled" for m in info["records_missing"]]
            else:
                print(f"assembled {info['records']} per-repetition records into {Path(info['out']) / RECORDS_NAME}")
                if publish is not None:
                    for path in publish_board(info["out"], publish or None, replace=args.replace):
                        print(f"published {path}")
        else:
            info = assemble_tables(args.output, out=args.out, paper_figures=args.paper_figures)
            print(f"assembled {info['rows']} rows ({', '.join(info['datasets'])}) into {info['out']}")
            for c in info["claims"]:  # the whole table's claims (tables_claims.md), which no split run can check
                print(f"the whole table: {c['id']}: {c['claim']}: {c['statistic']:.4g} (bound {c['bound']:.4g}) "
                      f"{c['verdict']}" + ("" if c["verdict"] == c["expected"] else f", UNEXPECTED (expected "
                                                                                    f"{c['expected']})"))
            unexpected = [c["id"] for c in info["claims"] if c["verdict"] != c["expected"]]
            if unexpected:
                bad = bad + [f"the whole table's claim(s) {', '.join(unexpected)}: verdict not the expected one "
                             f"({Path(info['out']) / 'tables_claims.md'})"]
            if publish is not None:
                if bad:  # published tables hold every available cell: not those of a batch with failed runs
                    print("error: runs failed (below): the tables are not published", file=sys.stderr)
                else:
                    for path in publish_tables(args.output, publish or None, replace=args.replace):
                        print(f"published {path}")
    except (FileNotFoundError, ValueError) as exc:  # no finished run, or one cell computed twice: nothing assembled
        print(f"error: {exc}", *bad, sep="\n  ", file=sys.stderr)
        return 2
    except OSError as exc:  # an output folder cannot be made or written: nothing was left half-written
        where = exc.filename or args.out or Path(args.output) / "assembled"
        print(f"error: cannot write the assembled outputs to {where}: {exc.strerror or exc}; nothing was written",
              file=sys.stderr)
        return 2
    if bad:
        print(f"{len(bad)} run(s) failed and are missing from the assembled tables:", *bad, sep="\n  ", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
