"""Every reader of board records validates them.

A records file with a record over the budget, two budgets, a negative or missing error, its columns reordered, a
column of the wrong type or missing, a duplicated key, a method missing a repetition in a cell, δ > 0 in an ε-DP
record, a file that is not Parquet, or no file at all: every command that reads records (``board-add``, the
assembler, ``docs/readme_board.py`` with and without ``--check``, ``docs/build.py``, notebook 45 through the batch
runner) stops with one line naming the file and the problem, exit 2 (the notebook: its batch run fails, exit 1,
naming it), never a traceback, never a silent pass. The bad files are made from the published records
(``data/leaderboard/records.parquet``), which pass, in well under a second.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dpkit.board.records import (
    RECORDS_NAME,
    BoardFileError,
    InvalidRecordsError,
    check_records,
    read_board,
    read_records,
    write_records,
)
from dpkit.core.published import PROVENANCE_NAME

ROOT = Path(__file__).resolve().parents[1]
PUBLISHED = ROOT / "data" / "leaderboard" / RECORDS_NAME
#: the entrant of the board-add runs: a fast registered method left off the small board
ENTRANT = "direct-laplace_I"


@pytest.fixture(scope="module")
def small() -> pd.DataFrame:
    """A small valid board from the published records: WDBC, σ = 2, repetitions 0…3, every method but the entrant."""
    df = read_board(PUBLISHED)
    keep = (df["dataset"] == "WDBC") & (df["sigma"] == 2.0) & (df["rep"] < 4) & (df["method"] != ENTRANT)
    return check_records(df[keep].reset_index(drop=True), source="the small board")


def _first(df: pd.DataFrame, privacy: str, method: str | None = None) -> int:
    rows = df.index[(df["privacy"] == privacy) & ((df["method"] == method) if method else True)]
    return int(rows[0])


def _set(df: pd.DataFrame, i: int, column: str, value) -> pd.DataFrame:
    out = df.copy()
    out.loc[i, column] = value
    return out


def _over_budget(df):
    return _set(df, _first(df, "ε-DP", "trig-I"), "eps_spent", 1.5)


def _over_delta(df):
    return _set(df, _first(df, "(ε,δ)-DP", "trig-II"), "delta_spent", 0.002)


def _two_budgets(df):
    out = df.copy()
    out.loc[out["method"] < "m", "budget_epsilon"] = 2.0  # half the methods were run at another budget
    return out


def _negative_error(df):
    return _set(df, _first(df, "ε-DP", "trig-I"), "abs", -0.01)


def _nan_error(df):
    return _set(df, _first(df, "(ε,δ)-DP", "trig-II"), "rel", np.nan)


def _infinite_error(df):
    return _set(df, _first(df, "(ε,δ)-DP", "trig-II"), "abs", np.inf)


def _reordered(df):
    cols = list(df.columns)
    cols[7], cols[8] = cols[8], cols[7]  # rel before abs: read by position, the errors would be swapped
    return df[cols]


def _wrong_dtype(df):
    return df.astype({"rep": "float64"})


def _duplicate_key(df):
    return pd.concat([df, df.iloc[[5]]], ignore_index=True)


def _missing_repetition(df):
    return df.drop(index=df.index[(df["method"] == "trig-I") & (df["rep"] == 3)]).reset_index(drop=True)


def _missing_column(df):
    return df.drop(columns=["delta_spent"])


def _delta_in_pure(df):
    return _set(df, _first(df, "ε-DP", "trig-I"), "delta_spent", 1e-4)


def _two_classes(df):
    return _set(df, _first(df, "(ε,δ)-DP", "trig-II"), "privacy", "non-private")


def _unknown_class(df):
    return _set(df, _first(df, "ε-DP", "trig-I"), "privacy", "private-ish")


def _partial_supremum(df):
    return _set(df, _first(df, "ε-DP", "trig-I"), "sup_abs", np.nan)


#: name -> (the bad table made from the small board, or None for a file that is not one; the problem's words)
CASES: dict[str, tuple[Callable[[pd.DataFrame], pd.DataFrame] | None, str]] = {
    "over_budget": (_over_budget, r"record \(WDBC, σ=2, rep 0, trig-I\) spent ε = 1\.5, over the board's budget ε = 1"),
    "over_delta": (_over_delta, r"record \(WDBC, σ=2, rep 0, trig-II\) spent δ = 0\.002, over the board's budget "
                                r"δ = 0\.001"),
    "two_budgets": (_two_budgets, r"budget_epsilon takes 2 values \[1\.0, 2\.0\]; a board has one budget"),
    "negative_error": (_negative_error, r"abs = -0\.01 in record \(WDBC, σ=2, rep 0, trig-I\): abs must be a finite "
                                        r"non-negative error"),
    "nan_error": (_nan_error, r"rel is missing \(NaN or null\) in record \(WDBC, σ=2, rep 0, trig-II\)"),
    "infinite_error": (_infinite_error, r"abs = inf in record \(WDBC, σ=2, rep 0, trig-II\)"),
    "reordered_columns": (_reordered, r"the columns are in another order than the leaderboard records table's "
                                      r"\('rel' at position 7, 'abs' at position 8;"),
    "wrong_dtype": (_wrong_dtype, r"column type\(s\) \{'rep': 'double'\}; expected \{'rep': 'int64'\}"),
    "duplicate_key": (_duplicate_key, r"2 rows share a key \('dataset', 'sigma', 'rep', 'method'\)"),
    "missing_repetition": (_missing_repetition, r"cell \(WDBC, σ=2\): method 'trig-I' lacks repetition\(s\) \[3\] "
                                                r"of 0…3"),
    "missing_column": (_missing_column, r"not a leaderboard records table \(missing columns \['delta_spent'\]"),
    "delta_in_eps_dp": (_delta_in_pure, r"record \(WDBC, σ=2, rep 0, trig-I\): ε-DP, but δ = 0\.0001 spent"),
    "two_privacy_classes": (_two_classes, r"method 'trig-II' has the privacy classes \['\(ε,δ\)-DP', 'non-private'\]"),
    "unknown_privacy_class": (_unknown_class, r"privacy = 'private-ish' in record \(WDBC, σ=2, rep 0, trig-I\)"),
    "partial_supremum": (_partial_supremum, r"method 'trig-I' has a class supremum \(sup_abs\) in 3 of its 4 "
                                            r"repetitions"),
    "not_parquet": (None, r"not a readable Parquet file \("),
    "missing_file": (None, r"not found|no records file"),
}


def _bad_file(case: str, small: pd.DataFrame, folder: Path) -> Path:
    """The bad records file of ``case`` in ``folder`` (with the published provenance beside it), written by pandas:
    :func:`write_records` would refuse it."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / RECORDS_NAME
    shutil.copy(PUBLISHED.parent / PROVENANCE_NAME, folder / PROVENANCE_NAME)
    make, _ = CASES[case]
    if make is not None:
        make(small).to_parquet(path, index=False)
    elif case == "not_parquet":
        path.write_text("dataset,sigma,rep,method\nWDBC,2.0,0,trig-I\n")  # a CSV file under the name
    return path


