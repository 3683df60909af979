"""Privacy audits of the baselines' released quantities (dpkit.evaluation.audit, Clopper–Pearson ε lower bound).

Each audit runs the baseline on two adversarial replace-one neighbours (the changed row moves
between opposite corners / a query centre and its farthest corner), reduces the release to one
scalar, and asks whether the auditor's 95%-confidence lower bound ε_lb exceeds the claimed ε.
A correct mechanism is flagged with probability ≤ 5% per audit (audit.py); seeds are fixed, so
the outcome is deterministic. The negative control (sensitivity deliberately 8× too small)
shows that these sample sizes have the power to catch a real calibration error.
"""
from __future__ import annotations

import numpy as np
import pytest
from neighbour_pairs import replace_one as neighbours

from dpkit.evaluation.audit import audit
from dpkit.methods import (
    MWEM,
    CandidateLP,
    DirectAnswering,
    GaussianFit,
    IndependentMarginals,
    SmallDB,
    UniformCandidates,
)
from dpkit.queries.workload import GaussianKernelWorkload

EPS, DELTA = 1.0, 1e-3
N_SAMPLES = 4000


WL = GaussianKernelWorkload(centres=np.array([[[0.5, 0.5]], [[-0.5, -0.5]]]), alphas=np.ones((2, 1)), sigma=1.0)


def run_audit(fn, d0, d1, delta=0.0, seed=0):
    return audit(fn, d0, d1, n_samples=N_SAMPLES, delta=delta, rng=seed)


@pytest.mark.parametrize("noise,delta", [("laplace_I", 0.0), ("laplace_II", DELTA), ("gaussian", DELTA)])
def test_direct_answering_not_refuted(noise, delta):
    m = DirectAnswering(epsilon=EPS, delta=delta, noise=noise)
    d0, d1 = neighbours([0.5, 0.5], [-1.0, -1.0])  # centre of query 0 vs its farthest corner
    res = run_audit(lambda db, rng: m.release(db, rng=rng, workload=WL).answers[0], d0, d1, delta=delta)
    assert not res.flags(EPS), res.to_dict()


def test_negative_control_undernoised_direct_is_flagged(monkeypatch):
    import dpkit.methods.direct as direct

    real = direct.kernel_query_ranges
    monkeypatch.setattr(direct, "kernel_query_ranges", lambda *a: real(*a) / 8.0)
    m = DirectAnswering(epsilon=EPS, noise="laplace_I")
    d0, d1 = neighbours([0.5, 0.5], [-1.0, -1.0])
    res = run_audit(lambda db, rng: m.release(db, rng=rng, workload=WL).answers[0], d0, d1)
    assert res.flags(EPS), res.to_dict()


@pytest.mark.parametrize("delta", [0.0, DELTA])
def test_marginal_histograms_not_refuted(delta):
    m = IndependentMarginals(epsilon=EPS, delta=delta, kind="histogram", bins=4)
    d0, d1 = neighbours([-1.0, -1.0], [1.0, 1.0])

    def stat(db, rng):
        H = m.measure(db, rng=rng).hist
        return float(np.sum(H[:, 0] - H[:, -1]))  # the direction in which the row moved

    assert not run_audit(stat, d0, d1, delta=delta).flags(EPS)


@pytest.mark.parametrize("key,a,b", [("mean", [-1.0, -1.0], [1.0, 1.0]), ("second", [0.0, 0.0], [1.0, 1.0])])
def test_marginal_moments_not_refuted(key, a, b):
    m = IndependentMarginals(epsilon=EPS, delta=0.0, kind="moments")
    d0, d1 = neighbours(a, b)
    assert not run_audit(lambda db, rng: float(getattr(m.measure(db, rng=rng), key).sum()), d0, d1).flags(EPS)


@pytest.mark.parametrize("delta", [0.0, DELTA])
def test_analyze_gauss_not_refuted(delta):
    m = GaussianFit(epsilon=EPS, delta=delta, method="analyze_gauss")
    d0, d1 = neighbours([1.0, 1.0], [1.0, -1.0])  # off-diagonal second moment moves by 2/n
    res = run_audit(lambda db, rng: float(m.measure(db, rng=rng).cov[0, 1]), d0, d1, delta=delta)
    assert not res.flags(EPS), res.to_dict()


def test_mwem_not_refuted():
    m = MWEM(epsilon=EPS, sigma=1.0, T=1, C=4, n_class=3, J=1, replays=1, m=None)
    d0, d1 = neighbours([1.0, 1.0], [-1.0, -1.0])
    # the released distribution over the (data-independent) candidates; statistic: weight of candidate 0
    res = run_audit(lambda db, rng: float(m.release(db, rng=rng).synthetic.weights[0]), d0, d1)
    assert not res.flags(EPS), res.to_dict()


def test_smalldb_not_refuted():
    wl = GaussianKernelWorkload(centres=np.array([[[0.5]], [[-0.5]]]), alphas=np.ones((2, 1)), sigma=0.5)
    m = SmallDB(epsilon=EPS, levels=2, m=2)
    d0 = np.array([[-1.0], [-1.0], [-1.0]])
    d1 = np.array([[1.0], [-1.0], [-1.0]])
    res = audit(lambda db, rng: m.release(db, rng=rng, workload=wl).params["index"], d0, d1, n_samples=N_SAMPLES, rng=0)
    assert not res.flags(EPS), res.to_dict()


@pytest.mark.parametrize("delta", [0.0, DELTA])
def test_candidate_lp_moments_not_refuted(delta):
    # the only data-dependent release of the uniform-candidate variant is b̂ (the LP is post-processing)
    m = CandidateLP(epsilon=EPS, delta=delta, K=1.0, C=20, R=3, candidates=UniformCandidates())
    d0, d1 = neighbours([1.0, 1.0], [-1.0, -1.0], n=4)
    res = run_audit(lambda db, rng: float(m.noisy_moments(db, rng=rng).b_hat[1]), d0, d1, delta=delta)
    assert not res.flags(EPS), res.to_dict()
