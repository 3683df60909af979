"""Baselines: ledgers add up to the stated budget, seeds reproduce, ε → ∞ recovers the non-private
answer, the kernel-query sensitivity bound holds, and the runner/summary/conclusion contract."""
from __future__ import annotations

import math

import numpy as np
import pytest

from dpkit.core.accounting import Ledger
from dpkit.core.exceptions import BudgetExceededError, FeasibilityError
from dpkit.experiments import run_cell
from dpkit.experiments.baselines import baseline_rows, direct_expected_max_error, write_conclusion
from dpkit.mechanisms.pca import covariance
from dpkit.mechanisms.trig import ImprovedTrigonometricMechanism
from dpkit.methods import (
    MWEM,
    CandidateLP,
    DirectAnswering,
    GaussianCandidates,
    GaussianFit,
    IndependentMarginals,
    MarginalCandidates,
    SamplingFloor,
    SmallDB,
    UniformCandidates,
    kernel_query_ranges,
    kernel_values,
)
from dpkit.methods.registry import suite
from dpkit.queries.evaluate import answer_data, answer_reference
from dpkit.queries.workload import GaussianKernelWorkload

EPS, DELTA = 1.0, 1e-3


@pytest.fixture(scope="module")
def data():
    g = np.random.default_rng(123)
    # correlated data in the cube, n = 300, d = 4
    Z = g.standard_normal((300, 2)) @ np.array([[1.0, 0.8, 0.2, 0.0], [0.0, 0.3, 0.9, 0.5]])
    return np.clip(0.35 * Z, -1, 1)


@pytest.fixture(scope="module")
def workload(data):
    return GaussianKernelWorkload.generate(40, data.shape[1], J=5, sigma=2.0, rng=7)


def synthetic_methods(eps=EPS, delta=DELTA):
    return [
        IndependentMarginals(epsilon=eps, delta=delta, kind="histogram", m=200),
        IndependentMarginals(epsilon=eps, delta=delta, kind="moments", m=200),
        IndependentMarginals(epsilon=eps, delta=0.0, kind="histogram", m=200),
        GaussianFit(epsilon=eps, delta=delta, method="analyze_gauss", m=200),
        GaussianFit(epsilon=eps, delta=0.0, method="analyze_gauss", m=200),
        GaussianFit(epsilon=eps, delta=delta, method="psi", k=2, m=200),
        MWEM(epsilon=eps, delta=delta, sigma=2.0, T=4, C=300, candidates=UniformCandidates(), n_class=20, m=200),
        MWEM(epsilon=eps, delta=delta, sigma=2.0, T=4, C=300, candidates=GaussianCandidates(), n_class=20, m=200),
        MWEM(epsilon=eps, delta=0.0, sigma=2.0, T=4, C=300, query_class="basis", R=10, m=None),
        CandidateLP(epsilon=eps, delta=delta, K=4.0, C=300, R=10, candidates=GaussianCandidates()),
        CandidateLP(epsilon=eps, delta=delta, K=4.0, C=300, R=10,
                    candidates=GaussianCandidates(fit=GaussianFit(epsilon=math.inf, method="psi"))),
        CandidateLP(epsilon=eps, delta=delta, K=4.0, C=300, R=10, candidates=MarginalCandidates()),
        CandidateLP(epsilon=eps, delta=0.0, K=4.0, C=300, R=10, candidates=UniformCandidates()),
        ImprovedTrigonometricMechanism(epsilon=eps, delta=delta, K=4.0, C=300, R=10),
    ]


# ----------------------------------------------------------------------------- accounting
@pytest.mark.parametrize("idx", range(14))
def test_synthetic_baseline_ledger_adds_up(data, idx):
    meth = synthetic_methods()[idx]
    res = meth.release(data, rng=1)
    led = res.ledger
    stated_delta = meth.delta
    # total ε spent equals the stated budget; δ spent never exceeds it
    assert led["spent"]["epsilon"] == pytest.approx(EPS, rel=1e-12)
    assert led["spent"]["delta"] <= stated_delta * (1 + 1e-12)
    assert math.fsum(e["epsilon"] for e in led["entries"]) == pytest.approx(EPS, rel=1e-12)
    assert all(e["neighbouring"] == "replace-one" for e in led["entries"])
    # the result carries the synthetic database: weights on the simplex, points in the cube
    w = res.synthetic.weights
    assert w.sum() == pytest.approx(1.0) and np.all(w >= 0)
    assert np.all(np.abs(res.synthetic.points) <= 1.0)
    assert "total" in res.timings and res.params["method"] == res.method