def _one_line(err: str, path: Path, problem: str) -> str | None:
    """``None`` when ``err`` is one line naming ``path`` and matching ``problem``; else what is wrong."""
    lines = [x for x in err.splitlines() if x.strip()]
    if len(lines) != 1:
        return f"{len(lines)} lines on stderr: {err[-800:]!r}"
    if str(path) not in lines[0] or not re.search(problem, lines[0]):
        return f"the line does not name {path} and /{problem}/: {lines[0]!r}"
    return None


def _run(cmd: list[str], timeout: float = 120) -> tuple[int | None, str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)}
    env.pop("DPKIT_BOARD_RECORDS", None)
    try:
        proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as exc:  # a bad file accepted: the command went on computing
        return None, f"still running after {timeout} s: {exc.stderr!r}"
    return proc.returncode, proc.stderr


def _batch_run(folder: Path, records: Path | None) -> Path:
    """A batch output folder with one finished ``45_leaderboard`` run whose records are ``records`` (none: absent)."""
    run = folder / "45_leaderboard" / "aaa"
    run.mkdir(parents=True)
    (run / "run.json").write_text(json.dumps({"status": "ok", "key": None, "notebook_sha256": "nb",
                                              "parameters": {"DATASETS": ["WDBC"], "OUTPUT_DIR": str(run)},
                                              "wall_time_s": 1.0}))
    (run / "metrics.json").write_text(json.dumps({"checks": [], "table": [], "method_rows": [],
                                                  "provenance": {"git": {"commit": "abc", "dirty": False}}}))
    if records is not None:
        shutil.copy(records, run / RECORDS_NAME)
    return run / RECORDS_NAME


