"""Table writers: result rows to DataFrames, the thesis's table layout, and the one exporter of
tables (CSV, markdown, LaTeX)."""
from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["rows_frame", "paper_comparison_table", "paper_tables_latex", "rows_longtable_latex", "export_table",
           "to_latex", "HEADERS"]


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


_PAPER_KEYS = ("mechanism", "constants", "dataset", "error")
_CELL = re.compile(r"^\s*(?P<ours>.*?)\s*\((?P<thesis>[^()]*)\)\s*$")


def _is_paper_layout(df: pd.DataFrame) -> bool:
    """``df`` is :func:`paper_comparison_table`'s output (mechanism, constants, data set, error, ``σ=…`` columns)."""
    return (not df.empty and all(c in df.columns for c in _PAPER_KEYS)
            and any(str(c).startswith("σ=") for c in df.columns))


#: Columns of the Tables 3.2/3.3 row dump a paper needs (:func:`rows_longtable_latex`); the CSV keeps every column.
ROWS_LATEX_COLUMNS = ("dataset", "sigma", "mechanism", "constants", "abs_mean", "abs_std", "abs_min", "abs_max",
                      "paper_abs", "rel_mean", "rel_std", "paper_rel", "time_max_s")
_ROWS_SHORT = {"dataset": "data set", "sigma": r"$\sigma$", "mechanism": "mech.", "constants": "const.",
               "abs_mean": "mean", "abs_std": "sd", "abs_min": "min", "abs_max": "max", "paper_abs": "thesis",
               "rel_mean": "mean", "rel_std": "sd", "paper_rel": "thesis", "time_max_s": "worst (s)"}


def _is_rows_layout(df: pd.DataFrame) -> bool:
    """``df`` is the per-cell dump of Tables 3.2/3.3 (every column of :data:`ROWS_LATEX_COLUMNS` and more)."""
    return not df.empty and all(c in df.columns for c in ROWS_LATEX_COLUMNS) and len(df.columns) > len(ROWS_LATEX_COLUMNS)


def _split_cell(v: Any) -> tuple[str, str]:
    """``"0.002 ± 0.000 (0.002)"`` → ``("0.002 ± 0.000", "0.002")``; a cell without a bracket → ``(cell, "")``."""
    s = "" if v is None or (isinstance(v, float) and v != v) else str(v)
    m = _CELL.match(s)
    return (m["ours"], m["thesis"]) if m else (s.strip(), "")


def paper_tables_latex(df: pd.DataFrame, *, caption: str, label: str) -> str:
    """Tables 3.2/3.3 (:func:`paper_comparison_table`'s frame) as LaTeX that fits a one-column article (345 pt).

    One ``table`` per mechanism and constants variant (mechanism I: ε-DP, Table 3.2; II: (ε, δ)-DP, Table 3.3).
    Per data set a heading line with the worst time (the thesis's in parentheses), then its rows abs and rel, one
    column per σ. Each cell is the frame's string split in two lines: ``mean ± sd`` and below it the thesis's value
    in parentheses, so every number is the frame's (and the CSV's) character for character. ``\\small``, 4 pt
    column separation, booktabs; the caption is ``caption`` preceded by the mechanism and constants, the labels
    ``<label>_<mechanism>_<constants>``.
    """
    if not _is_paper_layout(df):
        return to_latex(df, caption=caption, label=label)
    sig = [c for c in df.columns if str(c).startswith("σ=")]
    time_col = "worst time (s)" if "worst time (s)" in df.columns else None
    head = ["error"] + [rf"$\sigma={_latex_text(str(c)[2:])}$" for c in sig]
    align = "l" + "r" * len(sig)
    privacy = {"I": "ε-DP, Table 3.2", "II": "(ε, δ)-DP, Table 3.3"}
    out = []
    for (mech, constants), g in df.groupby(["mechanism", "constants"], sort=True):
        cap = f"Mechanism {mech} ({privacy.get(str(mech), 'thesis table')}), {constants} constants. {caption}"
        lines = [r"\begin{table}[htbp]", r"\centering", r"\small", r"\setlength{\tabcolsep}{4pt}",
                 rf"\caption{{{_latex_text(cap)}}}", rf"\label{{{label}_{_latex_label(mech)}_{_latex_label(constants)}}}",
                 rf"\begin{{tabular}}{{{align}}}", r"\toprule", " & ".join(head) + r" \\"]
        for ds, gd in g.groupby("dataset", sort=True):
            times = [_split_cell(v) for v in gd[time_col] if str(v).strip()] if time_col else []
            when = (f", worst time {times[0][0]} s" + (f" ({times[0][1]} s)" if times[0][1] else "")) if times else ""
            lines += [r"\midrule", rf"\multicolumn{{{len(head)}}}{{l}}{{\textit{{{_latex_text(ds)}}}{_latex_text(when)}}} \\"]
            for _, row in gd.iterrows():
                cells = [_split_cell(row[c]) for c in sig]
                lines.append(" & ".join([_latex_text(row["error"])]
                                        + [_latex_text(o).replace(" $\\pm$ ", r"\,$\pm$\,") for o, _ in cells])
                             + r" \\")
                lines.append(" & ".join([""] + [f"({_latex_text(t)})" if t else "" for _, t in cells]) + r" \\")
        lines += [r"\bottomrule", r"\end{tabular}", r"\end{table}", ""]
        out.append("\n".join(lines))
    return "\n".join(out)