@pytest.mark.parametrize("noise,delta", [("laplace_I", 0.0), ("laplace_II", DELTA), ("gaussian", DELTA)])
def test_direct_ledger_and_shared_ledger(data, workload, noise, delta):
    meth = DirectAnswering(epsilon=EPS, delta=delta, noise=noise)
    res = meth.release(data, workload=workload, rng=0)
    assert res.ledger["spent"]["epsilon"] == pytest.approx(EPS)
    assert res.ledger["spent"]["delta"] == pytest.approx(delta)
    assert res.answers.shape == (40,)
    # a shared ledger with room for exactly one run: the second is refused, nothing recorded
    led = Ledger(EPS, max(delta, 0.0))
    meth.release(data, workload=workload, rng=0, ledger=led)
    with pytest.raises(BudgetExceededError):
        meth.release(data, workload=workload, rng=0, ledger=led)
    assert len(led.entries) == 1


def test_mwem_splits_budget_over_2T_steps_and_charges_candidates(data):
    # the published split (accounting="split"; "pld" spends the whole composition once: tests/test_accounting_rounds.py)
    res = MWEM(epsilon=EPS, delta=DELTA, sigma=2.0, T=5, C=200, candidates=GaussianCandidates(),
               n_class=10, accounting="split").release(data, rng=0)
    names = [e["name"] for e in res.ledger["entries"]]
    assert names[0] == "gauss-analyze-gauss (composed)"  # the candidate fit is charged (the fit's "pld": one spend)
    steps = [e for e in res.ledger["entries"] if e["name"].startswith(("select_", "measure_"))]
    assert len(steps) == 10
    assert all(e["epsilon"] == pytest.approx(EPS * (2 / 3) / 10) for e in steps)
    uni = MWEM(epsilon=EPS, sigma=2.0, T=5, C=200, candidates=UniformCandidates(), n_class=10).release(data, rng=0)
    assert uni.params["data_independent_candidates"] and uni.ledger["spent"]["delta"] == 0.0
    assert len(uni.ledger["entries"]) == 10


def test_smalldb_ledger_and_feasibility(workload):
    X = np.clip(np.random.default_rng(3).normal(0, 0.5, size=(50, 2)), -1, 1)
    wl = GaussianKernelWorkload.generate(10, 2, J=3, sigma=2.0, rng=1)
    res = SmallDB(epsilon=EPS, levels=3, m=3).release(X, workload=wl, rng=0)
    assert res.ledger["spent"]["epsilon"] == pytest.approx(EPS)
    assert res.synthetic.weights.sum() == pytest.approx(1.0)
    assert res.params["net_size"] == math.comb(9 + 3 - 1, 3)
    with pytest.raises(FeasibilityError, match="max_candidates"):
        SmallDB(epsilon=EPS, levels=5, m=6, max_candidates=1000).release(X, workload=wl, rng=0)


def test_budget_refused_when_ledger_too_small(data):
    led = Ledger(0.5, DELTA)
    with pytest.raises(BudgetExceededError):
        GaussianFit(epsilon=EPS, delta=DELTA).release(data, rng=0, ledger=led)
    assert len(led.entries) == 0


# ----------------------------------------------------------------------------- seeds
@pytest.mark.parametrize("idx", [0, 1, 3, 5, 6, 7, 9, 13])
def test_seeds_reproduce(data, idx):
    meth = synthetic_methods()[idx]
    a, b, c = meth.release(data, rng=11), meth.release(data, rng=11), meth.release(data, rng=12)
    assert np.array_equal(a.synthetic.points, b.synthetic.points)
    assert np.array_equal(a.synthetic.weights, b.synthetic.weights)
    assert not (a.synthetic.points.shape == c.synthetic.points.shape
                and np.array_equal(a.synthetic.points, c.synthetic.points)
                and np.array_equal(a.synthetic.weights, c.synthetic.weights))


def test_direct_seed_reproduces(data, workload):
    m = DirectAnswering(epsilon=EPS, delta=DELTA, noise="gaussian")
    def ans(seed):
        return m.release(data, workload=workload, rng=seed).answers

    assert np.array_equal(ans(5), ans(5))
    assert not np.array_equal(ans(5), ans(6))


