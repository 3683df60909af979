"""Notebooks without outputs: what ``make lab`` saves and what the repository holds.

The committed notebooks carry no outputs, no execution counts and no widget state (``tests/test_notebooks_clean.py``).
:func:`clean` strips them from a notebook (the cells' sources, tags and other metadata stay);
:func:`pre_save_hook` is the Jupyter server's ``ContentsManager.pre_save_hook`` that ``make lab`` installs
(``tools/jupyter/jupyter_server_config.py``), so a notebook saved in JupyterLab (by hand or by autosave) is written
clean while the open tab keeps its outputs. As a command it cleans files in place, or stdin to stdout::

    python tools/notebook_clean.py notebooks/21_kappa_sweep.ipynb     # in place
    python tools/notebook_clean.py < in.ipynb > out.ipynb             # a filter (e.g. git's clean filter)
"""
from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

#: cell metadata written by a front end while a notebook runs (timings, scroll state), dropped with the outputs
VOLATILE_CELL_METADATA = ("execution", "collapsed", "scrolled", "ExecuteTime")


def clean(nb: dict[str, Any]) -> dict[str, Any]:
    """``nb`` (nbformat 4, as JSON) without outputs, execution counts, widget state or run-time cell metadata;
    changed in place and returned."""
    for cell in nb.get("cells", []):
        if cell.get("cell_type") == "code":
            cell["outputs"] = []
            cell["execution_count"] = None
        for key in VOLATILE_CELL_METADATA:
            cell.get("metadata", {}).pop(key, None)
    nb.get("metadata", {}).pop("widgets", None)
    return nb


def pre_save_hook(model: dict[str, Any], **kwargs: Any) -> None:
    """The Jupyter server's pre-save hook: a notebook model is written clean (:func:`clean`); other files as they
    are."""
    if model.get("type") == "notebook" and isinstance(model.get("content"), dict):
        clean(model["content"])


def _dump(nb: dict[str, Any]) -> str:
    # nbformat's own layout (indent 1, keys sorted, non-ASCII kept), so a clean notebook is written byte for byte
    return json.dumps(nb, indent=1, sort_keys=True, ensure_ascii=False) + "\n"


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if not args:
        sys.stdout.write(_dump(clean(json.loads(sys.stdin.read()))))
        return 0
    for name in args:
        path = Path(name)
        try:
            nb = json.loads(path.read_text())
        except (OSError, ValueError) as exc:
            print(f"notebook_clean: {path}: not a readable notebook ({exc})", file=sys.stderr)
            return 2
        text = _dump(clean(nb))
        if text != path.read_text():
            path.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
