"""``python tools/sup_tightness.py board``: the intervals' tightness and what they certify, from a records file."""
from __future__ import annotations

import json

from dpkit.experiments.board_records import records_frame, write_records
from dpkit.experiments.records import RunRecord
from tools import sup_tightness as st

PROTOCOL = dict(run_seed=0, n_queries=100, J=10, epsilon=1.0, delta=1e-3)


def _record(rep, method, low, up, privacy="ε-DP"):
    search = {"applicable": True, "n_evaluations": 800, "n_starts": 400}
    return RunRecord(rep=rep, method=method, privacy=privacy, sigma=4.0, abs=0.01, rel=0.1, time_s=0.1, timings={},
                     support_size=5, eps_spent=1.0, delta_spent=0.0, error_bound=0.0, params={}, ledger={},
                     sup_abs=low, supremum=search, sup_upper=up)


def test_board_reports_the_ratios_and_the_certified_cells(tmp_path, capsys):
    recs = [_record(r, "a", 0.10, 0.12) for r in range(2)] + [_record(r, "b", 0.20, 0.60) for r in range(2)]
    path = write_records(records_frame(recs, dataset="WDBC", **PROTOCOL), tmp_path / "records.parquet")
    out = tmp_path / "t.json"
    assert st.main(["board", str(path), "--json", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "certified in 1/1 (ε-DP) and 1/1 ((ε,δ)-DP) cells" in printed
    assert "sup_upper / sup_abs over 4 records: median 2.100" in printed and "above 3: 0" in printed
    data = json.loads(out.read_text())
    assert data["ratios"]["n"] == 4 and [c["certified_best"] for c in data["cells"]] == ["a", "a"]


def test_board_names_an_invalid_file_in_one_line(tmp_path, capsys):
    bad = tmp_path / "records.parquet"
    bad.write_text("not parquet")
    assert st.main(["board", str(bad)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("sup_tightness: ") and str(bad) in err and "\n" not in err
