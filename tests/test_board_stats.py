"""The leaderboard's statistics (dpkit.board.statistics): Holm's step-down, the printed number's rounding,
intervals that agree with the verdicts, paired comparisons, the split-half choice of the winner, and on simulated
NULL boards (k identical methods, a printed number equal to the true mean) a false-alarm rate within the budget,
while the procedure without each of its parts (the split, Holm, the Gumbel calibration) and the old best-by-mean
rule exceed it.

Margins: a board is a Bernoulli trial (a false alarm or not); with N boards at a true rate of at most γ, the count
exceeds ``binom.ppf(1 − 10⁻³, N, γ)`` with probability at most 10⁻³ (the exact binomial tail, as Clopper–Pearson).
A negative control must exceed it with its Clopper–Pearson lower bound at 10⁻³ above γ."""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from scipy.special import ndtri

from dpkit.board.report import headline, leaderboard_rows, summary_markdown
from dpkit.board.statistics import (
    compare_paired,
    family_verdicts,
    holm,
    mean_interval,
    printed_pvalue,
    winner_tests,
)
from dpkit.experiments.baselines import gaussian_abs_max_mean

GAMMA = 0.05
BOARDS, CELLS, METHODS, REPS, QUERIES = 2000, 25, 10, 30, 10_000
LIMIT = int(stats.binom.ppf(1 - 1e-3, BOARDS, GAMMA))  # the largest count a rate ≤ γ reaches at 1 − 10⁻³


def _cp_low(x: int, n: int) -> float:
    return float(stats.binomtest(x, n).proportion_ci(confidence_level=1 - 2e-3, method="exact").low)


@pytest.fixture(scope="module")
def null_boards():
    """BOARDS boards of CELLS cells with METHODS identical methods (independent draws) over REPS repetitions: the
    worst absolute error over QUERIES queries of independent N(0, 1) errors (a maximum-type statistic, drawn exactly
    by inverting its distribution function (2Φ(x) − 1)^Q), and its exact mean."""
    u = np.random.default_rng(12345).random((BOARDS, CELLS, METHODS, REPS))
    x = -ndtri(-np.expm1(np.log(u) / QUERIES) / 2)
    return x, gaussian_abs_max_mean(QUERIES)


def test_holm_is_the_step_down_procedure():
    """Against the definition (reject in order while p_(j) ≤ γ/(m − j)) on random p-values with gaps (nan); and
    Holm is not Bonferroni: p = (0.01, 0.02) rejects both at 0.05."""
    rng = np.random.default_rng(0)
    p = rng.random((300, 7)) ** 3
    p[rng.random(p.shape) < 0.2] = np.nan
    reject, level = holm(p, GAMMA)
    for row, rej, lev in zip(p, reject, level):
        idx = [i for i in np.argsort(np.where(np.isnan(row), np.inf, row), kind="stable") if not np.isnan(row[i])]
        expect, stop = set(), len(idx)
        for j, i in enumerate(idx):
            if row[i] > GAMMA / (len(idx) - j):
                stop = j
                break
            expect.add(i)
        assert set(np.flatnonzero(rej)) == expect
        for j, i in enumerate(idx):
            assert lev[i] == pytest.approx(GAMMA / (len(idx) - min(j, stop)))
        assert np.isnan(lev[np.isnan(row)]).all()
    assert holm(np.array([0.01, 0.02]), GAMMA)[0].tolist() == [True, True]


@pytest.mark.parametrize("selection", ["split", "simultaneous"])
def test_a_null_board_wins_within_the_budget(null_boards, selection):
    """The procedure's family-wise false-alarm rate (any cell not a tie against a printed number equal to the true
    mean; any winner significantly apart from its identical runner-up) is at most γ."""
    x, mu = null_boards
    v = family_verdicts(x, np.arange(REPS), np.full(CELLS, mu), gamma=GAMMA, decimals=None, selection=selection)
    false = int((v["verdict"] != "tie").any(axis=-1).sum())
    assert false <= LIMIT, (false, LIMIT)
    runner = int((v["diff_verdict"] != "tie").any(axis=-1).sum())
    assert runner <= LIMIT, (runner, LIMIT)


