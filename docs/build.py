"""Build dpkit's documentation site: stage ``docs/`` with the generated pages, then run Sphinx with ``-W``.

::

    python docs/build.py --out docs/_build                          # quick: no notebook executed (make docs-quick)
    python docs/build.py --out docs/_build --execute                # every notebook run in QUICK mode first (make docs)
    python docs/build.py --out docs/_build --notebooks results/batch/full   # a batch folder's runs (make docs BATCH=...)

The site is ``OUT/html``; ``OUT/src`` is the staged source (``docs/`` plus the generated pages), ``OUT/notebooks`` the
QUICK runs of ``--execute``. Generated, never typed by hand: the API reference (every public module, by layer), the
thesis's Tables 3.2/3.3 beside dpkit's (the published ``data/tables/tables.csv``, or ``--tables`` an assembled
folder), the leaderboard (from the records file: ``--board``,
``$DPKIT_BOARD_RECORDS``, default ``data/leaderboard/records.parquet``), the checks (a batch's summary, ``--checks``,
or the published ``data/checks/checks.csv``), the notebooks and the changelog. A result that is not there is said so
on its page, with the command that makes it.

Exit codes: 0 built; 1 Sphinx failed (a warning is an error) or a notebook run failed; 2 the build could not start
(one line naming the file or folder: e.g. a leaderboard records file that is named but missing, or not a valid
board, :func:`dpkit.board.records.check_records`).
"""
from __future__ import annotations

import argparse
import importlib
import inspect
import json
import os
import pkgutil
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
NOTEBOOKS = ROOT / "notebooks"
#: the marker build.py writes into the staged source folder: only a folder holding it is ever removed
STAGING_MARKER = ".dpkit-docs-staging"
#: the file build.py writes into the staged source folder naming the repository it was staged from (docs/conf.py)
STAGED_ROOT = ".dpkit-docs-root"
#: what each layer holds (ARCHITECTURE.md), in layer order
LAYERS: dict[str, str] = {
    "core": "Primitives: validation, random streams, the privacy ledger and accounting, composition, paths, thread shares, "
            "the environment's settings.",
    "data": "The data registry, loaders and recipes: the six UCI data sets, rescaled to [-1, 1]^d.",
    "queries": "Gaussian-kernel workloads, weighted synthetic databases, exact answers with proven bounds, the "
               "error metric and the method protocol (``Release``, ``MethodBase``).",
    "mechanisms": "Laplace, Gaussian, exponential, sparse vector, private PCA, ellipsoid sampling, the "
                  "trigonometric mechanisms, the level-set mechanism, consistent release.",
    "methods": "Every method that answers the workload, and the method registry.",
    "evaluation": "The empirical privacy auditor, the board's audit gate, exact oracles, reconstruction attacks, "
                  "``Check`` verdicts.",
    "experiments": "The one runner of the protocol (``run_cell``, ``run_cells``), tables, sweeps, the leaderboard.",
    "claims": "Every check of the notebooks, as functions returning ``Check``\\ s.",
    "outputs": "The ``metrics.json`` contract, the plotting style and exporter, tables, widget panels.",
    "batch": "The papermill/Dask batch runner, its records, and the commands that read them.",
}
#: the API pages' groups (the layers bottom to top, as the brief of the site orders them)
API_GROUPS: list[tuple[str, tuple[str, ...]]] = [
    ("core", ("core",)), ("data-queries", ("data", "queries")), ("mechanisms", ("mechanisms",)),
    ("methods-evaluation", ("methods", "evaluation")), ("experiments", ("experiments",)), ("claims", ("claims",)),
    ("outputs", ("outputs",)), ("batch", ("batch",)),
]
QUICK_NOTE = ("Executed in **QUICK mode** (`QUICK=True`: small sizes and few repetitions, the checks at test scale) "
              "by `make docs`; the numbers are not the thesis's full-size results (those are `make reproduce`, "
              "rendered with `make docs BATCH=results/batch/full`).")


class BuildError(Exception):
    """The build could not start (exit 2)."""


# --- staging ---------------------------------------------------------------------------------------------------------

def stage(out: Path) -> Path:
    """Copy ``docs/`` (without builds) and ``figures/*.png`` into ``OUT/src``; return it.

    An existing ``OUT/src`` is replaced only when it holds the staging marker, so a folder build.py did not make is
    never removed.
    """
    src = out / "src"
    if src.exists():
        if not (src / STAGING_MARKER).is_file():
            raise BuildError(f"{src} exists and was not staged by docs/build.py (no {STAGING_MARKER}); move it away")
        shutil.rmtree(src)
    shutil.copytree(DOCS, src, ignore=shutil.ignore_patterns("_build", "__pycache__", ".ipynb_checkpoints"))
    (src / STAGING_MARKER).write_text("staged by docs/build.py from " + DOCS.name + "/\n")
    (src / STAGED_ROOT).write_text(str(ROOT) + "\n")
    science = src / "science" / "index.md"
    if not [p for p in science.parent.glob("*") if p.suffix in (".md", ".ipynb", ".rst") and p.stem != "index"]:
        # the glob of science/index.md matches nothing yet (Sphinx would warn): say so on the page instead
        text = science.read_text().replace("\n*\n", "\n")
        science.write_text(text + "\n" + _admonition("note", "More pages to come",
                                                     "The pages on the thesis's mechanisms, the related papers and "
                                                     "the errata slot in here (`docs/science/*.md`).") + "\n")
    figs = src / "figures"
    figs.mkdir()
    for png in sorted((ROOT / "figures").glob("*.png")):
        shutil.copy2(png, figs / png.name)
    return src


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


# --- API reference ---------------------------------------------------------------------------------------------------

def public_modules(layer: str) -> list[str]:
    """Every public module of ``dpkit.<layer>``, the package first (no ``_private`` module, no ``__main__``)."""
    pkg = importlib.import_module(f"dpkit.{layer}")
    names = [pkg.__name__]
    for info in pkgutil.walk_packages(pkg.__path__, prefix=pkg.__name__ + "."):
        parts = info.name.split(".")
        if any(p.startswith("_") for p in parts):
            continue
        names.append(info.name)
    return sorted(set(names), key=lambda n: (n != pkg.__name__, n))


def _defined_here(module: Any) -> set[str]:
    """The names a module's own source binds at its top level (classes, functions, assignments)."""
    import ast
    import inspect

    try:
        tree = ast.parse(inspect.getsource(module))
    except (OSError, TypeError):
        return set()
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, (ast.AnnAssign, ast.AugAssign)) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
        elif isinstance(node, ast.TypeAlias) if hasattr(ast, "TypeAlias") else False:
            names.add(node.name.id)
    return names


