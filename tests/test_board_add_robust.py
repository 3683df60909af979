"""board-add's comparison of an entrant with a cell's current best, distribution-free
(dpkit.board.statistics.paired_sign_comparison behind dpkit.board.add.rank_entrant).

On NULL boards with a planted heavy tail (``rap-eps`` on CSN: a log-normal body, one repetition in ten failing by a
factor 6 to 27) where the entrant is the current best in distribution, the sign-test verdicts and the winner-set
exclusions stay within the false-alarm budget γ. Negative control, each procedure under its own null: an entrant
that, like ``rap-eps``, is better than the current best on half the repetitions and fails now and then, with a paired
difference whose mean *and* median are 0, is called *better* by the old rule (the t-interval of the mean difference,
Holm across the cells) far beyond γ, and by the sign test within it.

Margins as in ``tests/test_board_robust.py``: a board is a Bernoulli trial; with N boards at a true rate of at most γ
the count exceeds ``binom.ppf(1 − 10⁻³, N, γ)`` with probability at most 10⁻³; a negative control must exceed it with
its Clopper–Pearson lower bound at 10⁻³ above γ."""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from dpkit.board.add import RANK_COLUMNS, SIGN_TEST, rank_entrant, too_few_note
from dpkit.board.statistics import holm, median_interval, paired_sign_comparison, printed_pvalue, sign_min_reps

GAMMA = 0.05
BOARDS, CELLS, JUDGED = 400, 25, 15
LIMIT = int(stats.binom.ppf(1 - 1e-3, BOARDS, GAMMA))
FAIL, SPREAD = 0.1, 0.3


def _cp_low(x: int, n: int) -> float:
    return float(stats.binomtest(x, n).proportion_ci(confidence_level=1 - 2e-3, method="exact").low)


def _heavy(rng: np.random.Generator, size: tuple[int, ...]) -> np.ndarray:
    body = np.exp(SPREAD * rng.standard_normal(size))
    return np.where(rng.random(size) < FAIL, rng.uniform(6, 27, size), body)


def _t_rule(d: np.ndarray) -> np.ndarray:
    """The old rule (statistics.compare_paired): the t-interval of the mean difference, two-sided p of 0, Holm
    across the cells at γ; the verdicts, over (boards, cells)."""
    n = d.shape[-1]
    mean, se = d.mean(axis=-1), d.std(axis=-1, ddof=1) / math.sqrt(n)
    zero = np.zeros_like(mean)
    reject = holm(printed_pvalue(mean, se, n, zero, zero, calibration="t"), GAMMA)[0]
    return np.where(reject, np.where(mean < 0, "better", "worse"), "tie")


def test_the_entrant_equal_to_the_current_best_stays_within_the_budget():
    """The entrant and the current best drawn from the same heavy-tailed law: a board with any verdict not a tie,
    or with the entrant out of any cell's winner set, is a false alarm; both stay within γ over the boards."""
    rng = np.random.default_rng(20261206)
    shape = (BOARDS, CELLS, JUDGED)
    c = paired_sign_comparison(_heavy(rng, shape) - _heavy(rng, shape), gamma=GAMMA)
    assert c["decided"].all() and c["verdict"].shape == (BOARDS, CELLS)
    verdicts = int((c["verdict"] != "tie").any(axis=-1).sum())
    left_out = int((~c["in_set"]).any(axis=-1).sum())
    assert verdicts <= LIMIT and left_out <= LIMIT, (verdicts, left_out, LIMIT)


def test_the_t_rule_calls_a_rap_eps_like_entrant_better_beyond_the_budget():
    """Negative control, each rule under its own null: the entrant errs r times the current best's error (an
    independent log-normal body) with r = 0.3752 on half the repetitions, U(1, 1.01) on 48 % and U(6, 27) on 2 % (its
    failures): the paired difference has mean E[body] (E[r] − 1) = 0 and P(d < 0) = P(d > 0) = 1/2, a median of 0.
    A judged half without a failure (probability 0.98¹⁵ ≈ 0.74 per cell) has a mean difference near −0.3 with a small
    standard error: the t rule says *better* on nearly every board; the sign test stays within γ."""
    rng = np.random.default_rng(7)
    shape = (BOARDS, CELLS, JUDGED)
    best = np.exp(SPREAD * rng.standard_normal(shape))
    u = rng.random(shape)
    low = 2 * (1 - 0.48 * 1.005 - 0.02 * 16.5)  # E[r] = 1: the means are equal
    assert low == pytest.approx(0.3752)
    r = np.where(u < 0.5, low, np.where(u < 0.98, rng.uniform(1.0, 1.01, shape), rng.uniform(6, 27, shape)))
    d = best * r - best
    t_alarms = int((_t_rule(d) != "tie").any(axis=-1).sum())
    assert t_alarms > LIMIT and _cp_low(t_alarms, BOARDS) > GAMMA, (t_alarms, LIMIT)
    c = paired_sign_comparison(d, gamma=GAMMA)
    sign_alarms = int((c["verdict"] != "tie").any(axis=-1).sum())
    assert sign_alarms <= LIMIT, (sign_alarms, LIMIT)


