"""The privacy of a method's whole composition, and the calibration of its noise at the limit of (ε, δ).

:func:`composed_delta` bounds the δ(ε) of a composition of :class:`Step` s (Gaussian, Laplace, selections);
:func:`calibrate` finds the one noise factor ``t`` that meets (ε, δ) (docs/science/accounting.md).

Algorithm
---------
1. Gaussian releases compose exactly as Gaussian DP (Dong, Roth & Su 2022), with the analytic Gaussian's privacy
   profile (Balle & Wang 2018); a composition of Gaussians only is calibrated in closed form.
2. Anything else is composed through privacy loss distributions by ``dp_accounting.pld``, discretised pessimistically.
   A selection of ε enters by the dominating pair of every ε-bounded-range mechanism (:func:`selection_loss_cdf`):
   its trade-off function is ``g(α) = (1 − α)/(1 + (e^ε − 1)α)``, whose privacy profile is the optimal one of a
   single round (Dong, Durfee & Rogers 2020), about half the generic ε-DP pair's δ(0) at ε = 1; rounds chosen
   adaptively compose by the composition theorem of f-DP (Dong, Roth & Su 2022), each round's ε fixed in advance.
3. The δ returned is the smaller of the PLD's and the zCDP bound of the whole composition (a selection is also
   ε²/8-zCDP); beyond :data:`MAX_PLD_RANGE` (or where ``dp-accounting`` cannot build the grid, a Gaussian of
   almost no noise at an extreme budget) only the zCDP bound is computed.
4. The calibration is a deterministic bisection on log t, returning the feasible end (bit-identical run to run).

References
----------
Dong, Durfee & Rogers (2020), "Optimal differential privacy composition for exponential mechanisms", ICML.
Dong, Roth & Su (2022), "Gaussian differential privacy", JRSS-B. Balle & Wang (2018), "Improving the Gaussian
mechanism for differential privacy", ICML. Meiser & Mohammadi (2018); Koskela, Jälkö & Honkela (2020) (PLD
accounting); Google's dp-accounting (``dp_accounting.pld``). Cesar & Rogers (2021), "Bounding, concentrating,
and truncating: unifying privacy loss composition for data analytics". Canonne, Kamath & Steinke (2020).
"""
from __future__ import annotations

import functools
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from scipy.special import log_ndtr, ndtr

from dpkit.core.validation import check_choice, check_delta, check_epsilon, check_positive_int, check_real_in_range
from dpkit.core.zcdp import cdp_delta

__all__ = ["ACCOUNTINGS", "STEP_KINDS", "DISCRETISATION", "MAX_PLD_RANGE", "Step", "gaussian", "laplace", "selection",
           "gaussian_mu", "selection_loss_cdf", "selection_delta", "selection_gdp_mu",
           "selection_epsilon_for_gdp", "MIN_CERTIFIED_SELECTION", "MAX_CERTIFIED_SELECTION",
           "composed_delta",
           "composed_epsilon", "calibrate", "plan_factor", "CalibrationError", "check_accounting"]

#: The accountings a (ε, δ) method can calibrate by: ``"pld"`` (this module: the exact composition),
#: ``"zcdp"`` (ρ-zCDP converted by Canonne–Kamath–Steinke, as MST and AIM are published), ``"split"``
#: (basic composition of per-step (ε/k, δ/k) shares, each step calibrated on its own, as the thesis prints).
ACCOUNTINGS = ("pld", "zcdp", "split")
#: The kinds of a :class:`Step`.
STEP_KINDS = ("gaussian", "laplace", "selection")
#: The PLD's loss grid spacing (pessimistic: a coarser grid only makes δ larger).
DISCRETISATION = 1e-3
#: The widest composed loss (Σ of the Laplace and selection steps' ε, and the Gaussian part's ±10 standard deviations)
#: the PLD discretises: 64, i.e. 64 000 grid points (a second's work). Beyond it (budgets of tens of ε per step, or a
#: nearly noiseless Gaussian) only the zCDP bound is computed.
MAX_PLD_RANGE = 64.0


