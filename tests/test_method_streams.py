"""Method streams keyed by name: a method's numbers do not depend on which other methods run, or in which order;
every record carries the seeds that re-create its release; the workloads are those of the old seeding."""
from __future__ import annotations

import json
import math
from typing import Any

import numpy as np
import pytest

from dpkit import experiments as ex
from dpkit.core.rng import spawn_seeds
from dpkit.experiments import records as records_module
from dpkit.experiments.checkpoint import CheckpointMismatchError, RepetitionCheckpoint, run_identity
from dpkit.experiments.records import SEEDING, seed_record
from dpkit.methods.references import SamplingFloor
from dpkit.methods.registry import get
from dpkit.queries.evaluate import answer_synthetic
from dpkit.queries.metrics import errors_from_answers
from dpkit.queries.truth_cache import content_hash, exact_truth
from dpkit.queries.workload import GaussianKernelWorkload

SIGMAS = (2.0, 4.0)


@pytest.fixture(scope="module")
def X():
    from dpkit.data import load

    return load("mock", n=300, d=4, rng=1).X


def _methods() -> dict[str, Any]:
    return {"trig-II": get("trig-II", C=300, R=10), "marginals-histogram": get("marginals-histogram"),
            "direct-gaussian": get("direct-gaussian"), "floor": SamplingFloor(size=20)}


def _key(r: ex.ReleaseRecord) -> dict[str, Any]:
    """Everything of a record but the measured times."""
    d = r.as_dict()
    d.pop("time_s"), d.pop("timings")
    for k in ("supremum", "supremum_upper"):
        if d[k] is not None:
            d[k] = {k: v for k, v in d[k].items() if k != "seconds"}
    return d


def _by_method(recs: list[ex.ReleaseRecord]) -> dict[tuple, dict[str, Any]]:
    return {(r.sigma, r.rep, r.method): _key(r) for r in recs}


def test_run_cells_numbers_do_not_depend_on_the_other_methods_or_their_order(X):
    """Reversed order, one method removed and one added: every common method's records are the same to the bit
    (the shared σ-independent ones, the σ-dependent ones and the direct-answering one)."""
    m = _methods()
    kw = dict(sigmas=SIGMAS, reps=2, seed=3, dataset="mock", n_queries=150)
    base = _by_method(ex.run_cells(X, methods=m, **kw))
    rev = _by_method(ex.run_cells(X, methods=dict(reversed(list(m.items()))), **kw))
    assert rev == base
    other = {"trig-I": get("trig-I", C=300, R=10), "floor": m["floor"], "direct-gaussian": m["direct-gaussian"],
             "trig-II": m["trig-II"]}  # marginals-histogram removed, trig-I added in front
    got = _by_method(ex.run_cells(X, methods=other, **kw))
    common = [k for k in base if k[2] in other]
    assert len(common) == 3 * len(SIGMAS) * 2
    for k in common:
        assert got[k] == base[k], k


def test_run_cell_numbers_do_not_depend_on_the_other_methods_or_their_order(X):
    m = _methods()
    base = _by_method(ex.run_cell(X, methods=m, sigma=2.0, reps=2, n_queries=150, rng=11))
    solo = _by_method(ex.run_cell(X, methods={"floor": m["floor"]}, sigma=2.0, reps=2, n_queries=150, rng=11))
    rev = _by_method(ex.run_cell(X, methods=dict(reversed(list(m.items()))), sigma=2.0, reps=2, n_queries=150,
                                 rng=11))
    assert rev == base
    assert solo == {k: v for k, v in base.items() if k[2] == "floor"}


# the workloads of run_cells(seed=3, dataset="mock", n_queries=150) at σ = 2, 4: SHA-256 of the centres and of
# the mixture weights (:func:`dpkit.queries.truth_cache.content_hash`), recorded with the position-keyed seeding
OLD_WORKLOADS = {
    (2.0, 0): ("ac7be8eeb020e953f2bd6e8834923b60b758072390a85f73839965b247870be1",
               "7523e3f51d4d9dff166f27f392f883b9e08d1dbb66e1999d175d6344d6f6c19a"),
    (2.0, 1): ("f1dba363eb29467d6411d9e65be5f23498a57824fc6c84bb73d815ac81fe16af",
               "27e3e503d29fb6f3569fb171a62d4a76f1bdd5b09550df0a71b0c610853350b3"),
    (4.0, 0): ("1bf7c0703290b141faea793475357ebd24abb3934328c179f2956824a5be8c04",
               "1bf9d5f6774776d95ae714538dc402f2d6b11738b15ca7fda790db3e870a624f"),
    (4.0, 1): ("b6ab3cdc9369e77916fb0a90c99ced545bef07718be69311c5b4616919227c08",
               "0964f7cf8b619e292e6bd366ce59f82d6fb323151c44fb04dc5034dd1c54b7e7"),
}


