"""Gather every notebook's checks into one table (markdown and LaTeX).

Every ``metrics.json`` below a results folder (plain and batch runs, merged with :func:`dpkit.batch.collect`) gives
one row per check, with whether its verdict agrees with the expected one. Failed runs, unreadable files, lost runs and
empty folders are listed by path (:mod:`dpkit.batch.results`), never hidden behind "all PASS". The command and its
exit statuses: docs/guide/export.md.

``--publish`` writes a batch's checks as published data (:mod:`dpkit.experiments.checks_records`: ``checks.csv``
and ``provenance.json`` in ``data/checks/``, :func:`publish_checks`), which the documentation renders without running
anything: never those of a batch with failed runs or unreadable files (a published table states every check), never
those of a QUICK run (the published checks are full-size), never over published files without ``--replace``.
Inconsistent verdicts are published as they are (they are results), and the command exits 1 all the same.
"""
from __future__ import annotations

import argparse
import dataclasses
import math
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable

from dpkit.batch.results import (
    UNAVAILABLE,
    Problem,
    Unavailable,
    as_unavailable,
    failure_reason,
    is_run_key,
    read_json,
    read_metrics_json,
    scan_runs,
    unavailable_in_scanned_runs,
    write_all,
)

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["gather_checks", "summarise_checks", "format_cell", "to_markdown", "to_latex", "write_summary", "check_publish_checks",
           "publish_checks", "main"]

COLUMNS = ["notebook", "id", "claim", "statistic", "bound", "confidence", "verdict", "expected", "consistent"]


def _plain_checks(root: Path, skip: set[Path], problems: list[Problem], unavailable: list[Unavailable]
                  ) -> list[dict[str, Any]]:
    """Checks of plain notebook runs (``<dir>/metrics.json``, optional ``run.json``) not in ``skip``."""
    rows = []
    for folder in sorted({p.parent for pattern in ("**/metrics.json", "**/run.json") for p in root.glob(pattern)}):
        rel = folder.relative_to(root).parts
        if folder.resolve() in skip or any(part.startswith(".") for part in rel):
            continue
        if (folder / "run.json").is_file():
            info, bad = read_json(folder / "run.json")
            if bad is not None or not isinstance(info, dict):
                problems.append(bad or Problem(folder / "run.json", "run.json is not a JSON object"))
            elif info.get("status") == UNAVAILABLE:
                unavailable.append(as_unavailable(folder, info))
            elif info.get("status") != "ok":
                problems.append(Problem(folder, failure_reason(info)))
        if not (folder / "metrics.json").is_file():
            continue
        metrics, bad = read_metrics_json(folder / "metrics.json")
        if bad is not None:
            problems.append(bad)
            continue
        rows.extend({"notebook": folder.name, **c} for c in metrics.get("checks", []) or [])
    return rows


