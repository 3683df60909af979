"""The protocol records each release's class supremum beside the thesis metric, without changing anything else."""
from __future__ import annotations

import math
import re

import numpy as np
import pytest
from board_records import records_for

from dpkit.board.report import leaderboard_rows, ranking_disagreements
from dpkit.experiments import cell_seed, run_cell, run_cells
from dpkit.experiments.records import supremum_seed
from dpkit.experiments.summary import SUP_KEYS, records_frame, spread_stats
from dpkit.experiments.thesis import table_rows
from dpkit.methods.registry import get
from dpkit.queries.evaluate import answer_reference
from dpkit.queries.workload import GaussianKernelWorkload

METHODS = ("trig-I", "marginals-histogram-eps", "direct-laplace_I", "kme-answers")


def _methods(names):
    """The registry's methods; the trigonometric ones with R = 8 moments (t^d = 8 for n = 500, d = 3 at σ = 2)."""
    return {n: get(n, R=8) if n.startswith("trig") else get(n) for n in names}


@pytest.fixture(scope="module")
def data() -> np.ndarray:
    g = np.random.default_rng(3)
    return np.clip(np.concatenate([g.normal(0.3, 0.25, (300, 3)), g.normal(-0.5, 0.2, (200, 3))]), -1, 1)


@pytest.fixture(scope="module")
def records(data):
    methods = _methods(METHODS)
    return run_cell(data, methods=methods, sigma=2.0, reps=2, n_queries=300, rng=cell_seed(0, "toy", 2.0))


def _search(r):
    """The supremum's record without its measured time."""
    return None if r.supremum is None else {k: v for k, v in r.supremum.items() if k != "seconds"}


def _without_supremum(r):
    return {k: v for k, v in r.as_dict().items()
            if k not in ("sup_abs", "supremum", "sup_upper", "supremum_upper", "time_s", "timings")}


def test_the_supremum_changes_no_other_number(data, records):
    off = run_cell(data, methods=_methods(METHODS), sigma=2.0, reps=2, n_queries=300,
                   rng=cell_seed(0, "toy", 2.0), supremum=None)
    assert [_without_supremum(r) for r in records] == [_without_supremum(r) for r in off]
    assert all(r.sup_abs is None and r.supremum is None and r.sup_upper is None and r.supremum_upper is None
               for r in off)


def test_every_synthetic_database_has_a_certified_upper_bound_at_least_its_witness(data, records):
    """sup_abs ≤ the class supremum ≤ sup_upper on every record of a weighted database (the MMD over R^d, its rounding
    bound added); an answer function (kme-answers) and answers to the workload only have none, with the reason; the
    search's effort is on every applicable record."""
    seen = set()
    for r in records:
        u = r.supremum_upper
        if r.method == "direct-laplace_I":
            assert r.sup_upper is None and not u["applicable"] and u["reason"] == r.supremum["reason"]
        elif r.method == "kme-answers":
            assert r.sup_upper is None and not u["applicable"] and "answer function" in u["reason"]
            assert r.supremum["n_starts"] > 0
        else:
            assert u["applicable"] and r.sup_upper == u["upper"] and u["domain"] == "cube"
            assert r.sup_abs - r.supremum["numerical_bound"] <= r.sup_upper <= 4 * r.sup_abs, (r.method, r.sup_upper)
            assert r.supremum["n_starts"] >= r.supremum["n_ascended"] > 0 and r.supremum["n_evaluations"] > 0
            seen.add(r.method)
    assert seen == {"trig-I", "marginals-histogram-eps"}


def test_every_release_with_answers_outside_its_workload_has_a_supremum_and_its_witness_attains_it(data, records):
    for r in records:
        if r.method == "direct-laplace_I":  # answers only its workload's queries
            assert r.sup_abs is None and "no answer for any other query" in r.supremum["reason"]
            continue
        assert r.sup_abs is not None and r.sup_abs >= r.abs - 1e-12  # a single kernel is a query of the class
        assert r.supremum["domain"] == "cube" and len(r.supremum["witness"]) == data.shape[1]
        if r.method == "kme-answers":
            continue
        # the witness, re-evaluated by the reference evaluator as a one-query workload, has the recorded error
        c = np.asarray(r.supremum["witness"])[None, None, :]
        wl = GaussianKernelWorkload(centres=c, alphas=np.ones((1, 1)), sigma=2.0)
        truth = answer_reference(wl, data)[0]
        assert abs(r.supremum["truth"] - truth) <= 1e-12
        assert abs(abs(r.supremum["released"] - truth) - r.sup_abs) <= 1e-12


def test_the_search_is_seeded_by_values(data, records):
    again = run_cell(data, methods=_methods(METHODS[:2]), sigma=2.0, reps=2, n_queries=300,
                     rng=cell_seed(0, "toy", 2.0))
    by = {(r.method, r.rep): r for r in records}
    for r in again:  # the same method, repetition and σ: the same search, whatever else ran
        assert _search(r) == _search(by[(r.method, r.rep)])
    assert supremum_seed("a", 0, 2.0).entropy != supremum_seed("b", 0, 2.0).entropy
    assert supremum_seed("a", 0, 2.0).entropy != supremum_seed("a", 1, 2.0).entropy