def check_accounting(accounting: str, *, allowed: Sequence[str] = ACCOUNTINGS, name: str = "accounting") -> str:
    """Validate a method's ``accounting`` keyword (a ValueError naming the parameter and the allowed values)."""
    return check_choice(accounting, name=name, choices=tuple(allowed))


@dataclass(frozen=True)
class Step:
    """One kind of measurement of a method, ``count`` times.

    Attributes
    ----------
    kind : {"gaussian", "laplace", "selection"}
    scale : float
        Gaussian: the noise multiplier ``σ/Δ₂`` (Δ₂ the replace-one L2 sensitivity); Laplace: ``b/Δ₁``; selection:
        the ε of one round of an ε-bounded-range selection: the exponential mechanism ``∝ exp(ε u/(2Δ))`` (or
        report-noisy-max with Gumbel noise, the same law); report-noisy-max with Laplace or exponential noise is ε-DP
        but not ε-bounded range, and is not such a step. ``math.inf`` noise (or a selection's ε = 0) is a step that
        reveals nothing.
    count : int
        How many such measurements compose.
    name : str
        A label for reports.
    """

    kind: str
    scale: float
    count: int = 1
    name: str = ""

    def __post_init__(self) -> None:
        check_choice(self.kind, name="kind", choices=STEP_KINDS)
        check_real_in_range(self.scale, name="scale", low=0.0, low_inclusive=self.kind == "selection")
        check_positive_int(self.count, name="count")

    def scaled(self, t: float) -> Step:
        """The step with its noise times ``t`` (a selection's ε divided by ``t``)."""
        s = self.scale / t if self.kind == "selection" else self.scale * t
        return Step(self.kind, s, self.count, self.name)

    @property
    def rho(self) -> float:
        """The step's zCDP ρ (all ``count`` of them): μ²/2 Gaussian, ε²/2 Laplace, ε²/8 selection."""
        try:
            if self.kind in ("gaussian", "laplace"):
                return self.count * 0.5 * (1.0 / self.scale) ** 2
            return self.count * self.scale ** 2 / 8.0
        except OverflowError:  # a noise near 0 (an extreme budget): no finite ρ
            return math.inf


def gaussian(noise_multiplier: float, count: int = 1, name: str = "") -> Step:
    """A Gaussian release with noise std ``noise_multiplier`` times its L2 sensitivity (``count`` times)."""
    return Step("gaussian", noise_multiplier, count, name)


def laplace(scale_over_sensitivity: float, count: int = 1, name: str = "") -> Step:
    """A Laplace release with scale ``scale_over_sensitivity`` times its L1 sensitivity (``count`` times)."""
    return Step("laplace", scale_over_sensitivity, count, name)


def selection(epsilon: float, count: int = 1, name: str = "") -> Step:
    """``count`` selections, each ε-bounded range (the exponential mechanism; :class:`Step`)."""
    return Step("selection", epsilon, count, name)


#: Below it the squares of :func:`gaussian_mu` may have underflowed: it is computed again, scaled.
_MU_UNDERFLOW = 1e-150


def gaussian_mu(steps: Iterable[Step]) -> float:
    """μ of the Gaussian steps composed (Gaussian DP): ``√(Σ count·(1/σᵢ)²)``. Where the squares underflow (noise
    multipliers beyond about 10¹⁵⁰, met at extreme budgets) the sum is scaled by the largest 1/σᵢ first, so a
    tiny μ is never rounded to 0 (which would calibrate to no noise at all)."""
    inv = [(s.count, 1.0 / s.scale) for s in steps if s.kind == "gaussian"]
    mu = math.sqrt(math.fsum(c * v ** 2 for c, v in inv))
    if mu >= _MU_UNDERFLOW or not inv:
        return mu
    top = max(v for _, v in inv)
    return 0.0 if top == 0.0 else top * math.sqrt(math.fsum(c * (v / top) ** 2 for c, v in inv))


