"""Module docstrings say what a module is, not how to run a command or what it used to do.

A module docstring of ``dpkit/`` holds the concept, its algorithm, its guarantees, the errors worth knowing and its
references. How to run a command, which files it writes, and the project's history belong to the docs pages
(``docs/guide/*.md``, ``docs/science/*.md``, ``docs/faq.md``) and the changelog. This test reads every module's
docstring from its syntax tree and refuses a command line (a ``make`` target of the Makefile, ``python -m …``, a
shell prompt) and words of the past ("used to", "previously", "before this change"), naming the file and line of
each.
"""
from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "dpkit"


def _make_targets() -> list[str]:
    """The Makefile's targets (``name:`` at the start of a line)."""
    text = (ROOT / "Makefile").read_text(encoding="utf-8")
    return sorted(set(re.findall(r"^([A-Za-z][\w-]*)\s*:(?!=)", text, flags=re.M)))


def _patterns() -> dict[str, re.Pattern[str]]:
    targets = "|".join(re.escape(t) for t in _make_targets())
    return {
        "a make command": re.compile(rf"\bmake (?:{targets})\b"),
        "a python -m command": re.compile(r"\bpython3? -m\b"),
        "a shell prompt": re.compile(r"^\s*(?:\$|>>>\s*!)\s", re.M),
        # "used to" of the past, not the passive "is used to compute"
        "the past": re.compile(r"(?<!\bis )(?<!\bare )(?<!\bbe )\bused to\b|\bpreviously\b|\bbefore this change\b",
                               re.I),
    }


def _findings(docstrings: dict[str, str]) -> list[str]:
    """One line ``file:line: kind: text`` per command line or word of the past in the docstrings given."""
    found = []
    patterns = _patterns()
    for name, doc in docstrings.items():
        lines = doc.splitlines()
        for kind, pattern in patterns.items():
            for match in pattern.finditer(doc):
                line = doc.count("\n", 0, match.start())
                found.append(f"{name}:{line + 1}: {kind}: {lines[line].strip()[:100]}")
    return found


def _module_docstrings() -> dict[str, str]:
    docs = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8")))
        if doc:
            docs[str(path.relative_to(ROOT))] = doc
    return docs


def test_the_makefile_targets_are_read():
    targets = _make_targets()
    assert {"board-add", "run", "docs-quick", "test"} <= set(targets), targets


def test_the_patterns_find_each_kind_and_spare_plain_english():
    caught = _findings({
        "a.py": "Run ``make board-add METHOD=x``.",
        "b.py": "``python -m dpkit.batch run M.yaml`` runs it.",
        "c.py": "Example::\n\n    $ dpkit run\n",
        "d.py": "The ledger used to round; previously it did not.",
    })
    assert [c.split(":")[0] for c in caught] == ["a.py", "b.py", "c.py", "d.py", "d.py"], caught
    assert not _findings({"e.py": "Failures make the exit status 1; they make a table. Cost: $ 3.",
                          "f.py": "The bound is used to choose the precision; both are used to rank."})


def test_no_module_docstring_holds_a_command_line_or_the_past():
    found = _findings(_module_docstrings())
    assert not found, ("module docstrings hold a manual (move it to docs/guide/ or docs/faq.md):\n"
                       + "\n".join(found))
