"""Table writers: result rows to DataFrames, the thesis's table layout, and the one exporter of
tables (CSV, markdown, LaTeX)."""
from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["rows_frame", "paper_comparison_table", "export_table", "to_latex", "HEADERS"]


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


#: Human headers (LaTeX) for the column names the experiments write.
HEADERS: dict[str, str] = {
    "dataset": "data set", "sigma": r"$\sigma$", "mechanism": "mech.", "constants": "constants", "method": "method",
    "privacy": "privacy", "abs_mean": "mean worst abs.", "abs_std": "sd abs.", "abs_min": "min abs.",
    "abs_max": "max abs.", "rel_mean": "mean worst rel.", "rel_std": "sd rel.", "time_s": "time (s)",
    "time_max_s": "worst time (s)", "time_median_s": "median time (s)", "reps": "reps", "paper_abs": "thesis abs.",
    "paper_rel": "thesis rel.", "ratio_abs": "ours/thesis abs.", "ratio_rel": "ours/thesis rel.",
    "paper_time_s": "thesis time (s)", "support_size_median": "support", "eps_spent": r"$\varepsilon$ spent",
    "delta_spent": r"$\delta$ spent", "epsilon": r"$\varepsilon$", "delta": r"$\delta$", "param": "parameter",
    "value": "value", "win_abs": "abs.", "win_rel": "rel.", "error": "error", "runner_up": "runner-up",
}
#: Unicode symbols of the experiments' strings, as LaTeX math.
_SYMBOLS = {"σ": r"$\sigma$", "ε": r"$\varepsilon$", "δ": r"$\delta$", "κ": r"$\kappa$", "±": r"$\pm$",
            "×": r"$\times$", "≤": r"$\le$", "≥": r"$\ge$", "−": "-", "–": "--",
            "α": r"$\alpha$", "β": r"$\beta$", "γ": r"$\gamma$", "λ": r"$\lambda$", "μ": r"$\mu$", "ρ": r"$\rho$",
            "τ": r"$\tau$", "θ": r"$\theta$", "η": r"$\eta$", "Δ": r"$\Delta$", "∞": r"$\infty$", "≈": r"$\approx$",
            "→": r"$\to$", "·": r"$\cdot$", "…": r"\ldots{}", "—": "---", "’": "'", "‖": r"$\|$", "√": r"$\surd$"}
#: Columns printed to 3 significant digits whatever ``decimals`` is (δ = 10⁻⁵ is not 0.000).
_SIGNIFICANT = frozenset({"delta", "delta_spent", "error_bound"})
_DROP_FROM_LATEX = ("stages_of_slowest", "error_bound", "params", "ledger", "timings")


_ESCAPES = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_", "{": r"\{",
            "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}"}


_SUPERSCRIPTS = {"⁻": "-", "⁰": "0", "¹": "1", "²": "2", "³": "3", "⁴": "4", "⁵": "5", "⁶": "6", "⁷": "7", "⁸": "8",
                 "⁹": "9"}


def _latex_text(s: str) -> str:
    out = "".join(_ESCAPES.get(ch, ch) for ch in str(s))
    # a run of superscripts (10⁻³) is one math group: $^{-3}$
    out = re.sub("[" + "".join(_SUPERSCRIPTS) + "]+",
                 lambda m: "$^{" + "".join(_SUPERSCRIPTS[c] for c in m.group()) + "}$", out)
    for k, v in _SYMBOLS.items():
        out = out.replace(k, v)
    return out


def to_latex(df: pd.DataFrame, *, caption: str, label: str, decimals: int | None = 3) -> str:
    """A booktabs ``table`` that compiles with pdflatex as it is: human headers (:data:`HEADERS`), math-mode
    symbols, floats to ``decimals`` places (the thesis prints 3; ``None``: 4 significant digits), integers as
    integers, a caption and a label.

    Needs ``\\usepackage{booktabs}`` in the including document.
    """
    df = df[[c for c in df.columns if c not in _DROP_FROM_LATEX]]
    cols = [HEADERS.get(c, _latex_text(c.replace("_", " "))) for c in df.columns]

    integral = {c for c in df.columns if pd.api.types.is_numeric_dtype(df[c]) and not pd.api.types.is_bool_dtype(df[c])
                and df[c].dropna().map(lambda v: float(v).is_integer() and abs(v) < 1e15).all()}

    def cell(c: str, v: Any) -> str:
        if isinstance(v, (bool, np.bool_)) or v is None or not isinstance(v, (int, float, np.number)):
            return _latex_text(str(v))
        if v != v:
            return "--"
        if c in integral:
            return str(int(v))
        if decimals is None or c in _SIGNIFICANT:
            return _latex_text(f"{float(v):.4g}" if decimals is None else f"{float(v):.3g}")
        if v != 0 and abs(v) < 0.5 * 10.0 ** -decimals:  # never print a non-zero value as 0.000
            return _latex_text(f"{float(v):.2g}")
        return f"{float(v):.{decimals}f}"

    align = "".join("r" if pd.api.types.is_numeric_dtype(df[c]) else "l" for c in df.columns)
    if not cols:  # a run without rows (e.g. a data set unavailable offline): an empty column spec does not compile
        align, cols = "l", ["(no columns)"]
    lines = [r"\begin{table}[htbp]", r"\centering", r"\small", rf"\caption{{{_latex_text(caption)}}}",
             rf"\label{{{label}}}", rf"\begin{{tabular}}{{{align}}}", r"\toprule", " & ".join(cols) + r" \\",
             r"\midrule"]
    for _, row in df.iterrows():
        lines.append(" & ".join(cell(c, row[c]) for c in df.columns) + r" \\")
    if df.empty:
        lines.append(rf"\multicolumn{{{len(cols)}}}{{c}}{{no rows}} \\")
    lines += [r"\bottomrule", r"\end{tabular}", r"\end{table}", ""]
    return "\n".join(lines)


def export_table(df: pd.DataFrame, name: str, output_dir: str | Path, *, caption: str | None = None,
                 label: str | None = None, decimals: int = 3) -> list[Path]:
    """Write a DataFrame as CSV, markdown and LaTeX (``name.csv|md|tex``) into ``output_dir``.

    The LaTeX is :func:`to_latex` (booktabs, human headers, ``decimals`` places, caption and label
    ``tab:<name>``): it compiles with pdflatex as it is.
    """
    out = Path(output_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = [out / f"{name}.csv", out / f"{name}.md", out / f"{name}.tex"]
    df.to_csv(paths[0], index=False)
    paths[1].write_text(df.to_markdown(index=False) if _has_tabulate() else df.to_string(index=False))
    cap = caption or name.replace("_", " ")
    paths[2].write_text(to_latex(df, caption=cap, label=label or f"tab:{name}", decimals=decimals))
    return paths


def _has_tabulate() -> bool:
    try:
        import tabulate  # noqa: F401

        return True
    except ImportError:
        return False
