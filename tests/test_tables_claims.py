"""The thesis's claim about its whole Tables 3.2/3.3 (dpkit.claims.tables): checked on every cell or not at all.

A batch splits a data set's σ's over runs; the share of a run's cells in which mechanism II beats I is another
statistic than the table's (on the published tables II loses only at CTG σ = 8 and 10, so the run holding just those
two cells failed the claim the table passes). The claim is checked on a table that holds the whole grid: the
assembled one, the published one, or a notebook run that holds every cell.
"""
from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from dpkit.batch.assemble import claims_markdown, tables_claims
from dpkit.batch.results import Unavailable
from dpkit.claims.tables import THESIS_DATASETS, missing_cells, table_checks
from dpkit.experiments.reference import SIGMAS
from dpkit.experiments.tables_records import read_tables

PUBLISHED = Path(__file__).resolve().parents[1] / "data" / "tables"


def _grid(ii_over_i: float, datasets: tuple[str, ...] = THESIS_DATASETS) -> pd.DataFrame:
    """A table of every cell with mechanism II's error ``ii_over_i`` times I's (printed constants beside)."""
    rows = []
    for ds in datasets:
        for s in SIGMAS:
            for constants in ("correct", "thesis"):
                rows.append({"dataset": ds, "sigma": s, "mechanism": "I", "constants": constants, "abs_mean": 0.1})
                rows.append({"dataset": ds, "sigma": s, "mechanism": "II", "constants": constants,
                             "abs_mean": 0.1 * ii_over_i})
    return pd.DataFrame(rows)


def test_the_published_tables_pass_the_claim_over_their_25_cells() -> None:
    df = read_tables(PUBLISHED)
    absent = [d for d in THESIS_DATASETS if d not in set(df["dataset"])]
    result = table_checks(df, unavailable=absent)
    correct = df[df.constants == "correct"].pivot_table(index=["dataset", "sigma"], columns="mechanism",
                                                        values="abs_mean")
    assert len(correct) == 25 and not result.missing and result.note == ""
    (c,) = result.checks
    assert c.id == "thesis-II-beats-I" and c.verdict == c.expected == "PASS"
    assert c.statistic == pytest.approx(float((correct["II"] <= correct["I"]).mean()))


def test_a_run_holding_part_of_the_table_does_not_check_the_whole_table_s_claim() -> None:
    df = read_tables(PUBLISHED)
    part = df[(df.dataset == "CTG") & (df.sigma >= 8)]  # the split run whose own share was 0
    result = table_checks(part, unavailable=["PAM"])
    assert result.checks == [] and len(result.missing) == 23 and ("CTG", 2.0) in result.missing
    assert "holds 2 of them" in result.note and "assemble tables" in result.note
    # the batch's assembly checks the whole table the runs make together, whatever the split
    runs = [df[(df.dataset == d) & df.sigma.isin(ss)] for d in set(df.dataset) for ss in ([4.0, 6.0], [8.0, 10.0], [2.0])]
    rows = pd.concat(runs).to_dict("records")
    pam = [Unavailable(path=Path("20_tables/x"), datasets=["PAM"], reason="offline")]
    (c,) = tables_claims(rows, pam)
    assert c["verdict"] == "PASS" and c["statistic"] == table_checks(df, unavailable=["PAM"]).checks[0].statistic
    assert "| thesis-II-beats-I |" in claims_markdown(pd.DataFrame(rows), pam)
    assert "holds 2 of them" in claims_markdown(part, pam)


def test_a_table_where_mechanism_ii_loses_fails_the_claim() -> None:
    (c,) = table_checks(_grid(1.5)).checks
    assert c.statistic == 0.0 and c.verdict == "FAIL" and c.expected == "PASS"
    (c,) = table_checks(_grid(0.5)).checks
    assert c.statistic == 1.0 and c.verdict == "PASS"


def test_a_missing_sigma_or_mechanism_or_data_set_makes_the_table_partial() -> None:
    full = _grid(0.5)
    assert missing_cells(full) == []
    no_sigma = full[~((full.dataset == "WDBC") & (full.sigma == 10.0))]
    assert missing_cells(no_sigma) == [("WDBC", 10.0)] and table_checks(no_sigma).checks == []
    no_ii = full[~((full.dataset == "CRM") & (full.mechanism == "II") & (full.constants == "correct"))]
    assert [c for c in missing_cells(no_ii) if c[0] == "CRM"] == [("CRM", s) for s in SIGMAS]
    no_pam = full[full.dataset != "PAM"]
    assert table_checks(no_pam).checks == [] and table_checks(no_pam, unavailable=["PAM"]).checks != []


def test_a_table_without_the_needed_columns_is_refused_naming_them() -> None:
    with pytest.raises(ValueError, match=r"missing \['abs_mean'\]"):
        table_checks(_grid(0.5).drop(columns=["abs_mean"]))
    assert table_checks(pd.DataFrame()).checks == []


def test_the_release_time_target_reads_each_cell_s_median_not_one_slow_release() -> None:
    from dpkit.claims.tables import release_time_checks

    df = _grid(0.5)
    df["time_median_s"], df["time_max_s"] = 0.2, 0.3
    loaded = df.copy()
    loaded.loc[(loaded.dataset == "PKS") & (loaded.mechanism == "I"), "time_max_s"] = 1.9  # one release under load
    checks = {c.id: c for c in release_time_checks(loaded, ["I", "II"])}
    assert set(checks) == {"time-under-1s-I", "time-under-1s-II"}
    assert all(c.verdict == "PASS" and c.statistic == 0.2 for c in checks.values())
    slow = df.copy()
    slow.loc[(slow.dataset == "CSN") & (slow.sigma == 2.0) & (slow.mechanism == "II"), "time_median_s"] = 1.5
    (c,) = release_time_checks(slow, ["II"])
    assert c.verdict == "FAIL" and c.statistic == 1.5
    slow_printed = df.copy()  # the printed constants' variant is not the target's
    slow_printed.loc[slow_printed.constants == "thesis", "time_median_s"] = 5.0
    assert all(c.verdict == "PASS" for c in release_time_checks(slow_printed, ["I", "II"]))
    assert release_time_checks(pd.DataFrame(), ["I"]) == []
    with pytest.raises(ValueError, match="time_median_s"):
        release_time_checks(df.drop(columns=["time_median_s"]), ["I"])
