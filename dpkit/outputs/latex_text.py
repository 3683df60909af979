"""The text of LaTeX tables: headers, cells converted to LaTeX (pdflatex-safe), and their estimated widths.

:data:`HEADERS` are the human headers of the columns the experiments write; :func:`to_latex_text` turns any text
(Greek letters, accents, sub- and superscripts) into LaTeX that pdflatex typesets; :func:`estimate_width_pt`
estimates the width of a cell in points against :data:`TEXT_WIDTH_PT`, which decides how
:func:`~dpkit.outputs.tables.to_latex` splits a wide table; :func:`latex_cells`, :func:`split_header` and
:func:`header_cell` make a table's cells and headers.
"""
from __future__ import annotations

import re
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["HEADERS", "VALUE_WORDS", "TEXT_WIDTH_PT", "LONG_ROWS", "KEY_SHARE", "estimate_width_pt", "DROP_FROM_LATEX", "PAD_PT",
           "to_latex_text", "split_header", "header_cell", "latex_cells"]


#: Human headers (LaTeX) for the column names the experiments write.
HEADERS: dict[str, str] = {
    "dataset": "data set", "sigma": r"$\sigma$", "mechanism": "mech.", "constants": "constants", "method": "method",
    "privacy": "privacy", "abs_mean": "mean worst abs.", "abs_std": "sd abs.", "abs_min": "min abs.",
    "abs_max": "max abs.", "rel_mean": "mean worst rel.", "rel_std": "sd rel.", "time_s": "time (s)",
    "time_max_s": "worst time (s)", "time_median_s": "median time (s)", "reps": "reps", "paper_abs": "thesis abs.",
    "paper_rel": "thesis rel.", "ratio_abs": "ours/thesis abs.", "ratio_rel": "ours/thesis rel.",
    "paper_time_s": "thesis time (s)", "support_size_median": "support", "eps_spent": r"$\varepsilon$ spent",
    "delta_spent": r"$\delta$ spent", "epsilon": r"$\varepsilon$", "delta": r"$\delta$",
    "value": "value", "win_abs": "abs.", "win_rel": "rel.", "error": "error", "runner_up": "runner-up",
    "runner_up_abs": "runner-up abs.", "reference_abs": "non-private abs.", "method_rel": "method (rel.)",
    "support_median": "support", "error_bound": "numerical bound",
    # the board's intervals and verdicts (dpkit.board.report.leaderboard_rows)
    "abs_est": "judged abs.", "abs_ci_low": "abs. CI low", "abs_ci_high": "abs. CI high", "abs_level": "abs. level",
    "verdict_abs": "verdict abs.", "rel_est": "judged rel.", "rel_ci_low": "rel. CI low", "rel_ci_high": "rel. CI high",
    "rel_level": "rel. level", "verdict_rel": "verdict rel.", "abs_vs_runner_up": "abs. minus runner-up",
    "abs_vs_runner_up_ci_low": "minus runner-up CI low", "abs_vs_runner_up_ci_high": "minus runner-up CI high",
    "verdict_runner_up": "vs runner-up", "budget": r"budget $\gamma$", "selection": "winner chosen",
    "judged_reps": "judged reps", "sup_est": "judged sup.", "sup_ci_low": "sup. CI low", "sup_ci_high": "sup. CI high",
    "sup_param": "sup. shown",
    # the distribution-free verdicts, winner sets and coverage study (dpkit.board.statistics)
    **{f"{k}_{key}": f"{k}. {text}" for k in ("abs", "rel") for key, text in (
        ("param", "shown"), ("p", "p-value"), ("judged_mean", "judged mean"), ("median", "judged median"),
        ("median_ci_low", "median CI low"), ("median_ci_high", "median CI high"), ("mean_ci_low", "mean CI low"),
        ("mean_ci_high", "mean CI high"), ("coverage_miss", "mean CI miss rate"),
        ("coverage_miss_low", "mean CI upper end misses"),
        ("coverage_median_miss", "median CI miss rate"),
        ("coverage_limit", "miss rate limit"), ("skewness", "skewness"), ("set", "winner set"),
        ("set_size", "winner set size"), ("certain", "one certain winner"))},
    # the ranking by the class supremum and the per-method rows of the board's records
    "method_sup": "method (sup.)", "sup_abs_mean": "mean sup.", "sup_abs_std": "sd sup.", "sup_abs_max": "max sup.",
    "abs_of_sup": "its abs.", "runner_up_sup": "runner-up (sup.)", "runner_up_sup_abs": "runner-up sup.",
    "sup_of_best": "sup. of best", "rankings_agree": "rankings agree", "private": "private",
    # the rest of the class-supremum columns (dpkit.experiments.summary.SUP_KEYS) and the sweeps' rows
    "sup_abs_min": "min sup.", "sup_witness_rel_mean": "rel. error of the sup. witness",
    "sup_note": "supremum note", "sup_upper_mean": "mean sup. upper bound", "sup_upper_max": "max sup. upper bound",
    "sup_upper_note": "upper bound note", "sup_evaluations_mean": "search evaluations",
    "centre_abs_mean": "mean worst centre abs.", "centre_abs_std": "sd worst centre abs.", "param": "swept parameter",
}


