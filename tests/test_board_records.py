"""The board as data (dpkit.board.records): the per-repetition records table, its schema, its Parquet
round trip, the refusal to overwrite, the reader's error, and the assembler gathering the runs' records with their
provenance and publishing them."""
from __future__ import annotations

import json
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from dpkit.board import records as board_records
from dpkit.board.records import (
    COLUMNS,
    KEY,
    OPTIONAL_COLUMNS,
    BoardFileError,
    read_board,
    read_records,
    records_frame,
    write_records,
)
from dpkit.experiments.records import ReleaseRecord

PROTOCOL = dict(run_seed=0, n_queries=10_000, J=10, epsilon=1.0, delta=1e-3)


def _record(rep=0, method="m", sigma=2.0, abs_=0.1, sup=None, *, support_size=3, error_bound=0.0, **extra):
    base = dict(rep=rep, method=method, privacy="ε-DP", sigma=sigma, abs=abs_, rel=0.5, time_s=0.2, timings={},
                support_size=support_size, eps_spent=1.0, delta_spent=0.0, error_bound=error_bound, params={},
                ledger={}, sup_abs=sup)
    return SimpleNamespace(**base, **extra) if extra else ReleaseRecord(**base)


def test_schema_of_the_records_table():
    recs = [_record(0, "a", sup=0.3), _record(0, "b"), _record(1, "a", sup=0.4), _record(1, "b")]
    df = records_frame(recs, dataset="WDBC", **PROTOCOL)
    assert list(df.columns) == [*COLUMNS, *OPTIONAL_COLUMNS]
    assert {c: str(t) for c, t in df.dtypes.items()} == {**COLUMNS, **OPTIONAL_COLUMNS}
    assert len(df) == 4 and not df.duplicated(list(KEY)).any()
    assert df["sup_abs"].isna().tolist() == [False, True, False, True]  # no class supremum: null
    assert df["centre_abs"].isna().all() and df["seeds"].isna().all()  # records without these fields
    assert (df["dataset"] == "WDBC").all() and (df["n_queries"] == 10_000).all() and (df["budget_delta"] == 1e-3).all()


def test_centre_abs_and_seeds_are_taken_where_a_record_has_them():
    seeds = {"workload": [1, 2, 3], "method": np.array([4, 5], dtype=np.uint32)}
    df = records_frame([_record(centre_abs=0.07, seeds=seeds)], dataset="CTG", **PROTOCOL)
    assert df["centre_abs"].tolist() == [0.07]
    assert json.loads(df["seeds"].iloc[0]) == {"workload": [1, 2, 3], "method": [4, 5]}


def test_each_row_carries_its_records_numerical_bound_and_support_size():
    """``error_bound`` and ``support_size`` are the record's own (the board's method rows take their maximum and
    median), not a constant of the table."""
    recs = [_record(0, "a", error_bound=3e-7, support_size=1200), _record(0, "b", error_bound=0.0, support_size=0)]
    df = records_frame(recs, dataset="WDBC", **PROTOCOL)
    assert df["error_bound"].tolist() == [3e-7, 0.0] and df["support_size"].tolist() == [1200, 0]


def _interval_records(up_a0=0.5, up_a1=0.6, sup_b=None, up_b=None):
    search = {"applicable": True, "n_evaluations": 900, "n_starts": 400}
    return [_record(0, "a", sup=0.3, sup_upper=up_a0, supremum=search),
            _record(1, "a", sup=0.4, sup_upper=up_a1, supremum=search),
            _record(0, "b", sup=sup_b, sup_upper=up_b), _record(1, "b", sup=sup_b, sup_upper=up_b)]