# ----------------------------------------------------------------------------- ε → ∞
def test_eps_inf_direct_is_exact(data, workload):
    res = DirectAnswering(epsilon=math.inf, noise="laplace_I").release(data, workload=workload, rng=0)
    # the exact answers carry a proven absolute bound of 1e-6 (dpkit.queries.exact); the float64 reference is exact
    # to ~1e-15, so a noise-free release must agree with it to that bound
    np.testing.assert_allclose(res.answers, answer_reference(workload, data), rtol=0, atol=1e-6)


def test_eps_inf_marginals_and_gaussian_are_exact(data):
    n, d = data.shape
    rel = IndependentMarginals(epsilon=math.inf, kind="histogram", bins=8).measure(data, rng=0)
    k = np.minimum(np.floor((data + 1) * 4), 7).astype(int)
    for i in range(d):
        np.testing.assert_allclose(rel.hist[i], np.bincount(k[:, i], minlength=8) / n, atol=1e-15)
    rel = GaussianFit(epsilon=math.inf, method="analyze_gauss").measure(data, rng=0)
    np.testing.assert_allclose(rel.mean, data.mean(0), atol=1e-14)
    np.testing.assert_allclose(rel.cov, covariance(data), atol=1e-12)
    # PSI route: the k = d subspace iteration of the exact covariance recovers it
    rel = GaussianFit(epsilon=math.inf, method="psi", k=d, n_iter=200).measure(data, rng=0)
    np.testing.assert_allclose(rel.cov, covariance(data), atol=1e-8)


def test_eps_inf_candidate_lp_uses_exact_moments(data):
    res = CandidateLP(epsilon=math.inf, delta=DELTA, K=4.0, C=300, R=10,
                      candidates=GaussianCandidates()).release(data, rng=0)
    from dpkit.mechanisms.trig import basis_indices, basis_moments, discretise

    p = res.params
    b = basis_moments(discretise(data, p["N"]), basis_indices(p["t"], data.shape[1], p["R"]))
    np.testing.assert_array_equal(res.diagnostics.noisy_moments, b)


def test_eps_inf_mwem_measurements_exact(data):
    res = MWEM(epsilon=math.inf, sigma=2.0, T=3, C=100, n_class=10).release(data, rng=0)
    # every measurement equals the true class answer (no noise at ε = ∞)
    from dpkit.core.rng import spawn
    from dpkit.queries.workload import GaussianKernelWorkload as W

    g_class = spawn(0, 5)[1]
    wl = W.generate(10, data.shape[1], J=10, sigma=2.0, rng=g_class)
    truth = kernel_values(data, wl.centres, wl.alphas, wl.sigma).mean(axis=1)
    for q, mq in res.diagnostics.measurements:
        assert mq == pytest.approx(truth[q], abs=1e-12)


# ----------------------------------------------------------------------------- sensitivity bound
def test_kernel_query_range_bound_holds_and_is_tight_for_one_kernel():
    g = np.random.default_rng(0)
    d = 3
    wl = GaussianKernelWorkload.generate(30, d, J=4, sigma=1.5, rng=1)
    r = kernel_query_ranges(wl.centres, wl.alphas, wl.sigma)
    corners = np.array(np.meshgrid(*[[-1.0, 1.0]] * d, indexing="ij")).reshape(d, -1).T
    P = np.vstack([g.uniform(-1, 1, size=(4000, d)), corners, wl.centres.reshape(-1, d)])
    F = kernel_values(P, wl.centres, wl.alphas, wl.sigma)
    assert np.all(F.max(1) - F.min(1) <= r + 1e-12)
    assert np.all(r <= 1.0)
    # J = 1: sup − inf is exactly 1 − exp(−D²/(2σ²)) (centre vs farthest corner)
    z = np.array([[[0.3, -0.5, 0.9]]])
    r1 = kernel_query_ranges(z, np.ones((1, 1)), 1.5)[0]
    far = -np.sign(z[0, 0])
    f = kernel_values(np.vstack([z[0], far[None]]), z, np.ones((1, 1)), 1.5)[0]
    assert r1 == pytest.approx(f[0] - f[1], rel=1e-12)



