"""The leaderboard as data: one row per (data set, σ, repetition, method), written as Parquet.

:func:`records_frame` turns the :class:`~dpkit.experiments.record_types.RunRecord` s of a run (one data set) into the
records table (:data:`COLUMNS`, with their dtypes); notebook 45 writes its own run's table into its ``OUTPUT_DIR``
(``records.parquet``), the assembler (``python -m dpkit.batch.assemble leaderboard``) gathers the runs' tables into
one (:func:`dpkit.batch.board_files.gather_records`) with its provenance
(:func:`dpkit.batch.board_files.board_provenance`), and the published board lives in
``data/leaderboard/`` (:data:`PUBLISHED`; :func:`read_board`). A written file is never replaced unless asked
(:func:`write_records`).

Besides the numbers of a release (the worst absolute and relative error, the class supremum ``sup_abs`` and the
worst single centre of the workload ``centre_abs`` where recorded, the (ε, δ) spent, the release time, the proven
bound ``error_bound`` on the numerical error of the worst errors, and the synthetic database's ``support_size``, 0
for released answers), every row carries
the protocol of its run (``run_seed``, ``n_queries``, ``J`` and the board's budget ``budget_epsilon``,
``budget_delta``): with them a new method is run on the very same workloads (``python -m dpkit.batch board-add``).
``seeds`` is the record's own seeds, as a JSON string (null where the record has none).
"""
from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from dpkit.core.paths import write_atomic

__all__ = ["COLUMNS", "KEY", "PROTOCOL_COLUMNS", "PUBLISHED", "PROVENANCE_NAME", "RECORDS_NAME", "BoardFileError",
           "records_frame", "check_records", "write_records", "read_records", "read_board", "write_provenance",
           "provenance_line", "typed_records"]

#: The columns of the records table and their pandas dtypes (floats may be NaN, written as null).
COLUMNS: dict[str, str] = {
    "dataset": "object",
    "sigma": "float64",
    "rep": "int64",
    "method": "object",
    "privacy": "object",
    "eps_spent": "float64",
    "delta_spent": "float64",
    "abs": "float64",
    "rel": "float64",
    "sup_abs": "float64",
    "centre_abs": "float64",
    "time_s": "float64",
    "error_bound": "float64",
    "support_size": "int64",
    "seeds": "object",
    "run_seed": "int64",
    "n_queries": "int64",
    "J": "int64",
    "budget_epsilon": "float64",
    "budget_delta": "float64",
}
#: The key of a row: one record per data set, σ, repetition and method.
KEY: tuple[str, ...] = ("dataset", "sigma", "rep", "method")
#: The columns that fix the workloads of a (data set, σ, repetition): a new method paired with the board uses them.
PROTOCOL_COLUMNS: tuple[str, ...] = ("run_seed", "n_queries", "J", "budget_epsilon", "budget_delta")
#: File names of a run's (and an assembled board's) records and of the board's provenance.
RECORDS_NAME = "records.parquet"
PROVENANCE_NAME = "provenance.json"


def _published() -> Path:
    from dpkit.core.paths import repo_root

    return (repo_root() or Path.cwd()) / "data" / "leaderboard" / RECORDS_NAME


#: The published board (``data/leaderboard/records.parquet`` of the clone).
PUBLISHED: Path = _published()


class BoardFileError(FileNotFoundError):
    """A board's records file that is missing (or one that would be overwritten without ``replace``)."""


def _field(rec: Any, name: str) -> Any:
    if isinstance(rec, Mapping):
        return rec.get(name)
    return getattr(rec, name, None)


def _seeds_json(seeds: Any) -> str | None:
    if seeds is None:
        return None
    return json.dumps(seeds, sort_keys=True, default=lambda o: o.tolist() if hasattr(o, "tolist") else str(o))


