"""Answering k queries with Laplace noise: thesis Prop 1.7 (Laplace I), Prop 1.12 (Laplace II), Prop 1.13 (accuracy).

1. :class:`LaplaceI`: ``Lap(Δk/ε)`` on each of k queries, ε-DP by basic composition (Prop 1.7).
2. :class:`LaplaceII`: (ε, δ)-DP; ``"advanced"`` (default) takes the largest ε₀ whose Thm 1.11 composition is ≤ ε
   (provably (ε, δ)-DP); ``"thesis"`` is the printed ``Lap(Δ√(2k log(1/δ))/ε)``, whose proof has an erratum
   (docs/science/errata.md) though exact accounting (:func:`dpkit.core.pld.laplace_composition_delta`) shows it
   private.
3. Accuracy (Prop 1.13): :func:`laplace_I_error_bound`, :func:`laplace_II_error_bound`,
   :func:`laplace_max_error_bound`: ``max_i |Z_i| ≤ b ln(k/β)`` with probability ≥ 1 − β.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from dpkit.core.accounting import Ledger
from dpkit.core.composition import per_step_epsilon
from dpkit.core.rng import RNGLike, resolve_rng
from dpkit.core.validation import (
    check_budget_fields,
    check_choice,
    check_delta,
    check_epsilon,
    check_finite_array,
    check_positive_int,
    check_probability,
    check_sensitivity,
)
from dpkit.mechanisms.base import Mechanism
from dpkit.mechanisms.laplace import Laplace

__all__ = [
    "LaplaceI",
    "LaplaceII",
    "laplace_I",
    "laplace_max_error_bound",
    "laplace_I_error_bound",
    "laplace_II_error_bound",
]


def laplace_I(epsilon: float, sensitivity: float, k: int, *, neighbouring: str = "replace-one") -> Laplace:
    """A :class:`Laplace` for the k-vector of answers: L1 sensitivity ``kΔ``, scale ``Δk/ε`` (Prop 1.7).

    One ``release`` of the whole k-vector spends ε.
    """
    k = check_positive_int(k, name="k")
    return Laplace(epsilon=epsilon, sensitivity=check_sensitivity(sensitivity) * k, neighbouring=neighbouring)


class _MultiQuery(Mechanism):
    def _release(self, value: Any, rng: RNGLike, ledger: Ledger | None, name: str | None) -> np.ndarray:
        x = check_finite_array(value, name="value", ndim=1)
        if x.size != self.k:  # type: ignore[attr-defined]
            raise ValueError(f"value must hold the k={self.k} query answers; got {x.size}")  # type: ignore[attr-defined]
        self._charge(ledger, name, scale=self.scale, k=self.k)  # type: ignore[attr-defined]
        return x + resolve_rng(rng).laplace(0.0, self.scale, size=x.shape)  # type: ignore[attr-defined]

    @property
    def variance(self) -> float:
        """Per-query noise variance ``2b²``."""
        return 2.0 * self.scale**2  # type: ignore[attr-defined]

    @property
    def mse(self) -> float:
        """Per-query mean squared error (= variance)."""
        return self.variance

    def max_error_bound(self, beta: float) -> float:
        """With probability ≥ 1 − β, ``max_i |noise_i| ≤ b ln(k/β)`` (Prop 1.13 for this scale)."""
        return laplace_max_error_bound(self.scale, self.k, beta)  # type: ignore[attr-defined]


@dataclass(frozen=True, kw_only=True)
class LaplaceI(_MultiQuery):
    """Laplace mechanism I (thesis Prop 1.7): k queries of sensitivity Δ, ``Lap(Δk/ε)`` each, ε-DP.

    Parameters
    ----------
    epsilon : float
        Total ε for all k answers.
    sensitivity : float
        Per-query sensitivity Δ.
    k : int
        Number of queries.
    """

    epsilon: float
    sensitivity: float
    k: int

    def __post_init__(self) -> None:
        super().__post_init__()
        check_budget_fields(self, delta=False)
        object.__setattr__(self, "sensitivity", check_sensitivity(self.sensitivity, name="sensitivity"))
        object.__setattr__(self, "k", check_positive_int(self.k, name="k"))

    @property
    def delta(self) -> float:
        return 0.0

    @property
    def scale(self) -> float:
        """``b = Δk/ε``."""
        return self.sensitivity * self.k / self.epsilon

    def release(
        self, value: Any, *, rng: RNGLike = None, ledger: Ledger | None = None, name: str | None = None
    ) -> np.ndarray:
        """Noisy answers to the k queries (a length-k vector); spends (ε, 0)."""
        return self._release(value, rng, ledger, name)


@dataclass(frozen=True, kw_only=True)
class LaplaceII(_MultiQuery):
    """Laplace mechanism II (thesis Prop 1.12): k queries, (ε, δ)-DP via advanced composition.

    Parameters
    ----------
    epsilon, delta : float
        Total guarantee (δ ∈ (0, 1)).
    sensitivity : float
        Per-query sensitivity Δ.
    k : int
        Number of queries.
    calibration : {"advanced", "thesis"}, default "advanced"
        See the module docstring; ``"thesis"`` is the printed ``Δ√(2k log(1/δ))/ε``.
    """

    epsilon: float
    delta: float
    sensitivity: float
    k: int
    calibration: str = "advanced"

    def __post_init__(self) -> None:
        super().__post_init__()
        check_budget_fields(self, allow_zero_delta=False)
        object.__setattr__(self, "sensitivity", check_sensitivity(self.sensitivity, name="sensitivity"))
        object.__setattr__(self, "k", check_positive_int(self.k, name="k"))
        check_choice(self.calibration, name="calibration", choices=("advanced", "thesis"))
        if self.calibration == "thesis":
            eps0 = self.epsilon / math.sqrt(2.0 * self.k * math.log(1.0 / self.delta))
        else:
            eps0 = per_step_epsilon(self.epsilon, self.delta, self.k, rule="advanced")[0]
        object.__setattr__(self, "_eps0", eps0)

    @property
    def per_query_epsilon(self) -> float:
        """ε₀ of each query: Thm 1.11 inverted (``"advanced"``) or ``ε/√(2k ln(1/δ))`` (``"thesis"``)."""
        return self._eps0  # type: ignore[attr-defined]

    @property
    def scale(self) -> float:
        """``b = Δ/ε₀``."""
        return self.sensitivity / self.per_query_epsilon

    def release(
        self, value: Any, *, rng: RNGLike = None, ledger: Ledger | None = None, name: str | None = None
    ) -> np.ndarray:
        """Noisy answers to the k queries; spends (ε, δ) in one ledger entry."""
        return self._release(value, rng, ledger, name)


def laplace_max_error_bound(scale: float, k: int, beta: float) -> float:
    """``b ln(k/β)``: with probability ≥ 1 − β all k ``Lap(b)`` noises are within it (union bound)."""
    b = check_sensitivity(scale, name="scale")
    k = check_positive_int(k, name="k")
    beta = check_probability(beta, name="beta")
    return b * math.log(k / beta)


def laplace_I_error_bound(sensitivity: float, k: int, epsilon: float, beta: float) -> float:
    """Prop 1.13 (Laplace I): ``max_i error ≤ Δ(k/ε) ln(k/β)`` with probability ≥ 1 − β."""
    eps = check_epsilon(epsilon)
    k = check_positive_int(k, name="k")
    return laplace_max_error_bound(check_sensitivity(sensitivity) * k / eps, k, beta)


def laplace_II_error_bound(sensitivity: float, k: int, epsilon: float, delta: float, beta: float) -> float:
    """Prop 1.13 (Laplace II): ``max_i error ≤ Δ(√(2k ln(1/δ))/ε) ln(k/β)`` w.p. ≥ 1 − β (thesis scale)."""
    eps = check_epsilon(epsilon)
    dl = check_delta(delta, allow_zero=False)
    k = check_positive_int(k, name="k")
    return laplace_max_error_bound(check_sensitivity(sensitivity) * math.sqrt(2 * k * math.log(1 / dl)) / eps, k, beta)
