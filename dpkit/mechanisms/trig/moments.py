"""Noisy trigonometric moments (Alg 4 step 4, Alg 5, Alg 9 step 3, Alg 10) — **[erratum]** on the constants.

Every basis function satisfies |φ_r| ≤ 1 on [-1, 1]^d, so under replace-one each moment
b_r = (1/n) Σ φ_r(x) moves by at most 2/n; the constant moment b_0 ≡ 1 does not move and gets
no noise. See :mod:`dpkit.mechanisms.trig.mechanisms` for the calibration rules and the
printed variants (``constants="thesis"``).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from dpkit.core.accounting import Ledger
from dpkit.core.validation import check_choice, check_delta, check_epsilon, check_positive_int
from dpkit.mechanisms.gaussian import analytic_gaussian_sigma as _analytic_sigma

__all__ = [
    "CONSTANTS",
    "MomentNoise",
    "moment_noise",
    "release_moments",
    "spend_moments",
    "analytic_gaussian_sigma",
    "laplace_noise",
    "gaussian_noise",
]

CONSTANTS = ("correct", "thesis")


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


@dataclass(frozen=True)
class MomentNoise:
    """How the non-constant moments are noised.

    kind : "laplace" or "gaussian"; scale : Laplace scale b or Gaussian σ;
    l1_sensitivity, l2_sensitivity : the true sensitivities 2(R−1)/n and 2√(R−1)/n;
    epsilon, delta : the guarantee claimed for this step; rule : a human-readable formula.
    """

    kind: str
    scale: float
    l1_sensitivity: float
    l2_sensitivity: float
    epsilon: float
    delta: float
    constants: str
    rule: str

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def moment_noise(
    n: int,
    R: int,
    *,
    epsilon: float,
    delta: float = 0.0,
    constants: str = "correct",
    thesis_delta: float | None = None,
) -> MomentNoise:
    """Noise for releasing R moments (constant included) at (ε_m, δ_m) = (``epsilon``, ``delta``).

    ``thesis_delta`` is the δ that the printed formula puts inside log(1/δ) (the mechanism's
    total δ; Alg 10 prints 3√(2R log(1/δ))/(nε) with the total δ). See the module docstring.
    """
    n = check_positive_int(n, name="n")
    R = check_positive_int(R, name="R")
    eps = check_epsilon(epsilon, allow_inf=True)
    delta = check_delta(delta)
    constants = check_choice(constants, name="constants", choices=CONSTANTS)
    l1 = 2.0 * (R - 1) / n
    l2 = 2.0 * math.sqrt(R - 1) / n
    inf = math.isinf(eps)
    if constants == "thesis":
        if delta == 0:
            scale = 0.0 if inf else R / (n * eps)
            return MomentNoise("laplace", scale, l1, l2, eps, delta, constants, "Lap(R/(n eps_m)) [printed]")
        td = delta if thesis_delta is None else check_delta(thesis_delta, allow_zero=False, name="thesis_delta")
        scale = 0.0 if inf else math.sqrt(2.0 * R * math.log(1.0 / td)) / (n * eps)
        return MomentNoise(
            "laplace", scale, l1, l2, eps, delta, constants, "Lap(sqrt(2R log(1/delta))/(n eps_m)) [printed]"
        )
    lap = 0.0 if inf else l1 / eps
    if delta == 0 or R == 1:
        return MomentNoise("laplace", lap, l1, l2, eps, delta, constants, "Lap(2(R-1)/(n eps_m))")
    sig = analytic_gaussian_sigma(eps, delta, l2)
    if math.sqrt(2.0) * lap < sig:
        return MomentNoise("laplace", lap, l1, l2, eps, delta, constants, "Lap(2(R-1)/(n eps_m)) (smaller std)")
    return MomentNoise("gaussian", sig, l1, l2, eps, delta, constants, "N(0, s^2), analytic Gaussian on 2sqrt(R-1)/n")


def release_moments(
    b: np.ndarray, noise: MomentNoise, *, rng: np.random.Generator, size: int | None = None
) -> np.ndarray:
    """b̂ = b + noise on every coordinate but the constant one (index 0, which stays exactly b_0).

    ``size`` draws that many independent releases (shape (size, R)) — for audits.
    """
    b = np.asarray(b, dtype=float)
    shape = (b.shape[0] - 1,) if size is None else (int(size), b.shape[0] - 1)
    z = laplace_noise(rng, noise.scale, shape) if noise.kind == "laplace" else gaussian_noise(rng, noise.scale, shape)
    out = np.broadcast_to(b, (b.shape[0],) if size is None else (int(size), b.shape[0])).copy()
    out[..., 1:] += z
    return out


def spend_moments(ledger: Ledger, noise: MomentNoise, R: int) -> None:
    """Record the moment release in ``ledger`` (refused before any noise is drawn if over budget)."""
    ledger.spend(
        "moments",
        noise.epsilon,
        noise.delta,
        mechanism=f"{noise.kind} ({noise.rule})",
        neighbouring="replace-one",
        scale=noise.scale,
        l1_sensitivity=noise.l1_sensitivity,
        l2_sensitivity=noise.l2_sensitivity,
        n_moments=R,
        constants=noise.constants,
    )