def documented_names(modname: str) -> list[str]:
    """The public names documented on ``modname``'s entry: those it defines itself, and those it exports
    (``__all__``) from a private module (whose names have no page of their own). A public name re-exported from a
    public module is documented there, once."""
    module = importlib.import_module(modname)
    exported = getattr(module, "__all__", None)
    here = _defined_here(module)
    public = list(exported) if exported is not None else sorted(n for n in here if not n.startswith("_"))
    out = []
    for name in public:
        if name.startswith("_") or not hasattr(module, name):
            continue
        obj = getattr(module, name)
        if isinstance(obj, type(module)):
            continue  # a submodule: it has its own entry
        origin = getattr(obj, "__module__", None) if callable(obj) else None
        if name in here or (origin and origin != modname and any(p.startswith("_") for p in origin.split("."))):
            out.append(name)
    return out


def facade_page() -> str:
    """``api/facade.md``: every name of ``import dpkit as dp`` (``dpkit._API`` and the names ``dpkit`` imports itself),
    grouped by the layer that defines it, with the defining module and its summary line: written from the table the
    façade reads, so the page lists exactly what ``dp.`` reaches."""
    import dpkit

    targets = {name: dpkit._API[name] if name in dpkit._API else f"{getattr(dpkit, name).__module__}:{name}"
               for name in dpkit.__all__ if name != "__version__"}
    lines = ["# `import dpkit as dp`: the public API", "",
             "One import reaches what a notebook needs: the data, the methods (every registered method's class and the "
             "registry), the runner, the board, the checks of each topic and the outputs. `import dpkit` stays light: "
             "each name is imported from the module that defines it on first use (`dpkit._API`, the one table of "
             "names and modules, from which this page is written). A name is documented once, in its module's entry "
             "of the layer pages.", "",
             "```python", "import dpkit as dp", "", "ds = dp.load(\"mock\", n=500, d=3, rng=0)",
             "records = dp.run_cell(ds.X, methods=[dp.get(\"marginals-histogram-eps\")], sigma=4.0, reps=2, "
             "n_queries=100, rng=0)", "```", ""]
    for layer in dpkit._LAYERS:
        rows = []
        for name, target in targets.items():
            module, _, attr = target.partition(":")
            if module.split(".")[1] != layer:
                continue
            obj = getattr(dpkit, name)
            doc = (inspect.getdoc(obj) or "").strip().split("\n")[0] if attr and callable(obj) else ""
            if not attr:
                doc = (inspect.getdoc(obj) or "").strip().split("\n")[0]
            kind = "module" if not attr else "class" if inspect.isclass(obj) else "function" if callable(obj) else "data"
            shown = f"`{module}`" if not attr else f"`{module}.{attr}`"
            rows.append(f"| `dp.{name}` | {kind} | {shown} | {doc.replace('|', '/')} |")
        if rows:
            lines += [f"## {layer}", "", "| name | kind | defined in | |", "|---|---|---|---|", *rows, ""]
    return "\n".join(lines)


def api_pages(src: Path) -> None:
    """``api/facade.md``, ``api/index.md`` and one page per group of layers, an ``automodule`` per public module."""
    write(src / "api" / "facade.md", facade_page())
    rows, toc = [], ["facade"]
    for page, layers in API_GROUPS:
        toc.append(page)
        lines = []
        title = " and ".join(f"dpkit.{x}" for x in layers)
        lines += [title, "=" * len(title), ""]
        for layer in layers:
            rows.append(f"| [`dpkit.{layer}`]({page}.rst) | {LAYERS[layer].replace('``', '`').replace(chr(92) + ' ', '')} |")
            if len(layers) > 1:
                head = f"dpkit.{layer}"
                lines += [head, "-" * len(head), ""]
            lines += [LAYERS[layer], ""]
            for mod in public_modules(layer):
                sub = "~" if len(layers) > 1 else "-"
                lines += [f"``{mod}``", sub * (len(mod) + 4), "", f".. automodule:: {mod}"]
                members = documented_names(mod)
                module = importlib.import_module(mod)
                code = [n for n in members if inspect.isclass(getattr(module, n)) or inspect.isroutine(getattr(module, n))]
                if code:
                    lines += [f"   :members: {', '.join(code)}", "   :undoc-members:"]
                lines.append("")
                for name in (n for n in members if n not in code):
                    # data (constants, type aliases) each get their own entry: autodoc's member scan skips an alias
                    # of another module's object (typing.Union[...]); a long value is not printed
                    lines += [f".. autodata:: {mod}.{name}"]
                    if len(repr(getattr(module, name))) > 120:
                        lines.append("   :no-value:")
                    lines.append("")
        write(src / "api" / f"{page}.rst", "\n".join(lines))
    index = ["# API reference", "",
             "The public API is one import, `import dpkit as dp`: [its names](facade.md), each with the module that "
             "defines it.", "",
             "Every public module of dpkit, grouped by layer, bottom to top: each layer imports only from the layers "
             "above it in this list (`ARCHITECTURE.md`; `tests/test_architecture.py` enforces it). A name is documented "
             "once, in the module that defines it; a package re-exports the names its users need.", "",
             "The method protocol every method follows is {class}`dpkit.queries.release.MethodBase` (a frozen "
             "keyword-only dataclass with one verb, `release`) returning a {class}`dpkit.queries.release.Release`; "
             "{class}`dpkit.queries.release.Method` is its structural type.", "",
             "| layer | holds |", "|---|---|", *rows, "",
             "```{toctree}", ":maxdepth: 1", ":hidden:", "", *toc, "```", ""]
    write(src / "api" / "index.md", "\n".join(index))


# --- results ---------------------------------------------------------------------------------------------------------

def _admonition(kind: str, title: str, body: str) -> str:
    """A titled admonition of the style ``kind`` (warning, note, important) in MyST."""
    return f":::{{admonition}} {title}\n:class: {kind}\n\n{body}\n:::\n"


def _md_table(df) -> str:
    return df.to_markdown(index=False)


def _coverage_table(cov: list[dict[str, Any]]) -> str:
    """The coverage study's rows (:func:`dpkit.board.report.coverage_rows`) as Markdown tables, one per
    table and error kind, with headers in words and three significant digits, narrow enough for the page."""
    import pandas as pd

    from dpkit.board.report import COVERAGE_COLUMNS

    words = {"cell": "cell", "winner": "winner (interval shown)", "skewness": "skew", "nominal_miss": "nominal",
             "mean_ci_miss": "mean CI miss", "upper_end_misses": "upper end misses", "miss_limit": "miss limit",
             "median_ci_miss": "median CI miss"}
    df = pd.DataFrame(cov, columns=list(COVERAGE_COLUMNS))
    for c in ("skewness", "nominal_miss", "mean_ci_miss", "upper_end_misses", "miss_limit", "median_ci_miss"):
        df[c] = [f"{float(v):.2g}" for v in df[c]]
    df["cell"] = [f"{d} σ={float(x):g}" for d, x in zip(df["dataset"], df["sigma"])]
    df["winner"] = [f"{w} ({shown})" for w, shown in zip(df["winner"], df["shown"])]
    parts = []
    for (table, kind), g in df.groupby(["table", "kind"], sort=True):
        parts += [f"**{table}, {'absolute' if kind == 'abs' else 'relative'} error**", "",
                  _md_table(g[list(words)].rename(columns=words)), ""]
    return "\n".join(parts)


