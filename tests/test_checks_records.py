"""Every notebook's checks as published data (dpkit.experiments.checks_records): published from a batch output by
``python -m dpkit.batch.checks OUTPUT --publish``, written to the bit, checked when read, every bad file refused in one
line naming the file, the column, the value and the check."""
from __future__ import annotations

import json

import pandas as pd
import pytest
from checks_batch import fake_batch, fake_run

from dpkit.batch.checks import gather_checks, main, publish_checks
from dpkit.experiments.checks_records import (
    COLUMNS,
    ChecksFileError,
    check_checks,
    checks_frame,
    read_checks,
    write_checks,
)
from dpkit.outputs.report import Report


@pytest.fixture
def published(tmp_path):
    batch = fake_batch(tmp_path)
    dest = tmp_path / "published"
    assert main([str(batch), "--publish", str(dest)]) == 0
    return batch, dest


def test_published_from_a_batch_and_read_back_to_the_bit(published):
    batch, dest = published
    back = read_checks(dest)
    assert list(back.columns) == list(COLUMNS) and dict(back.dtypes.astype(str)) == COLUMNS
    pd.testing.assert_frame_equal(back, checks_frame(gather_checks(batch).to_dict("records")))
    assert len(back) == 6 and back["run_key"].nunique() == 3 and back["consistent"].all()
    assert back.loc[back["id"] == "L1", "confidence"].isna().all()  # an exact check: no confidence level
    prov = json.loads((dest / "provenance.json").read_text())
    assert {r["folder"] for r in prov["runs"]} == set(back["run_key"]) and prov["git"] and prov["machine"]
    assert "date" in prov and "compute_s" in prov and prov["unavailable"] == []


def test_never_overwritten_without_replace(published, capsys):
    batch, dest = published
    before = (dest / "checks.csv").read_bytes()
    assert main([str(batch), "--publish", str(dest)]) == 2
    err = capsys.readouterr().err.strip()
    assert "not overwritten" in err and str(dest / "checks.csv") in err and "\n" not in err
    with pytest.raises(ChecksFileError, match="not overwritten"):
        write_checks(read_checks(dest), dest, json.loads((dest / "provenance.json").read_text()))
    assert (dest / "checks.csv").read_bytes() == before
    assert main([str(batch), "--publish", str(dest), "--replace"]) == 0
    assert f"published {dest / 'checks.csv'}" in capsys.readouterr().out


def test_a_batch_with_a_failed_run_is_not_published_and_the_run_is_named(tmp_path, capsys):
    batch = fake_batch(tmp_path)
    failed = fake_run(batch, "40_baselines", {"SEED": 0}, [], status="failed")
    dest = tmp_path / "published"
    assert main([str(batch), "--publish", str(dest)]) == 1
    err = capsys.readouterr().err
    assert "the checks are not published" in err and str(failed) in err
    assert not dest.exists()
    with pytest.raises(ValueError, match="failed run.*not published.*40_baselines"):
        publish_checks(batch, dest)


def test_a_run_recorded_as_unavailable_is_named_in_the_provenance_not_refused(tmp_path):
    batch = fake_batch(tmp_path)
    fake_run(batch, "20_tables", {"DATASETS": ["PAM"]}, [], status="unavailable", error="PAM is not on this machine")
    dest = tmp_path / "published"
    assert main([str(batch), "--publish", str(dest)]) == 0
    (unavailable,) = json.loads((dest / "provenance.json").read_text())["unavailable"]
    assert "PAM" in unavailable and "not on this machine" in unavailable and len(read_checks(dest)) == 6
    # named within the batch, as its runs are: the publishing machine's folders are not published
    assert unavailable.startswith("20_tables/") and str(tmp_path) not in (dest / "provenance.json").read_text()


def test_unexpected_verdicts_are_published_as_they_are_and_the_command_exits_1(tmp_path, capsys):
    batch = fake_batch(tmp_path, control_fails=False)  # the negative control passes: a result, published as it is
    dest = tmp_path / "published"
    assert main([str(batch), "--publish", str(dest)]) == 1
    assert "UNEXPECTED: 31_linear:L2" in capsys.readouterr().out
    back = read_checks(dest)
    assert list(back.loc[~back["consistent"], "id"]) == ["L2"]


def test_quick_runs_plain_runs_and_runs_without_checks_are_not_published(tmp_path):
    quick = tmp_path / "quick"
    folder = fake_run(quick, "31_linear", {"SEED": 0, "QUICK": True}, [("L1", "claim", 0.0, 1.0)])
    with pytest.raises(ValueError, match=f"QUICK mode.*31_linear/{folder.name}"):
        publish_checks(quick, tmp_path / "p1")
    plain = tmp_path / "plain"
    r = Report(plain / "31_linear")
    r.check("L1", "claim", 0.0, 1.0)
    r.write()
    with pytest.raises(ValueError, match=r"not a batch output's checks.*31_linear"):
        publish_checks(plain, tmp_path / "p2")
    empty = tmp_path / "empty"
    fake_run(empty, "31_linear", {"SEED": 0}, [])
    with pytest.raises(ValueError, match="no checks in its runs"):
        publish_checks(empty, tmp_path / "p3")
    assert not any((tmp_path / p).exists() for p in ("p1", "p2", "p3"))


