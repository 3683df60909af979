"""The board-add benchmark on a small stored board (QUICK): it runs the entrant cold and warm, and the two runs give
the same entrant records (the disk cache holds exact answers and never changes a number); its null control (the
entrant against the registered method it copies) ties, and fails when the two differ."""
from __future__ import annotations

import json
import warnings

import pandas as pd
import pytest

from benchmarks.board_add import TWIN, _entrant_frame, main, null_control
from dpkit.board.records import records_frame, write_records
from dpkit.board.report import board_methods
from dpkit.data import load
from dpkit.experiments import run_cells

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def stored_board(tmp_path_factory):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        X = load("WDBC").X
    methods = board_methods(["trig-I", "marginals-histogram", TWIN], epsilon=1.0, delta=1e-3)
    recs = run_cells(X, methods=methods, sigmas=[2.0], reps=4, n_queries=300, J=10, seed=0, dataset="WDBC")
    path = tmp_path_factory.mktemp("board") / "records.parquet"
    write_records(records_frame(recs, dataset="WDBC", run_seed=0, n_queries=300, J=10, epsilon=1.0, delta=1e-3),
                  path, replace=True)
    return path


def test_cold_and_warm_board_add_give_the_same_entrant_records(stored_board, tmp_path):
    out = tmp_path / "bench.json"
    assert main(["--board", str(stored_board), "--quick", "--workers", "1", "--scratch", str(tmp_path / "s"),
                 "--json", str(out)]) == 0
    res = json.loads(out.read_text())
    assert res["cold_status"] == res["warm_status"] == "ranked" and res["same_records"] is True
    assert res["cold_s"] > 0 and res["warm_s"] > 0 and res["cold_cells"] == res["warm_cells"] >= 1
    cold = _entrant_frame(tmp_path / "s" / "cold")
    assert len(cold) == 4 and set(cold["method"]) == {"benchmarks.board_add:ENTRANT"}
    assert "time_s" not in cold  # measured times are not compared
    nc = res["null_control"]
    assert nc["twin"] == TWIN and nc["passed"] is True
    assert nc["abs"] == {"cells": 1, "not_tie": 0, "min_p": nc["abs"]["min_p"]} and nc["sup_abs"]["not_tie"] == 0


def test_the_null_control_fails_when_the_twin_differs(stored_board, tmp_path):
    """Not vacuous: the twin's errors doubled on the updated board make the control fail (and the command exit 1)."""
    main(["--board", str(stored_board), "--quick", "--workers", "1", "--scratch", str(tmp_path / "s")])
    folder = tmp_path / "s" / "warm"
    board = pd.read_parquet(folder / "records.parquet")
    twin = board["method"] == TWIN
    # the class supremum's interval doubled with it: a record whose upper bound fell below its witness is refused
    board.loc[twin, [c for c in ("abs", "sup_abs", "sup_upper") if c in board]] *= 2.0
    board.to_parquet(folder / "records.parquet")
    nc = null_control(folder, "benchmarks.board_add:ENTRANT")
    assert nc is not None and not nc["passed"] and nc["abs"]["not_tie"] == 1 and nc["sup_abs"]["not_tie"] == 1


def test_the_comparison_sees_a_changed_record(stored_board, tmp_path):
    """The benchmark's equality is not vacuous: one changed error makes two entrant frames differ."""
    main(["--board", str(stored_board), "--quick", "--workers", "1", "--scratch", str(tmp_path / "s")])
    frame = _entrant_frame(tmp_path / "s" / "cold")
    changed = frame.copy()
    changed.loc[0, "abs"] = pd.Series(changed["abs"]).iloc[0] * (1 + 1e-15) + 1e-300
    assert frame.equals(_entrant_frame(tmp_path / "s" / "warm")) and not frame.equals(changed)
