"""Composition theorems (thesis Thm 1.5/1.6, Thm 1.11; Kairouz–Oh–Viswanath 2015)."""
from __future__ import annotations

import math

from .validation import check_delta, check_epsilon, check_positive_int

__all__ = ["basic_composition"]


def basic_composition(epsilon: float, delta: float, k: int) -> tuple[float, float]:
    """k-fold basic composition (thesis Thm 1.6): ``(kε, kδ)``."""
    eps = check_epsilon(epsilon)
    dl = check_delta(delta)
    k = check_positive_int(k, name="k")
    return (k * eps, k * dl)
