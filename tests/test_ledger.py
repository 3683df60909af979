"""The ledger: records every spend, refuses overspending, reports totals under each rule, serialises."""
from __future__ import annotations

import json
import math

import numpy as np
import pytest

from dpkit.core.accounting import Ledger
from dpkit.core.composition import advanced_composition, optimal_composition
from dpkit.core.exceptions import BudgetExceededError
from dpkit.mechanisms import Gaussian, Laplace, LaplaceII


def test_records_and_remaining():
    led = Ledger(epsilon=1.0, delta=1e-5, name="t")
    s = led.spend("a", epsilon=0.25, mechanism="Laplace", scale=4.0)
    led.spend("b", epsilon=0.5, delta=1e-6, neighbouring="add-remove")
    assert [e.name for e in led.entries] == ["a", "b"]
    assert s.meta == {"scale": 4.0}
    assert led.entries[1].neighbouring == "add-remove"
    assert led.total() == pytest.approx((0.75, 1e-6))
    assert led.remaining == pytest.approx((0.25, 9e-6))
    assert len(led) == 2


def test_refuses_overspend_and_records_nothing():
    led = Ledger(epsilon=1.0)
    led.spend("a", epsilon=0.6)
    with pytest.raises(BudgetExceededError, match=r"spend 'b' of \(epsilon=0.5.*exceed the budget"):
        led.spend("b", epsilon=0.5)
    assert len(led) == 1
    led.spend("c", epsilon=0.4)  # exactly up to the budget is allowed
    assert led.total()[0] == pytest.approx(1.0)
    with pytest.raises(BudgetExceededError):
        led.spend("d", epsilon=1e-6)
    with pytest.raises(BudgetExceededError, match="delta"):
        Ledger(epsilon=1.0, delta=1e-6).spend("g", epsilon=0.1, delta=2e-6)


def test_spend_validation():
    led = Ledger(epsilon=1.0)
    with pytest.raises(ValueError, match="epsilon"):
        led.spend("x", epsilon=0.0)
    with pytest.raises(ValueError, match="delta"):
        led.spend("x", epsilon=0.1, delta=1.0)
    with pytest.raises(ValueError, match="neighbouring"):
        led.spend("x", epsilon=0.1, neighbouring="swap")
    with pytest.raises(TypeError, match="name"):
        led.spend("", epsilon=0.1)
    with pytest.raises(ValueError, match="delta_slack"):
        Ledger(epsilon=1.0, delta=1e-5, composition="advanced")  # advanced needs slack
    with pytest.raises(ValueError, match="composition"):
        Ledger(epsilon=1.0, composition="renyi")


def test_to_dict_is_json_and_complete():
    led = Ledger(epsilon=2.0, delta=1e-5, name="run")
    led.spend("q", epsilon=0.5, mechanism="Laplace", arr=np.arange(3), x=np.float64(1.5))
    d = json.loads(json.dumps(led.to_dict()))
    assert d["budget"] == {"epsilon": 2.0, "delta": 1e-5}
    assert d["spent"]["epsilon"] == 0.5
    assert d["entries"][0]["name"] == "q"
    assert d["entries"][0]["meta"] == {"arr": [0, 1, 2], "x": 1.5}
    assert d["composition"] == "basic"


def test_mechanisms_charge_before_noise():
    led = Ledger(epsilon=1.0, delta=1e-5)
    Laplace(epsilon=0.5, sensitivity=1.0).release(0.0, rng=0, ledger=led, name="lap")
    Gaussian(epsilon=0.4, delta=5e-6, sensitivity=1.0).release([0.0, 1.0], rng=0, ledger=led, name="gauss")
    assert [(e.name, e.mechanism) for e in led.entries] == [("lap", "Laplace"), ("gauss", "Gaussian")]
    assert led.total() == pytest.approx((0.9, 5e-6))
    with pytest.raises(BudgetExceededError):
        Laplace(epsilon=0.2, sensitivity=1.0).release(0.0, rng=0, ledger=led)
    assert len(led) == 2
    m = LaplaceII(epsilon=0.05, delta=1e-6, sensitivity=1.0, k=4)
    m.release(np.zeros(4), rng=0, ledger=led)
    assert led.entries[-1].delta == 1e-6 and led.entries[-1].epsilon == 0.05