def test_the_verdicts_interval_and_winner_set_are_the_sign_tests():
    """better/worse exactly where the two-sided sign test rejects under Holm (binomtest recomputed), the median's
    interval dual to it; the winner set leaves the entrant out exactly where the one-sided test rejects under Holm;
    a worse entrant is never in the set; all three verdicts occur."""
    rng = np.random.default_rng(3)
    shift = rng.choice([-0.9, 0.0, 0.9], size=(40, 6))[..., None]
    d = _heavy(rng, (40, 6, JUDGED)) - _heavy(rng, (40, 6, JUDGED)) + shift
    c = paired_sign_comparison(d, gamma=GAMMA)
    assert {"better", "tie", "worse"} <= set(c["verdict"].ravel())
    p = np.vectorize(lambda k: stats.binomtest(int(k), JUDGED).pvalue)((d > 0).sum(axis=-1))
    np.testing.assert_allclose(c["p"], p, rtol=1e-12)
    reject, level = holm(p, GAMMA)
    np.testing.assert_array_equal(c["level"], level)
    np.testing.assert_array_equal(c["verdict"] != "tie", reject)
    np.testing.assert_array_equal(c["verdict"] == "better", c["ci_high"] < 0)
    np.testing.assert_array_equal(c["verdict"] == "worse", c["ci_low"] > 0)
    worse_p = stats.binom.sf((d > 0).sum(axis=-1) - 1, JUDGED, 0.5)
    np.testing.assert_array_equal(c["in_set"], ~holm(worse_p, GAMMA)[0])
    assert not (c["in_set"] & (c["verdict"] == "worse")).any()
    np.testing.assert_array_equal(c["median"], np.median(d, axis=-1))


def test_too_few_judged_repetitions_never_decide():
    """A sign test can reject at 0.05 only from 6 repetitions on (2^(1−n) ≤ 0.05): with 2 (a QUICK board-add) or 5,
    even all differences of one sign give a tie, the entrant in the set and decided False; with 6 it decides."""
    assert [sign_min_reps(g) for g in (0.05, 0.5, 0.25, 0.05 / 25)] == [6, 2, 3, 10]
    for n in (2, 5):
        c = paired_sign_comparison(-np.ones((1, n)), gamma=GAMMA)
        assert c["verdict"].tolist() == ["tie"] and c["in_set"].all() and not c["decided"].any()
    c = paired_sign_comparison(-np.ones((1, 6)), gamma=GAMMA)
    assert c["verdict"].tolist() == ["better"] and c["decided"].all() and c["p"][0] == 2 ** -5
    c = paired_sign_comparison(np.ones((1, 6)), gamma=GAMMA)
    assert c["verdict"].tolist() == ["worse"] and not c["in_set"].any()
    assert too_few_note(GAMMA) == "too few judged repetitions to decide (a sign test needs at least 6)"
    with pytest.raises(ValueError, match=r"d must be \(\.\.\., cells, repetitions ≥ 1\); got shape \(3,\)"):
        paired_sign_comparison(np.zeros(3))
    with pytest.raises(ValueError, match="a paired difference is nan"):
        paired_sign_comparison(np.array([[0.0, np.nan]]))


def _board(reps: int, cells: dict[float, np.ndarray], rng: np.random.Generator) -> pd.DataFrame:
    """A records frame of one data set: per σ, the current best ``best`` (log-normal), a worse method ``other`` and
    the entrant ``new`` = best + the cell's planted differences (``cells[σ]``, one per repetition)."""
    rows = []
    for s, shift in cells.items():
        best = np.exp(SPREAD * rng.standard_normal(reps))
        for m, err, priv in (("best", best, "ε-DP"), ("other", best + 5.0, "ε-DP"), ("new", best + shift, "ε-DP")):
            rows += [{"dataset": "TOY", "sigma": s, "rep": r, "method": m, "privacy": priv, "abs": float(err[r]),
                      "rel": 0.0, "sup_abs": math.nan} for r in range(reps)]
    return pd.DataFrame(rows)


