"""Which methods are certified better than which on the class (dpkit.board.certified): the per-repetition
rule A.sup_upper < B.sup_abs, the cell rules (every repetition; an exact sign test), the set that may still be best,
the tables' candidate sets, the published board without upper bounds, and the ratio sup_upper / sup_abs."""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy.stats import binom

from dpkit.board.certified import (
    certified_better,
    certified_cells,
    certified_pairs,
    certified_sentence,
    interval_ratios,
)
from dpkit.board.records import INTERVAL_TOLERANCE


def _records(spec: dict[str, tuple[str, list[float], list[float] | None]], *, dataset="WDBC", sigma=4.0):
    """A records table from {method: (privacy, sup_abs per repetition, sup_upper per repetition or None)}."""
    rows = []
    for m, (privacy, low, up) in spec.items():
        for r, lo in enumerate(low):
            rows.append({"dataset": dataset, "sigma": sigma, "rep": r, "method": m, "privacy": privacy,
                         "sup_abs": lo, "sup_upper": math.nan if up is None else up[r]})
    return pd.DataFrame(rows)


def test_every_repetition_rule_strict_and_paired():
    """A ≻ B iff A's upper bound lies below B's witness in every repetition (strictly, beyond the tolerance); a tie
    or one overlapping repetition is not enough; pairing is by repetition, not by the means; a method without an upper
    bound is never better; the relation is antisymmetric."""
    low = np.array([[0.10, 0.10, 0.10], [0.30, 0.30, 0.30], [0.12, 0.50, 0.12], [0.40, 0.40, 0.40]])
    up = np.array([[0.20, 0.20, 0.20], [0.35, 0.35, 0.35], [0.20, 0.60, 0.20], [np.nan] * 3])
    better, wins, p = certified_better(up, low)
    assert better[0, 1] and better[0, 3] and better[1, 3] and not better[0, 2]  # 0 vs 2: 0.20 ≥ 0.12
    assert not better[2, 1]  # 2's upper bound 0.60 in repetition 1 is above 1's witness 0.30 there
    assert not better[3].any() and not better[1, 0] and not np.diag(better).any()
    assert wins[2, 1] == 2 and wins[0, 1] == 3
    tie = certified_better(np.array([[0.3, 0.3], [1.0, 1.0]]), np.array([[0.1, 0.1], [0.3, 0.3]]))[0]
    assert not tie[0, 1]  # up_A = low_B: not certified
    just = certified_better(np.array([[0.3 - 2 * INTERVAL_TOLERANCE] * 2, [1.0] * 2]), np.array([[0.1] * 2, [0.3] * 2]))
    assert just[0][0, 1]
    assert np.allclose(p[0, 1], 0.5**3) and np.isnan(p[0, 0])


def test_sign_rule_is_an_exact_one_sided_sign_test_with_bonferroni():
    R = 30
    low = np.vstack([np.full(R, 0.1), np.full(R, 0.5), np.full(R, 0.5)])
    up = np.vstack([np.full(R, 0.2), np.full(R, 0.9), np.full(R, 0.9)])
    up[0, :7] = 0.7  # A certified better than B and C in 23 of 30 repetitions
    better, wins, p = certified_better(up, low, rule="sign", gamma=0.05)
    assert wins[0, 1] == 23 and p[0, 1] == pytest.approx(binom.sf(22, R, 0.5), rel=1e-12)
    assert better[0, 1] and better[0, 2] and not better[1, 2]  # p(23/30) ≈ 0.0026 ≤ 0.05/6
    assert not certified_better(up, low, rule="every")[0][0, 1]
    up[0, :10] = 0.7  # 20 of 30: p ≈ 0.049 > 0.05/6 (the Bonferroni share)
    assert not certified_better(up, low, rule="sign", gamma=0.05)[0][0, 1]


