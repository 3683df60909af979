"""The published leaderboard (``data/leaderboard/``) is in the repository: its records have the board's schema, every
method has the same repetitions in every cell it is in, the file is small, its provenance is beside it, and the
README's board block is the one its records give (``python docs/readme_board.py --check``)."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from dpkit.board.records import read_board
from dpkit.core.published import PROVENANCE_NAME

ROOT = Path(__file__).resolve().parents[1]
RECORDS = ROOT / "data" / "leaderboard" / "records.parquet"


def test_the_published_board_has_the_schema_one_record_per_key_and_a_provenance():
    board = read_board(RECORDS)  # the columns, their dtypes and a unique (data set, σ, repetition, method) key
    assert RECORDS.stat().st_size < 5_000_000
    reps = board.groupby(["dataset", "sigma", "method"])["rep"].apply(lambda r: tuple(sorted(r)))
    assert reps.nunique() == 1, reps.value_counts().head()  # every method: the same repetitions in every cell
    assert board.groupby("dataset")["sigma"].nunique().eq(5).all()
    private = board[board["privacy"] != "non-private"]  # the references (lp-eps-inf, subsample) spend ε = ∞
    assert set(private["privacy"]) == {"ε-DP", "(ε,δ)-DP"} and len(private) < len(board)
    assert (private["eps_spent"] <= private["budget_epsilon"] * (1 + 1e-12)).all()
    assert (private["delta_spent"] <= private["budget_delta"] * (1 + 1e-12)).all()
    assert (private.loc[private["privacy"] == "ε-DP", "delta_spent"] == 0).all()
    prov = json.loads((RECORDS.parent / PROVENANCE_NAME).read_text())
    assert prov["runs"] and prov["compute_s"] > 0 and prov["git"] and prov["machine"]


def test_the_readme_block_is_the_published_boards():
    out = subprocess.run([sys.executable, str(ROOT / "docs" / "readme_board.py"), "--records", str(RECORDS), "--check"],
                         capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 0, out.stdout + out.stderr


def test_a_sample_of_the_published_records_is_the_current_codes():
    """What a refresh verifies (dpkit.board.refresh.verify_unchanged), on a sample cheap enough for every test run:
    the methods whose calibration the exact composition chose, on WDBC, σ = 2, repetition 0, computed again with the
    current code and the board's seeds, equal to the published records to the bit. A change that moves a board number
    without the board's regeneration or refresh fails here. The bits are a machine's: on a processor whose numpy
    kernels differ from those the board was made with, the comparison does not apply."""
    import dataclasses

    import pytest

    from dpkit.board.add import load_board_data
    from dpkit.board.refresh import refresh_plan, verify_unchanged
    from dpkit.core.machine import cpu

    prov = json.loads((RECORDS.parent / PROVENANCE_NAME).read_text())
    made_on = (prov.get("machine") or {}).get("cpu", {}).get("numpy_simd")
    if made_on != cpu()["numpy_simd"]:
        pytest.skip(f"the board was made with numpy SIMD {made_on}, this machine has {cpu()['numpy_simd']}")
    stored = read_board(RECORDS)
    sample = ["trig-II", "direct-laplace_II", "marginals-moments", "gauss-analyze-gauss", "gauss-psi", "mwem-gaussian",
              "lp-gauss-analyze-gauss-cands", "mst"]
    plan, methods, _ = refresh_plan(stored, ["subsample"])
    plan = dataclasses.replace(plan, datasets=("WDBC",), sigmas=(2.0,))
    got = verify_unchanged(stored, {m: methods[m] for m in sample}, plan, load_board_data(plan, None), verify_reps=1)
    assert got == {"methods": sample, "reps": [0], "records": len(sample)}