def test_rank_entrant_reports_the_median_difference_the_sign_test_and_the_winner_set():
    """rank_entrant on a board of 30 repetitions with an entrant planted better (σ = 1), equal in law (σ = 2) and
    worse (σ = 3) than the current best: its columns are paired_sign_comparison's on the odd repetitions' differences
    (Holm across the table's three cells), named as a median and a sign test; ranks_text says so."""
    from dpkit.board.add import ranks_text

    rng = np.random.default_rng(11)
    plant = {1.0: -np.full(30, 0.5), 2.0: _heavy(rng, (30,)) - _heavy(rng, (30,)), 3.0: np.full(30, 0.5)}
    merged = _board(30, plant, rng)
    ranks = rank_entrant(merged, "new")
    assert list(ranks.columns) == list(RANK_COLUMNS) and set(ranks["test"]) == {SIGN_TEST}
    for table in ("ε-DP", "(ε,δ)-DP"):
        mine = ranks[ranks["table"] == table].reset_index(drop=True)
        assert list(mine["best_other"]) == ["best"] * 3 and set(mine["judged_reps"]) == {15}
        wide = merged[merged["rep"] % 2 == 1].pivot(index=["sigma", "rep"], columns="method", values="abs")
        d = np.stack([(wide.loc[s, "new"] - wide.loc[s, "best"]).to_numpy() for s in (1.0, 2.0, 3.0)])
        c = paired_sign_comparison(d, gamma=GAMMA)
        for col, key in (("diff_median", "median"), ("diff_median_ci_low", "ci_low"),
                         ("diff_median_ci_high", "ci_high"), ("sign_p", "p"), ("level", "level"),
                         ("verdict", "verdict"), ("worse_p", "set_p"), ("in_winner_set", "in_set"),
                         ("decided", "decided")):
            assert mine[col].tolist() == c[key].tolist(), col
        assert mine["verdict"].tolist() == ["better", "tie", "worse"]
        assert mine["in_winner_set"].tolist() == [True, True, False] and set(mine["note"]) == {""}
        low, high = median_interval(d, c["level"])
        assert mine["diff_median_ci_low"].tolist() == low.tolist() and mine["diff_median"].tolist()[0] == -0.5
    text = ranks_text(ranks, "new")
    r = ranks.iloc[0]
    assert (f"against the current best best ({r.best_other_abs:.4g}): median difference -0.5 "
            f"[{r.diff_median_ci_low:+.3g}, {r.diff_median_ci_high:+.3g}] on 15 judged reps, sign test p = "
            f"{r.sign_p:.2g}, better; in the winner set") in text
    assert text.count("worse; not in the winner set (significantly worse)") == 2
    assert "verdicts by a two-sided exact sign test at false-alarm budget γ = 0.05 per table" in text


def test_a_quick_board_add_is_a_tie_that_says_it_cannot_decide():
    """4 repetitions (QUICK) judge on 2: even an entrant better on every repetition is a tie, in the winner set, not
    decided, with the note; the printed line shows the median difference without an interval and says why. One odd
    repetition is refused, naming the repetitions."""
    from dpkit.board.add import ranks_text

    rng = np.random.default_rng(5)
    ranks = rank_entrant(_board(4, {2.0: -np.full(4, 0.5)}, rng), "new")
    assert set(ranks["judged_reps"]) == {2} and set(ranks["verdict"]) == {"tie"}
    assert ranks["in_winner_set"].all() and not ranks["decided"].any()
    assert set(ranks["note"]) == {"too few judged repetitions to decide (a sign test needs at least 6)"}
    assert set(ranks["diff_median"]) == {-0.5}
    text = ranks_text(ranks, "new")
    assert text.count("median difference -0.5 on 2 judged reps: too few judged repetitions to decide (a sign test "
                      "needs at least 6), tie") == 2
    assert "[" not in text.split("\n")[0]
    with pytest.raises(ValueError, match=r"rank_entrant: 1 odd repetition\(s\) \(repetitions \[0, 1, 2\]\) to judge 'new' "
                       r"on; at least 2 are needed"):
        rank_entrant(_board(3, {2.0: -np.full(3, 0.5)}, rng), "new")
