"""Every LaTeX table the workbench writes compiles with pdflatex (booktabs, math-mode symbols, captions).

Skipped with a visible reason where pdflatex is missing, except under CI=true, where it fails (.ci/run installs
Debian's texlive-latex-recommended)."""
from __future__ import annotations

import os
import re
import shutil
import subprocess

import numpy as np
import pandas as pd
import pytest
from board_records import records_for, write_run_records

from dpkit.batch.checks import to_latex as checks_latex
from dpkit.board.report import board_from_records, leaderboard_rows
from dpkit.outputs.tables import export_table, paper_comparison_table, rows_frame

PDFLATEX = shutil.which("pdflatex")
if PDFLATEX is None and os.environ.get("CI") == "true":  # pragma: no cover - CI must have it
    raise RuntimeError("pdflatex is missing under CI=true: .ci/run installs texlive-latex-recommended")
pytestmark = pytest.mark.skipif(PDFLATEX is None, reason="pdflatex not installed (apt-get install texlive-latex-recommended)")


def _table_rows():
    base = {"abs_std": 0.01, "rel_mean": 0.2, "rel_std": 0.02, "time_max_s": 0.1, "time_median_s": 0.05,
            "paper_time_s": 0.7, "constants": "correct", "reps": 30, "support_size_median": 51.0,
            "stages_of_slowest": {"lp": 0.1}, "ratio_abs": 1.2, "ratio_rel": 0.9}
    return [{"dataset": "WDBC", "sigma": s, "mechanism": m, "abs_mean": 0.05, "paper_abs": 0.049, "paper_rel": 0.355,
             **base} for s in (2.0, 4.0) for m in ("I", "II")]


def _method_rows():
    return [{"dataset": "CSN", "sigma": 2.0, "method": m, "privacy": p, "abs_mean": a, "abs_std": 0.001,
             "rel_mean": 0.3, "rel_std": 0.01, "time_s": 0.2, "eps_spent": 1.0, "delta_spent": 0.0}
            for m, p, a in (("marginals-histogram-eps", "ε-DP", 0.04), ("trig-II", "(ε,δ)-DP", 0.06),
                            ("lp-eps-inf", "non-private", 0.01))]