#: Below this μ the log-difference of :func:`_gdp_delta` cancels (its terms agree to within a double's resolution).
_GDP_SMALL_MU = 1e-6
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)


def _gdp_delta(mu: float, epsilon: float) -> float:
    """The exact δ(ε) of μ-GDP (the analytic Gaussian's profile), in logs for stability; for μ below
    :data:`_GDP_SMALL_MU`, where that difference cancels, the smaller of two upper bounds, each increasing in μ:
    δ(ε) ≤ δ(0) = 2Φ(μ/2) − 1 ≤ μ/√(2π), and δ(ε) ≤ Φ(−ε/μ + μ/2) (the profile without its negative term). Met only
    at extreme budgets; a bound never calibrates too little noise."""
    if mu == 0.0:
        return 0.0
    if mu < _GDP_SMALL_MU:
        return float(min(1.0, mu * _INV_SQRT_2PI, ndtr(-epsilon / mu + mu / 2.0)))
    a = log_ndtr(-epsilon / mu + mu / 2.0)
    b = epsilon + log_ndtr(-epsilon / mu - mu / 2.0)
    return float(max(math.exp(a) * -math.expm1(b - a), 0.0)) if b < a else 0.0


def selection_loss_cdf(loss: Any, epsilon: float) -> Any:
    """The distribution function of the privacy loss of the dominating pair of every ε-bounded-range mechanism
    (an ε selection: the exponential mechanism ``∝ exp(ε u/(2Δ))``, report-noisy-max), under its first law:
    ``P(L ≤ ℓ) = (e^{(ℓ+ε)/2} − 1)/(e^ε − 1)`` on ``[−ε, ε]`` (0 below, 1 above).

    Derivation. A mechanism is ε-bounded range when, for neighbours D, D', its privacy loss ``log dP/dQ`` lies in
    an interval ``[t − ε, t]`` with ``t ∈ [0, ε]``. Its trade-off function ``T(P, Q)`` is convex from (0, 1) to
    (1, 0) with slopes in ``[−e^{ε−t}, −e^{−t}]``, hence at least ``f_t(α) = max(1 − e^{ε−t}α, e^{−t}(1 − α))``,
    the trade-off of the generalized randomized response with losses ``t`` and ``t − ε`` (Dong, Durfee & Rogers
    2020). The kink of ``f_t`` is at ``x = (e^t − 1)/(e^ε − 1)``, ``y = (1 − x)/(1 + (e^ε − 1)x)``; this locus
    ``g(α) = (1 − α)/(1 + (e^ε − 1)α)`` is convex and each ``f_t`` consists of two chords of it, so
    ``min_t f_t = g``: every ε-bounded-range mechanism is g-DP, and no smaller trade-off function holds for all of
    them. g is symmetric (its inverse has the same form), so one law serves both orders of the neighbours. A pair
    with trade-off g: P uniform on α ∈ [0, 1], loss ``L(α) = −log(−g'(α)) = 2 log(1 + (e^ε − 1)α) − ε``, whose
    distribution function is the one returned. Its δ(ε') is the optimal single-round profile ``max_t δ_t(ε')``
    (the convex conjugate of a minimum is the maximum of the conjugates): ``δ_t(ε') = q_t (e^t − e^{ε'})`` with
    ``q_t = (e^ε − e^t)/(e^t (e^ε − 1))`` is largest at ``e^t = e^{(ε+ε')/2}``, so
    ``δ(ε') = (e^{ε/2} − e^{ε'/2})² / (e^ε − 1)`` for ``0 ≤ ε' ≤ ε`` (0 beyond).

    Parameters
    ----------
    loss : float or array
        Loss values ℓ.
    epsilon : float
        The selection's ε (> 0).

    Returns
    -------
    float or array
        ``P(L ≤ ℓ)``.
    """
    import numpy as np

    ell = np.clip(np.asarray(loss, dtype=float), -epsilon, epsilon)
    return np.expm1((ell + epsilon) / 2.0) / math.expm1(epsilon)


