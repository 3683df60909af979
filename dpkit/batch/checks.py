"""Gather every notebook's checks into one table (markdown and LaTeX).

Every ``metrics.json`` below a results folder (plain and batch runs, merged with :func:`dpkit.batch.collect`) gives
one row per check, with whether its verdict agrees with the expected one. Failed runs, unreadable files, lost runs and
empty folders are listed by path (:mod:`dpkit.batch.results`), never hidden behind "all PASS". The command and its
exit statuses: docs/guide/export.md.
"""
from __future__ import annotations

import argparse
import math
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
    unavailable_runs,
    write_all,
)

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["gather_checks", "summarise_checks", "to_markdown", "to_latex", "write_summary", "main"]

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
        unavailable.extend(unavailable_runs(runs))
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


def _fmt(x: Any) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return ""
    if isinstance(x, (bool,)):
        return "yes" if x else "NO"
    if isinstance(x, (int, float)):
        return f"{x:.4g}"
    return str(x)


def _cells(df, columns: Iterable[str]) -> list[list[str]]:
    return [[_fmt(getattr(r, c)) for c in columns] for r in df.itertuples()]


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


def main(argv: list[str] | None = None) -> int:
    """Command line; exit status 0 all as expected, 1 unexpected verdicts or problems, 2 no such folder or ``--out``
    not writable (one line naming it; nothing written)."""
    ap = argparse.ArgumentParser(prog="python -m dpkit.batch.checks",
                                 description="Gather every notebook's checks into one table.")
    ap.add_argument("results_dir")
    ap.add_argument("--out", default=None, help="file stem for .md/.tex/.csv (default: print markdown only)")
    ap.add_argument("--latex", action="store_true", help="print LaTeX instead of markdown")
    args = ap.parse_args(argv)
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
    return 0 if s["all_consistent"] and not s["problems"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
