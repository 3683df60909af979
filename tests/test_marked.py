"""Marked blocks (dpkit.core.marked): the one way a script rewrites the generated block of a page, refusing a page
whose markers are missing, repeated or out of order, naming the file; every script that writes such a block uses it."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from dpkit.core.marked import MarkedBlockError, marked_text, read_marked, replace_marked, write_marked

ROOT = Path(__file__).resolve().parents[1]
PAGE = "# Title\n\n<!-- b:begin: written by x; do not edit -->\nold\nlines\n<!-- b:end -->\n\nafter\r\n"


def test_the_block_between_the_markers_is_replaced_and_nothing_else(tmp_path):
    path = tmp_path / "page.md"
    path.write_bytes(PAGE.encode())
    assert read_marked(path, "b") == "old\nlines\n"
    assert write_marked(path, "b", "ε new\n") is True
    assert path.read_bytes() == PAGE.replace("old\nlines\n", "ε new\n").encode()
    assert write_marked(path, "b", "ε new\n") is False  # the same text again: nothing changed
    assert replace_marked("<!-- b:begin -->\nx<!-- b:end -->", "b", "y\n", source="s") == "<!-- b:begin -->\ny\n<!-- b:end -->"


@pytest.mark.parametrize("page, message", [
    (PAGE.replace("<!-- b:begin: written by x; do not edit -->\n", ""), r"^p.md has no marker <!-- b:begin \.\.\. -->"),
    (PAGE.replace("<!-- b:end -->", ""), r"^p.md has no marker <!-- b:end -->"),
    (PAGE + "<!-- b:end -->\n", r"^p.md has 2 of the marker <!-- b:end -->"),
    (PAGE + PAGE, r"^p.md has 2 of the marker <!-- b:begin \.\.\. -->"),
    ("<!-- b:end -->\n<!-- b:begin -->\n", r"^p.md: the end marker <!-- b:end --> comes before the begin marker"),
    (PAGE.replace("b:begin", "bb:begin").replace("b:end", "bb:end"), r"^p.md has no marker <!-- b:begin"),
    (PAGE.replace("b:begin:", "b:beginning:"), r"^p.md has no marker <!-- b:begin"),
])
def test_a_missing_repeated_or_misplaced_marker_is_refused_naming_the_file(tmp_path, page, message):
    with pytest.raises(MarkedBlockError, match=message):
        marked_text(page, "b", source="p.md")
    path = tmp_path / "p.md"
    path.write_bytes(page.encode())
    with pytest.raises(MarkedBlockError, match=re.escape(str(path))):
        write_marked(path, "b", "new\n")
    assert path.read_bytes() == page.encode()  # left as it was
    with pytest.raises(MarkedBlockError, match=rf"^{tmp_path / 'none.md'}: no such file"):
        read_marked(tmp_path / "none.md", "b")


def test_every_script_that_writes_a_marked_block_uses_the_one_helper():
    """No script of tools/ or docs/ finds a page's ``<!-- NAME:begin`` / ``:end -->`` markers itself; the four that
    write a block call the helper."""
    scripts = sorted([*ROOT.glob("tools/*.py"), *ROOT.glob("docs/*.py")])
    own = re.compile(r"re\.compile\(r?[\"'][^\n]*<!--|[\"']<!-- [\w-]+:(begin|end)[^\n]*[\"'][,)]|\.split\(\w*(BEGIN|END)")
    assert [p.name for p in scripts if own.search(p.read_text())] == []
    for name in ("docs/readme_board.py", "tools/accounting_table.py", "tools/accounting_effect.py", "tools/gate_power.py"):
        assert "from dpkit.core.marked import" in (ROOT / name).read_text(), name


def test_a_script_refuses_a_page_without_its_block_in_one_line(tmp_path):
    readme = tmp_path / "README.md"
    readme.write_text("# no block here\n")
    out = subprocess.run([sys.executable, str(ROOT / "docs" / "readme_board.py"), "--readme", str(readme),
                          "--records", str(ROOT / "data" / "leaderboard" / "records.parquet")],
                         env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True, text=True)
    assert out.returncode == 2 and out.stderr.count("\n") == 1
    assert out.stderr.startswith(f"readme_board: {readme} has no marker <!-- board:begin ... -->")
    assert readme.read_text() == "# no block here\n"