def _latex_label(s: Any) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "-", str(s)).strip("-") or "x"


def rows_longtable_latex(df: pd.DataFrame, *, caption: str, label: str, decimals: int = 3) -> str:
    """The per-cell dump of Tables 3.2/3.3 as a ``longtable`` (breaks across pages) restricted to
    :data:`ROWS_LATEX_COLUMNS`, one heading line per data set, columns grouped ``absolute error | relative error``,
    ``\\footnotesize``: it fits a one-column article (345 pt). The other columns (method name, median time,
    support, ε/δ spent, ratios) stay in the CSV and markdown. Needs ``\\usepackage{booktabs,longtable}``."""
    cols = [c for c in ROWS_LATEX_COLUMNS if c != "dataset"]
    sub = df.sort_values(["dataset", "sigma", "mechanism", "constants"], kind="stable")
    body = to_latex(sub[["dataset", *cols]], caption=caption, label=label, decimals=decimals).splitlines()
    rows = body[body.index(r"\midrule") + 1: body.index(r"\bottomrule")]
    out, previous = [], None
    for line in rows:  # "<data set> & <the other cells>": the data set becomes a heading line
        ds, rest = line.split(" & ", 1)
        if ds != previous:
            out += ([r"\addlinespace"] if out else []) + [rf"\multicolumn{{{len(cols)}}}{{l}}{{\textit{{{ds}}}}} \\"]
            previous = ds
        out.append(rest)
    group = (r" & & & \multicolumn{5}{c}{absolute error} & \multicolumn{3}{c}{relative error} & time \\"
             "\n" r"\cmidrule(lr){4-8}\cmidrule(lr){9-11}")
    head = " & ".join(_ROWS_SHORT[c] for c in cols) + r" \\"
    omitted = [HEADERS.get(c, _latex_text(c.replace("_", " "))) for c in df.columns
            if c not in ROWS_LATEX_COLUMNS and c not in _DROP_FROM_LATEX]
    left_out = f" Not printed here (in the CSV): {', '.join(omitted)}." if omitted else ""
    lines = [r"\begingroup", r"\footnotesize", r"\setlength{\tabcolsep}{3pt}",
             rf"\begin{{longtable}}{{rll{'r' * (len(cols) - 3)}}}",
             rf"\caption{{{_latex_text(caption)}{left_out}}}\label{{{label}}} \\",
             r"\toprule", group, head, r"\midrule", r"\endfirsthead",
             r"\toprule", group, head, r"\midrule", r"\endhead",
             r"\bottomrule", r"\endfoot", *out, r"\end{longtable}", r"\endgroup", ""]
    return "\n".join(lines)


def export_table(df: pd.DataFrame, name: str, output_dir: str | Path, *, caption: str | None = None,
                 label: str | None = None, decimals: int = 3) -> list[Path]:
    """Write a DataFrame as CSV, markdown and LaTeX (``name.csv|md|tex``) into ``output_dir``.

    The LaTeX is :func:`to_latex` (booktabs, human headers, ``decimals`` places, caption and label
    ``tab:<name>``): it compiles with pdflatex as it is. Two frames get a layout that fits a one-column article
    (345 pt text width) instead: Tables 3.2/3.3 (:func:`paper_comparison_table`'s frame) through
    :func:`paper_tables_latex`, and their per-cell dump (every column of :data:`ROWS_LATEX_COLUMNS` and more)
    through :func:`rows_longtable_latex` (needs ``\\usepackage{longtable}``). The CSV and markdown are unchanged.
    """
    out = Path(output_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = [out / f"{name}.csv", out / f"{name}.md", out / f"{name}.tex"]
    df.to_csv(paths[0], index=False)
    paths[1].write_text(df.to_markdown(index=False) if _has_tabulate() else df.to_string(index=False))
    cap = caption or name.replace("_", " ")
    lab = label or f"tab:{name}"
    if _is_paper_layout(df):
        tex = paper_tables_latex(df, caption=cap, label=lab)
    elif _is_rows_layout(df):
        tex = rows_longtable_latex(df, caption=cap, label=lab, decimals=decimals)
    else:
        tex = to_latex(df, caption=cap, label=lab, decimals=decimals)
    paths[2].write_text(tex)
    return paths


def _has_tabulate() -> bool:
    try:
        import tabulate  # noqa: F401

        return True
    except ImportError:
        return False