def test_run_cells_records_the_supremum_equally_with_repetitions_in_parallel(data):
    methods = _methods(("trig-II", "marginals-histogram-eps"))
    kw = dict(methods=methods, sigmas=[2.0, 4.0], reps=2, seed=0, dataset="toy", n_queries=200)
    one, two = run_cells(data, **kw), run_cells(data, workers=2, **kw)
    assert [_search(r) for r in one] == [_search(r) for r in two] and all(r.sup_abs for r in one)


def test_table_rows_carry_the_supremum_and_say_why_not(data, records):
    st = spread_stats(records_frame([r for r in records if r.method == "trig-I"]))
    sups = [r.sup_abs for r in records if r.method == "trig-I"]
    assert st["sup_abs_mean"] == pytest.approx(np.mean(sups), abs=0) and st["sup_abs_max"] == max(sups)
    ups = [r.sup_upper for r in records if r.method == "trig-I"]
    assert st["sup_upper_mean"] == pytest.approx(np.mean(ups), abs=0) and st["sup_upper_note"] == ""
    assert st["sup_upper_mean"] >= st["sup_abs_mean"] and st["sup_upper_max"] == max(ups)
    assert st["sup_evaluations_mean"] == np.mean([r.supremum["n_evaluations"] for r in records if r.method == "trig-I"])
    st = spread_stats(records_frame([r for r in records if r.method == "direct-laplace_I"]))
    assert st["sup_abs_mean"] is None and "no answer for any other query" in st["sup_note"]
    assert st["sup_upper_mean"] is None and "no answer for any other query" in st["sup_upper_note"]
    st = spread_stats(records_frame([r for r in records if r.method == "kme-answers"]))
    assert st["sup_abs_mean"] is not None and st["sup_upper_mean"] is None and "answer function" in st["sup_upper_note"]
    rows = table_rows([r for r in records if r.method == "trig-I"], dataset="WDBC")
    assert all(set(SUP_KEYS) <= set(row) for row in rows)


def test_the_leaderboard_ranks_by_the_supremum_too_and_names_the_cells_where_the_rankings_differ():
    def row(method, abs_mean, sup):
        return {"dataset": "WDBC", "sigma": 4.0, "method": method, "privacy": "ε-DP", "abs_mean": abs_mean,
                "abs_std": 0.0, "rel_mean": abs_mean, "rel_std": 0.0, "time_s": 0.0, "eps_spent": 1.0,
                "delta_spent": 0.0, "sup_abs_mean": sup, "sup_abs_std": 0.0}

    rows = [row("a", 0.01, 0.30), row("b", 0.02, 0.10), row("c", 0.03, 0.20), row("d", 0.005, None)]
    [cell] = [b for b in leaderboard_rows(rows, records=records_for(rows)) if b["privacy"] == "ε-DP"]
    assert cell["method"] == "d" and cell["method_sup"] == "b" and cell["runner_up_sup"] == "c"
    assert cell["rankings_agree"] is False and math.isnan(cell["sup_of_best"])  # d has no supremum: not ranked
    [dis] = ranking_disagreements([cell])
    assert dis["best_by_workload"] == "d" and dis["best_by_supremum"] == "b" and dis["its_sup"] == 0.10
    two = [row("a", 0.01, 0.1), row("b", 0.02, 0.2)]
    agree = [b for b in leaderboard_rows(two, records=records_for(two)) if b["privacy"] == "ε-DP"]
    assert agree[0]["rankings_agree"] is True and ranking_disagreements(agree) == []


def test_an_unknown_supremum_domain_is_refused(data):
    """The runner's domains are the search's (dpkit.queries.supremum.DOMAINS, one tuple, no copy above it)."""
    import dpkit.experiments.records as records
    from dpkit.queries.supremum import DOMAINS

    with pytest.raises(ValueError, match=rf"supremum must be one of {re.escape(repr(DOMAINS))} or None"):
        run_cell(data, methods=_methods(["trig-I"]), sigma=2.0, reps=1, n_queries=10, supremum="ball")
    assert not hasattr(records, "SUPREMUM_DOMAINS")


def test_largest_first_is_the_stable_argsort_prefix():
    """The supremum's starts are the workload's worst centres, largest first, ties in index order: the partial
    selection must give exactly the first k of the stable argsort (ties, NaNs and infinities included)."""
    from dpkit.experiments.records import _largest_first

    g = np.random.default_rng(1)
    for trial in range(2000):
        n, k = int(g.integers(1, 300)), int(g.integers(1, 400))
        v = g.integers(0, 5, n).astype(float) if trial % 4 == 0 else g.normal(size=n)
        if trial % 4 == 2:
            v[g.integers(0, n, 3)] = np.nan
        if trial % 4 == 3:
            v[g.integers(0, n, 2)], v[g.integers(0, n, 2)] = np.inf, -np.inf
        assert np.array_equal(_largest_first(v, k), np.argsort(-v, kind="stable")[:k]), (trial, n, k)