def test_totals_under_rules_match_composition_functions():
    k, eps, dp = 200, 0.01, 1e-6
    led = Ledger(epsilon=10.0, delta=1e-5, composition="advanced", delta_slack=dp)
    for i in range(k):
        led.spend(f"s{i}", epsilon=eps)
    adv = advanced_composition(eps, 0.0, k, dp)
    assert led.total("advanced") == pytest.approx(adv)
    assert led.total("basic") == pytest.approx((k * eps, 0.0))
    opt = optimal_composition(eps, 0.0, k, dp)
    assert led.total("optimal")[0] == pytest.approx(opt[0], rel=1e-9)
    assert led.total("optimal")[0] <= led.total("advanced")[0] <= led.total("basic")[0]


def test_advanced_ledger_admits_more_steps_than_basic():
    eps = 0.01
    basic = Ledger(epsilon=1.0, delta=1e-5)
    adv = Ledger(epsilon=1.0, delta=1e-5, composition="advanced", delta_slack=1e-5)

    def steps(led):
        n = 0
        while led.can_spend(eps):
            led.spend(f"s{n}", epsilon=eps)
            n += 1
        return n

    nb, na = steps(basic), steps(adv)
    assert nb == 100
    # Thm 1.11 at eps=0.01, delta'=1e-5: sqrt(2 k ln 1e5) 0.01 + k 0.01 (e^0.01 - 1) <= 1 solves to k ~ 400
    assert 300 < na < 500
    assert adv.total()[0] <= 1.0 + 1e-12
    with pytest.raises(BudgetExceededError):
        adv.spend("over", epsilon=eps)


def test_infinite_budget_reference_run():
    led = Ledger(epsilon=math.inf)
    Laplace(epsilon=math.inf, sensitivity=1.0).release(1.0, rng=0, ledger=led)
    assert led.total()[0] == math.inf


def test_optimal_ledger_admits_at_least_as_many_steps_as_advanced():
    eps = 0.01
    counts = {}
    for rule in ("advanced", "optimal"):
        led = Ledger(epsilon=1.0, delta=1e-5, composition=rule, delta_slack=1e-5)
        n = 0
        while led.can_spend(eps):
            led.spend(f"s{n}", epsilon=eps)
            n += 1
        counts[rule] = n
        assert led.total()[0] <= 1.0 + 1e-12
        assert led.total()[1] <= 1e-5
    assert counts["optimal"] >= counts["advanced"]
    # heterogeneous spends under "optimal" fall back to advanced composition
    led = Ledger(epsilon=1.0, delta=1e-5, composition="optimal", delta_slack=1e-5)
    led.spend("a", epsilon=0.1)
    led.spend("b", epsilon=0.2)
    assert led.total() == pytest.approx(led.total("advanced"))


def test_ledger_for_fresh_or_checked():
    from dpkit.core.accounting import ledger_for
    from dpkit.core.exceptions import BudgetExceededError

    fresh = ledger_for(None, 1.0, 1e-3, "m")
    assert (fresh.epsilon, fresh.delta, fresh.name, len(fresh)) == (1.0, 1e-3, "m", 0)
    caller = Ledger(1.0)
    caller.spend("earlier", 0.5)
    assert ledger_for(caller, 0.5, 0.0, "m") is caller
    with pytest.raises(BudgetExceededError, match="m needs"):
        ledger_for(caller, 0.6, 0.0, "m")
    assert len(caller) == 1  # nothing spent by the refusal
    with pytest.raises(TypeError, match="Ledger"):
        ledger_for({"epsilon": 1}, 0.1, 0.0, "m")