def _at(df, i, column, value):
    df = df.copy()
    df[column] = df[column].astype(object)
    df.at[i, column] = value
    return df.astype({column: COLUMNS[column]}) if COLUMNS[column] != "object" else df


# one case per class of fault: (change of the table, what the message says, the column it names)
BAD = {
    "a missing column": (lambda d: d.drop(columns=["claim"]), r"missing columns \['claim'\]"),
    "an extra column": (lambda d: d.assign(note="x"), r"extra \['note'\]"),
    "columns out of order": (lambda d: d[["id", *[c for c in COLUMNS if c != "id"]]], "in another order"),
    "no rows": (lambda d: d.iloc[:0], "no checks"),
    "an empty claim": (lambda d: _at(d, 1, "claim", " "), "column 'claim' = ' ' of the check .*non-empty"),
    "an empty id": (lambda d: _at(d, 2, "id", ""), "column 'id' = '' of the check .*non-empty"),
    "a malformed run key": (lambda d: _at(d, 0, "run_key", "XYZ"), "column 'run_key' = 'XYZ' .*12 lower-case hex"),
    "a verdict not PASS/FAIL": (lambda d: _at(d, 3, "verdict", "pass"), "column 'verdict' = 'pass' .*one of"),
    "an expected verdict not PASS/FAIL": (lambda d: _at(d, 3, "expected", "MAYBE"), "column 'expected' = 'MAYBE'"),
    "a duplicated key": (lambda d: pd.concat([d, d.iloc[[4]]], ignore_index=True), "same key"),
    "consistent not verdict == expected": (lambda d: _at(d, 0, "consistent", False),
                                           "column 'consistent' = .*False.* verdict == expected"),
    "a confidence out of (0, 1]": (lambda d: _at(d, 0, "confidence", 95.0), "column 'confidence' = .*95"),
}


@pytest.mark.parametrize("fault", list(BAD))
def test_every_bad_table_is_refused_in_one_line_naming_the_file_and_the_check(published, fault):
    _, dest = published
    change, message = BAD[fault]
    bad = change(read_checks(dest))
    with pytest.raises(ValueError, match=message) as caught:
        check_checks(bad, source="x.csv")
    text = str(caught.value)
    assert text.startswith("x.csv: ") and "\n" not in text
    if fault not in ("a missing column", "an extra column", "columns out of order", "no rows"):
        assert "of the check ('" in text  # the check's key (notebook, run_key, id)
    (dest / "checks.csv").write_text(bad.to_csv(index=False))  # the same fault in the file: refused when read
    with pytest.raises(ValueError, match=message) as caught:
        read_checks(dest)
    assert str(caught.value).startswith(str(dest / "checks.csv")) and "\n" not in str(caught.value)


@pytest.mark.parametrize("column, value", [("statistic", "big"), ("consistent", "yes")])
def test_a_value_of_the_wrong_type_in_the_file_is_refused_naming_it(published, column, value):
    _, dest = published
    df = read_checks(dest).astype({column: object})
    df.at[1, column] = value
    (dest / "checks.csv").write_text(df.to_csv(index=False))
    with pytest.raises(ValueError, match=f"column '{column}' = '{value}' of the check .*20_tables"):
        read_checks(dest)


def test_a_run_not_in_the_provenance_a_missing_provenance_or_file_are_refused(published, tmp_path):
    _, dest = published
    prov = json.loads((dest / "provenance.json").read_text())
    prov["runs"] = prov["runs"][1:]
    (dest / "provenance.json").write_text(json.dumps(prov))
    with pytest.raises(ValueError, match="column 'run_key' = '[0-9a-f]{12}' of the check .*not a run of its "
                                         "provenance.json"):
        read_checks(dest)
    with pytest.raises(ValueError, match="not a run of its provenance.json"):
        write_checks(checks_frame(gather_checks(tmp_path / "batch").to_dict("records")), tmp_path / "w", prov)
    (dest / "provenance.json").write_text("[]")
    with pytest.raises(ValueError, match="not a provenance"):
        read_checks(dest)
    (dest / "provenance.json").unlink()
    with pytest.raises(ChecksFileError, match="no provenance.json beside it"):
        read_checks(dest)
    with pytest.raises(ChecksFileError, match="checks file not found.*make checks-publish"):
        read_checks(tmp_path / "nowhere")
