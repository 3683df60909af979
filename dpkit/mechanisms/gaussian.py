"""The Gaussian mechanism with three calibrations (thesis Ex 1.3; D–R Thm 3.22; Balle & Wang 2018).

1. ``"analytic"`` (default): the smallest σ with exact δ(σ) ≤ δ (Balle & Wang, ICML 2018, Thm 8;
   :func:`gaussian_exact_delta`), for ε in (0, :data:`ANALYTIC_MAX_EPSILON`].
2. ``"classic"``: ``σ = S₂ √(2 ln(1.25/δ)) / ε`` (D–R Thm 3.22), valid only for ε ∈ (0, 1).
3. ``"thesis"``: ``σ² = 2 S² log(2/δ) / ε²`` as printed, valid up to ε ≈ 8.5–10.3 by the exact δ
   (docs/science/errata.md, *erratum-gauss-calibration*).

Errors: an ε beyond :data:`ANALYTIC_MAX_EPSILON`, or a σ outside the normal doubles, is refused naming ε, δ and the
sensitivity.
"""
from __future__ import annotations

import math
import sys
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.optimize import brentq
from scipy.special import log_ndtr

from dpkit.core.rng import RNGLike, resolve_rng
from dpkit.core.validation import check_budget_fields, check_choice, check_delta, check_epsilon, check_sensitivity
from dpkit.mechanisms.base import AdditiveNoiseMechanism

__all__ = ["Gaussian", "gaussian_exact_delta", "analytic_gaussian_sigma", "CALIBRATIONS", "ANALYTIC_MAX_EPSILON",
           "check_analytic_budget"]

CALIBRATIONS = ("analytic", "classic", "thesis")


#: Below this share of |log Φ|, r = ε + log Φ(b) − log Φ(a) is not resolved by the difference of the two logs
#: (it keeps fewer than 26 of the doubles' 52 bits): :func:`_log_exact_delta` then takes the midpoint rule.
UNRESOLVED_R = 2.0 ** -26


def _log_exact_delta(sigma: float, epsilon: float, sensitivity: float) -> float:
    """log δ(σ) computed as log Φ(a) + log(1 − e^r), r = ε + log Φ(b) − log Φ(a).

    For a small ε with a small δ (σ ≫ S, e.g. ε = 1e-10 at δ = 1e-300) r is many orders below log Φ and the
    difference of the logs loses it (the calibration then under-noised by up to 10^58 in δ). There, with
    u = S/(2σ) ≪ 1 and v = εσ/S, r = ∫_b^a (v − h(x)) dx for h = φ/Φ (a − b = 2u, ε = 2uv), taken by the
    midpoint rule r = 2u (v − h(−v)) (relative error about u²/(6v²)). Elsewhere the direct difference is kept.
    """
    a = sensitivity / (2.0 * sigma) - epsilon * sigma / sensitivity
    b = -sensitivity / (2.0 * sigma) - epsilon * sigma / sensitivity
    la, lb = float(log_ndtr(a)), float(log_ndtr(b))
    r = epsilon + lb - la
    u = sensitivity / (2.0 * sigma)
    if abs(r) < UNRESOLVED_R * max(-la, -lb) and u < 2.0 ** -10:
        v = epsilon * sigma / sensitivity
        h = math.exp(-0.5 * v * v - 0.5 * math.log(2.0 * math.pi) - float(log_ndtr(-v)))
        r = 2.0 * u * (v - h)
    if r >= 0.0:  # only by round-off: the exact value is > 0 for finite σ
        return -math.inf
    return la + math.log(-math.expm1(r))


def gaussian_exact_delta(sigma: float, epsilon: float, sensitivity: float = 1.0) -> float:
    """Exact δ of the Gaussian mechanism ``f(D) + N(0, σ²I)`` at privacy level ε.

    Balle & Wang (2018, Thm 8); docs/science/foundations.md, *The Gaussian mechanism*:

    ``δ(ε) = Φ(S/(2σ) − εσ/S) − e^ε Φ(−S/(2σ) − εσ/S)``

    with S the L2 sensitivity. The mechanism is (ε, δ)-DP iff δ ≥ this value. Computed in
    log space (accurate for δ down to ~1e-300).

    Parameters
    ----------
    sigma : float
        Noise standard deviation (> 0).
    epsilon : float
        ε > 0 (finite).
    sensitivity : float, default 1
        L2 sensitivity S₂ (> 0).

    Examples
    --------
    >>> round(gaussian_exact_delta(1.0, 0.5, 1.0), 4)
    0.2384
    """
    s = check_sensitivity(sigma, name="sigma")
    eps = check_epsilon(epsilon)
    S = check_sensitivity(sensitivity)
    return float(math.exp(_log_exact_delta(s, eps, S)))


