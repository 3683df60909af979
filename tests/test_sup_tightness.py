"""``python tools/sup_tightness.py board``: the intervals' tightness and what they certify, from a records file."""
from __future__ import annotations

import json

from dpkit.board.records import records_frame, write_records
from dpkit.experiments.records import ReleaseRecord
from tools import sup_tightness as st

PROTOCOL = dict(run_seed=0, n_queries=100, J=10, epsilon=1.0, delta=1e-3)


def _record(rep, method, low, up, privacy="ε-DP"):
    search = {"applicable": True, "n_evaluations": 800, "n_starts": 400}
    return ReleaseRecord(rep=rep, method=method, privacy=privacy, sigma=4.0, abs=0.01, rel=0.1, time_s=0.1, timings={},
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


def test_sample_brackets_every_search_by_the_bound(tmp_path, capsys, monkeypatch):
    """On a toy data set: each release's three searches (the board's over the cube, over R^d, a longer one) lie below
    its sup_upper (the MMD, valid on R^d: d = 9 keeps the branch and bound out), and the summary is printed."""
    from types import SimpleNamespace

    import numpy as np

    import dpkit.data

    X = np.clip(np.random.default_rng(0).normal(0.1, 0.4, (250, 9)), -1.0, 1.0)
    monkeypatch.setattr(dpkit.data, "load", lambda name: SimpleNamespace(X=X))
    out = tmp_path / "s.json"
    assert st.main(["sample", "--datasets", "toy", "--sigmas", "3", "--methods", "subsample", "direct-laplace_I",
                    "--n-queries", "50", "--json", str(out)]) == 0
    data = json.loads(out.read_text())
    [row] = data["rows"]  # direct answering has no synthetic database
    assert row["bound"] == "mmd" and row["upper"] >= max(row["sup_cube"], row["sup_space"], row["sup_long"])
    assert row["ratio_long"] <= row["ratio_space"] <= row["ratio_cube"]
    assert row["evaluations_long"] > row["evaluations_space"]
    assert "ratio_long   n =   1" in capsys.readouterr().out
