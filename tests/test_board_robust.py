"""The leaderboard's distribution-free statistics (dpkit.board.statistics): on NULL boards, light-tailed
(maxima of Gaussian errors) and heavy-tailed (a planted law like ``rap-eps``'s on CSN: a log-normal body, and one
repetition in ten failing by a factor 6 to 27), the sign-test verdicts and the winner sets stay within the
false-alarm budget γ, while today's Gumbel-calibrated interval and the single-winner rule exceed it; the coverage
study keeps the mean's interval on a light-tailed cell and rejects it on a heavy-tailed one; the median's interval
is dual to the verdict.

Each procedure is tested under its own null: the verdicts are about the median, so their null boards print the
true median; today's interval is about the mean, so its negative control prints the true mean. Margins as in
``tests/test_board_stats.py``: a board is a Bernoulli trial; with N boards at a true rate of at most γ the count
exceeds ``binom.ppf(1 − 10⁻³, N, γ)`` with probability at most 10⁻³; a negative control must exceed it with its
Clopper–Pearson lower bound at 10⁻³ above γ."""
from __future__ import annotations

import numpy as np
import pytest
from scipy import stats
from scipy.special import ndtri

from dpkit.board.statistics import (
    coverage_study,
    family_verdicts,
    median_interval,
    robust_family,
    sign_pvalue,
    winner_set_pvalues,
)

GAMMA = 0.05
BOARDS, CELLS, METHODS, REPS, QUERIES = 400, 25, 6, 30, 10_000
LIMIT = int(stats.binom.ppf(1 - 1e-3, BOARDS, GAMMA))
#: The planted heavy tail: a log-normal body of spread 0.3 around 1, and with probability FAIL a failure U(6, 27).
FAIL, SPREAD = 0.1, 0.3


def _cp_low(x: int, n: int) -> float:
    return float(stats.binomtest(x, n).proportion_ci(confidence_level=1 - 2e-3, method="exact").low)


def _gaussian_max(u: np.ndarray) -> np.ndarray:
    """The worst absolute error over QUERIES independent N(0, 1) errors, by inverting (2Φ(x) − 1)^Q at ``u``."""
    return -ndtri(-np.expm1(np.log(u) / QUERIES) / 2)


def _heavy(rng: np.random.Generator, size: tuple[int, ...]) -> np.ndarray:
    body = np.exp(SPREAD * rng.standard_normal(size))
    return np.where(rng.random(size) < FAIL, rng.uniform(6, 27, size), body)


#: The true medians: (2Φ(x) − 1)^Q = 1/2, and 0.9 Φ(log x / 0.3) = 1/2 (below 6 no failure contributes).
MEDIAN = {"light": float(_gaussian_max(np.array(0.5))), "heavy": float(np.exp(SPREAD * ndtri(0.5 / (1 - FAIL))))}
#: The heavy law's true mean: E[body] (1 − FAIL) + E[U(6, 27)] FAIL.
HEAVY_MEAN = (1 - FAIL) * np.exp(SPREAD ** 2 / 2) + FAIL * 16.5


@pytest.fixture(scope="module")
def null_boards():
    """BOARDS boards of CELLS cells with METHODS identical methods (independent draws) over REPS repetitions."""
    rng = np.random.default_rng(20261206)
    shape = (BOARDS, CELLS, METHODS, REPS)
    return {"light": _gaussian_max(rng.random(shape)), "heavy": _heavy(rng, shape)}


@pytest.mark.parametrize("tail", ["light", "heavy"])
def test_null_boards_stay_within_the_budget(null_boards, tail):
    """The sign-test verdicts against a printed number equal to the true median (any cell not a tie), and the winner
    sets of identical methods (any method left out), each have a family-wise false-alarm rate of at most γ."""
    x = null_boards[tail]
    v = robust_family(x, np.arange(REPS), np.full(CELLS, MEDIAN[tail]), gamma=GAMMA, decimals=None, coverage=False)
    verdicts = int((v["verdict"] != "tie").any(axis=-1).sum())
    assert verdicts <= LIMIT, (tail, verdicts, LIMIT)
    left_out = int((v["set_size"] < METHODS).any(axis=-1).sum())
    assert left_out <= LIMIT, (tail, left_out, LIMIT)


def test_todays_interval_and_the_single_winner_rule_exceed_the_budget(null_boards):
    """Negative controls: today's Gumbel-calibrated interval of the mean, judged on its own null (the printed number
    is the true mean), claims *better* on the heavy-tailed boards far beyond γ (a judged half without a failure,
    probability 0.9¹⁵ ≈ 0.21 per cell, has a mean near the body's); naming one winner per cell (every other method
    worse) is false on every null board; and a set from comparisons without Holm leaves methods out beyond γ."""
    x = null_boards["heavy"]
    reps = np.arange(REPS)
    v = family_verdicts(x, reps, np.full(CELLS, HEAVY_MEAN), gamma=GAMMA, decimals=None)
    gumbel = int((v["verdict"] != "tie").any(axis=-1).sum())
    single = BOARDS  # a set of one in every cell of identical methods: a false claim on every board
    p = winner_set_pvalues(x[..., 1::2], robust_family(x, reps, np.full(CELLS, np.nan), coverage=False)["winner"])
    no_holm = int((p <= GAMMA).any(axis=(-1, -2)).sum())
    for name, count in (("Gumbel interval", gumbel), ("single winner", single), ("sets without Holm", no_holm)):
        assert count > LIMIT and _cp_low(count, BOARDS) > GAMMA, (name, count, LIMIT)


