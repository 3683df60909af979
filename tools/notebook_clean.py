"""Notebooks without outputs: what ``make lab`` saves and what the repository holds.

The committed notebooks carry no outputs, no execution counts and no widget state (``tests/test_notebooks_clean.py``).
:func:`clean` strips them from a notebook (the cells' sources, tags and other metadata stay);
:func:`pre_save_hook` is the Jupyter server's ``ContentsManager.pre_save_hook`` that ``make lab`` installs
(``tools/jupyter/jupyter_server_config.py``), so a notebook saved in JupyterLab (by hand or by autosave) is written
clean while the open tab keeps its outputs. As a command it cleans files in place, or stdin to stdout, and it
installs itself as git's clean filter of the notebooks (``.gitattributes``: ``notebooks/*.ipynb
filter=dpkit-notebook``; setting up the venv (``make run``, ``make test``, ``make venv``) and ``make lab`` run
``--install-git-filter``), so a notebook saved with outputs by any editor is staged and committed without them
(the file on disk keeps them)::

    python3 tools/notebook_clean.py notebooks/21_kappa_sweep.ipynb     # in place
    python3 tools/notebook_clean.py < in.ipynb > out.ipynb             # a filter (git's clean filter)
    python3 tools/notebook_clean.py --install-git-filter               # git config filter.dpkit-notebook.clean

The filter needs only Python's standard library, so git can run it with the system's ``python3``.
"""
from __future__ import annotations

import json
import subprocess
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
    # nbformat's layout (indent 1, non-ASCII kept) in the file's own key order: a clean notebook is written byte for byte
    return json.dumps(nb, indent=1, ensure_ascii=False) + "\n"


#: the filter's name in ``.gitattributes`` and in git's configuration
GIT_FILTER = "dpkit-notebook"


def install_git_filter(repo: str | Path = ".") -> str:
    """Configure git's clean filter :data:`GIT_FILTER` in the repository at ``repo`` (``git config``, local to the
    repository); return the command it runs. A folder that is not in a git repository is refused (``ValueError``)."""
    inside = subprocess.run(["git", "-C", str(repo), "rev-parse", "--is-inside-work-tree"], capture_output=True,
                            text=True)
    if inside.returncode != 0 or inside.stdout.strip() != "true":
        raise ValueError(f"{Path(repo).resolve()} is not in a git work tree: no git filter to install")
    command = "python3 tools/notebook_clean.py"  # git runs a clean filter from the work tree's top folder
    for key, value in ((f"filter.{GIT_FILTER}.clean", command), (f"filter.{GIT_FILTER}.smudge", "cat")):
        subprocess.run(["git", "-C", str(repo), "config", key, value], check=True)
    return command


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args == ["--install-git-filter"]:
        try:
            command = install_git_filter()
        except ValueError as exc:  # e.g. an unpacked archive: nothing to configure, and said so
            print(f"notebook_clean: {exc}", file=sys.stderr)
            return 0
        print(f"git filter {GIT_FILTER}: notebooks are staged without outputs ({command})")
        return 0
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