def selection_delta(epsilon: float, eps_prime: float) -> float:
    """The privacy profile of one ε selection at its bounded-range limit (:func:`selection_loss_cdf`):
    ``δ(ε') = (e^{ε/2} − e^{ε'/2})² / (e^ε − 1)`` for ``0 ≤ ε' ≤ ε``, 0 beyond (ε > 0 finite, ε' ≥ 0)."""
    eps = check_epsilon(epsilon, name="epsilon")
    ep = check_real_in_range(eps_prime, name="eps_prime", low=0.0)
    if ep >= eps:
        return 0.0
    if eps > 700.0:  # the same value, without e^ε (it overflows beyond about 709)
        return math.expm1((ep - eps) / 2.0) ** 2 / -math.expm1(-eps)
    return (math.exp(eps / 2.0) - math.exp(ep / 2.0)) ** 2 / math.expm1(eps)


#: The least selection ε :func:`selection_gdp_mu` certifies: below it μ falls under the analytic Gaussian profile's
#: reach in double precision (about 10⁻⁶, :data:`_GDP_SMALL_MU`), where a certificate would need a lower bound on it.
MIN_CERTIFIED_SELECTION = 1e-4
#: The largest selection ε :func:`selection_gdp_mu` certifies: beyond it the selection's profile rounds to 1.
MAX_CERTIFIED_SELECTION = 20.0
#: Grid intervals of :func:`selection_gdp_mu`'s certificate over ε' ∈ [0, ε].
_GDP_CERT_GRID = 4000


def _gdp_deltas(mu: float, eps: Any) -> Any:
    """:func:`_gdp_delta` at every ε of an array (the same formula, vectorised)."""
    import numpy as np

    a = log_ndtr(-eps / mu + mu / 2.0)
    b = eps + log_ndtr(-eps / mu - mu / 2.0)
    return np.where(b < a, np.exp(a) * -np.expm1(np.minimum(b - a, 0.0)), 0.0)


def _dominates(mu: float, grid: Any, sel: Any) -> bool:
    """μ-GDP's profile above the selection's on every interval of ``grid`` (both decrease in ε': the selection's
    at the interval's left end against μ-GDP's at its right end), with a relative 10⁻⁹ for rounding."""
    return bool((sel[:-1] * (1.0 + 1e-9) <= _gdp_deltas(mu, grid[1:])).all())


@functools.lru_cache(maxsize=256)
def selection_gdp_mu(epsilon: float) -> float:
    """A certified μ for which one ε selection (ε-bounded range) is μ-Gaussian DP: its trade-off function
    (:func:`selection_loss_cdf`) lies above ``G_μ``.

    Both trade-off functions are symmetric, so this holds when the selection's privacy profile
    (:func:`selection_delta`) is at most μ-GDP's at every ε' ≥ 0 (Dong, Roth & Su 2022, the primal–dual view); both
    decrease in ε', and the selection's is 0 beyond ε. The certificate checks it on a grid of
    :data:`_GDP_CERT_GRID` intervals of [0, ε], each interval's left end of the selection's profile against the right
    end of μ-GDP's, which implies it everywhere; a bisection on μ returns the end that passes. The result lies
    slightly above the smallest such μ (about 0.624 ε at ε = 1, tending to √(π/8) ε ≈ 0.627 ε as ε → 0), which
    zCDP's ε²/8 would put at ε/2 if it were a GDP bound (it is not: zCDP does not imply (ε/2)-GDP).

    Parameters
    ----------
    epsilon : float
        The selection's ε (> 0, finite).

    Returns
    -------
    float
        μ.
    """
    import numpy as np

    eps = check_epsilon(epsilon, name="epsilon")
    if eps < MIN_CERTIFIED_SELECTION:
        raise ValueError(f"epsilon = {eps!r} of a selection is below {MIN_CERTIFIED_SELECTION:g}, where its Gaussian-DP "
                         "parameter cannot be certified in double precision (the Gaussian profile cancels); use a "
                         "larger epsilon")
    if eps > MAX_CERTIFIED_SELECTION:
        raise ValueError(f"epsilon = {eps!r} of a selection is above {MAX_CERTIFIED_SELECTION:g}, where its privacy "
                         "profile is 1 to double precision and no Gaussian-DP parameter can be certified; use a "
                         "smaller epsilon")
    grid = eps * np.arange(_GDP_CERT_GRID + 1) / _GDP_CERT_GRID
    sel = np.array([selection_delta(eps, float(x)) for x in grid])
    lo, hi = 0.5 * eps, 2.0 * eps  # hi only ever takes values that pass: the result is certified whatever lo is
    while not _dominates(hi, grid, sel):
        hi *= 2.0
    while hi - lo > 1e-9 * hi:
        mid = 0.5 * (lo + hi)
        if _dominates(mid, grid, sel):
            hi = mid
        else:
            lo = mid
    return hi