def _compile(tex_files, tmp_path):
    body = "\n".join(rf"\input{{{p.name}}}" for p in tex_files)
    doc = tmp_path / "doc.tex"
    doc.write_text("\\documentclass{article}\n\\usepackage[T1]{fontenc}\n\\usepackage{booktabs}\n"
                   "\\usepackage{longtable}\n\\usepackage{graphicx}\n\\begin{document}\n"
                   "\\typeout{TEXTWIDTH=\\the\\textwidth}\n" + body + "\n\\end{document}\n")
    r = subprocess.run([PDFLATEX, "-interaction=nonstopmode", "-halt-on-error", doc.name], cwd=tmp_path,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout[-3000:]
    assert (tmp_path / "doc.pdf").stat().st_size > 1000
    return (tmp_path / "doc.log").read_text(errors="replace")


def _overfull(log):
    """The ``Overfull \\hbox (<n>pt too wide)`` amounts of a pdflatex log (article class: 345 pt text width)."""
    return [float(m) for m in re.findall(r"Overfull \\hbox \(([0-9.]+)pt too wide\)", log)]


def _full_table_rows():
    """Every cell of Tables 3.2/3.3 as a full run writes them (5 data sets × 5 σ × mechanisms I, II × both
    constants), with the widest numbers of the real run (relative errors > 1, worst times > 10 s)."""
    rng = np.random.default_rng(0)
    rows = []
    for ds in ("CRM", "CSN", "CTG", "PKS", "WDBC"):
        for s in (2.0, 4.0, 6.0, 8.0, 10.0):
            for m in ("I", "II"):
                for c in ("correct", "thesis"):
                    a, r = rng.uniform(0.001, 0.2), rng.uniform(0.003, 9.9)
                    rows.append({"dataset": ds, "sigma": s, "mechanism": m, "constants": c,
                                 "method": f"trig-{m}" + (" (printed)" if c == "thesis" else ""),
                                 "abs_mean": a, "abs_std": a / 7, "abs_min": a / 2, "abs_max": 2 * a,
                                 "rel_mean": r, "rel_std": r / 5, "time_max_s": rng.uniform(0.1, 12.0),
                                 "time_median_s": 0.2, "support_size_median": 10.5, "reps": 30, "eps_spent": 1.0,
                                 "delta_spent": 1e-3 if m == "II" else 0.0, "error_bound": 1e-5,
                                 "paper_abs": rng.uniform(0.001, 0.2), "paper_rel": rng.uniform(0.003, 1.8),
                                 "ratio_abs": 1.234, "ratio_rel": 12.345, "paper_time_s": 10.7,
                                 "stages_of_slowest": {"lp": 0.1}})
    return rows


def test_every_generated_table_compiles(tmp_path):
    rows = _table_rows()
    paths = []
    paths += export_table(paper_comparison_table(rows), "tables_3_2_3_3", tmp_path,
                          caption="Tables 3.2/3.3: mean worst error ± std over 30 repetitions (thesis)")
    paths += export_table(rows_frame(rows), "tables_rows", tmp_path)
    method_rows = _method_rows()
    board = leaderboard_rows(method_rows, records=records_for(method_rows))
    paths += export_table(rows_frame(board), "leaderboard", tmp_path)
    sweep = pd.DataFrame([{"dataset": "CSN", "param": "kappa", "value": v, "method": "trig-I", "mechanism": "I",
                           "sigma": 4.0, "abs_mean": 0.01 * v, "abs_std": 0.001, "reps": 10} for v in (0.5, 7.0)])
    paths += export_table(sweep, "21_kappa_sweep", tmp_path)
    checks = pd.DataFrame([{"notebook": "50_laplace_gauss", "id": "Ex1.2_audit", "statistic": 1.2e-5, "bound": 1.0,
                            "confidence": 0.95, "verdict": "PASS", "expected": "PASS"}])
    (tmp_path / "checks.tex").write_text(checks_latex(checks))
    tex = [p for p in paths if p.suffix == ".tex"] + [tmp_path / "checks.tex"]
    text = "".join(p.read_text() for p in tex)
    assert "σ" not in text and "±" not in text and "\\caption" in text and "\\toprule" in text
    assert "5.000000" not in text
    _compile(tex, tmp_path)


def test_tables_without_rows_compile(tmp_path):
    """A run without rows (make reproduce's PAM run: the data set is unavailable offline) still writes tables that
    compile: an empty column spec ``\\begin{tabular}{}`` is a LaTeX error."""
    paths = []
    paths += export_table(pd.DataFrame(), "tables_rows", tmp_path)
    paths += export_table(paper_comparison_table([]), "tables_3_2_3_3", tmp_path)
    (tmp_path / "checks.tex").write_text(checks_latex(pd.DataFrame(columns=["notebook", "id", "verdict"])))
    tex = [p for p in paths if p.suffix == ".tex"] + [tmp_path / "checks.tex"]
    assert "no rows" in (tmp_path / "tables_rows.tex").read_text()
    _compile(tex, tmp_path)


def test_symbols_in_cells_and_captions_compile(tmp_path):
    """Greek letters, math symbols and superscripts (δ = 10⁻³, K = σ²) in cells and captions become math mode."""
    from dpkit.outputs.latex_text import _SUPERSCRIPTS, _SYMBOLS

    text = " ".join(_SYMBOLS) + " δ = 10⁻³, K = σ², n ≥ 10⁴ " + "".join(_SUPERSCRIPTS)
    df = pd.DataFrame([{"note": text, "value": 1.5}])
    paths = export_table(df, "symbols", tmp_path, caption=text)
    tex = (tmp_path / "symbols.tex").read_text()
    assert all(ord(ch) < 128 for ch in tex), sorted({ch for ch in tex if ord(ch) >= 128})
    _compile([p for p in paths if p.suffix == ".tex"], tmp_path)


def test_claim_texts_of_the_checks_summary_compile(tmp_path):
    """The characters the checks' claims use (found in a full make reproduce: ⌈D̄⌉, μ̂, σ̃, x₁₀, ∈, Σ, ⊕, ⇒, §, é …)
    compile; combining accents become math accents, subscripts math subscripts, and a character with no mapping
    prints its code point instead of stopping pdflatex (checks_summary.tex did, on ⌈ ⌉ and a combining macron)."""
    from dpkit.outputs.latex_text import to_latex_text

    text = ("‖A(D) − A(D')‖₂ ≤ c(n, d, ‖D̄‖), t = ⌈log₂ T⌉, ⌊x⌋, μ̂ ≥ σ̃, ∈ Σ ⊕ ⊆ ∖ ∘ χ ⇒ § é, "
            "Dwork–Roth §3.5, x₁₀, ✓")
    assert to_latex_text("D̄") == r"$\bar{D}$" and to_latex_text("μ̂") == r"$\hat{\mu}$"
    assert to_latex_text("x₁₀") == "x$_{10}$" and to_latex_text("✓") == r"\texttt{[U+2713]}"
    df = pd.DataFrame([{"id": "Lemma 2.7", "claim": text, "statistic": 0.5, "verdict": "PASS"}])
    paths = export_table(df, "claims", tmp_path, caption=text)
    tex = (tmp_path / "claims.tex").read_text()
    assert all(ord(ch) < 256 for ch in tex), sorted({ch for ch in tex if ord(ch) >= 256})
    _compile([p for p in paths if p.suffix == ".tex"], tmp_path)
    raw_dir = tmp_path / "raw"
    raw_dir.mkdir()
    (raw_dir / "raw.tex").write_text("\\begin{tabular}{l}\n" + text + "\\\\\n\\end{tabular}\n")
    with pytest.raises(AssertionError, match="Unicode character"):  # control: the raw text does stop pdflatex
        _compile([raw_dir / "raw.tex"], raw_dir)


def _export_table_calls():
    """Every ``export_table(...)`` call of the notebooks and of dpkit: ``(where, keyword names)``."""
    import ast
    import json
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    sources = [(p.name, "\n".join("".join(c["source"]) for c in json.loads(p.read_text())["cells"]
                                  if c["cell_type"] == "code")) for p in sorted((root / "notebooks").glob("*.ipynb"))]
    sources += [(str(p.relative_to(root)), p.read_text()) for p in sorted((root / "dpkit").rglob("*.py"))]
    calls = []
    for where, src in sources:
        for node in ast.walk(ast.parse(src)):
            if isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", None)) == "export_table":
                calls.append((f"{where}:{node.lineno}", {k.arg for k in node.keywords}))
    return calls


def test_every_written_table_has_a_caption():
    """A paper can include the tables as they are: every table the workbench writes states its protocol in its
    caption (the default caption is only the file name)."""
    calls = _export_table_calls()
    assert len(calls) >= 10, calls  # the notebooks' and the assembler's tables are all found
    assert [where for where, kw in calls if "caption" not in kw] == []


def test_assembled_tables_carry_the_protocol_in_the_caption(tmp_path):
    import json

    from dpkit.batch.assemble import assemble_tables

    d = tmp_path / "20_tables" / "aaa"
    d.mkdir(parents=True)
    (d / "run.json").write_text(json.dumps({"status": "ok", "parameters": {}}))
    (d / "metrics.json").write_text(json.dumps({"checks": [], "table": _table_rows(),  # params as notebook 20 records them
                                             "params": {"EPSILON": 1.0, "DELTA": 0.001, "N_QUERIES": 10000}}, default=str))
    assemble_tables(str(tmp_path), out=str(tmp_path / "out"))
    for name in ("tables_3_2_3_3", "tables_rows", "worst_times"):
        tex = (tmp_path / "out" / f"{name}.tex").read_text()
        assert "30 repetitions" in tex and r"\varepsilon$ = 1" in tex and r"\label{tab:" + name in tex, name
    _compile(sorted((tmp_path / "out").glob("*.tex")), tmp_path / "out")


def test_every_paper_figure_carries_caption_and_parameters():
    """Every figure that can reach figures/ (``paper=...``) is exported with a caption and its parameters (the PDF/PNG
    metadata and the caption file beside it)."""
    import ast
    import json
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    sources = [(p.name, "\n".join("".join(c["source"]) for c in json.loads(p.read_text())["cells"]
                                  if c["cell_type"] == "code")) for p in sorted((root / "notebooks").glob("*.ipynb"))]
    sources += [(str(p.relative_to(root)), p.read_text()) for p in sorted((root / "dpkit").rglob("*.py"))]
    calls = [(f"{where}:{node.lineno}", {k.arg for k in node.keywords})
             for where, src in sources for node in ast.walk(ast.parse(src))
             if isinstance(node, ast.Call)
             and getattr(node.func, "id", getattr(node.func, "attr", None)) in ("export_figure", "_figure")]
    # the assembler's ``_figure`` exports into a staging folder and copies into figures/ (a paper figure)
    paper = [(where, kw | {"paper"}) for where, kw in calls if "paper" in kw or where.startswith("dpkit/batch/assemble")]
    assert len(paper) >= 6, paper  # 20, 21, 22, 45, the assembler's tables and leaderboard, the panels
    assert [where for where, kw in paper if not {"caption", "parameters"} <= kw] == []


def test_assembled_leaderboard_figures_carry_a_caption(tmp_path):
    import json

    from dpkit.batch.assemble import assemble_leaderboard

    d = tmp_path / "45_leaderboard" / "aaa"
    d.mkdir(parents=True)
    (d / "run.json").write_text(json.dumps({"status": "ok", "parameters": {}}))
    rows = [{"dataset": "WDBC", "sigma": 2.0, "method": m, "privacy": p, "abs_mean": 0.03, "abs_std": 0.001,
             "rel_mean": 0.3, "rel_std": 0.01, "time_s": 0.1, "eps_spent": 1.0, "delta_spent": 0.0, "reps": 30}
            for m, p in (("m1", "ε-DP"), ("m2", "(ε,δ)-DP"))]
    (d / "metrics.json").write_text(json.dumps({"checks": [], "table": []}))
    write_run_records(d, rows, reps=32)
    assemble_leaderboard(str(tmp_path), out=str(tmp_path / "out"))
    cap = (tmp_path / "out" / "leaderboard_table_3_2_abs.caption.txt").read_text()
    assert "Table 3.2" in cap and "32 repetitions" in cap and "privacy=ε-DP" in cap
    for name in ("leaderboard", "leaderboard_all_methods"):
        assert "32 repetitions" in (tmp_path / "out" / f"{name}.tex").read_text()
    _compile(sorted((tmp_path / "out").glob("*.tex")), tmp_path / "out")


def test_the_boards_columns_have_human_headers(tmp_path):
    """Every column of the board (its intervals, verdicts, the ranking by the class supremum) and of its per-method
    rows has a human header; the board's table with them compiles."""
    from dpkit.outputs.latex_text import HEADERS

    method_rows, board = board_from_records(records_for(_method_rows()))
    assert [c for c in board[0] if c not in HEADERS] == [] and [c for c in method_rows[0] if c not in HEADERS] == []
    paths = export_table(rows_frame(board), "leaderboard", tmp_path, caption="The board; γ = 0.05.")
    flat = " ".join((tmp_path / "leaderboard.tex").read_text().replace(r"\\", " ").split())
    assert "verdict abs." in flat and "abs. CI low" in flat and "judged abs." in flat and "abs est" not in flat
    _compile([p for p in paths if p.suffix == ".tex"], tmp_path)


def test_small_values_are_not_printed_as_zero(tmp_path):
    """δ = 10⁻⁵ spent is not "0.000": δ columns get 3 significant digits, and no non-zero value rounds to zero."""
    from dpkit.outputs.tables import to_latex

    df = pd.DataFrame([{"method": "a", "abs_mean": 0.1234, "delta_spent": 0.0, "eps_spent": 1.0},
                       {"method": "b", "abs_mean": 2e-5, "delta_spent": 1e-5, "eps_spent": 0.5},
                       {"method": "c", "abs_mean": 0.05, "delta_spent": 1e-3, "eps_spent": 1.0}])
    tex = to_latex(df, caption="small values", label="tab:small")
    rows = [line for line in tex.splitlines() if line.startswith(("a &", "b &", "c &"))]
    assert rows == [r"a & 0.123 & 0 & 1.000 \\", r"b & 2e-05 & 1e-05 & 0.500 \\", r"c & 0.050 & 0.001 & 1.000 \\"], rows
    (tmp_path / "small.tex").write_text(tex)
    _compile([tmp_path / "small.tex"], tmp_path)


def test_assembled_paper_tables_fit_a_one_column_article(tmp_path):
    """A paper can ``\\input`` Tables 3.2/3.3 and the per-cell dump as they are: in a standard one-column article
    (345 pt text width) pdflatex reports no overfull box (before: 379 pt and 826 pt too wide), at
    ``\\footnotesize`` or larger and without ``\\resizebox``/``\\scalebox``."""
    import json

    from dpkit.batch.assemble import assemble_tables

    d = tmp_path / "20_tables" / "aaa"
    d.mkdir(parents=True)
    (d / "run.json").write_text(json.dumps({"status": "ok", "parameters": {}}))
    (d / "metrics.json").write_text(json.dumps({"checks": [], "table": _full_table_rows()}, default=str))
    out = tmp_path / "out"
    assemble_tables(str(tmp_path), out=str(out))
    tex = [out / f"{name}.tex" for name in ("tables_3_2_3_3", "tables_rows", "worst_times")]
    text = "".join(p.read_text() for p in tex)
    assert not re.search(r"\\(resizebox|scalebox|tiny|scriptsize)", text)
    log = _compile(tex, out)
    assert "TEXTWIDTH=345.0pt" in log
    assert _overfull(log) == [], _overfull(log)


def test_overfull_detection_has_teeth(tmp_path):
    """Negative control: the old one-tabular layout of Tables 3.2/3.3 (``to_latex`` of the comparison frame) is
    reported overfull by the same log check, by hundreds of points."""
    from dpkit.outputs.tables import to_latex

    comp = paper_comparison_table(_full_table_rows())
    (tmp_path / "old.tex").write_text(to_latex(comp, caption="old layout", label="tab:old", fit=False))
    widths = _overfull(_compile([tmp_path / "old.tex"], tmp_path))
    assert widths and max(widths) > 300, widths


def test_paper_tables_keep_the_numbers_of_the_csv(tmp_path):
    """Only the layout changes: every ``mean ± sd`` and thesis value of the CSV's cells is in the LaTeX, in one
    table per mechanism and constants variant, and the CSV/markdown keep the one-frame layout."""
    from dpkit.outputs.tables import _split_cell

    comp = paper_comparison_table(_full_table_rows())
    export_table(comp, "tables_3_2_3_3", tmp_path, caption="Tables 3.2/3.3 ± (thesis)")
    tex = (tmp_path / "tables_3_2_3_3.tex").read_text()
    assert tex.count(r"\begin{table}") == 4 and tex.count(r"\label{tab:tables_3_2_3_3_") == 4
    assert pd.read_csv(tmp_path / "tables_3_2_3_3.csv", keep_default_na=False).astype(str).equals(
        comp.fillna("").astype(str))
    cells = [v for c in comp.columns if c.startswith("σ=") for v in comp[c]]
    assert len(cells) == 5 * 5 * 2 * 2 * 2
    for v in cells:
        ours, thesis = _split_cell(v)
        assert ours.replace(" ± ", r"\,$\pm$\,") in tex and f"({thesis})" in tex, v
    times = [_split_cell(v) for v in comp["worst time (s)"] if v]
    assert len(times) == 5 * 2 * 2
    for ours, thesis in times:
        assert f"worst time {ours} s ({thesis} s)" in tex, (ours, thesis)


_SWEEP_COLUMNS = ("abs_mean", "abs_std", "abs_min", "abs_max", "rel_mean", "time_median_s")


def _sweep(dataset, param, values, mechanism, rng, reps=10):
    """The frame of notebooks 21/22 (and one block of 20's sensitivity table): one row per parameter value."""
    rows = []
    for v in values:
        a = rng.uniform(0.002, 0.2)
        rows.append({"dataset": dataset, "param": param, "value": v, "method": f"trig-{mechanism}",
                     "mechanism": mechanism, "sigma": 4.0, "abs_mean": a, "abs_std": rng.uniform(1e-4, 0.04),
                     "abs_min": a / 2, "abs_max": 1.5 * a, "rel_mean": rng.uniform(0.01, 9.9),
                     "time_median_s": rng.uniform(0.05, 12.0), "reps": reps})
    return pd.DataFrame(rows)


def _leaderboard_method_rows(rng):
    """``baseline_rows`` of every method of the leaderboard and baselines suites, 5 data sets × 5 σ, with the longest
    method names and the widest numbers of a full run (relative errors > 1, times > 10 s)."""
    from dpkit.methods.registry import CATALOGUE

    rows = []
    for ds in ("CRM", "CSN", "CTG", "PKS", "WDBC"):
        for s in (2.0, 4.0, 6.0, 8.0, 10.0):
            for e in CATALOGUE:
                if not {"baselines", "leaderboard"} & set(e.suites):
                    continue
                a, r, p = rng.uniform(0.001, 0.3), rng.uniform(0.01, 9.9), e.method.privacy
                rows.append({"dataset": ds, "sigma": s, "method": e.name, "privacy": p, "private": p != "non-private",
                             "abs_mean": a, "abs_std": a / 9, "abs_min": a / 2, "abs_max": 2 * a, "rel_mean": r,
                             "rel_std": r / 7, "time_s": rng.uniform(0.01, 40.0), "time_max_s": rng.uniform(0.01, 80.0),
                             "eps_spent": 1.0, "delta_spent": 0.0 if p == "ε-DP" else 1e-3, "error_bound": 1e-5,
                             "reps": 30, "epsilon": 1.0, "delta": 1e-3, "support_median": 51.0})
    return rows


def _wide_tables(tmp_path):
    """Every table the notebooks and the assembler write that was wider than a one-column article (345 pt), built
    from realistic rows (the real run's columns, the widest numbers of a full run), written by ``export_table``
    (widths on the old code: 625, 617, 658, 617 pt for the sweeps, stages and sensitivity; ≈ 1100 and 970 pt for the
    leaderboards)."""
    import json

    from dpkit.batch.assemble import _write_leaderboard

    rng = np.random.default_rng(3)
    frames = {
        "21_kappa_sweep": _sweep("CSN", "kappa", (0.5, 1.0, 2.0, 3.0, 5.0, 7.0, 10.0, 15.0, 25.0), "I", rng),
        "22_k_sweep": _sweep("CRM", "k", (1, 2, 3, 5, 8, 12, 20, 30, 50), "II", rng),
        "sensitivity_unstated_params": pd.concat(
            [_sweep("WDBC", p, v, m, rng) for m in ("I", "II")
             for p, v in (("R", (20, 50, 100)), ("k", (1, 2, 5)), ("kappa", (3, 7, 12)), ("n_iter", (5, 10, 20)))],
            ignore_index=True),
        "worst_time_stages": pd.DataFrame([
            {"dataset": ds, "mechanism": m, "sigma": 10.0, "time_max_s": rng.uniform(0.1, 40.0),
             **{f"stage_{k}": rng.uniform(1e-4, 20.0) for k in ("discretise", "moments", "mean", "pca", "candidates",
                                                               "lp", "sample", "total")}}
            for ds in ("CRM", "CSN", "CTG", "PKS", "WDBC") for m in ("I", "II")]),
        "quickstart_errors": pd.DataFrame([
            {"dataset": "WDBC", "sigma": 4.0, "mechanism": m, "constants": "correct", "method": f"trig-{m}",
             "abs_mean": 0.145, "abs_std": 0.047, "abs_min": 0.089, "abs_max": 0.195, "rel_mean": 0.230,
             "rel_std": 0.063, "time_max_s": 0.055, "time_median_s": 0.054, "support_size_median": 5.0, "reps": 5,
             "eps_spent": 1.0, "delta_spent": 1e-3 if m == "II" else 0.0, "error_bound": 4.6e-06, "paper_abs": 0.167,
             "paper_rel": 0.28, "ratio_abs": 0.866, "ratio_rel": 0.822, "paper_time_s": 10.7} for m in ("I", "II")]),
    }
    paths = {}
    for name, df in frames.items():
        export_table(df, name, tmp_path, caption=f"The {name.replace('_', ' ')} table; ε = 1, 10 repetitions.")
        paths[name] = tmp_path / f"{name}.tex"
    method_rows = _leaderboard_method_rows(rng)
    d = tmp_path / "batch" / "45_leaderboard" / "aaa"
    d.mkdir(parents=True)
    (d / "run.json").write_text(json.dumps({"status": "ok", "parameters": {}}))
    (d / "metrics.json").write_text(json.dumps({"checks": [], "table": []}))
    # the assembler's writer on the board and method rows it makes from the runs' records
    method_rows, board = board_from_records(records_for(method_rows))
    _write_leaderboard(str(tmp_path / "batch"), method_rows, board, tmp_path, None)
    frames["leaderboard"] = pd.read_csv(tmp_path / "leaderboard.csv")
    frames["leaderboard_all_methods"] = pd.read_csv(tmp_path / "leaderboard_all_methods.csv")
    paths.update({n: tmp_path / f"{n}.tex" for n in ("leaderboard", "leaderboard_all_methods")})
    checks = pd.DataFrame([{"notebook": nb, "id": f"Thm3.{j}_rel_error_bound_sigma10_rep{i:02d}",
                            "statistic": rng.uniform(1e-6, 1e-4), "bound": rng.uniform(1.0, 999.0), "confidence": 0.95,
                            "verdict": "PASS", "expected": "FAIL" if j == 9 else "PASS"}
                           for nb in ("00_quickstart", "52_exponential_net", "58_improved_privacy")
                           for j in range(3, 10) for i in range(4)])
    (tmp_path / "checks_summary.tex").write_text(checks_latex(checks))
    paths["checks_summary"] = tmp_path / "checks_summary.tex"
    return frames, paths


_WIDE = ("21_kappa_sweep", "22_k_sweep", "sensitivity_unstated_params", "worst_time_stages", "quickstart_errors",
         "leaderboard", "leaderboard_all_methods", "checks_summary")


@pytest.fixture(scope="module")
def wide_tables(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("wide")
    frames, paths = _wide_tables(tmp)
    return tmp, frames, paths


@pytest.mark.parametrize("name", _WIDE)
def test_wide_tables_fit_a_one_column_article(name, wide_tables, tmp_path):
    """Every table dpkit writes compiles in a standard one-column article (345 pt) with no overfull box and no
    float taller than the page, at ``\\small`` or larger, without ``\\resizebox``/``\\scalebox``, booktabs kept
    (the old one-tabular layout: 280-765 pt too wide and the leaderboards' floats taller than the page)."""
    src, _, paths = wide_tables
    tex = paths[name].read_text()
    assert not re.search(r"\\(resizebox|scalebox|tiny|scriptsize)", tex)
    assert r"\toprule" in tex and r"\caption{" in tex and r"\label{tab:" + ("checks" if name == "checks_summary" else name) in tex
    (tmp_path / paths[name].name).write_text(tex)
    log = _compile([tmp_path / paths[name].name], tmp_path)
    assert "TEXTWIDTH=345.0pt" in log
    assert _overfull(log) == [], _overfull(log)
    assert "Float too large" not in log


def _body_cells(tex):
    """The body cells of every tabular/longtable of ``tex`` (header lines excluded; an italic heading line's value
    counts as a cell of each row under it) and the caption's ``In every row: <header> = <value>`` cells (``<header>: <name>``;
    ``no <header>`` for a column missing in every row)."""
    cells, body, group = [], False, None
    for line in tex.splitlines():
        if line in (r"\midrule", r"\endfoot"):
            body = True
        elif line.startswith((r"\bottomrule", r"\end{", r"\endfirsthead", r"\endhead", r"\toprule")):
            body, group = False, None
        elif body and line.startswith(r"\multicolumn"):
            group = re.search(r"\\textit\{(.*)\}\} \\\\$", line).group(1)
        elif body and line.endswith(r" \\"):
            cells += line[:-3].split(" & ") + ([group] if group is not None else [])
    every = re.search(r"In every row: (.*?)\.(?: Rows| Printed|\})", tex)
    const = ["--" if kv.startswith("no ") else re.split(r" = |: ", kv, maxsplit=1)[1]  # "no <header>": missing
             for kv in every.group(1).split("; ")] if every else []
    return cells, const


@pytest.mark.parametrize("name", [n for n in _WIDE if n not in ("quickstart_errors", "checks_summary")])
def test_wide_tables_keep_every_number_of_the_csv(name, wide_tables):
    """Only the layout changes: every cell the one-tabular layout printed (rounded the same way) is printed, once
    per row in one of the parts, or once in the caption when it is the same in every row; the key columns are
    repeated in every part; the CSV keeps one row per line."""
    from dpkit.outputs.tables import to_latex

    _, frames, paths = wide_tables
    df = frames[name]
    csv = pd.read_csv(paths[name].with_suffix(".csv"))
    assert len(csv) == len(df) and list(csv.columns) == list(df.columns)
    old, _ = _body_cells(to_latex(df, caption="c", label="l", fit=False))
    new, const = _body_cells(paths[name].read_text())
    tex = paths[name].read_text()
    parts = max(1, tex.count(r"\begin{tabular}{") - tex.count(r"\begin{tabular}[b]") + tex.count(r"\begin{longtable}"))
    from collections import Counter

    have = Counter(new) + Counter(v for v in const for _ in range(len(df)))
    missing = Counter(c for c in old if c.strip()) - have  # a column empty in every row is left out
    assert not missing, missing
    assert len(new) + len(const) * len(df) >= len(old) and len(new) % len(df) == 0
    assert parts == 1 or len(new) > len(old) - len(const) * len(df)  # the key columns are repeated in every part


def test_wide_table_without_rows_keeps_every_header(tmp_path):
    """A wide frame without rows (a run whose data set is unavailable) is split into parts like any wide table: every
    header is printed (none taken for a one-value column or a heading line) and it fits the article."""
    from dpkit.outputs.latex_text import HEADERS

    cols = ["abs_mean", "abs_std", "abs_min", "abs_max", "rel_mean", "rel_std", "time_s", "time_max_s", "paper_abs",
            "paper_rel", "ratio_abs", "ratio_rel", "eps_spent", "delta_spent"]
    export_table(pd.DataFrame(columns=cols), "empty_wide", tmp_path, caption="A wide table without rows.")
    tex = (tmp_path / "empty_wide.tex").read_text()
    assert "In every row" not in tex and "grouped" not in tex and "no rows" in tex
    flat = tex.replace(r"\\", " ")
    assert all(" ".join(HEADERS[c].split()) in " ".join(flat.split()) for c in cols), tex
    log = _compile([tmp_path / "empty_wide.tex"], tmp_path)
    assert _overfull(log) == [], _overfull(log)
