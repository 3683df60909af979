"""Table writers: result rows to DataFrames, the thesis's table layout, and the one exporter of
tables (CSV, markdown, LaTeX).

The text of the LaTeX tables (headers, cells, widths) is :mod:`dpkit.outputs.latex_text`."""
from __future__ import annotations

import math
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pandas as pd

from dpkit.outputs.latex_text import (
    DROP_FROM_LATEX,
    HEADERS,
    KEY_SHARE,
    LONG_ROWS,
    PAD_PT,
    TEXT_WIDTH_PT,
    estimate_width_pt,
    header_cell,
    latex_cells,
    split_header,
    to_latex_text,
)

__all__ = [
    "rows_frame",
    "paper_comparison_table",
    "paper_tables_latex",
    "rows_longtable_latex",
    "export_table",
    "to_latex",
]


def rows_frame(rows: Iterable[dict[str, Any]]) -> pd.DataFrame:
    """Rows as a DataFrame with nested dicts dropped (for display and export)."""
    df = pd.DataFrame(list(rows))
    return df[[c for c in df.columns if not df[c].map(lambda v: isinstance(v, dict)).any()]] if not df.empty else df


def _printed(value: Any, fmt: str) -> str:
    """`` (value)``, the thesis's number in parentheses; nothing where the thesis printed none (NaN, ``None``)."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    return f" ({value:{fmt}})"


def paper_comparison_table(rows: Iterable[dict[str, Any]]) -> pd.DataFrame:
    """Tables 3.2/3.3 layout: one line per (mechanism, data set, abs|rel), σ as columns,
    each cell ``ours ± std (paper)``; plus the worst time next to the paper's. Where the thesis printed no number
    (your own data sets, a σ it did not run) the cell is ``ours ± std`` alone."""
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
                line[f"σ={r['sigma']:g}"] = (f"{r[f'{kind}_mean']:.3f} ± {r[f'{kind}_std']:.3f}"
                                             + _printed(r.get(f"paper_{kind}"), ".3f"))
            if kind == "abs":
                line["worst time (s)"] = f"{g['time_max_s'].max():.2f}" + _printed(g["paper_time_s"].iloc[0], ".1f")
            else:
                line["worst time (s)"] = ""
            lines.append(line)
    return pd.DataFrame(lines)


def to_latex(df: pd.DataFrame, *, caption: str, label: str, decimals: int | None = 3, fit: bool = True) -> str:
    """A booktabs ``table`` that compiles with pdflatex as it is: human headers (:data:`HEADERS`), math-mode
    symbols, floats to ``decimals`` places (the thesis prints 3; ``None``: 4 significant digits), integers as
    integers, a caption and a label.

    With ``fit`` (the default) the table fits a one-column article (:data:`TEXT_WIDTH_PT`, estimated from the
    characters by :func:`estimate_width_pt`, a few per cent generous): a table estimated wider gets 4 pt column
    separation and headers of several words on two lines; if still too wide, the columns that hold one value in
    every row are named in the caption instead ("In every row: <header> = <number>", "<header>: <name>", a name
    in words as :data:`~dpkit.outputs.latex_text.VALUE_WORDS` has it; a column empty in every row is left out); if
    still too wide and the first column is text in runs (data set, notebook), its runs become italic heading
    lines; if still too wide, the other columns are split into consecutive parts that each fit, every part
    repeating the key columns (the shortest leading columns that tell the rows apart, at most :data:`KEY_SHARE` of
    the width). A table of more than :data:`LONG_ROWS` rows (over all its parts) is a ``longtable`` per part
    (captions "(continued, part k of m)").
    Nothing is set below ``\\small`` and every cell is printed (the CSV and markdown keep the one-frame layout). A
    narrow table of at most :data:`LONG_ROWS` rows is one ``tabular``. Needs ``\\usepackage{booktabs}`` (and
    ``longtable`` for long tables) in the including document. ``fit=False``: one tabular whatever its width.
    """
    df = df[[c for c in df.columns if c not in DROP_FROM_LATEX]].reset_index(drop=True)
    if df.columns.empty:  # a run without rows (e.g. a data set unavailable offline): an empty column spec does not compile
        return _float_table([(r"l", ["(no columns)"], [])], caption=to_latex_text(caption), label=label, sep=None,
                            empty=True)
    cells = latex_cells(df, decimals)
    heads = {c: HEADERS.get(c, to_latex_text(str(c).replace("_", " "))) for c in df.columns}
    aligns = {c: "r" if pd.api.types.is_numeric_dtype(df[c]) else "l" for c in df.columns}
    cols = list(df.columns)
    cap = to_latex_text(caption)

    def width(cs, sep, wrap):
        return sum(_col_width(heads[c], cells[c], sep, wrap) for c in cs)

    long = fit and len(df) > LONG_ROWS
    if not fit or width(cols, 6, False) <= TEXT_WIDTH_PT:
        part = [("".join(aligns[c] for c in cols), [heads[c] for c in cols], [[cells[c][i] for c in cols]
                                                                             for i in range(len(df))])]
        if long:
            return _longtables(part, caption=cap, label=label, sep=None)
        return _float_table(part, caption=cap, label=label, sep=None, empty=df.empty)
    # too wide: 4 pt separation, two-line headers, constant columns to the caption, then parts
    sep = 4
    if len(df) >= 2 and width(cols, sep, True) > TEXT_WIDTH_PT:
        const = [c for c in cols if len(set(cells[c])) == 1]
        if const and len(const) < len(cols):
            said = [_in_words(heads[c], cells[c][0], numeric=aligns[c] == "r") for c in const]
            if any(said):
                cap = _sentence(cap) + " In every row: " + "; ".join(x for x in said if x) + "."
            cols = [c for c in cols if c not in const]
    group = None
    first = cols[0]
    runs = [i for i in range(len(df)) if i == 0 or cells[first][i] != cells[first][i - 1]]
    if (len(df) >= 2 and width(cols, sep, True) > TEXT_WIDTH_PT and len(cols) >= 3 and aligns[first] == "l"
            and len(runs) == len(set(cells[first])) and 2 * len(runs) <= len(df)):
        group, cols = first, cols[1:]  # its runs become italic heading lines (data set, notebook)
        cap = _sentence(cap) + f" Rows grouped by {heads[first].rstrip('.')} (italic heading lines)."
    parts_cols = [cols]
    key: list[Any] = []
    if width(cols, sep, True) > TEXT_WIDTH_PT:
        key = _key_columns(df, cols, cells, lambda cs: width(cs, sep, True),
                           group=cells[group] if group is not None else None)
        rest = [c for c in cols if c not in key]
        room = TEXT_WIDTH_PT - width(key, sep, True)
        parts_cols, current = [], []
        for c in rest:
            if current and width(current + [c], sep, True) > room:
                parts_cols.append(current)
                current = []
            current.append(c)
        parts_cols.append(current)
        parts_cols = [key + p for p in parts_cols]
    parts = []
    for pc in parts_cols:
        hs = [header_cell(split_header(heads[c]) if estimate_width_pt(heads[c]) > max(map(estimate_width_pt, cells[c]),
                                                                                      default=0) else (heads[c],),
                          aligns[c]) for c in pc]
        body: list[Any] = []
        for i in range(len(df)):
            if group is not None and (i == 0 or cells[group][i] != cells[group][i - 1]):
                body.append(rf"\multicolumn{{{len(pc)}}}{{l}}{{\textit{{{cells[group][i]}}}}} \\")
            body.append([cells[c][i] for c in pc])
        parts.append(("".join(aligns[c] for c in pc), hs, body))
    if len(parts) > 1:
        names = ", ".join(heads[c] for c in key).rstrip(".")
        cap = _sentence(cap) + f" Printed in {len(parts)} parts of columns" + (f", each repeating {names}." if key else ".")
    if len(parts[0][2]) * len(parts) > LONG_ROWS:  # the parts of one float would not fit a page
        return _longtables(parts, caption=cap, label=label, sep=sep)
    return _float_table(parts, caption=cap, label=label, sep=sep, empty=df.empty)


def _in_words(head: str, cell: str, *, numeric: bool) -> str:
    """A column that holds one value, said in the caption: ``σ = 4`` (a number), ``data set: CSN`` (a name),
    ``no supremum note`` (missing everywhere); nothing for an empty text (a note left empty says nothing)."""
    if not cell.strip():
        return ""
    if cell == "--":
        return f"no {head}"
    return f"{head} = {cell}" if numeric else f"{head}: {cell}"


def _sentence(text: str) -> str:
    """``text`` ending in a full stop (so that a sentence can follow it in a caption)."""
    text = text.rstrip()
    return text if not text or text[-1] in ".!?" else text + "."


def _col_width(head: str, cells: list[str], sep: int, wrap: bool) -> float:
    body = max(map(estimate_width_pt, cells), default=0.0)
    h = estimate_width_pt(head)
    if wrap and h > body:
        h = max(map(estimate_width_pt, split_header(head)))
    return max(h, body) + PAD_PT[sep]


def _key_columns(df: pd.DataFrame, cols: list[Any], cells: dict[Any, list[str]], width,
                 group: list[str] | None = None) -> list[Any]:
    """The shortest leading columns that tell the rows apart (within their ``group``), within :data:`KEY_SHARE` of
    the text width; else the longest leading columns within it (at least the first)."""
    best = cols[:1]
    for n in range(1, len(cols)):
        if width(cols[:n]) > KEY_SHARE * TEXT_WIDTH_PT:
            break
        best = cols[:n]
        keys = {(group[i] if group else None, *(cells[c][i] for c in cols[:n])) for i in range(len(df))}
        if len(keys) == len(df):
            break
    return best


def _tabular(align: str, heads: list[str], body: list[list[str]], empty: bool) -> list[str]:
    lines = [rf"\begin{{tabular}}{{{align}}}", r"\toprule", " & ".join(heads) + r" \\", r"\midrule"]
    lines += [r if isinstance(r, str) else " & ".join(r) + r" \\" for r in body]
    if empty:
        lines.append(rf"\multicolumn{{{len(heads)}}}{{c}}{{no rows}} \\")
    return lines + [r"\bottomrule", r"\end{tabular}"]


def _float_table(parts, *, caption: str, label: str, sep: int | None, empty: bool) -> str:
    lines = [r"\begin{table}[htbp]", r"\centering", r"\small"]
    if sep is not None:
        lines.append(rf"\setlength{{\tabcolsep}}{{{sep}pt}}")
    lines += [rf"\caption{{{caption}}}", rf"\label{{{label}}}"]
    for k, (align, heads, body) in enumerate(parts):
        if k:
            lines += [r"", r"\medskip"]
        lines += _tabular(align, heads, body, empty)
    lines += [r"\end{table}", ""]
    return "\n".join(lines)


def _longtables(parts, *, caption: str, label: str, sep: int | None) -> str:
    out = [r"\begingroup", r"\small"] + ([rf"\setlength{{\tabcolsep}}{{{sep}pt}}"] if sep is not None else [])
    m = len(parts)
    for k, (align, heads, body) in enumerate(parts, 1):
        head = " & ".join(heads) + r" \\"
        cap = caption if k == 1 else (rf"(continued, part {k} of {m}) " + caption.split(". ")[0] + ".")
        lab = label if k == 1 else f"{label}_part{k}"
        out += [rf"\begin{{longtable}}{{{align}}}", rf"\caption{{{cap}}}\label{{{lab}}} \\",
                r"\toprule", head, r"\midrule", r"\endfirsthead",
                r"\toprule", head, r"\midrule", r"\endhead", r"\bottomrule", r"\endfoot",
                *[r if isinstance(r, str) else " & ".join(r) + r" \\" for r in body], r"\end{longtable}"]
    return "\n".join(out + [r"\endgroup", ""])


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
    head = ["error"] + [rf"$\sigma={to_latex_text(str(c)[2:])}$" for c in sig]
    align = "l" + "r" * len(sig)
    privacy = {"I": "ε-DP, Table 3.2", "II": "(ε, δ)-DP, Table 3.3"}
    out = []
    for (mech, constants), g in df.groupby(["mechanism", "constants"], sort=True):
        cap = f"Mechanism {mech} ({privacy.get(str(mech), 'thesis table')}), {constants} constants. {caption}"
        lines = [r"\begin{table}[htbp]", r"\centering", r"\small", r"\setlength{\tabcolsep}{4pt}",
                 rf"\caption{{{to_latex_text(cap)}}}", rf"\label{{{label}_{_latex_label(mech)}_{_latex_label(constants)}}}",
                 rf"\begin{{tabular}}{{{align}}}", r"\toprule", " & ".join(head) + r" \\"]
        for ds, gd in g.groupby("dataset", sort=True):
            times = [_split_cell(v) for v in gd[time_col] if str(v).strip()] if time_col else []
            when = (f", worst time {times[0][0]} s" + (f" ({times[0][1]} s)" if times[0][1] else "")) if times else ""
            lines += [r"\midrule", rf"\multicolumn{{{len(head)}}}{{l}}{{\textit{{{to_latex_text(ds)}}}{to_latex_text(when)}}} \\"]
            for _, row in gd.iterrows():
                cells = [_split_cell(row[c]) for c in sig]
                lines.append(" & ".join([to_latex_text(row["error"])]
                                        + [to_latex_text(o).replace(" $\\pm$ ", r"\,$\pm$\,") for o, _ in cells])
                             + r" \\")
                lines.append(" & ".join([""] + [f"({to_latex_text(t)})" if t else "" for _, t in cells]) + r" \\")
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
    body = to_latex(sub[["dataset", *cols]], caption=caption, label=label, decimals=decimals,
                    fit=False).splitlines()
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
    omitted = [HEADERS.get(c, to_latex_text(c.replace("_", " "))) for c in df.columns
            if c not in ROWS_LATEX_COLUMNS and c not in DROP_FROM_LATEX]
    left_out = f" Not printed here (in the CSV): {', '.join(omitted)}." if omitted else ""
    lines = [r"\begingroup", r"\footnotesize", r"\setlength{\tabcolsep}{3pt}",
             rf"\begin{{longtable}}{{rll{'r' * (len(cols) - 3)}}}",
             rf"\caption{{{to_latex_text(caption)}{left_out}}}\label{{{label}}} \\",
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
