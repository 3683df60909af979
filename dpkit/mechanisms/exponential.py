"""The exponential mechanism (thesis Alg 2 / Thm 1.14–1.15; D–R Thm 3.10–3.11) and Report Noisy Max (D–R Claim 3.9, Thm 3.13).

Both select an index ``r`` of a finite, **data-independent** range ``R`` given the utilities
``u(D, r)`` (D–R Ex. 3.5: the range must not depend on the data).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike
from scipy.special import logsumexp

from dpkit.core.accounting import Ledger
from dpkit.core.rng import RNGLike, resolve_rng
from dpkit.core.validation import (
    check_choice,
    check_epsilon,
    check_finite_array,
    check_positive_int,
    check_probability,
    check_sensitivity,
)
from dpkit.mechanisms.base import Mechanism

__all__ = ["Exponential", "ReportNoisyMax", "RNM_NOISES"]

RNM_NOISES = ("laplace", "exponential", "gumbel")


def _utilities(utilities: ArrayLike) -> np.ndarray:
    return check_finite_array(utilities, name="utilities", ndim=1, min_rows=1)


def _validate_selection(m: Mechanism) -> None:
    """Shared checks of the selection mechanisms: ε, utility sensitivity, monotone flag."""
    object.__setattr__(m, "epsilon", check_epsilon(getattr(m, "epsilon"), name="epsilon"))
    object.__setattr__(m, "sensitivity", check_sensitivity(getattr(m, "sensitivity"), name="sensitivity"))
    if not isinstance(getattr(m, "monotone"), (bool, np.bool_)):
        raise TypeError(f"monotone must be a bool; got {type(getattr(m, 'monotone')).__name__}")


@dataclass(frozen=True, kw_only=True)
class Exponential(Mechanism):
    """The exponential mechanism over a finite range (thesis Alg 2, Thm 1.14).

    ``P(r) ∝ exp(ε u(D, r) / (2Δ))`` — or ``exp(ε u(D, r)/Δ)`` when ``monotone=True``.

    Parameters
    ----------
    epsilon : float
        ε > 0, finite.
    sensitivity : float
        Utility sensitivity ``Δ = max_r max_{D∼D'} |u(D, r) − u(D', r)|`` (> 0).
    monotone : bool, default False
        Declare that for every neighbouring pair all utilities move in the same direction
        (e.g. counts under add-remove). Then the factor 2 can be dropped (McSherry–Talwar);
        **do not set it for general utilities**: the guarantee becomes 2ε.
    neighbouring : {"replace-one", "add-remove"}

    Notes
    -----
    Sampling is log-sum-exp stable: the log-probabilities ``ε u/(2Δ) − logsumexp(·)`` are
    formed first, so utilities of any magnitude work. Utility (thesis Thm 1.15 / D–R Thm 3.11):
    ``P(u* − u(M(D)) ≥ (2Δ/ε)(ln(|R|/|R*|) + t)) ≤ e^{−t}``, see :meth:`utility_gap`.

    Examples
    --------
    >>> m = Exponential(epsilon=2.0, sensitivity=1.0)
    >>> m.probabilities([0.0, 1.0]).round(4)
    array([0.2689, 0.7311])
    """

    epsilon: float
    sensitivity: float
    monotone: bool = False

    def __post_init__(self) -> None:
        super().__post_init__()
        _validate_selection(self)

    @property
    def delta(self) -> float:
        return 0.0

    @property
    def temperature(self) -> float:
        """Multiplier of the utility in the exponent: ``ε/(2Δ)`` (``ε/Δ`` if monotone)."""
        return self.epsilon / (self.sensitivity * (1.0 if self.monotone else 2.0))

    def log_probabilities(self, utilities: ArrayLike) -> np.ndarray:
        """``log P(r)`` for each entry of ``utilities`` (log-sum-exp normalised)."""
        z = self.temperature * _utilities(utilities)
        return z - logsumexp(z)

    def probabilities(self, utilities: ArrayLike) -> np.ndarray:
        """Exact output probabilities ``P(r)``; sums to 1."""
        return np.exp(self.log_probabilities(utilities))

    def sample(self, utilities: ArrayLike, size: int, *, rng: RNGLike = None) -> np.ndarray:
        """``size`` independent draws (indices; no ledger — for audits and exact checks)."""
        n = check_positive_int(size, name="size")
        p = self.probabilities(utilities)
        cdf = np.cumsum(p)
        cdf[-1] = 1.0
        idx = np.searchsorted(cdf, resolve_rng(rng).random(n), side="right")
        return np.minimum(idx, p.size - 1)

    def release(
        self, utilities: ArrayLike, *, rng: RNGLike = None, ledger: Ledger | None = None, name: str | None = None
    ) -> int:
        """Select one index ``r`` with probability ``P(r)``; spends (ε, 0) through ``ledger``."""
        u = _utilities(utilities)
        self._charge(ledger, name, size=int(u.size), monotone=bool(self.monotone))
        return int(self.sample(u, 1, rng=rng)[0])

    def utility_gap(self, beta: float, n_range: int, n_optimal: int = 1) -> float:
        """Thm 1.15 / D–R Thm 3.11: with prob. ≥ 1 − β the utility loss is below
        ``(2Δ/ε)(ln(|R|/|R*|) + ln(1/β))`` (``Δ/ε`` in place of ``2Δ/ε`` if monotone)."""
        b = check_probability(beta, name="beta")
        nr = check_positive_int(n_range, name="n_range")
        no = check_positive_int(n_optimal, name="n_optimal")
        if no > nr:
            raise ValueError(f"n_optimal must be in [1, n_range={nr}]; got {no}")
        return (math.log(nr / no) + math.log(1.0 / b)) / self.temperature


@dataclass(frozen=True, kw_only=True)
class ReportNoisyMax(Mechanism):
    """Report Noisy Max: ``argmax_r (u(D, r) + Z_r)``, only the index is released (D–R §3.3–3.4).

    Parameters
    ----------
    epsilon : float
        ε > 0, finite.
    sensitivity : float
        Utility sensitivity Δ (> 0).
    noise : {"laplace", "exponential", "gumbel"}, default "laplace"
        ``"laplace"``: ``Lap(2Δ/ε)`` (general), ``Lap(Δ/ε)`` (monotone; D–R Claim 3.9).
        ``"exponential"``: one-sided ``Exp`` with scale ``2Δ/ε`` / ``Δ/ε`` (rate ε/(2Δ) / ε/Δ;
        D–R Thm 3.13, "report one-sided noisy arg-max"). ``"gumbel"``: ``Gumbel(2Δ/ε)`` /
        ``Gumbel(Δ/ε)``, which samples **exactly** the exponential mechanism's law (D–R Remark 3.1).
    monotone : bool, default False
        Declare monotone neighbours (all utilities move in the same direction, e.g. counting
        queries under add-remove).

    Notes
    -----
    **The subtlety.** D–R Claim 3.9 proves ε-DP of ``Lap(1/ε)`` noise for *counting queries*:
    its proof uses both the Lipschitz property and **monotonicity** (``c_i ≥ c'_i`` for all i
    when D = D' ∪ {a}). For general sensitivity-Δ utilities, where one neighbour can raise some
    scores and lower others (e.g. any replace-one histogram), ``Lap(Δ/ε)`` is only 2ε-DP: exact
    quadrature on ±1 shifts gives a log-ratio of 1.9999 at ε = 1 (docs/science/foundations.md). A general-purpose
    function therefore uses ``Lap(2Δ/ε)`` unless ``monotone=True`` is declared, and the same
    factor 2 applies to the one-sided exponential and Gumbel variants.
    """

    epsilon: float
    sensitivity: float
    noise: str = "laplace"
    monotone: bool = False

    def __post_init__(self) -> None:
        super().__post_init__()
        _validate_selection(self)
        check_choice(self.noise, name="noise", choices=RNM_NOISES)

    @property
    def delta(self) -> float:
        return 0.0

    @property
    def scale(self) -> float:
        """Noise scale: ``2Δ/ε`` in general, ``Δ/ε`` for monotone utilities."""
        return self.sensitivity * (1.0 if self.monotone else 2.0) / self.epsilon

    def sample(self, utilities: ArrayLike, size: int, *, rng: RNGLike = None) -> np.ndarray:
        """``size`` independent runs (indices; no ledger — for audits). Ties go to the lowest index."""
        u = _utilities(utilities)
        n = check_positive_int(size, name="size")
        g = resolve_rng(rng)
        out = np.empty(n, dtype=int)
        block = max(1, 4_000_000 // u.size)
        for s in range(0, n, block):
            m = min(block, n - s)
            if self.noise == "laplace":
                z = g.laplace(0.0, self.scale, size=(m, u.size))
            elif self.noise == "exponential":
                z = g.exponential(self.scale, size=(m, u.size))
            else:
                z = g.gumbel(0.0, self.scale, size=(m, u.size))
            out[s : s + m] = np.argmax(u[None, :] + z, axis=1)
        return out

    def release(
        self, utilities: ArrayLike, *, rng: RNGLike = None, ledger: Ledger | None = None, name: str | None = None
    ) -> int:
        """Return the index of the noisy maximum; spends (ε, 0) through ``ledger``."""
        u = _utilities(utilities)
        self._charge(ledger, name, noise=self.noise, scale=self.scale, monotone=bool(self.monotone), size=int(u.size))
        return int(self.sample(u, 1, rng=rng)[0])
