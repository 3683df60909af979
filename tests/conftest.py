"""Shared test fixtures: run notebooks headless in QUICK mode and read their metrics."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ.setdefault("MPLBACKEND", "Agg")
# hermetic tests: no reuse of (or writes to) the on-disk cache of embeddings and exact answers
# (dpkit.queries.disk_cache); tests of the cache point it at a tmp folder with monkeypatch
os.environ["DPKIT_CACHE_DIR"] = "off"

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"


@pytest.fixture(autouse=True)
def _close_figures():
    """Every test starts without open pyplot figures (matplotlib warns, and the suite errors, past 20)."""
    yield
    import sys

    plt = sys.modules.get("matplotlib.pyplot")
    if plt is not None:
        plt.close("all")


@pytest.fixture
def run_notebook(tmp_path):
    """Execute ``notebooks/<name>`` with papermill (QUICK, non-interactive); return its metrics dict."""
    from dpkit.batch import execute_notebook
    from dpkit.outputs.report import read_metrics

    def _run(name: str, **params):
        out = tmp_path / Path(name).stem
        params.setdefault("QUICK", True)
        params.setdefault("INTERACTIVE", False)
        execute_notebook(NOTEBOOKS / name, out, parameters=params)
        return read_metrics(out / "metrics.json")

    return _run