def test_workloads_are_those_of_the_old_seeding_and_the_records_recreate_them(X):
    for s in SIGMAS:
        for rep in ex.repetitions(X, sigma=s, names=["a", "b"], reps=2, n_queries=150, rng=ex.cell_seed(3, "mock", s)):
            assert (content_hash(rep.workload.centres), content_hash(rep.workload.alphas)) == OLD_WORKLOADS[s, rep.index]
            # the same workload as the first child the repetition's seed spawns (the old grandchild 0)
            rep_seed = spawn_seeds(ex.cell_seed(3, "mock", s), 2)[rep.index]
            again = GaussianKernelWorkload.generate(150, X.shape[1], sigma=s, rng=np.random.default_rng(
                rep_seed.spawn(3)[0]))
            assert content_hash(again.centres) == content_hash(rep.workload.centres)
    recs = ex.run_cells(X, methods={"floor": SamplingFloor(size=20)}, sigmas=SIGMAS, reps=2, seed=3, dataset="mock",
                        n_queries=150, supremum=None)
    for r in recs:
        wl = GaussianKernelWorkload.generate(150, X.shape[1], sigma=r.sigma, rng=np.random.default_rng(
            np.random.SeedSequence(**r.seeds["workload"])))
        assert (content_hash(wl.centres), content_hash(wl.alphas)) == OLD_WORKLOADS[r.sigma, r.rep]


@pytest.mark.parametrize("rng", [5, "generator", "none"])
def test_the_seeds_on_a_record_recreate_its_release(X, rng):
    rng = {"generator": np.random.default_rng(8), "none": None}.get(rng, rng)
    m = {"trig-II": get("trig-II", C=300, R=10), "direct-gaussian": get("direct-gaussian")}
    recs = ex.run_cell(X, methods=m, sigma=2.0, reps=2, n_queries=120, rng=rng, supremum=None)
    for r in recs:
        seeds = json.loads(json.dumps(r.seeds))  # plain ints: JSON-able, and each below 2³² (int64 columns)
        assert seeds["seeding"] == SEEDING
        words = [w for s in ("workload", "method") for k in ("entropy", "spawn_key") for w in seeds[s][k]]
        assert all(isinstance(w, int) and 0 <= w < 2**32 for w in words)
        wl = GaussianKernelWorkload.generate(120, X.shape[1], sigma=2.0, rng=np.random.default_rng(
            np.random.SeedSequence(**seeds["workload"])))
        method = m[r.method].at_width(2.0)
        rel = method.release(X, rng=np.random.default_rng(np.random.SeedSequence(**seeds["method"])), workload=wl)
        est = rel.answers if rel.answers is not None else answer_synthetic(wl, rel.synthetic.points,
                                                                           rel.synthetic.weights)
        assert errors_from_answers(est, exact_truth(wl, X).answers).abs == r.abs


def test_seed_record_keeps_the_state_of_any_seed_sequence():
    for ss in (np.random.SeedSequence(), np.random.SeedSequence([2**70 + 5, 0, 7], spawn_key=(3, 2**40)),
               np.random.SeedSequence(0).spawn(3)[2]):
        again = np.random.SeedSequence(**seed_record(ss))
        assert np.array_equal(again.generate_state(8), ss.generate_state(8))


def test_two_names_with_the_same_stream_words_are_refused(X, monkeypatch):
    monkeypatch.setattr(records_module, "_name_digest", lambda name: bytes(16))
    m = {"first": SamplingFloor(size=20), "second": SamplingFloor(size=30)}
    with pytest.raises(ValueError, match="'first' and 'second'"):
        ex.run_cell(X, methods=m, sigma=2.0, reps=1, n_queries=50, supremum=None)
    with pytest.raises(ValueError, match="'first' and 'second'"):
        ex.run_cells(X, methods=m, sigmas=(2.0,), reps=1, seed=0, dataset="mock", n_queries=50, supremum=None)


def test_a_checkpoint_of_the_old_seeding_is_not_reused(X, tmp_path):
    ident = run_identity(X, methods=_methods(), sigmas=SIGMAS, seed=3, dataset="mock", n_queries=150, J=10)
    old = {k: v for k, v in ident.items() if k != "seeding"}  # what the position-keyed runner wrote
    RepetitionCheckpoint(tmp_path / "old", old)
    with pytest.raises(CheckpointMismatchError, match="seeding"):
        RepetitionCheckpoint(tmp_path / "old", ident)


