"""No reference points outside the repository, and no machine timings or change history in docstrings.

A clone has the code, the notebooks and ``docs/``; it does not have the project's working notes. So dpkit's
docstrings and comments, the notebooks (markdown and code cells) and the docs pages cite a docs page (``docs/science/…``),
a paper's own section/equation with its bibliography entry (``docs/science/references.md``), or nothing, but never
the working restatements ("spec §…", ``thesis.md``, ``dwork-roth.md``, ``SOURCES.md``), paths outside the clone
(``../shared/…``), the seed/errata numbering of those notes, or issue numbers. Machine timings belong in
``docs/performance_notes.md`` and change history in ``CHANGELOG.md``, not in dpkit's docstrings and comments.

Every pattern is listed below with the exceptions it allows; an exception is a literal phrase, never a file.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

#: Outside references, forbidden everywhere that is scanned. ``(name, pattern)``.
OUTSIDE = [
    ("spec-section", re.compile(r"\bspec\s*§", re.IGNORECASE)),
    ("the-spec", re.compile(r"\b(?:the|in the) spec\b(?!'s run\b| =)|\bspec erratum\b", re.IGNORECASE)),
    ("shared-path", re.compile(r"\.\./shared|\bshared/(?:spec|seeds|data)\b")),
    ("working-notes-file", re.compile(r"\b(?:thesis|dwork-roth|SOURCES|near-optimal-linear-queries|"
                                      r"consistency-constraints)\.md\b")),
    ("working-notes-name", re.compile(r"\bdwork-roth\b")),
    ("seed-numbering", re.compile(r"\bD\s*[–&-]\s*R seed\b|\bseed (?:§|E\d|M\d)|\bmain seed\b", re.IGNORECASE)),
    ("errata-numbering", re.compile(r"\berrat(?:um|a)\s*#?\s*\d+", re.IGNORECASE)),
    ("issue-number", re.compile(r"\b(?:issue|PR|pull request)s?\s*#?\s*\d+", re.IGNORECASE)),
    # "#17" in prose; not "# 17" (a comment), "#1f77b4"/"#000000" (colours: quoted, or not all digits),
    # "&#123;" (an HTML entity) or "x#12" (part of a word).
    ("hash-number", re.compile(r"(?<![\w&#\"'/])#\d{1,5}\b(?![\w\"'])")),
]

#: Machine timings and change history, forbidden in dpkit's docstrings and comments (``docs/performance_notes.md``
#: and ``CHANGELOG.md`` hold them).
TIMING = [
    ("this-machine", re.compile(r"\bon this machine\b|\bthis machine's\b", re.IGNORECASE)),
    ("dev-machine", re.compile(r"\b(?:dev|development|\d+-core)\s+machine\b", re.IGNORECASE)),
    ("time-per", re.compile(r"\d+(?:\.\d+)?\s?(?:ms|µs|us|ns|s|min)\s+(?:a|per)\b")),
    ("measured-on", re.compile(r"\bmeasured on (?!the same\b)", re.IGNORECASE)),
    ("used-to", re.compile(r"\bit used to\b|\bused to (?:take|make|cost|spend|run|be)\b", re.IGNORECASE)),
]

#: Phrases that match a TIMING pattern but are not timings: whether a data set's files are present locally.
TIMING_ALLOWED = re.compile(r"\b(?:(?:is|are|were) not|not|files are|Not available|data sets? is) on this machine\b")


def _py_files() -> list[Path]:
    return sorted((ROOT / "dpkit").rglob("*.py"))


def _notebook_text(path: Path) -> str:
    cells = json.loads(path.read_text())["cells"]
    return "\n".join("".join(c["source"]) for c in cells)


def _docs_files() -> list[Path]:
    return sorted((ROOT / "docs").rglob("*.md"))


def _process_files() -> list[Path]:
    """The tests, the benchmarks, the tools and the repository's other Markdown (this file and the notebooks' own
    check excepted: they spell the patterns out)."""
    files = [*(ROOT / "tests").rglob("*.py"), *(ROOT / "benchmarks").rglob("*.py"), *(ROOT / "tools").rglob("*.py"),
             ROOT / "ARCHITECTURE.md", ROOT / "CHANGELOG.md", ROOT / "data" / "README.md", ROOT / "benchmarks" / "README.md"]
    spelled = {Path(__file__).resolve(), (ROOT / "tests" / "test_notebooks_clean.py").resolve()}  # spell patterns out
    return sorted(p for p in files if p.is_file() and p.resolve() not in spelled)


def _hits(text: str, patterns, allowed: re.Pattern | None = None) -> list[str]:
    out = []
    for lineno, line in enumerate(text.splitlines(), 1):
        scrubbed = allowed.sub("", line) if allowed is not None else line
        for name, pat in patterns:
            for m in pat.finditer(scrubbed):
                out.append(f"{lineno}: [{name}] {m.group()!r} in {line.strip()[:120]!r}")
    return out


def _targets():
    for p in _py_files():
        yield pytest.param(p, id=str(p.relative_to(ROOT)))
    for p in sorted((ROOT / "notebooks").glob("*.ipynb")):
        yield pytest.param(p, id=str(p.relative_to(ROOT)))
    for p in _docs_files():
        yield pytest.param(p, id=str(p.relative_to(ROOT)))
    for p in _process_files():
        yield pytest.param(p, id=str(p.relative_to(ROOT)))


def _text(path: Path) -> str:
    return _notebook_text(path) if path.suffix == ".ipynb" else path.read_text(encoding="utf-8")


@pytest.mark.parametrize("path", list(_targets()))
def test_no_outside_references(path):
    hits = _hits(_text(path), OUTSIDE)
    assert hits == [], f"{path.relative_to(ROOT)} points outside the repository:\n" + "\n".join(hits)


@pytest.mark.parametrize("path", [pytest.param(p, id=str(p.relative_to(ROOT))) for p in _py_files()])
def test_no_machine_timings_or_history_in_dpkit(path):
    hits = _hits(path.read_text(encoding="utf-8"), TIMING, TIMING_ALLOWED)
    assert hits == [], (f"{path.relative_to(ROOT)} carries machine timings or change history (move them to "
                        "docs/performance_notes.md or CHANGELOG.md):\n" + "\n".join(hits))


def test_readme_has_no_outside_references():
    hits = _hits((ROOT / "README.md").read_text(encoding="utf-8"), OUTSIDE)
    assert hits == [], "README.md points outside the repository:\n" + "\n".join(hits)


@pytest.mark.parametrize("text, name", [
    ("see spec §3.4 for the shells", "spec-section"),
    ("(Spec §5.4: min-rate grows)", "spec-section"),
    ("the raw copies in ../shared/data/raw", "shared-path"),
    ("the erratum noted in thesis.md", "working-notes-file"),
    ("dwork-roth.md §4.3 B1", "working-notes-file"),
    ("(note in the spec) the LP's vertex solution", "the-spec"),
    ("(The spec prints k angles for k dimensions;", "the-spec"),
    ("(dwork-roth §4.3 B5)", "working-notes-name"),
    ("raw .dat files are absent (SOURCES.md)", "working-notes-file"),
    ("D–R seed E9.1: δ(ε') = 2.0e-9", "seed-numbering"),
    ("the fixed point the D–R seed (M13 [C]) derives", "seed-numbering"),
    ("Negative control (erratum 15)", "errata-numbering"),
    ("exact oracles (issue #17)", "issue-number"),
    ("see issue 30", "issue-number"),
    ("fixed in #29.", "hash-number"),
])
def test_outside_patterns_catch(text, name):
    assert name in [n for n, pat in OUTSIDE if pat.search(text)]


@pytest.mark.parametrize("text", [
    "color='#1f77b4'", 'edgecolor="#000000"', "x = 3  # 12 rows", "# 10. Tables", "&#8212;", "never taken for the spec's run",
    "see the docs page *The science › Errata* (`docs/science/errata.md`)", "[1, Thm 2.4]",
    "Dwork & Roth [2, §3.3]", "seed = 12", "the seeds 0..29", "errata table",
])
def test_outside_patterns_allow(text):
    assert [n for n, pat in OUTSIDE if pat.search(text)] == []


@pytest.mark.parametrize("text, caught", [
    ("libm: 20–40 ns a pair on this machine", True),
    ("(measured on the 2-core dev machine)", True),
    ("5-80 s a release", True),
    ("~0.6 s per 10⁶ candidates", True),
    ("it used to take a minute", True),
    ("the data set's files are not on this machine", False),
    ("load every data set whose files are on this machine", False),
    ("The notebook's stem, used to name paper figures.", False),
])
def test_timing_patterns(text, caught):
    assert bool(_hits(text, TIMING, TIMING_ALLOWED)) is caught