def records_frame(records: Iterable[Any], *, dataset: str, run_seed: int, n_queries: int, J: int,
                  epsilon: float, delta: float) -> pd.DataFrame:
    """The records table (:data:`COLUMNS`) of one data set's :class:`~dpkit.experiments.record_types.RunRecord` s.

    ``centre_abs`` and ``seeds`` are taken where the records have them (NaN and null otherwise); ``seeds`` is
    written as a JSON string. ``run_seed``, ``n_queries``, ``J``, ``epsilon`` and ``delta`` are the run's protocol
    (notebook 45's ``SEED``, ``N_QUERIES``, ``J``, ``EPSILON``, ``DELTA``).

    Raises
    ------
    ValueError
        For two records of the same key (:data:`KEY`).
    """
    rows = []
    for r in records:
        sup, centre = _field(r, "sup_abs"), _field(r, "centre_abs")
        rows.append({
            "dataset": str(dataset), "sigma": float(_field(r, "sigma")), "rep": int(_field(r, "rep")),
            "method": str(_field(r, "method")), "privacy": str(_field(r, "privacy")),
            "eps_spent": float(_field(r, "eps_spent")), "delta_spent": float(_field(r, "delta_spent")),
            "abs": float(_field(r, "abs")), "rel": float(_field(r, "rel")),
            "sup_abs": float("nan") if sup is None else float(sup),
            "centre_abs": float("nan") if centre is None else float(centre),
            "time_s": float(_field(r, "time_s")), "error_bound": float(_field(r, "error_bound")),
            "support_size": int(_field(r, "support_size")), "seeds": _seeds_json(_field(r, "seeds")),
            "run_seed": int(run_seed), "n_queries": int(n_queries), "J": int(J),
            "budget_epsilon": float(epsilon), "budget_delta": float(delta),
        })
    df = typed_records(pd.DataFrame(rows, columns=list(COLUMNS)))
    check_records(df, source=f"records of {dataset}")
    return df


def typed_records(df: pd.DataFrame) -> pd.DataFrame:
    """``df`` with the dtypes of :data:`COLUMNS` (e.g. an empty records table that keeps its dtypes).

    Parameters
    ----------
    df : pandas.DataFrame
        A table with the :data:`COLUMNS`.

    Returns
    -------
    pandas.DataFrame
        A copy with each column cast to its dtype.
    """
    return df.astype(COLUMNS)


def check_records(df: pd.DataFrame, *, source: str) -> pd.DataFrame:
    """``df`` if it is a records table: exactly the :data:`COLUMNS` (in order, with their dtypes) and a unique key.

    Raises
    ------
    ValueError
        Naming ``source`` and the missing or extra columns, a wrong dtype or the first duplicated key.
    """
    cols = list(df.columns)
    if cols != list(COLUMNS):
        missing = [c for c in COLUMNS if c not in cols]
        extra = [c for c in cols if c not in COLUMNS]
        raise ValueError(f"{source}: not a leaderboard records table (missing columns {missing}, extra {extra}; "
                         f"expected {list(COLUMNS)})")
    wrong = {c: str(df[c].dtype) for c, t in COLUMNS.items() if str(df[c].dtype) != t}
    if wrong:
        raise ValueError(f"{source}: column dtype(s) {wrong}; expected {({c: COLUMNS[c] for c in wrong})}")
    dup = df.duplicated(list(KEY), keep=False)
    if dup.any():
        first = df.loc[dup, list(KEY)].iloc[0].to_dict()
        raise ValueError(f"{source}: {int(dup.sum())} rows share a key {KEY}, e.g. {first}")
    return df


def write_records(df: pd.DataFrame, path: str | os.PathLike, *, replace: bool = False) -> Path:
    """Write a records table to ``path`` (Parquet, atomically), checked first (:func:`check_records`).

    Raises
    ------
    BoardFileError
        When ``path`` exists and ``replace`` is False: nothing is overwritten.
    """
    path = Path(path)
    check_records(df, source=str(path))
    if path.exists() and not replace:
        raise BoardFileError(f"{path} exists: not overwritten (pass replace=True, or --replace, to replace it)")
    path.parent.mkdir(parents=True, exist_ok=True)
    import io

    buf = io.BytesIO()
    df.to_parquet(buf, index=False, engine="pyarrow", compression="zstd")
    write_atomic(path, buf.getvalue())
    return path


def read_records(path: str | os.PathLike) -> pd.DataFrame:
    """A records table from ``path``, checked (:func:`check_records`).

    Raises
    ------
    BoardFileError
        When the file is missing (the message names it).
    ValueError
        When it is not a records table.
    """
    path = Path(path)
    if not path.is_file():
        raise BoardFileError(f"leaderboard records file not found: {path}")
    df = pd.read_parquet(path, engine="pyarrow")
    df = df.astype({c: t for c, t in COLUMNS.items() if c in df.columns and t == "object"})
    return check_records(df, source=str(path))


