"""Claims of notebook 53 (dpkit.claims.reconstruction) at small sizes: claims PASS, negative controls FAIL."""
import pandas as pd
import pytest

from dpkit.claims import reconstruction as rc
from dpkit.evaluation.reconstruction import dp_guess_error_bound


def test_exhaustive_reconstruction_holds_and_is_attained():
    res = rc.exhaustive_reconstruction(n=8, alphas=(0.5, 1.0), trials=2, rng=0)
    thm, tight, lp = res.checks
    assert [c.verdict for c in res.checks] == ["PASS", "PASS", "PASS"]
    # the decoys reach exactly 4α: any smaller bound (e.g. 3.9α) would be refuted by the same statistic
    assert thm.statistic == 1.0 and tight.statistic == 1.0
    assert len(res.table) == 2 * 2 * 2 and set(res.table.answers) == {"uniform", "decoy"}


def test_exhaustive_reconstruction_refutes_a_smaller_bound(monkeypatch):
    # the check must notice a wrong bound: candidates consistent within 2α are only guaranteed within 8α, not 4α
    orig = rc.exhaustive_attack
    monkeypatch.setattr(rc, "exhaustive_attack", lambda a, alpha, n: orig(a, 2 * alpha, n=n))
    res = rc.exhaustive_reconstruction(n=8, alphas=(1.0,), trials=1, rng=0)
    assert res.checks[0].verdict == "FAIL"


def test_lp_phase_transition_small_noise_recovers():
    res = rc.lp_phase_transition(ns=(32,), kappas=(1.5,), kappa_small=0.05, trials=2, rng=0)
    (c,) = res.checks
    assert c.verdict == "PASS" and c.note == "n in [32], 2 trials each"
    frac = res.table.groupby("kappa").error_fraction.mean()
    assert frac[0.05] < frac[1.5]


def test_fundamental_law_and_per_answer_control():
    ok = rc.fundamental_law(n=32, trials=40, gamma=0.05, rng=0)
    bad = rc.fundamental_law_per_answer_control(n=32, trials=40, gamma=0.05, rng=0)
    assert ok.checks[0].verdict == "PASS" and bad.checks[0].verdict == "FAIL" and bad.checks[0].expected == "FAIL"
    table = pd.concat([ok.table, bad.table])
    assert list(table.variant) == ["dp", "per-answer"]
    assert table.bound.iloc[0] == pytest.approx(dp_guess_error_bound(1.0))
    assert (table.ucb > table.mean_error_fraction).all() and ok.checks[0].confidence == 0.95
