"""Assemble Tables 3.2/3.3 from the ``20_tables`` runs of a batch output (split per cell by the
batch runner): ``python -m dpkit.outputs.assemble tables OUTPUT [--out DIR] [--paper-figures]``."""
from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from dpkit.outputs.figures.tables import plot_errors_vs_sigma
from dpkit.outputs.plotting import export_figure
from dpkit.outputs.tables import export_table, paper_comparison_table, rows_frame

__all__ = ["rows_from_runs", "assemble_tables", "main"]


def rows_from_runs(output: str, *, notebook: str = "20_tables") -> list[dict[str, Any]]:
    """Table rows of every finished ``notebook`` run under a batch output folder.

    Rows of the same (data set, σ, mechanism, constants) from several runs are an error (two runs
    computed the same cell): nothing is silently overwritten.
    """
    rows, seen = [], {}
    for rj in sorted(Path(output).glob(f"{notebook}/*/run.json")):
        info = json.loads(rj.read_text())
        mj = rj.parent / "metrics.json"
        if info.get("status") != "ok" or not mj.is_file():
            continue
        for r in json.loads(mj.read_text()).get("table", []):
            key = (r["dataset"], r["sigma"], r["mechanism"], r.get("constants", "correct"))
            if key in seen:
                raise ValueError(f"cell {key} computed by two runs: {seen[key]} and {rj.parent.name}")
            seen[key] = rj.parent.name
            rows.append(r)
    return rows


def assemble_tables(output: str, *, out: str | None = None, paper_figures: bool = False) -> dict[str, Any]:
    """Tables 3.2/3.3 (ours ± std next to the thesis), figures and worst times from a batch output.

    Writes ``tables_3_2_3_3.{csv,md,tex}``, ``tables_rows.csv`` and ``tables_{abs,rel}_vs_sigma.{pdf,png}``
    into ``out`` (default ``<output>/assembled``) and, with ``paper_figures``, the figures into ``figures/``.
    """
    rows = rows_from_runs(output)
    if not rows:
        raise FileNotFoundError(f"no finished 20_tables runs with rows under {output}")
    dest = Path(out) if out else Path(output) / "assembled"
    comparison = paper_comparison_table(rows)
    export_table(comparison, "tables_3_2_3_3", dest)
    export_table(rows_frame(rows), "tables_rows", dest)
    for kind in ("abs", "rel"):
        fig = plot_errors_vs_sigma(rows, kind=kind, title=f"worst {kind} error vs σ (dpkit solid, thesis dashed)")
        export_figure(fig, f"tables_{kind}_vs_sigma", dest, notebook="20_tables", paper=paper_figures)
    df = rows_frame(rows)
    worst = df.groupby(["dataset", "mechanism", "constants"])["time_max_s"].max().reset_index()
    export_table(worst, "worst_times", dest)
    return {"rows": len(rows), "out": str(dest), "datasets": sorted({r["dataset"] for r in rows})}


def main(argv: list[str] | None = None) -> int:
    """``python -m dpkit.outputs.assemble tables OUTPUT [--out DIR] [--paper-figures]``."""
    ap = argparse.ArgumentParser(prog="python -m dpkit.outputs.assemble")
    sub = ap.add_subparsers(dest="cmd", required=True)
    t = sub.add_parser("tables", help="assemble Tables 3.2/3.3 from the 20_tables runs of a batch output")
    t.add_argument("output")
    t.add_argument("--out", default=None)
    t.add_argument("--paper-figures", action="store_true", help="also export the figures into figures/")
    args = ap.parse_args(argv)
    info = assemble_tables(args.output, out=args.out, paper_figures=args.paper_figures)
    print(f"assembled {info['rows']} rows ({', '.join(info['datasets'])}) into {info['out']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