def _details(summary: str, body: str) -> str:
    """A folded block (HTML ``<details>``) around Markdown ``body``: long tables stay one click away."""
    return f"<details>\n<summary>{summary}</summary>\n\n{body}\n\n</details>\n"


def _published_tables_parts(tables: Path) -> list[str]:
    """Tables 3.2/3.3 from a published ``tables.csv`` (:mod:`dpkit.experiments.tables_records`): the provenance, the
    correct-constant tables beside the thesis, the printed-constant ones folded."""
    import pandas as pd

    from dpkit.board.records import BoardFileError, provenance_line
    from dpkit.experiments.tables_records import read_tables
    from dpkit.outputs.tables import paper_comparison_table

    df = read_tables(tables)
    path = tables / "tables.csv" if tables.is_dir() else tables
    try:
        origin = provenance_line(path)
    except BoardFileError as exc:
        origin = f"No provenance: {exc}."
    reps = sorted({int(r) for r in df["reps"]})
    parts = ["## dpkit beside the thesis", "",
             f"Read from `{_rel(path)}` (published with `python -m dpkit.batch.assemble tables results/batch/tables "
             f"--publish` after `make tables`; checked when read: `dpkit.experiments.tables_records.read_tables`): "
             f"{len(df)} cells, {df['dataset'].nunique()} data sets, {'/'.join(map(str, reps))} repetitions per cell. "
             f"{origin}", "",
             "Each cell: dpkit's mean worst error ± one standard deviation over the repetitions, the thesis's printed "
             "number in parentheses; the worst time is the slowest release in seconds (the thesis's in parentheses).",
             ""]
    rows = df.to_dict("records")
    for mech, title in (("I", "Table 3.2: mechanism I (ε-DP)"), ("II", "Table 3.3: mechanism II ((ε, δ)-DP)")):
        table = paper_comparison_table([r for r in rows if r["mechanism"] == mech and r["constants"] == "correct"])
        parts += [f"### {title}, correct constants", "",
                  _md_table(table.drop(columns=["mechanism", "constants"]).rename(columns={"dataset": "data"})), ""]
    for mech, title in (("I", "Table 3.2 (mechanism I)"), ("II", "Table 3.3 (mechanism II)")):
        printed = [r for r in rows if r["mechanism"] == mech and r["constants"] == "thesis"]
        if printed:
            table = paper_comparison_table(printed).drop(columns=["mechanism", "constants"])
            parts += [_details(f"{title} with the thesis's printed constants (the same workloads)",
                               _md_table(table.rename(columns={"dataset": "data"}))), ""]
    parts += _table_claims_parts(df)
    sup = df.dropna(subset=["sup_abs_mean"])
    if not sup.empty:
        cols = {"dataset": "data", "sigma": "σ", "mechanism": "mech.", "constants": "constants",
                "abs_mean": "mean worst abs.", "sup_abs_mean": "mean sup.", "sup_abs_max": "max sup."}
        shown = pd.DataFrame(sup[list(cols)]).rename(columns=cols)
        for c in ("mean worst abs.", "mean sup.", "max sup."):
            shown[c] = [f"{float(v):.3g}" for v in shown[c]]
        parts += [_details("The class supremum of every cell (the worst query of the whole class, beside the "
                           "workload's worst)", _md_table(shown)), ""]
    return parts


def _table_claims_parts(df: Any) -> list[str]:
    """The thesis's claim about its whole table (:func:`dpkit.claims.tables.table_checks`), checked on these cells: a
    published table holds every cell of the data sets available where it ran (its publication refuses a batch with
    failed runs), so a thesis data set without rows is one that was unavailable there."""
    from dpkit.claims.tables import THESIS_DATASETS, table_checks

    result = table_checks(df, unavailable=[d for d in THESIS_DATASETS if d not in set(df["dataset"])])
    parts = ["### The thesis's claim about the whole table", ""]
    if not result.checks:
        return parts + [result.note, ""]
    for c in result.checks:
        agrees = "as expected" if c.verdict == c.expected else f"**not as expected** ({c.expected})"
        parts.append(f"*{c.claim}*: {c.statistic:.3g} (claim: at least {c.bound:g}), **{c.verdict}**, {agrees} "
                     f"(`dpkit.claims.tables.table_checks`; `{c.id}`). A run that holds part of the table does not "
                     "check it: its share of cells is another number (a batch splits the σ's over runs).")
    return parts + [""]


def tables_page(src: Path, tables: Path) -> None:
    """Tables 3.2/3.3: the thesis's printed numbers (``thesis_reference.json``) and dpkit's, from the published
    ``tables.csv`` (default ``data/tables/``) or an assembled folder (``tables_3_2_3_3.md``)."""
    import pandas as pd

    from dpkit.experiments.reference import PAPER_TABLE_3_2, PAPER_TABLE_3_3, PAPER_WORST_TIME, SIGMAS

    parts = ["# Tables 3.2 and 3.3", "",
             "The thesis's Tables 3.2 (improved mechanism I, ε-DP) and 3.3 (mechanism II, (ε, δ)-DP): mean worst "
             "absolute and relative error over 30 repetitions of 10⁴ random Gaussian-kernel mixture queries, ε = 1, "
             "δ = 10⁻³. The printed numbers below are read from `dpkit/experiments/thesis_reference.json`; dpkit's "
             "are read from the published tables (`data/tables/`) or from the assembled tables of a batch run "
             "(`make docs TABLES=results/batch/tables/assembled`).", ""]
    if (tables / "tables.csv").is_file() or (tables.suffix == ".csv" and tables.is_file()):
        parts += _published_tables_parts(tables)
    elif (tables / "tables_3_2_3_3.md").is_file():
        parts += ["## dpkit beside the thesis", "",
                  f"Assembled by `python -m dpkit.batch.assemble tables` into `{_rel(tables)}` "
                  "(dpkit's mean ± spread, the thesis's number beside it):", "",
                  (tables / "tables_3_2_3_3.md").read_text(), ""]
        claims = tables / "tables_claims.md"
        if claims.is_file():
            parts += ["### The thesis's claim about the whole table", "", claims.read_text(), ""]
        runs = tables / "tables_runs.md"
        if runs.is_file():
            parts += [_details("The runs", runs.read_text()), ""]
    else:
        parts += ["## dpkit beside the thesis", "",
                  _admonition("warning", "Not generated yet: `make tables`",
                              f"No tables at `{_rel(tables)}` (neither published `tables.csv` nor assembled "
                              "`tables_3_2_3_3.md`). `make tables` runs Tables 3.2/3.3 at full size (about 11 min on "
                              "an idle 2-core machine from an empty cache, 5 min with a warm one: "
                              "[performance](performance.md)) and assembles them in `results/batch/tables/assembled`; "
                              "`python -m dpkit.batch.assemble tables results/batch/tables --publish` publishes them "
                              "to `data/tables/`; then build the site again (`make docs TABLES=<folder>` for another "
                              "folder)."), ""]
    figs = sorted((src / "figures").glob("20_tables__*.png"))
    if figs:
        parts += ["## The committed figures", "",
                  "Exported by the assembler with `--paper-figures` into `figures/` (captions beside them):", ""]
        for fig in figs:
            cap = ROOT / "figures" / fig.name.replace(".png", ".caption.txt")
            caption = cap.read_text().strip() if cap.is_file() else fig.stem
            parts += [f"```{{figure}} /figures/{fig.name}", ":width: 90%", "", caption, "```", ""]
    printed = []
    for title, table, mech in (("Table 3.2 as printed (mechanism I, ε-DP)", PAPER_TABLE_3_2, "I"),
                               ("Table 3.3 as printed (mechanism II, (ε, δ)-DP)", PAPER_TABLE_3_3, "II")):
        rows = []
        for ds, kinds in table.items():
            for kind in ("abs", "rel"):
                rows.append({"data": ds, "error": kind, **{f"σ={s:g}": v for s, v in zip(SIGMAS, kinds[kind])},
                             "worst time (s)": PAPER_WORST_TIME[mech].get(ds, float("nan"))})
        printed += [f"**{title}**", "", _md_table(pd.DataFrame(rows)), ""]
    parts += ["## The thesis's tables as printed", "", _details("Tables 3.2 and 3.3 as printed", "\n".join(printed)), ""]
    write(src / "results" / "tables.md", "\n".join(parts))


