"""Net mechanism (thesis Alg 3 / Thm 1.16) over an exactly enumerated finite net."""
from __future__ import annotations

import itertools
import math
import time

import numpy as np
import pytest

from dpkit.core.accounting import Ledger
from dpkit.core.exceptions import FeasibilityError
from dpkit.mechanisms import MAX_CANDIDATES, NetMechanism, count_databases, enumerate_databases

# X = {0,1}^3 (8 points), queries: the 3 one-way marginals and the 3 two-way conjunctions
X = np.array(list(itertools.product([0, 1], repeat=3)))
Q = np.vstack([X.T, X[:, 0] * X[:, 1], X[:, 0] * X[:, 2], X[:, 1] * X[:, 2]]).astype(float)


@pytest.mark.parametrize("d, m", [(1, 0), (1, 4), (3, 2), (4, 5), (8, 3)])
def test_enumeration_matches_itertools(d, m):
    h = enumerate_databases(d, m)
    ref = {tuple(np.bincount(c, minlength=d)) for c in itertools.combinations_with_replacement(range(d), m)}
    assert h.shape == (count_databases(d, m), d) == (len(ref), d)
    assert {tuple(r) for r in h} == ref
    assert np.all(h.sum(axis=1) == m)


def test_count_formula():
    assert count_databases(9, 10) == 43_758  # stars and bars: C(18, 8)
    assert count_databases(8, 4) == math.comb(11, 4)


def test_feasibility_error_before_enumeration():
    t0 = time.perf_counter()
    with pytest.raises(FeasibilityError, match=r"C\(100\+50-1, 50\) = \d+ databases.*max_candidates=2000000"):
        enumerate_databases(100, 50)
    assert time.perf_counter() - t0 < 0.5  # counted, not enumerated
    with pytest.raises(FeasibilityError, match="max_candidates=10"):
        enumerate_databases(3, 4, max_candidates=10)  # C(6, 4) = 15
    assert MAX_CANDIDATES == 2_000_000
    with pytest.raises(FeasibilityError, match="the net has 11 candidates"):
        NetMechanism(epsilon=1.0, queries=Q, candidates=np.ones((11, 8)), n=10, max_candidates=10)


def _net(n=50, m=4, eps=1.0):
    return NetMechanism(epsilon=eps, queries=Q, candidates=enumerate_databases(8, m), n=n)


def test_scores_and_sensitivity():
    net = _net()
    assert net.sensitivity == pytest.approx(1 / 50)  # queries in {0,1}: range 1, divided by n
    h = np.array([10, 0, 0, 0, 0, 0, 0, 40])  # 10 × (0,0,0), 40 × (1,1,1)
    err = net.errors(h)
    # the candidate (1 × (0,0,0), 3 × (1,1,1)) answers 3/4 on every query; data answers 0.8
    i = [j for j, c in enumerate(net.candidates) if c[0] == 1 and c[7] == 3][0]
    assert err[i] == pytest.approx(0.05)
    assert err.min() == pytest.approx(0.05)
    np.testing.assert_allclose(net.scores(h), -err)
    with pytest.raises(ValueError, match="sum to n=50"):
        net.errors(np.ones(8))


def test_exact_privacy_over_all_replace_one_neighbours():
    # Prop 5.1: max |ln P(y|D) − ln P(y|D')| ≤ ε over every candidate and every replace-one pair
    eps = 0.7
    net = _net(n=20, m=3, eps=eps)
    rng = np.random.default_rng(0)
    worst = 0.0
    for _ in range(20):
        h = np.bincount(rng.integers(0, 8, size=20), minlength=8).astype(float)
        lp = np.log(net.probabilities(h))
        for a in np.flatnonzero(h):
            for b in range(8):
                if a == b:
                    continue
                h2 = h.copy()
                h2[a] -= 1
                h2[b] += 1
                worst = max(worst, float(np.max(np.abs(lp - np.log(net.probabilities(h2))))))
    assert worst <= eps + 1e-9
    assert worst > 0.3 * eps  # the check is not vacuous


def test_exact_accuracy_tail():
    # Thm 1.16 via Thm 1.15: P(err > OPT + (2Δ/ε)(ln|N| + ln(1/β))) ≤ β, computed exactly
    net = _net(n=200, m=5, eps=1.0)
    rng = np.random.default_rng(1)
    for _ in range(10):
        h = np.bincount(rng.integers(0, 8, size=200), minlength=8)
        err = net.errors(h)
        p = net.probabilities(h)
        for beta in (0.2, 0.05, 1e-3):
            bound = net.error_bound(beta, opt=err.min())
            assert p[err > bound].sum() <= beta
        # thesis form: (2α, β) with β = |N| exp(−αε/(2Δ)) for an α-net (α ≥ OPT)
        alpha = max(err.min(), 0.3)
        beta_t = net.thesis_beta(alpha)
        assert beta_t == pytest.approx(net.size * math.exp(-alpha * 1.0 / (2 * net.sensitivity)))
        assert p[err > 2 * alpha].sum() <= min(beta_t, 1.0)


def test_release_sampling_and_ledger():
    net = _net(n=50, m=3)
    h = np.array([5, 5, 5, 5, 10, 10, 5, 5])
    led = Ledger(epsilon=1.0)
    i, y = net.release(h, rng=3, ledger=led, name="net")
    assert np.array_equal(y, net.candidates[i])
    assert led.entries[0].meta["net_size"] == net.size
    assert net.release(h, rng=3)[0] == i
    p = net.probabilities(h)
    assert p.sum() == pytest.approx(1.0)
    assert net.params()["net_size"] == count_databases(8, 3)


def test_input_validation():
    with pytest.raises(ValueError, match="candidates must have domain_size=8"):
        NetMechanism(epsilon=1.0, queries=Q, candidates=np.ones((3, 7)), n=5)
    with pytest.raises(ValueError, match="non-negative histograms"):
        NetMechanism(epsilon=1.0, queries=Q, candidates=-np.ones((3, 8)), n=5)
    with pytest.raises(ValueError, match="epsilon"):
        NetMechanism(epsilon=-1.0, queries=Q, candidates=np.ones((3, 8)), n=5)
    with pytest.raises(ValueError, match="domain_size"):
        enumerate_databases(0, 3)