def test_the_coverage_study_keeps_a_light_tailed_mean_and_rejects_a_heavy_one():
    """Resampling 30 records into samples of 15 at the level 0.998: on maxima of Gaussian errors the mean's interval
    misses within the binomial limit and is kept; on a cell with 3 failures in 30 (as ``rap-eps`` on CSN) a sample
    without a failure, probability (27/30)¹⁵ ≈ 0.21, has an upper end below the mean: the interval misses far more
    often than 0.002 and is replaced by the median's, whose miss rate stays within the limit (distribution-free)."""
    rng = np.random.default_rng(7)
    light = _gaussian_max(rng.random(30))
    heavy = np.sort(np.exp(SPREAD * rng.standard_normal(30)))
    heavy[-3:] = [6.0, 22.0, 27.0]
    s = coverage_study(np.stack([light, heavy]), 15, 0.002, draws=20_000)
    assert s["keep_mean"].tolist() == [True, False]
    assert s["mean_miss_low"][1] >= 0.8 * (27 / 30) ** 15  # the samples without a failure, less those it survives
    assert (s["median_miss"] <= s["limit"]).all()
    assert s["limit"][0] == pytest.approx(stats.binom.ppf(1 - 1e-3, 20_000, 0.002) / 20_000)


def test_the_medians_interval_is_dual_to_the_verdict():
    """better ⇔ the median's interval (at the cell's Holm level) lies below printed − h; worse ⇔ above printed + h;
    on random heavy-tailed families with all three outcomes."""
    rng = np.random.default_rng(3)
    errors = 0.05 * _heavy(rng, (40, 25, 4, 30))
    printed = rng.choice([0.02, 0.05, 0.06, 0.09], size=(40, 25))
    v = robust_family(errors, np.arange(30), printed, gamma=GAMMA, coverage=False)
    h = 0.0005
    assert {"better", "tie", "worse"} <= set(v["verdict"].ravel())
    np.testing.assert_array_equal(v["verdict"] == "better", v["median_ci_high"] < printed - h)
    np.testing.assert_array_equal(v["verdict"] == "worse", v["median_ci_low"] > printed + h)
    assert (v["param"] == "median").all() and np.array_equal(v["ci_high"], v["median_ci_high"])


def test_sign_test_and_median_interval_by_hand():
    """The exact binomial tails: 13 of 15 below is p = 2 P(B ≥ 13) = 2 · 121/32768; the interval for the median of
    15 at 0.998 is [x_(2), x_(14)] (P(B ≤ 1) = 16/32768 ≤ 0.001 < P(B ≤ 2)), at 0.99 [x_(3), x_(13)]; an atom at
    the printed number counts on neither side."""
    x = np.r_[np.zeros(13), 2.0, 2.0]
    assert float(sign_pvalue(x, 1.0, 1.0)) == pytest.approx(2 * 121 / 32768)
    assert float(sign_pvalue(np.r_[np.ones(13), 2.0, 2.0], 1.0, 1.0)) == 1.0
    low, high = median_interval(np.tile(np.arange(1.0, 16.0), (2, 1)), np.array([0.002, 0.01]))
    assert low.tolist() == [2.0, 3.0] and high.tolist() == [14.0, 13.0]
    low, high = median_interval(np.arange(1.0, 5.0), 0.01)  # 4 values cannot reach 0.99: the whole line
    assert (float(low), float(high)) == (-np.inf, np.inf)


def test_a_method_better_on_every_judged_repetition_stays_in_the_set():
    """Method b is chosen (best on the even repetitions), a beats it on every odd one: a is in b's set (not worse),
    so the cell has no certain winner; a third method worse on every odd repetition is left out; an absent method
    (nan) is not a member."""
    reps = np.arange(30)
    rng = np.random.default_rng(11)
    base = 1 + 0.01 * rng.random(30)
    a = np.where(reps % 2 == 0, base + 0.5, base - 0.1)
    b = base
    c = base + 0.2
    absent = np.full(30, np.nan)
    v = robust_family(np.array([[a, b, c, absent]]), reps, np.array([np.nan]), coverage=False)
    assert v["winner"].tolist() == [1]
    assert v["in_set"].tolist() == [[True, True, False, False]] and v["certain"].tolist() == [False]
    assert v["verdict"].tolist() == ["n/a"]


def test_the_published_board_shows_the_median_where_the_gumbel_interval_misses():
    """On the published records of CSN: rap-eps at σ = 6, 8, 10 (Table 3.2) has 3 repetitions in 30 failing by a
    factor 6 to 27, so a judged half without one, probability (27/30)¹⁵ ≈ 0.21, has an upper end below the mean: the
    study measures that and the board shows the median; every set holds its winner, first."""
    from pathlib import Path

    from dpkit.board.records import read_board
    from dpkit.board.report import board_from_records, coverage_rows

    records = read_board(Path(__file__).resolve().parents[1] / "data" / "leaderboard" / "records.parquet")
    _rows, board = board_from_records(records[records["dataset"] == "CSN"])
    cov = {(r["sigma"], r["table"], r["kind"]): r for r in coverage_rows(board)}
    for sigma in (6.0, 8.0, 10.0):
        r = cov[(sigma, "Table 3.2", "abs")]
        assert r["winner"] == "rap-eps" and r["shown"] == "median"
        assert r["upper_end_misses"] >= 0.8 * (27 / 30) ** 15 and r["median_ci_miss"] <= r["miss_limit"]
    assert all(b[f"{k}_set"][0] == (b["method"] if k == "abs" else b["method_rel"]) for b in board for k in ("abs", "rel"))