def read_board(path: str | os.PathLike | None = None) -> pd.DataFrame:
    """The board's records (default: the published board :data:`PUBLISHED`) as a DataFrame (:data:`COLUMNS`).

    Raises
    ------
    BoardFileError
        When the file is missing; the message names it (the published board is written by
        ``python -m dpkit.batch.assemble leaderboard <batch folder> --publish``).
    """
    path = Path(path) if path is not None else PUBLISHED
    if not path.is_file():
        how = (" (publish a board with `python -m dpkit.batch.assemble leaderboard <batch folder> --publish`)"
               if path == PUBLISHED else "")
        raise BoardFileError(f"leaderboard records file not found: {path}{how}")
    return read_records(path)


def write_provenance(prov: Mapping[str, Any], path: str | os.PathLike, *, replace: bool = False) -> Path:
    """Write a board's provenance as JSON (atomically); refuses to overwrite unless ``replace``.

    Raises
    ------
    BoardFileError
        When ``path`` exists and ``replace`` is False.
    """
    path = Path(path)
    if path.exists() and not replace:
        raise BoardFileError(f"{path} exists: not overwritten (pass replace=True, or --replace, to replace it)")
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, json.dumps(dict(prov), indent=2, sort_keys=True, default=str) + "\n")
    return path


def _runs_commits_text(runs: Any) -> str:
    """The runs' commits and whether their trees were clean (each run's ``git``: ``{commit, dirty}``), or how many
    runs did not record theirs."""
    seen: dict[tuple[str, bool | None], int] = {}
    unknown = 0
    for run in runs if isinstance(runs, list) else []:
        git = run.get("git") if isinstance(run, dict) else None
        if not isinstance(git, dict) or not git.get("commit"):
            unknown += 1
            continue
        key = (str(git["commit"])[:12], git.get("dirty"))
        seen[key] = seen.get(key, 0) + 1
    state = {False: "clean", True: "uncommitted changes", None: "tree state not recorded"}
    parts = [f"{c} ({n} run(s), {state[d if d is None else bool(d)]})" for (c, d), n in sorted(seen.items(),
                                                                                               key=str)]
    if unknown and not parts:
        return "Runs' commits not recorded."
    if unknown:
        parts.append(f"not recorded for {unknown} run(s)")
    return "The runs' commits: " + "; ".join(parts) + "." if parts else "No runs recorded."


def provenance_line(records_path: str | os.PathLike) -> str:
    """One sentence on where the board of ``records_path`` came from, read from the ``provenance.json`` beside it
    (:func:`write_provenance`): the date, dpkit's version and commit, the runs, their compute and the machine, each
    run's commit and whether its tree was clean (or that a run did not record it), and (where the runs recorded
    their repetitions' times) the wall time projected on more workers.

    Raises
    ------
    BoardFileError
        When there is no provenance file beside the records, or it is not the JSON object the assembler writes.
    """
    path = Path(records_path).parent / PROVENANCE_NAME
    try:
        prov = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise BoardFileError(f"{path}: no readable provenance beside the records ({exc})") from exc
    if not isinstance(prov, dict) or "runs" not in prov:
        raise BoardFileError(f"{path}: not a board provenance (no 'runs')")
    git = prov.get("git") or {}
    commit = str(git.get("commit") or "unknown commit")[:12] + (" (uncommitted changes)" if git.get("dirty") else "")
    machine = prov.get("machine") or {}
    compute = prov.get("compute_s")
    cost = f"{float(compute) / 3600:.1f} h of compute" if compute is not None else "compute not recorded"
    line = (f"Assembled {str(prov.get('date', 'on an unrecorded date'))[:10]} by dpkit {prov.get('dpkit_version', '?')} "
            f"at {commit} from {len(prov['runs'])} run(s): {cost} on {machine.get('cpu_count', '?')} CPU(s) "
            f"({machine.get('platform', 'unknown platform')}).")
    line += " " + _runs_commits_text(prov["runs"])
    projection = prov.get("projection")
    if isinstance(projection, list) and projection:
        line += (" Its repetitions, scheduled longest first on " + "/".join(str(p["workers"]) for p in projection)
                 + " workers: " + "/".join(f"{float(p['list_schedule_s']) / 60:.0f}" for p in projection)
                 + " min of wall time (start-up and assembly not included).")
    return line
