"""The Laplace mechanism (thesis Ex 1.2)."""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from dpkit.core.rng import RNGLike, resolve_rng
from dpkit.core.validation import check_budget_fields, check_sensitivity
from dpkit.mechanisms.base import AdditiveNoiseMechanism

__all__ = ["Laplace"]


@dataclass(frozen=True, kw_only=True)
class Laplace(AdditiveNoiseMechanism):
    """The Laplace mechanism: ``f(D) + Lap(S/ε)`` per coordinate (thesis Ex 1.2).

    Parameters
    ----------
    epsilon : float
        Privacy parameter, finite and > 0. ``math.inf`` is accepted and means *no noise*
        (a non-private reference run; ``release`` returns the value unchanged).
    sensitivity : float
        L1 sensitivity ``S(f) = sup ‖f(D) − f(D')‖₁`` over neighbouring D, D'
        (under ``neighbouring``), finite and > 0.
    neighbouring : {"replace-one", "add-remove"}
        The relation under which ``sensitivity`` holds.

    Notes
    -----
    ``release(value)`` returns ``value + Lap(b)`` per coordinate with ``b = S/ε`` (same shape; a
    float for a scalar); with a ledger the spend (ε, 0) is recorded first. The density ratio of
    two outputs centred at points ``S`` apart in L1 is at most ``exp(ε)``, so the release is
    ε-DP. Per coordinate the noise has variance ``2 b²``.

    Examples
    --------
    >>> m = Laplace(epsilon=1.0, sensitivity=2.0)
    >>> m.scale, m.variance
    (2.0, 8.0)
    """

    epsilon: float
    sensitivity: float

    def __post_init__(self) -> None:
        super().__post_init__()
        check_budget_fields(self, allow_inf=True, delta=False)
        object.__setattr__(self, "sensitivity", check_sensitivity(self.sensitivity, name="sensitivity"))
        if not math.isinf(self.epsilon) and not math.isfinite(self.sensitivity / self.epsilon):
            raise ValueError(f"the Laplace scale sensitivity/epsilon = {self.sensitivity}/{self.epsilon} overflows to inf: "
                             "epsilon is too small for this sensitivity")

    @property
    def delta(self) -> float:
        return 0.0

    @property
    def scale(self) -> float:
        """The Laplace scale ``b = S/ε`` (0 when ε = ∞)."""
        return 0.0 if math.isinf(self.epsilon) else self.sensitivity / self.epsilon

    @property
    def variance(self) -> float:
        """Per-coordinate noise variance ``2 b²``."""
        return 2.0 * self.scale**2

    @property
    def mse(self) -> float:
        """Per-coordinate mean squared error (= variance; the noise is unbiased)."""
        return self.variance

    @property
    def mean_abs_error(self) -> float:
        """Per-coordinate ``E|Z| = b``."""
        return self.scale

    def _ledger_meta(self, x: np.ndarray) -> dict[str, Any]:
        return {"scale": self.scale, "sensitivity": self.sensitivity, "size": int(x.size)}

    def _add_noise(self, x: np.ndarray, rng: RNGLike) -> np.ndarray:
        """``x + Lap(b)`` per entry; ``x`` itself (a copy) when ε = ∞ (b = 0)."""
        if self.scale == 0.0:
            return x.copy()
        return x + resolve_rng(rng).laplace(0.0, self.scale, size=x.shape)

    def params(self) -> dict[str, Any]:
        d = super().params()
        d["scale"] = self.scale
        return d