def _rel(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(ROOT))
    except ValueError:
        return str(path)


def read_records(path: Path):
    """The leaderboard's records (one row per data set, σ, repetition and method), read and checked by
    :func:`dpkit.board.records.read_board`.

    Raises
    ------
    dpkit.board.records.BoardFileError, dpkit.board.records.InvalidRecordsError
        The file is missing, or it is not a valid records table (one line naming it and the problem).
    """
    from dpkit.board.records import read_board

    return read_board(path)


def board_of(records) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The per-method rows and the board of the records, made as notebook 45 and the assembler make them
    (:func:`dpkit.board.report.board_from_records`)."""
    from dpkit.board.report import board_from_records

    return board_from_records(records)


def leaderboard_page(src: Path, board_file: Path, records=None) -> None:
    """The leaderboard from the records file (its ``records`` when already read), or an explicit "not generated yet"
    admonition."""
    parts = ["# The leaderboard", "",
             "The best correctly accounted method in every cell of the thesis's Tables 3.2/3.3 (`45_leaderboard`, "
             "`make leaderboard` at full size: every method, 5 data sets × 5 σ × 30 repetitions, ε = 1, δ = 10⁻³). "
             "Each cell's winner is chosen on the even repetitions and judged on the odd ones, so its numbers are "
             "not flattered by the choice. Every claim holds whatever the distribution of the per-repetition errors "
             "(a worst error over 10⁴ dependent queries, with rare failures far in the tail for some methods; "
             "`dpkit.board.statistics`): a cell is better than the thesis when an exact sign test says the "
             "winner's **median** error lies below the printed number (every value that rounds to it), with Holm's "
             "correction at the stated false-alarm budget across the cells of a table and error kind. The thesis "
             "printed means; for a right-skewed error the median is the smaller, so *better* reads: below the "
             "printed number on most repetitions, not on average. Each cell names its *winner set*, the methods "
             "not significantly worse than the winner (exact paired sign tests, Holm over every comparison of a "
             "table and error kind), and shows the mean's interval only where a coverage study on the cell's own "
             "records keeps it, otherwise the median's distribution-free interval. Non-private references stay on "
             "the board, marked, and never count.", ""]
    if not board_file.is_file():
        parts += [_admonition("warning", "Not generated yet: `make leaderboard`",
                              f"There is no records file at `{_rel(board_file)}`. `make leaderboard` computes the "
                              "board; then build the site again. Another file: `make docs BOARD=<records.parquet>` "
                              "(or `$DPKIT_BOARD_RECORDS`). No number on this page is typed by hand.")]
        write(src / "results" / "leaderboard.md", "\n".join(parts))
        return
    import pandas as pd

    from dpkit.board.records import PUBLISHED as PUBLISHED_BOARD
    from dpkit.board.records import BoardFileError, provenance_line
    from dpkit.board.report import coverage_rows, headline, lost_cells_text, summary_markdown, winner_set_rows
    from dpkit.board.statistics import COVERAGE_DRAWS

    records = read_records(board_file) if records is None else records
    rows, board = board_of(records)
    try:
        origin = provenance_line(board_file)
    except BoardFileError as exc:
        origin = f"No provenance: {exc}."
    table = pd.DataFrame(rows).sort_values(["dataset", "sigma", "privacy", "abs_mean"])
    parts[1:1] = [f"**{headline(board).text()}**", ""]  # the summary first
    figures = []
    if Path(board_file).resolve() == PUBLISHED_BOARD.resolve():  # the committed figures are the published board's
        for tag, what in (("3_2", "Table 3.2 (ε-DP)"), ("3_3", "Table 3.3 ((ε, δ)-DP)")):
            png = src / "figures" / f"45_leaderboard__leaderboard_table_{tag}_abs.png"
            cap = ROOT / "figures" / f"45_leaderboard__leaderboard_table_{tag}_abs.caption.txt"
            if png.is_file():
                caption = cap.read_text().strip().split("\n\n")[0] if cap.is_file() else f"The best method per cell, {what}."
                figures += [f"```{{figure}} /figures/{png.name}", ":width: 100%", "", caption, "```", ""]
    parts += [f"Read from `{_rel(board_file)}` with `dpkit.board.records.read_board`: {len(records)} "
              f"records, {records['dataset'].nunique()} data set(s), {records['method'].nunique()} methods, "
              f"{records['rep'].nunique()} repetition(s) per cell. {origin}", "",
              *figures, "## The best method per cell", "",
              "The winner of each cell, its winner set where it has more than one member, its mean worst error on "
              "the judged repetitions (or its median, where the coverage study below did not keep the mean's "
              "interval) with its interval, the thesis's printed number in parentheses and the verdict (the note "
              "under the table says how they are computed):", "",
              summary_markdown(board), "", "## Lost cells", "", lost_cells_text(board, rows), "",
              "## Winner sets", "",
              "Per table, error kind and cell, the methods not significantly worse than the winner on most judged "
              "repetitions (the winner first, then by their mean on the choosing repetitions). With probability at "
              "least 1 − γ per table and error kind, no method left out is in fact not worse than the winner; a set "
              "of one is a certain winner.", "",
              _details(f"The winner sets: {len(sets)} rows", _md_table(pd.DataFrame(sets)))
              if (sets := winner_set_rows(board)) else "No winner sets on this board.",
              "", "## Coverage of the intervals", "",
              f"Measured from the records above: per cell, the winner's records (all repetitions) are resampled "
              f"into {COVERAGE_DRAWS:,} samples of the judged size, and the interval of each sample is computed at "
              "the cell's nominal miss rate (its Holm level). *mean CI miss* is how often the mean's "
              "(Gumbel-calibrated) interval misses the records' mean, *upper end misses* how often its upper end "
              "alone falls below it, *miss limit* the most misses a true rate equal to the nominal one reaches with "
              "probability 1 − 10⁻³, and *median CI miss* the same for the median's interval. The mean's interval "
              "is shown only where it stays within the limit; elsewhere (*median* beside the winner) its upper end misses "
              "because a few repetitions fail far in the tail, which a sample of the judged size often does not "
              "contain, and the cell shows the median's distribution-free interval instead. Resampling 30 records "
              "cannot show a tail beyond them: a kept interval is one the records do not contradict.", "",
              _details(f"The coverage study: {len(cov)} cells",
                       _coverage_table(cov)) if (cov := coverage_rows(board))
              else "No coverage study on this board.", "",
              "## Every method", "",
              "Mean and standard deviation of the worst absolute error over the repetitions, the mean worst relative "
              "error, the mean class supremum (where the method has one) with the mean of its certified upper bound "
              "(where the records have one) and the mean release time, per data set (click to unfold):", ""]
    cols = {"sigma": "σ", "method": "method", "abs_mean": "abs. mean", "abs_std": "abs. sd",
            "rel_mean": "rel. mean", "sup_abs_mean": "sup. mean", "sup_upper_mean": "sup. upper", "time_s": "time (s)"}
    for ds, g in table.groupby("dataset", sort=True):
        body = []
        for privacy, h in g.groupby("privacy", sort=False):
            shown = h[list(cols)].rename(columns=cols)
            for c in ("abs. mean", "abs. sd", "rel. mean", "sup. mean", "sup. upper", "time (s)"):
                shown[c] = [("–" if v is None or v != v else f"{float(v):.3g}") for v in shown[c]]
            body += [f"**{privacy}**", "", _md_table(shown), ""]
        parts += [_details(f"{ds}: {g['method'].nunique()} methods × {g['sigma'].nunique()} σ", "\n".join(body)), ""]
    parts += _certified_parts(records)
    write(src / "results" / "leaderboard.md", "\n".join(parts))


def _certified_parts(records) -> list[str]:
    """What the intervals ``[sup_abs, sup_upper]`` certify per cell (:mod:`dpkit.board.certified`)."""
    import pandas as pd

    from dpkit.board.certified import certified_cells, certified_sentence, interval_ratios

    cells = certified_cells(records)
    parts = ["## Certified on the whole query class", "", certified_sentence(cells), ""]
    ratios = interval_ratios(records)
    if not ratios["n"]:
        return parts
    parts += [f"The interval's width, `sup_upper / sup_abs` over {ratios['n']} records: median {ratios['median']:.2f}, "
              f"largest {ratios['max']:.2f}, above 3 in {ratios['above_3']} (`python tools/sup_tightness.py board`). "
              "A method is certified better than another in a cell when its upper bound lies below the other's "
              "witness in every repetition; *may be best*: the methods no other is certified better than.", ""]
    per = pd.DataFrame([{"data": ds, "records": r["n"], "median": f"{r['median']:.2f}", "90 %": f"{r['q90']:.2f}",
                         "largest": f"{r['max']:.2f}", "above 3": r["above_3"],
                         "at most 1.5": f"{100 * r['share_at_most_1_5']:.0f} %"}
                        for ds, r in sorted(ratios["per_dataset"].items()) if r["n"]])
    if not per.empty:
        from dpkit.board.records import board_supremum

        where = ("over every centre of R^d, the class the upper bound covers" if board_supremum(records) == "space" else
                 "in the cube, a part of the class the upper bound covers")
        parts += [f"The distribution of `sup_upper / sup_abs` per data set (the witnesses searched {where}; a released "
                  "answer function is searched in the cube and has no upper bound):", "", _md_table(per), ""]
    shown = pd.DataFrame([{"data": c["dataset"], "σ": f"{c['sigma']:g}", "table": c["table"],
                           "certified best": c["certified_best"] or "–", "may be best": ", ".join(c["may_be_best"])}
                          for c in cells if c["with_upper"]])
    return parts + [_details(f"Per cell: {len(shown)} cells", _md_table(shown)), ""]


#: the line of ``docs/faq.md`` that :func:`faq_page` replaces with the table generated from the board's records
WHICH_METHOD_MARKER = "<!-- generated: which-method -->"


def which_method_markdown(board: list[dict[str, Any]]) -> str:
    """For each privacy class and data set (with its dimension d, from the data registry), the method that wins most
    of the board's σ cells (ties: the smaller mean worst error over the cells it wins), the σ it wins, and the
    runner-up method of the most cells; a Markdown table."""
    import pandas as pd

    from dpkit.data.registry import load_registry

    dims = {code: spec.thesis_d for code, spec in load_registry().items()}
    df = pd.DataFrame(board)
    lines = []
    for (privacy, ds), g in df.groupby(["privacy", "dataset"], sort=True):
        wins = g.groupby("method").agg(cells=("sigma", "size"), mean_abs=("abs_mean", "mean")).reset_index()
        wins = wins.sort_values(["cells", "mean_abs"], ascending=[False, True])
        best = wins.iloc[0]
        sigmas = ", ".join(f"{s:g}" for s in sorted(g.loc[g["method"] == best["method"], "sigma"]))
        others = ", ".join(f"`{m}` ({int(c)})" for m, c in zip(wins["method"].iloc[1:], wins["cells"].iloc[1:]))
        lines.append({"privacy": privacy, "data set (d)": f"{ds} ({dims.get(ds, '?')})",
                      "try first": f"`{best['method']}`", "σ it wins": f"{sigmas} ({int(best['cells'])} of {len(g)})",
                      "other winners (cells)": others or "–"})
    order = {"ε-DP": 0, "(ε,δ)-DP": 1}
    table = pd.DataFrame(lines)
    table["_p"] = table["privacy"].map(order).fillna(2)
    table["_d"] = [int(x.split("(")[-1].rstrip(")")) if x.split("(")[-1].rstrip(")").isdigit() else 0
                   for x in table["data set (d)"]]
    return table.sort_values(["_p", "_d"]).drop(columns=["_p", "_d"]).to_markdown(index=False)


def faq_page(src: Path, board_file: Path) -> None:
    """``faq.md`` with its "which method first" table generated from the board's records (or an admonition saying
    how to make them)."""
    page = src / "faq.md"
    if not page.is_file():
        return
    text = page.read_text()
    if WHICH_METHOD_MARKER not in text:
        raise BuildError(f"{DOCS / 'faq.md'}: the line {WHICH_METHOD_MARKER} is missing (the generated table goes there)")
    if board_file.is_file():
        _rows, board = board_of(read_records(board_file))
        table = which_method_markdown(board) + f"\n\nFrom `{_rel(board_file)}`."
    else:
        table = _admonition("warning", "Not generated yet: `make leaderboard`",
                            f"There is no records file at `{_rel(board_file)}` to choose from.")
    page.write_text(text.replace(WHICH_METHOD_MARKER, table))


def _run_labels(runs: list[dict[str, Any]]) -> dict[str, str]:
    """A notebook's runs told apart: run key -> the parameters whose values differ between its runs."""
    params = {str(r.get("folder")): dict(r.get("parameters") or {}) for r in runs}
    names = sorted({k for p in params.values() for k in p})
    varying = [k for k in names if len({json.dumps(p.get(k), sort_keys=True, default=str)
                                        for p in params.values()}) > 1]
    return {key: ", ".join(f"{k}={json.dumps(p.get(k), default=str)}" for k in varying) or key
            for key, p in params.items()}


