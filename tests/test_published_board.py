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