def test_the_certified_interval_and_the_search_effort_are_optional_columns(tmp_path):
    """A table written now carries sup_upper and the search's effort after the board's columns (NaN where a record
    has none); the published records, without them, stay valid; a table with some of them, an upper bound without a
    witness, below its witness or in only some repetitions of a method is refused, naming it."""
    df = records_frame(_interval_records(), dataset="WDBC", **PROTOCOL)
    assert df["sup_upper"].tolist()[:2] == [0.5, 0.6] and df["sup_upper"].isna().tolist()[2:] == [True, True]
    assert df["sup_evaluations"].tolist()[:2] == [900.0, 900.0] and df["sup_starts"].tolist()[:2] == [400.0, 400.0]
    assert df["sup_evaluations"].isna().tolist()[2:] == [True, True]
    back = read_records(write_records(df, tmp_path / "r.parquet"))
    pd.testing.assert_frame_equal(back, df)
    old = df[list(COLUMNS)]
    pd.testing.assert_frame_equal(read_records(write_records(old, tmp_path / "old.parquet")), old)
    with pytest.raises(ValueError, match=r"all of \['sup_upper', 'sup_evaluations', 'sup_starts', 'sup_domain'\].*or none"):
        board_records.check_records(df.drop(columns=["sup_starts"]), source="t")
    with pytest.raises(ValueError, match=r"sup_upper = 0.29 < sup_abs = 0.3 in record \(WDBC, σ=2, rep 0, a\)"):
        records_frame(_interval_records(up_a0=0.29), dataset="WDBC", **PROTOCOL)
    records_frame(_interval_records(up_a0=0.3 - 1e-10), dataset="WDBC", **PROTOCOL)  # within the tolerance
    with pytest.raises(ValueError, match=r"record \(WDBC, σ=2, rep 0, b\) and 1 other.* has a sup_upper but no sup_abs"):
        records_frame(_interval_records(up_b=0.2), dataset="WDBC", **PROTOCOL)
    with pytest.raises(ValueError, match=r"method 'a' has a sup_upper in 1 of its 2 repetitions"):
        records_frame(_interval_records(up_a1=None), dataset="WDBC", **PROTOCOL)
    with pytest.raises(ValueError, match=r"sup_upper = -1.0 .*a finite non-negative bound or missing"):
        records_frame(_interval_records(up_a0=-1.0), dataset="WDBC", **PROTOCOL)


def test_a_duplicated_key_is_refused():
    with pytest.raises(ValueError, match=r"2 rows share a key \('dataset', 'sigma', 'rep', 'method'\)"):
        records_frame([_record(0, "a"), _record(0, "a")], dataset="WDBC", **PROTOCOL)


def _synthetic_board(datasets=("CRM", "CSN", "CTG", "PKS", "WDBC"), sigmas=(2.0, 4.0, 6.0, 8.0, 10.0), reps=30,
                     methods=35, seed=0):
    rng = np.random.default_rng(seed)
    frames = []
    for ds in datasets:
        recs = [_record(r, f"method-{m}", s, float(rng.random()), None if m % 3 else float(rng.random()),
                        centre_abs=float(rng.random()),
                        seeds={"workload": rng.integers(0, 2**32, 4).tolist(), "method": rng.integers(0, 2**32, 4).tolist()})
                for s in sigmas for r in range(reps) for m in range(methods)]
        frames.append(records_frame(recs, dataset=ds, **PROTOCOL))
    return pd.concat(frames, ignore_index=True)


def test_a_full_board_is_a_few_mb_and_round_trips(tmp_path):
    df = _synthetic_board()
    assert len(df) == 5 * 5 * 30 * 35
    path = write_records(df, tmp_path / "records.parquet")
    assert path.stat().st_size < 4e6  # random seeds do not compress: the real board is no larger
    back = read_records(path)
    pd.testing.assert_frame_equal(back, df)
    assert back["sup_abs"].isna().sum() == df["sup_abs"].isna().sum() > 0


def test_an_existing_file_is_not_overwritten_unless_replace(tmp_path):
    path = tmp_path / "records.parquet"
    first = _synthetic_board(("WDBC",), (2.0,), 2, 3)
    write_records(first, path)
    before = path.read_bytes()
    with pytest.raises(BoardFileError, match="records.parquet exists: not overwritten"):
        write_records(_synthetic_board(("WDBC",), (2.0,), 2, 3, seed=1), path)
    assert path.read_bytes() == before
    write_records(_synthetic_board(("WDBC",), (2.0,), 2, 3, seed=1), path, replace=True)
    assert path.read_bytes() != before