def _published_checks_parts(published: Path) -> list[str]:
    """The checks from a published ``checks.csv`` (:mod:`dpkit.experiments.checks_records`): the provenance, the
    counts, any unexpected verdict, then one folded table per notebook."""
    from dpkit.batch.checks import summarise_checks, to_markdown
    from dpkit.board.records import BoardFileError, provenance_line
    from dpkit.experiments.checks_records import read_checks, read_provenance

    path = published / "checks.csv" if published.is_dir() else published
    try:  # a bad published file stops the build in one line naming it
        df = read_checks(path)
        prov = read_provenance(path)
    except (OSError, ValueError) as exc:
        raise BuildError(str(exc)) from exc
    try:
        origin = provenance_line(path)
    except BoardFileError as exc:
        origin = f"No provenance: {exc}."
    s = summarise_checks(df)
    parts = ["## The published checks", "",
             f"Read from `{_rel(path)}` (published with `make checks-publish` after `make reproduce`; checked when "
             f"read: `dpkit.experiments.checks_records.read_checks`): **{s['n_checks']} checks** of "
             f"{df['notebook'].nunique()} notebooks in {df['run_key'].nunique()} runs: **{s['n_claims_pass']}/"
             f"{s['n_claims']} claims PASS** and **{s['n_controls_fail']}/{s['n_controls']} negative controls FAIL** "
             f"as expected. {origin}", ""]
    if not s["all_consistent"]:
        bad = df[~df["consistent"]]
        parts += [_admonition("warning", f"{len(bad)} verdict(s) not as expected",
                              "Published as they came out:\n\n" + to_markdown(bad, columns=list(bad.columns))), ""]
    if prov.get("unavailable"):
        parts += [_admonition("note", "Not run: data documented as possibly unavailable offline",
                              "Their checks are not in the table:\n\n"
                              + "".join(f"- {u}\n" for u in prov["unavailable"])), ""]
    runs = [r for r in prov["runs"] if isinstance(r, dict)]
    for nb, g in df.groupby("notebook", sort=True):
        body = g.drop(columns=["notebook"])
        if g["run_key"].nunique() > 1:  # its runs told apart by the parameters in which they differ
            labels = _run_labels([r for r in runs if str(r.get("folder")) in set(g["run_key"])])
            body = body.assign(run_key=[labels.get(k, k) for k in body["run_key"]]).rename(columns={"run_key": "run"})
        else:
            body = body.drop(columns=["run_key"])
        claims = g[g["expected"] == "PASS"]
        controls = g[g["expected"] == "FAIL"]
        summary = (f"{nb}: {len(g)} checks in {g['run_key'].nunique()} run(s), "
                   f"{int((claims['verdict'] == 'PASS').sum())}/{len(claims)} claims PASS"
                   + (f", {int((controls['verdict'] == 'FAIL').sum())}/{len(controls)} controls FAIL"
                      if len(controls) else "")
                   + ("" if g["consistent"].all() else f", {int((~g['consistent']).sum())} NOT as expected"))
        shown = _narrow(body)
        parts += [_details(summary, to_markdown(shown, columns=list(shown.columns))), ""]
    return parts


