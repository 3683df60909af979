"""dpkit — a notebook-centred experiment workbench for differential privacy.

Core reference: J. Huang, *An Efficient Private Mechanism for Smooth Queries with
Synthetic Database Output*, master's thesis, Peking University, 2014 (the "thesis";
restated in ``shared/spec/thesis.md``).
"""
from __future__ import annotations

__version__ = "0.1.0"

from .accounting import Ledger, Spend, ledger_for
from .exceptions import BudgetExceededError, DPKitError, FeasibilityError, PrivacyLeakWarning
from .rng import resolve_rng, spawn, spawn_seeds

__all__ = [
    "__version__",
    "Ledger",
    "Spend",
    "ledger_for",
    "BudgetExceededError",
    "DPKitError",
    "FeasibilityError",
    "PrivacyLeakWarning",
    "resolve_rng",
    "spawn",
    "spawn_seeds",
]


def __getattr__(name: str):
    """Lazy access to the main sub-packages (``dpkit.trig``, ``dpkit.data``, ...) and ``dpkit.audit``."""
    import importlib

    if name in {"audit", "batch", "composition", "data", "ellipsoid", "evaluate", "experiments", "mechanisms", "pca",
                "plotting", "report", "trig", "workload", "baselines", "linear", "consistency", "widgets"}:
        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module 'dpkit' has no attribute {name!r}")
