"""Noisy trigonometric moments (Alg 4 step 4, Alg 5, Alg 9 step 3, Alg 10) — **[erratum]** on the constants.

Every basis function satisfies |φ_r| ≤ 1 on [-1, 1]^d, so under replace-one each moment
b_r = (1/n) Σ φ_r(x) moves by at most 2/n; the constant moment b_0 ≡ 1 does not move and gets
no noise. See :mod:`dpkit.mechanisms.trig` for the calibration rules and the
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
from dpkit.mechanisms.trig.sensitivity import moment_sensitivity

__all__ = [
    "CONSTANTS",
    "MomentNoise",
    "moment_noise",
    "release_moments",
    "spend_moments",
    "analytic_gaussian_sigma",
    "laplace_noise",
    "gaussian_noise",
    "SENSITIVITIES",
    "GRID_SCAN_MAX",
    "GridSensitivity",
    "grid_sensitivity",
]

CONSTANTS = ("correct", "thesis")
#: ``"bound"``: 2(R−1)/n (L1) and 2√(R−1)/n (L2); ``"exact"``: :func:`grid_sensitivity` on A^d.
SENSITIVITIES = ("bound", "exact")
#: Largest grid A^d (N^d points) that :func:`grid_sensitivity` scans pair by pair.
GRID_SCAN_MAX = 1024
_FLOAT_MARGIN = 1e-12  # per basis function, covers the rounding of the Chebyshev values


@dataclass(frozen=True)
class GridSensitivity:
    """Replace-one sensitivities of the non-constant moments on the grid A^d: ``l1``, ``l2`` and how
    they were obtained (``"exact"``: the pair scan; ``"range-bound"``: the certified per-function bound)."""

    l1: float
    l2: float
    method: str


def _factor_values(N: int, kmax: int) -> np.ndarray:
    """T_k(a) for k = 0, …, kmax and every grid value a ∈ A (shape (kmax + 1, N)), by the recurrence."""
    a = (2.0 * np.arange(N) + 1.0 - N) / N
    V = np.empty((kmax + 1, N))
    V[0] = 1.0
    if kmax >= 1:
        V[1] = a
    for k in range(1, kmax):
        V[k + 1] = 2.0 * a * V[k] - V[k - 1]
    return V


def grid_sensitivity(indices: np.ndarray, N: int, n: int, *, scan_max: int = GRID_SCAN_MAX) -> GridSensitivity:
    """Replace-one L1/L2 sensitivities of the moments b_r = (1/n) Σ φ_r(x), r ≠ 0, for rows on A^d.

    **Exact** (``N^d ≤ scan_max``): max over all pairs (x, x') ∈ A^d × A^d of ‖φ(x) − φ(x')‖₁ / n and
    ‖φ(x) − φ(x')‖₂ / n, by :func:`dpkit.mechanisms.trig.sensitivity.moment_sensitivity`.

    **Certified range bound** (larger grids). Let s_r = max_{A^d} φ_r − min_{A^d} φ_r. For every pair,
    |φ_r(x) − φ_r(x')| ≤ s_r, hence ‖φ(x) − φ(x')‖₁ ≤ Σ_r s_r and ‖φ(x) − φ(x')‖₂ ≤ (Σ_r s_r²)^{1/2}.
    s_r is computed exactly from the separable structure φ_r(x) = Π_{i: r_i>0} T_{r_i}(x_i): the
    coordinates range independently over A, and for fixed other factors the product is linear in
    each factor's value, so its extremes over A^d are attained with each factor at its own
    maximum or minimum over A; carrying the (max, min) of the partial products through the
    factors (every new extreme is one of the four corner products) gives max and min exactly, in
    O(N·|supp r|) per function. Since |φ_r| ≤ 1, s_r ≤ 2, so both values are ≤ the default
    2(R−1)/n and 2√(R−1)/n; they are strictly smaller whenever some factor stays inside (−1, 1)
    on A (e.g. N = 2: A = {±1/2}, T_2 ≡ −1/2 is constant, s = 0). A margin of 10⁻¹² per function
    covers floating-point rounding of the T_k values (both routes).

    Parameters
    ----------
    indices : int array (R, d)
        Basis index vectors, the first the constant (0, …, 0) (it gets no noise).
    N : int
        Grid size per coordinate (A = {(2k + 1 − N)/N}).
    n : int
        Rows of the data set (public).
    scan_max : int
        Largest N^d scanned exactly.
    """
    idx = np.asarray(indices)
    N = check_positive_int(N, name="N")
    n = check_positive_int(n, name="n")
    if idx.ndim != 2 or idx.shape[0] < 2 or np.any(idx[0] != 0):
        raise ValueError(f"indices must be an (R, d) array with R >= 2 whose first row is the constant index 0; got {idx.shape}")
    margin = _FLOAT_MARGIN * (idx.shape[0] - 1)
    if N ** idx.shape[1] <= scan_max:
        a = (2.0 * np.arange(N) + 1.0 - N) / N
        pts = np.stack([g.ravel() for g in np.meshgrid(*([a] * idx.shape[1]), indexing="ij")], axis=1)
        s = moment_sensitivity(pts, idx, n)
        return GridSensitivity(l1=s.l1 + margin / n, l2=s.l2 + margin / n, method="exact")
    V = _factor_values(N, int(idx.max()))
    vmax, vmin = V.max(axis=1), V.min(axis=1)
    ranges = np.empty(idx.shape[0] - 1)
    for j, r in enumerate(idx[1:]):
        hi = lo = 1.0
        for k in r[r > 0]:
            c = (hi * vmax[k], hi * vmin[k], lo * vmax[k], lo * vmin[k])
            hi, lo = max(c), min(c)
        ranges[j] = min(2.0, hi - lo + _FLOAT_MARGIN)
    return GridSensitivity(l1=float(ranges.sum()) / n, l2=float(np.sqrt(np.sum(ranges**2))) / n, method="range-bound")


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
    sensitivity: GridSensitivity | None = None,
) -> MomentNoise:
    """Noise for releasing R moments (constant included) at (ε_m, δ_m) = (``epsilon``, ``delta``).

    ``thesis_delta`` is the δ that the printed formula puts inside log(1/δ) (the mechanism's
    total δ; Alg 10 prints 3√(2R log(1/δ))/(nε) with the total δ). See the module docstring.
    ``sensitivity`` replaces the bounds 2(R−1)/n and 2√(R−1)/n by :func:`grid_sensitivity`
    (``constants="correct"`` only: the printed formulas do not use a sensitivity).
    """
    n = check_positive_int(n, name="n")
    R = check_positive_int(R, name="R")
    eps = check_epsilon(epsilon, allow_inf=True)
    delta = check_delta(delta)
    constants = check_choice(constants, name="constants", choices=CONSTANTS)
    l1 = 2.0 * (R - 1) / n
    l2 = 2.0 * math.sqrt(R - 1) / n
    if sensitivity is not None:
        if constants != "correct":
            raise ValueError("sensitivity (the exact grid sensitivity) needs constants='correct'; the printed "
                             f"formulas of constants={constants!r} do not use one")
        l1, l2 = min(l1, sensitivity.l1), min(l2, sensitivity.l2)
    tag = "" if sensitivity is None else f" with the {sensitivity.method} grid sensitivity"
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
        return MomentNoise("laplace", lap, l1, l2, eps, delta, constants, "Lap(2(R-1)/(n eps_m))" + tag)
    sig = analytic_gaussian_sigma(eps, delta, l2)
    if math.sqrt(2.0) * lap < sig:
        return MomentNoise("laplace", lap, l1, l2, eps, delta, constants, "Lap(2(R-1)/(n eps_m)) (smaller std)" + tag)
    return MomentNoise("gaussian", sig, l1, l2, eps, delta, constants,
                       "N(0, s^2), analytic Gaussian on 2sqrt(R-1)/n" + tag)


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