def _narrow(body: Any) -> Any:
    """A notebook's checks in fewer columns, so the table fits the page at 1280 px: ``verdict`` and ``expected`` as one
    ``verdict / expected`` (the summary line and the warning above name every verdict not as expected, so
    ``consistent`` goes), ``statistic`` and ``bound`` as one ``statistic (bound)``, ``confidence`` only where a check of
    the notebook has one, the id and the run as code (they may break)."""
    from dpkit.batch.checks import format_cell

    out = body.drop(columns=[c for c in ("consistent",) if c in body.columns])
    for col in ("id", "run"):  # as code, which may break (dpkit.css): a long id or parameter does not widen its column
        if col in out.columns:
            out = out.assign(**{col: [f"`{v}`" for v in out[col]]})
    if {"statistic", "bound"} <= set(out.columns):
        at = list(out.columns).index("statistic")
        both = [f"{format_cell(v)} ({format_cell(b)})" for v, b in zip(out["statistic"], out["bound"], strict=True)]
        out = out.drop(columns=["statistic", "bound"])
        out.insert(at, "statistic (bound)", both)
    if "confidence" in out.columns and out["confidence"].isna().all():
        out = out.drop(columns=["confidence"])
    if {"verdict", "expected"} <= set(out.columns):
        at = list(out.columns).index("verdict")
        both = [f"{v} / {e}" for v, e in zip(out["verdict"], out["expected"], strict=True)]
        out = out.drop(columns=["verdict", "expected"])
        out.insert(at, "verdict / expected", both)
    return out


