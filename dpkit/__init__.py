"""dpkit — a notebook-centred experiment workbench for differential privacy.

Core reference: J. Huang, *An Efficient Private Mechanism for Smooth Queries with
Synthetic Database Output*, master's thesis, Peking University, 2014 (the "thesis").
``CITATION.cff`` cites it and the other works dpkit reproduces.
"""
from __future__ import annotations

__version__ = "0.1.0"

from dpkit.core.accounting import Ledger, Spend, ledger_for
from dpkit.core.exceptions import (
    BudgetExceededError,
    DPKitError,
    FeasibilityError,
    PrivacyLeakWarning,
    QuickReplacementWarning,
)
from dpkit.core.rng import resolve_rng, spawn, spawn_seeds

__all__ = [
    "__version__",
    "Ledger",
    "Spend",
    "ledger_for",
    "BudgetExceededError",
    "DPKitError",
    "FeasibilityError",
    "PrivacyLeakWarning",
    "QuickReplacementWarning",
    "resolve_rng",
    "spawn",
    "spawn_seeds",
]


#: The layers, bottom to top; each imports only from the ones before it.
_LAYERS = ("core", "data", "queries", "mechanisms", "methods", "evaluation", "experiments", "board", "claims", "outputs", "batch")


def __getattr__(name: str):
    """Lazy access to the layers (``dpkit.mechanisms``, ``dpkit.methods``, ...)."""
    import importlib

    if name in _LAYERS:
        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module 'dpkit' has no attribute {name!r}")