def test_without_each_part_a_null_board_exceeds_the_budget(null_boards):
    """Negative controls on the same boards: the old rule (the best mean below the printed number) wins nearly every
    board; choosing and judging on the same repetitions without the Bonferroni factor, dropping Holm, and the plain
    t-interval (no Gumbel calibration of its upper end) each exceed γ beyond the binomial margin."""
    from dpkit.board.report import verdict

    x, mu = null_boards
    reps = np.arange(REPS)
    best = x.mean(axis=-1).min(axis=-1)
    naive = int(np.vectorize(lambda b: verdict(b, mu, decimals=12) == "win")(best).any(axis=-1).sum())
    assert naive >= 0.9 * BOARDS  # by a wide margin
    t = winner_tests(x, reps, selection="simultaneous")
    no_split = int(holm(printed_pvalue(t.mean, t.se, t.n, mu, mu), GAMMA)[0].any(axis=-1).sum())
    t = winner_tests(x, reps, selection="split")
    p = printed_pvalue(t.mean, t.se, t.n, mu, mu)
    no_holm = int((p <= GAMMA).any(axis=-1).sum())
    t_only = int(holm(printed_pvalue(t.mean, t.se, t.n, mu, mu, calibration="t"), GAMMA)[0].any(axis=-1).sum())
    for name, count in (("no split", no_split), ("no Holm", no_holm), ("t only", t_only)):
        assert count > LIMIT and _cp_low(count, BOARDS) > GAMMA, (name, count, LIMIT)


def test_the_printed_number_stands_for_its_rounding_interval():
    """A mean 0.0004 below the printed 0.049 with a tiny spread is a tie (0.049 stands for [0.0485, 0.0495]); 0.0006
    below is better; 0.0006 above worse; without rounding (decimals=None) 0.0004 below is better."""
    reps = np.arange(8)
    jitter = 1e-7 * np.array([1, 1, -1, -1, 1, 1, -1, -1])
    errors = np.array([m + jitter for m in (0.0486, 0.0484, 0.0496)])[:, None, :]  # 3 cells of 1 method
    v = family_verdicts(errors, reps, np.full(3, 0.049), gamma=GAMMA)
    assert v["verdict"].tolist() == ["tie", "better", "worse"]
    v = family_verdicts(errors, reps, np.full(3, 0.049), gamma=GAMMA, decimals=None)
    assert v["verdict"].tolist() == ["better", "better", "worse"]


def test_intervals_agree_with_the_verdicts():
    """better ⇔ the interval's upper end below printed − h; worse ⇔ its lower end above printed + h; on random
    families with both outcomes; the mean's interval is wider above (Gumbel) than below (t)."""
    rng = np.random.default_rng(3)
    errors = rng.gumbel(0.05, 0.004, size=(40, 25, 4, 12))
    printed = rng.choice([0.045, 0.05, 0.055, 0.06], size=(40, 25))
    v = family_verdicts(errors, np.arange(12), printed, gamma=GAMMA)
    h = 0.0005
    assert {"better", "tie", "worse"} <= set(v["verdict"].ravel())
    np.testing.assert_array_equal(v["verdict"] == "better", v["ci_high"] < printed - h)
    np.testing.assert_array_equal(v["verdict"] == "worse", v["ci_low"] > printed + h)
    low, high = mean_interval(np.array(1.0), np.array(0.1), 15, 0.01)
    assert high - 1.0 > 1.0 - low


def test_the_winner_is_chosen_on_the_even_repetitions_and_judged_on_the_odd():
    """Method b is the best on the even repetitions, a on the odd and on all: the winner is b, its estimate b's odd
    mean (b chosen on all repetitions would be a)."""
    reps = np.arange(8)
    a = np.array([0.02, 0.01, 0.02, 0.01, 0.02, 0.01, 0.02, 0.01])
    b = np.array([0.015, 0.03, 0.015, 0.03, 0.015, 0.03, 0.015, 0.03]) + 1e-4 * np.arange(8)
    t = winner_tests(np.array([[a, b]]), reps)
    assert t.winner.tolist() == [1] and t.runner_up.tolist() == [0]
    assert t.mean[0] == pytest.approx(b[1::2].mean()) and t.n == 4
    assert winner_tests(np.array([[a, b]]), reps, selection="simultaneous").winner.tolist() == [0]


