"""PMW's ``adaptive=True`` picks each next query from the private data and returns that order: not private.

On the neighbouring pair x₀ = [1, 0], x₁ = [.5, .5] (n = 2 records on a two-point domain, one record moved) with
the queries F = [[.5, .5], [1, 0], [0, 1]], the first step asks the query with the largest error against the
uniform hypothesis: query 1 under x₀ (errors 0, .5, .5) and query 0 under x₁ (all errors 0), whatever the noise.
The released ``query_index[0]`` thus tells the two apart with certainty (ε = ∞), so the mode refuses a ledger
(it cannot spend (ε, 0)) and warns :class:`~dpkit.core.exceptions.PrivacyLeakWarning` without one.
"""
from __future__ import annotations

import numpy as np
import pytest

from dpkit.core.accounting import Ledger
from dpkit.core.exceptions import PrivacyLeakWarning
from dpkit.evaluation.audit import audit
from dpkit.mechanisms.pmw import PrivateMultiplicativeWeights

EPS = 1.0
F = np.array([[0.5, 0.5], [1.0, 0.0], [0.0, 1.0]])
X0 = np.array([1.0, 0.0])
X1 = np.array([0.5, 0.5])


def _mech() -> PrivateMultiplicativeWeights:
    return PrivateMultiplicativeWeights(epsilon=EPS, beta=0.5, n=2, domain_size=2, n_queries=3)


def test_adaptive_order_reveals_the_data_and_warns():
    m = _mech()
    for seed in range(20):
        with pytest.warns(PrivacyLeakWarning, match="adaptive"):
            first = [m.run(x, F, adaptive=True, rng=seed).query_index[0] for x in (X0, X1)]
        assert first == [1, 0]  # with probability 1 under each: ε = ∞
    # the auditor refutes the (ε, 0) claim on this pair from the first query index alone
    with pytest.warns(PrivacyLeakWarning):
        res = audit(lambda x, rng: float(m.run(x, F, adaptive=True, rng=rng).query_index[0]), X0, X1, n_samples=400,
                    rng=0)
    assert res.flags(EPS), res.to_dict()


def test_adaptive_refuses_a_ledger_before_spending_anything():
    m, ledger = _mech(), Ledger(epsilon=10.0)
    with pytest.raises(ValueError, match="adaptive"):
        m.run(X0, F, adaptive=True, rng=0, ledger=ledger)
    assert len(ledger) == 0
    # the private mode with the same ledger: a public order, the same on both neighbours, (ε, 0) spent per run
    runs = [m.run(x, F, rng=0, ledger=ledger) for x in (X0, X1)]
    assert [r.query_index.tolist() for r in runs] == [[0, 1, 2], [0, 1, 2]]
    assert len(ledger) == 2 and ledger.total() == (2 * EPS, 0.0)