def test_the_published_board_passes_in_well_under_a_second():
    start = time.process_time()
    df = read_records(PUBLISHED)
    seconds = time.process_time() - start
    assert len(df) == pd.read_parquet(PUBLISHED).shape[0] > 0  # every record, none dropped
    assert seconds < 1.0, f"reading and checking the published board took {seconds:.2f} s of CPU"
    start = time.process_time()
    check_records(df, source="published")
    assert time.process_time() - start < 0.5


@pytest.mark.parametrize("case", list(CASES))
def test_the_validator_names_the_file_and_the_problem_in_one_line(case, small, tmp_path):
    path = _bad_file(case, small, tmp_path / case)
    error = BoardFileError if case == "missing_file" else InvalidRecordsError
    with pytest.raises(error) as info:
        read_records(path)
    message = str(info.value)
    assert "\n" not in message and message.startswith(f"leaderboard records file not found: {path}"
                                                      if case == "missing_file" else f"{path}: ")
    assert re.search(CASES[case][1], message), message
    make = CASES[case][0]
    if make is not None and case != "wrong_dtype":  # the same table in memory: refused by its writers too
        with pytest.raises(InvalidRecordsError, match=CASES[case][1]):
            write_records(make(small), tmp_path / "written" / RECORDS_NAME)
        assert not (tmp_path / "written").exists()