@functools.lru_cache(maxsize=4096)
def selection_epsilon_for_gdp(mu: float) -> float:
    """The largest selection ε (to a relative 10⁻⁹, the end that holds) whose certified μ
    (:func:`selection_gdp_mu`) is at most ``mu``: the ε a Gaussian-DP filter can spend on a selection given a μ.

    Raises
    ------
    ValueError
        For ``mu`` not finite and > 0.
    """
    mu = check_real_in_range(mu, name="mu", low=0.0, low_inclusive=False)
    if not math.isfinite(mu):
        raise ValueError(f"mu must be finite; got {mu!r}")
    if mu < selection_gdp_mu(MIN_CERTIFIED_SELECTION):
        raise ValueError(f"a selection of Gaussian-DP mu = {mu!r} would need epsilon below "
                         f"{MIN_CERTIFIED_SELECTION:g}, which cannot be certified; use a larger epsilon or delta")
    # μ(ε) < ε, so ε = max(μ, the floor) holds (μ(floor) ≤ μ); hi is grown until it does not
    if mu >= selection_gdp_mu(MAX_CERTIFIED_SELECTION):
        raise ValueError(f"a selection of Gaussian-DP mu = {mu!r} would need epsilon above {MAX_CERTIFIED_SELECTION:g}, "
                         "which cannot be certified; use a smaller epsilon")
    lo = max(mu, MIN_CERTIFIED_SELECTION)
    hi = min(2.0 * lo, MAX_CERTIFIED_SELECTION)
    while selection_gdp_mu(hi) <= mu:  # stops before the ceiling: μ < μ(MAX_CERTIFIED_SELECTION)
        hi = min(2.0 * hi, MAX_CERTIFIED_SELECTION)
    while hi - lo > 1e-9 * lo:
        mid = 0.5 * (lo + hi)
        if selection_gdp_mu(mid) <= mu:
            lo = mid
        else:
            hi = mid
    return lo


def _selection_pld(epsilon: float, h: float) -> Any:
    """The PLD of :func:`selection_loss_cdf` on the grid ``h·ℤ``, pessimistic: the mass of ``((j − 1)h, jh]`` is put
    at ``jh`` (δ(ε') = E[(1 − e^{ε'−L})₊] grows with L, so rounding up only makes δ larger)."""
    import numpy as np
    from dp_accounting.pld import privacy_loss_distribution as pld

    idx = np.arange(math.floor(-epsilon / h), math.ceil(epsilon / h) + 1)
    mass = np.diff(selection_loss_cdf(idx * h, epsilon))
    pmf = {int(j): float(m) for j, m in zip(idx[1:], mass) if m > 0}
    return pld.PrivacyLossDistribution.create_from_rounded_probability(pmf, 0.0, h, pessimistic_estimate=True,
                                                                       symmetric=True)


