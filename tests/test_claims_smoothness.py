"""Claims of notebook 54 (dpkit.claims.smoothness) at small sizes: claims PASS, negative controls FAIL."""
import numpy as np
import pytest

from dpkit.claims import smoothness as sm


def test_hermite_inequality_and_proof_chain():
    c = sm.hermite_inequality(k_max=10)
    assert c.verdict == "PASS" and c.statistic == pytest.approx(1.0)  # tight at k = 0
    assert sm.proof_chain(sigmas=(1.0, 2.0)).verdict == "PASS"
    # the chain needs k ≤ σ²: one order further it exceeds 1 for σ = 1 (√(2!)/1² > 1)
    assert sm.prop22_bound(1.0, 2) > 1.0


def test_hermite_derivatives_agree_and_a_wrong_order_is_caught(monkeypatch):
    c = sm.hermite_derivatives(sigmas=(1.0, 2.0), J=3, n_cases=5, rng=0)
    assert c.verdict == "PASS" and c.note == "relative error, orders ≤ 4, h = 1e-4"
    # a derivative formula off by 1 % per order in x₁ (e.g. a wrong σ^-k factor) must be refuted by the finite differences
    orig = sm.mixture_derivative
    monkeypatch.setattr(sm, "mixture_derivative", lambda x, C, w, s, k: orig(x, C, w, s, k) * 1.01 ** k[0])
    assert sm.hermite_derivatives(sigmas=(1.0, 2.0), J=3, n_cases=5, rng=0).verdict == "FAIL"


def test_workload_norms_pass():
    res = sm.workload_norms(sigmas=(1.0, 2.0), dims=(1, 2), J=3, n_workloads=2, per_dim_1d=51, per_dim_2d=11, rng=0)
    assert res.checks[0].verdict == "PASS" and len(res.table) == 2 * 2 * 2
    assert (res.table.K == np.floor(res.table.sigma**2)).all()


def test_critical_orders_and_beyond_control():
    crit = sm.critical_orders(sigmas=(1.0, 2.0))
    assert crit.checks[0].verdict == "PASS" and (crit.table.critical_order > crit.table.sigma2).all()
    assert [len(k) for k in crit.orders] == [4, 13] and all(s[0] == pytest.approx(1.0) for s in crit.sup_derivative)
    beyond = sm.beyond_sigma_squared(sigmas=(1.0, 2.0), per_dim=51)
    assert (beyond.checks[0].verdict, beyond.checks[0].expected) == ("FAIL", "FAIL")
    assert list(beyond.table.K) == [3, 12]