def _pair_records(diff, sigma_noise=0.05, reps=30, seed=1):
    rng = np.random.default_rng(seed)
    rows = []
    for ds in ("CRM", "WDBC"):
        shared = 0.3 + sigma_noise * rng.standard_normal(reps)  # the workload's effect, common to both methods
        for m, shift in (("entrant", -diff), ("best", 0.0)):
            e = shared + shift + 1e-4 * rng.standard_normal(reps)
            rows += [{"dataset": ds, "sigma": 2.0, "rep": r, "method": m, "privacy": "ε-DP", "abs": e[r],
                      "rel": e[r], "sup_abs": math.nan} for r in range(reps)]
    return pd.DataFrame(rows)


def test_compare_paired_uses_the_pairs():
    """A consistent improvement of 0.002 under a shared workload effect of spread 0.05: paired, the entrant is
    better in both cells, though each method's own interval spans the other's mean; on identical methods a tie."""
    rec = _pair_records(0.002)
    c = compare_paired(rec, "entrant", "best")
    assert c["verdict"].tolist() == ["better", "better"] and (c["ci_high"] < 0).all()
    assert c["n"].tolist() == [15, 15]  # the evaluation half
    odd = rec[(rec["rep"] % 2 == 1) & (rec["dataset"] == "CRM")]
    e, b = (odd[odd["method"] == m]["abs"].to_numpy() for m in ("entrant", "best"))
    lo, hi = mean_interval(np.array(e.mean()), np.array(e.std(ddof=1) / math.sqrt(15)), 15, GAMMA)
    assert lo < b.mean() < hi  # unpaired, no difference would show
    same = _pair_records(0.0)
    assert compare_paired(same, "entrant", "best", half="all")["verdict"].tolist() == ["tie", "tie"]
    per_cell = compare_paired(rec, "entrant", {("CRM", 2.0): "best"})
    assert per_cell["dataset"].tolist() == ["CRM"]


def test_records_must_be_paired_and_complete():
    rec = _pair_records(0.002)
    with pytest.raises(ValueError, match=r"'best' at CRM, σ = 2 has repetitions .* the comparison is paired"):
        compare_paired(rec[~((rec["method"] == "best") & (rec["rep"] == 3))], "entrant", "best")
    with pytest.raises(ValueError, match="appears more than once"):
        compare_paired(pd.concat([rec, rec.iloc[:1]]), "entrant", "best")
    with pytest.raises(ValueError, match="no cell where both 'entrant' and 'other' ran"):
        compare_paired(rec, "entrant", "other")
    with pytest.raises(ValueError, match="kind must be one of"):
        compare_paired(rec, "entrant", "best", kind="max")


def _rows(specs):
    return [{"dataset": ds, "sigma": s, "method": m, "privacy": p, "abs_mean": a, "abs_std": 0.001, "rel_mean": r,
             "rel_std": 0.01, "time_s": 0.1, "eps_spent": 1.0, "delta_spent": 0.0} for ds, s, m, p, a, r in specs]