#: The largest ε :func:`analytic_gaussian_sigma` calibrates: 2^52. The exact δ(σ) is computed from
#: r = ε + log Φ(b) − log Φ(a), a sum of terms of about ε's size with opposite signs; from ε = 2^52 on the
#: doubles near ε are spaced ≥ 1, so r — and whether δ(σ) ≤ δ — is no longer resolved (the returned σ stops
#: passing its own exact check from about 2^57, and from about 7·10^153 log Φ is −∞ and the root search NaN).
ANALYTIC_MAX_EPSILON = 2.0 ** 52


#: The sensitivities S for which :func:`analytic_gaussian_sigma` searches σ directly: [2^-512, 2^512]. The search
#: evaluates ε·σ/S, S/(2σ) and exp(log S + c) with σ up to about S/δ; beyond these ends they leave the doubles
#: (overflow from about S = 2^970 at ε = 2^52 or δ = 1e-300, a division by zero below about 2^-1046). δ(σ)
#: depends on σ/S only, so outside them σ = S·σ(ε, δ, 1), the same calibration; ordinary sensitivities (inside)
#: keep the direct search and its numbers.
DIRECT_SENSITIVITY_RANGE = (2.0 ** -512, 2.0 ** 512)


def check_analytic_budget(epsilon: float, delta: float, *, name: str = "epsilon") -> None:
    """Refuse a finite ε above :data:`ANALYTIC_MAX_EPSILON` for the analytic Gaussian mechanism, naming ε and δ."""
    if math.isfinite(epsilon) and epsilon > ANALYTIC_MAX_EPSILON:
        raise ValueError(
            f"{name} must be in (0, {ANALYTIC_MAX_EPSILON:.6g}] for the analytic Gaussian mechanism at delta = "
            f"{delta:g}; got {name} = {epsilon:g}: its exact delta(sigma) adds {name} to log Phi terms of about its "
            f"size, and beyond 2^52 the doubles near {name} are spaced >= 1, so delta(sigma) is no longer resolved")


def analytic_gaussian_sigma(epsilon: float, delta: float, sensitivity: float = 1.0) -> float:
    """Smallest σ with exact δ(σ) ≤ δ (analytic Gaussian mechanism, Balle & Wang 2018).

    δ(σ) is strictly decreasing in σ; the root of ``log δ(σ) − log δ`` is found by
    :func:`scipy.optimize.brentq` (relative tolerance 1e-14) after bracketing. The returned σ
    is nudged up by one part in 1e12 so that δ(σ) ≤ δ holds despite round-off. ε is at most
    :data:`ANALYTIC_MAX_EPSILON` (a ValueError naming ε and δ otherwise).
    """
    eps = check_epsilon(epsilon)
    dl = check_delta(delta, allow_zero=False)
    check_analytic_budget(eps, dl)
    S = check_sensitivity(sensitivity)
    if not DIRECT_SENSITIVITY_RANGE[0] <= S <= DIRECT_SENSITIVITY_RANGE[1]:
        unit = analytic_gaussian_sigma(eps, dl, 1.0)  # δ(σ) depends on σ/S only
        sigma = S * unit
        if not sys.float_info.min <= sigma < math.inf:  # a subnormal σ would be rounded by up to half its size
            raise ValueError(f"epsilon = {eps:g}, delta = {dl:g} and sensitivity = {S:g} give the analytic Gaussian "
                             f"mechanism a noise std sigma = sensitivity * {unit:g}, which "
                             f"{'overflows' if S > 1 else 'underflows'} the normal doubles [{sys.float_info.min:.4g}, "
                             f"{sys.float_info.max:.4g}]: "
                             "use another budget or rescale the query")
        return sigma
    target = math.log(dl)

    def g(log_sigma: float) -> float:
        return _log_exact_delta(math.exp(log_sigma), eps, S) - target

    lo = math.log(S) - 5.0
    while g(lo) < 0.0:
        lo -= 5.0
    hi = math.log(S) + 1.0
    while g(hi) > 0.0:
        hi += 2.0
        if hi >= math.log(sys.float_info.max):  # σ beyond the doubles (a tiny ε with a tiny δ, or a huge S)
            raise ValueError(f"epsilon = {eps:g}, delta = {dl:g} and sensitivity = {S:g} give the analytic Gaussian "
                             f"mechanism a noise std sigma above the largest double {sys.float_info.max:.4g}: "
                             "use another budget or rescale the query")
    root = brentq(g, lo, hi, xtol=1e-15, rtol=1e-14, maxiter=500)
    return math.exp(root) * (1.0 + 1e-12)


