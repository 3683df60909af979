"""Numbers and lists the docs state about the code are the code's.

A page that says how many repetitions a QUICK board-add runs, which suites the registry has, which data sets the
registry holds or what a switch's default is, is compared here with the constant or the function that decides it:
changing either without the other fails, naming the page, its sentence and the code's value.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"


def _page(name: str) -> str:
    return " ".join((DOCS / name).read_text().split())  # one line: a sentence may wrap anywhere


def _stated(name: str, pattern: str) -> tuple[str, ...]:
    """The groups of ``pattern`` in page ``name`` (its one match; the page's whitespace folded to single spaces)."""
    found = re.findall(pattern, _page(name))
    assert len(found) == 1, f"docs/{name}: expected one sentence matching {pattern!r}, found {len(found)}"
    return found[0] if isinstance(found[0], tuple) else (found[0],)


def _notebook_source(stem: str) -> str:
    nb = json.loads((ROOT / "notebooks" / f"{stem}.ipynb").read_text())
    return "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code")


def test_the_quick_board_add_runs_the_code_s_repetitions():
    from dpkit.board.add import QUICK_REPS
    from dpkit.board.statistics import DEFAULT_BUDGET, sign_min_reps

    (reps,) = _stated("guide/add-method.md", r"make board-add METHOD=package\.module:NAME QUICK=1 # one data set, one σ, "
                                             r"(\d+) repetitions")
    assert int(reps) == QUICK_REPS, f"docs/guide/add-method.md: QUICK=1 runs {reps} repetitions; the code: {QUICK_REPS}"
    make = re.findall(r"QUICK=1: one data set, one sigma, (\d+) repetitions", (ROOT / "Makefile").read_text())
    assert make and all(int(n) == QUICK_REPS for n in make), f"Makefile: QUICK=1 runs {make} repetitions; {QUICK_REPS}"
    (judged,) = _stated("guide/add-method.md", r"\(`QUICK=1` judges (\d+)\)")
    assert int(judged) == QUICK_REPS // 2, "the odd repetitions of QUICK_REPS are judged"
    fewest, gamma = _stated("guide/add-method.md", r"with fewer than (\d+) judged repetitions")[0], \
        _stated("guide/add-method.md", r"Holm across the cells of a table at γ = ([0-9.]+)")[0]
    assert float(gamma) == DEFAULT_BUDGET
    assert int(fewest) == sign_min_reps(DEFAULT_BUDGET)


def test_the_quick_board_of_your_own_data_states_the_notebook_s_quick_sizes():
    sigmas, reps, queries = _stated("guide/own-data.md", r"QUICK=1 # (one) σ, (\d+) repetitions, (\d+) queries")
    m = re.search(r"SIGMAS, REPS, N_QUERIES = SIGMAS\[:(\d+)\], (\d+), (\d+)", _notebook_source("45_leaderboard"))
    assert m, "notebooks/45_leaderboard: its QUICK sizes are no longer one assignment; update this test and the page"
    assert (1, int(reps), int(queries)) == tuple(int(g) for g in m.groups()), \
        f"docs/guide/own-data.md states {sigmas} σ, {reps} repetitions, {queries} queries; notebook 45: {m.groups()}"


def test_the_verify_reps_default_is_the_code_s():
    import inspect

    from dpkit.batch.runner import run_manifest
    from dpkit.experiments.adoption import DEFAULT_VERIFY_REPS, verify_reps_switch

    (default,) = _stated("guide/batch.md", r"\(with `--stale verify`; N ≥ 1, default (\d+)\)")
    assert int(default) == DEFAULT_VERIFY_REPS == verify_reps_switch() \
        == inspect.signature(run_manifest).parameters["verify_reps"].default
    (words,) = _stated("guide/batch.md", r"What is verified is what (\w+) repetitions show")
    assert {"two": 2, "three": 3}.get(words) == DEFAULT_VERIFY_REPS


def test_the_suites_named_in_the_guide_are_the_registry_s():
    from dpkit.methods.registry import suites

    (sentence,) = _stated("guide/add-method.md", r"The suites: (.*?)\. `registry\.get")
    named = re.findall(r"`([a-z]\w*)`", sentence)  # the suites' names (the notebooks' start with a digit)
    assert sorted(named) == suites(), f"docs/guide/add-method.md names the suites {named}; the registry: {suites()}"


@pytest.mark.parametrize("page", ["index.md"])
def test_the_data_sets_counted_in_the_docs_are_the_registry_s(page):
    from dpkit.data.registry import load_registry

    uci = [code for code in load_registry() if code != "mock"]
    words = {"five": 5, "six": 6, "seven": 7}
    (count,) = _stated(page, r"on (\w+) UCI data sets")
    assert words.get(count) == len(uci), f"docs/{page}: {count} UCI data sets; the registry: {uci}"


def test_the_core_package_says_what_core_holds():
    """``dpkit.core``'s docstring names what is in it: the release protocol is in ``dpkit.queries.release``."""
    import pkgutil

    import dpkit.core

    doc = dpkit.core.__doc__
    assert "release protocol" not in doc or ":mod:`dpkit.queries.release`" in doc, "the protocol is not in core"
    for module in ("validation", "rng", "accounting", "composition", "exceptions", "paths", "settings", "threads"):
        assert module in {m.name for m in pkgutil.iter_modules(dpkit.core.__path__)}, module


def test_the_faq_s_board_sizes_are_the_manifest_s_and_the_published_board_s():
    import pandas as pd
    import yaml

    (reps,) = _stated("faq.md", r"\| `make leaderboard` \| every method on every cell of the tables, (\d+) repetitions \|")
    manifest = yaml.safe_load((ROOT / "notebooks" / "manifests" / "leaderboard.yaml").read_text())
    assert int(reps) == manifest["defaults"]["REPS"], "docs/faq.md: make leaderboard's repetitions"
    (workloads,) = _stated("faq.md", r"your method on the stored board's ([\d,]+) workloads")
    records = pd.read_parquet(ROOT / "data" / "leaderboard" / "records.parquet", columns=["dataset", "sigma", "rep"])
    cells = len(records.drop_duplicates())
    assert int(workloads.replace(",", "")) == cells, f"docs/faq.md: {workloads} workloads; the published board: {cells}"
