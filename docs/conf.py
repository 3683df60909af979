"""Sphinx configuration of dpkit's documentation site.

Build it with ``make docs-quick`` (no notebook executed) or ``make docs`` (the notebooks executed in QUICK mode, or
a batch folder's runs: ``make docs BATCH=results/batch/full``). Both run ``docs/build.py``, which stages this folder
with the generated pages (API reference, results, notebooks, changelog) and calls Sphinx on the staged copy with
``-W`` (every warning is an error).
"""
from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
# the staged source folder records the repository it was staged from (docs/build.py's STAGED_ROOT file); this file,
# in docs/, is one level below it
_STAGED_ROOT = HERE / ".dpkit-docs-root"
ROOT = Path(_STAGED_ROOT.read_text().strip() if _STAGED_ROOT.is_file() else HERE.parent).resolve()
sys.path.insert(0, str(ROOT))

import dpkit  # noqa: E402

project = "dpkit"
author = "the dpkit developers"
copyright = "the dpkit developers (MIT licence)"
release = version = dpkit.__version__

extensions = [
    "myst_nb",                      # Markdown pages (MyST) and the executed notebooks
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "numpydoc",                     # numpydoc docstrings
    "sphinx.ext.mathjax",
]

# --- sources --------------------------------------------------------------------------------------------------------
source_suffix = {".rst": "restructuredtext", ".md": "myst-nb", ".ipynb": "myst-nb"}
exclude_patterns = ["_build", "build.py", ".gitignore", "**/.ipynb_checkpoints", "**/.superseded"]
myst_enable_extensions = ["dollarmath", "colon_fence", "deflist"]
myst_heading_anchors = 3
# numpydoc turns a References section into citations; a docstring need not cite each one in its text
suppress_warnings = ["myst.header", "ref.citation"]

# --- notebooks: rendered as executed by build.py (never executed by Sphinx itself) ---------------------------------
nb_execution_mode = "off"
nb_merge_streams = True
nb_output_stderr = "show"

# --- API reference ----------------------------------------------------------------------------------------------
autodoc_default_options = {"show-inheritance": True, "member-order": "bysource"}  # members: listed per module (build.py)
autodoc_typehints = "none"               # the signatures show the hints; numpydoc's sections hold the prose
autodoc_mock_imports: list[str] = []
autosummary_generate = False
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_validation_checks: set[str] = set()
numpydoc_xref_param_type = False

# --- HTML -------------------------------------------------------------------------------------------------------
html_theme = "pydata_sphinx_theme"
html_title = f"dpkit {release}"
html_theme_options = {
    "navigation_depth": 3,
    "show_toc_level": 2,
    "navbar_align": "left",
    "footer_start": ["copyright"],
    "footer_end": ["sphinx-version"],
}
# the theme's colour mode when the reader has chosen none (without it the theme's script logs a console error)
html_context = {"default_mode": "auto"}
html_static_path = ["_static"]
html_css_files = ["dpkit.css"]  # long code lines and table cells wrap: nothing is clipped at 1280 px
html_last_updated_fmt = None


# --- docstrings as the API pages render them (dpkit's docstrings are written as plain text first) -------------------
import re  # noqa: E402

_LITERAL = re.compile(r"(``.*?``|:[a-z:]+:`[^`]*`|`[^`]*`_?)")
_UNDERLINE = re.compile(r"^([=\-~^\"'`#*+<>])\1{2,}\s*$")
_CITATION = re.compile(r"^(\s*)\[(\d+)\]\s")


def _escape_bars(text: str) -> str:
    """``|x|`` (an absolute value in prose) is not a substitution: escape bars outside literals and roles."""
    parts = _LITERAL.split(text)
    return "".join(p if i % 2 else p.replace("|", r"\|") for i, p in enumerate(parts))


def rst_ready(lines: list[str]) -> None:
    """Make a plain-text docstring valid reStructuredText, in place: escape ``|`` in prose (not in inline
    literals, roles, doctest lines, literal blocks or line blocks), lengthen a section underline to its title and turn
    the References section's ``[n] ...`` entries into numpydoc citations (``.. [n] ...``)."""
    literal_indent: int | None = None
    in_refs = False
    for i, line in enumerate(lines):
        stripped = line.strip()
        indent = len(line) - len(line.lstrip())
        if literal_indent is not None:
            if stripped and indent <= literal_indent:
                literal_indent = None
            else:
                continue
        if i + 1 < len(lines) and stripped and _UNDERLINE.match(lines[i + 1].strip()) and not _UNDERLINE.match(stripped):
            title_len = len(line.rstrip())
            under = lines[i + 1].rstrip()
            if len(under) < title_len and len(lines[i + 1]) - len(lines[i + 1].lstrip()) == indent:
                lines[i + 1] = under + under.strip()[0] * (title_len - len(under))
            in_refs = stripped == "References"
        if stripped.startswith((">>>", "... ")) or stripped == "..." or stripped.startswith("| ") or stripped == "|":
            pass
        else:
            if in_refs and _CITATION.match(line):
                line = _CITATION.sub(r"\1.. [\2] ", line)
            lines[i] = _escape_bars(line)
        if stripped.endswith("::"):
            literal_indent = indent


def _process_docstring(app, what, name, obj, options, lines) -> None:
    if what == "data":
        # a module constant shows its own doc comment (``#:``), never its value's docstring (an array's, a Union's)
        from sphinx.pycode import ModuleAnalyzer, PycodeError

        modname, _, attr = name.rpartition(".")
        try:
            documented = ("", attr) in ModuleAnalyzer.for_module(modname).find_attr_docs()
        except PycodeError:
            documented = False
        if not documented:
            lines.clear()
    rst_ready(lines)
    # a citation ``[n]_`` of the module's References from a function's docstring: numpydoc renames each docstring's
    # citations, so it cannot resolve there; it stays a plain "[n]"
    defined = {m.group(1) for line in lines for m in [re.match(r"^\s*\.\. \[(\d+)\]", line)] if m}
    for i, line in enumerate(lines):
        lines[i] = re.sub(r"\[(\d+)\]_", lambda m: m.group(0) if m.group(1) in defined else f"[{m.group(1)}]", line)


def _skip_foreign(app, what, name, obj, skip, options):
    """Members that a dpkit class gets from another library (scikit-learn's metadata-request methods) are theirs."""
    mod = getattr(obj, "__module__", None) or ""
    if what == "class" and mod and not mod.startswith("dpkit") and callable(obj):
        return True
    return None


def setup(app) -> dict:
    app.connect("autodoc-process-docstring", _process_docstring, priority=400)   # before numpydoc's (500)
    app.connect("autodoc-skip-member", _skip_foreign)
    return {"parallel_read_safe": True}