def _pld_delta(steps: tuple[Step, ...], epsilon: float) -> float:
    # imported where used: half a second to load, needed only by compositions that are not Gaussian only
    from dp_accounting.pld import privacy_loss_distribution as pld

    h = DISCRETISATION
    parts = []
    mu = gaussian_mu(steps)
    if mu > 0:
        parts.append(pld.from_gaussian_mechanism(1.0 / mu, value_discretization_interval=h, pessimistic_estimate=True))
    for s in steps:
        if s.kind == "laplace" and math.isfinite(s.scale):
            one = pld.from_laplace_mechanism(s.scale, value_discretization_interval=h, pessimistic_estimate=True)
        elif s.kind == "selection" and s.scale > 0:
            one = _selection_pld(s.scale, h)
        else:
            continue
        parts.append(one.self_compose(s.count) if s.count > 1 else one)
    if not parts:
        return 0.0
    total = parts[0]
    for p in parts[1:]:
        total = total.compose(p)
    return float(min(max(total.get_delta_for_epsilon(epsilon), 0.0), 1.0))


def _live(steps: Iterable[Step]) -> tuple[Step, ...]:
    return tuple(s for s in steps if not (math.isinf(s.scale) or (s.kind == "selection" and s.scale == 0.0)))


@functools.lru_cache(maxsize=4096)
def _delta(steps: tuple[Step, ...], epsilon: float, rule: str) -> float:
    steps = _live(steps)
    if not steps:
        return 0.0
    if rule == "zcdp":
        return _zcdp_delta(steps, epsilon)
    if rule == "max-gaussian":  # a negative control: composes Gaussians with μ = max μᵢ (too tight, wrong)
        mu = max(1.0 / s.scale for s in steps if s.kind == "gaussian")
        return _gdp_delta(mu, epsilon)
    if all(s.kind == "gaussian" for s in steps):
        return _gdp_delta(gaussian_mu(steps), epsilon)
    d_zcdp = _zcdp_delta(steps, epsilon)
    if _pld_range(steps) > MAX_PLD_RANGE:  # the PLD's grid would not fit: the zCDP bound alone (module docstring)
        return d_zcdp
    try:
        d_pld = _pld_delta(steps, epsilon)
    except (ValueError, MemoryError, OverflowError):  # a Gaussian so sharp that its PLD's grid cannot be built
        return d_zcdp
    return min(d_pld, d_zcdp)


#: A composition's ρ below this may have underflowed (a step's ρ is a square): no zCDP bound is taken from it.
_RHO_FLOOR = 1e-290


def _zcdp_delta(steps: tuple[Step, ...], epsilon: float) -> float:
    """The zCDP bound of the composition (every step's ρ added up, converted); 1 (no bound) for an infinite ρ, and
    for a ρ below :data:`_RHO_FLOOR` where the live steps' squares may have underflowed to 0 (met only at extreme
    budgets; a ρ of 0 would certify any noise)."""
    rho = math.fsum(s.rho for s in steps)
    if math.isinf(rho) or (rho < _RHO_FLOOR and _live(steps)):
        return 1.0
    return cdp_delta(rho, epsilon)


#: Standard deviations of the Gaussian part's privacy loss counted in :func:`_pld_range` on either side (the
#: dp-accounting Gaussian PLD keeps the loss up to a tail mass of about e⁻⁵⁰, i.e. 10 standard deviations).
_GAUSSIAN_LOSS_SDS = 10.0