def test_leaderboard_rows_need_the_repetitions_and_carry_the_intervals():
    from board_records import records_for

    rows = _rows([("WDBC", 2.0, "a", "ε-DP", 0.030, 0.40), ("WDBC", 2.0, "b", "(ε,δ)-DP", 0.0633, 0.30)])
    with pytest.raises(ValueError, match=r"records= \(the per-repetition records"):
        leaderboard_rows(rows)
    board = {r["privacy"]: r for r in leaderboard_rows(rows, records=records_for(rows))}
    e, d = board["ε-DP"], board["(ε,δ)-DP"]
    assert e["abs_ci_low"] < e["abs_est"] < e["abs_ci_high"] and e["abs_est"] == pytest.approx(0.030)
    # abs: 0.030 vs the printed 0.049 better; rel 0.40 vs 0.355 worse; Table 3.3: a (0.030) vs 0.063 better, b's
    # rel 0.30 vs 0.452 better
    assert (e["verdict_abs"], e["verdict_rel"], d["verdict_abs"], d["verdict_rel"]) == ("better", "worse", "better",
                                                                                          "better")
    assert d["method"] == "a" and d["runner_up"] == "b" and d["verdict_runner_up"] == "better"
    assert d["abs_vs_runner_up"] == pytest.approx(0.030 - 0.0633)
    assert e["budget"] == GAMMA and e["judged_reps"] == 8
    h = headline(list(board.values()))
    assert (h.better, h.ties, h.worse) == ({"ε-DP": 1, "(ε,δ)-DP": 2}, {"ε-DP": 0, "(ε,δ)-DP": 0},
                                           {"ε-DP": 1, "(ε,δ)-DP": 0})
    assert h.text() == ("better than the thesis in 1/2 (Table 3.2) and 2/2 (Table 3.3) cells at false-alarm budget "
                        "γ = 0.05 (family-wise per table and error kind); 0 ties; 1 worse; one certain winner in 2/2 and "
                        "2/2")
    line = summary_markdown(list(board.values())).splitlines()[2]
    assert line.startswith("| WDBC | 2 | `a` 0.030 [0.030, 0.030] (0.049) better | `a` 0.400 [0.400, 0.400] (0.355) "
                           "**worse** |")


def test_holm_across_the_cells_of_a_table():
    """A cell whose winner sits 3.2 standard errors below the printed number is better on its own at γ = 0.05, but
    twenty such cells are all ties after Holm (the first is tested at γ/20)."""
    reps = np.arange(30)
    rng = np.random.default_rng(5)
    base = rng.gumbel(size=15)
    base = (base - base.mean()) / base.std(ddof=1)
    x = np.empty(30)
    x[1::2] = base
    x[::2] = base
    se = 1 / math.sqrt(15)
    one = family_verdicts(np.array([[x]]), reps, np.array([3.2 * se]), gamma=GAMMA, decimals=None)
    assert one["verdict"].tolist() == ["better"]
    many = family_verdicts(np.array([[x]] * 20), reps, np.full(20, 3.2 * se), gamma=GAMMA, decimals=None)
    assert set(many["verdict"]) == {"tie"}


def test_the_records_table_is_the_frame_board_stats_takes():
    """One records frame: the leaderboard's records table (board_records.records_frame) holds every column the
    statistics need and is taken as it is (a release without a class supremum has ``nan``)."""
    from dpkit.board.records import COLUMNS, records_frame
    from dpkit.board.statistics import REPETITION_COLUMNS, compare_paired
    from dpkit.experiments.records import ReleaseRecord

    assert set(REPETITION_COLUMNS) <= set(COLUMNS)
    recs = [ReleaseRecord(rep=r, method=m, privacy="ε-DP", sigma=2.0, abs=0.1 * (r + 1) + off, rel=0.2, time_s=0.1,
                      timings={}, support_size=1, eps_spent=1.0, delta_spent=0.0, error_bound=0.0, params={}, ledger={},
                      sup_abs=sup)
            for r in range(4) for m, off, sup in (("trig-I", 0.0, 0.5), ("direct-laplace_I", 0.01 * r, None))]
    f = records_frame(recs, dataset="WDBC", run_seed=0, n_queries=300, J=10, epsilon=1.0, delta=1e-3)
    assert f["sup_abs"].isna().tolist() == [False, True] * 4
    [row] = compare_paired(f, "trig-I", "direct-laplace_I").to_dict(orient="records")
    # the evaluation half: repetitions 1 and 3, differences −0.01 and −0.03
    assert (row["dataset"], row["sigma"], row["n"]) == ("WDBC", 2.0, 2) and row["diff_mean"] == pytest.approx(-0.02)
    with pytest.raises(ValueError, match=r"1 repetition\(s\) of the evaluation half .* an interval needs at least 2"):
        compare_paired(f[f["rep"] < 3], "trig-I", "direct-laplace_I")
