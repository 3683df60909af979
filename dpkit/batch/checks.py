"""Gather every notebook's checks into one table (markdown and LaTeX).

``python -m dpkit.batch.checks RESULTS_DIR [--out STEM]`` finds every ``metrics.json`` below
``RESULTS_DIR`` — both plain notebook runs (``RESULTS_DIR/<notebook>/metrics.json``) and
batch runs (``RESULTS_DIR/<notebook>/<hash>/``, merged with :func:`dpkit.batch.collect`) —
and prints one row per check: notebook, id, claim, statistic, bound, confidence,
verdict, expected and whether the two agree. With ``--out`` it also writes
``STEM.md``, ``STEM.tex`` and ``STEM.csv``. The exit status is 1 when any verdict differs
from its expected verdict.
"""
from __future__ import annotations

import argparse
import json
import math
import tempfile
from pathlib import Path
from typing import Any, Iterable

__all__ = ["gather_checks", "summarise_checks", "to_markdown", "to_latex", "write_summary", "main"]

COLUMNS = ["notebook", "id", "claim", "statistic", "bound", "confidence", "verdict", "expected", "consistent"]


def gather_checks(results_dir: str | Path):
    """All checks below ``results_dir`` as a DataFrame with columns :data:`COLUMNS` (+ ``run_key`` for batches)."""
    import pandas as pd

    from dpkit.batch import collect

    root = Path(results_dir)
    if not root.is_dir():
        raise FileNotFoundError(f"results folder not found: {root}")
    frames = []
    # batch layout (dpkit.batch): <base>/<notebook>/<12-hex key>/{run.json,metrics.json}
    batch_dirs = {
        rj.parent.parent.parent
        for rj in root.glob("**/run.json")
        if len(rj.parent.name) == 12 and all(ch in "0123456789abcdef" for ch in rj.parent.name)
    }
    for b in sorted(batch_dirs):
        with tempfile.TemporaryDirectory() as tmp:
            _, checks = collect(b, out=Path(tmp) / "collected")
        if len(checks):
            checks = checks.rename(columns={"run_notebook": "notebook"})
            frames.append(checks)
    seen = {p.resolve() for b in batch_dirs for p in b.glob("*/*/metrics.json")}
    rows = []
    for mj in sorted(root.glob("**/metrics.json")):
        if mj.resolve() in seen:
            continue
        try:
            metrics = json.loads(mj.read_text())
        except (OSError, json.JSONDecodeError):
            continue
        stem = mj.parent.name
        for c in metrics.get("checks", []) or []:
            rows.append({"notebook": stem, **c})
    if rows:
        frames.append(pd.DataFrame(rows))
    if not frames:
        return pd.DataFrame(columns=COLUMNS)
    df = pd.concat(frames, ignore_index=True)
    for col in COLUMNS:
        if col not in df.columns:
            df[col] = None
    df["consistent"] = df["verdict"] == df["expected"]
    extra = [c for c in ("run_key",) if c in df.columns]
    return df[COLUMNS + extra].sort_values(["notebook", *extra], kind="stable").reset_index(drop=True)


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


_TEX = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_", "{": r"\{", "}": r"\}",
        "~": r"\textasciitilde{}", "^": r"\textasciicircum{}"}


def _tex_escape(s: str) -> str:
    return "".join(_TEX.get(ch, ch) for ch in s)


def to_latex(df, columns: Iterable[str] = ("notebook", "id", "statistic", "bound", "confidence", "verdict", "expected")) -> str:
    """A ``booktabs`` LaTeX tabular (claims are long; they are left to the markdown table by default)."""
    cols = list(columns)
    align = "".join("r" if c in ("statistic", "bound", "confidence") else "l" for c in cols)
    out = [f"\\begin{{tabular}}{{{align}}}", "\\toprule", " & ".join(_tex_escape(c) for c in cols) + r" \\", "\\midrule"]
    for row in _cells(df, cols):
        out.append(" & ".join(_tex_escape(c) for c in row) + r" \\")
    out += ["\\bottomrule", "\\end{tabular}"]
    return "\n".join(out) + "\n"


def write_summary(results_dir: str | Path, out: str | Path) -> dict[str, Any]:
    """Gather the checks and write ``out.md``, ``out.tex`` and ``out.csv``; return :func:`summarise_checks`."""
    df = gather_checks(results_dir)
    stem = Path(out)
    stem.parent.mkdir(parents=True, exist_ok=True)
    Path(f"{stem}.md").write_text(to_markdown(df))
    Path(f"{stem}.tex").write_text(to_latex(df))
    df.to_csv(f"{stem}.csv", index=False)
    return summarise_checks(df)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m dpkit.batch.checks", description="Gather every notebook's checks into one table.")
    ap.add_argument("results_dir")
    ap.add_argument("--out", default=None, help="file stem for .md/.tex/.csv (default: print markdown only)")
    ap.add_argument("--latex", action="store_true", help="print LaTeX instead of markdown")
    args = ap.parse_args(argv)
    df = gather_checks(args.results_dir)
    print(to_latex(df) if args.latex else to_markdown(df))
    s = summarise_checks(df)
    if args.out:
        write_summary(args.results_dir, args.out)
    print(f"{s['n_checks']} checks: {s['n_claims_pass']}/{s['n_claims']} claims PASS, "
          f"{s['n_controls_fail']}/{s['n_controls']} negative controls FAIL"
          + ("" if s["all_consistent"] else f"; UNEXPECTED: {', '.join(s['unexpected'])}"))
    return 0 if s["all_consistent"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
