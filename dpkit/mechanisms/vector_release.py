"""Release a vector of statistics (ε, δ)-DP with whichever of Laplace and the analytic Gaussian adds less noise.

:func:`noisy_release` adds Laplace noise on the L1 sensitivity when δ = 0; when δ > 0 it adds the
analytic Gaussian's noise on the L2 sensitivity (:func:`~dpkit.mechanisms.gaussian.analytic_gaussian_sigma`),
or Laplace noise where its standard deviation (√2 times its scale) is not larger. ε = ∞ releases the
value unchanged. Every release is spent through the caller's ledger. :func:`noise_std` is the standard
deviation it adds per entry. Used by the moment- and histogram-based methods (marginals, Gaussian fit,
kernel mean embedding, relaxed projection).
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from dpkit.core.accounting import Ledger
from dpkit.mechanisms.gaussian import analytic_gaussian_sigma

__all__ = ["noisy_release", "noise_std"]


def noise_std(epsilon: float, delta: float, l1: float, l2: float) -> float:
    """The standard deviation of the noise :func:`noisy_release` adds per entry (0 for ε = ∞)."""
    if math.isinf(epsilon):
        return 0.0
    lap = l1 / epsilon
    sig = analytic_gaussian_sigma(epsilon, delta, l2) if delta > 0 and l2 > 0 else math.inf
    return math.sqrt(2.0) * lap if math.sqrt(2.0) * lap <= sig else sig


def noisy_release(value: np.ndarray, *, epsilon: float, delta: float, l1: float, l2: float,
                  rng: np.random.Generator, ledger: Ledger, name: str, **meta: Any) -> np.ndarray:
    """Release ``value`` (ε, δ)-DP: Laplace on the L1 sensitivity if δ = 0, else the analytic
    Gaussian on the L2 sensitivity (or Laplace when its std is smaller). Spends through ``ledger``."""
    v = np.asarray(value, dtype=float)
    if math.isinf(epsilon):
        ledger.spend(name, epsilon, 0.0, mechanism="none (epsilon=inf)", neighbouring="replace-one", **meta)
        return v.copy()
    lap = l1 / epsilon
    sig = analytic_gaussian_sigma(epsilon, delta, l2) if delta > 0 and l2 > 0 else math.inf
    if math.sqrt(2.0) * lap <= sig:
        ledger.spend(name, epsilon, 0.0, mechanism="laplace", neighbouring="replace-one", scale=lap,
                     l1_sensitivity=l1, **meta)
        return v + rng.laplace(0.0, lap, size=v.shape)
    ledger.spend(name, epsilon, delta, mechanism="gaussian (analytic)", neighbouring="replace-one", scale=sig,
                 l2_sensitivity=l2, **meta)
    return v + rng.normal(0.0, sig, size=v.shape)