def _pld_range(steps: tuple[Step, ...]) -> float:
    """The width of the composed privacy loss's support that the PLD discretises: ε for each Laplace and selection
    step, and ``2·10·μ`` for the Gaussian part (its loss is N(μ²/2, μ²) for composed μ, kept to 10 standard deviations
    either side), so that a nearly noiseless Gaussian (a huge μ, at a δ near 1) is not discretised on a grid of
    millions of points: the zCDP bound is used there instead."""
    width = math.fsum(s.count / s.scale if s.kind == "laplace" else s.count * s.scale
                      for s in steps if s.kind != "gaussian")
    rho = math.fsum(s.rho for s in steps if s.kind == "gaussian")  # μ²/2, infinite where 1/σ² overflows
    return width + 2.0 * _GAUSSIAN_LOSS_SDS * math.sqrt(2.0 * rho)


def composed_delta(steps: Iterable[Step], epsilon: float, *, rule: str = "pld") -> float:
    """An upper bound on δ(ε) of the composition of ``steps`` (module docstring).

    Parameters
    ----------
    steps : iterable of Step
    epsilon : float
        ε ≥ 0.
    rule : {"pld", "zcdp"}
        ``"pld"``: the exact Gaussian composition / PLD (default); ``"zcdp"``: every step's ρ added up and converted
        (the published accounting of MST and AIM).

    Examples
    --------
    >>> round(composed_delta([gaussian(2.0), gaussian(2.0)], 1.0), 6) == round(composed_delta([gaussian(2 ** 0.5)], 1.0), 6)
    True
    """
    eps = check_real_in_range(epsilon, name="epsilon", low=0.0)
    check_choice(rule, name="rule", choices=("pld", "zcdp", "max-gaussian"))
    return _delta(tuple(steps), eps, rule)


def composed_epsilon(steps: Iterable[Step], delta: float, *, rule: str = "pld") -> float:
    """The smallest ε (to a relative 10⁻⁹, the valid end) with :func:`composed_delta` ``≤ delta``."""
    dl = check_delta(delta, allow_zero=False, name="delta")
    st = tuple(steps)
    if composed_delta(st, 0.0, rule=rule) <= dl:
        return 0.0
    hi = 1.0
    while composed_delta(st, hi, rule=rule) > dl:
        hi *= 2.0
    lo = 0.0
    while hi - lo > 1e-9 * hi:
        mid = 0.5 * (lo + hi)
        if composed_delta(st, mid, rule=rule) <= dl:
            hi = mid
        else:
            lo = mid
    return hi


#: The bisection's range of the factor t: [2⁻⁶⁰, 2⁶⁰].
_T_RANGE = (2.0 ** -60, 2.0 ** 60)


@functools.lru_cache(maxsize=1024)
def _calibrate(unit: tuple[Step, ...], epsilon: float, delta: float, rule: str) -> float:
    live = _live(unit)
    if not live:
        return 0.0
    if rule == "pld" and all(s.kind == "gaussian" for s in live):
        return gaussian_mu(live) * _unit_gaussian_sigma(epsilon, delta)  # t scales every σᵢ: μ(t) = μ(1)/t
    return _bisect(live, epsilon, delta, rule)


def _unit_gaussian_sigma(epsilon: float, delta: float) -> float:
    """The smallest σ (sensitivity 1) with the exact Gaussian profile δ(ε) ≤ δ (the analytic Gaussian mechanism's σ):
    bisection on log σ in [−700, 700] to a relative 10⁻¹², returning the valid end."""
    def ok(log_sigma: float) -> bool:
        return _gdp_delta(math.exp(-log_sigma), epsilon) <= delta

    lo, hi = -700.0, 700.0
    if ok(lo):
        return math.exp(lo)
    if not ok(hi):
        raise ValueError(f"no Gaussian noise std up to e^700 meets epsilon = {epsilon:g}, delta = {delta:g}; "
                         "use a larger epsilon or delta")
    while hi - lo > 1e-12:
        mid = 0.5 * (lo + hi)
        if ok(mid):
            hi = mid
        else:
            lo = mid
    return math.exp(hi)