def gather_checks(results_dir: str | Path) -> pd.DataFrame:
    """All checks below ``results_dir`` as a DataFrame with columns :data:`COLUMNS` (+ ``run_key`` for batches).

    ``df.attrs["problems"]`` lists (:class:`~dpkit.batch.results.Problem`) the failed runs and the
    unreadable ``run.json``/``metrics.json`` files found on the way; their checks are not in the table.
    ``df.attrs["unavailable"]`` lists (:class:`~dpkit.batch.results.Unavailable`) the runs recorded as unavailable.
    """
    import pandas as pd

    root = Path(results_dir)
    if not root.is_dir():
        raise FileNotFoundError(f"results folder not found (or not a folder): {root}")
    problems: list[Problem] = []
    unavailable: list[Unavailable] = []
    rows: list[dict[str, Any]] = []
    # batch layout (dpkit.batch): <base>/<notebook>/<12-hex key>/{run.json,metrics.json}, <base>/batch.json; a batch
    # is found by any of them, so one whose every run was lost (no run.json anywhere) still lists its runs
    keyed = {k for k in root.glob("**/*") if k.is_dir() and is_run_key(k.name) and not k.parent.name.startswith(".")}
    batch_dirs = {b for k in keyed if (b := k.parent.parent) == root or root in b.parents}
    batch_dirs |= {bj.parent for bj in root.glob("**/batch.json")}
    skip: set[Path] = set()
    for b in sorted(batch_dirs):
        runs, found = scan_runs(b)
        problems.extend(found)
        unavailable.extend(unavailable_in_scanned_runs(runs))
        skip |= {p.resolve() for p in b.glob("*/*") if p.is_dir()}
        for rec in runs:
            rows.extend({"notebook": Path(str(rec.info.get("notebook", ""))).stem, "run_key": rec.folder.name, **c}
                        for c in rec.metrics.get("checks", []) or [])
    rows += _plain_checks(root, skip, problems, unavailable)
    if not rows and not problems and not unavailable and not any(root.glob("**/metrics.json")):
        problems.append(Problem(root, "no metrics.json and no batch run below this folder: nothing to check"))
    df = pd.DataFrame(rows) if rows else pd.DataFrame(columns=COLUMNS)
    for col in COLUMNS:
        if col not in df.columns:
            df[col] = None
    df["consistent"] = df["verdict"] == df["expected"]
    extra = [c for c in ("run_key",) if c in df.columns]
    df = df[COLUMNS + extra].sort_values(["notebook", *extra], kind="stable").reset_index(drop=True)
    df.attrs["problems"] = problems
    df.attrs["unavailable"] = unavailable
    return df


def summarise_checks(df) -> dict[str, Any]:
    """Counts: claims (expected PASS), negative controls (expected FAIL), and how many came out as expected."""
    claims = df[df["expected"] == "PASS"]
    controls = df[df["expected"] == "FAIL"]
    return {
        "n_checks": int(len(df)),
        "n_claims": int(len(claims)),
        "n_claims_pass": int((claims["verdict"] == "PASS").sum()),
        "n_controls": int(len(controls)),
        "n_controls_fail": int((controls["verdict"] == "FAIL").sum()),
        "all_consistent": bool(df["consistent"].all()) if len(df) else True,
        "unexpected": [f"{r.notebook}:{r.id}" for r in df.itertuples() if not r.consistent],
        "problems": [str(p) for p in df.attrs.get("problems", [])],
        "unavailable": [str(u) for u in df.attrs.get("unavailable", [])],
    }


def format_cell(x: Any) -> str:
    """A checks table's cell as printed: numbers to 4 significant digits, booleans yes/NO, blank for none."""
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return ""
    if isinstance(x, (bool,)):
        return "yes" if x else "NO"
    if isinstance(x, (int, float)):
        return f"{x:.4g}"
    return str(x)


def _cells(df, columns: Iterable[str]) -> list[list[str]]:
    cols = list(columns)  # positional: a column name need not be an identifier ("verdict / expected")
    return [[format_cell(v) for v in row] for row in df[cols].itertuples(index=False, name=None)]


def to_markdown(df, columns: Iterable[str] = COLUMNS) -> str:
    """A GitHub-flavoured markdown table (``|`` in cells escaped)."""
    cols = list(columns)
    lines = ["| " + " | ".join(cols) + " |", "|" + "|".join("---" for _ in cols) + "|"]
    for row in _cells(df, cols):
        lines.append("| " + " | ".join(c.replace("|", "\\|").replace("\n", " ") for c in row) + " |")
    return "\n".join(lines) + "\n"


def to_latex(df: pd.DataFrame, columns: Iterable[str] = ("notebook", "id", "statistic", "bound", "confidence", "verdict",
                                                          "expected")) -> str:
    """A booktabs LaTeX table of the checks (:func:`dpkit.outputs.tables.to_latex`; claims are long, they are left to
    the markdown table by default)."""
    from dpkit.outputs.tables import to_latex as _to_latex

    cols = [c for c in columns if c in df.columns]
    return _to_latex(df[cols], caption="Every check of every notebook: statistic, bound, verdict and the verdict the "
                     "theory expects", label="tab:checks", decimals=None)


