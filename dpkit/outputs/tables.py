"""Table writers: result rows to DataFrames, the thesis's table layout, and the one exporter of
tables (CSV, markdown, LaTeX)."""
from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pandas as pd

__all__ = ["rows_frame", "paper_comparison_table", "export_table"]


def rows_frame(rows: Iterable[dict[str, Any]]) -> pd.DataFrame:
    """Rows as a DataFrame with nested dicts dropped (for display and export)."""
    df = pd.DataFrame(list(rows))
    return df[[c for c in df.columns if not df[c].map(lambda v: isinstance(v, dict)).any()]] if not df.empty else df


def paper_comparison_table(rows: Iterable[dict[str, Any]]) -> pd.DataFrame:
    """Tables 3.2/3.3 layout: one line per (mechanism, data set, abs|rel), σ as columns,
    each cell ``ours ± std (paper)``; plus the worst time next to the paper's."""
    df = pd.DataFrame(list(rows))
    lines = []
    if df.empty:
        return pd.DataFrame(columns=["mechanism", "constants", "dataset", "error"])
    if "constants" not in df:
        df["constants"] = "correct"
    for (mech, constants, ds), g in df.groupby(["mechanism", "constants", "dataset"], sort=True):
        for kind in ("abs", "rel"):
            line = {"mechanism": mech, "constants": constants, "dataset": ds, "error": kind}
            for _, r in g.sort_values("sigma").iterrows():
                line[f"σ={r['sigma']:g}"] = f"{r[f'{kind}_mean']:.3f} ± {r[f'{kind}_std']:.3f} ({r[f'paper_{kind}']:.3f})"
            if kind == "abs":
                line["worst time (s)"] = f"{g['time_max_s'].max():.2f} ({g['paper_time_s'].iloc[0]:.1f})"
            else:
                line["worst time (s)"] = ""
            lines.append(line)
    return pd.DataFrame(lines)


def export_table(df: pd.DataFrame, name: str, output_dir: str | Path) -> list[Path]:
    """Write a DataFrame as CSV, markdown and LaTeX (``name.csv|md|tex``) into ``output_dir``."""
    out = Path(output_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = [out / f"{name}.csv", out / f"{name}.md", out / f"{name}.tex"]
    df.to_csv(paths[0], index=False)
    paths[1].write_text(df.to_markdown(index=False) if _has_tabulate() else df.to_string(index=False))
    paths[2].write_text(df.to_latex(index=False, escape=True))
    return paths


def _has_tabulate() -> bool:
    try:
        import tabulate  # noqa: F401

        return True
    except ImportError:
        return False
