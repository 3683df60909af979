"""The method template (MethodBase.release with the measure / synthesize / release_params hooks) and the shared
helpers the methods use: check_budget_fields, WeightedDatabase.equally_weighted, the grid's cell_cdf."""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest

from dpkit.core.accounting import Ledger
from dpkit.core.exceptions import BudgetExceededError
from dpkit.core.rng import spawn
from dpkit.core.validation import check_budget_fields
from dpkit.methods._discrete import cell_cdf
from dpkit.queries.release import MethodBase, Timer
from dpkit.queries.synthetic import WeightedDatabase


@dataclass(frozen=True, kw_only=True)
class _Toy(MethodBase):
    """Releases a noisy mean (Laplace) and m rows drawn around it: one draw from each stream."""

    label = "toy"
    measure_stage = "measure-toy"

    epsilon: float
    delta: float = 0.0
    m: int = 5

    def __post_init__(self) -> None:
        check_budget_fields(self, allow_inf=True)

    def measure(self, X: Any, *, rng: Any = None, ledger: Ledger | None = None) -> np.ndarray:
        assert ledger is not None
        ledger.spend("mean", self.epsilon, 0.0, mechanism="laplace")
        return np.asarray(X).mean(axis=0) + rng.laplace(0.0, 1.0, size=np.shape(X)[1])

    def synthesize(self, stats: np.ndarray, X: Any, *, rng: np.random.Generator,
                   timer: Timer) -> tuple[WeightedDatabase, dict[str, Any]]:
        with timer("draw"):
            pts = np.clip(stats + 0.1 * rng.standard_normal((self.m, stats.shape[0])), -1.0, 1.0)
        return WeightedDatabase.equally_weighted(pts), {"stats": stats}

    def release_params(self, stats: np.ndarray, X: Any, ledger: Ledger) -> dict[str, Any]:
        return {"method": self.name, "epsilon": self.epsilon, "spends": len(ledger.entries)}


X = np.random.default_rng(3).uniform(-1, 1, size=(40, 2))


def test_template_measures_on_the_first_stream_and_synthesizes_on_the_second():
    rel = _Toy(epsilon=1.0).release(X, rng=11)
    g_measure, g_synth = spawn(11, 2)
    stats = X.mean(axis=0) + g_measure.laplace(0.0, 1.0, size=2)
    pts = np.clip(stats + 0.1 * g_synth.standard_normal((5, 2)), -1.0, 1.0)
    assert np.array_equal(rel.diagnostics["stats"], stats)
    assert np.array_equal(rel.synthetic.points, pts) and np.array_equal(rel.synthetic.weights, np.full(5, 0.2))
    assert rel.params == {"method": "toy", "epsilon": 1.0, "spends": 1}
    assert [e["name"] for e in rel.ledger["entries"]] == ["mean"]
    assert {"measure-toy", "draw", "total"} <= set(rel.timings)


def test_template_spends_through_the_callers_ledger_and_refuses_overspending():
    led = Ledger(epsilon=1.5, name="outer")
    _Toy(epsilon=1.0).release(X, rng=1, ledger=led)
    assert [e.name for e in led.entries] == ["mean"]
    with pytest.raises(BudgetExceededError, match="toy needs"):  # refused before anything is measured
        _Toy(epsilon=1.0).release(X, rng=1, ledger=led)
    assert len(led.entries) == 1


def test_a_method_without_hooks_says_what_it_lacks():
    @dataclass(frozen=True, kw_only=True)
    class _Bare(MethodBase):
        epsilon: float = 1.0
        delta: float = 0.0

    with pytest.raises(NotImplementedError, match="_Bare implements neither release nor measure"):
        _Bare().release(X, rng=0)


@dataclass(frozen=True)
class _Budget:
    epsilon: Any
    delta: Any = 0.0


def test_check_budget_fields_stores_floats_and_names_the_parameter():
    b = _Budget(epsilon=2, delta=0)
    check_budget_fields(b)
    assert (b.epsilon, b.delta) == (2.0, 0.0) and isinstance(b.epsilon, float) and isinstance(b.delta, float)
    with pytest.raises(ValueError, match="epsilon must be in"):
        check_budget_fields(_Budget(epsilon=math.inf))
    check_budget_fields(_Budget(epsilon=math.inf), allow_inf=True)
    with pytest.raises(ValueError, match="delta"):
        check_budget_fields(_Budget(epsilon=1.0, delta=0.0), allow_zero_delta=False)
    with pytest.raises(ValueError, match="delta"):
        check_budget_fields(_Budget(epsilon=1.0, delta=1.5))
    check_budget_fields(_Budget(epsilon=1.0, delta="unchecked"), delta=False)  # ε only: δ is not looked at


def test_equally_weighted_gives_every_row_weight_one_over_m():
    db = WeightedDatabase.equally_weighted(np.zeros((3, 2)))
    assert db.m == 3 and np.array_equal(db.weights, np.full(3, 1.0 / 3.0))


def test_cell_cdf_normalises_rows_and_falls_back_to_uniform():
    cdf = cell_cdf(np.array([[1.0, 3.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0]]))
    assert np.array_equal(cdf[0], [0.25, 1.0, 1.0, 1.0])
    assert np.array_equal(cdf[1], [0.25, 0.5, 0.75, 1.0])
    assert cdf[:, -1].tolist() == [1.0, 1.0]