def _bisect(live: tuple[Step, ...], epsilon: float, delta: float, rule: str) -> float:
    def ok(t: float) -> bool:
        return _delta(tuple(s.scaled(t) for s in live), epsilon, rule) <= delta

    lo, hi = _T_RANGE
    if ok(lo):
        return lo  # even 2⁻⁶⁰ times the noise meets (ε, δ): a valid (not the smallest) factor
    if not ok(hi):
        raise CalibrationError(f"no noise up to 2^60 times the plan's meets epsilon = {epsilon:g}, delta = {delta:g} under "
                         f"the {rule} accounting; use a larger epsilon or delta")
    while hi / lo - 1.0 > 1e-9:
        mid = math.sqrt(lo * hi)
        if ok(mid):
            hi = mid
        else:
            lo = mid
    return hi


class CalibrationError(ValueError):
    """No factor ``t`` in ``[2⁻⁶⁰, 2⁶⁰]`` makes the composition meet (ε, δ) under the rule (:func:`calibrate`)."""


def plan_factor(unit_steps: Sequence[Step], epsilon: float, delta: float) -> float:
    """The factor a method with a published split plan applies to its noise: ``min(1, t)`` with ``t`` from
    :func:`calibrate` (``"pld"``).

    ``unit_steps`` are the published plan's measurements, whose composition meets (ε, δ) by the published
    accounting, so ``t = 1`` is always valid: the exact composition can only lower the noise. Where the accountant
    certifies no factor at all (:class:`CalibrationError`, at budgets so extreme that its numbers break down), the
    published plan stands (factor 1).

    Parameters
    ----------
    unit_steps : sequence of Step
        The published plan's measurements.
    epsilon, delta : float
        The budget (as :func:`calibrate`).

    Returns
    -------
    float
        A factor in ``(0, 1]``.
    """
    try:
        return min(1.0, calibrate(unit_steps, epsilon, delta))
    except CalibrationError:
        return 1.0


def calibrate(unit_steps: Sequence[Step], epsilon: float, delta: float, *, rule: str = "pld") -> float:
    """The smallest factor ``t`` with ``composed_delta([s.scaled(t) for s in unit_steps], ε) ≤ δ``.

    Parameters
    ----------
    unit_steps : sequence of Step
        The method's measurements at ``t = 1``: their relative noise (how the method splits its budget).
    epsilon, delta : float
        The budget (ε > 0 finite, δ in (0, 1)).
    rule : {"pld", "zcdp"}
        As in :func:`composed_delta`.

    Returns
    -------
    float
        ``t``: multiply every noise multiplier by it (divide every selection's ε by it). Gaussian-only compositions
        are solved in closed form (module docstring), anything else by bisection on log t to a relative 10⁻⁹,
        returning the end that meets (ε, δ).

    Raises
    ------
    ValueError
        For ε not finite and > 0, δ not in (0, 1), or an unknown rule (each named).
    CalibrationError
        A ValueError: no factor in ``[2⁻⁶⁰, 2⁶⁰]`` meets (ε, δ).

    Examples
    --------
    Two Gaussian releases of equal sensitivity at (1, 10⁻³): each gets √2 times the one-release σ.

    >>> t1 = calibrate([gaussian(1.0)], 1.0, 1e-3)
    >>> t2 = calibrate([gaussian(1.0), gaussian(1.0)], 1.0, 1e-3)
    >>> round(t2 / t1, 9) == round(2 ** 0.5, 9)
    True
    """
    eps = check_epsilon(epsilon, name="epsilon")
    dl = check_delta(delta, allow_zero=False, name="delta")
    check_choice(rule, name="rule", choices=("pld", "zcdp", "max-gaussian"))
    t = _calibrate(tuple(unit_steps), eps, dl, rule)
    if not (t > 0.0 and math.isfinite(t)) and _live(tuple(unit_steps)):
        # a factor of 0 would release without noise, an infinite one without signal: never a calibration
        raise CalibrationError(f"no positive finite factor found at epsilon={eps!r}, delta={dl!r} (got t={t!r})")
    return t