@pytest.mark.parametrize("Q, m, d, block_entries", [(23, 40, 3, 1_000), (5, 7, 2, 1), (40, 300, 6, 4_000_000)])
def test_kernel_values_equal_the_whole_array_expression_to_the_bit(Q, m, d, block_entries):
    """The blockwise evaluation in reused buffers gives exactly the bits of the plain expression
    exp(−max(‖c‖² + ‖p‖² − (2c)·p, 0)/(2σ²)) contracted with α, whatever the block size (MWEM's and SmallDB's
    releases, hence the leaderboard's kept repetitions, stay the same)."""
    g = np.random.default_rng(Q * m)
    P = g.uniform(-1, 1, (m, d))
    wl = GaussianKernelWorkload.generate(Q, d, J=4, sigma=0.7, rng=g)
    C = wl.centres.reshape(-1, d)
    dist2 = np.maximum(np.sum(C * C, axis=1)[:, None] + np.sum(P * P, axis=1)[None, :] - 2.0 * C @ P.T, 0.0)
    K = np.exp(-dist2 / (2.0 * 0.7**2)).reshape(Q, 4, m)
    ref = np.stack([np.einsum("qj,qjm->qm", wl.alphas[q : q + 1], K[q : q + 1])[0] for q in range(Q)])
    F = kernel_values(P, wl.centres, wl.alphas, wl.sigma, block_entries=block_entries)
    assert F.tobytes() == ref.tobytes()

def test_direct_laplace_I_error_matches_closed_form(data):
    """Worst error of Laplace I over Q queries is max of Q iid |Lap(b)| ~ Exp(b): mean b·H_Q.
    Over 60 runs the sample mean has sd ≤ bπ/√(6·60); 4 sd (Chebyshev: ≥ 94%)."""
    wl = GaussianKernelWorkload.generate(25, data.shape[1], J=3, sigma=2.0, rng=2)
    m = DirectAnswering(epsilon=EPS, noise="laplace_I", sensitivity="unit")
    truth = answer_data(wl, data)
    errs = [np.abs(m.release(data, workload=wl, rng=s).answers - truth).max() for s in range(60)]
    expected = direct_expected_max_error(25, n=data.shape[0], epsilon=EPS, delta=0.0, noise="laplace_I")[0]
    b = 25 / (data.shape[0] * EPS)
    assert abs(np.mean(errs) - expected) <= 4 * b * math.pi / math.sqrt(6 * 60)


# ----------------------------------------------------------------------------- runner
def test_runner_rows_and_conclusion(data):
    methods = suite("baselines", include=["trig-II", "lp-eps-inf", "subsample", "direct-gaussian", "marginals-histogram"],
                    C=200, m=100, T=3, n_class=10, R=10)
    recs = run_cell(data, methods=methods, sigma=2.0, reps=2, n_queries=30, J=4, rng=0)
    assert len(recs) == 2 * 5
    again = run_cell(data, methods=methods, sigma=2.0, reps=2, n_queries=30, J=4, rng=0)
    assert [r.abs for r in recs] == [r.abs for r in again]
    rows = baseline_rows(recs, dataset="toy")
    assert {r["method"] for r in rows} == set(methods)
    for r in rows:
        assert {"dataset", "sigma", "method", "privacy", "abs_mean", "rel_mean", "time_s"} <= set(r)
    assert {r["method"]: r["private"] for r in rows}["lp-eps-inf"] is False
    text = write_conclusion(rows)
    best = min((r for r in rows if r["private"]), key=lambda r: r["abs_mean"])["method"]
    assert f"best private method **{best}**" in text
    with pytest.raises(ValueError, match="not in suite"):
        suite("baselines", include=["nope"])


def test_eps_dp_variants_are_registered_and_spend_no_delta(data):
    """The ε-DP variants of the independent marginals and DP Gaussian fits are registry lines only, and
    their ledgers spend exactly ε and no δ."""
    eps_methods = suite("baselines", include=["marginals-histogram-eps", "marginals-moments-eps",
                                              "gauss-analyze-gauss-eps", "gauss-psi-eps"], m=50)
    for name, m in eps_methods.items():
        assert m.privacy == "ε-DP", name
        res = m.release(data, rng=0)
        assert res.spent[0] == pytest.approx(EPS, rel=1e-12) and res.spent[1] == 0.0, name


def test_direct_answers_match_weighted_sum_on_a_subsample(data, workload):
    from dpkit.queries.evaluate import answer_synthetic

    res = SamplingFloor(size=20).release(data, rng=0)
    F = workload.evaluate_function(res.synthetic.points)
    np.testing.assert_allclose(answer_synthetic(workload, res.synthetic.points, res.synthetic.weights),
                               F @ res.synthetic.weights, atol=1e-12)