def _write(df, out: str | Path) -> None:
    """``out.md``, ``out.tex`` and ``out.csv``, all or none (an ``OSError`` naming the folder)."""
    stem = Path(out)
    unavailable = df.attrs.get("unavailable", [])
    note = ("\nNot run here: data set(s) documented as possibly unavailable offline and not on this machine "
            "(their checks are not in the table):\n\n" + "".join(f"- {u}\n" for u in unavailable)) if unavailable else ""
    write_all([(Path(f"{stem}.md"), lambda p: p.write_text(to_markdown(df) + note)),
               (Path(f"{stem}.tex"), lambda p: p.write_text(to_latex(df))),
               (Path(f"{stem}.csv"), lambda p: df.to_csv(p, index=False))])


def write_summary(results_dir: str | Path, out: str | Path) -> dict[str, Any]:
    """Gather the checks and write ``out.md``, ``out.tex`` and ``out.csv``; return :func:`summarise_checks`."""
    df = gather_checks(results_dir)
    _write(df, out)
    return summarise_checks(df)


def _within(path: Path, root: Path) -> Path:
    """``path`` relative to ``root`` (both resolved) where it lies below it, else as it is."""
    try:
        return Path(path).resolve().relative_to(root.resolve())
    except ValueError:
        return Path(path)


def _publish_folder(publish: str | os.PathLike | None) -> Path:
    from dpkit.experiments import checks_records

    return Path(publish) if publish else checks_records.PUBLISHED.parent


def check_publish_checks(publish: str | os.PathLike | None = None, *, replace: bool = False) -> None:
    """Refuse to publish over published checks unless ``replace`` (before anything is gathered).

    Parameters
    ----------
    publish : path-like, optional
        The folder to publish into (default ``data/checks/``).
    replace : bool
        Whether published files may be replaced.

    Raises
    ------
    dpkit.experiments.checks_records.ChecksFileError
        Naming the files that are there.
    """
    from dpkit.core.published import PROVENANCE_NAME, refuse_overwrite
    from dpkit.experiments.checks_records import CHECKS_NAME, ChecksFileError

    folder = _publish_folder(publish)
    refuse_overwrite([folder / CHECKS_NAME, folder / PROVENANCE_NAME], replace=replace, what="published checks",
                     error=ChecksFileError)


def publish_checks(output: str | os.PathLike, publish: str | os.PathLike | None = None, *, replace: bool = False,
                   checks: pd.DataFrame | None = None) -> list[Path]:
    """Write the checks of a batch output's runs as ``checks.csv`` with its ``provenance.json`` (the runs, the commit,
    the machine, the date, the compute, and the runs recorded as unavailable) into ``publish`` (default
    ``data/checks/``), checked first (:func:`~dpkit.experiments.checks_records.check_checks`).

    Parameters
    ----------
    output : path-like
        A batch's output folder (its runs are ``<output>/<notebook>/<key>/``).
    publish : path-like, optional
        The folder to publish into (default ``data/checks/``).
    replace : bool
        Whether published files may be replaced.
    checks : pandas.DataFrame, optional
        ``gather_checks(output)`` when the caller has it already.

    Returns
    -------
    list of Path
        The files written.

    Raises
    ------
    ValueError
        When a run failed or a file is unreadable (naming them: a published table states every check), when a check
        is not a batch run's, when a run ran in QUICK mode (naming it), or when the checks are not a checks table.
    dpkit.experiments.checks_records.ChecksFileError
        When a published file is there and ``replace`` is False.
    """
    from dpkit.batch.board_files import board_provenance
    from dpkit.experiments.checks_records import checks_frame, write_checks

    df = gather_checks(output) if checks is None else checks
    problems = [str(p) for p in df.attrs.get("problems", [])]
    if problems:
        raise ValueError(f"{output}: {len(problems)} failed run(s) or unreadable file(s), the checks are not "
                         f"published: {'; '.join(problems)}")
    if df.empty:
        raise ValueError(f"{output}: no checks in its runs: nothing to publish")
    if "run_key" not in df.columns or df["run_key"].isna().any():
        plain = df.loc[df["run_key"].isna(), "notebook"] if "run_key" in df.columns else df["notebook"]
        raise ValueError(f"{output}: not a batch output's checks (runs <notebook>/<12-hex key>/): plain run(s) "
                         f"{sorted(set(plain))}; publish a batch's checks (make reproduce)")
    prov = board_provenance(output, notebook="*")
    listed = {str(r.get("folder")): r for r in prov["runs"]}
    unknown = sorted(set(df["run_key"]) - set(listed))
    if unknown:
        raise ValueError(f"{output}: the run(s) {unknown[:3]} are not run folders <notebook>/<key>/ of this folder "
                         "(give the batch's own output folder)")
    quick = sorted(f"{Path(str(r.get('notebook'))).stem}/{k}" for k, r in listed.items()
                   if (r.get("parameters") or {}).get("QUICK"))
    if quick:
        raise ValueError(f"{output}: run(s) in QUICK mode (test sizes), the checks are not published (they are "
                         f"full-size): {', '.join(quick)}")
    # named within the batch (<notebook>/<key>), as the runs are: the publishing machine's own folders stay out
    prov["unavailable"] = [str(dataclasses.replace(u, path=_within(u.path, Path(output))))
                           for u in df.attrs.get("unavailable", [])]
    return write_checks(checks_frame(df.to_dict("records")), _publish_folder(publish), prov, replace=replace)


