"""Marked blocks of a text file: the lines a script writes between two HTML comments of a Markdown page.

A page holds a block named ``NAME`` as::

    <!-- NAME:begin (who writes it; do not edit by hand) -->
    the block's text
    <!-- NAME:end -->

The begin marker is one line: ``<!-- NAME:begin``, any note, ``-->``. The block's text is everything from the line
after it up to the end marker ``<!-- NAME:end -->`` (a text that ends in a line end keeps the end marker at the start
of its own line). :func:`marked_text` reads it, :func:`replace_marked` replaces it in a text and
:func:`write_marked` in a file (atomically). A page with either marker missing, or present more than once, or the
end before the begin, is refused with a :class:`MarkedBlockError` naming the file and the block: a script never
writes a page it cannot place its block in.

Used by the scripts that write generated blocks: ``docs/readme_board.py`` (the README's board),
``tools/accounting_table.py`` and ``tools/accounting_effect.py`` (docs/science/accounting.md),
``tools/gate_power.py`` (docs/guide/add-method.md).
"""
from __future__ import annotations

import os
import re

from dpkit.core.paths import write_atomic

__all__ = ["MarkedBlockError", "marked_span", "marked_text", "replace_marked", "read_marked", "write_marked"]


class MarkedBlockError(ValueError):
    """A text without exactly one begin and one end marker of a block, in that order, or a page that is not there;
    the message names the file."""


def _markers(name: str) -> tuple[re.Pattern[str], re.Pattern[str]]:
    if not name or "-->" in name or any(c.isspace() for c in name):
        raise ValueError(f"a block's name is a non-empty word without '-->'; got {name!r}")
    return (re.compile(rf"<!-- {re.escape(name)}:begin(?:[ :][^\n]*)?-->\r?\n"),
            re.compile(rf"<!-- {re.escape(name)}:end -->"))


def marked_span(text: str, name: str, *, source: str) -> tuple[int, int]:
    """Where the text of the block ``name`` stands in ``text``: from after its begin line to its end marker.

    Parameters
    ----------
    text : str
        The page.
    name : str
        The block's name (``board`` for ``<!-- board:begin ... -->``).
    source : str
        The page's file, for the message.

    Returns
    -------
    tuple of int
        The start and the end (exclusive) of the block's text.

    Raises
    ------
    MarkedBlockError
        When a marker is missing or is there more than once, or the end marker comes before the begin marker:
        naming ``source``, the block and the marker.
    """
    spans = []
    for pattern, marker in zip(_markers(name), (f"<!-- {name}:begin ... -->", f"<!-- {name}:end -->")):
        found = list(pattern.finditer(text))
        if len(found) != 1:
            how = "has no" if not found else f"has {len(found)} of the"
            raise MarkedBlockError(f"{source} {how} marker {marker} (the block {name!r} is one begin line and one end "
                                   "marker, in this order)")
        spans.append(found[0])
    begin, end = spans
    if end.start() < begin.end():
        raise MarkedBlockError(f"{source}: the end marker <!-- {name}:end --> comes before the begin marker of the "
                               f"block {name!r}")
    return begin.end(), end.start()


def marked_text(text: str, name: str, *, source: str) -> str:
    """The text of the block ``name`` in ``text`` (:func:`marked_span`)."""
    start, end = marked_span(text, name, source=source)
    return text[start:end]


def replace_marked(text: str, name: str, content: str, *, source: str) -> str:
    """``text`` with the block ``name``'s text replaced by ``content``, the markers and everything else kept.

    Raises
    ------
    MarkedBlockError
        As :func:`marked_span`.
    """
    start, end = marked_span(text, name, source=source)
    return text[:start] + content + text[end:]


def _read(path: str | os.PathLike) -> str:
    """The UTF-8 file ``path`` as it is (its line ends untranslated); a missing one is a :class:`MarkedBlockError`."""
    try:
        with open(path, encoding="utf-8", newline="") as f:
            return f.read()
    except FileNotFoundError:
        raise MarkedBlockError(f"{path}: no such file (the page that holds the block)") from None


def read_marked(path: str | os.PathLike, name: str) -> str:
    """The text of the block ``name`` in the UTF-8 file ``path``.

    Raises
    ------
    MarkedBlockError
        As :func:`marked_span`, naming ``path``.
    """
    return marked_text(_read(path), name, source=str(path))


def write_marked(path: str | os.PathLike, name: str, content: str) -> bool:
    """Replace the text of the block ``name`` in the UTF-8 file ``path`` by ``content`` (atomically, the rest of the
    file byte for byte as it was); nothing is written when a marker is wrong.

    Returns
    -------
    bool
        Whether the block's text changed.

    Raises
    ------
    MarkedBlockError
        As :func:`marked_span`, naming ``path``: the file is left as it was.
    """
    text = _read(path)
    new = replace_marked(text, name, content, source=str(path))
    write_atomic(path, new.encode("utf-8"))
    return new != text
