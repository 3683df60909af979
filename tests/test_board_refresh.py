"""board-refresh (dpkit.board.refresh, ``python -m dpkit.batch board-refresh``): the named methods run again with the
current code on every cell, every other method computed again on a sample of repetitions and required equal to the
bit, so the refreshed board is the one a full regeneration with the current code gives; anything else is refused."""
from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from dpkit.batch import cli
from dpkit.board import records as board_records
from dpkit.board import refresh as rf
from dpkit.board.records import read_records, records_frame, write_provenance, write_records
from dpkit.experiments.protocol import run_cells, run_repetitions
from dpkit.methods.registry import configure, get

SIGMAS, REPS, N_QUERIES, SEED = [2.0], 4, 300, 3
NAMES = ("trig-I", "direct-gaussian", "mwem-gaussian")


def _records(X, methods, *, supremum=None):
    recs = run_cells(X, methods=methods, sigmas=SIGMAS, reps=REPS, n_queries=N_QUERIES, J=10, seed=SEED,
                     dataset="TOY", supremum=supremum)
    return records_frame(recs, dataset="TOY", run_seed=SEED, n_queries=N_QUERIES, J=10, epsilon=1.0, delta=1e-3)


@pytest.fixture(scope="module")
def toy():
    """Data, the board with mwem-gaussian at its old calibration (``accounting="split"``: an older code's records), and
    the board the current registry gives in full (a regeneration)."""
    X = np.random.default_rng(11).uniform(-1.0, 1.0, size=(300, 6))
    current = {n: get(n) for n in NAMES}
    old = {**current, "mwem-gaussian": configure(current["mwem-gaussian"], accounting="split")}
    return X, _records(X, old), _records(X, current)


def _compared(df):
    return df.drop(columns=list(rf.UNCOMPARED)).sort_values(["dataset", "sigma", "rep", "method"],
                                                           ignore_index=True)


def test_a_refresh_gives_the_board_a_full_regeneration_gives_to_the_bit(toy):
    X, stored, regenerated = toy
    assert not _compared(stored).equals(_compared(regenerated))  # the old board is not the current code's
    out = rf.refresh_records(["mwem-gaussian"], stored.sample(frac=1.0, random_state=1), data={"TOY": X})
    pd.testing.assert_frame_equal(_compared(out.records), _compared(regenerated), check_exact=True)
    assert out.methods == ("mwem-gaussian",)
    assert out.verified == {"methods": ["trig-I", "direct-gaussian"], "reps": [0, REPS - 1], "records": 4}
    assert out.changed["mwem-gaussian"]["records"] == REPS  # every record of the re-run method moved
    old, new = (df[df["method"] == "mwem-gaussian"]["abs"].mean() for df in (stored, regenerated))
    assert out.changed["mwem-gaussian"]["abs_ratio_median"] == pytest.approx(new / old)
    json.dumps(out.summary())  # a provenance entry


def test_one_other_record_the_current_code_does_not_reproduce_stops_the_refresh(toy):
    X, stored, _ = toy
    bad = stored.copy()
    i = bad.index[(bad["method"] == "trig-I") & (bad["rep"] == REPS - 1)][0]
    bad.loc[i, "abs"] = np.nextafter(bad.loc[i, "abs"], np.inf)  # one ulp
    with pytest.raises(rf.RefreshRefusedError, match=rf"'trig-I' on TOY σ=2 rep {REPS - 1}: abs .*regenerate the whole"):
        rf.refresh_records(["mwem-gaussian"], bad, data={"TOY": X})
    # a record of a repetition not sampled is not seen by the verification (the sample is the first and the last)
    inner = stored.copy()
    j = inner.index[(inner["method"] == "trig-I") & (inner["rep"] == 1)][0]
    inner.loc[j, "abs"] = np.nextafter(inner.loc[j, "abs"], np.inf)
    rf.refresh_records(["mwem-gaussian"], inner, data={"TOY": X})
    with pytest.raises(rf.RefreshRefusedError, match="'trig-I' on TOY σ=2 rep 1: abs"):  # every repetition checked
        rf.refresh_records(["mwem-gaussian"], inner, data={"TOY": X}, verify_reps=REPS)


def test_a_changed_method_left_unnamed_is_found(toy):
    X, stored, _ = toy
    with pytest.raises(rf.RefreshRefusedError, match="'mwem-gaussian' on TOY σ=2 rep 0: .*name this method too"):
        rf.refresh_records(["trig-I"], stored, data={"TOY": X}, verify_reps=1)


def test_names_and_boards_a_refresh_cannot_take_are_refused_before_any_work(toy):
    X, stored, _ = toy
    for names, msg in (([], "name the methods"), ("mwem-gaussian", "name the methods"), (["nope"], "not on the stored"),
                       (["trig-I", "trig-I"], "each method once")):
        with pytest.raises(rf.RefreshRefusedError, match=msg):
            rf.refresh_plan(stored, names)
    renamed = stored.assign(method=stored["method"].replace({"direct-gaussian": "my-own-method"}))
    with pytest.raises(rf.RefreshRefusedError, match="not registered"):
        rf.refresh_plan(renamed, ["mwem-gaussian"])
    with pytest.raises(ValueError, match="verify_reps"):
        rf.refresh_records(["mwem-gaussian"], stored, data={"TOY": X}, verify_reps=0)


