"""Non-private references (never counted as wins).

:class:`SamplingFloor` is a uniform random subsample of the data (e.g. of the trig mechanism's support size R + 1):
the error any database of that many points drawn from the data would have. The other reference, the noise-free LP
(baseline B5 of docs/science/baselines.md), is :class:`~dpkit.mechanisms.trig.ImprovedTrigonometricMechanism` with
``epsilon=math.inf``.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import ArrayLike

from dpkit.core.accounting import Ledger
from dpkit.core.rng import RNGLike, resolve_rng
from dpkit.core.threads import one_blas_thread
from dpkit.core.validation import check_in_unit_cube, check_int_in_range
from dpkit.queries.release import MethodBase, Release, Timer
from dpkit.queries.synthetic import WeightedDatabase
from dpkit.queries.workload import GaussianKernelWorkload

__all__ = ["SamplingFloor"]


@dataclass(frozen=True, kw_only=True)
class SamplingFloor(MethodBase):
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

    @one_blas_thread
    def release(self, X: ArrayLike, *, rng: RNGLike = None, ledger: Ledger | None = None,
                workload: GaussianKernelWorkload | None = None) -> Release[None]:
        """A uniform subsample without replacement of ``size`` rows (no privacy)."""
        tm = Timer()
        X = check_in_unit_cube(X, name="X")
        s = min(self.size, X.shape[0])
        led = ledger if ledger is not None else Ledger(math.inf, 0.0, name=self.name)
        led.spend("subsample", math.inf, 0.0, mechanism="none (non-private reference)", size=s)
        idx = resolve_rng(rng).choice(X.shape[0], size=s, replace=False)
        synth = WeightedDatabase(points=X[idx], weights=np.full(s, 1.0 / s), m=s)
        params = {"method": self.name, "size": s, "epsilon": math.inf, "delta": 0.0}
        return Release(method=self.name, privacy=self.privacy, params=params,
                       ledger=led.to_dict(), timings=tm.done(), synthetic=synth)