def main(argv: list[str] | None = None) -> int:
    """Command line; exit status 0 all as expected, 1 unexpected verdicts or problems (``--publish``: nothing published
    when a run failed; unexpected verdicts are published), 2 no such folder, ``--out`` not writable, or nothing
    published (one line naming it; nothing written)."""
    ap = argparse.ArgumentParser(prog="python -m dpkit.batch.checks",
                                 description="Gather every notebook's checks into one table.")
    ap.add_argument("results_dir")
    ap.add_argument("--out", default=None, help="file stem for .md/.tex/.csv (default: print markdown only)")
    ap.add_argument("--latex", action="store_true", help="print LaTeX instead of markdown")
    ap.add_argument("--publish", nargs="?", const="", default=None, metavar="DIR",
                    help="also publish checks.csv and provenance.json to data/checks/ (or DIR); refused for a batch "
                         "with failed runs")
    ap.add_argument("--replace", action="store_true", help="with --publish: replace the published checks")
    args = ap.parse_args(argv)
    from dpkit.experiments.checks_records import ChecksFileError

    if args.publish is not None:
        try:
            check_publish_checks(args.publish or None, replace=args.replace)
        except ChecksFileError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
    try:
        df = gather_checks(args.results_dir)
    except FileNotFoundError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(to_latex(df) if args.latex else to_markdown(df))
    s = summarise_checks(df)
    if args.out:
        try:
            _write(df, args.out)
        except OSError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
    print(f"{s['n_checks']} checks: {s['n_claims_pass']}/{s['n_claims']} claims PASS, "
          f"{s['n_controls_fail']}/{s['n_controls']} negative controls FAIL"
          + ("" if s["all_consistent"] else f"; UNEXPECTED: {', '.join(s['unexpected'])}")
          + (f"; {len(s['problems'])} PROBLEM(S): checks missing from this table" if s["problems"] else "")
          + (f"; {len(s['unavailable'])} run(s) unavailable here (data documented as possibly unavailable offline)"
             if s["unavailable"] else ""))
    for u in s["unavailable"]:
        print(f"  unavailable: {u}")
    for p in s["problems"]:
        print(f"  {p}", file=sys.stderr)
    if args.publish is not None:
        if s["problems"]:
            print(f"error: {len(s['problems'])} failed run(s) or unreadable file(s) (above): the checks are not "
                  "published", file=sys.stderr)
        else:
            try:
                for path in publish_checks(args.results_dir, args.publish or None, replace=args.replace, checks=df):
                    print(f"published {path}")
            except (ValueError, OSError) as exc:  # ChecksFileError is an OSError
                print(f"error: {exc}", file=sys.stderr)
                return 2
    return 0 if s["all_consistent"] and not s["problems"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
