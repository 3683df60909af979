"""Release a vector of statistics (ε, δ)-DP with whichever of Laplace and the analytic Gaussian adds less noise.

:func:`noisy_release` adds Laplace noise on the L1 sensitivity (δ = 0), else the analytic Gaussian's on the L2
sensitivity or Laplace where its std is not larger, spent through the caller's ledger (:func:`noise_std` per entry).
:func:`release_plan`, :func:`spend_plan` and :func:`planned_release` plan, spend and draw a method's several releases
under ``accounting="split"`` or ``"pld"`` (:mod:`dpkit.core.accountant`).
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from dpkit.core.accountant import Step, plan_factor
from dpkit.core.accountant import gaussian as gaussian_step
from dpkit.core.accountant import laplace as laplace_step
from dpkit.core.accounting import Ledger
from dpkit.mechanisms.gaussian import analytic_gaussian_sigma

__all__ = ["noisy_release", "noise_std", "Share", "Planned", "split_plan", "accounting_factor", "release_plan", "spend_plan",
           "planned_release"]


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


@dataclass(frozen=True)
class Share:
    """One vector release of a method's budget: its name, its (ε, δ) share under basic composition (the ``"split"``
    accounting) and its L1 / L2 replace-one sensitivities."""

    name: str
    epsilon: float
    delta: float
    l1: float
    l2: float


@dataclass(frozen=True)
class Planned:
    """How :func:`release_plan` releases one :class:`Share`: ``mechanism`` (``"laplace"``, ``"gaussian"`` or
    ``"none"`` for ε = ∞), its noise ``scale`` (Laplace b, Gaussian σ) and its sensitivity (L1 or L2)."""

    share: Share
    mechanism: str
    scale: float
    sensitivity: float

    @property
    def std(self) -> float:
        """Noise standard deviation per entry."""
        return math.sqrt(2.0) * self.scale if self.mechanism == "laplace" else self.scale

    def step(self) -> Step:
        """The release as a step of the accountant (:mod:`dpkit.core.accountant`)."""
        if self.mechanism == "laplace":
            return laplace_step(self.scale / self.sensitivity, name=self.share.name)
        return gaussian_step(self.scale / self.sensitivity, name=self.share.name)


def split_plan(shares: Sequence[Share]) -> list[Planned]:
    """Each share on its own (ε, δ) with :func:`noisy_release`'s choice of Laplace or analytic Gaussian (the
    ``"split"`` accounting: basic composition, the shares add up to the budget). ε = ∞ releases without noise."""
    out = []
    for s in shares:
        if math.isinf(s.epsilon):
            out.append(Planned(s, "none", 0.0, 0.0))
            continue
        lap = s.l1 / s.epsilon
        sig = analytic_gaussian_sigma(s.epsilon, s.delta, s.l2) if s.delta > 0 and s.l2 > 0 else math.inf
        out.append(Planned(s, "laplace", lap, s.l1) if math.sqrt(2.0) * lap <= sig else Planned(s, "gaussian", sig, s.l2))
    return out


def accounting_factor(steps: Sequence[Step], *, epsilon: float, delta: float) -> float:
    """``t = min(1, calibrate(steps, ε, δ))``: the factor on a split plan's noise that makes the exact composition of
    ``steps`` meet (ε, δ) (:func:`dpkit.core.accountant.plan_factor`). Never above 1: basic composition is a valid
    accounting of the same mechanisms, so the split's noise is never needed more."""
    return plan_factor(list(steps), epsilon, delta)


def release_plan(shares: Sequence[Share], *, epsilon: float, delta: float, accounting: str,
                 extra: Sequence[Step] = ()) -> list[Planned]:
    """The noise of a method's vector releases under an accounting.

    ``"split"``: :func:`split_plan`. ``"pld"`` (δ > 0): the same mechanisms, every noise times
    :func:`accounting_factor` of their steps and the method's ``extra`` steps (measurements that are not vector
    releases, e.g. a private PCA, whose noise the caller scales by the same factor) composed to (ε, δ).
    """
    out = split_plan(shares)
    if accounting == "split" or delta == 0.0 or math.isinf(epsilon):
        return out
    t = accounting_factor([p.step() for p in out] + list(extra), epsilon=epsilon, delta=delta)
    return [Planned(p.share, p.mechanism, p.scale * t, p.sensitivity) for p in out]


def spend_plan(plan: Sequence[Planned], *, epsilon: float, delta: float, accounting: str, ledger: Ledger,
               name: str, extra: Sequence[dict[str, Any]] = (), **meta: Any) -> None:
    """Spend a :func:`release_plan` through ``ledger``: one spend per share under ``"split"`` (its (ε, δ)), or one
    spend of the whole (ε, δ) under ``"pld"`` naming every release (mechanism, scale, sensitivity) in its metadata.
    Call it before any noise is drawn."""
    if accounting == "split" or math.isinf(epsilon) or delta == 0.0:
        return
    ledger.spend(f"{name} (composed)", epsilon, delta, mechanism="composition (accounting=pld)",
                 neighbouring="replace-one", accounting="pld",
                 releases=[{"name": p.share.name, "mechanism": p.mechanism, "scale": p.scale,
                            "sensitivity": p.sensitivity} for p in plan] + list(extra), **meta)


def planned_release(value: np.ndarray, planned: Planned, *, rng: np.random.Generator, ledger: Ledger,
                    accounting: str, **meta: Any) -> np.ndarray:
    """Release ``value`` with the noise of ``planned``. Under ``"split"`` it is exactly :func:`noisy_release` on the
    share (same spend, same draws); under ``"pld"`` the spend was made by :func:`spend_plan`."""
    s = planned.share
    if accounting == "split" or math.isinf(s.epsilon) or s.delta == 0.0:
        return noisy_release(value, epsilon=s.epsilon, delta=s.delta, l1=s.l1, l2=s.l2, rng=rng, ledger=ledger,
                             name=s.name, **meta)
    v = np.asarray(value, dtype=float)
    if planned.mechanism == "laplace":
        return v + rng.laplace(0.0, planned.scale, size=v.shape)
    return v + rng.normal(0.0, planned.scale, size=v.shape)