@dataclass(frozen=True, kw_only=True)
class Gaussian(AdditiveNoiseMechanism):
    """The Gaussian mechanism ``f(D) + N(0, σ² I)``, (ε, δ)-DP (thesis Ex 1.3, D–R Thm 3.22).

    Parameters
    ----------
    epsilon : float
        ε > 0, finite (``"classic"`` additionally needs ε < 1).
    delta : float
        δ ∈ (0, 1).
    sensitivity : float
        L2 sensitivity ``S₂(f) = sup ‖f(D) − f(D')‖₂`` under ``neighbouring`` (> 0).
    calibration : {"analytic", "classic", "thesis"}, default "analytic"
        How σ is chosen (module docstring). ``"analytic"`` is the tightest valid σ.
    neighbouring : {"replace-one", "add-remove"}

    Raises
    ------
    ValueError
        For out-of-range parameters, and for ``calibration="classic"`` with ε ≥ 1
        (D–R Thm 3.22 holds only for ε ∈ (0, 1)).

    Notes
    -----
    ``release(value)`` returns ``value + N(0, σ²)`` per coordinate (same shape; a float for a
    scalar); with a ledger the spend (ε, δ) is recorded first.

    Examples
    --------
    >>> g = Gaussian(epsilon=0.5, delta=1e-5, sensitivity=1.0, calibration="classic")
    >>> round(g.sigma, 4)
    9.6896
    """

    epsilon: float
    delta: float
    sensitivity: float
    calibration: str = "analytic"

    def __post_init__(self) -> None:
        super().__post_init__()
        check_budget_fields(self, allow_zero_delta=False)
        object.__setattr__(self, "sensitivity", check_sensitivity(self.sensitivity, name="sensitivity"))
        check_choice(self.calibration, name="calibration", choices=CALIBRATIONS)
        if self.calibration == "classic" and not self.epsilon < 1.0:
            raise ValueError(
                f"epsilon must be in (0, 1) for calibration='classic' (Dwork–Roth Thm 3.22); got {self.epsilon}. "
                "Use calibration='analytic' for larger epsilon."
            )
        object.__setattr__(self, "_sigma", self._compute_sigma())

    def _compute_sigma(self) -> float:
        eps, dl, S = self.epsilon, self.delta, self.sensitivity
        if self.calibration == "thesis":
            return math.sqrt(2.0 * S**2 * math.log(2.0 / dl)) / eps
        if self.calibration == "classic":
            return S * math.sqrt(2.0 * math.log(1.25 / dl)) / eps
        return analytic_gaussian_sigma(eps, dl, S)

    @property
    def sigma(self) -> float:
        """Noise standard deviation σ."""
        return self._sigma  # type: ignore[attr-defined]

    @property
    def variance(self) -> float:
        """Per-coordinate noise variance σ²."""
        return self.sigma**2

    @property
    def mse(self) -> float:
        """Per-coordinate mean squared error (= σ²; the noise is unbiased)."""
        return self.variance

    @property
    def mean_abs_error(self) -> float:
        """Per-coordinate ``E|Z| = σ √(2/π)``."""
        return self.sigma * math.sqrt(2.0 / math.pi)

    def exact_delta(self, epsilon: float | None = None) -> float:
        """Exact δ of this σ at ``epsilon`` (default: the mechanism's ε); ≤ ``delta`` when valid."""
        return gaussian_exact_delta(self.sigma, self.epsilon if epsilon is None else epsilon, self.sensitivity)

    def _ledger_meta(self, x: np.ndarray) -> dict[str, Any]:
        return {"sigma": self.sigma, "calibration": self.calibration, "sensitivity": self.sensitivity}

    def _add_noise(self, x: np.ndarray, rng: RNGLike) -> np.ndarray:
        """``x + N(0, σ²)`` per entry."""
        return x + resolve_rng(rng).normal(0.0, self.sigma, size=x.shape)

    def params(self) -> dict[str, Any]:
        d = super().params()
        d.pop("_sigma", None)
        d["sigma"] = self.sigma
        return d
