"""Noise calibrations used by the trigonometric mechanisms (private helpers)."""
from __future__ import annotations

import math

import numpy as np
from scipy.optimize import brentq
from scipy.special import ndtr, log_ndtr

__all__ = ["gaussian_delta", "analytic_gaussian_sigma"]


def gaussian_delta(sigma: float, epsilon: float, l2_sensitivity: float) -> float:
    """Exact δ(ε) of the Gaussian mechanism N(0, σ²) with L2 sensitivity Δ.

    Balle & Wang (2018), Thm 8: δ = Φ(Δ/(2σ) − εσ/Δ) − e^ε Φ(−Δ/(2σ) − εσ/Δ).
    """
    a = l2_sensitivity / (2.0 * sigma)
    b = epsilon * sigma / l2_sensitivity
    return float(ndtr(a - b) - math.exp(epsilon + log_ndtr(-a - b)))


def analytic_gaussian_sigma(epsilon: float, delta: float, l2_sensitivity: float) -> float:
    """Smallest σ making N(0, σ²) noise (ε, δ)-DP for L2 sensitivity Δ (analytic Gaussian).

    Balle & Wang (2018), Alg 1 / Thm 8, solved by Brent's method on log σ (δ(σ) is
    decreasing in σ). Returns 0 for ε = ∞ or Δ = 0; the result is rounded *up* by a relative
    1e-12 so the returned σ satisfies the condition.
    """
    if math.isinf(epsilon) or l2_sensitivity == 0:
        return 0.0
    if not (0 < delta < 1):
        raise ValueError(f"delta must be in (0, 1) for the Gaussian mechanism; got {delta}")
    f = lambda ls: gaussian_delta(math.exp(ls), epsilon, l2_sensitivity) - delta  # noqa: E731
    lo, hi = math.log(l2_sensitivity) - 30.0, math.log(l2_sensitivity) + 30.0
    while f(lo) < 0:
        lo -= 10.0
    while f(hi) > 0:
        hi += 10.0
    ls = brentq(f, lo, hi, xtol=1e-14, rtol=1e-13, maxiter=500)
    sigma = math.exp(ls) * (1 + 1e-12)
    while gaussian_delta(sigma, epsilon, l2_sensitivity) > delta:
        sigma *= 1 + 1e-9
    return float(sigma)


def laplace_noise(rng: np.random.Generator, scale: float, size) -> np.ndarray:
    """Lap(scale) noise (zeros when scale == 0)."""
    return np.zeros(size) if scale == 0 else rng.laplace(0.0, scale, size=size)


def gaussian_noise(rng: np.random.Generator, sigma: float, size) -> np.ndarray:
    """N(0, σ²) noise (zeros when σ == 0)."""
    return np.zeros(size) if sigma == 0 else rng.normal(0.0, sigma, size=size)
