"""The trigonometric mechanism as a baseline entry, and the non-private references.

* :class:`TrigBaseline` wraps :class:`~dpkit.mechanisms.trig.ImprovedTrigonometricMechanism` (or any
  mechanism with the same ``fit``) in the baselines' result format. With ``epsilon=math.inf``
  it is **the LP fit with no noise** (dwork-roth.md §4.3 B5): moments, mean and PCA are exact,
  so its error is discretisation + basis truncation + candidate coverage + sampling only.
* :class:`SamplingFloor` — a uniform random subsample (without replacement) of the data of a
  given size, e.g. the synthetic support size R + 1 of the trig mechanism: the error any
  database of that many points drawn from the data distribution would have. Not private.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dpkit.core.accounting import Ledger
from dpkit.core.rng import RNGLike, resolve_rng
from dpkit.queries.synthetic import WeightedDatabase
from dpkit.core.validation import check_in_unit_cube, check_int_in_range
from dpkit.methods._common import BaselineResult, Timer

__all__ = ["TrigBaseline", "SamplingFloor"]


@dataclass(frozen=True, kw_only=True)
class TrigBaseline:
    """A trigonometric mechanism in the baselines' result format.

    Parameters
    ----------
    mechanism : ImprovedTrigonometricMechanism (or TrigonometricMechanism)
    label : str, optional
        Method name in tables (default ``"trig-I"``/``"trig-II"``, ``"lp-eps-inf"`` for ε = ∞).
    """

    mechanism: Any
    label: str | None = None

    @property
    def name(self) -> str:
        if self.label:
            return self.label
        if math.isinf(self.mechanism.epsilon):
            return "lp-eps-inf"
        return "trig-II" if self.mechanism.delta > 0 else "trig-I"

    @property
    def epsilon(self) -> float:
        return float(self.mechanism.epsilon)

    @property
    def delta(self) -> float:
        return float(self.mechanism.delta)

    def fit(self, X: Any, *, rng: RNGLike = None, ledger: Ledger | None = None) -> BaselineResult:
        res = self.mechanism.fit(X, rng=rng, ledger=ledger)
        params = dict(res.params)
        params["method"] = self.name
        params["support_size"] = int(res.lp.get("support_size", res.synthetic.support_size))
        return BaselineResult(method=self.name, synthetic=res.synthetic, params=params, ledger=res.ledger,
                              timings=dict(res.timings), extra={"lp": res.lp})


@dataclass(frozen=True, kw_only=True)
class SamplingFloor:
    """Random subsample of ``size`` rows of the data (non-private reference).

    Parameters
    ----------
    size : int
        Rows kept (capped at n).
    """

    size: int = 51
    epsilon: float = field(default=math.inf, init=False)
    delta: float = field(default=0.0, init=False)

    def __post_init__(self) -> None:
        check_int_in_range(self.size, name="size", low=1)

    @property
    def name(self) -> str:
        return "subsample"

    def fit(self, X: Any, *, rng: RNGLike = None, ledger: Ledger | None = None) -> BaselineResult:
        tm = Timer()
        X = check_in_unit_cube(X, name="X")
        s = min(self.size, X.shape[0])
        led = ledger if ledger is not None else Ledger(math.inf, 0.0, name=self.name)
        led.spend("subsample", math.inf, 0.0, mechanism="none (non-private reference)", size=s)
        idx = resolve_rng(rng).choice(X.shape[0], size=s, replace=False)
        synth = WeightedDatabase(points=X[idx], weights=np.full(s, 1.0 / s), m=s)
        return BaselineResult(method=self.name, synthetic=synth, params={"method": self.name, "size": s},
                              ledger=led.to_dict(), timings=tm.done())
