"""Every ``python`` and ``bash`` code block of the user guide (``docs/guide/*.md``), ``docs/getting-started.md`` and
``docs/faq.md`` runs as written.

A page's blocks run in order, each in a fresh process (``python -c`` or ``bash -e``), in a scratch folder that looks
like the repository (its files linked, its own empty ``results/``; exported paper figures to a scratch
``$DPKIT_FIGURES_DIR``), so a block's relative paths (``notebooks/...``, ``.venv/bin/python``, ``results/...``) mean
what they mean to a reader in a clone. ``make`` runs with ``-o .venv/.dpkit-installed``: the venv running this test is
the one the block would create. A block that cannot run in a test carries a marker on the line before it,
``<!-- not run by the tests: REASON -->``, which names why (the suite itself, a server, a cluster, a long run whose
QUICK variant is the block before it); the test lists the marked blocks and fails on an unmarked block that fails.

``docs/guide/add-method.md`` is not run here: its ``NoisyMean`` example and its ``board-add`` are run by the
test of the board-add tutorial (through a QUICK board-add), which another change adds.
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
#: the pages whose blocks run (add-method.md: see the module docstring)
EXCLUDED = {"docs/guide/add-method.md": "its NoisyMean example and board-add run in the board-add tutorial's test"}
PAGES = sorted({*ROOT.glob("docs/guide/*.md"), ROOT / "docs" / "getting-started.md", ROOT / "docs" / "faq.md"})
MARKER = re.compile(r"<!--\s*not run by the tests:\s*(.*?)\s*-->")
FENCE = re.compile(r"^```(\w*)\s*$")
#: a block's time limit (a QUICK notebook run on a busy 2-core machine takes a few minutes)
TIMEOUT_S = 900


@dataclass
class Block:
    page: str
    line: int
    lang: str
    code: str
    skip: str | None  # the marker's reason, or None: the block runs


def blocks(page: Path, root: Path = ROOT) -> list[Block]:
    """The fenced ``python``/``bash`` blocks of ``page`` (named relative to ``root``), with the marker of the line
    before each (if any)."""
    lines = page.read_text().splitlines()
    out, i = [], 0
    rel = page.relative_to(root).as_posix()
    while i < len(lines):
        m = FENCE.match(lines[i])
        if m and m.group(1) and not lines[i].startswith("```{"):
            j = i + 1
            while j < len(lines) and not lines[j].startswith("```"):
                j += 1
            prev = next((ln for ln in reversed(lines[:i]) if ln.strip()), "")
            marker = MARKER.search(prev)
            if m.group(1) in ("python", "bash"):
                out.append(Block(rel, i + 1, m.group(1), "\n".join(lines[i + 1:j]) + "\n",
                                 marker.group(1) if marker else None))
            i = j + 1
        else:
            i += 1
    return out


def test_markers_name_a_reason_and_the_pages_have_blocks():
    every = [b for p in PAGES for b in blocks(p)]
    assert len(every) >= 10
    for b in every:
        assert b.skip is None or len(b.skip) > 15, f"{b.page}:{b.line}: a marker names its reason"
    marked = [f"{b.page}:{b.line}: {b.skip}" for b in every if b.skip]
    print("not run by the tests:\n  " + "\n  ".join(marked))
    assert len(marked) <= 6, "more than a few blocks cannot run: give them QUICK variants"
    assert set(EXCLUDED) <= {p.relative_to(ROOT).as_posix() for p in PAGES}, "an excluded page that does not exist"


def _scratch(tmp: Path) -> Path:
    """A folder that looks like the clone: every top-level entry linked, but ``results/`` its own and empty."""
    work = tmp / "clone"
    work.mkdir()
    for entry in ROOT.iterdir():
        if entry.name in ("results", ".git", ".pytest_cache"):
            continue
        (work / entry.name).symlink_to(entry)
    (work / "results").mkdir()
    return work


def _env(tmp: Path) -> dict[str, str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "DPKIT_FIGURES_DIR": str(tmp / "figures"),
           "MPLBACKEND": "Agg", "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    env["DPKIT_RESULTS_DIR"] = str(tmp / "clone" / "results")  # a block's results/ is the scratch clone's
    return env


#: bash blocks: make never rebuilds the venv that runs this test; a failing command stops the block
_BASH_PRELUDE = "set -eo pipefail\nmake() { command make -o .venv/.dpkit-installed \"$@\"; }\n"


def run_block(block: Block, work: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    if block.lang == "python":
        cmd = [sys.executable, "-c", block.code]
    else:
        cmd = ["bash", "-c", _BASH_PRELUDE + block.code]
    return subprocess.run(cmd, cwd=work, env=env, capture_output=True, text=True, timeout=TIMEOUT_S)


@pytest.mark.notebook
@pytest.mark.parametrize("page", [p for p in PAGES if p.relative_to(ROOT).as_posix() not in EXCLUDED],
                         ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_code_block_runs_as_written(page, tmp_path):
    todo = [b for b in blocks(page) if b.skip is None]
    if not todo:
        pytest.skip(f"{page.name}: no python or bash block to run")
    work, env = _scratch(tmp_path), _env(tmp_path)
    for block in todo:
        out = run_block(block, work, env)
        assert out.returncode == 0, (f"{block.page}:{block.line}: the {block.lang} block failed "
                                     f"(exit {out.returncode}):\n{block.code}\n--- stdout\n{out.stdout[-3000:]}"
                                     f"\n--- stderr\n{out.stderr[-3000:]}")


def test_a_failing_unmarked_block_fails_and_a_marked_one_is_skipped(tmp_path):
    """The harness itself: an unmarked failing block is reported as failing, a marked one is not run."""
    text = ("# x\n\n```bash\nexit 3\n```\n\n<!-- not run by the tests: a server that runs until it is stopped -->\n"
            "```python\nraise SystemExit(4)\n```\n\n```{toctree}\n```\n")
    fake = tmp_path / "docs" / "guide" / "x.md"
    fake.parent.mkdir(parents=True)
    fake.write_text(text)
    found = blocks(fake, tmp_path)
    assert [(b.lang, b.skip is None) for b in found] == [("bash", True), ("python", False)], found
    assert run_block(found[0], tmp_path, _env(tmp_path)).returncode == 3