#: The words for the values of a column that holds names (a sweep's ``param``: ``kappa`` → ellipsoid scale κ), so a
#: cell or a caption reads in words, not as a variable name.
VALUE_WORDS: dict[str, dict[str, str]] = {
    "param": {"kappa": "ellipsoid scale κ", "k": "PCA output dimension k", "C": "candidate count C",
              "R": "trigonometric degree R", "n_iter": "iterations L", "sigma": "kernel width σ", "epsilon": "ε",
              "delta": "δ", "J": "centres per query J"},
}


#: Unicode symbols of the experiments' strings, as LaTeX math.
_SYMBOLS = {"σ": r"$\sigma$", "ε": r"$\varepsilon$", "δ": r"$\delta$", "κ": r"$\kappa$", "±": r"$\pm$",
            "×": r"$\times$", "≤": r"$\le$", "≥": r"$\ge$", "−": "-", "–": "--",
            "α": r"$\alpha$", "β": r"$\beta$", "γ": r"$\gamma$", "λ": r"$\lambda$", "μ": r"$\mu$", "ρ": r"$\rho$",
            "τ": r"$\tau$", "θ": r"$\theta$", "η": r"$\eta$", "Δ": r"$\Delta$", "∞": r"$\infty$", "≈": r"$\approx$",
            "→": r"$\to$", "·": r"$\cdot$", "…": r"\ldots{}", "—": "---", "’": "'", "‖": r"$\|$", "√": r"$\surd$",
            "∈": r"$\in$", "∉": r"$\notin$", "Σ": r"$\Sigma$", "Π": r"$\Pi$", "Φ": r"$\Phi$", "Λ": r"$\Lambda$",
            "Γ": r"$\Gamma$", "Θ": r"$\Theta$", "Ω": r"$\Omega$", "π": r"$\pi$", "φ": r"$\varphi$", "χ": r"$\chi$",
            "ψ": r"$\psi$", "ω": r"$\omega$", "ν": r"$\nu$", "ξ": r"$\xi$", "ζ": r"$\zeta$", "ι": r"$\iota$",
            "⊕": r"$\oplus$", "⊗": r"$\otimes$", "⊆": r"$\subseteq$", "⊂": r"$\subset$", "∖": r"$\setminus$",
            "∘": r"$\circ$", "∪": r"$\cup$", "∩": r"$\cap$", "⇒": r"$\Rightarrow$", "⇔": r"$\Leftrightarrow$",
            "↦": r"$\mapsto$", "⌈": r"$\lceil$", "⌉": r"$\rceil$", "⌊": r"$\lfloor$", "⌋": r"$\rfloor$",
            "∑": r"$\sum$", "∏": r"$\prod$", "≠": r"$\ne$", "≪": r"$\ll$", "≫": r"$\gg$", "∝": r"$\propto$",
            "∀": r"$\forall$", "∃": r"$\exists$", "∂": r"$\partial$", "∇": r"$\nabla$", "ℓ": r"$\ell$",
            "⟨": r"$\langle$", "⟩": r"$\rangle$", "′": "'", "‘": "`", "“": "``", "”": "''", "§": r"\S{}"}


