"""dpkit's environment variables: the one module that reads them, and their table.

A ``DPKIT_*`` environment variable is a machine's setting (where the data and the caches live, whether downloads
are allowed, how many threads a process may use), never one run's parameter: a run's folder, its checkpoint and its
adoption policy are the runner's parameters. :data:`SETTINGS` lists every variable with its meaning, its default and
the modules that ask for it; :func:`setting` is the only reader (it refuses a name that is not in the table), and
:func:`settings_markdown` renders the table for the docs' configuration page (``docs/build.py``).
``tests/test_settings.py`` fails on a module that reads a ``DPKIT_*`` variable from ``os.environ`` itself.
"""
from __future__ import annotations

import os
from dataclasses import dataclass

__all__ = ["Setting", "SETTINGS", "UnknownSettingError", "setting", "settings_markdown"]


@dataclass(frozen=True, kw_only=True)
class Setting:
    """One environment variable: its ``name``, what it ``means``, its ``default`` (in words) and the modules that
    read it through :func:`setting` (``readers``, dotted module names or repository paths)."""

    name: str
    meaning: str
    default: str
    readers: tuple[str, ...]


class UnknownSettingError(KeyError):
    """A ``DPKIT_*`` name asked of :func:`setting` that :data:`SETTINGS` does not list."""


_TABLE = (
    Setting(name="DPKIT_DATA_DIR",
            meaning="The folder searched first for raw data files (``DIR/CODE/<file>`` or ``DIR/<file>``) and where "
                    "``python -m dpkit.data fetch`` downloads; it must be an existing folder.",
            default="unset: ``<clone>/data/raw``",
            readers=("dpkit.data.files",)),
    Setting(name="DPKIT_SHARED_DIR",
            meaning="The machine's reference folder holding ``data/raw`` (offline copies of the data sets), searched "
                    "after the clone's ``data/raw``.",
            default="unset: the first ancestor folder ``shared`` holding ``data/raw``",
            readers=("dpkit.core.paths", "dpkit.data.files")),
    Setting(name="DPKIT_OFFLINE",
            meaning="``1``, ``true``, ``yes`` or ``on``: no downloads (a missing file is an error naming it); ``0``, "
                    "``false``, ``no``, ``off`` or empty: downloads allowed; anything else is an error.",
            default="unset: downloads allowed",
            readers=("dpkit.data.download",)),
    Setting(name="DPKIT_REGISTRY",
            meaning="The data registry file (a copy of ``data/registry.yaml``).",
            default="unset: ``<clone>/data/registry.yaml``",
            readers=("dpkit.data.registry",)),
    Setting(name="DPKIT_CACHE_DIR",
            meaning="The root of dpkit's disk caches (the exact answers, ``jax/`` the JAX compilation cache); "
                    "``off``, ``0``, ``none`` or empty turn both off.",
            default="unset: ``<results>/cache`` for the answers, ``~/.cache/dpkit/jax`` for JAX",
            readers=("dpkit.queries.disk_cache", "dpkit.methods._discrete")),
    Setting(name="DPKIT_JAX_CACHE",
            meaning="``0``, ``false``, ``no`` or ``off``: no persistent JAX compilation cache (Private-PGM's "
                    "estimator).",
            default="unset: on",
            readers=("dpkit.methods._discrete",)),
    Setting(name="DPKIT_THREADS",
            meaning="At most this many worker threads for the Gaussian-kernel evaluator (a positive integer; the "
                    "numbers do not depend on it). The batch runner sets it to each worker's share of the cores.",
            default="unset: the process's CPU affinity mask",
            readers=("dpkit.queries.gemm",)),
    Setting(name="DPKIT_SCHEDULER",
            meaning="The Dask scheduler's address a notebook's repetition tasks go to (``REP_BACKEND`` ``auto`` or "
                    "``dask``); set by the batch runner in its Dask workers, whose kernels inherit it.",
            default="unset: repetitions in processes (``auto``) or the current Dask client's cluster (``dask``)",
            readers=("dpkit.batch.repetitions",)),
    Setting(name="DPKIT_FIGURES_DIR",
            meaning="Where paper figures are exported (a test's scratch folder, say).",
            default="unset: ``<clone>/figures``",
            readers=("dpkit.core.paths",)),
    Setting(name="DPKIT_RESULTS_DIR",
            meaning="The default home of run outputs and of the answers' cache.",
            default="unset: ``<clone>/results``",
            readers=("dpkit.core.paths",)),
    Setting(name="DPKIT_BOARD_RECORDS",
            meaning="The leaderboard records file the docs' results pages and the README's board block render "
                    "(``--board``/``--records`` win); a file named so must exist.",
            default="unset: ``data/leaderboard/records.parquet``",
            readers=("docs/build.py", "docs/readme_board.py")),
    Setting(name="DPKIT_DOCS_TABLES",
            meaning="The folder of Tables 3.2/3.3 the docs render (``--tables`` wins).",
            default="unset: the ``--notebooks`` batch's ``assembled/``, else ``data/tables``",
            readers=("docs/build.py",)),
    Setting(name="DPKIT_DOCS_CHECKS",
            meaning="The checks summary (``.md``) the docs render (``--checks`` wins).",
            default="unset: the ``--notebooks`` batch's ``checks_summary.md``, else "
                    "``results/batch/full/checks_summary.md``",
            readers=("docs/build.py",)),
)

#: Every ``DPKIT_*`` environment variable dpkit, its docs and its tools read, by name (:class:`Setting`).
SETTINGS: dict[str, Setting] = {s.name: s for s in _TABLE}


def setting(name: str) -> str | None:
    """The value of the environment variable ``name`` of :data:`SETTINGS`, read now (``None`` when unset).

    Raises
    ------
    UnknownSettingError
        ``name`` is not in :data:`SETTINGS` (a new variable is added to the table first, with its meaning and
        default, so that the configuration page lists it).
    """
    if name not in SETTINGS:
        raise UnknownSettingError(f"{name!r} is not one of dpkit's settings ({', '.join(SETTINGS)}); "
                                  "add it to dpkit.core.settings.SETTINGS first")
    return os.environ.get(name)


def settings_markdown() -> str:
    """:data:`SETTINGS` as a Markdown table (variable, meaning, default, read by), for the configuration page."""
    lines = ["| variable | meaning | default | read by |", "|---|---|---|---|"]
    for s in SETTINGS.values():
        readers = ", ".join(f"`{r}`" for r in s.readers)
        lines.append(f"| `{s.name}` | {_md(s.meaning)} | {_md(s.default)} | {readers} |")
    return "\n".join(lines)


def _md(text: str) -> str:
    """reST inline literals (````x````) as Markdown's (```x```), pipes escaped for a table cell."""
    return text.replace("``", "`").replace("|", "\\|")
