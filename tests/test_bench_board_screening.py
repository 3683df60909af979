"""The screening replay of ``benchmarks.board_screening`` on small synthetic boards: it screens a method that is
clearly worse everywhere, never a leader or a near-tie, reports a winner it would lose, and counts a σ-independent
release once per repetition."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from benchmarks.board_screening import release_hours, replay, screen

SIGMAS = (2.0, 4.0)


def _board(means: dict[str, float | tuple[float, float]], reps: int = 30, seed: int = 0) -> pd.DataFrame:
    """Records of one data set: each method's errors around its mean (a pair: first 10 repetitions, then the rest)."""
    g = np.random.default_rng(seed)
    rows = []
    for method, mean in means.items():
        early, late = mean if isinstance(mean, tuple) else (mean, mean)
        for s in SIGMAS:
            for r in range(reps):
                m = early if r < 10 else late
                rows.append({"dataset": "WDBC", "sigma": s, "rep": r, "method": method, "privacy": "ε-DP",
                             "abs": m * (1 + 0.05 * g.standard_normal()), "sup_abs": 2 * m * (1 + 0.05 * g.standard_normal()),
                             "time_s": 10.0 if method == "shared" else 1.0})
    return pd.DataFrame(rows)


def test_a_clearly_worse_method_is_screened_and_a_near_tie_is_not():
    board = _board({"good": 0.010, "close": 0.0101, "bad": 0.05})
    screened, n_tests = screen(board, 10)
    assert n_tests == len(SIGMAS) * 2 * 2  # two challengers per cell and kind
    assert screened["method"].tolist() == ["bad"]
    res = replay(board, 10, sigma_independent=set())
    assert res["screened"] == 1 and res["lost_winners"] == []
    assert res["release_hours_saved"] == pytest.approx(20 * len(SIGMAS) * 1.0 / 3600)


def test_a_winner_the_rule_would_lose_is_reported():
    board = _board({"good": 0.010, "late": (0.02, 0.001)})  # worse on the first 10 repetitions, best over all 30
    res = replay(board, 10, sigma_independent=set())
    assert {w["method"] for w in res["lost_winners"]} == {"late"}


def test_a_sigma_independent_release_counts_once_per_repetition():
    board = _board({"good": 0.01, "shared": 0.05})
    hours = release_hours(board, {"shared"})
    assert hours.loc[("WDBC", "shared", 0)] == pytest.approx(10.0 / 3600)
    assert hours.loc[("WDBC", "good", 0)] == pytest.approx(len(SIGMAS) * 1.0 / 3600)


def test_reps_out_of_range_are_refused():
    with pytest.raises(ValueError, match="reps"):
        screen(_board({"a": 0.01, "b": 0.02}), 2)
