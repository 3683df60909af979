"""Committed notebooks carry no outputs, no execution counts and no widget state, and each has exactly one cell
tagged ``parameters`` with the four contract parameters."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

NOTEBOOKS = sorted((Path(__file__).resolve().parents[1] / "notebooks").glob("*.ipynb"))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_committed_notebook_is_clean(path):
    nb = json.loads(path.read_text())
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    assert not any(c.get("outputs") for c in code), f"{path.name} has outputs"
    assert not any(c.get("execution_count") for c in code), f"{path.name} has execution counts"
    assert "widgets" not in nb.get("metadata", {}), f"{path.name} carries widget state"
    tagged = [c for c in code if "parameters" in c.get("metadata", {}).get("tags", [])]
    assert len(tagged) == 1, f"{path.name}: {len(tagged)} cells tagged parameters"
    src = "".join(tagged[0]["source"])
    for decl in ("SEED: int", "QUICK: bool", "INTERACTIVE: bool", "OUTPUT_DIR: str"):
        assert decl in src, f"{path.name}: the parameters cell lacks {decl!r}"


_INTERNAL = re.compile(r"\bissues?\s*#?\s*\d+|\.\./shared/spec|\bseeds? 0\d\d\b", re.IGNORECASE)


def test_user_facing_text_names_no_internal_labels():
    """Notebook markdown and the README speak of papers, theorems and sections, not of the project's issue numbers
    or files outside the repository."""
    root = NOTEBOOKS[0].parents[1]
    texts = [(p.name, "".join("".join(c["source"]) for c in json.loads(p.read_text())["cells"]
                              if c["cell_type"] == "markdown")) for p in NOTEBOOKS]
    texts += [(p.name, p.read_text()) for p in (root / "README.md", root / "figures" / "README.md") if p.is_file()]
    hits = [f"{name}: {m.group()!r}" for name, text in texts for m in _INTERNAL.finditer(text)]
    assert hits == []