def test_cells_name_the_set_that_may_be_best_and_a_certified_best():
    spec = {"a": ("ε-DP", [0.10, 0.11], [0.15, 0.16]), "b": ("ε-DP", [0.20, 0.21], [0.30, 0.31]),
            "c": ("ε-DP", [0.12, 0.30], [0.40, 0.45]), "kme": ("ε-DP", [0.50, 0.50], None),
            "g": ("(ε,δ)-DP", [0.01, 0.01], [0.02, 0.02]), "direct": ("ε-DP", [math.nan, math.nan], None)}
    cells = {c["table"]: c for c in certified_cells(_records(spec))}
    eps = cells["ε-DP"]
    assert eps["methods"] == 4 and eps["with_upper"] == 3 and eps["reps"] == 2  # direct has no sup_abs: not ranked
    assert eps["may_be_best"] == ("a", "c") and eps["certified_best"] is None  # c's witness 0.12 < a's bound 0.15
    assert eps["best_by_mean_sup"] == "a" and eps["best_by_mean_sup_may_lose"] is False
    both = cells["(ε,δ)-DP"]
    assert both["methods"] == 5 and both["may_be_best"] == ("g",) and both["certified_best"] == "g"
    assert both["certified_pairs"] == 4 + 2 + 1 + 1  # g ≻ all four; a ≻ b, kme; b ≻ kme; c ≻ kme
    pairs = certified_pairs(_records(spec))
    assert {(p["better"], p["worse"]) for p in pairs if p["table"] == "ε-DP"} == {("a", "b"), ("a", "kme"),
                                                                                  ("b", "kme"), ("c", "kme")}
    assert all(p["reps_certified"] == p["reps"] == 2 for p in pairs)
    sentence = certified_sentence(certified_cells(_records(spec)))
    assert "certified in 0/1 (ε-DP) and 1/1 ((ε,δ)-DP) cells" in sentence and "in every repetition" in sentence


def test_without_upper_bounds_nothing_is_certified_and_the_sentence_says_so():
    from dpkit.board.records import COLUMNS, read_board

    board = read_board()[list(COLUMNS)]  # a board without the optional columns (records made before them)
    assert "sup_upper" not in board.columns
    cells = certified_cells(board)
    assert len(cells) == 50 and all(c["certified_pairs"] == 0 and c["n_may_be_best"] == c["methods"] for c in cells)
    assert certified_sentence(cells).startswith("No certified comparison on the class")
    assert certified_pairs(board) == [] and interval_ratios(board)["n"] == 0


def test_interval_ratios():
    spec = {"a": ("ε-DP", [0.1, 0.2, 0.4], [0.12, 0.3, 1.6]), "b": ("ε-DP", [0.1, 0.1, 0.1], None)}
    r = interval_ratios(_records(spec))
    assert r["n"] == 3 and r["median"] == pytest.approx(1.5) and r["max"] == pytest.approx(4.0) and r["above_3"] == 1
    assert r["share_at_most_1_5"] == pytest.approx(2 / 3) and r["per_dataset"]["WDBC"]["n"] == 3


def test_parameters_are_validated():
    with pytest.raises(ValueError, match="rule"):
        certified_better(np.ones((2, 2)), np.ones((2, 2)), rule="most")
    with pytest.raises(ValueError, match="gamma"):
        certified_better(np.ones((2, 2)), np.ones((2, 2)), gamma=1.5)
    with pytest.raises(ValueError, match="one shape"):
        certified_better(np.ones((2, 2)), np.ones((2, 3)))
    with pytest.raises(ValueError, match="missing column"):
        certified_cells(pd.DataFrame({"dataset": ["x"]}))


def test_the_results_page_section_lists_the_certified_cells():
    """docs/build.py's section on the leaderboard page: the sentence, the interval's width, one row per cell."""
    import importlib.util
    import sys
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "docs" / "build.py"
    spec = importlib.util.spec_from_file_location("dpkit_docs_build", path)
    build = sys.modules.get("dpkit_docs_build") or importlib.util.module_from_spec(spec)
    if "dpkit_docs_build" not in sys.modules:
        sys.modules["dpkit_docs_build"] = build
        spec.loader.exec_module(build)
    spec_ = {"a": ("ε-DP", [0.10, 0.11], [0.15, 0.16]), "b": ("ε-DP", [0.20, 0.21], [0.30, 0.31])}
    text = "\n".join(build._certified_parts(_records(spec_)))
    assert "certified in 1/1 (ε-DP) and 1/1 ((ε,δ)-DP) cells" in text and "median 1.49" in text
    rows = [[c.strip() for c in line.strip("|").split("|")] for line in text.splitlines() if line.startswith("| WDBC")]
    # first the ratio's distribution per data set (records, median, 90 %, largest, above 3, share at most 1.5), then
    # one row per cell
    assert rows[0] == ["WDBC", "4", "1.49", "1.5", "1.5", "0", "100 %"]
    assert rows[1:] == [["WDBC", "4", "ε-DP", "a", "a"], ["WDBC", "4", "(ε,δ)-DP", "a", "a"]]