def test_a_board_with_the_class_supremum_is_verified_and_refreshed_with_it():
    X = np.random.default_rng(5).uniform(-1.0, 1.0, size=(200, 6))
    current = {n: get(n) for n in ("trig-I", "direct-gaussian")}
    stored = _records(X, current, supremum="cube")
    assert stored["sup_abs"].notna().any()
    out = rf.refresh_records(["direct-gaussian"], stored, data={"TOY": X}, verify_reps=1)
    pd.testing.assert_frame_equal(_compared(out.records), _compared(stored), check_exact=True)
    plan, _, _ = rf.refresh_plan(stored, ["direct-gaussian"])
    assert plan.supremum == "cube" and rf.refresh_plan(stored.assign(sup_abs=np.nan, sup_upper=np.nan,
                                                                      sup_domain=None), ["trig-I"])[0].supremum is None


def test_run_repetitions_are_those_of_run_cells():
    X = np.random.default_rng(2).uniform(-1.0, 1.0, size=(150, 6))
    methods = {n: get(n) for n in ("trig-I", "direct-gaussian")}
    full = run_cells(X, methods=methods, sigmas=[2.0, 4.0], reps=5, n_queries=200, seed=9, dataset="T", supremum=None)
    some = run_repetitions(X, methods=methods, sigmas=[2.0, 4.0], indices=[4, 1], n_queries=200, seed=9, dataset="T",
                           supremum=None)

    def key(r):
        return (r.rep, r.sigma, r.method)

    want = sorted((r for r in full if r.rep in (1, 4)), key=key)
    got = sorted(some, key=key)
    assert [(key(r), r.abs, r.rel, r.eps_spent) for r in got] == [(key(r), r.abs, r.rel, r.eps_spent) for r in want]
    for bad in ([], [1, 1], [-1], [1.5], "1"):
        with pytest.raises((ValueError, TypeError), match="indices"):
            run_repetitions(X, methods=methods, sigmas=[2.0], indices=bad, seed=9, dataset="T")


def _stored_files(tmp_path, stored):
    board = tmp_path / "board" / "records.parquet"
    write_records(stored, board)
    write_provenance({"runs": [{"folder": "x", "git": {"commit": "abc", "dirty": False}}], "compute_s": 60.0,
                      "date": "2026-01-01T00:00:00+00:00", "git": {"commit": "abc", "dirty": False}},
                     board.parent / "provenance.json")
    return board


def test_the_command_writes_a_refreshed_copy_with_its_provenance_and_publishes_only_when_asked(toy, tmp_path,
                                                                                                monkeypatch, capsys):
    X, stored, regenerated = toy
    board = _stored_files(tmp_path, stored)
    before = board.read_bytes()
    monkeypatch.setattr(rf, "load_board_data", lambda plan, board: {"TOY": X})
    monkeypatch.setenv("DPKIT_FIGURES_DIR", str(tmp_path / "figures"))
    out = tmp_path / "out"
    argv = ["board-refresh", "mwem-gaussian", "--board", str(board), "--out", str(out)]
    assert cli.main(argv) == 0
    text = capsys.readouterr().out
    assert "verified: 2 other method(s) on repetitions [0, 3]" in text and "re-run: mwem-gaussian: 4 record(s)" in text
    pd.testing.assert_frame_equal(_compared(read_records(out / "records.parquet")), _compared(regenerated),
                                  check_exact=True)
    prov = json.loads((out / "provenance.json").read_text())
    assert prov["runs"] == [{"folder": "x", "git": {"commit": "abc", "dirty": False}}] and prov["compute_s"] == 60.0
    (entry,) = prov["refreshes"]
    assert entry["methods"] == ["mwem-gaussian"] and entry["verified"]["reps"] == [0, 3] and entry["git"]["commit"]
    line = board_records.provenance_line(out / "records.parquet")
    assert "Refreshed" in line and "mwem-gaussian rerun; the 2 others reproduced to the bit" in line and "(4 records" in line
    assert "Refreshed" in (out / "assembled" / "leaderboard_runs.md").read_text()
    assert (out / "assembled" / "leaderboard_headline.md").is_file()
    assert board.read_bytes() == before  # the stored board is never written
    # a second refresh does not overwrite without --replace; exits 2 before any work
    assert cli.main(argv) == 2 and "not overwritten" in capsys.readouterr().err
    # its own folder is never the output; a name not on the board stops before any work
    assert cli.main(["board-refresh", "mwem-gaussian", "--board", str(board), "--out", str(board.parent)]) == 2
    assert cli.main(["board-refresh", "nope", "--board", str(board), "--out", str(tmp_path / "o2")]) == 2
    assert "not on the stored board" in capsys.readouterr().err
    # --publish DIR with --replace: the refreshed copy published, its provenance with it
    pub = tmp_path / "pub"
    assert cli.main(argv + ["--replace", "--publish", str(pub)]) == 0
    assert (pub / "records.parquet").read_bytes() == (out / "records.parquet").read_bytes()
    assert json.loads((pub / "provenance.json").read_text())["refreshes"][0]["methods"] == ["mwem-gaussian"]


def test_a_refused_refresh_writes_nothing_and_exits_1(toy, tmp_path, monkeypatch, capsys):
    X, stored, _ = toy
    board = _stored_files(tmp_path, stored)
    monkeypatch.setattr(rf, "load_board_data", lambda plan, board: {"TOY": X})
    out = tmp_path / "out"
    assert cli.main(["board-refresh", "trig-I", "--board", str(board), "--out", str(out), "--verify-reps", "1"]) == 1
    assert "refused" in capsys.readouterr().err and not (out / "records.parquet").exists()
