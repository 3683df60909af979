"""Tables 3.2/3.3 as published data (dpkit.experiments.tables_records): written to the bit, checked when read, and
published by the assembler with its provenance."""
from __future__ import annotations

import json
import math
import re

import pandas as pd
import pytest

from dpkit.experiments.reference import SIGMAS, paper_value
from dpkit.experiments.tables_records import (
    COLUMNS,
    KEY,
    OPTIONAL_COLUMNS,
    TablesFileError,
    check_tables,
    read_tables,
    tables_frame,
    write_tables,
)

PROV = {"date": "2026-12-06T06:00:00+00:00", "dpkit_version": "0.1.0", "git": {"commit": "0123456789abcdef"},
        "machine": {"cpu_count": 2, "platform": "Linux"}, "runs": [{"folder": "a"}], "compute_s": 3600.0}


def _rows(dataset="WDBC"):
    rows = []
    for mech in ("I", "II"):
        for constants in ("correct", "thesis"):
            for i, s in enumerate(SIGMAS):
                rows.append({"dataset": dataset, "sigma": s, "mechanism": mech, "constants": constants,
                             "method": f"trig-{mech}", "reps": 30, "abs_mean": 0.05 / (i + 1) + 1e-17 * i,
                             "abs_std": 0.004, "abs_min": 0.04 / (i + 1), "abs_max": 0.07 / (i + 1),
                             "rel_mean": 0.3, "rel_std": 0.05, "time_max_s": 2.5, "time_median_s": 2.0,
                             "support_size_median": 40.0, "eps_spent": 1.0,
                             "delta_spent": 0.0 if mech == "I" else 1e-3, "error_bound": 1e-9,
                             "sup_abs_mean": None if mech == "II" else 0.1, "sup_abs_std": 0.01, "sup_abs_max": 0.2,
                             "paper_abs": paper_value(dataset, s, mech, "abs"),
                             "paper_rel": paper_value(dataset, s, mech, "rel"),
                             "paper_time_s": {"I": 0.696, "II": 0.583}[mech],
                             "stages_of_slowest": {"lp": 1.0}, "ratio_abs": 1.0})
    return rows


@pytest.fixture
def published(tmp_path):
    from dpkit.experiments.reference import PAPER_WORST_TIME

    rows = _rows()
    for r in rows:
        r["paper_time_s"] = PAPER_WORST_TIME[r["mechanism"]].get("WDBC", math.nan)
    df = tables_frame(rows)
    write_tables(df, tmp_path, PROV)
    return df, tmp_path


def test_written_and_read_to_the_bit(published):
    df, folder = published
    back = read_tables(folder)
    pd.testing.assert_frame_equal(back, df)
    assert list(back.columns) == [*COLUMNS, *OPTIONAL_COLUMNS]
    assert back["sup_abs_mean"].isna().sum() == 10  # mechanism II here: no supremum


def test_the_mean_upper_bound_is_an_optional_column_never_below_the_mean_witness(published, tmp_path):
    """The published tables, without sup_upper_mean, stay readable; where it is there it is ≥ sup_abs_mean."""
    df, folder = published
    old = df[list(COLUMNS)]
    write_tables(old, tmp_path / "old", PROV)
    pd.testing.assert_frame_equal(read_tables(tmp_path / "old"), old)
    bad = df.copy()
    have = bad["sup_abs_mean"].notna()
    bad.loc[have, "sup_upper_mean"] = bad.loc[have, "sup_abs_mean"] / 2
    with pytest.raises(ValueError, match="sup_upper_mean must be finite and at least sup_abs_mean"):
        check_tables(bad, source="t")


def test_never_overwritten_without_replace(published):
    df, folder = published
    with pytest.raises(TablesFileError, match="not overwritten"):
        write_tables(df, folder, PROV)
    write_tables(df, folder, PROV, replace=True)


@pytest.mark.parametrize("change, message", [
    (lambda d: d.assign(sigma=d["sigma"].where(d.index != 3, 3.0)), "σ must be one of"),
    (lambda d: d.assign(abs_mean=d["abs_mean"].where(d.index != 2, -1.0)), "finite and non-negative"),
    (lambda d: d.assign(abs_min=d["abs_min"].where(d.index != 2, 9.0)), "abs_min <= abs_mean <= abs_max"),
    (lambda d: d.assign(eps_spent=d["eps_spent"].where(d.index != 1, 1.5)), "more ε spent"),
    (lambda d: d.assign(delta_spent=1e-3), "more δ spent"),
    (lambda d: d.assign(paper_abs=d["paper_abs"] * 2), "paper_abs must be the thesis's printed number"),
    (lambda d: pd.concat([d, d.iloc[:1]], ignore_index=True), "share a key"),
    (lambda d: d.drop(columns=["reps"]), "missing columns"),
])
def test_a_bad_file_is_refused_naming_it(published, change, message):
    df, folder = published
    bad = change(df.copy())
    with pytest.raises(ValueError, match=message):
        check_tables(bad, source="x.csv")
    (folder / "tables.csv").write_text(bad.to_csv(index=False))
    with pytest.raises(ValueError, match=message):
        read_tables(folder)


def test_a_missing_file_or_provenance_says_how_to_make_it(published, tmp_path):
    with pytest.raises(TablesFileError, match="make tables"):
        read_tables(tmp_path / "nowhere")
    _, folder = published
    (folder / "provenance.json").unlink()
    with pytest.raises(TablesFileError, match="provenance"):
        read_tables(folder)


def test_the_assembler_publishes_the_runs_rows_with_provenance(tmp_path):
    from dpkit.batch.assemble import main
    from dpkit.experiments.reference import PAPER_WORST_TIME

    rows = _rows()
    for r in rows:
        r["paper_time_s"] = PAPER_WORST_TIME[r["mechanism"]].get("WDBC", math.nan)
        r.pop("stages_of_slowest")
    run = tmp_path / "batch" / "20_tables" / "aaa"
    run.mkdir(parents=True)
    (run / "run.json").write_text(json.dumps({"status": "ok", "parameters": {"DATASETS": ["WDBC"]}}))
    (run / "metrics.json").write_text(json.dumps({"checks": [], "table": rows}))
    dest = tmp_path / "published"
    assert main(["tables", str(tmp_path / "batch"), "--publish", str(dest)]) == 0
    back = read_tables(dest)
    assert len(back) == 20 and json.loads((dest / "provenance.json").read_text())["runs"]
    assert main(["tables", str(tmp_path / "batch"), "--publish", str(dest)]) == 2  # not replaced unasked
    assert main(["tables", str(tmp_path / "batch"), "--publish", str(dest), "--replace"]) == 0


def test_a_value_that_is_not_a_number_or_a_provenance_without_runs_is_refused_naming_the_file(published):
    """The tables file is read as the checks are (dpkit.core.published): a bad value names the file, the column, the
    value and the row, in one line; the provenance must name its runs."""
    df, folder = published
    bad = df.astype({"abs_mean": object})
    bad.at[2, "abs_mean"] = "big"
    (folder / "tables.csv").write_text(bad.to_csv(index=False))
    key = re.escape(repr(tuple(float(v) if isinstance(v, float) else v for v in df.loc[2, list(KEY)])))
    with pytest.raises(ValueError, match=rf"^{folder / 'tables.csv'}: column 'abs_mean' = 'big' of the row {key}: "
                                         "must be a number$"):
        read_tables(folder)
    write_tables(df, folder, PROV, replace=True)
    (folder / "provenance.json").write_text(json.dumps({"date": "2026-12-06"}))
    with pytest.raises(ValueError, match="not a provenance"):
        read_tables(folder)