def test_read_board_names_the_missing_file(tmp_path, monkeypatch):
    monkeypatch.setattr(board_records, "PUBLISHED", tmp_path / "data" / "leaderboard" / "records.parquet")
    with pytest.raises(BoardFileError, match=r"not found: .*data/leaderboard/records.parquet \(publish a board"):
        read_board()
    with pytest.raises(FileNotFoundError, match="not found: .*elsewhere.parquet"):
        read_board(tmp_path / "elsewhere.parquet")
    write_records(_synthetic_board(("WDBC",), (2.0,), 2, 3), board_records.PUBLISHED)
    assert len(read_board()) == 6


def test_the_published_board_defaults_to_data_leaderboard_of_the_clone():
    assert board_records.PUBLISHED.parts[-3:] == ("data", "leaderboard", "records.parquet")


def test_a_file_that_is_not_a_records_table_is_named(tmp_path):
    pd.DataFrame({"dataset": ["WDBC"]}).to_parquet(tmp_path / "x.parquet")
    with pytest.raises(ValueError, match=r"x.parquet: not a leaderboard records table \(missing columns \['sigma'"):
        read_records(tmp_path / "x.parquet")


# --------------------------------------------------------------------------------------------- the assembler
def _runs(root, *, with_records=("aaa", "bbb"), duplicate=False):
    """Two finished 45_leaderboard runs (σ = 2 and σ = 4), each with its metrics and its records (4 repetitions: the
    board judges on the odd ones and an interval needs 2)."""
    from test_leaderboard import _row

    for key, sigma in (("aaa", 2.0), ("bbb", 4.0)):
        d = root / "45_leaderboard" / key
        d.mkdir(parents=True)
        (d / "run.json").write_text(json.dumps({"status": "ok", "key": None, "notebook_sha256": f"nb-{key}",
                                                "parameters": {"SIGMAS": [sigma], "OUTPUT_DIR": str(d)},
                                                "wall_time_s": 12.0, **({"checkpoint": {
                                                    "repetitions": 4, "resumed_repetitions": 2, "compute_s": 100.5,
                                                    "repetition_s": [25.0, 25.5, 25.0, 25.0]}}
                                                    if key == "aaa" else {})}))
        rows = [_row("m1", "ε-DP", 0.03, sigma=sigma), _row("m2", "(ε,δ)-DP", 0.02, sigma=sigma)]
        (d / "metrics.json").write_text(json.dumps({"checks": [], "table": [], "method_rows": rows,
                                                    "provenance": {"git": {"commit": "abc", "dirty": False}}}))
        if key in with_records:
            recs = [_record(r, m, 2.0 if duplicate else sigma, abs_=0.1 + 0.01 * r) for r in range(4) for m in ("m1", "m2")]
            write_records(records_frame(recs, dataset="WDBC", **PROTOCOL), d / "records.parquet")


def test_assembler_gathers_the_runs_records_with_their_provenance(tmp_path, capsys):
    from dpkit.batch.assemble import main

    _runs(tmp_path / "batch")
    assert main(["leaderboard", str(tmp_path / "batch")]) == 0
    out = tmp_path / "batch" / "assembled"
    df = read_records(out / "records.parquet")
    assert len(df) == 2 * 4 * 2 and sorted(df["sigma"].unique()) == [2.0, 4.0]
    assert df[list(KEY)].equals(df[list(KEY)].sort_values(list(KEY), ignore_index=True))
    prov = json.loads((out / "provenance.json").read_text())
    assert {"dpkit_version", "git", "library_fingerprint", "machine", "date", "runs"} <= set(prov)
    assert prov["machine"]["cpu_count"] >= 1 and prov["machine"]["platform"]
    assert [(r["folder"], r["notebook_sha256"], r["git"]["commit"]) for r in prov["runs"]] == [
        ("aaa", "nb-aaa", "abc"), ("bbb", "nb-bbb", "abc")]
    assert "OUTPUT_DIR" not in prov["runs"][0]["parameters"]
    # what the board cost: the repetitions' compute over every attempt for a checkpointed run, else its wall time
    assert prov["runs"][0]["checkpoint"] == {"repetitions": 4, "resumed_repetitions": 2, "compute_s": 100.5,
                                             "repetition_s": [25.0, 25.5, 25.0, 25.0]}
    assert prov["compute_s"] == 100.5 + 12.0
    # the projection: five tasks (four repetitions and a run without a checkpoint), 112.5 s in all, the longest 25.5 s
    p2, p8, p64 = prov["projection"]
    assert (p2["workers"], p2["lower_bound_s"], p2["list_schedule_s"]) == (2, 56.25, 62.0)  # 25+25+12 | 25.5+25
    assert p8["lower_bound_s"] == p64["lower_bound_s"] == p64["list_schedule_s"] == 25.5
    assert "Projected wall time from 5 measured tasks" in (out / "leaderboard_runs.md").read_text()
    assert "16 per-repetition records" in capsys.readouterr().out