def checks_page(src: Path, checks: Path, published: Path | None = None) -> None:
    """The checks: the summary written by ``python -m dpkit.batch.checks OUTPUT --out STEM`` (``checks``, a
    ``STEM.md``) when it is there, else the published ``checks.csv`` (``published``, default ``data/checks/``; or
    ``checks`` when it names a folder or a ``.csv``), else an explicit "not generated yet" with the commands that make
    them."""
    published = ROOT / "data" / "checks" if published is None else published
    if checks.is_dir() or checks.suffix == ".csv":  # --checks names published checks (a folder or its checks.csv)
        published = checks
    parts = ["# The checks", "",
             "Every notebook records its checks in `metrics.json` (`id, claim, statistic, bound, confidence, verdict, "
             "expected`): a claim of the thesis or of a paper passes, a negative control (the printed constant, an "
             "under-noised mechanism) is expected to fail. `python -m dpkit.batch.checks OUTPUT --out STEM` gathers "
             "a batch's checks into one table; notebook `59_checks_summary` shows it with figures.", ""]
    csv = published / "checks.csv" if published.suffix != ".csv" else published
    if checks.is_file() and checks.suffix != ".csv":
        parts += [f"Read from `{_rel(checks)}`:", "", checks.read_text(), ""]
    elif csv.is_file():
        parts += _published_checks_parts(published)
    else:
        parts += [_admonition("warning", "Not generated yet: `make reproduce` (full size) or `make smoke` (QUICK)",
                              f"There is no checks summary at `{_rel(checks)}`, and no published checks at "
                              f"`{_rel(csv)}`: the checks are computed, then published. To get them:\n\n"
                              "- **full size**: `make reproduce` (every notebook at full size, 35 batch runs: 2.4 h of "
                              "run time on two Dask workers, about 1.2 h of wall time, on the 2-core development "
                              "machine, 2026-11-24; resumable) writes `results/batch/full/checks_summary.md`, which "
                              "`make docs-quick` then renders here; `make checks-publish` publishes them to "
                              "`data/checks/` (committed: every build renders them without running anything);\n"
                              "- **QUICK** (test sizes: the claims' verdicts, not the thesis's numbers): `make smoke` "
                              "(every notebook once in QUICK mode, a few minutes) writes "
                              "`results/batch/smoke/checks_summary.md`: `make docs-quick "
                              "CHECKS=results/batch/smoke/checks_summary.md`.\n\n"
                              "Times: [performance](performance.md). The last complete `make reproduce` (2026-11-24): "
                              "564 checks, all 538 claims PASS and all 26 negative controls FAIL as expected "
                              "([results](index.md)).")]
    write(src / "results" / "checks.md", "\n".join(parts))


# --- notebooks -------------------------------------------------------------------------------------------------------

@dataclass
class Run:
    """One executed notebook: where it is, its parameters and its state."""

    stem: str
    folder: Path
    parameters: dict[str, Any] = field(default_factory=dict)
    status: str = "ok"
    reason: str | None = None


def find_runs(folder: Path, stems: list[str]) -> tuple[list[Run], list[str]]:
    """The runs of ``folder`` (``--execute``'s ``OUT/notebooks/<stem>/`` or a batch's ``<stem>/<key>/``); the
    problems (a run that failed or is unfinished, by path)."""
    from dpkit.batch.execute import read_record, unfinished_reason

    runs, problems = [], []
    for stem in stems:
        base = folder / stem
        cands = ([base] if (base / "run.json").is_file() else []) + \
            sorted(p for p in base.glob("*") if p.is_dir() and not p.name.startswith(".") and (p / "run.json").is_file())
        for run in cands:
            info = read_record(run) or {}
            status = str(info.get("status"))
            if status == "unavailable":
                runs.append(Run(stem, run, info.get("parameters") or {}, "unavailable", str(info.get("error"))))
                continue
            why = unfinished_reason(run, info)
            if why is not None or not (run / f"{stem}.ipynb").is_file():
                problems.append(f"{run}: {why or 'no executed ' + stem + '.ipynb'}")
                continue
            runs.append(Run(stem, run, info.get("parameters") or {}))
    return runs, problems


def _mode_text(run: Run | None) -> str:
    if run is None:
        return ("**Not executed in this build** (`make docs-quick`, the build `make test` checks): the code is shown "
                "without outputs. `make docs` renders every notebook executed in QUICK mode, "
                "`make docs BATCH=results/batch/full` a full-size batch's runs.")
    quick = bool(run.parameters.get("QUICK"))
    params = ", ".join(f"`{k}={v!r}`" for k, v in sorted(run.parameters.items()) if k not in ("OUTPUT_DIR",
                                                                                            "CHECKPOINT_DIR"))
    head = QUICK_NOTE if quick else ("Executed at **full size** (`QUICK=False`) by the batch runner, from "
                                     f"`{_rel(run.folder)}`.")
    return head + (f"\n\nParameters: {params}." if params else "")


def run_figures(run: Run, dest: Path) -> list[str]:
    """Copy the run's exported figures (``*.png`` in its folder) to ``dest``; the Markdown that shows them."""
    lines = []
    for png in sorted(run.folder.glob("*.png")):
        dest.mkdir(parents=True, exist_ok=True)
        shutil.copy2(png, dest / png.name)
        cap = png.with_name(png.stem + ".caption.txt")
        caption = cap.read_text().strip() if cap.is_file() else f"`{png.name}`"
        rel = dest.relative_to(dest.parents[1]) / png.name  # _figures/<page>/<file>, from the notebooks folder
        lines += [f"```{{figure}} {rel.as_posix()}", ":width: 80%", "", caption, "```", ""]
    return lines


def notebook_pages(src: Path, runs: list[Run] | None) -> None:
    """One page per notebook (per run when a batch holds several), with the mode it was rendered in stated on top."""
    import nbformat

    stems = sorted(p.stem for p in NOTEBOOKS.glob("[0-9]*.ipynb"))
    by_stem: dict[str, list[Run]] = {}
    for r in runs or []:
        by_stem.setdefault(r.stem, []).append(r)
    dest = src / "notebooks"
    dest.mkdir(parents=True, exist_ok=True)
    toc, lines = [], []
    for stem in stems:
        entries: list[tuple[str, Run | None]]
        if runs is None:
            entries = [(stem, None)]
        else:
            got = by_stem.get(stem, [])
            entries = [(stem if len(got) == 1 else f"{stem}-{r.folder.name[:8]}", r) for r in got]
            if not got:
                lines.append(f"- `{stem}`: no run of it in the rendered folder")
        for page, run in entries:
            if run is not None and run.status == "unavailable":
                write(dest / f"{page}.md", f"# {stem}\n\n" + _admonition(
                    "note", "Unavailable", f"The run at `{_rel(run.folder)}` was recorded as unavailable: "
                    f"{run.reason}"))
            else:
                path = NOTEBOOKS / f"{stem}.ipynb" if run is None else run.folder / f"{stem}.ipynb"
                nb = nbformat.read(path, as_version=4)
                note = nbformat.v4.new_markdown_cell(_admonition(
                    "important" if run is None else "note",
                    "Rendered without outputs" if run is None else "How this page was computed", _mode_text(run)))
                first_is_title = nb.cells and nb.cells[0].cell_type == "markdown" and \
                    nb.cells[0].source.lstrip().startswith("# ")
                nb.cells.insert(1 if first_is_title else 0, note)
                if run is not None:
                    figures = run_figures(run, dest / "_figures" / page)
                    if figures:
                        nb.cells.append(nbformat.v4.new_markdown_cell("\n".join(
                            ["## The run's figures", "", "Exported by the notebook into its output folder:", ""] + figures)))
                nb.metadata.pop("widgets", None)
                nbformat.write(nb, dest / f"{page}.ipynb")
            toc.append(page)
    mode = ("executed in QUICK mode" if runs is not None and all(bool(r.parameters.get("QUICK")) for r in runs)
            else "not executed (quick build)" if runs is None else "from a batch folder")
    text = ["# The notebooks", "",
            f"Every notebook of `notebooks/`, rendered {mode}; each page says how it was computed. Every notebook has "
            "one cell tagged `parameters` (`SEED`, `QUICK`, `INTERACTIVE`, `OUTPUT_DIR`, and its own) and writes "
            "`OUTPUT_DIR/metrics.json`; the notebooks hold no algorithm code.", "", *lines, "",
            "```{toctree}", ":maxdepth: 1", "", *toc, "```", ""]
    write(dest / "index.md", "\n".join(text))