#: Combining accents (a base character followed by one of these) as LaTeX math accents: μ̂ → $\hat{\mu}$.
_ACCENTS = {"\u0302": "hat", "\u0304": "bar", "\u0303": "tilde", "\u0307": "dot", "\u0308": "ddot", "\u0301": "acute",
            "\u0300": "grave", "\u030c": "check", "\u0306": "breve"}


#: Columns printed to 3 significant digits whatever ``decimals`` is (δ = 10⁻⁵ is not 0.000).
_SIGNIFICANT = frozenset({"delta", "delta_spent", "error_bound"})


#: Columns the LaTeX tables leave out (the CSV and markdown of :func:`~dpkit.outputs.tables.export_table` keep them).
DROP_FROM_LATEX = ("stages_of_slowest", "error_bound", "params", "ledger", "timings", "abs_set", "rel_set")


_ESCAPES = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_", "{": r"\{",
            "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}"}


_SUPERSCRIPTS = {"⁻": "-", "⁰": "0", "¹": "1", "²": "2", "³": "3", "⁴": "4", "⁵": "5", "⁶": "6", "⁷": "7", "⁸": "8",
                 "⁹": "9"}


_SUBSCRIPTS = {"₋": "-", "₀": "0", "₁": "1", "₂": "2", "₃": "3", "₄": "4", "₅": "5", "₆": "6", "₇": "7", "₈": "8",
               "₉": "9"}


def _accent(m: re.Match) -> str:
    base = _SYMBOLS.get(m.group(1), m.group(1)).strip("$")
    return "$\\" + _ACCENTS[m.group(2)] + "{" + base + "}$"


def to_latex_text(s: str) -> str:
    """``s`` as LaTeX text that pdflatex typesets: special characters escaped, Greek letters and symbols, accents,
    sub- and superscripts as math, and any other character outside Latin-1 as its code point.

    Parameters
    ----------
    s : str
        Any text (a header, a cell, a caption).

    Returns
    -------
    str
        The LaTeX text.
    """
    out = "".join(_ESCAPES.get(ch, ch) for ch in str(s))
    # a run of superscripts (10⁻³) is one math group: $^{-3}$
    out = re.sub("[" + "".join(_SUPERSCRIPTS) + "]+",
                 lambda m: "$^{" + "".join(_SUPERSCRIPTS[c] for c in m.group()) + "}$", out)
    out = re.sub("[" + "".join(_SUBSCRIPTS) + "]+",
                 lambda m: "$_{" + "".join(_SUBSCRIPTS[c] for c in m.group()) + "}$", out)
    out = re.sub("(.)([" + "".join(_ACCENTS) + "])", _accent, out)
    for k, v in _SYMBOLS.items():
        out = out.replace(k, v)
    # anything else outside Latin-1 (which pdflatex's utf8 input handles) would stop pdflatex: print its code point
    return "".join(ch if ord(ch) < 256 else f"\\texttt{{[U+{ord(ch):04X}]}}" for ch in out)


#: Text width of a standard one-column ``article`` (10 pt, letter or A4) in points: what the tables must fit.
TEXT_WIDTH_PT = 345.0


#: More rows than this and a table becomes a ``longtable`` (breaks across pages) instead of a float.
LONG_ROWS = 40


#: At most this share of the text width goes to the key columns every part of a split table repeats.
KEY_SHARE = 0.6


#: The padding of a column in points (2 × ``\tabcolsep``), by the table's ``\tabcolsep`` in points.
PAD_PT = {6: 12.0, 4: 8.0}


def _char_pt(tok: str) -> float:
    """A generous width (points, ``\\small`` = 9 pt Computer/Latin Modern) of one token of LaTeX text."""
    if tok.startswith("\\") and len(tok) > 2:
        return 7.0  # a math symbol (\sigma, \pm) or \textbackslash
    if tok in "${}^":
        return 0.0
    if tok.startswith("\\"):
        return 5.0  # an escaped character (\_, \%)
    if tok in "mwMW":
        return 8.0
    if tok.isupper():
        return 7.0
    if tok in " .,:;()[]|'!il-":
        return 3.0
    return 4.8


def estimate_width_pt(text: str) -> float:
    """A generous estimate of the width in points of one line of LaTeX text set in ``\\small``."""
    text = re.sub(r"\\text[a-z]+\{\}", r"\\x", text)
    return sum(_char_pt(t) for t in re.findall(r"\\[A-Za-z]+|\\.|.", text))


def split_header(h: str) -> tuple[str, ...]:
    """A header of several words as two lines, split at the space (outside math) that balances them.

    Parameters
    ----------
    h : str
        A header in LaTeX.

    Returns
    -------
    tuple of str
        Its two lines, or the header alone if it has no space outside math.
    """
    spaces = [i for i, ch in enumerate(h) if ch == " " and h[:i].count("$") % 2 == 0]
    if not spaces:
        return (h,)
    i = min(spaces, key=lambda j: max(estimate_width_pt(h[:j]), estimate_width_pt(h[j + 1:])))
    return (h[:i], h[i + 1:])


def header_cell(lines: tuple[str, ...], align: str) -> str:
    """The LaTeX of a header cell: one line as it is, several stacked in a ``tabular``.

    Parameters
    ----------
    lines : tuple of str
        The header's lines (:func:`split_header`).
    align : str
        The column's alignment (``l``, ``r``, ``c``).

    Returns
    -------
    str
        The cell's LaTeX.
    """
    if len(lines) == 1:
        return lines[0]
    return rf"\begin{{tabular}}[b]{{@{{}}{align}@{{}}}}" + r"\\".join(lines) + r"\end{tabular}"


def latex_cells(df: pd.DataFrame, decimals: int | None) -> dict[Any, list[str]]:
    """The cells of ``df`` as LaTeX text, column by column.

    A missing value is ``--``; integral columns print as integers; other numbers with 4 significant digits when
    ``decimals`` is ``None``, else with ``decimals`` decimals (2 significant digits for a non-zero value that would
    print as 0; 3 in the δ and error-bound columns); a name in words where :data:`VALUE_WORDS` has it; anything else
    through :func:`to_latex_text`.

    Parameters
    ----------
    df : pandas.DataFrame
        The table.
    decimals : int or None
        Decimals of the non-integral numbers.

    Returns
    -------
    dict
        Column name → its cells.
    """
    integral = {c for c in df.columns if pd.api.types.is_numeric_dtype(df[c]) and not pd.api.types.is_bool_dtype(df[c])
                and df[c].dropna().map(lambda v: float(v).is_integer() and abs(v) < 1e15).all()}

    def cell(c: str, v: Any) -> str:
        if v is None:  # a missing value, as NaN: e.g. a method without a class supremum
            return "--"
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, float, np.number)):
            return to_latex_text(VALUE_WORDS.get(str(c), {}).get(str(v), str(v)))
        if v != v:
            return "--"
        if c in integral:
            return str(int(v))
        if decimals is None or c in _SIGNIFICANT:
            return to_latex_text(f"{float(v):.4g}" if decimals is None else f"{float(v):.3g}")
        if v != 0 and abs(v) < 0.5 * 10.0 ** -decimals:  # never print a non-zero value as 0.000
            return to_latex_text(f"{float(v):.2g}")
        return f"{float(v):.{decimals}f}"

    return {c: [cell(c, v) for v in df[c]] for c in df.columns}