def test_assembler_names_a_finished_run_without_records_and_writes_none(tmp_path, capsys):
    """A finished run without records beside runs with them: the board of the others is assembled, the run is named
    (its cells are not on the board), exit 1, and no records table is written."""
    from dpkit.batch.assemble import main

    _runs(tmp_path / "batch", with_records=("aaa",))
    assert main(["leaderboard", str(tmp_path / "batch")]) == 1
    err = capsys.readouterr().err
    assert str(tmp_path / "batch" / "45_leaderboard" / "bbb") in err and "wrote no records.parquet" in err
    assert "its cells are not on the board" in err
    board = pd.read_csv(tmp_path / "batch" / "assembled" / "leaderboard.csv")
    assert set(board["sigma"]) == {2.0}  # the cells of the run with records only
    assert not (tmp_path / "batch" / "assembled" / "records.parquet").exists()


def test_assembler_refuses_a_record_of_two_runs(tmp_path, capsys):
    from dpkit.batch.assemble import main

    _runs(tmp_path / "batch", duplicate=True)
    assert main(["leaderboard", str(tmp_path / "batch")]) == 2
    err = capsys.readouterr().err
    assert "in two runs" in err and str(tmp_path / "batch" / "45_leaderboard" / "aaa") in err


def test_publish_refuses_to_overwrite_a_published_board_unless_replace(tmp_path, capsys):
    from dpkit.batch.assemble import main

    _runs(tmp_path / "batch")
    pub = tmp_path / "published"
    assert main(["leaderboard", str(tmp_path / "batch"), "--publish", str(pub)]) == 0
    assert len(read_records(pub / "records.parquet")) == 16 and (pub / "provenance.json").is_file()
    before = (pub / "records.parquet").read_bytes()
    capsys.readouterr()
    assert main(["leaderboard", str(tmp_path / "batch"), "--out", str(tmp_path / "again"), "--publish", str(pub)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: a published board is there: ") and str(pub / "records.parquet") in err
    assert not (tmp_path / "again").exists()  # refused before anything was assembled
    assert (pub / "records.parquet").read_bytes() == before
    assert main(["leaderboard", str(tmp_path / "batch"), "--publish", str(pub), "--replace"]) == 0
    assert len(read_records(pub / "records.parquet")) == 16


def test_publish_defaults_to_data_leaderboard(tmp_path, monkeypatch):
    from dpkit.batch.assemble import main

    monkeypatch.setattr(board_records, "PUBLISHED", tmp_path / "data" / "leaderboard" / "records.parquet")
    _runs(tmp_path / "batch")
    assert main(["leaderboard", str(tmp_path / "batch"), "--publish"]) == 0
    assert len(read_board()) == 16
    assert (tmp_path / "data" / "leaderboard" / "provenance.json").is_file()


def test_runs_without_any_records_are_named_and_nothing_is_assembled_or_published(tmp_path, capsys):
    """Runs of a notebook 45 that wrote no records: the board's intervals cannot be computed, so nothing is
    assembled (exit 2, one line naming the runs) and nothing published."""
    from dpkit.batch.assemble import main

    _runs(tmp_path / "batch", with_records=())
    assert main(["leaderboard", str(tmp_path / "batch")]) == 2
    err = capsys.readouterr().err
    assert "has per-repetition records" in err and len(err.strip().splitlines()) == 1
    assert all(str(tmp_path / "batch" / "45_leaderboard" / k) in err for k in ("aaa", "bbb"))
    assert not (tmp_path / "batch" / "assembled").exists()
    assert main(["leaderboard", str(tmp_path / "batch"), "--publish", str(tmp_path / "pub")]) == 2
    assert not (tmp_path / "pub").exists()


def test_make_board_publish_publishes_the_assembled_board_then_rewrites_the_readme_block():
    """``make board-publish``'s recipe (dry run: it would write data/leaderboard/ and README.md of this clone):
    the assembler with ``--publish`` (``--replace`` only with REPLACE=1), then ``docs/readme_board.py``."""
    import shutil
    import subprocess
    import sys
    from pathlib import Path

    if shutil.which("make") is None:
        pytest.skip("GNU make is not installed")
    root = Path(__file__).resolve().parents[1]

    def recipe(*args: str) -> list[str]:
        out = subprocess.run(["make", "-n", "-C", str(root), "-o", ".venv/.dpkit-installed",
                              f"BIN={Path(sys.executable).parent}", "board-publish", *args],
                             capture_output=True, text=True, timeout=60, check=True).stdout
        return [line for line in out.splitlines() if line.strip() and not line.startswith("make")]

    plain, replace = recipe(), recipe("REPLACE=1")
    assert len(plain) == 2 and "-m dpkit.batch.assemble leaderboard results/batch/leaderboard --publish" in plain[0]
    assert "--replace" not in plain[0] and plain[1].endswith("docs/readme_board.py")
    assert replace[0].rstrip().endswith("--publish --replace") and replace[1] == plain[1]


def test_the_domain_of_the_class_supremum_is_recorded_per_record():
    """Each record with a class supremum names the domain its search covered (``sup_domain``, from the search); a
    domain without a witness, an unknown one, or two domains in the repetitions of one method and cell (a missing
    one is the cube: the records written before the column) are refused, naming them; a board's domain is "space"
    when any of its searches covered R^d."""
    def recs(dom_a, dom_b, dom_a1=None):
        return [_record(r, m, sup=0.3, sup_upper=0.5, supremum={"applicable": True, "n_evaluations": 9, "n_starts": 4,
                                                                "domain": dom_a1 if (r, m) == (1, "a") and dom_a1 else d})
                for r in (0, 1) for m, d in (("a", dom_a), ("b", dom_b))]

    df = records_frame(recs("space", "cube"), dataset="WDBC", **PROTOCOL)  # a database and an answer function
    assert df["sup_domain"].tolist() == ["space", "cube"] * 2 and board_records.board_supremum(df) == "space"
    with pytest.raises(ValueError, match=r"method 'a' has its class supremum searched in several domains"):
        records_frame(recs("space", "cube", dom_a1="cube"), dataset="WDBC", **PROTOCOL)
    mixed = df.copy()
    mixed.loc[0, "sup_domain"] = None  # a missing domain is the cube's
    with pytest.raises(ValueError, match=r"method 'a' has its class supremum searched in several domains"):
        board_records.check_records(mixed, source="t")
    odd = df.copy()
    odd.loc[0, "sup_domain"] = "ball"
    with pytest.raises(ValueError, match=r"sup_domain = 'ball' in record \(WDBC, σ=2, rep 0, a\).*\['cube', 'space'\]"):
        board_records.check_records(odd, source="t")
    alone = df.copy()
    alone.loc[alone["method"] == "a", ["sup_abs", "sup_upper"]] = float("nan")
    with pytest.raises(ValueError, match=r"record \(WDBC, σ=2, rep 0, a\) and 1 other.* has a sup_domain but no sup_abs"):
        board_records.check_records(alone, source="t")
    old = df[list(COLUMNS)]  # the published board's columns: searched in the cube
    assert board_records.board_supremum(old) == "cube"
    cube = df.assign(sup_domain=None)
    assert board_records.board_supremum(board_records.check_records(cube, source="t")) == "cube"
