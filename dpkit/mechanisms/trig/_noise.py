"""Noise helpers of the trigonometric mechanisms (private).

The Gaussian calibration is the shared analytic Gaussian mechanism of
:mod:`dpkit.mechanisms.gaussian` (Balle & Wang 2018, Thm 8).
"""
from __future__ import annotations

import math

import numpy as np

from dpkit.mechanisms.gaussian import analytic_gaussian_sigma as _analytic_sigma

__all__ = ["analytic_gaussian_sigma", "laplace_noise", "gaussian_noise"]


def analytic_gaussian_sigma(epsilon: float, delta: float, l2_sensitivity: float) -> float:
    """Smallest σ making N(0, σ²) noise (ε, δ)-DP for L2 sensitivity Δ; 0 for ε = ∞ or Δ = 0."""
    if math.isinf(epsilon) or l2_sensitivity == 0:
        return 0.0
    return _analytic_sigma(epsilon, delta, l2_sensitivity)


def laplace_noise(rng: np.random.Generator, scale: float, size) -> np.ndarray:
    """Lap(scale) noise (zeros when scale == 0)."""
    return np.zeros(size) if scale == 0 else rng.laplace(0.0, scale, size=size)


def gaussian_noise(rng: np.random.Generator, sigma: float, size) -> np.ndarray:
    """N(0, σ²) noise (zeros when σ == 0)."""
    return np.zeros(size) if sigma == 0 else rng.normal(0.0, sigma, size=size)