def test_worst_single_centre_brute_force_and_its_order_with_the_other_metrics():
    """``centre_abs`` is max_c |K̄_D̂(c) − K̄_D(c)| over the workload's centres (checked against a direct float64
    sum with math.fsum); the workload's worst query is at most it (a query's error is the α-average of its centres'
    errors, α on the simplex) and the class supremum over the cube at least it (every centre lies in the cube; the
    search starts from the worst centres), each up to the numerical bounds."""
    g = np.random.default_rng(4)
    X = np.clip(g.normal(0.2, 0.4, size=(80, 2)), -1, 1)
    sigma, Q, J = 0.7, 25, 3
    m = {"trig-II": get("trig-II", C=80, R=6), "marginals-histogram": get("marginals-histogram"),
         "direct-gaussian": get("direct-gaussian")}
    recs = ex.run_cell(X, methods=m, sigma=sigma, reps=2, n_queries=Q, J=J, rng=2)
    for r in recs:
        if r.method == "direct-gaussian":
            assert r.centre_abs is None and r.centre_bound is None and "answers" in r.centre_note
            continue
        wl = GaussianKernelWorkload.generate(Q, 2, J=J, sigma=sigma, rng=np.random.default_rng(
            np.random.SeedSequence(**r.seeds["workload"])))
        rel = m[r.method].at_width(sigma).release(X, rng=np.random.default_rng(np.random.SeedSequence(
            **r.seeds["method"])), workload=wl)
        P, w = rel.synthetic.points, rel.synthetic.weights

        def mean(points, weights, c):
            return math.fsum(float(wi) * math.exp(-float(np.sum((p - c) ** 2)) / (2 * sigma**2))
                             for p, wi in zip(points, weights))

        brute = max(abs(mean(P, w, c) - mean(X, np.full(len(X), 1 / len(X)), c)) for c in wl.flat_centres)
        assert r.centre_bound < 1e-5
        assert abs(r.centre_abs - brute) <= r.centre_bound + 1e-12
        # α sums to 1 within 1e-9 (GaussianKernelWorkload's check), so the α-average is within (1 + 1e-9) of its max
        assert r.abs <= (1 + 1e-9) * (r.centre_abs + r.centre_bound) + r.error_bound
        assert r.centre_abs <= r.sup_abs + r.centre_bound + r.supremum["numerical_bound"]


def test_the_table_rows_carry_the_worst_single_centre(X):
    from dpkit.experiments.summary import SUP_KEYS, records_frame, spread_stats

    recs = ex.run_cell(X, methods={"floor": SamplingFloor(size=20), "direct-gaussian": get("direct-gaussian")},
                       sigma=2.0, reps=3, n_queries=100, rng=1, supremum=None)
    df = records_frame(recs)
    floor = spread_stats(df[df["method"] == "floor"])
    vals = [r.centre_abs for r in recs if r.method == "floor"]
    assert "centre_abs_mean" in SUP_KEYS and "centre_abs_std" in SUP_KEYS
    assert floor["centre_abs_mean"] == pytest.approx(np.mean(vals), rel=1e-12)
    assert floor["centre_abs_std"] == pytest.approx(np.std(vals, ddof=1), rel=1e-12)
    direct = spread_stats(df[df["method"] == "direct-gaussian"])
    assert direct["centre_abs_mean"] is None and direct["centre_abs_std"] is None


def test_a_repetition_computed_twice_from_the_same_seed_objects_is_the_same(X):
    """The streams are made from the seeds' values, never by ``SeedSequence.spawn`` (which counts its children), so
    a repetition computed again from the same job (a retried task of a distributed run) has the same records."""
    from dpkit.experiments.parallel import _cells_repetition

    named = _methods()
    shared = {n for n, m in named.items() if ex.width_independent(m, SIGMAS)}
    configured = {s: {n: m.at_width(s) for n, m in named.items()} for s in SIGMAS}
    cell_seeds = [spawn_seeds(ex.cell_seed(3, "mock", s), 1)[0] for s in SIGMAS]
    shared_seed_0 = spawn_seeds(ex.shared_seed(3, "mock"), 1)[0]
    kw = dict(named=named, shared=shared, configured=configured, sigmas=SIGMAS, cell_seeds=cell_seeds,
              shared_seed_i=shared_seed_0, n_queries=100, J=10, supremum=None)
    first = [_key(r) for r in _cells_repetition(X, 0, **kw)]
    assert [_key(r) for r in _cells_repetition(X, 0, **kw)] == first


def test_every_value_of_a_sweep_sees_the_same_repetitions(X):
    """Common random numbers: repetition r of every swept value has the same workload and the same method stream
    (the method keeps its name across values), so the sweep's repetitions are paired blocks."""
    from dpkit.experiments.sweeps import sweep

    out = sweep(X, method=get("trig-I", C=200, R=6), param="kappa", values=[3.0, 7.0, 11.0], sigma=2.0, reps=2,
                n_queries=50, rng=0)
    seeds = [[(r.rep, r.seeds["workload"], r.seeds["method"]) for r in recs] for recs in out.values()]
    assert seeds[0] == seeds[1] == seeds[2] and [s[0] for s in seeds[0]] == [0, 1]
