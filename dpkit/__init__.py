"""dpkit — a notebook-centred experiment workbench for differential privacy.

Core reference: J. Huang, *An Efficient Private Mechanism for Smooth Queries with
Synthetic Database Output*, master's thesis, Peking University, 2014 (the "thesis";
restated in ``shared/spec/thesis.md``).
"""
from __future__ import annotations

__version__ = "0.1.0"

from .accounting import Ledger, Spend
from .exceptions import BudgetExceededError, DPKitError, FeasibilityError, PrivacyLeakWarning
from .rng import resolve_rng, spawn, spawn_seeds

__all__ = [
    "__version__",
    "Ledger",
    "Spend",
    "BudgetExceededError",
    "DPKitError",
    "FeasibilityError",
    "PrivacyLeakWarning",
    "resolve_rng",
    "spawn",
    "spawn_seeds",
]