def _docs_script(name: str):
    """``docs/<name>.py`` as a module (the docs scripts are not a package)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(f"dpkit_docs_{name}", ROOT / "docs" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


def _commands(case: str, path: Path, tmp_path: Path) -> dict[str, tuple[Callable[[list[str]], int], list[str], Path, str]]:
    """Every command that reads records, on the bad file of ``case``: name -> (its ``main``, its arguments, the file
    its line names, the problem's words). The cheap ones on today's code first."""
    from dpkit.batch.assemble import main as assemble
    from dpkit.batch.cli import main as batch

    readme = tmp_path / "README.md"
    if not readme.exists():
        shutil.copy(ROOT / "README.md", readme)
    run_records = _batch_run(tmp_path / "batch", None if case == "missing_file" else path)
    problem = CASES[case][1]
    # a finished run without records: the assembler names the run and says it has none
    named, words = (run_records.parent, r"has per-repetition records") if case == "missing_file" else (run_records, problem)
    readme_board, build = _docs_script("readme_board").main, _docs_script("build").main
    return {
        "readme_board --check": (readme_board, ["--records", str(path), "--readme", str(readme), "--check"], path,
                                 problem),
        "readme_board": (readme_board, ["--records", str(path), "--readme", str(readme)], path, problem),
        "assemble": (assemble, ["leaderboard", str(tmp_path / "batch")], named, words),
        "board-add": (batch, ["board-add", ENTRANT, "--board", str(path), "--out", str(tmp_path / "added"), "--quick",
                              "--no-gate"], path, problem),
        "docs/build.py": (build, ["--out", str(tmp_path / "site"), "--board", str(path), "--tables",
                                  str(tmp_path / "no-tables"), "--checks", str(tmp_path / "no-checks.md")], path, problem),
    }


def _nothing_written(tmp_path: Path) -> None:
    assert (tmp_path / "README.md").read_bytes() == (ROOT / "README.md").read_bytes()
    for out in ("added", "site", "batch/assembled"):
        assert not (tmp_path / out).exists(), out


@pytest.mark.parametrize("case", list(CASES))
def test_every_command_that_reads_records_refuses_a_bad_file_in_one_line(case, small, tmp_path, capsys, monkeypatch):
    """board-add, the assembler, readme_board.py (writing and with --check) and docs/build.py, each through its
    ``main``: exit 2, one line on stderr naming the file and the problem, nothing written, nothing raised."""
    monkeypatch.delenv("DPKIT_BOARD_RECORDS", raising=False)
    path = _bad_file(case, small, tmp_path / "board")
    for name, (main, argv, named, words) in _commands(case, path, tmp_path).items():
        capsys.readouterr()
        try:
            code = main(argv)
        except BaseException as exc:  # what a user would see as a traceback
            pytest.fail(f"{name} raised {type(exc).__name__}: {exc}")
        err = capsys.readouterr().err
        assert code == 2, f"{name}: exit {code}: {err[-800:]}"
        wrong = _one_line(err, named, words)
        assert wrong is None, f"{name}: {wrong}"
    _nothing_written(tmp_path)


@pytest.mark.parametrize("case", ["over_budget", "reordered_columns", "not_parquet", "missing_file"])
def test_the_commands_as_processes_exit_2_with_one_line_and_no_traceback(case, small, tmp_path):
    """The same commands run as a user runs them (``python -m …``, ``python docs/….py``), on a few of the files."""
    path = _bad_file(case, small, tmp_path / "board")
    scripts = {"readme_board --check": [sys.executable, "docs/readme_board.py"],
               "readme_board": [sys.executable, "docs/readme_board.py"],
               "assemble": [sys.executable, "-m", "dpkit.batch.assemble"],
               "board-add": [sys.executable, "-m", "dpkit.batch"],
               "docs/build.py": [sys.executable, "docs/build.py"]}
    for name, (_main, argv, named, words) in _commands(case, path, tmp_path).items():
        code, err = _run(scripts[name] + argv)
        assert code == 2 and "Traceback" not in err, f"{name}: exit {code}: {err[-800:]}"
        wrong = _one_line(err, named, words)
        assert wrong is None, f"{name}: {wrong}"
    _nothing_written(tmp_path)


def test_the_assembler_refuses_runs_of_two_budgets(small, tmp_path):
    """Two runs, each a valid board, at different budgets: the gathered board has two, exit 2 naming them."""
    a = small[small["method"] < "m"].reset_index(drop=True)
    b = small[small["method"] >= "m"].assign(budget_epsilon=2.0).reset_index(drop=True)
    run_a = _batch_run(tmp_path / "batch", None)
    write_records(a, run_a)
    run_b = run_a.parent.parent / "bbb" / RECORDS_NAME
    shutil.copytree(run_a.parent, run_b.parent)
    write_records(b, run_b, replace=True)
    code, err = _run([sys.executable, "-m", "dpkit.batch.assemble", "leaderboard", str(tmp_path / "batch")])
    assert code == 2, err
    assert re.fullmatch(rf"error: records of {re.escape(str(tmp_path / 'batch'))}: budget_epsilon takes 2 values "
                        r"\[1\.0, 2\.0\]; a board has one budget \(one ε, one δ\)\n", err), err
    assert not (tmp_path / "batch" / "assembled").exists()


@pytest.mark.notebook
@pytest.mark.slow
def test_notebook_45_with_a_bad_board_fails_its_batch_run_naming_it(small, tmp_path):
    """Notebook 45 adding an entrant to a board over the budget: the validator's error stops it, and the batch run
    fails (exit 1) naming the file and the problem."""
    path = _bad_file("over_budget", small, tmp_path / "board")
    code, err = _run([sys.executable, "-m", "dpkit.batch", "notebook", "notebooks/45_leaderboard.ipynb", "--output",
                      str(tmp_path / "nb"), "-p", "QUICK", "true", "-p", "INTERACTIVE", "false", "-p", "ENTRANT",
                      ENTRANT, "-p", "BOARD", str(path), "-p", "GATE", "false"], timeout=300)
    assert code == 1, err
    assert f"InvalidRecordsError: {path}: " in err and re.search(CASES["over_budget"][1], err), err
    assert not (tmp_path / "nb" / "board").exists()


def test_a_quick_board_add_writes_a_valid_board_copy(tmp_path):
    """A QUICK board-add runs the entrant on repetitions 0…3 of one cell of a 6-repetition board: its updated copy
    is a board of those repetitions (every method with the same ones in every cell), which every reader accepts."""
    from dpkit.batch.cli import main

    df = read_board(PUBLISHED)
    keep = (df["dataset"] == "WDBC") & df["sigma"].isin([2.0, 4.0]) & (df["rep"] < 6) & (df["method"] != ENTRANT)
    stored = tmp_path / "stored" / RECORDS_NAME
    write_records(df[keep].reset_index(drop=True), stored)
    assert main(["board-add", ENTRANT, "--board", str(stored), "--out", str(tmp_path / "added"), "--quick",
                 "--no-gate"]) == 0
    copy = read_records(tmp_path / "added" / RECORDS_NAME)
    assert sorted(copy["rep"].unique()) == [0, 1, 2, 3]
    mine = copy[copy["method"] == ENTRANT]
    assert len(mine) == 4 and set(mine["sigma"]) == {2.0}
    assert len(copy) == int((keep & (df["rep"] < 4)).sum()) + 4


def test_the_board_from_an_unchecked_table_is_refused(small):
    """The board's statistics take a records table only if it is valid (here a record over the budget)."""
    from dpkit.board.report import board_from_records

    with pytest.raises(InvalidRecordsError, match=r"^the board's records: record \(WDBC, σ=2, rep 0, trig-I\) spent "
                                                  r"ε = 1\.5, over the board's budget"):
        board_from_records(_over_budget(small))