def execute_notebooks(out: Path, stems: list[str]) -> list[str]:
    """Run every notebook in QUICK mode into ``OUT/notebooks/<stem>/`` (a finished run there is replaced, its old
    copy kept in ``.superseded/`` by the batch runner); return the failures."""
    failures = []
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)}
    for stem in stems:
        cmd = [sys.executable, "-m", "dpkit.batch", "notebook", str(NOTEBOOKS / f"{stem}.ipynb"),
               "--output", str(out / "notebooks" / stem), "-p", "QUICK", "true", "--replace"]
        print("docs: executing", stem, "in QUICK mode", flush=True)
        if subprocess.run(cmd, cwd=ROOT, env=env).returncode != 0:
            failures.append(f"{stem}: python -m dpkit.batch notebook failed (its run folder: {out / 'notebooks' / stem})")
    return failures


def configuration_page(src: Path) -> None:
    """``configuration.md``: every environment variable, generated from :data:`dpkit.core.settings.SETTINGS`."""
    from dpkit.core.settings import settings_markdown

    write(src / "configuration.md", "\n".join([
        "# Configuration", "",
        "dpkit reads these environment variables, and no others: each is a machine's setting (where the data and the "
        "caches live, whether downloads are allowed, how many threads a process may use), never a run's parameter "
        "(a run's folder, checkpoint and `--stale` policy are the batch runner's parameters). One module reads them, "
        "`dpkit.core.settings`; this table is generated from it.", "",
        settings_markdown(), ""]))


def changelog_page(src: Path) -> None:
    write(src / "changelog.md", (ROOT / "CHANGELOG.md").read_text())


# --- main ------------------------------------------------------------------------------------------------------------

def build(out: Path, *, notebooks: Path | None = None, execute: bool = False, board: Path, tables: Path,
          checks: Path, builder: str = "html") -> int:
    """Stage, generate and run Sphinx (``-W``); the exit code (see the module docstring)."""
    records = None
    if board.is_file():  # a bad records file stops the build before anything runs
        from dpkit.board.records import InvalidRecordsError

        try:
            records = read_records(board)
        except InvalidRecordsError as exc:
            raise BuildError(str(exc)) from exc
    out.mkdir(parents=True, exist_ok=True)
    stems = sorted(p.stem for p in NOTEBOOKS.glob("[0-9]*.ipynb"))
    runs: list[Run] | None = None
    if execute:
        failures = execute_notebooks(out, stems)
        if failures:
            print("docs: notebook runs failed:\n  " + "\n  ".join(failures), file=sys.stderr)
            return 1
        notebooks = out / "notebooks"
    if notebooks is not None:
        if not notebooks.is_dir():
            raise BuildError(f"notebook runs folder {notebooks} does not exist")
        runs, problems = find_runs(notebooks, stems)
        if problems:
            print(f"docs: {len(problems)} run(s) in {notebooks} not finished:\n  " + "\n  ".join(problems),
                  file=sys.stderr)
            return 1
    src = stage(out)
    api_pages(src)
    tables_page(src, tables)
    leaderboard_page(src, board, records)
    checks_page(src, checks)
    faq_page(src, board)
    configuration_page(src)
    notebook_pages(src, runs)
    changelog_page(src)
    env = {**os.environ,
           "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)}
    cmd = [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", builder, "-d", str(out / "doctrees"),
           str(src), str(out / builder)]
    return 0 if subprocess.run(cmd, env=env).returncode == 0 else 1


def _env_path(value: str | None, default: Path | None) -> Path | None:
    """The path a setting's ``value`` names (:func:`dpkit.core.settings.setting`), else ``default``."""
    return Path(value) if value else default


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python docs/build.py", description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=DOCS / "_build", help="build folder (the site is OUT/html)")
    mode = ap.add_mutually_exclusive_group()
    mode.add_argument("--execute", action="store_true", help="run every notebook in QUICK mode and render the runs")
    mode.add_argument("--notebooks", type=Path, default=None,
                      help="render the executed notebooks of this folder (a batch output, e.g. results/batch/full)")
    ap.add_argument("--board", type=Path, default=None,
                    help="the leaderboard's records file (else $DPKIT_BOARD_RECORDS; a file named so must be there, "
                         "default data/leaderboard/records.parquet, whose absence the page states)")
    ap.add_argument("--tables", type=Path, default=None,
                    help="Tables 3.2/3.3: a folder with a published tables.csv or an assembled tables_3_2_3_3.md "
                         "(else $DPKIT_DOCS_TABLES, the --notebooks batch's assembled/ when it has the tables, the "
                         "published data/tables/)")
    ap.add_argument("--checks", type=Path, default=None,
                    help="a checks summary .md or published checks (a folder with checks.csv) (else "
                         "$DPKIT_DOCS_CHECKS, the --notebooks batch's checks_summary.md, "
                         "results/batch/full/checks_summary.md); where there is none, the published data/checks/")
    args = ap.parse_args(argv)
    from dpkit.core.settings import setting

    named = args.board or _env_path(setting("DPKIT_BOARD_RECORDS"), None)
    if named is not None and not named.is_file():  # a records file asked for and not there: not a page without it
        print(f"docs/build.py: leaderboard records file not found: {named}", file=sys.stderr)
        return 2
    args.board = named or ROOT / "data" / "leaderboard" / "records.parquet"
    batch = args.notebooks
    if args.tables is None:  # --tables, $DPKIT_DOCS_TABLES, the batch's own assembled tables, the published ones
        own = batch / "assembled" if batch is not None else None
        args.tables = _env_path(setting("DPKIT_DOCS_TABLES"), own if own is not None and (own / "tables_3_2_3_3.md").is_file()
                                else ROOT / "data" / "tables")
    if args.checks is None:  # --checks, $DPKIT_DOCS_CHECKS, the batch's own summary, make reproduce's
        own = batch / "checks_summary.md" if batch is not None else None
        args.checks = _env_path(setting("DPKIT_DOCS_CHECKS"), own if own is not None and own.is_file()
                                else ROOT / "results" / "batch" / "full" / "checks_summary.md")
    try:
        return build(args.out.resolve(), notebooks=args.notebooks, execute=args.execute, board=args.board,
                     tables=args.tables, checks=args.checks)
    except BuildError as e:
        print(f"docs/build.py: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    sys.exit(main())
